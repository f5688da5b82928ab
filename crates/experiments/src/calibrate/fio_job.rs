//! A `FioRun` as a fio job file for zonelab's fio engine.
//!
//! Zones are laid out by purpose so that jobs never meet: the measured
//! job's writes from zone 0, the other job's writes from zone 100, one
//! pre-filled zone per job of several sequential readers from zone 180, a
//! pre-filled range for other reads at zone 200, pre-filled full zones for
//! resets from zone 210, and empty zones for finish jobs from zone 820.

use super::background::{IoOp, Mgmt};
use super::plan::{FioJob, FioRun, Host, NamespaceKind, Work};
use std::fmt::Write as _;

const MAIN_WRITES_ZONE: u64 = 0;
const OTHER_WRITES_ZONE: u64 = 100;
/// Each writing job gets this many zones: it never wraps (and resets) within a short window.
pub const ZONES_PER_WRITER: u64 = 4;
/// Zones random writes spread over when the row does not say: ZNS-Study's namespace had 50.
pub const RANDWRITE_ZONES: u64 = 50;
const READS_ZONE: u64 = 200;
const READ_ZONES: u64 = 4;
/// Several sequential readers each read their own zone from here, as
/// ZNS-Study's did (`concur_read_seq`: psync jobs with `size=3z`,
/// `offset_increment=3z`), so each is a stream of its own.
const STREAM_READS_ZONE: u64 = 180;
/// Zones from one stream reader's zone to the next's, as ZNS-Study's.
const STREAM_READS_STEP: u64 = 3;
/// Readers that get a zone of their own (zones 180-225, every third); more
/// share the read range.
const STREAM_READERS_MAX: u32 = 16;
/// Idle time between the stream readers' pre-fill and their reads: the
/// study read in a fio run of its own after filling the namespace, so no
/// program of the fill was still running.
const STREAM_READS_START_DELAY_MS: u64 = 20;
const RESETS_ZONE: u64 = 210;
/// Full zones the reset jobs may use in all (zones 210-809).
const RESET_ZONES_MAX: u64 = 600;
const FINISH_ZONE: u64 = 820;
const FINISH_ZONES: u64 = 80;
/// Assumed reset rate of an unthrottled reset job set, only to size its pre-fill;
/// a job that runs out ends early, and its rate is still over its own runtime.
const FREE_RESETS_PER_S: f64 = 80.0;

/// What a job file needs to know of the device and of the run's time.
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    pub zone_bytes: u64,
    pub zcap_bytes: u64,
    pub window_ms: u64,
    pub ramp_ms: u64,
    /// Zones each sequential writer gets.
    pub writer_zones: u64,
}

/// The job file: pre-fill sections, then `[main]` and `[other]` side by side.
/// `rates` are the jobs' operations per second (None: unthrottled).
pub fn job_file(run: &FioRun, rates: [Option<f64>; 2], frame: &Frame) -> String {
    if run.namespace == NamespaceKind::Conventional {
        return conventional_job_file(run, frame);
    }
    let mut text = header(run, true);
    let jobs: Vec<(&str, FioJob, Option<f64>)> =
        std::iter::once(("main", run.main, rates[0])).chain(run.other.map(|o| ("other", o, rates[1]))).collect();
    let reads = jobs.iter().any(|(_, j, _)| {
        matches!(j.work, Work::Io { op: IoOp::Read | IoOp::RandRead, .. }) && stream_readers(j).is_none()
    });
    if reads {
        prefill(&mut text, "prefill-reads", READS_ZONE, READ_ZONES, frame);
    }
    if let Some(n) = jobs.iter().find_map(|(_, j, _)| stream_readers(j)) {
        prefill_streams(&mut text, n, frame);
    }
    for (i, (_, job, _)) in jobs.iter().enumerate() {
        if let Work::Io { op, jobs: n, zones, overwrite: true, .. } = job.work {
            let first = if i == 0 { MAIN_WRITES_ZONE } else { OTHER_WRITES_ZONE };
            prefill(
                &mut text,
                &format!("prefill-overwrites-{i}"),
                first,
                writer_zones(op, zones, frame) * u64::from(n),
                frame,
            );
        }
    }
    let mut reset_zones_per_job = 0;
    if let Some((_, job, rate)) = jobs.iter().find(|(_, j, _)| matches!(j.work, Work::Mgmt { kind: Mgmt::Reset, .. })) {
        let Work::Mgmt { jobs: n, .. } = job.work else { unreachable!("matched above") };
        let n = u64::from(n.max(1));
        let per_s = rate.map_or(FREE_RESETS_PER_S, |r| r * 1.05);
        let wanted = (per_s * frame.window_ms as f64 / 1e3 / n as f64).ceil() as u64 + 1;
        reset_zones_per_job = wanted.min(RESET_ZONES_MAX / n);
        prefill(&mut text, "prefill-resets", RESETS_ZONE, reset_zones_per_job * n, frame);
    }
    // A finish's last operation in the window may take seconds beside I/O;
    // the drive measured minutes with the I/O running throughout, so the
    // I/O outlasts it here rather than stop and let it end alone.
    let finishing = matches!(run.main.work, Work::Mgmt { kind: Mgmt::Finish | Mgmt::SoftFinish { .. }, .. });
    let outlast = Frame { window_ms: frame.window_ms * 2, writer_zones: frame.writer_zones * 2, ..*frame };
    for (i, (name, job, rate)) in jobs.iter().enumerate() {
        let _ = writeln!(text, "\n[{name}]\n{}", if i == 0 { "stonewall" } else { "new_group" });
        let writes_zone = if i == 0 { MAIN_WRITES_ZONE } else { OTHER_WRITES_ZONE };
        let frame = if i > 0 && finishing && matches!(job.work, Work::Io { .. }) { &outlast } else { frame };
        section(&mut text, job, *rate, writes_zone, reset_zones_per_job, frame);
    }
    text
}

