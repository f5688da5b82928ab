//! Line plots of an experiment's series, as SVG and PNG (plotters).
//!
//! Text needs a TrueType font (for its metrics, in SVG too): DejaVu Sans (Debian's fonts-dejavu-core)
//! or Liberation Sans, read from the usual system paths once.

use super::Plot;
use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

const SIZE: (u32, u32) = (800, 500);
const FONT_PATHS: [&str; 3] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

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

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, plotters::coord::Shift>, plot: &Plot) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let ((x0, x1), (y0, y1)) = bounds(plot);
    let mut chart = ChartBuilder::on(&root)
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
    root.present().map_err(err)
}

pub fn svg(plot: &Plot, path: &Path) -> Result<(), String> {
    // Text is laid out with the font's metrics even in SVG.
    register_font()?;
    draw(SVGBackend::new(path, SIZE).into_drawing_area(), plot).map_err(|e| format!("{}: {e}", path.display()))
}

pub fn png(plot: &Plot, path: &Path) -> Result<(), String> {
    register_font()?;
    draw(BitMapBackend::new(path, SIZE).into_drawing_area(), plot).map_err(|e| format!("{}: {e}", path.display()))
}
