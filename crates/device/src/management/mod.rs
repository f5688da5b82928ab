//! Zone management as work that takes time on the device's resources.
//!
//! Finish and reset change the zone's state when they are accepted, then
//! queue their work as a [`Task`]: steps of firmware time (mapping updates,
//! in slices of `management.slice_ns`), padding program requests and erases.
//! Firmware work runs on the write path's FTL core, which also updates the
//! mapping for each write (`controller.write_ftl_ns`): while a task has
//! firmware work left the core takes turns, one management slice
//! (`management.slice_ns`) before each write ([`Device::ftl_turn`]), so
//! management takes throughput from writers and appenders but not from
//! readers (seed 003). Padding and erases
//! are reserved on the same dies as host I/O. One task runs at a time (the
//! firmware's management thread), in submission order.
//!
//! A step is only reserved once simulated time has reached its start
//! ([`Device::advance`] runs before every host command). With
//! `management.host_priority` (and, for padding, `finish.preempt`) a step
//! starts only once the resources it needs are idle, so a host command that
//! arrived meanwhile is served first: management fills the gaps host I/O
//! leaves. Without it a step starts at its issue time and queues with host
//! work in arrival order (with no pause, a finish's padding is issued at
//! once).
//! Either way the completion of a finish or reset can depend on host
//! commands that come after it, so [`Device::start`] may answer
//! [`Started::Pending`]; [`Device::advance`] later reports the completion.
//! [`Device::submit`] runs a pending command to its end right away (as if no
//! further command arrived), for callers that wait for each command.
//!
//! - [`finish`]: padding (request size, pause, pre-emption) or metadata-only.
//! - [`reset`]: unmapping by occupancy, erase scope and erase time (inside
//!   the reset, in idle time after it, or before the next program), and
//!   static or dynamic zone-to-block-group mapping.

pub mod finish;
pub mod reset;

use crate::device::Device;
use crate::front::command::{CmdResult, Command, Completion, Started, Tag};
use crate::scheduler::{Next, Phase, Task};
use crate::status::Status;
use zonelab_flash::BlockAddr;
use zonelab_sim::{Nanos, TIME_NS_MAX};

