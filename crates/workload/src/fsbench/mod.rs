//! File-system workloads as simulated processes (seed 002 Table 3):
//! fileserver and varmail with filebench's flow operations, and OLTP-like
//! runs modelled on tpcc and YCSB-a/f (16 KiB page reads and updates of a
//! database file, a log file appended and fsynced at every commit). Data sets
//! are scaled to the file system size and the wanted utilization.
//!
//! Every thread issues one file-system call at a time; the runner always
//! advances the thread whose next call is earliest, so calls reach the file
//! system in simulated-time order.

mod flows;
mod pool;
pub mod report;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use zonelab_device::ZnsPlusCounters;
use zonelab_fs::{Fs, FsError, Traffic};
use zonelab_sim::{LatencyHistogram, Nanos, SimRng};

/// The workloads of seed 002 Table 3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsWorkload {
    /// filebench fileserver: create and write whole files, append, read whole
    /// files, delete.
    Fileserver,
    /// filebench varmail: delete; create, append, fsync; read; append, fsync;
    /// read (a mail server's small files).
    Varmail,
    /// tpcc-like: transactions of four page reads and two updates of a database
    /// file (80% on 20% of the pages), a log appended and fsynced at each commit.
    Tpcc,
    /// YCSB workload A: one record per transaction, read or updated (half each).
    YcsbA,
    /// YCSB workload F: one record per transaction, read or read, modified and
    /// written back (half each).
    YcsbF,
}

impl FsWorkload {
    /// Every workload, in the order the CLI and the reports list them.
    pub const ALL: [FsWorkload; 5] =
        [FsWorkload::Fileserver, FsWorkload::Varmail, FsWorkload::Tpcc, FsWorkload::YcsbA, FsWorkload::YcsbF];

    /// The name the CLI and the reports use.
    pub fn name(self) -> &'static str {
        match self {
            FsWorkload::Fileserver => "fileserver",
            FsWorkload::Varmail => "varmail",
            FsWorkload::Tpcc => "tpcc",
            FsWorkload::YcsbA => "ycsb-a",
            FsWorkload::YcsbF => "ycsb-f",
        }
    }

    /// The workload called `text` (see [`Self::name`]), if any.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|w| w.name() == text)
    }

    /// Threads (filebench) or connections (OLTP) of seed 002 Table 3.
    pub fn default_threads(self) -> u32 {
        match self {
            FsWorkload::Fileserver => 50,
            FsWorkload::Varmail | FsWorkload::Tpcc => 16,
            FsWorkload::YcsbA | FsWorkload::YcsbF => 32,
        }
    }

    /// Whether it is a database-like run (a buffer pool, a commit log) rather
    /// than a filebench flow.
    pub fn is_oltp(self) -> bool {
        matches!(self, FsWorkload::Tpcc | FsWorkload::YcsbA | FsWorkload::YcsbF)
    }
}

/// What a run does: the workload, its data set, threads, how much it writes
/// and its seed.
#[derive(Debug, Clone, PartialEq)]
pub struct FsBenchConfig {
    /// Which workload.
    pub workload: FsWorkload,
    /// Used blocks (file data and their node blocks, as F2FS counts them for
    /// `df`) over the file system's user blocks
    /// ([`zonelab_fs::state::FsState::user_blocks`]).
    pub utilization: f64,
    /// Simulated threads (filebench) or connections (OLTP).
    pub threads: u32,
    /// The measured run ends after the workload has written this many bytes.
    pub write_bytes: u64,
    /// Seed of every random draw (the data set's and each thread's stream).
    pub seed: u64,
}

impl FsBenchConfig {
    /// `workload` at 90% utilization with its Table 3 threads, 1 GiB written,
    /// seed 1.
    pub fn new(workload: FsWorkload) -> Self {
        Self { workload, utilization: 0.9, threads: workload.default_threads(), write_bytes: 1 << 30, seed: 1 }
    }
}

