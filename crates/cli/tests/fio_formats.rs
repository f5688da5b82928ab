//! `zonelab run` prints fio's report formats (terse, normal, JSON), writes
//! fio's log files and follows fio's verify and exit rules. Where fio is
//! installed the same jobs run under fio too and the shapes of the two
//! outputs are compared; without fio those checks are skipped, unless
//! ZONELAB_REQUIRE_FIO=1 (scripts/test) makes a missing fio a failure.

mod common;
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
        (&["--output-format=json,xml"][..], "invalid value 'xml' for '--output-format"),
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

/// The JSON paths of every key under `value`, `skip` subtrees left out.
fn key_paths(value: &serde_json::Value, path: &str, skip: &[&str], out: &mut std::collections::BTreeSet<String>) {
    let Some(object) = value.as_object() else { return };
    for (key, inner) in object {
        let inner_path = format!("{path}/{key}");
        if !skip.contains(&key.as_str()) {
            key_paths(inner, &inner_path, skip, out);
            out.insert(inner_path);
        }
    }
}

/// An example job file as zonelab runs it here: shorter than the papers'
/// runs, everything else as printed (as `every_example_job_file_runs` does).
fn short_for_zonelab(text: &str) -> String {
    let short = text.replace("runtime=30", "runtime=10ms").replace("ramp_time=10", "ramp_time=2ms");
    short.replace("runtime=10\n", "runtime=10ms\n").replace("runtime=5\n", "runtime=10ms\n")
}

/// The same job file as real fio runs it on its null engine: no device, no
/// zonemode=zbd (fio would need a zoned block device), zones as 16 MiB, short
/// runs, and none of the ConfZNS++ options (`zone_append`, `finish`,
/// `softfinish`) or zonelab's `scheduler`, which fio does not know. A file
/// without a size (the namespace) gets 16 MiB in each section.
fn for_fio(text: &str) -> String {
    let sized = text.lines().any(|l| l.trim_start().starts_with("size="));
    let dropped = ["filename", "zonemode", "zone_append", "finish", "softfinish", "softfinish_chunk", "scheduler"];
    let mut out = String::new();
    for line in text.lines() {
        let body = line.split([';', '#']).next().unwrap_or_default().trim();
        let (name, value) = body.split_once('=').map_or((body, None), |(n, v)| (n.trim(), Some(v.trim())));
        let line = match (name, value) {
            _ if body.is_empty() || body.starts_with('[') => body.to_string(),
            (name, _) if dropped.contains(&name) => continue,
            ("ioengine", _) => "ioengine=null".into(),
            ("runtime", _) => "runtime=200ms".into(),
            ("ramp_time", _) => "ramp_time=0".into(),
            (name, Some(zones)) if zones.ends_with('z') => {
                let zones: u64 = zones.trim_end_matches('z').parse().expect("a count of zones");
                format!("{name}={}m", zones * 16)
            }
            _ => body.to_string(),
        };
        out.push_str(&line);
        out.push('\n');
        if body.starts_with('[') && !sized {
            out.push_str("size=16m\n");
        }
    }
    out
}

/// Every example job file runs under zonelab and under fio (on its null
/// engine) and the two JSON reports have the same keys, job by job, but for
/// what zonelab adds on purpose: `zone_resets` (zonemode=zbd), the disk
/// statistics of a block layer (fio's null engine has no disk), and the
/// trim statistics of ConfZNS++'s finish operations, which fio has not.
#[test]
fn every_example_job_file_has_fios_json_keys() {
    let dir = scratch("fio-formats-examples");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/fio");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&examples).unwrap().map(|e| e.unwrap().path()).collect();
    paths.sort();
    assert!(paths.len() >= 7, "{paths:?}");
    for path in paths {
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let job = std::fs::read_to_string(&path).unwrap();
        std::fs::write(dir.join(&name), short_for_zonelab(&job)).unwrap();
        let mut args = vec!["run", &name, "--output-format=json", "--quiet"];
        args.extend(common::example_device_args(&job));
        let ours: serde_json::Value = serde_json::from_str(&ok(&zonelab_in(&dir, &args))).unwrap();
        if job.contains("fdp=1") {
            // fio 3.33 has no FDP, and its null engine cannot fetch reclaim unit handles.
            assert!(ours["zonelab"]["namespaces"][0]["fdp"]["stats"]["write_amplification"].is_number(), "{name}");
            continue;
        }
        let fio_name = format!("fio-{name}");
        std::fs::write(dir.join(&fio_name), for_fio(&job)).unwrap();
        let Some(out) = fio_in(&dir, &["--output-format=json", &fio_name]) else { return };
        assert_eq!(out.status.code(), Some(0), "{name}: {}", text(&out.stderr));
        let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        compare_keys(&name, &ours, &theirs, job.contains("finish=1"));
    }
}

