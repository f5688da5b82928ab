//! End-to-end tests of `zonelab fs-bench` and `zonelab reproduce znsplus`.

use std::process::{Command, Output};

fn zonelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonelab")).args(args).output().expect("binary runs")
}

const SMALL: [&str; 6] = ["--fs-size", "768m", "--write", "32m", "--utilization", "0.8"];

#[test]
fn fs_bench_prints_fio_style_json_and_is_repeatable() {
    let mut args = vec!["fs-bench", "--workload", "varmail", "--recycling", "zns+", "--output-format", "json"];
    args.extend(SMALL);
    let a = zonelab(&args);
    assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["jobname"], "varmail");
    assert_eq!(job["recycling"], "zns+");
    assert!(job["write"]["io_bytes"].as_u64().unwrap() >= 32 << 20);
    assert!(job["fs"]["throughput_mb_s"].as_f64().unwrap() > 0.0);
    assert!(job["fsync_lat_ns"]["N"].as_u64().unwrap() > 0, "varmail fsyncs");
    let b = zonelab(&args);
    assert_eq!(a.stdout, b.stdout, "same options, same bytes");
}

#[test]
fn fs_bench_bad_options_exit_2() {
    for bad in [
        &["fs-bench", "--workload", "nope"][..],
        &["fs-bench", "--recycling", "lfs"],
        &["fs-bench", "--medium", "qlc"],
        &["fs-bench", "--copyback", "maybe"],
        &["fs-bench", "--plugging", "xyz"],
        &["fs-bench", "--chips", "3"],
        &["fs-bench", "--utilization", "1.5"],
        &["fs-bench", "--fs-size", "64m"],
        &["reproduce", "znsplus", "--jobs", "0"],
    ] {
        let out = zonelab(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&out.stderr));
        // zonelab's own errors, or clap's for values outside a closed set.
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.starts_with("zonelab: ") || err.starts_with("error: "), "{bad:?}: {err}");
    }
    let typo = zonelab(&["fs-bench", "--workload", "varmial"]);
    let err = String::from_utf8_lossy(&typo.stderr);
    assert!(err.contains("fileserver, varmail, tpcc, ycsb-a, ycsb-f") && err.contains("'varmail'"), "{err}");
}

/// A run shorter than one 100 ms utilization interval has no samples: 0.0%, not "-0.0%".
#[test]
fn a_tiny_run_prints_no_negative_zero() {
    let out =
        zonelab(&["fs-bench", "--fs-size", "768m", "--write", "1m", "--utilization", "0.8", "--workload", "varmail"]);
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains("chip utilization 0.0%"), "{report}");
    assert!(!report.contains("-0.0"), "{report}");
}

/// Every figure and table as CSV, SVG and PNG, on tiny runs (`--smoke`: the files, not the numbers).
#[test]
fn reproduce_znsplus_writes_csv_svg_and_png_for_every_figure() {
    let dir = std::env::temp_dir().join(format!("zonelab-znsplus-{}", std::process::id()));
    let out = zonelab(&["reproduce", "znsplus", "--smoke", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for name in [
        "claims",
        "fig6_compaction_time",
        "table4_media",
        "fig7_threaded_logging",
        "table5_tl_bp",
        "fig8_utilization",
        "fig9_chip_utilization",
        "fig10_utilization_series",
        "fig11_copyback_allocation",
        "fig12_pcie_lanes",
    ] {
        let csv = std::fs::read_to_string(dir.join(format!("{name}.csv"))).unwrap();
        // A header at least: runs this short may end before the first 100 ms point of Fig 10.
        assert!(csv.lines().next().is_some_and(|h| h.contains(',')), "{name}: {csv}");
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}.png");
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        assert!(svg.starts_with("<svg") || svg.starts_with("<?xml"), "{name}.svg: {}", &svg[..svg.len().min(80)]);
        assert!(svg.trim_end().ends_with("</svg>"), "{name}.svg is complete");
        assert!(readme.contains(&format!("![{name}]({name}.svg)")), "{name} in README.md");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `--fs-size 1t` panicked in mkfs ("a full checkpoint must fit one zone")
/// after 37 s; `--write 16777215t` ran forever. Both are refused at once.
#[test]
fn sizes_beyond_what_the_simulator_can_do_exit_2() {
    for (args, needle) in [
        (&["fs-bench", "--fs-size", "1t", "--write", "16m"][..], "a full checkpoint"),
        (&["fs-bench", "--fs-size", "768m", "--write", "16777215t"], "more than 16 times the file system"),
    ] {
        let out = zonelab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.starts_with("zonelab: ") && err.contains(needle), "{args:?}: {err}");
    }
}
