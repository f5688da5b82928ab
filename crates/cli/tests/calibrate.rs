//! `zonelab calibrate` as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn zonelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonelab")).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-calibrate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn shipped() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/measurements/zn540.csv").display().to_string()
}

#[test]
fn a_malformed_row_exits_2_naming_file_line_and_column() {
    let dir = scratch("bad");
    let file = dir.join("m.csv");
    let good = "T1,me,Fig 1,4096,spdk,write,4096,1,1,1,,kiops,85,\n";
    let bad = "T2,me,Fig 1,4096,spdk,write,4096,1,1,1,,kiops,fast,\n";
    let header = "id,source,figure,lba_bytes,stack,op,bs,qd,jobs,zones,background,metric,value,notes\n";
    std::fs::write(&file, format!("# zonelab-measurements v1\n{header}{good}{bad}")).unwrap();
    let out = zonelab(&["calibrate", file.to_str().unwrap(), "--out", dir.join("out").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("m.csv:4: column 'value'"), "{err}");
    assert!(!dir.join("out").exists(), "nothing written for a bad file");
}

#[test]
fn a_fit_writes_the_report_and_a_preset_the_device_option_loads() {
    let dir = scratch("fit");
    let out_dir = dir.join("out");
    let args = [
        "calibrate",
        &shipped(),
        "--only",
        "T0017",
        "--fit",
        "controller.write_ns",
        "--folds",
        "0",
        "--max-evals",
        "6",
        "--runtime-ms",
        "50",
        "--jobs",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    let out = zonelab(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("1 rows: 1 compared"), "{}", text(&out.stdout));
    for file in ["rows.csv", "report.json", "report.md", "fitted.toml"] {
        assert!(out_dir.join(file).exists(), "{file}");
    }
    let md = std::fs::read_to_string(out_dir.join("report.md")).unwrap();
    assert!(md.contains("| controller.write_ns | 5400 |"), "{md}");
    let fitted = out_dir.join("fitted.toml");
    let show = zonelab(&["device", "show", fitted.to_str().unwrap()]);
    assert!(show.status.success(), "{}", text(&show.stderr));
    assert!(text(&show.stdout).contains("name = \"zn540-fitted\""));
}

#[test]
fn a_tail_weight_without_a_fit_or_not_positive_exits_2() {
    let dir = scratch("weight");
    let out_dir = dir.join("out");
    let out = zonelab(&[
        "calibrate",
        &shipped(),
        "--only",
        "T0017",
        "--fit-tail-weight",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--fit-tail-weight weighs the rows of a fit"), "{}", text(&out.stderr));
    let args = ["calibrate", &shipped(), "--only", "T0017", "--fit", "controller.write_ns", "--fit-tail-weight", "0"];
    let out = zonelab(&[&args[..], &["--out", out_dir.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("must be a positive number"), "{}", text(&out.stderr));
    assert!(!out_dir.exists(), "nothing written");
}

/// `calibrate /dev/zero` read the device for ever (7 GB in 30 s); every input file is now opened as the other
/// commands open theirs: a device node or directory exits 2 at once, saying what it is.
#[cfg(unix)]
#[test]
fn device_nodes_and_directories_as_measurements_exit_2_at_once() {
    let dir = scratch("nodes");
    let out = dir.join("out");
    for (input, needle) in [
        ("/dev/zero", "measurements file: /dev/zero is a device node, not a file"),
        ("/", "measurements file: / is a directory, not a file"),
    ] {
        let started = std::time::Instant::now();
        let run = zonelab(&["calibrate", input, "--out", out.to_str().unwrap()]);
        assert_eq!(run.status.code(), Some(2), "{input}: {}", text(&run.stderr));
        assert!(text(&run.stderr).contains(needle), "{input}: {}", text(&run.stderr));
        assert!(started.elapsed().as_secs() < 10, "{input} was read");
    }
    assert!(!out.exists(), "nothing written");
}

/// A management job at 0% intensity panicked calibrate (a rate of 0 per second); it is a located error now.
#[test]
fn a_zero_intensity_exits_2_naming_file_line_column_and_range() {
    let dir = scratch("zero");
    let file = dir.join("m.csv");
    let header = "id,source,figure,lba_bytes,stack,op,bs,qd,jobs,zones,background,metric,value,notes\n";
    let row =
        "T1,ConfZNS++,C2,4096,io_uring_cmd,reset,,1,1,,write 8KiB QD1 x1 jobs; reset job at 0% intensity,per_s,0.6,\n";
    std::fs::write(&file, format!("# zonelab-measurements v1\n{header}{row}")).unwrap();
    let out = zonelab(&["calibrate", file.to_str().unwrap(), "--out", dir.join("out").to_str().unwrap()]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("m.csv:3: column 'background'") && err.contains("use 0.01 to 100"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}
