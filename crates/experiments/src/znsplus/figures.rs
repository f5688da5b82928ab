//! The figures and tables of seed 002 §4: which runs each needs, and its
//! CSV, plot and paper-vs-zonelab table.

use super::{claims, run_all, RunSpec, Scale};
use crate::plot::{csv_text, Axis, BarSeries, Bars, Figure, Marker, Plot, Series};
use std::collections::HashMap;
use std::fmt::Write;
use zonelab_device::Plugging;
use zonelab_fs::Recycling;
use zonelab_workload::fsbench::{FsBenchResult, FsWorkload};

/// One figure or table: file stem, CSV, the plot to draw, and a markdown table against the paper.
pub struct Output {
    /// File stem of the CSV and plots, e.g. `fig6`.
    pub name: &'static str,
    /// The figure's data as CSV.
    pub csv: String,
    /// The plot, drawn as SVG and PNG.
    pub figure: Figure,
    /// Paper-vs-zonelab table in markdown.
    pub table: String,
}

/// Grouped bars, a value per category in each series.
pub(super) fn bars(title: &str, x_label: &str, y: Axis, categories: &[String], series: Vec<BarSeries>) -> Figure {
    Figure::Bars(Bars { title: title.into(), x_label: x_label.into(), y, categories: categories.to_vec(), series })
}

/// A scheme's bars, in its colour.
pub(super) fn scheme(label: &str, values: Vec<f64>) -> BarSeries {
    BarSeries::new(label, label, values)
}

/// The variants of Fig 7 and 9.
#[derive(Clone, Copy)]
pub(super) struct Variant {
    label: &'static str,
    recycling: Recycling,
    copyback: bool,
    copyback_aware: bool,
    plugging: Plugging,
}

pub(super) const ZNS: Variant =
    Variant { label: "ZNS", recycling: Recycling::Zns, copyback: true, copyback_aware: true, plugging: Plugging::Ppa };
pub(super) const IZC: Variant = Variant { label: "IZC", recycling: Recycling::IzcH, ..ZNS };
pub(super) const IZC_D: Variant = Variant { label: "IZC-D", recycling: Recycling::IzcD, ..ZNS };
pub(super) const IZC_NOCB: Variant = Variant { label: "IZC (w/o cpbk)", copyback: false, ..IZC };
pub(super) const IZC_CUB: Variant = Variant { label: "IZC-CUB", copyback_aware: false, ..IZC };
pub(super) const ZP: Variant = Variant { label: "ZNS+", recycling: Recycling::ZnsPlus, ..ZNS };
pub(super) const ZP_NOCB: Variant = Variant { label: "ZNS+ (w/o cpbk)", copyback: false, ..ZP };
pub(super) const ZP_LP: Variant = Variant { label: "ZNS+(LP)", plugging: Plugging::Lba, ..ZP };
pub(super) const ZP_CUB: Variant = Variant { label: "ZNS+-CUB", copyback_aware: false, ..ZP };

pub(super) const MEDIA: [&str; 3] = ["tlc", "mlc", "znand"];
pub(super) const UTILIZATIONS: [f64; 4] = [0.6, 0.7, 0.8, 0.9];
pub(super) const CHIPS: [u32; 4] = [4, 8, 16, 32];
pub(super) const LANES_CHIPS: [(u32, u32); 3] = [(1, 8), (2, 16), (4, 32)];
/// Seed 002 §4.1: copyback's share of IZC's copies per workload (fileserver, varmail, tpcc, YCSB-a, YCSB-f).
pub(super) const PAPER_COPYBACK_PERCENT: [f64; 5] = [87.0, 74.0, 81.0, 83.0, 83.0];
/// Seed 002 Table 4 (MB/s): rows TLC, MLC, ZNAND; columns ZNS, IZC-H, IZC-D.
pub(super) const PAPER_TABLE4_MB_S: [[f64; 3]; 3] = [[79.5, 113.4, 96.5], [84.5, 154.6, 148.0], [104.0, 218.9, 242.4]];

/// The results of a plan's runs, by spec.
pub(super) struct Runs {
    scale: Scale,
    results: HashMap<String, FsBenchResult>,
}

