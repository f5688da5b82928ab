//! Housekeeping the firmware does while it is idle (log pages, media and
//! temperature checks): a short task every so often on a firmware core, which
//! a command arriving meanwhile waits out (`controller.housekeeping_*`).
//!
//! Why: CLUSTER'23's open/close benchmark sends each measured close, and the
//! write after it, after a second of `sleep(1)`; 2.3-2.9% of them take 3 to 14
//! µs longer than the rest, spread evenly over that range, while commands
//! sent back to back (QD-1 writes, the opens) never do. That is a task of
//! about 14 µs that a command finds running in a few percent of arrivals, at
//! a phase the host's timing does not set.
//!
//! The phase is drawn for each command that finds the firmware idle (a
//! seeded stream of `[spread]`), so runs stay byte-identical.

use zonelab_sim::{Nanos, SimRng};

/// The random stream housekeeping draws from (distinct from the management
/// scheduler's, so neither shifts the other's numbers).
const STREAM_HOUSEKEEPING: u64 = 2;

/// The idle-time task and the stream its phase comes from.
#[derive(Debug, Clone)]
pub(crate) struct Housekeeping {
    task_ns: Nanos,
    period_ns: Nanos,
    phase: SimRng,
}

impl Housekeeping {
    /// Housekeeping of `task_ns` every `period_ns` while the drive is idle
    /// (how long idle is the caller's to judge: the backend holds the
    /// threshold), its phase drawn from the `spread` seed; `None` when there
    /// is no task (`task_ns = 0`) or spread is off (`spread` is `None`).
    pub(crate) fn new(task_ns: Nanos, period_ns: Nanos, spread: Option<u64>) -> Option<Self> {
        let seed = spread?;
        if task_ns == 0 {
            return None;
        }
        assert!(task_ns <= period_ns, "validation keeps a task within its period");
        Some(Self { task_ns, period_ns, phase: SimRng::fork(seed, STREAM_HOUSEKEEPING) })
    }

    /// A command finds the drive idle long enough: where in its period it
    /// arrives is uniform, and inside the task (`task_ns / period_ns` of the
    /// time) it waits for the rest of it.
    pub(crate) fn wait_ns(&mut self) -> Nanos {
        let at_ns = self.phase.below(self.period_ns);
        let wait_ns = self.task_ns.saturating_sub(at_ns);
        debug_assert!(wait_ns <= self.task_ns);
        wait_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_that_fills_its_period_always_holds_an_idle_command() {
        let mut h = Housekeeping::new(10_000, 10_000, Some(7)).expect("a task");
        let waits: Vec<Nanos> = (0..100).map(|_| h.wait_ns()).collect();
        assert!(waits.iter().all(|&w| w > 0 && w <= 10_000), "{waits:?}");
    }

    #[test]
    fn an_idle_command_meets_the_task_in_its_share_of_the_period() {
        let mut h = Housekeeping::new(14_000, 410_000, Some(1)).expect("a task");
        let waits: Vec<Nanos> = (0..200_000).map(|_| h.wait_ns()).collect();
        let met = waits.iter().filter(|&&w| w > 0).count() as f64 / waits.len() as f64;
        assert!((met - 14.0 / 410.0).abs() < 0.003, "met {met}");
        // The rest of the task is uniform: about half of the waits are over half of it.
        let long =
            waits.iter().filter(|&&w| w > 7_000).count() as f64 / waits.iter().filter(|&&w| w > 0).count() as f64;
        assert!((long - 0.5).abs() < 0.03, "long {long}");
        assert!(waits.iter().all(|&w| w <= 14_000));
    }

    #[test]
    fn no_task_without_spread_or_length() {
        assert!(Housekeeping::new(14_000, 410_000, None).is_none());
        assert!(Housekeeping::new(0, 410_000, Some(1)).is_none());
    }
}
