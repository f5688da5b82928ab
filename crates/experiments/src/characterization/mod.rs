//! `zonelab reproduce characterization`: the observations of seed 000 (the
//! ZN540 characterization) and the findings of seed 003 (ConfZNS++), rerun
//! on the `zn540` preset.
//!
//! Each experiment runs fio jobs (the files under `jobs/characterization/`,
//! with `${VAR}`s filled in per point of a sweep) or command sequences
//! straight on the device, and yields a data table (CSV), a plot shaped like
//! the paper's figure, and findings: paper value, zonelab value, error and a
//! verdict (numbers within ±10%, directions as the paper states them).

pub(crate) mod device_runs;
pub(crate) mod fio_runs;
mod reset_bench;
mod seed000;
mod seed003;
mod seed003_remedies;

use crate::error::{io, Error, Result};
use crate::plot::{self, Figure};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::Path;

/// How close a number must be to count as reproduced.
pub const TOLERANCE: f64 = 0.10;

/// One finding of a paper, the paper's number or direction against zonelab's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Finding {
    /// The paper's observation it belongs to (e.g. "Obs 3").
    pub observation: String,
    /// What is compared.
    pub quantity: String,
    /// The unit of the numbers.
    pub unit: String,
    /// The paper's number (none for a direction).
    pub paper: Option<f64>,
    /// zonelab's number.
    pub zonelab: Option<f64>,
    /// Relative error, for numbers.
    pub error: Option<f64>,
    /// "reproduced", "direction holds", or why not.
    pub verdict: String,
    /// For a finding not reproduced: the mechanism the model lacks for it,
    /// where it is known.
    pub mechanism: Option<String>,
    /// The zn540's parameters that were set from this very number (or the
    /// measurement it comes from): reproducing it checks the fit, not a
    /// prediction.
    pub fitted: Option<String>,
}

impl Finding {
    /// A number the paper measured.
    pub fn number(observation: &str, quantity: &str, unit: &str, paper: f64, zonelab: f64) -> Self {
        let error = zonelab / paper - 1.0;
        let verdict = if error.abs() <= TOLERANCE { "reproduced" } else { "off" };
        Finding {
            observation: observation.into(),
            quantity: quantity.into(),
            unit: unit.into(),
            paper: Some(paper),
            zonelab: Some(zonelab),
            error: Some(error),
            verdict: verdict.into(),
            mechanism: None,
            fitted: None,
        }
    }

    /// A direction the paper states; `zonelab` is the value that shows it.
    pub fn direction(observation: &str, quantity: &str, holds: bool, zonelab: Option<f64>) -> Self {
        Finding {
            observation: observation.into(),
            quantity: quantity.into(),
            unit: String::new(),
            paper: None,
            zonelab,
            error: None,
            verdict: if holds { "direction holds" } else { "direction differs" }.into(),
            mechanism: None,
            fitted: None,
        }
    }

    /// Something the model cannot run yet, with the missing mechanism.
    pub fn missing(observation: &str, quantity: &str, mechanism: &str) -> Self {
        let verdict = format!("not reproduced: needs {mechanism}");
        Self::without_value(observation, quantity, verdict, Some(mechanism.into()))
    }

    /// An experiment whose run never did what the finding is about (an
    /// interference run in which the management job completed nothing): not
    /// a result either way.
    pub fn not_measured(observation: &str, quantity: &str, why: &str) -> Self {
        Self::without_value(observation, quantity, format!("not measured: {why}"), None)
    }

    fn without_value(observation: &str, quantity: &str, verdict: String, mechanism: Option<String>) -> Self {
        Finding {
            observation: observation.into(),
            quantity: quantity.into(),
            unit: String::new(),
            paper: None,
            zonelab: None,
            error: None,
            verdict,
            mechanism,
            fitted: None,
        }
    }

    /// Marks a number the preset's `parameters` were set from.
    pub fn fitted(mut self, parameters: &str) -> Self {
        self.fitted = Some(parameters.into());
        self
    }

    /// Names the mechanism the model lacks if this finding is not reproduced.
    pub fn lacking(mut self, mechanism: &str) -> Self {
        if !self.passed() {
            self.mechanism = Some(mechanism.into());
        }
        self
    }