fn compare_keys(name: &str, ours: &serde_json::Value, theirs: &serde_json::Value, finishes: bool) {
    let top = |v: &serde_json::Value| -> Vec<String> {
        v.as_object().unwrap().keys().filter(|k| *k != "disk_util").cloned().collect()
    };
    assert_eq!(top(ours), top(theirs), "{name}: top-level keys");
    let (our_jobs, their_jobs) = (ours["jobs"].as_array().unwrap(), theirs["jobs"].as_array().unwrap());
    assert_eq!(our_jobs.len(), their_jobs.len(), "{name}: jobs");
    for (our, their) in our_jobs.iter().zip(their_jobs) {
        let (mut a, mut b) = (Default::default(), Default::default());
        // A job's options are as written, and the two files differ there.
        key_paths(our, "", &["job options"], &mut a);
        key_paths(their, "", &["job options"], &mut b);
        let fio_only: Vec<&String> = b.difference(&a).collect();
        assert!(fio_only.is_empty(), "{name}, job {}: fio's keys zonelab lacks: {fio_only:?}", our["jobname"]);
        let extra = a.difference(&b).filter(|k| *k != "/zone_resets" && !(finishes && k.starts_with("/trim/")));
        let extra: Vec<&String> = extra.collect();
        assert!(extra.is_empty(), "{name}, job {}: keys fio has not: {extra:?}", our["jobname"]);
    }
}

/// The kind of a line of fio's normal report, whatever its numbers and units;
/// repeated kinds (percentile rows, latency distribution lines) count once.
fn line_kinds(report: &str) -> Vec<&'static str> {
    const KINDS: [(&str, &str); 22] = [
        ("Starting ", "starting"),
        ("fio-3.33", "version"),
        ("Run status group ", "group"),
        ("   READ: bw=", "group read"),
        ("  WRITE: bw=", "group write"),
        ("Disk stats (read/write):", "disk stats"),
        ("  read: IOPS=", "read"),
        ("  write: IOPS=", "write"),
        ("    slat (", "slat"),
        ("    clat (", "clat"),
        ("     lat (", "lat"),
        ("    clat percentiles (", "clat percentiles"),
        ("     |", "percentile row"),
        ("   bw (", "bw"),
        ("   iops        : min=", "iops"),
        ("  lat (", "latency distribution"),
        ("  cpu          : usr=", "cpu"),
        ("  IO depths    : 1=", "depths"),
        ("     submit    : 0=", "submit"),
        ("     complete  : 0=", "complete"),
        ("     issued rwts: total=", "issued"),
        ("     latency   : target=", "latency target"),
    ];
    let mut kinds: Vec<&'static str> = Vec::new();
    for line in report.lines() {
        let kind = KINDS.iter().find(|(prefix, _)| line.starts_with(prefix)).map(|(_, kind)| *kind);
        let kind = kind.unwrap_or_else(|| {
            if line.is_empty() {
                "blank"
            } else if line.contains(": (g=") {
                "job"
            } else if line.contains(": (groupid=") {
                "entry"
            } else if line.contains(": ios=") {
                "disk"
            } else {
                panic!("a line of no known kind: {line:?}\n{report}")
            }
        });
        if kinds.last() != Some(&kind) || kind == "blank" {
            kinds.push(kind);
        }
    }
    kinds
}

