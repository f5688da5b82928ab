//! The figures of `reproduce znsplus` have the paper's panels and series,
//! and the same results give the same files. Results are made up (each run
//! a little different) so the tests need no simulation.

use super::figures::moving_average;
use super::{plan, render, Output, RunSpec, Scale};
use crate::plot::{self, Figure};
use zonelab_device::ZnsPlusCounters;
use zonelab_fs::{CompactionRecord, Traffic};
use zonelab_workload::fsbench::FsBenchResult;

/// A made-up result for the `i`th run: numbers that differ from run to run.
fn made_up(i: usize, s: &RunSpec) -> FsBenchResult {
    let k = i as u64 + 1;
    let ms = 1_000_000;
    let phase = CompactionRecord {
        valid_blocks: 100 + k,
        init_ns: ms,
        read_ns: if s.recycling.in_storage_copy() { 0 } else { 5 * ms },
        write_ns: (3 + k % 4) * ms,
        checkpoint_ns: 2 * ms,
        ..Default::default()
    };
    FsBenchResult {
        workload: s.workload.name(),
        recycling: s.recycling.name(),
        threads: 4,
        ops: 100 * k,
        read_bytes: k << 20,
        write_bytes: (10 + k % 7) << 20,
        elapsed_ns: 1_000 * ms,
        traffic: Traffic { data_blocks: 2560, node_blocks: 300 + k, meta_blocks: 40, ..Default::default() },
        compactions: vec![phase; 3],
        tl_segments: k % 9,
        sc_segments: 3,
        znsplus: ZnsPlusCounters {
            copyback_blocks: 70 + k % 20,
            read_program_blocks: 30,
            plugged_blocks_background: k % 11,
            ..Default::default()
        },
        chip_utilization: 0.3 + (k % 5) as f64 / 10.0,
        // Runs of different length: the panels of Fig 10 must share one time axis.
        chip_utilization_series: (0..(60 + k % 13))
            .map(|j| (5 * ms + j * 100 * ms, (j * 7 + k) as f64 % 10.0 / 10.0))
            .collect(),
        ..Default::default()
    }
}

fn outputs() -> Vec<Output> {
    let specs = plan(Scale::QUICK);
    let results = specs.iter().enumerate().map(|(i, s)| made_up(i, s)).collect();
    render(Scale::QUICK, &specs, results)
}

fn find<'a>(outputs: &'a [Output], name: &str) -> &'a Output {
    outputs.iter().find(|o| o.name == name).unwrap_or_else(|| panic!("{name} among the outputs"))
}

/// Each panel's title and its series' names (a bar chart's: name@stack).
fn panels(figure: &Figure) -> Vec<(String, Vec<String>)> {
    let one = |f: &Figure| match f {
        Figure::Lines(p) => (p.title.clone(), p.series.iter().map(|s| s.name.clone()).collect()),
        Figure::Bars(b) => (
            b.title.clone(),
            b.series.iter().map(|s| format!("{}@{}", s.name, s.stack.clone().unwrap_or_default())).collect(),
        ),
        Figure::Panels(_) => panic!("panels within panels"),
    };
    match figure {
        Figure::Panels(p) => p.panels.iter().map(one).collect(),
        other => vec![one(other)],
    }
}

#[test]
fn every_figure_has_the_papers_panels_and_series() {
    let out = outputs();
    // The paper's order, each output named after its figure or table.
    let heads: Vec<&str> = out.iter().map(|o| o.name.split('_').next().unwrap()).collect();
    assert_eq!(heads, ["claims", "fig6", "table4", "fig7", "table5", "fig8", "fig9", "fig10", "fig11", "fig12"]);
    // Fig 6: one stacked bar per scheme, ZNS in four phases and IZC in three.
    let fig6 = &panels(&find(&out, "fig6_compaction_time").figure)[0].1;
    assert_eq!(fig6.iter().filter(|s| s.ends_with("@ZNS")).count(), 4, "{fig6:?}");
    assert_eq!(fig6.iter().filter(|s| s.ends_with("@IZC")).count(), 3, "{fig6:?}");
    let titled = |name: &str| -> Vec<(String, usize)> {
        panels(&find(&out, name).figure).into_iter().map(|(t, s)| (t, s.len())).collect()
    };
    let expect = |name: &str, want: &[(&str, usize)]| {
        let got = titled(name);
        let want: Vec<(String, usize)> = want.iter().map(|&(t, n)| (t.to_string(), n)).collect();
        assert_eq!(got, want, "{name}");
    };
    expect(
        "fig7_threaded_logging",
        &[("(a) throughput normalized to ZNS", 5), ("(b) node and metadata writes per user data written", 3)],
    );
    expect("fig8_utilization", &[("(a) throughput", 3), ("(b) write amplification", 3)]);
    expect("fig10_utilization_series", &[("ZNS", 2), ("IZC", 2), ("ZNS+", 2)]);
    // Fig 11b: copyback and read-and-program piled per scheme but ZNS.
    expect("fig11_copyback_allocation", &[("(a) bandwidth", 5), ("(b) in-storage copies by operation", 8)]);
    expect("fig12_pcie_lanes", &[("(a) bandwidth", 3), ("(b) chip utilization", 3)]);
    expect("table5_tl_bp", &[("(a) segments reclaimed by TL", 2), ("(b) copies done by BP", 2)]);
}