fn spec(scale: Scale, w: FsWorkload, v: Variant) -> RunSpec {
    let mut s = RunSpec::new(w, v.recycling, scale);
    s.copyback = v.copyback;
    s.copyback_aware = v.copyback_aware;
    s.plugging = v.plugging;
    s
}

/// Fileserver on `chips` chips and `lanes` lanes; the file system keeps
/// 64 to 512 zones (zones grow with the chips: 2 MiB per chip), so at paper
/// scale 4 and 8 chips run 4 and 8 GiB: a checkpoint of more segments would
/// not fit its zone.
fn hw_spec(scale: Scale, chips: u32, lanes: u32, v: Variant) -> RunSpec {
    let base = spec(scale, FsWorkload::Fileserver, v);
    let zone_bytes = u64::from(chips) * 2 * 1024 * 1024;
    let fs_bytes = base.fs_bytes.min(512 * zone_bytes).max(64 * zone_bytes);
    let write_bytes = (fs_bytes as f64 * scale.write_per_fs) as u64;
    RunSpec { chips, lanes, fs_bytes, write_bytes, ..base }
}

fn key(s: &RunSpec) -> String {
    format!("{s:?}")
}

impl Runs {
    fn get(&self, s: &RunSpec) -> &FsBenchResult {
        &self.results[&key(s)]
    }
    pub(super) fn base(&self, w: FsWorkload, v: Variant) -> &FsBenchResult {
        self.get(&spec(self.scale, w, v))
    }
    pub(super) fn medium(&self, m: &'static str, v: Variant) -> &FsBenchResult {
        self.get(&RunSpec { medium: m, ..spec(self.scale, FsWorkload::Fileserver, v) })
    }
    pub(super) fn util(&self, u: f64, v: Variant) -> &FsBenchResult {
        self.get(&RunSpec { utilization: u, ..spec(self.scale, FsWorkload::Fileserver, v) })
    }
    pub(super) fn hw(&self, chips: u32, lanes: u32, v: Variant) -> &FsBenchResult {
        self.get(&hw_spec(self.scale, chips, lanes, v))
    }
}

/// Every run the figures need, without duplicates.
pub fn plan(scale: Scale) -> Vec<RunSpec> {
    let mut specs = Vec::new();
    for w in FsWorkload::ALL {
        for v in [ZNS, IZC, IZC_NOCB, ZP, ZP_NOCB, ZP_LP] {
            specs.push(spec(scale, w, v));
        }
    }
    let fileserver = |v| spec(scale, FsWorkload::Fileserver, v);
    for m in MEDIA {
        for v in [ZNS, IZC, IZC_D] {
            specs.push(RunSpec { medium: m, ..fileserver(v) });
        }
    }
    for u in UTILIZATIONS {
        for v in [ZNS, IZC, ZP] {
            specs.push(RunSpec { utilization: u, ..fileserver(v) });
        }
    }
    for chips in CHIPS {
        for v in [ZNS, IZC, IZC_CUB, ZP, ZP_CUB] {
            specs.push(hw_spec(scale, chips, 2, v));
        }
    }
    for (lanes, chips) in LANES_CHIPS {
        for v in [ZNS, IZC, ZP] {
            specs.push(hw_spec(scale, chips, lanes, v));
        }
    }
    let mut seen = std::collections::HashSet::new();
    specs.retain(|s| seen.insert(key(s)));
    specs
}

/// Runs everything on `workers` threads and renders each figure and table.
pub fn reproduce(scale: Scale, workers: usize, progress: &(dyn Fn(usize, usize) + Sync)) -> crate::Result<Vec<Output>> {
    let specs = plan(scale);
    let n = specs.len();
    let results = run_all(&specs, workers, &|i, _| progress(i, n))?;
    Ok(render(scale, &specs, results))
}

/// Each figure and table from the results of [`plan`]'s runs (same order).
pub fn render(scale: Scale, specs: &[RunSpec], results: Vec<FsBenchResult>) -> Vec<Output> {
    let runs = Runs { scale, results: specs.iter().map(key).zip(results).collect() };
    let claims = claims::check(&runs);
    let mut outputs = vec![
        fig6(&runs),
        table4(&runs),
        fig7(&runs),
        table5(&runs),
        fig8(&runs),
        fig9(&runs),
        fig10(&runs),
        fig11(&runs),
        fig12(&runs),
    ];
    for o in &mut outputs {
        o.table.push_str(&claims::section(&claims, o.name));
    }
    outputs.insert(0, claims::output(&claims));
    outputs
}

