//! fio's statistics: latency with fio's own log-linear histogram (so that
//! percentiles and json+ bins are the values fio would print), bandwidth and
//! IOPS samples per averaging window, and their sums for group reporting.

use zonelab_sim::Nanos;

/// fio's `FIO_IO_U_PLAT_BITS`: 2^6 buckets per power of two.
const PLAT_BITS: u32 = 6;
const PLAT_VAL: u64 = 1 << PLAT_BITS;
const PLAT_GROUP_NR: usize = 29;
/// Buckets of fio's latency histogram (`FIO_IO_U_PLAT_NR`).
pub const PLAT_NR: usize = PLAT_GROUP_NR * PLAT_VAL as usize;

/// The bucket fio puts a latency in (`plat_val_to_idx`).
#[inline]
pub fn plat_index(value_ns: u64) -> usize {
    let msb = if value_ns == 0 { 0 } else { 63 - value_ns.leading_zeros() };
    if msb <= PLAT_BITS {
        return value_ns as usize;
    }
    let error_bits = msb - PLAT_BITS;
    let base = ((error_bits + 1) as u64) << PLAT_BITS;
    let offset = (PLAT_VAL - 1) & (value_ns >> error_bits);
    ((base + offset) as usize).min(PLAT_NR - 1)
}

/// The value fio reports for a bucket (`plat_idx_to_val`): its midpoint.
pub fn plat_value(index: usize) -> u64 {
    assert!(index < PLAT_NR);
    let index = index as u64;
    if index < (PLAT_VAL << 1) {
        return index;
    }
    let error_bits = (index >> PLAT_BITS) - 1;
    let base = 1u64 << (error_bits + PLAT_BITS as u64);
    let k = index % PLAT_VAL;
    base + ((k as f64 + 0.5) * (1u64 << error_bits) as f64) as u64
}

/// min/max/mean/stddev the way fio keeps them (Welford), plus the histogram.
#[derive(Debug, Clone)]
pub struct LatStat {
    /// Latencies recorded.
    pub samples: u64,
    /// Smallest latency (`u64::MAX` while empty; [`LatStat::min`] reads 0 then).
    pub min_ns: u64,
    /// Largest latency.
    pub max_ns: u64,
    mean_ns: f64,
    m2: f64,
    /// Allocated on first use: most jobs leave most directions empty.
    plat: Vec<u64>,
}

impl Default for LatStat {
    fn default() -> Self {
        LatStat { samples: 0, min_ns: u64::MAX, max_ns: 0, mean_ns: 0.0, m2: 0.0, plat: Vec::new() }
    }
}

/// `value as f64` for a count or a latency, both below 2^63 (simulated time
/// stays below `TIME_NS_MAX`, 2^62 ns): x86-64 converts a signed integer in
/// one instruction and an unsigned one in several. Same number either way.
/// Checked in debug builds only: [`LatStat::add`] runs on every I/O.
#[inline(always)]
fn to_f64(value: u64) -> f64 {
    debug_assert!(value < 1 << 63, "a count or latency below 2^63");
    value as i64 as f64
}

impl LatStat {
    /// Records one latency (below 2^63 ns).
    #[inline(always)]
    pub fn add(&mut self, value_ns: Nanos) {
        self.samples += 1;
        self.min_ns = self.min_ns.min(value_ns);
        self.max_ns = self.max_ns.max(value_ns);
        let value = to_f64(value_ns);
        let delta = value - self.mean_ns;
        self.mean_ns += delta / to_f64(self.samples);
        self.m2 += delta * (value - self.mean_ns);
        // Every bucket index is below PLAT_NR: the histogram misses it only
        // while it is not allocated, so one test does for both.
        match self.plat.get_mut(plat_index(value_ns)) {
            Some(count) => *count += 1,
            None => self.allocate_histogram_with(value_ns),
        }
    }

    #[cold]
    fn allocate_histogram_with(&mut self, value_ns: Nanos) {
        debug_assert!(self.plat.is_empty());
        self.plat = vec![0; PLAT_NR];
        self.plat[plat_index(value_ns)] += 1;
    }

    /// Smallest latency, 0 when none was recorded.
    pub fn min(&self) -> u64 {
        if self.samples == 0 {
            0
        } else {
            self.min_ns
        }
    }

