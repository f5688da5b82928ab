//! `zonelab profile`: write a measurement plan for a real drive (docs/profile.md).

use crate::args::DeviceArgs;
use crate::UserError;
use clap::Args;
use std::path::PathBuf;
use zonelab_experiments::calibrate::profile;

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// Directory for jobs/*.fio, plan.json and run.sh (new or empty; --force replaces an earlier plan).
    #[arg(long)]
    pub out: PathBuf,
    /// Replace an earlier zonelab output in --out (never a directory zonelab did not write).
    #[arg(long)]
    pub force: bool,
    /// The zoned namespace run.sh measures: /dev/ngXnY (NVMe passthrough) or /dev/nvmeXnY (libaio).
    #[arg(long, value_name = "PATH")]
    pub device_path: String,
    /// The smaller plan: 19 fio jobs and 6 timed points (estimated at 10 minutes on a drive).
    #[arg(long)]
    pub quick: bool,
    /// Measured window of each I/O job in ms [default: 5000, 1000 with --quick].
    #[arg(long)]
    pub runtime_ms: Option<u64>,
    /// The drive's geometry (--zone-size, --zone-capacity, --lba-bytes) over the preset it resembles.
    #[command(flatten)]
    pub device: DeviceArgs,
}

pub fn run(args: &ProfileArgs) -> Result<(), UserError> {
    let config = args.device.config().map_err(|e| UserError(e.0))?;
    let runtime_ms = args.runtime_ms.unwrap_or(if args.quick { 1000 } else { 5000 });
    if runtime_ms == 0 {
        return Err(UserError("--runtime-ms 0: a job needs a window to measure in".into()));
    }
    let options =
        profile::Options { device_path: args.device_path.clone(), quick: args.quick, runtime_ms, device: config };
    let m = profile::write(&args.out, &options, args.force)?;
    let rows: usize = m.jobs.iter().map(|j| j.rows.len()).sum::<usize>() + m.timed.len();
    let out = args.out.display();
    println!(
        "zonelab profile: {} fio jobs and {} timed zone commands for {} ({} rows of measurements), in {out}",
        m.jobs.len(),
        m.timed.len(),
        m.device_path,
        rows
    );
    println!("run them (as root; every zone is reset): {out}/run.sh --destroy-data-on {}", m.device_path);
    println!("then: zonelab calibrate {out} --out calibration");
    Ok(())
}
