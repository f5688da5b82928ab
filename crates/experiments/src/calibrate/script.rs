//! `run.sh` of a profile: runs the plan's jobs with real fio and times the
//! management points with nvme-cli, on a drive whose data it destroys, so
//! it refuses to start unless every check passes (docs/profile.md lists
//! them). Its fixed part is `profile_run.sh`; the plan's values come first.

use super::profile::{Manifest, BASELINE_SAMPLES, TIMED_SAMPLES};
use super::rows::Op;
use std::fmt::Write as _;

/// The script's body: checks, zone resets, the job loop, the timed points.
const BODY: &str = include_str!("profile_run.sh");

/// Quotes `s` for a POSIX shell.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// `run.sh` for `manifest`.
pub fn run_sh(m: &Manifest) -> String {
    let mut head = String::from(
        "#!/usr/bin/env bash\n# zonelab profile: runs this plan's fio jobs and timed zone commands on a zoned NVMe \
         namespace.\n# IT DESTROYS EVERY BYTE ON THE DEVICE. Usage: ./run.sh --destroy-data-on DEVICE [--device \
         DEVICE]\n#   [--only JOB] [--skip-timed]. docs/profile.md says what it checks and how it times.\n",
    );
    let _ = writeln!(head, "set -euo pipefail\nPLAN_DEVICE={}", quote(&m.device_path));
    let _ = writeln!(
        head,
        "ZONE_BYTES={}\nZCAP_BYTES={}\nLBA_BYTES={}\nZONES_NEEDED={}\nSAMPLES={TIMED_SAMPLES}\nBASELINE_SAMPLES={BASELINE_SAMPLES}",
        m.zone_bytes, m.zcap_bytes, m.lba_bytes, m.zones_needed
    );
    // Jobs as "name needs" pairs; timed points as "op lbas".
    let jobs: Vec<String> =
        m.jobs.iter().map(|j| format!("{}:{}", j.name, j.needs.as_deref().unwrap_or("-"))).collect();
    let _ = writeln!(head, "JOBS=({})", jobs.iter().map(|j| quote(j)).collect::<Vec<_>>().join(" "));
    let timed: Vec<String> =
        m.timed.iter().map(|t| format!("{}:{}", if t.op == Op::Finish { "finish" } else { "reset" }, t.lbas)).collect();
    let _ = writeln!(head, "TIMED=({})", timed.join(" "));
    head + BODY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_keeps_a_path_one_word() {
        assert_eq!(quote("/dev/ng0n2"), "'/dev/ng0n2'");
        assert_eq!(quote("a'b"), "'a'\\''b'");
    }
}
