//! Per-zone write buffer in controller memory.
//!
//! Host data waits here until the program unit it belongs to is complete and
//! programmed; its space is freed when the program finishes. A write that
//! finds the buffer full waits for the oldest programs (back-pressure), which
//! is how flash program bandwidth reaches the host.

use std::collections::VecDeque;
use zonelab_sim::Nanos;

#[derive(Debug, Clone, Copy)]
struct Release {
    done_ns: Nanos,
    bytes: u64,
    unit: u64,
}

#[derive(Debug, Clone, Default)]
pub struct ZoneBuffer {
    occupied_bytes: u64,
    /// Programs in flight, oldest first; space is reclaimed in this order.
    pending: VecDeque<Release>,
}

impl ZoneBuffer {
    pub fn occupied_bytes(&self) -> u64 {
        self.occupied_bytes
    }

    fn reclaim_until(&mut self, at_ns: Nanos) {
        while let Some(r) = self.pending.front() {
            if r.done_ns > at_ns {
                break;
            }
            self.occupied_bytes -= r.bytes;
            self.pending.pop_front();
        }
    }

    /// Admits `bytes` arriving from `ready_ns` on into a buffer of
    /// `capacity_bytes`; returns when there is room for them.
    pub fn admit(&mut self, ready_ns: Nanos, bytes: u64, capacity_bytes: u64) -> Nanos {
        assert!(bytes <= capacity_bytes, "one piece must fit the buffer");
        self.reclaim_until(ready_ns);
        let mut at_ns = ready_ns;
        while self.occupied_bytes + bytes > capacity_bytes {
            // Configs guarantee room for a super word line, so anything over
            // that is in a program that will finish.
            let r = self.pending.pop_front().expect("a full buffer has programs in flight");
            at_ns = at_ns.max(r.done_ns);
            self.occupied_bytes -= r.bytes;
        }
        self.occupied_bytes += bytes;
        at_ns
    }

    /// Records that program unit `unit` (of `bytes` buffered bytes, padding
    /// excluded) finishes at `done_ns`.
    pub fn programmed(&mut self, unit: u64, bytes: u64, done_ns: Nanos) {
        debug_assert!(self.pending.back().is_none_or(|r| r.unit < unit));
        let done_ns = self.pending.back().map_or(done_ns, |r| r.done_ns.max(done_ns));
        self.pending.push_back(Release { done_ns, bytes, unit });
    }

    /// When unit `unit` finishes programming, if it is still in flight at `at_ns`.
    pub fn unit_pending_until(&self, unit: u64, at_ns: Nanos) -> Option<Nanos> {
        self.pending.iter().find(|r| r.unit == unit).map(|r| r.done_ns).filter(|&t| t > at_ns)
    }

    /// Frees up to `bytes` of data not handed to a program yet (lost at a
    /// power cut).
    pub fn release_unissued(&mut self, bytes: u64) {
        let issued: u64 = self.pending.iter().map(|r| r.bytes).sum();
        self.occupied_bytes -= bytes.min(self.occupied_bytes.saturating_sub(issued));
    }

    /// Drops everything (zone reset): the data is no longer wanted.
    pub fn clear(&mut self) {
        self.occupied_bytes = 0;
        self.pending.clear();
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
    fn pending_units_report_completion() {
        let mut b = ZoneBuffer::default();
        b.admit(0, 10, 100);
        b.programmed(3, 10, 500);
        assert_eq!(b.unit_pending_until(3, 100), Some(500));
        assert_eq!(b.unit_pending_until(3, 500), None);
        assert_eq!(b.unit_pending_until(4, 100), None);
    }
}