/// The `[global]` section: engine, scheduler, and fio's zone mode on a zoned namespace.
fn header(run: &FioRun, zoned: bool) -> String {
    let scheduler = match (run.stack.mq_deadline(), run.zinc.is_some()) {
        (true, true) => "zinc",
        (true, false) => "mq-deadline",
        (false, _) => "none",
    };
    // ZINC's settings are the host's, not the job file's: the rerun line carries them.
    let zinc = run.zinc.unwrap_or_default();
    let zinc_args: String = [
        zinc.epoch_ms.map(|ms| format!(" --zinc-epoch {ms}ms")),
        zinc.budget_units.map(|units| format!(" --zinc-budget {units}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let host_args =
        if run.host == Host::default() { String::new() } else { format!(" --host-machine {}", run.host.name()) };
    let (zonemode, target) = if zoned {
        ("zonemode=zbd\n", format!("--device DEVICE --lba-bytes {}", run.lba_bytes))
    } else {
        // NSID 2 of the drive laid out as seed 001's (`with_seed001_namespaces`).
        ("", "--device zn540-seed001 --nsid 2".to_string())
    };
    let mut text = format!(
        "; zonelab calibrate: {run:?}\n; rerun: zonelab run {target}{zinc_args}{host_args} FILE\n\
         [global]\nioengine={}\nscheduler={scheduler}\ndirect=1\n{zonemode}group_reporting\n",
        run.stack.ioengine()
    );
    // The io_uring runs of both sources polled the submission queue from a kernel thread.
    if run.stack.ioengine().starts_with("io_uring") {
        text.push_str("sqthread_poll=1\n");
    }
    text
}

/// A run on seed 001's conventional namespace, a plain block device: the
/// whole namespace written first where the job reads or overwrites it (the
/// study's overwrite runs "fully write the entire namespace" first), then
/// the measured job over all of it.
fn conventional_job_file(run: &FioRun, frame: &Frame) -> String {
    let mut text = header(run, false);
    let Work::Io { op, bs, qd, jobs, overwrite, .. } = run.main.work else {
        unreachable!("plan: conventional-namespace rows are I/O rows")
    };
    let read = matches!(op, IoOp::Read | IoOp::RandRead);
    if read || overwrite {
        text.push_str("\n[prefill]\nrw=write\nbs=128k\niodepth=8\nsize=100%\n");
    }
    let rw = match op {
        IoOp::Write | IoOp::Append => "write",
        IoOp::RandWrite => "randwrite",
        IoOp::Read => "read",
        IoOp::RandRead => "randread",
    };
    let _ = writeln!(
        text,
        "\n[main]\nstonewall\nrw={rw}\nbs={bs}\niodepth={qd}\nnumjobs={jobs}\nsize=100%\nruntime={}ms\nramp_time={}ms\ntime_based",
        frame.window_ms, frame.ramp_ms
    );
    text
}

/// Jobs of `job` that each read a zone of their own: sequential readers, when
/// there are several and they fit.
fn stream_readers(job: &FioJob) -> Option<u32> {
    match job.work {
        Work::Io { op: IoOp::Read, jobs, .. } if (2..=STREAM_READERS_MAX).contains(&jobs) => Some(jobs),
        _ => None,
    }
}

/// Zones each writing job writes.
fn writer_zones(op: IoOp, zones: u32, frame: &Frame) -> u64 {
    match (op, zones) {
        (IoOp::RandWrite, 0) => RANDWRITE_ZONES,
        (IoOp::RandWrite, z) => u64::from(z),
        _ => frame.writer_zones,
    }
}

/// One job per stream reader, each filling its reader's zone (so the zones
/// take their first writes, and their start dies, in the readers' order).
fn prefill_streams(text: &mut String, readers: u32, frame: &Frame) {
    let _ = writeln!(
        text,
        "\n[prefill-streams]\nrw=write\nbs=128k\niodepth=8\nnumjobs={readers}\noffset={STREAM_READS_ZONE}z\nsize=1z\n\
         offset_increment={STREAM_READS_STEP}z\nio_size={}",
        frame.zcap_bytes
    );
}

/// 128 KiB writes at QD 8 that fill `zones` zones to capacity.
fn prefill(text: &mut String, name: &str, first: u64, zones: u64, frame: &Frame) {
    let _ = writeln!(
        text,
        "\n[{name}]\nrw=write\nbs=128k\niodepth=8\noffset={first}z\nsize={zones}z\nio_size={}",
        zones * frame.zcap_bytes
    );
}

fn section(text: &mut String, job: &FioJob, rate: Option<f64>, writes_zone: u64, reset_zones: u64, frame: &Frame) {
    let window = frame.window_ms;
    match job.work {
        Work::Io { op, bs, qd, jobs, zones, .. } => {
            let (rw, read) = match op {
                IoOp::Write | IoOp::Append => ("write", false),
                IoOp::RandWrite => ("randwrite", false),
                IoOp::Read => ("read", true),
                IoOp::RandRead => ("randread", true),
            };
            let _ = writeln!(text, "rw={rw}\nbs={bs}\niodepth={qd}\nnumjobs={jobs}");
            if op == IoOp::Append {
                text.push_str("zone_append=1\n");
            }
            if stream_readers(job).is_some() {
                let _ = writeln!(
                    text,
                    "offset={STREAM_READS_ZONE}z\nsize=1z\noffset_increment={STREAM_READS_STEP}z\n\
                     startdelay={STREAM_READS_START_DELAY_MS}ms"
                );
            } else if read {
                let _ = writeln!(text, "offset={READS_ZONE}z\nsize={READ_ZONES}z");
            } else {
                let per_job = writer_zones(op, zones, frame);
                let _ = writeln!(text, "offset={writes_zone}z\nsize={per_job}z\noffset_increment={per_job}z");
            }
            if let Some(ops) = rate {
                let bytes = (ops * bs as f64).round().max(1.0) as u64;
                let _ = writeln!(text, "rate={}", if read { format!("{bytes}") } else { format!(",{bytes}") });
            }
            let _ = writeln!(text, "runtime={window}ms\nramp_time={}ms\ntime_based", frame.ramp_ms);
        }
        Work::Mgmt { kind: Mgmt::Reset, jobs } => {
            let _ = writeln!(
                text,
                "rw=trim\nbs={}\nnumjobs={jobs}\noffset={RESETS_ZONE}z\nsize={reset_zones}z\noffset_increment={reset_zones}z\nnumber_ios={reset_zones}\nruntime={window}ms",
                frame.zone_bytes
            );
            if let Some(ops) = rate {
                let _ = writeln!(text, "rate=,,{}", (ops * frame.zone_bytes as f64).round().max(1.0) as u64);
            }
        }
        Work::Mgmt { kind, jobs } => {
            let _ = writeln!(
                text,
                "rw=write\nbs=4k\nnumjobs={jobs}\noffset={FINISH_ZONE}z\nsize={FINISH_ZONES}z\nruntime={window}ms\ntime_based"
            );
            match kind {
                Mgmt::SoftFinish { chunk_bytes, pause_ns } => {
                    let _ = writeln!(text, "softfinish=1\nsoftfinish_chunk={chunk_bytes}");
                    if pause_ns > 0 {
                        // fio's time options take µs at the finest.
                        let _ = writeln!(text, "softfinish_pause={}us", pause_ns.div_ceil(1000));
                    }
                }
                _ => text.push_str("finish=1\n"),
            }
            if let Some(ops) = rate {
                // One operation charges its opening 4 KiB write.
                let _ = writeln!(text, "rate=,{}", (ops * 4096.0).round().max(1.0) as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::plan::Run;
    use crate::calibrate::{plan_rows, read_file};
    use zonelab_workload::fio::parse::parse_job_file;

    /// The zn540's zones, with a window of `window_ms` after `ramp_ms`.
    fn zn540_frame(window_ms: u64, ramp_ms: u64) -> Frame {
        Frame { zone_bytes: 2 << 30, zcap_bytes: 1077 << 20, window_ms, ramp_ms, writer_zones: ZONES_PER_WRITER }
    }

    /// Every fio run of the shipped file, throttled or not, is a job file the fio engine reads.
    #[test]
    fn every_shipped_fio_run_is_a_valid_job_file() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/measurements/zn540.csv");
        let (runs, _) = plan_rows(&read_file(&path).unwrap());
        let frame = zn540_frame(1000, 200);
        let mut checked = 0;
        for run in &runs {
            let Run::Fio(f) = run else { continue };
            for rates in [[None, None], [Some(0.5), Some(2.0)]] {
                let text = job_file(f, rates, &frame);
                let set = parse_job_file("run.fio", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
                assert!(set.jobs.iter().any(|j| j.name == "main"), "{text}");
                // Both sources' io_uring runs polled their rings from a kernel thread.
                let polled = set.jobs.iter().all(|j| j.sqthread_poll == j.ioengine.is_io_uring());
                assert!(polled, "{text}");
                checked += 1;
            }
        }
        assert!(checked > 1000, "{checked}");
    }

    /// Seed 001's conventional-namespace rows run on a plain block device:
    /// no zone mode, the namespace written first where they read or
    /// overwrite, and a seed (the run's `Debug`) that says so while zoned
    /// runs keep theirs.
    #[test]
    fn conventional_namespace_runs_are_block_device_jobs() {
        use crate::calibrate::plan::{FioJob, NamespaceKind, Pace, Work};
        use crate::calibrate::rows::Stack;
        let run = |op, overwrite| FioRun {
            lba_bytes: 512,
            stack: Stack::LibaioNone,
            zinc: None,
            main: FioJob { work: Work::Io { op, bs: 4096, qd: 4, jobs: 1, zones: 0, overwrite }, pace: Pace::Free },
            other: None,
            host: Host::ZnsStudy,
            namespace: NamespaceKind::Conventional,
        };
        let frame = zn540_frame(1000, 200);
        let prefilled = |op, overwrite| {
            let text = job_file(&run(op, overwrite), [None, None], &frame);
            assert!(!text.contains("zonemode") && text.contains("[main]\nstonewall\nrw="), "{text}");
            assert!(text.contains("; rerun: zonelab run --device zn540-seed001 --nsid 2 --host-machine zns-study FILE"));
            parse_job_file("run.fio", &text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            text.contains("[prefill]\nrw=write\nbs=128k\niodepth=8\nsize=100%\n")
        };
        assert!(prefilled(IoOp::Read, false) && prefilled(IoOp::RandRead, false));
        assert!(prefilled(IoOp::Write, true) && prefilled(IoOp::RandWrite, true));
        assert!(!prefilled(IoOp::Write, false) && !prefilled(IoOp::RandWrite, false));
        let zoned = FioRun { namespace: NamespaceKind::Zoned, ..run(IoOp::Write, false) };
        assert!(!format!("{zoned:?}").contains("namespace"), "{zoned:?}");
        assert!(format!("{:?}", run(IoOp::Write, false)).ends_with(", namespace: Conventional }"));
    }

    #[test]
    fn a_throttled_reset_job_is_a_trim_rate_in_zone_bytes() {
        use crate::calibrate::background::Mgmt;
        use crate::calibrate::plan::{FioJob, Pace, Work};
        use crate::calibrate::rows::Stack;
        let run = FioRun {
            lba_bytes: 4096,
            stack: Stack::IoUringCmd,
            zinc: None,
            main: FioJob { work: Work::Mgmt { kind: Mgmt::Reset, jobs: 1 }, pace: Pace::MilliPerS(2000) },
            other: None,
            host: Host::Seed003,
            namespace: Default::default(),
        };
        let frame = Frame {
            zone_bytes: 1 << 20,
            zcap_bytes: 1 << 19,
            window_ms: 4000,
            ramp_ms: 0,
            writer_zones: ZONES_PER_WRITER,
        };
        let text = job_file(&run, [Some(2.0), None], &frame);
        assert!(text.contains("rate=,,2097152\n"), "{text}");
        // 2/s for 4 s, 5% headroom, one spare: 10 zones, pre-filled to capacity.
        assert!(text.contains("number_ios=10\n") && text.contains("io_size=5242880\n"), "{text}");
    }

    #[test]
    fn io_beside_a_measured_finish_job_outlasts_its_window() {
        use crate::calibrate::background::{IoOp, Mgmt};
        use crate::calibrate::plan::{FioJob, Pace, Work};
        use crate::calibrate::rows::Stack;
        let writers = FioJob {
            work: Work::Io { op: IoOp::Write, bs: 8192, qd: 1, jobs: 3, zones: 0, overwrite: false },
            pace: Pace::Free,
        };
        let finish = FioJob { work: Work::Mgmt { kind: Mgmt::Finish, jobs: 1 }, pace: Pace::Free };
        let frame = zn540_frame(6000, 0);
        let run = |main, other| FioRun {
            lba_bytes: 4096,
            stack: Stack::IoUringCmd,
            zinc: None,
            main,
            other: Some(other),
            host: Host::Seed003,
            namespace: Default::default(),
        };
        let section = |text: &str, name: &str| text[text.find(&format!("[{name}]")).unwrap()..].to_string();
        // The finish measured: the writers run on for a second window, in twice the zones.
        let text = job_file(&run(finish, writers), [None, None], &frame);
        let other = section(&text, "other");
        assert!(other.contains("runtime=12000ms") && other.contains("size=8z"), "{text}");
        assert!(section(&text, "main").contains("runtime=6000ms"), "{text}");
        // The writers measured: both jobs share the window.
        let text = job_file(&run(writers, finish), [None, None], &frame);
        assert!(section(&text, "other").contains("runtime=6000ms"), "{text}");
        assert!(section(&text, "main").contains("size=4z"), "{text}");
    }

    #[test]
    fn several_sequential_readers_each_read_a_zone_of_their_own() {
        use crate::calibrate::background::IoOp;
        use crate::calibrate::plan::{FioJob, Pace, Work};
        use crate::calibrate::rows::Stack;
        let frame = zn540_frame(1000, 200);
        let readers = |op, jobs| FioRun {
            lba_bytes: 512,
            stack: Stack::LibaioNone,
            zinc: None,
            main: FioJob { work: Work::Io { op, bs: 4096, qd: 1, jobs, zones: 0, overwrite: false }, pace: Pace::Free },
            other: None,
            host: Host::ZnsStudy,
            namespace: Default::default(),
        };
        // ZNS-Study's N sequential readers were three zones apart: N streams, N pre-filled zones.
        let text = job_file(&readers(IoOp::Read, 5), [None, None], &frame);
        assert!(text.contains("offset=180z\nsize=1z\noffset_increment=3z\nstartdelay=20ms\n"), "{text}");
        assert!(
            text.contains("[prefill-streams]")
                && text.contains("numjobs=5\noffset=180z\nsize=1z\noffset_increment=3z\n")
        );
        assert!(text.contains(&format!("io_size={}\n", frame.zcap_bytes)) && !text.contains("prefill-reads"), "{text}");
        // One reader, or random readers, keep the shared read range.
        for (op, jobs) in [(IoOp::Read, 1), (IoOp::RandRead, 5)] {
            let text = job_file(&readers(op, jobs), [None, None], &frame);
            assert!(text.contains("offset=200z\nsize=4z\n") && !text.contains("prefill-streams"), "{text}");
        }
    }
}
