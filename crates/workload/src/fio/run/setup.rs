//! Setting a run up: checking each job against the device, and building
//! its threads (ranges, random streams, host path and costs).

use super::work::ThreadShape;
use super::*;
use zonelab_device::Mode;

impl<'a, D: ZonedDevice + ?Sized> Engine<'a, D> {
    /// An engine for `set` on `device`; refuses jobs the device cannot run
    /// (zone sizes, limits, block sizes that do not fit its layout). Every
    /// job runs on the device's namespace, whatever its `filename=`.
    pub fn new(device: &'a mut D, set: &'a JobSet, options: &RunOptions) -> Result<Self, JobError> {
        let jobs: Vec<&JobSpec> = set.jobs.iter().collect();
        let space = Space::new(1, &*device, &jobs, options, None);
        let job_spaces = vec![0; set.jobs.len()];
        Self::build(device, set, options, Spaces::new(vec![space]), own_zones::<D>, &job_spaces)
    }
}

/// The zone table of a device with one namespace.
fn own_zones<D: ZonedDevice + ?Sized>(device: &D, _nsid: u32) -> &ZoneTable {
    device.zones()
}

impl<'a, D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'a, D, MULTI> {
    /// The engine over `spaces`, job `j` on space `job_spaces[j]`.
    pub(super) fn build(
        device: &'a mut D,
        set: &'a JobSet,
        options: &RunOptions,
        spaces: Spaces<MULTI>,
        zone_table: for<'d> fn(&'d D, u32) -> &'d ZoneTable,
        job_spaces: &[u8],
    ) -> Result<Self, JobError> {
        let mut engine = Engine {
            host: options.host,
            threads: Vec::new(),
            spaces,
            zone_table,
            ios: Vec::new(),
            free_ios: Vec::new(),
            events: EventQueue::new(1 << 22),
            dispatched: Vec::new(),
            released: Vec::new(),
            tags: Vec::new(),
            buffer: Vec::new(),
            verify_seed: options.seed ^ 0x5a5a_0f0f,
            data_mode: device.config().mode == Mode::Data,
            phase_running: 0,
            phases: 0,
            device_pending: BTreeMap::new(),
            wake_at_ns: None,
            warnings: Vec::new(),
            verify_failures: BTreeMap::new(),
            exitall: set.jobs.iter().any(|j| j.exitall),
            log_errors: Vec::new(),
            placement: false,
            device,
            set,
        };
        engine.build_threads(options, job_spaces)?;
        engine.create_logs()?;
        Ok(engine)
    }

    /// Creates the threads' log files, once every job is accepted; a file
    /// that exists refuses the run, and the files made before it are removed.
    fn create_logs(&mut self) -> Result<(), JobError> {
        self.check_iologs()?;
        let mut clones = vec![0u32; self.set.jobs.len()];
        for index in 0..self.threads.len() {
            let job = &self.set.jobs[self.threads[index].spec];
            let clone = clones[self.threads[index].spec];
            clones[self.threads[index].spec] += 1;
            // fio numbers logs by thread, from 1 over the whole run.
            match ThreadLogs::create(job, index + 1, clone) {
                Ok(logs) => {
                    let thread = &mut self.threads[index];
                    thread.logs = logs.map(Box::new);
                    thread.io_hooks = thread.logs.is_some() || thread.windows.bw_per_io || thread.windows.iops_per_io;
                    thread.issue_hooks |= job.write_iolog.is_some();
                }
                Err((option, message)) => {
                    for thread in &mut self.threads[..index] {
                        thread.logs.take().into_iter().for_each(|logs| logs.remove());
                    }
                    let location = job.location_of(option).to_string();
                    return Err(JobError { location, option: Some(option.to_string()), message });
                }
            }
        }
        Ok(())
    }

    /// `write_iolog`: one file per thread (fio's threads would append to a
    /// shared one in turns), and none for a job that replays a log (fio
    /// then writes nothing).
    fn check_iologs(&self) -> Result<(), JobError> {
        let mut paths = BTreeMap::new();
        for job in &self.set.jobs {
            let Some(path) = &job.write_iolog else { continue };
            let message = if job.replay.is_some() {
                "fio writes no iolog for a job that replays one (read_iolog): drop one of them".to_string()
            } else if job.numjobs > 1 || paths.insert(path.clone(), job.name.clone()).is_some() {
                format!("'{path}' is written by several threads (numjobs, or another job): zonelab writes an iolog per thread; give each its own file")
            } else {
                continue;
            };
            let location = job.location_of("write_iolog").to_string();
            return Err(JobError { location, option: Some("write_iolog".into()), message });
        }
        Ok(())
    }

    fn build_threads(&mut self, options: &RunOptions, job_spaces: &[u8]) -> Result<(), JobError> {
        let (mut phase, mut groupid) = (0u32, 0u32);
        for (index, job) in self.set.jobs.iter().enumerate() {
            if index > 0 && job.stonewall {
                phase += 1;
            }
            if index > 0 && (job.stonewall || job.new_group) {
                groupid += 1;
            }
            let space = job_spaces[index];
            self.check_job(job, usize::from(space))?;
            let log = self.load_replay(job, usize::from(space))?;
            let placement = self.job_placement(job, usize::from(space))?.map(std::sync::Arc::new);
            self.placement |= placement.is_some();
            let first = self.threads.len();
            for clone in 0..job.numjobs {
                if self.threads.len() >= THREADS_MAX {
                    return Err(job_error(job, "numjobs", format!("more than {THREADS_MAX} threads in one run")));
                }
                let mut thread = self.make_thread(index, job, (clone, space), (phase, groupid), options)?;
                if let Some(log) = &log {
                    // fio sizes a replaying job by its log.
                    thread.limit_bytes = replayed_bytes(log);
                    thread.replay = Self::replay_state(job, Some(log));
                    thread.issue_hooks = true;
                }
                if let Some(job_placement) = &placement {
                    // A stream of its own: placement draws move no other choice.
                    let rng = SimRng::fork(thread_seed(job, index, clone, options) ^ 0xfd9, u64::from(clone));
                    thread.placement = Some(Box::new(placement::Placement::new(job_placement.clone(), rng)));
                }
                self.threads.push(thread);
            }
            self.check_work(job, (first, usize::from(space)), options.work_cap_ios)?;
        }
        self.phases = phase + 1;
        Ok(())
    }

    /// Refuses a job estimated over `cap_ios` I/Os, naming the option that
    /// asks for them where it was set; notes one over [`work::IOS_WARN`].
    fn check_work(&mut self, job: &JobSpec, (first_thread, k): (usize, usize), cap_ios: f64) -> Result<(), JobError> {
        let shapes: Vec<ThreadShape> = self.threads[first_thread..]
            .iter()
            .map(|t| ThreadShape {
                limit_bytes: t.limit_bytes,
                qd: t.qd,
                cpu_ns: t.submit_cost_ns + t.reap_cost_ns,
                host_ns: t.submit_cost_ns + t.complete_cost_ns + t.reap_cost_ns,
            })
            .collect();
        let space = self.spaces.get(k);
        let work = work::estimate(job, &shapes, &space.shape.1, &space.shape.0);
        let option = work.option();
        if work.ios > cap_ios {
            let message = format!(
                "{}; the cap is {cap_ios:.2e} I/Os per job (about {} of CPU): ask for less, or lift the cap \
                 (zonelab run --allow-long-runs)",
                work.describe(job),
                work::cpu_time(cap_ios / work::IOS_PER_CPU_SECOND)
            );
            return Err(JobError {
                location: job.location_of(option).to_string(),
                option: Some(option.into()),
                message,
            });
        }
        if work.ios > work::IOS_WARN {
            let at = job.location_of(option);
            self.warnings.push(format!("job '{}' ({at}): {}", job.name, work.describe(job)));
        }
        Ok(())
    }

    /// What the run asks for that deserves a word before it starts: jobs
    /// whose estimated work is over a minute of CPU.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    fn check_job(&self, job: &JobSpec, k: usize) -> Result<(), JobError> {
        let zbd = job.zonemode == ZoneMode::Zbd;
        let space = self.spaces.get(k);
        if job.iodepth == 0 || job.iodepth > IODEPTH_MAX {
            return Err(job_error(job, "iodepth", format!("must be 1..={IODEPTH_MAX}")));
        }
        // fio asks for O_DIRECT on zoned drives only, not over its emulated zones.
        if zbd && !job.direct && !space.emulated {
            return Err(job_error(job, "direct", "zonemode=zbd requires direct=1, as in fio".into()));
        }
        if job.time_based && job.runtime_ns.is_none() {
            return Err(job_error(job, "time_based", "needs a runtime".into()));
        }
        if job.rw == RwKind::Trim && !zbd {
            return Err(job_error(job, "rw", "trim needs zonemode=zbd: the device has no deallocate".into()));
        }
        if (job.finish || job.softfinish || job.zone_append) && !zbd {
            let option = if job.zone_append { "zone_append" } else { "finish" };
            return Err(job_error(job, option, "needs zonemode=zbd".into()));
        }
        if (job.finish || job.softfinish) && job.rw != RwKind::Write {
            return Err(job_error(job, "finish", "finish and softfinish operations need rw=write".into()));
        }
        // A thread follows one operation's chain of requests at a time.
        if (job.finish || job.softfinish) && job.iodepth > 1 {
            let message = "finish and softfinish operations run one at a time (each spans several requests): \
                           iodepth must be 1";
            return Err(job_error(job, "iodepth", message.into()));
        }
        if job.verify != Verify::None && self.device.config().mode != Mode::Data {
            return Err(job_error(job, "verify", "needs a device that keeps data: add --data".into()));
        }
        let lba_bytes = space.lba_bytes;
        let zone_bytes = space.zones.zone_lbas * lba_bytes;
        if let (true, Some(size)) = (zbd, job.zonesize) {
            if size.resolve(zone_bytes, zone_bytes) != zone_bytes {
                return Err(job_error(job, "zonesize", format!("does not match the device's zone size {zone_bytes}")));
            }
        }
        for (ddir, bs) in job.bs.iter().enumerate() {
            let unit = if job.blocksize_unaligned { lba_bytes } else { bs.min_bytes };
            if bs.min_bytes % lba_bytes != 0 || bs.max_bytes % unit != 0 || bs.min_bytes == 0 {
                let name = ["read", "write", "trim"][ddir];
                let message = format!("{name} block size must be a multiple of the {lba_bytes} B LBA");
                return Err(job_error(job, "bs", message));
            }
        }
        Ok(())
    }

    /// The LBA range [start, end) of clone `clone` of `job`, and the bytes
    /// it issues before it stops (io_size, else the range).
    fn thread_range(&self, job: &JobSpec, clone: u32, k: usize) -> Result<(u64, u64, u64), JobError> {
        let zones = &self.spaces.get(k).zones;
        let lba = self.spaces.get(k).lba_bytes;
        let zone_bytes = zones.zone_lbas * lba;
        let target_bytes = u64::from(zones.zones) * zone_bytes;
        let offset = job.offset.resolve(target_bytes, zone_bytes)
            + job.offset_increment.resolve(target_bytes, zone_bytes) * u64::from(clone);
        if offset >= target_bytes {
            return Err(job_error(job, "offset", format!("offset {offset} is past the end ({target_bytes} B)")));
        }
        let size = job.size.map_or(target_bytes - offset, |s| s.resolve(target_bytes - offset, zone_bytes));
        let (mut start, mut end) = (offset / lba, (offset.saturating_add(size)).min(target_bytes) / lba);
        if job.zonemode == ZoneMode::Zbd {
            let zl = zones.zone_lbas;
            start = start.div_ceil(zl) * zl;
            end = end / zl * zl;
        }
        if job.zonemode == ZoneMode::Zbd && end <= start {
            let message =
                format!("the range (offset {offset}, size {size}) must hold at least one whole zone of {zone_bytes} B");
            return Err(job_error(job, "size", message));
        }
        if end <= start || (end - start) * lba < job.bs.iter().map(|b| b.max_bytes).max().unwrap_or(0) {
            return Err(job_error(
                job,
                "size",
                format!("the job's range (offset {offset}, size {size}) holds no block"),
            ));
        }
        let limit_bytes = job.io_size.map_or((end - start) * lba, |s| s.resolve(target_bytes, zone_bytes));
        Ok((start, end, limit_bytes))
    }

    fn make_thread(
        &mut self,
        spec: usize,
        job: &JobSpec,
        (clone, space): (u32, u8),
        (phase, groupid): (u32, u32),
        options: &RunOptions,
    ) -> Result<Thread, JobError> {
        let k = usize::from(space);
        let lba = self.spaces.get(k).lba_bytes;
        let (start, end, limit_bytes) = self.thread_range(job, clone, k)?;
        let mut rng = SimRng::fork(thread_seed(job, spec, clone, options), u64::from(clone));
        let unit_lbas = (job.bs.iter().map(|b| b.min_bytes).min().unwrap_or(lba) / lba).max(1);
        let blocks = ((end - start) / unit_lbas).max(1);
        let offsets = OffsetGenerator::new(job.random_distribution, blocks, &mut rng);
        let path = host_path(job, options);
        let cost = self.host.cost(stack_kind(job.ioengine));
        let zones = &self.spaces.get(k).zones;
        let first_zone = zones.zone_of(start);
        Ok(Thread {
            spec,
            space,
            options: IoOptions::of(job, lba),
            clone,
            groupid,
            phase,
            rng,
            offsets,
            unit_lbas,
            region_start: start,
            region_end: end,
            first_zone,
            end_zone: zones.zone_of(end - 1) + 1,
            limit_bytes,
            issued_bytes: 0,
            issued_ios: 0,
            seq_next: [start; DDIRS],
            cursor_zone: [first_zone; DDIRS],
            cursor_written: false,
            inflight: 0,
            qd: if job.ioengine.is_sync() { 1 } else { job.iodepth },
            path,
            submit_cost_ns: cost.submit_ns + if path.locks_dispatch() { self.host.mq_deadline_submit_ns } else { 0 },
            complete_cost_ns: cost.complete_ns,
            reap_cost_ns: match job.ioengine {
                IoEngine::Libaio => self.host.engine_per_io.libaio_ns,
                IoEngine::Psync => self.host.engine_per_io.psync_ns,
                _ => 0,
            },
            reap_batched_cost_ns: match job.ioengine {
                IoEngine::Libaio => self.host.engine_per_io.libaio_batched_ns,
                IoEngine::Psync => self.host.engine_per_io.psync_ns,
                _ => 0,
            },
            reap_last_ns: 0,
            unseen: VecDeque::new(),
            reaping: false,
            cpu: Timeline::new(),
            ring_last_ns: None,
            start_ns: 0,
            stats_start_ns: 0,
            deadline_ns: RUN_NS_MAX,
            rate_next_ns: [0; DDIRS],
            pump_at_ns: None,
            open_retries: 0,
            chain: None,
            stage: Stage::Issuing(Hold::Free),
            verify_ranges: Vec::new(),
            windows: Windows::of(job),
            logs: None,
            io_hooks: false,
            stats: JobStats::default(),
            life: Life::default(),
            verify_log: Vec::new(),
            replay: None,
            issue_hooks: false,
            placement: None,
        })
    }
}

