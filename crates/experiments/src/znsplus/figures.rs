//! The figures and tables of seed 002 §4: which runs each needs, and its
//! CSV, plot and paper-vs-zonelab table.

use super::{run_all, RunSpec, Scale};
use crate::plot::{BarSeries, Bars, Figure, Plot, Series};
use std::collections::HashMap;
use std::fmt::Write;
use zonelab_device::Plugging;
use zonelab_fs::Recycling;
use zonelab_workload::fsbench::{FsBenchResult, FsWorkload};

/// One figure or table: file stem, CSV, the plot to draw, and a markdown table against the paper.
pub struct Output {
    pub name: &'static str,
    pub csv: String,
    pub figure: Figure,
    pub table: String,
}

/// Grouped bars, a value per category in each series.
fn bars(title: &str, y_label: &str, categories: &[String], series: Vec<(&str, Vec<f64>)>) -> Figure {
    Figure::Bars(Bars {
        title: title.into(),
        y_label: y_label.into(),
        categories: categories.to_vec(),
        series: series.into_iter().map(|(name, values)| BarSeries { name: name.into(), values }).collect(),
    })
}

/// Lines through each series' (x, y) points.
fn lines(title: &str, x_label: &str, y_label: &str, series: Vec<(&str, Vec<(f64, f64)>)>) -> Figure {
    Figure::Lines(Plot {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        series: series.into_iter().map(|(name, points)| Series { name: name.into(), points }).collect(),
    })
}

/// The variants of Fig 7 and 9.
#[derive(Clone, Copy)]
struct Variant {
    label: &'static str,
    recycling: Recycling,
    copyback: bool,
    copyback_aware: bool,
    plugging: Plugging,
}

const ZNS: Variant =
    Variant { label: "ZNS", recycling: Recycling::Zns, copyback: true, copyback_aware: true, plugging: Plugging::Ppa };
const IZC: Variant = Variant { label: "IZC", recycling: Recycling::IzcH, ..ZNS };
const IZC_D: Variant = Variant { label: "IZC-D", recycling: Recycling::IzcD, ..ZNS };
const IZC_NOCB: Variant = Variant { label: "IZC (w/o cpbk)", copyback: false, ..IZC };
const IZC_CUB: Variant = Variant { label: "IZC-CUB", copyback_aware: false, ..IZC };
const ZP: Variant = Variant { label: "ZNS+", recycling: Recycling::ZnsPlus, ..ZNS };
const ZP_NOCB: Variant = Variant { label: "ZNS+ (w/o cpbk)", copyback: false, ..ZP };
const ZP_LP: Variant = Variant { label: "ZNS+(LP)", plugging: Plugging::Lba, ..ZP };
const ZP_CUB: Variant = Variant { label: "ZNS+-CUB", copyback_aware: false, ..ZP };

const MEDIA: [&str; 3] = ["tlc", "mlc", "znand"];
const UTILIZATIONS: [f64; 4] = [0.6, 0.7, 0.8, 0.9];
const CHIPS: [u32; 4] = [4, 8, 16, 32];
const LANES_CHIPS: [(u32, u32); 3] = [(1, 8), (2, 16), (4, 32)];

