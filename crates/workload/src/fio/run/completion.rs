//! A thread sees its request complete: it counts the request in fio's
//! statistics (latencies, bytes, the bandwidth and IOPS windows), or stops
//! at the first error as fio does, and then issues again.

use super::*;

impl<D: ZonedDevice + ?Sized> Engine<'_, D> {
    /// The thread sees its request complete.
    pub(super) fn reap(&mut self, now: Nanos, tag: u32) {
        let io = &self.ios[tag as usize];
        let t = io.thread;
        let thread = &mut self.threads[t as usize];
        assert!(thread.inflight > 0);
        thread.inflight -= 1;
        if !io.status.is_success() || io.verify_error {
            let io = *io;
            self.fail(tag, &io);
        } else {
            // Read in place: the slot is freed below, before a chain's next
            // request may take it.
            account(thread, io, now, self.lba_bytes);
            if matches!(io.kind, IoKind::OpenBlock | IoKind::SoftFill | IoKind::Finish) {
                let io = *io;
                self.free_ios.push(tag);
                self.advance_chain(now, &io);
            } else {
                self.free_ios.push(tag);
            }
        }
        // The reaping itself (reserved on the thread's CPU by `reap_next`) is outside the latency.
        let reap_cost_ns = self.threads[t as usize].reap_cost_ns;
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
        if self.threads[t as usize].stats.error.is_none() {
            let error = self.error_of(io);
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
        let message = format!(
            "{what} ({cause}): {} offset={}, buflen={}",
            op_name(io.op),
            io.slba * self.lba_bytes,
            u64::from(io.nlb) * self.lba_bytes
        );
        (errno, message)
    }
}

/// Counts a successful request in its thread's statistics for its
/// direction (a finish as one trim, from the start of its operation).
#[inline]
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
}

/// Closes the statistics windows that ended by `now` (up to the deadline).
/// All but the first lie in idle time, as nothing completed since the last
/// call: they are zero samples, added at once (a long thinktime spans
/// millions of windows).
#[inline]
fn close_windows(thread: &mut Thread, now: Nanos) {
    let last = now.min(thread.deadline_ns);
    if last < thread.window_next_ns {
        return;
    }
    let idle = (last - thread.window_next_ns) / WINDOW_NS;
    for dir in thread.stats.dirs.iter_mut() {
        dir.sample_window(WINDOW_NS);
        dir.sample_idle_windows(idle);
    }
    thread.window_next_ns += (idle + 1) * WINDOW_NS;
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
