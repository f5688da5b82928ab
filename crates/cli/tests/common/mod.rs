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
