//! The calibration's plots: predicted against measured (log-log), and the
//! median |error| of every group; each as SVG and PNG.

use super::report::{Summary, CLOSE};
use super::RowResult;
use crate::error::{Error, Result};
use crate::plot::{err, register_font};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

const SCATTER_SIZE: (u32, u32) = (900, 800);
/// The group chart's axis ends here; longer bars are cut (their numbers are in report.md).
const BAR_CLIP_PCT: f64 = 200.0;

/// Metric families, each its own colour.
const FAMILIES: [(&str, &[&str]); 3] = [
    ("throughput (KIOPS, MiB/s)", &["kiops", "mibs"]),
    ("latency (µs, ms)", &["lat_mean_us", "lat_p50_us", "lat_p95_us", "lat_p99_us", "ms_mean", "ms_p95"]),
    ("operations/s", &["per_s"]),
];

fn scatter<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, results: &[RowResult]) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let points: Vec<(&str, f64, f64)> =
        results.iter().filter_map(|r| Some((r.metric, r.measured, r.predicted?))).filter(|p| p.1 > 0.0).collect();
    let lo = points.iter().flat_map(|p| [p.1, p.2]).fold(f64::MAX, f64::min).min(1.0) / 2.0;
    let hi = points.iter().flat_map(|p| [p.1, p.2]).fold(f64::MIN, f64::max).max(10.0) * 2.0;
    let mut chart = ChartBuilder::on(&root)
        .caption("predicted against measured (every unit)", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((lo..hi).log_scale(), (lo..hi).log_scale())
        .map_err(err)?;
    chart.configure_mesh().x_desc("measured").y_desc("predicted").draw().map_err(err)?;
    for (label, factor) in [("equal", 1.0), ("±25%", 1.0 + CLOSE), ("", 1.0 / (1.0 + CLOSE))] {
        let style = if factor == 1.0 { BLACK.stroke_width(1) } else { RGBColor(150, 150, 150).stroke_width(1) };
        let series = chart.draw_series(LineSeries::new([(lo, lo * factor), (hi, hi * factor)], style)).map_err(err)?;
        if !label.is_empty() {
            series.label(label).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        }
    }
    for (i, (family, metrics)) in FAMILIES.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let mine = points.iter().filter(|p| metrics.contains(&p.0)).map(|p| Circle::new((p.1, p.2), 3, color.filled()));
        chart
            .draw_series(mine)
            .map_err(err)?
            .label(*family)
            .legend(move |(x, y)| Circle::new((x + 9, y), 4, color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

fn group_bars<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, summary: &Summary) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let groups = &summary.groups;
    let n = groups.len().max(1) as f64;
    let longest = groups.iter().map(|g| g.median_abs_error * 100.0).fold(0.0, f64::max);
    let top = longest.clamp(CLOSE * 100.0, BAR_CLIP_PCT) * 1.1;
    let caption = if longest > BAR_CLIP_PCT {
        format!("median |error| per group (source / figure / metric; bars cut at {BAR_CLIP_PCT}%)")
    } else {
        "median |error| per group (source / figure / metric)".to_string()
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(520)
        .build_cartesian_2d(0.0..top, 0.0..n)
        .map_err(err)?;
    let label = |y: &f64| {
        let i = y.floor() as usize;
        if (y - y.floor() - 0.5).abs() < 1e-6 {
            groups.get(i).map(|g| g.group.clone()).unwrap_or_default()
        } else {
            String::new()
        }
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(groups.len() * 2 + 1)
        .y_label_formatter(&label)
        .y_label_style(("sans-serif", 12))
        .x_desc("median |predicted / measured - 1| (%)")
        .draw()
        .map_err(err)?;
    let bars = groups.iter().enumerate().map(|(i, g)| {
        let color = if g.median_abs_error <= CLOSE { RGBColor(60, 140, 60) } else { RGBColor(190, 60, 50) };
        let length = (g.median_abs_error * 100.0).min(top);
        Rectangle::new([(0.0, i as f64 + 0.15), (length, i as f64 + 0.85)], color.filled())
    });
    chart.draw_series(bars).map_err(err)?;
    let limit = [(CLOSE * 100.0, 0.0), (CLOSE * 100.0, n)];
    chart.draw_series(LineSeries::new(limit, BLACK.stroke_width(1))).map_err(err)?;
    root.present().map_err(err)
}

/// Writes scatter.{svg,png} and groups.{svg,png}; without a font, `warn` hears why and no plot is written.
pub fn write(dir: &Path, results: &[RowResult], summary: &Summary, warn: &mut dyn FnMut(&str)) -> Result<()> {
    if let Err(e) = register_font() {
        warn(&format!("no plots: {e}"));
        return Ok(());
    }
    let at = |name: &str| dir.join(name);
    let bars_size = (1400, 120 + 18 * summary.groups.len().max(1) as u32);
    let named = |e: Error, name: &str| e.within(at(name).display().to_string());
    scatter(SVGBackend::new(&at("scatter.svg"), SCATTER_SIZE).into_drawing_area(), results)
        .map_err(|e| named(e, "scatter.svg"))?;
    scatter(BitMapBackend::new(&at("scatter.png"), SCATTER_SIZE).into_drawing_area(), results)
        .map_err(|e| named(e, "scatter.png"))?;
    group_bars(SVGBackend::new(&at("groups.svg"), bars_size).into_drawing_area(), summary)
        .map_err(|e| named(e, "groups.svg"))?;
    group_bars(BitMapBackend::new(&at("groups.png"), bars_size).into_drawing_area(), summary)
        .map_err(|e| named(e, "groups.png"))
}
