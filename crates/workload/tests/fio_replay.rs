//! `read_iolog`: fio iologs replayed in virtual time, open loop (the log's
//! delays and waits) and closed loop (`replay_no_stall=1`), on a small
//! zn540-like device (16 zones of 64 MiB with 48 MiB capacity).

use std::path::PathBuf;
use zonelab_device::{preset, Device, DeviceOptions};
use zonelab_sim::{Nanos, MS};
use zonelab_workload::fio::job::{JobError, DDIR_READ, DDIR_TRIM, DDIR_WRITE};
use zonelab_workload::fio::parse::parse_job_file;
use zonelab_workload::fio::run::{Engine, RunOptions, RunResult};

const KIB: u64 = 1024;
const ZONE_BYTES: u64 = 64 << 20;

fn device() -> Device {
    let options = DeviceOptions {
        zones: Some(16),
        zone_size_bytes: Some(ZONE_BYTES),
        zone_capacity_bytes: Some(48 << 20),
        ..DeviceOptions::default()
    };
    Device::new(options.apply(preset("zn540").unwrap()).unwrap()).unwrap()
}

/// Writes `text` as a log in a scratch directory of this test binary; returns its path.
fn log_file(name: &str, text: &str) -> String {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fio_replay");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

fn engine_run(device: &mut Device, job: &str) -> Result<RunResult, JobError> {
    let set = parse_job_file("t.fio", job).unwrap_or_else(|e| panic!("{e}"));
    let engine = Engine::new(device, &set, &RunOptions::default())?;
    Ok(engine.run(&mut |_| {}).unwrap())
}

fn replay(log: &str, options: &str) -> RunResult {
    engine_run(&mut device(), &format!("[r]\nread_iolog={log}\n{options}")).unwrap_or_else(|e| panic!("{e}"))
}

/// Version 2: 16 sequential 64 KiB writes, then 16 reads of the same blocks.
fn write_then_read_v2() -> String {
    sequential_v2(&["write", "read"])
}

/// Version 2: a pass of 16 sequential 64 KiB I/Os per action of `ddirs`.
fn sequential_v2(ddirs: &[&str]) -> String {
    let mut text = String::from("fio version 2 iolog\ndev add\ndev open\n");
    for ddir in ddirs {
        for block in 0..16 {
            text.push_str(&format!("dev {ddir} {} 65536\n", block * 65536));
        }
    }
    text + "dev close\n"
}

/// The same pattern in version 3, an I/O every `gap_us`.
fn write_then_read_v3(gap_us: u64) -> String {
    let mut text = String::from("fio version 3 iolog\n0 dev add\n0 dev open\n");
    let mut time_us = 0;
    for ddir in ["write", "read"] {
        for block in 0..16 {
            time_us += gap_us;
            text.push_str(&format!("{time_us} dev {ddir} {} 65536\n", block * 65536));
        }
    }
    text
}

fn ios_and_bytes(result: &RunResult, ddir: usize) -> (u64, u64) {
    let dir = &result.threads[0].stats.dirs[ddir];
    (dir.total_ios, dir.io_bytes)
}

#[test]
fn closed_and_open_loop_replay_the_same_ios() {
    let v2 = log_file("v2.log", &write_then_read_v2());
    let v3 = log_file("v3.log", &write_then_read_v3(1000));
    let closed = replay(&v3, "replay_no_stall=1\nioengine=libaio\niodepth=16\n");
    let open = replay(&v3, "ioengine=libaio\niodepth=16\n");
    let plain = replay(&v2, "ioengine=psync\n");
    for result in [&closed, &open, &plain] {
        assert!(result.threads[0].stats.error.is_none(), "{:?}", result.threads[0].stats.error);
        assert_eq!(ios_and_bytes(result, DDIR_WRITE), (16, 16 * 64 * KIB));
        assert_eq!(ios_and_bytes(result, DDIR_READ), (16, 16 * 64 * KIB));
    }
    // Open loop keeps the log's 32 ms; closed loop runs as fast as the device.
    let elapsed = |r: &RunResult| r.threads[0].stats.elapsed_ns;
    assert!(elapsed(&open) >= 31 * MS, "{}", elapsed(&open));
    assert!(elapsed(&closed) < 5 * MS, "{}", elapsed(&closed));
    // Spaced out, each write has the device alone; queued 16 deep, they wait
    // for each other. (The reads are not compared: in the closed loop they
    // come right after the writes, some while their data is still in the
    // write buffer; spaced out they read it from flash.)
    let mean_clat = |r: &RunResult, ddir: usize| r.threads[0].stats.dirs[ddir].clat.mean();
    assert!(mean_clat(&closed, DDIR_WRITE) > mean_clat(&open, DDIR_WRITE));
}

#[test]
fn replay_time_scale_and_waits_pace_the_log() {
    let v3 = log_file("scaled.log", &write_then_read_v3(1000));
    let elapsed = |r: RunResult| r.threads[0].stats.elapsed_ns;
    let half = elapsed(replay(&v3, "replay_time_scale=200\n"));
    assert!((15 * MS..17 * MS).contains(&half), "{half}");
    // A version 2 wait holds the job until its ms from the start.
    let waits = log_file("wait.log", "fio version 2 iolog\ndev write 0 4096\ndev wait 20 0\ndev read 0 4096\n");
    let waited: Nanos = elapsed(replay(&waits, ""));
    assert!(waited >= 20 * MS, "{waited}");
    assert!(elapsed(replay(&waits, "replay_no_stall=1\n")) < MS);
}

#[test]
fn replay_skip_drops_directions() {
    let v2 = log_file("skip.log", &write_then_read_v2());
    let reads_only = replay(&v2, "replay_skip=write\n");
    assert_eq!(ios_and_bytes(&reads_only, DDIR_WRITE), (0, 0));
    assert_eq!(ios_and_bytes(&reads_only, DDIR_READ), (16, 16 * 64 * KIB));
}

#[test]
fn a_write_off_the_write_pointer_fails_naming_its_line() {
    let mut twice = write_then_read_v2();
    twice.push_str("dev write 0 65536\ndev write 65536 65536\n");
    let result = replay(&log_file("twice.log", &twice), "");
    let (errno, message) = result.threads[0].stats.error.clone().expect("the second pass fails");
    assert_eq!(errno, 5);
    assert!(message.contains("zone_invalid_write") && message.ends_with("(iolog line 37)"), "{message}");
    assert_eq!(result.warnings.len(), 1, "{:?}", result.warnings);
    let warning = &result.warnings[0];
    assert!(
        warning.contains("1 I/O(s) failed, the first at line 37") && warning.contains("1 of its 37 entries"),
        "{warning}"
    );
}

#[test]
fn a_trim_resets_the_zone_so_a_second_pass_can_write() {
    let mut twice = write_then_read_v2();
    twice.push_str(&format!("dev trim 0 {ZONE_BYTES}\ndev write 0 65536\n"));
    let result = replay(&log_file("reset.log", &twice), "");
    assert!(result.threads[0].stats.error.is_none(), "{:?}", result.threads[0].stats.error);
    assert_eq!(ios_and_bytes(&result, DDIR_TRIM).0, 1);
    assert_eq!(ios_and_bytes(&result, DDIR_WRITE).0, 17);
}

#[test]
fn entries_the_device_cannot_take_are_refused_before_the_run() {
    let cases = [
        ("dev read 1000 4096", "offsets and lengths must be multiples of the 4096 B LBA"),
        ("dev write 1073737728 8192", "ends past the device's 1073741824 B"),
        ("dev trim 0 4096", "a trim replays as a zone reset, so it must cover exactly one zone"),
    ];
    for (index, (line, expected)) in cases.into_iter().enumerate() {
        let log = log_file(&format!("bad{index}.log"), &format!("fio version 2 iolog\ndev add\n{line}\n"));
        let Err(e) = engine_run(&mut device(), &format!("[r]\nread_iolog={log}\n")) else { panic!("{line}") };
        assert_eq!((e.location.as_str(), e.option.as_deref()), ("t.fio:2", Some("read_iolog")));
        assert!(e.message.starts_with(&format!("{log}:3: ")) && e.message.contains(expected), "{e}");
    }
    let e = engine_run(&mut device(), "[r]\nread_iolog=/surely/missing.log\n").err().unwrap();
    assert!(e.to_string().starts_with("t.fio:2: option 'read_iolog': /surely/missing.log"), "{e}");
}

#[test]
fn a_read_waits_for_the_write_in_flight_it_overlaps() {
    let log = log_file("raw.log", "fio version 2 iolog\ndev write 0 65536\ndev read 0 65536\ndev read 1048576 65536\n");
    let result = replay(&log, "replay_no_stall=1\nioengine=libaio\niodepth=16\n");
    let stats = &result.threads[0].stats;
    let (write_ns, read_ns) = (stats.dirs[DDIR_WRITE].lat.mean(), stats.dirs[DDIR_READ].lat.mean());
    // The read of the written block starts once the write completed; the other read does not wait.
    assert!(stats.elapsed_ns as f64 >= write_ns + read_ns * 0.9, "{} {write_ns} {read_ns}", stats.elapsed_ns);
    assert_eq!(stats.dirs[DDIR_READ].total_ios, 2);
}

/// A blktrace record (`struct blk_io_trace`, version 7) in either byte order, without payload.
fn blk_record(little: bool, time_ns: u64, sector: u64, bytes: u32, action: u32) -> Vec<u8> {
    let u32b = |v: u32| if little { v.to_le_bytes() } else { v.to_be_bytes() };
    let u64b = |v: u64| if little { v.to_le_bytes() } else { v.to_be_bytes() };
    let mut out = Vec::new();
    out.extend(u32b(0x6561_7407));
    out.extend(u32b(0));
    out.extend(u64b(time_ns));
    out.extend(u64b(sector));
    out.extend(u32b(bytes));
    out.extend(u32b(action));
    out.extend(u32b(42)); // pid
    out.extend(u32b(259 << 20 | 1)); // device
    out.extend(u32b(0)); // cpu
    out.extend(u32b(0)); // error, pdu_len
    out
}

#[test]
fn blktrace_captures_replay_their_queue_events() {
    const QUEUE: u32 = 1 | 1 << 20;
    const COMPLETE: u32 = 8 | 1 << 23;
    const WRITE: u32 = 1 << 17;
    for little in [true, false] {
        let mut data = Vec::new();
        for block in 0..8u64 {
            let (time_ns, write) = (block * MS, if block < 4 { WRITE } else { 1 << 16 });
            let sector = (block % 4) * 128;
            data.extend(blk_record(little, time_ns, sector, 65536, QUEUE | write));
            data.extend(blk_record(little, time_ns + 50_000, sector, 65536, COMPLETE | write));
        }
        let path = log_file(&format!("capture-{little}.blktrace.0"), "");
        std::fs::write(&path, &data).unwrap();
        let result = replay(&path, "ioengine=libaio\n");
        assert!(result.threads[0].stats.error.is_none(), "{:?}", result.threads[0].stats.error);
        assert_eq!(ios_and_bytes(&result, DDIR_WRITE), (4, 4 * 64 * KIB));
        assert_eq!(ios_and_bytes(&result, DDIR_READ), (4, 4 * 64 * KIB));
        assert!(result.threads[0].stats.elapsed_ns >= 7 * MS);
    }
}

#[test]
fn a_zbd_job_after_a_replay_writes_after_it() {
    let log = log_file("before-zbd.log", &write_then_read_v2());
    let job = format!(
        "[r]\nread_iolog={log}\n[w]\nstonewall\nrw=write\nzonemode=zbd\ndirect=1\nsize=1z\nbs=64k\nio_size=1m\n"
    );
    let result = engine_run(&mut device(), &job).unwrap_or_else(|e| panic!("{e}"));
    for thread in &result.threads {
        assert!(thread.stats.error.is_none(), "{:?}", thread.stats.error);
    }
    assert_eq!(ios_and_bytes(&result, DDIR_WRITE), (16, 16 * 64 * KIB));
    assert_eq!(result.threads[1].stats.dirs[DDIR_WRITE].total_ios, 16);
}

/// A closed-loop replay of the I/O a job generates is that job: same
/// requests, same latencies, same run time.
#[test]
fn a_closed_loop_replay_of_a_jobs_ios_matches_the_job() {
    let live = engine_run(&mut device(), "[w]\nrw=write\nbs=64k\nsize=1m\nioengine=psync\n").unwrap();
    let log = log_file("live.log", &sequential_v2(&["write"]));
    let replayed = replay(&log, "ioengine=psync\nreplay_no_stall=1\n");
    let (a, b) = (&live.threads[0].stats, &replayed.threads[0].stats);
    let clat = |s: &zonelab_workload::fio::stats::JobStats| {
        let c = &s.dirs[DDIR_WRITE].clat;
        (s.dirs[DDIR_WRITE].total_ios, c.min(), c.max_ns, c.mean())
    };
    assert_eq!(clat(a), clat(b));
    assert_eq!(a.elapsed_ns, b.elapsed_ns);
}

#[test]
fn replay_options_are_checked_where_they_are_set() {
    let err = |job: &str| parse_job_file("t.fio", job).unwrap_err().to_string();
    assert_eq!(
        err("[r]\nreplay_time_scale=0\n"),
        "t.fio:2: option 'replay_time_scale': 0 is out of range 1..=4294967295"
    );
    assert!(err("[r]\nreplay_skip=read,flush\n").contains("'flush' is not one of read, write, trim, sync"));
    assert!(err("[r]\nreplay_no_stall=2\n").contains("not a boolean"));
    let e = engine_run(&mut device(), "[r]\nrw=write\nreplay_skip=write\n").err().unwrap();
    assert_eq!(e.to_string(), "t.fio:3: option 'replay_skip': has no effect without read_iolog (the log to replay)");
}

/// A fresh path in this test binary's scratch directory (nothing there).
fn fresh_path(name: &str) -> String {
    let path = log_file(name, "");
    std::fs::remove_file(&path).unwrap();
    path
}

#[test]
fn write_iolog_writes_fios_version_3_lines_and_replays_as_the_job() {
    let path = fresh_path("written.log");
    let job = format!(
        "[w]\nrw=write\nbs=64k\nsize=64m\nio_size=256k\nzonemode=zbd\ndirect=1\nend_fsync=1\nfilename=/dev/nvme0n2\n\
         write_iolog={path}\n"
    );
    let live = engine_run(&mut device(), &job).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[..3], ["fio version 3 iolog", "0 /dev/nvme0n2 add", "0 /dev/nvme0n2 open"]);
    let ios: Vec<Vec<&str>> = lines[3..7].iter().map(|l| l.split(' ').collect()).collect();
    for (i, io) in ios.iter().enumerate() {
        assert_eq!(io[1..], ["/dev/nvme0n2", "write", &(i as u64 * 65536).to_string(), "65536"]);
    }
    let times: Vec<u64> = ios.iter().map(|io| io[0].parse().unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "QD 1: each issued after the last completed: {times:?}");
    assert!(lines[7].ends_with(" /dev/nvme0n2 sync 0 0") && lines[8].ends_with(" /dev/nvme0n2 close"));
    assert_eq!(lines.len(), 9);
    // Replayed closed loop at the job's queue depth, the log is the job again.
    let replayed = replay(&path, "replay_no_stall=1\nend_fsync=1");
    assert_eq!(ios_and_bytes(&replayed, DDIR_WRITE), ios_and_bytes(&live, DDIR_WRITE));
    let lat = |r: &RunResult| r.threads[0].stats.dirs[DDIR_WRITE].clat.mean();
    assert_eq!(lat(&replayed), lat(&live));
    // The file exists now: a second run refuses it, as it refuses any existing file.
    let err = engine_run(&mut device(), &job).err().unwrap();
    assert_eq!(err.option.as_deref(), Some("write_iolog"));
    assert!(err.message.contains("exists"), "{err}");
}