/// What a measured run did.
#[derive(Debug, Clone, Default)]
pub struct FsBenchResult {
    /// The workload's name.
    pub workload: &'static str,
    /// The recycling scheme's name.
    pub recycling: &'static str,
    /// Threads the run had.
    pub threads: u32,
    /// Operations completed (a filebench flow operation or a transaction).
    pub ops: u64,
    /// Bytes the workload read.
    pub read_bytes: u64,
    /// Bytes the workload wrote.
    pub write_bytes: u64,
    /// Simulated duration of the measured run.
    pub elapsed_ns: Nanos,
    /// Latency of each operation.
    pub latency: LatencyHistogram,
    /// Latency of the operations that fsynced.
    pub fsync_latency: LatencyHistogram,
    /// File-system traffic during the measured run.
    pub traffic: Traffic,
    /// Every segment compaction in the measured run.
    pub compactions: Vec<zonelab_fs::CompactionRecord>,
    /// Segments reclaimed by threaded logging (TL_open).
    pub tl_segments: u64,
    /// Of `tl_segments`, segments of another temperature of the same kind.
    pub tl_other_type_segments: u64,
    /// Segments reclaimed by compaction, foreground and background.
    pub sc_segments: u64,
    /// Compactions hybrid recycling chose over every threaded-logging candidate by cost.
    pub sc_chosen_by_cost: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
    /// Time spent in checkpoints (compaction's own included).
    pub checkpoint_ns: Nanos,
    /// What the device's ZNS+ commands did during the measured run.
    pub znsplus: ZnsPlusCounters,
    /// Mean flash chip utilization over the measured run (seed 002 Fig 9):
    /// the mean of `chip_utilization_series`.
    pub chip_utilization: f64,
    /// Chip utilization per 100 ms of the measured run (seed 002 Fig 10's
    /// dots): for each 100 ms of simulated time, the time the dies spent
    /// reading, programming, erasing or copying within it over 100 ms × dies.
    pub chip_utilization_series: Vec<(Nanos, f64)>,
}

impl FsBenchResult {
    /// Bytes read and written by the workload per second, in MB/s.
    pub fn throughput_mb_s(&self) -> f64 {
        (self.read_bytes + self.write_bytes) as f64 / (self.elapsed_ns.max(1) as f64 / 1e9) / 1e6
    }
    /// Everything the file system wrote (data, nodes, metadata, relocation,
    /// in-device copies and plugging) over what the workload wrote.
    pub fn waf(&self) -> f64 {
        let t = &self.traffic;
        let fs_blocks = t.data_blocks + t.node_blocks + t.meta_blocks + t.relocated_blocks + t.device_copied_blocks;
        let z = &self.znsplus;
        let total = fs_blocks + z.plugged_blocks_foreground + z.plugged_blocks_background;
        total as f64 * 4096.0 / self.write_bytes.max(1) as f64
    }
    /// Node and metadata blocks written per user data block (seed 002 Fig 7b):
    /// nodes the file system changed (by file writes, fsync, checkpoints, or
    /// to point at data a compaction moved) and NAT, SIT and checkpoint
    /// blocks. Node blocks a compaction only moves are relocation
    /// (`traffic.relocated_blocks`, or `device_copied_blocks` inside the
    /// device) and are left out, as in the paper, where ZNS and IZC show the
    /// same overhead.
    pub fn metadata_overhead(&self) -> f64 {
        (self.traffic.node_blocks + self.traffic.meta_blocks) as f64 / self.traffic.data_blocks.max(1) as f64
    }
    /// Share of the blocks the device copied internally that went by copyback.
    pub fn copyback_ratio(&self) -> f64 {
        self.znsplus.copyback_ratio()
    }
    /// Seed 002 Table 5 "TL": segments reclaimed by threaded logging (TL_opens
    /// by the file system) over all segments reclaimed (TL_opens plus
    /// compacted victims, foreground and background) in the measured run.
    pub fn tl_ratio(&self) -> f64 {
        self.tl_segments as f64 / (self.tl_segments + self.sc_segments).max(1) as f64
    }
    /// Seed 002 Table 5 "BP": blocks plugged ahead of the write pointer in
    /// idle die time (PPA-ordered plugging) over all blocks copied inside the
    /// device (zone_compaction and plugging, by copyback or read and program)
    /// in the measured run.
    pub fn background_plugging_ratio(&self) -> f64 {
        let z = &self.znsplus;
        z.plugged_blocks_background as f64 / (z.copyback_blocks + z.read_program_blocks).max(1) as f64
    }
}

/// One simulated process: its clock and where it is in its flow.
struct Thread {
    ready_ns: Nanos,
    step: usize,
    rng: SimRng,
    /// Start of the operation in progress (for its latency).
    op_start_ns: Nanos,
    txn: Option<flows::Txn>,
    /// The file slot an open of the flow picked for the steps that follow.
    open_slot: Option<u64>,
}

/// Most bytes a run may write, in multiples of the file system's size: the
/// measured part writes about this many segments over per segment, at wall
/// speed of the order of a GB a minute, so a bound keeps a run finite.
pub const WRITE_PER_FS_MAX: u64 = 16;

