//! Runs a `JobSet` against a device in virtual time.
//!
//! Each job (and each of its `numjobs` clones) is a thread with its own CPU,
//! random streams and queue depth. A request costs the host stack's
//! submission time on that CPU, passes the block layer (none or mq-deadline,
//! or nothing for passthrough engines), reaches the device, and is seen by
//! the thread after the stack's completion cost. Statistics are kept as fio
//! keeps them; `report` prints them.
//!
//! This module holds the types the parts share; each part is a module:
//! `setup` (checking jobs, building threads), `event_loop` (the events and
//! a thread's life), `generate` (what a thread issues next), `host_path`
//! (a request from the thread through its block layer to the device and
//! back), `completion` (what a thread does with a completed request:
//! statistics and errors), `pacing` (rate limits, think time and wake-ups),
//! `readback` (verify's patterns and reads), `management` (ZINC's epochs,
//! finish and softFinish operations) and `placement` (FDP: the placement
//! identifier each write names).

use super::distribution::OffsetGenerator;
use super::job::*;
use super::log::{self, ThreadLogs};
use super::stats::JobStats;
use super::work;
use super::zbd::ZoneView;
use std::collections::{BTreeMap, VecDeque};
use zonelab_device::{Device, Status, Tag, ZoneTable, ZonedDevice};
use zonelab_host::{BlockLayers, Dispatch, HostConfig, HostPath, RequestOp, SchedulerCounters, SchedulerKind};
use zonelab_sim::{EventQueue, Nanos, SimRng, Timeline, MS, TIME_NS_MAX, US};

mod completion;
mod event_loop;
mod generate;
mod host_path;
mod management;
mod pacing;
mod placement;
mod readback;
mod replay;
mod setup;
mod spaces;

pub use spaces::{namespace_of_filename, NamespaceRun};
use spaces::{Space, Spaces};

/// How long a thread that cannot open a zone waits before trying again.
const OPEN_RETRY_NS: Nanos = 10 * US;
const OPEN_RETRIES_MAX: u32 = 1_000_000;
const THREADS_MAX: usize = 4096;
const IODEPTH_MAX: u32 = 65_536;
/// Stop a run whose simulated time would pass this (the device's horizon).
const RUN_NS_MAX: Nanos = TIME_NS_MAX / 4;

/// Settings of one run that are not job options.
pub struct RunOptions {
    /// Seed of every random choice (offsets, block sizes, think times...).
    pub seed: u64,
    /// Scheduler of jobs that do not set `scheduler=`.
    pub scheduler: Scheduler,
    /// Costs of the host I/O stack and the block layer.
    pub host: HostConfig,
    /// Most I/Os one job may be estimated to ask for ([`work::estimate`]);
    /// a job over it is refused before the run. [`work::IOS_CAP`] (an hour
    /// of CPU) by default; infinity lifts the cap.
    pub work_cap_ios: f64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { seed: 0, scheduler: Scheduler::None, host: HostConfig::default(), work_cap_ios: work::IOS_CAP }
    }
}

/// One thread's outcome.
pub struct ThreadResult {
    /// Index of the job in the job set.
    pub spec: usize,
    /// Which of the job's `numjobs` clones, from 0.
    pub clone: u32,
    /// Reporting group of the thread.
    pub groupid: u32,
    /// The thread's statistics.
    pub stats: JobStats,
    /// What its failed read back found, a line per bad block, as fio's
    /// verify logs it (empty unless verify failed).
    pub verify_log: Vec<String>,
}

