//! The calibration report: per-row CSV, JSON and Markdown summaries.

use super::rows::{Level, Metric};
use super::RowResult;
use crate::error::{io, json, Error, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Rows within this relative error count as close.
pub const CLOSE: f64 = 0.25;

/// One group's errors (source / figure / metric).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct GroupStats {
    /// The group's name.
    pub group: String,
    /// Rows compared in it.
    pub count: usize,
    /// Median |relative error|.
    pub median_abs_error: f64,
    /// Largest |relative error|.
    pub max_abs_error: f64,
}

/// The report's summary: how many rows compared, and how close.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// Rows in the selection.
    pub rows: usize,
    /// Rows with a measured and a predicted number.
    pub compared: usize,
    /// Rows without a prediction.
    pub skipped: usize,
    /// Median |relative error| over the compared rows.
    pub median_abs_error: Option<f64>,
    /// Share of compared rows within ±25%.
    pub within_25_pct: Option<f64>,
    /// The tail rows (a percentile of 90 or more, [`is_tail`]) alone.
    pub tails: Share,
    /// The other rows (means, medians, throughputs, rates) alone.
    pub others: Share,
    /// The latency rows as distributions: per level and per job.
    pub distributions: Distributions,
    /// The drive against itself: quantities the file holds from more than one run.
    pub repeats: Repeats,
    /// Each group's errors.
    pub groups: Vec<GroupStats>,
    /// Skip reason → row ids.
    pub skipped_reasons: BTreeMap<String, Vec<String>>,
}

/// How close one kind of rows came: tails and the rest are reported apart,
/// since a model can get means right and tails wrong.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Share {
    /// Rows compared.
    pub compared: usize,
    /// Median |relative error|.
    pub median_abs_error: Option<f64>,
    /// Share within ±25%.
    pub within_25_pct: Option<f64>,
}

impl Share {
    fn of(mut errors: Vec<f64>) -> Self {
        let compared = errors.len();
        let within = errors.iter().filter(|e| **e <= CLOSE).count();
        Self {
            compared,
            median_abs_error: median(&mut errors),
            within_25_pct: (compared > 0).then(|| within as f64 / compared as f64),
        }
    }
}

/// The latency rows as distributions: how close each level came (mean,
/// p50, p95, p99), and for each job whose rows give a body (median, or else
/// mean) and a tail (its highest percentile of 90 or more) how close the
/// shape came: the spread, tail over body, predicted against measured. A
/// model with one service time per operation gets means right and spreads
/// wrong; the spread shows it whatever the scale.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Distributions {
    /// The rows of each latency level, mean first.
    pub levels: Vec<LevelShare>,
    /// Jobs (rows of one run, figure and operation) with a body and a tail.
    pub jobs: usize,
    /// Median over those jobs of the mean |ln(predicted / measured)| of
    /// their latency rows: a distance between the two distributions.
    pub median_distance: Option<f64>,
    /// Median |spread error| over those jobs.
    pub median_abs_spread_error: Option<f64>,
    /// Share of those jobs whose spread is within ±25%.
    pub spread_within_25_pct: Option<f64>,
    /// The jobs whose spread is furthest off, worst first (at most [`WORST_JOBS`]).
    pub worst: Vec<JobShape>,
}

/// The rows of one latency level.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LevelShare {
    /// `mean`, `p50`, `p95`, `p99`.
    pub level: String,
    /// How close its rows came.
    pub share: Share,
}

/// One job's latency distribution, measured and predicted.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JobShape {
    /// The run (`run-N`).
    pub run: String,
    /// Source / figure.
    pub figure: String,
    /// The operation.
    pub op: String,
    /// The body's and the tail's metric.
    pub body: String,
    /// The tail's metric.
    pub tail: String,
    /// Measured tail over body.
    pub spread_measured: f64,
    /// Predicted tail over body.
    pub spread_predicted: f64,
    /// Predicted spread over measured, minus 1.
    pub spread_error: f64,
    /// Mean |ln(predicted / measured)| over the job's latency rows.
    pub distance: f64,
}

