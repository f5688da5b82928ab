//! Seed 003 (ConfZNS++): finish and reset interference, ZINC and softFinish.

use super::fio_runs::{self as fio, FINISH, RESET};
use super::{Finding, Outcome, Scale};
use crate::plot::{Axis, BarSeries, Bars, Figure, Marker, Plot, Series};
use zonelab_workload::fio::job::Scheduler;

/// Management in the background of a foreground run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Background {
    None,
    /// Finish at about half the peak finish rate: think as long as a finish takes.
    Finish,
    SoftFinish,
}

/// Think time between management operations for ~50% intensity: about
/// one near-empty zone's finish time (seed 003 measures peak finish rate
/// as ~1 per second).
const THINK_50: &str = "1s";

/// (KIOPS, p95 µs) of the foreground at concurrency `cl`.
fn finish_point(rw: &str, cl: u32, background: Background, scale: Scale) -> Result<(f64, f64), String> {
    let read = rw == "randread";
    let runtime = if scale.quick { "2s" } else { "6s" };
    let vars = [
        ("RW", rw.to_string()),
        ("QD", if read { cl } else { 1 }.to_string()),
        ("THREADS", if read { 1 } else { cl }.to_string()),
        ("SIZE", if read { "4z" } else { "1z" }.to_string()),
        ("RUNTIME", runtime.to_string()),
        ("FINISH", u8::from(background == Background::Finish).to_string()),
        ("SOFTFINISH", u8::from(background == Background::SoftFinish).to_string()),
        ("CHUNK", "128k".to_string()),
        ("THINK", THINK_50.to_string()),
    ];
    let mut text = fio::substitute(FINISH.1, &vars)?;
    if background == Background::None {
        text = fio::drop_section(&text, "finish");
    }
    if !read {
        text = fio::drop_section(&text, "prefill");
    }
    let r = fio::run_text(FINISH.0, &text, Scheduler::None)?;
    let s = r.entry("foreground")?;
    let dir = if read { fio::read(s) } else { fio::write(s) };
    Ok((fio::kiops(dir), fio::percentile_us(dir, 95.0)))
}

