//! `zonelab fs-bench`: one file-system workload on a fresh file system.

use crate::{progress, UserError};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, ValueEnum};
use zonelab_device::{parse_size, Plugging};
use zonelab_experiments::znsplus::{run_with_progress, RunSpec, Scale};
use zonelab_fs::Recycling;
use zonelab_workload::fsbench::{report, FsWorkload};

/// `--workload`: the names FsWorkload knows, so --help lists them and clap suggests one.
fn workload_parser() -> impl TypedValueParser<Value = FsWorkload> {
    let names = FsWorkload::ALL.map(FsWorkload::name);
    PossibleValuesParser::new(names).map(|name| FsWorkload::parse(&name).unwrap_or(FsWorkload::Fileserver))
}

/// `--recycling`: the names Recycling knows.
fn recycling_parser() -> impl TypedValueParser<Value = Recycling> {
    let names = Recycling::ALL.map(Recycling::name);
    PossibleValuesParser::new(names).map(|name| Recycling::parse(&name).unwrap_or(Recycling::ZnsPlus))
}

#[derive(Clone, Copy, ValueEnum)]
enum Medium {
    Tlc,
    Mlc,
    Znand,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum OnOff {
    On,
    Off,
}

#[derive(Clone, Copy, ValueEnum)]
enum PluggingArg {
    Lba,
    Ppa,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum Format {
    Normal,
    Json,
}

#[derive(Args)]
pub struct FsBenchArgs {
    /// Workload (seed 002 Table 3).
    #[arg(long, default_value = "fileserver", value_parser = workload_parser())]
    workload: FsWorkload,
    /// Segment recycling.
    #[arg(long, default_value = "zns+", value_parser = recycling_parser())]
    recycling: Recycling,
    /// Flash medium preset of seed 002.
    #[arg(long, value_enum, default_value_t = Medium::Mlc)]
    medium: Medium,
    /// Parallel flash chips (the zone spans them all).
    #[arg(long, default_value_t = 16)]
    chips: u32,
    /// PCIe lanes of 600 MB/s.
    #[arg(long, default_value_t = 2)]
    lanes: u32,
    /// File system (and device) size: at least 24 zones, and few enough that a full checkpoint
    /// (SIT and NAT) fits one zone (about 1000 zones).
    #[arg(long, default_value = "2g")]
    fs_size: String,
    /// Used blocks over the user blocks of the file system, as `df` reports it on F2FS: file data and node blocks.
    #[arg(long, default_value_t = 0.9)]
    utilization: f64,
    /// Bytes the workload writes in the measured part: at most 16 times --fs-size.
    #[arg(long, default_value = "1g")]
    write: String,
    /// Threads or connections (default: seed 002 Table 3).
    #[arg(long)]
    threads: Option<u32>,
    /// Flash copyback for in-device copies.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    copyback: OnOff,
    /// Copyback-aware block allocation.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    copyback_aware: OnOff,
    /// Plugging of threaded logging.
    #[arg(long, value_enum, default_value_t = PluggingArg::Ppa)]
    plugging: PluggingArg,
    /// Seed of the workload's random numbers.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Format::Normal)]
    output_format: Format,
}

fn spec(a: &FsBenchArgs) -> Result<RunSpec, UserError> {
    let mut s = RunSpec::new(a.workload, a.recycling, Scale::QUICK);
    s.medium = match a.medium {
        Medium::Tlc => "tlc",
        Medium::Mlc => "mlc",
        Medium::Znand => "znand",
    };
    s.chips = a.chips;
    s.lanes = a.lanes;
    s.fs_bytes = parse_size(&a.fs_size).map_err(|e| UserError(e.to_string()))?;
    s.write_bytes = parse_size(&a.write).map_err(|e| UserError(e.to_string()))?;
    s.utilization = a.utilization;
    s.threads = a.threads;
    s.copyback = a.copyback == OnOff::On;
    s.copyback_aware = a.copyback_aware == OnOff::On;
    s.plugging = match a.plugging {
        PluggingArg::Lba => Plugging::Lba,
        PluggingArg::Ppa => Plugging::Ppa,
    };
    s.seed = a.seed;
    if a.lanes == 0 || a.lanes > 32 {
        return Err(UserError(format!("--lanes {} must be within 1 ..= 32", a.lanes)));
    }
    Ok(s)
}

pub fn run_cmd(a: &FsBenchArgs) -> Result<(), UserError> {
    let spec = spec(a)?;
    let mut phases = progress::Phases::default();
    let result = run_with_progress(&spec, &mut |phase, done, total| phases.update(phase, done, total));
    phases.finish();
    let result = result?;
    if a.output_format == Format::Json {
        println!("{}", serde_json::to_string_pretty(&report::json(&[result])).expect("json serialises"));
    } else {
        print!("{}", report::text(&result));
    }
    Ok(())
}
