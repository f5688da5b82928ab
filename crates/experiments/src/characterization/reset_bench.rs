//! CLUSTER'23's reset-interference benchmark (seed 000 Fig 7, Obs 12 and 13)
//! as the paper's artifact runs it, host included.
//!
//! The benchmark (`reset_inteference_{reads,writes,appends}` in the authors'
//! SPDK tools) has two threads: the main thread issues 4 KiB reads, writes or
//! appends at QD 1 and, every 400 of them (395 writes), asks for one more full
//! zone to be reset; a second thread resets the zones asked for, one at a time,
//! and spins on a mutex while none is. Both poll for completions. SPDK's
//! environment pins the main thread to one core and the reset thread, created
//! from it, inherits that pinning, so the two always-runnable threads share a
//! CPU, and Linux's CFS runs each for a slice in turn. A thread sees a
//! completion only while it holds the CPU. The drive's per-operation logs show
//! it: the I/O thread stalls 16.0 ms every 32 ms (its mean doubles, its
//! percentiles do not move), and resets beside writes end on the scheduler's
//! 4 ms ticks (183 of 193 at 32.0 ms), while resets that end inside their own
//! thread's slice keep the device's time (beside reads 455 of 499 at 14.8-15.6 ms).

use super::device_runs::{fill, mgmt, submit};
use crate::error::{Error, Result};
use zonelab_device::{Command, Device, Payload, Started, Tag, ZoneAction};
use zonelab_sim::{Nanos, SimRng, MS, SEC, US};

/// The zone the reads go to (written first); writes and appends start at
/// [`IO_ZONE`] and go on zone by zone. Resets take zones 0, 1, ...
pub(super) const READ_ZONE: u64 = 500;
pub(super) const IO_ZONE: u64 = 600;

/// One CPU that two always-runnable threads share in slices of `slice_ns`,
/// the I/O thread first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SharedCpu {
    slice_ns: Nanos,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Thread {
    Io,
    Reset,
}

impl SharedCpu {
    /// CLUSTER'23's machine: CFS with two runnable tasks gives each half its
    /// scheduling period, 24 ms on a machine of 8 or more CPUs (6 ms times
    /// 1 + log2 8), and preempts at the first timer tick (4 ms at HZ = 250)
    /// after that 12 ms: 16 ms, the I/O thread's measured stalls.
    pub(crate) const CLUSTER23: SharedCpu = SharedCpu { slice_ns: 16 * MS };

    /// The first time at or after `t_ns` when `thread` holds the CPU, slots
    /// counted from `start_ns`.
    fn next_on(self, thread: Thread, start_ns: Nanos, t_ns: Nanos) -> Nanos {
        debug_assert!(t_ns >= start_ns, "the threads run from the start on");
        let slot = (t_ns - start_ns) / self.slice_ns;
        let holder = if slot.is_multiple_of(2) { Thread::Io } else { Thread::Reset };
        if holder == thread {
            t_ns
        } else {
            start_ns + (slot + 1) * self.slice_ns
        }
    }
}

/// The reset thread's state: zones asked for (when), resets started, the one
/// in flight (its tag and when it was sent) and when the thread may send the
/// next.
struct ResetThread {
    asked_ns: Vec<Nanos>,
    started: usize,
    in_flight: Option<(Tag, Nanos)>,
    free_ns: Nanos,
}

impl ResetThread {
    /// When the thread sends its next reset, if it has one to send.
    fn next_send_ns(&self, cpu: SharedCpu, start_ns: Nanos) -> Option<Nanos> {
        if self.in_flight.is_some() {
            return None;
        }
        let asked_ns = *self.asked_ns.get(self.started)?;
        Some(cpu.next_on(Thread::Reset, start_ns, self.free_ns.max(asked_ns)))
    }
}

