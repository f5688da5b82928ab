//! A profile directory's results as rows of the measurements format: each
//! job's fio JSON (`results/NAME.json`, fio 3.33's `--output-format=json`)
//! and the script's timed commands (`results/timed.csv`). Every error names
//! the file and what is wrong in it.

use super::profile::{read_manifest, Manifest, PlanJob};
use super::rows::{Metric, Op, Row};
use crate::error::{Error, Result};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use zonelab_sim::input::{read_text, TEXT_BYTES_MAX};

/// What a profile directory gave.
pub struct Converted {
    /// The plan.
    pub manifest: Manifest,
    /// A row per measured number.
    pub rows: Vec<Row>,
    /// Jobs (and the timed commands) without results, with why.
    pub missing: Vec<String>,
}

/// Reads `dir`'s plan and results.
pub fn read_dir(dir: &Path) -> Result<Converted> {
    let manifest = read_manifest(dir)?;
    let mut values: BTreeMap<String, f64> = BTreeMap::new();
    let mut missing = Vec::new();
    for job in &manifest.jobs {
        let path = dir.join("results").join(format!("{}.json", job.name));
        if !path.exists() {
            missing.push(format!("{}: no {}", job.name, path.display()));
            continue;
        }
        let text = read_text(&path, TEXT_BYTES_MAX).map_err(|e| Error::Input(e).within("fio result"))?;
        for (id, v) in job_values(&path.display().to_string(), &text, job)? {
            values.insert(id, v);
        }
    }
    let timed = dir.join("results").join("timed.csv");
    if timed.exists() {
        let text = read_text(&timed, TEXT_BYTES_MAX).map_err(|e| Error::Input(e).within("timed commands"))?;
        values.extend(timed_values(&timed.display().to_string(), &text, &manifest)?);
        for t in manifest.timed.iter().filter(|t| !values.contains_key(&t.row.id)) {
            missing.push(format!("{}: no samples in {}", t.row.id, timed.display()));
        }
    } else if !manifest.timed.is_empty() {
        missing.push(format!("timed finishes and resets: no {}", timed.display()));
    }
    let rows = manifest.rows(|t| values.get(&t.id).copied());
    if rows.is_empty() {
        return Err(Error::Invalid(format!(
            "{}: no results yet (run.sh writes them into {}/results)",
            dir.display(),
            dir.display()
        )));
    }
    Ok(Converted { manifest, rows, missing })
}

/// The numbers of one job's fio JSON, by row id; `name` locates errors.
pub fn job_values(name: &str, text: &str, job: &PlanJob) -> Result<Vec<(String, f64)>> {
    let bad = |what: String| Error::Invalid(format!("{name}: {what}"));
    let root: Value = serde_json::from_str(text)
        .map_err(|e| bad(format!("line {} column {}: not fio's JSON output: {e}", e.line(), e.column())))?;
    let jobs = root.get("jobs").and_then(Value::as_array).ok_or_else(|| bad("no 'jobs' array".into()))?;
    let entry = jobs.iter().find(|j| j.get("jobname").and_then(Value::as_str) == Some(&job.measured));
    let Some(entry) = entry else {
        let names: Vec<&str> = jobs.iter().filter_map(|j| j.get("jobname").and_then(Value::as_str)).collect();
        return Err(bad(format!("no job '{}' in 'jobs' (found: {})", job.measured, names.join(", "))));
    };
    let at = format!("job '{}'", job.measured);
    if let Some(e) = entry.get("error").and_then(Value::as_i64).filter(|&e| e != 0) {
        return Err(bad(format!("{at} ended with error {e}: its numbers are not a measurement")));
    }
    let d = entry.get(&job.dir).ok_or_else(|| bad(format!("{at}: no '{}' section", job.dir)))?;
    let num = |path: &[&str]| -> Result<f64> {
        let mut v = d;
        for key in path {
            v = v.get(key).ok_or_else(|| bad(format!("{at}: no '{}.{}'", job.dir, path.join("."))))?;
        }
        v.as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| bad(format!("{at}: '{}.{}' is {v}, not a number >= 0", job.dir, path.join("."))))
    };
    if num(&["total_ios"])? == 0.0 {
        return Err(bad(format!("{at}: no '{}' I/O completed", job.dir)));
    }
    job.rows.iter().map(|r| Ok((r.id.clone(), metric(&num, r.metric)?))).collect()
}

/// A metric from fio's numbers (rows of a profile report clat percentiles, as fio prints them).
fn metric(num: &dyn Fn(&[&str]) -> Result<f64>, m: Metric) -> Result<f64> {
    let pct = |p: &str| num(&["clat_ns", "percentile", p]);
    Ok(match m {
        Metric::Kiops => num(&["iops"])? / 1e3,
        Metric::PerS => num(&["iops"])?,
        Metric::Mibs => num(&["bw_bytes"])? / 1_048_576.0,
        Metric::LatMeanUs => num(&["lat_ns", "mean"])? / 1e3,
        Metric::MsMean => num(&["lat_ns", "mean"])? / 1e6,
        Metric::LatP50Us => pct("50.000000")? / 1e3,
        Metric::LatP95Us => pct("95.000000")? / 1e3,
        Metric::LatP99Us => pct("99.000000")? / 1e3,
        Metric::MsP95 => pct("95.000000")? / 1e6,
    })
}

/// The timed commands' rows: each point's median time less the median of
/// the baseline (what starting nvme-cli costs), in µs.
pub fn timed_values(name: &str, text: &str, m: &Manifest) -> Result<Vec<(String, f64)>> {
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, "kind,op,lbas,zone,ns")) => {}
        _ => return Err(Error::Invalid(format!("{name}:1: the header must be 'kind,op,lbas,zone,ns'"))),
    }
    let mut baseline = Vec::new();
    let mut samples: BTreeMap<(String, u64), Vec<f64>> = BTreeMap::new();
    for (i, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
        let bad = |what: &str| Error::Invalid(format!("{name}:{}: {what}: '{line}'", i + 1));
        let f: Vec<&str> = line.split(',').collect();
        let [kind, op, lbas, _zone, ns] = f[..] else { return Err(bad("5 fields expected")) };
        let lbas: u64 = lbas.parse().map_err(|_| bad("'lbas' is not a whole number"))?;
        let ns: f64 = ns.parse::<u64>().map_err(|_| bad("'ns' is not a whole number of nanoseconds"))? as f64;
        match kind {
            "baseline" => baseline.push(ns),
            "sample" if op == "finish" || op == "reset" => samples.entry((op.into(), lbas)).or_default().push(ns),
            _ => return Err(bad("kind must be 'baseline', or 'sample' of finish or reset")),
        }
    }
    if baseline.is_empty() {
        return Err(Error::Invalid(format!("{name}: no baseline lines: nvme-cli's own time is unknown")));
    }
    let base = median(&mut baseline);
    let mut out = Vec::new();
    for t in &m.timed {
        let op = if t.op == Op::Finish { "finish" } else { "reset" };
        let Some(s) = samples.get_mut(&(op.to_string(), t.lbas)) else { continue };
        // Medians: a process start that took long (a busy host) does not count.
        // A command faster than the baseline measured as nothing (below the method's precision).
        out.push((t.row.id.clone(), ((median(s) - base) / 1e3).max(0.0)));
    }
    Ok(out)
}

/// The median of a non-empty list (the mean of the middle two of an even one).
fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}
