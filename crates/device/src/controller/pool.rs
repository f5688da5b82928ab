//! Controller memory all zones' write buffers draw from
//! (`write_buffer.device_buffer_bytes`).
//!
//! A write waits for room here as well as in its zone's share, and room comes
//! back as any zone's data leaves for flash, so writers of different zones
//! wait for the same releases. Room is kept as a timeline: bytes free now,
//! and releases still to come (when, whose, how many), so that a write that
//! waits takes a particular release and leaves the others to later writes.
//!
//! Which waiting write a release serves is the firmware's choice
//! (`write_buffer.room_order`): in arrival order, or in no particular order
//! among the zones waiting, which the ZN540's writers at the flash's limit
//! show (ConfZNS++ C2: the wait of N QD-1 writers spreads like a floor plus
//! an exponential, not every write waiting the mean). A zone's own writes
//! take room in their order either way.

use std::collections::VecDeque;
use zonelab_sim::{Nanos, SimRng};

/// How the device pool is built (`[write_buffer]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// 0: no device-wide limit.
    pub capacity_bytes: u64,
    /// Some: waiting zones take released room in a random order of this seed.
    pub random_seed: Option<u64>,
    /// Some: a unit's data leaves in pieces of this many bytes (a page of
    /// each of the die's planes, or [`WHOLE_UNIT`]) as it crosses the
    /// program path, each when it has crossed; None: when its program ends.
    pub crossed_piece_bytes: Option<u64>,
}

/// A piece as large as any unit: the unit's data leaves the pool in one
/// piece, when its last byte has crossed the program path.
pub const WHOLE_UNIT: u64 = u64::MAX;

/// When a program unit's data crosses the program path: from `start_ns`, for `cross_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crossing {
    /// When the unit's data starts out to its die.
    pub start_ns: Nanos,
    /// How long it takes to cross (0: no path limit).
    pub cross_ns: Nanos,
}

/// Randomness stream of the pool's service order (see `SimRng::fork`).
const STREAM_ROOM_ORDER: u64 = 3;

/// Slots of room a waiting write lets go at most (more than a pool holds of
/// the smallest piece).
const SLOTS_PASSED_MAX: u64 = 1 << 20;

/// Random service order: which zones have a write waiting for room.
///
/// A zone's waits end in the order its writes take room, so the zone waits
/// until its latest wait ends: one time per zone, and a short list of the
/// zones whose latest wait has not been seen to end.
#[derive(Debug, Clone)]
struct RandomOrder {
    rng: SimRng,
    /// Per zone: when its latest wait for room ends; 0 once that is past
    /// (or it never waited), which is when it is not in `waiting_zones`.
    wait_until_ns: Vec<Nanos>,
    /// Zones with a wait not yet seen to end, each once.
    waiting_zones: Vec<u32>,
    /// No wait in `waiting_zones` ends before this (`Nanos::MAX` when none).
    first_end_ns: Nanos,
    /// Per zone: its latest admission (a zone's writes take room in order).
    zone_admitted_ns: Vec<Nanos>,
}

impl RandomOrder {
    fn new(seed: u64, zones: u32) -> Self {
        Self {
            rng: SimRng::fork(seed, STREAM_ROOM_ORDER),
            wait_until_ns: vec![0; zones as usize],
            waiting_zones: Vec::new(),
            first_end_ns: Nanos::MAX,
            zone_admitted_ns: vec![0; zones as usize],
        }
    }

    /// Forgets the zones whose waits ended by `at_ns`.
    #[inline]
    fn settle(&mut self, at_ns: Nanos) {
        if at_ns < self.first_end_ns {
            return;
        }
        let until = &mut self.wait_until_ns;
        let mut first_end_ns = Nanos::MAX;
        // Bound: the zones waiting, each visited once.
        self.waiting_zones.retain(|&zone| {
            let end_ns = &mut until[zone as usize];
            if *end_ns <= at_ns {
                *end_ns = 0;
                return false;
            }
            first_end_ns = first_end_ns.min(*end_ns);
            true
        });
        self.first_end_ns = first_end_ns;
    }

    /// Zones with a write waiting (as of the latest `settle`).
    fn zones_waiting(&self) -> usize {
        self.waiting_zones.len()
    }

