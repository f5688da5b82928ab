//! Seeded randomness. Every random choice in zonelab draws from a [`SimRng`]
//! derived from the run's seed, so the same seed gives the same run.

use rand::{Rng, RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

#[derive(Debug, Clone)]
/// The simulator's random number generator: PCG64 (MCG variant), small,
/// fast and identical on every platform for a given seed.
pub struct SimRng {
    inner: Pcg64Mcg,
}

impl SimRng {
    /// A generator whose whole sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Self {
        Self { inner: Pcg64Mcg::seed_from_u64(seed) }
    }

    /// An independent stream for a named component, so that adding draws in one
    /// component does not shift the numbers another one sees.
    pub fn fork(seed: u64, stream: u64) -> Self {
        // SplitMix64 finaliser: decorrelates nearby (seed, stream) pairs.
        let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Self::new(z ^ (z >> 31))
    }

    /// Next 64 uniformly random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform in `[0, bound)`.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0);
        self.inner.random_range(0..bound)
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        self.inner.random::<f64>()
    }

    /// True with probability `p` (clamped by the comparison: `p <= 0` never, `p >= 1` always).
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let a: Vec<u64> = (0..8).scan(SimRng::new(42), |r, _| Some(r.next_u64())).collect();
        let b: Vec<u64> = (0..8).scan(SimRng::new(42), |r, _| Some(r.next_u64())).collect();
        assert_eq!(a, b);
        let c: Vec<u64> = (0..8).scan(SimRng::fork(42, 1), |r, _| Some(r.next_u64())).collect();
        assert_ne!(a, c);
    }

    #[test]
    fn below_in_range() {
        let mut r = SimRng::new(7);
        for _ in 0..1000 {
            assert!(r.below(10) < 10);
        }
    }
}
