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
        let start_ns = ready_ns.max(self.free_at_ns);
        let end_ns = start_ns + duration_ns;
        self.free_at_ns = end_ns;
        self.busy_ns += duration_ns;
        debug_assert!(end_ns >= ready_ns);
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
