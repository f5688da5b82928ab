//! Zone management as work that takes time on the device's resources:
//! functions over the `Backend` that the NVMe front calls.
//!
//! Finish and reset change the zone's state when they are accepted, then
//! queue their work as a task: steps of firmware time (mapping updates, in
//! slices of `management.slice_ns`), padding program requests and erases.
//! Firmware work runs on the write path's FTL core, which also updates the
//! mapping for each write (`controller.write_ftl_ns`): while a task has
//! firmware work left the core takes turns, one management slice
//! (`management.slice_ns`) before each write (`ftl_turn`), and management
//! also takes the core's idle time up to each write's FTL work
//! (`idle_core_slices`), so it takes core time from writers and appenders
//! but not from readers (seed 003). A reset's unmapping may also hold the
//! write path's programs (`Phase::Hold`, `reset.unmap_holds_programs`).
//! Padding and erases are reserved on the same dies as host I/O. One
//! task runs at a time (the firmware's management thread), in submission
//! order or, with `management.order = "rounds"`, in rounds: the tasks
//! waiting when a round starts, in an order drawn from the device's seed
//! (`scheduler::Rounds`).
//!
//! A step is only reserved once simulated time has reached its start
//! ([`Device::advance`](crate::Device::advance) runs before every host
//! command). With `management.host_priority` (and, for padding,
//! `finish.preempt`) a step starts only once the resources it needs are
//! idle, so a host command that arrived meanwhile is served first:
//! management fills the gaps host I/O leaves; with `finish.pad_turns`
//! padding also takes its turn among the zones being programmed
//! (`take_pad_turns`). Without it a step starts at its
//! issue time and queues with host work in arrival order (with no pause, a
//! finish's padding is issued at once). Either way the completion of a finish
//! or reset can depend on host commands that come after it, so
//! [`Device::start`](crate::Device::start) may answer
//! [`Started::Pending`](crate::Started::Pending);
//! [`Device::advance`](crate::Device::advance) later reports the completion.
//! [`Device::submit`](crate::Device::submit) runs a pending command to its
//! end right away (as if no further command arrived), for callers that wait
//! for each command. The PPA-ordered plugging of ZNS+ is a step of the same
//! loop ([`crate::znsplus::threaded_logging`]).
//!
//! - [`finish`]: padding (request size, pause, pre-emption) or metadata-only.
//! - [`reset`]: unmapping by occupancy, erase scope and erase time (inside
//!   the reset, in idle time after it, or before the next program), and
//!   static or dynamic zone-to-block-group mapping.

pub mod finish;
pub mod reset;
pub mod zrwa;

use crate::backend::Backend;
use crate::front::command::{CmdResult, Completion, Tag};
use crate::scheduler::{Next, Phase, Task};
use crate::ssd::Ssd;
use crate::status::Status;
use zonelab_sim::{Nanos, TIME_NS_MAX};

/// When the next management step could start if no host command came
/// first; `None` when there is no management work.
#[inline]
pub(crate) fn next_event_ns(core: &Backend, ssd: &Ssd) -> Option<Nanos> {
    if idle(core) {
        return None;
    }
    next_step(core, ssd).map(Next::start_ns)
}

/// No management work of any kind: no task queued, no erase pending, no
/// zone TL_opened, so [`next_step`] finds none. The check is inlined into
/// every host command's path, which then skips the step search.
#[inline]
fn idle(core: &Backend) -> bool {
    let background = &core.scheduler.background;
    background.queue.is_empty() && background.pending_erase.is_empty() && core.translation.tl.is_empty()
}

/// Reserves every management step that starts before `until_ns`.
#[inline(always)]
pub(crate) fn advance(core: &mut Backend, ssd: &mut Ssd, until_ns: Nanos) {
    if !core.scheduler.background.pad_turns_due.is_empty() {
        take_pad_turns(core, ssd);
    }
    if !idle(core) {
        advance_busy(core, ssd, until_ns);
    }
}

/// [`advance`] with management work queued.
fn advance_busy(core: &mut Backend, ssd: &mut Ssd, until_ns: Nanos) {
    // Runs before every host command: with nothing due, leave before sizing the bound.
    if next_step(core, ssd).is_none_or(|next| next.start_ns() >= until_ns) {
        return;
    }
    let steps_max = management_steps_left_max(core);
    for _ in 0..=steps_max {
        let Some(next) = next_step(core, ssd) else { return };
        if next.start_ns() >= until_ns {
            return;
        }
        take_step(core, ssd, next, until_ns);
    }
    panic!("management work did not settle within the {steps_max} steps it can take");
}

