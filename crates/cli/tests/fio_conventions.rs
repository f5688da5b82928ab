//! `zonelab run` keeps fio's conventions: exit status of a failed job, group
//! reporting sums, `--opt value`, `--cmdhelp`. Where fio is installed the
//! same relations are checked on fio's own output.

use std::process::{Command, Output};

fn zonelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonelab")).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.code().is_some(), "killed: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)))
}

/// fio itself, or None (skipped) unless CI requires it.
fn fio(args: &[&str]) -> Option<Output> {
    match Command::new("fio").args(args).output() {
        Ok(out) => Some(out),
        Err(_) => {
            assert!(std::env::var_os("ZONELAB_REQUIRE_FIO").is_none(), "fio is required (ZONELAB_REQUIRE_FIO)");
            eprintln!("fio missing: skipped (scripts/test installs Debian's fio)");
            None
        }
    }
}

#[test]
fn a_job_with_an_io_error_exits_1_with_the_error_in_the_report() {
    // Eight zones' worth of writes into one 1 MiB zone without zonemode=zbd:
    // the write after the zone is full fails, as on a real ZNS drive.
    let args = ["run", "--name=w", "--rw=write", "--size=1m", "--io_size=8m", "--zones=4", "--zone-size=1m"];
    let normal = zonelab(&args);
    assert_eq!(normal.status.code(), Some(1), "{}", text(&normal.stderr));
    assert!(text(&normal.stdout).contains("err= 5 (func=io_u error, error=Input/output error"));
    assert!(text(&normal.stderr).contains("io_u error on job w"), "{}", text(&normal.stderr));
    let report = json(&zonelab(&[&args[..], &["--output-format", "json"]].concat()));
    assert_eq!(report["jobs"][0]["error"], 5);
    // The same job within the zone succeeds: the status is the error's, not the command's.
    let ok = zonelab(&["run", "--name=w", "--rw=write", "--size=1m", "--zones=4", "--zone-size=1m"]);
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
}

/// fio's own rule too: a job whose writes fail makes fio exit non-zero.
#[test]
fn fio_itself_exits_non_zero_when_a_job_fails() {
    let Some(out) = fio(&["--name=x", "--filename=/dev/full", "--rw=write", "--bs=4k", "--size=16k"]) else {
        return;
    };
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stdout));
    assert!(text(&out.stdout).contains("err=28"), "{}", text(&out.stdout));
}

/// Four rate-limited readers: per-job IOPS are steady, so the group's
/// iops_mean is 4x a job's if summed (fio's pure_sum) and 1x if averaged.
const GROUP_JOB: [&str; 9] = [
    "--name=g",
    "--rw=randread",
    "--bs=4k",
    "--size=64m",
    "--numjobs=4",
    "--rate_iops=1000",
    "--runtime=2s",
    "--time_based",
    "--output-format=json",
];

fn read_stats(report: &serde_json::Value) -> Vec<&serde_json::Value> {
    report["jobs"].as_array().unwrap().iter().map(|job| &job["read"]).collect()
}

fn f(value: &serde_json::Value) -> f64 {
    value.as_f64().unwrap_or_else(|| panic!("{value} is not a number"))
}

#[test]
fn group_reporting_sums_iops_and_bw_statistics_over_the_jobs() {
    let each = json(&zonelab(&[&["run"], &GROUP_JOB[..]].concat()));
    let group = json(&zonelab(&[&["run", "--group_reporting"], &GROUP_JOB[..]].concat()));
    let (jobs, group) = (read_stats(&each), read_stats(&group));
    assert_eq!((jobs.len(), group.len()), (4, 1));
    let group = group[0];
    for key in ["iops_mean", "bw_mean", "iops_min", "iops_max", "bw_min", "bw_max", "iops_samples", "bw_samples"] {
        let sum: f64 = jobs.iter().map(|job| f(&job[key])).sum();
        assert!((f(&group[key]) - sum).abs() < 1e-3 * sum.max(1.0), "{key}: group {} vs sum {sum}", group[key]);
    }
    assert!(f(&group["iops_mean"]) > 3000.0, "{group}");
    assert_eq!(
        json(&zonelab(&[&["run", "--group_reporting"], &GROUP_JOB[..]].concat()))["jobs"][0]["job_runtime"],
        8000,
        "fio adds the jobs' runtimes"
    );
}

/// The relation on fio's own JSON: in one group, iops_mean is near the
/// group's iops (the sum over the jobs), not near a quarter of it.
#[test]
fn group_iops_mean_relates_to_iops_as_in_fios_own_json() {
    let fio_job = [&["--ioengine=null", "--group_reporting"], &GROUP_JOB[..]].concat();
    let ours = json(&zonelab(&[&["run", "--group_reporting"], &GROUP_JOB[..]].concat()));
    let Some(theirs) = fio(&fio_job) else {
        return;
    };
    for (who, report) in [("zonelab", &ours), ("fio", &json(&theirs))] {
        let read = read_stats(report)[0];
        let ratio = f(&read["iops_mean"]) / f(&read["iops"]);
        assert!((0.8..1.25).contains(&ratio), "{who}: iops_mean/iops = {ratio} ({read})");
        let ratio = f(&read["bw_mean"]) / f(&read["bw"]);
        assert!((0.8..1.25).contains(&ratio), "{who}: bw_mean/bw = {ratio} ({read})");
    }
}

#[test]
fn options_take_their_value_from_the_next_argument_as_fio_does() {
    let spaced =
        zonelab(&["run", "--name", "w", "--rw", "write", "--bs", "8k", "--size", "1m", "--output-format", "json"]);
    assert!(spaced.status.success(), "{}", text(&spaced.stderr));
    let joined = zonelab(&["run", "--name=w", "--rw=write", "--bs=8k", "--size=1m", "--output-format=json"]);
    assert_eq!(spaced.stdout, joined.stdout, "both spellings are the same job");
    let report = json(&spaced);
    assert_eq!(report["jobs"][0]["jobname"], "w");
    assert_eq!(report["jobs"][0]["write"]["io_bytes"], 1 << 20);
    assert_eq!(report["jobs"][0]["write"]["total_ios"], 128, "8 KiB blocks");
}

#[test]
fn cmdhelp_lists_options_and_describes_one() {
    let all = zonelab(&["run", "--cmdhelp"]);
    assert!(all.status.success());
    assert!(text(&all.stdout).lines().count() > 200, "every fio option");
    let one = zonelab(&["run", "--cmdhelp=blocksize"]);
    assert!(one.status.success());
    assert!(text(&one.stdout).starts_with("                  bs: "), "{}", text(&one.stdout));
    let unknown = zonelab(&["run", "--cmdhelp=ioengin"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("did you mean 'ioengine'"), "{}", text(&unknown.stderr));
}