    /// Whether the finding counts as reproduced (in number or direction).
    pub fn passed(&self) -> bool {
        self.verdict == "reproduced" || self.verdict == "direction holds"
    }
}

/// What one experiment produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// File stem of its CSV and plots.
    pub name: &'static str,
    /// Heading in the summary.
    pub title: &'static str,
    /// The CSV's columns.
    pub columns: Vec<&'static str>,
    /// The CSV's rows.
    pub rows: Vec<Vec<String>>,
    /// Paper against zonelab.
    pub findings: Vec<Finding>,
    /// Shaped like the paper's figure of the experiment.
    pub figure: Figure,
    /// The job files it ran (name, text).
    pub jobs: Vec<(&'static str, &'static str)>,
}

/// An outcome as the result store keeps it (owned, serializable): what the
/// renderer ([`write_records`], [`summary_records`]) builds files from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
    /// File stem of its CSV and plots.
    pub name: String,
    /// Heading in the summary.
    pub title: String,
    /// The CSV's columns.
    pub columns: Vec<String>,
    /// The CSV's rows.
    pub rows: Vec<Vec<String>>,
    #[serde(with = "stored_findings")]
    /// Paper against zonelab.
    pub findings: Vec<Finding>,
    /// Shaped like the paper's figure.
    pub figure: Figure,
    /// The job files it ran (name, text).
    pub jobs: Vec<(String, String)>,
}

/// Findings as the store keeps them: like `summary.json`, but with NaN and
/// infinities kept (`summary.json` shows them as null).
mod stored_findings {
    use super::Finding;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Stored {
        observation: String,
        quantity: String,
        unit: String,
        #[serde(with = "crate::serde_float::opt")]
        paper: Option<f64>,
        #[serde(with = "crate::serde_float::opt")]
        zonelab: Option<f64>,
        #[serde(with = "crate::serde_float::opt")]
        error: Option<f64>,
        verdict: String,
        mechanism: Option<String>,
        #[serde(default)]
        fitted: Option<String>,
    }

    pub fn serialize<S: Serializer>(v: &[Finding], s: S) -> Result<S::Ok, S::Error> {
        let stored: Vec<Stored> = v
            .iter()
            .map(|f| Stored {
                observation: f.observation.clone(),
                quantity: f.quantity.clone(),
                unit: f.unit.clone(),
                paper: f.paper,
                zonelab: f.zonelab,
                error: f.error,
                verdict: f.verdict.clone(),
                mechanism: f.mechanism.clone(),
                fitted: f.fitted.clone(),
            })
            .collect();
        stored.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Finding>, D::Error> {
        let stored = Vec::<Stored>::deserialize(d)?;
        Ok(stored
            .into_iter()
            .map(|f| Finding {
                observation: f.observation,
                quantity: f.quantity,
                unit: f.unit,
                paper: f.paper,
                zonelab: f.zonelab,
                error: f.error,
                verdict: f.verdict,
                mechanism: f.mechanism,
                fitted: f.fitted,
            })
            .collect())
    }
}

impl From<&Outcome> for Record {
    fn from(o: &Outcome) -> Self {
        Record {
            name: o.name.into(),
            title: o.title.into(),
            columns: o.columns.iter().map(|c| c.to_string()).collect(),
            rows: o.rows.clone(),
            findings: o.findings.clone(),
            figure: o.figure.clone(),
            jobs: o.jobs.iter().map(|(name, text)| (name.to_string(), text.to_string())).collect(),
        }
    }
}

/// How long the experiments run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    /// Shorter runs and fewer sweep points.
    pub quick: bool,
}

impl Scale {
    /// Simulated seconds of a steady-state fio run.
    pub fn runtime(&self) -> &'static str {
        if self.quick {
            "200ms"
        } else {
            "1s"
        }
    }
}

type Experiment = fn(Scale) -> Result<Outcome>;

/// Every experiment, in paper order.
pub const EXPERIMENTS: [(&str, Experiment); 10] = [
    ("obs01-04-qd1", seed000::qd1),
    ("obs05-07-intra-zone", seed000::intra_zone),
    ("obs06-08-inter-zone", seed000::inter_zone),
    ("obs09-open-close", device_runs::open_close),
    ("obs10-reset-finish", device_runs::reset_finish),
    ("obs11-gc-interference", seed000::gc_interference),
    ("obs12-13-reset-interference", device_runs::reset_interference),
    ("s003-finish-interference", seed003::finish_interference),
    ("s003-zinc", seed003_remedies::zinc),
    ("s003-softfinish", seed003_remedies::softfinish),
];

