//! A thread sees its request complete: it counts the request in fio's
//! statistics (latencies, bytes, the bandwidth and IOPS windows), or stops
//! at the first error as fio does, and then issues again.

use super::*;
use crate::fio::log::{Latencies, LoggedIo};
use crate::fio::stats::Sampled;

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// The thread sees its request complete.
    pub(super) fn reap(&mut self, now: Nanos, tag: u32) {
        let io = &self.ios[tag as usize];
        let t = io.thread;
        let lba_bytes = self.spaces.get(self.space_of(t)).lba_bytes;
        let thread = &mut self.threads[t as usize];
        assert!(thread.inflight > 0);
        thread.inflight -= 1;
        if !io.status.is_success() || io.verify_error {
            let io = *io;
            self.fail(tag, &io);
        } else {
            // Read in place: the slot is freed below, before a chain's next
            // request may take it.
            account(thread, io, now, lba_bytes);
            if let Some(state) = thread.replay.as_deref_mut() {
                state.completed(tag, None);
            }
            if matches!(io.kind, IoKind::OpenBlock | IoKind::SoftFill | IoKind::Finish) {
                let io = *io;
                self.free_ios.push(tag);
                self.advance_chain(now, &io);
            } else {
                self.free_ios.push(tag);
            }
        }
        // The reaping itself (reserved on the thread's CPU by `reap_next`) is outside the latency.
        let reap_cost_ns = self.threads[t as usize].reap_last_ns;
        if reap_cost_ns == 0 {
            self.pump(now, t);
        } else {
            self.wake_at(t, now + reap_cost_ns);
        }
    }

    /// A request failed: the thread keeps the first error, as fio does, and
    /// stops issuing.
    #[cold]
    fn fail(&mut self, tag: u32, io: &Io) {
        self.free_ios.push(tag);
        let t = io.thread;
        let log = self.verify_log_of(tag, io);
        let (errno, message) = self.error_of(io);
        let line = self.threads[t as usize].replay.as_deref_mut().and_then(|r| r.completed(tag, Some(&message)));
        if self.threads[t as usize].stats.error.is_none() {
            let message = match line {
                Some(line) => format!("{message} (iolog line {line})"),
                None => message,
            };
            let error = (errno, message);
            let thread = &mut self.threads[t as usize];
            thread.stats.error = Some(error);
            thread.verify_log = log;
        }
        let thread = &mut self.threads[t as usize];
        thread.stop_issuing();
        thread.chain = None;
    }

    /// fio's errno and message for a failed request.
    fn error_of(&self, io: &Io) -> (i32, String) {
        // EILSEQ, as fio's verify returns it.
        let (errno, what) = if io.verify_error {
            (84, "Invalid or incomplete multibyte or wide character")
        } else {
            errno_of(io.status)
        };
        let cause = if io.verify_error { "verify failed" } else { io.status.name() };
        let lba_bytes = self.spaces.get(self.space_of(io.thread)).lba_bytes;
        let message = format!(
            "{what} ({cause}): {} offset={}, buflen={}",
            op_name(io.op),
            io.slba * lba_bytes,
            u64::from(io.nlb) * lba_bytes
        );
        (errno, message)
    }
}

/// Counts a successful request in its thread's statistics for its
/// direction (a finish as one trim, from the start of its operation).
/// Always inlined: it is most of `reap`, on every completion.
#[inline(always)]
fn account(thread: &mut Thread, io: &Io, now: Nanos, lba_bytes: u64) {
    close_windows(thread, now);
    let counted = match io.kind {
        IoKind::Data | IoKind::TrimReset | IoKind::VerifyRead | IoKind::OpenBlock => {
            Some((io.ddir, u64::from(io.nlb) * lba_bytes, io.issue_ns))
        }
        IoKind::Finish => thread.chain.map(|c| (DDIR_TRIM, 0, c.start_ns)),
        IoKind::ResetForWrite | IoKind::SoftFill => None,
    };
    let Some((ddir, bytes, issue_ns)) = counted else { return };
    if now < thread.stats_start_ns {
        return;
    }
    let ddir = if io.kind == IoKind::TrimReset { DDIR_TRIM } else { ddir };
    let submit_ns = if io.kind == IoKind::Finish { issue_ns } else { io.submit_ns };
    let (slat_ns, clat_ns) =
        if thread.options.sync { (None, now - issue_ns) } else { (Some(submit_ns - issue_ns), now - submit_ns) };
    thread.stats.dirs[ddir].add_io(bytes, slat_ns, clat_ns, now - issue_ns);
    thread.stats.lat_buckets.add(clat_ns);
    if thread.io_hooks {
        let io = LoggedIo { time_ms: (now - thread.stats_start_ns) / MS, ddir, bytes, offset: io.slba * lba_bytes };
        per_io_samples(thread, &io, &Latencies { slat_ns, clat_ns, lat_ns: now - issue_ns });
    }
}