struct Runs {
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

/// Fileserver on `chips` chips and `lanes` lanes; the file system keeps at
/// least 64 zones (zones grow with the chips: 2 MiB per chip).
fn hw_spec(scale: Scale, chips: u32, lanes: u32, v: Variant) -> RunSpec {
    let base = spec(scale, FsWorkload::Fileserver, v);
    let fs_bytes = base.fs_bytes.max(64 * u64::from(chips) * 2 * 1024 * 1024);
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
    fn base(&self, w: FsWorkload, v: Variant) -> &FsBenchResult {
        self.get(&spec(self.scale, w, v))
    }
    fn medium(&self, m: &'static str, v: Variant) -> &FsBenchResult {
        self.get(&RunSpec { medium: m, ..spec(self.scale, FsWorkload::Fileserver, v) })
    }
    fn util(&self, u: f64, v: Variant) -> &FsBenchResult {
        self.get(&RunSpec { utilization: u, ..spec(self.scale, FsWorkload::Fileserver, v) })
    }
    fn hw(&self, chips: u32, lanes: u32, v: Variant) -> &FsBenchResult {
        self.get(&hw_spec(self.scale, chips, lanes, v))
    }
}

/// Every run the figures need, without duplicates.
fn plan(scale: Scale) -> Vec<RunSpec> {
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
pub fn reproduce(
    scale: Scale,
    workers: usize,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<Output>, String> {
    let specs = plan(scale);
    let n = specs.len();
    let results = run_all(&specs, workers, &|i, _| progress(i, n))?;
    let runs = Runs { scale, results: specs.iter().map(key).zip(results).collect() };
    Ok(vec![
        fig6(&runs),
        table4(&runs),
        fig7(&runs),
        table5(&runs),
        fig8(&runs),
        fig9(&runs),
        fig10(&runs),
        fig11(&runs),
        fig12(&runs),
    ])
}

fn names() -> Vec<String> {
    FsWorkload::ALL.iter().map(|w| w.name().to_string()).collect()
}

fn mean_ms(r: &FsBenchResult, phase: impl Fn(&zonelab_fs::CompactionRecord) -> u64) -> f64 {
    let fg: Vec<_> = r.compactions.iter().filter(|c| !c.background).collect();
    fg.iter().map(|c| phase(c) as f64).sum::<f64>() / fg.len().max(1) as f64 / 1e6
}

fn total_ms(r: &FsBenchResult) -> f64 {
    mean_ms(r, |c| c.init_ns + c.read_ns + c.write_ns + c.checkpoint_ns)
}

fn range(v: &[f64]) -> String {
    let (lo, hi) =
        (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max));
    format!("{lo:.2}-{hi:.2}")
}

fn fig6(r: &Runs) -> Output {
    let mut csv = String::from(
        "workload,scheme,compactions,valid_blocks,init_ms,read_ms,write_ms,checkpoint_ms,total_ms,copyback_ratio\n",
    );
    let mut table = String::from("| workload | ZNS ms | IZC ms | cut (zonelab) | cut (paper) | copyback share (zonelab) | copyback share (paper) |\n|---|---|---|---|---|---|---|\n");
    let paper_cb = [87, 74, 81, 83, 83];
    let mut series: Vec<(&str, Vec<f64>)> = vec![("ZNS", vec![]), ("IZC", vec![])];
    for (i, w) in FsWorkload::ALL.into_iter().enumerate() {
        for (k, v) in [ZNS, IZC].into_iter().enumerate() {
            let x = r.base(w, v);
            let valid = x.compactions.iter().map(|c| c.valid_blocks).sum::<u64>() / x.compactions.len().max(1) as u64;
            let _ = writeln!(
                csv,
                "{},{},{},{valid},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3}",
                w.name(),
                v.label,
                x.compactions.len(),
                mean_ms(x, |c| c.init_ns),
                mean_ms(x, |c| c.read_ns),
                mean_ms(x, |c| c.write_ns),
                mean_ms(x, |c| c.checkpoint_ns),
                total_ms(x),
                x.copyback_ratio()
            );
            series[k].1.push(total_ms(x));
        }
        let (z, c) = (total_ms(r.base(w, ZNS)), total_ms(r.base(w, IZC)));
        let _ = writeln!(
            table,
            "| {} | {z:.1} | {c:.1} | {:.1}% | 28.2-51.7% | {:.0}% | {}% |",
            w.name(),
            (1.0 - c / z.max(1e-9)) * 100.0,
            r.base(w, IZC).copyback_ratio() * 100.0,
            paper_cb[i]
        );
    }
    let figure = bars("Fig 6: mean segment compaction time", "ms", &names(), series);
    Output { name: "fig6_compaction_time", csv, figure, table }
}

fn table4(r: &Runs) -> Output {
    let paper = [[79.5, 113.4, 96.5], [84.5, 154.6, 148.0], [104.0, 218.9, 242.4]];
    let mut csv = String::from("medium,scheme,mb_s,vs_zns\n");
    let mut table = String::from("| medium | ZNS MB/s | IZC-H MB/s (×) | IZC-D MB/s (×) | paper IZC-H × | paper IZC-D × |\n|---|---|---|---|---|---|\n");
    let mut series: Vec<(&str, Vec<f64>)> = vec![("ZNS", vec![]), ("IZC-H", vec![]), ("IZC-D", vec![])];
    for (m, p) in MEDIA.iter().zip(paper) {
        let bw: Vec<f64> = [ZNS, IZC, IZC_D].iter().map(|&v| r.medium(m, v).throughput_mb_s()).collect();
        for (k, label) in ["ZNS", "IZC-H", "IZC-D"].iter().enumerate() {
            let _ = writeln!(csv, "{m},{label},{:.2},{:.3}", bw[k], bw[k] / bw[0]);
            series[k].1.push(bw[k]);
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
    let figure = bars("Table 4: fileserver bandwidth by medium", "MB/s", &MEDIA.map(String::from), series);
    Output { name: "table4_media", csv, figure, table }
}

fn fig7(r: &Runs) -> Output {
    let variants = [ZNS, IZC_NOCB, IZC, ZP_NOCB, ZP];
    let mut csv = String::from("workload,scheme,mb_s,vs_zns,metadata_overhead,waf\n");
    let mut series: Vec<(&str, Vec<f64>)> = variants.iter().map(|v| (v.label, vec![])).collect();
    let (mut izc, mut zp) = (vec![], vec![]);
    for w in FsWorkload::ALL {
        let zns = r.base(w, ZNS).throughput_mb_s();
        for (k, &v) in variants.iter().enumerate() {
            let x = r.base(w, v);
            let _ = writeln!(
                csv,
                "{},{},{:.2},{:.3},{:.4},{:.3}",
                w.name(),
                v.label,
                x.throughput_mb_s(),
                x.throughput_mb_s() / zns,
                x.metadata_overhead(),
                x.waf()
            );
            series[k].1.push(x.throughput_mb_s() / zns);
        }
        izc.push(r.base(w, IZC).throughput_mb_s() / zns);
        zp.push(r.base(w, ZP).throughput_mb_s() / zns);
    }
    let meta = |v| r.base(FsWorkload::Varmail, v).metadata_overhead();
    let table = format!(
        "| result | paper | zonelab |\n|---|---|---|\n| IZC over ZNS | 1.21-1.77× | {}× |\n| ZNS+ over ZNS | 1.33-2.91× | {}× |\n| node + metadata traffic, ZNS+ vs IZC, varmail | -48% | {:+.0}% |\n",
        range(&izc),
        range(&zp),
        (meta(ZP) / meta(IZC).max(1e-9) - 1.0) * 100.0
    );
    let figure = bars("Fig 7a: throughput normalized to ZNS", "× ZNS", &names(), series);
    Output { name: "fig7_threaded_logging", csv, figure, table }
}

fn table5(r: &Runs) -> Output {
    let paper_tl = [94.8, 92.1, 85.8, 89.8, 89.7];
    let paper_bp = [11.3, 31.7, 24.7, 34.1, 35.1];
    let mut csv = String::from("workload,tl_ratio,background_plugging_ratio,tl_segments,sc_segments\n");
    let mut table = String::from(
        "| workload | TL % (zonelab) | TL % (paper) | BP % (zonelab) | BP % (paper) |\n|---|---|---|---|---|\n",
    );
    let mut series: Vec<(&str, Vec<f64>)> = vec![("TL", vec![]), ("BP", vec![])];
    for (i, w) in FsWorkload::ALL.into_iter().enumerate() {
        let x = r.base(w, ZP);
        let _ = writeln!(
            csv,
            "{},{:.4},{:.4},{},{}",
            w.name(),
            x.tl_ratio(),
            x.background_plugging_ratio(),
            x.tl_segments,
            x.sc_segments
        );
        let _ = writeln!(
            table,
            "| {} | {:.1} | {} | {:.1} | {} |",
            w.name(),
            x.tl_ratio() * 100.0,
            paper_tl[i],
            x.background_plugging_ratio() * 100.0,
            paper_bp[i]
        );
        series[0].1.push(x.tl_ratio() * 100.0);
        series[1].1.push(x.background_plugging_ratio() * 100.0);
    }
    let figure = bars("Table 5: threaded logging and background plugging in ZNS+", "%", &names(), series);
    Output { name: "table5_tl_bp", csv, figure, table }
}

fn fig8(r: &Runs) -> Output {
    let mut csv = String::from("utilization,scheme,mb_s,waf\n");
    let mut bw: Vec<(&str, Vec<(f64, f64)>)> = vec![];
    let mut table =
        String::from("| utilization | ZNS MB/s | IZC × | ZNS+ × | WAF ZNS / IZC / ZNS+ |\n|---|---|---|---|---|\n");
    for v in [ZNS, IZC, ZP] {
        let pts = UTILIZATIONS.iter().map(|&u| (u * 100.0, r.util(u, v).throughput_mb_s())).collect();
        bw.push((v.label, pts));
        for u in UTILIZATIONS {
            let x = r.util(u, v);
            let _ = writeln!(csv, "{u},{},{:.2},{:.3}", v.label, x.throughput_mb_s(), x.waf());
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
    let figure = lines("Fig 8: fileserver throughput by utilization", "utilization %", "MB/s", bw);
    Output { name: "fig8_utilization", csv, figure, table }
}

fn fig9(r: &Runs) -> Output {
    let variants = [ZNS, IZC, ZP_LP, ZP];
    let mut csv = String::from("workload,scheme,chip_utilization\n");
    let mut series: Vec<(&str, Vec<f64>)> = variants.iter().map(|v| (v.label, vec![])).collect();
    let mut table = String::from("| workload | ZNS | IZC | ZNS+(LP) | ZNS+(PP) |\n|---|---|---|---|---|\n");
    for w in FsWorkload::ALL {
        let u: Vec<f64> = variants.iter().map(|&v| r.base(w, v).chip_utilization * 100.0).collect();
        for (k, v) in variants.iter().enumerate() {
            let _ = writeln!(csv, "{},{},{:.4}", w.name(), v.label, u[k] / 100.0);
            series[k].1.push(u[k]);
        }
        let _ = writeln!(table, "| {} | {:.1}% | {:.1}% | {:.1}% | {:.1}% |", w.name(), u[0], u[1], u[2], u[3]);
    }
    table.push_str("\nPaper: ZNS < IZC < ZNS+(LP) < ZNS+(PP) for every workload.\n");
    let figure = bars("Fig 9: flash chip utilization", "%", &names(), series);
    Output { name: "fig9_chip_utilization", csv, figure, table }
}

fn fig10(r: &Runs) -> Output {
    let mut csv = String::from("scheme,time_s,chip_utilization\n");
    let mut series = vec![];
    let mut table = String::from("| scheme | intervals | below 20% |\n|---|---|---|\n");
    for v in [ZNS, IZC, ZP] {
        let x = r.base(FsWorkload::Fileserver, v);
        let t0 = x.chip_utilization_series.first().map_or(0, |p| p.0);
        let pts: Vec<(f64, f64)> =
            x.chip_utilization_series.iter().map(|&(t, u)| ((t - t0) as f64 / 1e9, u * 100.0)).collect();
        for p in &pts {
            let _ = writeln!(csv, "{},{:.1},{:.4}", v.label, p.0, p.1 / 100.0);
        }
        let low = pts.iter().filter(|p| p.1 < 20.0).count();
        let _ =
            writeln!(table, "| {} | {} | {:.1}% |", v.label, pts.len(), low as f64 * 100.0 / pts.len().max(1) as f64);
        series.push((v.label, pts));
    }
    table.push_str(
        "\nPaper: ZNS shows many 100 ms intervals below 20% (host copies); IZC removes most; ZNS+ is highest.\n",
    );
    let figure = lines("Fig 10: chip utilization per 100 ms, fileserver", "s", "%", series);
    Output { name: "fig10_utilization_series", csv, figure, table }
}

fn fig11(r: &Runs) -> Output {
    let variants = [ZNS, IZC_CUB, IZC, ZP_CUB, ZP];
    let mut csv = String::from("chips,scheme,mb_s,copyback_ratio\n");
    let mut bw = vec![];
    for v in variants {
        bw.push((v.label, CHIPS.iter().map(|&c| (f64::from(c), r.hw(c, 2, v).throughput_mb_s())).collect::<Vec<_>>()));
        for c in CHIPS {
            let x = r.hw(c, 2, v);
            let _ = writeln!(csv, "{c},{},{:.2},{:.4}", v.label, x.throughput_mb_s(), x.copyback_ratio());
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
    let figure = lines("Fig 11a: fileserver bandwidth by chip count", "chips", "MB/s", bw);
    Output { name: "fig11_copyback_allocation", csv, figure, table }
}

fn fig12(r: &Runs) -> Output {
    let mut csv = String::from("lanes,chips,scheme,mb_s,chip_utilization\n");
    let mut series = vec![];
    let mut table = String::from(
        "| lanes × chips | ZNS MB/s | IZC × | ZNS+ × | chip util ZNS / IZC / ZNS+ |\n|---|---|---|---|---|\n",
    );
    for v in [ZNS, IZC, ZP] {
        series.push((
            v.label,
            LANES_CHIPS.iter().map(|&(l, c)| (f64::from(l), r.hw(c, l, v).throughput_mb_s())).collect::<Vec<_>>(),
        ));
        for (l, c) in LANES_CHIPS {
            let x = r.hw(c, l, v);
            let _ = writeln!(csv, "{l},{c},{},{:.2},{:.4}", v.label, x.throughput_mb_s(), x.chip_utilization);
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
    let figure = lines("Fig 12: fileserver bandwidth by PCIe lanes (chips 8, 16, 32)", "lanes", "MB/s", series);
    Output { name: "fig12_pcie_lanes", csv, figure, table }
}
