//! `read_iolog`: a thread replays a fio iolog instead of generating I/O.
//!
//! As fio's `read_iolog_get` does, an entry is not issued before its delay
//! (a version 3 log's timestamp gap, scaled by `replay_time_scale`) has
//! passed since the thread last issued, and a version 2 `wait` holds the
//! thread until its time from the job's start; `replay_no_stall` drops
//! both, so the log runs as fast as `iodepth` lets it. Unlike fio, an I/O
//! also waits for the earlier ones in flight it overlaps when either writes
//! (a read of data still being written, a reset of a zone being written),
//! and a sync for all of them. The log's offsets
//! are the device's: a write that is not at its zone's write pointer fails
//! as on a real zoned drive, and the run says which line it was.

use super::*;
use crate::fio::iolog::{self, Action, IoLog};
use std::sync::Arc;

/// A thread's place in the log it replays.
pub(super) struct ReplayState {
    log: Arc<IoLog>,
    path: String,
    /// The next entry to replay.
    next: usize,
    /// When the thread last issued (fio's `last_issue`): delays count from it.
    last_issue_ns: Nanos,
    no_stall: bool,
    time_scale_percent: u32,
    skip_mask: u8,
    /// The I/O `next_replay` just planned, until `issue` gives it a tag.
    pending: Option<InFlight>,
    /// The I/Os in flight, by tag.
    in_flight: BTreeMap<u32, InFlight>,
    failed_ios: u64,
    /// The first failed I/O's line and error.
    first_failure: Option<(u32, String)>,
}

/// A replayed I/O in flight: its line and the LBAs it touches.
#[derive(Debug, Clone, Copy)]
struct InFlight {
    line: u32,
    ddir: usize,
    slba: u64,
    end_lba: u64,
}

impl InFlight {
    /// Whether `self` must complete before `other` is issued: they overlap
    /// and one of them changes the data (a write, or a trim's reset).
    fn orders(&self, other: &InFlight) -> bool {
        let overlap = self.slba < other.end_lba && other.slba < self.end_lba;
        overlap && (self.ddir != DDIR_READ || other.ddir != DDIR_READ)
    }
}

impl ReplayState {
    fn new(log: Arc<IoLog>, replay: &Replay) -> Self {
        ReplayState {
            log,
            path: replay.path.clone(),
            next: 0,
            last_issue_ns: 0,
            no_stall: replay.no_stall,
            time_scale_percent: replay.time_scale_percent.max(1),
            skip_mask: replay.skip_mask,
            pending: None,
            in_flight: BTreeMap::new(),
            failed_ios: 0,
            first_failure: None,
        }
    }

    /// When the entry of `delay_us` may be issued (fio's `delay_since_ttime`).
    fn due_ns(&self, delay_us: u64) -> Nanos {
        if self.no_stall {
            return self.last_issue_ns;
        }
        let delay_ns = u128::from(delay_us) * u128::from(US) * 100 / u128::from(self.time_scale_percent);
        self.last_issue_ns.saturating_add(delay_ns.min(u128::from(RUN_NS_MAX)) as Nanos)
    }

    fn skips(&self, action: &Action) -> bool {
        match *action {
            Action::Io { ddir, .. } => self.skip_mask & (1 << ddir) != 0,
            Action::Sync => self.skip_mask & REPLAY_SKIP_SYNC != 0,
            Action::Wait { .. } => self.no_stall,
            Action::File => false,
        }
    }

    /// The I/O `next_replay` just planned was issued as `tag`.
    pub(super) fn note_tag(&mut self, tag: u32) {
        if let Some(io) = self.pending.take() {
            self.in_flight.insert(tag, io);
        }
    }

    /// The I/O of tag `tag` completed: its line, and whether it failed is counted.
    pub(super) fn completed(&mut self, tag: u32, error: Option<&str>) -> Option<u32> {
        let line = self.in_flight.remove(&tag)?.line;
        if let Some(error) = error {
            self.failed_ios += 1;
            self.first_failure.get_or_insert_with(|| (line, error.to_string()));
        }
        Some(line)
    }

