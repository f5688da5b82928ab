//! `zonelab serve --ublk`: the device as a Linux zoned block device;
//! `zonelab serve --nvme-tcp`: as an NVMe/TCP target with the zoned command set.

use crate::args::DeviceArgs;
use crate::UserError;
use clap::{Args, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;
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
    /// Serve through Linux's ublk driver (Linux 6.6+, ublk_drv loaded, root).
    /// Needs a zonelab built with the `ublk` feature.
    #[arg(long, conflicts_with = "nvme_tcp")]
    pub ublk: bool,
    /// Serve as an NVMe/TCP target with the zoned command set (user space, no root): attach it with
    /// `nvme connect -t tcp -a ADDR -s PORT -n NQN` (docs/nvme-tcp.md).
    #[arg(long)]
    pub nvme_tcp: bool,
    /// --nvme-tcp: the address and port to listen on.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:4420", requires = "nvme_tcp")]
    pub listen: std::net::SocketAddr,
    /// --nvme-tcp: the subsystem's NQN.
    #[arg(long, value_name = "NQN", default_value = zonelab_serve::nvme_tcp::DEFAULT_NQN, requires = "nvme_tcp")]
    pub nqn: String,
    /// --nvme-tcp: one more namespace (2, 3, ...), a preset or TOML device file with its own geometry; repeat for
    /// more. The device options above apply to namespace 1 only; with --backing, namespace N keeps FILE.nsN.
    #[arg(long = "namespace", value_name = "DEVICE", requires = "nvme_tcp")]
    pub namespaces: Vec<String>,
    /// --nvme-tcp: split the device's zones into N namespaces of one device (NSID 1..N), which share its flash and
    /// controller and so interfere; a device file's `[[namespaces]]` list does the same with a geometry each.
    #[arg(long = "namespaces", value_name = "N", requires = "nvme_tcp")]
    pub namespace_count: Option<u32>,
    #[command(flatten)]
    pub limits: LimitArgs,
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
    /// Record every command the device model runs, with its arrival, simulated times and the completion it
    /// waited for, into FILE (created; an existing file is refused), for `zonelab replay FILE`.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// The recording ends (the server goes on) before it would grow past BYTES [default: 16g]: a host that floods
    /// commands fills no more of the disk than this.
    #[arg(long, value_name = "BYTES", value_parser = size_arg, requires = "record")]
    pub record_max_bytes: Option<u64>,
}

/// `--nvme-tcp`'s limits on what clients may make the server hold (docs/nvme-tcp.md, "Limits"); each
/// defaults to `zonelab_serve::nvme_tcp::Limits::default()`'s.
#[derive(Debug, Args)]
pub struct LimitArgs {
    /// --nvme-tcp: connections (queues of all hosts) open at once [default: 256]; at the cap, the oldest connection
    /// not yet connected, or the controller without keep-alive idle longest, makes room.
    #[arg(long, value_name = "N", requires = "nvme_tcp")]
    pub max_connections: Option<usize>,
    /// --nvme-tcp: controllers (admin queues) alive at once [default: 64]; at the cap, a controller without
    /// keep-alive (KATO 0) idle for --idle-reclaim makes room, else Connect answers Controller Busy.
    #[arg(long, value_name = "N", requires = "nvme_tcp")]
    pub max_controllers: Option<usize>,
    /// --nvme-tcp: bytes one connection may make the server hold (PDUs being read, R2T data, answers not yet sent)
    /// [default: 16m]; a connection at its budget is not read until its answers are sent.
    #[arg(long, value_name = "BYTES", value_parser = size_arg, requires = "nvme_tcp")]
    pub connection_memory: Option<u64>,
    /// --nvme-tcp: bytes all connections together may make the server hold [default: 512m].
    #[arg(long, value_name = "BYTES", value_parser = size_arg, requires = "nvme_tcp")]
    pub total_memory: Option<u64>,
    /// --nvme-tcp: a connection that sends no ICReq this soon after it is accepted is closed [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, requires = "nvme_tcp")]
    pub icreq_timeout: Option<Duration>,
    /// --nvme-tcp: a connection not connected (Connect) this soon after its ICReq is closed [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, requires = "nvme_tcp")]
    pub connect_timeout: Option<Duration>,
    /// --nvme-tcp: a controller without keep-alive silent this long may be reclaimed at a cap [default: 10s].
    #[arg(long, value_name = "DURATION", value_parser = duration_arg, requires = "nvme_tcp")]
    pub idle_reclaim: Option<Duration>,
}

