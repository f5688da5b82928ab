//! The extension's work, in JSON text: a device driven one trace command at
//! a time (the trace format of `zonelab exec`), fio jobs (`zonelab run`),
//! file-system benchmarks (`zonelab fs-bench`) and the plan runner.

use serde_json::{Map, Value};
use zonelab_device::{parse_size, Device, Plugging, PRESET_NAMES};
use zonelab_experiments::calibrate as cal;
use zonelab_experiments::plan::{self, DeviceSpec, RunSpec};
use zonelab_experiments::znsplus::Scale;
use zonelab_workload::fio::device_report;
use zonelab_workload::fio::job::Scheduler;
use zonelab_workload::fio::parse::parse_run;
use zonelab_workload::fio::report::json_report;
use zonelab_workload::fio::run::{Engine, RunOptions};
use zonelab_workload::fsbench::FsWorkload;
use zonelab_workload::{run_trace, TraceError};

/// Why a call from Python failed; the message is the one the CLI prints.
#[derive(Debug, thiserror::Error)]
pub enum GlueError {
    /// An argument from Python that is not valid; the message says what is.
    #[error("{0}")]
    Invalid(String),
    /// JSON from Python that does not parse; `what` names the argument.
    #[error("{what}: {source}")]
    Json {
        /// The argument, e.g. "device options".
        what: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A device configuration that cannot describe a device.
    #[error(transparent)]
    Config(#[from] zonelab_device::ConfigError),
    /// A fio job that does not parse or run.
    #[error(transparent)]
    Job(#[from] zonelab_workload::fio::job::JobError),
    /// A file that cannot be read.
    #[error(transparent)]
    Input(#[from] zonelab_sim::input::InputError),
    /// An experiment, plan or calibration that failed.
    #[error(transparent)]
    Experiment(#[from] zonelab_experiments::Error),
    /// A device whose lock a panic poisoned.
    #[error("this device stopped at an internal error: create a new one")]
    Poisoned,
}

fn json(what: &str) -> impl FnOnce(serde_json::Error) -> GlueError + '_ {
    move |source| GlueError::Json { what: what.to_string(), source }
}

/// The names of the built-in device presets (`zonelab.presets()`).
pub fn presets() -> Vec<String> {
    PRESET_NAMES.iter().map(|s| s.to_string()).collect()
}

fn device_spec(json: &str) -> Result<DeviceSpec, GlueError> {
    serde_json::from_str(json).map_err(self::json("device options"))
}

/// A device and the trace's clock: commands run as consecutive lines of one
/// `zonelab exec` trace would.
pub struct Session {
    device: Device,
    /// When the next command is submitted (unless its `at_ns` is later).
    now_ns: u64,
    commands: u64,
}

impl Session {
    /// A fresh device from its options (the CLI's device options as JSON:
    /// preset, zones, `set` pairs, ...), with the clock at 0.
    pub fn new(device_json: &str) -> Result<Session, GlueError> {
        let config = device_spec(device_json)?.config()?;
        Ok(Session { device: Device::new(config).map_err(GlueError::from)?, now_ns: 0, commands: 0 })
    }

    /// When the next command is submitted, in simulated nanoseconds.
    pub fn clock_ns(&self) -> u64 {
        self.now_ns
    }

    /// The device's configuration as TOML (`zonelab device show`).
    pub fn config_toml(&self) -> String {
        self.device.config().to_toml()
    }

    /// Runs one command (a trace line's JSON object); its result object as JSON.
    pub fn submit(&mut self, command_json: &str) -> Result<String, GlueError> {
        let number = self.commands + 1;
        let what = format!("command {number}");
        let mut command: Map<String, Value> = match serde_json::from_str(command_json) {
            Ok(Value::Object(map)) => map,
            Ok(other) => return Err(GlueError::Invalid(format!("{what}: a command is a JSON object, got {other}"))),
            Err(e) => return Err(json(&what)(e)),
        };
        // One line traced alone starts at 0: the session's clock goes in as `at_ns`.
        let at_ns = match command.get("at_ns") {
            None => Some(self.now_ns),
            Some(v) => v.as_u64().map(|at| at.max(self.now_ns)),
        };
        if let Some(at_ns) = at_ns {
            command.insert("at_ns".into(), at_ns.into());
        }
        let is_async = command.get("async").and_then(Value::as_bool) == Some(true);
        let line = serde_json::to_string(&command).expect("maps serialize");
        let mut out = Vec::new();
        match run_trace(&mut self.device, line.as_bytes(), &mut out) {
            Ok(_) => {}
            Err(TraceError::Malformed { message, .. }) => return Err(GlueError::Invalid(format!("{what}: {message}"))),
            Err(TraceError::Io(e)) => return Err(GlueError::Invalid(format!("{what}: {e}"))),
        }
        let text = String::from_utf8(out).expect("results are UTF-8");
        let result: Value = serde_json::from_str(text.trim()).expect("results are JSON");
        let time = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(self.now_ns);
        self.now_ns = if is_async { time("submit_ns") } else { time("complete_ns") };
        self.commands = number;
        Ok(text.trim().to_string())
    }
}

/// The scheduler named as `zonelab run --scheduler` takes it.
fn scheduler(name: &str) -> Result<Scheduler, GlueError> {
    match name {
        "none" => Ok(Scheduler::None),
        "mq-deadline" => Ok(Scheduler::MqDeadline),
        "zinc" => Ok(Scheduler::Zinc),
        _ => Err(GlueError::Invalid(format!("scheduler '{name}': use none, mq-deadline or zinc"))),
    }
}

/// Runs fio jobs (`job_files`: (name, text) pairs; `fio_args`: `--name=value`
/// options as on fio's command line) on a fresh device: the fio JSON report.
pub fn run_fio(
    device_json: &str,
    job_files: &[(String, String)],
    fio_args: &[String],
    seed: u64,
    scheduler_name: &str,
    plus: bool,
) -> Result<String, GlueError> {
    if job_files.is_empty() && fio_args.is_empty() {
        return Err(GlueError::Invalid(
            "no job: give a job file or fio options such as {'name': 'a', 'rw': 'write'}".into(),
        ));
    }
    let set = parse_run(fio_args, job_files)?;
    let config = device_spec(device_json)?.config()?;
    let mut device = Device::new(config).map_err(GlueError::from)?;
    let options = RunOptions { seed, scheduler: scheduler(scheduler_name)?, ..RunOptions::default() };
    let engine = Engine::new(&mut device, &set, &options)?;
    let result = engine.run(&mut |_| {})?;
    let mut report = json_report(&set, &result, plus);
    // As `zonelab run`: an FDP namespace's statistics and handles under `zonelab`.
    if let (Some(key), Some(root)) = (device_report::device_json(&mut device, result.end_ns), report.as_object_mut()) {
        root.insert("zonelab".into(), key);
    }
    Ok(serde_json::to_string(&report).expect("reports serialize"))
}

fn field<'a>(options: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    options.get(key).filter(|v| !v.is_null())
}

fn text_field(options: &Map<String, Value>, key: &str, default: &str) -> Result<String, GlueError> {
    match field(options, key) {
        None => Ok(default.into()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(v) => Err(GlueError::Invalid(format!("{key}: expected a string, got {v}"))),
    }
}

fn number_field(options: &Map<String, Value>, key: &str) -> Result<Option<u64>, GlueError> {
    field(options, key)
        .map(|v| {
            v.as_u64().ok_or_else(|| GlueError::Invalid(format!("{key}: expected a non-negative integer, got {v}")))
        })
        .transpose()
}

fn bool_field(options: &Map<String, Value>, key: &str, default: bool) -> Result<bool, GlueError> {
    field(options, key).map_or(Ok(default), |v| {
        v.as_bool().ok_or_else(|| GlueError::Invalid(format!("{key}: expected True or False, got {v}")))
    })
}

const FS_BENCH_KEYS: [&str; 13] = [
    "workload",
    "recycling",
    "medium",
    "chips",
    "lanes",
    "fs_size",
    "utilization",
    "write",
    "threads",
    "copyback",
    "copyback_aware",
    "plugging",
    "seed",
];

/// `zonelab fs-bench` with its options as a JSON object: its JSON report.
pub fn fs_bench(options_json: &str) -> Result<String, GlueError> {
    use zonelab_experiments::znsplus::{run_with_progress, RunSpec as FsSpec, Scale};
    let options: Map<String, Value> = serde_json::from_str(options_json).map_err(json("fs_bench options"))?;
    if let Some(key) = options.keys().find(|k| !FS_BENCH_KEYS.contains(&k.as_str())) {
        return Err(GlueError::Invalid(format!("fs_bench: unknown option '{key}': use {}", FS_BENCH_KEYS.join(", "))));
    }
    let workload_name = text_field(&options, "workload", "fileserver")?;
    let workload = FsWorkload::parse(&workload_name).ok_or_else(|| {
        GlueError::Invalid(format!(
            "workload '{workload_name}': use {}",
            FsWorkload::ALL.map(FsWorkload::name).join(", ")
        ))
    })?;
    let recycling_name = text_field(&options, "recycling", "zns+")?;
    let recycling = zonelab_fs::Recycling::parse(&recycling_name).ok_or_else(|| {
        GlueError::Invalid(format!(
            "recycling '{recycling_name}': use {}",
            zonelab_fs::Recycling::ALL.map(zonelab_fs::Recycling::name).join(", ")
        ))
    })?;
    let mut s = FsSpec::new(workload, recycling, Scale::QUICK);
    s.medium = match text_field(&options, "medium", "mlc")?.as_str() {
        "tlc" => "tlc",
        "mlc" => "mlc",
        "znand" => "znand",
        other => return Err(GlueError::Invalid(format!("medium '{other}': use tlc, mlc or znand"))),
    };
    let small = |key: &str, default: u32| -> Result<u32, GlueError> {
        number_field(&options, key)?.map_or(Ok(default), |n| {
            u32::try_from(n).map_err(|_| GlueError::Invalid(format!("{key}: {n} is too large")))
        })
    };
    s.chips = small("chips", 16)?;
    s.lanes = small("lanes", 2)?;
    if s.lanes == 0 || s.lanes > 32 {
        return Err(GlueError::Invalid(format!("lanes {} must be within 1 ..= 32", s.lanes)));
    }
    s.fs_bytes =
        parse_size(&text_field(&options, "fs_size", "2g")?).map_err(|e| GlueError::Invalid(format!("fs_size: {e}")))?;
    s.write_bytes =
        parse_size(&text_field(&options, "write", "1g")?).map_err(|e| GlueError::Invalid(format!("write: {e}")))?;
    if let Some(v) = field(&options, "utilization") {
        s.utilization =
            v.as_f64().ok_or_else(|| GlueError::Invalid(format!("utilization: expected a number, got {v}")))?;
    } else {
        s.utilization = 0.9;
    }
    s.threads = number_field(&options, "threads")?.map(|n| u32::try_from(n).unwrap_or(u32::MAX));
    s.copyback = bool_field(&options, "copyback", true)?;
    s.copyback_aware = bool_field(&options, "copyback_aware", true)?;
    s.plugging = match text_field(&options, "plugging", "ppa")?.as_str() {
        "lba" => Plugging::Lba,
        "ppa" => Plugging::Ppa,
        other => return Err(GlueError::Invalid(format!("plugging '{other}': use lba or ppa"))),
    };
    s.seed = number_field(&options, "seed")?.unwrap_or(1);
    let result = run_with_progress(&s, &mut |_, _, _| {})?;
    Ok(serde_json::to_string(&zonelab_workload::fsbench::report::json(&[result])).expect("reports serialize"))
}

/// What `zonelab calibrate` takes besides the device: its options.
pub struct CalibrateOptions {
    /// Only rows whose "id source figure stack op metric" contains every
    /// comma-separated term (`--only`; empty: every row).
    pub only: String,
    /// Measured window of an I/O run in simulated milliseconds.
    pub runtime_ms: u64,
    /// Threads the runs share (results do not depend on it).
    pub threads: usize,
    /// `--fit` parameters (none: no fit), `--folds`, `--max-evals`.
    pub fit: Vec<String>,
    /// Folds of the fit's cross-validation (0 or 1: none).
    pub folds: usize,
    /// Most loss evaluations of one fit.
    pub max_evals: u64,
    /// Weight of the tail rows in the fit's loss (`--fit-tail-weight`).
    pub fit_tail_weight: f64,
}

/// The selected rows of a measurements file, the device and the settings.
fn calibration(
    measurements: &str,
    device_json: &str,
    options: &CalibrateOptions,
) -> Result<(Vec<cal::Row>, zonelab_device::DeviceConfig, cal::Settings), GlueError> {
    let config = device_spec(device_json)?.config()?;
    let all = cal::read_file(std::path::Path::new(measurements))?;
    let rows = cal::select(&all, &options.only);
    if rows.is_empty() {
        return Err(GlueError::Invalid(format!("only '{}' selects none of the {} rows", options.only, all.len())));
    }
    let settings =
        cal::Settings { runtime_ms: options.runtime_ms.max(1), threads: options.threads.max(1), window_ms_min: 0 };
    Ok((rows, config, settings))
}

/// `zonelab calibrate`: reruns a measurements file's rows (those matching
/// `only`) on the device, or fits parameters to them (`fit`), writes what
/// the CLI writes into `out`, and returns report.json's text.
pub fn calibrate(
    measurements: &str,
    device_json: &str,
    out: &str,
    force: bool,
    options: &CalibrateOptions,
) -> Result<String, GlueError> {
    let (rows, config, settings) = calibration(measurements, device_json, options)?;
    let out = std::path::Path::new(out);
    zonelab_experiments::out_dir::check(out, force)?;
    let title = format!("zonelab calibrate: {measurements} on {}", config.name);
    let mut warn = |w: &str| eprintln!("zonelab: {w}");
    if options.fit.is_empty() {
        let (results, jobs) = cal::evaluate_with_jobs(&config, &rows, settings, &|_, _| {});
        zonelab_experiments::out_dir::claim(out, force)?;
        cal::write(out, &title, &results, &jobs, None, &mut warn)?;
    } else {
        let request = cal::fit::Request {
            tail_weight: options.fit_tail_weight,
            ..cal::fit::Request::new(options.fit.clone(), options.folds, options.max_evals)
        };
        let outcome = cal::fit::fit(&config, &rows, &request, settings, &|_| {}, &|_, _| {})?;
        zonelab_experiments::out_dir::claim(out, force)?;
        cal::write(out, &title, &outcome.results, &[], Some(&outcome), &mut warn)?;
    }
    zonelab_sim::input::read_text(&out.join("report.json"), zonelab_sim::input::TEXT_BYTES_MAX).map_err(GlueError::from)
}

/// The plan of `zonelab calibrate` (without `--fit`; specs as JSON).
pub fn calibrate_plan(
    measurements: &str,
    device_json: &str,
    options: &CalibrateOptions,
) -> Result<Vec<String>, GlueError> {
    let (rows, config, settings) = calibration(measurements, device_json, options)?;
    Ok(specs_json(&cal::Plan::new(&config, &rows, settings).specs))
}

/// Renders `zonelab calibrate` from stored lines (the plan's order) into
/// `out`, as the CLI writes it: report.json's text.
pub fn calibrate_render(
    measurements: &str,
    device_json: &str,
    options: &CalibrateOptions,
    lines: &[String],
    out: &str,
    force: bool,
) -> Result<String, GlueError> {
    let (rows, config, settings) = calibration(measurements, device_json, options)?;
    let p = cal::Plan::new(&config, &rows, settings);
    let results = stored_results(lines)?;
    if results.len() != p.specs.len() {
        return Err(GlueError::Invalid(format!("{} stored runs for a plan of {}", results.len(), p.specs.len())));
    }
    let (results, jobs) = p.results(&rows, &results)?;
    let out = std::path::Path::new(out);
    zonelab_experiments::out_dir::claim(out, force)?;
    let title = format!("zonelab calibrate: {measurements} on {}", config.name);
    cal::write(out, &title, &results, &jobs, None, &mut |w| eprintln!("zonelab: {w}"))?;
    zonelab_sim::input::read_text(&out.join("report.json"), zonelab_sim::input::TEXT_BYTES_MAX).map_err(GlueError::from)
}

/// The scale of `reproduce znsplus`: `--quick`'s, the full one, or a file system of `fs_bytes`.
fn znsplus_scale(quick: bool, fs_bytes: Option<u64>, write_per_fs: Option<f64>) -> Result<Scale, GlueError> {
    let mut scale = if quick { Scale::QUICK } else { Scale::FULL };
    scale.fs_bytes = fs_bytes.unwrap_or(scale.fs_bytes);
    scale.write_per_fs = write_per_fs.unwrap_or(scale.write_per_fs);
    if !(scale.write_per_fs > 0.0 && scale.write_per_fs <= 16.0) {
        return Err(GlueError::Invalid(format!("write_per_fs {}: use a share within (0, 16]", scale.write_per_fs)));
    }
    Ok(scale)
}

/// The plan of `reproduce znsplus` (specs as JSON).
pub fn znsplus_plan(quick: bool, fs_bytes: Option<u64>, write_per_fs: Option<f64>) -> Result<Vec<String>, GlueError> {
    Ok(specs_json(&plan::znsplus::plan(znsplus_scale(quick, fs_bytes, write_per_fs)?)))
}

/// The figures and tables of `reproduce znsplus` from stored lines (plan
/// order): (name, CSV, markdown table against the paper) of each.
pub fn znsplus_render(
    quick: bool,
    fs_bytes: Option<u64>,
    write_per_fs: Option<f64>,
    lines: &[String],
) -> Result<Vec<(String, String, String)>, GlueError> {
    let scale = znsplus_scale(quick, fs_bytes, write_per_fs)?;
    let outputs = plan::znsplus::render(scale, &stored_results(lines)?)?;
    Ok(outputs.into_iter().map(|o| (o.name.to_string(), o.csv, o.table)).collect())
}

fn specs_json(specs: &[RunSpec]) -> Vec<String> {
    specs.iter().map(|s| serde_json::to_string(s).expect("specs serialize")).collect()
}

/// The results of stored lines, each checked against its key.
fn stored_results(lines: &[String]) -> Result<Vec<Value>, GlueError> {
    lines.iter().enumerate().map(|(i, l)| Ok(plan::Stored::parse(l, &format!("result {}", i + 1))?.result)).collect()
}

fn run_spec_of(spec_json: &str) -> Result<RunSpec, GlueError> {
    serde_json::from_str(spec_json).map_err(json("run spec"))
}

/// The store key of a run specification.
pub fn spec_key(spec_json: &str) -> Result<String, GlueError> {
    Ok(run_spec_of(spec_json)?.key())
}

/// The specifications a run needs the results of (JSON), in order.
pub fn spec_needs(spec_json: &str) -> Result<Vec<String>, GlueError> {
    Ok(specs_json(&run_spec_of(spec_json)?.needs()))
}

/// Runs a specification: the line the result store keeps. `needed`: the
/// stored lines of the runs it needs (in [`spec_needs`] order), or none to
/// run those here first.
pub fn run_spec(spec_json: &str, needed: &[String]) -> Result<String, GlueError> {
    let spec = run_spec_of(spec_json)?;
    if needed.is_empty() {
        return Ok(plan::run_stored(&spec)?.line());
    }
    let needs = spec.needs();
    if needed.len() != needs.len() {
        return Err(GlueError::Invalid(format!(
            "run spec: {} needed results given, it needs {}",
            needed.len(),
            needs.len()
        )));
    }
    let mut results = Vec::new();
    for (i, (line, need)) in needed.iter().zip(&needs).enumerate() {
        let stored = plan::Stored::parse(line, &format!("needed result {}", i + 1))?;
        if stored.key != need.key() {
            return Err(GlueError::Invalid(format!(
                "needed result {}: key {} is not that of the run needed ({})",
                i + 1,
                stored.key,
                need.key()
            )));
        }
        results.push(stored.result);
    }
    Ok(plan::run_stored_with(&spec, &results)?.line())
}

/// The plan of `reproduce characterization` (specs as JSON).
pub fn characterization_plan(quick: bool, only: &str) -> Result<Vec<String>, GlueError> {
    Ok(specs_json(&plan::characterization::plan(quick, only)?))
}

/// Renders `reproduce characterization` from stored lines (plan order) into `out`: the summary.
pub fn characterization_render(lines: &[String], out: &str, force: bool) -> Result<String, GlueError> {
    let results = stored_results(lines)?;
    let out = std::path::Path::new(out);
    zonelab_experiments::out_dir::claim(out, force)?;
    Ok(plan::characterization::render(&results, out, &mut |w| eprintln!("zonelab: {w}"))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"{"zones": 4, "zone_size": "1m", "zone_capacity": "512k", "data": true}"#;

    #[test]
    fn a_session_runs_commands_as_one_trace_would() {
        let trace = concat!(
            "{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"pattern\":7,\"id\":\"w1\"}\n",
            "{\"op\":\"append\",\"zslba\":0,\"nlb\":2,\"async\":true}\n",
            "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
            "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":0,\"at_ns\":5000000}\n",
            "{\"op\":\"report_zones\",\"slba\":0,\"max\":2}\n",
        );
        let config = DeviceSpec {
            zones: Some(4),
            zone_size: Some("1m".into()),
            zone_capacity: Some("512k".into()),
            data: true,
            ..DeviceSpec::default()
        };
        let mut whole = Vec::new();
        run_trace(&mut Device::new(config.config().unwrap()).unwrap(), trace.as_bytes(), &mut whole).unwrap();
        let mut session = Session::new(SMALL).unwrap();
        let mut one_by_one = String::new();
        for line in trace.lines() {
            one_by_one += &session.submit(line).unwrap();
            one_by_one.push('\n');
        }
        assert_eq!(one_by_one, String::from_utf8(whole).unwrap());
        assert!(session.clock_ns() > 5_000_000);
    }

    #[test]
    fn bad_commands_and_options_are_errors_naming_what_is_wrong() {
        let mut session = Session::new(SMALL).unwrap();
        let err = session.submit(r#"{"op":"write","slba":0}"#).unwrap_err().to_string();
        assert_eq!(err, "command 1: missing \"nlb\"");
        assert!(session.submit("[1]").unwrap_err().to_string().contains("a command is a JSON object"));
        let err = Session::new(r#"{"zones": 4, "colour": 1}"#).err().unwrap().to_string();
        assert!(err.contains("unknown field `colour`"), "{err}");
        assert!(run_fio(SMALL, &[], &["--name=w".into(), "--rw=sideways".into()], 0, "none", false).is_err());
        assert!(fs_bench(r#"{"workload": "nope"}"#).unwrap_err().to_string().starts_with("workload 'nope'"));
    }

    #[test]
    fn fio_options_run_as_on_the_command_line() {
        let args: Vec<String> =
            ["--name=w", "--rw=write", "--bs=4k", "--size=1m", "--io_size=256k", "--direct=1", "--zonemode=zbd"]
                .iter()
                .map(|s| s.to_string())
                .collect();
        let report: Value = serde_json::from_str(&run_fio(SMALL, &[], &args, 0, "none", false).unwrap()).unwrap();
        assert_eq!(report["jobs"][0]["write"]["io_bytes"], 256 * 1024);
    }
}
