//! The reproductions' figures as SVG and PNG (plotters): line plots of
//! (x, y) series, and grouped bar charts of one value per category and series.
//!
//! Text needs a TrueType font (for its metrics, in SVG too): DejaVu Sans (Debian's fonts-dejavu-core)
//! or Liberation Sans, read from the usual system paths once.

use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

const SIZE: (u32, u32) = (800, 500);
const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// One series of a line plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

/// One series of a bar chart: a value per category, in the categories' order.
#[derive(Debug, Clone, PartialEq)]
pub struct BarSeries {
    pub name: String,
    pub values: Vec<f64>,
}

/// Grouped bars: a group per category, a bar per series within each group.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    pub series: Vec<BarSeries>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Figure {
    Lines(Plot),
    Bars(Bars),
}

/// Whether a font was found and registered (looked up once).
static FONT: OnceLock<bool> = OnceLock::new();

/// Whether plots can be drawn here (a TrueType font was found).
pub fn register_font() -> Result<(), String> {
    let found = *FONT.get_or_init(|| {
        FONT_PATHS.iter().any(|path| match std::fs::read(path) {
            Ok(bytes) => {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok()
            }
            Err(_) => false,
        })
    });
    if found {
        Ok(())
    } else {
        Err(format!("PNG plots need a TrueType font; none at {} (install fonts-dejavu-core)", FONT_PATHS.join(", ")))
    }
}

fn bounds(plot: &Plot) -> ((f64, f64), (f64, f64)) {
    let points = plot.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in points {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return ((0.0, 1.0), (0.0, 1.0));
    }
    let pad = ((x1 - x0) * 0.05).max(0.5);
    ((x0 - pad, x1 + pad), (0.0, (y1 * 1.1).max(1e-9)))
}

fn err<E: std::error::Error + Send + Sync>(e: DrawingAreaErrorKind<E>) -> String {
    e.to_string()
}

fn draw_lines<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, plot: &Plot) -> Result<(), String> {
    let ((x0, x1), (y0, y1)) = bounds(plot);
    let mut chart = ChartBuilder::on(root)
        .caption(&plot.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    chart.configure_mesh().x_desc(&plot.x_label).y_desc(&plot.y_label).draw().map_err(err)?;
    for (i, s) in plot.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), color.stroke_width(2)))
            .map_err(err)?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, color.filled()))).map_err(err)?;
    }
    if !plot.series.is_empty() {
        chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw().map_err(err)?;
    }
    Ok(())
}

/// Values that are not numbers (a ratio over no runs), which plotters cannot
/// place, and values below the axis's 0 draw no bar.
fn bar_value(v: f64) -> f64 {
    if v.is_finite() {
        v.max(0.0)
    } else {
        0.0
    }
}

/// The top of the y axis: room above the tallest bar for the legend.
fn bars_top(bars: &Bars) -> f64 {
    let tallest = bars.series.iter().flat_map(|s| s.values.iter()).map(|&v| bar_value(v)).fold(0.0, f64::max);
    if tallest > 0.0 {
        tallest * 1.25
    } else {
        1.0
    }
}

/// x-axis units per category: bars sit on whole units (plotters labels
/// custom key points only on integer axes).
const GROUP_UNITS: u32 = 1000;

fn draw_bars<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, bars: &Bars) -> Result<(), String> {
    // Category c spans [c, c + 1) × GROUP_UNITS on the x axis; its label sits at its middle.
    let groups = bars.categories.len().max(1) as u32;
    let middles: Vec<u32> = (0..groups).map(|c| c * GROUP_UNITS + GROUP_UNITS / 2).collect();
    let mut chart = ChartBuilder::on(root)
        .caption(&bars.title, ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d((0..groups * GROUP_UNITS).with_key_points(middles), 0.0..bars_top(bars))
        .map_err(err)?;
    let category = |x: &u32| bars.categories.get((x / GROUP_UNITS) as usize).cloned().unwrap_or_default();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&category)
        .x_label_style(("sans-serif", 16))
        .y_desc(&bars.y_label)
        .draw()
        .map_err(err)?;
    // The bars of a group fill its middle 80%.
    let width = GROUP_UNITS * 8 / 10 / bars.series.len().max(1) as u32;
    for (s, series) in bars.series.iter().enumerate() {
        let color = Palette99::pick(s).to_rgba();
        let left = |c: usize| c as u32 * GROUP_UNITS + GROUP_UNITS / 10 + width * s as u32;
        let rects = series
            .values
            .iter()
            .take(groups as usize)
            .enumerate()
            .map(|(c, &v)| Rectangle::new([(left(c), 0.0), (left(c) + width, bar_value(v))], color.filled()));
        chart
            .draw_series(rects)
            .map_err(err)?
            .label(series.name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], color.filled()));
    }
    if !bars.series.is_empty() {
        // Upper right, in the room `bars_top` leaves above the bars.
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, figure: &Figure) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    match figure {
        Figure::Lines(plot) => draw_lines(&root, plot)?,
        Figure::Bars(bars) => draw_bars(&root, bars)?,
    }
    root.present().map_err(err)
}