impl LimitArgs {
    fn limits(&self) -> Result<zonelab_serve::nvme_tcp::Limits, UserError> {
        let default = zonelab_serve::nvme_tcp::Limits::default();
        let bytes = |b: Option<u64>, d: usize| b.map_or(Ok(d), usize::try_from);
        let too_large = |_| UserError("a memory limit does not fit this machine's address space".into());
        let limits = zonelab_serve::nvme_tcp::Limits {
            max_connections: self.max_connections.unwrap_or(default.max_connections),
            max_controllers: self.max_controllers.unwrap_or(default.max_controllers),
            connection_memory: bytes(self.connection_memory, default.connection_memory).map_err(too_large)?,
            total_memory: bytes(self.total_memory, default.total_memory).map_err(too_large)?,
            icreq_timeout: self.icreq_timeout.unwrap_or(default.icreq_timeout),
            connect_timeout: self.connect_timeout.unwrap_or(default.connect_timeout),
            idle_reclaim: self.idle_reclaim.unwrap_or(default.idle_reclaim),
            stall_timeout: default.stall_timeout,
        };
        limits.check().map_err(UserError)?;
        Ok(limits)
    }
}

fn size_arg(s: &str) -> Result<u64, zonelab_device::ValueError> {
    zonelab_device::parse_size(s)
}

fn duration_arg(s: &str) -> Result<Duration, zonelab_device::ValueError> {
    zonelab_device::options::parse_duration_ns(s).map(Duration::from_nanos)
}

pub fn run(args: &ServeArgs) -> Result<(), UserError> {
    if args.nvme_tcp {
        return serve_nvme_tcp(args);
    }
    if !args.ublk {
        return Err(UserError("serve needs a transport: add --ublk or --nvme-tcp".into()));
    }
    serve_ublk(args)
}

/// A data-mode backend over `config`, with its image at `backing` if given.
#[cfg(feature = "ublk")]
fn backend(
    config: zonelab_device::DeviceConfig,
    pace: Pace,
    backing: Option<&std::path::Path>,
) -> Result<zonelab_serve::Backend, UserError> {
    let device = zonelab_device::Device::new(config).map_err(|e| UserError(e.0))?;
    let mut backend = zonelab_serve::Backend::new(device, pace).map_err(|e| UserError(e.to_string()))?;
    if let Some(path) = backing {
        backend = backend.with_image(path).map_err(|e| UserError(e.to_string()))?;
    }
    Ok(backend)
}

fn serve_nvme_tcp(args: &ServeArgs) -> Result<(), UserError> {
    use zonelab_serve::nvme_tcp::{serve_nvme_tcp, NvmeTcpOptions, Target};
    if args.nqn.is_empty() || args.nqn.len() > 223 || !args.nqn.starts_with("nqn.") {
        return Err(UserError(format!("--nqn {}: an NQN starts with \"nqn.\" and has 4 to 223 bytes", args.nqn)));
    }
    let limits = args.limits.limits()?;
    let mut device_args = args.device.clone();
    device_args.data = true;
    let mut config = device_args.config().map_err(|e| UserError(e.0))?;
    if let Some(count) = args.namespace_count {
        config = zonelab_device::config::namespaces::split(&config, count).map_err(|e| UserError(e.0))?;
    }
    let mut backends = Vec::new();
    // What Namespace Management made of the drive before a restart.
    let listed = match &args.backing {
        Some(base) => zonelab_serve::nvme_tcp::persist::load(base).map_err(|e| UserError(e.to_string()))?,
        None => None,
    };
    // The first device's drive: Namespace Management creates on its free blocks.
    let drive = namespace_backends(config, args, listed.as_deref(), &mut backends)?;
    for name in &args.namespaces {
        let config =
            zonelab_device::load_device(name).map_err(|e| UserError(format!("--namespace {name}: {}", e.0)))?;
        let options = zonelab_device::DeviceOptions { data: true, ..Default::default() };
        let config = options.apply(config).map_err(|e| UserError(format!("--namespace {name}: {}", e.0)))?;
        namespace_backends(config, args, listed.as_deref(), &mut backends)?;
    }
    let mut target = Target::new(args.nqn.clone(), backends).with_limits(limits).with_drive(drive);
    if let Some(recorder) = recorder(args)? {
        target = target.with_recorder(recorder);
    }
    if let Some(base) = &args.backing {
        target = target.with_backing(base.clone());
    }
    if let Some(entries) = &listed {
        target.restore_namespaces(entries).map_err(|e| {
            let base = args.backing.as_deref().unwrap_or(std::path::Path::new("")).display();
            UserError(format!("--backing {base}: its namespace list cannot be restored: {e}"))
        })?;
    }
    let options = NvmeTcpOptions { listen: args.listen, stats_path: args.stats.clone() };
    serve_nvme_tcp(target, options).map_err(|e| UserError(e.to_string()))
}

