//! The reproductions' figures as SVG and PNG (plotters), and their data as CSV
//! (the csv crate).
//!
//! A figure is one chart or a grid of panels under one title and one legend,
//! drawn above the panels so it never covers data. A chart is either lines
//! through (x, y) points, on linear, log2 or log10 axes with ticks where the
//! data are (request sizes as 4K, 8K, ...), or bars: a group per category, a
//! bar per series within each group, and series that name the same stack
//! piled into one bar. Colours come from [`color`]: one per operation,
//! scheme, device or phase, the same in every figure.
//!
//! Text is drawn with DejaVu Sans, built into the binary (`assets/fonts/`,
//! its licence beside it), so plots never depend on the fonts installed.

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::OnceLock;

use crate::error::{Error, Result};

/// DejaVu Sans (Debian's fonts-dejavu-core; Bitstream Vera licence, see
/// `assets/fonts/DejaVuSans-LICENSE.txt`).
static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

/// Registers the built-in font with plotters (once). Always succeeds unless
/// the embedded font were unreadable, which a test rules out.
pub fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).is_ok());
    match ok {
        true => Ok(()),
        false => Err(Error::Plot("the built-in DejaVu Sans is not a TrueType font".into())),
    }
}

/// How an axis maps values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Scale {
    /// Values as they are.
    Linear,
    /// Powers of two equally spaced.
    Log2,
    /// Powers of ten equally spaced.
    Log10,
}

impl Scale {
    fn map(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log2 => v.log2(),
            Scale::Log10 => v.log10(),
        }
    }

    /// Whether `v` has a place on the axis (log axes have no 0).
    fn holds(self, v: f64) -> bool {
        v.is_finite() && (self == Scale::Linear || v > 0.0)
    }
}

/// One axis: its label, scale, and optionally its ticks and range (in data units).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    /// The axis title.
    pub label: String,
    /// How values map.
    pub scale: Scale,
    /// Ticks at these values, with these labels; chosen from the data when absent.
    #[serde(with = "crate::serde_float::ticks")]
    pub ticks: Option<Vec<(f64, String)>>,
    /// The values shown; from the data when absent (from 0 on a linear y axis).
    #[serde(with = "crate::serde_float::opt_pair")]
    pub range: Option<(f64, f64)>,
}

impl Axis {
    /// A linear axis titled `label`.
    pub fn linear(label: &str) -> Self {
        Axis { label: label.into(), scale: Scale::Linear, ticks: None, range: None }
    }

    /// A log2 axis titled `label`.
    pub fn log2(label: &str) -> Self {
        Axis { scale: Scale::Log2, ..Axis::linear(label) }
    }

    /// A log10 axis titled `label`.
    pub fn log10(label: &str) -> Self {
        Axis { scale: Scale::Log10, ..Axis::linear(label) }
    }

    /// A log2 axis of request sizes in KiB, ticked at `sizes` as 4K, 8K, ... 1M.
    pub fn sizes_kib(label: &str, sizes: &[f64]) -> Self {
        let name =
            |kib: f64| if kib >= 1024.0 { format!("{}M", number(kib / 1024.0)) } else { format!("{}K", number(kib)) };
        Axis::log2(label).ticks(sizes.iter().map(|&s| (s, name(s))).collect())
    }

    /// A log2 axis ticked at `values`, each labelled with its number.
    pub fn log2_at(label: &str, values: &[f64]) -> Self {
        Axis::log2(label).ticks(values.iter().map(|&v| (v, number(v))).collect())
    }

    /// A linear axis ticked at `values`, each labelled with its number.
    pub fn linear_at(label: &str, values: &[f64]) -> Self {
        Axis::linear(label).ticks(values.iter().map(|&v| (v, number(v))).collect())
    }

    /// Ticks at these values with these labels.
    pub fn ticks(mut self, ticks: Vec<(f64, String)>) -> Self {
        self.ticks = Some(ticks);
        self
    }

    /// Shows `lo ..= hi` whatever the data.
    pub fn range(mut self, lo: f64, hi: f64) -> Self {
        self.range = Some((lo, hi));
        self
    }
}

/// A number as short as it reads: no needless decimals (4, 0.5, 12.5, 1200).
pub fn number(v: f64) -> String {
    if v == v.round() && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The marks on a line's points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Marker {
    /// A filled circle.
    Circle,
    /// A filled triangle.
    Triangle,
    /// A filled square.
    Square,
    /// A filled diamond.
    Diamond,
    /// A cross.
    Cross,
    /// No marker.
    None,
}

/// A colour: red, green, blue.
pub type Rgb = (u8, u8, u8);

