//! `zonelab fs-bench`: one file-system workload on a fresh file system.

use crate::UserError;
use clap::Args;
use zonelab_device::{parse_size, Plugging};
use zonelab_experiments::znsplus::{run, RunSpec, Scale};
use zonelab_fs::Recycling;
use zonelab_workload::fsbench::{report, FsWorkload};

#[derive(Args)]
pub struct FsBenchArgs {
    /// fileserver, varmail, tpcc, ycsb-a or ycsb-f.
    #[arg(long, default_value = "fileserver")]
    workload: String,
    /// Segment recycling: zns, izc-h, izc-d or zns+.
    #[arg(long, default_value = "zns+")]
    recycling: String,
    /// Flash medium preset of seed 002: tlc, mlc or znand.
    #[arg(long, default_value = "mlc")]
    medium: String,
    /// Parallel flash chips (the zone spans them all).
    #[arg(long, default_value_t = 16)]
    chips: u32,
    /// PCIe lanes of 600 MB/s.
    #[arg(long, default_value_t = 2)]
    lanes: u32,
    /// File system (and device) size.
    #[arg(long, default_value = "2g")]
    fs_size: String,
    /// Data set over the user blocks of the file system.
    #[arg(long, default_value_t = 0.9)]
    utilization: f64,
    /// Bytes the workload writes in the measured part.
    #[arg(long, default_value = "1g")]
    write: String,
    /// Threads or connections (default: seed 002 Table 3).
    #[arg(long)]
    threads: Option<u32>,
    /// Flash copyback for in-device copies: on or off.
    #[arg(long, default_value = "on")]
    copyback: String,
    /// Copyback-aware block allocation: on or off.
    #[arg(long, default_value = "on")]
    copyback_aware: String,
    /// Plugging of threaded logging: lba or ppa.
    #[arg(long, default_value = "ppa")]
    plugging: String,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// normal or json.
    #[arg(long, default_value = "normal")]
    output_format: String,
}

fn on_off(name: &str, v: &str) -> Result<bool, UserError> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(UserError(format!("--{name} must be on or off, not '{v}'"))),
    }
}

fn spec(a: &FsBenchArgs) -> Result<RunSpec, UserError> {
    let workload =
        FsWorkload::parse(&a.workload).ok_or_else(|| UserError(format!("unknown workload '{}'", a.workload)))?;
    let recycling =
        Recycling::parse(&a.recycling).ok_or_else(|| UserError(format!("unknown recycling '{}'", a.recycling)))?;
    let medium = ["tlc", "mlc", "znand"]
        .into_iter()
        .find(|m| *m == a.medium)
        .ok_or_else(|| UserError(format!("unknown medium '{}' (tlc, mlc, znand)", a.medium)))?;
    let mut s = RunSpec::new(workload, recycling, Scale::QUICK);
    s.medium = medium;
    s.chips = a.chips;
    s.lanes = a.lanes;
    s.fs_bytes = parse_size(&a.fs_size).map_err(UserError)?;
    s.write_bytes = parse_size(&a.write).map_err(UserError)?;
    s.utilization = a.utilization;
    s.threads = a.threads;
    s.copyback = on_off("copyback", &a.copyback)?;
    s.copyback_aware = on_off("copyback-aware", &a.copyback_aware)?;
    s.plugging = match a.plugging.as_str() {
        "lba" => Plugging::Lba,
        "ppa" => Plugging::Ppa,
        p => return Err(UserError(format!("--plugging must be lba or ppa, not '{p}'"))),
    };
    s.seed = a.seed;
    if a.lanes == 0 || a.lanes > 32 {
        return Err(UserError(format!("--lanes {} must be within 1 ..= 32", a.lanes)));
    }
    Ok(s)
}

pub fn run_cmd(a: &FsBenchArgs) -> Result<(), UserError> {
    if !matches!(a.output_format.as_str(), "normal" | "json") {
        return Err(UserError(format!("--output-format must be normal or json, not '{}'", a.output_format)));
    }
    let result = run(&spec(a)?).map_err(UserError)?;
    if a.output_format == "json" {
        println!("{}", serde_json::to_string_pretty(&report::json(&[result])).expect("json serialises"));
    } else {
        print!("{}", report::text(&result));
    }
    Ok(())
}
