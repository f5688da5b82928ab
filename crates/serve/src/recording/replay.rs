//! A recording sent again to a device in virtual time: the same commands,
//! in the same order on each queue, open loop (each at its recorded time)
//! or closed loop (each once the command it depended on has completed in
//! the replay, after the recorded think time). The device runs each command
//! to its end (`ZonedDevice::submit`), as the servers do.

use super::{Record, TIME_NS_LAST};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use zonelab_device::{CmdResult, Mode, Payload, Status, ZonedDevice};
use zonelab_sim::Nanos;

/// How a replay times its commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loop {
    /// Each command at its recorded time, whatever the device does.
    Open,
    /// Each command after the one it depended on completed, plus think time.
    Closed,
}

/// Which recorded time an open-loop replay issues at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The model's submission time (VT_NS): on the same device, the replay
    /// reproduces the live run's timing exactly.
    Device,
    /// The arrival on the server's wall clock (AT_NS).
    Wall,
}

/// One replayed command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// Its record, an index into the recording.
    pub index: usize,
    /// When the replay submitted it.
    pub issue_ns: Nanos,
    /// When it completed.
    pub done_ns: Nanos,
    /// The device's status.
    pub status: Status,
    /// The LBA an append wrote.
    pub result_lba: Option<u64>,
}

/// Replays `records` on `device`; the commands in the order they were
/// submitted. Times never go back: a command due before the previous
/// submission goes at that submission's time.
pub fn replay<D: ZonedDevice + ?Sized>(records: &[Record], device: &mut D, mode: Loop, clock: Clock) -> Vec<Replayed> {
    let payload = if device.config().mode == Mode::Data { Payload::Pattern(0) } else { Payload::None };
    let mut out: Vec<Replayed> = Vec::with_capacity(records.len());
    let mut last_ns: Nanos = 0;
    let mut run = |index: usize, due_ns: Nanos, device: &mut D| {
        let record = &records[index];
        // Think times add up: a replay that would pass the horizon stays at it.
        let issue_ns = due_ns.max(last_ns).min(TIME_NS_LAST);
        last_ns = issue_ns;
        let completion = device.submit_in(record.nsid, issue_ns, &record.op.command(payload), None);
        let result_lba = match completion.result {
            CmdResult::Lba(lba) => Some(lba),
            _ => None,
        };
        let replayed =
            Replayed { index, issue_ns, done_ns: completion.complete_ns, status: completion.status, result_lba };
        out.push(replayed);
        replayed
    };
    match mode {
        Loop::Open => {
            let at = |r: &Record| if clock == Clock::Wall { r.at_ns } else { r.vt_ns };
            let mut order: Vec<usize> = (0..records.len()).collect();
            // Stable: equal times keep the recorded order.
            order.sort_by_key(|&i| at(&records[i]));
            for index in order {
                run(index, at(&records[index]), device);
            }
        }
        Loop::Closed => closed_loop(records, device, &mut run),
    }
    out
}

/// Closed loop: each queue is a chain; the next command of a queue is due
/// once the one before it was issued (known at once: the device runs each
/// command to its end). Bound: each record is pushed once.
fn closed_loop<D: ZonedDevice + ?Sized>(
    records: &[Record],
    device: &mut D,
    run: &mut impl FnMut(usize, Nanos, &mut D) -> Replayed,
) {
    let mut queues: BTreeMap<_, Vec<usize>> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        queues.entry(r.queue).or_default().push(i);
    }
    let chains: Vec<Vec<usize>> = queues.into_values().collect();
    let mut done_of: Vec<Option<Replayed>> = vec![None; records.len()];
    let mut heap = BinaryHeap::new();
    for (c, chain) in chains.iter().enumerate() {
        heap.push(Reverse((records[chain[0]].vt_ns, chain[0], c, 0usize)));
    }
    while let Some(Reverse((due_ns, index, chain, position))) = heap.pop() {
        let replayed = run(index, due_ns, device);
        done_of[index] = Some(replayed);
        let Some(&next) = chains[chain].get(position + 1) else { continue };
        let due = due_after(&records[index], &replayed, &records[next], records, &done_of);
        heap.push(Reverse((due.max(replayed.issue_ns), next, chain, position + 1)));
    }
}

/// When `next` is due after `prev` (the command before it on its queue)
/// was issued: after its dependency completed plus the recorded think time
/// when it waited for a completion `prev` did not; else the recorded gap
/// after `prev` (a host sending several commands without waiting).
fn due_after(
    prev: &Record,
    prev_replayed: &Replayed,
    next: &Record,
    records: &[Record],
    done_of: &[Option<Replayed>],
) -> Nanos {
    let waited = next.dep.filter(|&d| prev.dep != Some(d));
    if let Some(dep) = waited {
        // The dependency is an earlier command of the queue: replayed already.
        let i = records.partition_point(|r| r.seq < dep);
        if let (Some(r), Some(Some(done))) = (records.get(i), done_of.get(i)) {
            return done.done_ns.saturating_add(next.vt_ns.saturating_sub(r.vc_ns));
        }
    }
    prev_replayed.issue_ns.saturating_add(next.vt_ns.saturating_sub(prev.vt_ns))
}