#[test]
fn fig10_panels_share_one_time_axis_and_fig11b_stacks_fill_100_percent() {
    let out = outputs();
    let Figure::Panels(fig10) = &find(&out, "fig10_utilization_series").figure else { panic!("Fig 10 has panels") };
    let ranges: Vec<Option<(f64, f64)>> = fig10
        .panels
        .iter()
        .map(|p| match p {
            Figure::Lines(l) => l.x.range,
            _ => panic!("Fig 10's panels are lines"),
        })
        .collect();
    assert!(ranges.iter().all(|r| r.is_some() && *r == ranges[0]), "{ranges:?}");
    let ends: Vec<f64> = fig10
        .panels
        .iter()
        .map(|p| match p {
            Figure::Lines(l) => l.series[0].points.last().unwrap().0,
            _ => unreachable!(),
        })
        .collect();
    let longest = ends.iter().copied().fold(0.0, f64::max);
    assert!(ends.iter().any(|&e| e < longest) && ranges[0].unwrap().1 >= longest, "{ends:?} {ranges:?}");
    let Figure::Panels(fig11) = &find(&out, "fig11_copyback_allocation").figure else { panic!("Fig 11 has panels") };
    let Figure::Bars(b) = &fig11.panels[1] else { panic!("Fig 11b is bars") };
    for pair in b.series.chunks(2) {
        assert_eq!(pair[0].stack, pair[1].stack);
        for (cb, rp) in pair[0].values.iter().zip(&pair[1].values) {
            assert!((cb + rp - 100.0).abs() < 1e-9, "{cb} + {rp}");
        }
    }
}

#[test]
fn the_same_results_give_the_same_files_and_the_svgs_name_their_panels() {
    let dir = std::env::temp_dir().join(format!("zonelab-znsplus-figures-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let draw = |out: &[Output], tag: &str| -> Vec<(String, String, String)> {
        out.iter()
            .map(|o| {
                let path = dir.join(format!("{}-{tag}.svg", o.name));
                plot::svg(&o.figure, &path).unwrap();
                (std::fs::read_to_string(&path).unwrap(), o.csv.clone(), o.table.clone())
            })
            .collect()
    };
    let (a, b) = (draw(&outputs(), "a"), draw(&outputs(), "b"));
    std::fs::remove_dir_all(&dir).ok();
    assert!(a == b, "the same results, the same SVG, CSV and tables");
    let svg = |name: &str| {
        let i = outputs().iter().position(|o| o.name == name).unwrap();
        a[i].0.clone()
    };
    for (name, texts) in [
        ("fig6_compaction_time", &["init", "host read", "host write", "checkpoint", "IZC (in-storage copy)"][..]),
        (
            "fig7_threaded_logging",
            &["(a) throughput normalized to ZNS", "(b) node and metadata writes per user data written"],
        ),
        ("fig8_utilization", &["(a) throughput", "(b) write amplification", "WAF"]),
        ("fig10_utilization_series", &["ZNS", "IZC", "ZNS+", "5 s moving average", "100 ms interval"]),
        ("fig11_copyback_allocation", &["(a) bandwidth", "(b) in-storage copies by operation", "copyback (cpbk)"]),
        ("fig12_pcie_lanes", &["(a) bandwidth", "(b) chip utilization"]),
    ] {
        let svg = svg(name);
        let drawn: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| t.split('>').nth(1))
            .map(|t| t.trim_end_matches("</text").trim())
            .collect();
        for t in texts {
            assert!(drawn.contains(t), "{name}.svg lacks {t}: {drawn:?}");
        }
    }
}

#[test]
fn each_figure_lists_its_claims_and_the_claims_table_lists_all() {
    let out = outputs();
    let claims = &out[0];
    let rows = claims.csv.lines().count() - 1;
    assert!(rows >= 25, "{}", claims.csv);
    // Every claim sits under exactly one figure's table too.
    let under: usize = out[1..]
        .iter()
        .filter_map(|o| o.table.split("The paper's claims here").nth(1))
        .map(|section| section.lines().filter(|l| l.starts_with("| ")).count() - 1)
        .sum();
    assert_eq!(under, rows, "{}", out.iter().map(|o| o.table.as_str()).collect::<Vec<_>>().join("\n-----\n"));
    let fig7 = &find(&out, "fig7_threaded_logging").table;
    assert!(fig7.contains("ZNS+ outperforms IZC") && fig7.contains("cuts node and metadata traffic by 48%"), "{fig7}");
    assert!(!find(&out, "fig10_utilization_series").table.contains("Fig 11"));
}

#[test]
fn the_moving_average_is_the_mean_of_the_points_within_the_window() {
    // A step from 0 to 1 at 10 s, a point per second.
    let pts: Vec<(f64, f64)> = (0..20).map(|t| (f64::from(t), if t < 10 { 0.0 } else { 1.0 })).collect();
    let avg = moving_average(&pts, 5.0);
    assert_eq!(avg.len(), pts.len());
    // At 9 s the window is 6.5 ..= 11.5 s: 7, 8, 9 at 0, 10, 11 at 1.
    assert!((avg[9].1 - 0.4).abs() < 1e-12, "{:?}", avg[9]);
    assert_eq!((avg[0].1, avg[19].1), (0.0, 1.0));
    assert!(moving_average(&[], 5.0).is_empty());
}