/// `--record FILE`: the recording, created before serving; its comment is
/// the command line, which says what device to replay it on.
fn recorder(args: &ServeArgs) -> Result<Option<std::sync::Arc<zonelab_serve::recording::Recorder>>, UserError> {
    let Some(path) = &args.record else { return Ok(None) };
    let command: Vec<String> = std::env::args().skip(1).collect();
    let comment = format!("zonelab {}", command.join(" "));
    let recorder = zonelab_serve::recording::Recorder::create(path, &comment).map_err(|e| UserError(e.to_string()))?;
    let bytes_max = args.record_max_bytes.unwrap_or(zonelab_serve::recording::RECORD_BYTES_MAX_DEFAULT);
    Ok(Some(std::sync::Arc::new(recorder.with_bytes_max(bytes_max))))
}

/// A backend for each namespace of the device `config` describes (they share
/// it), numbered on from `backends.len() + 1`; with --backing, namespace N
/// above 1 keeps its image in FILE.nsN, unless the namespace list `listed`
/// says Namespace Management deleted it. Returns the device's drive.
fn namespace_backends(
    config: zonelab_device::DeviceConfig,
    args: &ServeArgs,
    listed: Option<&[zonelab_serve::nvme_tcp::persist::Entry]>,
    backends: &mut Vec<zonelab_serve::nvme_tcp::target::NamespaceBackend>,
) -> Result<zonelab_device::namespaces::Drive, UserError> {
    let namespaces = zonelab_device::Namespaces::new(config).map_err(|e| UserError(e.0))?;
    let (drive, namespaces) = namespaces.into_parts();
    for namespace in namespaces {
        let nsid = backends.len() + 1;
        if nsid > zonelab_device::NAMESPACES_MAX as usize {
            return Err(UserError(format!(
                "more than {} namespaces in all (--namespaces, [[namespaces]] and --namespace)",
                zonelab_device::NAMESPACES_MAX
            )));
        }
        let mut backend =
            zonelab_serve::Backend::new(namespace, args.pace.into()).map_err(|e| UserError(e.to_string()))?;
        let nsid = u32::try_from(nsid).expect("at most NAMESPACES_MAX");
        let kept = listed.is_none_or(|l| l.iter().any(|e| e.nsid == nsid && e.created.is_none()));
        let backing = args.backing.as_ref().filter(|_| kept);
        if let Some(path) = backing.map(|base| zonelab_serve::nvme_tcp::persist::image_path(base, nsid)) {
            backend = backend.with_image(&path).map_err(|e| UserError(e.to_string()))?;
        }
        backends.push(backend);
    }
    Ok(drive)
}

#[cfg(feature = "ublk")]
fn serve_ublk(args: &ServeArgs) -> Result<(), UserError> {
    use zonelab_serve::ServeOptions;
    let mut device_args = args.device.clone();
    device_args.data = true;
    let config = device_args.config().map_err(|e| UserError(e.0))?;
    let mut backend = backend(config, args.pace.into(), args.backing.as_deref())?;
    if let Some(recorder) = recorder(args)? {
        backend.record_to(recorder, 1);
    }
    let options = ServeOptions { stats_path: args.stats.clone() };
    zonelab_serve::serve(backend, options).map_err(|e| UserError(e.to_string()))
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
