//! The controller's program data path: buffer memory to the flash channels
//! (through the encoder), which the drive's programs of buffered data
//! cross one after another (`controller.program_path_bytes_per_s`), and
//! the mapping journal that holds it at a fixed interval
//! (`controller.journal_units`, `controller.journal_ns`).
//!
//! At the flash's limit this path, not the dies, sets when programs start:
//! they start evenly spaced, so buffer room comes back one program unit at
//! a time at an even pace, and writers at the limit each wait a little,
//! often (ConfZNS++ C2: four to nine QD-1 writers of their own zones have a
//! p95 of 2.1-2.4 times their mean). The journal stops it for a while every
//! so many units: one zone's appends at depth see that pause as a spread of
//! their latency (seed 000 Fig 8: at QD 32-128 a p95 of 1.5-2.3 times the
//! mean, which a FIFO at an even pace would not give).
//!
//! Drive-wide hardware: it belongs to the `Ssd`, which every namespace
//! shares.

use zonelab_sim::{Nanos, Timeline};

/// The program data path and its journal.
#[derive(Debug, Clone)]
pub(crate) struct ProgramPath {
    /// The path, in the order programs are handed to it (firmware hands
    /// them over in dispatch order; no program overtakes another on it).
    timeline: Timeline,
    /// Time one program unit takes to cross; 0 when the path is unlimited.
    unit_ns: Nanos,
    /// Programs handed over since the last journal write.
    units_since_journal: u64,
    /// A journal write after every this many programs; 0: none.
    journal_units: u64,
    journal_ns: Nanos,
}

impl ProgramPath {
    /// A path a program unit crosses in `unit_ns` (0: unlimited;
    /// `DeviceConfig::program_path_unit_ns`) whose journal holds it
    /// `journal_ns` after every `journal_units` programs (0: no journal).
    pub(crate) fn new(unit_ns: Nanos, journal_units: u32, journal_ns: Nanos) -> Self {
        Self {
            timeline: Timeline::new(),
            unit_ns,
            units_since_journal: 0,
            journal_units: u64::from(journal_units),
            journal_ns,
        }
    }

    /// Whether the path costs anything (a rate or a journal): without
    /// either, programs go to their channel as soon as their data is in.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.unit_ns > 0 || (self.journal_units > 0 && self.journal_ns > 0)
    }

    /// A program unit whose data is in the buffer from `ready_ns` on:
    /// returns when its data starts out to the die's channel, once the
    /// programs handed over before it (and the journal after every
    /// `journal_units`-th of them) have crossed.
    #[inline]
    pub(crate) fn hand_over(&mut self, ready_ns: Nanos) -> Nanos {
        if !self.enabled() {
            return ready_ns;
        }
        let cross_ns = self.unit_ns;
        self.units_since_journal += 1;
        let journal_ns = if self.journal_units > 0 && self.units_since_journal >= self.journal_units {
            self.units_since_journal = 0;
            self.journal_ns
        } else {
            0
        };
        let end_ns = self.timeline.reserve(ready_ns, cross_ns + journal_ns);
        let start_ns = end_ns - cross_ns - journal_ns;
        // Postcondition: not before its data, and in turn.
        debug_assert!(start_ns >= ready_ns);
        start_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 192 KiB at 1.536 GB/s: 128 µs a unit.
    const UNIT_NS: Nanos = 128_000;

    fn path(unit_ns: Nanos, journal_units: u32, journal_ns: Nanos) -> ProgramPath {
        ProgramPath::new(unit_ns, journal_units, journal_ns)
    }

    #[test]
    fn an_unlimited_path_without_a_journal_hands_each_program_over_at_once() {
        let mut p = path(0, 0, 0);
        assert!(!p.enabled());
        for t in [0, 0, 5, 5, 1_000] {
            assert_eq!(p.hand_over(t), t);
        }
    }

    #[test]
    fn programs_ready_together_start_one_crossing_apart() {
        let mut p = path(UNIT_NS, 0, 0);
        let starts: Vec<Nanos> = (0..4).map(|_| p.hand_over(0)).collect();
        assert_eq!(starts, [0, 128_000, 256_000, 384_000]);
        // One ready after the path has gone idle starts at once.
        assert_eq!(p.hand_over(10_000_000), 10_000_000);
    }

    #[test]
    fn the_journal_holds_the_path_after_every_nth_program() {
        let mut p = path(UNIT_NS, 3, 500_000);
        let starts: Vec<Nanos> = (0..7).map(|_| p.hand_over(0)).collect();
        // Three crossings, the journal, three more, the journal, then the seventh.
        assert_eq!(starts, [0, 128_000, 256_000, 884_000, 1_012_000, 1_140_000, 1_768_000]);
        // A journal alone (no rate limit) also holds the path.
        let mut j = path(0, 2, 500_000);
        assert!(j.enabled());
        let starts: Vec<Nanos> = (0..3).map(|_| j.hand_over(0)).collect();
        assert_eq!(starts, [0, 0, 500_000]);
    }
}