/// The most steps the queued management work can still take: every
/// firmware slice, one padding request per unit, one step per erase and
/// per task completion. The configuration bounds the slices of a task
/// (`DeviceConfig::validate`), so this is finite and known up front.
fn management_steps_left_max(core: &Backend) -> u64 {
    let slice_ns = core.config.management.slice_ns;
    // Every phase takes one step at least: a firmware phase of no time
    // (`management.finish_ns = 0`) is still a step that pops it.
    let phase_steps = |phase: &Phase| match *phase {
        Phase::Firmware { left_ns } => left_ns.div_ceil(slice_ns).max(1),
        Phase::Pad { units_end, .. } => units_end.max(1),
        Phase::Erase { .. } | Phase::Hold { .. } => 1,
    };
    let tasks: u64 =
        core.scheduler.background.queue.iter().map(|t| 1 + t.phases.iter().map(phase_steps).sum::<u64>()).sum();
    // A plug programs a unit of a TL_opened zone: at most a chunk's worth each.
    let plugs = core.translation.tl.len() as u64 * core.layout.zcap_lbas.div_ceil(core.layout.lbas_per_chunk);
    // With rounds, each task may start a round of its own.
    let rounds = if core.scheduler.background.in_rounds() { core.scheduler.background.queue.len() } else { 0 };
    tasks + rounds as u64 + core.scheduler.background.pending_erase.len() as u64 + plugs
}

/// Completions of pending commands, in the order they completed.
pub(crate) fn take_completed(core: &mut Backend) -> Vec<(Tag, Completion)> {
    std::mem::take(&mut core.scheduler.background.completed)
}

/// Management tasks accepted but not completed.
pub(crate) fn pending_tasks(core: &Backend) -> usize {
    core.scheduler.background.queue.len()
}

pub(crate) fn run_until_completed(core: &mut Backend, ssd: &mut Ssd, tag: Tag) -> Completion {
    let steps_max = management_steps_left_max(core);
    for _ in 0..=steps_max {
        if let Some(i) = core.scheduler.background.completed.iter().position(|&(t, _)| t == tag) {
            return core.scheduler.background.completed.remove(i).1;
        }
        let next = head_next(core, ssd).expect("a pending command has a task");
        take_step(core, ssd, next, TIME_NS_MAX);
    }
    panic!("management task {tag} did not complete within the {steps_max} steps it can take");
}

/// Queues `phases` as the task of the command being handled, ready from `ready_ns`.
pub(crate) fn queue_task(core: &mut Backend, ready_ns: Nanos, phases: Vec<Phase>, host_priority: bool) {
    let m = &mut core.scheduler.background;
    assert!(m.queued.is_none(), "one task per command");
    let tag = m.next_tag;
    m.next_tag += 1;
    let host_priority = host_priority && core.config.management.host_priority;
    let submit_ns = core.last_submit_ns;
    // Programs the command already reserved (a finish's partly filled units) count as its work.
    let end_ns = ready_ns.max(core.op_done_max_ns);
    let task = Task { tag, submit_ns, phases: phases.into(), next_ns: ready_ns, end_ns, host_priority };
    m.queue.push_back(task);
    m.note_queued();
    m.queued = Some(tag);
}

fn next_step(core: &Backend, ssd: &Ssd) -> Option<Next> {
    let head = head_next(core, ssd);
    let erase = background_erase(core, ssd);
    let first = match (head, erase) {
        (Some(h), Some(e)) => Some(if e.start_ns() < h.start_ns() { e } else { h }),
        (h, e) => h.or(e),
    };
    match (first, crate::znsplus::threaded_logging::background_plug(core, ssd)) {
        (Some(f), Some(p)) => Some(if p.start_ns() < f.start_ns() { p } else { f }),
        (f, p) => f.or(p),
    }
}

/// The management thread's next step: starting its next round, or the head
/// task's next step.
fn head_next(core: &Backend, ssd: &Ssd) -> Option<Next> {
    match core.scheduler.background.round_due_ns() {
        Some(start_ns) => Some(Next::Round(start_ns)),
        None => head_start_ns(core, ssd).map(Next::Head),
    }
}