fn names() -> Vec<String> {
    FsWorkload::ALL.iter().map(|w| w.name().to_string()).collect()
}

pub(super) fn mean_ms(r: &FsBenchResult, phase: impl Fn(&zonelab_fs::CompactionRecord) -> u64) -> f64 {
    let fg: Vec<_> = r.compactions.iter().filter(|c| !c.background).collect();
    fg.iter().map(|c| phase(c) as f64).sum::<f64>() / fg.len().max(1) as f64 / 1e6
}

pub(super) fn total_ms(r: &FsBenchResult) -> f64 {
    mean_ms(r, |c| c.init_ns + c.read_ns + c.write_ns + c.checkpoint_ns)
}

pub(super) fn range(v: &[f64]) -> String {
    let (lo, hi) =
        (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
    format!("{lo:.2}-{hi:.2}")
}

fn fig6(r: &Runs) -> Output {
    let header = [
        "workload",
        "scheme",
        "compactions",
        "valid_blocks",
        "init_ms",
        "read_ms",
        "write_ms",
        "checkpoint_ms",
        "total_ms",
        "copyback_ratio",
    ];
    let mut rows = Vec::new();
    let mut table = String::from("| workload | ZNS ms | IZC ms | cut (zonelab) | cut (paper) | copyback share (zonelab) | copyback share (paper) |\n|---|---|---|---|---|---|---|\n");
    // Phases per scheme, stacked in order: ZNS copies through the host (read, write),
    // IZC in the device (its reads are zero; its writes are the zone_compaction commands).
    let (mut zns, mut izc) = (vec![vec![]; 4], vec![vec![]; 3]);
    for (i, w) in FsWorkload::ALL.into_iter().enumerate() {
        for v in [ZNS, IZC] {
            let x = r.base(w, v);
            let valid = x.compactions.iter().map(|c| c.valid_blocks).sum::<u64>() / x.compactions.len().max(1) as u64;
            let phases = [
                mean_ms(x, |c| c.init_ns),
                mean_ms(x, |c| c.read_ns),
                mean_ms(x, |c| c.write_ns),
                mean_ms(x, |c| c.checkpoint_ns),
            ];
            rows.push(vec![
                w.name().to_string(),
                v.label.to_string(),
                x.compactions.len().to_string(),
                valid.to_string(),
                format!("{:.3}", phases[0]),
                format!("{:.3}", phases[1]),
                format!("{:.3}", phases[2]),
                format!("{:.3}", phases[3]),
                format!("{:.3}", total_ms(x)),
                format!("{:.3}", x.copyback_ratio()),
            ]);
            if v.label == "ZNS" {
                phases.iter().zip(&mut zns).for_each(|(p, s)| s.push(*p));
            } else {
                [phases[0], phases[1] + phases[2], phases[3]].iter().zip(&mut izc).for_each(|(p, s)| s.push(*p));
            }
        }
        let (z, c) = (total_ms(r.base(w, ZNS)), total_ms(r.base(w, IZC)));
        let _ = writeln!(
            table,
            "| {} | {z:.1} | {c:.1} | {:.1}% | 28.2-51.7% | {:.0}% | {}% |",
            w.name(),
            (1.0 - c / z.max(1e-9)) * 100.0,
            r.base(w, IZC).copyback_ratio() * 100.0,
            PAPER_COPYBACK_PERCENT[i]
        );
    }
    let [z_init, z_read, z_write, z_cp] = <[Vec<f64>; 4]>::try_from(zns).expect("four phases");
    let [i_init, i_copy, i_cp] = <[Vec<f64>; 3]>::try_from(izc).expect("three phases");
    let series = vec![
        BarSeries::new("init", "init", z_init).stack("ZNS"),
        BarSeries::new("host read", "read", z_read).stack("ZNS"),
        BarSeries::new("host write", "write", z_write).stack("ZNS"),
        BarSeries::new("checkpoint", "checkpoint", z_cp).stack("ZNS"),
        BarSeries::new("init", "init", i_init).stack("IZC"),
        BarSeries::new("IZC (in-storage copy)", "IZC", i_copy).stack("IZC"),
        BarSeries::new("checkpoint", "checkpoint", i_cp).stack("IZC"),
    ];
    let figure = bars(
        "Fig 6: mean segment compaction time by phase, ZNS and IZC",
        "workload",
        Axis::linear("compaction time (ms)"),
        &names(),
        series,
    );
    Output { name: "fig6_compaction_time", csv: csv_text(&header, &rows), figure, table }
}

fn table4(r: &Runs) -> Output {
    let mut rows = Vec::new();
    let mut table = String::from("| medium | ZNS MB/s | IZC-H MB/s (×) | IZC-D MB/s (×) | paper IZC-H × | paper IZC-D × |\n|---|---|---|---|---|---|\n");
    let labels = ["ZNS", "IZC-H", "IZC-D"];
    let mut series: Vec<Vec<f64>> = vec![vec![]; 3];
    for (m, p) in MEDIA.iter().zip(PAPER_TABLE4_MB_S) {
        let bw: Vec<f64> = [ZNS, IZC, IZC_D].iter().map(|&v| r.medium(m, v).throughput_mb_s()).collect();
        for (k, label) in labels.iter().enumerate() {
            rows.push(vec![m.to_string(), label.to_string(), format!("{:.2}", bw[k]), format!("{:.3}", bw[k] / bw[0])]);
            series[k].push(bw[k]);
        }
        let _ = writeln!(
            table,
            "| {m} | {:.1} | {:.1} ({:.2}×) | {:.1} ({:.2}×) | {:.2}× | {:.2}× |",
            bw[0],
            bw[1],
            bw[1] / bw[0],
            bw[2],
            bw[2] / bw[0],
            p[1] / p[0],
            p[2] / p[0]
        );
    }
    let order = |m: &'static str| {
        let (h, d) = (r.medium(m, IZC).throughput_mb_s(), r.medium(m, IZC_D).throughput_mb_s());
        if h > d {
            "IZC-H > IZC-D"
        } else {
            "IZC-D ≥ IZC-H"
        }
    };
    let _ = writeln!(
        table,
        "\nOrdering: paper TLC IZC-H > IZC-D, ZNAND IZC-D > IZC-H; zonelab TLC {}, ZNAND {}.",
        order("tlc"),
        order("znand")
    );
    let series = labels.iter().zip(series).map(|(l, v)| scheme(l, v)).collect();
    let media: Vec<String> = MEDIA.iter().map(|m| m.to_uppercase()).collect();
    let figure =
        bars("Table 4: fileserver bandwidth by flash medium", "flash medium", Axis::linear("MB/s"), &media, series);
    Output { name: "table4_media", csv: csv_text(&["medium", "scheme", "mb_s", "vs_zns"], &rows), figure, table }
}

