//! fs-bench reports: JSON in the fio front end's style (a "jobs" array with
//! "read" and "write" sections and latency in nanoseconds), plus a "fs"
//! section, and a short text report.

use super::FsBenchResult;
use serde_json::{json, Value};
use zonelab_sim::LatencyHistogram;

fn lat_json(h: &LatencyHistogram) -> Value {
    let pct: serde_json::Map<String, Value> =
        [50.0, 90.0, 99.0, 99.9].iter().map(|&p| (format!("{p:.6}"), json!(h.percentile_ns(p)))).collect();
    json!({
        "min": h.min_ns(), "max": h.max_ns(), "mean": h.mean_ns(), "stddev": h.stddev_ns(),
        "N": h.count(), "percentile": pct,
    })
}

fn dir_json(bytes: u64, elapsed_s: f64) -> Value {
    json!({
        "io_bytes": bytes,
        "io_kbytes": bytes / 1024,
        "bw_bytes": (bytes as f64 / elapsed_s) as u64,
        "bw": (bytes as f64 / elapsed_s / 1024.0) as u64,
        "runtime": (elapsed_s * 1000.0) as u64,
    })
}

/// The results as one fio-style JSON document: a job per result, with
/// "read", "write" and "fs" sections.
pub fn json(results: &[FsBenchResult]) -> Value {
    let jobs: Vec<Value> = results
        .iter()
        .map(|r| {
            let s = r.elapsed_ns.max(1) as f64 / 1e9;
            let phases: Vec<Value> = r
                .compactions
                .iter()
                .map(|c| json!([c.valid_blocks, c.init_ns, c.read_ns, c.write_ns, c.checkpoint_ns]))
                .collect();
            json!({
                "jobname": r.workload,
                "recycling": r.recycling,
                "threads": r.threads,
                "ops": r.ops,
                "ops_per_s": r.ops as f64 / s,
                "read": dir_json(r.read_bytes, s),
                "write": dir_json(r.write_bytes, s),
                "lat_ns": lat_json(&r.latency),
                "fsync_lat_ns": lat_json(&r.fsync_latency),
                "fs": {
                    "throughput_mb_s": r.throughput_mb_s(),
                    "waf": r.waf(),
                    "metadata_overhead": r.metadata_overhead(),
                    "data_blocks": r.traffic.data_blocks,
                    "node_blocks": r.traffic.node_blocks,
                    "meta_blocks": r.traffic.meta_blocks,
                    "relocated_blocks": r.traffic.relocated_blocks,
                    "device_copied_blocks": r.traffic.device_copied_blocks,
                    "compactions": r.compactions.len(),
                    "compaction_phases_ns": phases,
                    "compaction_read_requests": r.compactions.iter().map(|c| c.read_requests).collect::<Vec<_>>(),
                    "tl_segments": r.tl_segments,
                    "tl_other_type_segments": r.tl_other_type_segments,
                    "sc_chosen_by_cost": r.sc_chosen_by_cost,
                    "sc_segments": r.sc_segments,
                    "checkpoints": r.checkpoints,
                    "checkpoint_ns": r.checkpoint_ns,
                    "copyback_ratio": r.copyback_ratio(),
                    "background_plugging_ratio": r.background_plugging_ratio(),
                    "chip_utilization": r.chip_utilization,
                },
            })
        })
        .collect();
    json!({ "fio version": concat!("zonelab-fs-bench ", env!("CARGO_PKG_VERSION")), "jobs": jobs })
}

/// A short text report of one result: throughput, latency, traffic,
/// compactions, threaded logging, WAF, copyback and chip utilization.
pub fn text(r: &FsBenchResult) -> String {
    let s = r.elapsed_ns.max(1) as f64 / 1e9;
    format!(
        "{} ({}): {} threads, {} ops in {:.3} s simulated: {:.1} MB/s ({:.0} ops/s)\n  read {:.1} MiB, write {:.1} MiB, mean latency {:.1} us\n  compactions {}, threaded-logging segments {}, checkpoints {}, WAF {:.2}, copyback {:.1}%, chip utilization {:.1}%\n",
        r.workload,
        r.recycling,
        r.threads,
        r.ops,
        s,
        r.throughput_mb_s(),
        r.ops as f64 / s,
        r.read_bytes as f64 / 1048576.0,
        r.write_bytes as f64 / 1048576.0,
        r.latency.mean_ns() / 1e3,
        r.compactions.len(),
        r.tl_segments,
        r.checkpoints,
        r.waf(),
        r.copyback_ratio() * 100.0,
        r.chip_utilization * 100.0,
    )
}
