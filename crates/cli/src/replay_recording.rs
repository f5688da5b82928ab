//! `zonelab replay REC` of a `serve --record` recording: the commands sent
//! again to a device in virtual time (`zonelab_serve::recording::replay`),
//! reported as fio reports a job: reads in `read`, writes, appends and
//! write zeroes in `write`, zone management in `trim`; latencies are the
//! device's, from submission to completion (no host stack: the recording's
//! think times hold the host's). `--recorded` reports the live run itself.

use crate::args::DeviceArgs;
use crate::UserError;
use clap::Parser;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::process::ExitCode;
use zonelab_device::{CmdResult, Completion};
use zonelab_serve::recording::replay::{replay, Clock, Loop, Replayed};
use zonelab_serve::recording::{self, Arrival, Op, QueueId, Record, Recorder};
use zonelab_sim::Nanos;
use zonelab_workload::fio::job::{DDIR_READ, DDIR_TRIM, DDIR_WRITE};
use zonelab_workload::fio::run::{RunResult, ThreadResult};
use zonelab_workload::fio::stats::{JobStats, Sampled};

/// fio's bandwidth and IOPS window (`bwavgtime`, `iopsavgtime`).
const WINDOW_NS: Nanos = 500_000_000;

#[derive(Parser, Debug)]
#[command(name = "zonelab replay")]
struct RecordingArgs {
    file: String,
    #[arg(long = "loop", default_value = "open")]
    loop_mode: String,
    #[arg(long, default_value = "device")]
    clock: String,
    #[arg(long)]
    recorded: bool,
    #[arg(long, value_name = "FILE")]
    record: Option<std::path::PathBuf>,
    #[arg(long = "output-format", default_value = "json")]
    output_format: String,
    #[command(flatten)]
    device: DeviceArgs,
}

/// Whether `path` starts like a recording (anything else is left to the iolog reader).
pub(crate) fn is_recording(path: &str) -> bool {
    let mut head = [0u8; 32];
    let read = std::fs::File::open(path).and_then(|mut f| std::io::Read::read(&mut f, &mut head));
    read.is_ok_and(|n| recording::is_recording(&head[..n]))
}

/// Replays the recording `args` name and prints the report.
pub(crate) fn run(args: &[String]) -> Result<ExitCode, UserError> {
    let argv = std::iter::once("zonelab replay".to_string()).chain(args.iter().cloned());
    let opts = RecordingArgs::try_parse_from(argv).unwrap_or_else(|e| e.exit());
    let mode = match opts.loop_mode.as_str() {
        "open" => Loop::Open,
        "closed" => Loop::Closed,
        other => return Err(UserError(format!("--loop '{other}': use open or closed"))),
    };
    let clock = match opts.clock.as_str() {
        "device" => Clock::Device,
        "wall" => Clock::Wall,
        other => return Err(UserError(format!("--clock '{other}': use device or wall"))),
    };
    let records = recording::read(&opts.file).map_err(|e| UserError(e.to_string()))?;
    let recorder = opts.record.as_deref().map(|p| Recorder::create(p, &format!("zonelab replay {}", args.join(" "))));
    let recorder = recorder.transpose().map_err(|e| UserError(e.to_string()))?;
    // The recording's device kept data; the replay needs only its timing.
    let mut device = crate::device_from(&opts.device, zonelab_device::Tracking::NONE)?;
    let lba_bytes = zonelab_device::ZonedDevice::layout(&device).lba_bytes;
    let replayed = if opts.recorded {
        records.iter().enumerate().map(|(index, r)| as_recorded(index, r)).collect()
    } else {
        replay(&records, &mut device, mode, clock)
    };
    if let Some(recorder) = &recorder {
        record_replay(recorder, &records, &replayed);
    }
    let differ = differences(&records, &replayed);
    let result = run_result(&records, &replayed, lba_bytes, differ.as_ref());
    let depth = records.iter().map(|r| r.outstanding + 1).max().unwrap_or(1);
    let job = ["--name=replay".to_string(), "--ioengine=io_uring_cmd".into(), format!("--iodepth={depth}")];
    let set = zonelab_workload::fio::parse::parse_run(&job, &[]).map_err(|e| UserError(e.to_string()))?;
    let own = ["zonelab replay".to_string(), format!("--output-format={}", opts.output_format)];
    crate::run::write_stdout(&crate::run::reports(&own, &set, &result)?)?;
    match differ {
        Some(message) => {
            eprintln!("zonelab: replay of {}: {message}", opts.file);
            Ok(ExitCode::FAILURE)
        }
        None => Ok(ExitCode::SUCCESS),
    }
}

/// The live run's own command, as the recording has it.
fn as_recorded(index: usize, r: &Record) -> Replayed {
    Replayed { index, issue_ns: r.vt_ns, done_ns: r.vc_ns, status: r.status, result_lba: r.result_lba }
}

/// A queue of the replay as its host would see it: the commands in flight
/// (completion time, SEQ), earliest first, and the last one completed.
type QueueSeen = (BinaryHeap<Reverse<(Nanos, u64)>>, Option<u64>);

