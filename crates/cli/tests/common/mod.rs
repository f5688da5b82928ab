//! What the binary's test files share (each uses some of it: a test
//! binary compiles this module on its own, hence the `dead_code` allowance).
#![allow(dead_code)]

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// Runs `zonelab ARGS` with `stdin` as its standard input; its output.
pub fn zonelab(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    // A command that refuses its options exits without reading stdin: a broken pipe here is expected.
    let _ = child.stdin.take().expect("stdin").write_all(stdin.as_bytes());
    child.wait_with_output().expect("the binary exits")
}

/// The address a `zonelab serve --nvme-tcp` child listens on, from the line
/// it prints first ("... on nvme-tcp ADDR ...").
pub fn announced_address(server: &mut std::process::Child) -> std::net::SocketAddr {
    use std::io::BufRead;
    let mut line = String::new();
    std::io::BufReader::new(server.stdout.take().expect("stdout piped")).read_line(&mut line).expect("a line");
    let addr = line.split_whitespace().skip_while(|w| *w != "nvme-tcp").nth(1).expect("the address");
    addr.parse().expect("an address")
}

/// The FDP device examples/fio/fdp-hot-cold.fio names: the zn540-fdp cut
/// down to 144 MiB of flash under a 100 MiB namespace, 2 reclaim unit handles.
pub const SMALL_FDP_DEVICE: [&str; 28] = [
    "--device",
    "zn540-fdp",
    "--set",
    "flash.channels=4",
    "--set",
    "flash.chips_per_channel=1",
    "--set",
    "flash.planes_per_die=1",
    "--set",
    "flash.blocks_per_plane=48",
    "--set",
    "flash.pages_per_block=48",
    "--set",
    "mapping.d_zone=4",
    "--set",
    "namespace.zones=100",
    "--set",
    "namespace.conventional_zones=100",
    "--set",
    "namespace.zone_size_bytes=1m",
    "--set",
    "namespace.zone_capacity_bytes=1m",
    "--set",
    "write_buffer.zone_buffer_bytes=1m",
    "--set",
    "conventional.gc_free_blocks_start=3",
    "--set",
    "fdp.handles=2",
];

/// The device options an example job file runs with in the tests: an FDP
/// job (`fdp=1`) needs an FDP namespace, the others the zn540 cut to 40
/// zones, 8 of them conventional.
pub fn example_device_args(job: &str) -> Vec<&'static str> {
    if job.lines().any(|l| l.trim() == "fdp=1") {
        return SMALL_FDP_DEVICE.to_vec();
    }
    vec!["--zones", "40", "--conventional-zones", "8"]
}
