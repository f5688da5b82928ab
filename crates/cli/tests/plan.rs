//! `reproduce characterization`, `reproduce znsplus` and `calibrate`
//! through the plan runner: shards and the result store (`--shard`, `--store`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-plan-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

/// Runs the quick obs09 and obs10 experiments: (stdout, stderr).
fn reproduce(out: &Path, extra: &[&str]) -> (String, String) {
    let mut args = vec!["reproduce", "characterization", "--quick", "--only", "obs1", "--out"];
    args.push(out.to_str().unwrap());
    args.extend(extra);
    let output = Command::new(env!("CARGO_BIN_EXE_zonelab")).args(&args).output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "{args:?}: {stderr}");
    (String::from_utf8(output.stdout).unwrap(), stderr)
}

/// The files of `dir` and of its subdirectories (one level), by relative name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for path in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_file() {
            out.push((name, std::fs::read(&path).unwrap()));
        } else {
            out.extend(files(&path).into_iter().map(|(n, bytes)| (format!("{name}/{n}"), bytes)));
        }
    }
    out.sort();
    out
}

/// Runs zonelab with `args` and then `extra`: (stdout, stderr); it must succeed.
fn zonelab(args: &[&str], extra: &[&str]) -> (String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_zonelab")).args(args).args(extra).output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "{args:?} {extra:?}: {stderr}");
    (String::from_utf8(output.stdout).unwrap(), stderr)
}

/// Runs `args --out DIR/serial`, then shards 0/2 and 1/2 into a store, then
/// again from the store: each must write what the serial run wrote, and the
/// rerun must run nothing.
fn shards_equal_the_serial_run(name: &str, args: &[&str]) {
    let root = temp_dir(name);
    let out = |d: &str| root.join(d).to_str().unwrap().to_string();
    let (serial, _) = zonelab(args, &["--out", &out("serial")]);
    let store = out("store");
    let (first, stderr) = zonelab(args, &["--out", &out("sharded"), "--store", &store, "--shard", "0/2"]);
    assert!(first.is_empty(), "one shard of two writes nothing: {first}");
    assert!(stderr.contains("runs are not in the store yet"), "{stderr}");
    assert!(!root.join("sharded").exists(), "one shard of two writes nothing");
    let (second, _) = zonelab(args, &["--out", &out("sharded"), "--store", &store, "--shard", "1/2"]);
    assert_eq!(second, serial.replace(&out("serial"), &out("sharded")));
    assert_eq!(files(&root.join("sharded")), files(&root.join("serial")));
    let stored = files(Path::new(&store));
    let (again, stderr) = zonelab(args, &["--out", &out("again"), "--store", &store]);
    assert_eq!(again, serial.replace(&out("serial"), &out("again")));
    assert!(stderr.contains("runs already in the store, 0 run now"), "{stderr}");
    assert_eq!(files(Path::new(&store)), stored, "a rerun appends nothing");
    assert_eq!(files(&root.join("again")), files(&root.join("serial")));
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn calibrate_by_shards_writes_what_the_serial_run_does_and_a_rerun_runs_nothing() {
    let measurements = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/measurements/zn540.csv");
    // I/O rows, management at an intensity (a standalone run it needs), and a command sequence.
    let only = ["--only", "C2 Fig 3a reset side,T14", "--runtime-ms", "50", "--jobs", "2"];
    shards_equal_the_serial_run("calibrate", &[&["calibrate", measurements][..], &only].concat());
}

#[test]
fn reproduce_znsplus_by_shards_writes_what_the_serial_run_does_and_a_rerun_runs_nothing() {
    shards_equal_the_serial_run("znsplus", &["reproduce", "znsplus", "--smoke", "--jobs", "2"]);
}

#[test]
fn bad_shards_of_calibrate_and_znsplus_are_usage_errors() {
    let measurements = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/measurements/zn540.csv");
    for (args, shard) in [
        (&["calibrate", measurements][..], "3/2"),
        (&["calibrate", measurements][..], "1/0"),
        (&["reproduce", "znsplus", "--smoke"][..], "one/2"),
        (&["reproduce", "znsplus", "--smoke"][..], "1"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_zonelab"))
            .args(args)
            .args(["--shard", shard, "--store", "/nonexistent"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} --shard {shard}: {stderr}");
        assert!(stderr.contains(&format!("shard '{shard}': use INDEX/COUNT")), "{stderr}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .args(["calibrate", measurements, "--fit", "controller.write_ns", "--shard", "0/2", "--store", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("do not apply to --fit"));
}

#[test]
fn two_shards_render_what_the_serial_run_does_and_a_rerun_runs_nothing() {
    let root = temp_dir("shards");
    let (serial, _) = reproduce(&root.join("serial"), &[]);
    let store = root.join("store");
    let store_arg = store.to_str().unwrap();
    let (first, stderr) = reproduce(&root.join("sharded"), &["--store", store_arg, "--shard", "0/2"]);
    assert!(first.is_empty(), "one shard of two renders nothing: {first}");
    assert!(stderr.contains("runs are not in the store yet"), "{stderr}");
    let (second, _) = reproduce(&root.join("sharded"), &["--store", store_arg, "--shard", "1/2"]);
    assert_eq!(second, serial, "the shard that completes the store renders the serial run's summary");
    assert_eq!(files(&root.join("sharded")), files(&root.join("serial")));
    let stored = files(&store);
    assert_eq!(
        stored.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        ["shard-0-of-2.jsonl", "shard-1-of-2.jsonl"]
    );
    // A rerun finds every run in the store: it runs nothing and renders the same.
    let (again, stderr) = reproduce(&root.join("again"), &["--store", store_arg]);
    assert_eq!(again, serial);
    assert!(stderr.contains("runs already in the store, 0 run now"), "{stderr}");
    assert!(!stderr.contains("running"), "{stderr}");
    assert_eq!(files(&store), stored, "nothing is appended");
    std::fs::remove_dir_all(&root).ok();
}

#[test]
fn a_bad_shard_or_store_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .args(["reproduce", "characterization", "--quick", "--shard", "2/2", "--store", "/tmp"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("INDEX/COUNT"));
    let store = temp_dir("bad-store");
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("results.jsonl"), "{\"key\": 1}\nnot json\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .args(["reproduce", "characterization", "--quick", "--only", "obs09", "--store", store.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("results.jsonl: line 1"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(&store).ok();
}
