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

/// A bandwidth that remembers its latest transfer's time: a link or channel
/// mostly moves the same size again (a page, a 4 KiB block), whose time then
/// needs no division.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bandwidth {
    bytes_per_s: u64,
    /// The latest transfer: (bytes, [`transfer_ns`] of them).
    last: (u64, Nanos),
}

impl Bandwidth {
    /// `bytes_per_s` (positive).
    pub fn new(bytes_per_s: u64) -> Self {
        assert!(bytes_per_s > 0, "bandwidth must be positive");
        Self { bytes_per_s, last: (0, 0) }
    }

    /// [`transfer_ns`] of `bytes` at this bandwidth.
    #[inline(always)]
    pub fn transfer_ns(&mut self, bytes: u64) -> Nanos {
        let (last_bytes, last_ns) = self.last;
        if bytes == last_bytes {
            debug_assert_eq!(last_ns, transfer_ns(bytes, self.bytes_per_s));
            return last_ns;
        }
        let ns = transfer_ns(bytes, self.bytes_per_s);
        self.last = (bytes, ns);
        ns
    }
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

/// Forgotten spans a [`SlotTimeline`] keeps in front of the live ones before
/// it moves the live ones down: forgetting a span is then one step of an
/// index, and the move costs a copy of the live spans once every this many.
const SLOT_FORGOTTEN_MAX: usize = 64;

/// A resource that serves each request in the first idle slot long enough
/// for it at or after the request is ready, whatever the order of the
/// reservations: a PCIe direction sends the data that is ready, so a read
/// whose data comes from a busy die later does not hold back one reserved
/// after it whose data is already in the controller (a [`Timeline`] would).
///
/// Bound: it remembers the last `SLOT_SPANS_MAX` busy spans (adjacent ones
/// merged); nothing starts before the end of the last span it forgot.
#[derive(Debug, Clone, Default)]
pub struct SlotTimeline {
    /// Busy spans (start, end), the remembered ones from `head` on: sorted,
    /// disjoint and not touching. A plain vector, not a ring: a reservation
    /// lands among the spans ahead, and a slice's binary search and insert
    /// are cheaper than a ring's (`SLOT_FORGOTTEN_MAX`).
    spans: Vec<(Nanos, Nanos)>,
    /// First remembered span; those before it are forgotten.
    head: usize,
    /// End of the last forgotten span.
    floor_ns: Nanos,
    busy_ns: Nanos,
    /// No request from now on is ready before this (`forget_until`): the
    /// spans that end by then are stale, and go when the spans are many.
    now_ns: Nanos,
}

/// Equal when they remember the same spans, whatever forgotten ones either
/// still holds in front of them.
impl PartialEq for SlotTimeline {
    fn eq(&self, other: &Self) -> bool {
        self.live() == other.live() && self.floor_ns == other.floor_ns && self.busy_ns == other.busy_ns
    }
}

impl Eq for SlotTimeline {}

impl SlotTimeline {
    /// A resource that is free from time 0 and has not been used.
    pub fn new() -> Self {
        Self::default()
    }

    /// The remembered spans.
    #[inline]
    fn live(&self) -> &[(Nanos, Nanos)] {
        &self.spans[self.head..]
    }

    /// End of the latest reservation.
    #[inline]
    pub fn free_at_ns(&self) -> Nanos {
        // The last span is remembered whenever there is one: forgetting goes oldest first.
        self.spans.last().map_or(self.floor_ns, |&(_, end_ns)| end_ns)
    }

    /// Total time the resource has been reserved for.
    pub fn busy_ns(&self) -> Nanos {
        self.busy_ns
    }

    /// The caller promises that no later request is ready before `now_ns`:
    /// the spans that end by then can no longer matter. They are dropped
    /// when the spans reach the bound, not at every call (a command each):
    /// a reservation at or after `now_ns` skips them in its search and
    /// lands where it would without them, and the bound drops them before
    /// it drops a span that still matters, so the times are the same.
    #[inline]
    pub fn forget_until(&mut self, now_ns: Nanos) {
        debug_assert!(now_ns >= self.now_ns, "time runs forward");
        self.now_ns = now_ns;
    }