/// Finish interference on writes and reads, by concurrency and finish intensity.
pub fn finish_interference(scale: Scale) -> Result<Outcome, String> {
    let write_cls: &[u32] = if scale.quick { &[1, 3, 7] } else { &[1, 2, 3, 4, 5, 6, 7] };
    let read_cls: &[u32] = if scale.quick { &[1, 8] } else { &[1, 2, 4, 8, 16, 32] };
    let mut rows = Vec::new();
    let mut panels = Vec::new();
    let mut points = std::collections::BTreeMap::new();
    for (panel, rw, cls) in [("(a) 8 KiB writes", "write", write_cls), ("(b) 8 KiB random reads", "randread", read_cls)]
    {
        let mut series = Vec::new();
        for (label, bg) in [("0%", Background::None), ("50%", Background::Finish)] {
            let mut line = Vec::new();
            for &cl in cls {
                let (kiops, p95) = finish_point(rw, cl, bg, scale)?;
                rows.push(vec![rw.into(), label.into(), cl.to_string(), format!("{kiops:.2}"), format!("{p95:.1}")]);
                line.push((kiops, p95));
                points.insert((rw, label, cl), (kiops, p95));
            }
            let line = line.iter().map(|p| (p.0, p.1)).collect();
            series.push(if bg == Background::None {
                // The concurrency levels named on one line, as the paper does.
                let cl = cls.iter().enumerate().map(|(i, c)| if i == 0 { format!("CL {c}") } else { c.to_string() });
                let cl = cl.collect();
                Series::new("finish 0% (none)", "none", line).labels(cl)
            } else {
                Series::new(&format!("finish {label}"), "finish", line).marker(Marker::Triangle)
            });
        }
        panels.push(Figure::Lines(Plot {
            title: panel.into(),
            x: Axis::linear("throughput (KIOPS)"),
            // Read latency spans orders of magnitude between the lines.
            y: if rw == "randread" { Axis::log10("p95 latency (µs)") } else { Axis::linear("p95 latency (µs)") },
            series,
        }));
    }
    let at = |rw, label, cl| points.get(&(rw, label, cl)).copied().unwrap_or_default();
    let (w3, w3f) = (at("write", "0%", 3), at("write", "50%", 3));
    let (w7, w7f) = (at("write", "0%", 7), at("write", "50%", 7));
    let (r1, r1f) = (at("randread", "0%", 1), at("randread", "50%", 1));
    let low_cl_clean = write_cls.iter().filter(|&&c| c <= 3).all(|&c| {
        let (a, b) = (at("write", "0%", c), at("write", "50%", c));
        (b.1 / a.1 - 1.0).abs() <= 0.05
    });
    let findings = vec![
        Finding::number("S003 setup", "8 KiB writes, CL 3, no finish", "KIOPS", 149.3, w3.0),
        Finding::number("S003 setup", "8 KiB writes, CL 3, no finish, p95", "µs", 25.7, w3.1),
        Finding::direction(
            "S003 Obs 1",
            "no write interference up to the saturation point (CL <= 3, p95 within 5%)",
            low_cl_clean,
            Some((w3f.1 / w3.1 - 1.0) * 100.0),
        ),
        Finding::number("S003 Obs 2", "8 KiB writes, CL 7, finish 50%", "KIOPS", 150.0, w7f.0),
        Finding::number("S003 Obs 2", "8 KiB writes, CL 7, finish 50%, p95", "µs", 101.9, w7f.1),
        Finding::number("S003 Obs 2", "p95 rise at CL 7 from finish 50%", "%", 20.7, (w7f.1 / w7.1 - 1.0) * 100.0),
        Finding::number("S003 Obs 3", "random 8 KiB reads, CL 1, no finish", "KIOPS", 11.3, r1.0),
        Finding::number("S003 Obs 3", "random reads, CL 1, no finish, p95", "µs", 95.7, r1.1),
        Finding::number("S003 Obs 3", "random reads, CL 1, finish 50%", "KIOPS", 7.8, r1f.0),
        Finding::number("S003 Obs 3", "random reads, CL 1, finish 50%, p95", "µs", 272.4, r1f.1),
    ];
    Ok(Outcome {
        name: "s003-finish-interference",
        title: "Finish interference on writes and reads (seed 003 Fig. 2)",
        columns: vec!["op", "finish_intensity", "concurrency", "kiops", "p95_us"],
        rows,
        findings,
        figure: Figure::panels(
            "Finish interference on writes and reads, by concurrency level (seed 003 Fig. 2)",
            2,
            (520, 400),
            panels,
        ),
        jobs: vec![FINISH],
    })
}

/// Writers' (KIOPS, p95 µs) with resets every `think` (None: no resets).
fn reset_point(scheduler: Scheduler, think: Option<&str>, scale: Scale) -> Result<(f64, f64), String> {
    let zones = if scale.quick { 6 } else { 20 };
    let vars = [
        ("FULL_ZONES", zones.to_string()),
        ("FILL", format!("{}m", zones * 1077)),
        ("QD", "4".to_string()),
        ("THREADS", "4".to_string()),
        ("RUNTIME", if scale.quick { "1s" } else { "3s" }.to_string()),
        ("THINK", think.unwrap_or("0").to_string()),
    ];
    let mut text = fio::substitute(RESET.1, &vars)?;
    if think.is_none() {
        text = fio::drop_section(&text, "resets");
    }
    let r = fio::run_text(RESET.0, &text, scheduler)?;
    let w = fio::write(r.entry("writers")?);
    Ok((fio::kiops(w), fio::percentile_us(w, 95.0)))
}

/// ZINC against mq-deadline under resets.
pub fn zinc(scale: Scale) -> Result<Outcome, String> {
    let think = Some("50ms");
    let base = reset_point(Scheduler::MqDeadline, None, scale)?;
    let deadline = reset_point(Scheduler::MqDeadline, think, scale)?;
    let zinc = reset_point(Scheduler::Zinc, think, scale)?;
    let rows = vec![
        vec!["mq-deadline, no resets".into(), format!("{:.2}", base.0), format!("{:.1}", base.1)],
        vec!["mq-deadline, resets".into(), format!("{:.2}", deadline.0), format!("{:.1}", deadline.1)],
        vec!["zinc, resets".into(), format!("{:.2}", zinc.0), format!("{:.1}", zinc.1)],
    ];
    let findings = interference_cut("ZINC", "reset", "write", base, deadline, zinc);
    Ok(Outcome {
        name: "s003-zinc",
        title: "ZINC against reset interference (seed 003)",
        columns: vec!["scheduler", "write_kiops", "write_p95_us"],
        rows,
        findings,
        figure: cases_figure(
            "ZINC against reset interference on 4 writers at QD 4 (seed 003)",
            "write",
            &[("no resets", "none"), ("resets, mq-deadline", "mq-deadline"), ("resets, ZINC", "zinc")],
            &[base, deadline, zinc],
        ),
        jobs: vec![RESET],
    })
}

