//! `reproduce characterization` through the plan runner: shards and the
//! result store (`--shard`, `--store`).

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

fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap()))
        .collect();
    out.sort();
    out
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