/// What a whole run produced.
pub struct RunResult {
    /// Every thread's outcome, in job order.
    pub threads: Vec<ThreadResult>,
    /// Requests as the kernel block layer counted them (passthrough is not counted).
    pub disk: SchedulerCounters,
    /// Time the device was busy with at least one request, and the run's end.
    pub disk_busy_ns: Nanos,
    /// Simulated time when the last thread finished.
    pub end_ns: Nanos,
    /// What the run did that deserves a word: jobs that read nothing
    /// because their zones were empty.
    pub warnings: Vec<String>,
    /// A run on several namespaces of one drive: each namespace the jobs
    /// used, by NSID, with its own block layer counts (empty otherwise).
    pub namespaces: Vec<NamespaceRun>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Start(u32),
    Pump(u32),
    Insert(u32),
    /// A dispatch that waited for mq-deadline's lock reaches the device.
    DeviceSubmit {
        space: u8,
        path: HostPath,
        id: u32,
    },
    /// The device completed a dispatch.
    DeviceDone {
        space: u8,
        path: HostPath,
        id: u32,
        status: Status,
    },
    /// The device's next management step may start.
    DeviceWake,
    /// ZINC's epoch timer of a space's block layer.
    Epoch(u8),
    /// The next softFinish chunk of a thread, after its pause.
    SoftFill(u32),
    Reap(u32),
    /// A thread whose completions cost CPU takes the next one, once its CPU is free.
    ReapNext(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IoKind {
    Data,
    /// A reset a writer issues before rewriting a full zone.
    ResetForWrite,
    /// A trim in zonemode=zbd: a zone reset.
    TrimReset,
    /// finish=1 and softfinish=1: the block that opens the zone.
    OpenBlock,
    Finish,
    SoftFill,
    VerifyRead,
}

#[derive(Debug, Clone, Copy)]
struct Io {
    thread: u32,
    ddir: usize,
    kind: IoKind,
    op: RequestOp,
    slba: u64,
    nlb: u32,
    zone: Option<u32>,
    issue_ns: Nanos,
    submit_ns: Nanos,
    status: Status,
    verify_error: bool,
    /// The FDP placement identifier a write names (`fdp=1`).
    placement: Option<u16>,
}

/// A request a thread is about to issue.
#[derive(Debug, Clone, Copy)]
struct Planned {
    ddir: usize,
    op: RequestOp,
    slba: u64,
    nlb: u32,
    zone: Option<u32>,
    kind: IoKind,
}

/// What a thread does next.
enum Next {
    Io(Planned),
    Wait(Nanos),
    /// Ahead of its rate until then: fio waits for the thread's I/Os in
    /// flight to complete, then sleeps what it was ahead by (see
    /// [`Hold::Quiesce`]).
    Ahead(Nanos),
    /// Quiesce, then reset this zone (fio's reset of a full zone before writing it).
    Reset(u32),
    /// Nothing until a request completes (a replayed sync waits for those before it).
    Blocked,
    End,
}

/// A management operation chained over several requests.
#[derive(Debug, Clone, Copy)]
struct Chain {
    zone: u32,
    start_ns: Nanos,
    fill_bytes: u64,
}

/// The options of a thread's job that it reads on every I/O, copied from
/// the job so that the hot path finds them in the thread.
#[derive(Debug, Clone, Copy)]
struct IoOptions {
    rw: RwKind,
    rwmixread: u32,
    time_based: bool,
    number_ios: Option<u64>,
    /// The block sizes of each direction, as drawn.
    bs: [BlockDraw; DDIRS],
    /// zonemode=zbd.
    zbd: bool,
    /// zonemode=zbd writes: finish=1 or softfinish=1 (zone management
    /// after each zone's opening block).
    management: bool,
    /// zonemode=zbd writes: Append (zone_append) or Write, and their kind.
    write_op: RequestOp,
    write_kind: IoKind,
    verify: Verify,
    /// `do_verify` with a `verify`: written ranges are kept to be read back.
    read_back: bool,
    /// `verify_fatal`.
    verify_fatal: bool,
    /// A synchronous engine (psync and its kin): no submission latency.
    sync: bool,
    thinktime_ns: Nanos,
    /// `rate` or `rate_iops` limits a direction.
    rate_limited: bool,
    io_uring: bool,
    /// io_uring with `sqthread_poll`.
    sq_poll: bool,
}

/// A direction's block sizes as a thread draws them: `min_bytes` plus a
/// uniform choice of `choices` steps of `unit_bytes`.
#[derive(Debug, Clone, Copy)]
struct BlockDraw {
    min_bytes: u64,
    unit_bytes: u64,
    choices: u64,
    /// `min_bytes` in LBAs, the common draw (every draw of a fixed size).
    min_lbas: u32,
}

impl BlockDraw {
    fn of(bs: BlockSize, unaligned: bool, lba_bytes: u64) -> Self {
        let unit_bytes = if unaligned { lba_bytes } else { bs.min_bytes };
        let (min_bytes, choices) = (bs.min_bytes, (bs.max_bytes - bs.min_bytes) / unit_bytes + 1);
        BlockDraw { min_bytes, unit_bytes, choices, min_lbas: (min_bytes / lba_bytes) as u32 }
    }
}

impl IoOptions {
    /// A thread's options of `job` on a device of `lba_bytes` LBAs (whose
    /// block sizes `Engine::check_job` accepted).
    fn of(job: &JobSpec, lba_bytes: u64) -> Self {
        let rated = |limit: &[Option<u64>; DDIRS]| limit.iter().any(|r| r.is_some_and(|r| r > 0));
        let management = job.finish || job.softfinish;
        IoOptions {
            rw: job.rw,
            rwmixread: job.rwmixread,
            time_based: job.time_based,
            number_ios: job.number_ios,
            bs: job.bs.map(|bs| BlockDraw::of(bs, job.blocksize_unaligned, lba_bytes)),
            zbd: job.zonemode == ZoneMode::Zbd,
            management,
            write_op: if job.zone_append && !management { RequestOp::Append } else { RequestOp::Write },
            write_kind: if management { IoKind::OpenBlock } else { IoKind::Data },
            verify: job.verify,
            read_back: job.verify != Verify::None && job.do_verify,
            verify_fatal: job.verify_fatal,
            sync: job.ioengine.is_sync(),
            thinktime_ns: job.thinktime_ns,
            rate_limited: rated(&job.rate_bytes_per_s) || rated(&job.rate_iops),
            io_uring: job.ioengine.is_io_uring(),
            sq_poll: job.sqthread_poll && job.ioengine.is_io_uring(),
        }
    }
}

struct Thread {
    spec: usize,
    /// The namespace it runs on: its index in the engine's `Spaces`.
    space: u8,
    options: IoOptions,
    clone: u32,
    groupid: u32,
    phase: u32,
    rng: SimRng,
    offsets: OffsetGenerator,
    /// LBAs of one block of the offset generator (the smallest block size).
    unit_lbas: u64,
    region_start: u64,
    region_end: u64,
    first_zone: u32,
    end_zone: u32,
    limit_bytes: u64,
    issued_bytes: u64,
    issued_ios: u64,
    seq_next: [u64; DDIRS],
    cursor_zone: [u32; DDIRS],
    /// The write cursor's zone was written since the cursor reached it.
    cursor_written: bool,
    inflight: u32,
    qd: u32,
    path: HostPath,
    submit_cost_ns: Nanos,
    complete_cost_ns: Nanos,
    /// CPU after each completion is seen, before the thread can issue again (the engine's reaping).
    reap_cost_ns: Nanos,
    /// `reap_cost_ns` of a completion that waited for the thread's CPU: the
    /// engine's next reaping call returns it with others (libaio).
    reap_batched_cost_ns: Nanos,
    /// The reaping cost of the completion the thread's CPU took last.
    reap_last_ns: Nanos,
    /// Completions the thread's CPU has not taken yet (device completion, tag), oldest first.
    unseen: VecDeque<(Nanos, u32)>,
    /// A `ReapNext` event for the thread is scheduled.
    reaping: bool,
    cpu: Timeline,
    /// io_uring with sqthread_poll: when the ring last took a submission
    /// (its polling thread sleeps after `HostConfig::sq_poll.idle_ns`).
    ring_last_ns: Option<Nanos>,
    start_ns: Nanos,
    stats_start_ns: Nanos,
    deadline_ns: Nanos,
    rate_next_ns: [Nanos; DDIRS],
    pump_at_ns: Option<Nanos>,
    open_retries: u32,
    chain: Option<Chain>,
    stage: Stage,
    verify_ranges: Vec<(u64, u32)>,
    windows: Windows,
    /// Its log files, if its job writes any.
    logs: Option<Box<ThreadLogs>>,
    /// Something to do per I/O beyond the statistics: logs, or per-I/O
    /// bandwidth or IOPS samples (one test on every completion).
    io_hooks: bool,
    stats: JobStats,
    /// How its life went: started, stopped by another, without data to read.
    life: Life,
    verify_log: Vec<String>,
    /// `read_iolog`: the log it replays instead of generating I/O.
    replay: Option<Box<replay::ReplayState>>,
    /// Something to note as each I/O is issued: a replay's line, a
    /// `write_iolog` line (one test on every issue).
    issue_hooks: bool,
    /// `fdp=1`: how its writes choose a placement identifier.
    placement: Option<Box<placement::Placement>>,
}

/// When a thread samples its bandwidth and IOPS: fio's `bwavgtime` and
/// `iopsavgtime` windows, or a sample per I/O (fio's per-unit logs).
#[derive(Debug, Clone, Copy)]
struct Windows {
    /// Window lengths by [`Sampled`]; 0: no windows.
    len_ns: [Nanos; 2],
    /// Ends of the current windows (`Nanos::MAX` without windows).
    end_ns: [Nanos; 2],
    /// The earlier of the two: the one test on every completion.
    next_ns: Nanos,
    /// A bandwidth sample per I/O (unless `disable_bw_measurement`).
    bw_per_io: bool,
    /// An IOPS sample per I/O (unless `gtod_reduce`).
    iops_per_io: bool,
}

impl Windows {
    fn of(job: &JobSpec) -> Self {
        let logs = &job.logs;
        let bw_ms = log::sampling_ms(logs.bw_prefix.is_some(), job.report.bwavgtime_ms, logs.avg_msec);
        let iops_ms = log::sampling_ms(logs.iops_prefix.is_some(), job.report.iopsavgtime_ms, logs.avg_msec);
        // fio's gtod_reduce(): no per-I/O IOPS samples.
        let reduced =
            job.report.gtod_reduce || (job.report.disable_clat && job.report.disable_slat && job.report.disable_bw);
        Windows {
            len_ns: [bw_ms * MS, iops_ms * MS],
            end_ns: [Nanos::MAX; 2],
            next_ns: Nanos::MAX,
            bw_per_io: bw_ms == 0 && !job.report.disable_bw,
            iops_per_io: iops_ms == 0 && !reduced,
        }
    }

    /// Statistics start at `start_ns`: the first windows end a window later.
    fn start(&mut self, start_ns: Nanos) {
        let end = |window_ns: Nanos| if window_ns > 0 { start_ns + window_ns } else { Nanos::MAX };
        self.end_ns = self.len_ns.map(end);
        self.next_ns = self.end_ns[0].min(self.end_ns[1]);
    }
}

/// What happened to a thread beyond its I/O, which its end and the run's
/// warnings look at.
#[derive(Debug, Clone, Copy, Default)]
struct Life {
    /// The thread started (its Start event came).
    started: bool,
    /// Another thread's `exitall` stopped it: no new I/O, no read back.
    terminated: bool,
    /// zonemode=zbd reads found no written block in the thread's range.
    found_no_data: bool,
}

/// Where a thread is in its life: issuing I/O, waiting for what is in flight
/// once it stopped (deadline, size or error), reading back what it wrote
/// (verify), or done. Only [`Thread::enter`] changes it, and it asserts
/// that the step is one of these:
///
/// ```text
/// Issuing(_) -> Issuing(_) | Draining   Draining -> Draining | Verifying | Ended   Verifying -> Ended
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    /// Issuing new I/O, once what `Hold` names is done.
    Issuing(Hold),
    /// No new I/O; what is in flight completes. `reset`: a zone reset the
    /// thread owed before it stopped, issued once nothing is in flight
    /// (fio's blocking reset ioctl runs to its end).
    Draining { reset: Option<u32> },
    /// Reading back what it wrote (verify).
    Verifying,
    /// Done: its statistics are final.
    Ended,
}

/// What an issuing thread does before its next new I/O, once nothing is in
/// flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Nothing: it issues.
    Free,
    /// Its think time (`thinktime`) after the last I/O.
    Think,
    /// A reset of this zone (full, to be written again): fio resets with a
    /// blocking ioctl, so writes resume once it completes.
    Reset(u32),
    /// Ahead of its rate by this much: fio (`rate_ddir`, inline submission)
    /// waits for every I/O the thread has in flight, then sleeps the time
    /// it was ahead by when it stopped, however long the wait took.
    Quiesce(Nanos),
}

