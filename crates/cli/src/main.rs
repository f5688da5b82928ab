//! `zonelab`: the command-line front end.

mod args;
mod bench;
mod calibrate;
mod docs;
mod fs_bench;
mod image;
mod plan;
mod profile;
mod progress;
mod replay;
mod replay_recording;
mod reproduce_integration;
mod reproduce_znsplus;
mod run;
mod serve;

use args::DeviceArgs;
use clap::{Parser, Subcommand};
use std::io::{BufReader, BufWriter, LineWriter, Write};
use std::process::ExitCode;
use zonelab_device::{Device, ZonedDevice, PRESET_NAMES};
use zonelab_workload::{run_trace_from, TraceError};

/// The trace `zonelab demo` runs: write, append, finish and reset zones.
const DEMO_TRACE: &str = include_str!("../../../examples/traces/demo.jsonl");

#[derive(Parser)]
#[command(name = "zonelab", version, about = "A deterministic, virtual-time simulator of NVMe ZNS SSDs")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a JSON-lines command trace (file or stdin) and print one result per command.
    Exec {
        #[command(flatten)]
        device: DeviceArgs,
        /// Trace file; stdin when absent or "-".
        trace: Option<String>,
        /// Load the device from the image FILE and FILE.zones (as `serve --backing` keeps them; created when
        /// absent) and save it back when the whole trace has run. Implies --data; the trace's clock starts where
        /// loading left the device's.
        #[arg(long, value_name = "FILE")]
        backing: Option<std::path::PathBuf>,
    },
    /// Run the built-in demonstration trace on a device and print the results.
    Demo {
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// Device presets and configurations.
    Device {
        #[command(subcommand)]
        action: DeviceCmd,
    },
    /// Run fio job files or a fio command line (`zonelab run --help`).
    Run(run::RunCommand),
    /// Replay a recording (serve --record, a fio iolog or a blktrace capture) on a device, open or closed loop, with
    /// fio's report.
    Replay(replay::ReplayCommand),
    /// Rerun an experiment of the seed papers and print its table.
    Reproduce {
        #[command(subcommand)]
        experiment: Experiment,
    },
    /// Measure the simulator itself: simulated commands per wall-clock second.
    Bench(bench::BenchArgs),
    /// Serve the device as a Linux zoned block device (--ublk) or an NVMe/TCP target (--nvme-tcp) until SIGINT/SIGTERM.
    Serve(serve::ServeArgs),
    /// Rerun a measurements file (docs/measurements.md) on a device: error per row and group; --fit fits parameters.
    Calibrate(calibrate::CalibrateArgs),
    /// Write a measurement plan for a real zoned drive: fio jobs, a script that runs them, what calibrate reads back.
    Profile(profile::ProfileArgs),
    /// Run a file-system workload (fileserver, varmail, tpcc, ycsb-a/f) on the ZNS+-aware file system.
    FsBench(fs_bench::FsBenchArgs),
    /// Check a --backing image (header, zone records, block checksums) or upgrade an old one.
    Image(image::ImageArgs),
    /// Print a shell completion script, e.g. `zonelab completions bash > /etc/bash_completion.d/zonelab`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), e.g. `zonelab man | man -l -`.
    Man(docs::ManArgs),
}

#[derive(Subcommand)]
enum Experiment {
    /// Seeds 000 and 003: the ZN540's observations and I/O-management interference, ZINC and softFinish.
    Characterization {
        /// Directory for CSVs, plots (PNG and SVG), job files and the summary.
        #[arg(long, default_value = "characterization")]
        out: std::path::PathBuf,
        /// Replace the results of an earlier run in --out (never a directory zonelab did not write).
        #[arg(long)]
        force: bool,
        /// Shorter runs and fewer sweep points (under 2 minutes).
        #[arg(long)]
        quick: bool,
        /// Only experiments whose name contains this.
        #[arg(long, default_value = "")]
        only: String,
        #[command(flatten)]
        plan: plan::PlanArgs,
    },
    /// Seed 002: in-storage copy (copyback) against host read-then-write, for TLC, MLC and ZNAND.
    CopyOffload {
        /// Blocks copied.
        #[arg(long, default_value_t = 2048)]
        blocks: u64,
    },
    /// Seed 002 §4: Fig 6-12 and Tables 4-5 on the ZNS+-aware file system (CSV, SVG, paper-vs-zonelab tables).
    Znsplus(reproduce_znsplus::ZnsplusArgs),
    /// Seed 001: Fig 4-6 (conventional and zoned namespaces, mq-deadline against none) and multi-tenancy.
    Integration(reproduce_integration::IntegrationArgs),
}

