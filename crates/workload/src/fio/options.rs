//! fio option table: names, value parsing (sizes with kb_base, percentages, ranges, times).
//!
//! Every fio 3.33 option (`fio --cmdhelp=all`, plus the io_uring, libaio and
//! SPDK engine options) is in exactly one class:
//! - modelled: applied to `JobSpec`;
//! - ignored: tunes the host (CPUs, memory, files, engine knobs), which a
//!   simulation has no counterpart of: fio's reports and files would be the
//!   same, so published command lines run as printed;
//! - unmodelled: changes the result and zonelab does not simulate it, refused.
//!
//! Value syntax follows fio's `parse.c` (`str_to_decimal`, `get_mult_bytes`,
//! `get_mult_time`), except where fio silently misreads a value (unknown
//! suffixes, fractions, negative sizes): zonelab refuses those instead.

use super::job::{
    BlockSize, DataPlacement, Distribution, ExitWhat, IoEngine, JobSpec, PlidSelect, RateProcess, RwKind, Scheduler,
    Size, Verify, ZoneMode, DDIRS, DDIR_READ, DDIR_TRIM, DDIR_WRITE, REPLAY_SKIP_SYNC,
};
use zonelab_sim::Nanos;

/// A job option value zonelab refuses. `value` is the value (or the part of
/// it) as written; each message says what would be valid. The job parser adds
/// where it was (`path:line` or the command line) and the option's name.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ValueError {
    /// More than the read, write and trim values of a per-direction option.
    #[error("'{value}' has more than 3 comma-separated values (read,write,trim)")]
    TooManyDirections {
        /// The value as written.
        value: String,
    },
    /// A byte suffix fio's `get_mult_bytes` does not know.
    #[error("unknown size suffix '{suffix}' (valid: k, m, g, t, p, optionally with b, i or ib)")]
    UnknownSizeSuffix {
        /// The characters after the number.
        suffix: String,
    },
    /// `0x` followed by something that is not a 64-bit hexadecimal number.
    #[error("'{value}' is not a valid hexadecimal number")]
    NotHex {
        /// The value as written.
        value: String,
    },
    /// A negative size or count.
    #[error("'{value}' is negative")]
    Negative {
        /// The value as written.
        value: String,
    },
    /// A size with a fraction, which fio would truncate.
    #[error("'{value}' has a fraction; fio reads only the integer part, write it in a smaller unit")]
    SizeFraction {
        /// The value as written.
        value: String,
    },
    /// No number where one was expected.
    #[error("'{value}' is not a number")]
    NotANumber {
        /// The value as written.
        value: String,
    },
    /// A number larger than `u64`, before or after its suffix.
    #[error("'{value}' does not fit in 64 bits")]
    TooLarge {
        /// The value as written.
        value: String,
    },
    /// 0 where the option needs a positive value (block sizes, zone sizes).
    #[error("must be greater than 0")]
    Zero,
    /// An integer outside the option's range.
    #[error("{value} is out of range {min}..={max}")]
    OutOfRange {
        /// The value, suffixes applied.
        value: u64,
        /// Smallest valid value.
        min: u32,
        /// Largest valid value.
        max: u32,
    },
    /// A `z` suffix on something other than a whole number of zones.
    #[error("'{value}' is not a whole number of zones")]
    NotZones {
        /// The value as written.
        value: String,
    },
    /// A `%` suffix on something that is not a number.
    #[error("'{value}' is not a percentage")]
    NotPercentage {
        /// The value as written.
        value: String,
    },
    /// A percentage outside what the option allows.
    #[error("'{value}' is out of range (percent in 0..100)")]
    PercentOutOfRange {
        /// The value as written.
        value: String,
    },
    /// A block size range whose minimum exceeds its maximum.
    #[error("minimum block size {min} is larger than maximum {max} in '{value}'")]
    BlockSizeRange {
        /// Lower bound in bytes.
        min: u64,
        /// Upper bound in bytes.
        max: u64,
        /// The value as written.
        value: String,
    },
    /// fio's `FIO_OPT_BOOL` takes 0 or 1 only.
    #[error("'{value}' is not a boolean (0 or 1)")]
    NotBoolean {
        /// The value as written.
        value: String,
    },
    /// A flag option whose value is not an integer.
    #[error("{0} (expected 0 or 1)")]
    NotFlag(Box<ValueError>),
    /// A fraction option outside [0, 1].
    #[error("'{value}' is not a number between 0 and 1")]
    NotFraction {
        /// The value as written.
        value: String,
    },
    /// A time with a fraction, which fio would truncate.
    #[error("'{value}' has a fraction; fio truncates it, write it in a smaller unit (e.g. 1500ms)")]
    TimeFraction {
        /// The value as written.
        value: String,
    },
    /// No number where a time was expected.
    #[error("'{value}' is not a time")]
    NotATime {
        /// The value as written.
        value: String,
    },
    /// A time suffix fio's `get_mult_time` does not know.
    #[error("unknown time unit '{suffix}' in '{value}' (valid: us, usec, ms, msec, s, m, h, d)")]
    UnknownTimeUnit {
        /// The characters after the number.
        suffix: String,
        /// The value as written.
        value: String,
    },
    /// A time longer than `u64` nanoseconds.
    #[error("'{value}' is too long")]
    TimeTooLong {
        /// The value as written.
        value: String,
    },
    /// A time past [`HORIZON_NS`].
    #[error("'{value}' is longer than the simulation allows (at most 24h, i.e. 86400 s or 1d)")]
    BeyondHorizon {
        /// The value as written, trimmed.
        value: String,
    },
    /// A time range `a-b` with `b < a`.
    #[error("range '{value}' ends before it starts")]
    RangeReversed {
        /// The value as written.
        value: String,
    },
    /// A percentile outside (0, 100].
    #[error("'{value}' is not a percentile in (0, 100]")]
    NotPercentile {
        /// The list item as written.
        value: String,
    },
    /// More percentiles than fio's list holds.
    #[error("{count} percentiles given, fio accepts at most {}", MAX_PERCENTILES)]
    TooManyPercentiles {
        /// Percentiles in the list.
        count: usize,
    },
    /// A keyword option given a word it does not know.
    #[error("{option}: '{value}' is not one of {}", valid.join(", "))]
    NotOneOf {
        /// The option's canonical name.
        option: &'static str,
        /// The value as written, trimmed.
        value: String,
        /// Every accepted word.
        valid: Vec<&'static str>,
    },
    /// An `rw` offset modifier (`rw=randread:8`).
    #[error("rw: the ':{modifier}' offset modifier changes the result and zonelab does not model it")]
    RwModifier {
        /// What followed the ':'.
        modifier: String,
    },
    /// A keyword fio knows and zonelab does not simulate (`rw=randtrim`, `zonemode=strided`).
    #[error("{option}: '{value}' is not modelled")]
    ValueNotModelled {
        /// The option's canonical name.
        option: &'static str,
        /// The value as written, trimmed.
        value: String,
    },
    /// A `random_distribution` with per-direction values.
    #[error("per-direction random distributions change the result and zonelab does not model them")]
    PerDirectionDistribution,
    /// A `random_distribution` with a center (`zipf:1.2:0.5`).
    #[error("a distribution center (second value) changes the result and zonelab does not model it")]
    DistributionCenter,
    /// A zipf theta of 0 or below, or exactly 1.
    #[error("zipf theta {theta} must be > 0 and different from 1.0")]
    ZipfTheta {
        /// The theta given.
        theta: f64,
    },
    /// A pareto power outside (0, 1).
    #[error("pareto power {power} is out of range (0 < power < 1)")]
    ParetoPower {
        /// The power given.
        power: f64,
    },
    /// A normal deviation outside [0, 100).
    #[error("normal deviation {dev} is out of range (0 <= dev < 100)")]
    NormalDeviation {
        /// The deviation given, in percent.
        dev: f64,
    },
    /// `zoned` and `zoned_abs` distributions.
    #[error("'{kind}' distributions change the result and zonelab does not model them")]
    ZonedDistribution {
        /// `zoned` or `zoned_abs`.
        kind: String,
    },
    /// A `random_distribution` fio does not know.
    #[error("random_distribution: '{value}' is not one of random, zipf:theta, pareto:power, normal:dev")]
    UnknownDistribution {
        /// The value as written.
        value: String,
    },
    /// A value other than fio's default of an option zonelab takes at its default only.
    #[error("{option}={value} is not modelled: {why}; only {default} (fio's default) is accepted")]
    DefaultOnly {
        /// The option's canonical name.
        option: &'static str,
        /// The value given.
        value: String,
        /// fio's default, the one value accepted.
        default: &'static str,
        /// What zonelab does instead.
        why: &'static str,
    },
    /// An option fio has whose effect zonelab does not simulate.
    #[error("fio option '{option}' changes the result and zonelab does not model it: remove it (--cmdhelp lists what is modelled)")]
    Unmodelled {
        /// The option's name.
        option: String,
    },
    /// A `plids` (`fdp_pli`) list fio would refuse or misread.
    #[error("'{value}': {why}; write indexes or ranges separated by commas, e.g. 0,2-4 (at most {} indexes, each at most 65535)", PLIDS_MAX)]
    PlacementIds {
        /// The list as written.
        value: String,
        /// What is wrong with it.
        why: String,
    },
    /// `dataplacement=streams`: the device has no Streams directive.
    #[error("dataplacement: 'streams' is not modelled: the device has no Streams directive (valid: none, fdp)")]
    Streams,
    /// A value option written without `=value`.
    #[error("option '{option}' requires a value")]
    RequiresValue {
        /// The option's canonical name.
        option: &'static str,
    },
}

