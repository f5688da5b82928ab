//! Seed 001 §6.1 on the conventional namespace (NSID 2 of `zn540-seed001`,
//! 4 GiB of the NVM command set with 512 B LBAs): Fig 4a, 4 KiB IOPS against
//! queue depth 1-1024, and Fig 4b, bandwidth against block size 4-128 KiB
//! at QD 4, for the six workloads of the appendix's Listings 6 and 7 (libaio,
//! no scheduler; reads and overwrites on a namespace written whole first).

use super::measure::{self, Point};
use super::measured::{self, Key};
use super::{panel_pair, Finding, Record, Scale};
use crate::calibrate::background::IoOp;
use crate::calibrate::plan::{NamespaceKind, Run};
use crate::calibrate::rows::{Metric, Op, Stack};
use crate::error::Result;
use crate::plot::{Axis, Figure, Marker, Plot, Series};
use std::collections::BTreeMap;

/// The six workloads, by the names of the paper's legends.
pub struct Workload {
    pub name: &'static str,
    row_op: Op,
    op: IoOp,
    overwrite: bool,
    marker: Marker,
    color: (u8, u8, u8),
}

pub const WORKLOADS: [Workload; 6] = [
    Workload {
        name: "write_seq",
        row_op: Op::Write,
        op: IoOp::Write,
        overwrite: false,
        marker: Marker::Circle,
        color: (0, 114, 178),
    },
    Workload {
        name: "write_rand",
        row_op: Op::Randwrite,
        op: IoOp::RandWrite,
        overwrite: false,
        marker: Marker::Square,
        color: (86, 180, 233),
    },
    Workload {
        name: "read_seq",
        row_op: Op::Read,
        op: IoOp::Read,
        overwrite: false,
        marker: Marker::Triangle,
        color: (0, 158, 115),
    },
    Workload {
        name: "read_rand",
        row_op: Op::Randread,
        op: IoOp::RandRead,
        overwrite: false,
        marker: Marker::Diamond,
        color: (17, 119, 51),
    },
    Workload {
        name: "overwrite_seq",
        row_op: Op::OverwriteSeq,
        op: IoOp::Write,
        overwrite: true,
        marker: Marker::Cross,
        color: (213, 94, 0),
    },
    Workload {
        name: "overwrite_rand",
        row_op: Op::OverwriteRand,
        op: IoOp::RandWrite,
        overwrite: true,
        marker: Marker::Circle,
        color: (204, 121, 167),
    },
];

/// The paper's headline numbers of §6.1.
const PEAK_KIOPS: f64 = 296.0;
const GIB_MIB: f64 = 1024.0;
/// Fig 4b's block size.
const QD_4B: u32 = 4;
/// What the model lacks where Fig 4a's read peak is off (a lower peak is also reached sooner).
const READ_PEAK: &str = "4 KiB reads at depth as fast as the drive's 292-296 KIOPS";
/// What the model lacks where Fig 4b's peaks are off: the drive's ceilings.
const WRITE_CEILING: &str =
    "the conventional namespace's write ceiling: the drive's writes stop at 1.04 GiB/s, the model's at the flash's pace";
const READ_CEILING: &str = "a read ceiling near 2 GiB/s: the drive's sequential reads flatten from 16 KiB on";
/// A curve reaches its peak at its first point within this share of it: the
/// study's own curves wobble by a few percent at depth (292-296 KIOPS).
const PEAK_BAND: f64 = 0.05;

fn depths(scale: Scale) -> Vec<u32> {
    let all: Vec<u32> = (0..=10).map(|i| 1 << i).collect();
    // Quick keeps the depths the findings turn on (1-64) and the deepest.
    if scale.quick {
        all.into_iter().filter(|&q| q <= 64 || q == 1024).collect()
    } else {
        all
    }
}

fn sizes(scale: Scale) -> Vec<u64> {
    let kib: &[u64] = if scale.quick { &[4, 8, 16, 128] } else { &[4, 8, 16, 32, 64, 128] };
    kib.iter().map(|k| k << 10).collect()
}

fn run(w: &Workload, bs: u64, qd: u32) -> Run {
    measure::fio(NamespaceKind::Conventional, Stack::LibaioNone, w.op, w.overwrite, bs, qd, 1)
}

/// Every run of Fig 4a and 4b.
pub fn runs(scale: Scale) -> Vec<Run> {
    let mut runs = Vec::new();
    for w in &WORKLOADS {
        runs.extend(depths(scale).into_iter().map(|qd| run(w, 4096, qd)));
        // 4 KiB at QD 4 is a point of both figures: it runs once.
        runs.extend(sizes(scale).into_iter().filter(|&bs| bs != 4096).map(|bs| run(w, bs, QD_4B)));
    }
    runs
}

