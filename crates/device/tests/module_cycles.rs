//! A crate's modules form no import cycle once the inherent `impl` blocks
//! count too: `scripts/module-cycles` reads the sources and treats an
//! `impl Device` outside `device.rs` as `device.rs` calling into that module,
//! so a client added as one more `impl` block of a layer's type fails here.
//! The file system crate runs this same file on its own sources
//! (`crates/fs/tests/module_cycles.rs`): `CARGO_MANIFEST_DIR` names the crate.

use std::path::Path;
use std::process::Command;

#[test]
fn the_crate_has_no_module_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("src");
    let script = root.join("../../scripts/module-cycles");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "module cycles in {}:\n{report}{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(report.lines().any(|l| l.starts_with("0 cycles among ")), "unexpected report: {report}");
}