fn fig7(r: &Runs) -> Output {
    let variants = [ZNS, IZC_NOCB, IZC, ZP_NOCB, ZP];
    let mut rows = Vec::new();
    let mut series: Vec<Vec<f64>> = vec![vec![]; variants.len()];
    let mut meta: Vec<Vec<f64>> = vec![vec![]; 3];
    let (mut izc, mut zp) = (vec![], vec![]);
    for w in FsWorkload::ALL {
        let zns = r.base(w, ZNS).throughput_mb_s();
        for (k, &v) in variants.iter().enumerate() {
            let x = r.base(w, v);
            rows.push(vec![
                w.name().to_string(),
                v.label.to_string(),
                format!("{:.2}", x.throughput_mb_s()),
                format!("{:.3}", x.throughput_mb_s() / zns),
                format!("{:.4}", x.metadata_overhead()),
                format!("{:.3}", x.waf()),
            ]);
            series[k].push(x.throughput_mb_s() / zns);
        }
        for (k, v) in [ZNS, IZC, ZP].into_iter().enumerate() {
            meta[k].push(r.base(w, v).metadata_overhead() * 100.0);
        }
        izc.push(r.base(w, IZC).throughput_mb_s() / zns);
        zp.push(r.base(w, ZP).throughput_mb_s() / zns);
    }
    let overhead = |v| r.base(FsWorkload::Varmail, v).metadata_overhead();
    let table = format!(
        "| result | paper | zonelab |\n|---|---|---|\n| IZC over ZNS | 1.21-1.77× | {}× |\n| ZNS+ over ZNS | 1.33-2.91× | {}× |\n| node + metadata traffic, ZNS+ vs IZC, varmail | -48% | {:+.0}% |\n",
        range(&izc),
        range(&zp),
        (overhead(ZP) / overhead(IZC).max(1e-9) - 1.0) * 100.0
    );
    let a = bars(
        "(a) throughput normalized to ZNS",
        "",
        Axis::linear("throughput (× ZNS)"),
        &names(),
        variants.iter().zip(series).map(|(v, s)| scheme(v.label, s)).collect(),
    );
    let b = bars(
        "(b) node and metadata writes per user data written",
        "",
        Axis::linear("metadata overhead (%)"),
        &names(),
        [ZNS, IZC, ZP].iter().zip(meta).map(|(v, s)| scheme(v.label, s)).collect(),
    );
    let figure = Figure::panels("Fig 7: effect of threaded logging", 1, (900, 320), vec![a, b]);
    let header = ["workload", "scheme", "mb_s", "vs_zns", "metadata_overhead", "waf"];
    Output { name: "fig7_threaded_logging", csv: csv_text(&header, &rows), figure, table }
}

