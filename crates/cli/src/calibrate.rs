//! `zonelab calibrate`: rerun a measurements file on a device and report the error; optionally fit parameters.

use crate::args::DeviceArgs;
use crate::UserError;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::PathBuf;
use zonelab_experiments::calibrate::{self as cal, fio_results, fit, identify, Settings};

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Measurements file (format: docs/measurements.md), or a `zonelab profile` directory holding fio's results.
    pub measurements: PathBuf,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Only rows whose "id source figure stack op metric" contains every comma-separated term.
    #[arg(long, default_value = "")]
    pub only: String,
    /// Directory for rows.csv, report.json, report.md and the plots.
    #[arg(long, default_value = "calibration")]
    pub out: PathBuf,
    /// Replace the results of an earlier run in --out (never a directory zonelab did not write).
    #[arg(long)]
    pub force: bool,
    /// Threads (default: all cores). The output is the same for any number.
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Measured window of an I/O run in simulated milliseconds (runs with management jobs last longer)
    /// [default: 1000; a profile directory's own window].
    #[arg(long)]
    pub runtime_ms: Option<u64>,
    /// Fit these device parameters (--set paths, comma-separated), e.g. controller.write_ns,flash_timing.program_ns
    /// [default for a profile directory: those of zonelab's candidates its rows constrain].
    #[arg(long, value_delimiter = ',')]
    pub fit: Vec<String>,
    /// Folds of the fit's cross-validation (0 or 1: none).
    #[arg(long, default_value_t = 5)]
    pub folds: usize,
    /// Most loss evaluations of one fit.
    #[arg(long, default_value_t = 60)]
    pub max_evals: u64,
    /// Weight of the tail rows (p90 and above) in the fit's loss; the other rows weigh 1.
    #[arg(long, default_value_t = 1.0)]
    pub fit_tail_weight: f64,
    #[command(flatten)]
    pub plan: crate::plan::PlanArgs,
}

fn progress_bar() -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
    if !std::io::stderr().is_terminal() {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    let style = ProgressStyle::with_template("{prefix} [{bar:30}] {pos}/{len} runs, {elapsed} elapsed, ETA {eta}")
        .expect("a valid template")
        .progress_chars("=> ");
    bar.set_style(style);
    bar
}

pub fn run(args: &CalibrateArgs) -> Result<(), UserError> {
    let dir = args.measurements.is_dir();
    if dir && args.measurements.join("plan.json").exists() {
        return run_profile(args);
    }
    let started = std::time::Instant::now();
    let config = args.device.config().map_err(|e| UserError(e.0))?;
    let all = cal::read_file(&args.measurements).map_err(|e| match dir {
        true => UserError(format!("{e} (nor a `zonelab profile` directory: it holds no plan.json)")),
        false => e.into(),
    })?;
    let rows = cal::select(&all, &args.only);
    if rows.is_empty() {
        return Err(UserError(format!("--only '{}' selects none of the {} rows", args.only, all.len())));
    }
    if args.fit.is_empty() && args.fit_tail_weight != 1.0 {
        return Err(UserError("--fit-tail-weight weighs the rows of a fit: give --fit PARAMETERS with it".into()));
    }
    zonelab_experiments::out_dir::check(&args.out, args.force)?;
    let threads = args.jobs.unwrap_or_else(|| Settings::default().threads).max(1);
    let settings = Settings { runtime_ms: args.runtime_ms.unwrap_or(1000).max(1), threads, window_ms_min: 0 };
    let bar = progress_bar();
    // A fit counts its evaluations (each a set of runs), a plain calibration its runs.
    let unit = if args.fit.is_empty() { "runs" } else { "evaluations" };
    let lines = bar.is_hidden().then(|| crate::progress::Tenths::new("calibrate", unit));
    let progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
        if let Some(lines) = &lines {
            lines.update(done, total);
        }
    };
    let title = format!("zonelab calibrate: {} on {}", args.measurements.display(), config.name);
    let mut warn = |w: &str| eprintln!("zonelab: {w}");
    let head = if args.fit.is_empty() {
        bar.set_prefix("calibrate");
        let plan = cal::Plan::new(&config, &rows, settings);
        let stored = crate::plan::run_plan(&plan.specs, &args.plan, threads, &|_, done, total| progress(done, total));
        bar.finish_and_clear();
        let Some(stored) = stored? else { return Ok(()) };
        let (results, jobs) = plan.results(&rows, &stored)?;
        zonelab_experiments::out_dir::claim(&args.out, args.force)?;
        cal::write(&args.out, &title, &results, &jobs, None, &mut warn)?
    } else {
        if args.plan.shard.is_some() || args.plan.store.is_some() {
            return Err(UserError(
                "--shard and --store do not apply to --fit: each evaluation of a fit depends on the one before".into(),
            ));
        }
        let request = fit::Request {
            tail_weight: args.fit_tail_weight,
            ..fit::Request::new(args.fit.clone(), args.folds, args.max_evals)
        };
        let outcome =
            fit::fit(&config, &rows, &request, settings, &|stage: &str| bar.set_prefix(stage.to_string()), &progress)
                .map_err(UserError::from);
        bar.finish_and_clear();
        let outcome = outcome?;
        zonelab_experiments::out_dir::claim(&args.out, args.force)?;
        cal::write(&args.out, &title, &outcome.results, &[], Some(&outcome), &mut warn)?
    };
    print!("{head}");
    eprintln!("zonelab: wrote {} in {:.1} s", args.out.display(), started.elapsed().as_secs_f64());
    Ok(())
}

