//! A fio job after parsing: every option zonelab models, resolved with fio's
//! precedence (`[global]`, job section, command line), still independent of
//! the device. Sizes that depend on the device (percentages, zones) stay
//! symbolic until `Size::resolve` sees the namespace.

use zonelab_sim::Nanos;

/// Data directions, in fio's order (read, write, trim).
pub const DDIRS: usize = 3;
/// Index of reads in per-direction arrays.
pub const DDIR_READ: usize = 0;
/// Index of writes in per-direction arrays.
pub const DDIR_WRITE: usize = 1;
/// Index of trims (NVMe Deallocate) in per-direction arrays.
pub const DDIR_TRIM: usize = 2;

/// fio's `rw=` I/O pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RwKind {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Sequential trims.
    Trim,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
    /// `rw` / `readwrite`: sequential mixed.
    ReadWrite,
    /// `randrw`: random mixed, `rwmixread` percent reads.
    RandRw,
}

impl RwKind {
    /// Whether offsets are drawn at random rather than in sequence.
    pub fn is_random(self) -> bool {
        matches!(self, RwKind::RandRead | RwKind::RandWrite | RwKind::RandRw)
    }
}

/// A byte count as written in a job file: absolute, a share of the target,
/// or a number of zones (`z` suffix).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Size {
    /// A byte count.
    Bytes(u64),
    /// 0 < percent <= 100, of the namespace (or of what remains after `offset`, as fio does for `size`).
    Percent(f64),
    /// A number of zones (`3z`).
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
    /// Smallest block size in bytes.
    pub min_bytes: u64,
    /// Largest block size in bytes.
    pub max_bytes: u64,
}

/// fio's `zonemode=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneMode {
    /// The target is treated as a plain block device.
    None,
    /// Zoned block device: writes go to write pointers, zones are opened,
    /// reset and limited as fio's zbd code does.
    Zbd,
}

/// fio's `random_distribution=` for random offsets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform over the range.
    Random,
    /// Zipf with this theta (> 0, not 1).
    Zipf(f64),
    /// Pareto with this power (0 < power < 1).
    Pareto(f64),
    /// Normal with this standard deviation, in percent of the range (fio's `normal:dev`).
    Normal(f64),
}

/// How the job reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoEngine {
    /// Passthrough: no block layer, no scheduler.
    Spdk,
    /// io_uring NVMe passthrough (`/dev/ngXnY`): no block layer.
    IoUringCmd,
    /// Through the block layer and its scheduler.
    IoUring,
    /// Linux native AIO through the block layer.
    Libaio,
    /// Synchronous: one I/O in flight per job whatever `iodepth` says.
    Psync,
}

impl IoEngine {
    /// Whether the engine bypasses the block layer (SPDK, io_uring passthrough).
    pub fn is_passthrough(self) -> bool {
        matches!(self, IoEngine::Spdk | IoEngine::IoUringCmd)
    }
    /// Whether the engine submits through an io_uring (block device or passthrough).
    pub fn is_io_uring(self) -> bool {
        matches!(self, IoEngine::IoUring | IoEngine::IoUringCmd)
    }
    /// Whether the engine keeps one I/O in flight (psync and its kin).
    pub fn is_sync(self) -> bool {
        matches!(self, IoEngine::Psync)
    }
    /// fio's name for the engine.
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

/// The block layer's I/O scheduler for the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduler {
    /// `none`: requests pass straight through.
    None,
    /// `mq-deadline` with zone write locking.
    MqDeadline,
    /// ZINC (seed 003): mq-deadline holding zone resets and finishes back.
    Zinc,
}

/// fio's `rate_process=`: how rate-limited I/Os are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateProcess {
    /// Evenly spaced.
    Linear,
    /// Exponential gaps (a Poisson arrival process) with the same mean.
    Poisson,
}

/// fio's `verify=`: the checksum written into each block and checked on read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// No verification.
    None,
    /// CRC32C of the block's payload.
    Crc32c,
    /// MD5 of the block's payload.
    Md5,
}

