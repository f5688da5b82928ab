//! `zonelab run`: fio job files and fio command lines against a device.
//!
//! The command line mixes zonelab's own options (device, output, seed,
//! scheduler) with fio's job options (`--name=a --rw=write ...`) and job
//! files; they are told apart here, before clap sees zonelab's part.

use crate::args::DeviceArgs;
use crate::UserError;
use clap::{Parser, ValueEnum};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use zonelab_device::{Device, DeviceConfig, Namespaces, Tracking, ZonedDevice};
use zonelab_workload::fio::device_report;
use zonelab_workload::fio::help as fio_help;
use zonelab_workload::fio::job::JobSet;
use zonelab_workload::fio::job::Scheduler;
use zonelab_workload::fio::options as fio_options;
use zonelab_workload::fio::report::{json_report, normal_header, normal_stats, terse_report, TERSE_VERSION};
use zonelab_workload::fio::run::{Engine, RunOptions, RunResult};
use zonelab_workload::fio::{job::JobError, parse::parse_run};

/// Report formats of `--output-format` (fio's names; `minimal` and `csv` are terse).
#[derive(Clone, Copy, Debug, ValueEnum)]
enum FormatArg {
    Normal,
    Json,
    #[value(name = "json+")]
    JsonPlus,
    Terse,
    Minimal,
    Csv,
}

/// The reports to print, as fio's `--output-format`, `--minimal` and
/// `--append-terse` select them; printed terse first, then JSON, then the
/// normal report's statistics (its job lines come before all of them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Formats {
    normal: bool,
    terse: bool,
    json: bool,
    json_plus: bool,
}

impl Formats {
    /// fio's `parse_output_format`: a comma-separated list replaces the formats.
    fn parse(list: &str) -> Result<Self, UserError> {
        let mut formats = Formats::default();
        for name in list.split(',') {
            match FormatArg::from_str(name, false) {
                Ok(FormatArg::Normal) => formats.normal = true,
                Ok(FormatArg::Json) => formats.json = true,
                Ok(FormatArg::JsonPlus) => (formats.json, formats.json_plus) = (true, true),
                Ok(FormatArg::Terse | FormatArg::Minimal | FormatArg::Csv) => formats.terse = true,
                Err(_) => {
                    let valid = "normal, json, json+, terse (also minimal, csv), comma-separated";
                    return Err(UserError(format!("--output-format: '{name}' is not a format (valid: {valid})")));
                }
            }
        }
        Ok(formats)
    }

    /// The formats `own` (zonelab's arguments, in order) select: each
    /// `--output-format` and `--minimal` replaces the earlier ones,
    /// `--append-terse` adds terse; normal when none is given.
    fn of(own: &[String]) -> Result<Self, UserError> {
        let mut formats = Formats { normal: true, ..Formats::default() };
        let mut args = own.iter();
        while let Some(arg) = args.next() {
            match arg.split_once('=').map_or((arg.as_str(), None), |(name, value)| (name, Some(value))) {
                ("--output-format", value) => {
                    formats = Self::parse(value.or_else(|| args.next().map(|v| v.as_str())).unwrap_or(""))?
                }
                ("--terse-version", value) => {
                    check_terse_version(value.or_else(|| args.next().map(|v| v.as_str())).unwrap_or(""))?
                }
                ("--minimal", _) => formats = Formats { terse: true, ..Formats::default() },
                ("--append-terse", _) => formats.terse = true,
                _ => {}
            }
        }
        Ok(formats)
    }
}

/// zonelab writes fio's terse version 3 only (fio also knows 2, 4 and 5).
fn check_terse_version(value: &str) -> Result<(), UserError> {
    if value.trim() == TERSE_VERSION.to_string() {
        return Ok(());
    }
    Err(UserError(format!(
        "--terse-version={value}: zonelab writes terse version {TERSE_VERSION} only (fio's default); versions 2, 4 and 5 \
         are not supported"
    )))
}

/// I/O schedulers of `--scheduler`.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum SchedulerArg {
    None,
    MqDeadline,
    /// ZINC (seed 003): mq-deadline holding zone resets and finishes back.
    Zinc,
}

