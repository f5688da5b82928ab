//! Which device parameters a set of rows constrains. A fit can only move
//! what moves the predictions, and two parameters that move them alike can
//! only be fitted together. So: the Jacobian of the rows' log-predictions
//! against each parameter's log (finite differences, one run of the rows
//! per parameter), and the singular values of its normalized columns.
//!
//! A parameter is not identifiable when its column is small (the rows'
//! predictions move by less than [`ELASTICITY_MIN`] of its relative change,
//! root mean square), or when it is nearly a combination of the others (a
//! singular value below [`SINGULAR_MIN`]; the weakest parameter of that
//! direction is set aside and the rest analysed again).

use super::fit::{fit, get_parameter, set_parameter, Outcome, Request};
use super::profile::FIT_CANDIDATES;
use super::{evaluate, Row, Settings};
use crate::error::{Error, Result};
use serde::Serialize;
use std::fmt::Write as _;
use zonelab_device::DeviceConfig;

/// Relative step of each parameter (its value × 1.2).
pub const STEP: f64 = 0.2;
/// RMS elasticity below which the rows do not see a parameter.
pub const ELASTICITY_MIN: f64 = 0.01;
/// Singular value (of unit columns) below which parameters are collinear:
/// some combination of them moves the predictions by under 10% of what one
/// of them alone does.
pub const SINGULAR_MIN: f64 = 0.1;

/// One parameter's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct Sensitivity {
    /// Its `--set` path.
    pub path: String,
    /// Root mean square over the rows of d ln(prediction) / d ln(parameter).
    pub rms_elasticity: f64,
    /// Whether the rows constrain it (with the identifiable others).
    pub identifiable: bool,
    /// Why not, if not.
    pub reason: Option<String>,
}

/// What the analysis found.
#[derive(Debug, Clone, Serialize)]
pub struct Identifiability {
    /// Rows that ran at the base and at every step.
    pub rows: usize,
    /// Every parameter asked about, in the order asked.
    pub params: Vec<Sensitivity>,
    /// Singular values of the identifiable parameters' unit columns, largest first.
    pub singular_values: Vec<f64>,
}

impl Identifiability {
    /// The identifiable parameters' paths.
    pub fn identifiable(&self) -> Vec<String> {
        self.params.iter().filter(|p| p.identifiable).map(|p| p.path.clone()).collect()
    }
}

/// Analyses `params` on `config` over `rows`.
pub fn analyse(config: &DeviceConfig, rows: &[Row], params: &[String], settings: Settings) -> Result<Identifiability> {
    let logs = |c: &DeviceConfig| -> Vec<Option<f64>> {
        evaluate(c, rows, settings, &|_, _| {}).iter().map(|r| r.predicted.map(f64::ln)).collect()
    };
    let base = logs(config);
    let mut columns = Vec::new();
    for path in params {
        let (start, int) = get_parameter(config, path)?;
        let value = if int { (start * (1.0 + STEP)).round() } else { start * (1.0 + STEP) };
        let moved = logs(&set_parameter(config, path, value, int)?);
        let dx = (value / start).ln();
        columns.push(base.iter().zip(&moved).map(|(b, m)| Some((m.as_ref()? - b.as_ref()?) / dx)).collect::<Vec<_>>());
    }
    // Rows that ran everywhere.
    let keep: Vec<usize> = (0..base.len()).filter(|&i| columns.iter().all(|c| c[i].is_some())).collect();
    let j: Vec<Vec<f64>> = columns.iter().map(|c| keep.iter().map(|&i| c[i].unwrap_or(0.0)).collect()).collect();
    Ok(verdicts(params, &j, keep.len()))
}