/// Why a file-system benchmark could not run: a setting out of range, or
/// the file system failing under the workload.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FsBenchError {
    /// The data set's share of the file system is outside what a run can fill.
    #[error("utilization {0} must be within 0.05 ..= 0.97")]
    Utilization(f64),
    /// Too few or too many simulated threads.
    #[error("threads {0} must be within 1 ..= 4096")]
    Threads(u32),
    /// The run would write more than [`WRITE_PER_FS_MAX`] times the file system.
    #[error(
        "write {write_bytes} bytes is more than {WRITE_PER_FS_MAX} times the file system's {fs_bytes} bytes (the most \
         a run may write, to keep it finite)"
    )]
    TooMuchWrite {
        /// The bytes asked for.
        write_bytes: u64,
        /// The file system's size.
        fs_bytes: u64,
    },
    /// Creating the data set failed.
    #[error("preparing the data set: {0}")]
    Populate(FsError),
    /// A workload's operation failed.
    #[error("{workload}: {source}")]
    Fs {
        /// The workload's name.
        workload: &'static str,
        /// The file system's error.
        source: FsError,
    },
    /// Compaction ran away: the data set leaves too little free space.
    #[error(
        "{workload}: more than 64 compactions per segment: the data set leaves too little free space (utilization \
         {utilization})"
    )]
    TooManyCompactions {
        /// The workload's name.
        workload: &'static str,
        /// The data set's share of the file system.
        utilization: f64,
    },
}

/// Prepares the data set, warms up until segments are being reclaimed, then
/// runs the workload until it has written `write_bytes`; returns what the
/// measured part did.
pub fn run(fs: &mut Fs, cfg: &FsBenchConfig) -> Result<FsBenchResult, FsBenchError> {
    run_with_progress(fs, cfg, &mut |_, _, _| {})
}

/// [`run`], telling `progress` (phase, bytes written, bytes the phase
/// writes at most) about once per MiB: "warm-up", then "measured".
pub fn run_with_progress(
    fs: &mut Fs,
    cfg: &FsBenchConfig,
    progress: Progress<'_>,
) -> Result<FsBenchResult, FsBenchError> {
    if !(0.05..=0.97).contains(&cfg.utilization) {
        return Err(FsBenchError::Utilization(cfg.utilization));
    }
    if cfg.threads == 0 || cfg.threads > 4096 {
        return Err(FsBenchError::Threads(cfg.threads));
    }
    let fs_bytes = u64::from(fs.segments()) * u64::from(fs.blocks_per_segment()) * 4096;
    if cfg.write_bytes > WRITE_PER_FS_MAX * fs_bytes {
        return Err(FsBenchError::TooMuchWrite { write_bytes: cfg.write_bytes, fs_bytes });
    }
    // Stream 0 is the data set's; threads draw from streams 1 ..= threads.
    let mut set = flows::FileSet::new(fs, cfg, &mut SimRng::fork(cfg.seed, 0));
    let t0 = set.populate(fs).map_err(FsBenchError::Populate)?;
    let t0 = fs.sync(t0);
    let threads: Vec<Thread> = (0..cfg.threads)
        .map(|i| Thread {
            ready_ns: t0 + u64::from(i),
            step: 0,
            rng: SimRng::fork(cfg.seed, u64::from(i) + 1),
            op_start_ns: t0 + u64::from(i),
            txn: None,
            open_slot: None,
        })
        .collect();
    let heap = threads.iter().enumerate().map(|(i, t)| Reverse((t.ready_ns, i as u32))).collect();
    let mut procs = Processes { set, threads, heap };
    // Warm-up, not measured: seed 002 measures once segment reclaiming
    // occurs steadily, so run until the file system has reclaimed a few
    // segments; twice its size written bounds the wait.
    let reclaimed = |fs: &Fs| fs.stats.sc_segments + fs.stats.tl_segments;
    let (reclaimed_before, mut warm) = (reclaimed(fs), FsBenchResult::default());
    let warm_bytes_max = 2 * fs.user_blocks() * 4096;
    while reclaimed(fs) < reclaimed_before + WARM_UP_RECLAIMS && warm.write_bytes < warm_bytes_max {
        let mib = warm.write_bytes >> 20;
        procs.step(fs, cfg, &mut warm)?;
        if warm.write_bytes >> 20 != mib {
            progress("warm-up", warm.write_bytes, warm_bytes_max);
        }
    }
    let t0 = procs.next_ns();
    let before = Snapshot::take(fs);
    let mut result = FsBenchResult {
        workload: cfg.workload.name(),
        recycling: fs.config().recycling.name(),
        threads: cfg.threads,
        ..Default::default()
    };
    let mut end_ns = t0;
    while result.write_bytes < cfg.write_bytes {
        let mib = result.write_bytes >> 20;
        end_ns = end_ns.max(procs.step(fs, cfg, &mut result)?);
        if result.write_bytes >> 20 != mib {
            progress("measured", result.write_bytes.min(cfg.write_bytes), cfg.write_bytes);
        }
        if fs.stats.compactions.len() - before.compactions > 64 * fs.segments() as usize {
            return Err(FsBenchError::TooManyCompactions {
                workload: cfg.workload.name(),
                utilization: cfg.utilization,
            });
        }
    }
    result.elapsed_ns = end_ns - t0;
    before.finish(fs, &mut result, t0, end_ns);
    Ok(result)
}