/// Applies one option value (never empty for value options; "1" for a bare flag).
pub type Apply = fn(&mut JobSpec, &str) -> Result<(), ValueError>;

/// How zonelab treats a fio option.
#[derive(Clone, Copy)]
pub enum Class {
    /// Simulated: the value is applied to the job.
    Modelled(Apply),
    /// Accepted and ignored: it tunes the host or fio's output, not the result.
    Ignored,
    /// Refused: it changes the result and zonelab does not simulate it.
    Unmodelled,
}

/// One option as fio knows it.
#[derive(Clone, Copy)]
pub struct OptionInfo {
    /// Canonical name (aliases resolved), as fio prints it in "job options".
    pub name: &'static str,
    /// How zonelab treats it.
    pub class: Class,
    /// fio's `FIO_OPT_STR_SET`: the value is optional (`time_based` alone means 1),
    /// and on the command line `--flag value` does not take `value`.
    pub flag: bool,
}

impl OptionInfo {
    /// fio sorts a section's options by priority before parsing them (`sort_options`,
    /// stable): `kb_base` first so sizes see it, `filename` last.
    pub fn prio(&self) -> i8 {
        match self.name {
            "kb_base" => 1,
            "filename" => -1,
            _ => 0,
        }
    }
}

/// fio's option aliases (`fio --cmdhelp=X` shows them).
const ALIASES: &[(&str, &str)] = &[
    ("readwrite", "rw"),
    ("blocksize", "bs"),
    ("blockalign", "ba"),
    ("blocksize_range", "bsrange"),
    ("blocksize_unaligned", "bs_unaligned"),
    ("iodepth_batch_submit", "iodepth_batch"),
    ("iodepth_batch_complete", "iodepth_batch_complete_min"),
    ("io_limit", "io_size"),
    ("fill_fs", "fill_device"),
    ("fileoffset", "offset"),
    ("nr_files", "nrfiles"),
    ("timeout", "runtime"),
    ("iomem", "mem"),
    ("ratemin", "rate_min"),
    ("ratecycle", "rate_cycle"),
    ("wait_for_previous", "stonewall"),
    ("disable_bw", "disable_bw_measurement"),
    ("ss", "steadystate"),
    ("ss_dur", "steadystate_duration"),
    ("ss_ramp", "steadystate_ramp_time"),
    ("data_placement", "dataplacement"),
    ("fdp_pli_select", "plid_select"),
    ("fdp_pli", "plids"),
];

/// fio's `FIO_OPT_STR_SET` options (plus flag-like engine and ConfZNS++ options).
const FLAGS: &[&str] = &[
    "bs_unaligned",
    "norandommap",
    "time_based",
    "verify_only",
    "exitall",
    "exitall_on_error",
    "stonewall",
    "new_group",
    "thread",
    "group_reporting",
    "zero_buffers",
    "refill_buffers",
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "userspace_reap",
    "zone_append",
    "finish",
    "softfinish",
];

/// Host tuning with no counterpart in a simulation (CPUs, NUMA, memory,
/// files and their creation, buffer contents, engine and SPDK knobs):
/// fio's reports and files are the same whatever they say, so they are
/// accepted. Options that change what fio reports or writes are modelled
/// or refused, never here.
const IGNORED: &[&str] = &[
    "directory",
    "filename_format",
    "unique_filename",
    "norandommap",
    "allrandrepeat",
    "nice",
    "prio",
    "prioclass",
    "cpumask",
    "cpus_allowed",
    "cpus_allowed_policy",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "gtod_cpu",
    "clocksource",
    "log_entries",
    "log_compression",
    "log_compression_cpus",
    "zero_buffers",
    "refill_buffers",
    "scramble_buffers",
    "buffer_pattern",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
    "invalidate",
    "fadvise_hint",
    "fallocate",
    "overwrite",
    "allow_file_create",
    "allow_mounted_write",
    "create_serialize",
    "create_fsync",
    "create_on_open",
    "unlink",
    "unlink_each_loop",
    "lockmem",
    "mem",
    "hugepage-size",
    "error_dump",
    "cgroup",
    "cgroup_nodelete",
    "cgroup_weight",
    "uid",
    "gid",
    "iodepth_batch_complete_max",
    "verify_async",
    "verify_state_save",
    // Reads the log in pieces to save the host's memory; zonelab holds it whole.
    "read_iolog_chunked",
    // io_uring / io_uring_cmd / libaio engine options
    "hipri",
    "fixedbufs",
    "registerfiles",
    "sqthread_poll_cpu",
    "nonvectored",
    "uncached",
    "nowait",
    "force_async",
    "cmd_type",
    "userspace_reap",
    // SPDK fio plugin options
    "spdk_conf",
    "spdk_json_conf",
    "spdk_mem",
    "mem_size_mb",
    "shm_id",
    "enable_sgl",
    "sge_size",
    "bit_bucket_data_len",
    "hostnqn",
    "pi_act",
    "pi_chk",
    "md_per_io_size",
    "apptag",
    "apptag_mask",
    "digest_enable",
    "enable_vmd",
    "initiator_ip_addr",
    "spdk_single_seg",
    "print_qid_mappings",
    "spdk_tracing",
];

