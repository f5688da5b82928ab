//! `zonelab replay` of `serve --record` recordings: the replayed command
//! stream is the recorded one; the replay's reports equal the live run's
//! (`--recorded`) on the same device, in either loop; bad recordings exit 2
//! naming file, line and field; `serve --record` refuses an existing file.

mod common;

use common::zonelab;

const DEVICE: [&str; 4] = ["--zones", "8", "--zone-size", "64m"];

/// Two queues, QD 1 on the first; the second's append went without waiting.
const RECORDING: &str = "zonelab recording 1
1 0 0 1 1.1 1 - 0 success - write 0 8
2 0 100000 100001 1.1 1 1 0 success - write 8 8
3 0 200000 200001 1.1 1 2 0 success - read 0 16
4 0 200000 200001 1.2 1 - 0 success - append 16384 2
5 0 300000 300001 1.1 1 3 0 success - zone finish 0
6 0 400000 400001 1.1 1 5 0 success - zone reset 0 all
7 0 400000 400001 1.1 1 6 0 success - flush
";

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-record-replay-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn run(args: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(DEVICE);
    zonelab(&all, "")
}

/// The command stream of a recording: NSID, OP and ARGS of each line.
fn stream(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let lines = text.lines().skip(1).filter(|l| !l.starts_with('#'));
    lines.map(|l| l.split(' ').enumerate().filter(|&(i, _)| i == 5 || i >= 10).map(|(_, w)| w).collect()).collect()
}

#[test]
fn a_replay_sends_the_recorded_stream_and_reports_what_the_live_run_did() {
    let dir = scratch("same");
    let (rec, first, second) = (dir.join("rec"), dir.join("first"), dir.join("second"));
    std::fs::write(&rec, RECORDING).unwrap();
    let out = run(&["replay", rec.to_str().unwrap(), "--record", first.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stream(&first), stream(&rec), "the device saw the recorded commands in order");
    // `first` holds the replay's own times on this device: replaying it again, in either loop, is the same run.
    let recorded = run(&["replay", first.to_str().unwrap(), "--recorded", "--output-format=json+"]);
    for mode in ["open", "closed"] {
        let args = ["replay", first.to_str().unwrap(), "--loop", mode, "--output-format=json+"];
        let replayed = run(&args);
        assert!(replayed.status.success());
        assert_eq!(String::from_utf8_lossy(&replayed.stdout), String::from_utf8_lossy(&recorded.stdout), "{mode}");
    }
    let args = ["replay", first.to_str().unwrap(), "--loop", "closed", "--record", second.to_str().unwrap()];
    assert!(run(&args).status.success());
    let body = |p: &std::path::Path| std::fs::read_to_string(p).unwrap().lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_eq!(body(&second), body(&first), "a closed loop on the same device reproduces every time and dependency");
    let json: serde_json::Value = serde_json::from_slice(&recorded.stdout).unwrap();
    let job = &json["jobs"][0];
    assert_eq!((job["read"]["total_ios"].as_u64(), job["write"]["total_ios"].as_u64()), (Some(1), Some(3)));
    assert_eq!(job["trim"]["total_ios"].as_u64(), Some(2), "zone management is fio's trim");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_slower_device_stretches_a_closed_loop_and_not_an_open_one() {
    let dir = scratch("slow");
    let rec = dir.join("rec");
    std::fs::write(&rec, RECORDING).unwrap();
    let read_latency = |mode: &str| {
        let args = ["replay", rec.to_str().unwrap(), "--loop", mode, "--set", "controller.write_ns=5ms"];
        let out = run(&[&args[..], &["--output-format=json"]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json["jobs"][0]["read"]["clat_ns"]["mean"].as_f64().unwrap()
    };
    let (open, closed) = (read_latency("open"), read_latency("closed"));
    assert!(open > 100.0 * closed, "open loop: the read arrives while the slow writes it waited for still run");
    let issued = |mode: &str, record: &std::path::Path| {
        let args = ["replay", rec.to_str().unwrap(), "--loop", mode, "--set", "controller.write_ns=5ms"];
        assert!(run(&[&args[..], &["--record", record.to_str().unwrap()]].concat()).status.success());
        let text = std::fs::read_to_string(record).unwrap();
        let read = text.lines().find(|l| l.contains(" read ")).unwrap().to_string();
        read.split(' ').nth(2).unwrap().parse::<u64>().unwrap()
    };
    assert_eq!(issued("open", &dir.join("open")), 200_000, "open loop: at its recorded time");
    assert!(issued("closed", &dir.join("closed")) > 10_000_000, "closed loop: after the two 5 ms writes");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_recordings_and_options_exit_2_saying_why() {
    let dir = scratch("bad");
    let bad = dir.join("bad");
    std::fs::write(&bad, "zonelab recording 1\n1 0 0 1 1.1 1 - 0 success - write 0\n").unwrap();
    let out = run(&["replay", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let expected = format!("zonelab: {}:2: field 'nlb': missing\n", bad.display());
    assert_eq!(String::from_utf8_lossy(&out.stderr), expected);
    let iolog = dir.join("iolog");
    std::fs::write(&iolog, "fio version 3 iolog\n0 zns write 0 4096\n").unwrap();
    let out = run(&["replay", iolog.to_str().unwrap(), "--recorded"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("only a zonelab recording"));
    let off_wp = dir.join("off");
    std::fs::write(&off_wp, "zonelab recording 1\n1 0 0 1 1.1 1 - 0 success - write 8 8\n").unwrap();
    let out = run(&["replay", off_wp.to_str().unwrap(), "--output-format=terse"]);
    assert_eq!(out.status.code(), Some(1), "a command ending otherwise than recorded");
    assert!(String::from_utf8_lossy(&out.stderr).contains("recorded success, replayed zone_invalid_write"));
    let out = zonelab(&["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--record", bad.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("File exists"), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}
