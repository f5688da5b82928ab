//! Runs a `JobSet` against a device in virtual time.
//!
//! Each job (and each of its `numjobs` clones) is a thread with its own CPU,
//! random streams and queue depth. A request costs the host stack's
//! submission time on that CPU, passes the block layer (none or mq-deadline,
//! or nothing for passthrough engines), reaches the device, and is seen by
//! the thread after the stack's completion cost. Statistics are kept as fio
//! keeps them; `report` prints them.

use super::distribution::OffsetGenerator;
use super::job::*;
use super::stats::JobStats;
use super::verify;
use super::work::{self, ThreadShape};
use super::zbd::ZoneView;
use std::collections::{BTreeMap, VecDeque};
use zonelab_device::{Command, Device, Mode, Payload, Started, Status, Tag, ZoneAction, ZonedDevice};
use zonelab_host::{BlockLayer, Dispatch, HostConfig, HostRequest, RequestOp, SchedulerCounters, SchedulerKind};
use zonelab_sim::{EventQueue, Nanos, SimRng, Timeline, MS, TIME_NS_MAX, US};

#[path = "generate.rs"]
mod generate;

/// fio's bwavgtime and iopsavgtime defaults.
const WINDOW_NS: Nanos = 500 * MS;
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
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Start(u32),
    Pump(u32),
    Insert(u32),
    DeviceSubmit {
        layer: u8,
        id: u32,
    },
    DeviceDone {
        layer: u8,
        id: u32,
    },
    /// The device's next management step may start.
    DeviceWake,
    /// ZINC's epoch timer.
    Epoch,
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
    /// Quiesce, then reset this zone (fio's reset of a full zone before writing it).
    Reset(u32),
    End,
}

/// A management operation chained over several requests.
#[derive(Debug, Clone, Copy)]
struct Chain {
    zone: u32,
    start_ns: Nanos,
    fill_bytes: u64,
}

struct Thread {
    spec: usize,
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
    layer: u8,
    submit_cost_ns: Nanos,
    complete_cost_ns: Nanos,
    /// CPU after each completion is seen, before the thread can issue again (the engine's reaping).
    reap_cost_ns: Nanos,
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
    window_next_ns: Nanos,
    stats: JobStats,
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
                Hold::Free | Hold::Think => None,
            };
            self.enter(Stage::Draining { reset });
        }
    }
}

/// The fio engine: runs a job set's threads on a zoned device in simulated
/// time, each thread submitting through its host stack and block layer.
pub struct Engine<'a, D: ZonedDevice + ?Sized = Device> {
    device: &'a mut D,
    set: &'a JobSet,
    host: HostConfig,
    threads: Vec<Thread>,
    zones: ZoneView,
    /// 0: passthrough, 1: kernel with none, 2: kernel with mq-deadline.
    layers: [BlockLayer; 4],
    mq_deadline_lock: Timeline,
    /// Whether an Epoch event is scheduled.
    epoch_armed: bool,
    dispatch_status: [Vec<Status>; 4],
    pending: [Vec<Option<Dispatch>>; 4],
    ios: Vec<Io>,
    free_ios: Vec<u32>,
    events: EventQueue<Event>,
    dispatched: Vec<Dispatch>,
    tags: Vec<u64>,
    buffer: Vec<u8>,
    zone_generation: Vec<u32>,
    /// When the last write or zone operation on each zone was submitted: fio
    /// holds a zone's lock until its write is queued, so writes of several
    /// threads reach a zone in write-pointer order.
    zone_submit_ns: Vec<Nanos>,
    /// The thread that opened each zone, for job_max_open_zones (counted per thread, as fio does).
    zone_opener: Vec<u32>,
    verify_seed: u64,
    lba_bytes: u64,
    phase_running: u32,
    phases: u32,
    /// End of the current busy span and the busy time so far.
    busy: (Nanos, Nanos),
    /// Finishes and resets the device is still working on, by device tag.
    device_pending: BTreeMap<Tag, (u8, u32)>,
    /// When the one live DeviceWake event fires; others are stale.
    wake_at_ns: Option<Nanos>,
    /// Jobs whose estimated work deserves a word ([`Engine::warnings`]).
    warnings: Vec<String>,
}

fn job_error(job: &JobSpec, option: &str, message: String) -> JobError {
    JobError { location: job.origin.clone(), option: Some(option.to_string()), message }
}

/// Closes the statistics windows that ended by `now` (up to the deadline).
/// All but the first lie in idle time, as nothing completed since the last
/// call: they are zero samples, added at once (a long thinktime spans
/// millions of windows).
fn close_windows(thread: &mut Thread, now: Nanos) {
    let last = now.min(thread.deadline_ns);
    if last < thread.window_next_ns {
        return;
    }
    let idle = (last - thread.window_next_ns) / WINDOW_NS;
    for dir in thread.stats.dirs.iter_mut() {
        dir.sample_window(WINDOW_NS);
        dir.sample_idle_windows(idle);
    }
    thread.window_next_ns += (idle + 1) * WINDOW_NS;
}