/// `run` as clap shows it (help, completions, man page): zonelab's options,
/// then fio's options and job files, which `split` tells apart.
#[derive(clap::Args, Debug)]
pub struct RunCommand {
    #[command(flatten)]
    own: RunArgs,
    /// fio options (--name=a --rw=write, or --name a --rw write) and job files.
    #[arg(value_name = "FIO_OPTIONS_AND_JOB_FILES", trailing_var_arg = true, allow_hyphen_values = true)]
    fio: Vec<String>,
}

/// zonelab's options of `run`; everything else is a fio option or a job file.
#[derive(Parser, Debug)]
#[command(
    name = "zonelab run",
    about = "Run fio job files or a fio command line against a simulated device",
    after_help = "fio options (--name=a --rw=write, or --name a --rw write) and job files follow; \
                  --cmdhelp[=OPTION] lists or describes them. Exit status: 0, 1 when a job had an \
                  I/O error (as fio), 2 for a usage or job file error."
)]
struct RunArgs {
    #[command(flatten)]
    device: DeviceArgs,
    /// Report formats, comma-separated: normal (default), json, json+, terse (fio's minimal, csv).
    #[arg(long = "output-format", value_enum, value_delimiter = ',', action = clap::ArgAction::Append)]
    output_format: Vec<FormatArg>,
    /// Terse report only (fio's terse version 3), as --output-format=terse.
    #[arg(long, action = clap::ArgAction::Count)]
    minimal: u8,
    /// Add the terse report to the selected formats.
    #[arg(long = "append-terse", action = clap::ArgAction::Count)]
    append_terse: u8,
    /// Version of the terse report: 3 (the only one zonelab writes, fio's default).
    #[arg(long = "terse-version", value_name = "VERSION", action = clap::ArgAction::Append)]
    terse_version: Vec<String>,
    /// Write the report to FILE instead of stdout.
    #[arg(long)]
    output: Option<String>,
    /// Seed of the run's random numbers (jobs with randseed= keep theirs).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Scheduler of jobs that do not set scheduler=.
    #[arg(long, value_enum, default_value_t = SchedulerArg::None)]
    scheduler: SchedulerArg,
    /// Host machine whose I/O stack costs apply: seed000 (default), seed003 or zns-study.
    #[arg(long = "host-machine", default_value = "seed000")]
    host_machine: String,
    /// ZINC: epoch at which a held reset or finish may go (e.g. 64ms).
    #[arg(long = "zinc-epoch", default_value = "64ms")]
    zinc_epoch: String,
    /// ZINC: release when fewer 8 KiB write units than this are in flight.
    #[arg(long = "zinc-inflight", default_value_t = 3)]
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
    /// Run jobs estimated at more than an hour of CPU (docs/fio.md, "How much work a job may ask for").
    #[arg(long = "allow-long-runs")]
    allow_long_runs: bool,
    /// Split the device's zones into N zoned namespaces of one drive (as serve --namespaces); jobs pick theirs
    /// with filename=/dev/nvme0nK.
    #[arg(long, value_name = "N")]
    namespaces: Option<u32>,
    /// The namespace of jobs without filename= on a device with several (default 1).
    #[arg(long, value_name = "NSID")]
    nsid: Option<u32>,
}

const VALUE_FLAGS: [&str; 22] = [
    "device",
    "set",
    "capacity",
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
    "host-machine",
    "terse-version",
    "namespaces",
    "nsid",
];
const BARE_FLAGS: [&str; 7] = ["data", "quiet", "allow-long-runs", "help", "h", "minimal", "append-terse"];

/// `run`'s arguments sorted into zonelab's, fio's options, and job files.
#[derive(Debug, PartialEq)]
struct Split {
    own: Vec<String>,
    fio: Vec<String>,
    files: Vec<String>,
}

/// Splits `run`'s arguments. An option without `=` that takes a value
/// consumes the next argument, zonelab's and fio's alike (getopt's rule, as
/// fio reads `--name w --rw write`); anything else not starting with `-` is
/// a job file.
fn split(args: &[String]) -> Split {
    let mut out = Split { own: vec!["zonelab run".to_string()], fio: Vec::new(), files: Vec::new() };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        // fio reads `-name` as `--name` (getopt_long_only); "-" alone is not an option.
        let Some(body) = arg.strip_prefix("--").or_else(|| arg.strip_prefix('-')).filter(|b| !b.is_empty()) else {
            out.files.push(arg.clone());
            continue;
        };
        let (name, inline_value) = match body.split_once('=') {
            Some((name, _)) => (name, true),
            None => (body, false),
        };
        let (list, takes_value) = if VALUE_FLAGS.contains(&name) {
            (&mut out.own, true)
        } else if BARE_FLAGS.contains(&name) {
            (&mut out.own, false)
        } else {
            (&mut out.fio, fio_options::takes_value_on_cli(name).unwrap_or(false))
        };
        list.push(arg.clone());
        if takes_value && !inline_value {
            list.extend(iter.next().cloned());
        }
    }
    out
}

