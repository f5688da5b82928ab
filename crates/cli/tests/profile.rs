//! `zonelab profile` and its run.sh as a user runs them: the plan, the
//! script's refusals (no real device needed: every case must refuse before
//! touching anything), and `zonelab calibrate DIR` on a job `zonelab run` ran.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn zonelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonelab")).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-profile-cli-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A quick plan for `device` in a new directory.
fn plan(name: &str, device: &str) -> PathBuf {
    let dir = scratch(name);
    let out = zonelab(&["profile", "--out", dir.to_str().unwrap(), "--device-path", device, "--quick"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    dir
}

fn run_sh(dir: &Path, args: &[&str]) -> Output {
    Command::new("bash").arg(dir.join("run.sh")).args(args).output().expect("bash runs")
}

#[test]
fn the_plan_is_written_and_a_directory_with_files_is_refused() {
    let dir = plan("write", "/dev/ng0n2");
    let stdout = text(&zonelab(&["profile", "--help"]).stdout);
    assert!(stdout.contains("--device-path"), "{stdout}");
    let jobs = std::fs::read_dir(dir.join("jobs")).unwrap().count();
    assert_eq!(jobs, 19);
    assert!(dir.join("plan.json").is_file() && dir.join("run.sh").is_file() && dir.join(".zonelab-out").is_file());
    let again = zonelab(&["profile", "--out", dir.to_str().unwrap(), "--device-path", "/dev/ng0n2"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("--force"), "{}", text(&again.stderr));
    let forced = zonelab(&["profile", "--out", dir.to_str().unwrap(), "--device-path", "/dev/ng0n2", "--force"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert_eq!(std::fs::read_dir(dir.join("jobs")).unwrap().count(), 67, "the full plan replaced the quick one");
    let zero =
        zonelab(&["profile", "--out", scratch("zero").to_str().unwrap(), "--device-path", "x", "--runtime-ms", "0"]);
    assert_eq!(zero.status.code(), Some(2));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn run_sh_refuses_anything_but_a_confirmed_zoned_namespace() {
    let dir = plan("refuse", "/dev/ng0n2");
    let file = dir.join("ng0n1");
    std::fs::write(&file, "not a device").unwrap();
    let link = dir.join("ng3n1");
    std::os::unix::fs::symlink("/dev/null", &link).unwrap();
    let (file, link) = (file.to_str().unwrap(), link.to_str().unwrap());
    let cases: [(&[&str], &str); 7] = [
        (&[], "refusing to run: it destroys all data on /dev/ng0n2; say so with --destroy-data-on /dev/ng0n2"),
        (&["--destroy-data-on", "/dev/ng9n9"], "--destroy-data-on names '/dev/ng9n9', but the device is '/dev/ng0n2'"),
        (&["--device", "/dev/ng7n7", "--destroy-data-on", "/dev/ng0n2"], "but the device is '/dev/ng7n7'"),
        (&["--destroy-data-on=/nonexistent/ng0n1", "--device=/nonexistent/ng0n1"], "/nonexistent/ng0n1 does not exist"),
        (&["--device", file, "--destroy-data-on", file], "is neither an NVMe namespace"),
        (&["--device", "/dev/null", "--destroy-data-on", "/dev/null"], "is neither an NVMe namespace"),
        (&["--device", link, "--destroy-data-on", link], "is neither an NVMe namespace"),
    ];
    for (args, needle) in cases {
        let out = run_sh(&dir, args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    let unknown = run_sh(&dir, &["--yes"]);
    assert!(text(&unknown.stderr).contains("unknown argument '--yes'"), "{}", text(&unknown.stderr));
    assert!(!dir.join("results").exists(), "a refusal writes nothing");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn calibrate_reads_a_job_zonelab_run_ran_and_names_a_bad_result_file() {
    let dir = plan("calibrate", "/dev/nvme0n2");
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    // The job file runs unchanged with `zonelab run`, as with fio.
    let job = dir.join("jobs/read-4k-qd1-j1.fio");
    let json = results.join("read-4k-qd1-j1.json");
    let run = zonelab(&[
        "run",
        "--set",
        "controller.read_ns=4us",
        "--quiet",
        "--output-format=json",
        "--output",
        json.to_str().unwrap(),
        job.to_str().unwrap(),
    ]);
    assert!(run.status.success(), "{}", text(&run.stderr));
    let out = scratch("calibrate-out");
    let args = [
        "calibrate",
        dir.to_str().unwrap(),
        "--fit",
        "controller.read_ns",
        "--folds",
        "0",
        "--max-evals",
        "8",
        "--out",
        out.to_str().unwrap(),
    ];
    let cal = zonelab(&args);
    assert!(cal.status.success(), "{}", text(&cal.stderr));
    assert!(text(&cal.stderr).contains("no result for write-4k-qd1-j1"), "{}", text(&cal.stderr));
    let csv = std::fs::read_to_string(out.join("measurements.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2 + 5, "{csv}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("## Identifiability") && report.contains("| controller.read_ns |"), "{report}");
    assert!(out.join("fitted.toml").is_file());
    let report = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(report.contains("\"identifiability\"") && report.contains("\"rms_elasticity\""), "{report}");
    // A directory that is not a profile's is refused as before, saying what it lacks.
    let plain = zonelab(&["calibrate", out.to_str().unwrap(), "--out", scratch("plain-out").to_str().unwrap()]);
    assert_eq!(plain.status.code(), Some(2));
    assert!(
        text(&plain.stderr).contains("is a directory, not a file (nor a `zonelab profile` directory"),
        "{}",
        text(&plain.stderr)
    );
    // A result fio cut short: exit 2, the file and what is wrong.
    std::fs::write(&json, "{\"fio version\": \"fio-3.33\", \"jobs\": [{\"jobname\": \"main\"").unwrap();
    let bad = zonelab(&["calibrate", dir.to_str().unwrap(), "--out", scratch("bad-out").to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = text(&bad.stderr);
    assert!(stderr.contains("read-4k-qd1-j1.json: line 1 column") && stderr.contains("not fio's JSON"), "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&out).ok();
}
