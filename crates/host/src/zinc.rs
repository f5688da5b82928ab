//! ZINC (seed 003): an mq-deadline variant that holds zone resets and
//! finishes back so host I/O goes first.
//!
//! Held commands wait in their own FIFO. Every epoch (a kernel timer) the
//! first one is released when the writes in flight are below a threshold,
//! when the writes dispatched since the last release exceed a budget, or
//! when it has been held for the maximum number of epochs; otherwise every
//! held command ages by one epoch. Writes count in 8 KiB units, as ZINC's
//! kernel module counts them.

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
            epoch_ns: 32 * MS,
            inflight_units_threshold: 2,
            write_units_budget: 2000,
            held_epochs_max: 3,
            unit_bytes: 8192,
        }
    }
}

/// The hold-back part of ZINC; `T` is whatever the block layer keeps per request.
#[derive(Debug, Clone)]
pub struct ZincGate<T> {
    config: ZincConfig,
    held: std::collections::VecDeque<(T, u32)>,
    inflight_units: u64,
    dispatched_units: u64,
}

/// Held commands at once; more means a thread ignored its iodepth.
const HELD_MAX: usize = 1 << 16;

impl<T> ZincGate<T> {
    /// An empty gate; `epoch_ns` and `unit_bytes` must be positive.
    pub fn new(config: ZincConfig) -> Self {
        assert!(config.epoch_ns > 0 && config.unit_bytes > 0);
        ZincGate { config, held: Default::default(), inflight_units: 0, dispatched_units: 0 }
    }

    /// The rules this gate releases by.
    pub fn config(&self) -> &ZincConfig {
        &self.config
    }

    /// Holds a zone reset or finish until an epoch releases it.
    pub fn hold(&mut self, request: T) {
        assert!(self.held.len() < HELD_MAX, "more than {HELD_MAX} zone management commands held");
        self.held.push_back((request, 0));
    }

    /// Zone management commands held now.
    pub fn held(&self) -> usize {
        self.held.len()
    }

    fn units(&self, bytes: u64) -> u64 {
        bytes.div_ceil(self.config.unit_bytes).max(1)
    }

    /// A write of `bytes` went to the device: it counts as in flight and
    /// against the budget, in whole units.
    pub fn write_dispatched(&mut self, bytes: u64) {
        let units = self.units(bytes);
        self.inflight_units += units;
        self.dispatched_units += units;
    }

    /// A write of `bytes` completed: it no longer counts as in flight.
    pub fn write_completed(&mut self, bytes: u64) {
        let units = self.units(bytes);
        debug_assert!(self.inflight_units >= units);
        self.inflight_units = self.inflight_units.saturating_sub(units);
    }

    /// The epoch timer fired: returns the command released, if any.
    pub fn epoch(&mut self) -> Option<T> {
        let &(_, age) = self.held.front()?;
        let c = &self.config;
        let release = self.inflight_units < c.inflight_units_threshold
            || self.dispatched_units > c.write_units_budget
            || age >= c.held_epochs_max;
        if release {
            self.dispatched_units = 0;
            return self.held.pop_front().map(|(r, _)| r);
        }
        for (_, age) in &mut self.held {
            *age += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn held_until_writes_drain_budget_is_spent_or_epochs_run_out() {
        let mut gate = ZincGate::new(ZincConfig::default());
        assert_eq!(gate.epoch(), None::<u32>);
        gate.hold(1u32);
        gate.write_dispatched(64 * 1024); // 8 units in flight
        assert_eq!(gate.epoch(), None, "busy writes hold it");
        assert_eq!(gate.epoch(), None);
        assert_eq!(gate.epoch(), None);
        assert_eq!(gate.epoch(), Some(1), "held for the most epochs");
        gate.hold(2);
        gate.write_completed(64 * 1024);
        assert_eq!(gate.epoch(), Some(2), "idle writes let it go");
        gate.hold(3);
        gate.write_dispatched(64 * 1024);
        assert_eq!(gate.epoch(), None, "8 units in flight, 8 dispatched");
        for _ in 0..1993 {
            gate.write_dispatched(8192);
            gate.write_completed(8192);
        }
        assert_eq!(gate.epoch(), Some(3), "2001 units dispatched since the last release: over budget");
    }
}