/// Real fio options that change what a job does or reports; zonelab refuses them.
const UNMODELLED: &[&str] = &[
    "wait_for",
    "lockfile",
    "opendir",
    "rw_sequencer",
    "ba",
    "bssplit",
    "ignore_error",
    "iodepth_low",
    "serialize_overlap",
    "fill_device",
    "filesize",
    "file_append",
    "offset_align",
    "random_generator",
    "percentage_random",
    "nrfiles",
    "file_service_type",
    "openfiles",
    "fsync",
    "fdatasync",
    "write_barrier",
    "sync_file_range",
    "atomic",
    "loops",
    "verify_only",
    "verify_interval",
    "verify_offset",
    "verify_pattern",
    "verify_backlog",
    "verify_backlog_batch",
    "experimental_verify",
    "trim_percentage",
    "trim_verify_zero",
    "trim_backlog",
    "trim_backlog_batch",
    "replay_redirect",
    "replay_scale",
    "replay_align",
    "merge_blktrace_file",
    "merge_blktrace_scalars",
    "merge_blktrace_iters",
    "exec_prerun",
    "exec_postrun",
    "zonerange",
    "ignore_zone_limits",
    "thinktime_spin",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "rate_min",
    "rate_cycle",
    "rate_ignore_thinktime",
    "rate_iops_min",
    "max_latency",
    "latency_target",
    "latency_window",
    "latency_percentile",
    "latency_run",
    "sync",
    "write_hint",
    "create_only",
    "pre_read",
    "fsync_on_close",
    "stats",
    "unified_rw_reporting",
    "continue_on_error",
    "profile",
    "flow_id",
    "flow",
    "flow_sleep",
    "steadystate",
    "steadystate_duration",
    "steadystate_ramp_time",
    "block_error_percentiles",
    "log_hist_msec",
    "log_hist_coarseness",
    "write_hist_log",
    "log_alternate_epoch_clock_id",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
];