/// The benchmark with `io` (read, write or append) beside `resets` resets of
/// full zones on `cpu`; returns the reset latencies and the I/O latencies the
/// benchmark logs (those while it still asks for resets), in µs.
pub(crate) fn reset_beside_io(mut dev: Device, io: &str, resets: u64, cpu: SharedCpu) -> Result<(Vec<f64>, Vec<f64>)> {
    let (zl, zcap) = (dev.layout().zone_lbas, dev.layout().zcap_lbas);
    let ops_per_reset: u64 = match io {
        "read" | "append" => 400,
        "write" => 395,
        _ => return Err(Error::Failed(format!("no reset benchmark beside '{io}'"))),
    };
    let mut t = 0;
    for z in 0..resets {
        t = fill(&mut dev, z, zcap, t)?;
    }
    let start_ns = fill(&mut dev, READ_ZONE, zcap, t)? + SEC;
    // Virtual time the run may take: a reset, stretched by the shared CPU, is
    // tens of ms; a run that goes on for seconds per reset is stuck.
    let deadline_ns = start_ns + resets.max(1) * 4 * SEC;
    let mut rng = SimRng::new(13);
    let (mut reset_us, mut io_us) = (Vec::new(), Vec::new());
    let mut resetter = ResetThread { asked_ns: Vec::new(), started: 0, in_flight: None, free_ns: start_ns };
    let (mut io_ns, mut countdown, mut offset, mut io_zone) = (start_ns, 1u64, 0u64, IO_ZONE);
    while (reset_us.len() as u64) < resets {
        if io_ns > deadline_ns {
            return Err(Error::Failed(format!("{resets} resets beside {io} did not end in the time allowed")));
        }
        // The reset's last step may have run beside an I/O or on its own.
        for (tag, c) in dev.take_completed() {
            let Some((_, sent_ns)) = resetter.in_flight.filter(|&(sent_tag, _)| sent_tag == tag) else {
                return Err(Error::Failed(format!("a completion of {tag:?}, which the benchmark did not send")));
            };
            let seen_ns = cpu.next_on(Thread::Reset, start_ns, c.complete_ns);
            reset_us.push((seen_ns - sent_ns) as f64 / US as f64);
            (resetter.in_flight, resetter.free_ns) = (None, seen_ns);
        }
        let send_ns = resetter.next_send_ns(cpu, start_ns);
        if let Some(e) = dev.next_event_ns().filter(|&e| e < io_ns && send_ns.is_none_or(|s| e < s)) {
            // The reset in flight takes its next steps.
            dev.advance(e + 1);
            continue;
        }
        if let Some(s) = send_ns.filter(|&s| s <= io_ns) {
            let zone = resetter.started as u64;
            let Started::Pending(tag) = dev.start(s, &mgmt(ZoneAction::Reset, zone * zl), None) else {
                return Err(Error::Failed("a reset of a full zone completes later".into()));
            };
            (resetter.in_flight, resetter.started) = (Some((tag, s)), resetter.started + 1);
            continue;
        }
        // The I/O thread's next operation; it asks for a reset as it sends
        // every `ops_per_reset`th.
        let next = if io == "read" { READ_ZONE * zl + rng.below(zcap) } else { io_zone * zl + offset };
        let c = submit(&mut dev, io_ns, &io_command(io, next, zl))?;
        let asking = (resetter.asked_ns.len() as u64) < resets;
        let asks = asking && countdown == 0;
        if asks {
            resetter.asked_ns.push(io_ns);
            countdown = ops_per_reset;
        } else {
            countdown = countdown.saturating_sub(1);
        }
        let seen_ns = cpu.next_on(Thread::Io, start_ns, c.complete_ns);
        // The benchmark logs while it asks for resets, but not the operation
        // that asked (its write loop logs that one too).
        if asking && (!asks || io == "write") {
            io_us.push((seen_ns - io_ns) as f64 / US as f64);
        }
        io_ns = seen_ns;
        offset += 1;
        if offset == zcap {
            (offset, io_zone) = (0, io_zone + 1);
        }
    }
    Ok((reset_us, io_us))
}

/// One 4 KiB `io` at `lba` (an append goes to its zone).
pub(super) fn io_command(io: &str, lba: u64, zone_lbas: u64) -> Command<'static> {
    match io {
        "read" => Command::Read { slba: lba, nlb: 1 },
        "write" => Command::Write { slba: lba, nlb: 1, payload: Payload::None, fua: false, placement: None },
        _ => Command::Append { zslba: lba - lba % zone_lbas, nlb: 1, payload: Payload::None, fua: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonelab_device::{preset, Tracking};

    #[test]
    fn the_two_threads_hold_the_cpu_in_turn() {
        let cpu = SharedCpu { slice_ns: 10 };
        let start = 100;
        assert_eq!(cpu.next_on(Thread::Io, start, 100), 100);
        assert_eq!(cpu.next_on(Thread::Io, start, 109), 109);
        assert_eq!(cpu.next_on(Thread::Io, start, 110), 120);
        assert_eq!(cpu.next_on(Thread::Reset, start, 100), 110);
        assert_eq!(cpu.next_on(Thread::Reset, start, 115), 115);
        assert_eq!(cpu.next_on(Thread::Reset, start, 120), 130);
    }

    fn median(values: &[f64]) -> f64 {
        let mut v = values.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }

    /// The zn540 with its full-zone reset taking `reset_ms` alone.
    fn zn540_resetting_in(reset_ms: u64) -> Device {
        let mut config = preset("zn540").unwrap();
        config.management.reset_ns = reset_ms * MS;
        config.management.reset.unmap_per_lba_ns = 0;
        Device::with_tracking(config, Tracking::NONE).unwrap()
    }

    /// A reset that ends inside the reset thread's turn keeps the device's
    /// time; one that does not is seen at the thread's next turn, two slices
    /// after it was sent. The I/O thread waits out the other's turns: its
    /// mean doubles, its median stays.
    #[test]
    fn a_reset_longer_than_a_turn_is_seen_a_turn_later_and_io_waits_out_the_resets_turns() {
        let cpu = SharedCpu::CLUSTER23;
        // Beside reads a reset is asked for every 400 reads (66 ms), so each
        // is sent as the reset thread's turn begins.
        let (short, _) = reset_beside_io(zn540_resetting_in(10), "read", 4, cpu).unwrap();
        assert_eq!(short.len(), 4);
        for us in &short {
            assert!((9_900.0..10_500.0).contains(us), "a 10 ms reset fits in a 16 ms turn: {us} µs");
        }
        // Beside writes they queue: the second of a turn is sent 10 ms in and
        // seen when the next turn begins, 22 ms later.
        let (queued, io) = reset_beside_io(zn540_resetting_in(10), "write", 12, cpu).unwrap();
        assert!((9_900.0..10_500.0).contains(&queued[0]) && (21_500.0..22_100.0).contains(&queued[1]), "{queued:?}");
        let (long, _) = reset_beside_io(zn540_resetting_in(20), "write", 4, cpu).unwrap();
        for us in &long {
            assert!((32_000.0..32_050.0).contains(us), "a 20 ms reset is seen two slices on: {us} µs");
        }
        let alone = 11.4;
        let mean = io.iter().sum::<f64>() / io.len() as f64;
        assert!((median(&io) - alone).abs() < 0.5, "the median write keeps its time: {}", median(&io));
        assert!(mean > 1.7 * alone && mean < 2.3 * alone, "the mean write about doubles: {mean}");
    }
}