/// The drive against itself: quantities (one run's operation and metric)
/// that the measurements file holds more than once with different values,
/// from different runs of the drive, and how close those runs came to each
/// other. No model can agree with every single run better than the runs
/// agree among themselves, so this is a scale for the rows' errors.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Repeats {
    /// Quantities measured more than once with different values.
    pub quantities: usize,
    /// Pairs of their tail measurements (p90 and above).
    pub tails: PairShare,
    /// Pairs of their other measurements.
    pub others: PairShare,
    /// The model on the same rows: its tail rows' errors.
    pub model_tails: Share,
    /// The model on the same rows: its other rows' errors.
    pub model_others: Share,
}

/// Pairs of measurements of one quantity.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PairShare {
    /// Pairs compared.
    pub pairs: usize,
    /// Share of pairs whose two values are each within ±25% of the other.
    pub within_25_pct: Option<f64>,
}

/// Values of one quantity compared pairwise: at most this many each (the
/// file has two or three).
const REPEATS_MAX: usize = 8;

/// One quantity's distinct measured values, and its rows' |errors|.
#[derive(Default)]
struct Measurements {
    values: Vec<f64>,
    errors: Vec<f64>,
}

fn repeats(results: &[RowResult]) -> Repeats {
    // Keyed by run, operation and metric.
    let mut by_quantity: BTreeMap<(&str, &str, &str), Measurements> = BTreeMap::new();
    for r in results {
        let (Some(run), Some(error)) = (r.run.as_deref(), r.error) else { continue };
        let m = by_quantity.entry((run, r.op.as_str(), r.metric)).or_default();
        // The same number cited twice (a figure and its extra) is one measurement.
        if m.values.len() < REPEATS_MAX && !m.values.contains(&r.measured) {
            m.values.push(r.measured);
        }
        m.errors.push(error.abs());
    }
    let (mut quantities, mut tails, mut others) = (0, (0, 0), (0, 0));
    let (mut model_tails, mut model_others) = (Vec::new(), Vec::new());
    for ((_, _, metric), Measurements { values, errors }) in by_quantity.into_iter().filter(|(_, m)| m.values.len() > 1)
    {
        quantities += 1;
        let (counts, model) =
            if is_tail(metric) { (&mut tails, &mut model_tails) } else { (&mut others, &mut model_others) };
        model.extend(errors);
        for (i, a) in values.iter().enumerate() {
            for b in &values[i + 1..] {
                counts.0 += 1;
                counts.1 += usize::from(a.max(*b) <= a.min(*b) * (1.0 + CLOSE));
            }
        }
    }
    let share = |(pairs, within): (usize, usize)| PairShare {
        pairs,
        within_25_pct: (pairs > 0).then(|| within as f64 / pairs as f64),
    };
    Repeats {
        quantities,
        tails: share(tails),
        others: share(others),
        model_tails: Share::of(model_tails),
        model_others: Share::of(model_others),
    }
}

/// Jobs listed in [`Distributions::worst`].
pub const WORST_JOBS: usize = 12;

fn level_name(level: Level) -> String {
    match level {
        Level::Mean => "mean".into(),
        Level::Percentile(p) => format!("p{p}"),
    }
}

/// One job's latency rows: (level, measured µs, predicted µs, metric).
type JobRows<'a> = Vec<(Level, f64, f64, &'a str)>;

fn distributions(results: &[RowResult]) -> Distributions {
    let mut by_level: Vec<(Level, Vec<f64>)> = Vec::new();
    let mut jobs: BTreeMap<(&str, &str, &str), JobRows<'_>> = BTreeMap::new();
    for r in results {
        let (Some(metric), Some(predicted), Some(error)) = (Metric::named(r.metric), r.predicted, r.error) else {
            continue;
        };
        let Some((level, unit_us)) = metric.latency() else { continue };
        match by_level.iter_mut().find(|(l, _)| *l == level) {
            Some((_, errors)) => errors.push(error.abs()),
            None => by_level.push((level, vec![error.abs()])),
        }
        let (Some(run), Some((figure, _))) = (r.run.as_deref(), r.group.rsplit_once(" / ")) else { continue };
        let run = run.split(':').next().unwrap_or(run);
        jobs.entry((run, figure, &r.op)).or_default().push((
            level,
            r.measured * unit_us,
            predicted * unit_us,
            r.metric,
        ));
    }
    by_level.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let levels = by_level.into_iter().map(|(l, e)| LevelShare { level: level_name(l), share: Share::of(e) }).collect();
    let mut shapes: Vec<JobShape> =
        jobs.into_iter().filter_map(|((run, figure, op), rows)| shape(run, figure, op, &rows)).collect();
    let mut spread_errors: Vec<f64> = shapes.iter().map(|j| j.spread_error.abs()).collect();
    let within = spread_errors.iter().filter(|e| **e <= CLOSE).count();
    let mut distances: Vec<f64> = shapes.iter().map(|j| j.distance).collect();
    let count = shapes.len();
    shapes.sort_by(|a, b| b.spread_error.abs().total_cmp(&a.spread_error.abs()).then(a.run.cmp(&b.run)));
    shapes.truncate(WORST_JOBS);
    Distributions {
        levels,
        jobs: count,
        median_distance: median(&mut distances),
        median_abs_spread_error: median(&mut spread_errors),
        spread_within_25_pct: (count > 0).then(|| within as f64 / count as f64),
        worst: shapes,
    }
}