/// Runs the experiments whose name contains `filter` (all when empty).
pub fn run(scale: Scale, filter: &str, progress: &mut dyn FnMut(&str)) -> Result<Vec<Outcome>> {
    let mut out = Vec::new();
    for name in select(filter)? {
        progress(name);
        out.push(run_one(name, scale)?);
    }
    Ok(out)
}

/// The names of the experiments whose name contains `filter`, in paper order.
pub fn select(filter: &str) -> Result<Vec<&'static str>> {
    let names: Vec<&'static str> = EXPERIMENTS.iter().map(|(n, _)| *n).filter(|n| n.contains(filter)).collect();
    if names.is_empty() {
        let all: Vec<&str> = EXPERIMENTS.iter().map(|(n, _)| *n).collect();
        return Err(Error::Invalid(format!("no experiment matches '{filter}': choose from {}", all.join(", "))));
    }
    Ok(names)
}

/// Runs the experiment called `name`.
pub fn run_one(name: &str, scale: Scale) -> Result<Outcome> {
    let Some((_, experiment)) = EXPERIMENTS.iter().find(|(n, _)| *n == name) else {
        let all: Vec<&str> = EXPERIMENTS.iter().map(|(n, _)| *n).collect();
        return Err(Error::Invalid(format!("unknown experiment '{name}': choose from {}", all.join(", "))));
    };
    experiment(scale).map_err(|e| e.within(name))
}

/// Writes each outcome's CSV, plot (PNG and SVG) and job files into `dir`,
/// and the summary as `summary.md` and `summary.json`.
pub fn write(dir: &Path, outcomes: &[Outcome], warn: &mut dyn FnMut(&str)) -> Result<()> {
    let records: Vec<Record> = outcomes.iter().map(Record::from).collect();
    write_records(dir, &records, warn)
}

/// [`write()`] from stored records: the renderer of the plan runner.
pub fn write_records(dir: &Path, outcomes: &[Record], warn: &mut dyn FnMut(&str)) -> Result<()> {
    std::fs::create_dir_all(dir.join("jobs")).map_err(io(dir))?;
    // The font is built in; should it ever fail, the data still get written.
    let plots = match plot::register_font() {
        Ok(()) => true,
        Err(e) => {
            warn(&format!("no plots: {e}"));
            false
        }
    };
    for o in outcomes {
        write_csv(&dir.join(format!("{}.csv", o.name)), &o.columns, &o.rows)?;
        if plots {
            plot::svg(&o.figure, &dir.join(format!("{}.svg", o.name)))?;
            plot::png(&o.figure, &dir.join(format!("{}.png", o.name)))?;
        }
        for (file, text) in &o.jobs {
            std::fs::write(dir.join("jobs").join(file), text).map_err(io(dir))?;
        }
    }
    std::fs::write(dir.join("summary.md"), summary_records(outcomes)).map_err(io(dir))?;
    let findings: Vec<serde_json::Value> = outcomes
        .iter()
        .flat_map(|o| o.findings.iter().map(move |f| serde_json::json!({"experiment": o.name, "finding": f})))
        .collect();
    let json = serde_json::to_string_pretty(&findings).expect("findings serialise");
    std::fs::write(dir.join("summary.json"), json + "\n").map_err(io(dir))
}

/// A table as CSV through the csv crate (fields with commas or quotes quoted).
fn write_csv(path: &Path, columns: &[String], rows: &[Vec<String>]) -> Result<()> {
    let fail = |source| Error::Csv { path: path.to_path_buf(), source };
    let mut w = csv::Writer::from_path(path).map_err(fail)?;
    w.write_record(columns).map_err(fail)?;
    for row in rows {
        w.write_record(row).map_err(fail)?;
    }
    w.flush().map_err(io(path))
}

fn fmt_value(v: Option<f64>) -> String {
    match v {
        None => "—".into(),
        Some(x) if x.abs() >= 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.3}"),
    }
}

/// The paper-vs-zonelab table.
pub fn summary_markdown(outcomes: &[Outcome]) -> String {
    let records: Vec<Record> = outcomes.iter().map(Record::from).collect();
    summary_records(&records)
}

