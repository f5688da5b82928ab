//! fio's normal report, laid out as fio 3.33's `show_run_stats` prints it:
//! the job lines before the run, then per entry its directions, latency
//! distribution, CPU and depth lines, then each group's totals and the disk's.

use super::num::{dist_shares, num2str, Unit};
use super::*;
use crate::fio::stats::{LatencyShares, RateSamples};
use std::fmt::Write;

/// What fio prints before the run starts: a line per job (`...` for its
/// clones), its version and the number of processes (or threads).
pub fn normal_header(set: &JobSet, result: &RunResult) -> String {
    let mut out = String::new();
    for (index, job) in set.jobs.iter().enumerate() {
        let groupid = result.threads.iter().find(|t| t.spec == index).map_or(0, |t| t.groupid);
        let i2p = job.kb_base == 1024;
        let size = |bytes: u64| num2str(bytes, job.report.sig_figs as usize, i2p, Unit::Bytes);
        let bs: Vec<String> = job.bs.iter().map(|b| format!("{}-{}", size(b.min_bytes), size(b.max_bytes))).collect();
        let _ = writeln!(
            out,
            "{}: (g={groupid}): rw={}, bs=(R) {}, (W) {}, (T) {}, ioengine={}, iodepth={}",
            job.name,
            rw_name(job.rw),
            bs[0],
            bs[1],
            bs[2],
            job.ioengine.name(),
            job.iodepth
        );
        if job.numjobs > 1 {
            out.push_str("...\n");
        }
    }
    let count = |thread: bool| set.jobs.iter().filter(|j| j.report.thread == thread).map(|j| j.numjobs).sum::<u32>();
    let (threads, processes) = (count(true), count(false));
    let mut starting = Vec::new();
    if threads > 0 {
        starting.push(format!("{threads} thread{}", if threads > 1 { "s" } else { "" }));
    }
    if processes > 0 {
        starting.push(format!("{processes} process{}", if processes > 1 { "es" } else { "" }));
    }
    let _ = writeln!(out, "{FIO_VERSION}\nStarting {}", starting.join(" and "));
    out
}

/// What fio prints once the run is over: each entry, each group's totals, the disk.
pub fn normal_stats(set: &JobSet, result: &RunResult) -> String {
    let all = entries(set, result);
    let groups = group_runs(&all);
    let mut out = String::from("\n");
    for entry in &all {
        // fio skips an entry that did nothing; one that failed at once still says why.
        let ios: u64 = entry.stats.dirs.iter().map(|d| d.total_ios + d.io_bytes).sum();
        if ios > 0 || entry.stats.error.is_some() {
            let group = groups.iter().find(|g| g.groupid == entry.groupid).expect("every entry has its group");
            normal_entry(&mut out, entry, group);
        }
    }
    for group in &groups {
        group_lines(&mut out, group);
    }
    let disks = disks(set, result);
    if !disks.is_empty() {
        let _ = writeln!(out, "\nDisk stats (read/write):");
    }
    for disk in disks {
        let d = &disk.counters;
        let _ = writeln!(
            out,
            "  {}: ios={}/{}, merge={}/{}, ticks=0/0, in_queue=0, util={:3.2}%",
            disk.name, d.read_ios, d.write_ios, d.read_merges, d.write_merges, disk.util
        );
    }
    out
}

/// fio's normal report: [`normal_header`] and [`normal_stats`].
pub fn normal_report(set: &JobSet, result: &RunResult) -> String {
    normal_header(set, result) + &normal_stats(set, result)
}

