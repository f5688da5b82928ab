//! fio's reports: `json` and `json+` with fio 3.x's structure and field
//! names, and the normal text report. Times are simulated time. The output
//! is a function of the run only (no wall clock, no pid), so the same job,
//! device and seed print the same bytes.

use super::job::*;
use super::run::RunResult;
use super::stats::{DirStats, JobStats, LatStat, RateSamples, LAT_MS_BUCKETS};
use serde_json::{json, Map, Value};
use std::fmt::Write;

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
}

impl OutputFormat {
    /// The format named `normal`, `json` or `json+`, as fio spells it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "normal" => Some(OutputFormat::Normal),
            "json" => Some(OutputFormat::Json),
            "json+" => Some(OutputFormat::JsonPlus),
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

fn dir_json(dir: &DirStats, group_bw_bytes: u64, percentiles: &[f64], plus: bool) -> Value {
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
        "slat_ns": lat_json(&dir.slat, None, false),
        "clat_ns": lat_json(&dir.clat, Some(percentiles), plus),
        "lat_ns": lat_json(&dir.lat, None, false),
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

/// Requests are submitted one per call, so fio's submit and complete batch
/// histograms put everything in the 1-4 bucket.
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
        job.insert((*name).into(), dir_json(&stats.dirs[ddir], group, &entry.spec.percentile_list, plus));
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
    if uses_block_layer(set) {
        let d = &result.disk;
        let util = if result.end_ns == 0 { 0.0 } else { 100.0 * result.disk_busy_ns as f64 / result.end_ns as f64 };
        root.insert(
            "disk_util".into(),
            json!([{
                "name": DISK_NAME,
                "read_ios": d.read_ios,
                "write_ios": d.write_ios,
                "read_merges": d.read_merges,
                "write_merges": d.write_merges,
                "read_ticks": 0,
                "write_ticks": 0,
                "in_queue": 0,
                "util": round6(util.min(100.0)),
            }]),
        );
    }
    Value::Object(root)
}

/// The run starts at simulated time zero; fio prints a wall-clock date here.
const SIMULATED_TIME: &str = "Thu Jan  1 00:00:00 1970";
const DISK_NAME: &str = "nvme0n1";

fn uses_block_layer(set: &JobSet) -> bool {
    set.jobs.iter().any(|j| !j.ioengine.is_passthrough())
}

/// fio's `num2str` for rates and sizes: three or four significant digits and
/// a unit prefix.
fn human(value: f64, base: f64, units: &[&str]) -> String {
    let mut v = value;
    let mut unit = 0;
    while v >= 10_000.0 && unit + 1 < units.len() {
        v /= base;
        unit += 1;
    }
    let digits = if v >= 100.0 || unit == 0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.digits$}");
    format!("{text}{}", units[unit])
}

fn binary_rate(bytes_per_s: u64) -> String {
    human(bytes_per_s as f64, 1024.0, &["B/s", "KiB/s", "MiB/s", "GiB/s", "TiB/s"])
}

fn decimal_rate(bytes_per_s: u64) -> String {
    human(bytes_per_s as f64, 1000.0, &["B/s", "kB/s", "MB/s", "GB/s", "TB/s"])
}

fn bw_text(bytes_per_s: u64) -> String {
    format!("{} ({})", binary_rate(bytes_per_s), decimal_rate(bytes_per_s))
}

fn lat_line(out: &mut String, label: &str, stat: &LatStat) {
    if stat.samples == 0 {
        return;
    }
    let (unit, div) = lat_unit(stat.max_ns);
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={}, max={}, avg={:.2}, stdev={:.2}",
        stat.min() / div,
        stat.max_ns / div,
        stat.mean() / div as f64,
        stat.stddev() / div as f64
    );
}

fn lat_unit(max_ns: u64) -> (&'static str, u64) {
    if max_ns < 10_000 {
        ("nsec", 1)
    } else if max_ns < 10_000_000 {
        ("usec", 1_000)
    } else {
        ("msec", 1_000_000)
    }
}

