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
        assert!(String::from_utf8_lossy(&out.stderr).starts_with("zonelab: "), "{bad:?}");
    }
}