impl Thread {
    /// Moves to `to`, asserting that the thread's life allows the step.
    fn enter(&mut self, to: Stage) {
        let allowed = matches!(
            (self.stage, to),
            (Stage::Issuing(_), Stage::Issuing(_) | Stage::Draining { .. })
                | (Stage::Draining { .. }, Stage::Draining { .. } | Stage::Verifying | Stage::Ended)
                | (Stage::Verifying, Stage::Ended)
        );
        assert!(allowed, "thread {}.{}: {:?} -> {:?}", self.spec, self.clone, self.stage, to);
        self.stage = to;
    }

    /// No more new I/O: from issuing to draining, keeping a reset it owes
    /// (later stages stay).
    fn stop_issuing(&mut self) {
        if let Stage::Issuing(hold) = self.stage {
            let reset = match hold {
                Hold::Reset(zone) => Some(zone),
                Hold::Free | Hold::Think | Hold::Quiesce(_) => None,
            };
            self.enter(Stage::Draining { reset });
        }
    }
}

/// The fio engine: runs a job set's threads on a zoned device in simulated
/// time, each thread submitting through its host stack and block layer.
/// `MULTI`: the jobs run on several namespaces of one drive
/// ([`Engine::on_namespaces`]); without it every job runs on the device's
/// one namespace and the namespace lookups compile away.
pub struct Engine<'a, D: ZonedDevice + ?Sized = Device, const MULTI: bool = false> {
    device: &'a mut D,
    set: &'a JobSet,
    host: HostConfig,
    threads: Vec<Thread>,
    /// What the engine keeps per namespace (zones, block layers, disk time).
    spaces: Spaces<MULTI>,
    /// A namespace's zone table on the device, by NSID (the device's own
    /// with one namespace): zonemode=zbd reads stay below its write pointers.
    zone_table: for<'d> fn(&'d D, u32) -> &'d ZoneTable,
    ios: Vec<Io>,
    free_ios: Vec<u32>,
    events: EventQueue<Event>,
    /// Reused buffers: what a block layer dispatches on an insert or an
    /// epoch, what it releases on a completion, and the tags completed.
    dispatched: Vec<Dispatch>,
    released: Vec<Dispatch>,
    tags: Vec<u64>,
    buffer: Vec<u8>,
    verify_seed: u64,
    /// The device keeps data (`Mode::Data`): writes carry a payload.
    data_mode: bool,
    phase_running: u32,
    phases: u32,
    /// Finishes and resets the device is still working on, by device tag:
    /// the space, block layer and dispatch they complete.
    device_pending: BTreeMap<Tag, (u8, HostPath, u32)>,
    /// When the one live DeviceWake event fires; others are stale.
    wake_at_ns: Option<Nanos>,
    /// Jobs whose estimated work deserves a word ([`Engine::warnings`]).
    warnings: Vec<String>,
    /// What the verify reads in flight found wrong, by tag.
    verify_failures: BTreeMap<u32, Vec<super::verify::VerifyError>>,
    /// fio's `exitall` is one switch for the run: set by any job.
    exitall: bool,
    /// The first error writing each job's log files: (job, option, message).
    log_errors: Vec<(usize, &'static str, String)>,
    /// Some thread's writes carry a placement identifier (`fdp=1`).
    placement: bool,
}

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// The space of thread `t` (always the one space without `MULTI`).
    #[inline(always)]
    fn space_of(&self, t: u32) -> usize {
        if MULTI {
            usize::from(self.threads[t as usize].space)
        } else {
            0
        }
    }

    /// Space `k` as events carry it: always 0 without `MULTI`, so that the
    /// one-namespace engine passes no space along.
    #[inline(always)]
    fn space_tag(k: usize) -> u8 {
        if MULTI {
            u8::try_from(k).expect("at most NAMESPACES_MAX spaces")
        } else {
            0
        }
    }
}
