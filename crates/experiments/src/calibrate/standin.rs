//! A simulated drive in place of real fio and nvme-cli, to test the whole
//! profile loop without hardware: [`fio_json`] runs a job file as
//! `zonelab run --output-format=json` does (parse, engine, fio's JSON
//! report), and [`timed_csv`] writes the file `run.sh` writes, timing each
//! command as the script does, with a process start added to every timing.

use super::profile::{Manifest, BASELINE_SAMPLES, TIMED_SAMPLES};
use super::rows::Op;
use crate::characterization::device_runs::{fill, mgmt, submit};
use crate::error::Result;
use std::fmt::Write as _;
use zonelab_device::{Command, Device, DeviceConfig, ReportFilter, ZoneAction};
use zonelab_sim::SEC;
use zonelab_workload::fio::parse::parse_job_file;
use zonelab_workload::fio::report::json_report;
use zonelab_workload::fio::run::{Engine, RunOptions};

/// fio's JSON report of `text` (a job file named `name`) on a device of `config`.
pub fn fio_json(config: &DeviceConfig, name: &str, text: &str, seed: u64) -> Result<String> {
    let set = parse_job_file(name, text)?;
    let mut device = Device::with_tracking(config.clone(), zonelab_device::Tracking::NONE)?;
    let options = RunOptions { seed, ..RunOptions::default() };
    let result = Engine::new(&mut device, &set, &options)?.run(&mut |_| {})?;
    Ok(serde_json::to_string_pretty(&json_report(&set, &result, false)).expect("reports serialise") + "\n")
}

/// `results/timed.csv` as `run.sh` writes it, on a device of `config`;
/// `process_ns` is what starting nvme-cli costs, added to every timing
/// (with a small spread, as a real one has).
pub fn timed_csv(config: &DeviceConfig, m: &Manifest, process_ns: u64) -> Result<String> {
    let mut dev = Device::with_tracking(config.clone(), zonelab_device::Tracking::NONE)?;
    let (zone_lbas, zcap) = (dev.layout().zone_lbas, dev.layout().zcap_lbas);
    let first = m.zones_needed - u64::from(TIMED_SAMPLES);
    let jitter = |i: u64| process_ns / 50 * (i % 5) / 4;
    let mut csv = String::from("kind,op,lbas,zone,ns\n");
    let mut t = 0;
    for i in 0..u64::from(BASELINE_SAMPLES) {
        let c = submit(
            &mut dev,
            t,
            &Command::ReportZones { slba: first * zone_lbas, filter: ReportFilter::All, max_zones: 1, partial: false },
        )?;
        let _ = writeln!(csv, "baseline,report,0,{first},{}", c.complete_ns - c.submit_ns + process_ns + jitter(i));
        t = c.complete_ns;
    }
    for p in &m.timed {
        for i in 0..u64::from(TIMED_SAMPLES) {
            let (zone, slba) = (first + i, (first + i) * zone_lbas);
            t = submit(&mut dev, t, &mgmt(ZoneAction::Reset, slba))?.complete_ns;
            if p.lbas < zcap {
                t = submit(&mut dev, t, &mgmt(ZoneAction::Open, slba))?.complete_ns;
            }
            t = fill(&mut dev, zone, p.lbas, t)? + SEC;
            let action = if p.op == Op::Finish { ZoneAction::Finish } else { ZoneAction::Reset };
            let c = submit(&mut dev, t, &mgmt(action, slba))?;
            let op = if p.op == Op::Finish { "finish" } else { "reset" };
            let _ =
                writeln!(csv, "sample,{op},{},{zone},{}", p.lbas, c.complete_ns - c.submit_ns + process_ns + jitter(i));
            t = c.complete_ns;
        }
    }
    Ok(csv)
}
