//! `zonelab run`: fio job files and fio command lines against a device.
//!
//! The command line mixes zonelab's own options (device, output, seed,
//! scheduler) with fio's job options (`--name=a --rw=write ...`) and job
//! files; they are told apart here, before clap sees zonelab's part.

use crate::args::DeviceArgs;
use crate::UserError;
use clap::Parser;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::time::{Duration, Instant};
use zonelab_workload::fio::job::Scheduler;
use zonelab_workload::fio::report::{json_report, normal_report, OutputFormat};
use zonelab_workload::fio::run::{Engine, RunOptions};
use zonelab_workload::fio::{job::JobError, parse::parse_run};

/// zonelab's options of `run`; everything else is a fio option or a job file.
#[derive(Parser, Debug)]
#[command(name = "zonelab run", about = "Run fio job files or a fio command line against a simulated device")]
struct RunArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// normal, json or json+.
    #[arg(long = "output-format", default_value = "normal")]
    output_format: String,
    /// Write the report to FILE instead of stdout.
    #[arg(long)]
    output: Option<String>,
    /// Seed of the run's random numbers (jobs with randseed= keep theirs).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Scheduler of jobs that do not set scheduler=: none, mq-deadline or zinc.
    #[arg(long, default_value = "none")]
    scheduler: String,
    /// ZINC: epoch at which a held reset or finish may go (e.g. 32ms).
    #[arg(long = "zinc-epoch", default_value = "32ms")]
    zinc_epoch: String,
    /// ZINC: release when fewer 8 KiB write units than this are in flight.
    #[arg(long = "zinc-inflight", default_value_t = 2)]
    zinc_inflight: u64,
    /// ZINC: release when more 8 KiB write units than this went since the last release.
    #[arg(long = "zinc-budget", default_value_t = 2000)]
    zinc_budget: u64,
    /// ZINC: release after this many epochs held.
    #[arg(long = "zinc-held-epochs", default_value_t = 3)]
    zinc_held_epochs: u32,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

const VALUE_FLAGS: [&str; 17] = [
    "device",
    "set",
    "zones",
    "zone-size",
    "zone-capacity",
    "max-open",
    "max-active",
    "conventional-zones",
    "lba-bytes",
    "output-format",
    "output",
    "seed",
    "scheduler",
    "zinc-epoch",
    "zinc-inflight",
    "zinc-budget",
    "zinc-held-epochs",
];
const BARE_FLAGS: [&str; 4] = ["data", "quiet", "help", "h"];

/// Splits `run`'s arguments into zonelab's, fio's options, and job files.
fn split(args: &[String]) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut own, mut fio, mut files) = (vec!["zonelab run".to_string()], Vec::new(), Vec::new());
    let mut iter = args.iter().peekable();
    while let Some(arg) = iter.next() {
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-').filter(|b| *b == "h")) else {
            files.push(arg.clone());
            continue;
        };
        let name = body.split('=').next().unwrap_or(body);
        if VALUE_FLAGS.contains(&name) {
            own.push(arg.clone());
            if !body.contains('=') {
                if let Some(value) = iter.next() {
                    own.push(value.clone());
                }
            }
        } else if BARE_FLAGS.contains(&name) {
            own.push(arg.clone());
        } else {
            fio.push(arg.clone());
        }
    }
    (own, fio, files)
}

fn job_error(e: JobError) -> UserError {
    UserError(e.to_string())
}

pub fn run(args: &[String]) -> Result<(), UserError> {
    let (own, fio_args, files) = split(args);
    let opts = RunArgs::try_parse_from(&own).unwrap_or_else(|e| e.exit());
    let format = OutputFormat::parse(&opts.output_format)
        .ok_or_else(|| UserError(format!("--output-format '{}': use normal, json or json+", opts.output_format)))?;
    let scheduler = match opts.scheduler.as_str() {
        "none" => Scheduler::None,
        "mq-deadline" => Scheduler::MqDeadline,
        "zinc" => Scheduler::Zinc,
        other => return Err(UserError(format!("--scheduler '{other}': use none, mq-deadline or zinc"))),
    };
    let epoch_ns = zonelab_device::options::parse_duration_ns(&opts.zinc_epoch)
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| UserError(format!("--zinc-epoch '{}': use a positive time such as 32ms", opts.zinc_epoch)))?;
    let mut host = zonelab_host::HostConfig::default();
    host.zinc = zonelab_host::ZincConfig {
        epoch_ns,
        inflight_units_threshold: opts.zinc_inflight,
        write_units_budget: opts.zinc_budget,
        held_epochs_max: opts.zinc_held_epochs,
        ..host.zinc
    };
    let mut sources = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).map_err(|e| UserError(format!("{path}: {e}")))?;
        sources.push((path.clone(), text));
    }
    if sources.is_empty() && fio_args.is_empty() {
        return Err(UserError("no job: give job files or fio options such as --name=a --rw=write".into()));
    }
    let set = parse_run(&fio_args, &sources).map_err(job_error)?;
    let mut device = crate::device_from(&opts.device)?;
    let options = RunOptions { seed: opts.seed, scheduler, host };
    let engine = Engine::new(&mut device, &set, &options).map_err(job_error)?;
    let mut progress = Progress::new(opts.quiet);
    let result = engine.run(&mut |now_ns| progress.update(now_ns)).map_err(job_error)?;
    progress.finish();
    for thread in &result.threads {
        if let Some((errno, message)) = &thread.stats.error {
            eprintln!("fio: io_u error on job {}: {message} (errno {errno})", set.jobs[thread.spec].name);
        }
    }
    let text = match format {
        OutputFormat::Normal => normal_report(&set, &result),
        OutputFormat::Json | OutputFormat::JsonPlus => {
            let value = json_report(&set, &result, format == OutputFormat::JsonPlus);
            serde_json::to_string_pretty(&value).expect("reports serialise") + "\n"
        }
    };
    match &opts.output {
        Some(path) => std::fs::write(path, text).map_err(|e| UserError(format!("{path}: {e}"))),
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(text.as_bytes()) {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(UserError(format!("stdout: {e}"))),
                _ => Ok(()),
            }
        }
    }
}

/// A spinner with the simulated time, shown once a run has taken a few
/// wall-clock seconds and only on a terminal.
struct Progress {
    started: Instant,
    quiet: bool,
    bar: Option<ProgressBar>,
}

impl Progress {
    fn new(quiet: bool) -> Self {
        Progress { started: Instant::now(), quiet, bar: None }
    }

    fn update(&mut self, now_ns: u64) {
        if self.quiet || self.started.elapsed() < Duration::from_secs(2) {
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {elapsed} simulating: {msg}").expect("valid template"),
            );
            bar
        });
        bar.set_message(format!("{:.3} s of device time", now_ns as f64 / 1e9));
        bar.tick();
    }

    fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}