fn table5(r: &Runs) -> Output {
    let paper_tl = [94.8, 92.1, 85.8, 89.8, 89.7];
    let paper_bp = [11.3, 31.7, 24.7, 34.1, 35.1];
    let mut rows = Vec::new();
    let mut table = String::from(
        "| workload | TL % (zonelab) | TL % (paper) | BP % (zonelab) | BP % (paper) |\n|---|---|---|---|---|\n",
    );
    let (mut tl, mut bp) = (vec![], vec![]);
    for (i, w) in FsWorkload::ALL.into_iter().enumerate() {
        let x = r.base(w, ZP);
        rows.push(vec![
            w.name().to_string(),
            format!("{:.4}", x.tl_ratio()),
            format!("{:.4}", x.background_plugging_ratio()),
            x.tl_segments.to_string(),
            x.tl_other_type_segments.to_string(),
            x.sc_segments.to_string(),
            x.sc_chosen_by_cost.to_string(),
        ]);
        let _ = writeln!(
            table,
            "| {} | {:.1} | {} | {:.1} | {} |",
            w.name(),
            x.tl_ratio() * 100.0,
            paper_tl[i],
            x.background_plugging_ratio() * 100.0,
            paper_bp[i]
        );
        tl.push(x.tl_ratio() * 100.0);
        bp.push(x.background_plugging_ratio() * 100.0);
    }
    let panel = |title: &str, y: &str, key: &str, zonelab: Vec<f64>, paper: &[f64]| {
        let series = vec![
            BarSeries::new("ZNS+ on zonelab", key, zonelab),
            BarSeries::new("ZNS+ in the paper", "paper", paper.to_vec()),
        ];
        bars(title, "", Axis::linear(y).range(0.0, 104.0).ticks(percent_ticks()), &names(), series)
    };
    let figure = Figure::panels(
        "Table 5: threaded logging (TL) and background plugging (BP) in ZNS+",
        2,
        (520, 360),
        vec![
            panel("(a) segments reclaimed by TL", "TL share (%)", "ZNS+", tl, &paper_tl),
            panel("(b) copies done by BP", "BP share (%)", "ZNS+", bp, &paper_bp),
        ],
    );
    let header = [
        "workload",
        "tl_ratio",
        "background_plugging_ratio",
        "tl_segments",
        "tl_other_type_segments",
        "sc_segments",
        "sc_chosen_by_cost",
    ];
    Output { name: "table5_tl_bp", csv: csv_text(&header, &rows), figure, table }
}

/// 0, 20, ... 100.
pub(super) fn percent_ticks() -> Vec<(f64, String)> {
    (0..=5).map(|i| (f64::from(i * 20), (i * 20).to_string())).collect()
}

