//! `zonelab run` prints fio's report formats (terse, normal, JSON), writes
//! fio's log files and follows fio's verify and exit rules. Where fio is
//! installed the same jobs run under fio too and the shapes of the two
//! outputs are compared; without fio those checks are skipped, unless
//! ZONELAB_REQUIRE_FIO=1 (scripts/test) makes a missing fio a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn zonelab_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonelab")).current_dir(dir).args(args).output().expect("binary runs")
}

fn zonelab(args: &[&str]) -> Output {
    zonelab_in(Path::new("."), args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// fio itself, run in `dir`, or None (skipped) unless ZONELAB_REQUIRE_FIO is set.
fn fio_in(dir: &Path, args: &[&str]) -> Option<Output> {
    match Command::new("fio").current_dir(dir).args(args).output() {
        Ok(out) => Some(out),
        Err(_) => {
            assert!(std::env::var_os("ZONELAB_REQUIRE_FIO").is_none(), "fio is required (ZONELAB_REQUIRE_FIO)");
            eprintln!("fio missing: skipped (scripts/test installs Debian's fio)");
            None
        }
    }
}

/// A fresh scratch directory under the target directory, emptied if a
/// previous run of the same test left it.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch directory");
    dir
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Each line of a log file as its fields but the value and the time, which differ between fio and zonelab.
fn log_shape(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| l.split(", ").skip(2).map(str::to_string).collect()).collect()
}

/// What kind of value a terse field holds, so that fio's and zonelab's lines
/// compare field by field whatever the numbers.
fn field_kind(field: &str) -> &'static str {
    let decimals = |s: &str| s.split_once('.').map(|(i, d)| (i.chars().all(|c| c.is_ascii_digit()), d.len()));
    if let Some((percent, value)) = field.split_once("%=") {
        assert!(value.parse::<u64>().is_ok(), "{field}");
        return if percent == "0" { "unused percentile" } else { "percentile" };
    }
    if let Some(number) = field.strip_suffix('%') {
        return match decimals(number) {
            Some((true, 1)) => "x.x%",
            Some((true, 2)) => "x.xx%",
            Some((true, 6)) => "x.xxxxxx%",
            _ => "other %",
        };
    }
    if field.parse::<u64>().is_ok() {
        return "integer";
    }
    match decimals(field) {
        Some((true, 6)) => "x.xxxxxx",
        _ => "text",
    }
}

fn kinds(line: &str) -> Vec<&'static str> {
    line.trim_end().split(';').map(field_kind).collect()
}

/// A job both fio (on its null engine) and zonelab (passthrough: no disk
/// statistics, as fio's null engine has none) run.
const TERSE_JOB: [&str; 6] =
    ["--name=t", "--rw=randrw", "--bs=4k", "--size=16m", "--io_size=4m", "--percentile_list=50:99:99.9"];

#[test]
fn minimal_prints_fio_3_33s_terse_version_3() {
    // A conventional zone takes the random writes.
    let ours = zonelab(&[&["run", "--conventional-zones=1", "--ioengine=spdk", "--minimal"], &TERSE_JOB[..]].concat());
    let ours = ok(&ours);
    assert_eq!(ours.lines().count(), 1, "{ours}");
    let ours = kinds(&ours);
    assert_eq!(ours.len(), 121);
    let Some(theirs) = fio_in(Path::new("."), &[&["--ioengine=null", "--minimal"], &TERSE_JOB[..]].concat()) else {
        return;
    };
    let theirs = text(&theirs.stdout);
    assert_eq!(kinds(&theirs), ours, "field kinds, fio's line: {theirs}");
}

#[test]
fn output_formats_select_and_order_the_reports_as_fio_does() {
    let job = ["run", "--name=t", "--rw=write", "--size=1m", "--quiet"];
    let terse = ok(&zonelab(&[&job[..], &["--output-format=terse"]].concat()));
    assert_eq!(terse, ok(&zonelab(&[&job[..], &["--minimal"]].concat())));
    assert!(terse.starts_with("3;fio-3.33"), "{terse}");
    // Normal and terse: the job lines, the terse line, then the statistics.
    let both = ok(&zonelab(&[&job[..], &["--append-terse"]].concat()));
    let lines: Vec<&str> = both.lines().collect();
    assert!(lines[0].starts_with("t: (g=0): rw=write") && lines[2].starts_with("Starting 1 process"), "{both}");
    assert_eq!(lines[3], terse.trim_end());
    assert!(lines[5].starts_with("t: (groupid=0, jobs=1)"), "{both}");
    // Terse, then JSON.
    let mixed = ok(&zonelab(&[&job[..], &["--output-format=json,terse"]].concat()));
    let (first, json) = mixed.split_once('\n').unwrap();
    assert_eq!(first, terse.trim_end());
    let json: serde_json::Value = serde_json::from_str(json).expect("JSON after the terse line");
    assert_eq!(json["jobs"][0]["jobname"], "t");
    for (args, message) in [
        (&["--terse-version=4", "--minimal"][..], "terse version 3 only"),
        (&["--output-format=xml"][..], "'xml' is not a format"),
    ] {
        let out = zonelab(&[&job[..], args].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(message), "{}", text(&out.stderr));
    }
}

/// Sequential 4 KiB reads and writes of 1 MiB: 256 I/Os for fio (null engine) and zonelab alike.
const LOG_JOB: [&str; 9] = [
    "--name=l",
    "--rw=write",
    "--bs=4k",
    "--size=1m",
    "--write_lat_log=l",
    "--write_bw_log=l",
    "--write_iops_log=l",
    "--log_offset=1",
    "--thread",
];

#[test]
fn log_files_have_fios_names_and_lines() {
    let ours = scratch("fio-formats-logs-zonelab");
    ok(&zonelab_in(&ours, &[&["run", "--ioengine=spdk", "--quiet"], &LOG_JOB[..]].concat()));
    let names = file_names(&ours);
    assert_eq!(names, ["l_bw.1.log", "l_clat.1.log", "l_iops.1.log", "l_lat.1.log", "l_slat.1.log"]);
    for name in ["l_lat.1.log", "l_clat.1.log", "l_bw.1.log", "l_iops.1.log"] {
        let lines = log_shape(&ours.join(name));
        assert_eq!(lines.len(), 256, "{name}: a line per I/O");
        // ddir, block size, offset, priority.
        assert_eq!(lines[1], ["1", "4096", "4096", "0"], "{name}");
    }
    // A second run finds the files and writes nothing.
    let again = zonelab_in(&ours, &[&["run", "--ioengine=spdk", "--quiet"], &LOG_JOB[..]].concat());
    assert_eq!(again.status.code(), Some(2));
    let stderr = text(&again.stderr);
    assert!(stderr.contains("command line: option 'write_lat_log': log file 'l_lat.1.log' exists"), "{stderr}");
    assert_eq!(log_shape(&ours.join("l_lat.1.log")).len(), 256);
    let theirs = scratch("fio-formats-logs-fio");
    let Some(out) = fio_in(&theirs, &[&["--ioengine=null", "--output=/dev/null"], &LOG_JOB[..]].concat()) else {
        return;
    };
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(file_names(&theirs), names);
    for name in ["l_lat.1.log", "l_clat.1.log", "l_bw.1.log", "l_iops.1.log"] {
        assert_eq!(log_shape(&theirs.join(name)), log_shape(&ours.join(name)), "{name}");
    }
}