/// When the head task's next step can start.
fn head_start_ns(core: &Backend, ssd: &Ssd) -> Option<Nanos> {
    let task = core.scheduler.background.queue.front()?;
    if !task.host_priority {
        // Without priority a step is issued at its time and queues with host work.
        return Some(task.next_ns);
    }
    let start_ns = match task.phases.front() {
        None => task.next_ns,
        Some(Phase::Firmware { left_ns: 0 }) => task.next_ns,
        // Busy writers keep the core booked ahead: then the task moves
        // on in their turns (`ftl_turn`).
        Some(Phase::Firmware { .. }) => task.next_ns.max(core.controller.ftl_free_at_ns()),
        Some(&Phase::Pad { zone, units_end, per_request, .. }) => {
            // A request goes once the dies it programs are idle, so a host
            // command that arrived meanwhile is already queued there: it
            // waits for one padding program at most.
            let first = core.controller.flushed_units(zone);
            let last = units_end.min(first + per_request).max(first + 1);
            let d_zone = u64::from(core.translation.mapping.d_zone());
            let idle_ns = (first..last.min(first + d_zone))
                .map(|unit| ssd.flash().die_free_at_ns(core.translation.mapping.unit_target(zone, unit).0.die))
                .max()
                .unwrap_or(0);
            task.next_ns.max(idle_ns)
        }
        Some(Phase::Erase { .. } | Phase::Hold { .. }) => task.next_ns,
    };
    Some(start_ns)
}

/// Takes the padding turns that host units' programs left due
/// ([`Management::unit_turn`](crate::scheduler::Management::unit_turn)),
/// each a request queued on its die at the time its turn came.
pub(crate) fn take_pad_turns(core: &mut Backend, ssd: &mut Ssd) {
    let due = std::mem::take(&mut core.scheduler.background.pad_turns_due);
    for at_ns in due {
        let background = &core.scheduler.background;
        let padding = background.round_due_ns().is_none()
            && background.queue.front().is_some_and(|task| {
                task.host_priority && task.next_ns <= at_ns && matches!(task.phases.front(), Some(Phase::Pad { .. }))
            });
        if padding {
            head_step(core, ssd, at_ns, at_ns);
        }
    }
}

/// The pending erase that could start first, if erases run in idle time.
fn background_erase(core: &Backend, ssd: &Ssd) -> Option<Next> {
    if core.config.management.reset.erase_at != crate::config::EraseAt::Async {
        return None;
    }
    let preempt = core.config.management.reset.erase_preempt;
    core.scheduler
        .background
        .pending_erase
        .iter()
        .map(|(&key, &ready)| {
            let start_ns = if preempt { ready.max(ssd.flash().die_free_at_ns(key.0)) } else { ready };
            Next::Erase { key, start_ns }
        })
        .min_by_key(|n| n.start_ns())
}

/// Takes the step `next`; no host command arrives before `until_ns`.
fn take_step(core: &mut Backend, ssd: &mut Ssd, next: Next, until_ns: Nanos) {
    match next {
        Next::Round(start_ns) => core.scheduler.background.start_round(start_ns),
        Next::Erase { key: (die, fbg), start_ns } => {
            core.erase_pending(ssd, die, fbg, start_ns);
        }
        Next::Head(start_ns) => {
            // Padding in idle die time counts as its turn of the round.
            if matches!(core.scheduler.background.queue.front().and_then(|t| t.phases.front()), Some(Phase::Pad { .. }))
            {
                core.scheduler.background.round_zones.clear();
            }
            head_step(core, ssd, start_ns, until_ns)
        }
        Next::Plug { zone, unit, start_ns } => {
            crate::znsplus::threaded_logging::plug_unit_ahead(core, ssd, zone, unit, start_ns)
        }
    }
}

