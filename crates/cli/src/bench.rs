//! `zonelab bench`: throughput of the simulator itself, and the memory a
//! large device takes.

/// Prints a line; a closed stdout (`zonelab bench | head`) ends quietly instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write;
        if writeln!(std::io::stdout().lock(), $($arg)*).is_err() {
            std::process::exit(0);
        }
    }};
}

use crate::UserError;
use clap::Args;
use std::time::Instant;
use zonelab_device::{preset, Device, DeviceOptions, Tracking};
use zonelab_workload::bench::{run as run_scenario, Scenario};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Commands per scenario.
    #[arg(long, default_value_t = 5_000_000)]
    pub commands: u64,
    /// Also build a zn540 with this many zones and report the process's peak memory.
    #[arg(long, default_value_t = 3688)]
    pub memory_zones: u32,
    /// Run only this scenario (and skip the memory check): one process per
    /// scenario is what instruction counts under callgrind need.
    #[arg(long, value_enum)]
    pub only: Option<Only>,
}

/// The scenarios by name, for `--only`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    /// 4 KiB sequential writes at QD 1.
    #[value(name = "write-4k-qd1")]
    Write4kQd1,
    /// 4 KiB random reads at QD 32.
    #[value(name = "randread-4k-qd32")]
    RandRead4kQd32,
    /// 128 KiB writes, one writer in each of 4 zones.
    #[value(name = "write-128k-4zones")]
    Write128kFourZones,
    /// `zonelab run` of 4 KiB writes at QD 1 through the io_uring passthrough engine.
    #[value(name = "fio-uring-cmd-write-4k-qd1")]
    FioUringCmd,
    /// `zonelab run` of 4 KiB writes at QD 1 through libaio and the kernel's block layer.
    #[value(name = "fio-libaio-write-4k-qd1")]
    FioLibaio,
}

impl Only {
    fn scenario(self) -> Option<Scenario> {
        match self {
            Only::Write4kQd1 => Some(Scenario::Write4kQd1),
            Only::RandRead4kQd32 => Some(Scenario::RandRead4kQd32),
            Only::Write128kFourZones => Some(Scenario::Write128kFourZones),
            Only::FioUringCmd | Only::FioLibaio => None,
        }
    }
}

/// Peak resident memory of this process (Linux), in KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub fn run(args: &BenchArgs) -> Result<(), UserError> {
    if args.commands == 0 {
        return Err(UserError("--commands must be at least 1".into()));
    }
    let base = preset("zn540").expect("built-in preset");
    say!("{:<30} {:>12} {:>10} {:>16} {:>14}", "scenario", "commands", "wall s", "commands/wall s", "sim MiB/s");
    for s in Scenario::ALL {
        if args.only.is_some_and(|o| o.scenario() != Some(s)) {
            continue;
        }
        let mut dev = Device::with_tracking(base.clone(), Tracking::NONE)?;
        let t0 = Instant::now();
        let out = run_scenario(&mut dev, s, args.commands, 1);
        let wall = t0.elapsed().as_secs_f64();
        let sim_mib_s = out.bytes as f64 / (1 << 20) as f64 / (out.sim_ns as f64 / 1e9);
        say!(
            "{:<30} {:>12} {:>10.3} {:>16.0} {:>14.1}",
            s.name(),
            out.commands,
            wall,
            out.commands as f64 / wall,
            sim_mib_s
        );
    }
    for (only, engine) in [(Only::FioUringCmd, "io_uring_cmd"), (Only::FioLibaio, "libaio")] {
        if args.only.is_none_or(|o| o == only) {
            fio_scenario(&base, args.commands, engine)?;
        }
    }
    if args.only.is_some() {
        return Ok(());
    }
    let before = peak_rss_kib();
    let opts = DeviceOptions { zones: Some(args.memory_zones), ..Default::default() };
    let config = opts.apply(base)?;
    let mut dev = Device::new(config)?;
    // Run some I/O so that buffers and timelines hold state, as in real use.
    let _ = run_scenario(&mut dev, Scenario::Write128kFourZones, 10_000, 1);
    match (before, peak_rss_kib()) {
        (Some(b), Some(a)) => say!(
            "memory: zn540 with {} zones of {} MiB (metadata mode): peak RSS {:.1} MiB (process peak before building it {:.1} MiB)",
            args.memory_zones,
            (dev.layout().zone_lbas * dev.layout().lba_bytes) >> 20,
            a as f64 / 1024.0,
            b as f64 / 1024.0
        ),
        _ => say!("memory: peak RSS not available on this platform"),
    }
    Ok(())
}

/// The fio layer on top of the device: `zonelab run` of 4 KiB writes at QD 1
/// through `ioengine`.
fn fio_scenario(base: &zonelab_device::DeviceConfig, ios: u64, ioengine: &str) -> Result<(), UserError> {
    use zonelab_workload::fio::{parse::parse_run, run::Engine, run::RunOptions};
    let args: Vec<String> = [
        "--name=bench".to_string(),
        "--rw=write".into(),
        "--bs=4k".into(),
        "--iodepth=1".into(),
        format!("--ioengine={ioengine}"),
        "--direct=1".into(),
        "--zonemode=zbd".into(),
        format!("--number_ios={ios}"),
        "--time_based".into(),
        "--runtime=1h".into(),
    ]
    .into();
    let set = parse_run(&args, &[])?;
    let mut dev = Device::with_tracking(base.clone(), Tracking::NONE)?;
    let t0 = Instant::now();
    let engine = Engine::new(&mut dev, &set, &RunOptions::default())?;
    let result = engine.run(&mut |_| {})?;
    let wall = t0.elapsed().as_secs_f64();
    let done: u64 = result.threads.iter().map(|t| t.stats.dirs[1].total_ios).sum();
    let bytes: u64 = result.threads.iter().map(|t| t.stats.dirs[1].io_bytes).sum();
    let sim_mib_s = bytes as f64 / (1 << 20) as f64 / (result.end_ns.max(1) as f64 / 1e9);
    let name = format!("fio-{}-write-4k-qd1", ioengine.replace('_', "-"));
    say!("{:<30} {:>12} {:>10.3} {:>16.0} {:>14.1}", name, done, wall, done as f64 / wall, sim_mib_s);
    Ok(())
}
