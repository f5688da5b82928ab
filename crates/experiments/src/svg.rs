//! Minimal SVG charts (grouped bars, lines) for the reproduction plots.

use std::fmt::Write;

const W: f64 = 720.0;
const H: f64 = 400.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 160.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 60.0;
const COLORS: [&str; 8] = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn frame(out: &mut String, title: &str, y_label: &str, y_max: f64) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        escape(title)
    );
    let (x0, y0, y1) = (LEFT, H - BOTTOM, TOP);
    for k in 0..=4 {
        let v = y_max * f64::from(k) / 4.0;
        let y = y0 - (y0 - y1) * f64::from(k) / 4.0;
        let _ = write!(
            out,
            r##"<line x1="{x0}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            x0 - 5.0,
            y + 4.0,
            fmt_tick(v)
        );
    }
    let _ = write!(
        out,
        r#"<text transform="translate(18,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (y0 + y1) / 2.0,
        escape(y_label)
    );
}

fn fmt_tick(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn legend(out: &mut String, names: &[&str]) {
    for (i, name) in names.iter().enumerate() {
        let y = TOP + 18.0 * i as f64;
        let _ = write!(
            out,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            W - RIGHT + 10.0,
            y,
            COLORS[i % COLORS.len()],
            W - RIGHT + 27.0,
            y + 10.0,
            escape(name)
        );
    }
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0].iter().map(|m| m * p).find(|&m| m >= v).unwrap_or(10.0 * p)
}

/// Grouped bars: one group per category, one bar per series.
pub fn bars(title: &str, y_label: &str, categories: &[String], series: &[(&str, Vec<f64>)]) -> String {
    let y_max = nice_max(series.iter().flat_map(|(_, v)| v.iter().copied()).fold(0.0, f64::max));
    let mut out = String::new();
    frame(&mut out, title, y_label, y_max);
    let plot_w = W - RIGHT - LEFT;
    let group_w = plot_w / categories.len().max(1) as f64;
    let bar_w = group_w * 0.8 / series.len().max(1) as f64;
    for (c, cat) in categories.iter().enumerate() {
        let gx = LEFT + group_w * c as f64 + group_w * 0.1;
        for (s, (_, values)) in series.iter().enumerate() {
            let v = values.get(c).copied().unwrap_or(0.0);
            let h = (H - BOTTOM - TOP) * v / y_max;
            let _ = write!(
                out,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                gx + bar_w * s as f64,
                H - BOTTOM - h,
                bar_w,
                h,
                COLORS[s % COLORS.len()]
            );
        }
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            gx + group_w * 0.4,
            H - BOTTOM + 18.0,
            escape(cat)
        );
    }
    legend(&mut out, &series.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    out.push_str("</svg>\n");
    out
}

/// Lines through (x, y) points.
pub fn lines(title: &str, x_label: &str, y_label: &str, series: &[(&str, Vec<(f64, f64)>)]) -> String {
    let pts = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let y_max = nice_max(pts().map(|p| p.1).fold(0.0, f64::max));
    let (x_min, x_max) = (pts().map(|p| p.0).fold(f64::INFINITY, f64::min), pts().map(|p| p.0).fold(0.0, f64::max));
    let span = (x_max - x_min).max(1e-9);
    let mut out = String::new();
    frame(&mut out, title, y_label, y_max);
    let px = |x: f64| LEFT + (W - RIGHT - LEFT) * (x - x_min) / span;
    let py = |y: f64| H - BOTTOM - (H - BOTTOM - TOP) * y / y_max;
    for (s, (_, points)) in series.iter().enumerate() {
        let path: Vec<String> = points.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
        let _ = write!(
            out,
            r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
            COLORS[s % COLORS.len()],
            path.join(" ")
        );
    }
    for k in 0..=4 {
        let x = x_min + span * f64::from(k) / 4.0;
        let _ = write!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(x),
            H - BOTTOM + 18.0,
            fmt_tick(x)
        );
    }
    let _ = write!(
        out,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (W - RIGHT + LEFT) / 2.0,
        H - 15.0,
        escape(x_label)
    );
    legend(&mut out, &series.iter().map(|(n, _)| *n).collect::<Vec<_>>());
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_are_svg_with_every_series() {
        let b = bars("t", "y", &["a".into(), "b".into()], &[("s1", vec![1.0, 2.0]), ("s2", vec![3.0, 0.5])]);
        assert!(b.starts_with("<svg") && b.ends_with("</svg>\n"));
        assert_eq!(b.matches("<rect x=").count(), 4 + 2, "four bars and two legend keys");
        let l = lines("t", "x", "y", &[("s", vec![(0.0, 1.0), (1.0, 2.0)])]);
        assert_eq!(l.matches("<polyline").count(), 1);
        assert_eq!(nice_max(7.3), 10.0);
        assert_eq!(nice_max(0.42), 0.5);
    }
}
