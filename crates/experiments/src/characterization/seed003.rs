//! Seed 003 (ConfZNS++): finish interference (Fig. 2). The remedies, ZINC
//! and softFinish, are in `seed003_remedies`.

use super::fio_runs::{self as fio, FINISH};
use super::seed000::{PROGRAM_FIT, READ_FIT};
use super::{Finding, Outcome, Scale};
use crate::error::Result;
use crate::plot::{Axis, Figure, Marker, Plot, Series};
use zonelab_workload::fio::job::Scheduler;

/// Management in the background of a foreground run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Background {
    None,
    /// Finish at about half the peak finish rate: think as long as a finish takes.
    Finish,
}

/// Think time between management operations for ~50% intensity: about
/// one near-empty zone's finish time (seed 003 measures peak finish rate
/// as ~1 per second).
const THINK_50: &str = "1s";

/// What the reads' rate and p95 under a finish's padding lack when off.
const SUSPEND_COSTS: &str = "suspend costs fitted to reads under padding (the model's 25 µs suspend and 25 µs \
    resume are not fitted; its loop length and 16 reads per program are)";

/// Why saturated writers' p95 at CL 7 is off beside finishes.
const WRITE_TAIL_RISE: &str = "a rise of the write tail beside finishes (alone at CL 7 it is the drive's: 86.5 µs, \
    where the text's 20.7% rise puts the drive's at 84.4): beside the padding the model's writers lose rate (CL 5 and \
    6: 140 and 142 K/s against 146 alone) and so wait less for room, and their p95 does not rise (CL 5, 6 and 7: 71, \
    79 and 87 µs alone, 66, 69 and 87 beside finishes), where the drive's rises by a quarter (ConfZNS++ C2 Fig 4a at \
    CL 6: 84.5 µs alone, 106 beside finishes)";

/// (KIOPS, p95 µs) of the foreground at concurrency `cl`.
fn finish_point(rw: &str, cl: u32, background: Background, scale: Scale) -> Result<(f64, f64)> {
    let read = rw == "randread";
    let runtime = if scale.quick { "2s" } else { "6s" };
    let vars = [
        ("RW", rw.to_string()),
        ("QD", if read { cl } else { 1 }.to_string()),
        ("THREADS", if read { 1 } else { cl }.to_string()),
        ("SIZE", if read { "4z" } else { "1z" }.to_string()),
        ("RUNTIME", runtime.to_string()),
        ("FINISH", u8::from(background == Background::Finish).to_string()),
        ("SOFTFINISH", "0".to_string()),
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
pub fn finish_interference(scale: Scale) -> Result<Outcome> {
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
        Finding::number("S003 setup", "8 KiB writes, CL 3, no finish", "KIOPS", 149.3, w3.0).fitted(PROGRAM_FIT),
        Finding::number("S003 setup", "8 KiB writes, CL 3, no finish, p95", "µs", 25.7, w3.1)
            .lacking("firmware service-time variation: at CL 3 the firmware sets the pace, and only flash times vary in the model, so its p95 stays at the mode")
            .fitted("controller.unit_commit_ns (three QD-1 writers' p95)"),
        Finding::direction(
            "S003 Obs 1",
            "no write interference up to the saturation point (CL <= 3, p95 within 5%)",
            low_cl_clean,
            Some((w3f.1 / w3.1 - 1.0) * 100.0),
        )
        .lacking("a finish that leaves writers below saturation alone, as the text has it; the measured data disagree (ConfZNS++ C2 Fig 4a: at CL 3 the drive's p95 rises from 30 to 64 µs and its rate falls from 150 to 113 K/s with finish at 50%), and the model follows the data: padding takes a zone's turn of the flash, so its writers lose rate and their p95 rises"),
        Finding::number("S003 Obs 2", "8 KiB writes, CL 7, finish 50%", "KIOPS", 150.0, w7f.0)
            .lacking("a finish that takes nothing from saturated writers, as the text's 150 K/s has it; the measured data disagree (ConfZNS++ C2 Fig 4a: 126-129 K/s at CL 5-6 beside finishes at 50% intensity, 150 K/s without), and the model follows the data: padding takes one zone's turn of the flash")
            .fitted(PROGRAM_FIT),
        Finding::number("S003 Obs 2", "8 KiB writes, CL 7, finish 50%, p95", "µs", 101.9, w7f.1)
            .lacking(WRITE_TAIL_RISE),
        Finding::number("S003 Obs 2", "p95 rise at CL 7 from finish 50%", "%", 20.7, (w7f.1 / w7.1 - 1.0) * 100.0)
            .lacking(WRITE_TAIL_RISE),
        Finding::number("S003 Obs 3", "random 8 KiB reads, CL 1, no finish", "KIOPS", 11.3, r1.0).fitted(READ_FIT),
        Finding::number("S003 Obs 3", "random reads, CL 1, no finish, p95", "µs", 95.7, r1.1).fitted(READ_FIT),
        Finding::number("S003 Obs 3", "random reads, CL 1, finish 50%", "KIOPS", 7.8, r1f.0)
            .lacking(SUSPEND_COSTS)
            .fitted("flash_timing.suspend.per_op_max"),
        Finding::number("S003 Obs 3", "random reads, CL 1, finish 50%, p95", "µs", 272.4, r1f.1)
            .lacking(SUSPEND_COSTS)
            .fitted("flash_timing.suspend.step_ns (reads' p95 under a finish's padding)"),
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
