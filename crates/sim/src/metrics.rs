//! Metrics: latency histograms with percentiles, counters, and time series
//! sampled at a fixed interval of simulated time.

use crate::time::Nanos;
use hdrhistogram::Histogram;

/// Latency distribution in nanoseconds, 3 significant digits from 1 ns to
/// one hour (HDR histogram: constant memory, mergeable).
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    const LATENCY_NS_MAX: u64 = 3_600_000_000_000;

    /// An empty histogram.
    pub fn new() -> Self {
        let hist = Histogram::new_with_bounds(1, Self::LATENCY_NS_MAX, 3).expect("static histogram bounds are valid");
        Self { hist }
    }

    /// Records one latency; values beyond the range saturate at the top.
    #[inline]
    pub fn record(&mut self, latency_ns: Nanos) {
        self.hist.saturating_record(latency_ns.max(1));
    }

    /// Number of latencies recorded.
    pub fn count(&self) -> u64 {
        self.hist.len()
    }
    /// Smallest latency recorded, or 0 when none was.
    pub fn min_ns(&self) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.hist.min()
        }
    }
    /// Largest latency recorded (0 when none was), to histogram precision.
    pub fn max_ns(&self) -> u64 {
        self.hist.max()
    }
    /// Mean latency, to histogram precision.
    pub fn mean_ns(&self) -> f64 {
        self.hist.mean()
    }
    /// Standard deviation of the latencies (population form), to histogram precision.
    pub fn stddev_ns(&self) -> f64 {
        self.hist.stdev()
    }

    /// Latency at `percentile` (0..=100), as fio reports it.
    pub fn percentile_ns(&self, percentile: f64) -> u64 {
        assert!((0.0..=100.0).contains(&percentile), "percentile {percentile} outside 0..=100");
        self.hist.value_at_percentile(percentile)
    }

    /// Adds every latency `other` recorded to this histogram (e.g. per-thread into per-job).
    pub fn merge(&mut self, other: &LatencyHistogram) {
        self.hist.add(&other.hist).expect("histograms share bounds");
    }

    /// Non-empty buckets as (highest equivalent value, count), for json+ style output.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        self.hist
            .iter_recorded()
            .map(|v| (self.hist.highest_equivalent(v.value_iterated_to()), v.count_at_value()))
            .collect()
    }
}

/// A named monotonic counter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counter(u64);

impl Counter {
    #[inline]
    /// Counts `n` more.
    pub fn add(&mut self, n: u64) {
        self.0 += n;
    }
    #[inline]
    /// The count so far.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Sums of a quantity per fixed interval of simulated time (bytes per 100 ms,
/// busy nanoseconds per second...). Intervals with nothing recorded are zero.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeries {
    interval_ns: Nanos,
    buckets: Vec<f64>,
    bucket_count_max: usize,
}

impl TimeSeries {
    /// An empty series with buckets of `interval_ns`; samples past
    /// `bucket_count_max` intervals are dropped, which bounds its memory.
    pub fn new(interval_ns: Nanos, bucket_count_max: usize) -> Self {
        assert!(interval_ns > 0 && bucket_count_max > 0);
        Self { interval_ns, buckets: Vec::new(), bucket_count_max }
    }

    /// Width of one bucket of simulated time.
    pub fn interval_ns(&self) -> Nanos {
        self.interval_ns
    }

    /// Adds `value` to the interval containing `at_ns`. Returns false (and
    /// drops the sample) past the series' bound.
    pub fn add(&mut self, at_ns: Nanos, value: f64) -> bool {
        let index = usize::try_from(at_ns / self.interval_ns).unwrap_or(usize::MAX);
        if index >= self.bucket_count_max {
            return false;
        }
        if index >= self.buckets.len() {
            self.buckets.resize(index + 1, 0.0);
        }
        self.buckets[index] += value;
        true
    }

    /// Spreads `value` over `[start_ns, end_ns)` in proportion to the overlap
    /// with each interval (busy time of a resource, say).
    pub fn add_span(&mut self, start_ns: Nanos, end_ns: Nanos, value_per_ns: f64) {
        assert!(end_ns >= start_ns);
        let mut t = start_ns;
        while t < end_ns {
            let bucket_end = (t / self.interval_ns + 1) * self.interval_ns;
            let seg_end = bucket_end.min(end_ns);
            if !self.add(t, (seg_end - t) as f64 * value_per_ns) {
                return;
            }
            t = seg_end;
        }
    }

    /// (interval start, value) pairs.
    pub fn samples(&self) -> impl Iterator<Item = (Nanos, f64)> + '_ {
        self.buckets.iter().enumerate().map(|(i, v)| (i as Nanos * self.interval_ns, *v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_of_uniform() {
        let mut h = LatencyHistogram::new();
        for v in 1..=1000u64 {
            h.record(v * 1000);
        }
        assert_eq!(h.count(), 1000);
        let p50 = h.percentile_ns(50.0) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.002, "p50 {p50}");
        let p99 = h.percentile_ns(99.0) as f64;
        assert!((p99 - 990_000.0).abs() / 990_000.0 < 0.002, "p99 {p99}");
        assert_eq!(h.min_ns(), 1000);
        assert!((h.mean_ns() - 500_500.0).abs() < 600.0);
    }

    #[test]
    fn empty_histogram_is_zero() {
        let h = LatencyHistogram::new();
        assert_eq!((h.count(), h.min_ns(), h.max_ns()), (0, 0, 0));
    }

    #[test]
    fn series_spreads_spans() {
        let mut s = TimeSeries::new(100, 10);
        s.add_span(50, 250, 1.0);
        let v: Vec<f64> = s.samples().map(|(_, v)| v).collect();
        assert_eq!(v, vec![50.0, 100.0, 50.0]);
        assert!(!s.add(5000, 1.0), "past the bound is dropped");
    }
}
