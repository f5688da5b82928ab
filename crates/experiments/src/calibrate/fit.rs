//! `--fit`: device parameters that bring the model closest to the rows.
//!
//! Each parameter is searched as `start × e^x`, x within ±ln 5 (bounds
//! from its starting value), by Nelder-Mead (argmin). The loss is the mean
//! |ln(predicted / measured)| over the rows that run: symmetric in over-
//! and under-prediction, and robust (a row 10× off weighs ln 10, not 9).
//! `--fit-tail-weight` weighs the tail rows (p90 and above,
//! [`super::report::is_tail`]) against the rest, so a fit can favour the
//! distribution's tail or its body.
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
    /// Weight of a tail row's term in the loss (the other rows weigh 1).
    pub tail_weight: f64,
}

impl Request {
    /// `params` with `folds` and `max_evals`, tails weighed as the rest.
    pub fn new(params: Vec<String>, folds: usize, max_evals: u64) -> Self {
        Self { params, folds, max_evals, tail_weight: 1.0 }
    }

    /// The same request with tail rows weighing `tail_weight`.
    pub fn with_tail_weight(self, tail_weight: f64) -> Self {
        Self { tail_weight, ..self }
    }
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
    /// Weight of a tail row in the loss (the rest weigh 1).
    pub tail_weight: f64,
    /// Loss (weighted mean |ln(predicted/measured)|) with the starting values.
    pub loss_start: f64,
    /// Loss with the fitted values.
    pub loss_fitted: f64,
    /// Simulations of the row set the fit ran.
    pub evaluations: u64,
    /// Held-out loss of each fold (empty without cross-validation).
    pub fold_losses: Vec<f64>,
    /// Mean held-out loss over the folds.
    pub cv_loss: Option<f64>,
    /// Median |predicted/measured - 1| of each fold's held-out rows.
    pub fold_median_errors: Vec<f64>,
    /// Which parameters the rows constrain, when it was analysed (`zonelab calibrate DIR`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identifiability: Option<super::identify::Identifiability>,
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
pub(crate) fn set_parameter(config: &DeviceConfig, path: &str, value: f64, int: bool) -> Result<DeviceConfig> {
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

/// Mean |ln(predicted/measured)| of `rows` on `config`, tail rows weighing
/// `tail_weight`.
pub fn loss(config: &DeviceConfig, rows: &[Row], settings: Settings, tail_weight: f64) -> f64 {
    weighted_loss(&evaluate(config, rows, settings, &|_, _| {}), tail_weight)
}

/// The weighted mean |ln(predicted/measured)| of `results`: a tail row's
/// term weighs `tail_weight`, any other 1; a row without a prediction counts
/// as a run that failed (about a 20× error).
pub fn weighted_loss(results: &[RowResult], tail_weight: f64) -> f64 {
    assert!(tail_weight.is_finite() && tail_weight > 0.0, "a positive tail weight");
    let (mut sum, mut weights) = (0.0, 0.0);
    for r in results {
        let term = match (r.predicted, r.measured > 0.0) {
            (Some(p), true) => (p / r.measured).ln().abs(),
            _ => FAILED_ROW_LOSS,
        };
        let weight = if super::report::is_tail(r.metric) { tail_weight } else { 1.0 };
        sum += weight * term;
        weights += weight;
    }
    if weights > 0.0 {
        sum / weights
    } else {
        0.0
    }
}

struct Problem<'a> {
    space: &'a Space,
    rows: &'a [Row],
    settings: Settings,
    tail_weight: f64,
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
            Ok(config) => loss(&config, self.rows, self.settings, self.tail_weight),
            Err(_) => FAILED_ROW_LOSS * 10.0,
        })
    }
}