    /// Mean latency in nanoseconds.
    pub fn mean(&self) -> f64 {
        self.mean_ns
    }

    /// Sample standard deviation in nanoseconds (0 below two samples).
    pub fn stddev(&self) -> f64 {
        if self.samples < 2 {
            0.0
        } else {
            (self.m2 / (self.samples - 1) as f64).sqrt()
        }
    }

    /// Chan et al.'s parallel combination, as fio's `sum_stat` does.
    pub fn merge(&mut self, other: &LatStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = other.clone();
            return;
        }
        let n = (self.samples + other.samples) as f64;
        let delta = other.mean_ns - self.mean_ns;
        self.m2 += other.m2 + delta * delta * self.samples as f64 * other.samples as f64 / n;
        self.mean_ns += delta * other.samples as f64 / n;
        self.samples += other.samples;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (mine, theirs) in self.plat.iter_mut().zip(&other.plat) {
            *mine += theirs;
        }
    }

    /// fio's `calc_clat_percentiles`: the first bucket at which the running
    /// count reaches each percentile.
    pub fn percentiles(&self, list: &[f64]) -> Vec<(f64, u64)> {
        let mut sorted: Vec<f64> = list.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mut out = Vec::with_capacity(sorted.len());
        let mut sum = 0u64;
        let mut j = 0;
        for (index, &count) in self.plat.iter().enumerate() {
            sum += count;
            while j < sorted.len() && sum as f64 >= sorted[j] / 100.0 * self.samples as f64 && count > 0 {
                out.push((sorted[j], plat_value(index)));
                j += 1;
            }
            if j == sorted.len() {
                break;
            }
        }
        out
    }

    /// Non-empty buckets as (value, count), for json+.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.plat.iter().enumerate().filter(|(_, c)| **c > 0).map(|(i, c)| (plat_value(i), *c))
    }
}

/// Repeated samples added one by one up to this many (see `add_repeated`).
const REPEAT_LOOP_MAX: u64 = 1024;

/// Samples of a rate (KiB/s or IOPS) over fio's averaging windows, kept as
/// fio's `io_stat` is (`add_stat`: Welford's running mean and S).
#[derive(Debug, Clone, Default)]
pub struct RateSamples {
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Samples taken (averaging windows).
    pub count: u64,
    mean: f64,
    s: f64,
}

impl RateSamples {
    /// Records one window's rate.
    pub fn add(&mut self, value: u64) {
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        let delta = value as f64 - self.mean;
        self.mean += delta / (self.count + 1) as f64;
        self.s += delta * (value as f64 - self.mean);
        self.count += 1;
    }
    /// Adds `value` `times` times: one by one while few (so results match
    /// fio's sample by sample), else at once by Chan et al.'s merge of a
    /// group of equal samples (mean `value`, S 0), which is what the loop
    /// computes up to rounding, in O(1) however many idle windows there are.
    pub fn add_repeated(&mut self, value: u64, times: u64) {
        if times <= REPEAT_LOOP_MAX {
            (0..times).for_each(|_| self.add(value));
            return;
        }
        if self.count == 0 || value < self.min {
            self.min = value;
        }
        self.max = self.max.max(value);
        let (n, k) = (self.count as f64, times as f64);
        let delta = value as f64 - self.mean;
        self.mean += delta * k / (n + k);
        self.s += delta * delta * n * k / (n + k);
        self.count += times;
    }
    /// Mean rate over the windows.
    pub fn mean(&self) -> f64 {
        self.mean
    }
    /// Sample standard deviation of the rate (0 below two samples).
    pub fn stddev(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        (self.s / (self.count - 1) as f64).max(0.0).sqrt()
    }
    /// Group reporting: fio's `sum_stat(.., pure_sum = true)` for bw and iops
    /// ("for group_reporting, we should just add those up, not make them the
    /// mean of everything"): min, max, mean, S and the sample count are each
    /// added, so a group's iops_mean is the sum of its jobs' means.
    pub fn merge(&mut self, other: &RateSamples) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other.clone();
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.count += other.count;
        self.mean += other.mean;
        self.s += other.s;
    }
}