    /// Drops the spans that end by `now_ns` (see [`SlotTimeline::forget_until`]).
    fn forget_stale(&mut self) {
        let now_ns = self.now_ns;
        let forgotten = self.live().iter().take_while(|&&(_, end_ns)| end_ns <= now_ns).count();
        if forgotten > 0 {
            self.forget_first(forgotten);
        }
    }

    /// Forgets the first `count` remembered spans.
    fn forget_first(&mut self, count: usize) {
        debug_assert!(count > 0 && count <= self.live().len());
        self.head += count;
        self.floor_ns = self.spans[self.head - 1].1;
        if self.head == self.spans.len() {
            self.spans.clear();
            self.head = 0;
        } else if self.head >= SLOT_FORGOTTEN_MAX {
            self.spans.drain(..self.head);
            self.head = 0;
        }
        debug_assert!(self.live().first().is_none_or(|&(_, end_ns)| end_ns > self.floor_ns));
    }

    /// Reserves `duration_ns` in the first idle slot that fits it at or after
    /// `ready_ns` (not before the time `forget_until` gave); returns the end
    /// of the reservation.
    pub fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        debug_assert!(ready_ns >= self.now_ns, "a request ready before the promised time");
        let mut start_ns = ready_ns.max(self.floor_ns);
        if duration_ns == 0 {
            return start_ns;
        }
        let live = self.live();
        let mut i = first_ending_after(live, start_ns);
        // Bound: each step passes one remembered span.
        while let Some(&(busy_start_ns, busy_end_ns)) = live.get(i) {
            if start_ns + duration_ns <= busy_start_ns {
                break;
            }
            start_ns = start_ns.max(busy_end_ns);
            i += 1;
        }
        let end_ns = start_ns + duration_ns;
        let joins_before = i > 0 && live[i - 1].1 == start_ns;
        let joins_after = live.get(i).is_some_and(|&(next_start_ns, _)| next_start_ns == end_ns);
        let at = self.head + i;
        match (joins_before, joins_after) {
            (true, true) => {
                self.spans[at - 1].1 = self.spans[at].1;
                self.spans.remove(at);
            }
            (true, false) => self.spans[at - 1].1 = end_ns,
            (false, true) => self.spans[at].0 = start_ns,
            (false, false) => self.spans.insert(at, (start_ns, end_ns)),
        }
        if self.live().len() > SLOT_SPANS_MAX {
            // The stale spans first: only then one that may still matter.
            self.forget_stale();
            if self.live().len() > SLOT_SPANS_MAX {
                self.forget_first(1);
            }
        }
        self.busy_ns += duration_ns;
        debug_assert!(start_ns >= ready_ns && self.live().len() <= SLOT_SPANS_MAX);
        end_ns
    }
}

/// Spans a [`SlotTimeline`] looks back over from its latest before it
/// searches the rest by halves.
const SLOT_BACK_STEPS_MAX: usize = 16;