#[derive(Subcommand)]
enum DeviceCmd {
    /// Print a device configuration (preset plus options) as TOML.
    Show {
        /// Preset name or TOML file (or --device, not both).
        #[arg(conflicts_with = "device")]
        preset: Option<String>,
        #[command(flatten)]
        device: DeviceArgs,
    },
    /// List the built-in presets.
    List,
}

/// A user error: printed as one line, exit status 2.
pub(crate) struct UserError(pub(crate) String);

/// The libraries' typed errors carry the message the user sees.
impl<E: std::error::Error> From<E> for UserError {
    fn from(e: E) -> UserError {
        UserError(e.to_string())
    }
}

/// A subcommand that reads its own arguments (fio's options among them).
type OwnParser = fn(&[String]) -> Result<ExitCode, UserError>;

fn main() -> ExitCode {
    // `run` and `replay` take fio's own options, which clap cannot know: they parse their part themselves.
    let argv: Vec<String> = std::env::args().collect();
    let own_parser: Option<OwnParser> = match argv.get(1).map(String::as_str) {
        Some("run") => Some(run::run),
        Some("replay") => Some(replay::run),
        _ => None,
    };
    if let Some(parser) = own_parser {
        return match parser(&argv[2..]) {
            Ok(code) => code,
            Err(UserError(message)) => {
                eprintln!("zonelab: {message}");
                ExitCode::from(2)
            }
        };
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(UserError(message)) => {
            eprintln!("zonelab: {message}");
            ExitCode::from(2)
        }
    }
}

/// The device `args` describe, keeping what `tracking` asks for.
pub(crate) fn device_from(args: &DeviceArgs, tracking: zonelab_device::Tracking) -> Result<Device, UserError> {
    let config = args.config().map_err(|e| UserError(e.0))?;
    Device::with_tracking(config, tracking).map_err(|e| UserError(e.0))
}