fn normal_entry(out: &mut String, entry: &Entry<'_>, group: &GroupRun) {
    let (spec, stats) = (entry.spec, &entry.stats);
    // fio: "err= 5 (file:io_u.c:1876, func=io_u error, error=...)".
    let err = match &stats.error {
        Some((errno, message)) => format!("{errno:2} (func=io_u error, error={message})"),
        None => " 0".to_string(),
    };
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err={err}: pid=0: {SIMULATED_TIME}",
        spec.name, entry.groupid, entry.threads
    );
    if let Some(description) = &spec.report.description {
        let _ = writeln!(out, "  Description  : [{description}]");
    }
    for (ddir, name) in DDIR_NAMES.iter().enumerate() {
        if stats.dirs[ddir].total_ios > 0 {
            normal_dir(out, name, &stats.dirs[ddir], entry, group.dirs[ddir].agg_bytes_per_s);
        }
    }
    lat_distribution(out, &stats.lat_buckets.shares(total_ios(stats)));
    let _ = writeln!(out, "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=0");
    let depth = &stats.depth.counts;
    let depths = dist_shares(depth, depth.iter().sum());
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        depths[0], depths[1], depths[2], depths[3], depths[4], depths[5], depths[6]
    );
    let batches = dist_shares(&batch_counts(total_ios(stats)), total_ios(stats));
    for label in ["submit    ", "complete  "] {
        let _ = writeln!(
            out,
            "     {label}: 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
            batches[0], batches[1], batches[2], batches[3], batches[4], batches[5], batches[6]
        );
    }
    let d = &stats.dirs;
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},0 short=0,0,0,0 dropped=0,0,0,0",
        d[0].total_ios, d[1].total_ios, d[2].total_ios
    );
    let _ = writeln!(out, "     latency   : target=0, window=0, percentile=100.00%, depth={}", spec.iodepth);
}

/// fio's `show_ddir_status`: one direction of an entry.
fn normal_dir(out: &mut String, name: &str, dir: &DirStats, entry: &Entry<'_>, group_agg_bytes_per_s: u64) {
    let spec = entry.spec;
    if dir.runtime_ns == 0 {
        return;
    }
    let (digits, i2p) = (spec.report.sig_figs as usize, spec.kb_base == 1024);
    let rate = if spec.report.unit_bits { Unit::BitsPerSec } else { Unit::BytesPerSec };
    let bw = dir.bw_bytes_per_s();
    // fio adds the zone resets to every write line (`zbd_write_status`).
    let resets = if name == "write" { format!("; {} zone resets", entry.stats.zone_resets) } else { String::new() };
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec){resets}",
        num2str(dir.iops_value() as u64, digits, false, Unit::None),
        num2str(bw, digits, i2p, rate),
        num2str(bw, digits, !i2p, rate),
        num2str(dir.io_bytes, digits, i2p, Unit::Bytes),
        dir.runtime_ns / 1_000_000
    );
    lat_line(out, "slat", &dir.slat);
    lat_line(out, "clat", &dir.clat);
    lat_line(out, " lat", &dir.lat);
    let precision = spec.percentile_precision;
    let shown = [(spec.report.slat_percentiles, "slat", &dir.slat), (spec.report.clat_percentiles, "clat", &dir.clat)];
    for (on, label, stat) in shown.into_iter().chain([(spec.report.lat_percentiles, "lat", &dir.lat)]) {
        if on {
            percentile_lines(out, label, stat, &spec.percentile_list, precision);
        }
    }
    bw_line(out, &dir.bw_kib, group_agg_bytes_per_s, spec);
    if dir.iops.count > 0 {
        let s = &dir.iops;
        let _ = writeln!(
            out,
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}",
            s.min,
            s.max,
            s.mean(),
            s.stddev(),
            s.count
        );
    }
}

/// fio's `display_lat`: nanoseconds, or micro- or milliseconds once the
/// values are large enough, min and max in at most 6 digits.
fn lat_line(out: &mut String, label: &str, stat: &LatStat) {
    if stat.samples == 0 {
        return;
    }
    let (min, max, mean, dev) = (stat.min(), stat.max_ns, stat.mean(), stat.stddev());
    let (unit, divisor) = if min > 2_000_000 && max > 99_999_999 && dev > 1e6 {
        ("msec", 1_000_000)
    } else if min > 2_000 && max > 99_999 && dev > 1e3 {
        ("usec", 1_000)
    } else {
        ("nsec", 1)
    };
    let _ = writeln!(
        out,
        "    {label} ({unit}): min={}, max={}, avg={:5.2}, stdev={:5.2}",
        num2str(min / divisor, 6, false, Unit::None),
        num2str(max / divisor, 6, false, Unit::None),
        mean / divisor as f64,
        dev / divisor as f64
    );
}

