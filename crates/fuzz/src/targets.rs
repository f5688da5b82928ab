//! What each target does with an input. A target returns normally for
//! every input, valid or not (bad input is an error value, not a panic);
//! `Err` is for a finding a target detects itself, e.g. a backend that
//! turned a model panic into EIO.

use zonelab_device::{preset, Command, Device, DeviceConfig, DeviceOptions, Payload};
use zonelab_serve::nvme_tcp::session::{Output, Session};
use zonelab_serve::nvme_tcp::Target;
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

/// The zn540-fdp's scale model (144 MiB of flash under a 100 MiB namespace,
/// 2 reclaim unit handles): garbage collection and the FDP commands take
/// effect within a fuzzer's input.
fn small_fdp_device() -> Device {
    Device::new(zonelab_device::fdp_scale_model()).expect("the FDP scale model")
}

/// Whether an input names Flexible Data Placement (trace ops and fields,
/// fio options): it then runs on an FDP device too.
fn names_fdp(input: &str) -> bool {
    ["pid", "ruh_", "fdp", "dataplacement", "data_placement", "plid", "dp_scheme"].iter().any(|w| input.contains(w))
}

/// A model failure a target detects without a panic reaching it: the
/// serving backends catch the model's panics and report them instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Failure {
    /// The ublk backend failed a flush after this request (`Debug` of it).
    #[error("the backend failed (a model panic) on {0}")]
    Backend(String),
    /// The NVMe/TCP target's device model failed.
    #[error("the device model failed (a panic the backend caught)")]
    Model,
    /// The device and the reference model disagree (what, where).
    #[error("the device disagrees with the reference model: {0}")]
    Mismatch(String),
}