impl<'a, D: ZonedDevice + ?Sized> Engine<'a, D> {
    /// An engine for `set` on `device`; refuses jobs the device cannot run
    /// (zone sizes, limits, block sizes that do not fit its layout).
    pub fn new(device: &'a mut D, set: &'a JobSet, options: &RunOptions) -> Result<Self, JobError> {
        let layout = device.layout().clone();
        let identify = device.identify();
        let mdts_lbas = layout.mdts_lbas.max(1);
        let merge_lbas = match options.host.merge_bytes_max {
            0 => mdts_lbas,
            bytes => (bytes / layout.lba_bytes).clamp(1, mdts_lbas),
        };
        let device_open = identify.mor.min(identify.mar).saturating_add(1).max(1);
        let open_limit = set
            .jobs
            .iter()
            .filter(|j| j.max_open_zones > 0)
            .map(|j| j.max_open_zones)
            .min()
            .map_or(device_open, |limit| limit.min(device_open));
        let zones = ZoneView::new(device, open_limit);
        let mut engine = Engine {
            host: options.host,
            threads: Vec::new(),
            zone_generation: vec![0; layout.zones as usize],
            zone_submit_ns: vec![0; layout.zones as usize],
            zone_opener: vec![u32::MAX; layout.zones as usize],
            zones,
            layers: [
                BlockLayer::new(SchedulerKind::None, merge_lbas),
                BlockLayer::new(SchedulerKind::None, merge_lbas),
                BlockLayer::new(SchedulerKind::MqDeadline, merge_lbas),
                BlockLayer::with_zinc(SchedulerKind::Zinc, merge_lbas, options.host.zinc, layout.lba_bytes),
            ],
            mq_deadline_lock: Timeline::new(),
            dispatch_status: [Vec::new(), Vec::new(), Vec::new(), Vec::new()],
            pending: [Vec::new(), Vec::new(), Vec::new(), Vec::new()],
            epoch_armed: false,
            ios: Vec::new(),
            free_ios: Vec::new(),
            events: EventQueue::new(1 << 22),
            dispatched: Vec::new(),
            tags: Vec::new(),
            buffer: Vec::new(),
            verify_seed: options.seed ^ 0x5a5a_0f0f,
            lba_bytes: layout.lba_bytes,
            phase_running: 0,
            phases: 0,
            busy: (0, 0),
            device_pending: BTreeMap::new(),
            wake_at_ns: None,
            warnings: Vec::new(),
            device,
            set,
        };
        engine.build_threads(options)?;
        Ok(engine)
    }

    fn build_threads(&mut self, options: &RunOptions) -> Result<(), JobError> {
        let (mut phase, mut groupid) = (0u32, 0u32);
        for (index, job) in self.set.jobs.iter().enumerate() {
            if index > 0 && job.stonewall {
                phase += 1;
            }
            if index > 0 && (job.stonewall || job.new_group) {
                groupid += 1;
            }
            self.check_job(job)?;
            let first = self.threads.len();
            for clone in 0..job.numjobs {
                if self.threads.len() >= THREADS_MAX {
                    return Err(job_error(job, "numjobs", format!("more than {THREADS_MAX} threads in one run")));
                }
                let thread = self.make_thread(index, job, clone, phase, groupid, options)?;
                self.threads.push(thread);
            }
            self.check_work(job, first, options.work_cap_ios)?;
        }
        self.phases = phase + 1;
        Ok(())
    }

    /// Refuses a job estimated over `cap_ios` I/Os, naming the option that
    /// asks for them where it was set; notes one over [`work::IOS_WARN`].
    fn check_work(&mut self, job: &JobSpec, first_thread: usize, cap_ios: f64) -> Result<(), JobError> {
        let shapes: Vec<ThreadShape> = self.threads[first_thread..]
            .iter()
            .map(|t| ThreadShape {
                limit_bytes: t.limit_bytes,
                qd: t.qd,
                cpu_ns: t.submit_cost_ns + t.reap_cost_ns,
                host_ns: t.submit_cost_ns + t.complete_cost_ns + t.reap_cost_ns,
            })
            .collect();
        let work = work::estimate(job, &shapes, self.device.config(), self.device.layout());
        let option = work.option();
        if work.ios > cap_ios {
            let message = format!(
                "{}; the cap is {cap_ios:.2e} I/Os per job (about {} of CPU): ask for less, or lift the cap \
                 (zonelab run --allow-long-runs)",
                work.describe(job),
                work::cpu_time(cap_ios / work::IOS_PER_CPU_SECOND)
            );
            return Err(JobError {
                location: job.location_of(option).to_string(),
                option: Some(option.into()),
                message,
            });
        }
        if work.ios > work::IOS_WARN {
            let at = job.location_of(option);
            self.warnings.push(format!("job '{}' ({at}): {}", job.name, work.describe(job)));
        }
        Ok(())
    }