fn fig8(r: &Runs) -> Output {
    let mut rows = Vec::new();
    let (mut bw, mut waf) = (vec![], vec![]);
    let mut table =
        String::from("| utilization | ZNS MB/s | IZC × | ZNS+ × | WAF ZNS / IZC / ZNS+ |\n|---|---|---|---|---|\n");
    for v in [ZNS, IZC, ZP] {
        bw.push(scheme(v.label, UTILIZATIONS.iter().map(|&u| r.util(u, v).throughput_mb_s()).collect()));
        waf.push(scheme(v.label, UTILIZATIONS.iter().map(|&u| r.util(u, v).waf()).collect()));
        for u in UTILIZATIONS {
            let x = r.util(u, v);
            rows.push(vec![
                u.to_string(),
                v.label.to_string(),
                format!("{:.2}", x.throughput_mb_s()),
                format!("{:.3}", x.waf()),
            ]);
        }
    }
    for u in UTILIZATIONS {
        let (z, i, p) = (r.util(u, ZNS), r.util(u, IZC), r.util(u, ZP));
        let _ = writeln!(
            table,
            "| {:.0}% | {:.1} | {:.2} | {:.2} | {:.2} / {:.2} / {:.2} |",
            u * 100.0,
            z.throughput_mb_s(),
            i.throughput_mb_s() / z.throughput_mb_s(),
            p.throughput_mb_s() / z.throughput_mb_s(),
            z.waf(),
            i.waf(),
            p.waf()
        );
    }
    table.push_str("\nPaper: the gain of IZC and ZNS+ over ZNS grows with utilization; ZNS+ has the lowest WAF.\n");
    let utils: Vec<String> = UTILIZATIONS.iter().map(|u| format!("{:.0}%", u * 100.0)).collect();
    let figure = Figure::panels(
        "Fig 8: fileserver at various file system utilizations",
        2,
        (520, 380),
        vec![
            bars("(a) throughput", "file system utilization", Axis::linear("MB/s"), &utils, bw),
            bars("(b) write amplification", "file system utilization", Axis::linear("WAF"), &utils, waf),
        ],
    );
    Output { name: "fig8_utilization", csv: csv_text(&["utilization", "scheme", "mb_s", "waf"], &rows), figure, table }
}

fn fig9(r: &Runs) -> Output {
    let variants = [ZNS, IZC, ZP_LP, ZP];
    let labels = ["ZNS", "IZC", "ZNS+(LP)", "ZNS+(PP)"];
    let mut rows = Vec::new();
    let mut series: Vec<Vec<f64>> = vec![vec![]; variants.len()];
    let mut table = String::from("| workload | ZNS | IZC | ZNS+(LP) | ZNS+(PP) |\n|---|---|---|---|---|\n");
    for w in FsWorkload::ALL {
        let u: Vec<f64> = variants.iter().map(|&v| r.base(w, v).chip_utilization * 100.0).collect();
        for (k, v) in variants.iter().enumerate() {
            rows.push(vec![w.name().to_string(), v.label.to_string(), format!("{:.4}", u[k] / 100.0)]);
            series[k].push(u[k]);
        }
        let _ = writeln!(table, "| {} | {:.1}% | {:.1}% | {:.1}% | {:.1}% |", w.name(), u[0], u[1], u[2], u[3]);
    }
    table.push_str("\nPaper: ZNS < IZC < ZNS+(LP) < ZNS+(PP) for every workload.\n");
    let series = labels.iter().zip(series).map(|(l, s)| scheme(l, s)).collect();
    let y = Axis::linear("chip utilization (%)").range(0.0, 104.0).ticks(percent_ticks());
    let figure = bars("Fig 9: flash chip utilization", "workload", y, &names(), series);
    Output {
        name: "fig9_chip_utilization",
        csv: csv_text(&["workload", "scheme", "chip_utilization"], &rows),
        figure,
        table,
    }
}

/// The mean of the points within `window` seconds centred on each point's time.
pub(super) fn moving_average(points: &[(f64, f64)], window: f64) -> Vec<(f64, f64)> {
    points
        .iter()
        .map(|&(t, _)| {
            let near: Vec<f64> = points.iter().filter(|p| (p.0 - t).abs() <= window / 2.0).map(|p| p.1).collect();
            (t, near.iter().sum::<f64>() / near.len().max(1) as f64)
        })
        .collect()
}

