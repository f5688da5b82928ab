//! Plots carry their own font: they are drawn with no fonts installed.

use std::path::PathBuf;
use std::process::Command;
use zonelab_experiments::plot::{self, Axis, BarSeries, Bars, Figure, Plot, Series};

fn figure(title: &str) -> Figure {
    let lines = Figure::Lines(Plot {
        title: "(a) by request size".into(),
        x: Axis::sizes_kib("request size", &[4.0, 8.0, 16.0, 32.0]),
        y: Axis::linear("KIOPS"),
        series: vec![
            Series::new("write", "write", vec![(4.0, 85.0), (8.0, 84.0), (16.0, 60.0), (32.0, 38.0)]),
            Series::new("append", "append", vec![(4.0, 66.0), (8.0, 69.0), (16.0, 55.0), (32.0, 37.0)]),
        ],
    });
    let bars = Figure::Bars(Bars {
        title: "(b) by scheme".into(),
        x_label: "workload".into(),
        y: Axis::linear("MB/s"),
        categories: vec!["fileserver".into(), "varmail".into()],
        series: vec![BarSeries::new("ZNS", "ZNS", vec![80.0, 60.0]), BarSeries::new("ZNS+", "ZNS+", vec![150.0, 90.0])],
    });
    Figure::panels(title, 2, (420, 320), vec![lines, bars])
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-fonts-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Dark pixels (text, axes, lines) in rows `rows` of an RGB bitmap `width` wide.
fn dark_pixels(pixels: &[u8], width: u32, rows: std::ops::Range<u32>) -> usize {
    let row = width as usize * 3;
    pixels[rows.start as usize * row..rows.end as usize * row].chunks(3).filter(|p| p.iter().all(|&c| c < 100)).count()
}

/// PNG and SVG files written, complete and with text in them.
fn draws_png_and_svg() {
    plot::register_font().expect("the built-in font registers");
    let dir = temp_dir("files");
    let fig = figure("QD 1 throughput");
    plot::png(&fig, &dir.join("f.png")).unwrap();
    plot::svg(&fig, &dir.join("f.svg")).unwrap();
    let png = std::fs::read(dir.join("f.png")).unwrap();
    let svg = std::fs::read_to_string(dir.join("f.svg")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    assert!(png.len() > 10_000, "a PNG of {} bytes is too small to hold the figure", png.len());
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for text in ["QD 1 throughput", "(a) by request size", "4K", "32K", "KIOPS", "fileserver", "ZNS+", "append"] {
        assert!(svg.contains(&format!(">{text}<")) || svg.contains(&format!(">\n{text}\n<")), "{text} in the SVG");
    }
    // The title is drawn (as glyphs, in the PNG's pixels), and different titles draw differently.
    let ((width, _), a) = plot::bitmap(&fig).unwrap();
    let (_, b) = plot::bitmap(&figure("A different title")).unwrap();
    let title_rows = 0..34;
    assert!(dark_pixels(&a, width, title_rows.clone()) > 150, "the title's glyphs are drawn");
    assert_ne!(a[..(width * 34 * 3) as usize], b[..(width * 34 * 3) as usize], "the title's text shows");
}

#[test]
fn plots_are_drawn_with_the_built_in_font() {
    draws_png_and_svg();
}

/// The same, in a mount namespace where the system's font directories are
/// empty (needs root and unshare; skipped without them, as on most laptops).
#[test]
fn plots_are_drawn_with_the_system_fonts_hidden() {
    if std::env::var_os("ZONELAB_FONTS_HIDDEN").is_some() {
        // The inner run: the fonts must indeed be gone.
        assert!(!std::path::Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists());
        draws_png_and_svg();
        return;
    }
    let dirs: Vec<&str> = ["/usr/share/fonts", "/usr/local/share/fonts"]
        .into_iter()
        .filter(|d| std::path::Path::new(d).is_dir())
        .collect();
    let hide: String = dirs.iter().map(|d| format!("mount -t tmpfs tmpfs {d} && ")).collect();
    let exe = std::env::current_exe().unwrap();
    let script = format!("{hide}exec \"$0\" --exact plots_are_drawn_with_the_system_fonts_hidden --test-threads 1");
    let out =
        Command::new("unshare").args(["-m", "sh", "-c", &script]).arg(&exe).env("ZONELAB_FONTS_HIDDEN", "1").output();
    match out {
        Ok(out) if out.status.success() => {
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("1 passed"), "the inner run ran the test: {stdout}");
        }
        Ok(out) if String::from_utf8_lossy(&out.stdout).contains("panicked") => {
            panic!("with the fonts hidden: {}", String::from_utf8_lossy(&out.stdout));
        }
        other => eprintln!("skipped: no mount namespace here ({other:?})"),
    }
}