/// Options zonelab applies to `JobSpec`.
const MODELLED: &[(&str, Apply)] = &[
    ("name", |j, v| {
        j.name = v.to_string();
        Ok(())
    }),
    ("filename", |j, v| {
        j.filename = Some(v.to_string());
        Ok(())
    }),
    ("rw", |j, v| {
        j.rw = parse_rw(v)?;
        Ok(())
    }),
    ("rwmixread", |j, v| {
        j.rwmixread = parse_percent_u32(v, j.kb_base)?;
        Ok(())
    }),
    ("rwmixwrite", |j, v| {
        j.rwmixread = 100 - parse_percent_u32(v, j.kb_base)?;
        Ok(())
    }),
    ("bs", |j, v| per_ddir(v, &mut j.bs, |s| parse_bs_range(s, j.kb_base))),
    ("bsrange", |j, v| per_ddir(v, &mut j.bs, |s| parse_bs_range(s, j.kb_base))),
    ("bs_unaligned", |j, v| {
        j.blocksize_unaligned = parse_flag(v)?;
        Ok(())
    }),
    ("iodepth", |j, v| {
        j.iodepth = parse_u32_in(v, j.kb_base, 1, u32::MAX)?;
        Ok(())
    }),
    ("numjobs", |j, v| {
        j.numjobs = parse_u32_in(v, j.kb_base, 1, MAX_NUMJOBS)?;
        Ok(())
    }),
    ("size", |j, v| {
        j.size = Some(parse_size(v, j.kb_base, SizeForm::Length)?);
        Ok(())
    }),
    ("io_size", |j, v| {
        j.io_size = Some(parse_size(v, j.kb_base, SizeForm::Length)?);
        Ok(())
    }),
    ("offset", |j, v| {
        j.offset = parse_size(v, j.kb_base, SizeForm::Position)?;
        Ok(())
    }),
    ("offset_increment", |j, v| {
        j.offset_increment = parse_size(v, j.kb_base, SizeForm::Position)?;
        Ok(())
    }),
    ("number_ios", |j, v| {
        j.number_ios = Some(parse_u64(v, j.kb_base)?).filter(|&n| n > 0);
        Ok(())
    }),
    ("zonemode", |j, v| {
        j.zonemode = parse_zonemode(v)?;
        Ok(())
    }),
    ("zonesize", |j, v| {
        j.zonesize = Some(Size::Bytes(parse_nonzero(v, j.kb_base)?));
        Ok(())
    }),
    ("zonecapacity", |j, v| {
        j.zonecapacity = Some(Size::Bytes(parse_nonzero(v, j.kb_base)?));
        Ok(())
    }),
    ("zoneskip", |j, v| {
        j.zoneskip = parse_size(v, j.kb_base, SizeForm::ZonesOnly)?;
        Ok(())
    }),
    ("max_open_zones", |j, v| {
        j.max_open_zones = parse_u32_in(v, j.kb_base, 0, MAX_OPEN_ZONES)?;
        Ok(())
    }),
    ("job_max_open_zones", |j, v| {
        j.job_max_open_zones = parse_u32_in(v, j.kb_base, 0, MAX_OPEN_ZONES)?;
        Ok(())
    }),
    ("zone_reset_threshold", |j, v| {
        j.zone_reset_threshold = parse_fraction(v)?;
        Ok(())
    }),
    ("zone_reset_frequency", |j, v| {
        j.zone_reset_frequency = parse_fraction(v)?;
        Ok(())
    }),
    ("read_beyond_wp", |j, v| {
        j.read_beyond_wp = parse_bool(v)?;
        Ok(())
    }),
    ("runtime", |j, v| {
        j.runtime_ns = Some(parse_horizon_ns(v, TimeUnit::Seconds)?).filter(|&t| t > 0);
        Ok(())
    }),
    ("time_based", |j, v| {
        j.time_based = parse_flag(v)?;
        Ok(())
    }),
    ("ramp_time", |j, v| {
        j.ramp_time_ns = parse_horizon_ns(v, TimeUnit::Seconds)?;
        Ok(())
    }),
    ("startdelay", |j, v| {
        j.startdelay_ns = parse_time_range_ns(v)?;
        Ok(())
    }),
    ("rate", |j, v| per_ddir(v, &mut j.rate_bytes_per_s, |s| Ok(Some(parse_u64(s, j.kb_base)?).filter(|&r| r > 0)))),
    ("rate_iops", |j, v| per_ddir(v, &mut j.rate_iops, |s| Ok(Some(parse_u64(s, j.kb_base)?).filter(|&r| r > 0)))),
    ("rate_process", |j, v| {
        j.rate_process = parse_rate_process(v)?;
        Ok(())
    }),
    ("read_iolog", |j, v| {
        j.replay.get_or_insert_with(Default::default).path = v.to_string();
        Ok(())
    }),
    ("replay_no_stall", |j, v| {
        j.replay.get_or_insert_with(Default::default).no_stall = parse_bool(v)?;
        Ok(())
    }),
    ("replay_time_scale", |j, v| {
        j.replay.get_or_insert_with(Default::default).time_scale_percent = parse_u32_in(v, j.kb_base, 1, u32::MAX)?;
        Ok(())
    }),
    ("replay_skip", |j, v| {
        j.replay.get_or_insert_with(Default::default).skip_mask = parse_replay_skip(v)?;
        Ok(())
    }),
    ("thinktime", |j, v| {
        j.thinktime_ns = parse_time_ns(v, TimeUnit::Micros)?;
        Ok(())
    }),
    ("percentile_list", |j, v| {
        j.percentile_list = parse_percentile_list(v)?;
        j.percentile_precision = percentile_precision(v);
        Ok(())
    }),
    ("clat_percentiles", |j, v| {
        j.report.clat_percentiles = parse_bool(v)?;
        Ok(())
    }),
    ("lat_percentiles", |j, v| {
        j.report.lat_percentiles = parse_bool(v)?;
        Ok(())
    }),
    ("slat_percentiles", |j, v| {
        j.report.slat_percentiles = parse_bool(v)?;
        Ok(())
    }),
    ("significant_figures", |j, v| {
        j.report.sig_figs = parse_u32_in(v, j.kb_base, 1, 10)?;
        Ok(())
    }),
    ("unit_base", |j, v| {
        j.report.unit_bits = one_of("unit_base", v, &[("0", false), ("8", false), ("1", true)])?;
        Ok(())
    }),
    ("description", |j, v| {
        j.report.description = Some(v.to_string());
        Ok(())
    }),
    ("thread", |j, v| {
        j.report.thread = parse_flag(v)?;
        Ok(())
    }),
    ("disk_util", |j, v| {
        j.report.disk_util = parse_bool(v)?;
        Ok(())
    }),
    ("group_reporting", |j, v| {
        j.group_reporting = parse_flag(v)?;
        Ok(())
    }),
    ("stonewall", |j, v| {
        j.stonewall = parse_flag(v)?;
        Ok(())
    }),
    ("new_group", |j, v| {
        j.new_group = parse_flag(v)?;
        Ok(())
    }),
    ("randrepeat", |j, v| {
        j.randrepeat = parse_bool(v)?;
        Ok(())
    }),
    ("randseed", |j, v| {
        j.randseed = Some(parse_u64(v, j.kb_base)?);
        Ok(())
    }),
    ("random_distribution", |j, v| {
        j.random_distribution = parse_distribution(v)?;
        Ok(())
    }),
    ("direct", |j, v| {
        j.direct = parse_bool(v)?;
        Ok(())
    }),
    ("buffered", |j, v| {
        j.direct = !parse_bool(v)?;
        Ok(())
    }),
    ("ioengine", |j, v| {
        j.ioengine = parse_ioengine(v)?;
        Ok(())
    }),
    ("ioscheduler", |j, v| {
        j.scheduler = Some(parse_scheduler(v)?);
        Ok(())
    }),
    ("scheduler", |j, v| {
        j.scheduler = Some(parse_scheduler(v)?);
        Ok(())
    }),
    ("verify", |j, v| {
        j.verify = parse_verify(v)?;
        Ok(())
    }),
    ("do_verify", |j, v| {
        j.do_verify = parse_bool(v)?;
        Ok(())
    }),
    ("verify_fatal", |j, v| {
        j.verify_fatal = parse_bool(v)?;
        Ok(())
    }),
    ("exitall", |j, v| {
        j.exitall = parse_flag(v)?;
        Ok(())
    }),
    ("exit_what", |j, v| {
        let table = [("group", ExitWhat::Group), ("stonewall", ExitWhat::Stonewall), ("all", ExitWhat::All)];
        j.exit_what = one_of("exit_what", v, &table)?;
        Ok(())
    }),
    ("exitall_on_error", |j, v| {
        j.exitall_on_error = parse_flag(v)?;
        Ok(())
    }),
    ("write_iolog", |j, v| {
        j.write_iolog = Some(v.to_string());
        Ok(())
    }),
    ("write_lat_log", |j, v| {
        j.logs.lat_prefix = Some(v.to_string());
        Ok(())
    }),
    ("write_bw_log", |j, v| {
        j.logs.bw_prefix = Some(v.to_string());
        Ok(())
    }),
    ("write_iops_log", |j, v| {
        j.logs.iops_prefix = Some(v.to_string());
        Ok(())
    }),
    ("log_avg_msec", |j, v| {
        j.logs.avg_msec = parse_u32_in(v, j.kb_base, 0, u32::MAX)?;
        Ok(())
    }),
    ("log_max_value", |j, v| {
        j.logs.max_value = parse_bool(v)?;
        Ok(())
    }),
    ("log_offset", |j, v| {
        j.logs.offset = parse_bool(v)?;
        Ok(())
    }),
    ("per_job_logs", |_, v| match parse_bool(v)? {
        true => Ok(()),
        // One file for all of a job's threads, which fio appends to: zonelab writes a file per thread only.
        false => Err(ValueError::ValueNotModelled { option: "per_job_logs", value: v.trim().to_string() }),
    }),
    ("bwavgtime", |j, v| {
        j.report.bwavgtime_ms = Some(parse_u32_in(v, j.kb_base, 1, u32::MAX)?);
        Ok(())
    }),
    ("iopsavgtime", |j, v| {
        j.report.iopsavgtime_ms = Some(parse_u32_in(v, j.kb_base, 1, u32::MAX)?);
        Ok(())
    }),
    ("disable_lat", |j, v| {
        j.report.disable_lat = parse_bool(v)?;
        Ok(())
    }),
    ("disable_clat", |j, v| {
        j.report.disable_clat = parse_bool(v)?;
        Ok(())
    }),
    ("disable_slat", |j, v| {
        j.report.disable_slat = parse_bool(v)?;
        Ok(())
    }),
    ("disable_bw_measurement", |j, v| {
        j.report.disable_bw = parse_bool(v)?;
        Ok(())
    }),
    // fio's str_gtod_reduce_cb: sets the four and clears the percentiles; 0 changes nothing.
    ("gtod_reduce", |j, v| {
        if parse_bool(v)? {
            (
                j.report.gtod_reduce,
                j.report.disable_lat,
                j.report.disable_clat,
                j.report.disable_slat,
                j.report.disable_bw,
            ) = (true, true, true, true, true);
            (j.report.clat_percentiles, j.report.lat_percentiles, j.report.slat_percentiles) = (false, false, false);
        }
        Ok(())
    }),
    // At fio's default only: other values change what fio does or writes.
    ("log_prio", |_, v| default_only("log_prio", v, !parse_bool(v)?, "0", "simulated I/Os have no priority")),
    ("log_store_compressed", |_, v| {
        default_only("log_store_compressed", v, !parse_bool(v)?, "0", "log files are written uncompressed")
    }),
    ("log_unix_epoch", |_, v| default_only("log_unix_epoch", v, !parse_bool(v)?, "0", LOG_TIME)),
    ("log_alternate_epoch", |_, v| default_only("log_alternate_epoch", v, !parse_bool(v)?, "0", LOG_TIME)),
    ("iodepth_batch", |j, v| {
        // fio reads 0 as 1.
        let one = parse_u64(v, j.kb_base)? <= 1;
        default_only("iodepth_batch", v, one, "1", "each request is submitted by a call of its own")
    }),
    ("iodepth_batch_complete_min", |j, v| {
        let one = parse_u64(v, j.kb_base)? == 1;
        default_only("iodepth_batch_complete_min", v, one, "1", "a thread waits for each completion")
    }),
    ("io_submit_mode", |_, v| {
        let inline = one_of("io_submit_mode", v, &[("inline", true), ("offload", false)])?;
        default_only("io_submit_mode", v, inline, "inline", "the job's thread submits its requests")
    }),
    ("verify_dump", |_, v| default_only("verify_dump", v, !parse_bool(v)?, "0", "bad blocks are reported, not dumped")),
    ("verify_state_load", |_, v| {
        default_only("verify_state_load", v, !parse_bool(v)?, "0", "no verify state is kept between runs")
    }),
    ("end_fsync", |j, v| {
        j.end_fsync = parse_bool(v)?;
        Ok(())
    }),
    ("zone_append", |j, v| {
        j.zone_append = parse_flag(v)?;
        Ok(())
    }),
    ("finish", |j, v| {
        j.finish = parse_flag(v)?;
        Ok(())
    }),
    ("softfinish", |j, v| {
        j.softfinish = parse_flag(v)?;
        Ok(())
    }),
    ("softfinish_chunk", |j, v| {
        j.softfinish_chunk = Some(Size::Bytes(parse_nonzero(v, j.kb_base)?));
        Ok(())
    }),
    ("sqthread_poll", |j, v| {
        j.sqthread_poll = parse_flag(v)?;
        Ok(())
    }),
    ("softfinish_pause", |j, v| {
        j.softfinish_pause_ns = parse_horizon_ns(v, TimeUnit::Micros)?;
        Ok(())
    }),
    ("kb_base", |j, v| {
        j.kb_base = parse_kb_base(v)?;
        Ok(())
    }),
    ("fdp", |j, v| {
        j.placement.fdp = parse_bool(v)?;
        Ok(())
    }),
    ("dataplacement", |j, v| {
        if v.trim() == "streams" {
            return Err(ValueError::Streams);
        }
        let table = [("none", DataPlacement::None), ("fdp", DataPlacement::Fdp)];
        j.placement.dataplacement = Some(one_of("dataplacement", v, &table)?);
        Ok(())
    }),
    ("plids", |j, v| {
        j.placement.plids = parse_plids(v)?;
        Ok(())
    }),
    ("plid_select", |j, v| {
        let table =
            [("random", PlidSelect::Random), ("roundrobin", PlidSelect::RoundRobin), ("scheme", PlidSelect::Scheme)];
        j.placement.select = one_of("plid_select", v, &table)?;
        Ok(())
    }),
    ("dp_scheme", |j, v| {
        j.placement.scheme = Some(v.trim().to_string());
        Ok(())
    }),
];

