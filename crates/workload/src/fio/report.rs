//! fio's reports: `json` and `json+` with fio 3.x's structure and field
//! names, the normal text report (`normal`) and the terse one (`terse`).
//! Times are simulated time. The output is a function of the run only (no
//! wall clock, no pid), so the same job, device and seed print the same bytes.

use super::job::*;
use super::run::RunResult;
use super::stats::{DirStats, JobStats, LatStat, LAT_MS_BUCKETS};
use serde_json::{json, Map, Value};
use zonelab_sim::Nanos;

mod normal;
mod num;
mod terse;

pub use normal::{normal_header, normal_report, normal_stats};
pub use terse::{terse_report, TERSE_V3_FIELDS, TERSE_VERSION};

/// The version string reports carry (`fio-3.33`, so tools that parse fio's output accept it).
pub const FIO_VERSION: &str = concat!("fio-3.33 (zonelab ", env!("CARGO_PKG_VERSION"), ")");
const DDIR_NAMES: [&str; DDIRS] = ["read", "write", "trim"];

/// fio's `--output-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// The human-readable report.
    Normal,
    /// fio's JSON report.
    Json,
    /// JSON with the latency histogram bins (`json+`).
    JsonPlus,
    /// The terse report, version 3 (`terse`, `minimal`, `csv`).
    Terse,
}

impl OutputFormat {
    /// The format named `normal`, `json`, `json+` or `terse` (`minimal`, `csv`), as fio spells it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "normal" => Some(OutputFormat::Normal),
            "json" => Some(OutputFormat::Json),
            "json+" => Some(OutputFormat::JsonPlus),
            "terse" | "minimal" | "csv" => Some(OutputFormat::Terse),
            _ => None,
        }
    }
}

/// One entry of fio's "jobs": a thread, or a group under group_reporting.
pub struct Entry<'a> {
    /// The job's options.
    pub spec: &'a JobSpec,
    /// Reporting group (fio's `groupid`).
    pub groupid: u32,
    /// Threads summed into this entry (1 without group_reporting).
    pub threads: u32,
    /// The entry's statistics, summed over its threads.
    pub stats: JobStats,
}

/// Threads folded into report entries the way fio does: one per thread,
/// or one per reporting group whose jobs ask for group_reporting.
pub fn entries<'a>(set: &'a JobSet, result: &RunResult) -> Vec<Entry<'a>> {
    let mut out: Vec<Entry<'a>> = Vec::new();
    for thread in &result.threads {
        let spec = &set.jobs[thread.spec];
        if spec.group_reporting {
            if let Some(entry) = out.iter_mut().find(|e| e.groupid == thread.groupid && e.spec.group_reporting) {
                entry.stats.merge(&thread.stats);
                entry.threads += 1;
                continue;
            }
        }
        out.push(Entry { spec, groupid: thread.groupid, threads: 1, stats: thread.stats.clone() });
    }
    out
}

fn lat_json(stat: &LatStat, percentiles: Option<&[f64]>, bins: bool) -> Value {
    let mut map = Map::new();
    map.insert("min".into(), json!(stat.min()));
    map.insert("max".into(), json!(stat.max_ns));
    map.insert("mean".into(), json!(round6(stat.mean())));
    map.insert("stddev".into(), json!(round6(stat.stddev())));
    map.insert("N".into(), json!(stat.samples));
    if let (Some(list), true) = (percentiles, stat.samples > 0) {
        let mut p = Map::new();
        for (percent, value) in stat.percentiles(list) {
            p.insert(format!("{percent:.6}"), json!(value));
        }
        map.insert("percentile".into(), Value::Object(p));
        if bins {
            let mut b = Map::new();
            for (value, count) in stat.bins() {
                b.insert(value.to_string(), json!(count));
            }
            map.insert("bins".into(), Value::Object(b));
        }
    }
    Value::Object(map)
}

fn round6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