/// fio's `exit_what`: which jobs a job that ends stops, with `exitall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitWhat {
    /// The jobs of its reporting group (fio's default).
    Group,
    /// The jobs running now (past their ramp time); later stonewalled jobs still run.
    Stonewall,
    /// Every job, those not started yet included.
    All,
}

/// One job section as fio sees it after `[global]` and the command line are
/// applied. `numjobs` clones are made by the runner, not here.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSpec {
    /// The job's name (its section header or `--name`).
    pub name: String,
    /// Where the job came from, for error messages: `file:line` of its section header or `command line`.
    pub origin: String,
    /// `filename=`, as written: on a device with several namespaces it picks
    /// the job's (`/dev/nvme0nN`, `/dev/ng0nN`); on one it is ignored.
    pub filename: Option<String>,
    /// The I/O pattern.
    pub rw: RwKind,
    /// Share of reads in mixed workloads, 0..=100 (`rwmixwrite=x` sets 100 - x).
    pub rwmixread: u32,
    /// Per direction (read, write, trim).
    pub bs: [BlockSize; DDIRS],
    /// Random offsets need not be block-size aligned.
    pub blocksize_unaligned: bool,
    /// I/Os kept in flight per thread (1 for sync engines).
    pub iodepth: u32,
    /// Threads running this job.
    pub numjobs: u32,
    /// Range of the target the job covers (`None`: to the end).
    pub size: Option<Size>,
    /// Bytes to transfer (`None`: `size`).
    pub io_size: Option<Size>,
    /// Start of the job's range.
    pub offset: Size,
    /// Offset added per clone (`numjobs`): clone n starts at offset + n × this.
    pub offset_increment: Size,
    /// Stop after this many I/Os (`None`: no such limit).
    pub number_ios: Option<u64>,
    /// Plain or zoned target.
    pub zonemode: ZoneMode,
    /// Zone size fio assumes (`None`: the device's).
    pub zonesize: Option<Size>,
    /// Zone capacity fio assumes (`None`: the device's).
    pub zonecapacity: Option<Size>,
    /// Bytes skipped after each zone is done (strided zone access).
    pub zoneskip: Size,
    /// 0 = no limit beyond the device's.
    pub max_open_zones: u32,
    /// Open zones one job may have at once (0 = `max_open_zones`).
    pub job_max_open_zones: u32,
    /// Fraction 0..=1 of the zoned range's capacity written before zone_reset_frequency applies.
    pub zone_reset_threshold: f64,
    /// Fraction 0..=1: probability of resetting a zone before writing to it once over the threshold.
    pub zone_reset_frequency: f64,
    /// Reads past a zone's write pointer are issued instead of skipped.
    pub read_beyond_wp: bool,
    /// Run length (`None`: until `size` or `io_size` is done).
    pub runtime_ns: Option<Nanos>,
    /// Keep running until `runtime` even when the range is done, wrapping around.
    pub time_based: bool,
    /// Time run before statistics start.
    pub ramp_time_ns: Nanos,
    /// `startdelay=a` or `startdelay=a-b` (uniform in the range).
    pub startdelay_ns: (Nanos, Nanos),
    /// Bytes per second per direction; `None` = unlimited.
    pub rate_bytes_per_s: [Option<u64>; DDIRS],
    /// I/Os per second per direction; `None` = unlimited.
    pub rate_iops: [Option<u64>; DDIRS],
    /// Spacing of rate-limited I/Os.
    pub rate_process: RateProcess,
    /// Time a thread waits between completing one I/O and issuing the next.
    pub thinktime_ns: Nanos,
    /// `read_iolog` and its `replay_*` options: the job replays a log
    /// instead of generating I/O.
    pub replay: Option<Replay>,
    /// Percentiles reported for completion latency, in (0, 100].
    pub percentile_list: Vec<f64>,
    /// Decimals of the percentiles in the normal report: the most any entry
    /// of `percentile_list` was written with (fio's `percentile_precision`).
    pub percentile_precision: usize,
    /// What fio keeps and reports of the job: percentiles, disabled
    /// statistics, sampling windows, the text reports' units.
    pub report: ReportOptions,
    /// fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`) and how they are written.
    pub logs: LogOptions,
    /// `write_iolog=FILE`: the thread's I/Os as a version 3 iolog.
    pub write_iolog: Option<String>,
    /// Report the jobs of a group as one entry.
    pub group_reporting: bool,
    /// Wait for every earlier job to finish before starting.
    pub stonewall: bool,
    /// Start a new reporting group with this job.
    pub new_group: bool,
    /// fio's `randrepeat`; zonelab's random choices are always seeded, so it changes nothing.
    pub randrepeat: bool,
    /// Seed of the job's random choices (`None`: derived from the run's seed).
    pub randseed: Option<u64>,
    /// Distribution of random offsets.
    pub random_distribution: Distribution,
    /// O_DIRECT; `zonemode=zbd` requires it, as in fio (zonelab has no page cache).
    pub direct: bool,
    /// How the job reaches the device.
    pub ioengine: IoEngine,
    /// `None`: the run's default (`--scheduler`, else none).
    pub scheduler: Option<Scheduler>,
    /// Checksum written into blocks and checked when read back.
    pub verify: Verify,
    /// `do_verify`: read back what was written once the job is done (on by default; needs `verify`).
    pub do_verify: bool,
    /// `verify_fatal`: a read back stops at its first bad block; otherwise it
    /// reports every block whose checksum fails (it stops at a bad header either way).
    pub verify_fatal: bool,
    /// `exitall`: when a job ends, stop the others (`exit_what`). fio keeps
    /// one switch for the run: any job that sets it sets it for all.
    pub exitall: bool,
    /// Which jobs `exitall` and `exitall_on_error` stop.
    pub exit_what: ExitWhat,
    /// `exitall_on_error`: when this job ends with an error, stop the others (`exit_what`).
    pub exitall_on_error: bool,
    /// ConfZNS++ fio patch (seed 003): writes become Zone Appends.
    pub zone_append: bool,
    /// `end_fsync`: once its I/O is done a job that wrote issues a Flush and
    /// ends when it completes.
    pub end_fsync: bool,
    /// ConfZNS++: each operation writes one block and then finishes the zone.
    pub finish: bool,
    /// ConfZNS++: finish by filling the zone from the host in `softfinish_chunk` writes.
    pub softfinish: bool,
    /// Size of one softFinish write (`None`: the device's largest transfer).
    pub softfinish_chunk: Option<Size>,
    /// Pause between softFinish chunks.
    pub softfinish_pause_ns: Nanos,
    /// io_uring engines: a kernel thread polls the submission queue
    /// (`sqthread_poll`); it sleeps once the ring is idle (`HostConfig::sq_poll`).
    pub sqthread_poll: bool,
    /// Flexible Data Placement: `fdp`, `dataplacement`, `plids`, `plid_select`, `dp_scheme`.
    pub placement: PlacementOptions,
    /// Options as written (name, value or ""), in order, for the JSON "job options".
    pub options: Vec<(String, String)>,
    /// Where each option that set this job came from, `[global]` and command
    /// line included, last setting wins: errors about an option's value
    /// point at its line rather than at the section.
    pub sources: Vec<OptionSource>,
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
            replay: None,
            percentile_list: vec![
                1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99,
            ],
            percentile_precision: 2,
            report: ReportOptions::default(),
            logs: LogOptions::default(),
            write_iolog: None,
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
            do_verify: true,
            verify_fatal: false,
            exitall: false,
            exit_what: ExitWhat::Group,
            exitall_on_error: false,
            zone_append: false,
            end_fsync: false,
            finish: false,
            softfinish: false,
            softfinish_chunk: None,
            softfinish_pause_ns: 0,
            sqthread_poll: false,
            placement: PlacementOptions::default(),
            options: Vec::new(),
            sources: Vec::new(),
            ignored: Vec::new(),
            kb_base: 1024,
        }
    }
}