/// `calibrate DIR`: a profile directory's fio results as rows (written as
/// measurements.csv), which parameters they constrain, and a fit of those.
fn run_profile(args: &CalibrateArgs) -> Result<(), UserError> {
    let started = std::time::Instant::now();
    let converted = fio_results::read_dir(&args.measurements)?;
    for missing in &converted.missing {
        eprintln!("zonelab: no result for {missing}");
    }
    let m = &converted.manifest;
    // The model's zones are the drive's, unless the command line says otherwise.
    let mut device = args.device.clone();
    device.zone_size = device.zone_size.or(Some(m.zone_bytes));
    device.zone_capacity = device.zone_capacity.or(Some(m.zcap_bytes));
    let config = device.config().map_err(|e| UserError(e.0))?;
    let rows = cal::select(&converted.rows, &args.only);
    if rows.is_empty() {
        return Err(UserError(format!("--only '{}' selects none of the {} rows", args.only, converted.rows.len())));
    }
    if args.plan.shard.is_some() || args.plan.store.is_some() {
        return Err(UserError(
            "--shard and --store do not apply to a profile directory, which is always fitted".into(),
        ));
    }
    zonelab_experiments::out_dir::check(&args.out, args.force)?;
    let threads = args.jobs.unwrap_or_else(|| Settings::default().threads).max(1);
    let settings = Settings { runtime_ms: args.runtime_ms.unwrap_or(m.runtime_ms).max(1), threads, window_ms_min: 0 };
    let request =
        fit::Request::new(args.fit.clone(), args.folds, args.max_evals).with_tail_weight(args.fit_tail_weight);
    let bar = progress_bar();
    let progress = |done: usize, total: usize| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    };
    let stage = |stage: &str| bar.set_prefix(stage.to_string());
    let outcome = identify::fit_identifiable(&config, &rows, &request, settings, &stage, &progress);
    bar.finish_and_clear();
    let outcome = outcome?;
    zonelab_experiments::out_dir::claim(&args.out, args.force)?;
    let csv = args.out.join("measurements.csv");
    std::fs::write(&csv, cal::rows::to_csv(&converted.rows)?)
        .map_err(|e| UserError(format!("{}: {e}", csv.display())))?;
    let title = format!("zonelab calibrate: {} on {}", args.measurements.display(), config.name);
    let mut warn = |w: &str| eprintln!("zonelab: {w}");
    print!("{}", cal::write(&args.out, &title, &outcome.results, &[], Some(&outcome), &mut warn)?);
    eprintln!("zonelab: wrote {} in {:.1} s", args.out.display(), started.elapsed().as_secs_f64());
    Ok(())
}
