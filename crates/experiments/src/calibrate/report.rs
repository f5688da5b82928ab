//! The calibration report: per-row CSV, JSON and Markdown summaries.

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

/// Whether `metric` is a tail: a latency percentile of 90 or more
/// (`lat_p95_us`, `ms_p99`, `lat_p99.9_us`), not a median nor a mean.
pub fn is_tail(metric: &str) -> bool {
    metric.split('_').any(|part| {
        part.strip_prefix('p').and_then(|n| n.parse::<f64>().ok()).is_some_and(|percentile| percentile >= 90.0)
    })
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
    s.push('\n');
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
            ("lat_p99.9_us", true),
            ("lat_p90_us", true),
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
}
