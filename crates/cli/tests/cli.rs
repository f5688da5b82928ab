//! End-to-end tests of the `zonelab` binary.

use std::io::Write;
use std::process::{Command, Output, Stdio};

fn zonelab(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const TRACE: &str = concat!(
    "{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"pattern\":9}\n",
    "{\"op\":\"append\",\"zslba\":0,\"nlb\":4,\"async\":true}\n",
    "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
    "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":0}\n",
    "{\"op\":\"report_zones\",\"slba\":0,\"filter\":\"full\",\"max\":2,\"partial\":false}\n",
    "{\"op\":\"zone_mgmt\",\"action\":\"reset\",\"select_all\":true}\n",
    "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
);

#[test]
fn exec_runs_a_trace_with_the_device_options() {
    let out = zonelab(
        &["exec", "--zones", "8", "--zone-size", "1m", "--zone-capacity", "512k", "--max-open", "2", "--data", "-"],
        TRACE,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 7);
    assert_eq!(lines[1]["lba"], 8);
    assert_eq!(lines[2]["pattern"], 9);
    assert_eq!(lines[4]["nr_zones"], 1);
    assert_eq!(lines[4]["zones"][0]["wp"], 128, "512 KiB capacity = 128 LBAs");
    assert_eq!(lines[6]["pattern"], 0, "reset zones read as zeros");
}

#[test]
fn same_trace_gives_byte_identical_output() {
    for preset in ["zn540", "tlc", "mlc", "znand"] {
        let a = zonelab(&["exec", "--device", preset, "--seed", "7"], TRACE);
        let b = zonelab(&["exec", "--device", preset, "--seed", "7"], TRACE);
        assert!(a.status.success(), "{preset}: {}", text(&a.stderr));
        assert_eq!(a.stdout, b.stdout, "{preset}");
    }
}

#[test]
fn malformed_trace_is_located_and_exits_2() {
    let trace = "{\"op\":\"identify\"}\n{\"op\":\"write\",\"slba\":0,\"nlb\":\"eight\"}\n{\"op\":\"identify\"}\n";
    let out = zonelab(&["exec"], trace);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout).lines().count(), 1, "results of the lines before the bad one");
    let err = text(&out.stderr);
    let first: serde_json::Value = serde_json::from_str(err.lines().next().unwrap()).unwrap();
    assert_eq!(first["line"], 2);
    assert!(first["error"].as_str().unwrap().contains("\"nlb\""), "{err}");
}

#[test]
fn bad_device_options_exit_2_with_what_to_change() {
    let cases: [(&[&str], &str); 6] = [
        (&["exec", "--device", "zn999"], "unknown device 'zn999'"),
        (&["exec", "--zone-size", "3m"], "power of two"),
        (&["exec", "--set", "flash.pages_per_blok=3"], "pages_per_block"),
        (&["exec", "--set", "namespace.max_open_zones"], "PATH=VALUE"),
        (&["exec", "--max-open", "20", "--max-active", "10"], "MOR must be <= MAR"),
        (&["exec", "--zone-capacity", "3g"], "capacity must be at most the zone size"),
    ];
    for (args, needle) in cases {
        let out = zonelab(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(needle), "{args:?}: {}", text(&out.stderr));
    }
}

#[test]
fn device_show_prints_a_loadable_toml() {
    let out = zonelab(&["device", "show", "zn540", "--zones", "3688"], "");
    assert!(out.status.success());
    let toml_text = text(&out.stdout);
    assert!(toml_text.contains("zones = 3688"));
    let dir = std::env::temp_dir().join(format!("zonelab-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dev.toml");
    std::fs::write(&path, &toml_text).unwrap();
    let out = zonelab(&["exec", "--device", path.to_str().unwrap()], "{\"op\":\"identify\"}\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"nr_zones\":3688"));
    std::fs::write(&path, toml_text.replace("page_bytes = 16384", "page_bytes = 16385")).unwrap();
    let out = zonelab(&["exec", "--device", path.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("dev.toml") && text(&out.stderr).contains("page_bytes"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn demo_runs() {
    let out = zonelab(&["demo"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"state\":\"full\""));
}