fn key(w: &Workload, figure: &'static str, bs: u64, qd: u32) -> Key<'static> {
    Key { figure, stack: Stack::LibaioNone, op: w.row_op, bs, qd, jobs: 1 }
}

/// The first x at which `curve` is within [`PEAK_BAND`] of its peak.
fn knee(curve: &[(f64, f64)]) -> f64 {
    let peak = curve.iter().map(|p| p.1).fold(0.0, f64::max);
    curve.iter().find(|p| p.1 >= peak * (1.0 - PEAK_BAND)).map_or(f64::NAN, |p| p.0)
}

fn series(w: &Workload, points: Vec<(f64, f64)>) -> Series {
    let mut s = Series::new(w.name, w.name, points).marker(w.marker);
    s.style.color = w.color;
    s
}

/// Fig 4a: 4 KiB IOPS against queue depth.
pub fn fig4a(scale: Scale, ran: &BTreeMap<Run, Point>) -> Result<Record> {
    const FIGURE: &str = "IOPS vs QD, conventional ns";
    let qds = depths(scale);
    let (mut rows, mut ours, mut theirs, mut jobs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in &WORKLOADS {
        let mut curve = Vec::new();
        let mut drive = Vec::new();
        for &qd in &qds {
            let p = &ran[&run(w, 4096, qd)];
            let paper = measured::value(key(w, FIGURE, 4096, qd), Metric::Kiops);
            rows.push(vec![w.name.into(), qd.to_string(), format!("{:.2}", p.kiops), measured::field(paper)]);
            curve.push((f64::from(qd), p.kiops));
            drive.extend(paper.map(|v| (f64::from(qd), v)));
            jobs.push((format!("fig4a-{}-qd{qd}.fio", w.name), p.job_file.clone()));
        }
        ours.push((w, curve));
        theirs.push(series(w, drive));
    }
    let curve = |name: &str| ours.iter().find(|(w, _)| w.name == name).map_or(&[][..], |(_, c)| c.as_slice());
    let peak = |names: &[&str]| names.iter().flat_map(|n| curve(n)).map(|p| p.1).fold(0.0, f64::max);
    let read_peak = peak(&["read_seq", "read_rand"]);
    let writes = ["write_seq", "write_rand", "overwrite_seq", "overwrite_rand"];
    let write_knee = writes.iter().map(|n| knee(curve(n))).fold(0.0, f64::max);
    let obs = "S001 §6.1 Fig 4a";
    let findings = vec![
        Finding::number(obs, "peak read throughput, 4 KiB", "KIOPS", PEAK_KIOPS, read_peak).lacking(READ_PEAK),
        Finding::number(obs, "queue depth at which every write workload peaks", "QD", 2.0, write_knee).lacking(
            "random writes that reach their peak by QD 2 (the study measured no QD-2 point to check the paper's)",
        ),
        Finding::number(
            obs,
            "peak write throughput as a share of the 296 KIOPS reads reach",
            "%",
            19.0,
            peak(&writes) / read_peak * 100.0,
        )
        .lacking(READ_PEAK),
        Finding::number(
            obs,
            "queue depth at which sequential reads reach their peak",
            "QD",
            8.0,
            knee(curve("read_seq")),
        ),
        Finding::number(
            obs,
            "queue depth at which random reads reach their peak",
            "QD",
            64.0,
            knee(curve("read_rand")),
        )
        .lacking(READ_PEAK),
        Finding::missing(
            "S001 §6.1 Fig 3",
            "the Samsung and Optane SSDs peak at 300 KIOPS by QD 4 (the Samsung's random reads at QD 16)",
            "models of the Samsung 980 PRO and the Intel Optane SSD (zonelab models the ZN540 and its SN640 twin)",
        ),
    ];
    let plot = |title: &str, series: Vec<Series>| {
        Figure::Lines(Plot {
            title: title.into(),
            x: Axis::log2_at("I/O queue depth", &qds.iter().map(|&q| f64::from(q)).collect::<Vec<_>>()),
            y: Axis::linear("throughput (KIOPS)").range(0.0, 320.0),
            series,
        })
    };
    let zonelab = ours.into_iter().map(|(w, c)| series(w, c)).collect();
    Ok(Record {
        name: "fig4a-conventional-iops".into(),
        title: "Fig 4a: conventional namespace, 4 KiB IOPS against queue depth (seed 001 §6.1)".into(),
        columns: ["workload", "qd", "zonelab_kiops", "measured_kiops"].map(String::from).to_vec(),
        rows,
        findings,
        figure: panel_pair(
            "Conventional namespace, 4 KiB, libaio (seed 001 Fig 4a)",
            plot("(a) zonelab", zonelab),
            plot("(b) the drive (ZNS-Study)", theirs),
        ),
        jobs,
    })
}

/// Fig 4b: bandwidth against block size at QD 4.
pub fn fig4b(scale: Scale, ran: &BTreeMap<Run, Point>) -> Result<Record> {
    const FIGURE: &str = "Bandwidth vs block size, conventional ns";
    let bss = sizes(scale);
    let (mut rows, mut ours, mut theirs, mut jobs) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for w in &WORKLOADS {
        let (mut curve, mut drive) = (Vec::new(), Vec::new());
        for &bs in &bss {
            let p = &ran[&run(w, bs, QD_4B)];
            let kib = (bs >> 10) as f64;
            let paper = measured::value(key(w, FIGURE, bs, QD_4B), Metric::Mibs);
            rows.push(vec![w.name.into(), (bs >> 10).to_string(), format!("{:.1}", p.mib_s), measured::field(paper)]);
            curve.push((kib, p.mib_s));
            drive.extend(paper.map(|v| (kib, v)));
            jobs.push((format!("fig4b-{}-{}k.fio", w.name, bs >> 10), p.job_file.clone()));
        }
        ours.push((w, curve));
        theirs.push(series(w, drive));
    }
    let curve = |name: &str| ours.iter().find(|(w, _)| w.name == name).map_or(&[][..], |(_, c)| c.as_slice());
    let peak = |name: &str| curve(name).iter().map(|p| p.1).fold(0.0, f64::max);
    let writes = ["write_seq", "write_rand", "overwrite_seq", "overwrite_rand"];
    let write_peak = writes.iter().map(|n| peak(n)).fold(0.0, f64::max);
    let write_knee = writes.iter().map(|n| knee(curve(n))).fold(0.0, f64::max);
    let read_4k = curve("read_seq").first().map_or(f64::NAN, |p| p.1);
    let obs = "S001 §6.1 Fig 4b";
    let findings = vec![
        Finding::number(obs, "peak write bandwidth (\"1GiB\")", "MiB/s", GIB_MIB, write_peak).lacking(WRITE_CEILING),
        Finding::number(obs, "smallest block at which every write workload reaches its peak", "KiB", 16.0, write_knee)
            .lacking(
                "8 KiB writes slower than 16 KiB ones: the model's cost of a write below a full unit stops at 8 KiB",
            ),
        Finding::number(obs, "peak sequential read bandwidth (\"2GiB\")", "MiB/s", 2.0 * GIB_MIB, peak("read_seq"))
            .lacking(READ_CEILING),
        Finding::number(
            obs,
            "sequential reads' peak bandwidth above the writes'",
            "%",
            94.2,
            (peak("read_seq") / write_peak - 1.0) * 100.0,
        )
        .lacking(READ_CEILING),
        Finding::number(
            obs,
            "sequential 4 KiB reads at QD 4 (296 KIOPS x 4 KiB = \"1.13GiB\")",
            "MiB/s",
            1.13 * GIB_MIB,
            read_4k,
        )
        .lacking("sequential 4 KiB reads at QD 4 as fast as the drive's (292 KIOPS)"),
    ];
    let kibs: Vec<f64> = bss.iter().map(|&b| (b >> 10) as f64).collect();
    let plot = |title: &str, series: Vec<Series>| {
        Figure::Lines(Plot {
            title: title.into(),
            x: Axis::sizes_kib("block size", &kibs),
            y: Axis::linear("bandwidth (MiB/s)").range(0.0, 2600.0),
            series,
        })
    };
    let zonelab = ours.into_iter().map(|(w, c)| series(w, c)).collect();
    Ok(Record {
        name: "fig4b-conventional-bandwidth".into(),
        title: "Fig 4b: conventional namespace, bandwidth against block size at QD 4 (seed 001 §6.1)".into(),
        columns: ["workload", "bs_kib", "zonelab_mib_s", "measured_mib_s"].map(String::from).to_vec(),
        rows,
        findings,
        figure: panel_pair(
            "Conventional namespace, QD 4, libaio (seed 001 Fig 4b)",
            plot("(a) zonelab", zonelab),
            plot("(b) the drive (ZNS-Study)", theirs),
        ),
        jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_curve_reaches_its_peak_at_its_first_point_within_five_percent_of_it() {
        let curve = [(1.0, 10.0), (2.0, 54.0), (4.0, 57.0), (8.0, 58.0), (16.0, 56.0)];
        assert_eq!(knee(&curve), 4.0);
        assert_eq!(knee(&[(1.0, 5.0), (2.0, 5.0)]), 1.0);
        assert!(knee(&[]).is_nan());
    }

    #[test]
    fn every_point_of_both_figures_is_a_run_and_quick_keeps_the_findings_points() {
        let quick = runs(Scale { quick: true });
        for qd in [1, 2, 4, 8, 16, 32, 64] {
            assert!(WORKLOADS.iter().all(|w| quick.contains(&run(w, 4096, qd))), "QD {qd}");
        }
        for kib in [4, 8, 16] {
            assert!(WORKLOADS.iter().all(|w| quick.contains(&run(w, kib << 10, QD_4B))), "{kib} KiB");
        }
        let full = runs(Scale { quick: false });
        assert_eq!(full.len(), WORKLOADS.len() * (11 + 5));
        assert!(full.iter().all(|r| full.iter().filter(|x| *x == r).count() == 1), "each run once");
    }
}
