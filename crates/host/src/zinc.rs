//! ZINC (seed 003): an mq-deadline variant that holds zone resets and
//! finishes back so host I/O goes first.
//!
//! Resets and finishes wait in two FIFOs of their own, each with its own
//! write count, as in ZINC's kernel module. A held command goes to the device
//! at once when it arrives, or when the command of its kind before it
//! completes, if fewer write units than a threshold are in flight then.
//! Otherwise it waits for the epoch timer: at each tick the first of each
//! kind goes when the writes in flight are below the threshold, when the
//! writes dispatched since that kind's last release exceed a budget, or when
//! it has been held for the maximum number of epochs; every other held
//! command ages by one epoch. Writes count in 8 KiB units, as the module
//! counts them. (The module queues the newest command first; one FIFO keeps
//! a job's commands in order and is the same for one management job.)

use zonelab_sim::{Nanos, MS};

/// ZINC's release rules and write unit (see the module comment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZincConfig {
    /// Timer period at which a held command may be released.
    pub epoch_ns: Nanos,
    /// Release when fewer write units than this are in flight.
    pub inflight_units_threshold: u64,
    /// Release when more write units than this left since the last release.
    pub write_units_budget: u64,
    /// Release after this many epochs held.
    pub held_epochs_max: u32,
    /// Bytes of one write unit.
    pub unit_bytes: u64,
}

impl Default for ZincConfig {
    /// The defaults of ZINC's kernel module (seed 003's artifact).
    fn default() -> Self {
        ZincConfig {
            epoch_ns: 64 * MS,
            inflight_units_threshold: 3,
            write_units_budget: 2000,
            held_epochs_max: 3,
            unit_bytes: 8192,
        }
    }
}

/// The two kinds of command ZINC holds, each in its own queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// Zone Management Send, Reset Zone.
    Reset,
    /// Zone Management Send, Finish Zone.
    Finish,
}

/// One kind's queue and the writes dispatched since its last release.
#[derive(Debug, Clone)]
struct Queue<T> {
    held: std::collections::VecDeque<(T, u32)>,
    dispatched_units: u64,
}

/// The hold-back part of ZINC; `T` is whatever the block layer keeps per request.
#[derive(Debug, Clone)]
pub struct ZincGate<T> {
    config: ZincConfig,
    queues: [Queue<T>; 2],
    inflight_units: u64,
}

/// Held commands at once; more means a thread ignored its iodepth.
const HELD_MAX: usize = 1 << 16;

impl<T> ZincGate<T> {
    /// An empty gate; `epoch_ns` and `unit_bytes` must be positive.
    pub fn new(config: ZincConfig) -> Self {
        assert!(config.epoch_ns > 0 && config.unit_bytes > 0);
        let queue = || Queue { held: Default::default(), dispatched_units: 0 };
        ZincGate { config, queues: [queue(), queue()], inflight_units: 0 }
    }

    /// The rules this gate releases by.
    pub fn config(&self) -> &ZincConfig {
        &self.config
    }

    /// Takes a zone reset or finish: it goes now (returned) if few writes are
    /// in flight, else it waits for an epoch to release it.
    pub fn hold(&mut self, kind: Held, request: T) -> Option<T> {
        let queue = &mut self.queues[kind as usize];
        assert!(queue.held.len() < HELD_MAX, "more than {HELD_MAX} zone management commands held");
        queue.held.push_back((request, 0));
        self.release_if_quiet(kind)
    }

    /// A held kind's command completed: the next one of that kind goes now
    /// (returned) if few writes are in flight.
    pub fn management_completed(&mut self, kind: Held) -> Option<T> {
        self.release_if_quiet(kind)
    }

    fn release_if_quiet(&mut self, kind: Held) -> Option<T> {
        (self.inflight_units < self.config.inflight_units_threshold).then(|| self.release(kind)).flatten()
    }

    fn release(&mut self, kind: Held) -> Option<T> {
        let queue = &mut self.queues[kind as usize];
        let (request, _) = queue.held.pop_front()?;
        queue.dispatched_units = 0;
        Some(request)
    }

    /// Zone management commands held now.
    pub fn held(&self) -> usize {
        self.queues.iter().map(|q| q.held.len()).sum()
    }