/// The colour of an operation, scheme, device, phase or baseline, the same in
/// every figure. Unknown keys are drawn in black.
pub fn color(key: &str) -> Rgb {
    match key {
        // Operations (seed 000, seed 003).
        "write" => (0, 114, 178),
        "append" => (230, 159, 0),
        "read" => (0, 158, 115),
        "randread" => (17, 119, 51),
        "reset" => (213, 94, 0),
        "reset after finish" => (240, 170, 120),
        "finish" => (204, 121, 167),
        "softfinish" => (136, 34, 85),
        "open" => (153, 153, 51),
        "close" => (68, 170, 153),
        // No concurrent operation, no background management: the baseline.
        "none" => (140, 140, 140),
        // Host schedulers.
        "mq-deadline" => (86, 180, 233),
        "zinc" => (0, 153, 136),
        // Devices: the ZNS drive and its conventional twin.
        "zn540" => (0, 114, 178),
        "sn640" => (213, 94, 0),
        // Seed 002's schemes, variants in lighter shades of their scheme.
        "ZNS" => (68, 68, 68),
        "IZC" | "IZC-H" => (118, 42, 131),
        "IZC (w/o cpbk)" | "IZC-CUB" => (194, 165, 207),
        "IZC-D" => (64, 0, 75),
        "ZNS+" | "ZNS+(PP)" => (214, 39, 40),
        "ZNS+ (w/o cpbk)" | "ZNS+-CUB" => (245, 150, 150),
        "ZNS+(LP)" => (150, 20, 25),
        // Threaded logging and background plugging (Table 5), compaction phases (Fig 6).
        "TL" => (51, 34, 136),
        "BP" => (136, 204, 238),
        "init" => (200, 200, 200),
        "checkpoint" => (60, 60, 60),
        "paper" => (190, 190, 190),
        "zonelab" => (0, 119, 187),
        // Seed 002 Fig 10: black dots, a red moving average; Fig 11b: how the device copied.
        "interval" => (30, 30, 30),
        "moving average" => (220, 30, 30),
        "copyback" => (68, 119, 170),
        "read and program" => (221, 204, 119),
        _ => (0, 0, 0),
    }
}

/// A line's look.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Style {
    /// Line and marker colour.
    pub color: Rgb,
    /// The marks on the points.
    pub marker: Marker,
    /// Marker size in pixels.
    pub size: u32,
    /// Whether the points are joined (else a scatter).
    pub line: bool,
    /// Whether the line is dashed.
    pub dashed: bool,
}

/// One series of a line plot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// How it looks.
    pub style: Style,
    #[serde(with = "crate::serde_float::pairs")]
    /// (x, y) in data units.
    pub points: Vec<(f64, f64)>,
    /// Text next to each point (empty: none).
    pub labels: Vec<String>,
}

impl Series {
    /// A line with round markers in the colour of `key`.
    pub fn new(name: &str, key: &str, points: Vec<(f64, f64)>) -> Self {
        let style = Style { color: color(key), marker: Marker::Circle, size: 4, line: true, dashed: false };
        Series { name: name.into(), style, points, labels: Vec::new() }
    }

    /// With `marker` on its points.
    pub fn marker(mut self, marker: Marker) -> Self {
        self.style.marker = marker;
        self
    }

    /// Dashed.
    pub fn dashed(mut self) -> Self {
        self.style.dashed = true;
        self
    }

    /// Points only, `size` pixels each.
    pub fn scatter(mut self, size: u32) -> Self {
        self.style.line = false;
        self.style.size = size;
        self
    }

    /// With `labels` next to its points.
    pub fn labels(mut self, labels: Vec<String>) -> Self {
        self.labels = labels;
        self
    }
}

/// A line plot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plot {
    /// Heading.
    pub title: String,
    /// Horizontal axis.
    pub x: Axis,
    /// Vertical axis.
    pub y: Axis,
    /// The lines.
    pub series: Vec<Series>,
}

/// One series of a bar chart: a value per category, in the categories' order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BarSeries {
    /// Legend entry.
    pub name: String,
    /// Bar colour.
    pub color: Rgb,
    #[serde(with = "crate::serde_float::vec")]
    /// One value per category.
    pub values: Vec<f64>,
    /// Series naming the same stack share one bar per category, piled in order.
    pub stack: Option<String>,
}

impl BarSeries {
    /// Bars in the colour of `key`.
    pub fn new(name: &str, key: &str, values: Vec<f64>) -> Self {
        BarSeries { name: name.into(), color: color(key), values, stack: None }
    }

    /// Piled on the series naming the same `stack`.
    pub fn stack(mut self, stack: &str) -> Self {
        self.stack = Some(stack.into());
        self
    }
}

/// Grouped bars: a group per category, a bar (or stack) per series within each group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bars {
    /// Heading.
    pub title: String,
    /// Title under the categories.
    pub x_label: String,
    /// Value axis.
    pub y: Axis,
    /// Group names, left to right.
    pub categories: Vec<String>,
    /// The bars.
    pub series: Vec<BarSeries>,
}

/// Several charts under one title and one legend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Panels {
    /// Heading over all panels.
    pub title: String,
    /// Panels per row.
    pub columns: usize,
    /// Each panel's size in pixels.
    pub panel: (u32, u32),
    /// Lines and bars (panels within panels are drawn empty).
    pub panels: Vec<Figure>,
}

/// What a plot draws: lines, bars, or panels of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Figure {
    /// A line plot.
    Lines(Plot),
    /// Grouped bars.
    Bars(Bars),
    /// Several charts under one title.
    Panels(Panels),
}

impl Figure {
    /// Panels side by side, `columns` to a row, `panel` pixels each.
    pub fn panels(title: &str, columns: usize, panel: (u32, u32), panels: Vec<Figure>) -> Self {
        Figure::Panels(Panels { title: title.into(), columns: columns.max(1), panel, panels })
    }

