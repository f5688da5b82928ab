//! A fio job after parsing: every option zonelab models, resolved with fio's
//! precedence (`[global]`, job section, command line), still independent of
//! the device. Sizes that depend on the device (percentages, zones) stay
//! symbolic until `Size::resolve` sees the namespace.

use zonelab_sim::Nanos;

/// Data directions, in fio's order (read, write, trim).
pub const DDIRS: usize = 3;
pub const DDIR_READ: usize = 0;
pub const DDIR_WRITE: usize = 1;
pub const DDIR_TRIM: usize = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwKind {
    Read,
    Write,
    Trim,
    RandRead,
    RandWrite,
    /// `rw` / `readwrite`: sequential mixed.
    ReadWrite,
    RandRw,
}

impl RwKind {
    pub fn is_random(self) -> bool {
        matches!(self, RwKind::RandRead | RwKind::RandWrite | RwKind::RandRw)
    }
}

/// A byte count as written in a job file: absolute, a share of the target,
/// or a number of zones (`z` suffix).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    Bytes(u64),
    /// 0 < percent <= 100, of the namespace (or of what remains after `offset`, as fio does for `size`).
    Percent(f64),
    Zones(f64),
}

impl Size {
    /// Bytes for a namespace of `target_bytes` with zones of `zone_bytes`.
    pub fn resolve(self, target_bytes: u64, zone_bytes: u64) -> u64 {
        match self {
            Size::Bytes(b) => b,
            Size::Percent(p) => (target_bytes as f64 * p / 100.0) as u64,
            Size::Zones(z) => (zone_bytes as f64 * z) as u64,
        }
    }
}

/// Block size range of one direction (`bs=4k` gives min = max).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockSize {
    pub min_bytes: u64,
    pub max_bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneMode {
    None,
    Zbd,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    Random,
    Zipf(f64),
    Pareto(f64),
    /// Normal with this standard deviation, in percent of the range (fio's `normal:dev`).
    Normal(f64),
}

/// How the job reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEngine {
    /// Passthrough: no block layer, no scheduler.
    Spdk,
    IoUringCmd,
    /// Through the block layer and its scheduler.
    IoUring,
    Libaio,
    /// Synchronous: one I/O in flight per job whatever `iodepth` says.
    Psync,
}

impl IoEngine {
    pub fn is_passthrough(self) -> bool {
        matches!(self, IoEngine::Spdk | IoEngine::IoUringCmd)
    }
    pub fn is_sync(self) -> bool {
        matches!(self, IoEngine::Psync)
    }
    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Spdk => "spdk",
            IoEngine::IoUringCmd => "io_uring_cmd",
            IoEngine::IoUring => "io_uring",
            IoEngine::Libaio => "libaio",
            IoEngine::Psync => "psync",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    None,
    MqDeadline,
    /// ZINC (seed 003): mq-deadline holding zone resets and finishes back.
    Zinc,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateProcess {
    Linear,
    Poisson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    None,
    Crc32c,
    Md5,
}

/// One job section as fio sees it after `[global]` and the command line are
/// applied. `numjobs` clones are made by the runner, not here.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    pub name: String,
    /// Where the job came from, for error messages: `file:line` of its section header or `command line`.
    pub origin: String,
    pub filename: Option<String>,
    pub rw: RwKind,
    /// Share of reads in mixed workloads, 0..=100 (`rwmixwrite=x` sets 100 - x).
    pub rwmixread: u32,
    /// Per direction (read, write, trim).
    pub bs: [BlockSize; DDIRS],
    pub blocksize_unaligned: bool,
    pub iodepth: u32,
    pub numjobs: u32,
    pub size: Option<Size>,
    pub io_size: Option<Size>,
    pub offset: Size,
    pub offset_increment: Size,
    pub number_ios: Option<u64>,
    pub zonemode: ZoneMode,
    pub zonesize: Option<Size>,
    pub zonecapacity: Option<Size>,
    pub zoneskip: Size,
    /// 0 = no limit beyond the device's.
    pub max_open_zones: u32,
    pub job_max_open_zones: u32,
    /// Fraction 0..=1 of the zoned range's capacity written before zone_reset_frequency applies.
    pub zone_reset_threshold: f64,
    /// Fraction 0..=1: probability of resetting a zone before writing to it once over the threshold.
    pub zone_reset_frequency: f64,
    pub read_beyond_wp: bool,
    pub runtime_ns: Option<Nanos>,
    pub time_based: bool,
    pub ramp_time_ns: Nanos,
    /// `startdelay=a` or `startdelay=a-b` (uniform in the range).
    pub startdelay_ns: (Nanos, Nanos),
    /// Bytes per second per direction; `None` = unlimited.
    pub rate_bytes_per_s: [Option<u64>; DDIRS],
    pub rate_iops: [Option<u64>; DDIRS],
    pub rate_process: RateProcess,
    pub thinktime_ns: Nanos,
    /// Percentiles reported for completion latency, in (0, 100].
    pub percentile_list: Vec<f64>,
    pub group_reporting: bool,
    pub stonewall: bool,
    pub new_group: bool,
    pub randrepeat: bool,
    pub randseed: Option<u64>,
    pub random_distribution: Distribution,
    pub direct: bool,
    pub ioengine: IoEngine,
    /// `None`: the run's default (`--scheduler`, else none).
    pub scheduler: Option<Scheduler>,
    pub verify: Verify,
    /// ConfZNS++ fio patch (seed 003): writes become Zone Appends.
    pub zone_append: bool,
    /// `end_fsync`: once its I/O is done a job that wrote issues a Flush and
    /// ends when it completes.
    pub end_fsync: bool,
    /// ConfZNS++: each operation writes one block and then finishes the zone.
    pub finish: bool,
    /// ConfZNS++: finish by filling the zone from the host in `softfinish_chunk` writes.
    pub softfinish: bool,
    pub softfinish_chunk: Option<Size>,
    /// Pause between softFinish chunks.
    pub softfinish_pause_ns: Nanos,
    /// Options as written (name, value or ""), in order, for the JSON "job options".
    pub options: Vec<(String, String)>,
    /// Options accepted but without effect in a simulation (host tuning, fio's own output).
    pub ignored: Vec<String>,
    /// fio's `kb_base` (1024 or 1000): how size suffixes were read, and the report's units.
    pub kb_base: u32,
}