/// What a sampling window measures (fio's `bwavgtime` and `iopsavgtime`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampled {
    /// KiB per second.
    Bandwidth,
    /// I/Os per second.
    Iops,
}

impl Sampled {
    /// Both, in the order fio samples them.
    pub const BOTH: [Sampled; 2] = [Sampled::Bandwidth, Sampled::Iops];
}

/// One data direction of one job (or of a reporting group).
#[derive(Debug, Clone, Default)]
pub struct DirStats {
    /// Bytes transferred in this direction.
    pub io_bytes: u64,
    /// I/Os completed in this direction.
    pub total_ios: u64,
    /// Statistics window of the direction (after ramp_time), summed over
    /// jobs for a group, as fio does.
    pub runtime_ns: Nanos,
    /// Submission latency: from the thread issuing the I/O to its submission to the device.
    pub slat: LatStat,
    /// Completion latency: from submission to completion (from issue for sync engines, as fio).
    pub clat: LatStat,
    /// Total latency: from issue to completion.
    pub lat: LatStat,
    /// Bandwidth per averaging window, in KiB/s.
    pub bw_kib: RateSamples,
    /// I/Os per second per averaging window.
    pub iops: RateSamples,
    /// Bytes and I/Os at the last window boundary.
    window_bytes: u64,
    window_ios: u64,
}

impl DirStats {
    /// Counts one completed I/O of `bytes` with its latencies; `slat_ns` is
    /// `None` for synchronous engines, which fio gives no submission latency.
    /// Inlined into the engine's accounting, which runs on every I/O.
    #[inline(always)]
    pub fn add_io(&mut self, bytes: u64, slat_ns: Option<Nanos>, clat_ns: Nanos, lat_ns: Nanos) {
        self.io_bytes += bytes;
        self.total_ios += 1;
        if let Some(slat_ns) = slat_ns {
            self.slat.add(slat_ns);
        }
        self.clat.add(clat_ns);
        self.lat.add(lat_ns);
    }

    /// Closes a window of `window_ns` of `what`: a sample of the KiB/s or
    /// the IOPS over it. Returns the window's bytes or I/Os and that sample.
    pub fn sample_window(&mut self, what: Sampled, window_ns: Nanos) -> (u64, u64) {
        assert!(window_ns > 0);
        match what {
            Sampled::Bandwidth => {
                let bytes = self.io_bytes - self.window_bytes;
                self.window_bytes = self.io_bytes;
                let kib_per_s = per_second(bytes, window_ns) / 1024;
                self.bw_kib.add(kib_per_s);
                (bytes, kib_per_s)
            }
            Sampled::Iops => {
                let ios = self.total_ios - self.window_ios;
                self.window_ios = self.total_ios;
                let iops = per_second(ios, window_ns);
                self.iops.add(iops);
                (ios, iops)
            }
        }
    }

    /// Closes `windows` more windows of `what` in which nothing completed
    /// (after [`Self::sample_window`] took what had): zero samples.
    pub fn sample_idle_windows(&mut self, what: Sampled, windows: u64) {
        match what {
            Sampled::Bandwidth => {
                debug_assert_eq!(self.window_bytes, self.io_bytes);
                self.bw_kib.add_repeated(0, windows);
            }
            Sampled::Iops => {
                debug_assert_eq!(self.window_ios, self.total_ios);
                self.iops.add_repeated(0, windows);
            }
        }
    }

    /// Adds another job's direction into this one (group reporting).
    pub fn merge(&mut self, other: &DirStats) {
        self.io_bytes += other.io_bytes;
        self.total_ios += other.total_ios;
        self.runtime_ns = self.runtime_ns.max(other.runtime_ns);
        self.slat.merge(&other.slat);
        self.clat.merge(&other.clat);
        self.lat.merge(&other.lat);
        self.bw_kib.merge(&other.bw_kib);
        self.iops.merge(&other.iops);
    }

    /// Mean bandwidth over the statistics window, in bytes per second.
    pub fn bw_bytes_per_s(&self) -> u64 {
        if self.runtime_ns == 0 {
            return 0;
        }
        (self.io_bytes as u128 * 1_000_000_000 / self.runtime_ns as u128) as u64
    }

