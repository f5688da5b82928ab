//! The controller's program data path: buffer memory to the flash channels
//! (through the encoder), which the drive's programs of buffered data
//! cross one after another (`controller.program_path_bytes_per_s`), and
//! the mapping journal that holds it at a fixed interval
//! (`controller.journal_units`, `controller.journal_ns`), every so many of
//! them a checkpoint of the whole mapping table that holds it longer
//! (`controller.checkpoint_journals`, `controller.checkpoint_ns`).
//!
//! At the flash's limit this path, not the dies, sets when programs start:
//! they start evenly spaced, so buffer room comes back one program unit at
//! a time at an even pace, and writers at the limit each wait a little,
//! often (ConfZNS++ C2: four to nine QD-1 writers of their own zones have a
//! p95 of 2.1-2.4 times their mean). The journal stops it for a while every
//! so many units: one zone's appends at depth see that pause as a spread of
//! their latency (seed 000 Fig 8: at QD 32-128 a p95 of 1.5-2.3 times the
//! mean, which a FIFO at an even pace would not give). The checkpoint is
//! rarer and longer: what a stream with megabytes in flight sees as its p99
//! (seed 000 Fig 8: 2.5-2.9 ms above the median with 4-16 MiB queued).
//!
//! Drive-wide hardware: it belongs to the `Ssd`, which every namespace
//! shares.

use zonelab_sim::{Nanos, Timeline};

/// When the controller writes out its mapping journal and, every so many
/// journal writes, a checkpoint of the whole mapping table instead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Journal {
    /// A journal write after every this many programs; 0: none.
    pub units: u32,
    /// How long a journal write holds the path.
    pub ns: Nanos,
    /// Every this many journal writes is a checkpoint; 0: none.
    pub checkpoint_journals: u32,
    /// How long a checkpoint holds the path (in place of the journal write).
    pub checkpoint_ns: Nanos,
}

impl Journal {
    fn enabled(&self) -> bool {
        self.units > 0 && (self.ns > 0 || (self.checkpoint_journals > 0 && self.checkpoint_ns > 0))
    }
}

/// The program data path and its journal.
#[derive(Debug, Clone)]
pub(crate) struct ProgramPath {
    /// The path, in the order programs are handed to it (firmware hands
    /// them over in dispatch order; no program overtakes another on it).
    timeline: Timeline,
    /// Time one program unit takes to cross; 0 when the path is unlimited.
    unit_ns: Nanos,
    journal: Journal,
    /// Programs handed over since the last journal write.
    units_since_journal: u32,
    /// Journal writes since the last checkpoint.
    journals_since_checkpoint: u32,
}

impl ProgramPath {
    /// A path a program unit crosses in `unit_ns` (0: unlimited;
    /// `DeviceConfig::program_path_unit_ns`), held by `journal`.
    pub(crate) fn new(unit_ns: Nanos, journal: Journal) -> Self {
        Self { timeline: Timeline::new(), unit_ns, journal, units_since_journal: 0, journals_since_checkpoint: 0 }
    }

    /// Whether the path costs anything (a rate or a journal): without
    /// either, programs go to their channel as soon as their data is in.
    #[inline]
    pub(crate) fn enabled(&self) -> bool {
        self.unit_ns > 0 || self.journal.enabled()
    }

    /// A program unit whose data is in the buffer from `ready_ns` on:
    /// returns when its data starts out to the die's channel, once the
    /// programs handed over before it (and the journal after every
    /// `journal.units`-th of them) have crossed.
    #[inline]
    pub(crate) fn hand_over(&mut self, ready_ns: Nanos) -> Nanos {
        if !self.enabled() {
            return ready_ns;
        }
        let cross_ns = self.unit_ns;
        let hold_ns = self.journal_after_this_unit_ns();
        let end_ns = self.timeline.reserve(ready_ns, cross_ns + hold_ns);
        let start_ns = end_ns - cross_ns - hold_ns;
        // Postcondition: not before its data, and in turn.
        debug_assert!(start_ns >= ready_ns);
        start_ns
    }

    /// How long the journal (or checkpoint) written after the unit now
    /// handed over holds the path: 0 unless the unit completes a journal's
    /// worth.
    fn journal_after_this_unit_ns(&mut self) -> Nanos {
        let j = self.journal;
        if j.units == 0 {
            return 0;
        }
        self.units_since_journal += 1;
        if self.units_since_journal < j.units {
            return 0;
        }
        self.units_since_journal = 0;
        if j.checkpoint_journals == 0 {
            return j.ns;
        }
        self.journals_since_checkpoint += 1;
        if self.journals_since_checkpoint < j.checkpoint_journals {
            return j.ns;
        }
        self.journals_since_checkpoint = 0;
        j.checkpoint_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 192 KiB at 1.536 GB/s: 128 µs a unit.
    const UNIT_NS: Nanos = 128_000;

    fn path(unit_ns: Nanos, units: u32, ns: Nanos) -> ProgramPath {
        ProgramPath::new(unit_ns, Journal { units, ns, ..Journal::default() })
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

    #[test]
    fn every_nth_journal_write_is_a_checkpoint_that_holds_the_path_longer() {
        let journal = Journal { units: 2, ns: 100_000, checkpoint_journals: 3, checkpoint_ns: 1_000_000 };
        let mut p = ProgramPath::new(UNIT_NS, journal);
        let starts: Vec<Nanos> = (0..7).map(|_| p.hand_over(0)).collect();
        // Units 2 and 4 end a journal's worth; unit 6 ends the third, a checkpoint.
        let (u, j, c) = (UNIT_NS, 100_000, 1_000_000);
        assert_eq!(starts, [0, u, 2 * u + j, 3 * u + j, 4 * u + 2 * j, 5 * u + 2 * j, 6 * u + 2 * j + c]);
        // Without a checkpoint count every journal write is a journal write.
        let mut plain = ProgramPath::new(UNIT_NS, Journal { checkpoint_journals: 0, ..journal });
        let last = (0..7).map(|_| plain.hand_over(0)).last();
        assert_eq!(last, Some(6 * u + 3 * j));
    }
}