/// Runs one step of the head task from `start_ns` (no host command
/// arrives before `until_ns`); completes the task when it has no phase left.
fn head_step(core: &mut Backend, ssd: &mut Ssd, start_ns: Nanos, until_ns: Nanos) {
    let task = core.scheduler.background.queue.front_mut().expect("a head task");
    let Some(phase) = task.phases.front_mut() else {
        return complete_head(core);
    };
    let (end_ns, next_ns, phase_done) = match phase {
        Phase::Firmware { .. } => firmware_slices(core, start_ns, until_ns),
        &mut Phase::Pad { zone, units_end, per_request, pause_ns } => {
            // The next request may go `pause_ns` after this one.
            let end = finish::pad_request(core, ssd, zone, units_end, per_request, start_ns);
            let done = core.controller.flushed_units(zone) >= units_end;
            (end, if done { end } else { start_ns + pause_ns }, done)
        }
        &mut Phase::Erase { zone, fbg } => {
            let mut end = start_ns;
            for die in core.translation.mapping.fcg_dies(zone) {
                end = end.max(core.erase_pending(ssd, die, fbg, start_ns));
            }
            (end, end, true)
        }
        &mut Phase::Hold { ns } => {
            let hold_end_ns = start_ns.saturating_add(ns);
            core.scheduler.background.hold_dispatch(start_ns, hold_end_ns, core.last_submit_ns);
            (start_ns, start_ns, true)
        }
    };
    end_step(core, start_ns, end_ns, next_ns, phase_done);
}

/// The head task's firmware slices from `start_ns` on the FTL core (idle
/// then) that start before `until_ns`, when a host command may take the
/// core, and before the next unit commit comes due (it takes the core
/// between two slices): back to back, they are one reservation. Returns
/// when they end, when the next step may start, and whether the phase is done.
fn firmware_slices(core: &mut Backend, start_ns: Nanos, until_ns: Nanos) -> (Nanos, Nanos, bool) {
    let slice_ns = core.config.management.slice_ns;
    let from_ns = start_ns.max(core.controller.ftl_free_at_ns());
    let span_end_ns = until_ns.min(core.controller.next_unit_commit_ns().unwrap_or(TIME_NS_MAX));
    let slices = span_end_ns.saturating_sub(from_ns).div_ceil(slice_ns).max(1);
    let task = core.scheduler.background.queue.front_mut().expect("a head task");
    let Some(Phase::Firmware { left_ns }) = task.phases.front_mut() else {
        unreachable!("the head task's phase is firmware work")
    };
    let work_ns = (*left_ns).min(slices.saturating_mul(slice_ns));
    *left_ns -= work_ns;
    let done = *left_ns == 0;
    let end = core.controller.reserve_ftl_slice(start_ns, work_ns, core.config.controller.unit_commit_ns);
    (end, end, done)
}

/// Books a step of the head task that ran from `start_ns` to `end_ns`;
/// completes the task when it has no phase left.
fn end_step(core: &mut Backend, start_ns: Nanos, end_ns: Nanos, next_ns: Nanos, phase_done: bool) {
    let task = core.scheduler.background.queue.front_mut().expect("a head task");
    debug_assert!(end_ns >= start_ns && next_ns >= start_ns);
    task.end_ns = task.end_ns.max(end_ns);
    task.next_ns = next_ns;
    if phase_done {
        // A phase starts once everything before it is done, but for a
        // hold, which runs beside the phases after it.
        task.next_ns = task.next_ns.max(task.end_ns);
        if let Some(Phase::Hold { ns }) = task.phases.pop_front() {
            task.end_ns = task.end_ns.max(start_ns.saturating_add(ns));
        }
    }
    if task.phases.is_empty() {
        complete_head(core);
    }
}

fn complete_head(core: &mut Backend) {
    let task = core.scheduler.background.queue.pop_front().expect("a head task");
    core.scheduler.background.note_completed(task.end_ns);
    let complete_ns = task.end_ns + core.config.controller.complete_ns;
    assert!(complete_ns > task.submit_ns, "a task completes after it was sent");
    core.note_complete(complete_ns);
    let completion =
        Completion { status: Status::Success, submit_ns: task.submit_ns, complete_ns, result: CmdResult::None };
    core.scheduler.background.completed.push((task.tag, completion));
    if let Some(next) = core.scheduler.background.queue.front_mut() {
        next.next_ns = next.next_ns.max(task.end_ns);
        next.end_ns = next.end_ns.max(task.end_ns);
    }
}

/// Drops the padding still queued for `zone` (it was reset or went
/// offline: its blocks will be erased anyway).
pub(crate) fn cancel_padding(core: &mut Backend, zone: u32) {
    for task in &mut core.scheduler.background.queue {
        task.phases.retain(|p| !matches!(*p, Phase::Pad { zone: z, .. } if z == zone));
    }
}

