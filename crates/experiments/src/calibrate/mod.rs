//! `zonelab calibrate`: rerun every measured number of a measurements file
//! (`docs/measurements.md`) on a device configuration and report how far
//! the model is from the drive; optionally fit device parameters.
//!
//! - [`rows`]: reading the file (located errors).
//! - [`background`] and [`plan`]: each row as the run that measured it, or
//!   the reason it cannot run yet. Rows of one run share one simulation.
//! - [`execute`]: the runs on all cores, deterministic.
//! - [`report`] and [`plots`]: `rows.csv`, `report.json`, `report.md`, plots.
//! - [`fit`]: Nelder-Mead over `--set` parameters, with k-fold cross-validation.
//! - [`profile`], [`fio_results`], [`identify`]: `zonelab profile`'s plan for
//!   a drive, its fio results read back as rows, and which parameters the
//!   rows constrain; [`standin`] is a simulated drive in place of real fio.

pub mod background;
pub mod execute;
mod fio_job;
pub mod fio_results;
pub mod fit;
pub mod identify;
pub mod plan;
pub mod plots;
pub mod profile;
mod programs;
pub mod report;
pub mod rows;
mod script;
pub mod standin;

pub use execute::Settings;
pub use rows::{read_file, Row};

use crate::error::{io, json, Error, Result};
use crate::plan::{self as runner, RunSpec, Shard, Store};
use plan::Run;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use zonelab_device::DeviceConfig;

/// One row's result.
#[derive(Debug, Clone, Serialize)]
pub struct RowResult {
    /// The row's id in the measurements file.
    pub id: String,
    /// Its group (source / figure / metric), the unit of the report.
    pub group: String,
    /// The metric's name.
    pub metric: &'static str,
    /// The operation the row measured (`write`, `reset`, ...): rows of one
    /// run, figure and operation describe one job's latency distribution.
    pub op: String,
    /// The run that measured it (rows with the same run shared one simulation).
    pub run: Option<String>,
    /// The measured number.
    pub measured: f64,
    /// zonelab's number, if the row maps to a run that gave one.
    pub predicted: Option<f64>,
    /// predicted / measured - 1.
    pub error: Option<f64>,
    /// Why there is no prediction.
    pub skipped: Option<String>,
}

/// Rows whose `id source figure stack op metric` contains every comma-separated term of `only`.
pub fn select(rows: &[Row], only: &str) -> Vec<Row> {
    let terms: Vec<&str> = only.split(',').map(str::trim).filter(|t| !t.is_empty()).collect();
    rows.iter()
        .filter(|r| {
            let text = format!("{} {} {} {:?} {:?} {}", r.id, r.source, r.figure, r.stack, r.op, r.metric.name());
            terms.iter().all(|t| text.contains(t) || text.to_lowercase().contains(&t.to_lowercase()))
        })
        .cloned()
        .collect()
}

/// A row's run (index into the runs) and where its number is in the result; or why it has none.
pub type Planned = Result<(usize, plan::Source)>;

/// The distinct runs of `rows` (in first-seen order) and each row's plan.
pub fn plan_rows(rows: &[Row]) -> (Vec<Run>, Vec<Planned>) {
    let mut runs: Vec<Run> = Vec::new();
    let mut index: BTreeMap<Run, usize> = BTreeMap::new();
    let planned = rows
        .iter()
        .map(|row| {
            let p = plan::plan(row)?;
            let i = *index.entry(p.run.clone()).or_insert_with(|| {
                runs.push(p.run.clone());
                runs.len() - 1
            });
            Ok((i, p.source))
        })
        .collect();
    (runs, planned)
}