fn fig10(r: &Runs) -> Output {
    let mut rows = Vec::new();
    let mut runs = vec![];
    let mut table = String::from("| scheme | intervals | below 20% | mean |\n|---|---|---|---|\n");
    for v in [ZNS, IZC, ZP] {
        let x = r.base(FsWorkload::Fileserver, v);
        let t0 = x.chip_utilization_series.first().map_or(0, |p| p.0);
        let pts: Vec<(f64, f64)> =
            x.chip_utilization_series.iter().map(|&(t, u)| ((t - t0) as f64 / 1e9, u * 100.0)).collect();
        let avg = moving_average(&pts, 5.0);
        for (p, a) in pts.iter().zip(&avg) {
            rows.push(vec![
                v.label.to_string(),
                format!("{:.1}", p.0),
                format!("{:.4}", p.1 / 100.0),
                format!("{:.4}", a.1 / 100.0),
            ]);
        }
        let low = pts.iter().filter(|p| p.1 < 20.0).count();
        let share = low as f64 * 100.0 / pts.len().max(1) as f64;
        let _ = writeln!(table, "| {} | {} | {share:.1}% | {:.1}% |", v.label, pts.len(), x.chip_utilization * 100.0);
        runs.push((v.label, pts, avg));
    }
    table.push_str(
        "\nPaper: ZNS shows many 100 ms intervals below 20% (host copies); IZC removes most; ZNS+ is highest.\n",
    );
    // One panel per scheme on a common time axis.
    let end = runs.iter().flat_map(|r| r.1.iter().map(|p| p.0)).fold(0.0, f64::max).max(1.0);
    let last = runs.len().saturating_sub(1);
    let panels = runs
        .into_iter()
        .enumerate()
        .map(|(i, (label, pts, avg))| {
            Figure::Lines(Plot {
                title: label.into(),
                // The time axis is named once, under the last panel.
                x: Axis::linear(if i == last { "time in the measured window (s)" } else { "" }).range(0.0, end),
                y: Axis::linear("chip utilization (%)").range(0.0, 104.0).ticks(percent_ticks()),
                // The paper's look: a black dot per 100 ms, a red line through the 5 s average.
                series: vec![
                    Series::new("100 ms interval", "interval", pts).scatter(2),
                    Series::new("5 s moving average", "moving average", avg).marker(Marker::None),
                ],
            })
        })
        .collect();
    let figure = Figure::panels("Fig 10: flash chip utilization over time, fileserver", 1, (900, 250), panels);
    let header = ["scheme", "time_s", "chip_utilization", "chip_utilization_5s_mean"];
    Output { name: "fig10_utilization_series", csv: csv_text(&header, &rows), figure, table }
}

fn fig11(r: &Runs) -> Output {
    let variants = [ZNS, IZC_CUB, IZC, ZP_CUB, ZP];
    let names = ["ZNS", "IZC-CUB", "IZC-CAB", "ZNS+-CUB", "ZNS+-CAB"];
    let mut rows = Vec::new();
    let mut bw = vec![];
    for (v, name) in variants.iter().zip(names) {
        bw.push(BarSeries::new(name, v.label, CHIPS.iter().map(|&c| r.hw(c, 2, *v).throughput_mb_s()).collect()));
        for c in CHIPS {
            let x = r.hw(c, 2, *v);
            rows.push(vec![
                c.to_string(),
                v.label.to_string(),
                format!("{:.2}", x.throughput_mb_s()),
                format!("{:.4}", x.copyback_ratio()),
            ]);
        }
    }
    let mut table =
        String::from("| chips | IZC-CAB copyback | IZC-CUB copyback | IZC-CAB / IZC-CUB |\n|---|---|---|---|\n");
    for c in CHIPS {
        let (cab, cub) = (r.hw(c, 2, IZC), r.hw(c, 2, IZC_CUB));
        let _ = writeln!(
            table,
            "| {c} | {:.0}% | {:.0}% | {:.2}× |",
            cab.copyback_ratio() * 100.0,
            cub.copyback_ratio() * 100.0,
            cab.throughput_mb_s() / cub.throughput_mb_s()
        );
    }
    table.push_str("\nPaper: CAB keeps > 80% copyback at every chip count, CUB falls with chips; IZC-CAB / IZC-CUB = 1.13× at 32 chips.\n");
    // (b): how the device copied, copyback and read-and-program piled to 100%,
    // a group per scheme (ZNS copies through the host) and a bar per chip count.
    let copiers = [IZC_CUB, IZC, ZP_CUB, ZP];
    let mut copies = vec![];
    for c in CHIPS {
        let cb: Vec<f64> = copiers.iter().map(|&v| r.hw(c, 2, v).copyback_ratio() * 100.0).collect();
        let rp = cb.iter().map(|x| 100.0 - x).collect();
        copies.push(BarSeries::new("copyback (cpbk)", "copyback", cb).stack(&c.to_string()));
        copies.push(BarSeries::new("read and program (R/P)", "read and program", rp).stack(&c.to_string()));
    }
    let chips: Vec<String> = CHIPS.iter().map(|c| c.to_string()).collect();
    let copier_names: Vec<String> = names[1..].iter().map(|n| n.to_string()).collect();
    let cb_axis = Axis::linear("share of in-storage copies (%)").range(0.0, 100.0).ticks(percent_ticks());
    let figure = Figure::panels(
        "Fig 11: copyback-aware (CAB) and -unaware (CUB) allocation by chip count, fileserver",
        1,
        (1000, 340),
        vec![
            bars("(a) bandwidth", "flash chips", Axis::linear("MB/s"), &chips, bw),
            bars(
                "(b) in-storage copies by operation",
                &format!("bars: {} flash chips", chips.join(", ")),
                cb_axis,
                &copier_names,
                copies,
            ),
        ],
    );
    let header = ["chips", "scheme", "mb_s", "copyback_ratio"];
    Output { name: "fig11_copyback_allocation", csv: csv_text(&header, &rows), figure, table }
}