    fn title(&self) -> &str {
        match self {
            Figure::Lines(p) => &p.title,
            Figure::Bars(b) => &b.title,
            Figure::Panels(p) => &p.title,
        }
    }
}

/// One legend entry: a line with its marker, or a box.
#[derive(Debug, Clone, PartialEq)]
enum Key {
    Line(Style),
    Box(Rgb),
}

const LEGEND_FONT: u32 = 14;
const LEGEND_ROW: u32 = 22;
const TITLE_HEIGHT: u32 = 36;

/// Every series once (by name), in order of appearance.
fn legend(figure: &Figure) -> Vec<(String, Key)> {
    let mut out: Vec<(String, Key)> = Vec::new();
    // A name drawn both as bars and as a line shows the line.
    let mut add = |name: &str, key: Key| match out.iter_mut().find(|(n, _)| n == name) {
        Some(entry) => {
            if matches!((&entry.1, &key), (Key::Box(_), Key::Line(_))) {
                entry.1 = key;
            }
        }
        None if !name.is_empty() => out.push((name.to_string(), key)),
        None => {}
    };
    let mut visit = |f: &Figure| match f {
        Figure::Lines(p) => p.series.iter().for_each(|s| add(&s.name, Key::Line(s.style))),
        Figure::Bars(b) => b.series.iter().for_each(|s| add(&s.name, Key::Box(s.color))),
        Figure::Panels(_) => {}
    };
    match figure {
        Figure::Panels(p) => p.panels.iter().for_each(&mut visit),
        other => visit(other),
    }
    out
}

fn text_width(text: &str, size: u32) -> u32 {
    (FAMILY, size).into_font().box_size(text).map_or(text.len() as u32 * size * 6 / 10, |(w, _)| w)
}

/// The legend's entries laid out in rows `width` wide: (row, x offset) per entry, and each row's width.
fn legend_layout(entries: &[(String, Key)], width: u32) -> (Vec<(u32, u32)>, Vec<u32>) {
    let (mut at, mut rows) = (Vec::new(), vec![0u32]);
    for (name, _) in entries {
        let w = 42 + text_width(name, LEGEND_FONT) + 18;
        let row = rows.len() - 1;
        if rows[row] > 0 && rows[row] + w > width {
            rows.push(0);
        }
        let row = rows.len() - 1;
        at.push((row as u32, rows[row]));
        rows[row] += w;
    }
    (at, rows)
}

/// The pixel size of a figure and the height of its legend band.
fn layout(figure: &Figure) -> ((u32, u32), u32) {
    let (width, body) = match figure {
        Figure::Panels(p) => {
            let rows = p.panels.len().div_ceil(p.columns) as u32;
            (p.panel.0 * p.columns as u32, p.panel.1 * rows)
        }
        _ => (800, 460),
    };
    let entries = legend(figure);
    let rows = if entries.is_empty() { 0 } else { legend_layout(&entries, width - 40).1.len() as u32 };
    let band = if rows == 0 { 0 } else { rows * LEGEND_ROW + 8 };
    ((width, TITLE_HEIGHT + band + body), band)
}

/// The plotting library's error as ours (for `map_err`).
pub(crate) fn err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> Error {
    Error::Plot(e.to_string())
}

fn rgb(c: Rgb) -> RGBColor {
    RGBColor(c.0, c.1, c.2)
}

/// A marker centred on `at` (backend pixels).
fn draw_marker<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, at: (i32, i32), style: &Style) -> Result<()> {
    let (c, s) = (rgb(style.color).filled(), style.size as i32);
    match style.marker {
        Marker::Circle => area.draw(&Circle::new(at, s, c)),
        Marker::Triangle => area.draw(&TriangleMarker::new(at, s + 1, c)),
        Marker::Square => area.draw(&Rectangle::new([(at.0 - s, at.1 - s), (at.0 + s, at.1 + s)], c)),
        Marker::Diamond => {
            let d = s + 1;
            area.draw(&Polygon::new(vec![(at.0, at.1 - d), (at.0 + d, at.1), (at.0, at.1 + d), (at.0 - d, at.1)], c))
        }
        Marker::Cross => area.draw(&Cross::new(at, s, rgb(style.color).stroke_width(2))),
        Marker::None => Ok(()),
    }
    .map_err(err)
}

fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, entries: &[(String, Key)]) -> Result<()> {
    let (width, _) = area.dim_in_pixel();
    let (at, rows) = legend_layout(entries, width - 40);
    let font = (FAMILY, LEGEND_FONT).into_font().color(&BLACK).pos(Pos::new(HPos::Left, VPos::Center));
    for ((name, key), &(row, x)) in entries.iter().zip(&at) {
        let left = (width - rows[row as usize]) / 2 + x;
        let (x, y) = (left as i32, (row * LEGEND_ROW + LEGEND_ROW / 2 + 2) as i32);
        match key {
            Key::Line(style) => {
                if style.line {
                    let line = rgb(style.color).stroke_width(2);
                    let segments: &[(i32, i32)] =
                        if style.dashed { &[(0, 5), (9, 13), (23, 27), (31, 36)] } else { &[(0, 36)] };
                    for seg in segments {
                        area.draw(&PathElement::new(vec![(x + seg.0, y), (x + seg.1, y)], line)).map_err(err)?;
                    }
                }
                draw_marker(area, (x + 18, y), style)?;
            }
            Key::Box(c) => {
                area.draw(&Rectangle::new([(x + 10, y - 7), (x + 26, y + 7)], rgb(*c).filled())).map_err(err)?;
            }
        }
        area.draw(&Text::new(name.clone(), (x + 42, y), font.clone())).map_err(err)?;
    }
    Ok(())
}