fn normal_dir(out: &mut String, name: &str, dir: &DirStats, stats: &JobStats, percentiles: &[f64], zbd: bool) {
    if dir.total_ios == 0 {
        return;
    }
    let iops = human(dir.iops_value(), 1000.0, &["", "k", "M", "G"]);
    let io = human(dir.io_bytes as f64, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"]);
    let resets = if zbd && name == "write" { format!("; {} zone resets", stats.zone_resets) } else { String::new() };
    let _ = writeln!(
        out,
        "  {name}: IOPS={iops}, BW={}({io}/{}msec){resets}",
        bw_text(dir.bw_bytes_per_s()),
        dir.runtime_ns / 1_000_000
    );
    lat_line(out, "slat", &dir.slat);
    lat_line(out, "clat", &dir.clat);
    lat_line(out, " lat", &dir.lat);
    let (unit, div) = lat_unit(dir.clat.max_ns);
    let _ = writeln!(out, "    clat percentiles ({unit}):");
    let values = dir.clat.percentiles(percentiles);
    for (row, chunk) in values.chunks(4).enumerate() {
        let cells: Vec<String> = chunk.iter().map(|(p, v)| format!("{p:5.2}th=[{:5}]", v / div)).collect();
        let tail = if (row + 1) * 4 < values.len() { "," } else { "" };
        let _ = writeln!(out, "     | {}{tail}", cells.join(", "));
    }
    if dir.bw_kib.count > 0 {
        rate_line(out, "   bw (  KiB/s)", &dir.bw_kib);
        rate_line(out, "   iops        ", &dir.iops);
    }
}

fn rate_line(out: &mut String, label: &str, samples: &RateSamples) {
    let _ = writeln!(
        out,
        "{label}: min={}, max={}, avg={:.2}, stdev={:.2}, samples={}",
        samples.min,
        samples.max,
        samples.mean(),
        samples.stddev(),
        samples.count
    );
}

fn normal_entry(out: &mut String, entry: &Entry<'_>) {
    let stats = &entry.stats;
    // fio: "err=28 (file:io_u.c:1876, func=io_u error, error=No space left on device)".
    let err = match &stats.error {
        Some((errno, message)) => format!("{errno:2} (func=io_u error, error={message})"),
        None => " 0".to_string(),
    };
    let _ = writeln!(out, "{}: (groupid={}, jobs={}): err={err}: pid=0", entry.spec.name, entry.groupid, entry.threads);
    let zbd = entry.spec.zonemode == ZoneMode::Zbd;
    for (ddir, name) in DDIR_NAMES.iter().enumerate() {
        normal_dir(out, name, &stats.dirs[ddir], stats, &entry.spec.percentile_list, zbd);
    }
    let depth = &stats.depth.counts;
    let total: u64 = depth.iter().sum::<u64>().max(1);
    let pct = |c: u64| 100.0 * c as f64 / total as f64;
    let _ = writeln!(out, "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0");
    let _ = writeln!(
        out,
        "  IO depths    : 1={:.1}%, 2={:.1}%, 4={:.1}%, 8={:.1}%, 16={:.1}%, 32={:.1}%, >=64={:.1}%",
        pct(depth[0]),
        pct(depth[1]),
        pct(depth[2]),
        pct(depth[3]),
        pct(depth[4]),
        pct(depth[5]),
        pct(depth[6])
    );
    let d = &stats.dirs;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},0 short=0,0,0,0 dropped=0,0,0,0",
        d[0].total_ios, d[1].total_ios, d[2].total_ios
    );
    let _ = writeln!(out, "     latency   : target=0, window=0, percentile=100.00%, depth={}", entry.spec.iodepth);
    if let Some((_, message)) = &stats.error {
        let _ = writeln!(out, "  error        : {message}");
    }
    out.push('\n');
}

/// fio's normal report.
pub fn normal_report(set: &JobSet, result: &RunResult) -> String {
    let mut out = String::new();
    for (index, job) in set.jobs.iter().enumerate() {
        let groupid = result.threads.iter().find(|t| t.spec == index).map_or(0, |t| t.groupid);
        let bs = |d: usize| format!("{}B-{}B", job.bs[d].min_bytes, job.bs[d].max_bytes);
        let _ = writeln!(
            out,
            "{}: (g={groupid}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
            job.name,
            rw_name(job.rw),
            bs(0),
            bs(1),
            bs(2),
            job.ioengine.name(),
            job.iodepth
        );
    }
    let threads: u32 = set.jobs.iter().map(|j| j.numjobs).sum();
    let _ = writeln!(out, "{FIO_VERSION}\nStarting {threads} process{}\n", if threads == 1 { "" } else { "es" });
    let all = entries(set, result);
    for entry in &all {
        normal_entry(&mut out, entry);
    }
    let groups: std::collections::BTreeSet<u32> = all.iter().map(|e| e.groupid).collect();
    for groupid in groups {
        let _ = writeln!(out, "Run status group {groupid} (all jobs):");
        for (ddir, label) in ["READ", "WRITE", "TRIM"].iter().enumerate() {
            let members: Vec<&DirStats> = all
                .iter()
                .filter(|e| e.groupid == groupid)
                .map(|e| &e.stats.dirs[ddir])
                .filter(|d| d.total_ios > 0)
                .collect();
            if members.is_empty() {
                continue;
            }
            let bytes: u64 = members.iter().map(|d| d.io_bytes).sum();
            let run_max = members.iter().map(|d| d.runtime_ns).max().unwrap_or(0);
            let run_min = members.iter().map(|d| d.runtime_ns).min().unwrap_or(0);
            let bw_total = if run_max == 0 { 0 } else { (bytes as u128 * 1_000_000_000 / run_max as u128) as u64 };
            let bw_min = members.iter().map(|d| d.bw_bytes_per_s()).min().unwrap_or(0);
            let bw_max = members.iter().map(|d| d.bw_bytes_per_s()).max().unwrap_or(0);
            let _ = writeln!(
                out,
                "{label:>7}: bw={}, {}-{} ({}-{}), io={} ({}), run={}-{}msec",
                bw_text(bw_total),
                binary_rate(bw_min),
                binary_rate(bw_max),
                decimal_rate(bw_min),
                decimal_rate(bw_max),
                human(bytes as f64, 1024.0, &["B", "KiB", "MiB", "GiB", "TiB"]),
                human(bytes as f64, 1000.0, &["B", "kB", "MB", "GB", "TB"]),
                run_min / 1_000_000,
                run_max / 1_000_000
            );
        }
        out.push('\n');
    }
    if uses_block_layer(set) {
        let d = &result.disk;
        let util = if result.end_ns == 0 { 0.0 } else { 100.0 * result.disk_busy_ns as f64 / result.end_ns as f64 };
        let _ = writeln!(out, "Disk stats (read/write):");
        let _ = writeln!(
            out,
            "  {DISK_NAME}: ios={}/{}, merge={}/{}, ticks=0/0, in_queue=0, util={:.2}%",
            d.read_ios,
            d.write_ios,
            d.read_merges,
            d.write_merges,
            util.min(100.0)
        );
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