/// fio's own command-line switches (not job options) that only shape fio's
/// output or process; (name, takes a value).
const CLI_IGNORED: &[(&str, bool)] = &[
    ("output", true),
    ("output-format", true),
    ("eta", true),
    ("eta-newline", true),
    ("eta-interval", true),
    ("minimal", false),
    ("terse-version", true),
    ("append-terse", false),
    ("warnings-fatal", false),
    ("max-jobs", true),
    ("alloc-size", true),
    ("debug", true),
];

/// fio command-line switches that change what runs; refused. (name, takes a value).
const CLI_UNMODELLED: &[(&str, bool)] = &[
    ("status-interval", true),
    ("bandwidth-log", false),
    ("parse-only", false),
    ("showcmd", false),
    ("readonly", false),
    ("section", true),
    ("server", true),
    ("client", true),
    ("daemonize", true),
    ("remote-config", true),
    ("version", false),
    ("help", false),
    ("cmdhelp", true),
    ("enghelp", true),
    ("crctest", true),
    ("cpuclock-test", false),
    ("idle-prof", true),
    ("inflate-log", true),
    ("trigger-file", true),
    ("trigger-timeout", true),
    ("trigger", true),
    ("trigger-remote", true),
    ("aux-path", true),
];

/// fio's `max_open_zones` range (`--cmdhelp=max_open_zones`: max=4096).
const MAX_OPEN_ZONES: u32 = 4096;
/// Clones per job; fio has no limit but each clone is a simulated thread.
pub const MAX_NUMJOBS: u32 = 4096;
/// fio's `FIO_MAX_DP_IDS`: placement identifiers one job may name.
pub const PLIDS_MAX: usize = 128;
/// fio's `FIO_IO_U_LIST_MAX_LEN`: "the list exceeding max length 20".
pub const MAX_PERCENTILES: usize = 20;

/// The job option `name` (or an alias of it), if fio knows it.
pub fn lookup(name: &str) -> Option<OptionInfo> {
    let name = ALIASES.iter().find(|(alias, _)| *alias == name).map_or(name, |(_, canonical)| canonical);
    let flag = FLAGS.contains(&name);
    if let Some((canonical, apply)) = MODELLED.iter().find(|(n, _)| *n == name) {
        return Some(OptionInfo { name: canonical, class: Class::Modelled(*apply), flag });
    }
    let static_name = |list: &'static [&'static str]| list.iter().copied().find(|n| *n == name);
    if let Some(canonical) = static_name(IGNORED) {
        return Some(OptionInfo { name: canonical, class: Class::Ignored, flag });
    }
    static_name(UNMODELLED).map(|canonical| OptionInfo { name: canonical, class: Class::Unmodelled, flag })
}

/// A fio command-line-only switch: (canonical name, class, takes a value).
pub fn lookup_cli(name: &str) -> Option<(&'static str, Class, bool)> {
    let find = |list: &'static [(&'static str, bool)]| list.iter().copied().find(|(n, _)| *n == name);
    if let Some((n, takes_value)) = find(CLI_IGNORED) {
        return Some((n, Class::Ignored, takes_value));
    }
    find(CLI_UNMODELLED).map(|(n, takes_value)| (n, Class::Unmodelled, takes_value))
}

