//! Running the experiments' fio job files on a fresh zn540.

use crate::error::{Error, Result};
use zonelab_device::{preset, Device, DeviceConfig};
use zonelab_host::SchedulerCounters;
use zonelab_workload::fio::job::{Scheduler, DDIR_READ, DDIR_WRITE};
use zonelab_workload::fio::parse::parse_job_file;
use zonelab_workload::fio::report::entries;
use zonelab_workload::fio::run::{Engine, RunOptions};
use zonelab_workload::fio::stats::{DirStats, JobStats};

/// The job files, as kept in the repository.
pub const QD1: (&str, &str) = ("qd1-write.fio", include_str!("../../jobs/characterization/qd1-write.fio"));
pub const INTRA: (&str, &str) = ("intra-zone.fio", include_str!("../../jobs/characterization/intra-zone.fio"));
pub const INTER: (&str, &str) = ("inter-zone.fio", include_str!("../../jobs/characterization/inter-zone.fio"));
pub const FINISH: (&str, &str) =
    ("finish-interference.fio", include_str!("../../jobs/characterization/finish-interference.fio"));
pub const GC_CONVENTIONAL: (&str, &str) =
    ("gc-conventional.fio", include_str!("../../jobs/characterization/gc-conventional.fio"));
pub const GC_ZNS: (&str, &str) = ("gc-zns.fio", include_str!("../../jobs/characterization/gc-zns.fio"));

/// One report entry of a run.
pub struct EntryStats {
    pub name: String,
    pub stats: JobStats,
}

pub struct FioResult {
    pub entries: Vec<EntryStats>,
    pub disk: SchedulerCounters,
}

impl FioResult {
    pub fn entry(&self, name: &str) -> Result<&JobStats> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .map(|e| &e.stats)
            .ok_or_else(|| Error::Failed(format!("no job '{name}'")))
    }
}

/// Fills in `${VAR}`s; every variable of the file must be given.
pub fn substitute(text: &str, vars: &[(&str, String)]) -> Result<String> {
    let mut out = text.to_string();
    for (name, value) in vars {
        out = out.replace(&format!("${{{name}}}"), value);
    }
    match out.find("${") {
        Some(i) => Err(Error::Invalid(format!("job variable left unset at: {}", &out[i..out.len().min(i + 20)]))),
        None => Ok(out),
    }
}

/// Drops section `[name]` (up to the next section) from a job file.
pub fn drop_section(text: &str, name: &str) -> String {
    let header = format!("[{name}]");
    let mut keep = true;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with('[') {
            keep = line.trim() != header;
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Runs job file `file` with `vars` on a fresh zn540.
pub fn run(file: (&str, &str), vars: &[(&str, String)], scheduler: Scheduler) -> Result<FioResult> {
    run_text(file.0, &substitute(file.1, vars)?, scheduler)
}

pub fn run_text(name: &str, text: &str, scheduler: Scheduler) -> Result<FioResult> {
    run_on(preset("zn540").expect("zn540 preset"), name, text, scheduler)
}

/// Runs a filled-in job file on a fresh device of `config`.
pub fn run_on(config: DeviceConfig, name: &str, text: &str, scheduler: Scheduler) -> Result<FioResult> {
    run_seeded(config, name, text, scheduler, 1)
}

/// `run_on` with the run's random numbers drawn from `seed`.
pub fn run_seeded(config: DeviceConfig, name: &str, text: &str, scheduler: Scheduler, seed: u64) -> Result<FioResult> {
    run_with_options(config, name, text, &RunOptions { seed, scheduler, ..RunOptions::default() })
}

/// [`run_seeded`] with the host's configuration given too.
pub fn run_with_options(config: DeviceConfig, name: &str, text: &str, options: &RunOptions) -> Result<FioResult> {
    let set = parse_job_file(name, text)?;
    let mut device = Device::with_tracking(config, zonelab_device::Tracking::NONE)?;
    let engine = Engine::new(&mut device, &set, options)?;
    let result = engine.run(&mut |_| {})?;
    let entries = entries(&set, &result)
        .into_iter()
        .map(|e| EntryStats { name: e.spec.name.clone(), stats: e.stats })
        .collect::<Vec<_>>();
    if let Some(e) = entries.iter().find(|e| e.stats.error.is_some()) {
        return Err(Error::Failed(format!("job {} failed: {:?}", e.name, e.stats.error)));
    }
    Ok(FioResult { entries, disk: result.disk })
}

pub fn write(stats: &JobStats) -> &DirStats {
    &stats.dirs[DDIR_WRITE]
}
pub fn read(stats: &JobStats) -> &DirStats {
    &stats.dirs[DDIR_READ]
}

/// Percentile `p` of completion latency in µs.
pub fn percentile_us(dir: &DirStats, p: f64) -> f64 {
    dir.clat.percentiles(&[p]).first().map_or(0.0, |&(_, v)| v as f64 / 1e3)
}

pub fn kiops(dir: &DirStats) -> f64 {
    dir.iops_value() / 1e3
}

pub fn mib_s(dir: &DirStats) -> f64 {
    dir.bw_bytes_per_s() as f64 / (1024.0 * 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_filled_and_missing_ones_refused() {
        let text = "[a]\nbs=${BS}\niodepth=${QD}\n";
        assert_eq!(substitute(text, &[("BS", "4k".into()), ("QD", "2".into())]).unwrap(), "[a]\nbs=4k\niodepth=2\n");
        let err = substitute(text, &[("BS", "4k".into())]).unwrap_err().to_string();
        assert!(err.contains("${QD}"), "{err}");
    }

    #[test]
    fn a_section_is_dropped_up_to_the_next_one() {
        let text = "[global]\nrw=write\n[fill]\nbs=128k\n[run]\nbs=4k\n";
        assert_eq!(drop_section(text, "fill"), "[global]\nrw=write\n[run]\nbs=4k\n");
        assert_eq!(drop_section(text, "run"), "[global]\nrw=write\n[fill]\nbs=128k\n");
    }

    #[test]
    fn every_kept_job_file_parses_once_filled() {
        for (name, text) in [QD1, INTRA, INTER, FINISH, GC_CONVENTIONAL, GC_ZNS] {
            let vars: Vec<(&str, String)> = [
                ("IOENGINE", "io_uring"),
                ("RUNTIME", "1s"),
                ("APPEND", "0"),
                ("BS", "4k"),
                ("RW", "write"),
                ("QD", "1"),
                ("ZONES", "2"),
                ("THREADS", "2"),
                ("SIZE", "1z"),
                ("FINISH", "1"),
                ("SOFTFINISH", "0"),
                ("CHUNK", "128k"),
                ("THINK", "1s"),
                ("FULL_ZONES", "2"),
                ("FILL", "2154m"),
                ("WRITE_RATE", "289m"),
            ]
            .iter()
            .map(|&(k, v)| (k, v.to_string()))
            .collect();
            let filled = substitute(text, &vars).unwrap_or_else(|e| panic!("{name}: {e}"));
            parse_job_file(name, &filled).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}