/// The seed of clone `clone` of job `spec`'s random streams.
fn thread_seed(job: &JobSpec, spec: usize, clone: u32, options: &RunOptions) -> u64 {
    job.randseed.unwrap_or(options.seed ^ 0x89) ^ ((spec as u64) << 32) ^ u64::from(clone)
}

/// The bytes a log reads, writes and trims.
fn replayed_bytes(log: &crate::fio::iolog::IoLog) -> u64 {
    let bytes = log.entries.iter().map(|e| match e.action {
        crate::fio::iolog::Action::Io { len_bytes, .. } => u64::from(len_bytes),
        _ => 0,
    });
    bytes.sum()
}

/// The host stack whose costs a job's engine pays.
fn stack_kind(engine: IoEngine) -> zonelab_host::StackKind {
    match engine {
        IoEngine::Spdk => zonelab_host::StackKind::Passthrough,
        IoEngine::IoUringCmd => zonelab_host::StackKind::UringPassthrough,
        _ => zonelab_host::StackKind::Kernel,
    }
}

/// The path of a job's requests: around the kernel for passthrough engines,
/// else through the block layer with the job's scheduler (or the run's).
fn host_path(job: &JobSpec, options: &RunOptions) -> HostPath {
    if job.ioengine.is_passthrough() {
        return HostPath::Passthrough;
    }
    HostPath::Kernel(match job.scheduler.unwrap_or(options.scheduler) {
        Scheduler::None => SchedulerKind::None,
        Scheduler::MqDeadline => SchedulerKind::MqDeadline,
        Scheduler::Zinc => SchedulerKind::Zinc,
    })
}

fn job_error(job: &JobSpec, option: &str, message: String) -> JobError {
    JobError { location: job.origin.clone(), option: Some(option.to_string()), message }
}