impl Device {
    /// Starts `cmd` at `submit_ns`: a finish or reset may complete later.
    pub fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        self.advance(submit_ns);
        let completion = self.execute(submit_ns, cmd, read_out);
        match self.scheduler.background.queued.take() {
            Some(tag) => {
                debug_assert!(completion.status.is_success());
                self.advance(submit_ns);
                Started::Pending(tag)
            }
            None => Started::Done(completion),
        }
    }

    /// Submits `cmd` and waits for it: a pending finish or reset runs to its
    /// end as if no other command arrived meanwhile.
    pub fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        match self.start(submit_ns, cmd, read_out) {
            Started::Done(c) => c,
            Started::Pending(tag) => self.run_until_completed(tag),
        }
    }

    /// When the next management step could start if no host command came
    /// first; `None` when there is no management work.
    pub fn next_event_ns(&self) -> Option<Nanos> {
        self.next_step().map(Next::start_ns)
    }

    /// Reserves every management step that starts before `until_ns`.
    pub fn advance(&mut self, until_ns: Nanos) {
        // Runs before every host command: with nothing due, leave before sizing the bound.
        if self.next_step().is_none_or(|next| next.start_ns() >= until_ns) {
            return;
        }
        let steps_max = self.management_steps_left_max();
        for _ in 0..=steps_max {
            let Some(next) = self.next_step() else { return };
            if next.start_ns() >= until_ns {
                return;
            }
            self.take_step(next);
        }
        panic!("management work did not settle within the {steps_max} steps it can take");
    }

    /// The most steps the queued management work can still take: every
    /// firmware slice, one padding request per unit, one step per erase and
    /// per task completion. The configuration bounds the slices of a task
    /// (`DeviceConfig::validate`), so this is finite and known up front.
    fn management_steps_left_max(&self) -> u64 {
        let slice_ns = self.config.management.slice_ns;
        let phase_steps = |phase: &Phase| match *phase {
            Phase::Firmware { left_ns } => left_ns.div_ceil(slice_ns),
            Phase::Pad { units_end, .. } => units_end,
            Phase::Erase { .. } => 1,
        };
        let tasks: u64 =
            self.scheduler.background.queue.iter().map(|t| 1 + t.phases.iter().map(phase_steps).sum::<u64>()).sum();
        // A plug programs a unit of a TL_opened zone: at most a chunk's worth each.
        let plugs = self.translation.tl.len() as u64 * self.layout.zcap_lbas.div_ceil(self.layout.lbas_per_chunk);
        tasks + self.scheduler.background.pending_erase.len() as u64 + plugs
    }

    /// Completions of pending commands, in the order they completed.
    pub fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        std::mem::take(&mut self.scheduler.background.completed)
    }

    /// Management tasks accepted but not completed.
    pub fn pending_tasks(&self) -> usize {
        self.scheduler.background.queue.len()
    }

    fn run_until_completed(&mut self, tag: Tag) -> Completion {
        let steps_max = self.management_steps_left_max();
        for _ in 0..=steps_max {
            if let Some(i) = self.scheduler.background.completed.iter().position(|&(t, _)| t == tag) {
                return self.scheduler.background.completed.remove(i).1;
            }
            let start_ns = self.head_start_ns().expect("a pending command has a task");
            self.take_step(Next::Head(start_ns));
        }
        panic!("management task {tag} did not complete within the {steps_max} steps it can take");
    }

    /// Queues `phases` as the task of the command being handled, ready from `ready_ns`.
    pub(crate) fn queue_task(&mut self, ready_ns: Nanos, phases: Vec<Phase>, host_priority: bool) {
        let m = &mut self.scheduler.background;
        assert!(m.queued.is_none(), "one task per command");
        let tag = m.next_tag;
        m.next_tag += 1;
        let host_priority = host_priority && self.config.management.host_priority;
        let submit_ns = self.last_submit_ns;
        // Programs the command already reserved (a finish's partly filled units) count as its work.
        let end_ns = ready_ns.max(self.op_done_max_ns);
        let task = Task { tag, submit_ns, phases: phases.into(), next_ns: ready_ns, end_ns, host_priority };
        m.queue.push_back(task);
        m.queued = Some(tag);
    }

    fn next_step(&self) -> Option<Next> {
        let head = self.head_start_ns().map(Next::Head);
        let erase = self.background_erase();
        let first = match (head, erase) {
            (Some(h), Some(e)) => Some(if e.start_ns() < h.start_ns() { e } else { h }),
            (h, e) => h.or(e),
        };
        match (first, self.background_plug()) {
            (Some(f), Some(p)) => Some(if p.start_ns() < f.start_ns() { p } else { f }),
            (f, p) => f.or(p),
        }
    }

    /// When the head task's next step can start.
    fn head_start_ns(&self) -> Option<Nanos> {
        let task = self.scheduler.background.queue.front()?;
        if !task.host_priority {
            // Without priority a step is issued at its time and queues with host work.
            return Some(task.next_ns);
        }
        let start_ns = match task.phases.front() {
            None => task.next_ns,
            Some(Phase::Firmware { left_ns: 0 }) => task.next_ns,
            // Busy writers keep the core booked ahead: then the task moves
            // on in their turns ([`Device::ftl_turn`]).
            Some(Phase::Firmware { .. }) => task.next_ns.max(self.controller.ftl.free_at_ns()),
            Some(&Phase::Pad { zone, units_end, per_request, .. }) => {
                // A request goes once the dies it programs are idle, so a host
                // command that arrived meanwhile is already queued there: it
                // waits for one padding program at most.
                let first = self.controller.zone_io[zone as usize].flushed_units;
                let last = units_end.min(first + per_request).max(first + 1);
                let d_zone = u64::from(self.translation.mapping.d_zone());
                let idle_ns = (first..last.min(first + d_zone))
                    .map(|unit| {
                        self.scheduler.flash.die_free_at_ns(self.translation.mapping.unit_target(zone, unit).0.die)
                    })
                    .max()
                    .unwrap_or(0);
                task.next_ns.max(idle_ns)
            }
            Some(Phase::Erase { .. }) => task.next_ns,
        };
        Some(start_ns)
    }

    /// The pending erase that could start first, if erases run in idle time.
    fn background_erase(&self) -> Option<Next> {
        if self.config.management.reset.erase_at != crate::config::EraseAt::Async {
            return None;
        }
        let preempt = self.config.management.reset.erase_preempt;
        self.scheduler
            .background
            .pending_erase
            .iter()
            .map(|(&key, &ready)| {
                let start_ns = if preempt { ready.max(self.scheduler.flash.die_free_at_ns(key.0)) } else { ready };
                Next::Erase { key, start_ns }
            })
            .min_by_key(|n| n.start_ns())
    }

    fn take_step(&mut self, next: Next) {
        match next {
            Next::Erase { key: (die, fbg), start_ns } => {
                self.erase_pending(die, fbg, start_ns);
            }
            Next::Head(start_ns) => self.head_step(start_ns),
            Next::Plug { zone, unit, start_ns } => self.plug_unit_ahead(zone, unit, start_ns),
        }
    }

    /// Runs one step of the head task from `start_ns`; completes the task
    /// when it has no phase left.
    fn head_step(&mut self, start_ns: Nanos) {
        let slice_ns = self.config.management.slice_ns;
        let task = self.scheduler.background.queue.front_mut().expect("a head task");
        let Some(phase) = task.phases.front_mut() else {
            return self.complete_head();
        };
        let (end_ns, next_ns, phase_done) = match phase {
            Phase::Firmware { left_ns } => {
                let slice = (*left_ns).min(slice_ns);
                *left_ns -= slice;
                let done = *left_ns == 0;
                let end = self.controller.ftl.reserve(start_ns, slice);
                (end, end, done)
            }
            &mut Phase::Pad { zone, units_end, per_request, pause_ns } => {
                // The next request may go `pause_ns` after this one.
                let end = self.pad_request(zone, units_end, per_request, start_ns);
                let done = self.controller.zone_io[zone as usize].flushed_units >= units_end;
                (end, if done { end } else { start_ns + pause_ns }, done)
            }
            &mut Phase::Erase { zone, fbg } => {
                let mut end = start_ns;
                for die in self.translation.mapping.fcg_dies(zone) {
                    end = end.max(self.erase_pending(die, fbg, start_ns));
                }
                (end, end, true)
            }
        };
        let task = self.scheduler.background.queue.front_mut().expect("a head task");
        debug_assert!(end_ns >= start_ns && next_ns >= start_ns);
        task.end_ns = task.end_ns.max(end_ns);
        task.next_ns = next_ns;
        if phase_done {
            // A phase starts once everything before it is done.
            task.next_ns = task.next_ns.max(task.end_ns);
            task.phases.pop_front();
        }
        if task.phases.is_empty() {
            self.complete_head();
        }
    }

    fn complete_head(&mut self) {
        let task = self.scheduler.background.queue.pop_front().expect("a head task");
        let complete_ns = task.end_ns + self.config.controller.complete_ns;
        assert!(complete_ns > task.submit_ns, "a task completes after it was sent");
        let completion =
            Completion { status: Status::Success, submit_ns: task.submit_ns, complete_ns, result: CmdResult::None };
        self.scheduler.background.completed.push((task.tag, completion));
        if let Some(next) = self.scheduler.background.queue.front_mut() {
            next.next_ns = next.next_ns.max(task.end_ns);
            next.end_ns = next.end_ns.max(task.end_ns);
        }
    }

    /// Before a program into `addr`: erases its block group on that die if a
    /// reset left it to erase (deferred erase, or a dynamically mapped group
    /// taken before the idle-time erase reached it).
    pub(crate) fn erase_before_program(&mut self, addr: BlockAddr, at_ns: Nanos) {
        let fbg = addr.block / self.layout.fbg_blocks;
        if self.scheduler.background.pending_erase.contains_key(&(addr.die, fbg)) {
            self.erase_pending(addr.die, fbg, at_ns);
        }
    }

    /// Erases block group `fbg` on `die` if it is pending; returns when done.
    pub(crate) fn erase_pending(&mut self, die: u32, fbg: u32, at_ns: Nanos) -> Nanos {
        let Some(ready_ns) = self.scheduler.background.pending_erase.remove(&(die, fbg)) else {
            return at_ns;
        };
        let all = self.config.management.reset.erase == crate::config::EraseScope::All;
        let mut end = at_ns;
        for block in self.translation.mapping.fbg_blocks(fbg) {
            if all || self.scheduler.flash.pages_written(die, 0, block) > 0 {
                end = end.max(self.scheduler.flash.erase(at_ns.max(ready_ns), BlockAddr { die, block }));
            }
        }
        end
    }

    /// Drops the padding still queued for `zone` (it was reset or went
    /// offline: its blocks will be erased anyway).
    pub(crate) fn cancel_padding(&mut self, zone: u32) {
        for task in &mut self.scheduler.background.queue {
            task.phases.retain(|p| !matches!(*p, Phase::Pad { zone: z, .. } if z == zone));
        }
    }

    /// Runs a write's `work_ns` of FTL work from `ready_ns` on; returns
    /// when it is done. While the head task has firmware work left, the core
    /// takes its two queues in turn: the write first waits for one
    /// management slice.
    pub(crate) fn ftl_turn(&mut self, ready_ns: Nanos, work_ns: Nanos) -> Nanos {
        if work_ns == 0 {
            return ready_ns;
        }
        let slice_max_ns = self.config.management.slice_ns;
        let turn_ns = match self.scheduler.background.queue.front_mut() {
            Some(task) if task.submit_ns <= ready_ns => match task.phases.front_mut() {
                Some(Phase::Firmware { left_ns }) => {
                    let slice = (*left_ns).min(slice_max_ns);
                    *left_ns -= slice;
                    slice
                }
                _ => 0,
            },
            _ => 0,
        };
        let end_ns = self.controller.ftl.reserve(ready_ns, turn_ns + work_ns);
        if turn_ns > 0 {
            self.after_turn(end_ns - work_ns);
        }
        debug_assert!(end_ns >= ready_ns + work_ns);
        end_ns
    }

    /// The head task's slice that ran in a write's turn ended at `slice_end_ns`.
    fn after_turn(&mut self, slice_end_ns: Nanos) {
        let task = self.scheduler.background.queue.front_mut().expect("the task that took the turn");
        task.end_ns = task.end_ns.max(slice_end_ns);
        task.next_ns = task.next_ns.max(slice_end_ns);
        // A phase whose last slice went in a write's turn is done here: left
        // at the head it would wait for an idle core, which writers at queue
        // depth keep booked ahead.
        if matches!(task.phases.front(), Some(Phase::Firmware { left_ns: 0 })) {
            task.phases.pop_front();
            task.next_ns = task.next_ns.max(task.end_ns);
            if task.phases.is_empty() {
                self.complete_head();
            }
        }
    }

    /// Reserves all management work, as if the device were left alone.
    pub fn drain(&mut self) {
        self.advance(TIME_NS_MAX);
    }
}