/// `--record FILE`: the replay's command stream in the recording's format,
/// its times the replay's, its SEQ the order the device saw, and each
/// command's DEP and OUT what the replay's completions made them (the last
/// of its queue completed when it was issued; those still in flight).
fn record_replay(recorder: &Recorder, records: &[Record], replayed: &[Replayed]) {
    let mut queues: BTreeMap<QueueId, QueueSeen> = BTreeMap::new();
    for r in replayed {
        let record = &records[r.index];
        let (in_flight, last_done) = queues.entry(record.queue).or_default();
        // Bound: each command enters and leaves the heap once.
        while let Some(&Reverse((_, seq))) = in_flight.peek().filter(|Reverse((done, _))| *done <= r.issue_ns) {
            in_flight.pop();
            *last_done = Some(seq);
        }
        let outstanding = u32::try_from(in_flight.len()).unwrap_or(u32::MAX);
        let arrival = Arrival { queue: record.queue, at_ns: r.issue_ns, dep: *last_done, outstanding };
        let result = r.result_lba.map_or(CmdResult::None, CmdResult::Lba);
        let completion = Completion { status: r.status, submit_ns: r.issue_ns, complete_ns: r.done_ns, result };
        let command = record.op.command(zonelab_device::Payload::None);
        let seq = recorder.record(&arrival, record.nsid, &command, &completion);
        in_flight.push(Reverse((r.done_ns, seq)));
    }
    recorder.flush();
}

/// The first command whose status differs from the recorded one, and how many do.
fn differences(records: &[Record], replayed: &[Replayed]) -> Option<String> {
    let differ: Vec<&Replayed> = replayed.iter().filter(|r| r.status != records[r.index].status).collect();
    let first = differ.first()?;
    let record = &records[first.index];
    Some(format!(
        "{} command(s) ended otherwise than recorded, the first SEQ {} ({} {}: recorded {}, replayed {}); \
         a zoned device takes writes only at each zone's write pointer: replay on a device in the recorded state",
        differ.len(),
        record.seq,
        record.op.name(),
        record.to_line().split(' ').skip(11).collect::<Vec<_>>().join(" "),
        record.status,
        first.status
    ))
}

/// fio's direction of a command, and its bytes; `None` for those fio has none for.
fn direction(op: &Op, lba_bytes: u64) -> Option<(usize, u64)> {
    match *op {
        Op::Read { nlb, .. } => Some((DDIR_READ, u64::from(nlb) * lba_bytes)),
        Op::Write { nlb, .. } | Op::Append { nlb, .. } | Op::WriteZeroes { nlb, .. } => {
            Some((DDIR_WRITE, u64::from(nlb) * lba_bytes))
        }
        Op::Zone { .. } => Some((DDIR_TRIM, 0)),
        _ => None,
    }
}

/// The replay as one fio job's result: latencies, depths, windows.
fn run_result(records: &[Record], replayed: &[Replayed], lba_bytes: u64, differ: Option<&String>) -> RunResult {
    let start_ns = replayed.iter().map(|r| r.issue_ns).min().unwrap_or(0);
    let end_ns = replayed.iter().map(|r| r.done_ns).max().unwrap_or(start_ns);
    let mut stats = JobStats::default();
    let mut in_flight = BinaryHeap::new();
    let mut by_issue: Vec<&Replayed> = replayed.iter().collect();
    by_issue.sort_by_key(|r| (r.issue_ns, r.index));
    for r in &by_issue {
        while in_flight.peek().is_some_and(|&Reverse(done)| done <= r.issue_ns) {
            in_flight.pop();
        }
        in_flight.push(Reverse(r.done_ns));
        stats.depth.add(in_flight.len() as u32);
    }
    let mut by_done = by_issue;
    by_done.sort_by_key(|r| (r.done_ns, r.index));
    let mut window_end = start_ns + WINDOW_NS;
    for r in by_done {
        let record = &records[r.index];
        while r.done_ns >= window_end {
            for what in Sampled::BOTH {
                for dir in stats.dirs.iter_mut() {
                    dir.sample_window(what, WINDOW_NS);
                }
            }
            window_end += WINDOW_NS;
        }
        let Some((ddir, bytes)) = direction(&record.op, lba_bytes) else { continue };
        let latency = r.done_ns - r.issue_ns;
        stats.dirs[ddir].add_io(bytes, None, latency, latency);
        stats.lat_buckets.add(latency);
        if matches!(record.op, Op::Zone { action: zonelab_device::ZoneAction::Reset, .. }) {
            stats.zone_resets += 1;
        }
    }
    let runtime = end_ns - start_ns;
    for dir in stats.dirs.iter_mut().filter(|d| d.total_ios > 0) {
        dir.runtime_ns = runtime;
    }
    (stats.job_runtime_ns, stats.elapsed_ns) = (runtime, runtime);
    stats.error = differ.map(|m| (5, m.clone()));
    let thread = ThreadResult { spec: 0, clone: 0, groupid: 0, stats, verify_log: Vec::new() };
    let namespaces = Vec::new();
    RunResult {
        threads: vec![thread],
        disk: Default::default(),
        disk_busy_ns: 0,
        end_ns,
        warnings: Vec::new(),
        namespaces,
    }
}
