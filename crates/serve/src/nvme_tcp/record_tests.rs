//! `serve --record` over NVMe/TCP: a host's commands recorded by the
//! target, then replayed in virtual time on a fresh device of the same
//! configuration: the same command stream, statuses and (on the same
//! device, in either loop) the same simulated times.

use super::command::{put_u16, put_u64, sc};
use super::target::{NamespaceBackend as Backend, Target};
use super::tests::{config, read, report, sqe, write, zone_mgmt, Host, NQN, ZONE_LBAS};
use crate::backend::Pace;
use crate::recording::replay::{replay, Clock, Loop, Replayed};
use crate::recording::{self, Op, Record, Recorder};
use std::net::TcpListener;
use std::sync::Arc;
use zonelab_device::{Device, Namespaces, Status};

/// A new path in the temporary directory, removed when dropped.
pub(super) struct TempPath(pub(super) std::path::PathBuf);

impl TempPath {
    pub(super) fn new(name: &str) -> Self {
        let path = std::env::temp_dir().join(format!("zonelab-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        TempPath(path)
    }
}

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Serves one namespace with `pace`, recording into `path`; runs `host` on
/// an admin queue's controller, then returns the recording.
fn record(path: &TempPath, pace: Pace, host: impl FnOnce(std::net::SocketAddr, u16, &mut Host)) -> Vec<Record> {
    let ns = Namespaces::new(config(true)).unwrap().into_namespaces().remove(0);
    let recorder = Arc::new(Recorder::create(&path.0, "test").unwrap());
    let target = Target::new(NQN.into(), vec![Backend::new(ns, pace).unwrap()]).with_recorder(recorder);
    let target = Arc::new(target);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = Arc::clone(&target);
    std::thread::spawn(move || super::accept_loop(&listener, &t));
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    host(addr, cntlid, &mut admin);
    drop(admin);
    target.flush_recording();
    recording::read(path.0.to_str().unwrap()).unwrap()
}

/// A mix of every kind of command on two queues, one failing.
fn traffic(addr: std::net::SocketAddr, cntlid: u16, admin: &mut Host) {
    assert_eq!(admin.admin(sqe(0x09, 0, &[(10, 0x07), (11, 1 | 1 << 16)]), 0).status, sc::SUCCESS, "two queues");
    let mut io = Host::io_queue(addr, cntlid, 1);
    let mut other = Host::io_queue(addr, cntlid, 2);
    assert_eq!(write(&mut io, 0x01, 0, 2, 0xAB, true).status, sc::SUCCESS);
    assert_eq!(write(&mut io, 0x01, 2, 8, 0xCD, false).status, sc::SUCCESS);
    assert_eq!(write(&mut other, 0x7D, ZONE_LBAS, 4, 1, false).result, ZONE_LBAS);
    assert_eq!(read(&mut io, 0, 10).status, sc::SUCCESS);
    assert_eq!(write(&mut other, 0x7D, ZONE_LBAS, 1, 2, true).result, ZONE_LBAS + 4);
    report(&mut io, 0, 8, 0, false);
    assert_eq!(write(&mut io, 0x01, 5, 1, 0, true).status, Status::ZoneInvalidWrite.code());
    assert_eq!(zone_mgmt(&mut other, 3 * ZONE_LBAS, 0x03, false), sc::SUCCESS, "open");
    assert_eq!(zone_mgmt(&mut other, ZONE_LBAS, 0x02, false), sc::SUCCESS, "finish");
    let mut range = vec![0u8; 32];
    put_u64(&mut range, 8, 1);
    put_u16(&mut range, 16, 1);
    let copy = io.command(sqe(0x19, 1, &[(10, 2 * ZONE_LBAS as u32), (12, 0)]), &range, true, 0);
    assert_eq!(copy.status, sc::SUCCESS);
    assert_eq!(io.admin(sqe(0x08, 1, &[(10, 10), (12, 3)]), 0).status, sc::SUCCESS, "write zeroes");
    assert_eq!(io.admin(sqe(0x00, 0xFFFF_FFFF, &[]), 0).status, sc::SUCCESS, "flush");
    assert_eq!(zone_mgmt(&mut io, 0, 0x04, true), sc::SUCCESS, "reset all");
}

fn replayed(records: &[Record], mode: Loop) -> Vec<Replayed> {
    let mut device = Device::new(config(false)).unwrap();
    replay(records, &mut device, mode, Clock::Device)
}

#[test]
fn a_recording_replays_the_same_command_stream_and_times() {
    let path = TempPath::new("record-same");
    let records = record(&path, Pace::Asap, traffic);
    let names: Vec<&str> = records.iter().map(|r| r.op.name()).collect();
    let expected = [
        "write",
        "write",
        "append",
        "read",
        "append",
        "report",
        "write",
        "zone",
        "zone",
        "copy",
        "write_zeroes",
        "flush",
        "zone",
    ];
    assert_eq!(names, expected);
    // Each host waited for every answer: a command depends on the queue's previous one.
    let q1: Vec<&Record> = records.iter().filter(|r| r.queue.qid == 1).collect();
    assert_eq!(q1[0].dep, None);
    assert!(q1.windows(2).all(|w| w[1].dep == Some(w[0].seq) && w[1].outstanding == 0));
    assert_eq!(records[2].result_lba, Some(ZONE_LBAS));
    assert_eq!(records[6].status, Status::ZoneInvalidWrite);
    for mode in [Loop::Open, Loop::Closed] {
        let replay = replayed(&records, mode);
        assert_eq!(replay.len(), records.len());
        for (r, (i, record)) in replay.iter().zip(records.iter().enumerate()) {
            assert_eq!(r.index, i, "{mode:?}: the recorded order");
            let live = (record.vt_ns, record.vc_ns, record.status, record.result_lba);
            assert_eq!((r.issue_ns, r.done_ns, r.status, r.result_lba), live, "{mode:?}: {}", record.to_line());
        }
    }
}

#[test]
fn a_closed_loop_on_a_slower_device_keeps_each_queue_waiting_for_its_answers() {
    let path = TempPath::new("record-slow");
    let records = record(&path, Pace::Asap, traffic);
    let mut slow = config(false);
    slow.controller.write_ns *= 50;
    let mut device = Device::new(slow).unwrap();
    let replay = replay(&records, &mut device, Loop::Closed, Clock::Device);
    // The queues interleave otherwise (queue 2's commands wait less), each queue keeps its order.
    let mut by_record = replay.clone();
    by_record.sort_by_key(|r| r.index);
    let statuses: Vec<Status> = by_record.iter().map(|r| r.status).collect();
    assert_eq!(statuses, records.iter().map(|r| r.status).collect::<Vec<_>>());
    for qid in [1, 2] {
        let order: Vec<usize> = replay.iter().map(|r| r.index).filter(|&i| records[i].queue.qid == qid).collect();
        assert!(order.is_sorted(), "queue {qid} in its recorded order");
    }
    assert_ne!(replay.iter().map(|r| r.index).collect::<Vec<_>>(), (0..records.len()).collect::<Vec<_>>());
    let done = |seq: u64| replay.iter().find(|r| records[r.index].seq == seq).unwrap().done_ns;
    for r in &replay {
        if let Some(dep) = records[r.index].dep {
            assert!(r.issue_ns >= done(dep), "a command goes after the answer it waited for");
        }
    }
    let live_end = records.last().unwrap().vc_ns;
    assert!(replay.last().unwrap().done_ns > live_end, "slower writes stretch the closed loop");
    let mut device = Device::new(config(false)).unwrap();
    let open = super::super::recording::replay::replay(&records, &mut device, Loop::Open, Clock::Wall);
    assert!(open.iter().all(|r| r.issue_ns >= records[r.index].at_ns), "open loop on the wall clock");
}

#[test]
fn realtime_recordings_replay_on_the_same_device_with_the_same_times() {
    let path = TempPath::new("record-realtime");
    let records = record(&path, Pace::Realtime, traffic);
    assert!(records.iter().all(|r| r.at_ns <= r.vt_ns + 1_000_000), "realtime: the model's clock is the wall's");
    let replay = replayed(&records, Loop::Closed);
    for r in &replay {
        let record = &records[r.index];
        assert_eq!((r.issue_ns, r.done_ns), (record.vt_ns, record.vc_ns), "{}", record.to_line());
    }
    assert!(matches!(records.last().unwrap().op, Op::Zone { all: true, .. }));
}
