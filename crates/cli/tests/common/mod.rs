//! What the binary's test files share.

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