/// Whether `--name` (zonelab's or fio's) takes a value: the next argument when not written `--name=value`.
pub(crate) fn takes_value(name: &str) -> bool {
    VALUE_FLAGS.contains(&name)
        || (!BARE_FLAGS.contains(&name) && fio_options::takes_value_on_cli(name).unwrap_or(false))
}

fn job_error(e: JobError) -> UserError {
    UserError(e.to_string())
}

/// `--cmdhelp[=OPTION]` anywhere among the arguments: fio answers it and runs nothing.
fn cmdhelp(args: &[String]) -> Option<Result<String, UserError>> {
    let arg = args.iter().find_map(|a| {
        let body = a.strip_prefix("--").or_else(|| a.strip_prefix('-'))?;
        body.strip_prefix("cmdhelp").filter(|rest| rest.is_empty() || rest.starts_with('='))
    })?;
    Some(fio_help::cmdhelp(arg.strip_prefix('=')).map_err(|e| UserError(e.to_string())))
}

fn host_config(opts: &RunArgs) -> Result<zonelab_host::HostConfig, UserError> {
    let epoch_ns = zonelab_device::options::parse_duration_ns(&opts.zinc_epoch)
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| UserError(format!("--zinc-epoch '{}': use a positive time such as 64ms", opts.zinc_epoch)))?;
    let mut host = zonelab_host::HostConfig::machine(&opts.host_machine).ok_or_else(|| {
        UserError(format!(
            "--host-machine '{}': use one of {}",
            opts.host_machine,
            zonelab_host::HOST_MACHINES.join(", ")
        ))
    })?;
    host.zinc = zonelab_host::ZincConfig {
        epoch_ns,
        inflight_units_threshold: opts.zinc_inflight,
        write_units_budget: opts.zinc_budget,
        held_epochs_max: opts.zinc_held_epochs,
        ..host.zinc
    };
    Ok(host)
}

