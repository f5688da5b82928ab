//! `zonelab serve` in a build without the `ublk` feature (the default): it must
//! say how to get the transport instead of failing to build or panicking.

#![cfg(not(feature = "ublk"))]

use std::process::Command;

#[test]
fn serve_without_the_ublk_feature_says_how_to_build_it() {
    let out = Command::new(env!("CARGO_BIN_EXE_zonelab")).args(["serve", "--ublk"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--features ublk"), "{stderr}");
    assert!(stderr.contains("libclang"), "{stderr}");
}

#[test]
fn serve_checks_device_options_before_the_missing_transport() {
    let out = Command::new(env!("CARGO_BIN_EXE_zonelab")).args(["serve", "--ublk", "--zones", "0"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("--features ublk"), "the bad option is reported first: {stderr}");
}
