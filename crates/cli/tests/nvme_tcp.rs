//! `zonelab serve --nvme-tcp` as a process: bad options exit 2 saying why; a
//! server comes up on an ephemeral port, answers an ICReq, and stops cleanly
//! on SIGTERM with its statistics.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};

fn zonelab(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_zonelab")).args(args).output().unwrap()
}

#[test]
fn bad_options_exit_2_saying_why() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let cases: [(&[&str], &str); 9] = [
        (&["serve", "--nvme-tcp", "--nqn", "zonelab"], "--nqn zonelab"),
        (&["serve", "--nvme-tcp", "--listen", "localhost"], "--listen"),
        (&["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--namespace", "zn999"], "--namespace zn999"),
        (&["serve", "--nvme-tcp", "--listen", &taken], "cannot listen on"),
        (&["serve", "--listen", "127.0.0.1:4420"], "--nvme-tcp"),
        (&["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--connection-memory", "64k"], "--connection-memory"),
        (&["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--total-memory", "2m"], "--total-memory"),
        (&["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--max-connections", "0"], "--max-connections"),
        (&["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--icreq-timeout", "5"], "--icreq-timeout"),
    ];
    for (args, expected) in cases {
        let out = zonelab(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn a_server_answers_and_stops_cleanly_on_sigterm() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .args(["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--zones", "8", "--zone-size", "1m", "--pace", "asap"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = common::announced_address(&mut server);
    let mut host = TcpStream::connect(addr).unwrap();
    let mut icreq = [0u8; 128];
    icreq[..8].copy_from_slice(&[0x00, 0x00, 128, 0, 128, 0, 0, 0]);
    host.write_all(&icreq).unwrap();
    let mut icresp = [0u8; 128];
    host.read_exact(&mut icresp).unwrap();
    assert_eq!(&icresp[..4], &[0x01, 0x00, 128, 0], "ICResp");
    let status = Command::new("kill").args(["-TERM", &server.id().to_string()]).status().unwrap();
    assert!(status.success());
    let out = server.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("zonelab serve: 0 requests"));
    let mut rest = [0u8; 1];
    assert_eq!(host.read(&mut rest).unwrap_or(0), 0, "the connection is closed");
}