#[test]
fn write_iolog_is_one_file_per_thread_and_not_beside_read_iolog() {
    let path = fresh_path("shared.log");
    let job = format!("[a]\nrw=read\nsize=64m\nnumjobs=2\nwrite_iolog={path}\n");
    let err = engine_run(&mut device(), &job).err().unwrap();
    assert!(err.message.contains("several threads"), "{err}");
    let job = format!("[a]\nrw=read\nsize=64m\nwrite_iolog={path}\n[b]\nrw=read\nsize=64m\nwrite_iolog={path}\n");
    assert!(engine_run(&mut device(), &job).err().unwrap().message.contains("several threads"));
    let log = log_file("replayed.log", &write_then_read_v2());
    let job = format!("[a]\nread_iolog={log}\nwrite_iolog={path}\n");
    let err = engine_run(&mut device(), &job).err().unwrap();
    assert!(err.message.contains("replays one"), "{err}");
    assert!(!std::path::Path::new(&path).exists(), "nothing created for a refused run");
    let job = format!("[r]\nrw=randread\nbs=4k\nnumber_ios=2\nwrite_iolog={path}\n");
    engine_run(&mut device(), &job).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.starts_with("fio version 3 iolog\n0 r.0.0 add\n0 r.0.0 open\n0 r.0.0 read "),
        "fio's default name: {text}"
    );
}