/// Reruns `rows` on `config` (through the plan runner, nothing stored); results in row order.
pub fn evaluate(
    config: &DeviceConfig,
    rows: &[Row],
    settings: Settings,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<RowResult> {
    evaluate_with_jobs(config, rows, settings, progress).0
}

/// `evaluate`, and the fio job file of every fio run as (`run-N.fio`, text),
/// named as the `run` column of the results names them.
pub fn evaluate_with_jobs(
    config: &DeviceConfig,
    rows: &[Row],
    settings: Settings,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> (Vec<RowResult>, Vec<(String, String)>) {
    let p = Plan::new(config, rows, settings);
    let mut store = Store::memory();
    let progress = |_: &str, started: usize, total: usize| progress(started, total);
    // Calibration runs report a failing simulation as their result, and a memory store cannot fail.
    runner::execute(&p.specs, Shard::ALL, &mut store, settings.threads, &progress)
        .expect("calibration runs do not fail");
    let results = runner::collect(&p.specs, &store).expect("every run ran");
    p.results(rows, &results).expect("results of this build read back")
}

/// A fio job file that ran: (`run-N.fio`, its text).
pub type JobFile = (String, String);

/// `calibrate` as a plan: the standalone runs that turn intensities into
/// rates (sorted), then the distinct runs of the rows (first-seen order).
pub struct Plan {
    /// Every run spec: the standalone runs, then the runs proper.
    pub specs: Vec<RunSpec>,
    /// The distinct runs of the rows, first-seen order.
    pub runs: Vec<Run>,
    /// Each row's run and source, or why it has none.
    pub planned: Vec<Planned>,
    /// Specs before the first run: the standalone runs.
    pub standalone: usize,
}

impl Plan {
    /// Plans `rows` on `config`.
    pub fn new(config: &DeviceConfig, rows: &[Row], settings: Settings) -> Plan {
        let (runs, planned) = plan_rows(rows);
        let spec = |job| execute::CalibrateRun {
            job,
            runtime_ms: settings.runtime_ms,
            window_ms_min: settings.window_ms_min,
            device: config.clone(),
        };
        let mut standalone: Vec<execute::CalibrateRun> = Vec::new();
        for run in &runs {
            for need in spec(execute::CalibrateJob::Run(run.clone())).needs() {
                if !standalone.contains(&need) {
                    standalone.push(need);
                }
            }
        }
        standalone.sort_by(|a, b| match (&a.job, &b.job) {
            (execute::CalibrateJob::Standalone(x), execute::CalibrateJob::Standalone(y)) => x.cmp(y),
            _ => unreachable!("needs are standalone runs"),
        });
        let count = standalone.len();
        let specs = standalone
            .into_iter()
            .chain(runs.iter().map(|r| spec(execute::CalibrateJob::Run(r.clone()))))
            .map(|c| RunSpec::Calibrate(Box::new(c)))
            .collect();
        Plan { specs, runs, planned, standalone: count }
    }

    /// Each row's result, and the job files, from the plan's stored results (plan order).
    pub fn results(&self, rows: &[Row], stored: &[Value]) -> Result<(Vec<RowResult>, Vec<JobFile>)> {
        assert_eq!(stored.len(), self.specs.len(), "one result per spec");
        // A run that failed is stored with its reason as text.
        let outcomes: Vec<Result<execute::Measured, String>> = stored[self.standalone..]
            .iter()
            .map(|v| serde_json::from_value(v.clone()).map_err(json("a stored calibration result")))
            .collect::<Result<_>>()?;
        let jobs = outcomes
            .iter()
            .enumerate()
            .filter_map(|(i, o)| Some((format!("run-{i}.fio"), o.as_ref().ok()?.job_file.clone()?)))
            .collect();
        let results = rows
            .iter()
            .zip(&self.planned)
            .map(|(row, p)| {
                let (run, predicted) = match p {
                    Err(reason) => (None, Err(Error::Unmapped(reason.to_string()))),
                    Ok((i, source)) => {
                        let v = outcomes[*i].as_ref().map_err(|e| Error::Failed(format!("the run failed: {e}")));
                        (
                            Some(format!("run-{i}: {}", describe(&self.runs[*i]))),
                            v.and_then(|o| o.value(*source, row.metric)),
                        )
                    }
                };
                row_result(row, run, predicted)
            })
            .collect();
        Ok((results, jobs))
    }
}

fn row_result(row: &Row, run: Option<String>, predicted: Result<f64>) -> RowResult {
    let predicted = predicted.and_then(|v| {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(Error::Failed(format!("the run gave {v}, not a positive number")))
        }
    });
    let error = predicted.as_ref().ok().filter(|_| row.value > 0.0).map(|p| p / row.value - 1.0);
    RowResult {
        id: row.id.clone(),
        group: row.group(),
        metric: row.metric.name(),
        op: format!("{:?}", row.op).to_lowercase(),
        run,
        measured: row.value,
        predicted: predicted.as_ref().ok().copied(),
        error,
        skipped: predicted.err().map(|e| e.to_string()),
    }
}

/// A run's key as text: what rows.csv shows.
pub fn describe(run: &Run) -> String {
    format!("{run:?}")
}

/// Writes a calibration into `out`: rows.csv, report.json, report.md, the
/// plots, and the job files that ran (`jobs/`) or, after a fit, the fitted
/// configuration (`fitted.toml`). Returns report.md up to its groups: what
/// `zonelab calibrate` prints.
pub fn write(
    out: &std::path::Path,
    title: &str,
    results: &[RowResult],
    jobs: &[(String, String)],
    fitted: Option<&fit::Outcome>,
    warn: &mut dyn FnMut(&str),
) -> Result<String> {
    let (fit_md, fit_json) = match fitted {
        None => {
            let dir = out.join("jobs");
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
            for (name, text) in jobs {
                std::fs::write(dir.join(name), text).map_err(io(&dir))?;
            }
            (String::new(), Value::Null)
        }
        Some(outcome) => {
            std::fs::create_dir_all(out).map_err(io(out))?;
            let preset = out.join("fitted.toml");
            std::fs::write(&preset, outcome.config.to_toml()).map_err(io(&preset))?;
            let json = serde_json::to_value(&outcome.summary).map_err(json("the fit's summary"))?;
            (fit::markdown(outcome), json)
        }
    };
    let summary = report::write(out, title, results, &fit_md, fit_json)?;
    plots::write(out, results, &summary, warn)?;
    Ok(report::markdown(title, &summary, &fit_md).split("\n## Groups").next().unwrap_or("").to_string())
}
