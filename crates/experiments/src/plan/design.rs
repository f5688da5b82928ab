//! The ConfZNS++ management design-space study: one run is one device
//! design (finish and reset configuration, zone mapping) under one
//! foreground workload with finishes or resets in the background at one
//! intensity. Its result: the foreground's throughput and the management
//! operations' latency, from which the study plots throughput lost against
//! management latency per design.

use super::DeviceSpec;
use crate::characterization::fio_runs::{self as fio, percentile_us};
use crate::error::Result;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use zonelab_workload::fio::job::{Scheduler, DDIR_TRIM};

const JOB: (&str, &str) = ("management.fio", include_str!("../../jobs/design/management.fio"));

/// The foreground of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// Writers at the write pointer, one zone each.
    Writers,
    /// Zone Append writers.
    Appenders,
    /// Random readers of pre-filled zones.
    Readers,
}

/// The background management operation of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Management {
    /// No management: the baseline throughput.
    None,
    /// Zone Finish of freshly opened zones.
    Finish,
    /// Zone Reset of full zones.
    Reset,
}

/// One point of the management design-space study: a design under a workload and a management load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DesignRun {
    /// The design's name (its `set` entries in `device` are the design).
    pub design: String,
    /// The device with the design's settings.
    pub device: DeviceSpec,
    /// The foreground.
    pub workload: Workload,
    /// The background management.
    pub management: Management,
    /// Think time between management operations (e.g. 2ms): the intensity.
    pub think: String,
    /// Threads (writers, appenders) or queue depth (readers).
    pub concurrency: u32,
    /// Simulated time of the measured part (e.g. 100ms).
    pub runtime: String,
    /// Seed of the run's random numbers.
    pub seed: u64,
}

impl DesignRun {
    /// A short description for progress lines.
    pub fn label(&self) -> String {
        let workload = serde_json::to_value(self.workload).expect("enums serialize");
        let management = serde_json::to_value(self.management).expect("enums serialize");
        format!(
            "{} {} {} think {}",
            self.design,
            workload.as_str().unwrap_or(""),
            management.as_str().unwrap_or(""),
            self.think
        )
    }

    /// The job file, filled in, with the sections this run does not use dropped.
    fn job_text(&self, zone_bytes: u64, zone_capacity_bytes: u64) -> Result<String> {
        // Zones: writers from 0, readers' data from READ_OFFSET, full zones to reset after
        // them, zones to open and finish from FINISH_OFFSET.
        const READ_OFFSET: u32 = 16;
        const READ_ZONES: u32 = 4;
        const FULL_ZONES: u32 = 16;
        const FINISH_OFFSET: u32 = READ_OFFSET + READ_ZONES + FULL_ZONES;
        const FINISH_ZONES: u32 = 64;
        let readers = self.workload == Workload::Readers;
        let resets = self.management == Management::Reset;
        let prefill_zones = if resets { READ_ZONES + FULL_ZONES } else { READ_ZONES };
        let (fg_offset, fg_size, fg_increment) = if readers { (READ_OFFSET, READ_ZONES, 0) } else { (0, 1, 1) };
        let vars = [
            ("READ_OFFSET", READ_OFFSET.to_string()),
            ("PREFILL_ZONES", prefill_zones.to_string()),
            ("PREFILL_BYTES", (u64::from(prefill_zones) * zone_capacity_bytes).to_string()),
            ("FULL_OFFSET", (READ_OFFSET + READ_ZONES).to_string()),
            ("FULL_ZONES", FULL_ZONES.to_string()),
            ("ZONE_BYTES", zone_bytes.to_string()),
            ("RW", if readers { "randread" } else { "write" }.to_string()),
            ("APPEND", u8::from(self.workload == Workload::Appenders).to_string()),
            ("QD", if readers { self.concurrency } else { 1 }.to_string()),
            ("THREADS", if readers { 1 } else { self.concurrency }.to_string()),
            ("FG_OFFSET", fg_offset.to_string()),
            ("FG_SIZE", fg_size.to_string()),
            ("FG_INCREMENT", fg_increment.to_string()),
            ("RUNTIME", self.runtime.clone()),
            ("THINK", self.think.clone()),
            ("FINISH_OFFSET", FINISH_OFFSET.to_string()),
            ("FINISH_ZONES", FINISH_ZONES.to_string()),
        ];
        let mut text = fio::substitute(JOB.1, &vars)?;
        if self.management != Management::Finish {
            text = fio::drop_section(&text, "finish");
        }
        if !resets {
            text = fio::drop_section(&text, "resets");
        }
        if !resets && !readers {
            text = fio::drop_section(&text, "prefill");
        }
        Ok(text)
    }
}

/// Runs one design point: foreground KIOPS and MiB/s, and the management
/// operations' count and latency (mean, p99) in µs.
pub fn run(spec: &DesignRun) -> Result<Value> {
    let config = spec.device.config()?;
    let text = spec.job_text(config.namespace.zone_size_bytes, config.namespace.zone_capacity_bytes)?;
    let result = fio::run_seeded(config, JOB.0, &text, Scheduler::None, spec.seed)?;
    let fg = result.entry("foreground")?;
    let dir = if spec.workload == Workload::Readers { fio::read(fg) } else { fio::write(fg) };
    let mut out = json!({
        "foreground_kiops": fio::kiops(dir),
        "foreground_mib_s": fio::mib_s(dir),
        "management_ops": 0,
        "management_lat_mean_us": null,
        "management_lat_p99_us": null,
    });
    let background = match spec.management {
        Management::None => None,
        Management::Finish => Some(result.entry("finish")?),
        Management::Reset => Some(result.entry("resets")?),
    };
    if let Some(bg) = background {
        let trim = &bg.dirs[DDIR_TRIM];
        out["management_ops"] = trim.total_ios.into();
        if trim.total_ios > 0 {
            out["management_lat_mean_us"] = (trim.clat.mean() / 1e3).into();
            out["management_lat_p99_us"] = percentile_us(trim, 99.0).into();
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(workload: Workload, management: Management) -> DesignRun {
        DesignRun {
            design: "default".into(),
            device: DeviceSpec {
                zones: Some(128),
                zone_size: Some("32m".into()),
                zone_capacity: Some("24m".into()),
                ..DeviceSpec::default()
            },
            workload,
            management,
            think: "5ms".into(),
            concurrency: 2,
            runtime: "20ms".into(),
            seed: 1,
        }
    }

    #[test]
    fn every_workload_runs_under_every_management() {
        for workload in [Workload::Writers, Workload::Appenders, Workload::Readers] {
            for management in [Management::None, Management::Finish, Management::Reset] {
                let r =
                    run(&small(workload, management)).unwrap_or_else(|e| panic!("{workload:?} {management:?}: {e}"));
                assert!(r["foreground_kiops"].as_f64().unwrap() > 0.0, "{workload:?} {management:?}: {r}");
                if management != Management::None {
                    assert!(r["management_ops"].as_u64().unwrap() > 0, "{workload:?} {management:?}: {r}");
                }
            }
        }
    }
}