    /// Mean I/Os per second over the statistics window.
    pub fn iops_value(&self) -> f64 {
        if self.runtime_ns == 0 {
            return 0.0;
        }
        self.total_ios as f64 * 1e9 / self.runtime_ns as f64
    }
}

/// `n` per `window_ns`, per second.
fn per_second(n: u64, window_ns: Nanos) -> u64 {
    (n as u128 * 1_000_000_000 / window_ns as u128) as u64
}

/// Distribution of the number of I/Os in flight when one was submitted,
/// in fio's buckets 1, 2, 4, 8, 16, 32, >=64.
#[derive(Debug, Clone, Default)]
pub struct DepthStats {
    /// Submissions per bucket: depths 1, 2-3, 4-7, 8-15, 16-31, 32-63, 64 and more.
    pub counts: [u64; 7],
}

impl DepthStats {
    /// Counts one submission made with `depth` I/Os in flight.
    pub fn add(&mut self, depth: u32) {
        let bucket = match depth {
            0..=1 => 0,
            2..=3 => 1,
            4..=7 => 2,
            8..=15 => 3,
            16..=31 => 4,
            32..=63 => 5,
            _ => 6,
        };
        self.counts[bucket] += 1;
    }
    /// Adds another job's counts.
    pub fn merge(&mut self, other: &DepthStats) {
        for (a, b) in self.counts.iter_mut().zip(other.counts) {
            *a += b;
        }
    }
}

/// Upper edges of fio's latency distribution buckets within one unit
/// (`io_u_mark_lat_nsec`/`_usec`/`_msec`): a value below 2 is in the first
/// bucket, one of 2 or 3 in the second, ..., and the millisecond scale
/// adds 1000-1999 and >= 2000.
const LAT_EDGES: [u64; 11] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000];
/// Buckets per scale: nanoseconds and microseconds end at 1000, milliseconds go on.
pub const LAT_NS_BUCKETS: usize = 10;
/// See [`LAT_NS_BUCKETS`].
pub const LAT_US_BUCKETS: usize = 10;
/// See [`LAT_NS_BUCKETS`].
pub const LAT_MS_BUCKETS: usize = 12;

/// fio's `io_u_lat_n`, `io_u_lat_u` and `io_u_lat_m`: completion latencies
/// counted in the scale they fall in, so that each scale covers only its own
/// range (below 1 µs, 1 µs to 1 ms, 1 ms and more) and the three add up to
/// every I/O.
#[derive(Debug, Clone, Default)]
pub struct LatencyBuckets {
    /// Counts per bucket: nanosecond buckets, then microsecond, then millisecond.
    counts: [u64; LAT_NS_BUCKETS + LAT_US_BUCKETS + LAT_MS_BUCKETS],
}

/// Shares of I/Os per bucket in percent, per scale, as fio's `stat_calc_lat_*` give them.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyShares {
    /// Below 1 µs, by nanoseconds.
    pub ns: [f64; LAT_NS_BUCKETS],
    /// 1 µs to 1 ms, by microseconds.
    pub us: [f64; LAT_US_BUCKETS],
    /// 1 ms and more, by milliseconds.
    pub ms: [f64; LAT_MS_BUCKETS],
}

impl LatencyBuckets {
    /// Counts one completion latency (fio's `io_u_mark_latency`).
    #[inline]
    pub fn add(&mut self, clat_ns: Nanos) {
        let (offset, value) = if clat_ns < 1_000 {
            (0, clat_ns)
        } else if clat_ns < 1_000_000 {
            (LAT_NS_BUCKETS, clat_ns / 1_000)
        } else {
            (LAT_NS_BUCKETS + LAT_US_BUCKETS, clat_ns / 1_000_000)
        };
        let bucket = LAT_EDGES.iter().take_while(|&&edge| value >= edge).count();
        self.counts[offset + bucket] += 1;
    }

    /// Adds another job's counts (group reporting).
    pub fn merge(&mut self, other: &LatencyBuckets) {
        for (mine, theirs) in self.counts.iter_mut().zip(other.counts) {
            *mine += theirs;
        }
    }

    /// Completions below 1 µs: the terse report (version 3) counts them in its first microsecond bucket.
    pub fn below_1us(&self) -> u64 {
        self.counts[..LAT_NS_BUCKETS].iter().sum()
    }

