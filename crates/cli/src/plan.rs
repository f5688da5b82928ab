//! The plan runner's options (`--shard`, `--store`) and `reproduce
//! characterization` through it: plan, run what the store lacks, render.

use crate::{progress, UserError};
use clap::Args;
use std::path::{Path, PathBuf};
use zonelab_experiments::plan::{self, Shard, Store};

#[derive(Args, Debug, Clone)]
pub struct PlanArgs {
    /// Run only shard INDEX/COUNT of the plan (INDEX from 0, e.g. a Slurm array's
    /// $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT); needs --store. The shard that
    /// completes the store renders.
    #[arg(long, value_parser = Shard::parse, requires = "store")]
    pub shard: Option<Shard>,
    /// Result store directory: one JSON line per finished run; runs it holds are not run again.
    #[arg(long)]
    pub store: Option<PathBuf>,
}

impl PlanArgs {
    fn open(&self) -> Result<(Shard, Store), UserError> {
        let shard = self.shard.unwrap_or(Shard::ALL);
        let store = match &self.store {
            Some(dir) => Store::open(dir, &shard.file_name())?,
            None => Store::memory(),
        };
        Ok((shard, store))
    }
}

/// Runs `plan`'s shard on `threads` threads; the results in plan order once
/// the store has them all. `progress(label, started, total)` as [`plan::execute`].
pub fn run_plan(
    specs: &[plan::RunSpec],
    args: &PlanArgs,
    threads: usize,
    progress: plan::Progress<'_>,
) -> Result<Option<Vec<serde_json::Value>>, UserError> {
    let (shard, mut store) = args.open()?;
    let executed = plan::execute(specs, shard, &mut store, threads, progress)?;
    if executed.skipped > 0 {
        eprintln!("zonelab: {} runs already in the store, {} run now", executed.skipped, executed.ran);
    }
    match plan::collect(specs, &store) {
        Ok(results) => Ok(Some(results)),
        Err(missing) => {
            eprintln!(
                "zonelab: {missing} of {} runs are not in the store yet: rendering once every shard has run",
                specs.len()
            );
            Ok(None)
        }
    }
}

/// [`run_plan`] with a progress bar of its runs.
fn run_plan_steps(
    specs: &[plan::RunSpec],
    args: &PlanArgs,
    threads: usize,
) -> Result<Option<Vec<serde_json::Value>>, UserError> {
    let shard = args.shard.unwrap_or(Shard::ALL);
    let mine = (0..specs.len()).filter(|&p| shard.holds(p)).count();
    let steps = progress::Steps::new(mine as u64, "runs");
    let results = run_plan(specs, args, threads, &|label, started, _| {
        steps.start(started as u64, &format!("running {label}"));
    });
    steps.finish();
    results
}

/// `reproduce znsplus` through the plan: the figures and tables, or None
/// while the store lacks runs of other shards.
pub fn reproduce_znsplus(
    scale: zonelab_experiments::znsplus::Scale,
    jobs: usize,
    args: &PlanArgs,
) -> Result<Option<Vec<zonelab_experiments::znsplus::Output>>, UserError> {
    let specs = plan::znsplus::plan(scale);
    let Some(results) = run_plan_steps(&specs, args, jobs)? else {
        return Ok(None);
    };
    Ok(Some(plan::znsplus::render(scale, &results)?))
}

pub fn reproduce_characterization(
    out: &Path,
    force: bool,
    quick: bool,
    only: &str,
    args: &PlanArgs,
) -> Result<(), UserError> {
    let started = std::time::Instant::now();
    let specs = plan::characterization::plan(quick, only)?;
    zonelab_experiments::out_dir::check(out, force)?;
    let Some(results) = run_plan_steps(&specs, args, 1)? else {
        return Ok(());
    };
    zonelab_experiments::out_dir::claim(out, force)?;
    let summary = plan::characterization::render(&results, out, &mut |w| eprintln!("zonelab: {w}"))?;
    print!("{summary}");
    eprintln!("zonelab: wrote {} in {:.1} s", out.display(), started.elapsed().as_secs_f64());
    Ok(())
}