/// The shape of one job's rows, if they give a body and a tail.
fn shape(run: &str, figure: &str, op: &str, rows: &JobRows<'_>) -> Option<JobShape> {
    let find = |pick: &dyn Fn(Level) -> bool| {
        rows.iter().filter(|r| pick(r.0)).max_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal))
    };
    let body = find(&|l| l == Level::Percentile(50.0)).or_else(|| find(&|l| l == Level::Mean))?;
    let tail = find(&|l| matches!(l, Level::Percentile(p) if p >= 90.0))?;
    let (spread_measured, spread_predicted) = (tail.1 / body.1, tail.2 / body.2);
    let distance = rows.iter().map(|r| (r.2 / r.1).ln().abs()).sum::<f64>() / rows.len() as f64;
    Some(JobShape {
        run: run.into(),
        figure: figure.into(),
        op: op.into(),
        body: body.3.into(),
        tail: tail.3.into(),
        spread_measured,
        spread_predicted,
        spread_error: spread_predicted / spread_measured - 1.0,
        distance,
    })
}

/// Whether `metric` is a tail: a latency percentile of 90 or more
/// (`lat_p95_us`, `ms_p95`, `lat_p99_us`), not a median nor a mean.
pub fn is_tail(metric: &str) -> bool {
    let level = Metric::named(metric).and_then(Metric::latency).map(|(level, _)| level);
    matches!(level, Some(Level::Percentile(p)) if p >= 90.0)
}

/// The median (mean of the middle two for an even count); sorts `values`.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    Some(if n % 2 == 1 { values[n / 2] } else { (values[n / 2 - 1] + values[n / 2]) / 2.0 })
}

/// Summarises row results into groups, counts and medians.
pub fn summarize(results: &[RowResult]) -> Summary {
    let mut errors: Vec<f64> = results.iter().filter_map(|r| r.error).map(f64::abs).collect();
    let compared = errors.len();
    let within = errors.iter().filter(|e| **e <= CLOSE).count();
    let errors_where = |tail: bool| {
        results.iter().filter(|r| is_tail(r.metric) == tail).filter_map(|r| r.error).map(f64::abs).collect()
    };
    let (tails, others) = (Share::of(errors_where(true)), Share::of(errors_where(false)));
    let distributions = distributions(results);
    let repeats = repeats(results);
    let mut by_group: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut skipped_reasons: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in results {
        match (r.error, &r.skipped) {
            (Some(e), _) => by_group.entry(&r.group).or_default().push(e.abs()),
            (None, Some(reason)) => skipped_reasons.entry(reason.clone()).or_default().push(r.id.clone()),
            (None, None) => {}
        }
    }
    let groups = by_group
        .into_iter()
        .map(|(group, mut e)| GroupStats {
            group: group.to_string(),
            count: e.len(),
            max_abs_error: e.iter().copied().fold(0.0, f64::max),
            median_abs_error: median(&mut e).unwrap_or(0.0),
        })
        .collect();
    Summary {
        rows: results.len(),
        compared,
        skipped: results.len() - compared,
        median_abs_error: median(&mut errors),
        within_25_pct: (compared > 0).then(|| within as f64 / compared as f64),
        tails,
        others,
        distributions,
        repeats,
        groups,
        skipped_reasons,
    }
}