impl JobSpec {
    /// fio's defaults for a job named `name`.
    pub fn new(name: &str, origin: &str) -> Self {
        let bs = BlockSize { min_bytes: 4096, max_bytes: 4096 };
        JobSpec {
            name: name.to_string(),
            origin: origin.to_string(),
            filename: None,
            rw: RwKind::Read,
            rwmixread: 50,
            bs: [bs; DDIRS],
            blocksize_unaligned: false,
            iodepth: 1,
            numjobs: 1,
            size: None,
            io_size: None,
            offset: Size::Bytes(0),
            offset_increment: Size::Bytes(0),
            number_ios: None,
            zonemode: ZoneMode::None,
            zonesize: None,
            zonecapacity: None,
            zoneskip: Size::Bytes(0),
            max_open_zones: 0,
            job_max_open_zones: 0,
            // fio: both 0, i.e. no periodic zone resets unless asked for.
            zone_reset_threshold: 0.0,
            zone_reset_frequency: 0.0,
            read_beyond_wp: false,
            runtime_ns: None,
            time_based: false,
            ramp_time_ns: 0,
            startdelay_ns: (0, 0),
            rate_bytes_per_s: [None; DDIRS],
            rate_iops: [None; DDIRS],
            rate_process: RateProcess::Linear,
            thinktime_ns: 0,
            percentile_list: vec![
                1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
            ],
            group_reporting: false,
            stonewall: false,
            new_group: false,
            randrepeat: true,
            randseed: None,
            random_distribution: Distribution::Random,
            direct: false,
            ioengine: IoEngine::Psync,
            scheduler: None,
            verify: Verify::None,
            zone_append: false,
            end_fsync: false,
            finish: false,
            softfinish: false,
            softfinish_chunk: None,
            softfinish_pause_ns: 0,
            options: Vec::new(),
            ignored: Vec::new(),
            kb_base: 1024,
        }
    }
}

/// Everything `zonelab run` was asked to run: the jobs in order plus the
/// `[global]` options as written (for the JSON "global options").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobSet {
    pub jobs: Vec<JobSpec>,
    pub global_options: Vec<(String, String)>,
}

/// A job file or command line zonelab cannot run. Exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    /// `path:line`, or `command line`.
    pub location: String,
    pub option: Option<String>,
    pub message: String,
}

impl std::fmt::Display for JobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.option {
            Some(option) => write!(f, "{}: option '{}': {}", self.location, option, self.message),
            None => write!(f, "{}: {}", self.location, self.message),
        }
    }
}

impl std::error::Error for JobError {}