/// What fio keeps and reports of a job beyond its I/O: which latencies
/// carry percentiles, which statistics are not kept, how often bandwidth and
/// IOPS are sampled, and the text reports' digits and units.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportOptions {
    /// Report completion latency percentiles (`clat_percentiles`, on by default).
    pub clat_percentiles: bool,
    /// Report total latency percentiles (`lat_percentiles`).
    pub lat_percentiles: bool,
    /// Report submission latency percentiles (`slat_percentiles`).
    pub slat_percentiles: bool,
    /// fio's `significant_figures` (1..=10): digits of sizes and rates in the normal report.
    pub sig_figs: u32,
    /// `unit_base=1`: the normal report's rates in bits per second.
    pub unit_bits: bool,
    /// `description`, which the reports print.
    pub description: Option<String>,
    /// `thread`: fio runs the job as threads, not processes (its "Starting" line says which).
    pub thread: bool,
    /// `disk_util`: the reports carry the disk's statistics (on by default).
    pub disk_util: bool,
    /// `bwavgtime` in ms, if set: the bandwidth sampling window (500 ms by default).
    pub bwavgtime_ms: Option<u32>,
    /// `iopsavgtime` in ms, if set: the IOPS sampling window (500 ms by default).
    pub iopsavgtime_ms: Option<u32>,
    /// `disable_lat`: no total latency statistics.
    pub disable_lat: bool,
    /// `disable_clat`: no completion latency statistics nor latency distribution.
    pub disable_clat: bool,
    /// `disable_slat`: no submission latency statistics.
    pub disable_slat: bool,
    /// `disable_bw_measurement`: no per-I/O bandwidth samples (fio still samples its windows).
    pub disable_bw: bool,
    /// `gtod_reduce`: all four of the above, and no per-I/O IOPS samples.
    pub gtod_reduce: bool,
}

