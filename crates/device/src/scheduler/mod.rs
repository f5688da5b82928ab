//! The flash scheduler: the dies' and channels' timelines ([`FlashArray`])
//! and the queue of background work (finish and reset tasks, deferred
//! erases) that shares them with host I/O.
//!
//! Which step runs next and whether it yields to host commands
//! (`management.host_priority`) is decided by the management client
//! ([`crate::management`]) over this state; program/erase suspend belongs
//! here.

use crate::front::command::{Completion, Tag};
use std::collections::{BTreeMap, VecDeque};
use zonelab_flash::FlashArray;
use zonelab_sim::Nanos;

/// The flash array and the background work queued on it.
pub(crate) struct Scheduler {
    pub(crate) flash: FlashArray,
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

/// The queue of background work: management tasks in submission order and
/// erases deferred to idle time.
#[derive(Debug, Clone, Default)]
pub(crate) struct Management {
    pub(crate) queue: VecDeque<Task>,
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
}

impl Management {
    /// A unit of `zone` goes to program at `at_ns` (`finish.pad_turns`).
    /// The flusher serves zones in rounds and a finishing zone always has a
    /// unit ready: if `zone` already had its turn this round, the head
    /// task's padding is due first.
    pub(crate) fn unit_turn(&mut self, zone: u32, at_ns: Nanos) {
        let padding = self.queue.front().is_some_and(|task| {
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
    Head(Nanos),
    Erase { key: (u32, u32), start_ns: Nanos },
    Plug { zone: u32, unit: u64, start_ns: Nanos },
}

impl Next {
    pub(crate) fn start_ns(self) -> Nanos {
        match self {
            Next::Head(t) | Next::Erase { start_ns: t, .. } | Next::Plug { start_ns: t, .. } => t,
        }
    }
}
