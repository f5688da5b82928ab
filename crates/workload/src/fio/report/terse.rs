//! fio's terse report, version 3 (`--minimal`, `--output-format=terse`):
//! one line of `;`-separated fields per entry, in the order of fio 3.33's
//! `show_thread_status_terse_all`. Latencies are in microseconds.

use super::num::dist_shares;
use super::*;
use crate::fio::options::MAX_PERCENTILES;
use std::fmt::Write;

/// The terse version zonelab writes; fio also knows 2, 4 and 5.
pub const TERSE_VERSION: u32 = 3;

/// Fields of one line of the version 3 report without a disk or a description
/// (fio 3.33 prints 121): 5 of the job, 2 directions of 41, 5 of CPU, 7
/// depths and 22 latency buckets. A disk adds 9, a description 1.
pub const TERSE_V3_FIELDS: usize = 5 + 2 * 41 + 5 + 7 + 22;

/// fio's terse report, version 3: a line per entry.
pub fn terse_report(set: &JobSet, result: &RunResult) -> String {
    let all = entries(set, result);
    let groups = group_runs(&all);
    let mut out = String::new();
    for entry in &all {
        let group = groups.iter().find(|g| g.groupid == entry.groupid).expect("every entry has its group");
        terse_entry(&mut out, entry, group, set, result);
    }
    out
}

fn terse_entry(out: &mut String, entry: &Entry<'_>, group: &GroupRun, set: &JobSet, result: &RunResult) {
    let stats = &entry.stats;
    let errno = stats.error.as_ref().map_or(0, |e| e.0);
    let _ = write!(out, "{TERSE_VERSION};{FIO_VERSION};{};{};{errno}", entry.spec.name, entry.groupid);
    // Version 3 has no trim fields.
    for ddir in [DDIR_READ, DDIR_WRITE] {
        terse_dir(out, &stats.dirs[ddir], entry.spec, group.dirs[ddir].agg_bytes_per_s);
    }
    out.push_str(";0.000000%;0.000000%;0;0;0");
    let depth = &stats.depth.counts;
    for share in dist_shares(depth, depth.iter().sum()) {
        let _ = write!(out, ";{share:3.1}%");
    }
    // Version 3 has no nanosecond buckets: they count in the first microsecond one (`stat_calc_lat_nu`).
    let total = total_ios(stats);
    let shares = stats.lat_buckets.shares(total);
    let below_1us = if total == 0 { 0.0 } else { 100.0 * stats.lat_buckets.below_1us() as f64 / total as f64 };
    for (i, share) in shares.us.iter().chain(&shares.ms).enumerate() {
        let share = if i == 0 { share + below_1us } else { *share };
        let _ = write!(out, ";{share:3.2}%");
    }
    for disk in disks(set, result) {
        let (d, util, name) = (&disk.counters, disk.util, disk.name);
        let (reads, writes, read_merges, write_merges) = (d.read_ios, d.write_ios, d.read_merges, d.write_merges);
        let _ = write!(out, ";{name};{reads};{writes};{read_merges};{write_merges};0;0;0;{util:3.2}%");
    }
    if let Some(description) = &entry.spec.report.description {
        let _ = write!(out, ";{description}");
    }
    out.push('\n');
}

/// One direction: bytes, bandwidth, IOPS, runtime, then slat, clat, the
/// percentiles (20 slots), lat and the bandwidth samples.
fn terse_dir(out: &mut String, dir: &DirStats, spec: &JobSpec, group_agg_bytes_per_s: u64) {
    let runtime_ms = dir.runtime_ns / 1_000_000;
    let (bw_kib, iops) = (dir.bw_bytes_per_s() / 1024, dir.iops_value() as u64);
    let _ = write!(out, ";{};{bw_kib};{iops};{runtime_ms}", dir.io_bytes >> 10);
    lat_fields(out, &dir.slat);
    lat_fields(out, &dir.clat);
    let percentiles = if spec.report.lat_percentiles {
        percentiles_of(&dir.lat, &spec.percentile_list)
    } else if spec.report.clat_percentiles {
        percentiles_of(&dir.clat, &spec.percentile_list)
    } else {
        Vec::new()
    };
    for slot in 0..MAX_PERCENTILES {
        match percentiles.get(slot) {
            Some((percent, value_ns)) => {
                let _ = write!(out, ";{percent:.6}%={}", value_ns / 1_000);
            }
            None => out.push_str(";0%=0"),
        }
    }
    lat_fields(out, &dir.lat);
    let s = &dir.bw_kib;
    if s.count == 0 {
        out.push_str(";0;0;0.000000%;0.000000;0.000000");
        return;
    }
    // fio divides the group's bytes per second by 1024 in integers first.
    let agg_kib = group_agg_bytes_per_s / 1024;
    let per = if agg_kib == 0 { 100.0 } else { (s.mean() * 100.0 / agg_kib as f64).min(100.0) };
    let _ = write!(out, ";{};{};{per:.6}%;{:.6};{:.6}", s.min, s.max, s.mean(), s.stddev());
}

/// min, max, mean and standard deviation in microseconds (zeros without samples).
fn lat_fields(out: &mut String, stat: &LatStat) {
    let _ = write!(
        out,
        ";{};{};{:.6};{:.6}",
        stat.min() / 1_000,
        stat.max_ns / 1_000,
        stat.mean() / 1_000.0,
        stat.stddev() / 1_000.0
    );
}

/// fio's `calc_clat_percentiles`, which gives every percentile the value 0
/// when there are no samples.
fn percentiles_of(stat: &LatStat, list: &[f64]) -> Vec<(f64, u64)> {
    if stat.samples > 0 {
        return stat.percentiles(list);
    }
    let mut sorted = list.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.into_iter().map(|p| (p, 0)).collect()
}