fn dir_json(dir: &DirStats, group_bw_bytes: u64, spec: &JobSpec, plus: bool) -> Value {
    let list = spec.percentile_list.as_slice();
    let bw_bytes = dir.bw_bytes_per_s();
    let agg = if group_bw_bytes == 0 { 0.0 } else { 100.0 * bw_bytes as f64 / group_bw_bytes as f64 };
    json!({
        "io_bytes": dir.io_bytes,
        "io_kbytes": dir.io_bytes / 1024,
        "bw_bytes": bw_bytes,
        "bw": bw_bytes / 1024,
        "iops": round6(dir.iops_value()),
        "runtime": dir.runtime_ns / 1_000_000,
        "total_ios": dir.total_ios,
        "short_ios": 0,
        "drop_ios": 0,
        "slat_ns": lat_json(&dir.slat, spec.report.slat_percentiles.then_some(list), plus),
        "clat_ns": lat_json(&dir.clat, spec.report.clat_percentiles.then_some(list), plus),
        "lat_ns": lat_json(&dir.lat, spec.report.lat_percentiles.then_some(list), plus),
        "bw_min": dir.bw_kib.min,
        "bw_max": dir.bw_kib.max,
        "bw_agg": round6(if dir.bw_kib.count > 0 { agg } else { 0.0 }),
        "bw_mean": round6(dir.bw_kib.mean()),
        "bw_dev": round6(dir.bw_kib.stddev()),
        "bw_samples": dir.bw_kib.count,
        "iops_min": dir.iops.min,
        "iops_max": dir.iops.max,
        "iops_mean": round6(dir.iops.mean()),
        "iops_stddev": round6(dir.iops.stddev()),
        "iops_samples": dir.iops.count,
    })
}

fn options_json(options: &[(String, String)]) -> Value {
    let mut map = Map::new();
    for (name, value) in options {
        map.insert(name.clone(), json!(value));
    }
    Value::Object(map)
}

/// fio's bucket names of the latency distribution (`latency_ns`, `latency_us`: the first ten; `latency_ms`: all).
const LAT_KEYS: [&str; LAT_MS_BUCKETS] =
    ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"];

fn shares_json(shares: &[f64]) -> Value {
    let map = LAT_KEYS.iter().zip(shares).map(|(key, share)| ((*key).to_string(), json!(round6(*share))));
    Value::Object(map.collect())
}

fn total_ios(stats: &JobStats) -> u64 {
    stats.dirs.iter().map(|d| d.total_ios).sum()
}

fn depth_json(stats: &JobStats) -> Value {
    let total: u64 = stats.depth.counts.iter().sum();
    let keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let mut map = Map::new();
    for (key, count) in keys.iter().zip(stats.depth.counts) {
        let share = if total == 0 { 0.0 } else { 100.0 * count as f64 / total as f64 };
        map.insert((*key).to_string(), json!(round6(share)));
    }
    Value::Object(map)
}

/// Requests are submitted and reaped one per call, so fio's submit and
/// complete batch histograms (buckets 0, 1-4, 5-8, ..., >64) have every call
/// in the 1-4 bucket.
fn batch_counts(ios: u64) -> [u64; 7] {
    [0, ios, 0, 0, 0, 0, 0]
}

fn batch_json(ios: u64) -> Value {
    let share = if ios > 0 { 100.0 } else { 0.0 };
    json!({"0": 0.0, "4": share, "8": 0.0, "16": 0.0, "32": 0.0, "64": 0.0, ">=64": 0.0})
}