impl Default for ReportOptions {
    /// fio's defaults: completion latency percentiles, 4 significant figures, disk statistics.
    fn default() -> Self {
        ReportOptions {
            clat_percentiles: true,
            lat_percentiles: false,
            slat_percentiles: false,
            sig_figs: 4,
            unit_bits: false,
            description: None,
            thread: false,
            disk_util: true,
            bwavgtime_ms: None,
            iopsavgtime_ms: None,
            disable_lat: false,
            disable_clat: false,
            disable_slat: false,
            disable_bw: false,
            gtod_reduce: false,
        }
    }
}

/// fio's log files of a job: `<prefix>_lat.N.log` (with `_slat`, `_clat`),
/// `<prefix>_bw.N.log`, `<prefix>_iops.N.log`, N the thread's number in the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogOptions {
    /// `write_lat_log=prefix`.
    pub lat_prefix: Option<String>,
    /// `write_bw_log=prefix`.
    pub bw_prefix: Option<String>,
    /// `write_iops_log=prefix`.
    pub iops_prefix: Option<String>,
    /// `log_avg_msec`: one averaged line per direction and window of this
    /// many ms; 0, a line per I/O.
    pub avg_msec: u32,
    /// `log_max_value`: a window's largest value rather than its mean.
    pub max_value: bool,
    /// `log_offset`: lines carry the I/O's offset.
    pub offset: bool,
}

impl JobSpec {
    /// fio's `fixup_options`: a disabled statistic reports no percentiles.
    pub fn fixup(&mut self) {
        let r = &mut self.report;
        r.lat_percentiles &= !r.disable_lat;
        r.clat_percentiles &= !r.disable_clat;
        r.slat_percentiles &= !r.disable_slat;
    }
}

/// fio's `dataplacement=` (`fdp=1` is the older spelling of `fdp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataPlacement {
    /// No directive on writes (fio's default).
    None,
    /// The Data Placement directive (DTYPE 2): each write names a placement identifier.
    Fdp,
}

