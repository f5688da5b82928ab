//! Virtual time and resource timelines.
//!
//! A [`Timeline`] is a resource that serves one thing at a time (a flash plane,
//! a channel, a PCIe direction, a firmware core). Reserving it returns when the
//! work starts and ends; queueing and contention follow from those reservations
//! instead of from formulas per workload.

/// Simulated time and durations, in nanoseconds.
pub type Nanos = u64;

/// One microsecond.
pub const US: Nanos = 1_000;
/// One millisecond.
pub const MS: Nanos = 1_000_000;
/// One second.
pub const SEC: Nanos = 1_000_000_000;

/// The simulation horizon (2^62 ns, about 146 years). Inputs that would move
/// the clock past it are rejected, which leaves every model room to add
/// operation times to a timestamp without overflowing.
pub const TIME_NS_MAX: Nanos = 1 << 62;

/// Time to move `bytes` at `bytes_per_s`, rounded up so that no transfer is free.
#[inline]
pub fn transfer_ns(bytes: u64, bytes_per_s: u64) -> Nanos {
    assert!(bytes_per_s > 0, "bandwidth must be positive");
    // Below ~18 GB the product fits u64, whose division is a machine
    // instruction; u128 division is a library call (2% of `zonelab bench`).
    if let Some(scaled) = bytes.checked_mul(SEC) {
        return scaled.div_ceil(bytes_per_s);
    }
    let ns = (u128::from(bytes) * u128::from(SEC)).div_ceil(u128::from(bytes_per_s));
    Nanos::try_from(ns).expect("transfer time overflows u64 nanoseconds")
}

/// A resource that serves one request at a time, in reservation order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    free_at_ns: Nanos,
    busy_ns: Nanos,
}

impl Timeline {
    /// A resource that is free from time 0 and has not been used.
    pub fn new() -> Self {
        Self::default()
    }

    /// Time at which the resource next becomes free.
    #[inline]
    pub fn free_at_ns(&self) -> Nanos {
        self.free_at_ns
    }

    /// Total time the resource has been reserved for.
    #[inline]
    pub fn busy_ns(&self) -> Nanos {
        self.busy_ns
    }

    /// Reserves `duration_ns` starting no earlier than `ready_ns`; returns the
    /// end of the reservation.
    #[inline]
    pub fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        debug_assert!(ready_ns <= TIME_NS_MAX && duration_ns <= TIME_NS_MAX, "times within the horizon");
        let free_before_ns = self.free_at_ns;
        let start_ns = ready_ns.max(self.free_at_ns);
        let end_ns = start_ns + duration_ns;
        self.free_at_ns = end_ns;
        self.busy_ns += duration_ns;
        // A reservation starts once both the request and the resource are
        // ready, and the resource is never free earlier than it was.
        debug_assert!(end_ns >= ready_ns + duration_ns && end_ns >= free_before_ns + duration_ns);
        end_ns
    }

    /// Reserves the resource until `end_ns` when the start is set elsewhere
    /// (a multi-plane operation that must start on all planes together).
    #[inline]
    pub fn occupy_until(&mut self, start_ns: Nanos, end_ns: Nanos) {
        assert!(start_ns >= self.free_at_ns && end_ns >= start_ns);
        self.busy_ns += end_ns - start_ns;
        self.free_at_ns = end_ns;
    }
}

/// Busy spans a [`SlotTimeline`] remembers; older ones are forgotten.
const SLOT_SPANS_MAX: usize = 256;

/// A resource that serves each request in the first idle slot long enough
/// for it at or after the request is ready, whatever the order of the
/// reservations: a PCIe direction sends the data that is ready, so a read
/// whose data comes from a busy die later does not hold back one reserved
/// after it whose data is already in the controller (a [`Timeline`] would).
///
/// Bound: it remembers the last `SLOT_SPANS_MAX` busy spans (adjacent ones
/// merged); nothing starts before the end of the last span it forgot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotTimeline {
    /// Busy spans (start, end): sorted, disjoint and not touching.
    spans: std::collections::VecDeque<(Nanos, Nanos)>,
    /// End of the last forgotten span.
    floor_ns: Nanos,
    busy_ns: Nanos,
}

impl SlotTimeline {
    /// A resource that is free from time 0 and has not been used.
    pub fn new() -> Self {
        Self::default()
    }

    /// End of the latest reservation.
    pub fn free_at_ns(&self) -> Nanos {
        self.spans.back().map_or(self.floor_ns, |&(_, end_ns)| end_ns)
    }

    /// Total time the resource has been reserved for.
    pub fn busy_ns(&self) -> Nanos {
        self.busy_ns
    }

    /// Forgets the spans that end by `now_ns`: the caller promises that no
    /// later request is ready before it, so they can no longer matter, and
    /// the spans left are the ones ahead (few, so reservations stay cheap).
    pub fn forget_until(&mut self, now_ns: Nanos) {
        // Bound: each step forgets one remembered span.
        while let Some(&(_, end_ns)) = self.spans.front() {
            if end_ns > now_ns {
                break;
            }
            self.floor_ns = end_ns;
            self.spans.pop_front();
        }
    }

