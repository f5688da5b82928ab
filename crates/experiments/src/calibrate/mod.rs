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

pub mod background;
pub mod execute;
mod fio_job;
pub mod fit;
pub mod plan;
pub mod plots;
mod programs;
pub mod report;
pub mod rows;

pub use execute::Settings;
pub use rows::{read_file, Row};

use plan::Run;
use serde::Serialize;
use std::collections::BTreeMap;
use zonelab_device::DeviceConfig;

/// One row's result.
#[derive(Debug, Clone, Serialize)]
pub struct RowResult {
    pub id: String,
    pub group: String,
    pub metric: &'static str,
    /// The run that measured it (rows with the same run shared one simulation).
    pub run: Option<String>,
    pub measured: f64,
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
pub type Planned = Result<(usize, plan::Source), String>;

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

/// Reruns `rows` on `config`; results in row order.
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
    let (runs, planned) = plan_rows(rows);
    let outcomes = execute::run_all(config, &runs, settings, progress);
    let jobs = outcomes
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Ok(execute::Outcome::Fio { job_file, .. }) => Some((format!("run-{i}.fio"), job_file.clone())),
            _ => None,
        })
        .collect();
    let results = rows
        .iter()
        .zip(planned)
        .map(|(row, p)| {
            let (run, predicted) = match p {
                Err(reason) => (None, Err(reason)),
                Ok((i, source)) => {
                    let v = outcomes[i].as_ref().map_err(|e| format!("the run failed: {e}"));
                    (
                        Some(format!("run-{i}: {}", describe(&runs[i]))),
                        v.and_then(|o| execute::value(o, source, row.metric)),
                    )
                }
            };
            let predicted = predicted.and_then(|v| {
                if v.is_finite() && v > 0.0 {
                    Ok(v)
                } else {
                    Err(format!("the run gave {v}, not a positive number"))
                }
            });
            let error = predicted.as_ref().ok().filter(|_| row.value > 0.0).map(|p| p / row.value - 1.0);
            RowResult {
                id: row.id.clone(),
                group: row.group(),
                metric: row.metric.name(),
                run,
                measured: row.value,
                predicted: predicted.as_ref().ok().copied(),
                error,
                skipped: predicted.err(),
            }
        })
        .collect();
    (results, jobs)
}

/// A run's key as text: what rows.csv shows.
pub fn describe(run: &Run) -> String {
    format!("{run:?}")
}