/// [`summary_markdown`] from stored records.
pub fn summary_records(outcomes: &[Record]) -> String {
    let mut s = String::from(
        "| experiment | observation | quantity | unit | paper | zonelab | error | verdict |\n|---|---|---|---|---|---|---|---|\n",
    );
    let (mut passed, mut total, mut fitted) = (0, 0, 0);
    for o in outcomes {
        for f in &o.findings {
            total += 1;
            passed += usize::from(f.passed());
            fitted += usize::from(f.passed() && f.fitted.is_some());
            let error = f.error.map_or("—".into(), |e| format!("{:+.1}%", e * 100.0));
            let verdict = match (&f.mechanism, &f.fitted) {
                (Some(m), _) if !f.verdict.starts_with("not reproduced") => format!("{} (lacks {m})", f.verdict),
                (_, Some(p)) => format!("{} (fitted: {p})", f.verdict),
                _ => f.verdict.clone(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                o.name,
                f.observation,
                f.quantity,
                f.unit,
                fmt_value(f.paper),
                fmt_value(f.zonelab),
                error,
                verdict
            );
        }
    }
    let _ = writeln!(
        s,
        "\n{passed} of {total} findings reproduced (numbers within ±10%, directions as stated); {fitted} of them are \
         numbers the preset's parameters were set from, the others predictions."
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn findings_judge_numbers_by_tolerance_and_directions_by_truth() {
        assert!(Finding::number("o", "q", "ms", 10.0, 10.9).passed());
        assert!(!Finding::number("o", "q", "ms", 10.0, 11.2).passed());
        assert!(!Finding::number("o", "q", "ms", 10.0, 8.8).passed());
        assert!(Finding::direction("o", "q", true, None).passed());
        assert!(!Finding::direction("o", "q", false, None).passed());
        assert!(!Finding::missing("o", "q", "a mechanism").passed());
        assert!(!Finding::not_measured("o", "q", "nothing ran").passed());
        let off = Finding::number("o", "q", "ms", 10.0, 20.0).lacking("a read path");
        assert_eq!(off.mechanism.as_deref(), Some("a read path"));
        assert_eq!(Finding::number("o", "q", "ms", 10.0, 10.0).lacking("a read path").mechanism, None);
    }

    #[test]
    fn the_summary_tells_fitted_numbers_from_predictions() {
        let record = |findings| Record {
            name: "e".into(),
            title: "t".into(),
            columns: Vec::new(),
            rows: Vec::new(),
            findings,
            figure: Figure::Panels(plot::Panels {
                title: String::new(),
                columns: 1,
                panel: (1, 1),
                panels: Vec::new(),
            }),
            jobs: Vec::new(),
        };
        let fitted = Finding::number("o", "fit", "ms", 10.0, 10.1).fitted("a.b_ns");
        let predicted = Finding::number("o", "prediction", "ms", 10.0, 10.2);
        let missed = Finding::number("o", "missed fit", "ms", 10.0, 20.0).fitted("c.d_ns");
        let summary = summary_records(&[record(vec![fitted, predicted, missed])]);
        assert!(summary.contains("| reproduced (fitted: a.b_ns) |"), "{summary}");
        assert!(summary.contains("| off (fitted: c.d_ns) |"), "{summary}");
        assert!(
            summary.contains("2 of 3 findings reproduced") && summary.contains("; 1 of them are numbers"),
            "{summary}"
        );
    }

    /// The calibration rows that come from the device alone, end to end.
    #[test]
    fn zone_management_experiments_reproduce_the_calibration_sheet() {
        let outcomes = run(Scale { quick: true }, "obs09", &mut |_| {}).unwrap();
        let more = run(Scale { quick: true }, "obs10", &mut |_| {}).unwrap();
        let all: Vec<&Finding> = outcomes.iter().chain(&more).flat_map(|o| &o.findings).collect();
        assert!(all.len() >= 10);
        for f in all {
            assert!(f.passed(), "{f:?}");
        }
    }

    #[test]
    fn an_unknown_experiment_is_an_error_naming_the_choices() {
        let err = run(Scale { quick: true }, "obs99", &mut |_| {}).unwrap_err().to_string();
        assert!(err.contains("obs10-reset-finish"), "{err}");
    }
}