    /// Shares of `total_ios` per bucket; fio shows a non-empty bucket below
    /// 0.01% as 0.01% (`stat_calc_lat`).
    pub fn shares(&self, total_ios: u64) -> LatencyShares {
        let share = |count: u64| match total_ios {
            0 => 0.0,
            total => {
                let percent = 100.0 * count as f64 / total as f64;
                if count > 0 && percent < 0.01 {
                    0.01
                } else {
                    percent
                }
            }
        };
        let (ns, rest) = self.counts.split_at(LAT_NS_BUCKETS);
        let (us, ms) = rest.split_at(LAT_US_BUCKETS);
        LatencyShares {
            ns: std::array::from_fn(|i| share(ns[i])),
            us: std::array::from_fn(|i| share(us[i])),
            ms: std::array::from_fn(|i| share(ms[i])),
        }
    }
}

/// Everything reported of one job.
#[derive(Debug, Clone, Default)]
pub struct JobStats {
    /// Per direction: read, write, trim.
    pub dirs: [DirStats; 3],
    /// I/O depth distribution.
    pub depth: DepthStats,
    /// Completion latencies by fio's distribution buckets, all directions.
    pub lat_buckets: LatencyBuckets,
    /// Zone resets the job issued (fio's "N zone resets").
    pub zone_resets: u64,
    /// First error (errno, as fio reports it) and its message.
    pub error: Option<(i32, String)>,
    /// Wall time of the job in simulated ns, ramp included.
    pub elapsed_ns: Nanos,
    /// Time the job ran with statistics on.
    pub job_runtime_ns: Nanos,
}