/// Progress of a run: (phase, bytes written in it, most it writes).
pub type Progress<'a> = &'a mut dyn FnMut(&str, u64, u64);

/// Segments the warm-up waits to see reclaimed.
const WARM_UP_RECLAIMS: u64 = 4;

/// The simulated processes and whose turn it is.
struct Processes {
    set: flows::FileSet,
    threads: Vec<Thread>,
    /// (ready time, thread): the earliest runs next.
    heap: BinaryHeap<Reverse<(Nanos, u32)>>,
}

impl Processes {
    fn next_ns(&self) -> Nanos {
        self.heap.peek().expect("threads never finish").0 .0
    }

    /// Runs the earliest thread's next step and counts it in `result`;
    /// returns when the step is done.
    fn step(&mut self, fs: &mut Fs, cfg: &FsBenchConfig, result: &mut FsBenchResult) -> Result<Nanos, FsBenchError> {
        let Reverse((now, i)) = self.heap.pop().expect("threads never finish");
        let th = &mut self.threads[i as usize];
        let op =
            self.set.step(fs, th, now).map_err(|source| FsBenchError::Fs { workload: cfg.workload.name(), source })?;
        result.read_bytes += op.read_blocks * 4096;
        result.write_bytes += op.write_blocks * 4096;
        if !op.more {
            result.ops += 1;
            result.latency.record(op.done_ns - th.op_start_ns);
            if op.fsync {
                result.fsync_latency.record(op.done_ns - th.op_start_ns);
            }
            th.op_start_ns = op.done_ns;
        }
        th.ready_ns = op.done_ns;
        self.heap.push(Reverse((op.done_ns, i)));
        Ok(op.done_ns)
    }
}

/// Counters at the start of the measured run.
struct Snapshot {
    traffic: Traffic,
    compactions: usize,
    tl: u64,
    tl_other: u64,
    sc: u64,
    sc_by_cost: u64,
    checkpoints: u64,
    checkpoint_ns: Nanos,
    znsplus: ZnsPlusCounters,
}

impl Snapshot {
    fn take(fs: &Fs) -> Self {
        Snapshot {
            traffic: fs.traffic(),
            compactions: fs.stats.compactions.len(),
            tl: fs.stats.tl_segments,
            tl_other: fs.stats.tl_other_type_segments,
            sc: fs.stats.sc_segments,
            sc_by_cost: fs.stats.sc_chosen_by_cost,
            checkpoints: fs.stats.checkpoints,
            checkpoint_ns: fs.stats.checkpoint_ns,
            znsplus: fs.device().znsplus_counters(),
        }
    }

    fn finish(self, fs: &Fs, r: &mut FsBenchResult, t0: Nanos, end_ns: Nanos) {
        r.traffic = fs.traffic().since(self.traffic);
        r.compactions = fs.stats.compactions[self.compactions..].to_vec();
        r.tl_segments = fs.stats.tl_segments - self.tl;
        r.sc_segments = fs.stats.sc_segments - self.sc;
        r.tl_other_type_segments = fs.stats.tl_other_type_segments - self.tl_other;
        r.sc_chosen_by_cost = fs.stats.sc_chosen_by_cost - self.sc_by_cost;
        r.checkpoints = fs.stats.checkpoints - self.checkpoints;
        r.checkpoint_ns = fs.stats.checkpoint_ns - self.checkpoint_ns;
        r.znsplus = fs.device().znsplus_counters().since(self.znsplus);
        r.chip_utilization_series =
            fs.device().chip_utilization().into_iter().filter(|&(t, _)| t >= t0 && t < end_ns).collect();
        let n = r.chip_utilization_series.len().max(1) as f64;
        // A fold from +0.0: f64's `sum` of an empty series (a run shorter
        // than one interval) is -0.0, which printed as "-0.0%".
        r.chip_utilization = r.chip_utilization_series.iter().fold(0.0, |sum, &(_, u)| sum + u) / n;
    }
}