#[test]
fn the_normal_report_has_fios_lines_in_fios_order() {
    let job = ["--name=r", "--rw=read", "--bs=4k", "--ioengine=psync", "--size=16m", "--runtime=1", "--time_based"];
    let ours = ok(&zonelab(&[&["run", "--quiet"], &job[..]].concat()));
    let kinds = line_kinds(&ours);
    for kind in ["read", "clat", "lat", "clat percentiles", "bw", "iops", "latency distribution", "submit", "disk"] {
        assert!(kinds.contains(&kind), "{kind}: {ours}");
    }
    let dir = scratch("fio-formats-normal");
    std::fs::write(dir.join("f"), vec![0u8; 16 << 20]).unwrap();
    let Some(out) = fio_in(&dir, &[&["--filename=f"], &job[..]].concat()) else { return };
    let theirs = text(&out.stdout);
    assert_eq!(line_kinds(&theirs), kinds, "fio's report:\n{theirs}\nzonelab's:\n{ours}");
}

/// fio 3.33 writes a version 3 iolog of a file target (`write_iolog`); zonelab
/// replays it (`read_iolog`) with the same I/O counts and bytes.
#[test]
fn iologs_fio_writes_replay_in_zonelab() {
    let dir = scratch("iolog_from_fio");
    let common = ["--filename=data", "--size=1M", "--bs=64k", "--output-format=terse"];
    for (rw, engine, log) in [("write", "psync", "w.log"), ("read", "null", "r.log")] {
        let args = [
            &[
                format!("--name={rw}"),
                format!("--rw={rw}"),
                format!("--ioengine={engine}"),
                format!("--write_iolog={log}"),
            ][..],
            &common.map(String::from),
        ]
        .concat();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let Some(out) = fio_in(&dir, &args) else { return };
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    assert!(std::fs::read_to_string(dir.join("w.log")).unwrap().starts_with("fio version 3 iolog\n"));
    let job = "[global]\nioengine=psync\n[w]\nread_iolog=w.log\n[r]\nstonewall\nread_iolog=r.log\n";
    std::fs::write(dir.join("replay.fio"), job).unwrap();
    let report: serde_json::Value =
        serde_json::from_str(&ok(&zonelab_in(&dir, &["run", "--output-format=json", "replay.fio"]))).unwrap();
    let jobs = report["jobs"].as_array().unwrap();
    for (job, ddir) in jobs.iter().zip(["write", "read"]) {
        assert_eq!(job["error"], 0, "{job}");
        assert_eq!(job[ddir]["io_bytes"], 1 << 20, "{ddir}");
        assert_eq!(job[ddir]["total_ios"], 16, "{ddir}");
    }
}

/// `zonelab replay` runs a recording as one `read_iolog` job and prints fio's JSON.
#[test]
fn replay_runs_a_recording_open_or_closed_loop() {
    let dir = scratch("replay_command");
    let mut log = String::from("fio version 3 iolog\n0 dev add\n");
    for block in 0..8u64 {
        log.push_str(&format!("{} dev write {} 65536\n", (block + 1) * 1000, block * 65536));
    }
    std::fs::write(dir.join("w.log"), log).unwrap();
    let runtime_ms = |args: &[&str]| {
        let report: serde_json::Value = serde_json::from_str(&ok(&zonelab_in(&dir, args))).unwrap();
        let job = &report["jobs"][0];
        assert_eq!((job["error"].as_u64(), job["write"]["total_ios"].as_u64()), (Some(0), Some(8)), "{job}");
        job["write"]["runtime"].as_u64().unwrap()
    };
    // Open loop keeps the log's 1 ms gaps, 100 times longer at --time-scale 1 (percent); closed loop drops them.
    assert_eq!(runtime_ms(&["replay", "w.log"]), 8);
    assert_eq!(runtime_ms(&["replay", "w.log", "--time-scale", "1"]), 800);
    assert_eq!(runtime_ms(&["replay", "--loop=closed", "--iodepth", "4", "--zones", "8", "w.log"]), 0);
    let out = zonelab_in(&dir, &["replay", "w.log", "--loop", "sideways"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stderr), "zonelab: --loop 'sideways': use open or closed\n");
    let out = zonelab_in(&dir, &["replay", "missing.log"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