/// Ticks 1, 2 or 5 × 10^k apart covering `lo..=hi`, labelled with only the decimals the step needs.
fn nice_ticks(lo: f64, hi: f64, count: usize) -> (f64, Vec<(f64, String)>) {
    let span = (hi - lo).max(1e-12);
    let raw = span / count.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|&s| s >= raw).unwrap_or(10.0 * mag);
    let decimals = (0..6).find(|&d| (step * 10f64.powi(d)).fract().abs() < 1e-6).unwrap_or(6) as usize;
    let first = (lo / step).ceil() as i64;
    let last = (hi / step + 1e-9).floor() as i64;
    let ticks = (first..=last).map(|k| k as f64 * step).map(|v| (v, format!("{v:.decimals$}"))).collect();
    (step, ticks)
}

/// An axis's shown range and ticks, in mapped units, from the data values `values` (data units).
fn axis_frame(axis: &Axis, values: &[f64], from_zero: bool) -> ((f64, f64), Vec<(f64, String)>) {
    let s = axis.scale;
    let mut vs: Vec<f64> = values.iter().copied().filter(|&v| s.holds(v)).collect();
    if let Some(ticks) = &axis.ticks {
        vs.extend(ticks.iter().map(|t| t.0).filter(|&v| s.holds(v)));
    }
    let (lo, hi) = match axis.range {
        Some((lo, hi)) => (lo, hi),
        None if vs.is_empty() => {
            (if s == Scale::Linear { 0.0 } else { 1.0 }, if s == Scale::Linear { 1.0 } else { 10.0 })
        }
        None => {
            (vs.iter().copied().fold(f64::INFINITY, f64::min), vs.iter().copied().fold(f64::NEG_INFINITY, f64::max))
        }
    };
    let mapped = |ticks: Vec<(f64, String)>| ticks.into_iter().map(|(v, l)| (s.map(v), l)).collect::<Vec<_>>();
    match s {
        Scale::Linear => {
            let fixed = axis.range.is_some();
            let lo = if from_zero && !fixed { lo.min(0.0) } else { lo };
            let hi = if hi <= lo { lo + 1.0 } else { hi };
            let (lo, hi) = if fixed || from_zero { (lo, hi) } else { (lo - (hi - lo) * 0.05, hi + (hi - lo) * 0.05) };
            // A y axis from 0 ends on the tick above the data, leaving room over the tallest value.
            let hi = if from_zero && !fixed {
                let (step, _) = nice_ticks(lo, hi * 1.04, 6);
                (hi * 1.04 / step).ceil() * step
            } else {
                hi
            };
            let ticks = axis.ticks.clone().unwrap_or_else(|| nice_ticks(lo, hi, 6).1);
            ((lo, hi), ticks)
        }
        Scale::Log2 | Scale::Log10 => {
            let (a, b) = (s.map(lo), s.map(hi));
            let (a, b) = if b <= a { (a - 0.5, b + 0.5) } else { (a, b) };
            let ticks = match &axis.ticks {
                Some(t) => mapped(t.clone()),
                None => {
                    let base = if s == Scale::Log2 { 2f64 } else { 10f64 };
                    // 1, 2 and 5 in each decade when there are few decades.
                    let steps: &[f64] = if s == Scale::Log10 && b - a <= 3.0 { &[1.0, 2.0, 5.0] } else { &[1.0] };
                    (a.floor() as i64..=b.ceil() as i64)
                        .flat_map(|k| steps.iter().map(move |m| m * base.powi(k as i32)))
                        .filter(|v| v.log10() <= b.ceil() * base.log10() + 1e-9)
                        .map(|v| (s.map(v), number(v)))
                        .collect()
                }
            };
            let (a, b) = if axis.range.is_some() {
                (a, b)
            } else if axis.ticks.is_some() {
                let pad = (b - a).max(1.0) * 0.06;
                (a - pad, b + pad)
            } else {
                (a.floor(), b.ceil())
            };
            ((a, b), ticks)
        }
    }
}

/// A linear coordinate (in mapped units) whose grid lines and labels sit at given ticks only.
struct Ticked {
    range: (f64, f64),
    ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let (lo, hi) = self.range;
        let span = f64::from(limit.1 - limit.0);
        if hi == lo || span == 0.0 {
            return (limit.0 + limit.1) / 2;
        }
        let at = span * (v - lo) / (hi - lo);
        limit.0 + if span > 0.0 { (at + 1e-3).floor() } else { (at - 1e-3).ceil() } as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.iter().copied().filter(|t| *t >= self.range.0 - 1e-9 && *t <= self.range.1 + 1e-9).collect()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.0..self.range.1
    }
}

