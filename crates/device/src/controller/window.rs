//! The data of a zone's Zone Random Write Area (TP 4076) in controller
//! memory: which LBAs above the write pointer hold data not committed yet.
//! A rewrite finds its LBAs here and takes no more buffer room; a commit
//! takes them out and hands them to the fill, from which they are programmed.

use std::collections::BTreeMap;
use zonelab_sim::Nanos;

/// Written, uncommitted LBAs of one zone as disjoint ranges `start -> end`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Window {
    ranges: BTreeMap<u64, u64>,
    lbas: u64,
    /// When the data of the latest window write is all in: a commit hands
    /// nothing to flash before (writes in flight may overlap a commit).
    ready_ns: Nanos,
}

impl Window {
    /// When the window's data written so far is all in the controller.
    pub(crate) fn ready_ns(&self) -> Nanos {
        self.ready_ns
    }

    /// Data written into the window is in from `ready_ns` on.
    pub(crate) fn note_ready(&mut self, ready_ns: Nanos) {
        self.ready_ns = self.ready_ns.max(ready_ns);
    }

    /// LBAs held.
    pub(crate) fn lbas(&self) -> u64 {
        self.lbas
    }

    /// The end of the highest LBA held, if any.
    pub(crate) fn end(&self) -> Option<u64> {
        self.ranges.last_key_value().map(|(_, &e)| e)
    }

    /// `start..end` is written: returns how many of its LBAs were not held.
    pub(crate) fn write(&mut self, start: u64, end: u64) -> u64 {
        let (mut lo, mut hi) = (start, end);
        let mut overlap = 0;
        // Bound: each pass removes one range that touches `start..end`.
        while let Some((&s, &e)) = self.ranges.range(..=hi).next_back() {
            if e < lo {
                break;
            }
            overlap += e.min(end).saturating_sub(s.max(start));
            lo = lo.min(s);
            hi = hi.max(e);
            self.ranges.remove(&s);
        }
        self.ranges.insert(lo, hi);
        let new = (end - start) - overlap;
        self.lbas += new;
        new
    }

    /// The LBAs below `end` are committed: returns how many were held.
    pub(crate) fn commit_below(&mut self, end: u64) -> u64 {
        let mut held = 0;
        // Bound: each pass removes one range starting below `end`.
        while let Some((&s, &e)) = self.ranges.first_key_value() {
            if s >= end {
                break;
            }
            self.ranges.remove(&s);
            held += e.min(end) - s;
            if e > end {
                self.ranges.insert(end, e);
            }
        }
        self.lbas -= held;
        held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_are_not_new_and_commits_count_what_was_written() {
        let mut w = Window::default();
        assert_eq!(w.write(10, 20), 10);
        assert_eq!(w.write(15, 25), 5, "10..20 held already");
        assert_eq!(w.write(30, 32), 2);
        assert_eq!(w.write(5, 40), 35 - 17);
        assert_eq!(w.lbas(), 35);
        assert_eq!(w.commit_below(8), 3);
        assert_eq!(w.end(), Some(40));
        assert_eq!(w.commit_below(50), 32);
        assert_eq!((w.lbas(), w.end()), (0, None));
    }

    #[test]
    fn adjacent_ranges_merge() {
        let mut w = Window::default();
        w.write(0, 4);
        w.write(4, 8);
        w.write(12, 16);
        assert_eq!(w.ranges.len(), 2);
        assert_eq!(w.commit_below(14), 10);
        assert_eq!(w.lbas(), 2);
    }
}