/// What fio does per I/O beyond its statistics, when asked: the latency
/// logs' lines, and bandwidth and IOPS samples per I/O (per-unit logs: the
/// bandwidth of an I/O is its bytes per ms of completion latency, fio's
/// `add_bw_sample`; its IOPS sample is 1).
#[inline(never)]
fn per_io_samples(thread: &mut Thread, io: &LoggedIo, latencies: &Latencies) {
    let windows = thread.windows;
    let dir = &mut thread.stats.dirs[io.ddir];
    let rate = match latencies.clat_ns {
        0 => 0,
        clat_ns => io.bytes * 1_000_000 / clat_ns,
    };
    if windows.bw_per_io {
        dir.bw_kib.add(rate);
    }
    if windows.iops_per_io {
        dir.iops.add(1);
    }
    let Some(logs) = thread.logs.as_deref_mut() else { return };
    logs.latencies(io, latencies);
    if windows.bw_per_io {
        logs.bw_of_io(io, rate);
    }
    if windows.iops_per_io {
        logs.iops_of_io(io);
    }
}

/// Closes the statistics windows that ended by `now` (up to the deadline).
#[inline]
fn close_windows(thread: &mut Thread, now: Nanos) {
    let last = now.min(thread.deadline_ns);
    if last >= thread.windows.next_ns {
        sample_windows(thread, last);
    }
}

/// Takes the bandwidth and IOPS samples of the windows that ended by
/// `last`. All but the first of each lie in idle time, as nothing completed
/// since the last call: they are zero samples, added at once (a long
/// thinktime spans millions of windows). A log gets a line per direction
/// that did I/O in the window, at its end, as fio's `__add_samples`.
fn sample_windows(thread: &mut Thread, last: Nanos) {
    let start_ns = thread.stats_start_ns;
    for what in Sampled::BOTH {
        let (len_ns, end_ns) = (thread.windows.len_ns[what as usize], thread.windows.end_ns[what as usize]);
        if last < end_ns {
            continue;
        }
        let idle = (last - end_ns) / len_ns;
        for (ddir, dir) in thread.stats.dirs.iter_mut().enumerate() {
            let (amount, sample) = dir.sample_window(what, len_ns);
            dir.sample_idle_windows(what, idle);
            if let (true, Some(logs)) = (amount > 0, thread.logs.as_deref_mut()) {
                logs.window(what, (end_ns - start_ns) / MS, ddir, sample);
            }
        }
        thread.windows.end_ns[what as usize] += (idle + 1) * len_ns;
    }
    let ends = thread.windows.end_ns;
    thread.windows.next_ns = ends[0].min(ends[1]);
}

/// The errno Linux returns for an NVMe status, as fio prints it.
fn errno_of(status: Status) -> (i32, &'static str) {
    match status {
        Status::TooManyActiveZones => (75, "Value too large for defined data type"),
        Status::TooManyOpenZones => (109, "Too many references: cannot splice"),
        Status::LbaOutOfRange => (121, "Remote I/O error"),
        _ => (5, "Input/output error"),
    }
}

fn op_name(op: RequestOp) -> &'static str {
    match op {
        RequestOp::Read => "read",
        RequestOp::Write => "write",
        RequestOp::Append => "append",
        RequestOp::ZoneReset => "zone reset",
        RequestOp::ZoneFinish => "zone finish",
    }
}