/// `calibrate DIR`'s fit: of `request.params` (none: [`FIT_CANDIDATES`]),
/// analyses which `rows` constrain and fits those (named ones: all of
/// them, the analysis only reported); the outcome carries the analysis.
pub fn fit_identifiable(
    base: &DeviceConfig,
    rows: &[Row],
    request: &Request,
    settings: Settings,
    stage: &dyn Fn(&str),
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<Outcome> {
    let named = !request.params.is_empty();
    let asked = if named { request.params.clone() } else { FIT_CANDIDATES.map(String::from).to_vec() };
    stage("identifiability");
    let id = analyse(base, rows, &asked, settings)?;
    let params = if named { asked } else { id.identifiable() };
    if params.is_empty() {
        return Err(Error::Invalid(format!(
            "the rows constrain none of {}: nothing to fit (--fit fits named parameters regardless)",
            FIT_CANDIDATES.join(", ")
        )));
    }
    let request = Request { params, ..Request::new(Vec::new(), request.folds, request.max_evals) }
        .with_tail_weight(request.tail_weight);
    let mut outcome = fit(base, rows, &request, settings, stage, progress)?;
    outcome.summary.identifiability = Some(id);
    Ok(outcome)
}

/// The verdicts from the Jacobian's columns `j` (one per parameter, `n` rows each).
pub fn verdicts(params: &[String], j: &[Vec<f64>], n: usize) -> Identifiability {
    let rms: Vec<f64> = j.iter().map(|c| (c.iter().map(|x| x * x).sum::<f64>() / n.max(1) as f64).sqrt()).collect();
    let mut reasons: Vec<Option<String>> = rms
        .iter()
        .map(|&r| {
            (r < ELASTICITY_MIN)
                .then(|| format!("the rows barely see it: a 1% change moves their predictions by {:.4}% (RMS)", r))
        })
        .collect();
    // Bound: each pass sets one parameter aside or ends.
    let singular = loop {
        let live: Vec<usize> = (0..j.len()).filter(|&i| reasons[i].is_none()).collect();
        let unit: Vec<Vec<f64>> =
            live.iter().map(|&i| j[i].iter().map(|x| x / (rms[i] * (n as f64).sqrt())).collect()).collect();
        let (values, vectors) = eigen_symmetric(&gram(&unit));
        // The weakest direction, if it is too weak to tell its members apart.
        let weakest = (0..values.len()).min_by(|&a, &b| values[a].total_cmp(&values[b]));
        let Some(weak) = weakest.filter(|&k| values[k].max(0.0).sqrt() < SINGULAR_MIN) else {
            let mut s: Vec<f64> = values.iter().map(|v| v.max(0.0).sqrt()).collect();
            s.sort_by(|a, b| b.total_cmp(a));
            break s;
        };
        // The direction's members; the least seen of them goes.
        let members: Vec<usize> = (0..live.len()).filter(|&m| vectors[weak][m].abs() > 0.3).collect();
        let drop = *members.iter().min_by(|&&a, &&b| rms[live[a]].total_cmp(&rms[live[b]])).unwrap_or(&0);
        let names: Vec<&str> = members.iter().map(|&m| params[live[m]].as_str()).collect();
        reasons[live[drop]] = Some(format!(
            "the rows move it only together with {} (singular value {:.3}): fit one of them",
            names.iter().filter(|n| **n != params[live[drop]]).copied().collect::<Vec<_>>().join(", "),
            values[weak].max(0.0).sqrt()
        ));
    };
    let params = params
        .iter()
        .zip(rms.iter().zip(reasons))
        .map(|(p, (&r, reason))| Sensitivity {
            path: p.clone(),
            rms_elasticity: r,
            identifiable: reason.is_none(),
            reason,
        })
        .collect();
    Identifiability { rows: n, params, singular_values: singular }
}

/// Gram matrix of the columns.
fn gram(cols: &[Vec<f64>]) -> Vec<Vec<f64>> {
    cols.iter().map(|a| cols.iter().map(|b| a.iter().zip(b).map(|(x, y)| x * y).sum()).collect()).collect()
}

/// Eigenvalues and eigenvectors (rows of the second, in the same order)
/// of the symmetric matrix `a` (nalgebra's symmetric eigendecomposition).
fn eigen_symmetric(a: &[Vec<f64>]) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = a.len();
    let m = nalgebra::DMatrix::from_fn(n, n, |i, k| a[i][k]);
    let eigen = nalgebra::SymmetricEigen::new(m);
    let vectors = (0..n).map(|k| eigen.eigenvectors.column(k).iter().copied().collect()).collect();
    (eigen.eigenvalues.iter().copied().collect(), vectors)
}

/// The analysis as a section of report.md.
pub fn markdown(id: &Identifiability) -> String {
    let mut md = format!(
        "\n## Identifiability\n\nOver {} rows, each parameter moved by {}% (RMS elasticity: % change of the \
         predictions per % change of the parameter):\n\n| parameter | RMS elasticity | identifiable |\n|---|---|---|\n",
        id.rows,
        STEP * 100.0
    );
    for p in &id.params {
        let verdict = p.reason.as_deref().map_or("yes".to_string(), |r| format!("no: {r}"));
        let _ = writeln!(md, "| {} | {:.4} | {verdict} |", p.path, p.rms_elasticity);
    }
    let s: Vec<String> = id.singular_values.iter().map(|v| format!("{v:.3}")).collect();
    let _ = writeln!(md, "\nSingular values of the identifiable parameters' unit columns: {}.", s.join(", "));
    md
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unseen_and_collinear_parameters_are_set_aside() {
        let params: Vec<String> = ["a", "b", "c", "d"].map(String::from).to_vec();
        // a and b move every row alike (only their product is seen), c is independent, d unseen.
        let j = vec![
            vec![1.0, 0.5, 0.2, 0.0],
            vec![0.99, 0.5, 0.2, 0.0],
            vec![0.0, 0.3, -0.4, 0.9],
            vec![0.0, 0.001, 0.0, 0.0],
        ];
        let id = verdicts(&params, &j, 4);
        let ok: Vec<bool> = id.params.iter().map(|p| p.identifiable).collect();
        assert_eq!(ok, [true, false, true, false], "{id:?}");
        assert!(id.params[1].reason.as_deref().unwrap().contains("together with a"), "{id:?}");
        assert!(id.params[3].reason.as_deref().unwrap().contains("barely"), "{id:?}");
        assert_eq!(id.singular_values.len(), 2);
    }

    #[test]
    fn the_eigendecomposition_finds_the_eigenvalues_of_a_known_matrix() {
        let (values, vectors) = eigen_symmetric(&[vec![2.0, 1.0], vec![1.0, 2.0]]);
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        assert!((sorted[0] - 1.0).abs() < 1e-12 && (sorted[1] - 3.0).abs() < 1e-12, "{values:?}");
        for (k, v) in vectors.iter().enumerate() {
            let av = [2.0 * v[0] + v[1], v[0] + 2.0 * v[1]];
            assert!((av[0] - values[k] * v[0]).abs() < 1e-9 && (av[1] - values[k] * v[1]).abs() < 1e-9);
        }
    }
}
