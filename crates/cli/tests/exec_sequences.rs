//! Command sequences that once panicked the model (and, sent over NVMe/TCP,
//! stopped the server for every host): each must now run to its end with
//! a status for every command.

mod common;
use common::zonelab;

/// Runs `trace` through `zonelab exec ARGS`; returns its stdout lines
/// after checking it exited 0 without a panic.
fn exec_lines(args: &[&str], trace: &str) -> Vec<serde_json::Value> {
    let mut full = vec!["exec"];
    full.extend(args);
    let out = zonelab(&full, trace);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON completion"))
        .collect();
    assert_eq!(lines.len(), trace.lines().count(), "a completion per command: {stderr}");
    lines
}

/// A copy whose source block is not the first of its chunk read the chunk
/// from that block on, past the page's end, on a device whose page rows are
/// interleaved over its planes (zn540).
#[test]
fn compaction_from_the_middle_of_a_source_chunk() {
    for trace in [
        concat!(
            "{\"op\":\"zone_compaction\",\"src\":[441],\"dst\":[1553]}\n",
            "{\"op\":\"zone_compaction\",\"src\":[1130],\"dst\":[1812]}\n",
        ),
        concat!(
            "{\"op\":\"zone_compaction\",\"src\":[44,17],\"dst\":[44,47]}\n",
            "{\"op\":\"zone_compaction\",\"src\":[256,1],\"dst\":[256,257]}\n",
        ),
    ] {
        for line in exec_lines(&[], trace) {
            assert_eq!(line["status"], "success", "{line}");
        }
    }
}

/// A finish of no firmware time (`management.finish_ns=0`) is still a step
/// of its task: waiting for it must not count it as none.
#[test]
fn finish_all_without_firmware_time_behind_an_async_compaction() {
    let trace = concat!(
        "{\"op\":\"zone_compaction\",\"src\":[57486,57523,57525,57576,57580,57594,57599],",
        "\"dst\":[24576,24577,24578,24579,24580,24581,24582],\"async\":true}\n",
        "{\"op\":\"write\",\"slba\":0,\"nlb\":3,\"async\":true}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":49152,\"select_all\":true}\n",
    );
    let lines = exec_lines(&["--device", "znand", "--zones", "8", "--set", "management.finish_ns=0"], trace);
    assert_eq!(lines[2]["status"], "success", "{}", lines[2]);
}
