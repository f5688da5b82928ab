//! The flash scheduler's namespace side: the queue of background work
//! (finish and reset tasks, deferred erases) that shares the drive's dies
//! and channels (the flash array of `ssd::Ssd`) with host I/O.
//!
//! Which step runs next and whether it yields to host commands
//! (`management.host_priority`) is decided by the management client
//! ([`crate::management`]) over this state; program/erase suspend belongs
//! here.

use crate::config::{DeviceConfig, ServiceOrder};
use crate::front::command::{Completion, Tag};
use std::collections::{BTreeMap, VecDeque};
use zonelab_sim::{Nanos, SimRng};

/// The background work a namespace queued on the drive's flash.
pub(crate) struct Scheduler {
    pub(crate) background: Management,
}

/// One piece of a management task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Firmware work on a core, `slice_ns` at a time.
    Firmware { left_ns: Nanos },
    /// Padding `zone` from its next unprogrammed unit up to `units_end`,
    /// `per_request` units per request and `pause_ns` after each.
    Pad { zone: u32, units_end: u64, per_request: u64, pause_ns: Nanos },
    /// Erasing block group `fbg` of `zone`'s chip group where still pending.
    Erase { zone: u32, fbg: u32 },
    /// The write path starts no program for `ns` from the step's start
    /// (`reset.unmap_holds_programs`); the next phase starts at once.
    Hold { ns: Nanos },
}

#[derive(Debug, Clone)]
pub(crate) struct Task {
    pub(crate) tag: Tag,
    pub(crate) submit_ns: Nanos,
    pub(crate) phases: VecDeque<Phase>,
    /// Earliest start of the next step.
    pub(crate) next_ns: Nanos,
    /// End of the latest step so far.
    pub(crate) end_ns: Nanos,
    pub(crate) host_priority: bool,
}

/// The queue of background work: management tasks (in submission order,
/// but for the current round's) and erases deferred to idle time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Management {
    pub(crate) queue: VecDeque<Task>,
    /// With `management.order = "rounds"`: the management thread's rounds.
    rounds: Option<Rounds>,
    /// Management firmware work writes have owed the FTL core since its
    /// last turn beside them (`management.turn_ns`).
    turn_credit_ns: Nanos,
    /// Blocks groups (die, fbg) to erase before they are programmed again,
    /// with the earliest time the erase may start.
    pub(crate) pending_erase: BTreeMap<(u32, u32), Nanos>,
    pub(crate) next_tag: Tag,
    pub(crate) completed: Vec<(Tag, Completion)>,
    /// A task queued by the command being handled.
    pub(crate) queued: Option<Tag>,
    /// Zones that had a unit programmed since padding last took its turn
    /// (`finish.pad_turns`); at most one entry per zone.
    pub(crate) round_zones: Vec<u32>,
    /// When padding's turns came, not yet taken (the management client
    /// takes them after the host command that brought them, and before the
    /// next one).
    pub(crate) pad_turns_due: Vec<Nanos>,
    /// Spans in which the write path starts no program (`Phase::Hold`).
    dispatch_holds: DispatchHolds,
}

/// Spans `[start, end)` in which the write path starts no program, kept
/// disjoint (overlapping holds merge), by start. A task submitted after an
/// earlier one completed may start before that one's end, so holds can come
/// out of order.
#[derive(Debug, Clone, Default)]
struct DispatchHolds {
    spans: BTreeMap<Nanos, Nanos>,
    /// Spans kept before the next pass forgets the ended ones (twice what
    /// the last pass kept, so a reset of every zone stays linear).
    prune_len: usize,
}

impl DispatchHolds {
    fn add(&mut self, start_ns: Nanos, end_ns: Nanos, now_ns: Nanos) {
        if end_ns <= start_ns {
            return;
        }
        let (mut start, mut end) = (start_ns, end_ns);
        if let Some((&s, &e)) = self.spans.range(..=start).next_back() {
            if e >= start {
                (start, end) = (s, end.max(e));
            }
        }
        // Bound: each pass removes one span.
        while let Some((&s, &e)) = self.spans.range(start..=end).next() {
            self.spans.remove(&s);
            end = end.max(e);
        }
        self.spans.insert(start, end);
        if self.spans.len() > self.prune_len.max(16) {
            self.spans.retain(|_, &mut e| e > now_ns);
            self.prune_len = self.spans.len() * 2;
        }
        debug_assert!(self.spans.iter().zip(self.spans.iter().skip(1)).all(|(a, b)| a.1 < b.0), "disjoint");
    }