fn label_of(ticks: &[(f64, String)], v: f64) -> String {
    ticks.iter().find(|t| (t.0 - v).abs() < 1e-9).map(|t| t.1.clone()).unwrap_or_default()
}

/// A chart's frame: caption, axes, mesh; returns the chart to draw into.
macro_rules! frame {
    ($area:expr, $title:expr, $x:expr, $y:expr, $x_desc:expr, $y_desc:expr, $x_mesh:expr) => {{
        let (xr, xt) = $x;
        let (yr, yt) = $y;
        let mut builder = ChartBuilder::on($area);
        if !$title.is_empty() {
            builder.caption($title, (FAMILY, 17));
        }
        let mut chart = builder
            .margin_top(8)
            .margin_right(18)
            .margin_left(8)
            .margin_bottom(4)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(
                Ticked { range: xr, ticks: xt.iter().map(|t: &(f64, String)| t.0).collect() },
                Ticked { range: yr, ticks: yt.iter().map(|t: &(f64, String)| t.0).collect() },
            )
            .map_err(err)?;
        let (xf, yf) = (|v: &f64| label_of(&xt, *v), |v: &f64| label_of(&yt, *v));
        let mut mesh = chart.configure_mesh();
        mesh.x_desc($x_desc)
            .y_desc($y_desc)
            .x_label_formatter(&xf)
            .y_label_formatter(&yf)
            .label_style((FAMILY, 13))
            .axis_desc_style((FAMILY, 14))
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(TRANSPARENT);
        if !$x_mesh {
            mesh.disable_x_mesh();
        }
        mesh.draw().map_err(err)?;
        chart
    }};
}

fn draw_lines<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, plot: &Plot) -> Result<()> {
    let (sx, sy) = (plot.x.scale, plot.y.scale);
    let xs: Vec<f64> = plot.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
    let ys: Vec<f64> = plot.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    let x = axis_frame(&plot.x, &xs, false);
    let y = axis_frame(&plot.y, &ys, sy == Scale::Linear);
    let chart = frame!(area, &plot.title, x, y, &plot.x.label, &plot.y.label, true);
    let plotting = chart.plotting_area();
    let (lo, hi) = (chart.x_range(), chart.y_range());
    let inside = |p: &(f64, f64)| p.0 >= lo.start && p.0 <= lo.end && p.1 >= hi.start && p.1 <= hi.end;
    let whole = plotting.strip_coord_spec();
    let base = whole.get_base_pixel();
    let px = |p: &(f64, f64)| {
        let a = plotting.map_coordinate(p);
        (a.0 - base.0, a.1 - base.1)
    };
    let font = (FAMILY, 12).into_font().color(&BLACK);
    for s in &plot.series {
        let pts: Vec<(f64, f64)> =
            s.points.iter().filter(|p| sx.holds(p.0) && sy.holds(p.1)).map(|p| (sx.map(p.0), sy.map(p.1))).collect();
        let style = rgb(s.style.color).stroke_width(2);
        if s.style.line && pts.len() > 1 {
            if s.style.dashed {
                for w in pts.windows(2) {
                    let (a, b) = (px(&w[0]), px(&w[1]));
                    let len = (((b.0 - a.0).pow(2) + (b.1 - a.1).pow(2)) as f64).sqrt().max(1.0);
                    let mut t = 0.0;
                    while t < len {
                        let u = (t + 8.0).min(len);
                        let at = |f: f64| {
                            (
                                (a.0 as f64 + (b.0 - a.0) as f64 * f / len) as i32,
                                (a.1 as f64 + (b.1 - a.1) as f64 * f / len) as i32,
                            )
                        };
                        whole.draw(&PathElement::new(vec![at(t), at(u)], style)).map_err(err)?;
                        t += 13.0;
                    }
                }
            } else {
                plotting.draw(&PathElement::new(pts.clone(), style)).map_err(err)?;
            }
        }
        for (i, p) in pts.iter().enumerate() {
            if !inside(p) {
                continue;
            }
            let at = px(p);
            draw_marker(&whole, at, &s.style)?;
            if let Some(label) = s.labels.get(i).filter(|l| !l.is_empty()) {
                whole.draw(&Text::new(label.clone(), (at.0 + 6, at.1 - 16), font.clone())).map_err(err)?;
            }
        }
    }
    Ok(())
}

/// Non-numbers (a ratio over no runs) and values below 0 draw no bar.
fn bar_value(v: f64) -> f64 {
    if v.is_finite() {
        v.max(0.0)
    } else {
        0.0
    }
}

/// The bars of a category: each stack (or lone series) once, in order of appearance: (label, series indices).
fn bar_slots(bars: &Bars) -> Vec<(Option<String>, Vec<usize>)> {
    let mut slots: Vec<(Option<String>, Vec<usize>)> = Vec::new();
    for (i, s) in bars.series.iter().enumerate() {
        match s.stack.as_ref().and_then(|k| slots.iter_mut().find(|slot| slot.0.as_ref() == Some(k))) {
            Some(slot) => slot.1.push(i),
            None => slots.push((s.stack.clone(), vec![i])),
        }
    }
    slots
}