/// Whether `--name` on a command line takes the next argument as its value
/// (getopt's rule for fio's options that need one: `--bs 4k`); fio's
/// `FIO_OPT_STR_SET` options (`--time_based`) never do. None: unknown option.
pub fn takes_value_on_cli(name: &str) -> Option<bool> {
    match lookup_cli(name) {
        Some((_, _, takes_value)) => Some(takes_value),
        None => lookup(name).map(|info| !info.flag),
    }
}

/// Every job option in table order: modelled, then ignored, then refused.
pub(super) fn all() -> impl Iterator<Item = OptionInfo> {
    let names = MODELLED.iter().map(|(n, _)| *n).chain(IGNORED.iter().copied()).chain(UNMODELLED.iter().copied());
    names.filter_map(lookup)
}

/// The aliases fio accepts for the canonical option `name`.
pub(super) fn aliases_of(name: &str) -> impl Iterator<Item = &'static str> + '_ {
    ALIASES.iter().filter(move |(_, canonical)| *canonical == name).map(|(alias, _)| *alias)
}

/// The known option closest to a misspelt `name` (fio prints "Did you mean ...?").
/// Only names within 2 characters of its length can be within distance 2:
/// the others are skipped, so a huge name costs one pass, not one edit
/// distance per option (found by zonelab-fuzz: a 100 KB name took seconds).
pub fn suggest(name: &str) -> Option<&'static str> {
    let len = name.chars().count();
    let all = MODELLED.iter().map(|(n, _)| *n).chain(IGNORED.iter().copied()).chain(UNMODELLED.iter().copied());
    all.filter(|n| n.chars().count().abs_diff(len) <= 2)
        .map(|n| (edit_distance(name, n), n))
        .filter(|(d, _)| *d <= 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, n)| n)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (k, cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != *cb);
            diagonal = row[k + 1];
            row[k + 1] = substitution.min(row[k] + 1).min(row[k + 1] + 1);
        }
    }
    row[b.len()]
}

/// Applies `value` (`None`: the option was written without `=`) to `spec`.
/// Returns Ok(false) when the option is accepted but has no effect.
pub fn apply(spec: &mut JobSpec, info: &OptionInfo, value: Option<&str>) -> Result<bool, ValueError> {
    let apply = match info.class {
        Class::Modelled(apply) => apply,
        Class::Ignored => return Ok(false),
        Class::Unmodelled => return Err(unmodelled(info.name)),
    };
    match value.map(str::trim) {
        Some(v) if !v.is_empty() => apply(spec, v).map(|()| true),
        // fio: "Option bs requires an argument"; a bare flag means 1.
        _ if info.flag => apply(spec, "1").map(|()| true),
        _ => Err(ValueError::RequiresValue { option: info.name }),
    }
}

/// The refusal of option `name`, which fio has and zonelab does not simulate.
pub fn unmodelled(name: &str) -> ValueError {
    ValueError::Unmodelled { option: name.to_string() }
}

// ---- value parsers -------------------------------------------------------

/// fio's comma-separated per-direction values (`str_split_parse`): one value
/// for all directions; `r,w` gives trim the write value; `r,w,t`; an empty
/// part keeps the direction's current value (`bs=,8k`, `rate=1m,`).
fn per_ddir<T>(
    value: &str,
    out: &mut [T; DDIRS],
    mut parse: impl FnMut(&str) -> Result<T, ValueError>,
) -> Result<(), ValueError> {
    let parts: Vec<&str> = value.split(',').map(str::trim).collect();
    let picks: [&str; DDIRS] = match parts.as_slice() {
        [all] => [all, all, all],
        [read, write] => [read, write, write],
        [read, write, trim] => [read, write, trim],
        _ => return Err(ValueError::TooManyDirections { value: value.to_string() }),
    };
    for (slot, part) in out.iter_mut().zip(picks) {
        if !part.is_empty() {
            *slot = parse(part)?;
        }
    }
    Ok(())
}

/// Splits a decimal number (digits, optional '.' fraction) from its suffix.
fn split_number(value: &str) -> (&str, &str) {
    let end = value.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(value.len());
    value.split_at(end)
}

/// Multiplier of a byte suffix under `kb_base` (fio's `__get_mult_bytes`):
/// `k`, `kb`, `ki` use kb_base; `kib` uses the other base (fio's compatibility
/// inversion: with kb_base=1024, 4KiB = 4000). `b` or nothing = bytes.
fn byte_multiplier(suffix: &str, kb_base: u32) -> Result<u64, ValueError> {
    let lower = suffix.to_ascii_lowercase();
    if lower.is_empty() || lower == "b" {
        return Ok(1);
    }
    let mut chars = lower.chars();
    let power = match chars.next() {
        Some('k') => 1,
        Some('m') => 2,
        Some('g') => 3,
        Some('t') => 4,
        Some('p') => 5,
        _ => return Err(ValueError::UnknownSizeSuffix { suffix: suffix.to_string() }),
    };
    let base: u64 = match chars.as_str() {
        "" | "b" | "i" => u64::from(kb_base),
        "ib" if kb_base == 1000 => 1024,
        "ib" => 1000,
        _ => return Err(ValueError::UnknownSizeSuffix { suffix: suffix.to_string() }),
    };
    Ok(base.pow(power))
}

/// A byte count or integer: decimal with an optional unit suffix, or `0x` hex.
pub fn parse_u64(value: &str, kb_base: u32) -> Result<u64, ValueError> {
    let value = value.trim();
    if let Some(hex) = value.strip_prefix("0x").or_else(|| value.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_err(|_| ValueError::NotHex { value: value.to_string() });
    }
    if value.starts_with('-') {
        return Err(ValueError::Negative { value: value.to_string() });
    }
    let (digits, suffix) = split_number(value);
    if digits.contains('.') {
        return Err(ValueError::SizeFraction { value: value.to_string() });
    }
    let number: u64 = digits.parse().map_err(|_| match digits.is_empty() {
        true => ValueError::NotANumber { value: value.to_string() },
        false => ValueError::TooLarge { value: value.to_string() },
    })?;
    number
        .checked_mul(byte_multiplier(suffix, kb_base)?)
        .ok_or_else(|| ValueError::TooLarge { value: value.to_string() })
}

fn parse_nonzero(value: &str, kb_base: u32) -> Result<u64, ValueError> {
    match parse_u64(value, kb_base)? {
        0 => Err(ValueError::Zero),
        n => Ok(n),
    }
}

fn parse_u32_in(value: &str, kb_base: u32, min: u32, max: u32) -> Result<u32, ValueError> {
    let n = parse_u64(value, kb_base)?;
    match u32::try_from(n) {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ValueError::OutOfRange { value: n, min, max }),
    }
}

fn parse_percent_u32(value: &str, kb_base: u32) -> Result<u32, ValueError> {
    parse_u32_in(value, kb_base, 0, 100)
}

/// What suffixes a size option accepts besides bytes.
#[derive(Clone, Copy, PartialEq)]
enum SizeForm {
    /// `size`, `io_size`: zones (`3z`) or a share of the target (0 < p <= 100).
    Length,
    /// `offset`, `offset_increment`: zones or a share (0 <= p <= 100).
    Position,
    /// `zoneskip`: zones or bytes.
    ZonesOnly,
}