pub fn svg(figure: &Figure, path: &Path) -> Result<(), String> {
    // Text is laid out with the font's metrics even in SVG.
    register_font()?;
    draw(SVGBackend::new(path, SIZE).into_drawing_area(), figure).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn png(figure: &Figure, path: &Path) -> Result<(), String> {
    register_font()?;
    draw(BitMapBackend::new(path, SIZE).into_drawing_area(), figure).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_by_three() -> Figure {
        let series = |name: &str, values: &[f64]| BarSeries { name: name.into(), values: values.to_vec() };
        Figure::Bars(Bars {
            title: "bandwidth by medium".into(),
            y_label: "MB/s".into(),
            categories: vec!["tlc".into(), "mlc".into(), "znand".into()],
            series: vec![series("ZNS", &[2.0, 4.0, 1.0]), series("ZNS+", &[3.0, 8.0, 0.5])],
        })
    }

    /// The attributes of each `<rect>` of an SVG whose fill is `color`: (x, y, width, height).
    fn rects(svg: &str, color: &str) -> Vec<(i64, i64, i64, i64)> {
        let attr = |tag: &str, name: &str| -> i64 {
            let start = tag.find(&format!(" {name}=\"")).unwrap() + name.len() + 3;
            tag[start..].split('"').next().unwrap().parse().unwrap()
        };
        svg.split("<rect")
            .skip(1)
            .filter(|tag| tag.contains(&format!("fill=\"{color}\"")))
            .map(|tag| (attr(tag, "x"), attr(tag, "y"), attr(tag, "width"), attr(tag, "height")))
            .collect()
    }

    fn hex(series: usize) -> String {
        let c = Palette99::pick(series).to_rgba();
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    #[test]
    fn a_bar_chart_is_written_as_png_and_svg_with_grouped_bars_from_zero() {
        let dir = std::env::temp_dir().join(format!("zonelab-plot-bars-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let figure = two_by_three();
        png(&figure, &dir.join("bars.png")).unwrap();
        svg(&figure, &dir.join("bars.svg")).unwrap();
        let png = std::fs::read(dir.join("bars.png")).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!((&png[16..20], &png[20..24]), (&800u32.to_be_bytes()[..], &500u32.to_be_bytes()[..]), "IHDR size");
        let svg = std::fs::read_to_string(dir.join("bars.svg")).unwrap();
        std::fs::remove_dir_all(&dir).ok();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .map(|t| t.split('>').nth(1).unwrap().trim_end_matches("</text").trim())
            .collect();
        for label in ["bandwidth by medium", "MB/s", "tlc", "mlc", "znand", "ZNS", "ZNS+"] {
            assert!(texts.contains(&label), "{label} not among {texts:?}");
        }
        let values = [[2.0, 4.0, 1.0], [3.0, 8.0, 0.5]];
        let (zns, zns_plus) = (rects(&svg, &hex(0)), rects(&svg, &hex(1)));
        // Three bars and the legend's key in each colour.
        assert_eq!((zns.len(), zns_plus.len()), (4, 4), "{zns:?} {zns_plus:?}");
        let baseline = zns[0].1 + zns[0].3;
        let px_per_value = zns[1].3 as f64 / 4.0;
        for (s, bars) in [&zns, &zns_plus].into_iter().enumerate() {
            for (c, &(x, y, _, height)) in bars[..3].iter().enumerate() {
                assert!((y + height - baseline).abs() <= 1, "every bar stands on the axis at 0: {bars:?}");
                let want = values[s][c] * px_per_value;
                assert!((height as f64 - want).abs() <= 1.5, "series {s} category {c}: {height} px, want {want}");
                if c > 0 {
                    assert!(x > bars[c - 1].0 + bars[c - 1].2, "categories left to right: {bars:?}");
                }
            }
        }
        for c in 0..3 {
            assert_eq!(zns[c].0 + zns[c].2, zns_plus[c].0, "ZNS+ right next to ZNS in category {c}");
        }
    }

    #[test]
    fn values_that_are_not_numbers_draw_no_bar_and_leave_the_axis_alone() {
        assert_eq!(
            (bar_value(f64::NAN), bar_value(f64::INFINITY), bar_value(-1.0), bar_value(2.5)),
            (0.0, 0.0, 0.0, 2.5)
        );
        let Figure::Bars(mut bars) = two_by_three() else { unreachable!() };
        assert_eq!(bars_top(&bars), 10.0, "the tallest bar, 8, and room for the legend");
        bars.series[1].values[1] = f64::NAN;
        assert_eq!(bars_top(&bars), 5.0);
        bars.series.iter_mut().for_each(|s| s.values.fill(0.0));
        assert_eq!(bars_top(&bars), 1.0);
    }
}