/// `rows.csv`: one line per row, predicted or the reason it was skipped.
pub fn rows_csv(results: &[RowResult]) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let e = |e: csv::Error| Error::Failed(e.to_string());
    w.write_record(["id", "group", "metric", "measured", "predicted", "relative_error", "skipped", "run"])
        .map_err(e)?;
    for r in results {
        let opt = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.6}"));
        w.write_record([
            r.id.as_str(),
            &r.group,
            r.metric,
            &format!("{}", r.measured),
            &opt(r.predicted),
            &opt(r.error),
            r.skipped.as_deref().unwrap_or(""),
            r.run.as_deref().unwrap_or(""),
        ])
        .map_err(e)?;
    }
    w.into_inner().map_err(|e| Error::Failed(e.to_string()))
}

fn pct(v: Option<f64>) -> String {
    v.map_or("—".into(), |v| format!("{:.1}%", v * 100.0))
}

/// `report.md`: the overall numbers, every group (worst first), the skipped rows.
pub fn markdown(title: &str, summary: &Summary, extra: &str) -> String {
    let mut s = format!("# {title}\n\n");
    let _ = writeln!(
        s,
        "{} rows: {} compared, {} skipped.\n\n- median |error|: {}\n- rows within ±25%: {}\n",
        summary.rows,
        summary.compared,
        summary.skipped,
        pct(summary.median_abs_error),
        pct(summary.within_25_pct)
    );
    for (name, share) in [("tail rows (p90 and above)", &summary.tails), ("other rows", &summary.others)] {
        let _ = writeln!(
            s,
            "- {name}: {} within ±25% of {}, median |error| {}",
            pct(share.within_25_pct),
            share.compared,
            pct(share.median_abs_error)
        );
    }
    repeats_markdown(&mut s, &summary.repeats);
    s.push('\n');
    distributions_markdown(&mut s, &summary.distributions);
    s.push_str(extra);
    s.push_str("\n## Groups (source / figure / metric), worst median first\n\n| group | rows | median abs error | max abs error |\n|---|---|---|---|\n");
    let mut groups: Vec<&GroupStats> = summary.groups.iter().collect();
    groups.sort_by(|a, b| b.median_abs_error.total_cmp(&a.median_abs_error).then(a.group.cmp(&b.group)));
    for g in groups {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            g.group,
            g.count,
            pct(Some(g.median_abs_error)),
            pct(Some(g.max_abs_error))
        );
    }
    s.push_str("\n## Skipped rows\n\n| reason | rows | ids |\n|---|---|---|\n");
    for (reason, ids) in &summary.skipped_reasons {
        let shown: Vec<&str> = ids.iter().take(12).map(String::as_str).collect();
        let more =
            if ids.len() > shown.len() { format!(" and {} more", ids.len() - shown.len()) } else { String::new() };
        let _ = writeln!(s, "| {} | {} | {}{} |", reason.replace('|', "/"), ids.len(), shown.join(" "), more);
    }
    s
}

fn repeats_markdown(s: &mut String, r: &Repeats) {
    if r.quantities == 0 {
        return;
    }
    let _ = writeln!(
        s,
        "- the drive against itself: {} quantities were measured in more than one run; {} of {} tail pairs and {} of \
         {} other pairs are within ±25% of each other (the model on their rows: {} of {} tail rows, {} of {} others)",
        r.quantities,
        pct(r.tails.within_25_pct),
        r.tails.pairs,
        pct(r.others.within_25_pct),
        r.others.pairs,
        pct(r.model_tails.within_25_pct),
        r.model_tails.compared,
        pct(r.model_others.within_25_pct),
        r.model_others.compared
    );
}

