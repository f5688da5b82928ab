//! Random offsets the way fio draws them: uniform, or zipf, pareto and
//! normal over the blocks of the job's range, with fio's hashing so that
//! popular blocks are spread over the range rather than packed at its start.

use super::job::Distribution;
use zonelab_sim::SimRng;

/// fio caps the zipf normalisation sum at this many items (ZIPF_MAX_GEN).
const ZIPF_ITEMS_MAX: u64 = 10_000_000;

pub struct OffsetGenerator {
    kind: Distribution,
    blocks: u64,
    /// zipf: the normalisation constants of Gray et al.'s generator.
    zeta2: f64,
    zetan: f64,
    /// fio's per-job rotation of hashed values.
    rand_off: u64,
}

impl OffsetGenerator {
    pub fn new(kind: Distribution, blocks: u64, rng: &mut SimRng) -> Self {
        assert!(blocks > 0);
        let (mut zeta2, mut zetan) = (0.0, 0.0);
        if let Distribution::Zipf(theta) = kind {
            zeta2 = zeta(2, theta);
            zetan = zeta(blocks.min(ZIPF_ITEMS_MAX), theta);
        }
        let rand_off = rng.below(blocks);
        OffsetGenerator { kind, blocks, zeta2, zetan, rand_off }
    }

    /// A block index in [0, blocks).
    pub fn next(&mut self, rng: &mut SimRng) -> u64 {
        let n = self.blocks;
        match self.kind {
            Distribution::Random => rng.below(n),
            Distribution::Zipf(theta) => {
                let items = n.min(ZIPF_ITEMS_MAX) as f64;
                let alpha = 1.0 / (1.0 - theta);
                let eta = (1.0 - (2.0 / items).powf(1.0 - theta)) / (1.0 - self.zeta2 / self.zetan);
                let u = rng.unit();
                let z = u * self.zetan;
                let rank = if z < 1.0 {
                    1
                } else if z < 1.0 + 0.5f64.powf(theta) {
                    2
                } else {
                    1 + (items * (eta * u - eta + 1.0).powf(alpha)) as u64
                };
                self.spread(rank - 1)
            }
            Distribution::Pareto(h) => {
                let power = h.ln() / (1.0 - h).ln();
                let rank = ((n - 1) as f64 * rng.unit().powf(power)) as u64;
                self.spread(rank)
            }
            Distribution::Normal(dev_percent) => {
                // Box-Muller; values beyond the range are folded back in.
                let (u1, u2) = (rng.unit().max(f64::MIN_POSITIVE), rng.unit());
                let gauss = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                let value = n as f64 / 2.0 + gauss * n as f64 * dev_percent / 100.0;
                self.spread((value.max(0.0) as u64).min(n - 1))
            }
        }
    }

    fn spread(&self, rank: u64) -> u64 {
        (hash_u64(rank).wrapping_add(self.rand_off)) % self.blocks
    }
}

fn zeta(items: u64, theta: f64) -> f64 {
    (1..=items).map(|i| 1.0 / (i as f64).powf(theta)).sum()
}

/// A 64-bit mix (murmur3's finaliser): fio hashes ranks the same way.
fn hash_u64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn top_share(kind: Distribution) -> f64 {
        let mut rng = SimRng::new(1);
        let mut generator = OffsetGenerator::new(kind, 10_000, &mut rng);
        let mut counts = vec![0u32; 10_000];
        for _ in 0..100_000 {
            let block = generator.next(&mut rng);
            assert!(block < 10_000);
            counts[block as usize] += 1;
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        counts[..100].iter().map(|&c| f64::from(c)).sum::<f64>() / 100_000.0
    }

    #[test]
    fn skewed_distributions_concentrate_on_few_blocks() {
        let uniform = top_share(Distribution::Random);
        assert!(uniform < 0.03, "uniform top 1% share {uniform}");
        let zipf = top_share(Distribution::Zipf(1.2));
        assert!(zipf > 0.5, "zipf:1.2 top 1% share {zipf}");
        let pareto = top_share(Distribution::Pareto(0.2));
        assert!(pareto > 0.3, "pareto:0.2 top 1% share {pareto}");
        let normal = top_share(Distribution::Normal(5.0));
        assert!(normal > uniform && normal < zipf, "normal:5 top 1% share {normal}");
    }
}