fn parse_size(value: &str, kb_base: u32, form: SizeForm) -> Result<Size, ValueError> {
    let value = value.trim();
    if let Some(zones) = value.strip_suffix(['z', 'Z']) {
        // fio's FIO_OPT_STR_VAL_ZONE: an integer count of zones.
        let n: u64 = zones.parse().map_err(|_| ValueError::NotZones { value: value.to_string() })?;
        return Ok(Size::Zones(n as f64));
    }
    if let Some(percent) = value.strip_suffix('%').filter(|_| form != SizeForm::ZonesOnly) {
        let p: f64 = percent.parse().map_err(|_| ValueError::NotPercentage { value: value.to_string() })?;
        let min_ok = if form == SizeForm::Length { p > 0.0 } else { p >= 0.0 };
        if !(min_ok && p <= 100.0) {
            return Err(ValueError::PercentOutOfRange { value: value.to_string() });
        }
        return Ok(Size::Percent(p));
    }
    parse_u64(value, kb_base).map(Size::Bytes)
}

/// `4k` or a range `4k-16k` (also `4k:16k`), as `bs` and `bsrange` accept.
fn parse_bs_range(value: &str, kb_base: u32) -> Result<BlockSize, ValueError> {
    let (min, max) = match value.split_once(['-', ':']) {
        Some((min, max)) => (parse_nonzero(min, kb_base)?, parse_nonzero(max, kb_base)?),
        None => {
            let bs = parse_nonzero(value, kb_base)?;
            (bs, bs)
        }
    };
    if min > max {
        return Err(ValueError::BlockSizeRange { min, max, value: value.to_string() });
    }
    Ok(BlockSize { min_bytes: min, max_bytes: max })
}

/// fio's `FIO_OPT_BOOL`: 0 or 1 only (`direct=true` fails in fio too).
fn parse_bool(value: &str) -> Result<bool, ValueError> {
    match value.trim() {
        "0" => Ok(false),
        "1" => Ok(true),
        other => Err(ValueError::NotBoolean { value: other.to_string() }),
    }
}

/// fio's `FIO_OPT_STR_SET`: any integer, non-zero = set.
fn parse_flag(value: &str) -> Result<bool, ValueError> {
    parse_u64(value, 1024).map(|n| n != 0).map_err(|e| ValueError::NotFlag(Box::new(e)))
}

/// fio's `str_replay_skip_cb`: a comma-separated list of read, write, trim, sync.
fn parse_replay_skip(value: &str) -> Result<u8, ValueError> {
    let table =
        [("read", 1u8 << DDIR_READ), ("write", 1 << DDIR_WRITE), ("trim", 1 << DDIR_TRIM), ("sync", REPLAY_SKIP_SYNC)];
    value.trim().split(',').try_fold(0, |mask, kind| Ok(mask | one_of("replay_skip", kind, &table)?))
}

fn parse_fraction(value: &str) -> Result<f64, ValueError> {
    match value.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(ValueError::NotFraction { value: value.to_string() }),
    }
}

#[derive(Clone, Copy)]
enum TimeUnit {
    Seconds,
    Micros,
}

/// fio's `get_mult_time`: us/usec, ms/msec, s, m, h, d (any case); no suffix
/// = the option's default unit. fio reads any other suffix as microseconds
/// (`10sec` = 10 us); zonelab refuses it.
fn parse_time_ns(value: &str, default_unit: TimeUnit) -> Result<Nanos, ValueError> {
    let value = value.trim();
    let (digits, suffix) = split_number(value);
    if digits.contains('.') {
        return Err(ValueError::TimeFraction { value: value.to_string() });
    }
    let number: u64 = digits.parse().map_err(|_| ValueError::NotATime { value: value.to_string() })?;
    let micros_per_unit: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" => match default_unit {
            TimeUnit::Seconds => 1_000_000,
            TimeUnit::Micros => 1,
        },
        "us" | "usec" => 1,
        "ms" | "msec" => 1_000,
        "s" => 1_000_000,
        "m" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(ValueError::UnknownTimeUnit { suffix: suffix.to_string(), value: value.to_string() }),
    };
    number
        .checked_mul(micros_per_unit)
        .and_then(|us| us.checked_mul(1_000))
        .ok_or_else(|| ValueError::TimeTooLong { value: value.to_string() })
}

/// Longest simulated time `runtime`, `ramp_time`, `startdelay` and
/// `softfinish_pause` may each ask for. A simulated second of saturating I/O costs about a wall second,
/// so a day is already a long run; years would never end (and approach the
/// engine's 2^60 ns horizon).
pub const HORIZON_NS: Nanos = 24 * 3600 * 1_000_000_000;

/// A time, at most [`HORIZON_NS`].
fn parse_horizon_ns(value: &str, default_unit: TimeUnit) -> Result<Nanos, ValueError> {
    let t = parse_time_ns(value, default_unit)?;
    if t > HORIZON_NS {
        return Err(ValueError::BeyondHorizon { value: value.trim().to_string() });
    }
    Ok(t)
}

/// `startdelay=a` or `a-b` (fio picks uniformly in the range).
fn parse_time_range_ns(value: &str) -> Result<(Nanos, Nanos), ValueError> {
    let (low, high) = match value.split_once('-') {
        Some((low, high)) => (parse_horizon_ns(low, TimeUnit::Seconds)?, parse_horizon_ns(high, TimeUnit::Seconds)?),
        None => {
            let t = parse_horizon_ns(value, TimeUnit::Seconds)?;
            (t, t)
        }
    };
    if low > high {
        return Err(ValueError::RangeReversed { value: value.to_string() });
    }
    Ok((low, high))
}

/// fio's `str_fdp_pli_cb`: indexes and ranges (`0,2-4`), each `strtoull`
/// of base 0 (decimal, `0x` hex, `0` octal), sorted. fio stops at an empty
/// entry and reads garbage as 0; zonelab refuses both.
fn parse_plids(value: &str) -> Result<Vec<u16>, ValueError> {
    let bad = |why: String| ValueError::PlacementIds { value: value.trim().to_string(), why };
    let mut ids = Vec::new();
    for entry in value.trim().split(',') {
        let (start, end) = match entry.split_once('-') {
            Some((start, end)) => (parse_plid(start).map_err(&bad)?, parse_plid(end).map_err(&bad)?),
            None => {
                let id = parse_plid(entry).map_err(&bad)?;
                (id, id)
            }
        };
        if start > end {
            return Err(bad(format!("range '{}' ends before it starts", entry.trim())));
        }
        if ids.len() + (end - start) as usize + 1 > PLIDS_MAX {
            return Err(bad(format!("only {PLIDS_MAX} IDs supported (fio's limit)")));
        }
        ids.extend((start..=end).map(|id| u16::try_from(id).expect("checked below 65536")));
    }
    ids.sort_unstable();
    Ok(ids)
}

