//! `zonelab reproduce integration`: seed 001's block-level experiments (Fig
//! 4a/4b on the conventional namespace, Fig 5a/5b and 6a/6b on the zoned
//! one) and its multi-tenancy experiment, with the characterization's outputs.

use crate::UserError;
use clap::Args;
use std::path::PathBuf;
use zonelab_experiments::characterization::{summary_records, write_records};
use zonelab_experiments::integration::{self, Scale};

#[derive(Args)]
pub struct IntegrationArgs {
    /// Directory for CSVs, plots (PNG and SVG), job files and the summary.
    #[arg(long, default_value = "integration")]
    out: PathBuf,
    /// Replace the results of an earlier run in --out (never a directory zonelab did not write).
    #[arg(long)]
    force: bool,
    /// Shorter windows and fewer sweep points (under 30 seconds).
    #[arg(long)]
    quick: bool,
    /// Runs at once (default: the machine's cores). The output is the same for any number.
    #[arg(long)]
    jobs: Option<usize>,
}

pub fn run(a: &IntegrationArgs) -> Result<(), UserError> {
    let started = std::time::Instant::now();
    let threads = a.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    if threads == 0 || threads > 256 {
        return Err(UserError(format!("--jobs {threads} must be within 1 ..= 256")));
    }
    zonelab_experiments::out_dir::check(&a.out, a.force)?;
    let lines = crate::progress::Tenths::new("integration", "runs");
    let stage = std::sync::Mutex::new(String::new());
    let progress = |name: &str, done: usize, total: usize| {
        let mut last = stage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if *last != name {
            eprintln!("zonelab: integration: {name}");
            *last = name.to_string();
        }
        lines.update(done, total);
    };
    let records = integration::run(Scale { quick: a.quick }, threads, &progress)?;
    zonelab_experiments::out_dir::claim(&a.out, a.force)?;
    write_records(&a.out, &records, &mut |w| eprintln!("zonelab: {w}"))?;
    print!("{}", summary_records(&records));
    eprintln!("zonelab: wrote {} in {:.1} s", a.out.display(), started.elapsed().as_secs_f64());
    Ok(())
}
