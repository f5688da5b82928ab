//! Seed 001 §6.2 on the zoned namespace: mq-deadline against none with 4 KiB
//! I/Os, N = 1-14 outstanding (14: the drive's active zones), as Listings
//! 8-10 of the appendix ran them. Fig 5a: sequential reads in one zone at
//! QD N under both. Fig 5b: random reads, mq-deadline at QD N against none
//! with N psync threads. Fig 6a: N psync writers, one zone each, under both.
//! Fig 6b: mq-deadline writing one zone at QD N against none's N writers.
//! The runs are `calibrate`'s, on the `zn540` preset (the zoned namespace
//! alone, as calibrate runs the study's zoned rows).

use super::measure::{self, Point};
use super::measured::{self, Key};
use super::{panel_pair, Finding, Record, Scale};
use crate::calibrate::background::IoOp;
use crate::calibrate::plan::{NamespaceKind, Run};
use crate::calibrate::rows::{Metric, Op, Stack};
use crate::error::Result;
use crate::plot::{Axis, Figure, Marker, Plot, Series};
use std::collections::BTreeMap;

/// The drive's active zones: the study's largest N.
const N_MAX: u32 = 14;
/// Two schedulers' latencies are "alike" within this share of each other:
/// the study's Fig 6a medians, "nearly identical", differ by up to 2%, and
/// fio's percentiles are binned at 1/64 of an octave (1.6%).
const ALIKE_BAND: f64 = 0.05;
/// Fig 5b: up to this many outstanding reads mq-deadline is the slower.
const FIG5B_SPLIT: u32 = 4;

/// One scheduler's line of a figure: N is the queue depth of one job, or
/// the number of jobs at QD 1.
struct Curve {
    scheduler: &'static str,
    stack: Stack,
    by_depth: bool,
}

struct Spec {
    name: &'static str,
    title: &'static str,
    /// The start of the figure's name in zn540.csv.
    rows: &'static str,
    op: IoOp,
    row_op: Op,
    curves: [Curve; 2],
    /// Its findings from the mq-deadline line and the none line.
    findings: fn(&Line, &Line) -> Vec<Finding>,
}

const fn curve(scheduler: &'static str, stack: Stack, by_depth: bool) -> Curve {
    Curve { scheduler, stack, by_depth }
}

const FIG5A: Spec = Spec {
    name: "fig5a-zoned-seqread",
    title: "Fig 5a: zoned namespace, 4 KiB sequential reads in one zone at QD N (seed 001 §6.2)",
    rows: "Zoned ns: sequential read QD 1-14",
    op: IoOp::Read,
    row_op: Op::Read,
    curves: [curve("mq-deadline", Stack::LibaioMqDeadline, true), curve("none", Stack::LibaioNone, true)],
    findings: fig5a_findings,
};
const FIG5B: Spec = Spec {
    name: "fig5b-zoned-randread",
    title: "Fig 5b: zoned namespace, 4 KiB random reads, mq-deadline QD N against none N threads (seed 001 §6.2)",
    rows: "Zoned ns: random read",
    op: IoOp::RandRead,
    row_op: Op::Randread,
    curves: [curve("mq-deadline", Stack::LibaioMqDeadline, true), curve("none", Stack::PsyncNone, false)],
    findings: fig5b_findings,
};
const FIG6A: Spec = Spec {
    name: "fig6a-zoned-write-zones",
    title: "Fig 6a: zoned namespace, N psync 4 KiB writers in a zone each (seed 001 §6.2)",
    rows: "Zoned ns: sequential write across zones",
    op: IoOp::Write,
    row_op: Op::Write,
    curves: [curve("mq-deadline", Stack::PsyncMqDeadline, false), curve("none", Stack::PsyncNone, false)],
    findings: fig6a_findings,
};
const FIG6B: Spec = Spec {
    name: "fig6b-zoned-write-depth",
    title: "Fig 6b: zoned namespace, 4 KiB writes, mq-deadline one zone QD N against none N threads (seed 001 §6.2)",
    rows: "Zoned ns: sequential write, mq-deadline 1 zone",
    op: IoOp::Write,
    row_op: Op::Write,
    curves: [curve("mq-deadline", Stack::LibaioMqDeadline, true), curve("none", Stack::PsyncNone, false)],
    findings: fig6b_findings,
};
const SPECS: [&Spec; 4] = [&FIG5A, &FIG5B, &FIG6A, &FIG6B];

fn outstanding(scale: Scale) -> Vec<u32> {
    if scale.quick {
        vec![1, 2, 4, 6, 10, N_MAX]
    } else {
        (1..=N_MAX).collect()
    }
}

