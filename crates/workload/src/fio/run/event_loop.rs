//! The event loop and a thread's life: phases start threads, events drive
//! them, a thread issues while its stage lets it, then drains, verifies and
//! ends, and the next phase starts when all of this one's threads ended.

use super::*;
use crate::fio::stats::{LatStat, LatencyBuckets};

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// Runs every thread to its end; `progress` sees the simulated time now and then.
    pub fn run(mut self, progress: &mut dyn FnMut(Nanos)) -> Result<RunResult, JobError> {
        self.start_phase(0, 0);
        let mut events_seen = 0u64;
        while let Some((now, event)) = self.events.pop() {
            events_seen += 1;
            if events_seen.is_multiple_of(1 << 16) {
                progress(now);
            }
            self.handle(now, event);
        }
        if let Some((spec, option, message)) = self.log_errors.first().cloned() {
            let location = self.set.jobs[spec].location_of(option).to_string();
            return Err(JobError { location, option: Some(option.to_string()), message });
        }
        let end_ns = self.events.now_ns();
        let mut warnings = self.empty_readers();
        warnings.extend(self.replay_warnings());
        let namespaces = self.namespace_runs();
        let disk = self.spaces.iter().fold(SchedulerCounters::default(), |mut sum, space| {
            sum += space.layers.disk_counters();
            sum
        });
        let disk_busy_ns = self.spaces.get(0).busy.busy_ns();
        let threads = self
            .threads
            .into_iter()
            .map(|t| ThreadResult {
                spec: t.spec,
                clone: t.clone,
                groupid: t.groupid,
                stats: t.stats,
                verify_log: t.verify_log,
            })
            .collect();
        Ok(RunResult { threads, disk, disk_busy_ns, end_ns, warnings, namespaces })
    }

    /// Each namespace's block device as fio reports it, on a run over
    /// several (none otherwise: the report keeps its one disk).
    fn namespace_runs(&self) -> Vec<NamespaceRun> {
        if !MULTI {
            return Vec::new();
        }
        let controller = self.set.jobs.iter().filter_map(|j| namespace_of_filename(j.filename.as_deref()?)?.controller);
        let controller = controller.min().unwrap_or(0);
        let runs = self.spaces.iter().enumerate().map(|(k, space)| NamespaceRun {
            nsid: space.nsid,
            name: format!("nvme{controller}n{}", space.nsid),
            disk: space.layers.disk_counters(),
            busy_ns: space.busy.busy_ns(),
            shows_disk: self.threads.iter().any(|t| {
                let job = &self.set.jobs[t.spec];
                usize::from(t.space) == k && !job.ioengine.is_passthrough() && job.report.disk_util
            }),
        });
        runs.collect()
    }

    /// A warning per job whose threads did no I/O because every zone of
    /// their range was empty: fio ends such a job silently, with zeros in
    /// its report, which reads like a broken device rather than an empty one.
    fn empty_readers(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        for (spec, job) in self.set.jobs.iter().enumerate() {
            let threads: Vec<&Thread> = self.threads.iter().filter(|t| t.spec == spec).collect();
            let idle = |t: &Thread| t.life.found_no_data && t.stats.dirs.iter().all(|d| d.total_ios == 0);
            let empty = threads.iter().filter(|t| idle(t)).count();
            if empty == 0 {
                continue;
            }
            let who =
                if threads.len() == 1 { "it".to_string() } else { format!("{empty} of its {} threads", threads.len()) };
            warnings.push(format!(
                "job '{}' ({}): read nothing: every zone of its range was empty, and zonemode=zbd reads stay below \
                 the write pointer, so {who} did no I/O (write the zones first, or set read_beyond_wp=1)",
                job.name, job.origin
            ));
        }
        warnings
    }

    pub(super) fn schedule(&mut self, at_ns: Nanos, event: Event) {
        self.events.schedule(at_ns, event).expect("event queue bounded by threads times iodepth");
    }

    /// Starts the threads of `phase`, and of the phases after it whose
    /// threads all ended already (stopped by `exitall` before they started).
    fn start_phase(&mut self, mut phase: u32, now: Nanos) {
        loop {
            self.phase_running = phase;
            let mut waiting = false;
            for index in 0..self.threads.len() {
                let thread = &mut self.threads[index];
                if thread.phase != phase || matches!(thread.stage, Stage::Ended) {
                    continue;
                }
                waiting = true;
                let job = &self.set.jobs[thread.spec];
                let (low, high) = job.startdelay_ns;
                // fio drops a stopped job's start delay.
                let delay = match (thread.life.terminated, high > low) {
                    (true, _) => 0,
                    (false, true) => low + thread.rng.below(high - low + 1),
                    (false, false) => low,
                };
                self.schedule(now + delay, Event::Start(index as u32));
            }
            if waiting || phase + 1 >= self.phases {
                return;
            }
            phase += 1;
        }
    }

    fn handle(&mut self, now: Nanos, event: Event) {
        match event {
            Event::Start(t) => self.start_thread(now, t),
            Event::Pump(t) => {
                let thread = &mut self.threads[t as usize];
                if thread.pump_at_ns == Some(now) {
                    thread.pump_at_ns = None;
                }
                self.pump(now, t);
            }
            Event::Insert(tag) => self.insert(now, tag),
            Event::DeviceSubmit { space, path, id } => self.device_submit(now, usize::from(space), path, id),
            Event::DeviceDone { space, path, id, status } => {
                self.device_done(now, usize::from(space), path, id, status)
            }
            Event::DeviceWake => self.device_wake(now),
            Event::Reap(tag) => self.reap(now, tag),
            Event::ReapNext(t) => self.reap_next(now, t),
            Event::Epoch(space) => self.epoch(now, usize::from(space)),
            Event::SoftFill(t) => self.soft_fill_next(now, t),
        }
    }

    fn start_thread(&mut self, now: Nanos, t: u32) {
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let thread = &mut self.threads[t as usize];
        if matches!(thread.stage, Stage::Ended) || thread.life.started {
            // A start delay's event after `exitall` ended the thread, or started it at once.
            return;
        }
        thread.life.started = true;
        thread.start_ns = now;
        thread.stats_start_ns = now + job.ramp_time_ns;
        thread.windows.start(thread.stats_start_ns);
        thread.rate_next_ns = [now; DDIRS];
        if let Some(runtime) = job.runtime_ns {
            thread.deadline_ns = (thread.stats_start_ns + runtime).min(RUN_NS_MAX);
        }
        if thread.life.terminated {
            // fio: "never got a chance to start, killed by other thread".
            thread.stats_start_ns = now;
            thread.stop_issuing();
            return self.end_thread(now, t);
        }
        self.pump(now, t);
    }

    /// Issues what the thread may issue now.
    pub(super) fn pump(&mut self, now: Nanos, t: u32) {
        for _ in 0..=IODEPTH_MAX {
            let thread = &mut self.threads[t as usize];
            if matches!(thread.stage, Stage::Ended) || thread.chain.is_some() {
                return;
            }
            if now >= thread.deadline_ns {
                thread.stop_issuing();
            }
            if !matches!(thread.stage, Stage::Issuing(Hold::Free)) {
                self.release_hold(now, t);
                return;
            }
            if thread.inflight >= thread.qd {
                return;
            }
            match self.next_io(now, t) {
                Next::Io(planned) => {
                    self.issue(now, t, planned);
                    self.think_after_io(t);
                }
                Next::Wait(at) => {
                    self.wake_at(t, at);
                    return;
                }
                Next::Ahead(at) => {
                    let thread = &mut self.threads[t as usize];
                    if thread.inflight == 0 {
                        self.wake_at(t, at);
                    } else {
                        thread.enter(Stage::Issuing(Hold::Quiesce(at - now)));
                    }
                    return;
                }
                Next::Blocked => return,
                Next::Reset(zone) => self.threads[t as usize].enter(Stage::Issuing(Hold::Reset(zone))),
                Next::End => self.threads[t as usize].stop_issuing(),
            }
        }
    }

    /// A thread not free to issue new I/O: once what it has in flight is
    /// done (or, verifying, a read slot is free), it thinks, issues the reset
    /// it owes, or goes on to verify or end.
    fn release_hold(&mut self, now: Nanos, t: u32) {
        let thread = &mut self.threads[t as usize];
        let refill_verify = matches!(thread.stage, Stage::Verifying) && thread.inflight < thread.qd;
        if thread.inflight > 0 && !refill_verify {
            return;
        }
        let reset = match thread.stage {
            Stage::Issuing(Hold::Think) => return self.think(now, t),
            Stage::Issuing(Hold::Quiesce(sleep_ns)) => {
                thread.enter(Stage::Issuing(Hold::Free));
                return self.wake_at(t, now.saturating_add(sleep_ns));
            }
            Stage::Issuing(Hold::Reset(zone)) => {
                thread.enter(Stage::Issuing(Hold::Free));
                Some(zone)
            }
            Stage::Draining { reset: Some(zone) } => {
                thread.enter(Stage::Draining { reset: None });
                Some(zone)
            }
            _ => None,
        };
        match reset {
            // fio resets with a blocking ioctl: writes resume once it completes.
            Some(zone) => self.issue_reset_for_write(now, t, zone),
            None => self.finish_issuing(now, t),
        }
    }

    /// A zone reset the thread owes before writing the zone again (it was full).
    fn issue_reset_for_write(&mut self, now: Nanos, t: u32, zone: u32) {
        let slba = self.spaces.get(self.space_of(t)).zones.zslba(zone);
        let kind = IoKind::ResetForWrite;
        let reset = Planned { ddir: DDIR_WRITE, op: RequestOp::ZoneReset, slba, nlb: 0, zone: Some(zone), kind };
        self.issue(now, t, reset);
    }

    /// No more I/O from the thread: verify what it wrote, or end it.
    fn finish_issuing(&mut self, now: Nanos, t: u32) {
        let thread = &mut self.threads[t as usize];
        assert!(matches!(thread.stage, Stage::Draining { reset: None } | Stage::Verifying), "{:?}", thread.stage);
        if thread.options.read_back
            && !thread.life.terminated
            && matches!(thread.stage, Stage::Draining { reset: None })
            && thread.stats.error.is_none()
        {
            thread.enter(Stage::Verifying);
            thread.verify_ranges.reverse();
        }
        let thread = &self.threads[t as usize];
        if matches!(thread.stage, Stage::Verifying) && thread.stats.error.is_none() {
            self.issue_verify_reads(now, t);
        }
        // Also after an error: the reads in flight complete before the thread ends.
        if self.threads[t as usize].inflight > 0 {
            return;
        }
        self.end_thread(now, t);
    }

    /// `write_iolog`: fio logs `end_fsync`'s flush as an I/O (`sync`).
    #[inline(never)]
    fn log_end_fsync(&mut self, now: Nanos, t: u32) {
        let thread = &mut self.threads[t as usize];
        if let Some(logs) = thread.logs.as_deref_mut() {
            logs.issued((now - thread.start_ns) / US, crate::fio::iolog_write::DDIR_SYNC, 0, 0);
        }
    }

    fn end_thread(&mut self, now: Nanos, t: u32) {
        let wrote = self.threads[t as usize].stats.dirs[DDIR_WRITE].total_ios > 0;
        let now = if self.set.jobs[self.threads[t as usize].spec].end_fsync && wrote {
            // Nothing of the thread is in flight: the Flush is its last command.
            self.log_end_fsync(now, t);
            let flush = zonelab_device::Command::Flush;
            match MULTI {
                true => self.device.submit_in(self.spaces.get(self.space_of(t)).nsid, now, &flush, None).complete_ns,
                false => self.device.submit(now, &flush, None).complete_ns,
            }
        } else {
            now
        };
        let thread = &mut self.threads[t as usize];
        assert!(thread.inflight == 0, "a thread ends with nothing in flight");
        thread.enter(Stage::Ended);
        let runtime = now.saturating_sub(thread.stats_start_ns);
        for dir in thread.stats.dirs.iter_mut() {
            if dir.total_ios > 0 {
                dir.runtime_ns = runtime;
            }
        }
        thread.stats.job_runtime_ns = runtime;
        thread.stats.elapsed_ns = now - thread.start_ns;
        let job = &self.set.jobs[thread.spec];
        disable_stats(&mut thread.stats, job);
        let end_us = (now - thread.start_ns) / US;
        if let Some((option, error)) = thread.logs.as_deref_mut().and_then(|logs| logs.finish(runtime / MS, end_us)) {
            self.log_errors.push((thread.spec, option, error));
        }
        let phase = thread.phase;
        self.exit_others(now, t);
        let phase_done = self.threads.iter().filter(|t| t.phase == phase).all(|t| matches!(t.stage, Stage::Ended));
        if phase_done && phase == self.phase_running && phase + 1 < self.phases {
            self.start_phase(phase + 1, now);
        }
    }

    /// fio's `exitall` (any job's) and `exitall_on_error` (the ending
    /// job's, when it failed): thread `t` ended, so the threads its
    /// `exit_what` names stop: its group's, those running now (past their
    /// ramp time: fio's `runstate >= TD_RUNNING`), or all.
    fn exit_others(&mut self, now: Nanos, t: u32) {
        let ended = &self.threads[t as usize];
        let job = &self.set.jobs[ended.spec];
        let failed = job.exitall_on_error && ended.stats.error.is_some();
        if !(self.exitall || failed) {
            return;
        }
        let (groupid, what) = (ended.groupid, job.exit_what);
        for other in 0..self.threads.len() {
            let thread = &self.threads[other];
            let named = match what {
                ExitWhat::Group => thread.groupid == groupid,
                ExitWhat::Stonewall => thread.life.started && now >= thread.stats_start_ns,
                ExitWhat::All => true,
            };
            if named && !thread.life.terminated && !matches!(thread.stage, Stage::Ended) {
                self.terminate(now, other as u32);
            }
        }
    }

    /// Stops thread `t` as fio's `fio_terminate_threads` does: no new I/O
    /// and no read back; what it has in flight completes. One not started
    /// yet ends without I/O when it would start (at once in the running phase).
    fn terminate(&mut self, now: Nanos, t: u32) {
        let running_phase = self.phase_running;
        let thread = &mut self.threads[t as usize];
        thread.life.terminated = true;
        if !thread.life.started {
            if thread.phase == running_phase {
                self.schedule(now, Event::Start(t));
            }
            return;
        }
        thread.deadline_ns = thread.deadline_ns.min(now);
        thread.verify_ranges.clear();
        self.schedule(now, Event::Pump(t));
    }
}

/// fio's `disable_lat`, `disable_clat` and `disable_slat` (and `gtod_reduce`):
/// the statistics are not kept (the latency distribution goes with clat).
fn disable_stats(stats: &mut JobStats, job: &JobSpec) {
    for dir in stats.dirs.iter_mut() {
        if job.report.disable_lat {
            dir.lat = LatStat::default();
        }
        if job.report.disable_clat {
            dir.clat = LatStat::default();
        }
        if job.report.disable_slat {
            dir.slat = LatStat::default();
        }
    }
    if job.report.disable_clat {
        stats.lat_buckets = LatencyBuckets::default();
    }
}
