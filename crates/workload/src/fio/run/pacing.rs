//! Rate and think-time control: when a thread may issue again. `rate` and
//! `rate_iops` space a direction's I/Os (evenly or as a Poisson process),
//! `thinktime` pauses a thread after each I/O, and a thread waiting for
//! either (or for its reaping CPU) is woken by a Pump event, never past its
//! deadline.

use super::*;

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// Moves the earliest time of the thread's next I/O in `ddir` on by the
    /// gap its rate limits ask for after `bytes`.
    pub(super) fn rate_charge(&mut self, t: u32, ddir: usize, bytes: u64) {
        if !self.threads[t as usize].options.rate_limited {
            return;
        }
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let thread = &mut self.threads[t as usize];
        let mut gap_ns = 0u64;
        if let Some(rate) = job.rate_bytes_per_s[ddir].filter(|r| *r > 0) {
            gap_ns = gap_ns.max((u128::from(bytes) * 1_000_000_000 / u128::from(rate)) as u64);
        }
        if let Some(iops) = job.rate_iops[ddir].filter(|r| *r > 0) {
            gap_ns = gap_ns.max(1_000_000_000 / iops);
        }
        if gap_ns == 0 {
            return;
        }
        if job.rate_process == RateProcess::Poisson {
            let u = thread.rng.unit().max(f64::MIN_POSITIVE);
            gap_ns = (-(u.ln()) * gap_ns as f64) as u64;
        }
        thread.rate_next_ns[ddir] = thread.rate_next_ns[ddir].saturating_add(gap_ns).min(RUN_NS_MAX);
    }

    /// After an I/O, a job with a think time holds its next one.
    pub(super) fn think_after_io(&mut self, t: u32) {
        let thread = &mut self.threads[t as usize];
        if thread.options.thinktime_ns > 0 {
            thread.enter(Stage::Issuing(Hold::Think));
        }
    }

    /// The thread's I/Os completed: it thinks, then issues again.
    pub(super) fn think(&mut self, now: Nanos, t: u32) {
        let thread = &mut self.threads[t as usize];
        thread.enter(Stage::Issuing(Hold::Free));
        let at = now.saturating_add(thread.options.thinktime_ns);
        self.wake_at(t, at);
    }

    /// Pumps the thread at `at_ns`, or stops it if that is past its deadline.
    pub(super) fn wake_at(&mut self, t: u32, at_ns: Nanos) {
        let thread = &mut self.threads[t as usize];
        if at_ns >= thread.deadline_ns.min(RUN_NS_MAX) {
            thread.stop_issuing();
            let at = thread.deadline_ns.min(RUN_NS_MAX).max(self.events.now_ns());
            self.schedule(at, Event::Pump(t));
            return;
        }
        if thread.pump_at_ns.is_some_and(|p| p <= at_ns) {
            return;
        }
        thread.pump_at_ns = Some(at_ns);
        self.schedule(at_ns, Event::Pump(t));
    }
}
