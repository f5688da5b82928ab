//! Per-zone write buffer in controller memory.
//!
//! Host data waits here until the program unit it belongs to is complete and
//! programmed; its space is freed when the program finishes. A write that
//! finds the buffer full waits for the oldest programs (back-pressure), which
//! is how flash program bandwidth reaches the host.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use zonelab_sim::Nanos;

/// Ordered by completion time first, so the heap yields the next space to free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Release {
    done_ns: Nanos,
    unit: u64,
    bytes: u64,
}

/// One zone's share of controller memory for data waiting to be programmed.
#[derive(Debug, Clone, Default)]
pub struct ZoneBuffer {
    occupied_bytes: u64,
    /// Programs in flight; a unit's space is free once its program is done,
    /// whatever the order (the buffer is a pool of slots, not a ring).
    pending: BinaryHeap<Reverse<Release>>,
    /// No program in `pending` ends after this (an upper bound, reset when
    /// the buffer is cleared): reads after it need not search the heap.
    pending_done_max_ns: Nanos,
}

impl ZoneBuffer {
    /// Bytes held: data not yet handed to a program plus programs in flight.
    pub fn occupied_bytes(&self) -> u64 {
        self.occupied_bytes
    }

    fn reclaim_until(&mut self, at_ns: Nanos) {
        while let Some(Reverse(r)) = self.pending.peek() {
            if r.done_ns > at_ns {
                break;
            }
            self.occupied_bytes -= r.bytes;
            self.pending.pop();
        }
    }

    /// Admits `bytes` arriving from `ready_ns` on into a buffer of
    /// `capacity_bytes`; returns when there is room for them.
    #[inline]
    pub fn admit(&mut self, ready_ns: Nanos, bytes: u64, capacity_bytes: u64) -> Nanos {
        assert!(bytes <= capacity_bytes, "one piece must fit the buffer");
        // Usually there is room and no program has ended since the last
        // piece: nothing to reclaim, nothing to wait for.
        let room = self.occupied_bytes + bytes <= capacity_bytes;
        if room && self.pending.peek().is_none_or(|Reverse(r)| r.done_ns > ready_ns) {
            self.occupied_bytes += bytes;
            return ready_ns;
        }
        self.admit_after_programs(ready_ns, bytes, capacity_bytes)
    }

    /// [`ZoneBuffer::admit`] once programs have ended or the buffer is full.
    #[inline(never)]
    fn admit_after_programs(&mut self, ready_ns: Nanos, bytes: u64, capacity_bytes: u64) -> Nanos {
        self.reclaim_until(ready_ns);
        let mut at_ns = ready_ns;
        while self.occupied_bytes + bytes > capacity_bytes {
            // Configs guarantee room for a super word line, so anything over
            // that is in a program that will finish.
            let Reverse(r) = self.pending.pop().expect("a full buffer has programs in flight");
            at_ns = at_ns.max(r.done_ns);
            self.occupied_bytes -= r.bytes;
        }
        self.occupied_bytes += bytes;
        at_ns
    }

    /// Records that program unit `unit` (of `bytes` buffered bytes, padding
    /// excluded) finishes at `done_ns`.
    pub fn programmed(&mut self, unit: u64, bytes: u64, done_ns: Nanos) {
        self.pending.push(Reverse(Release { done_ns, unit, bytes }));
        self.pending_done_max_ns = self.pending_done_max_ns.max(done_ns);
    }

    /// When unit `unit` finishes programming, if it is still in flight at `at_ns`.
    #[inline]
    pub fn unit_pending_until(&self, unit: u64, at_ns: Nanos) -> Option<Nanos> {
        if at_ns >= self.pending_done_max_ns {
            return None;
        }
        self.pending.iter().find(|r| r.0.unit == unit).map(|r| r.0.done_ns).filter(|&t| t > at_ns)
    }

    /// Frees up to `bytes` of data not handed to a program yet (lost at a
    /// power cut).
    pub fn release_unissued(&mut self, bytes: u64) {
        let issued: u64 = self.pending.iter().map(|r| r.0.bytes).sum();
        self.occupied_bytes -= bytes.min(self.occupied_bytes.saturating_sub(issued));
    }

    /// Drops everything (zone reset): the data is no longer wanted.
    pub fn clear(&mut self) {
        self.occupied_bytes = 0;
        self.pending.clear();
        self.pending_done_max_ns = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_pressure_waits_for_oldest_program() {
        let mut b = ZoneBuffer::default();
        assert_eq!(b.admit(0, 60, 100), 0);
        b.programmed(0, 60, 1_000);
        assert_eq!(b.admit(10, 40, 100), 10, "fits without waiting");
        assert_eq!(b.admit(20, 30, 100), 1_000, "waits for the program to free space");
        assert_eq!(b.occupied_bytes(), 70);
    }

    #[test]
    fn space_frees_in_the_order_programs_finish() {
        let mut b = ZoneBuffer::default();
        b.admit(0, 100, 100);
        b.programmed(0, 60, 2_000);
        b.programmed(1, 40, 1_000);
        assert_eq!(b.admit(10, 40, 100), 1_000, "the later unit's program finished first");
        assert_eq!(b.admit(1_500, 20, 100), 2_000);
    }

    #[test]
    fn pending_units_report_completion() {
        let mut b = ZoneBuffer::default();
        b.admit(0, 10, 100);
        b.programmed(3, 10, 500);
        assert_eq!(b.unit_pending_until(3, 100), Some(500));
        assert_eq!(b.unit_pending_until(3, 500), None);
        assert_eq!(b.unit_pending_until(4, 100), None);
    }
}
