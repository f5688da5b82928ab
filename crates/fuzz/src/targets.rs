//! What each target does with an input. A target returns normally for
//! every input, valid or not (bad input is an error value, not a panic);
//! `Err` is for a finding a target detects itself, e.g. a backend that
//! turned a model panic into EIO.

use zonelab_device::{preset, Command, Device, DeviceConfig, DeviceOptions, Payload};
use zonelab_serve::request::{translate, BlockOp, BlockRequest};
use zonelab_serve::{Backend, Pace};
use zonelab_sim::MS;
use zonelab_workload::fio::parse::parse_job_file;
use zonelab_workload::fio::run::{Engine, RunOptions};

/// zn540 with `zones` zones of 1 MiB (512 KiB capacity), data kept.
fn small_device(zones: u32) -> Device {
    let opts = DeviceOptions {
        zones: Some(zones),
        zone_size_bytes: Some(1 << 20),
        zone_capacity_bytes: Some(512 << 10),
        data: true,
        ..Default::default()
    };
    Device::new(opts.apply(preset("zn540").expect("zn540")).expect("small zn540")).expect("small device")
}

/// The trace parser and the device: `run_trace` on a small data-mode
/// device, and a trace with a tl_open also on a metadata-mode device with
/// zones of 12,582,912 blocks (a `valid` list's cost grows with the zone).
pub fn trace(input: &str) -> Result<(), String> {
    let mut device = small_device(4);
    let _ = zonelab_workload::trace::run_trace(&mut device, input.as_bytes(), std::io::sink());
    if input.contains("tl_open") {
        let opts = DeviceOptions {
            zones: Some(2),
            zone_size_bytes: Some(64 << 30),
            zone_capacity_bytes: Some(48 << 30),
            ..Default::default()
        };
        let mut large = Device::new(opts.apply(preset("zn540").expect("zn540")).expect("large zones")).expect("device");
        let _ = zonelab_workload::trace::run_trace(&mut large, input.as_bytes(), std::io::sink());
    }
    Ok(())
}

/// Simulated time a fuzzed fio job may take: its runtime, ramp_time and
/// startdelay are cut to this (the engine honours up to a day, far too
/// long for a fuzzer's input; thinktime is left alone, idle time is free).
const FIO_TIME_NS: u64 = 20 * MS;

/// The fio job parser and engine, with times cut to [`FIO_TIME_NS`].
pub fn fio(input: &str) -> Result<(), String> {
    let Ok(mut set) = parse_job_file("fuzz.fio", input) else { return Ok(()) };
    for job in &mut set.jobs {
        job.runtime_ns = Some(job.runtime_ns.unwrap_or(FIO_TIME_NS).min(FIO_TIME_NS));
        job.ramp_time_ns = job.ramp_time_ns.min(FIO_TIME_NS);
        job.startdelay_ns = (job.startdelay_ns.0.min(FIO_TIME_NS), job.startdelay_ns.1.min(FIO_TIME_NS));
    }
    let mut device = small_device(16);
    if let Ok(engine) = Engine::new(&mut device, &set, &RunOptions::default()) {
        let _ = engine.run(&mut |_| {});
    }
    Ok(())
}

/// The configuration loader: TOML text (or `#preset NAME`) and `#set
/// PATH=VALUE` lines (TOML comments) → validate → `Device::new` → identify
/// and a few commands.
pub fn config(input: &str) -> Result<(), String> {
    let preset_name = input.lines().find_map(|l| l.strip_prefix("#preset ")).map(str::trim);
    let base = match preset_name {
        Some(name) => match preset(name) {
            Some(c) => c,
            None => return Ok(()),
        },
        None => match DeviceConfig::from_toml(input) {
            Ok(c) => c,
            Err(_) => return Ok(()),
        },
    };
    let sets = input
        .lines()
        .filter_map(|l| l.strip_prefix("#set ")?.split_once('='))
        .map(|(p, v)| (p.trim().to_string(), v.trim().to_string()))
        .collect();
    let Ok(config) = (DeviceOptions { sets, ..Default::default() }).apply(base) else { return Ok(()) };
    if config.validate().is_err() {
        return Ok(());
    }
    let Ok(mut device) = Device::new(config) else { return Ok(()) };
    let _ = device.identify();
    let zone_lbas = device.layout().zone_lbas;
    let commands = [
        Command::Write { slba: 0, nlb: 8, payload: Payload::Pattern(7) },
        Command::Append { zslba: zone_lbas, nlb: 1, payload: Payload::None },
        Command::Read { slba: 0, nlb: 8 },
        Command::IdentifyMapping,
    ];
    let mut now = 0;
    for cmd in &commands {
        now = device.submit(now, cmd, None).complete_ns;
    }
    Ok(())
}

/// One request line: `OP START_SECTOR COUNT`; numbers wrap into their types
/// (so that -1 is the largest), an unknown op is skipped.
fn request(line: &str) -> Option<BlockRequest> {
    let mut words = line.split_whitespace();
    let op = match words.next()? {
        "read" => BlockOp::Read,
        "write" => BlockOp::Write,
        "flush" => BlockOp::Flush,
        "discard" => BlockOp::Discard,
        "write_zeroes" => BlockOp::WriteZeroes,
        "zone_open" => BlockOp::ZoneOpen,
        "zone_close" => BlockOp::ZoneClose,
        "zone_finish" => BlockOp::ZoneFinish,
        "zone_append" => BlockOp::ZoneAppend,
        "zone_reset" => BlockOp::ZoneReset,
        "zone_reset_all" => BlockOp::ZoneResetAll,
        "report_zones" => BlockOp::ReportZones,
        _ => return None,
    };
    let mut number = || -> u64 {
        let w = words.next().unwrap_or("0");
        w.parse::<i128>().map(|n| n as u64).or_else(|_| w.parse::<f64>().map(|f| f as u64)).unwrap_or(0)
    };
    let start_sector = number();
    let count = number() as u32;
    Some(BlockRequest { op, start_sector, count })
}

/// The ublk request translation and backend: each request is translated,
/// then handled as the transport would (a write carries its sectors); a
/// flush after it must succeed, or the backend caught a model panic.
pub fn ublk(input: &str) -> Result<(), String> {
    let mut backend = Backend::new(small_device(8), Pace::Asap).expect("data mode");
    let geometry = backend.geometry();
    let mut data = Vec::new();
    for (wall_ns, req) in input.lines().filter_map(request).enumerate() {
        let _ = translate(&req, &geometry);
        data.clear();
        if matches!(req.op, BlockOp::Write | BlockOp::ZoneAppend) {
            // The transport sizes a write's buffer from its sectors, within the queue's limit.
            let bytes = u64::from(req.count) * 512;
            if bytes > geometry.io_bytes_max {
                continue;
            }
            data.resize(bytes as usize, 0xA5);
        }
        backend.handle_guarded(wall_ns as u64, &req, &mut data);
        let flush = BlockRequest { op: BlockOp::Flush, start_sector: 0, count: 0 };
        if backend.handle_guarded(wall_ns as u64, &flush, &mut Vec::new()).result != 0 {
            return Err(format!("the backend failed (a model panic) on {req:?}"));
        }
    }
    Ok(())
}