/// Nelder-Mead from x = 0 (the starting values); returns (x, loss, evaluations).
fn minimize(
    space: &Space,
    rows: &[Row],
    settings: Settings,
    request: &Request,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Vec<f64>, f64, u64)> {
    let (max_evals, tail_weight) = (request.max_evals, request.tail_weight);
    let n = space.params.len();
    let mut simplex = vec![vec![0.0; n]];
    for i in 0..n {
        let mut v = vec![0.0; n];
        v[i] = 0.4;
        simplex.push(v);
    }
    let solver = NelderMead::new(simplex).with_sd_tolerance(1e-4).map_err(|e| Error::Failed(e.to_string()))?;
    let problem = Problem { space, rows, settings, tail_weight, evals: RefCell::new(0), progress, max_evals };
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
    if !(request.tail_weight.is_finite() && request.tail_weight > 0.0) {
        return Err(Error::Invalid(format!(
            "--fit-tail-weight {}: the tail rows' weight must be a positive number (1 weighs them as the rest)",
            request.tail_weight
        )));
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
    let loss_start = loss(base, &fittable, settings, request.tail_weight);
    let (x, loss_fitted, evaluations) = minimize(&space, &fittable, settings, request, progress)?;
    let folds = cross_validate(&space, rows, &runs, &fold_of, request, settings, stage, progress)?;
    let (fold_losses, fold_median_errors): (Vec<f64>, Vec<f64>) = folds.into_iter().unzip();
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
    let summary = FitSummary {
        params,
        rows_fitted: fittable.len(),
        tail_weight: request.tail_weight,
        loss_start,
        loss_fitted,
        evaluations,
        fold_losses,
        cv_loss,
        fold_median_errors,
        identifiability: None,
    };
    Ok(Outcome { config, results, summary })
}

/// Held-out loss and median |error| per fold; folds of runs by their hash, so the split is the same on
/// every machine.
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
) -> Result<Vec<(f64, f64)>> {
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
        let (x, _, _) = minimize(space, &train, settings, request, progress)?;
        let results = evaluate(&space.config(&x)?, &test, settings, &|_, _| {});
        losses.push((weighted_loss(&results, request.tail_weight), median_abs_error(&results)));
    }
    Ok(losses)
}

/// The median |predicted/measured - 1| of the rows that compare (0 for none).
pub fn median_abs_error(results: &[RowResult]) -> f64 {
    let mut e: Vec<f64> = results.iter().filter_map(|r| r.error.map(f64::abs)).collect();
    e.sort_by(f64::total_cmp);
    e.get(e.len() / 2).copied().unwrap_or(0.0)
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
        "\nLoss (mean |ln(predicted/measured)|, tail rows weighing {}) over {} rows: {:.4} at the start, {:.4} fitted, \
         after {} evaluations.",
        s.tail_weight, s.rows_fitted, s.loss_start, s.loss_fitted, s.evaluations
    );
    match s.cv_loss {
        Some(cv) => {
            let folds: Vec<String> = s.fold_losses.iter().map(|l| format!("{l:.4}")).collect();
            let medians: Vec<String> = s.fold_median_errors.iter().map(|e| format!("{:.1}%", e * 100.0)).collect();
            let _ = writeln!(
                md,
                "{}-fold cross-validation, held-out loss: {cv:.4} (folds: {}); held-out median |error| per fold: {}.",
                folds.len(),
                folds.join(", "),
                medians.join(", ")
            );
        }
        None => md.push_str("No cross-validation (fewer than 2 folds, or fewer runs than folds).\n"),
    }
    md.push_str("The fitted configuration is `fitted.toml` (load it with `--device fitted.toml`).\n");
    if let Some(id) = &s.identifiability {
        md.push_str(&super::identify::markdown(id));
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(metric: &'static str, measured: f64, predicted: Option<f64>) -> RowResult {
        RowResult {
            id: metric.into(),
            group: "g".into(),
            metric,
            op: "write".into(),
            run: None,
            measured,
            predicted,
            error: predicted.map(|p| p / measured - 1.0),
            skipped: None,
        }
    }

    #[test]
    fn the_tail_weight_weighs_tail_rows_against_the_rest() {
        // A p95 twice the drive's, a mean exactly right, a row that did not run.
        let results =
            [result("lat_p95_us", 10.0, Some(20.0)), result("lat_mean_us", 5.0, Some(5.0)), result("kiops", 1.0, None)];
        let ln2 = 2f64.ln();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(weighted_loss(&results, 1.0), (ln2 + FAILED_ROW_LOSS) / 3.0));
        assert!(close(weighted_loss(&results, 3.0), (3.0 * ln2 + FAILED_ROW_LOSS) / 5.0));
        assert!(close(weighted_loss(&results[1..2], 7.0), 0.0), "no tail row: the weight changes nothing");
        assert!(weighted_loss(&results[..2], 4.0) > weighted_loss(&results[..2], 1.0));
        assert_eq!(weighted_loss(&[], 2.0), 0.0);
    }

    #[test]
    fn a_tail_weight_that_is_not_positive_is_refused() {
        let rows = Vec::new();
        for weight in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let request = Request { tail_weight: weight, ..Request::new(vec!["controller.write_ns".into()], 0, 5) };
            let base = zonelab_device::preset("zn540").unwrap();
            let err = fit(&base, &rows, &request, Settings::default(), &|_| {}, &|_, _| {}).err().unwrap();
            assert!(err.to_string().contains("--fit-tail-weight"), "{weight}: {err}");
        }
    }
}
