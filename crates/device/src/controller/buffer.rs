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

/// Controller memory all zones' write buffers draw from (`write_buffer.
/// device_buffer_bytes`): a write waits for room here as well as in its
/// zone's share, and room comes back as any zone's program ends, so writers
/// of different zones wait for the same program completions.
#[derive(Debug, Clone, Default)]
pub struct DevicePool {
    capacity_bytes: u64,
    occupied_bytes: u64,
    /// Bytes each zone holds, so that a reset or power cut can return them.
    zone_bytes: Vec<u64>,
    pending: BinaryHeap<Reverse<(Nanos, u32, u64)>>,
}

impl DevicePool {
    /// A pool of `capacity_bytes` shared by `zones` zones; 0 means no
    /// device-wide limit (each zone has only its own share).
    pub fn new(capacity_bytes: u64, zones: u32) -> Self {
        let zone_bytes = if capacity_bytes == 0 { Vec::new() } else { vec![0; zones as usize] };
        Self { capacity_bytes, occupied_bytes: 0, zone_bytes, pending: BinaryHeap::new() }
    }

    #[inline]
    fn enabled(&self) -> bool {
        self.capacity_bytes > 0
    }

    fn free(&mut self, zone: u32, bytes: u64) {
        self.occupied_bytes -= bytes;
        self.zone_bytes[zone as usize] -= bytes;
    }

    /// `bytes` of `zone` arriving from `ready_ns` on; returns when the pool has room.
    #[inline]
    pub fn admit(&mut self, zone: u32, ready_ns: Nanos, bytes: u64) -> Nanos {
        if !self.enabled() {
            return ready_ns;
        }
        assert!(bytes <= self.capacity_bytes, "one piece must fit the pool");
        // As in a zone's buffer: room, and no program ended since the last piece.
        let room = self.occupied_bytes + bytes <= self.capacity_bytes;
        if room && self.pending.peek().is_none_or(|&Reverse((done_ns, _, _))| done_ns > ready_ns) {
            self.occupied_bytes += bytes;
            self.zone_bytes[zone as usize] += bytes;
            return ready_ns;
        }
        self.admit_after_programs(zone, ready_ns, bytes)
    }

    /// [`DevicePool::admit`] once programs have ended or the pool is full.
    #[inline(never)]
    fn admit_after_programs(&mut self, zone: u32, ready_ns: Nanos, bytes: u64) -> Nanos {
        let mut at_ns = ready_ns;
        // Bound: each pass frees one program's bytes, and the pool holds finitely many.
        while let Some(&Reverse((done_ns, z, freed))) = self.pending.peek() {
            let full = self.occupied_bytes + bytes > self.capacity_bytes;
            if done_ns > at_ns && !full {
                break;
            }
            at_ns = at_ns.max(done_ns);
            self.pending.pop();
            self.free(z, freed);
        }
        assert!(self.occupied_bytes + bytes <= self.capacity_bytes, "validation keeps a program able to start");
        self.occupied_bytes += bytes;
        self.zone_bytes[zone as usize] += bytes;
        at_ns
    }

    /// `bytes` of `zone`'s data leave the pool when its program ends at `done_ns`.
    pub fn programmed(&mut self, zone: u32, bytes: u64, done_ns: Nanos) {
        if self.enabled() {
            self.pending.push(Reverse((done_ns, zone, bytes)));
        }
    }

    /// `bytes` of `zone`'s data not handed to a program yet are dropped.
    pub fn release_unissued(&mut self, zone: u32, bytes: u64) {
        if !self.enabled() {
            return;
        }
        let issued: u64 = self.pending.iter().filter(|r| r.0 .1 == zone).map(|r| r.0 .2).sum();
        let unissued = self.zone_bytes[zone as usize].saturating_sub(issued);
        self.free(zone, bytes.min(unissued));
    }

    /// `zone` was reset: everything it held is free.
    pub fn clear_zone(&mut self, zone: u32) {
        if !self.enabled() {
            return;
        }
        self.pending.retain(|r| r.0 .1 != zone);
        let held = self.zone_bytes[zone as usize];
        self.free(zone, held);
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

    #[test]
    fn a_device_pool_makes_zones_wait_for_each_others_programs() {
        let mut pool = DevicePool::new(100, 2);
        assert_eq!(pool.admit(0, 0, 60), 0);
        pool.programmed(0, 60, 1_000);
        assert_eq!(pool.admit(1, 10, 40), 10, "zone 1 fits beside zone 0");
        assert_eq!(pool.admit(1, 20, 30), 1_000, "zone 1 waits for zone 0's program");
        pool.clear_zone(1);
        assert_eq!(pool.admit(0, 1_100, 100), 1_100, "a reset zone's bytes are free again");
    }

    #[test]
    fn a_pool_of_zero_bytes_adds_no_limit() {
        let mut pool = DevicePool::new(0, 2);
        assert_eq!(pool.admit(0, 5, 1 << 40), 5);
        pool.programmed(0, 1 << 40, 10);
        pool.clear_zone(0);
    }
}