    /// How many slots of room this write of `zone` lets go to others before
    /// it takes one: each release serves one of the zones waiting, this one
    /// among them, with equal chance (a geometric number of misses).
    fn slots_passed(&mut self, zone: u32) -> u64 {
        let listed = usize::from(self.wait_until_ns[zone as usize] > 0);
        let others = u32::try_from(self.zones_waiting() - listed).expect("zones fit a u32");
        if others == 0 {
            return 0;
        }
        let miss = f64::from(others) / f64::from(others + 1);
        let mut passed = 0;
        // Bound: `others` draws on average; the caller clamps to the room
        // coming back, which is less than the cap.
        while passed < SLOTS_PASSED_MAX && self.rng.chance(miss) {
            passed += 1;
        }
        passed
    }

    fn note_admitted(&mut self, zone: u32, ready_ns: Nanos, admitted_ns: Nanos) {
        let z = zone as usize;
        self.zone_admitted_ns[z] = self.zone_admitted_ns[z].max(admitted_ns);
        if admitted_ns > ready_ns {
            let end_ns = &mut self.wait_until_ns[z];
            if *end_ns == 0 {
                self.waiting_zones.push(zone);
            }
            debug_assert!(admitted_ns >= *end_ns, "a zone's waits end in order");
            *end_ns = admitted_ns;
            self.first_end_ns = self.first_end_ns.min(admitted_ns);
        }
    }
}

/// Room coming back: `bytes` of `zone`'s data leave at `done_ns`.
#[derive(Debug, Clone, Copy)]
struct Release {
    done_ns: Nanos,
    zone: u32,
    bytes: u64,
}

/// Controller memory the zones' write buffers share.
#[derive(Debug, Clone, Default)]
pub struct DevicePool {
    capacity_bytes: u64,
    /// Room no write has taken, released by the latest time asked about.
    free_bytes: u64,
    /// Bytes each zone holds (taken and not released), so that a reset or a
    /// power cut can return them.
    zone_bytes: Vec<u64>,
    /// Room coming back, in time order (programs mostly end in the order
    /// they start, so a new one goes at or near the back). A write that
    /// waits takes bytes out of a release before it comes due.
    releases: VecDeque<Release>,
    /// The bytes in `releases`.
    coming_bytes: u64,
    /// None: waiting writes take room in arrival order.
    random: Option<Box<RandomOrder>>,
    /// See [`PoolConfig::crossed_piece_bytes`].
    crossed_piece_bytes: Option<u64>,
}

impl DevicePool {
    /// The pool `config` describes, shared by `zones` zones (with a
    /// capacity of 0, no device-wide limit: each zone has only its own share).
    pub fn new(config: PoolConfig, zones: u32) -> Self {
        if config.capacity_bytes == 0 {
            return Self::default();
        }
        Self {
            capacity_bytes: config.capacity_bytes,
            free_bytes: config.capacity_bytes,
            zone_bytes: vec![0; zones as usize],
            releases: VecDeque::new(),
            coming_bytes: 0,
            random: config.random_seed.map(|seed| Box::new(RandomOrder::new(seed, zones))),
            crossed_piece_bytes: config.crossed_piece_bytes,
        }
    }

    #[inline]
    fn enabled(&self) -> bool {
        self.capacity_bytes > 0
    }

    /// Releases due by `at_ns` become free room.
    #[inline(never)]
    fn settle(&mut self, at_ns: Nanos) {
        // Bound: each pass removes one release.
        while let Some(&Release { done_ns, zone, bytes }) = self.releases.front() {
            if done_ns > at_ns {
                break;
            }
            self.releases.pop_front();
            self.coming_bytes -= bytes;
            self.free_bytes += bytes;
            self.zone_bytes[zone as usize] -= bytes;
        }
    }

