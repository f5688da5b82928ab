//! The host path of a request: the thread issues it on its CPU (the host
//! stack's submission cost), its block layer takes it (and may hold, merge
//! or lock it), the device runs it, and the thread's CPU sees it complete
//! after the stack's completion cost. Also the device's own management
//! steps (finishes and resets it works on in the background) and its
//! utilisation as /proc/diskstats counts it.

use super::*;
use zonelab_device::{Command, Payload, Started, ZoneAction};
use zonelab_host::HostRequest;

/// Device utilisation as /proc/diskstats counts it: time with at least one
/// request outstanding.
#[derive(Debug, Default)]
pub(super) struct DiskBusy {
    /// End of the current busy span.
    span_end_ns: Nanos,
    busy_ns: Nanos,
}

impl DiskBusy {
    /// A request is at the device from `start_ns` until `complete_ns`.
    pub(super) fn track(&mut self, start_ns: Nanos, complete_ns: Nanos) {
        let from = start_ns.max(self.span_end_ns);
        if complete_ns > from {
            self.busy_ns += complete_ns - from;
            self.span_end_ns = complete_ns;
        }
    }

    /// Time busy so far.
    pub(super) fn busy_ns(&self) -> Nanos {
        self.busy_ns
    }
}

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// The thread issues a request: it counts against the job's size and
    /// rates, takes the host stack's submission time on the thread's CPU,
    /// and reaches the block layer once submitted.
    pub(super) fn issue(&mut self, now: Nanos, t: u32, planned: Planned) {
        let k = self.space_of(t);
        self.note_issued(t, &planned);
        if MULTI && self.spaces.get(k).emulated && matches!(planned.op, RequestOp::ZoneReset | RequestOp::ZoneFinish) {
            return self.host_only(now, t, planned);
        }
        let Planned { ddir, op, slba, nlb, zone, kind } = planned;
        let space = self.spaces.get_mut(k);
        let zone_locked = zone.filter(|&z| op != RequestOp::Read && space.zones.is_sequential(z));
        let ready_ns = zone_locked.map_or(now, |z| now.max(space.zone_submit_ns[z as usize]));
        let thread = &mut self.threads[t as usize];
        let host_ns = ring_idle_cost_ns(thread, &self.host, kind, ready_ns) + sync_call_ns(thread, &self.host, kind);
        let submit_ns = thread.cpu.reserve(ready_ns, thread.submit_cost_ns + host_ns);
        if let Some(z) = zone_locked {
            space.zone_submit_ns[z as usize] = submit_ns;
        }
        let status = Status::Success;
        let placement = if op == RequestOp::Write && thread.placement.is_some() {
            write_placement(thread, slba * space.lba_bytes)
        } else {
            None
        };
        let io = Io {
            thread: t,
            ddir,
            kind,
            op,
            slba,
            nlb,
            zone,
            issue_ns: now,
            submit_ns,
            status,
            verify_error: false,
            placement,
        };
        let tag = self.new_io(io);
        if self.threads[t as usize].issue_hooks {
            self.issue_hooks(now, t, tag);
        }
        if submit_ns == now {
            self.insert(now, tag);
        } else {
            self.schedule(submit_ns, Event::Insert(tag));
        }
    }

    /// A reset or finish of fio's emulated zones (`zonemode=zbd` on an NVM
    /// namespace): fio only moves its own write pointer (`__zbd_reset_zone`
    /// issues nothing on a device that is not zoned), so it completes at once.
    #[inline(never)]
    fn host_only(&mut self, now: Nanos, t: u32, planned: Planned) {
        let Planned { ddir, op, slba, nlb, zone, kind } = planned;
        let status = Status::Success;
        let io = Io {
            thread: t,
            ddir,
            kind,
            op,
            slba,
            nlb,
            zone,
            issue_ns: now,
            submit_ns: now,
            status,
            verify_error: false,
            placement: None,
        };
        let tag = self.new_io(io);
        if self.threads[t as usize].issue_hooks {
            self.issue_hooks(now, t, tag);
        }
        self.schedule(now, Event::Reap(tag));
    }

    /// A replaying thread notes the I/O's tag before it can complete (a
    /// failure names its line); `write_iolog` logs what fio's `td_io_queue`
    /// logs: data, trims and verify's reads, not the resets zonemode=zbd
    /// issues itself. Out of line: most threads do neither.
    #[inline(never)]
    fn issue_hooks(&mut self, now: Nanos, t: u32, tag: u32) {
        let io = self.ios[tag as usize];
        let lba_bytes = self.spaces.get(self.space_of(t)).lba_bytes;
        let thread = &mut self.threads[t as usize];
        if let Some(state) = thread.replay.as_deref_mut() {
            state.note_tag(tag);
        }
        if matches!(io.kind, IoKind::ResetForWrite | IoKind::Finish) {
            return;
        }
        let Some(logs) = thread.logs.as_deref_mut() else { return };
        let bytes = u64::from(io.nlb) * lba_bytes;
        logs.issued((now - thread.start_ns) / 1000, io.ddir, io.slba * lba_bytes, bytes);
    }

    /// What issuing `planned` changes in the thread and the zones: bytes and
    /// rates, the queue depth, a reset's zone, the ranges verify reads back.
    fn note_issued(&mut self, t: u32, planned: &Planned) {
        let &Planned { ddir, op, slba, nlb, zone, kind } = planned;
        let space = self.spaces.get_mut(self.space_of(t));
        let thread = &mut self.threads[t as usize];
        let bytes = u64::from(nlb) * space.lba_bytes;
        let counted = matches!(kind, IoKind::Data | IoKind::TrimReset | IoKind::OpenBlock);
        if counted {
            thread.issued_bytes += bytes;
            thread.issued_ios += 1;
        }
        // Rates touch only the thread's random stream and next times: they
        // are charged last, looking the job up only for a limited thread.
        let rate_charged = counted && thread.options.rate_limited;
        thread.inflight += 1;
        thread.stats.depth.add(thread.inflight);
        if let (Some(z), true) = (zone, matches!(op, RequestOp::ZoneReset)) {
            space.zones.set_empty(z);
            space.zone_generation[z as usize] += 1;
            let zone_lbas = space.zones.zone_lbas;
            thread.verify_ranges.retain(|&(lba, _)| lba / zone_lbas != u64::from(z));
            if kind == IoKind::ResetForWrite || kind == IoKind::TrimReset {
                thread.stats.zone_resets += 1;
            }
        }
        let written = op == RequestOp::Write || op == RequestOp::Append;
        if written && thread.options.read_back {
            thread.verify_ranges.push((slba, nlb));
        }
        if rate_charged {
            self.rate_charge(t, ddir, bytes);
        }
    }

    /// Keeps `io` until it completes; its slot is its tag.
    fn new_io(&mut self, io: Io) -> u32 {
        match self.free_ios.pop() {
            Some(tag) => {
                self.ios[tag as usize] = io;
                tag
            }
            None => {
                self.ios.push(io);
                (self.ios.len() - 1) as u32
            }
        }
    }

    /// The request `tag` is submitted: its block layer takes it.
    #[inline]
    pub(super) fn insert(&mut self, now: Nanos, tag: u32) {
        let io = &self.ios[tag as usize];
        let k = self.space_of(io.thread);
        let path = self.threads[io.thread as usize].path;
        let space = self.spaces.get_mut(k);
        // The kernel locks the zones of a zoned device only, not fio's emulated ones.
        let locked_zone = io.zone.filter(|&z| space.zones.is_sequential(z) && !(MULTI && space.emulated));
        let request = HostRequest { tag: u64::from(tag), op: io.op, slba: io.slba, nlb: io.nlb, locked_zone };
        let layer = space.layers.get_mut(path);
        if layer.passes_through() {
            // No scheduler (never ZINC): the request is at the device at once.
            let dispatch = layer.pass(request);
            self.submit_dispatch(now, k, path, dispatch);
            return;
        }
        let mut out = std::mem::take(&mut self.dispatched);
        layer.insert(request, &mut out);
        self.send(now, k, path, &mut out);
        self.dispatched = out;
        // Only an insert into ZINC can hold a command back; other layers'
        // inserts find the timer as the last ZINC insert or epoch left it.
        if path == HostPath::Kernel(SchedulerKind::Zinc) {
            self.arm_epoch(now, k);
        }
    }

    /// Hands dispatched requests to the device, through mq-deadline's lock.
    pub(super) fn send(&mut self, now: Nanos, k: usize, path: HostPath, out: &mut Vec<Dispatch>) {
        for &dispatch in out.iter() {
            if path.locks_dispatch() {
                let at = self.spaces.get_mut(k).mq_deadline_lock.reserve(now, self.host.mq_deadline_dispatch_ns);
                self.schedule(at, Event::DeviceSubmit { space: Self::space_tag(k), path, id: dispatch.id });
            } else {
                self.submit_dispatch(now, k, path, dispatch);
            }
        }
        out.clear();
    }

    /// A dispatch that waited for mq-deadline's lock reaches the device.
    pub(super) fn device_submit(&mut self, now: Nanos, k: usize, path: HostPath, id: u32) {
        let dispatch = self.spaces.get(k).layers.get(path).at_device(id);
        self.submit_dispatch(now, k, path, dispatch);
    }

    /// The device starts `dispatch`; its completion is an event, at once or
    /// once the device's background work finishes it. Inlined into its
    /// callers: one call fewer per request.
    #[inline]
    fn submit_dispatch(&mut self, now: Nanos, k: usize, path: HostPath, dispatch: Dispatch) {
        if self.data_mode {
            return self.submit_dispatch_data(now, k, path, dispatch);
        }
        // No data: nothing to write or read back (verify needs data).
        let mut command = command_of(&dispatch, Payload::None, self.spaces.get(k).zones.zone_lbas);
        if self.placement {
            self.place(&mut command, &dispatch);
        }
        let started = self.start_in(now, k, &command, None);
        self.dispatch_started(now, k, path, dispatch.id, started);
    }

    /// The device starts `command` on space `k`'s namespace.
    #[inline(always)]
    fn start_in(&mut self, now: Nanos, k: usize, command: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        if MULTI {
            self.device.start_in(self.spaces.get(k).nsid, now, command, read_out)
        } else {
            self.device.start(now, command, read_out)
        }
    }

    /// [`Self::submit_dispatch`] on a device that keeps data: writes carry
    /// their pattern, and verify's reads are checked.
    #[inline(never)]
    fn submit_dispatch_data(&mut self, now: Nanos, k: usize, path: HostPath, dispatch: Dispatch) {
        let first_tag = dispatch.first_tag as u32;
        let first = &self.ios[first_tag as usize];
        let verify_read = first.kind == IoKind::VerifyRead;
        let verify = self.threads[first.thread as usize].options.verify;
        let mut buffer = std::mem::take(&mut self.buffer);
        let payload = self.write_payload(&mut buffer, k, &dispatch, verify);
        let mut command = command_of(&dispatch, payload, self.spaces.get(k).zones.zone_lbas);
        if self.placement {
            self.place(&mut command, &dispatch);
        }
        let mut read_buffer = Vec::new();
        let read_out = if verify_read {
            read_buffer.resize(u64::from(dispatch.nlb) as usize * self.spaces.get(k).lba_bytes as usize, 0);
            Some(&mut read_buffer[..])
        } else {
            None
        };
        let started = self.start_in(now, k, &command, read_out);
        self.buffer = buffer;
        if let (true, Started::Done(completion)) = (verify_read, &started) {
            if completion.status.is_success() {
                self.check_read_back(first_tag, &read_buffer, verify, dispatch.slba);
            }
        }
        self.dispatch_started(now, k, path, dispatch.id, started);
    }

    /// A write of a thread with `fdp=1` names the placement identifier its
    /// request chose (passthrough engines only: nothing merges it).
    #[inline(never)]
    fn place(&self, command: &mut Command<'_>, dispatch: &Dispatch) {
        if let Command::Write { placement, .. } = command {
            *placement = self.ios[dispatch.first_tag as usize].placement;
        }
    }

    /// The device took dispatch `id`: its completion is an event at the
    /// time the device gives, or once its background work finishes it.
    #[inline]
    fn dispatch_started(&mut self, now: Nanos, k: usize, path: HostPath, id: u32, started: Started) {
        let completion = match started {
            Started::Done(completion) => completion,
            Started::Pending(tag) => {
                self.device_pending.insert(tag, (Self::space_tag(k), path, id));
                self.device_events(now);
                return;
            }
        };
        self.spaces.get_mut(k).busy.track(now, completion.complete_ns);
        let done = Event::DeviceDone { space: Self::space_tag(k), path, id, status: completion.status };
        self.schedule(completion.complete_ns, done);
        if self.device.pending_tasks() > 0 || self.wake_at_ns.is_some() {
            self.device_events(now);
        }
    }

    /// The device's next management step may start.
    pub(super) fn device_wake(&mut self, now: Nanos) {
        if self.wake_at_ns == Some(now) {
            self.wake_at_ns = None;
            self.device.advance(now + 1);
            self.device_events(now);
        }
    }

    /// Delivers the management commands the device completed and arranges
    /// to wake when its next management step may start.
    fn device_events(&mut self, now: Nanos) {
        for (tag, completion) in self.device.take_completed() {
            let (space, path, id) = self.device_pending.remove(&tag).expect("a pending device tag");
            self.spaces.get_mut(usize::from(space)).busy.track(completion.submit_ns, completion.complete_ns);
            let done = Event::DeviceDone { space, path, id, status: completion.status };
            self.schedule(completion.complete_ns.max(now), done);
        }
        if let Some(next) = self.device.next_event_ns().map(|t| t.max(now)) {
            if self.wake_at_ns != Some(next) {
                self.wake_at_ns = Some(next);
                self.schedule(next, Event::DeviceWake);
            }
        }
    }

    /// The device completed dispatch `id` with `status`: each request merged
    /// into it goes to its thread, and what the block layer releases now
    /// goes to the device.
    pub(super) fn device_done(&mut self, now: Nanos, k: usize, path: HostPath, id: u32, status: Status) {
        let layer = self.spaces.get_mut(k).layers.get_mut(path);
        if layer.passes_through() {
            // One request, and nothing waits behind it in the layer.
            let tag = layer.complete_passed(id);
            self.deliver(now, tag as u32, status, true);
            return;
        }
        let mut tags = std::mem::take(&mut self.tags);
        // Not `dispatched`: a request reaped below may be inserted, and uses that.
        let mut released = std::mem::take(&mut self.released);
        tags.clear();
        self.spaces.get_mut(k).layers.get_mut(path).complete(id, &mut tags, &mut released);
        // The last delivery ends the handler when nothing was released (the
        // buffers' return below is no step of the simulation).
        let last_index = if released.is_empty() { tags.len().checked_sub(1) } else { None };
        for (index, &tag) in tags.iter().enumerate() {
            self.deliver(now, tag as u32, status, Some(index) == last_index);
        }
        if !released.is_empty() {
            self.send(now, k, path, &mut released);
        }
        self.tags = tags;
        self.released = released;
    }

    /// Request `tag` completed: its thread sees it now, or after the
    /// completions its CPU takes before it. `last`: the caller's event
    /// handler does nothing after this.
    fn deliver(&mut self, now: Nanos, tag: u32, status: Status, last: bool) {
        let io = &mut self.ios[tag as usize];
        io.status = status;
        let t = io.thread;
        let thread = &mut self.threads[t as usize];
        if thread.complete_cost_ns == 0 && thread.reap_cost_ns == 0 {
            self.reap(now, tag);
            return;
        }
        debug_assert!(thread.reaping || thread.unseen.is_empty(), "only a reaping thread has completions waiting");
        if last && !thread.reaping && thread.cpu.free_at_ns() <= now && self.events.peek_ns() != Some(now) {
            // Nothing else is due now and the handler ends here: the
            // ReapNext event would be the very next one popped, and would
            // find the CPU free for this completion alone. It is taken at
            // once, in the same order, without the queue.
            debug_assert!(self.events.peek_ns().is_none_or(|next_ns| next_ns > now));
            return self.take_completion(now, t, tag, false);
        }
        // The thread's CPU takes completions one at a time.
        thread.unseen.push_back((now, tag));
        if !std::mem::replace(&mut thread.reaping, true) {
            self.schedule(now, Event::ReapNext(t));
        }
    }

    /// The thread's CPU takes its oldest completion once it is free of
    /// earlier completions and submissions: the completion path's CPU time
    /// (`complete_cost_ns`) and the wait for it are inside the request's
    /// latency, the engine's reaping after it (`reap_cost_ns`) is not.
    pub(super) fn reap_next(&mut self, now: Nanos, t: u32) {
        let thread = &mut self.threads[t as usize];
        assert!(thread.reaping);
        let Some(&(done_ns, tag)) = thread.unseen.front() else {
            thread.reaping = false;
            return;
        };
        let at_ns = done_ns.max(thread.cpu.free_at_ns());
        if at_ns > now {
            self.schedule(at_ns, Event::ReapNext(t));
            return;
        }
        thread.unseen.pop_front();
        // It waited while the thread was busy: the reaping call returns it with others.
        self.take_completion(now, t, tag, done_ns < now);
    }

    /// The thread's CPU, free now, takes completion `tag` (no longer among
    /// those waiting; `batched`: it waited), and the next waiting one after it.
    #[inline(always)]
    fn take_completion(&mut self, now: Nanos, t: u32, tag: u32, batched: bool) {
        let thread = &mut self.threads[t as usize];
        debug_assert!(thread.cpu.free_at_ns() <= now, "the CPU is free for the completion");
        let seen_ns = thread.cpu.reserve(now, thread.complete_cost_ns);
        thread.reap_last_ns = if batched { thread.reap_batched_cost_ns } else { thread.reap_cost_ns };
        let free_ns = thread.cpu.reserve(seen_ns, thread.reap_last_ns);
        let more = !thread.unseen.is_empty();
        thread.reaping = more;
        if seen_ns == now {
            self.reap(now, tag);
        } else {
            self.schedule(seen_ns, Event::Reap(tag));
        }
        if more {
            self.schedule(free_ns, Event::ReapNext(t));
        }
    }
}