/// Each bar's (category, slot, bottom, top) in data units, stacks piled in order.
fn bar_rects(bars: &Bars) -> Vec<(usize, usize, usize, f64, f64)> {
    let mut out = Vec::new();
    for (slot, (_, members)) in bar_slots(bars).iter().enumerate() {
        for c in 0..bars.categories.len() {
            let mut bottom = 0.0;
            for &i in members {
                let v = bars.series[i].values.get(c).copied().map_or(0.0, bar_value);
                if v > 0.0 {
                    out.push((i, c, slot, bottom, bottom + v));
                }
                bottom += v;
            }
        }
    }
    out
}

fn draw_bars<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, bars: &Bars) -> Result<()> {
    let slots = bar_slots(bars);
    let rects = bar_rects(bars);
    let sy = bars.y.scale;
    let tops: Vec<f64> = rects.iter().map(|r| r.4).collect();
    let n = bars.categories.len().max(1);
    let x_ticks: Vec<(f64, String)> =
        bars.categories.iter().enumerate().map(|(c, l)| (c as f64 + 0.5, l.clone())).collect();
    let x = ((0.0, n as f64), x_ticks);
    let (yr, yt) = axis_frame(&bars.y, &tops, sy == Scale::Linear);
    // Room above the bars for the stacks' names.
    let named = slots.len() > 1 && slots.iter().all(|s| s.0.is_some());
    let yr = if named && sy == Scale::Linear { (yr.0, yr.1 * 1.08) } else { yr };
    let y = (yr, yt);
    let chart = frame!(area, &bars.title, x, y, &bars.x_label, &bars.y.label, false);
    let plotting = chart.plotting_area();
    let base = if sy == Scale::Linear { 0.0f64.max(yr.0) } else { yr.0 };
    let width = 0.8 / slots.len().max(1) as f64;
    let left = |c: usize, slot: usize| c as f64 + 0.1 + width * slot as f64;
    let map = |v: f64| {
        if sy == Scale::Linear {
            v
        } else if v > 0.0 {
            sy.map(v).max(base)
        } else {
            base
        }
    };
    for &(i, c, slot, bottom, top) in &rects {
        let (l, r) = (left(c, slot), left(c, slot) + width);
        let gap = if slots.len() > 1 { width * 0.06 } else { 0.0 };
        let bottom = if bottom <= 0.0 { base } else { map(bottom) };
        let rect = Rectangle::new([(l + gap, bottom), (r - gap, map(top))], rgb(bars.series[i].color).filled());
        plotting.draw(&rect).map_err(err)?;
    }
    if named {
        let base_px = plotting.get_base_pixel();
        let font = (FAMILY, 12).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Bottom));
        for (slot, (label, members)) in slots.iter().enumerate() {
            for c in 0..bars.categories.len() {
                let top: f64 =
                    members.iter().map(|&i| bars.series[i].values.get(c).copied().map_or(0.0, bar_value)).sum();
                let at = plotting.map_coordinate(&(left(c, slot) + width / 2.0, map(top)));
                let at = (at.0 - base_px.0, at.1 - base_px.1);
                let text = label.clone().unwrap_or_default();
                plotting.strip_coord_spec().draw(&Text::new(text, (at.0, at.1 - 3), font.clone())).map_err(err)?;
            }
        }
    }
    Ok(())
}

fn draw_chart<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, figure: &Figure) -> Result<()> {
    match figure {
        Figure::Lines(plot) => draw_lines(area, plot),
        Figure::Bars(bars) => draw_bars(area, bars),
        Figure::Panels(_) => Ok(()),
    }
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, figure: &Figure, band: u32) -> Result<()> {
    root.fill(&WHITE).map_err(err)?;
    let (width, _) = root.dim_in_pixel();
    let (top, body) = root.split_vertically(TITLE_HEIGHT);
    let title = (FAMILY, 20).into_font().color(&BLACK).pos(Pos::new(HPos::Center, VPos::Center));
    top.draw(&Text::new(figure.title().to_string(), (width as i32 / 2, TITLE_HEIGHT as i32 / 2 + 2), title))
        .map_err(err)?;
    let (key, body) = body.split_vertically(band);
    draw_legend(&key, &legend(figure))?;
    match figure {
        Figure::Panels(p) => {
            let rows = p.panels.len().div_ceil(p.columns);
            for (cell, panel) in body.split_evenly((rows, p.columns)).iter().zip(&p.panels) {
                draw_chart(cell, panel)?;
            }
        }
        Figure::Lines(plot) => draw_lines(&body, &Plot { title: String::new(), ..plot.clone() })?,
        Figure::Bars(bars) => draw_bars(&body, &Bars { title: String::new(), ..bars.clone() })?,
    }
    root.present().map_err(err)
}

/// Draws `figure` into an SVG file at `path`.
pub fn svg(figure: &Figure, path: &Path) -> Result<()> {
    register_font()?;
    let (size, band) = layout(figure);
    draw(SVGBackend::new(path, size).into_drawing_area(), figure, band)
        .map_err(|e| e.within(path.display().to_string()))
}

/// Draws `figure` into a PNG file at `path`.
pub fn png(figure: &Figure, path: &Path) -> Result<()> {
    register_font()?;
    let (size, band) = layout(figure);
    draw(BitMapBackend::new(path, size).into_drawing_area(), figure, band)
        .map_err(|e| e.within(path.display().to_string()))
}