/// Runs a write's `work_ns` of FTL work from `ready_ns` on; returns
/// when it is done. While the head task has firmware work left, the core
/// takes its two queues in turn: the write first waits for one
/// management slice.
#[inline(always)]
pub(crate) fn ftl_turn(core: &mut Backend, ready_ns: Nanos, work_ns: Nanos) -> Nanos {
    if work_ns == 0 {
        return ready_ns;
    }
    // No management task: the write has the core to itself.
    if core.scheduler.background.queue.is_empty() {
        return core.controller.reserve_ftl(ready_ns, work_ns, core.config.controller.unit_commit_ns);
    }
    ftl_turn_beside_tasks(core, ready_ns, work_ns)
}

/// [`ftl_turn`] while management tasks are queued.
#[inline(never)]
fn ftl_turn_beside_tasks(core: &mut Backend, ready_ns: Nanos, work_ns: Nanos) -> Nanos {
    let slice_max_ns = core.config.management.slice_ns;
    idle_core_slices(core, ready_ns);
    // A round due by now starts before its first task takes a turn; one due
    // later leaves the core to the write.
    let round_due_ns = core.scheduler.background.round_due_ns();
    if let Some(start_ns) = round_due_ns.filter(|&t| t <= ready_ns) {
        core.scheduler.background.start_round(start_ns);
    }
    let turn_ns = if round_due_ns.is_none_or(|t| t <= ready_ns) {
        let turn_max_ns = core.config.management.turn_ns;
        core.scheduler.background.firmware_turn_ns(ready_ns, slice_max_ns, turn_max_ns)
    } else {
        0
    };
    let end_ns = core.controller.reserve_ftl(ready_ns, turn_ns + work_ns, core.config.controller.unit_commit_ns);
    if turn_ns > 0 {
        after_turn(core, end_ns - work_ns);
    }
    debug_assert!(end_ns >= ready_ns + work_ns);
    end_ns
}

/// Takes the head task's firmware slices that start on the idle FTL core
/// before `until_ns`, when a write's FTL work is ready: the management
/// thread runs whenever the core is idle, so the write finds at most one
/// slice in progress. (Steps are otherwise reserved only up to the write's
/// submission, which leaves the core idle until its FTL work.)
fn idle_core_slices(core: &mut Backend, until_ns: Nanos) {
    // Bound: each pass takes one slice of the head task's firmware phase.
    let slices_max = match core.scheduler.background.queue.front().and_then(|t| t.phases.front()) {
        Some(&Phase::Firmware { left_ns }) => left_ns.div_ceil(core.config.management.slice_ns),
        _ => return,
    };
    for _ in 0..slices_max {
        let background = &core.scheduler.background;
        if background.round_due_ns().is_some() {
            return;
        }
        let Some(task) = background.queue.front().filter(|t| t.host_priority) else { return };
        if !matches!(task.phases.front(), Some(&Phase::Firmware { left_ns }) if left_ns > 0) {
            return;
        }
        let start_ns = task.next_ns.max(core.controller.ftl_free_at_ns());
        if start_ns >= until_ns {
            return;
        }
        let (end_ns, next_ns, phase_done) = firmware_slices(core, start_ns, until_ns);
        end_step(core, start_ns, end_ns, next_ns, phase_done);
    }
}

/// The head task's slice that ran in a write's turn ended at `slice_end_ns`.
fn after_turn(core: &mut Backend, slice_end_ns: Nanos) {
    let task = core.scheduler.background.queue.front_mut().expect("the task that took the turn");
    task.end_ns = task.end_ns.max(slice_end_ns);
    task.next_ns = task.next_ns.max(slice_end_ns);
    // A phase whose last slice went in a write's turn is done here: left
    // at the head it would wait for an idle core, which writers at queue
    // depth keep booked ahead.
    if matches!(task.phases.front(), Some(Phase::Firmware { left_ns: 0 })) {
        task.phases.pop_front();
        task.next_ns = task.next_ns.max(task.end_ns);
        if task.phases.is_empty() {
            complete_head(core);
        }
    }
}

/// Reserves all management work, as if the device were left alone.
pub(crate) fn drain(core: &mut Backend, ssd: &mut Ssd) {
    advance(core, ssd, TIME_NS_MAX);
}