fn run(spec: &Spec, c: &Curve, n: u32) -> Run {
    let (qd, jobs) = if c.by_depth { (n, 1) } else { (1, n) };
    measure::fio(NamespaceKind::Zoned, c.stack, spec.op, false, 4096, qd, jobs)
}

/// Every run of Fig 5 and 6.
pub fn runs(scale: Scale) -> Vec<Run> {
    let ns = outstanding(scale);
    let mut runs: Vec<Run> = Vec::new();
    for spec in SPECS {
        for c in &spec.curves {
            for &n in &ns {
                let r = run(spec, c, n);
                if !runs.contains(&r) {
                    runs.push(r);
                }
            }
        }
    }
    runs
}

/// One scheduler's points: zonelab's and the drive's (where measured).
struct Line {
    ours: Vec<(u32, Point)>,
    drive: Vec<(u32, [Option<f64>; 3])>,
}

fn line(spec: &Spec, c: &Curve, ns: &[u32], ran: &BTreeMap<Run, Point>) -> Line {
    let mut l = Line { ours: Vec::new(), drive: Vec::new() };
    for &n in ns {
        l.ours.push((n, ran[&run(spec, c, n)].clone()));
        let (qd, jobs) = if c.by_depth { (n, 1) } else { (1, n) };
        let key = Key { figure: spec.rows, stack: c.stack, op: spec.row_op, bs: 4096, qd, jobs };
        let v = |m| measured::value(key, m);
        l.drive.push((n, [v(Metric::Kiops), v(Metric::LatP50Us), v(Metric::LatP95Us)]));
    }
    l
}

/// (N, mq-deadline's latency over none's - 1) at each N: `pick` chooses the latency.
fn gaps(mq: &Line, none: &Line, pick: fn(&Point) -> f64) -> Vec<(u32, f64)> {
    mq.ours.iter().zip(&none.ours).map(|((n, m), (_, z))| (*n, pick(m) / pick(z) - 1.0)).collect()
}

/// How much lower `b`'s latency is than `a`'s, in percent.
fn lower_pct(a: f64, b: f64) -> f64 {
    (1.0 - b / a) * 100.0
}

fn at_max(l: &Line) -> &Point {
    &l.ours.last().expect("a figure has points").1
}

/// The largest |gap| of `g`.
fn max_abs(g: &[(u32, f64)]) -> f64 {
    g.iter().map(|x| x.1.abs()).fold(0.0, f64::max)
}

fn fig5a_findings(mq: &Line, none: &Line) -> Vec<Finding> {
    let (m, z) = (at_max(mq), at_max(none));
    let obs = "S001 §6.2 Fig 5a";
    let lacks = "none's sequential reads at depth no faster than the drive's (274-285 KIOPS in one zone at QD 5-13)";
    vec![
        Finding::direction(
            obs,
            "none: lower median and tail read latency than mq-deadline at QD 14",
            z.p50_us < m.p50_us && z.p95_us < m.p95_us,
            Some(lower_pct(m.p50_us, z.p50_us)),
        ),
        Finding::number(
            obs,
            "none's median latency below mq-deadline's at QD 14",
            "%",
            9.95,
            lower_pct(m.p50_us, z.p50_us),
        )
        .lacking(lacks),
        Finding::number(
            obs,
            "none's tail (p95) latency below mq-deadline's at QD 14",
            "%",
            9.66,
            lower_pct(m.p95_us, z.p95_us),
        )
        .lacking(lacks),
    ]
}

fn fig5b_findings(mq: &Line, none: &Line) -> Vec<Finding> {
    let p50 = gaps(mq, none, |p| p.p50_us);
    let low: Vec<(u32, f64)> = p50.iter().copied().filter(|(n, _)| *n <= FIG5B_SPLIT).collect();
    let high: Vec<(u32, f64)> = p50.iter().copied().filter(|(n, _)| *n > FIG5B_SPLIT).collect();
    let low_min = low.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let low_max = low.iter().map(|x| x.1).fold(f64::NEG_INFINITY, f64::max);
    let obs = "S001 §6.2 Fig 5b";
    vec![
        Finding::direction(
            obs,
            "up to 4 outstanding reads mq-deadline has the higher median latency",
            low_min > 0.0,
            Some(low_min * 100.0),
        ),
        Finding::number(
            obs,
            "mq-deadline's median above none's, largest at 1-4 outstanding (paper: 1.23-4.79%)",
            "%",
            4.79,
            low_max * 100.0,
        )
        .lacking("mq-deadline's cost on a lone random read as the drive's host paid it (3 µs over psync's 81.4 µs)"),
        Finding::direction(
            obs,
            "more than 4 outstanding: medians alike (within 5%)",
            max_abs(&high) <= ALIKE_BAND,
            Some(max_abs(&high) * 100.0),
        )
        .lacking("psync readers that slow as they add up: the drive's medians rise with N under both schedulers"),
    ]
}