/// The placement identifier of a write at `offset_bytes` of a thread with
/// `fdp=1` (fio's `dp_fill_dspec_data`, for writes only). Out of line:
/// most threads place nothing.
#[inline(never)]
fn write_placement(thread: &mut Thread, offset_bytes: u64) -> Option<u16> {
    thread.placement.as_deref_mut().map(|p| p.pick(offset_bytes))
}

/// Whether an io_uring job issues requests of `kind` beside its ring:
/// fio issues zone resets, finishes and softFinish fills as synchronous
/// calls, so they leave the ring idle.
fn beside_ring(kind: IoKind) -> bool {
    !matches!(kind, IoKind::Data | IoKind::OpenBlock | IoKind::VerifyRead)
}

/// The extra host cost of a request of `kind` that an io_uring job issues
/// as a synchronous call.
fn sync_call_ns(thread: &Thread, host: &HostConfig, kind: IoKind) -> Nanos {
    if thread.options.io_uring && beside_ring(kind) {
        host.sync_call_ns
    } else {
        0
    }
}

/// The wait for a sleeping submission-queue polling thread (or, after a
/// shorter idle, for the job's CPU to leave a deep idle state), for a request
/// of `kind` the thread submits at `ready_ns`.
fn ring_idle_cost_ns(thread: &mut Thread, host: &HostConfig, kind: IoKind, ready_ns: Nanos) -> Nanos {
    if !thread.options.sq_poll || beside_ring(kind) {
        return 0;
    }
    // fio sets the ring up before the job's zone set-up (zone reports and
    // resets) and any wait for earlier jobs, so the first submission finds
    // the thread asleep: ConfZNS++'s softFinish runs paid the wake-up on
    // every operation, the first too (the fastest of 15 took 167 µs).
    let cost_ns = match thread.ring_last_ns {
        None => host.sq_poll.wakeup_ns,
        Some(last_ns) => host.sq_poll.idle_cost_ns(last_ns.min(ready_ns), ready_ns),
    };
    thread.ring_last_ns = Some(ready_ns);
    cost_ns
}

/// The NVMe command of `dispatch`, carrying `payload` if it writes.
fn command_of<'p>(dispatch: &Dispatch, payload: Payload<'p>, zone_lbas: u64) -> Command<'p> {
    let (slba, nlb) = (dispatch.slba, dispatch.nlb);
    match dispatch.op {
        RequestOp::Read => Command::Read { slba, nlb },
        RequestOp::Write => Command::Write { slba, nlb, payload, fua: false, placement: None },
        RequestOp::Append => Command::Append { zslba: slba - slba % zone_lbas, nlb, payload, fua: false },
        RequestOp::ZoneReset => Command::ZoneMgmtSend { action: ZoneAction::Reset, slba, select_all: false },
        RequestOp::ZoneFinish => Command::ZoneMgmtSend { action: ZoneAction::Finish, slba, select_all: false },
    }
}
