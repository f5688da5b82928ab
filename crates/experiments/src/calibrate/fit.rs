//! `--fit`: device parameters that bring the model closest to the rows.
//!
//! Each parameter is searched as `start × e^x`, x within ±ln 5 (bounds
//! from its starting value), by Nelder-Mead (argmin). The loss is the mean
//! |ln(predicted / measured)| over the rows that run: symmetric in over-
//! and under-prediction, and robust (a row 10× off weighs ln 10, not 9).
//! Cross-validation splits the runs (not the rows: rows of one run share
//! it) into k folds by the hash of the run, fits on k-1 and scores the rest.

use super::execute::{seed_of, Settings};
use super::{evaluate, plan_rows, Row, RowResult};
use crate::error::{json, Error, Result};
use argmin::core::{CostFunction, Executor, State};
use argmin::solver::neldermead::NelderMead;
use serde::Serialize;
use std::cell::RefCell;
use std::fmt::Write as _;
use zonelab_device::DeviceConfig;

/// Largest factor a parameter moves from its starting value.
const BOUND_FACTOR: f64 = 5.0;
/// Loss of a row whose run fails under a parameter set (about a 20× error).
const FAILED_ROW_LOSS: f64 = 3.0;

/// What `--fit` asks: the parameters, the folds and the evaluation budget.
pub struct Request {
    /// Configuration paths to fit (`--set` syntax, e.g. `flash_timing.program_ns`).
    pub params: Vec<String>,
    /// Cross-validation folds (0 or 1: none).
    pub folds: usize,
    /// Most simulations of the whole row set the fit may spend.
    pub max_evals: u64,
}

/// One fitted parameter.
#[derive(Debug, Clone, Serialize)]
pub struct Param {
    /// Its configuration path.
    pub path: String,
    /// Its value in the base configuration.
    pub start: f64,
    /// Its value after the fit.
    pub fitted: f64,
}

/// What a fit did, for report.json and report.md.
#[derive(Debug, Clone, Serialize)]
pub struct FitSummary {
    /// The parameters, start and fitted.
    pub params: Vec<Param>,
    /// Rows that map to a run and so take part.
    pub rows_fitted: usize,
    /// Loss (mean squared log error) with the starting values.
    pub loss_start: f64,
    /// Loss with the fitted values.
    pub loss_fitted: f64,
    /// Simulations of the row set the fit ran.
    pub evaluations: u64,
    /// Held-out loss of each fold (empty without cross-validation).
    pub fold_losses: Vec<f64>,
    /// Mean held-out loss over the folds.
    pub cv_loss: Option<f64>,
}

/// A fit's result: the fitted configuration and the rows under it.
pub struct Outcome {
    /// The base configuration with the fitted values.
    pub config: DeviceConfig,
    /// Each row's result under the fitted configuration.
    pub results: Vec<RowResult>,
    /// What the fit did.
    pub summary: FitSummary,
}

/// `config` with the number at `path` set to `value`. The fit works on the
/// configuration tree's numbers (nanoseconds, bytes, counts) directly rather
/// than through `--set` text, whose grammar asks for units.
fn set_parameter(config: &DeviceConfig, path: &str, value: f64, int: bool) -> Result<DeviceConfig> {
    let mut tree = serde_json::to_value(config).map_err(json("the device configuration"))?;
    let mut node = &mut tree;
    for key in path.split('.') {
        node = node.get_mut(key).ok_or_else(|| Error::Invalid(format!("--fit {path}: no parameter '{key}' there")))?;
    }
    *node = if int { serde_json::json!(value as u64) } else { serde_json::json!(value) };
    let changed: DeviceConfig = serde_json::from_value(tree).map_err(json(&format!("--fit {path}")))?;
    changed.validate().map_err(|e| Error::Config(e).within(format!("--fit {path} = {value}")))?;
    Ok(changed)
}

/// A parameter's value in `config`, by its `--set` path.
pub fn get_parameter(config: &DeviceConfig, path: &str) -> Result<(f64, bool)> {
    let mut node = serde_json::to_value(config).map_err(json("the device configuration"))?;
    for key in path.split('.') {
        node = node
            .get(key)
            .cloned()
            .ok_or_else(|| Error::Invalid(format!("--fit {path}: no parameter '{key}' there")))?;
    }
    match node.as_f64() {
        Some(v) if v > 0.0 => Ok((v, node.is_u64() || node.is_i64())),
        Some(_) => Err(Error::Invalid(format!("--fit {path}: its starting value is 0, which cannot be scaled"))),
        None => Err(Error::Invalid(format!("--fit {path}: not a number ({node})"))),
    }
}

