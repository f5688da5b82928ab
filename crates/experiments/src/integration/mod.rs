//! `zonelab reproduce integration`: seed 001's block-level experiments
//! ("Understanding NVMe Zoned Namespace (ZNS) Flash SSD Storage Devices",
//! §6 and its appendix D) and its multi-tenancy experiment (§4.1.3) on the
//! ZN540 model.
//!
//! - `conventional`: Fig 4a and 4b, the conventional namespace.
//! - `zoned`: Fig 5a/5b and 6a/6b, mq-deadline against none on the zoned namespace.
//! - `tenancy`: two namespaces of one drive, one writing hard beside the other.
//!
//! Each figure is a [`Record`] as the characterization writes them (CSV,
//! PNG and SVG, job files, findings in `summary.md`/`summary.json`); the
//! drive's own numbers (the ZNS-Study rows of `data/measurements/zn540.csv`)
//! stand beside zonelab's in every CSV and plot.

mod conventional;
mod measure;
mod measured;
mod tenancy;
mod zoned;

pub use crate::characterization::{Finding, Record, Scale};

use crate::error::Result;
use crate::plot::Figure;

/// The experiments, in paper order (file stems of their outputs).
pub const EXPERIMENTS: [&str; 7] = [
    "fig4a-conventional-iops",
    "fig4b-conventional-bandwidth",
    "fig5a-zoned-seqread",
    "fig5b-zoned-randread",
    "fig6a-zoned-write-zones",
    "fig6b-zoned-write-depth",
    tenancy::NAME,
];

/// Runs every experiment on `threads` threads (the results do not depend on
/// it); `progress` hears of each stage and of runs done out of runs.
pub fn run(scale: Scale, threads: usize, progress: &(dyn Fn(&str, usize, usize) + Sync)) -> Result<Vec<Record>> {
    let settings = measure::settings(scale.quick, threads);
    let conv = conventional::runs(scale);
    let ran = measure::measure("zn540-seed001", &conv, settings, &|d, t| progress("conventional namespace", d, t))?;
    let mut out = vec![conventional::fig4a(scale, &ran)?, conventional::fig4b(scale, &ran)?];
    let zoned_runs = zoned::runs(scale);
    let ran = measure::measure("zn540", &zoned_runs, settings, &|d, t| progress("zoned namespace", d, t))?;
    out.extend(zoned::figures(scale, &ran)?);
    out.push(tenancy::run(scale, threads, &|d, t| progress("multi-tenancy", d, t))?);
    Ok(out)
}

/// zonelab's panel beside the drive's (or two quantities side by side).
fn panel_pair(title: &str, left: Figure, right: Figure) -> Figure {
    Figure::panels(title, 2, (560, 420), vec![left, right])
}
