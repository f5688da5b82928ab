//! `zonelab serve --ublk`: the device as a Linux zoned block device.

use crate::args::DeviceArgs;
use crate::UserError;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use zonelab_serve::Pace;

/// `--pace`, as a closed set for the parser (valid values in `--help`).
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PaceArg {
    /// Requests complete when the wall clock reaches their simulated completion time.
    Realtime,
    /// Requests complete as soon as the model has computed them.
    Asap,
}

impl From<PaceArg> for Pace {
    fn from(pace: PaceArg) -> Self {
        match pace {
            PaceArg::Realtime => Pace::Realtime,
            PaceArg::Asap => Pace::Asap,
        }
    }
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve through Linux's ublk driver (Linux 6.6+, ublk_drv loaded, root); the only transport so far.
    /// Needs a zonelab built with the `ublk` feature.
    #[arg(long)]
    pub ublk: bool,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// realtime: requests complete when the wall clock reaches their simulated completion time;
    /// asap: as soon as the model has computed them.
    #[arg(long, value_enum, default_value = "realtime")]
    pub pace: PaceArg,
    /// Write statistics (simulated time) here on SIGUSR1 and on exit instead of stderr. The server creates the
    /// file (an existing file or a symlink is refused).
    #[arg(long, value_name = "FILE")]
    pub stats: Option<PathBuf>,
    /// Keep the device's data and zone states in FILE (sparse) and FILE.zones: an existing image is loaded
    /// first, so what the server answered survives its restart or kill -9; flushes make it durable on disk.
    #[arg(long, value_name = "FILE")]
    pub backing: Option<PathBuf>,
}

pub fn run(args: &ServeArgs) -> Result<(), UserError> {
    if !args.ublk {
        return Err(UserError("serve needs a transport: add --ublk".into()));
    }
    serve_ublk(args)
}

#[cfg(feature = "ublk")]
fn serve_ublk(args: &ServeArgs) -> Result<(), UserError> {
    use zonelab_device::Device;
    use zonelab_serve::{Backend, ServeOptions};
    let mut device_args = args.device.clone();
    device_args.data = true;
    let config = device_args.config().map_err(|e| UserError(e.0))?;
    let device = Device::new(config).map_err(|e| UserError(e.0))?;
    let mut backend = Backend::new(device, args.pace.into()).map_err(UserError)?;
    if let Some(path) = &args.backing {
        backend = backend.with_image(path).map_err(UserError)?;
    }
    let options = ServeOptions { stats_path: args.stats.clone() };
    zonelab_serve::serve(backend, options).map_err(UserError)
}

/// The default build leaves ublk out so that nothing needs libclang; say how to get it.
#[cfg(not(feature = "ublk"))]
fn serve_ublk(args: &ServeArgs) -> Result<(), UserError> {
    // The device options are still checked, so a mistake is reported before the rebuild.
    args.device.config().map_err(|e| UserError(e.0))?;
    Err(UserError(
        "this zonelab was built without ublk support; rebuild it with the `ublk` feature \
         (needs libclang, e.g. Debian's libclang-dev): \
         cargo install --path crates/cli --features ublk"
            .into(),
    ))
}