fn fig6a_findings(mq: &Line, none: &Line) -> Vec<Finding> {
    let gap = max_abs(&gaps(mq, none, |p| p.p50_us)).max(max_abs(&gaps(mq, none, |p| p.p95_us)));
    vec![Finding::direction(
        "S001 §6.2 Fig 6a",
        "writers over zones: median and tail alike under both at every N (within 5%)",
        gap <= ALIKE_BAND,
        Some(gap * 100.0),
    )
    .lacking(
        "mq-deadline as cheap as on the drive for one or two psync writers, whose completion latencies the model \
         splits into two modes: its cost moves a median from one to the other",
    )]
}

fn fig6b_findings(mq: &Line, none: &Line) -> Vec<Finding> {
    let (m, z) = (at_max(mq), at_max(none));
    let obs = "S001 §6.2 Fig 6b";
    vec![
        Finding::direction(
            obs,
            "mq-deadline in one zone writes more at 14 outstanding than none's 14 threads",
            m.kiops > z.kiops,
            Some(m.kiops / z.kiops),
        ),
        Finding::number(
            obs,
            "mq-deadline's median write latency below none's at 14 outstanding",
            "%",
            72.74,
            lower_pct(z.p50_us, m.p50_us),
        ),
        Finding::number(
            obs,
            "mq-deadline's tail (p95) write latency below none's at 14 outstanding",
            "%",
            83.27,
            lower_pct(z.p95_us, m.p95_us),
        ),
    ]
}

fn figure(spec: &Spec, ns: &[u32], lines: &[(&Curve, Line)]) -> Figure {
    let xs: Vec<f64> = ns.iter().map(|&n| f64::from(n)).collect();
    let panel = |title: &str, label: &str, pick: fn(&Point) -> f64, col: usize| {
        let mut series = Vec::new();
        for (c, l) in lines {
            let ours = l.ours.iter().map(|(n, p)| (f64::from(*n), pick(p))).collect();
            series.push(Series::new(&format!("{} (zonelab)", c.scheduler), c.scheduler, ours));
            let drive = l.drive.iter().filter_map(|(n, v)| v[col].map(|v| (f64::from(*n), v))).collect();
            series.push(
                Series::new(&format!("{} (drive)", c.scheduler), c.scheduler, drive).dashed().marker(Marker::Square),
            );
        }
        Figure::Lines(Plot {
            title: title.into(),
            x: Axis::linear_at("outstanding I/Os (N)", &xs),
            y: Axis::linear(label),
            series,
        })
    };
    panel_pair(
        spec.title,
        panel("(a) median", "median completion latency (µs)", |p| p.p50_us, 1),
        panel("(b) tail", "p95 completion latency (µs)", |p| p.p95_us, 2),
    )
}

/// Fig 5a, 5b, 6a and 6b, in that order.
pub fn figures(scale: Scale, ran: &BTreeMap<Run, Point>) -> Result<Vec<Record>> {
    let ns = outstanding(scale);
    let mut out = Vec::new();
    for spec in SPECS {
        let lines: Vec<(&Curve, Line)> = spec.curves.iter().map(|c| (c, line(spec, c, &ns, ran))).collect();
        let mut rows = Vec::new();
        let mut jobs = Vec::new();
        for (c, l) in &lines {
            for ((n, p), (_, d)) in l.ours.iter().zip(&l.drive) {
                let mut row = vec![c.scheduler.to_string(), n.to_string()];
                row.extend([p.kiops, p.p50_us, p.p95_us].iter().map(|v| format!("{v:.2}")));
                row.extend(d.iter().map(|v| measured::field(*v)));
                rows.push(row);
                jobs.push((format!("{}-{}-n{n}.fio", spec.name, c.scheduler), p.job_file.clone()));
            }
        }
        let columns = [
            "scheduler",
            "n",
            "zonelab_kiops",
            "zonelab_p50_us",
            "zonelab_p95_us",
            "measured_kiops",
            "measured_p50_us",
            "measured_p95_us",
        ];
        out.push(Record {
            name: spec.name.into(),
            title: spec.title.into(),
            columns: columns.map(String::from).to_vec(),
            rows,
            findings: (spec.findings)(&lines[0].1, &lines[1].1),
            figure: figure(spec, &ns, &lines),
            jobs,
        });
    }
    Ok(out)
}