/// softFinish against finish, on random reads at CL 1.
pub fn softfinish(scale: Scale) -> Result<Outcome, String> {
    let base = finish_point("randread", 1, Background::None, scale)?;
    let finish = finish_point("randread", 1, Background::Finish, scale)?;
    let soft = finish_point("randread", 1, Background::SoftFinish, scale)?;
    let rows = vec![
        vec!["none".into(), format!("{:.2}", base.0), format!("{:.1}", base.1)],
        vec!["finish".into(), format!("{:.2}", finish.0), format!("{:.1}", finish.1)],
        vec!["softfinish 128k".into(), format!("{:.2}", soft.0), format!("{:.1}", soft.1)],
    ];
    let findings = interference_cut("softFinish", "finish", "read", base, finish, soft);
    Ok(Outcome {
        name: "s003-softfinish",
        title: "softFinish against finish (seed 003)",
        columns: vec!["background", "read_kiops", "read_p95_us"],
        rows,
        findings,
        figure: cases_figure(
            "softFinish against finish, random 8 KiB reads at CL 1 (seed 003)",
            "read",
            &[("no finish", "none"), ("finish 50%", "finish"), ("softFinish 50%", "softfinish")],
            &[base, finish, soft],
        ),
        jobs: vec![FINISH],
    })
}

/// Throughput and p95 latency of the foreground `io` in each case (label, colour key), a bar each.
fn cases_figure(title: &str, io: &str, cases: &[(&str, &str)], values: &[(f64, f64)]) -> Figure {
    let panel = |title: &str, y: &str, value: fn(&(f64, f64)) -> f64| {
        let series = cases.iter().enumerate().map(|(i, &(name, key))| {
            let v = (0..cases.len()).map(|j| if i == j { value(&values[i]) } else { 0.0 }).collect();
            BarSeries::new(name, key, v).stack("case")
        });
        Figure::Bars(Bars {
            title: title.into(),
            x_label: String::new(),
            y: Axis::linear(y),
            categories: cases.iter().map(|c| c.0.to_string()).collect(),
            series: series.collect(),
        })
    };
    Figure::panels(
        title,
        2,
        (460, 380),
        vec![
            panel(&format!("(a) {io} throughput"), "KIOPS", |v| v.0),
            panel(&format!("(b) {io} p95 latency"), "p95 latency (µs)", |v| v.1),
        ],
    )
}

/// Interference as the foreground's lost throughput (KIOPS) against `base`,
/// and how much of it the remedy takes away (seed 003's abstract: ZINC cuts
/// reset interference by 56.9%, softFinish finish interference by 50.7%).
fn interference_cut(
    remedy: &str,
    management: &str,
    io: &str,
    base: (f64, f64),
    plain: (f64, f64),
    remedied: (f64, f64),
) -> Vec<Finding> {
    let paper = if remedy == "ZINC" { 56.9 } else { 50.7 };
    let lost = base.0 - plain.0;
    let quantity = format!("{remedy} cut of {management} interference ({io} KIOPS lost)");
    let shows = format!("{management} costs {io} throughput without {remedy}");
    if lost <= base.0 * 0.01 {
        return vec![
            Finding::direction("S003", &shows, false, Some(lost)),
            Finding::missing("S003 abstract", &quantity, &format!("{management} interference on {io}s to cut")),
        ];
    }
    let cut = (1.0 - (base.0 - remedied.0) / lost) * 100.0;
    vec![
        Finding::direction("S003", &shows, true, Some(lost)),
        Finding::number("S003 abstract", &quantity, "%", paper, cut),
    ]
}