fn run(cli: Cli) -> Result<(), UserError> {
    match cli.command {
        Cmd::Exec { mut device, trace, backing } => {
            device.data |= backing.is_some();
            let config = device.config().map_err(|e| UserError(e.0))?;
            if !config.namespaces.is_empty() {
                if backing.is_some() {
                    return Err(UserError("--backing keeps one namespace; this device has [[namespaces]]".into()));
                }
                // The trace's "nsid" field picks the namespace.
                let mut dev = zonelab_device::Namespaces::new(config).map_err(|e| UserError(e.0))?;
                return exec_trace(&mut dev, trace.as_deref(), 0).map(drop);
            }
            let mut dev = Device::new(config).map_err(|e| UserError(e.0))?;
            let (mut image, start_ns) = match &backing {
                Some(path) => zonelab_serve::Image::open_undamaged(path, &mut dev)
                    .map(|(i, t)| (Some(i), t))
                    .map_err(|e| UserError(e.to_string()))?,
                None => (None, 0),
            };
            let end_ns = exec_trace(&mut dev, trace.as_deref(), start_ns)?;
            match (image.as_mut(), end_ns) {
                (Some(image), Some(end_ns)) => image.save(&mut dev, end_ns).map_err(|e| UserError(e.to_string())),
                (Some(_), None) => Err(UserError("the trace's reader went away: the image was not saved".into())),
                _ => Ok(()),
            }
        }
        Cmd::Demo { device } => {
            let mut dev = device_from(&device, zonelab_device::Tracking::ALL)?;
            let mut out = BufWriter::new(std::io::stdout().lock());
            let _ = writeln!(
                out,
                "# zonelab demo on {}: write, append, finish and reset zones, then report them",
                dev.config().name
            );
            exec(&mut dev, DEMO_TRACE.as_bytes(), out, "demo trace", 0).map(|_| ())
        }
        Cmd::Device { action: DeviceCmd::List } => {
            for name in PRESET_NAMES {
                let description = zonelab_device::preset_description(name).unwrap_or_default();
                println!("{name:<13} {description}");
            }
            Ok(())
        }
        Cmd::Device { action: DeviceCmd::Show { preset, mut device } } => {
            if let Some(preset) = preset {
                device.device = preset;
            }
            let config = device.config().map_err(|e| UserError(e.0))?;
            print!("{}", config.to_toml());
            Ok(())
        }
        Cmd::Bench(args) => bench::run(&args),
        Cmd::Serve(args) => serve::run(&args),
        Cmd::Image(args) => image::run(&args),
        Cmd::FsBench(args) => fs_bench::run_cmd(&args),
        Cmd::Calibrate(args) => calibrate::run(&args),
        Cmd::Profile(args) => profile::run(&args),
        // main() hands `run` to run::run before clap (fio's options are not
        // clap's); clap knows it for `help run`, completions and the man page.
        Cmd::Run(_) => run::run(&std::env::args().skip(2).collect::<Vec<_>>()).map(drop),
        Cmd::Replay(_) => replay::run(&std::env::args().skip(2).collect::<Vec<_>>()).map(drop),
        Cmd::Completions { shell } => docs::completions(shell),
        Cmd::Man(args) => docs::man(&args),
        Cmd::Reproduce { experiment: Experiment::Characterization { out, force, quick, only, plan } } => {
            plan::reproduce_characterization(&out, force, quick, &only, &plan)
        }
        Cmd::Reproduce { experiment: Experiment::CopyOffload { blocks } } => {
            let rows = zonelab_experiments::copy_offload::copy_offload(blocks)?;
            print!("{}", zonelab_experiments::copy_offload::render(&rows));
            Ok(())
        }
        Cmd::Reproduce { experiment: Experiment::Znsplus(args) } => reproduce_znsplus::run(&args),
        Cmd::Reproduce { experiment: Experiment::Integration(args) } => reproduce_integration::run(&args),
    }
}

/// Runs the trace at `trace` (stdin for none or "-") from `start_ns`, as [`exec`].
fn exec_trace<D: ZonedDevice>(
    dev: &mut D,
    trace: Option<&str>,
    start_ns: zonelab_sim::Nanos,
) -> Result<Option<zonelab_sim::Nanos>, UserError> {
    let stdout = std::io::stdout().lock();
    match trace {
        // One flushed line per command, so that a program can drive the device
        // through a pipe, reading each answer before writing the next command.
        None | Some("-") => exec(dev, std::io::stdin().lock(), LineWriter::new(stdout), "stdin", start_ns),
        Some(path) => {
            let file = zonelab_sim::input::open_input(path.as_ref()).map_err(|e| UserError(e.to_string()))?;
            exec(dev, BufReader::new(file), BufWriter::new(stdout), path, start_ns)
        }
    }
}

/// Runs a trace from `start_ns`; returns the simulated time its last command completed (or `start_ns`), or None
/// when the reader went away (the commands ran, but their end time is unknown).
fn exec<D: ZonedDevice, R: std::io::BufRead, W: Write>(
    dev: &mut D,
    input: R,
    out: W,
    source: &str,
    start_ns: zonelab_sim::Nanos,
) -> Result<Option<zonelab_sim::Nanos>, UserError> {
    match run_trace_from(dev, input, out, start_ns) {
        Ok(summary) => Ok(Some(summary.end_ns)),
        Err(TraceError::Malformed { line, message }) => Err(UserError(format!("{source}: line {line}: {message}"))),
        Err(TraceError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(None),
        Err(TraceError::Io(e)) => Err(UserError(format!("{source}: {e}"))),
    }
}