    /// What deserves a word after the run: failed I/Os and lines not replayed.
    fn summary(&self, job: &JobSpec) -> Option<String> {
        let (line, error) = self.first_failure.as_ref()?;
        let left = self.log.entries.len() - self.next;
        Some(format!(
            "job '{}' ({}): replay of {}: {} I/O(s) failed, the first at line {line} ({error}); {left} of its {} \
             entries were not replayed (a zoned drive takes writes only at each zone's write pointer: a log \
             recorded on a used device needs its zones reset, or the same state, before it replays)",
            job.name,
            job.location_of("read_iolog"),
            self.path,
            self.failed_ios,
            self.log.entries.len()
        ))
    }
}

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// Reads `job`'s log and checks that every entry fits the device: one
    /// replay state, shared by the job's clones.
    pub(super) fn load_replay(&self, job: &JobSpec, k: usize) -> Result<Option<Arc<IoLog>>, JobError> {
        let Some(replay) = &job.replay else { return Ok(None) };
        let located = |message: String| JobError {
            location: job.location_of("read_iolog").to_string(),
            option: Some("read_iolog".into()),
            message,
        };
        if replay.path.is_empty() {
            let option =
                job.sources.iter().find(|s| s.name.starts_with("replay_")).map_or("replay_no_stall", |s| s.name);
            let message = "has no effect without read_iolog (the log to replay)".to_string();
            return Err(JobError { location: job.location_of(option).into(), option: Some(option.into()), message });
        }
        let log = iolog::read(&replay.path).map_err(|e| located(e.to_string()))?;
        for entry in &log.entries {
            if let Action::Io { ddir, offset_bytes, len_bytes } = entry.action {
                self.check_replayed_io(k, ddir, offset_bytes, u64::from(len_bytes))
                    .map_err(|m| located(format!("{}:{}: {m}", replay.path, entry.line)))?;
            }
        }
        Ok(Some(Arc::new(log)))
    }

    fn check_replayed_io(&self, k: usize, ddir: usize, offset_bytes: u64, len_bytes: u64) -> Result<(), String> {
        let space = self.spaces.get(k);
        let lba = space.lba_bytes;
        let zone_bytes = space.zones.zone_lbas * lba;
        let device_bytes = u64::from(space.zones.zones) * zone_bytes;
        let name = ["read", "write", "trim"][ddir];
        if !offset_bytes.is_multiple_of(lba) || !len_bytes.is_multiple_of(lba) {
            return Err(format!(
                "{name} of {len_bytes} B at {offset_bytes}: offsets and lengths must be multiples of the {lba} B LBA"
            ));
        }
        if offset_bytes.saturating_add(len_bytes) > device_bytes {
            return Err(format!("{name} of {len_bytes} B at {offset_bytes} ends past the device's {device_bytes} B"));
        }
        if ddir == DDIR_TRIM && (!offset_bytes.is_multiple_of(zone_bytes) || len_bytes != zone_bytes) {
            return Err(format!(
                "trim of {len_bytes} B at {offset_bytes}: the device has no deallocate, a trim replays as a zone \
                 reset, so it must cover exactly one zone ({zone_bytes} B at a multiple of {zone_bytes})"
            ));
        }
        Ok(())
    }

    /// The replay state of a thread of a job whose log is `log`.
    pub(super) fn replay_state(job: &JobSpec, log: Option<&Arc<IoLog>>) -> Option<Box<ReplayState>> {
        let (replay, log) = (job.replay.as_ref()?, log?);
        Some(Box::new(ReplayState::new(Arc::clone(log), replay)))
    }

    /// What a replaying thread issues next: the next entry once its delay
    /// passed; nothing while a sync waits for the I/Os before it.
    pub(super) fn next_replay(&mut self, now: Nanos, t: u32) -> Next {
        let k = self.space_of(t);
        let lba_bytes = self.spaces.get(k).lba_bytes;
        let thread = &mut self.threads[t as usize];
        let (start_ns, inflight) = (thread.start_ns, thread.inflight);
        let state = thread.replay.as_deref_mut().expect("a replaying thread");
        while let Some(entry) = state.log.entries.get(state.next).copied() {
            if state.skips(&entry.action) {
                state.next += 1;
                continue;
            }
            let due = match entry.action {
                Action::Wait { at_ms } => start_ns.saturating_add(at_ms.saturating_mul(MS)),
                _ => state.due_ns(entry.delay_us),
            };
            if now < due {
                return Next::Wait(due);
            }
            if matches!(entry.action, Action::Sync) && inflight > 0 {
                return Next::Blocked;
            }
            let Action::Io { ddir, offset_bytes, len_bytes } = entry.action else {
                // fio's file actions and syncs take their delay, then count as an issue.
                state.next += 1;
                state.last_issue_ns = now;
                continue;
            };
            let (slba, nlb) = (offset_bytes / lba_bytes, (u64::from(len_bytes) / lba_bytes) as u32);
            let io = InFlight { line: entry.line, ddir, slba, end_lba: slba + u64::from(nlb) };
            if state.in_flight.values().any(|earlier| earlier.orders(&io)) {
                // Not in fio: an I/O waits for the earlier ones it depends on (data it reads, a zone it resets).
                return Next::Blocked;
            }
            state.next += 1;
            state.last_issue_ns = now;
            state.pending = Some(io);
            let zone = self.spaces.get(k).zones.zone_of(slba);
            let (op, kind) = match ddir {
                DDIR_READ => (RequestOp::Read, IoKind::Data),
                DDIR_WRITE => {
                    self.track_write(k, zone, slba, nlb);
                    (RequestOp::Write, IoKind::Data)
                }
                _ => (RequestOp::ZoneReset, IoKind::TrimReset),
            };
            return Next::Io(Planned { ddir, op, slba, nlb, zone: Some(zone), kind });
        }
        Next::End
    }

    /// A replayed write at its zone's write pointer moves the pointer the
    /// zbd jobs plan with (a job after the replay writes after it); one
    /// elsewhere will fail and moves nothing.
    fn track_write(&mut self, k: usize, zone: u32, slba: u64, nlb: u32) {
        let zones = &mut self.spaces.get_mut(k).zones;
        let (room, sequential, _) = zones.state_of(zone);
        let planned_wp = zones.zslba(zone) + (zones.zcap_lbas - room);
        if sequential && slba == planned_wp && u64::from(nlb) <= room {
            zones.reserve(zone, u64::from(nlb));
        }
    }

    /// Warnings of the replaying threads whose I/O failed.
    pub(super) fn replay_warnings(&self) -> Vec<String> {
        let summaries = self.threads.iter().filter_map(|t| {
            let state = t.replay.as_deref()?;
            state.summary(&self.set.jobs[t.spec])
        });
        summaries.collect()
    }
}