/// Index of the first of `spans` (sorted, disjoint) that ends after `t_ns`.
/// A request is mostly ready near the latest reservations (data comes back
/// about in the order it was asked for), so the latest spans are tried
/// first, one by one, before a binary search of the others.
#[inline]
fn first_ending_after(spans: &[(Nanos, Nanos)], t_ns: Nanos) -> usize {
    let later = spans.iter().rev().take(SLOT_BACK_STEPS_MAX).take_while(|&&(_, end_ns)| end_ns > t_ns).count();
    let i = spans.len() - later;
    if later < SLOT_BACK_STEPS_MAX {
        return i;
    }
    spans[..i].partition_point(|&(_, end_ns)| end_ns <= t_ns)
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

    /// When the last server frees up: from then on the whole pool is idle.
    pub fn all_free_at_ns(&self) -> Nanos {
        self.servers.iter().map(Timeline::free_at_ns).max().expect("at least one server")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bandwidth_gives_transfer_ns_whatever_sizes_follow() {
        let mut link = Bandwidth::new(3_000_000_001);
        for bytes in [4096, 4096, 512, 0, 4096, 131_072, 131_072, 1] {
            assert_eq!(link.transfer_ns(bytes), transfer_ns(bytes, 3_000_000_001), "{bytes} B");
        }
    }

    #[test]
    fn a_pool_is_all_free_once_its_last_server_is() {
        let mut pool = ServerPool::new(2);
        assert_eq!(pool.reserve(0, 100), 100);
        assert_eq!(pool.reserve(0, 30), 30, "the second server takes it");
        assert_eq!((pool.free_at_ns(), pool.all_free_at_ns()), (30, 100));
    }

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
        assert_eq!(t.live().len(), SLOT_SPANS_MAX);
        let floor_ns = t.floor_ns;
        assert!(floor_ns > 0);
        assert!(t.reserve(0, 10) > floor_ns, "the forgotten past counts as busy");
        let last_end_ns = t.free_at_ns();
        t.forget_until(last_end_ns - 1);
        assert_eq!(t.reserve(last_end_ns - 1, 5), last_end_ns + 5);
        t.forget_stale();
        assert_eq!(t.live().len(), 1, "only the span still ahead is kept");
    }

    /// The slot search as a ring of spans that pops what it forgets: the
    /// reference the vector with a head index must match.
    #[derive(Default)]
    struct RingSlots {
        spans: std::collections::VecDeque<(Nanos, Nanos)>,
        floor_ns: Nanos,
    }

    impl RingSlots {
        fn forget_until(&mut self, now_ns: Nanos) {
            while let Some(&(_, end_ns)) = self.spans.front().filter(|&&(_, end_ns)| end_ns <= now_ns) {
                self.floor_ns = end_ns;
                self.spans.pop_front();
            }
        }

        fn reserve(&mut self, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
            let mut start_ns = ready_ns.max(self.floor_ns);
            if duration_ns == 0 {
                return start_ns;
            }
            let mut i = self.spans.partition_point(|&(_, end_ns)| end_ns <= start_ns);
            while let Some(&(busy_start_ns, busy_end_ns)) = self.spans.get(i) {
                if start_ns + duration_ns <= busy_start_ns {
                    break;
                }
                start_ns = start_ns.max(busy_end_ns);
                i += 1;
            }
            let end_ns = start_ns + duration_ns;
            self.spans.insert(i, (start_ns, end_ns));
            // Merge touching neighbours.
            if i + 1 < self.spans.len() && self.spans[i + 1].0 == end_ns {
                self.spans[i].1 = self.spans.remove(i + 1).expect("a neighbour").1;
            }
            if i > 0 && self.spans[i - 1].1 == start_ns {
                self.spans[i - 1].1 = self.spans.remove(i).expect("the new span").1;
            }
            if self.spans.len() > SLOT_SPANS_MAX {
                self.floor_ns = self.spans.pop_front().expect("over the bound").1;
            }
            end_ns
        }
    }

    #[test]
    fn a_slot_timeline_reserves_as_a_ring_of_spans_would() {
        let mut rng = crate::SimRng::new(11);
        let mut longest = 0;
        for round in 0..4u64 {
            let (mut t, mut reference) = (SlotTimeline::new(), RingSlots::default());
            let mut now_ns = 0;
            for step in 0..20_000u64 {
                // Some rounds forget rarely, so that the bound and the compaction both act.
                if rng.below(1 + round * 40) == 0 {
                    now_ns += rng.below(400);
                    t.forget_until(now_ns);
                    reference.forget_until(now_ns);
                }
                let ready_ns = now_ns + rng.below(2_000 << (2 * round));
                let duration_ns = rng.below(4) * 10;
                let end_ns = t.reserve(ready_ns, duration_ns);
                assert_eq!(end_ns, reference.reserve(ready_ns, duration_ns), "round {round} step {step}");
                assert_eq!(t.free_at_ns(), reference.spans.back().map_or(reference.floor_ns, |s| s.1));
                // What still matters (the spans that end after now) is the same, but
                // for a span that grew from a stale one: its start is in the past.
                let ahead = |spans: &[(Nanos, Nanos)]| -> Vec<Nanos> {
                    spans.iter().filter(|s| s.1 > now_ns).map(|s| s.1).collect()
                };
                assert_eq!(ahead(t.live()), ahead(reference.spans.make_contiguous()), "round {round} step {step}");
                longest = longest.max(t.live().len());
            }
        }
        assert_eq!(longest, SLOT_SPANS_MAX, "the bound was reached");
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