    /// What the run asks for that deserves a word before it starts: jobs
    /// whose estimated work is over a minute of CPU.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn check_job(&self, job: &JobSpec) -> Result<(), JobError> {
        let zbd = job.zonemode == ZoneMode::Zbd;
        if job.iodepth == 0 || job.iodepth > IODEPTH_MAX {
            return Err(job_error(job, "iodepth", format!("must be 1..={IODEPTH_MAX}")));
        }
        if zbd && !job.direct {
            return Err(job_error(job, "direct", "zonemode=zbd requires direct=1, as in fio".into()));
        }
        if job.time_based && job.runtime_ns.is_none() {
            return Err(job_error(job, "time_based", "needs a runtime".into()));
        }
        if job.rw == RwKind::Trim && !zbd {
            return Err(job_error(job, "rw", "trim needs zonemode=zbd: the device has no deallocate".into()));
        }
        if (job.finish || job.softfinish || job.zone_append) && !zbd {
            let option = if job.zone_append { "zone_append" } else { "finish" };
            return Err(job_error(job, option, "needs zonemode=zbd".into()));
        }
        if (job.finish || job.softfinish) && job.rw != RwKind::Write {
            return Err(job_error(job, "finish", "finish and softfinish operations need rw=write".into()));
        }
        // A thread follows one operation's chain of requests at a time.
        if (job.finish || job.softfinish) && job.iodepth > 1 {
            let message = "finish and softfinish operations run one at a time (each spans several requests): \
                           iodepth must be 1";
            return Err(job_error(job, "iodepth", message.into()));
        }
        if job.verify != Verify::None && self.device.config().mode != Mode::Data {
            return Err(job_error(job, "verify", "needs a device that keeps data: add --data".into()));
        }
        let zone_bytes = self.zones.zone_lbas * self.lba_bytes;
        if let (true, Some(size)) = (zbd, job.zonesize) {
            if size.resolve(zone_bytes, zone_bytes) != zone_bytes {
                return Err(job_error(job, "zonesize", format!("does not match the device's zone size {zone_bytes}")));
            }
        }
        for (ddir, bs) in job.bs.iter().enumerate() {
            let unit = if job.blocksize_unaligned { self.lba_bytes } else { bs.min_bytes };
            if bs.min_bytes % self.lba_bytes != 0 || bs.max_bytes % unit != 0 || bs.min_bytes == 0 {
                let name = ["read", "write", "trim"][ddir];
                let message = format!("{name} block size must be a multiple of the {} B LBA", self.lba_bytes);
                return Err(job_error(job, "bs", message));
            }
        }
        Ok(())
    }

    fn make_thread(
        &mut self,
        spec: usize,
        job: &JobSpec,
        clone: u32,
        phase: u32,
        groupid: u32,
        options: &RunOptions,
    ) -> Result<Thread, JobError> {
        let lba = self.lba_bytes;
        let zone_bytes = self.zones.zone_lbas * lba;
        let target_bytes = u64::from(self.zones.zones) * zone_bytes;
        let offset = job.offset.resolve(target_bytes, zone_bytes)
            + job.offset_increment.resolve(target_bytes, zone_bytes) * u64::from(clone);
        if offset >= target_bytes {
            return Err(job_error(job, "offset", format!("offset {offset} is past the end ({target_bytes} B)")));
        }
        let size = job.size.map_or(target_bytes - offset, |s| s.resolve(target_bytes - offset, zone_bytes));
        let (mut start, mut end) = (offset / lba, (offset.saturating_add(size)).min(target_bytes) / lba);
        if job.zonemode == ZoneMode::Zbd {
            let zl = self.zones.zone_lbas;
            start = start.div_ceil(zl) * zl;
            end = end / zl * zl;
        }
        if job.zonemode == ZoneMode::Zbd && end <= start {
            let message =
                format!("the range (offset {offset}, size {size}) must hold at least one whole zone of {zone_bytes} B");
            return Err(job_error(job, "size", message));
        }
        if end <= start || (end - start) * lba < job.bs.iter().map(|b| b.max_bytes).max().unwrap_or(0) {
            return Err(job_error(
                job,
                "size",
                format!("the job's range (offset {offset}, size {size}) holds no block"),
            ));
        }
        let limit_bytes = job.io_size.map_or((end - start) * lba, |s| s.resolve(target_bytes, zone_bytes));
        let seed = job.randseed.unwrap_or(options.seed ^ 0x89) ^ ((spec as u64) << 32) ^ u64::from(clone);
        let mut rng = SimRng::fork(seed, u64::from(clone));
        let unit_lbas = (job.bs.iter().map(|b| b.min_bytes).min().unwrap_or(lba) / lba).max(1);
        let blocks = ((end - start) / unit_lbas).max(1);
        let offsets = OffsetGenerator::new(job.random_distribution, blocks, &mut rng);
        let kernel = !job.ioengine.is_passthrough();
        let scheduler = job.scheduler.unwrap_or(options.scheduler);
        let layer = match (kernel, scheduler) {
            (false, _) => 0,
            (true, Scheduler::None) => 1,
            (true, Scheduler::MqDeadline) => 2,
            (true, Scheduler::Zinc) => 3,
        };
        let cost = self.host.cost(match job.ioengine {
            IoEngine::Spdk => zonelab_host::StackKind::Passthrough,
            IoEngine::IoUringCmd => zonelab_host::StackKind::UringPassthrough,
            _ => zonelab_host::StackKind::Kernel,
        });
        let first_zone = self.zones.zone_of(start);
        Ok(Thread {
            spec,
            clone,
            groupid,
            phase,
            rng,
            offsets,
            unit_lbas,
            region_start: start,
            region_end: end,
            first_zone,
            end_zone: self.zones.zone_of(end - 1) + 1,
            limit_bytes,
            issued_bytes: 0,
            issued_ios: 0,
            seq_next: [start; DDIRS],
            cursor_zone: [first_zone; DDIRS],
            cursor_written: false,
            inflight: 0,
            qd: if job.ioengine.is_sync() { 1 } else { job.iodepth },
            layer,
            submit_cost_ns: cost.submit_ns,
            complete_cost_ns: cost.complete_ns,
            reap_cost_ns: match job.ioengine {
                IoEngine::Libaio => self.host.engine_per_io.libaio_ns,
                IoEngine::Psync => self.host.engine_per_io.psync_ns,
                _ => 0,
            },
            unseen: VecDeque::new(),
            reaping: false,
            cpu: Timeline::new(),
            ring_last_ns: None,
            start_ns: 0,
            stats_start_ns: 0,
            deadline_ns: RUN_NS_MAX,
            rate_next_ns: [0; DDIRS],
            pump_at_ns: None,
            open_retries: 0,
            chain: None,
            stage: Stage::Issuing(Hold::Free),
            verify_ranges: Vec::new(),
            window_next_ns: 0,
            stats: JobStats::default(),
        })
    }

    /// Runs every thread to its end; `progress` sees the simulated time now and then.
    pub fn run(mut self, progress: &mut dyn FnMut(Nanos)) -> Result<RunResult, JobError> {
        self.start_phase(0, 0);
        let mut events_seen = 0u64;
        while let Some((now, event)) = self.events.pop() {
            events_seen += 1;
            if events_seen.is_multiple_of(1 << 16) {
                progress(now);
            }
            self.handle(now, event);
        }
        let end_ns = self.events.now_ns();
        let disk = {
            let (a, b) = (self.layers[1].counters(), self.layers[2].counters());
            SchedulerCounters {
                read_ios: a.read_ios + b.read_ios,
                write_ios: a.write_ios + b.write_ios,
                read_merges: a.read_merges + b.read_merges,
                write_merges: a.write_merges + b.write_merges,
            }
        };
        let threads = self
            .threads
            .into_iter()
            .map(|t| ThreadResult { spec: t.spec, clone: t.clone, groupid: t.groupid, stats: t.stats })
            .collect();
        Ok(RunResult { threads, disk, disk_busy_ns: self.busy.1, end_ns })
    }

    fn schedule(&mut self, at_ns: Nanos, event: Event) {
        self.events.schedule(at_ns, event).expect("event queue bounded by threads times iodepth");
    }

    fn start_phase(&mut self, phase: u32, now: Nanos) {
        self.phase_running = phase;
        for index in 0..self.threads.len() {
            let thread = &mut self.threads[index];
            if thread.phase != phase {
                continue;
            }
            let job = &self.set.jobs[thread.spec];
            let (low, high) = job.startdelay_ns;
            let delay = if high > low { low + thread.rng.below(high - low + 1) } else { low };
            self.schedule(now + delay, Event::Start(index as u32));
        }
    }

    fn handle(&mut self, now: Nanos, event: Event) {
        match event {
            Event::Start(t) => self.start_thread(now, t),
            Event::Pump(t) => {
                let thread = &mut self.threads[t as usize];
                if thread.pump_at_ns == Some(now) {
                    thread.pump_at_ns = None;
                }
                self.pump(now, t);
            }
            Event::Insert(tag) => self.insert(now, tag),
            Event::DeviceSubmit { layer, id } => self.device_submit(now, layer, id),
            Event::DeviceDone { layer, id } => self.device_done(now, layer, id),
            Event::DeviceWake => {
                if self.wake_at_ns == Some(now) {
                    self.wake_at_ns = None;
                    self.device.advance(now + 1);
                    self.device_events(now);
                }
            }
            Event::Reap(tag) => self.reap(now, tag),
            Event::ReapNext(t) => self.reap_next(now, t),
            Event::Epoch => self.epoch(now),
            Event::SoftFill(t) => {
                let chunk = self.set.jobs[self.threads[t as usize].spec].softfinish_chunk;
                self.soft_fill(now, t, chunk);
            }
        }
    }

    fn start_thread(&mut self, now: Nanos, t: u32) {
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let thread = &mut self.threads[t as usize];
        thread.start_ns = now;
        thread.stats_start_ns = now + job.ramp_time_ns;
        thread.window_next_ns = thread.stats_start_ns + WINDOW_NS;
        thread.rate_next_ns = [now; DDIRS];
        if let Some(runtime) = job.runtime_ns {
            thread.deadline_ns = (thread.stats_start_ns + runtime).min(RUN_NS_MAX);
        }
        self.pump(now, t);
    }

    /// Issues what the thread may issue now.
    fn pump(&mut self, now: Nanos, t: u32) {
        for _ in 0..=IODEPTH_MAX {
            let thread = &mut self.threads[t as usize];
            if thread.stage == Stage::Ended || thread.chain.is_some() {
                return;
            }
            if now >= thread.deadline_ns {
                thread.stop_issuing();
            }
            if thread.stage != Stage::Issuing(Hold::Free) {
                let refill_verify = thread.stage == Stage::Verifying && thread.inflight < thread.qd;
                if thread.inflight > 0 && !refill_verify {
                    return;
                }
                let reset = match thread.stage {
                    Stage::Issuing(Hold::Think) => {
                        thread.enter(Stage::Issuing(Hold::Free));
                        let at = now.saturating_add(self.set.jobs[thread.spec].thinktime_ns);
                        self.wake_at(t, at);
                        return;
                    }
                    Stage::Issuing(Hold::Reset(zone)) => {
                        thread.enter(Stage::Issuing(Hold::Free));
                        Some(zone)
                    }
                    Stage::Draining { reset: Some(zone) } => {
                        thread.enter(Stage::Draining { reset: None });
                        Some(zone)
                    }
                    _ => None,
                };
                if let Some(zone) = reset {
                    let slba = self.zones.zslba(zone);
                    let reset = Planned {
                        ddir: DDIR_WRITE,
                        op: RequestOp::ZoneReset,
                        slba,
                        nlb: 0,
                        zone: Some(zone),
                        kind: IoKind::ResetForWrite,
                    };
                    // fio resets with a blocking ioctl: writes resume once it completes.
                    self.issue(now, t, reset);
                    return;
                }
                self.finish_issuing(now, t);
                return;
            }
            if thread.inflight >= thread.qd {
                return;
            }
            match self.next_io(now, t) {
                Next::Io(planned) => {
                    self.issue(now, t, planned);
                    let job = &self.set.jobs[self.threads[t as usize].spec];
                    if job.thinktime_ns > 0 {
                        self.threads[t as usize].enter(Stage::Issuing(Hold::Think));
                    }
                }
                Next::Wait(at) => {
                    self.wake_at(t, at);
                    return;
                }
                Next::Reset(zone) => self.threads[t as usize].enter(Stage::Issuing(Hold::Reset(zone))),
                Next::End => self.threads[t as usize].stop_issuing(),
            }
        }
    }

    fn wake_at(&mut self, t: u32, at_ns: Nanos) {
        let thread = &mut self.threads[t as usize];
        if at_ns >= thread.deadline_ns.min(RUN_NS_MAX) {
            thread.stop_issuing();
            let at = thread.deadline_ns.min(RUN_NS_MAX).max(self.events.now_ns());
            self.schedule(at, Event::Pump(t));
            return;
        }
        if thread.pump_at_ns.is_some_and(|p| p <= at_ns) {
            return;
        }
        thread.pump_at_ns = Some(at_ns);
        self.schedule(at_ns, Event::Pump(t));
    }

    /// No more I/O from the thread: verify what it wrote, or end it.
    fn finish_issuing(&mut self, now: Nanos, t: u32) {
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let thread = &mut self.threads[t as usize];
        assert!(matches!(thread.stage, Stage::Draining { reset: None } | Stage::Verifying), "{:?}", thread.stage);
        if job.verify != Verify::None
            && thread.stage == (Stage::Draining { reset: None })
            && thread.stats.error.is_none()
        {
            thread.enter(Stage::Verifying);
            thread.verify_ranges.reverse();
        }
        if thread.stage == Stage::Verifying && thread.stats.error.is_none() {
            let mdts = self.device.layout().mdts_lbas.max(1) as u32;
            // Bounded by the queue depth: each pass puts one read in flight.
            for _ in 0..=IODEPTH_MAX {
                let thread = &mut self.threads[t as usize];
                if thread.inflight >= thread.qd {
                    break;
                }
                let Some((slba, nlb)) = thread.verify_ranges.pop() else { break };
                let head = nlb.min(mdts);
                if head < nlb {
                    thread.verify_ranges.push((slba + u64::from(head), nlb - head));
                }
                let read = Planned {
                    ddir: DDIR_READ,
                    op: RequestOp::Read,
                    slba,
                    nlb: head,
                    zone: None,
                    kind: IoKind::VerifyRead,
                };
                self.issue(now, t, read);
            }
        }
        // Also after an error: the reads in flight complete before the thread ends.
        if self.threads[t as usize].inflight > 0 {
            return;
        }
        self.end_thread(now, t);
    }

    fn end_thread(&mut self, now: Nanos, t: u32) {
        let wrote = self.threads[t as usize].stats.dirs[DDIR_WRITE].total_ios > 0;
        let now = if self.set.jobs[self.threads[t as usize].spec].end_fsync && wrote {
            // Nothing of the thread is in flight: the Flush is its last command.
            self.device.submit(now, &Command::Flush, None).complete_ns
        } else {
            now
        };
        let thread = &mut self.threads[t as usize];
        assert!(thread.inflight == 0, "a thread ends with nothing in flight");
        thread.enter(Stage::Ended);
        let runtime = now.saturating_sub(thread.stats_start_ns);
        for dir in thread.stats.dirs.iter_mut() {
            if dir.total_ios > 0 {
                dir.runtime_ns = runtime;
            }
        }
        thread.stats.job_runtime_ns = runtime;
        thread.stats.elapsed_ns = now - thread.start_ns;
        let phase = thread.phase;
        let phase_done = self.threads.iter().filter(|t| t.phase == phase).all(|t| t.stage == Stage::Ended);
        if phase_done && phase + 1 < self.phases {
            self.start_phase(phase + 1, now);
        }
    }

    fn issue(&mut self, now: Nanos, t: u32, planned: Planned) {
        let Planned { ddir, op, slba, nlb, zone, kind } = planned;
        let thread = &mut self.threads[t as usize];
        let bytes = u64::from(nlb) * self.lba_bytes;
        if matches!(kind, IoKind::Data | IoKind::TrimReset | IoKind::OpenBlock) {
            thread.issued_bytes += bytes;
            thread.issued_ios += 1;
            self.rate_charge(t, ddir, bytes);
        }
        let thread = &mut self.threads[t as usize];
        thread.inflight += 1;
        thread.stats.depth.add(thread.inflight);
        if let (Some(z), true) = (zone, matches!(op, RequestOp::ZoneReset)) {
            self.zones.set_empty(z);
            self.zone_generation[z as usize] += 1;
            thread.verify_ranges.retain(|&(lba, _)| lba / self.zones.zone_lbas != u64::from(z));
            if kind == IoKind::ResetForWrite || kind == IoKind::TrimReset {
                thread.stats.zone_resets += 1;
            }
        }
        let written = op == RequestOp::Write || op == RequestOp::Append;
        if written && self.set.jobs[thread.spec].verify != Verify::None {
            thread.verify_ranges.push((slba, nlb));
        }
        let zone_locked = zone.filter(|&z| op != RequestOp::Read && self.zones.is_sequential(z));
        let ready_ns = zone_locked.map_or(now, |z| now.max(self.zone_submit_ns[z as usize]));
        let host_ns = self.ring_wakeup_ns(t, kind, ready_ns) + self.sync_call_ns(t, kind);
        let thread = &mut self.threads[t as usize];
        let submit_ns = thread.cpu.reserve(ready_ns, thread.submit_cost_ns + host_ns);
        if let Some(z) = zone_locked {
            self.zone_submit_ns[z as usize] = submit_ns;
        }
        let io = Io {
            thread: t,
            ddir,
            kind,
            op,
            slba,
            nlb,
            zone,
            issue_ns: now,
            submit_ns,
            status: Status::Success,
            verify_error: false,
        };
        let tag = match self.free_ios.pop() {
            Some(tag) => {
                self.ios[tag as usize] = io;
                tag
            }
            None => {
                self.ios.push(io);
                (self.ios.len() - 1) as u32
            }
        };
        if submit_ns == now {
            self.insert(now, tag);
        } else {
            self.schedule(submit_ns, Event::Insert(tag));
        }
    }

    fn rate_charge(&mut self, t: u32, ddir: usize, bytes: u64) {
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let thread = &mut self.threads[t as usize];
        let mut gap_ns = 0u64;
        if let Some(rate) = job.rate_bytes_per_s[ddir].filter(|r| *r > 0) {
            gap_ns = gap_ns.max((u128::from(bytes) * 1_000_000_000 / u128::from(rate)) as u64);
        }
        if let Some(iops) = job.rate_iops[ddir].filter(|r| *r > 0) {
            gap_ns = gap_ns.max(1_000_000_000 / iops);
        }
        if gap_ns == 0 {
            return;
        }
        if job.rate_process == RateProcess::Poisson {
            let u = thread.rng.unit().max(f64::MIN_POSITIVE);
            gap_ns = (-(u.ln()) * gap_ns as f64) as u64;
        }
        thread.rate_next_ns[ddir] = thread.rate_next_ns[ddir].saturating_add(gap_ns).min(RUN_NS_MAX);
    }

    fn insert(&mut self, now: Nanos, tag: u32) {
        let io = self.ios[tag as usize];
        let layer = self.threads[io.thread as usize].layer;
        let locked_zone = io.zone.filter(|&z| self.zones.is_sequential(z));
        let request = HostRequest { tag: u64::from(tag), op: io.op, slba: io.slba, nlb: io.nlb, locked_zone };
        let mut out = std::mem::take(&mut self.dispatched);
        self.layers[layer as usize].insert(request, &mut out);
        self.send(now, layer, &mut out);
        self.dispatched = out;
        self.arm_epoch(now);
    }

    /// ZINC's epoch timer ticks while it holds zone management back.
    fn arm_epoch(&mut self, now: Nanos) {
        let zinc = &self.layers[3];
        if self.epoch_armed || zinc.held() == 0 {
            return;
        }
        let epoch_ns = zinc.epoch_ns().expect("layer 3 is zinc");
        self.epoch_armed = true;
        self.schedule((now / epoch_ns + 1) * epoch_ns, Event::Epoch);
    }

    fn epoch(&mut self, now: Nanos) {
        self.epoch_armed = false;
        let mut out = std::mem::take(&mut self.dispatched);
        self.layers[3].epoch(&mut out);
        self.send(now, 3, &mut out);
        self.dispatched = out;
        self.arm_epoch(now);
    }

    /// Hands dispatched requests to the device, through mq-deadline's lock.
    fn send(&mut self, now: Nanos, layer: u8, out: &mut Vec<Dispatch>) {
        for dispatch in out.drain(..) {
            if layer >= 2 {
                let at = self.mq_deadline_lock.reserve(now, self.host.mq_deadline_dispatch_ns);
                self.pending_dispatch(layer, dispatch);
                self.schedule(at, Event::DeviceSubmit { layer, id: dispatch.id });
            } else {
                self.pending_dispatch(layer, dispatch);
                self.device_submit(now, layer, dispatch.id);
            }
        }
    }

    fn pending_dispatch(&mut self, layer: u8, dispatch: Dispatch) {
        let statuses = &mut self.dispatch_status[layer as usize];
        if statuses.len() <= dispatch.id as usize {
            statuses.resize(dispatch.id as usize + 1, Status::Success);
        }
        let slots = &mut self.pending[layer as usize];
        if slots.len() <= dispatch.id as usize {
            slots.resize(dispatch.id as usize + 1, None);
        }
        slots[dispatch.id as usize] = Some(dispatch);
    }

    fn device_submit(&mut self, now: Nanos, layer: u8, id: u32) {
        let dispatch = self.pending[layer as usize][id as usize].expect("a dispatched request is pending");
        let (slba, nlb) = (dispatch.slba, dispatch.nlb);
        let first_tag = self.layers[layer as usize].first_tag(id) as u32;
        let first = self.ios[first_tag as usize];
        let verify = self.set.jobs[self.threads[first.thread as usize].spec].verify;
        let data_mode = self.device.config().mode == Mode::Data;
        let payload_bytes = if data_mode { u64::from(nlb) * self.lba_bytes } else { 0 } as usize;
        let mut buffer = std::mem::take(&mut self.buffer);
        let payload = match dispatch.op {
            RequestOp::Write | RequestOp::Append if data_mode && verify != Verify::None => {
                buffer.resize(payload_bytes, 0);
                self.fill_verify(&mut buffer, verify, slba, nlb);
                Payload::Bytes(&buffer)
            }
            _ if data_mode => Payload::Pattern(0x5a),
            _ => Payload::None,
        };
        let command = match dispatch.op {
            RequestOp::Read => Command::Read { slba, nlb },
            RequestOp::Write => Command::Write { slba, nlb, payload, fua: false },
            RequestOp::Append => {
                Command::Append { zslba: slba - slba % self.zones.zone_lbas, nlb, payload, fua: false }
            }
            RequestOp::ZoneReset => Command::ZoneMgmtSend { action: ZoneAction::Reset, slba, select_all: false },
            RequestOp::ZoneFinish => Command::ZoneMgmtSend { action: ZoneAction::Finish, slba, select_all: false },
        };
        let mut read_buffer = Vec::new();
        let read_out = if first.kind == IoKind::VerifyRead {
            read_buffer.resize(u64::from(nlb) as usize * self.lba_bytes as usize, 0);
            Some(&mut read_buffer[..])
        } else {
            None
        };
        let completion = match self.device.start(now, &command, read_out) {
            Started::Done(c) => c,
            Started::Pending(tag) => {
                self.buffer = buffer;
                self.device_pending.insert(tag, (layer, id));
                self.device_events(now);
                return;
            }
        };
        self.buffer = buffer;
        if first.kind == IoKind::VerifyRead && completion.status.is_success() {
            let generation = |lba: u64| self.zone_generation[(lba / self.zones.zone_lbas) as usize];
            let bad = read_buffer.chunks(self.lba_bytes as usize).enumerate().any(|(i, block)| {
                verify::check_block(block, verify, slba + i as u64, generation(slba + i as u64)).is_err()
            });
            self.ios[first_tag as usize].verify_error = bad;
        }
        self.dispatch_status[layer as usize][id as usize] = completion.status;
        self.track_busy(now, completion.complete_ns);
        self.schedule(completion.complete_ns, Event::DeviceDone { layer, id });
        if self.device.pending_tasks() > 0 || self.wake_at_ns.is_some() {
            self.device_events(now);
        }
    }

    /// Delivers the management commands the device completed and arranges
    /// to wake when its next management step may start.
    fn device_events(&mut self, now: Nanos) {
        for (tag, completion) in self.device.take_completed() {
            let (layer, id) = self.device_pending.remove(&tag).expect("a pending device tag");
            self.dispatch_status[layer as usize][id as usize] = completion.status;
            self.track_busy(completion.submit_ns, completion.complete_ns);
            self.schedule(completion.complete_ns.max(now), Event::DeviceDone { layer, id });
        }
        if let Some(next) = self.device.next_event_ns().map(|t| t.max(now)) {
            if self.wake_at_ns != Some(next) {
                self.wake_at_ns = Some(next);
                self.schedule(next, Event::DeviceWake);
            }
        }
    }

    fn fill_verify(&self, buffer: &mut [u8], verify: Verify, slba: u64, nlb: u32) {
        // An append lands at the write pointer the zone view planned for it,
        // which is the `slba` the request carries.
        for (i, block) in buffer.chunks_mut(self.lba_bytes as usize).take(nlb as usize).enumerate() {
            let lba = slba + i as u64;
            let generation = self.zone_generation[(lba / self.zones.zone_lbas) as usize];
            verify::fill_block(block, verify, self.verify_seed, lba, generation);
        }
    }

    /// Device utilisation as /proc/diskstats counts it: time with at least one request outstanding.
    fn track_busy(&mut self, now: Nanos, complete_ns: Nanos) {
        let (span_end, busy) = &mut self.busy;
        let from = now.max(*span_end);
        if complete_ns > from {
            *busy += complete_ns - from;
            *span_end = complete_ns;
        }
    }

    fn device_done(&mut self, now: Nanos, layer: u8, id: u32) {
        let status = self.dispatch_status[layer as usize][id as usize];
        self.pending[layer as usize][id as usize] = None;
        let mut tags = std::mem::take(&mut self.tags);
        let mut out = std::mem::take(&mut self.dispatched);
        tags.clear();
        self.layers[layer as usize].complete(id, &mut tags, &mut out);
        for &tag in &tags {
            let io = &mut self.ios[tag as usize];
            io.status = status;
            let t = io.thread;
            let thread = &mut self.threads[t as usize];
            if thread.complete_cost_ns == 0 && thread.reap_cost_ns == 0 {
                self.reap(now, tag as u32);
                continue;
            }
            // The thread's CPU takes completions one at a time.
            thread.unseen.push_back((now, tag as u32));
            if !std::mem::replace(&mut thread.reaping, true) {
                self.schedule(now, Event::ReapNext(t));
            }
        }
        self.send(now, layer, &mut out);
        self.tags = tags;
        self.dispatched = out;
    }

    /// The thread's CPU takes its oldest completion once it is free of
    /// earlier completions and submissions: the completion path's CPU time
    /// (`complete_cost_ns`) and the wait for it are inside the request's
    /// latency, the engine's reaping after it (`reap_cost_ns`) is not.
    fn reap_next(&mut self, now: Nanos, t: u32) {
        let thread = &mut self.threads[t as usize];
        assert!(thread.reaping);
        let Some(&(done_ns, tag)) = thread.unseen.front() else {
            thread.reaping = false;
            return;
        };
        let at_ns = done_ns.max(thread.cpu.free_at_ns());
        if at_ns > now {
            self.schedule(at_ns, Event::ReapNext(t));
            return;
        }
        thread.unseen.pop_front();
        let seen_ns = thread.cpu.reserve(now, thread.complete_cost_ns);
        let free_ns = thread.cpu.reserve(seen_ns, thread.reap_cost_ns);
        let more = !thread.unseen.is_empty();
        thread.reaping = more;
        if seen_ns == now {
            self.reap(now, tag);
        } else {
            self.schedule(seen_ns, Event::Reap(tag));
        }
        if more {
            self.schedule(free_ns, Event::ReapNext(t));
        }
    }

    /// The thread sees its request complete.
    fn reap(&mut self, now: Nanos, tag: u32) {
        let io = self.ios[tag as usize];
        self.free_ios.push(tag);
        let t = io.thread;
        let sync = self.set.jobs[self.threads[t as usize].spec].ioengine.is_sync();
        let thread = &mut self.threads[t as usize];
        assert!(thread.inflight > 0);
        thread.inflight -= 1;
        if !io.status.is_success() || io.verify_error {
            if thread.stats.error.is_none() {
                let (errno, what) = if io.verify_error { (84, "verify failed") } else { errno_of(io.status) };
                let message = format!(
                    "{what} ({}): {} offset={}, buflen={}",
                    io.status.name(),
                    op_name(io.op),
                    io.slba * self.lba_bytes,
                    u64::from(io.nlb) * self.lba_bytes
                );
                thread.stats.error = Some((errno, message));
            }
            thread.stop_issuing();
            thread.chain = None;
        } else {
            self.account(now, &io, sync);
            self.advance_chain(now, &io);
        }
        // The reaping itself (reserved on the thread's CPU by `reap_next`) is outside the latency.
        let reap_cost_ns = self.threads[t as usize].reap_cost_ns;
        if reap_cost_ns == 0 {
            self.pump(now, t);
        } else {
            self.wake_at(t, now + reap_cost_ns);
        }
    }

    fn account(&mut self, now: Nanos, io: &Io, sync: bool) {
        let lba_bytes = self.lba_bytes;
        let thread = &mut self.threads[io.thread as usize];
        close_windows(thread, now);
        let counted = match io.kind {
            IoKind::Data | IoKind::TrimReset | IoKind::VerifyRead | IoKind::OpenBlock => {
                Some((io.ddir, u64::from(io.nlb) * lba_bytes, io.issue_ns))
            }
            IoKind::Finish => thread.chain.map(|c| (DDIR_TRIM, 0, c.start_ns)),
            IoKind::ResetForWrite | IoKind::SoftFill => None,
        };
        let Some((ddir, bytes, issue_ns)) = counted else { return };
        if now < thread.stats_start_ns {
            return;
        }
        let ddir = if io.kind == IoKind::TrimReset { DDIR_TRIM } else { ddir };
        let dir = &mut thread.stats.dirs[ddir];
        dir.io_bytes += bytes;
        dir.total_ios += 1;
        let submit_ns = if io.kind == IoKind::Finish { issue_ns } else { io.submit_ns };
        if !sync {
            dir.slat.add(submit_ns - issue_ns);
        }
        dir.clat.add(now - if sync { issue_ns } else { submit_ns });
        dir.lat.add(now - issue_ns);
    }

    /// Whether an io_uring job issues requests of `kind` beside its ring:
    /// fio issues zone resets, finishes and softFinish fills as synchronous
    /// calls, so they leave the ring idle.
    fn beside_ring(kind: IoKind) -> bool {
        !matches!(kind, IoKind::Data | IoKind::OpenBlock | IoKind::VerifyRead)
    }

    /// The extra host cost of a request of `kind` that an io_uring job issues
    /// as a synchronous call.
    fn sync_call_ns(&self, t: u32, kind: IoKind) -> Nanos {
        let job = &self.set.jobs[self.threads[t as usize].spec];
        if job.ioengine.is_io_uring() && Self::beside_ring(kind) {
            self.host.sync_call_ns
        } else {
            0
        }
    }

    /// The wait for a sleeping submission-queue polling thread, for a request
    /// of `kind` the thread submits at `ready_ns`.
    fn ring_wakeup_ns(&mut self, t: u32, kind: IoKind, ready_ns: Nanos) -> Nanos {
        let thread = &mut self.threads[t as usize];
        let job = &self.set.jobs[thread.spec];
        if !(job.sqthread_poll && job.ioengine.is_io_uring()) || Self::beside_ring(kind) {
            return 0;
        }
        // fio sets the ring up before the job's zone set-up (zone reports and
        // resets) and any wait for earlier jobs, so the first submission finds
        // the thread asleep: ConfZNS++'s softFinish runs paid the wake-up on
        // every operation, the first too (the fastest of 15 took 167 µs).
        let cost_ns = match thread.ring_last_ns {
            None => self.host.sq_poll.wakeup_ns,
            Some(last_ns) => self.host.sq_poll.wakeup_cost_ns(last_ns.min(ready_ns), ready_ns),
        };
        thread.ring_last_ns = Some(ready_ns);
        cost_ns
    }

    /// finish=1 and softfinish=1: an operation spans several requests.
    fn advance_chain(&mut self, now: Nanos, io: &Io) {
        let t = io.thread;
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let (softfinish, chunk) = (job.softfinish, job.softfinish_chunk);
        match io.kind {
            IoKind::OpenBlock => {
                let zone = io.zone.expect("the opening block has a zone");
                self.threads[t as usize].chain = Some(Chain { zone, start_ns: now, fill_bytes: 0 });
                if softfinish {
                    self.soft_fill(now, t, chunk);
                } else {
                    self.zones.set_full(zone);
                    let slba = self.zones.zslba(zone);
                    let finish = Planned {
                        ddir: DDIR_TRIM,
                        op: RequestOp::ZoneFinish,
                        slba,
                        nlb: 0,
                        zone: Some(zone),
                        kind: IoKind::Finish,
                    };
                    self.issue_chained(now, t, finish);
                }
            }
            IoKind::SoftFill => {
                let chain = self.threads[t as usize].chain.as_mut().expect("a fill belongs to a chain");
                chain.fill_bytes += u64::from(io.nlb) * self.lba_bytes;
                let pause_ns = job.softfinish_pause_ns;
                if pause_ns == 0 {
                    self.soft_fill(now, t, chunk);
                } else {
                    // Pauses add up over many chunks: none takes the run past its horizon.
                    self.schedule((now + pause_ns).min(RUN_NS_MAX.max(now)), Event::SoftFill(t));
                }
            }
            IoKind::Finish => self.threads[t as usize].chain = None,
            _ => {}
        }
    }

    /// Writes the next softFinish chunk, or ends the operation when the zone is full.
    fn soft_fill(&mut self, now: Nanos, t: u32, chunk: Option<Size>) {
        let chain = self.threads[t as usize].chain.expect("softfinish runs in a chain");
        let room = self.zones.room(chain.zone);
        if room == 0 {
            let thread = &mut self.threads[t as usize];
            if now >= thread.stats_start_ns {
                let dir = &mut thread.stats.dirs[DDIR_TRIM];
                dir.io_bytes += chain.fill_bytes;
                dir.total_ios += 1;
                dir.slat.add(0);
                dir.clat.add(now - chain.start_ns);
                dir.lat.add(now - chain.start_ns);
            }
            thread.chain = None;
            return;
        }
        let zone_bytes = self.zones.zone_lbas * self.lba_bytes;
        let chunk_lbas =
            chunk.map_or(self.device.layout().mdts_lbas, |c| c.resolve(zone_bytes, zone_bytes) / self.lba_bytes);
        let nlb = chunk_lbas.clamp(1, self.device.layout().mdts_lbas.max(1)).min(room);
        let lba = self.zones.reserve(chain.zone, nlb);
        let fill = Planned {
            ddir: DDIR_TRIM,
            op: RequestOp::Write,
            slba: lba,
            nlb: nlb as u32,
            zone: Some(chain.zone),
            kind: IoKind::SoftFill,
        };
        self.issue_chained(now, t, fill);
    }

    /// Issues a request of a chained operation without ending the chain.
    fn issue_chained(&mut self, now: Nanos, t: u32, planned: Planned) {
        let chain = self.threads[t as usize].chain.take();
        self.issue(now, t, planned);
        self.threads[t as usize].chain = chain;
    }
}

/// The errno Linux returns for an NVMe status, as fio prints it.
fn errno_of(status: Status) -> (i32, &'static str) {
    match status {
        Status::TooManyActiveZones => (75, "Value too large for defined data type"),
        Status::TooManyOpenZones => (109, "Too many references: cannot splice"),
        Status::LbaOutOfRange => (121, "Remote I/O error"),
        _ => (5, "Input/output error"),
    }
}

fn op_name(op: RequestOp) -> &'static str {
    match op {
        RequestOp::Read => "read",
        RequestOp::Write => "write",
        RequestOp::Append => "append",
        RequestOp::ZoneReset => "zone reset",
        RequestOp::ZoneFinish => "zone finish",
    }
}