struct Space {
    base: DeviceConfig,
    params: Vec<(String, f64, bool)>,
}

impl Space {
    fn values(&self, x: &[f64]) -> Vec<f64> {
        let b = BOUND_FACTOR.ln();
        self.params
            .iter()
            .zip(x)
            .map(|((_, start, int), xi)| {
                let v = start * xi.clamp(-b, b).exp();
                if *int {
                    v.round().max(1.0)
                } else {
                    v
                }
            })
            .collect()
    }

    fn config(&self, x: &[f64]) -> Result<DeviceConfig> {
        let mut config = self.base.clone();
        for ((path, _, int), v) in self.params.iter().zip(self.values(x)) {
            config = set_parameter(&config, path, v, *int)?;
        }
        Ok(config)
    }
}

/// Mean |ln(predicted/measured)| of `rows` on `config`.
pub fn loss(config: &DeviceConfig, rows: &[Row], settings: Settings) -> f64 {
    let results = evaluate(config, rows, settings, &|_, _| {});
    let terms: Vec<f64> = results
        .iter()
        .map(|r| match (r.predicted, r.measured > 0.0) {
            (Some(p), true) => (p / r.measured).ln().abs(),
            _ => FAILED_ROW_LOSS,
        })
        .collect();
    terms.iter().sum::<f64>() / terms.len().max(1) as f64
}

struct Problem<'a> {
    space: &'a Space,
    rows: &'a [Row],
    settings: Settings,
    evals: RefCell<u64>,
    progress: &'a (dyn Fn(usize, usize) + Sync),
    max_evals: u64,
}

impl CostFunction for Problem<'_> {
    type Param = Vec<f64>;
    type Output = f64;
    fn cost(&self, x: &Vec<f64>) -> Result<f64, argmin::core::Error> {
        *self.evals.borrow_mut() += 1;
        (self.progress)(*self.evals.borrow() as usize, self.max_evals as usize);
        Ok(match self.space.config(x) {
            Ok(config) => loss(&config, self.rows, self.settings),
            Err(_) => FAILED_ROW_LOSS * 10.0,
        })
    }
}

/// Nelder-Mead from x = 0 (the starting values); returns (x, loss, evaluations).
fn minimize(
    space: &Space,
    rows: &[Row],
    settings: Settings,
    max_evals: u64,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Vec<f64>, f64, u64)> {
    let n = space.params.len();
    let mut simplex = vec![vec![0.0; n]];
    for i in 0..n {
        let mut v = vec![0.0; n];
        v[i] = 0.4;
        simplex.push(v);
    }
    let solver = NelderMead::new(simplex).with_sd_tolerance(1e-4).map_err(|e| Error::Failed(e.to_string()))?;
    let problem = Problem { space, rows, settings, evals: RefCell::new(0), progress, max_evals };
    // Nelder-Mead spends one to two evaluations per iteration once the simplex is built.
    let iters = max_evals.saturating_sub(n as u64 + 1).div_ceil(2).max(1);
    let result = Executor::new(problem, solver)
        .configure(|s| s.max_iters(iters))
        .run()
        .map_err(|e| Error::Failed(e.to_string()))?;
    let evals = *result
        .problem
        .problem
        .as_ref()
        .map(|p| p.evals.borrow())
        .ok_or_else(|| Error::Failed("the fit lost its problem".into()))?;
    let state = result.state();
    let x = state.get_best_param().cloned().unwrap_or_else(|| vec![0.0; n]);
    Ok((x, state.get_best_cost(), evals))
}

