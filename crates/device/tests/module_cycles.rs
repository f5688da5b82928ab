//! The device crate's modules form no import cycle once the inherent `impl`
//! blocks count too: `scripts/module-cycles` reads the sources and treats an
//! `impl Device` outside `device.rs` as `device.rs` calling into that module,
//! so a client added as one more `impl` block of a layer's type fails here.

use std::path::Path;
use std::process::Command;

#[test]
fn the_device_crate_has_no_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let script = root.join("../../scripts/module-cycles");
    let out = Command::new("python3")
        .arg(&script)
        .arg(root.join("src"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "module cycles in crates/device/src:\n{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.lines().any(|l| l.starts_with("0 cycles among ")), "unexpected report: {report}");
}