    #[inline]
    fn after(&self, ready_ns: Nanos) -> Nanos {
        if self.spans.is_empty() {
            return ready_ns;
        }
        match self.spans.range(..=ready_ns).next_back() {
            Some((_, &end_ns)) if end_ns > ready_ns => end_ns,
            _ => ready_ns,
        }
    }
}

/// The management thread's rounds (`ServiceOrder::Rounds`): the tasks
/// waiting when a round starts are the round, taken in an order unrelated to
/// their arrival; later ones wait for the next round.
#[derive(Debug, Clone)]
pub(crate) struct Rounds {
    /// Draws each round's order; `None` (`spread.on = false`): arrival order.
    order: Option<SimRng>,
    /// Tasks of the current round still queued, at the queue's front.
    left: usize,
    /// When the last round ended with tasks waiting: the next round starts
    /// then (or when its first task arrives), with the tasks sent by then.
    due_ns: Option<Nanos>,
}

/// The stream of the device's randomness that orders management rounds.
const STREAM_MANAGEMENT_ORDER: u64 = 1;

impl Management {
    /// The write path starts no program in `[start_ns, end_ns)`; holds that
    /// ended by `now_ns` are forgotten (no program still to be issued is
    /// ready before the latest submission).
    pub(crate) fn hold_dispatch(&mut self, start_ns: Nanos, end_ns: Nanos, now_ns: Nanos) {
        self.dispatch_holds.add(start_ns, end_ns, now_ns);
    }

    /// When a program whose data is in at `ready_ns` may start: at the end
    /// of a hold it falls in, else at once.
    #[inline]
    pub(crate) fn after_dispatch_hold(&self, ready_ns: Nanos) -> Nanos {
        self.dispatch_holds.after(ready_ns)
    }

    /// An empty queue for the management design of `config`.
    pub(crate) fn new(config: &DeviceConfig) -> Self {
        let rounds = (config.management.order == ServiceOrder::Rounds).then(|| Rounds {
            order: config.spread.on.then(|| SimRng::fork(config.spread.seed, STREAM_MANAGEMENT_ORDER)),
            left: 0,
            due_ns: None,
        });
        Self { rounds, ..Self::default() }
    }

    /// The head task's firmware work that runs before a write whose FTL
    /// work is ready at `ready_ns`: each write owes it `slice_ns`, paid in
    /// turns of `turn_ns` (or the phase's rest, if less). 0 when no task's
    /// firmware phase is under way or its turn has not come.
    pub(crate) fn firmware_turn_ns(&mut self, ready_ns: Nanos, slice_ns: Nanos, turn_ns: Nanos) -> Nanos {
        let Some(task) = self.queue.front_mut().filter(|task| task.submit_ns <= ready_ns) else { return 0 };
        let Some(Phase::Firmware { left_ns }) = task.phases.front_mut() else { return 0 };
        self.turn_credit_ns += slice_ns;
        if self.turn_credit_ns < turn_ns.max(slice_ns) && self.turn_credit_ns < *left_ns {
            return 0;
        }
        let turn = (*left_ns).min(self.turn_credit_ns);
        *left_ns -= turn;
        self.turn_credit_ns = 0;
        turn
    }

    /// Whether the management thread works in rounds.
    pub(crate) fn in_rounds(&self) -> bool {
        self.rounds.is_some()
    }

    /// A task was queued: one that finds the thread idle is a round alone.
    pub(crate) fn note_queued(&mut self) {
        if let Some(r) = &mut self.rounds {
            if self.queue.len() == 1 {
                debug_assert!(r.left == 0 && r.due_ns.is_none());
                r.left = 1;
            }
        }
        if self.queue.len() == 1 {
            // Writes owe nothing to work that was not there.
            self.turn_credit_ns = 0;
        }
    }

    /// The head task completed at `end_ns` (it is off the queue): the end of
    /// its round makes the next one due.
    pub(crate) fn note_completed(&mut self, end_ns: Nanos) {
        if let Some(r) = &mut self.rounds {
            r.left -= 1;
            if r.left == 0 && !self.queue.is_empty() {
                r.due_ns = Some(end_ns);
            }
        }
    }