/// Sum of the bandwidth of every entry of the same group, per direction.
fn group_bw(entries: &[Entry<'_>], groupid: u32, ddir: usize) -> u64 {
    entries.iter().filter(|e| e.groupid == groupid).map(|e| e.stats.dirs[ddir].bw_bytes_per_s()).sum()
}

fn entry_json(entry: &Entry<'_>, all: &[Entry<'_>], plus: bool) -> Value {
    let stats = &entry.stats;
    let mut job = Map::new();
    job.insert("jobname".into(), json!(entry.spec.name));
    job.insert("groupid".into(), json!(entry.groupid));
    job.insert("error".into(), json!(stats.error.as_ref().map_or(0, |e| e.0)));
    job.insert("eta".into(), json!(0));
    job.insert("elapsed".into(), json!(stats.elapsed_ns.div_ceil(1_000_000_000)));
    job.insert("job options".into(), options_json(&entry.spec.options));
    for (ddir, name) in DDIR_NAMES.iter().enumerate() {
        let group = group_bw(all, entry.groupid, ddir);
        job.insert((*name).into(), dir_json(&stats.dirs[ddir], group, entry.spec, plus));
    }
    job.insert("sync".into(), json!({"total_ios": 0, "lat_ns": lat_json(&LatStat::default(), None, false)}));
    job.insert("job_runtime".into(), json!(stats.job_runtime_ns / 1_000_000));
    for key in ["usr_cpu", "sys_cpu"] {
        job.insert(key.into(), json!(0.0));
    }
    for key in ["ctx", "majf", "minf"] {
        job.insert(key.into(), json!(0));
    }
    let ios = total_ios(stats);
    job.insert("iodepth_level".into(), depth_json(stats));
    job.insert("iodepth_submit".into(), batch_json(ios));
    job.insert("iodepth_complete".into(), batch_json(ios));
    let shares = stats.lat_buckets.shares(total_ios(stats));
    job.insert("latency_ns".into(), shares_json(&shares.ns));
    job.insert("latency_us".into(), shares_json(&shares.us));
    job.insert("latency_ms".into(), shares_json(&shares.ms));
    job.insert("latency_depth".into(), json!(entry.spec.iodepth));
    job.insert("latency_target".into(), json!(0));
    job.insert("latency_percentile".into(), json!(100.0));
    job.insert("latency_window".into(), json!(0));
    if let Some(description) = &entry.spec.report.description {
        job.insert("desc".into(), json!(description));
    }
    if stats.zone_resets > 0 || entry.spec.zonemode == ZoneMode::Zbd {
        job.insert("zone_resets".into(), json!(stats.zone_resets));
    }
    Value::Object(job)
}

/// fio's `--output-format=json` (or json+ with latency bins).
pub fn json_report(set: &JobSet, result: &RunResult, plus: bool) -> Value {
    let all = entries(set, result);
    let mut root = Map::new();
    root.insert("fio version".into(), json!(FIO_VERSION));
    root.insert("timestamp".into(), json!(0));
    root.insert("timestamp_ms".into(), json!(0));
    root.insert("time".into(), json!(SIMULATED_TIME));
    if !set.global_options.is_empty() {
        root.insert("global options".into(), options_json(&set.global_options));
    }
    root.insert("jobs".into(), Value::Array(all.iter().map(|e| entry_json(e, &all, plus)).collect()));
    let disks: Vec<Value> = disks(set, result)
        .iter()
        .map(|disk| {
            let d = &disk.counters;
            json!({
                "name": disk.name,
                "read_ios": d.read_ios,
                "write_ios": d.write_ios,
                "read_merges": d.read_merges,
                "write_merges": d.write_merges,
                "read_ticks": 0,
                "write_ticks": 0,
                "in_queue": 0,
                "util": round6(disk.util),
            })
        })
        .collect();
    if !disks.is_empty() {
        root.insert("disk_util".into(), Value::Array(disks));
    }
    Value::Object(root)
}

/// The run starts at simulated time zero; fio prints a wall-clock date here.
const SIMULATED_TIME: &str = "Thu Jan  1 00:00:00 1970";
const DISK_NAME: &str = "nvme0n1";

/// The disk statistics fio prints: the block layer's requests, when a job
/// passes it and asks for them (`disk_util`, on by default).
fn shows_disk_util(set: &JobSet) -> bool {
    set.jobs.iter().any(|j| !j.ioengine.is_passthrough() && j.report.disk_util)
}