/// One index of a `plids` list, as C's `strtoull(s, NULL, 0)` reads a whole word.
fn parse_plid(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let parsed = if let Some(hex) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16)
    } else if text.len() > 1 && text.starts_with('0') {
        u64::from_str_radix(&text[1..], 8)
    } else {
        text.parse::<u64>()
    };
    match parsed {
        Ok(id) if id <= 0xFFFF => Ok(id as u32),
        Ok(_) => Err(format!("'{text}': placement IDs cannot exceed 0xFFFF (fio's message)")),
        Err(_) if text.is_empty() => Err("an empty entry".to_string()),
        Err(_) => Err(format!("'{text}' is not a number")),
    }
}

/// `50:95:99.9`: each in (0, 100], at most `MAX_PERCENTILES`.
fn parse_percentile_list(value: &str) -> Result<Vec<f64>, ValueError> {
    let list = value
        .split(':')
        .map(|p| match p.trim().parse::<f64>() {
            Ok(f) if f > 0.0 && f <= 100.0 => Ok(f),
            _ => Err(ValueError::NotPercentile { value: p.to_string() }),
        })
        .collect::<Result<Vec<f64>, ValueError>>()?;
    if list.len() > MAX_PERCENTILES {
        return Err(ValueError::TooManyPercentiles { count: list.len() });
    }
    Ok(list)
}

/// Why log time options other than fio's default are refused.
const LOG_TIME: &str = "log times are simulated ms since the job started";

/// An option zonelab accepts at fio's default `default` only (`value`, as
/// written, `is_default` or not): `why` says what zonelab does instead.
fn default_only(
    option: &'static str,
    value: &str,
    is_default: bool,
    default: &'static str,
    why: &'static str,
) -> Result<(), ValueError> {
    if is_default {
        return Ok(());
    }
    Err(ValueError::DefaultOnly { option, value: value.trim().to_string(), default, why })
}

/// fio's `percentile_precision`: the most decimals an entry of the list has.
fn percentile_precision(value: &str) -> usize {
    value.split(':').map(|p| p.trim().split_once('.').map_or(0, |(_, decimals)| decimals.len())).max().unwrap_or(0)
}

fn one_of<T: Copy>(option: &'static str, value: &str, table: &[(&'static str, T)]) -> Result<T, ValueError> {
    let value = value.trim();
    table.iter().find(|(name, _)| *name == value).map(|(_, v)| *v).ok_or_else(|| {
        let valid: Vec<&'static str> = table.iter().map(|(name, _)| *name).collect();
        ValueError::NotOneOf { option, value: value.to_string(), valid }
    })
}

fn parse_rw(value: &str) -> Result<RwKind, ValueError> {
    let (kind, modifier) = value.split_once(':').unwrap_or((value, ""));
    if !modifier.is_empty() {
        return Err(ValueError::RwModifier { modifier: modifier.to_string() });
    }
    if matches!(kind.trim(), "randtrim" | "trimwrite" | "randtrimwrite") {
        return Err(ValueError::ValueNotModelled { option: "rw", value: kind.trim().to_string() });
    }
    let table = [
        ("read", RwKind::Read),
        ("write", RwKind::Write),
        ("randread", RwKind::RandRead),
        ("randwrite", RwKind::RandWrite),
        ("rw", RwKind::ReadWrite),
        ("readwrite", RwKind::ReadWrite),
        ("randrw", RwKind::RandRw),
        ("trim", RwKind::Trim),
    ];
    one_of("rw", kind, &table)
}

fn parse_zonemode(value: &str) -> Result<ZoneMode, ValueError> {
    if matches!(value.trim(), "strided" | "host-aware") {
        return Err(ValueError::ValueNotModelled { option: "zonemode", value: value.trim().to_string() });
    }
    one_of("zonemode", value, &[("none", ZoneMode::None), ("zbd", ZoneMode::Zbd)])
}

fn parse_rate_process(value: &str) -> Result<RateProcess, ValueError> {
    one_of("rate_process", value, &[("linear", RateProcess::Linear), ("poisson", RateProcess::Poisson)])
}

fn parse_scheduler(value: &str) -> Result<Scheduler, ValueError> {
    one_of(
        "scheduler",
        value,
        &[("none", Scheduler::None), ("mq-deadline", Scheduler::MqDeadline), ("zinc", Scheduler::Zinc)],
    )
}

fn parse_kb_base(value: &str) -> Result<u32, ValueError> {
    one_of("kb_base", value, &[("1024", 1024), ("1000", 1000)])
}

/// `sync`, `psync`, `vsync`, `pvsync`, `pvsync2` all keep one I/O in flight
/// per job and go through the block layer: the simulation treats them alike.
fn parse_ioengine(value: &str) -> Result<IoEngine, ValueError> {
    let table = [
        ("spdk", IoEngine::Spdk),
        ("io_uring_cmd", IoEngine::IoUringCmd),
        ("io_uring", IoEngine::IoUring),
        ("libaio", IoEngine::Libaio),
        ("psync", IoEngine::Psync),
        ("sync", IoEngine::Psync),
        ("vsync", IoEngine::Psync),
        ("pvsync", IoEngine::Psync),
        ("pvsync2", IoEngine::Psync),
    ];
    one_of("ioengine", value, &table)
}

fn parse_verify(value: &str) -> Result<Verify, ValueError> {
    let table =
        [("0", Verify::None), ("crc32c", Verify::Crc32c), ("crc32c-intel", Verify::Crc32c), ("md5", Verify::Md5)];
    one_of("verify", value, &table)
}

/// `random`, `zipf[:theta]`, `pareto[:power]`, `normal[:dev]`; fio's defaults
/// are theta 1.1, power 0.2, dev 0 (`str_random_distribution_cb`).
fn parse_distribution(value: &str) -> Result<Distribution, ValueError> {
    if value.contains(',') {
        return Err(ValueError::PerDirectionDistribution);
    }
    let mut parts = value.trim().split(':');
    let kind = parts.next().unwrap_or_default();
    let param =
        parts.next().map(|p| p.trim().parse::<f64>().map_err(|_| ValueError::NotANumber { value: p.to_string() }));
    if parts.next().is_some() {
        return Err(ValueError::DistributionCenter);
    }
    let param = param.transpose()?;
    match kind {
        "random" if param.is_none() => Ok(Distribution::Random),
        "zipf" => match param.unwrap_or(1.1) {
            theta if theta > 0.0 && theta != 1.0 => Ok(Distribution::Zipf(theta)),
            theta => Err(ValueError::ZipfTheta { theta }),
        },
        "pareto" => match param.unwrap_or(0.2) {
            power if power > 0.0 && power < 1.0 => Ok(Distribution::Pareto(power)),
            power => Err(ValueError::ParetoPower { power }),
        },
        "normal" => match param.unwrap_or(0.0) {
            dev if (0.0..100.0).contains(&dev) => Ok(Distribution::Normal(dev)),
            dev => Err(ValueError::NormalDeviation { dev }),
        },
        "zoned" | "zoned_abs" => Err(ValueError::ZonedDistribution { kind: kind.to_string() }),
        _ => Err(ValueError::UnknownDistribution { value: value.to_string() }),
    }
}