fn fig12(r: &Runs) -> Output {
    let mut rows = Vec::new();
    let (mut bw, mut util) = (vec![], vec![]);
    let mut table = String::from(
        "| lanes × chips | ZNS MB/s | IZC × | ZNS+ × | chip util ZNS / IZC / ZNS+ |\n|---|---|---|---|---|\n",
    );
    for v in [ZNS, IZC, ZP] {
        bw.push(scheme(v.label, LANES_CHIPS.iter().map(|&(l, c)| r.hw(c, l, v).throughput_mb_s()).collect()));
        util.push(scheme(v.label, LANES_CHIPS.iter().map(|&(l, c)| r.hw(c, l, v).chip_utilization * 100.0).collect()));
        for (l, c) in LANES_CHIPS {
            let x = r.hw(c, l, v);
            rows.push(vec![
                l.to_string(),
                c.to_string(),
                v.label.to_string(),
                format!("{:.2}", x.throughput_mb_s()),
                format!("{:.4}", x.chip_utilization),
            ]);
        }
    }
    for (l, c) in LANES_CHIPS {
        let (z, i, p) = (r.hw(c, l, ZNS), r.hw(c, l, IZC), r.hw(c, l, ZP));
        let _ = writeln!(
            table,
            "| {l} × {c} | {:.1} | {:.2} | {:.2} | {:.0}% / {:.0}% / {:.0}% |",
            z.throughput_mb_s(),
            i.throughput_mb_s() / z.throughput_mb_s(),
            p.throughput_mb_s() / z.throughput_mb_s(),
            z.chip_utilization * 100.0,
            i.chip_utilization * 100.0,
            p.chip_utilization * 100.0
        );
    }
    table.push_str("\nPaper: the gain of IZC and ZNS+ over ZNS grows with PCIe lanes and chips.\n");
    let hw: Vec<String> =
        LANES_CHIPS.iter().map(|(l, c)| format!("{l} lane{} × {c} chips", if *l == 1 { "" } else { "s" })).collect();
    let util_axis = Axis::linear("chip utilization (%)").range(0.0, 104.0).ticks(percent_ticks());
    let figure = Figure::panels(
        "Fig 12: fileserver at rising PCIe and flash parallelism",
        2,
        (560, 380),
        vec![
            bars("(a) bandwidth", "PCIe Gen2 lanes × flash chips", Axis::linear("MB/s"), &hw, bw),
            bars("(b) chip utilization", "PCIe Gen2 lanes × flash chips", util_axis, &hw, util),
        ],
    );
    let header = ["lanes", "chips", "scheme", "mb_s", "chip_utilization"];
    Output { name: "fig12_pcie_lanes", csv: csv_text(&header, &rows), figure, table }
}