/// fio's `plid_select=` (`fdp_pli_select`): which placement identifier a write names next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlidSelect {
    /// Round robin over the job's identifiers (fio's default).
    #[default]
    RoundRobin,
    /// Uniformly at random among them.
    Random,
    /// By the write's offset, from the `dp_scheme` file.
    Scheme,
}

/// fio's data placement options of a job, as written; `Engine` resolves
/// them against the placement identifiers the namespace reports.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlacementOptions {
    /// `fdp=1`.
    pub fdp: bool,
    /// `dataplacement=` if it was set (`None`: fio's default, none).
    pub dataplacement: Option<DataPlacement>,
    /// `plids=` (`fdp_pli`): indexes into the namespace's list of placement
    /// identifiers, sorted as fio sorts them; empty: all of them.
    pub plids: Vec<u16>,
    /// `plid_select=`.
    pub select: PlidSelect,
    /// `dp_scheme=FILE`: offset ranges and the identifier each writes with.
    pub scheme: Option<String>,
}

impl PlacementOptions {
    /// Whether writes carry a placement directive: fio's `fixup_options`
    /// turns `fdp=1` into `dataplacement=fdp`; `fdp=1` beside an explicit
    /// `dataplacement=none` is an error (the `Err` says so).
    pub fn enabled(&self) -> Result<bool, &'static str> {
        match (self.fdp, self.dataplacement) {
            (true, Some(DataPlacement::None)) => {
                Err("fdp=1 is not compatible with dataplacement=none (fio's message): drop one of them")
            }
            (fdp, placement) => Ok(fdp || placement == Some(DataPlacement::Fdp)),
        }
    }
}

/// Where an option was set and to what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionSource {
    /// The option's canonical name.
    pub name: &'static str,
    /// `path:line` or `command line`.
    pub location: String,
    /// The value as written (empty for a flag written without one).
    pub value: String,
}

impl JobSpec {
    /// Where `option` (canonical name) was last set for this job, if it was.
    pub fn source(&self, option: &str) -> Option<&OptionSource> {
        self.sources.iter().find(|s| s.name == option)
    }

    /// Where `option` was set, else the job's section: the place an error about it points at.
    pub fn location_of(&self, option: &str) -> &str {
        self.source(option).map_or(&self.origin, |s| &s.location)
    }
}

/// Everything `zonelab run` was asked to run: the jobs in order plus the
/// `[global]` options as written (for the JSON "global options").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct JobSet {
    /// The jobs in the order fio runs them.
    pub jobs: Vec<JobSpec>,
    /// The `[global]` options as written.
    pub global_options: Vec<(String, String)>,
}

/// fio's `read_iolog` with `replay_no_stall`, `replay_time_scale` and `replay_skip`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replay {
    /// The log's path, as written (relative to the working directory, as in fio).
    pub path: String,
    /// `replay_no_stall`: no delays nor waits, I/O as fast as `iodepth` allows (closed loop).
    pub no_stall: bool,
    /// `replay_time_scale`: a version 3 log's delays are scaled by 100 / this (100: as recorded).
    pub time_scale_percent: u32,
    /// `replay_skip`: directions not replayed, `1 << DDIR_*`, and [`REPLAY_SKIP_SYNC`].
    pub skip_mask: u8,
}

/// `replay_skip=sync`'s bit in [`Replay::skip_mask`].
pub const REPLAY_SKIP_SYNC: u8 = 1 << 3;

impl Default for Replay {
    fn default() -> Self {
        Replay { path: String::new(), no_stall: false, time_scale_percent: 100, skip_mask: 0 }
    }
}

/// A job file or command line zonelab cannot run. Exit status 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobError {
    /// `path:line`, or `command line`.
    pub location: String,
    /// The option at fault, if one is.
    pub option: Option<String>,
    /// What is wrong and what would be valid.
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