/// Fits `request.params` to `rows` on `base`, with cross-validation.
pub fn fit(
    base: &DeviceConfig,
    rows: &[Row],
    request: &Request,
    settings: Settings,
    stage: &dyn Fn(&str),
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Outcome> {
    if request.params.is_empty() {
        return Err(Error::Invalid("--fit needs at least one parameter".into()));
    }
    let mut params = Vec::new();
    for path in &request.params {
        let (start, int) = get_parameter(base, path)?;
        set_parameter(base, path, start, int)?;
        params.push((path.clone(), start, int));
    }
    let space = Space { base: base.clone(), params };
    // Only rows that map to a run take part; a skipped row would weigh the same whatever the parameters.
    let (runs, planned) = plan_rows(rows);
    let fold_of: Vec<Option<usize>> = planned.iter().map(|p| p.as_ref().ok().map(|(i, _)| *i)).collect();
    let fittable: Vec<Row> = rows.iter().zip(&fold_of).filter(|(_, f)| f.is_some()).map(|(r, _)| r.clone()).collect();
    if fittable.is_empty() {
        return Err(Error::Invalid("none of the selected rows maps to a run: nothing to fit".into()));
    }
    stage("fit");
    let loss_start = loss(base, &fittable, settings);
    let (x, loss_fitted, evaluations) = minimize(&space, &fittable, settings, request.max_evals, progress)?;
    let fold_losses = cross_validate(&space, rows, &runs, &fold_of, request, settings, stage, progress)?;
    let mut config = space.config(&x)?;
    config.name = format!("{}-fitted", base.name);
    stage("final run");
    let results = evaluate(&config, rows, settings, progress);
    let params = space
        .params
        .iter()
        .zip(space.values(&x))
        .map(|((path, start, _), fitted)| Param { path: path.clone(), start: *start, fitted })
        .collect();
    let cv_loss = (!fold_losses.is_empty()).then(|| fold_losses.iter().sum::<f64>() / fold_losses.len() as f64);
    let summary =
        FitSummary { params, rows_fitted: fittable.len(), loss_start, loss_fitted, evaluations, fold_losses, cv_loss };
    Ok(Outcome { config, results, summary })
}

/// Held-out loss per fold; folds of runs by their hash, so the split is the same on every machine.
#[allow(clippy::too_many_arguments)]
fn cross_validate(
    space: &Space,
    rows: &[Row],
    runs: &[super::plan::Run],
    run_of: &[Option<usize>],
    request: &Request,
    settings: Settings,
    stage: &dyn Fn(&str),
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Vec<f64>> {
    let k = request.folds;
    if k < 2 || runs.len() < k {
        return Ok(Vec::new());
    }
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| (seed_of(&runs[i]), i));
    let mut fold = vec![0; runs.len()];
    for (pos, &i) in order.iter().enumerate() {
        fold[i] = pos % k;
    }
    let mut losses = Vec::new();
    for f in 0..k {
        stage(&format!("fold {}/{k}", f + 1));
        let pick = |held: bool| -> Vec<Row> {
            rows.iter()
                .zip(run_of)
                .filter(|(_, r)| r.is_some_and(|i| (fold[i] == f) == held))
                .map(|(row, _)| row.clone())
                .collect()
        };
        let (train, test) = (pick(false), pick(true));
        let (x, _, _) = minimize(space, &train, settings, request.max_evals, progress)?;
        losses.push(loss(&space.config(&x)?, &test, settings));
    }
    Ok(losses)
}

/// The fit's section of report.md.
pub fn markdown(outcome: &Outcome) -> String {
    let s = &outcome.summary;
    let mut md = String::from("\n## Fit\n\n| parameter | start | fitted |\n|---|---|---|\n");
    for p in &s.params {
        let _ = writeln!(md, "| {} | {} | {:.6} |", p.path, p.start, p.fitted);
    }
    let _ = writeln!(
        md,
        "\nLoss (mean |ln(predicted/measured)|) over {} rows: {:.4} at the start, {:.4} fitted, after {} evaluations.",
        s.rows_fitted, s.loss_start, s.loss_fitted, s.evaluations
    );
    match s.cv_loss {
        Some(cv) => {
            let folds: Vec<String> = s.fold_losses.iter().map(|l| format!("{l:.4}")).collect();
            let _ = writeln!(
                md,
                "{}-fold cross-validation, held-out loss: {cv:.4} (folds: {}).",
                folds.len(),
                folds.join(", ")
            );
        }
        None => md.push_str("No cross-validation (fewer than 2 folds, or fewer runs than folds).\n"),
    }
    md.push_str("The fitted configuration is `fitted.toml` (load it with `--device fitted.toml`).\n");
    md
}