fn distributions_markdown(s: &mut String, d: &Distributions) {
    if d.levels.is_empty() {
        return;
    }
    s.push_str("## Latency distributions\n\n");
    for l in &d.levels {
        let _ = writeln!(
            s,
            "- {} rows: {} within ±25% of {}, median |error| {}",
            l.level,
            pct(l.share.within_25_pct),
            l.share.compared,
            pct(l.share.median_abs_error)
        );
    }
    let _ = writeln!(
        s,
        "- {} jobs give a body (median, or else mean) and a tail (p90 and above): their spread, tail over body, is \
         within ±25% for {} (median |error| {}); the median distance between the distributions (mean \
         |ln(predicted/measured)| over a job's latency rows) is {}\n",
        d.jobs,
        pct(d.spread_within_25_pct),
        pct(d.median_abs_spread_error),
        d.median_distance.map_or("—".into(), |v| format!("{v:.3}"))
    );
    if d.worst.is_empty() {
        return;
    }
    s.push_str(
        "| run | figure | op | tail / body | measured | predicted | spread error |\n|---|---|---|---|---|---|---|\n",
    );
    for j in &d.worst {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} / {} | {:.2} | {:.2} | {} |",
            j.run,
            j.figure,
            j.op,
            j.tail,
            j.body,
            j.spread_measured,
            j.spread_predicted,
            pct(Some(j.spread_error))
        );
    }
    s.push('\n');
}