    fn units(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.config.unit_bytes).max(1)
    }

    /// A write of `bytes` went to the device: it counts as in flight and
    /// against both budgets, in whole units.
    pub fn write_dispatched(&mut self, bytes: u64) {
        let units = self.units(bytes);
        self.inflight_units += units;
        for queue in &mut self.queues {
            queue.dispatched_units += units;
        }
    }

    /// A write of `bytes` completed: it no longer counts as in flight.
    pub fn write_completed(&mut self, bytes: u64) {
        let units = self.units(bytes);
        debug_assert!(self.inflight_units >= units);
        self.inflight_units = self.inflight_units.saturating_sub(units);
    }

    /// The epoch timer fired: pushes onto `out` what it releases, at most one
    /// command of each kind.
    pub fn epoch(&mut self, out: &mut Vec<T>) {
        for kind in [Held::Reset, Held::Finish] {
            let c = self.config;
            let quiet = self.inflight_units < c.inflight_units_threshold;
            let queue = &mut self.queues[kind as usize];
            let Some(&(_, age)) = queue.held.front() else { continue };
            if quiet || queue.dispatched_units > c.write_units_budget || age >= c.held_epochs_max {
                out.extend(self.release(kind));
                continue;
            }
            for (_, age) in &mut queue.held {
                *age += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(gate: &mut ZincGate<u32>) -> Vec<u32> {
        let mut out = Vec::new();
        gate.epoch(&mut out);
        out
    }

    #[test]
    fn held_until_writes_drain_budget_is_spent_or_epochs_run_out() {
        let mut gate = ZincGate::new(ZincConfig::default());
        assert!(epoch(&mut gate).is_empty());
        gate.write_dispatched(64 * 1024); // 8 units in flight
        assert_eq!(gate.hold(Held::Reset, 1u32), None, "busy writes hold it");
        assert!(epoch(&mut gate).is_empty());
        assert!(epoch(&mut gate).is_empty());
        assert!(epoch(&mut gate).is_empty());
        assert_eq!(epoch(&mut gate), vec![1], "held for the most epochs");
        assert_eq!(gate.hold(Held::Reset, 2), None);
        gate.write_completed(64 * 1024);
        assert_eq!(epoch(&mut gate), vec![2], "idle writes let it go at the next epoch");
        gate.write_dispatched(64 * 1024);
        assert_eq!(gate.hold(Held::Reset, 3), None);
        assert!(epoch(&mut gate).is_empty(), "8 units in flight, 8 dispatched");
        for _ in 0..1993 {
            gate.write_dispatched(8192);
            gate.write_completed(8192);
        }
        assert_eq!(epoch(&mut gate), vec![3], "2001 units dispatched since the last release: over budget");
    }

    #[test]
    fn with_few_writes_in_flight_a_command_goes_on_arrival_or_when_the_one_before_completes() {
        let mut gate = ZincGate::new(ZincConfig::default());
        gate.write_dispatched(2 * 8192);
        assert_eq!(gate.hold(Held::Reset, 1u32), Some(1), "2 units in flight, under the threshold of 3");
        gate.write_dispatched(8192);
        assert_eq!(gate.hold(Held::Reset, 2), None, "3 units in flight");
        assert_eq!(gate.management_completed(Held::Reset), None);
        gate.write_completed(8192);
        assert_eq!(gate.management_completed(Held::Reset), Some(2), "reset 1 done with 2 units in flight");
    }

    #[test]
    fn resets_and_finishes_are_held_and_budgeted_apart() {
        let mut gate = ZincGate::new(ZincConfig { write_units_budget: 10, ..ZincConfig::default() });
        gate.write_dispatched(4 * 8192);
        assert_eq!(gate.hold(Held::Reset, 1u32), None);
        for _ in 0..11 {
            gate.write_dispatched(8192);
            gate.write_completed(8192);
        }
        assert_eq!(epoch(&mut gate), vec![1], "11 units since the start: over the reset budget");
        assert_eq!(gate.hold(Held::Finish, 2), None);
        assert_eq!(gate.hold(Held::Reset, 3), None);
        assert_eq!(epoch(&mut gate), vec![2], "the finish queue's count never restarted; the reset's did");
        assert_eq!(gate.held(), 1);
    }
}