/// The trace parser and the device: `run_trace` on a small data-mode
/// device, a trace with a tl_open also on a metadata-mode device with
/// zones of 12,582,912 blocks (a `valid` list's cost grows with the zone),
/// and one naming FDP (`pid`, `ruh_status`, `ruh_update`, `fdp_events`,
/// `fdp_logs`) also on a small FDP device.
pub fn trace(input: &str) -> Result<(), Failure> {
    let mut device = small_device(4);
    let _ = zonelab_workload::trace::run_trace(&mut device, input.as_bytes(), std::io::sink());
    if names_fdp(input) {
        let _ = zonelab_workload::trace::run_trace(&mut small_fdp_device(), input.as_bytes(), std::io::sink());
    }
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

/// The fio job parser and engine, with runtime, ramp time and start delay
/// cut to at most 20 ms of simulated time, and no log files; a job file
/// naming FDP options runs on a small FDP device.
pub fn fio(input: &str) -> Result<(), Failure> {
    let Ok(mut set) = parse_job_file("fuzz.fio", input) else { return Ok(()) };
    for job in &mut set.jobs {
        job.runtime_ns = Some(job.runtime_ns.unwrap_or(FIO_TIME_NS).min(FIO_TIME_NS));
        job.ramp_time_ns = job.ramp_time_ns.min(FIO_TIME_NS);
        job.startdelay_ns = (job.startdelay_ns.0.min(FIO_TIME_NS), job.startdelay_ns.1.min(FIO_TIME_NS));
        // A fuzzed job writes no log files wherever its input points.
        job.logs = Default::default();
        job.write_iolog = None;
    }
    let mut device = if names_fdp(input) { small_fdp_device() } else { small_device(16) };
    if let Ok(engine) = Engine::new(&mut device, &set, &RunOptions::default()) {
        let _ = engine.run(&mut |_| {});
    }
    Ok(())
}

/// The iolog parser, then a replay of what parses (`read_iolog`, open and
/// closed loop, 20 ms of simulated time at most) on a small device. The log
/// goes through a file of this process's own, removed afterwards.
pub fn iolog(input: &str) -> Result<(), Failure> {
    if zonelab_workload::fio::iolog::parse("fuzz.log", input).is_err() {
        return Ok(());
    }
    let name = format!("zonelab-fuzz-iolog-{}-{:?}.log", std::process::id(), std::thread::current().id());
    let path = std::env::temp_dir().join(name.replace(['(', ')'], ""));
    if std::fs::write(&path, input).is_err() {
        return Ok(());
    }
    for no_stall in [0, 1] {
        let job = format!(
            "[r]\nread_iolog={}\nreplay_no_stall={no_stall}\nioengine=libaio\niodepth=4\nruntime=20ms\n",
            path.display()
        );
        let Ok(set) = parse_job_file("fuzz.fio", &job) else { continue };
        let mut device = small_device(16);
        if let Ok(engine) = Engine::new(&mut device, &set, &RunOptions::default()) {
            let _ = engine.run(&mut |_| {});
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}

/// The recording parser (`serve --record`), then a replay of what parses,
/// open and closed loop, on a small device.
pub fn recording(input: &str) -> Result<(), Failure> {
    let Ok(records) = zonelab_serve::recording::parse("fuzz.rec", input) else { return Ok(()) };
    use zonelab_serve::recording::replay::{replay, Clock, Loop};
    for (mode, clock) in [(Loop::Open, Clock::Device), (Loop::Open, Clock::Wall), (Loop::Closed, Clock::Device)] {
        let mut device = small_device(16);
        let replayed = replay(&records, &mut device, mode, clock);
        assert_eq!(replayed.len(), records.len(), "every command replays once");
    }
    Ok(())
}

/// The `--backing` namespace list parser (`serve --nvme-tcp`): what parses
/// must come back the same through its text.
pub fn nslist(input: &str) -> Result<(), Failure> {
    use zonelab_serve::nvme_tcp::persist::{format, parse};
    let Ok(entries) = parse(input) else { return Ok(()) };
    assert_eq!(parse(&format(&entries)).as_deref(), Ok(&entries[..]), "a list reads back as written");
    Ok(())
}

/// The configuration loader: TOML text (or `#preset NAME`), `#set
/// PATH=VALUE` lines and a `#capacity SIZE` line (TOML comments) → validate
/// → `Device::new` → identify and a few commands.
pub fn config(input: &str) -> Result<(), Failure> {
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
    let capacity_bytes =
        input.lines().find_map(|l| l.strip_prefix("#capacity ")).and_then(|t| zonelab_device::parse_size(t).ok());
    let Ok(config) = (DeviceOptions { sets, capacity_bytes, ..Default::default() }).apply(base) else { return Ok(()) };
    if config.validate().is_err() {
        return Ok(());
    }
    let Ok(mut device) = Device::new(config) else { return Ok(()) };
    let _ = device.identify();
    let zone_lbas = device.layout().zone_lbas;
    let commands = [
        Command::Write { slba: 0, nlb: 8, payload: Payload::Pattern(7), fua: false, placement: None },
        Command::Append { zslba: zone_lbas, nlb: 1, payload: Payload::None, fua: false },
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
pub fn ublk(input: &str) -> Result<(), Failure> {
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
            return Err(Failure::Backend(format!("{req:?}")));
        }
    }
    Ok(())
}

/// The NVMe/TCP target's PDU parser and command dispatch: the input is the
/// byte stream a host sends on one connection, written as hexadecimal byte
/// pairs (whitespace and anything else that is not a pair of hex digits is
/// skipped; `#` starts a comment to the end of the line). A controller with
/// id 1, enabled and granted 4 I/O queues, exists beforehand, so the stream
/// may connect as its admin queue or as an I/O queue. Every PDU is handled
/// until the stream ends or a fatal error closes it; afterwards the model
/// must still be healthy.
pub fn nvme_tcp(input: &str) -> Result<(), Failure> {
    let (target, _) = nvme_tcp_session(input);
    if target.failed() {
        return Err(Failure::Model);
    }
    Ok(())
}

/// What the target answered to the stream (after the ICResp), for checking the seeds.
pub fn nvme_tcp_replies(input: &str) -> Vec<u8> {
    nvme_tcp_session(input).1
}

/// The `nvme-tcp` target on a namespace with Flexible Data Placement
/// ([`fdp_device`]): the stream may connect as an admin queue (a new
/// controller) or as I/O queue 1 of controller 1.
pub fn nvme_tcp_fdp(input: &str) -> Result<(), Failure> {
    let (target, _) = session_on(fdp_device(), input);
    if target.failed() {
        return Err(Failure::Model);
    }
    Ok(())
}

/// What the FDP target answered to the stream (after the ICResp).
pub fn nvme_tcp_fdp_replies(input: &str) -> Vec<u8> {
    session_on(fdp_device(), input).1
}

/// The zn540-fdp's scale model with 4 reclaim unit handles, data kept.
pub fn fdp_device() -> zonelab_device::DeviceConfig {
    let mut c = zonelab_device::fdp_scale_model();
    c.fdp.as_mut().expect("FDP").handles = 4;
    c.mode = zonelab_device::Mode::Data;
    c
}

fn nvme_tcp_session(input: &str) -> (std::sync::Arc<Target>, Vec<u8>) {
    session_on(small_device(8).config().clone(), input)
}

fn session_on(config: zonelab_device::DeviceConfig, input: &str) -> (std::sync::Arc<Target>, Vec<u8>) {
    let bytes = hex_stream(input);
    let namespace = zonelab_device::Namespaces::new(config).expect("small device").into_namespaces().remove(0);
    let backend = Backend::new(namespace, Pace::Asap).expect("data mode");
    let target = std::sync::Arc::new(Target::new("nqn.2026-11.io.zonelab:fuzz".into(), vec![backend]));
    let controller = target.create_controller(false, "nqn.fuzz-host".into(), [0; 16]).expect("a controller");
    {
        let mut state = controller.state.lock().expect("fresh lock");
        (state.cc, state.csts, state.io_queues) = (1 | 6 << 4, 1, 4);
    }
    let mut session = Session::new(std::sync::Arc::clone(&target), "127.0.0.1:4420".parse().expect("an address"));
    let mut reader = bytes.as_slice();
    let mut outputs: Vec<Output> = Vec::new();
    // Each step consumes at least a common header: the loop ends.
    for _ in 0..=bytes.len() / 8 {
        match session.step(&mut reader, &mut outputs) {
            Ok(true) => {}
            Ok(false) | Err(_) => break,
        }
    }
    // The ICResp (128 bytes, no digests) first, then PDUs in the negotiated encoding.
    let replies = outputs.into_iter().skip(1).flat_map(|o| o.bytes).collect();
    (target, replies)
}

/// The bytes of a hex dump: pairs of hex digits, comments (`#`) skipped.
fn hex_stream(input: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    for line in input.lines() {
        let data = line.split('#').next().unwrap_or("");
        let digits: Vec<u8> = data.bytes().filter(u8::is_ascii_hexdigit).collect();
        for pair in digits.chunks_exact(2) {
            let text = std::str::from_utf8(pair).expect("hex digits are ASCII");
            bytes.push(u8::from_str_radix(text, 16).expect("two hex digits"));
        }
    }
    bytes
}