/// fio's `show_clat_percentiles`: the unit from the smallest and largest
/// value, values rounded up to it, as many per line as fit in 80 columns.
fn percentile_lines(out: &mut String, label: &str, stat: &LatStat, list: &[f64], precision: usize) {
    let values = stat.percentiles(list);
    let (Some(min), Some(max)) = (values.iter().map(|v| v.1).min(), values.iter().map(|v| v.1).max()) else {
        return;
    };
    let (unit, divisor, scale_downs) = if min > 2_000_000 && max > 99_999_999 {
        ("msec", 1_000_000, 2)
    } else if min > 2_000 && max > 99_999 {
        ("usec", 1_000, 1)
    } else {
        ("nsec", 1, 0)
    };
    let time_width = (max / divisor).checked_ilog10().map_or(0, |d| d as usize + 1).max(5);
    let per_line = 73 / (precision + 10 + time_width);
    let _ = write!(out, "    {label} percentiles ({unit}):\n     |");
    for (j, (percent, value)) in values.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let value = (0..scale_downs).fold(*value, |v, _| v.div_ceil(1_000));
        let last = j + 1 == values.len();
        let _ = write!(
            out,
            " {percent:>width$.precision$}th=[{value:>time_width$}]{}",
            if last { '\n' } else { ',' },
            width = precision + 3,
        );
        if !last && j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// fio's bandwidth line: KiB/s (MiB/s from a mean over 1 GiB/s), and `per`,
/// the mean's share of the group's aggregate bandwidth.
fn bw_line(out: &mut String, samples: &RateSamples, group_agg_bytes_per_s: u64, spec: &JobSpec) {
    if samples.count == 0 {
        return;
    }
    let (i2p, kb) = (spec.kb_base == 1024, f64::from(spec.kb_base));
    let mut label = match (spec.report.unit_bits, i2p) {
        (true, true) => "Kibit",
        (true, false) => "kbit",
        (false, true) => "KiB",
        (false, false) => "kB",
    };
    // fio passes the mean as an int here (`convert_agg_kbytes_percent`).
    let per = match group_agg_bytes_per_s {
        agg if agg > 1024 => (samples.mean() as i64 as f64 * 100.0 / (agg as f64 / 1024.0)).min(100.0),
        _ => 100.0,
    };
    let bits = if spec.report.unit_bits { 8 } else { 1 };
    let (mut min, mut max) = (samples.min * bits, samples.max * bits);
    let (mut mean, mut dev) = (samples.mean() * bits as f64, samples.stddev() * bits as f64);
    if mean > kb * kb {
        (min, max) = ((min as f64 / kb) as u64, (max as f64 / kb) as u64);
        (mean, dev) = (mean / kb, dev / kb);
        label = if spec.report.unit_bits { "Mibit" } else { "MiB" };
    }
    let _ = writeln!(
        out,
        "   bw ({label:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}",
        samples.count
    );
}

/// fio's `show_latencies`: the non-empty buckets of each scale, five to a line.
fn lat_distribution(out: &mut String, shares: &LatencyShares) {
    let scales: [(&str, &[f64]); 3] = [("nsec", &shares.ns), ("usec", &shares.us), ("msec", &shares.ms)];
    for (unit, values) in scales {
        let cells: Vec<String> = LAT_KEYS
            .iter()
            .zip(values)
            .filter(|(_, share)| **share > 0.0)
            .map(|(key, share)| format!("{key}={share:3.2}%"))
            .collect();
        for line in cells.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", line.join(", "));
        }
    }
}