    /// `bytes` of `zone` arriving from `ready_ns` on; returns when the pool has room.
    #[inline]
    pub fn admit(&mut self, zone: u32, ready_ns: Nanos, bytes: u64) -> Nanos {
        if !self.enabled() {
            return ready_ns;
        }
        // Usually there is room now (once the releases due are settled) and
        // the zone has no write waiting: the piece goes in at once.
        if self.releases.front().is_some_and(|r| r.done_ns <= ready_ns) {
            self.settle(ready_ns);
        }
        if self.free_bytes < bytes {
            return self.admit_slow(zone, ready_ns, bytes);
        }
        if let Some(order) = self.random.as_deref_mut() {
            // Room free now goes to whoever asks, but not ahead of the zone's own waiting write.
            let admitted_ns = &mut order.zone_admitted_ns[zone as usize];
            if *admitted_ns > ready_ns {
                return self.admit_slow(zone, ready_ns, bytes);
            }
            *admitted_ns = ready_ns;
        }
        self.free_bytes -= bytes;
        self.zone_bytes[zone as usize] += bytes;
        ready_ns
    }

    /// [`DevicePool::admit`] when the write may wait for room (the releases
    /// due by `ready_ns` settled).
    #[inline(never)]
    fn admit_slow(&mut self, zone: u32, ready_ns: Nanos, bytes: u64) -> Nanos {
        assert!(bytes <= self.capacity_bytes, "one piece must fit the pool");
        let (from_ns, passed) = match self.random.as_deref_mut() {
            None => (ready_ns, 0),
            Some(order) => {
                order.settle(ready_ns);
                let from_ns = ready_ns.max(order.zone_admitted_ns[zone as usize]);
                let passed = if self.free_bytes >= bytes && from_ns == ready_ns { 0 } else { order.slots_passed(zone) };
                (from_ns, passed)
            }
        };
        let available = self.free_bytes + self.coming_bytes;
        assert!(available >= bytes, "validation keeps a program able to start");
        // The slot taken: bytes `skip..skip + bytes` of the room in the order it comes back.
        let skip = passed.min(available / bytes - 1) * bytes;
        let admitted_ns = self.take(zone, skip, bytes).max(from_ns);
        if let Some(order) = self.random.as_deref_mut() {
            order.note_admitted(zone, ready_ns, admitted_ns);
        }
        admitted_ns
    }

    /// Takes `bytes` for `zone` out of the room in the order it comes back
    /// (free room first), after the first `skip` bytes; returns when the
    /// last of them is released (0 if all are free now).
    fn take(&mut self, zone: u32, mut skip: u64, bytes: u64) -> Nanos {
        let mut wanted = bytes;
        let from_free = self.free_bytes.saturating_sub(skip).min(wanted);
        skip = skip.saturating_sub(self.free_bytes);
        self.free_bytes -= from_free;
        wanted -= from_free;
        let mut last_ns = 0;
        let mut emptied = 0;
        // Bound: the pool's releases, each visited once.
        for r in self.releases.iter_mut() {
            if wanted == 0 {
                break;
            }
            let skipped = skip.min(r.bytes);
            skip -= skipped;
            let got = (r.bytes - skipped).min(wanted);
            if got == 0 {
                continue;
            }
            r.bytes -= got;
            wanted -= got;
            self.coming_bytes -= got;
            self.zone_bytes[r.zone as usize] -= got;
            last_ns = r.done_ns;
            emptied += usize::from(r.bytes == 0);
        }
        // Usually the first ones empty (always in arrival order); in random order any may.
        while emptied > 0 && self.releases.front().is_some_and(|r| r.bytes == 0) {
            self.releases.pop_front();
            emptied -= 1;
        }
        if emptied > 0 {
            self.releases.retain(|r| r.bytes > 0);
        }
        debug_assert_eq!(wanted, 0, "the caller checked the room");
        self.zone_bytes[zone as usize] += bytes;
        last_ns
    }

    /// A unit of `zone` holding `bytes` of data crossed the program path
    /// (`crossing`) and is programmed at `done_ns`: its data leaves the pool
    /// then, or piece by piece as it crosses (`pool_release = "crossed"` or
    /// `"unit_crossed"`).
    pub fn unit_programmed(&mut self, zone: u32, bytes: u64, done_ns: Nanos, crossing: Crossing) {
        let Some(piece_bytes) = self.crossed_piece_bytes else {
            return self.release_at(zone, bytes, done_ns);
        };
        let pieces = bytes.div_ceil(piece_bytes);
        let mut left = bytes;
        // Bound: a unit's pages.
        for piece in 1..=pieces {
            let piece_data = piece_bytes.min(left);
            left -= piece_data;
            self.release_at(zone, piece_data, crossing.start_ns + crossing.cross_ns * piece / pieces);
        }
        debug_assert_eq!(left, 0, "every byte of the unit leaves");
    }