    /// Reserves `duration_ns` in the first idle slot that fits it at or after
    /// `ready_ns`; returns the end of the reservation.
    pub fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        let mut start_ns = ready_ns.max(self.floor_ns);
        if duration_ns == 0 {
            return start_ns;
        }
        // Most requests come after every reservation: no search.
        let mut i = self.spans.len();
        if start_ns < self.free_at_ns() {
            i = self.spans.partition_point(|&(_, end_ns)| end_ns <= start_ns);
            // Bound: each step passes one remembered span.
            while let Some(&(busy_start_ns, busy_end_ns)) = self.spans.get(i) {
                if start_ns + duration_ns <= busy_start_ns {
                    break;
                }
                start_ns = start_ns.max(busy_end_ns);
                i += 1;
            }
        }
        let end_ns = start_ns + duration_ns;
        let joins_before = i > 0 && self.spans[i - 1].1 == start_ns;
        let joins_after = self.spans.get(i).is_some_and(|&(next_start_ns, _)| next_start_ns == end_ns);
        match (joins_before, joins_after) {
            (true, true) => {
                self.spans[i - 1].1 = self.spans[i].1;
                self.spans.remove(i);
            }
            (true, false) => self.spans[i - 1].1 = end_ns,
            (false, true) => self.spans[i].0 = start_ns,
            (false, false) => self.spans.insert(i, (start_ns, end_ns)),
        }
        if self.spans.len() > SLOT_SPANS_MAX {
            let (_, forgotten_end_ns) = self.spans.pop_front().expect("over the bound, so not empty");
            self.floor_ns = forgotten_end_ns;
        }
        self.busy_ns += duration_ns;
        debug_assert!(start_ns >= ready_ns && self.spans.len() <= SLOT_SPANS_MAX);
        end_ns
    }
}

/// Reserves a pool of identical servers (e.g. firmware cores): the request goes
/// to the server that frees up first; ties go to the lowest index, for determinism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerPool {
    servers: Vec<Timeline>,
}

impl ServerPool {
    /// A pool of `count` idle servers (at least one).
    pub fn new(count: usize) -> Self {
        assert!(count > 0, "a server pool needs at least one server");
        Self { servers: vec![Timeline::new(); count] }
    }

    #[inline]
    /// Reserves `duration_ns` on the server that frees up first, no earlier
    /// than `ready_ns`; returns the end of the reservation.
    pub fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        // One server (a controller's single FTL or firmware core): no choice to make.
        if let [only] = self.servers.as_mut_slice() {
            return only.reserve(ready_ns, duration_ns);
        }
        let mut best = 0;
        for (i, s) in self.servers.iter().enumerate().skip(1) {
            if s.free_at_ns() < self.servers[best].free_at_ns() {
                best = i;
            }
        }
        self.servers[best].reserve(ready_ns, duration_ns)
    }

    /// Total time reserved over all servers (core-nanoseconds, not wall time).
    pub fn busy_ns(&self) -> Nanos {
        self.servers.iter().map(Timeline::busy_ns).sum()
    }

    /// When the first server frees up.
    pub fn free_at_ns(&self) -> Nanos {
        self.servers.iter().map(Timeline::free_at_ns).min().expect("at least one server")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeline_queues_back_to_back() {
        let mut t = Timeline::new();
        assert_eq!(t.reserve(100, 50), 150);
        assert_eq!(t.reserve(120, 50), 200, "second request waits for the first");
        assert_eq!(t.reserve(500, 10), 510, "an idle gap is not charged");
        assert_eq!(t.busy_ns(), 110);
    }

    #[test]
    fn a_slot_timeline_serves_what_is_ready_in_the_gaps_before_later_reservations() {
        let mut t = SlotTimeline::new();
        assert_eq!(t.reserve(100, 50), 150, "data ready late, reserved first");
        assert_eq!(t.reserve(20, 30), 50, "ready earlier: goes first in the idle slot");
        assert_eq!(t.reserve(40, 40), 90, "waits for the slot's first transfer, fits before the late one");
        assert_eq!(t.reserve(60, 30), 180, "no room left before 150: after it");
        assert_eq!(t.free_at_ns(), 180);
        assert_eq!(t.busy_ns(), 150);
    }

    #[test]
    fn a_slot_timeline_forgets_old_spans_without_reusing_their_gaps() {
        let mut t = SlotTimeline::new();
        for i in 0..(SLOT_SPANS_MAX as u64 + 10) {
            t.reserve(i * 100, 10);
        }
        assert_eq!(t.spans.len(), SLOT_SPANS_MAX);
        let floor_ns = t.floor_ns;
        assert!(floor_ns > 0);
        assert!(t.reserve(0, 10) > floor_ns, "the forgotten past counts as busy");
        let last_end_ns = t.free_at_ns();
        t.forget_until(last_end_ns - 1);
        assert_eq!(t.spans.len(), 1, "only the span still ahead is kept");
        assert_eq!(t.reserve(last_end_ns - 1, 5), last_end_ns + 5);
    }

    #[test]
    fn pool_spreads_over_servers() {
        let mut p = ServerPool::new(2);
        assert_eq!(p.reserve(0, 100), 100);
        assert_eq!(p.reserve(0, 100), 100);
        assert_eq!(p.reserve(0, 100), 200);
    }

    #[test]
    fn transfer_rounds_up() {
        assert_eq!(transfer_ns(4096, 4_096_000_000), 1000);
        assert_eq!(transfer_ns(1, 3 * SEC), 1);
        assert_eq!(transfer_ns(0, 1), 0);
        // Past u64 products, the u128 path gives the same rounding.
        assert_eq!(transfer_ns(20_000_000_000, SEC), 20 * SEC);
        assert_eq!(transfer_ns(20_000_000_001, 3 * SEC), 6_666_666_667);
        assert_eq!(transfer_ns(u64::MAX, u64::MAX), SEC);
    }
}