/// A block device fio reports the statistics of.
struct Disk<'r> {
    name: &'r str,
    counters: zonelab_host::SchedulerCounters,
    /// Share of the run it was busy, in percent.
    util: f64,
}

/// The disks fio reports: the device, or each namespace a job reached
/// through the block layer on a run over several.
fn disks<'r>(set: &JobSet, result: &'r RunResult) -> Vec<Disk<'r>> {
    if result.namespaces.is_empty() {
        if !shows_disk_util(set) {
            return Vec::new();
        }
        return vec![Disk { name: DISK_NAME, counters: result.disk, util: util_percent(result, result.disk_busy_ns) }];
    }
    let shown = result.namespaces.iter().filter(|ns| ns.shows_disk);
    shown.map(|ns| Disk { name: &ns.name, counters: ns.disk, util: util_percent(result, ns.busy_ns) }).collect()
}

/// Share of the run a device was busy `busy_ns`, as /proc/diskstats' io_ticks give it.
fn util_percent(result: &RunResult, busy_ns: Nanos) -> f64 {
    let util = if result.end_ns == 0 { 0.0 } else { 100.0 * busy_ns as f64 / result.end_ns as f64 };
    util.min(100.0)
}

/// One direction of a reporting group, as fio's `group_run_stats` keeps it.
#[derive(Debug, Clone, Copy, Default)]
struct GroupDir {
    /// Bytes of the group's entries over the longest entry's runtime.
    agg_bytes_per_s: u64,
    /// Smallest and largest bandwidth of an entry.
    min_bw: u64,
    max_bw: u64,
    min_run_ns: Nanos,
    max_run_ns: Nanos,
    io_bytes: u64,
}

/// A reporting group's totals; units and digits come from its last entry, as in fio.
#[derive(Debug, Clone)]
struct GroupRun {
    groupid: u32,
    dirs: [GroupDir; DDIRS],
    kb_base: u32,
    sig_figs: u32,
    unit_bits: bool,
}

/// fio's `group_run_stats` of each group, in group order.
fn group_runs(all: &[Entry<'_>]) -> Vec<GroupRun> {
    let ids: std::collections::BTreeSet<u32> = all.iter().map(|e| e.groupid).collect();
    let mut out = Vec::new();
    for groupid in ids {
        let members: Vec<&Entry<'_>> = all.iter().filter(|e| e.groupid == groupid).collect();
        let last = members.last().expect("a group has an entry").spec;
        let dirs = std::array::from_fn(|ddir| {
            let ran: Vec<&DirStats> =
                members.iter().map(|e| &e.stats.dirs[ddir]).filter(|d| d.runtime_ns > 0).collect();
            let io_bytes: u64 = ran.iter().map(|d| d.io_bytes).sum();
            let max_run_ns = ran.iter().map(|d| d.runtime_ns).max().unwrap_or(0);
            let agg = if max_run_ns == 0 { 0 } else { (io_bytes as u128 * 1_000_000_000 / max_run_ns as u128) as u64 };
            GroupDir {
                agg_bytes_per_s: agg,
                min_bw: ran.iter().map(|d| d.bw_bytes_per_s()).min().unwrap_or(0),
                max_bw: ran.iter().map(|d| d.bw_bytes_per_s()).max().unwrap_or(0),
                min_run_ns: ran.iter().map(|d| d.runtime_ns).min().unwrap_or(0),
                max_run_ns,
                io_bytes,
            }
        });
        out.push(GroupRun {
            groupid,
            dirs,
            kb_base: last.kb_base,
            sig_figs: last.report.sig_figs,
            unit_bits: last.report.unit_bits,
        });
    }
    out
}

/// fio's name for an `rw=` pattern.
pub fn rw_name(rw: RwKind) -> &'static str {
    match rw {
        RwKind::Read => "read",
        RwKind::Write => "write",
        RwKind::Trim => "trim",
        RwKind::RandRead => "randread",
        RwKind::RandWrite => "randwrite",
        RwKind::ReadWrite => "rw",
        RwKind::RandRw => "randrw",
    }
}