/// fio's `show_group_stats`: a group's directions, each with its aggregate
/// bandwidth, the smallest and largest of its entries' and its bytes.
fn group_lines(out: &mut String, group: &GroupRun) {
    let _ = writeln!(out, "\nRun status group {} (all jobs):", group.groupid);
    let (digits, i2p) = (group.sig_figs as usize, group.kb_base == 1024);
    let rate = if group.unit_bits { Unit::BitsPerSec } else { Unit::BytesPerSec };
    for (dir, label) in group.dirs.iter().zip(["   READ", "  WRITE", "   TRIM"]) {
        if dir.max_run_ns == 0 {
            continue;
        }
        let pair = |value: u64, unit: Unit| (num2str(value, digits, i2p, unit), num2str(value, digits, !i2p, unit));
        let (agg, agg_alt) = pair(dir.agg_bytes_per_s, rate);
        let (min, min_alt) = pair(dir.min_bw, rate);
        let (max, max_alt) = pair(dir.max_bw, rate);
        let (io, io_alt) = pair(dir.io_bytes, Unit::Bytes);
        let _ = writeln!(
            out,
            "{label}: bw={agg} ({agg_alt}), {min}-{max} ({min_alt}-{max_alt}), io={io} ({io_alt}), run={}-{}msec",
            dir.min_run_ns / 1_000_000,
            dir.max_run_ns / 1_000_000
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::stats::LatencyBuckets;

    fn stat(values: &[u64]) -> LatStat {
        let mut stat = LatStat::default();
        values.iter().for_each(|&v| stat.add(v));
        stat
    }

    #[test]
    fn percentiles_are_laid_out_as_fio_prints_them() {
        // As fio 3.33 printed --percentile_list=50:99.5 for completions of 30 and 31 ns.
        let mut values = vec![30; 250];
        values.extend([31; 6]);
        let mut out = String::new();
        percentile_lines(&mut out, "clat", &stat(&values), &[99.5, 50.0], 1);
        assert_eq!(out, "    clat percentiles (nsec):\n     | 50.0th=[   30], 99.5th=[   31]\n");
        // Micro- and milliseconds once the smallest and largest values call for them,
        // rounded up; four to a line with two decimals.
        let mut out = String::new();
        let list = [1.0, 5.0, 10.0, 20.0, 50.0];
        percentile_lines(&mut out, "lat", &stat(&[2_500, 50_000, 120_000, 120_000, 120_000]), &list, 2);
        let want = "    lat percentiles (usec):\n     |  1.00th=[    3],  5.00th=[    3], 10.00th=[    3], 20.00th=[    3],\n     | 50.00th=[  121]\n";
        assert_eq!(out, want);
    }

    #[test]
    fn latency_lines_pick_fio_units_and_digits() {
        let mut out = String::new();
        // min below 2 us keeps nanoseconds; max in at most 6 digits.
        lat_line(&mut out, "clat", &stat(&[550, 8_002_300]));
        assert!(out.starts_with("    clat (nsec): min=550, max=8002.3k, avg=4001425.00, stdev="), "{out}");
        let mut out = String::new();
        lat_line(&mut out, "slat", &stat(&[760, 760]));
        assert_eq!(out, "    slat (nsec): min=760, max=760, avg=760.00, stdev= 0.00\n");
    }

    #[test]
    fn latency_distribution_shows_non_empty_buckets_five_to_a_line() {
        let mut buckets = LatencyBuckets::default();
        (0..255).for_each(|_| buckets.add(45));
        buckets.add(6_000);
        let mut out = String::new();
        lat_distribution(&mut out, &buckets.shares(256));
        // fio 3.33 printed these two lines for such a run.
        assert_eq!(out, "  lat (nsec)   : 50=99.61%\n  lat (usec)   : 10=0.39%\n");
        let mut buckets = LatencyBuckets::default();
        [3_000, 5_000, 15_000, 30_000, 60_000, 200_000].into_iter().for_each(|v| buckets.add(v));
        let mut out = String::new();
        lat_distribution(&mut out, &buckets.shares(6));
        let want =
            "  lat (usec)   : 4=16.67%, 10=16.67%, 20=16.67%, 50=16.67%, 100=16.67%\n  lat (usec)   : 250=16.67%\n";
        assert_eq!(out, want);
    }
}
