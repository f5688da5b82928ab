//! `zonelab run` prints fio's report formats (terse, normal, JSON), writes
//! fio's log files and follows fio's verify and exit rules. Where fio is
//! installed the same jobs run under fio too and the shapes of the two
//! outputs are compared; without fio those checks are skipped, unless
//! ZONELAB_REQUIRE_FIO=1 (scripts/test) makes a missing fio a failure.

use std::path::Path;
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