/// The figure as PNG would show it, in memory: its size and RGB pixels, row by row.
pub fn bitmap(figure: &Figure) -> Result<((u32, u32), Vec<u8>)> {
    register_font()?;
    let (size, band) = layout(figure);
    let mut pixels = vec![0u8; size.0 as usize * size.1 as usize * 3];
    draw(BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area(), figure, band)?;
    Ok((size, pixels))
}

/// CSV text (RFC 4180 quoting, through the csv crate) of a header and rows.
///
/// Panics if a row's length differs from the header's: the rows are built by
/// code, and a ragged table is a bug there.
pub fn csv_text<S: AsRef<[u8]>>(header: &[&str], rows: &[Vec<S>]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(header).expect("a CSV header in memory");
    for row in rows {
        w.write_record(row).expect("every CSV row as long as the header");
    }
    String::from_utf8(w.into_inner().expect("a CSV in memory")).expect("UTF-8 fields make a UTF-8 CSV")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_by_three() -> Figure {
        Figure::Bars(Bars {
            title: "bandwidth by medium".into(),
            x_label: String::new(),
            y: Axis::linear("MB/s"),
            categories: vec!["tlc".into(), "mlc".into(), "znand".into()],
            series: vec![
                BarSeries::new("ZNS", "ZNS", vec![2.0, 4.0, 1.0]),
                BarSeries::new("ZNS+", "ZNS+", vec![3.0, 8.0, 0.5]),
            ],
        })
    }

    /// The attributes of each `<rect>` of an SVG whose fill is `color`: (x, y, width, height).
    fn rects(svg: &str, color: Rgb) -> Vec<(i64, i64, i64, i64)> {
        let hex = format!("#{:02X}{:02X}{:02X}", color.0, color.1, color.2);
        let attr = |tag: &str, name: &str| -> i64 {
            let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[start..].split('"').next().unwrap().parse().unwrap()
        };
        svg.split("<rect")
            .skip(1)
            .filter(|tag| tag.contains(&format!("fill=\"{hex}\"")))
            .map(|tag| (attr(tag, "x"), attr(tag, "y"), attr(tag, "width"), attr(tag, "height")))
            .collect()
    }

    fn texts(svg: &str) -> Vec<&str> {
        svg.split("<text").skip(1).map(|t| t.split('>').nth(1).unwrap().trim_end_matches("</text").trim()).collect()
    }

    fn render(figure: &Figure, name: &str) -> (Vec<u8>, String) {
        let dir = std::env::temp_dir().join(format!("zonelab-plot-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        png(figure, &dir.join("f.png")).unwrap();
        svg(figure, &dir.join("f.svg")).unwrap();
        let out = (std::fs::read(dir.join("f.png")).unwrap(), std::fs::read_to_string(dir.join("f.svg")).unwrap());
        std::fs::remove_dir_all(&dir).ok();
        out
    }

    #[test]
    fn a_bar_chart_is_written_as_png_and_svg_with_grouped_bars_from_zero() {
        let figure = two_by_three();
        let ((w, h), _) = layout(&figure);
        let (png, svg) = render(&figure, "bars");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!((&png[16..20], &png[20..24]), (&w.to_be_bytes()[..], &h.to_be_bytes()[..]), "IHDR size");
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        let texts = texts(&svg);
        for label in ["bandwidth by medium", "MB/s", "tlc", "mlc", "znand", "ZNS", "ZNS+"] {
            assert!(texts.contains(&label), "{label} not among {texts:?}");
        }
        let values = [[2.0, 4.0, 1.0], [3.0, 8.0, 0.5]];
        let (zns, zns_plus) = (rects(&svg, color("ZNS")), rects(&svg, color("ZNS+")));
        // Three bars and the legend's key in each colour.
        assert_eq!((zns.len(), zns_plus.len()), (4, 4), "{zns:?} {zns_plus:?}");
        let (zns, zns_plus) = (&zns[1..], &zns_plus[1..]);
        let baseline = zns[0].1 + zns[0].3;
        let px_per_value = zns[1].3 as f64 / 4.0;
        for (s, bars) in [zns, zns_plus].into_iter().enumerate() {
            for (c, &(x, y, _, height)) in bars.iter().enumerate() {
                assert!((y + height - baseline).abs() <= 1, "every bar stands on the axis at 0: {bars:?}");
                let want = values[s][c] * px_per_value;
                assert!((height as f64 - want).abs() <= 1.5, "series {s} category {c}: {height} px, want {want}");
                if c > 0 {
                    assert!(x > bars[c - 1].0 + bars[c - 1].2, "categories left to right: {bars:?}");
                }
            }
        }
        for c in 0..3 {
            assert!(zns[c].0 < zns_plus[c].0, "ZNS+ right of ZNS in category {c}");
            assert!(zns_plus[c].0 - (zns[c].0 + zns[c].2) < 20, "ZNS+ next to ZNS in category {c}");
        }
        // The legend sits above the plot: its keys are higher than every bar's top.
        let key_bottom = rects(&svg, color("ZNS"))[0].1 + rects(&svg, color("ZNS"))[0].3;
        assert!(zns.iter().chain(zns_plus).all(|b| b.1 > key_bottom), "legend above the data");
    }

    #[test]
    fn stacked_series_pile_up_in_one_bar_per_category() {
        let figure = Figure::Bars(Bars {
            title: "phases".into(),
            x_label: String::new(),
            y: Axis::linear("ms"),
            categories: vec!["a".into(), "b".into()],
            series: vec![
                BarSeries::new("init", "init", vec![1.0, 2.0]).stack("ZNS"),
                BarSeries::new("write", "write", vec![3.0, 2.0]).stack("ZNS"),
                BarSeries::new("init", "init", vec![1.0, 1.0]).stack("IZC"),
            ],
        });
        let (_, svg) = render(&figure, "stacks");
        let (init, write) = (rects(&svg, color("init")), rects(&svg, color("write")));
        // One legend key for "init", though two series bear the name.
        assert_eq!((init.len(), write.len()), (5, 3), "{init:?} {write:?}");
        let (zns_a, write_a) = (init[1], write[1]);
        assert!((write_a.1 + write_a.3 - zns_a.1).abs() <= 1, "write on top of init: {zns_a:?} {write_a:?}");
        assert_eq!(zns_a.0, write_a.0, "one bar");
        let names = texts(&svg);
        assert_eq!(names.iter().filter(|&&t| t == "ZNS").count(), 2, "each stack named over its bar: {names:?}");
    }

    #[test]
    fn log2_axes_tick_at_the_request_sizes_and_linear_ones_without_needless_decimals() {
        let plot = Figure::Lines(Plot {
            title: "sizes".into(),
            x: Axis::sizes_kib("request size", &[4.0, 8.0, 32.0, 128.0, 1024.0]),
            y: Axis::linear("KIOPS"),
            series: vec![Series::new("write", "write", vec![(4.0, 80.0), (8.0, 81.0), (32.0, 40.0), (128.0, 10.0)])],
        });
        let (_, svg) = render(&plot, "log2");
        let texts = texts(&svg);
        for t in ["4K", "8K", "32K", "128K", "1M", "0", "20", "40", "60", "80"] {
            assert!(texts.contains(&t), "{t} not among {texts:?}");
        }
        assert!(!texts.iter().any(|t| t.ends_with(".0")), "{texts:?}");
        // Equal ratios, equal distances: 4K to 8K as far as 8K to 16K would be, 32K to 128K twice that.
        let x_of = |label: &str| {
            let tag = svg
                .split("<text")
                .find(|t| t.split('>').nth(1).unwrap().trim_end_matches("</text").trim() == label)
                .unwrap();
            let start = tag.find(" x=\"").unwrap() + 4;
            tag[start..].split('"').next().unwrap().parse::<f64>().unwrap()
        };
        let octave = x_of("8K") - x_of("4K");
        assert!(octave > 20.0);
        assert!(((x_of("128K") - x_of("32K")) - 2.0 * octave).abs() < 3.0);
        assert_eq!(
            nice_ticks(0.0, 1.0, 5).1.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
            ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]
        );
        assert_eq!(nice_ticks(0.0, 300.0, 6).1.last().unwrap().1, "300");
        assert_eq!(
            (number(4.0), number(0.5), number(12.25), number(1200.0)),
            ("4".into(), "0.5".into(), "12.25".into(), "1200".into())
        );
    }

    #[test]
    fn values_that_are_not_numbers_draw_no_bar() {
        assert_eq!(
            (bar_value(f64::NAN), bar_value(f64::INFINITY), bar_value(-1.0), bar_value(2.5)),
            (0.0, 0.0, 0.0, 2.5)
        );
        let Figure::Bars(mut bars) = two_by_three() else { unreachable!() };
        bars.series[1].values[1] = f64::NAN;
        assert_eq!(bar_rects(&bars).len(), 5);
        let (_, svg) = render(&Figure::Bars(bars), "nan");
        assert_eq!(rects(&svg, color("ZNS+")).len(), 3);
    }

    #[test]
    fn every_operation_and_scheme_has_its_own_colour() {
        let ops = ["write", "append", "read", "randread", "reset", "finish", "softfinish", "open", "close", "none"];
        let schemes = ["ZNS", "IZC", "ZNS+", "IZC-D", "ZNS+(LP)"];
        for group in [&ops[..], &schemes[..]] {
            for (i, a) in group.iter().enumerate() {
                assert_ne!(color(a), (0, 0, 0), "{a} has a colour");
                for b in &group[..i] {
                    assert_ne!(color(a), color(b), "{a} and {b}");
                }
            }
        }
    }

    #[test]
    fn the_same_figure_gives_the_same_bytes() {
        let figure = Figure::panels("two", 2, (400, 300), vec![two_by_three(), two_by_three()]);
        let (png_a, svg_a) = render(&figure, "same-a");
        let (png_b, svg_b) = render(&figure, "same-b");
        assert!(svg_a == svg_b && png_a == png_b);
    }

    #[test]
    fn csv_fields_with_commas_and_quotes_are_quoted() {
        let text = csv_text(&["a", "b"], &[vec!["x, y", "say \"hi\""], vec!["1", ""]]);
        assert_eq!(text, "a,b\n\"x, y\",\"say \"\"hi\"\"\"\n1,\n");
    }
}