    /// `bytes` of `zone`'s data leave the pool at `done_ns`.
    fn release_at(&mut self, zone: u32, bytes: u64, done_ns: Nanos) {
        if self.enabled() && bytes > 0 {
            let release = Release { done_ns, zone, bytes };
            // Programs mostly end in the order they start: most go at the back.
            if self.releases.back().is_none_or(|r| (r.done_ns, r.zone) <= (done_ns, zone)) {
                self.releases.push_back(release);
            } else {
                let at = self.releases.partition_point(|r| (r.done_ns, r.zone) <= (done_ns, zone));
                self.releases.insert(at, release);
            }
            self.coming_bytes += bytes;
        }
    }

    /// `bytes` of `zone`'s data not handed to a program yet are dropped.
    pub fn release_unissued(&mut self, zone: u32, bytes: u64) {
        if !self.enabled() {
            return;
        }
        let issued: u64 = self.releases.iter().filter(|r| r.zone == zone).map(|r| r.bytes).sum();
        let unissued = self.zone_bytes[zone as usize].saturating_sub(issued);
        let freed = bytes.min(unissued);
        self.zone_bytes[zone as usize] -= freed;
        self.free_bytes += freed;
    }

    /// `zone` was reset: everything it held is free.
    pub fn clear_zone(&mut self, zone: u32) {
        if !self.enabled() {
            return;
        }
        let mut dropped = 0;
        self.releases.retain(|r| {
            let keep = r.zone != zone;
            if !keep {
                dropped += r.bytes;
            }
            keep
        });
        self.coming_bytes -= dropped;
        self.free_bytes += std::mem::take(&mut self.zone_bytes[zone as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_CROSSING: Crossing = Crossing { start_ns: 0, cross_ns: 0 };

    fn fifo(capacity_bytes: u64) -> PoolConfig {
        PoolConfig { capacity_bytes, random_seed: None, crossed_piece_bytes: None }
    }

    #[test]
    fn a_device_pool_makes_zones_wait_for_each_others_programs() {
        let mut pool = DevicePool::new(fifo(100), 2);
        assert_eq!(pool.admit(0, 0, 60), 0);
        pool.unit_programmed(0, 60, 1_000, NO_CROSSING);
        assert_eq!(pool.admit(1, 10, 40), 10, "zone 1 fits beside zone 0");
        assert_eq!(pool.admit(1, 20, 30), 1_000, "zone 1 waits for zone 0's program");
        pool.clear_zone(1);
        assert_eq!(pool.admit(0, 1_100, 100), 1_100, "a reset zone's bytes are free again");
    }

    #[test]
    fn a_pool_of_zero_bytes_adds_no_limit() {
        let mut pool = DevicePool::new(fifo(0), 2);
        assert_eq!(pool.admit(0, 5, 1 << 40), 5);
        pool.unit_programmed(0, 1 << 40, 10, NO_CROSSING);
        pool.clear_zone(0);
    }

    /// Zone 0 fills a pool of 100 bytes; its data leaves 10 bytes at a time
    /// at 100, 200, ... 1000. Zones 1, 2 and 3 then want 10 bytes each at
    /// 10, 20 and 30: when does each get them?
    fn three_waiters(config: PoolConfig) -> [Nanos; 3] {
        let mut pool = DevicePool::new(config, 4);
        assert_eq!(pool.admit(0, 0, 100), 0);
        for i in 1..=10 {
            pool.unit_programmed(0, 10, i * 100, NO_CROSSING);
        }
        [pool.admit(1, 10, 10), pool.admit(2, 20, 10), pool.admit(3, 30, 10)]
    }

    #[test]
    fn in_arrival_order_released_room_serves_the_longest_waiting() {
        assert_eq!(three_waiters(fifo(100)), [100, 200, 300]);
    }

    #[test]
    fn in_random_order_a_later_write_can_have_its_room_first() {
        let mut overtaken = 0;
        for seed in 0..200 {
            let config = PoolConfig { random_seed: Some(seed), ..fifo(100) };
            let got = three_waiters(config);
            assert_eq!(got, three_waiters(config), "a seed fixes the order");
            // Nobody else waits when zone 1 comes: it takes the next release.
            assert_eq!(got[0], 100);
            // Every write has a release of its own, no sooner than it came.
            assert!(got.iter().all(|t| t % 100 == 0 && *t >= 200 || *t == 100), "{got:?}");
            assert_eq!(got.iter().collect::<std::collections::BTreeSet<_>>().len(), 3, "{got:?}");
            overtaken += u32::from(got[2] < got[1]);
        }
        // Zone 2 lets each release go with chance 1/2 (zone 1 waits too), and
        // zone 3 takes the one it let go with chance 1/3 or more.
        assert!((30..=120).contains(&overtaken), "zone 3 first in {overtaken} of 200");
    }

    #[test]
    fn a_zone_waits_until_its_latest_wait_ends() {
        let mut order = RandomOrder::new(0, 3);
        order.note_admitted(1, 0, 100);
        order.note_admitted(1, 5, 200);
        order.note_admitted(2, 0, 150);
        order.note_admitted(0, 10, 10); // room at once: no wait
        assert_eq!(order.zones_waiting(), 2);
        order.settle(120);
        assert_eq!(order.zones_waiting(), 2, "zone 1's second write still waits");
        order.settle(150);
        assert_eq!(order.zones_waiting(), 1, "zone 2's wait ended at 150");
        order.note_admitted(2, 160, 300);
        order.settle(250);
        assert_eq!((order.zones_waiting(), order.wait_until_ns[1], order.wait_until_ns[2]), (1, 0, 300));
        order.settle(300);
        assert_eq!(order.zones_waiting(), 0);
    }

    #[test]
    fn in_random_order_a_zones_own_writes_keep_their_order() {
        for seed in 0..100 {
            let mut pool = DevicePool::new(PoolConfig { random_seed: Some(seed), ..fifo(100) }, 4);
            pool.admit(0, 0, 100);
            for i in 1..=10 {
                pool.unit_programmed(0, 10, i * 100, NO_CROSSING);
            }
            let first = [pool.admit(1, 10, 10), pool.admit(2, 11, 10)];
            let second = [pool.admit(1, 12, 10), pool.admit(2, 13, 10)];
            assert!(second[0] >= first[0] && second[1] >= first[1], "seed {seed}: {first:?} then {second:?}");
        }
    }

    #[test]
    fn crossed_data_leaves_the_pool_page_by_page() {
        let crossed = PoolConfig { crossed_piece_bytes: Some(25), ..fifo(100) };
        let crossing = Crossing { start_ns: 1_000, cross_ns: 400 };
        let mut pool = DevicePool::new(crossed, 2);
        pool.admit(0, 0, 100);
        pool.unit_programmed(0, 100, 50_000, crossing);
        // Four pages cross by 1100, 1200, 1300 and 1400, long before the program ends.
        assert_eq!(pool.admit(1, 10, 25), 1_100);
        assert_eq!(pool.admit(1, 20, 50), 1_300);
        let mut at_end = DevicePool::new(fifo(100), 2);
        at_end.admit(0, 0, 100);
        at_end.unit_programmed(0, 100, 50_000, crossing);
        assert_eq!(at_end.admit(1, 10, 25), 50_000, "by default room comes back when the program ends");
    }

    #[test]
    fn a_unit_crossed_whole_leaves_the_pool_once_its_last_page_crossed() {
        let whole = PoolConfig { crossed_piece_bytes: Some(WHOLE_UNIT), ..fifo(100) };
        let crossing = Crossing { start_ns: 1_000, cross_ns: 400 };
        let mut pool = DevicePool::new(whole, 2);
        pool.admit(0, 0, 100);
        pool.unit_programmed(0, 100, 50_000, crossing);
        // Nothing comes back page by page: all 100 bytes at 1400.
        assert_eq!(pool.admit(1, 10, 25), 1_400);
        assert_eq!(pool.admit(1, 20, 75), 1_400, "the rest of the unit came back with it");
    }
}
