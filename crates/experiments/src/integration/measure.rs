//! The runs of the figures: `calibrate`'s fio runs (the job files of
//! `fio_job`, one job on one namespace), run on every core, each point
//! reduced to the numbers seed 001 plots.

use crate::calibrate::background::IoOp;
use crate::calibrate::execute::{run_all, Outcome, Settings};
use crate::calibrate::plan::{FioJob, FioRun, Host, NamespaceKind, Pace, Run, Work};
use crate::calibrate::rows::Stack;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use zonelab_workload::fio::job::{DDIR_READ, DDIR_WRITE};
use zonelab_workload::fio::stats::DirStats;

/// What one run measured of its job: throughput and fio's completion
/// latency percentiles (the study's `percentile_list=50:95`).
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub kiops: f64,
    pub mib_s: f64,
    pub p50_us: f64,
    pub p95_us: f64,
    /// The job file that ran.
    pub job_file: String,
}

/// One fio run of the study: a job of `op` in `bs` blocks, `qd` deep, in
/// `jobs` clones, on `stack`, on seed 001's machine and 512 B LBAs.
pub fn fio(namespace: NamespaceKind, stack: Stack, op: IoOp, overwrite: bool, bs: u64, qd: u32, jobs: u32) -> Run {
    Run::Fio(FioRun {
        lba_bytes: 512,
        stack,
        zinc: None,
        main: FioJob { work: Work::Io { op, bs, qd, jobs, zones: 0, overwrite }, pace: Pace::Free },
        other: None,
        host: Host::ZnsStudy,
        namespace,
    })
}

/// The measured windows: the study ran 30 s after a 10 s ramp; a simulated
/// window holds its steady state in much less (`calibrate` ramps a fifth of it).
pub fn settings(quick: bool, threads: usize) -> Settings {
    Settings { runtime_ms: if quick { 200 } else { 1000 }, threads, window_ms_min: 0 }
}

/// Runs `runs` on device `preset` and keys each result by its run.
pub fn measure(
    preset: &str,
    runs: &[Run],
    settings: Settings,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<BTreeMap<Run, Point>> {
    let config = zonelab_device::preset(preset).ok_or_else(|| Error::Invalid(format!("no preset {preset}")))?;
    let outcomes = run_all(&config, runs, settings, progress);
    let mut out = BTreeMap::new();
    for (run, outcome) in runs.iter().zip(outcomes) {
        let Outcome::Fio { stats, job_file, .. } = outcome.map_err(|e| e.within(format!("{run:?}")))? else {
            return Err(Error::Failed("a fio run gave latency lists".into()));
        };
        let dir = &stats.dirs[op_dir(run)];
        if dir.total_ios == 0 {
            return Err(Error::Failed(format!("{run:?} completed no I/O in its window")));
        }
        out.insert(run.clone(), point(dir, job_file));
    }
    Ok(out)
}

fn op_dir(run: &Run) -> usize {
    match run {
        Run::Fio(FioRun { main: FioJob { work: Work::Io { op: IoOp::Read | IoOp::RandRead, .. }, .. }, .. }) => {
            DDIR_READ
        }
        _ => DDIR_WRITE,
    }
}

fn point(dir: &DirStats, job_file: String) -> Point {
    let pct = |p: f64| dir.clat.percentiles(&[p]).first().map_or(0.0, |&(_, v)| v as f64 / 1e3);
    Point {
        kiops: dir.iops_value() / 1e3,
        mib_s: dir.bw_bytes_per_s() as f64 / f64::from(1 << 20),
        p50_us: pct(50.0),
        p95_us: pct(95.0),
        job_file,
    }
}