/// Writes rows.csv, report.json and report.md into `dir`.
pub fn write(
    dir: &Path,
    title: &str,
    results: &[RowResult],
    extra_md: &str,
    extra_json: serde_json::Value,
) -> Result<Summary> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let summary = summarize(results);
    std::fs::write(dir.join("rows.csv"), rows_csv(results)?).map_err(io(dir))?;
    let report = serde_json::json!({ "summary": summary, "rows": results, "extra": extra_json });
    let text = serde_json::to_string_pretty(&report).map_err(json("the report"))?;
    std::fs::write(dir.join("report.json"), text + "\n").map_err(io(dir))?;
    std::fs::write(dir.join("report.md"), markdown(title, &summary, extra_md)).map_err(io(dir))?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(id: &str, group: &str, error: Option<f64>, skipped: Option<&str>) -> RowResult {
        RowResult {
            id: id.into(),
            group: group.into(),
            metric: "kiops",
            op: "write".into(),
            run: None,
            measured: 10.0,
            predicted: error.map(|e| 10.0 * (1.0 + e)),
            error,
            skipped: skipped.map(String::from),
        }
    }

    #[test]
    fn the_summary_counts_medians_groups_and_reasons() {
        let results = [
            result("a", "g1", Some(0.1), None),
            result("b", "g1", Some(-0.5), None),
            result("c", "g2", Some(0.2), None),
            result("d", "g2", None, Some("why")),
        ];
        let s = summarize(&results);
        assert_eq!((s.rows, s.compared, s.skipped), (4, 3, 1));
        assert_eq!(s.median_abs_error, Some(0.2));
        assert_eq!(s.within_25_pct, Some(2.0 / 3.0));
        assert_eq!(s.groups[0], GroupStats { group: "g1".into(), count: 2, median_abs_error: 0.3, max_abs_error: 0.5 });
        assert_eq!(s.skipped_reasons["why"], vec!["d".to_string()]);
        assert_eq!((s.tails.compared, s.others.compared), (0, 3), "every row here is kiops");
        let md = markdown("t", &s, "");
        assert!(md.find("| g1 |").unwrap() < md.find("| g2 |").unwrap(), "worst group first:\n{md}");
        let csv = String::from_utf8(rows_csv(&results).unwrap()).unwrap();
        assert!(csv.lines().nth(4).unwrap().contains(",why,"), "{csv}");
    }

    #[test]
    fn tails_are_high_percentiles_and_are_summarised_apart() {
        for (metric, tail) in [
            ("lat_p95_us", true),
            ("ms_p95", true),
            ("lat_p99_us", true),
            ("no_such_metric_p99", false),
            ("lat_p50_us", false),
            ("lat_mean_us", false),
            ("kiops", false),
            ("per_s", false),
        ] {
            assert_eq!(is_tail(metric), tail, "{metric}");
        }
        let mut results = vec![result("a", "g", Some(0.1), None), result("b", "g", Some(0.4), None)];
        results[1].metric = "lat_p99_us";
        results.push(RowResult { metric: "ms_p95", ..result("c", "g", Some(-0.2), None) });
        let s = summarize(&results);
        assert_eq!(s.tails, Share { compared: 2, median_abs_error: Some((0.4 + 0.2) / 2.0), within_25_pct: Some(0.5) });
        assert_eq!(s.others, Share { compared: 1, median_abs_error: Some(0.1), within_25_pct: Some(1.0) });
        let md = markdown("t", &s, "");
        assert!(md.contains("- tail rows (p90 and above): 50.0% within ±25% of 2, median |error| 30.0%"), "{md}");
    }

    fn latency(id: &str, run: &str, metric: &'static str, measured: f64, predicted: f64) -> RowResult {
        RowResult {
            metric,
            run: Some(format!("{run}: Fio(...)")),
            predicted: Some(predicted),
            error: Some(predicted / measured - 1.0),
            measured,
            group: format!("S / Fig 1 / {metric}"),
            ..result(id, "g", None, None)
        }
    }

    #[test]
    fn distributions_compare_each_level_and_each_jobs_spread() {
        let results = [
            // run-1: the right median, a p99 at the median (the drive's is three times it).
            latency("a", "run-1", "lat_p50_us", 10.0, 10.0),
            latency("b", "run-1", "lat_p99_us", 30.0, 10.0),
            latency("c", "run-1", "lat_mean_us", 14.0, 10.0),
            // run-2: in ms and µs mixed, twice as slow throughout: the spread is right.
            latency("d", "run-2", "ms_mean", 1.0, 2.0),
            latency("e", "run-2", "lat_p95_us", 1500.0, 3000.0),
            // run-3: a tail without a body.
            latency("f", "run-3", "ms_p95", 5.0, 5.0),
            result("g", "g", Some(0.1), None),
        ];
        let d = summarize(&results).distributions;
        let levels: Vec<&str> = d.levels.iter().map(|l| l.level.as_str()).collect();
        assert_eq!(levels, ["mean", "p50", "p95", "p99"]);
        assert_eq!(d.levels[2].share.compared, 2, "p95 in µs and in ms");
        assert_eq!(d.jobs, 2, "run-3 has no body");
        assert_eq!(d.worst[0].run, "run-1");
        assert_eq!((d.worst[0].tail.as_str(), d.worst[0].body.as_str()), ("lat_p99_us", "lat_p50_us"));
        assert!((d.worst[0].spread_error - (1.0 / 3.0 - 1.0)).abs() < 1e-12);
        assert!(d.worst[1].spread_error.abs() < 1e-12, "run-2: tail over mean 1.5 both");
        assert_eq!(d.spread_within_25_pct, Some(0.5));
        let md = markdown("t", &summarize(&results), "");
        assert!(md.contains("- p99 rows: 0.0% within ±25% of 1"), "{md}");
        assert!(md.contains("| run-1 | S / Fig 1 | write | lat_p99_us / lat_p50_us | 3.00 | 1.00 | -66.7% |"), "{md}");
    }

    #[test]
    fn repeated_measurements_of_one_quantity_are_compared_pairwise() {
        let results = [
            // One run's p95 measured twice 20% apart, its mean twice 50% apart.
            latency("a", "run-1", "lat_p95_us", 100.0, 110.0),
            latency("b", "run-1", "lat_p95_us", 120.0, 110.0),
            latency("c", "run-1", "lat_mean_us", 10.0, 10.0),
            latency("d", "run-1", "lat_mean_us", 15.0, 10.0),
            // The same number cited twice is one measurement; a lone one has no pair.
            latency("e", "run-2", "lat_p95_us", 50.0, 50.0),
            latency("f", "run-2", "lat_p95_us", 50.0, 50.0),
            latency("g", "run-3", "lat_p99_us", 70.0, 50.0),
        ];
        let r = summarize(&results).repeats;
        assert_eq!(r.quantities, 2);
        assert_eq!(r.tails, PairShare { pairs: 1, within_25_pct: Some(1.0) });
        assert_eq!(r.others, PairShare { pairs: 1, within_25_pct: Some(0.0) });
        // The model's rows of those quantities: p95 +10% and -8.3%; mean 0% and -33%.
        assert_eq!((r.model_tails.compared, r.model_tails.within_25_pct), (2, Some(1.0)));
        assert_eq!((r.model_others.compared, r.model_others.within_25_pct), (2, Some(0.5)));
        let md = markdown("t", &summarize(&results), "");
        assert!(
            md.contains("2 quantities were measured in more than one run; 100.0% of 1 tail pairs and 0.0% of 1 other"),
            "{md}"
        );
        assert_eq!(summarize(&results[4..]).repeats.quantities, 0);
    }
}