impl JobStats {
    /// Adds another job into this one, as group reporting does.
    pub fn merge(&mut self, other: &JobStats) {
        for (mine, theirs) in self.dirs.iter_mut().zip(&other.dirs) {
            mine.merge(theirs);
        }
        self.depth.merge(&other.depth);
        self.lat_buckets.merge(&other.lat_buckets);
        self.zone_resets += other.zone_resets;
        if self.error.is_none() {
            self.error.clone_from(&other.error);
        }
        self.elapsed_ns = self.elapsed_ns.max(other.elapsed_ns);
        // fio adds `total_run_time` over a group's jobs (its "job_runtime").
        self.job_runtime_ns += other.job_runtime_ns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_samples_at_once_match_one_by_one() {
        for times in [0, 3, REPEAT_LOOP_MAX, REPEAT_LOOP_MAX + 1, 50_000] {
            let (mut once, mut looped) = (RateSamples::default(), RateSamples::default());
            for r in [&mut once, &mut looped] {
                [900, 12, 4000].into_iter().for_each(|v| r.add(v));
            }
            once.add_repeated(0, times);
            (0..times).for_each(|_| looped.add(0));
            assert_eq!((once.min, once.max, once.count), (looped.min, looped.max, looped.count), "{times}");
            let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
            assert!(close(once.mean(), looped.mean()), "{times}: {} {}", once.mean(), looped.mean());
            assert!(close(once.stddev(), looped.stddev()), "{times}: {} {}", once.stddev(), looped.stddev());
        }
        let mut empty = RateSamples::default();
        empty.add_repeated(7, 1 << 40);
        assert_eq!((empty.min, empty.max, empty.count, empty.mean(), empty.stddev()), (7, 7, 1 << 40, 7.0, 0.0));
    }

    #[test]
    fn latency_buckets_cover_each_scale_once_and_sum_to_100_percent() {
        let mut buckets = LatencyBuckets::default();
        // (latency, scale, bucket): each value lands in exactly one bucket of one scale.
        let cases = [
            (0, 0, 0),
            (1, 0, 0),
            (2, 0, 1),
            (999, 0, 9),
            (1_000, 1, 0),
            (1_999, 1, 0),
            (2_000, 1, 1),
            (18_000, 1, 3),
            (20_000, 1, 4),
            (999_999, 1, 9),
            (1_000_000, 2, 0),
            (1_999_999_999, 2, 10),
            (2_000_000_000, 2, 11),
        ];
        for (value, scale, bucket) in cases {
            let mut one = LatencyBuckets::default();
            one.add(value);
            let shares = one.shares(1);
            let scales: [&[f64]; 3] = [&shares.ns, &shares.us, &shares.ms];
            for (s, values) in scales.iter().enumerate() {
                for (b, share) in values.iter().enumerate() {
                    let want = if (s, b) == (scale, bucket) { 100.0 } else { 0.0 };
                    assert_eq!(*share, want, "{value} ns: scale {s} bucket {b}");
                }
            }
            buckets.add(value);
        }
        // Many I/Os at ~18 us and one outlier: shares add up to 100% within the 0.01% floor.
        for _ in 0..100_000 {
            buckets.add(18_500);
        }
        let total = 100_000 + cases.len() as u64;
        let shares = buckets.shares(total);
        let sum: f64 = shares.ns.iter().chain(&shares.us).chain(&shares.ms).sum();
        assert!((sum - 100.0).abs() < 0.01 * cases.len() as f64, "{sum}");
        assert_eq!(shares.ms[0], 0.01, "a non-empty bucket shows at least 0.01%, as fio");
        assert!(shares.us[3] > 99.9, "18.5 us is in the \"20\" bucket (10-19 us): {shares:?}");
    }

    #[test]
    fn plat_buckets_match_fio() {
        // Values read off fio 3.33 json+ bins for a psync run.
        for value in [1020u64, 1048, 1496, 2512, 27520, 27776] {
            assert_eq!(plat_value(plat_index(value)), value, "{value} is a bucket midpoint fio printed");
        }
        assert_eq!(plat_index(0), 0);
        assert_eq!(plat_index(127), 127);
        for value in [1u64, 63, 128, 1000, 123_456, 10_000_000_000] {
            let mid = plat_value(plat_index(value));
            let error = mid.abs_diff(value) as f64 / value as f64;
            assert!(error < 0.02, "bucket of {value} reports {mid}");
        }
    }

    #[test]
    fn percentiles_walk_the_histogram_like_fio() {
        let mut stat = LatStat::default();
        for v in 1..=100u64 {
            stat.add(v * 1000);
        }
        let p = stat.percentiles(&[50.0, 99.0, 100.0]);
        assert_eq!(p.len(), 3);
        assert!((49_000..=51_000).contains(&p[0].1), "{p:?}");
        assert!((98_000..=100_500).contains(&p[1].1), "{p:?}");
        assert!(p[2].1 >= p[1].1);
        assert_eq!(stat.min(), 1000);
        assert_eq!(stat.max_ns, 100_000);
        assert!((stat.mean() - 50_500.0).abs() < 1e-6);
    }

    #[test]
    fn merged_moments_equal_those_of_all_samples() {
        let (mut a, mut b, mut all) = (LatStat::default(), LatStat::default(), LatStat::default());
        for v in 0..50u64 {
            a.add(v * 7 + 3);
            all.add(v * 7 + 3);
        }
        for v in 0..30u64 {
            b.add(v * 13 + 1000);
            all.add(v * 13 + 1000);
        }
        a.merge(&b);
        assert_eq!(a.samples, all.samples);
        assert!((a.mean() - all.mean()).abs() < 1e-9);
        assert!((a.stddev() - all.stddev()).abs() < 1e-9);
        assert_eq!(a.bins().collect::<Vec<_>>(), all.bins().collect::<Vec<_>>());
    }

    #[test]
    fn merged_rates_are_summed_as_fio_does_for_group_reporting() {
        let (mut a, mut b) = (RateSamples::default(), RateSamples::default());
        for v in [100, 200, 300] {
            a.add(v);
        }
        for v in [10, 30] {
            b.add(v);
        }
        assert!((a.mean() - 200.0).abs() < 1e-9);
        assert!((a.stddev() - 100.0).abs() < 1e-9);
        a.merge(&b);
        assert!((a.mean() - 220.0).abs() < 1e-9, "sum of the means, not the mean of 5 samples");
        assert_eq!((a.min, a.max, a.count), (110, 330, 5));
        // S = 20000 + 200; stddev = sqrt(S / (5 - 1)).
        assert!((a.stddev() - (20200.0f64 / 4.0).sqrt()).abs() < 1e-9);
    }
}
