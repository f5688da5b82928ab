//! `reproduce characterization` as a plan: one run per experiment; the
//! renderer writes the CSVs, plots, job files and summary from the records.

use super::RunSpec;
use crate::characterization::{self as c, Record};
use crate::error::{json, Result};
use serde_json::Value;
use std::path::Path;

/// The runs of the experiments whose name contains `filter`, in paper order.
pub fn plan(quick: bool, filter: &str) -> Result<Vec<RunSpec>> {
    let names = c::select(filter)?;
    Ok(names.into_iter().map(|n| RunSpec::Characterization { experiment: n.into(), quick }).collect())
}

/// The records of stored results (plan order).
pub fn records(results: &[Value]) -> Result<Vec<Record>> {
    results
        .iter()
        .map(|r| serde_json::from_value(r.clone()).map_err(json("a stored characterization result")))
        .collect()
}

/// Writes everything into `out` and returns the summary table (markdown).
pub fn render(results: &[Value], out: &Path, warn: &mut dyn FnMut(&str)) -> Result<String> {
    let records = records(results)?;
    c::write_records(out, &records, warn)?;
    Ok(c::summary_records(&records))
}