/// Runs the jobs and prints the report. Exit status 1 when a job had an I/O
/// error: fio exits non-zero then too (with the number of failed jobs; zonelab
/// keeps 1 so that 2 stays "usage or job file error").
pub fn run(args: &[String]) -> Result<ExitCode, UserError> {
    if let Some(help) = cmdhelp(args) {
        write_stdout(&help?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let Split { own, fio: fio_args, files } = split(args);
    let opts = RunArgs::try_parse_from(&own).unwrap_or_else(|e| e.exit());
    let formats = Formats::of(&own)?;
    let scheduler = match opts.scheduler {
        SchedulerArg::None => Scheduler::None,
        SchedulerArg::MqDeadline => Scheduler::MqDeadline,
        SchedulerArg::Zinc => Scheduler::Zinc,
    };
    let host = host_config(&opts)?;
    let mut sources = Vec::new();
    for path in &files {
        let text = zonelab_sim::input::read_text(path.as_ref(), zonelab_sim::input::TEXT_BYTES_MAX)
            .map_err(|e| UserError(format!("job file: {e}")))?;
        sources.push((path.clone(), text));
    }
    if sources.is_empty() && fio_args.is_empty() {
        return Err(UserError("no job: give job files or fio options such as --name=a --rw=write".into()));
    }
    let set = parse_run(&fio_args, &sources).map_err(job_error)?;
    let mut output = opts.output.as_deref().map(ReportFile::open).transpose()?;
    let work_cap_ios = if opts.allow_long_runs { f64::INFINITY } else { RunOptions::default().work_cap_ios };
    let options = RunOptions { seed: opts.seed, scheduler, host, work_cap_ios };
    let config = device_config(&opts)?;
    let (result, drive) = if config.namespaces.is_empty() {
        if let Some(nsid) = opts.nsid.filter(|&n| n != 1) {
            return Err(UserError(format!("--nsid {nsid}: the device has one namespace, NSID 1")));
        }
        // A fio job never cuts the power nor reports chip utilization.
        let mut device = Device::with_tracking(config, Tracking::NONE).map_err(|e| UserError(e.0))?;
        let result = execute(Engine::new(&mut device, &set, &options).map_err(job_error)?, opts.quiet)?;
        let drive = device_report::device_json(&mut device, result.end_ns);
        (result, drive)
    } else {
        let mut drive = Namespaces::new(config).map_err(|e| UserError(e.0))?;
        let engine = Engine::on_namespaces(&mut drive, &set, &options, opts.nsid.unwrap_or(1)).map_err(job_error)?;
        let result = execute(engine, opts.quiet)?;
        let end_ns = result.end_ns;
        (result, Some(drive_json(&mut drive, end_ns)))
    };
    for warning in &result.warnings {
        eprintln!("zonelab: {warning}");
    }
    let mut failed = false;
    for thread in &result.threads {
        for line in &thread.verify_log {
            eprintln!("{line}");
        }
        if let Some((errno, message)) = &thread.stats.error {
            eprintln!("fio: io_u error on job {}: {message} (errno {errno})", set.jobs[thread.spec].name);
            failed = true;
        }
    }
    let text = report(&formats, &set, &result, drive.as_ref());
    match output.as_mut() {
        Some(file) => file.write(&text)?,
        None => write_stdout(&text)?,
    }
    if let Some(file) = output.take() {
        file.keep();
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The device `run` simulates: `--device` and its options, split into
/// `--namespaces N` zoned namespaces when asked.
fn device_config(opts: &RunArgs) -> Result<DeviceConfig, UserError> {
    let config = opts.device.config().map_err(|e| UserError(e.0))?;
    match opts.namespaces {
        Some(count) => zonelab_device::config::namespaces::split(&config, count).map_err(|e| UserError(e.0)),
        None => Ok(config),
    }
}

/// Runs `engine`, with its warnings and a progress spinner on stderr.
fn execute<D: ZonedDevice + ?Sized, const MULTI: bool>(
    engine: Engine<'_, D, MULTI>,
    quiet: bool,
) -> Result<RunResult, UserError> {
    for warning in engine.warnings() {
        eprintln!("zonelab: {warning}");
    }
    let mut progress = Progress::new(quiet);
    let result = engine.run(&mut |now_ns| progress.update(now_ns)).map_err(job_error)?;
    progress.finish();
    Ok(result)
}

/// What a drive of several namespaces did, for the JSON report's `zonelab`
/// key: each namespace's command counters (and an NVM namespace's FTL:
/// write amplification, garbage collection; an FDP namespace's statistics
/// and reclaim unit handles, asked for at `end_ns`), and the flash they share, once.
fn drive_json(drive: &mut Namespaces, end_ns: u64) -> serde_json::Value {
    let mut namespaces: Vec<serde_json::Value> = (1..=drive.namespace_count())
        .filter_map(|nsid| drive.namespace(nsid))
        .map(|ns| device_report::namespace_json(ns.nsid(), &ns.counters(), ns.ftl_counters().as_ref()))
        .collect();
    for entry in &mut namespaces {
        let nsid = entry["nsid"].as_u64().and_then(|n| u32::try_from(n).ok()).expect("an NSID");
        if let Some(fdp) = device_report::fdp_json(drive, nsid, end_ns) {
            entry["fdp"] = fdp;
        }
    }
    serde_json::json!({ "namespaces": namespaces, "flash": device_report::flash_json(drive) })
}

/// `--output FILE`, opened before the run: a new file (removed again if the
/// run fails), or an existing device or pipe such as /dev/null. An existing
/// regular file is refused: fio would overwrite it, zonelab never writes
/// over data it did not create.
struct ReportFile {
    path: String,
    file: std::fs::File,
    created: bool,
}

impl ReportFile {
    fn open(path: &str) -> Result<Self, UserError> {
        let error = |e: std::io::Error| UserError(format!("--output {path}: {e}"));
        match std::fs::metadata(path) {
            Ok(meta) if meta.file_type().is_file() || meta.is_dir() || meta.is_symlink() => Err(UserError(format!(
                "--output {path}: it exists; zonelab writes its report to a new file and never over one it did not \
                 create: remove it or name another"
            ))),
            Ok(_) => {
                let file = std::fs::OpenOptions::new().write(true).open(path).map_err(error)?;
                Ok(Self { path: path.into(), file, created: false })
            }
            Err(_) => {
                let file = std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(error)?;
                Ok(Self { path: path.into(), file, created: true })
            }
        }
    }

    fn write(&mut self, text: &str) -> Result<(), UserError> {
        self.file.write_all(text.as_bytes()).map_err(|e| UserError(format!("--output {}: {e}", self.path)))
    }

    /// The run succeeded: the report stays.
    fn keep(mut self) {
        self.created = false;
    }
}

impl Drop for ReportFile {
    fn drop(&mut self) {
        // A run that failed leaves no half-written report behind (only one this run created).
        if self.created {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// The reports zonelab's arguments `own` select (`--output-format`, ...), as `run` prints them.
pub(crate) fn reports(own: &[String], set: &JobSet, result: &RunResult) -> Result<String, UserError> {
    Ok(report(&Formats::of(own)?, set, result, None))
}

/// The selected reports in fio's order: the normal report's job lines, the
/// terse lines, the JSON, the normal report's statistics.
/// `drive`: the `zonelab` key of the JSON (a run over several namespaces, or
/// on a device with a page-mapped FTL).
fn report(formats: &Formats, set: &JobSet, result: &RunResult, drive: Option<&serde_json::Value>) -> String {
    let mut text = String::new();
    if formats.normal {
        text += &normal_header(set, result);
    }
    if formats.terse {
        text += &terse_report(set, result);
    }
    if formats.json {
        let mut value = json_report(set, result, formats.json_plus);
        if let (Some(drive), Some(root)) = (drive, value.as_object_mut()) {
            root.insert("zonelab".into(), drive.clone());
        }
        text += &(serde_json::to_string_pretty(&value).expect("reports serialise") + "\n");
    }
    if formats.normal {
        text += &normal_stats(set, result);
    }
    text
}

pub(crate) fn write_stdout(text: &str) -> Result<(), UserError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(UserError(format!("stdout: {e}"))),
        _ => Ok(()),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn output_formats_combine_as_fios_switches_do() {
        let of = |args: &[&str]| Formats::of(&strings(args)).map_err(|e| e.0);
        let normal = Formats { normal: true, ..Formats::default() };
        let terse = Formats { terse: true, ..Formats::default() };
        assert_eq!(of(&[]).unwrap(), normal);
        assert_eq!(of(&["--minimal"]).unwrap(), terse);
        assert_eq!(of(&["--output-format=terse"]).unwrap(), terse);
        assert_eq!(of(&["--output-format", "csv"]).unwrap(), terse);
        assert_eq!(of(&["--append-terse"]).unwrap(), Formats { normal: true, terse: true, ..Formats::default() });
        let json_plus = Formats { json: true, json_plus: true, terse: true, ..Formats::default() };
        assert_eq!(of(&["--output-format=json+,terse"]).unwrap(), json_plus);
        // The last of --minimal and --output-format wins; --append-terse adds.
        assert_eq!(of(&["--minimal", "--output-format=json"]).unwrap(), Formats { json: true, ..Formats::default() });
        assert_eq!(of(&["--output-format=json", "--minimal"]).unwrap(), terse);
        let json_terse = Formats { json: true, terse: true, ..Formats::default() };
        assert_eq!(of(&["--output-format=json", "--append-terse"]).unwrap(), json_terse);
        assert_eq!(of(&["--terse-version=3", "--minimal"]).unwrap(), terse);
        assert!(of(&["--terse-version", "5"]).unwrap_err().contains("terse version 3 only"));
        assert!(of(&["--output-format=json,xml"]).unwrap_err().contains("'xml' is not a format"));
    }

    #[test]
    fn options_that_take_a_value_consume_the_next_argument() {
        let got = split(&strings(&[
            "--name",
            "w",
            "--rw",
            "write",
            "--time_based",
            "jobs.fio",
            "--zones",
            "8",
            "-bs",
            "4k",
            "--data",
            "--size=1m",
            "--capacity",
            "64g",
            "more.fio",
        ]));
        let want = Split {
            own: strings(&["zonelab run", "--zones", "8", "--data", "--capacity", "64g"]),
            fio: strings(&["--name", "w", "--rw", "write", "--time_based", "-bs", "4k", "--size=1m"]),
            files: strings(&["jobs.fio", "more.fio"]),
        };
        assert_eq!(got, want);
    }
}