    /// When the next round starts, if one is due: its first task's arrival
    /// at the earliest.
    pub(crate) fn round_due_ns(&self) -> Option<Nanos> {
        let due = self.rounds.as_ref()?.due_ns?;
        Some(due.max(self.queue.front()?.submit_ns))
    }

    /// Starts the due round at `start_ns`: the tasks sent by then, in the
    /// round's order, at the front of the queue.
    pub(crate) fn start_round(&mut self, start_ns: Nanos) {
        let r = self.rounds.as_mut().expect("rounds");
        debug_assert!(r.due_ns.is_some_and(|due| due <= start_ns));
        r.due_ns = None;
        // The queue is in submission order beyond the round: the round is a prefix.
        let count = self.queue.iter().take_while(|t| t.submit_ns <= start_ns).count();
        assert!(count > 0, "a round starts once a task is waiting");
        if let Some(rng) = &mut r.order {
            // Fisher-Yates over the prefix.
            for i in (1..count).rev() {
                let j = usize::try_from(rng.below(i as u64 + 1)).expect("below count");
                self.queue.swap(i, j);
            }
        }
        r.left = count;
        let head = self.queue.front_mut().expect("a round's first task");
        head.next_ns = head.next_ns.max(start_ns);
        head.end_ns = head.end_ns.max(start_ns);
    }

    /// A unit of `zone` goes to program at `at_ns` (`finish.pad_turns`).
    /// The flusher serves zones in rounds and a finishing zone always has a
    /// unit ready: if `zone` already had its turn this round, the head
    /// task's padding is due first.
    pub(crate) fn unit_turn(&mut self, zone: u32, at_ns: Nanos) {
        let padding = self.round_due_ns().is_none()
            && self.queue.front().is_some_and(|task| {
                task.host_priority
                    && task.next_ns <= at_ns
                    && matches!(task.phases.front(), Some(&Phase::Pad { zone: z, .. }) if z != zone)
            });
        if !padding {
            self.round_zones.clear();
            return;
        }
        if self.round_zones.contains(&zone) {
            self.round_zones.clear();
            // Bound: the turns are taken after each command, which completes
            // at most its data's units (MDTS over the unit size, plus one).
            self.pad_turns_due.push(at_ns);
        }
        self.round_zones.push(zone);
    }
}

/// A step that could run next: the head task's, a background erase, or a
/// PPA-ordered plug of a TL_opened zone's `unit` into its LogFBG (ZNS+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// The management thread starts its next round (`ServiceOrder::Rounds`).
    Round(Nanos),
    Head(Nanos),
    Erase {
        key: (u32, u32),
        start_ns: Nanos,
    },
    Plug {
        zone: u32,
        unit: u64,
        start_ns: Nanos,
    },
}

impl Next {
    pub(crate) fn start_ns(self) -> Nanos {
        match self {
            Next::Round(t) | Next::Head(t) | Next::Erase { start_ns: t, .. } | Next::Plug { start_ns: t, .. } => t,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::DispatchHolds;

    #[test]
    fn holds_in_any_order_merge_and_push_programs_past_their_end() {
        let mut holds = DispatchHolds::default();
        holds.add(500, 800, 0);
        // A task submitted earlier than the last one's end runs its hold first.
        holds.add(100, 300, 0);
        holds.add(250, 550, 0);
        assert_eq!(holds.spans.len(), 1, "overlapping holds are one span: {:?}", holds.spans);
        assert_eq!(holds.after(99), 99);
        assert_eq!(holds.after(100), 800, "a program ready in a hold starts at its end");
        assert_eq!(holds.after(799), 800);
        assert_eq!(holds.after(800), 800);
        holds.add(900, 1_000, 0);
        assert_eq!(holds.after(850), 850, "between holds a program starts at once");
        assert_eq!(holds.after(950), 1_000);
    }

    #[test]
    fn holds_that_ended_are_forgotten_in_passes() {
        let mut holds = DispatchHolds::default();
        for i in 0..100u64 {
            holds.add(i * 10, i * 10 + 5, i * 10);
        }
        assert!(holds.spans.len() <= 34, "{} spans kept", holds.spans.len());
        assert_eq!(holds.after(992), 995, "the latest hold is kept");
    }
}
