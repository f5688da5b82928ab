//! Running the runs on all cores, deterministically: every run's result
//! depends on the run alone (its seed is a hash of the run), and results
//! are returned in the order of the runs whatever thread ran them.

use super::background::{IoOp, Mgmt};
use super::fio_job::{job_file, Frame, RANDWRITE_ZONES, ZONES_PER_WRITER};
use super::plan::{FioJob, FioRun, NamespaceKind, Pace, Run, Work};
use super::programs;
use super::rows::Metric;
use crate::characterization::fio_runs::run_with_options;
use crate::error::{json, Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use zonelab_device::config::namespaces::namespace_configs;
use zonelab_device::{DeviceConfig, DeviceOptions};
use zonelab_host::HostConfig;
use zonelab_sim::MS;
use zonelab_workload::fio::job::{Scheduler, DDIR_READ, DDIR_TRIM, DDIR_WRITE};
use zonelab_workload::fio::run::RunOptions;
use zonelab_workload::fio::stats::{DirStats, JobStats, LatStat};

/// How long runs last, and on how many threads they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Measured window of an I/O run, in simulated ms (after a ramp of a fifth of it).
    pub runtime_ms: u64,
    /// Threads the runs share (results do not depend on it).
    pub threads: usize,
    /// Every run's window lasts at least this long (simulated ms): 0 lets a
    /// run with a fast management job stop after a few of its operations;
    /// experiments that compare runs with and without management set it.
    pub window_ms_min: u64,
}

impl Default for Settings {
    fn default() -> Self {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        Settings { runtime_ms: 1000, threads, window_ms_min: 0 }
    }
}

/// Longest window of a run with a slow management job, in simulated ms: a
/// finish takes about a second, and the whole file must run in minutes.
const WINDOW_MS_MAX: u64 = 8_000;
/// A run with a management job lasts long enough for this many of its operations.
const MGMT_OPS_PER_WINDOW: f64 = 3.0;
/// A run of an unthrottled finish or softFinish job, whose own writes (one
/// per operation) ConfZNS++ measured in runs of 60 s (14-65 operations),
/// lasts long enough for this many: a p95 over fewer than 20 is their
/// slowest, and a job's first write is slow for its own reason (the polling
/// thread's first wake-up). Paced ones are measured for their rate, which a
/// few operations give, and cost the I/O beside them over the whole window.
const MGMT_WRITES_PER_WINDOW: f64 = 20.0;
/// ... within this many simulated ms.
const MGMT_WRITES_WINDOW_MS_MAX: u64 = 30_000;
/// ... but at least this share of an I/O run's window (fast resets need no full second).
const MGMT_WINDOW_MIN_DIVISOR: u64 = 4;

/// What a run produced.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The measured fio job's statistics (its clones merged), the job beside
    /// it (if any), and the job file that ran.
    Fio {
        /// The measured job's statistics.
        stats: Box<JobStats>,
        /// The job beside it, if any.
        other: Option<Box<JobStats>>,
        /// The job file that ran.
        job_file: String,
        /// The measured job's throttle, when it is a management job held to a rate.
        throttle: Option<Throttle>,
        /// For an I/O job beside a finish or reset job held to a rate its window
        /// over-represents: how the job runs over a long run ([`LongRun`]).
        long_run: Option<LongRun>,
    },
    /// Latency lists of a command sequence, in µs.
    Lists(Vec<Vec<f64>>),
}

/// An I/O job measured beside a finish or reset job held to a low rate. The
/// drive ran such pairs for minutes, so a finish every 10-100 s was under way
/// for a few percent of the run; a window of at most a few seconds starts
/// with an operation and, if it holds one at all, gives it a far larger share
/// (one finish of 1-4 s in 8 s). Over a long run the I/O job runs beside
/// management for `rate × latency` of the time and alone for the rest, so
/// its numbers are the window's and the job-alone run's, mixed in time:
/// the window stands for `window_share` of the long run.
#[derive(Debug, Clone)]
pub struct LongRun {
    /// The same I/O job with nothing beside it.
    pub alone: Box<JobStats>,
    /// Share of the long run's time the window stands for, in (0, 1).
    pub window_share: f64,
}

/// Below this share the window is mixed with the job alone; above it the
/// window's management share is the long run's, near enough.
const LONG_RUN_SHARE_MAX: f64 = 0.95;

/// A management job held to a rate: `jobs` clones (as the job file's
/// `numjobs`), each with one operation in flight and asked for `rate_per_s`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Throttle {
    /// The asked rate of each clone, operations per second.
    pub rate_per_s: f64,
    /// The job's clones, each with one operation in flight.
    pub jobs: u32,
}

impl Throttle {
    /// The rate a throttled job keeps up over a long run: its asked rate, or
    /// what its operations' latency allows if that is less. A window of a few
    /// seconds holds only a few finishes at 1-25% intensity (0.01-0.3 per
    /// second), so counting them would give the window's quantum
    /// (1 / window) rather than the rate the drive was measured at over minutes.
    pub fn long_run_per_s(self, lat_mean_ns: f64) -> f64 {
        assert!(self.rate_per_s > 0.0 && self.jobs > 0);
        assert!(lat_mean_ns > 0.0);
        f64::from(self.jobs) * self.rate_per_s.min(1e9 / lat_mean_ns)
    }
}

/// FNV-1a of the run's description: its seed, the same on every thread.
pub fn seed_of(run: &Run) -> u64 {
    format!("{run:?}").bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
}

/// Applies `f` to every item on `threads` threads; results in item order.
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    f: &(dyn Fn(&T) -> R + Sync),
    done: &(dyn Fn() + Sync),
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, items.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let r = f(item);
                *slots[i].lock().expect("no thread panics holding a slot") = Some(r);
                done();
            });
        }
    });
    slots.into_iter().map(|m| m.into_inner().expect("slot lock").expect("every item ran")).collect()
}

/// Runs every run on `config`; first the standalone runs that turn
/// intensities into rates, then the runs themselves.
pub fn run_all(
    config: &DeviceConfig,
    runs: &[Run],
    settings: Settings,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Vec<Result<Outcome>> {
    let mut baselines: Vec<FioRun> = Vec::new();
    for run in runs {
        if let Run::Fio(f) = run {
            for job in std::iter::once(f.main).chain(f.other) {
                if let Pace::IntensityCentiPct(_) = job.pace {
                    let alone = standalone(f, job);
                    if !baselines.contains(&alone) {
                        baselines.push(alone);
                    }
                }
            }
        }
    }
    baselines.sort();
    let total = baselines.len() + runs.len();
    let counter = AtomicUsize::new(0);
    let done = || progress(counter.fetch_add(1, Ordering::Relaxed) + 1, total);
    let base_rates = par_map(&baselines, settings.threads, &|b| alone_rate(config, b, settings), &done);
    let rates: BTreeMap<FioRun, Number> = baselines.into_iter().zip(base_rates.into_iter().map(Number::from)).collect();
    par_map(runs, settings.threads, &|run| run_one(config, run, &rates, settings), &done)
}

/// The job alone, unthrottled, on the same stack: its intensity's 100%.
/// ConfZNS++ throttled its softFinish jobs to a share of the finish job's
/// rate ("rate-limited to 50% of the finish baseline"), as the two are
/// compared at the same intensity.
fn standalone(run: &FioRun, job: FioJob) -> FioRun {
    let work = match job.work {
        Work::Mgmt { kind: Mgmt::SoftFinish { .. }, jobs } => Work::Mgmt { kind: Mgmt::Finish, jobs },
        work => work,
    };
    FioRun { zinc: None, main: FioJob { work, pace: Pace::Free }, other: None, ..run.clone() }
}

fn alone_rate(config: &DeviceConfig, run: &FioRun, settings: Settings) -> Result<f64> {
    let Outcome::Fio { stats, .. } = run_fio(config, run, [None, None], settings)? else {
        unreachable!("fio runs give fio statistics")
    };
    let dir = op_dir(&run.main.work);
    Ok(stats.dirs[dir].iops_value())
}

/// The direction that counts a job's operations.
fn op_dir(work: &Work) -> usize {
    match work {
        Work::Io { op: IoOp::Read | IoOp::RandRead, .. } => DDIR_READ,
        Work::Io { .. } => DDIR_WRITE,
        Work::Mgmt { .. } => DDIR_TRIM,
    }
}

fn run_one(
    config: &DeviceConfig,
    run: &Run,
    baselines: &BTreeMap<FioRun, Number>,
    settings: Settings,
) -> Result<Outcome> {
    run_paced(config, run, settings, &mut |alone| baselines[alone].clone().into())
}

/// A run, with `alone_rate` giving the standalone rate of each job throttled to a share of it.
fn run_paced(
    config: &DeviceConfig,
    run: &Run,
    settings: Settings,
    alone_rate: &mut dyn FnMut(&FioRun) -> Result<f64>,
) -> Result<Outcome> {
    let config = with_lba(config, run)?;
    match run {
        Run::Device(d) => programs::run(config, d, seed_of(run)).map(Outcome::Lists),
        Run::Fio(f) => {
            let mut rates = [None, None];
            for (slot, job) in rates.iter_mut().zip(std::iter::once(f.main).chain(f.other)) {
                *slot = match job.pace {
                    Pace::Free => None,
                    Pace::MilliPerS(m) => Some(m as f64 / 1e3),
                    Pace::IntensityCentiPct(c) => {
                        let alone = alone_rate(&standalone(f, job)).map_err(|e| e.within("standalone run"))?;
                        // A stored rate is read back from a file: NaN is no rate either.
                        if !(alone > 0.0 && alone.is_finite()) {
                            return Err(Error::Failed(format!(
                                "{:?} completed no operation alone in its window: a share of its rate is no rate",
                                job.work
                            )));
                        }
                        Some(alone * f64::from(c) / 1e4)
                    }
                };
            }
            run_fio(&config, f, rates, settings)
        }
    }
}

/// The namespace `run` uses, as a device of its own: the zoned namespace
/// in the LBA format of the run, or seed 001's conventional namespace (the
/// zoned one beside it idles, so the namespace alone on the drive runs
/// the same).
fn with_lba(config: &DeviceConfig, run: &Run) -> Result<DeviceConfig> {
    let lba = match run {
        Run::Fio(f) if f.namespace == NamespaceKind::Conventional => {
            return conventional_namespace(config, f.lba_bytes)
        }
        Run::Fio(f) => f.lba_bytes,
        Run::Device(_) => 4096,
    };
    DeviceOptions { lba_bytes: Some(lba), ..Default::default() }.apply(config.clone()).map_err(Error::from)
}

/// NSID 2 of `config` laid out as seed 001 did (`with_seed001_namespaces`), formatted with `lba_bytes`.
fn conventional_namespace(config: &DeviceConfig, lba_bytes: u32) -> Result<DeviceConfig> {
    if config.nvm_namespace_ftl().is_none() {
        return Err(Error::Unmapped(format!(
            "a conventional namespace: device {} has no FTL for one (nvm_ftl)",
            config.name
        )));
    }
    let mut drive = zonelab_device::with_seed001_namespaces(config.clone())?;
    drive.namespaces[1].lba_bytes = Some(lba_bytes);
    let mut namespaces = namespace_configs(&drive)?;
    Ok(namespaces.swap_remove(1).0)
}

fn run_fio(config: &DeviceConfig, run: &FioRun, rates: [Option<f64>; 2], settings: Settings) -> Result<Outcome> {
    let layout = config.validate()?;
    let zone_bytes = [layout.zone_lbas * layout.lba_bytes, layout.zcap_lbas * layout.lba_bytes];
    let frame = frame(zone_bytes, run, rates, settings);
    let text = job_file(run, rates, &frame);
    // The job file names its scheduler, so that it reruns as it ran.
    let mut host = HostConfig::machine(run.host.name()).expect("every Host names a known machine");
    if let Some(zinc) = run.zinc {
        host.zinc.epoch_ns = zinc.epoch_ms.map_or(host.zinc.epoch_ns, |ms| ms * MS);
        host.zinc.write_units_budget = zinc.budget_units.unwrap_or(host.zinc.write_units_budget);
    }
    let options =
        RunOptions { seed: seed_of(&Run::Fio(run.clone())), scheduler: Scheduler::None, host, ..RunOptions::default() };
    let result = run_with_options(config.clone(), "calibrate.fio", &text, &options)?;
    let other = run.other.map(|_| result.entry("other").map(|s| Box::new(s.clone()))).transpose()?;
    let throttle = match (run.main.work, rates[0]) {
        (Work::Mgmt { jobs, .. }, Some(rate_per_s)) => Some(Throttle { rate_per_s, jobs }),
        _ => None,
    };
    let long_run = match window_share(run, rates[1], other.as_deref(), frame.window_ms * MS) {
        Some(window_share) => {
            let alone = FioRun { other: None, ..run.clone() };
            let Outcome::Fio { stats, .. } = run_fio(config, &alone, [rates[0], None], settings)? else {
                unreachable!("fio runs give fio statistics")
            };
            Some(LongRun { alone: stats, window_share })
        }
        None => None,
    };
    Ok(Outcome::Fio { stats: Box::new(result.entry("main")?.clone()), other, job_file: text, throttle, long_run })
}

/// The share of a long run that `run`'s window of `window_ns` stands for,
/// when its I/O job runs beside a finish or reset job held to `rate_per_s`
/// (per clone) whose operations (`other`'s) took more of the window than
/// they take of a long run; `None` when the window's share is the long
/// run's (or the pair is not one of these).
fn window_share(run: &FioRun, rate_per_s: Option<f64>, other: Option<&JobStats>, window_ns: u64) -> Option<f64> {
    let (Work::Io { .. }, Some(FioJob { work: Work::Mgmt { kind: Mgmt::Finish | Mgmt::Reset, jobs }, .. })) =
        (run.main.work, run.other)
    else {
        return None;
    };
    let ops = &other?.dirs[DDIR_TRIM];
    let (rate_per_s, latency_ns) = (rate_per_s?, ops.lat.mean());
    if ops.total_ios == 0 || latency_ns <= 0.0 || window_ns == 0 {
        return None;
    }
    // One operation in flight per clone: busy time is operations × latency.
    let window_busy = (ops.total_ios as f64 * latency_ns / (f64::from(jobs.max(1)) * window_ns as f64)).min(1.0);
    let long_run_busy = (rate_per_s * latency_ns / 1e9).min(1.0);
    let share = long_run_busy / window_busy;
    debug_assert!(share > 0.0);
    (share < LONG_RUN_SHARE_MAX).then_some(share)
}

/// The zones and windows of `run`'s job file: `zone_bytes` are the zone's
/// size and capacity in bytes. `zonelab profile` writes its job files with
/// the same frame, so that the drive runs what calibrate simulates.
pub(super) fn frame(zone_bytes: [u64; 2], run: &FioRun, rates: [Option<f64>; 2], settings: Settings) -> Frame {
    let base = settings.runtime_ms.max(1);
    let io_only = !matches!(run.main.work, Work::Mgmt { .. })
        && !matches!(run.other, Some(FioJob { work: Work::Mgmt { .. }, .. }));
    Frame {
        zone_bytes: zone_bytes[0],
        zcap_bytes: zone_bytes[1],
        window_ms: window_ms(run, rates, base).max(settings.window_ms_min),
        // Steady state for I/O; management runs count from their first operation.
        ramp_ms: if io_only { base / 5 + zone_resets_ms(run) } else { 0 },
        writer_zones: ZONES_PER_WRITER,
    }
}

/// Random writes into full zones: fio resets each zone the first time it
/// picks it, a reset of a full zone taking up to 20 ms (the ZN540's: 16.2 ms,
/// seed 000 Fig 5). ZNS-Study's 10 s ramp covered these resets; the ramp
/// here is made long enough to cover them too.
fn zone_resets_ms(run: &FioRun) -> u64 {
    const FULL_ZONE_RESET_MS_MAX: u64 = 20;
    match run.main.work {
        Work::Io { op: IoOp::RandWrite, overwrite: true, zones, jobs, .. } if run.namespace.is_zoned() => {
            let zones = if zones == 0 { RANDWRITE_ZONES } else { u64::from(zones) };
            zones * u64::from(jobs.max(1)) * FULL_ZONE_RESET_MS_MAX
        }
        _ => 0,
    }
}

/// Long enough for several operations of the slowest management job (for
/// a measured finish or softFinish job, enough of its writes for a p95).
fn window_ms(run: &FioRun, rates: [Option<f64>; 2], base: u64) -> u64 {
    let mut slowest = f64::INFINITY;
    for (job, rate) in std::iter::once(run.main).chain(run.other).zip(rates) {
        if let Work::Mgmt { kind, .. } = job.work {
            // Unthrottled: a typical rate, only to size the window.
            let typical = if kind == Mgmt::Reset { 50.0 } else { 0.5 };
            slowest = slowest.min(rate.unwrap_or(typical));
        }
    }
    if !slowest.is_finite() {
        return base;
    }
    let writes_measured = matches!(
        run.main,
        FioJob { work: Work::Mgmt { kind: Mgmt::Finish | Mgmt::SoftFinish { .. }, .. }, pace: Pace::Free }
    );
    let (ops, max_ms) = if writes_measured {
        (MGMT_WRITES_PER_WINDOW, MGMT_WRITES_WINDOW_MS_MAX)
    } else {
        (MGMT_OPS_PER_WINDOW, WINDOW_MS_MAX)
    };
    let low = (base / MGMT_WINDOW_MIN_DIVISOR).max(1) as f64;
    ((ops / slowest.max(1e-6)) * 1e3).clamp(low, max_ms.max(base) as f64) as u64
}

/// A row's number from its run's outcome.
pub fn value(outcome: &Outcome, source: super::plan::Source, metric: Metric) -> Result<f64> {
    use super::plan::Source;
    match (outcome, source) {
        (Outcome::Fio { stats, long_run: Some(long_run), .. }, Source::FioDir { dir, total }) => {
            let (window, alone) = (&stats.dirs[dir], &long_run.alone.dirs[dir]);
            if window.total_ios == 0 || alone.total_ios == 0 {
                return Err(Error::Failed("the measured job completed no operation in its window".into()));
            }
            Ok(Mix::new(window, alone, long_run.window_share, total).value(metric))
        }
        (Outcome::Fio { stats, throttle, .. }, Source::FioDir { dir, total }) => {
            let d = &stats.dirs[dir];
            if d.total_ios == 0 {
                return Err(Error::Failed("the measured job completed no operation in its window".into()));
            }
            let hist = if total { &d.lat } else { &d.clat };
            let pct_ns = |p: f64| hist.percentiles(&[p]).first().map_or(0.0, |&(_, v)| v as f64);
            Ok(match metric {
                Metric::Kiops => d.iops_value() / 1e3,
                Metric::Mibs => d.bw_bytes_per_s() as f64 / 1048576.0,
                Metric::PerS => throttle.map_or_else(|| d.iops_value(), |t| t.long_run_per_s(d.lat.mean())),
                Metric::LatMeanUs => d.lat.mean() / 1e3,
                Metric::LatP50Us => pct_ns(50.0) / 1e3,
                Metric::LatP95Us => pct_ns(95.0) / 1e3,
                Metric::LatP99Us => pct_ns(99.0) / 1e3,
                Metric::MsMean => d.lat.mean() / 1e6,
                Metric::MsP95 => pct_ns(95.0) / 1e6,
            })
        }
        (Outcome::Lists(lists), Source::List(n)) => {
            let list = lists
                .get(n)
                .filter(|l| !l.is_empty())
                .ok_or_else(|| Error::Failed("the run timed no operation".into()))?;
            let mean = list.iter().sum::<f64>() / list.len() as f64;
            Ok(match metric {
                Metric::LatMeanUs => mean,
                Metric::LatP50Us => nearest_rank(list, 50.0),
                Metric::LatP95Us => nearest_rank(list, 95.0),
                Metric::LatP99Us => nearest_rank(list, 99.0),
                Metric::MsMean => mean / 1e3,
                Metric::MsP95 => nearest_rank(list, 95.0) / 1e3,
                // One operation at a time: throughput is the inverse of latency.
                Metric::Kiops => 1e3 / mean,
                other => return Err(Error::Failed(format!("a command-sequence run does not give {}", other.name()))),
            })
        }
        _ => Err(Error::Failed("the run's result does not hold this row's number".into())),
    }
}

/// A job's numbers over a long run made of its window (a share of the time)
/// and its run alone (the rest): rates mix by time, latencies by the
/// operations each part completes per second.
struct Mix<'a> {
    parts: [(&'a DirStats, f64); 2],
    total: bool,
}

impl<'a> Mix<'a> {
    fn new(window: &'a DirStats, alone: &'a DirStats, window_share: f64, total: bool) -> Self {
        assert!((0.0..=1.0).contains(&window_share));
        Mix { parts: [(window, window_share), (alone, 1.0 - window_share)], total }
    }

    fn hist(&self, d: &'a DirStats) -> &'a LatStat {
        if self.total {
            &d.lat
        } else {
            &d.clat
        }
    }

    /// Each part's weight per recorded latency: its operations per second of the long run.
    fn sample_weights(&self) -> [f64; 2] {
        self.parts.map(|(d, share)| {
            let samples = self.hist(d).samples;
            if samples == 0 {
                0.0
            } else {
                share * d.iops_value() / samples as f64
            }
        })
    }

    fn rate(&self, of: impl Fn(&DirStats) -> f64) -> f64 {
        self.parts.iter().map(|&(d, share)| share * of(d)).sum()
    }

    fn mean_ns(&self) -> f64 {
        let w = self.sample_weights();
        let (mut sum, mut weight) = (0.0, 0.0);
        for (&(d, _), w) in self.parts.iter().zip(w) {
            let h = self.hist(d);
            sum += w * h.samples as f64 * h.mean();
            weight += w * h.samples as f64;
        }
        if weight > 0.0 {
            sum / weight
        } else {
            0.0
        }
    }

    /// fio's rule (the first bucket where the running count reaches p%) on
    /// the weighted buckets of both parts.
    fn percentile_ns(&self, p: f64) -> f64 {
        let w = self.sample_weights();
        let mut bins: Vec<(u64, f64)> = Vec::new();
        for (&(d, _), w) in self.parts.iter().zip(w) {
            bins.extend(self.hist(d).bins().map(|(value, count)| (value, w * count as f64)));
        }
        bins.sort_by_key(|&(value, _)| value);
        let total: f64 = bins.iter().map(|&(_, w)| w).sum();
        let mut sum = 0.0;
        for &(value, weight) in &bins {
            sum += weight;
            if weight > 0.0 && sum >= p / 100.0 * total {
                return value as f64;
            }
        }
        bins.last().map_or(0.0, |&(value, _)| value as f64)
    }

    fn value(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Kiops => self.rate(DirStats::iops_value) / 1e3,
            Metric::Mibs => self.rate(|d| d.bw_bytes_per_s() as f64) / 1048576.0,
            Metric::PerS => self.rate(DirStats::iops_value),
            Metric::LatMeanUs => self.mean_ns() / 1e3,
            Metric::LatP50Us => self.percentile_ns(50.0) / 1e3,
            Metric::LatP95Us => self.percentile_ns(95.0) / 1e3,
            Metric::LatP99Us => self.percentile_ns(99.0) / 1e3,
            Metric::MsMean => self.mean_ns() / 1e6,
            Metric::MsP95 => self.percentile_ns(95.0) / 1e6,
        }
    }
}

fn nearest_rank(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 * p / 100.0).ceil() as usize).clamp(1, v.len()) - 1]
}

/// One run of the plan runner (`RunSpec::Calibrate`): a job on a device
/// configuration, with the settings that shape its window (not the threads:
/// results do not depend on them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CalibrateRun {
    /// What runs: a standalone rate or a run that measured rows.
    pub job: CalibrateJob,
    /// Measured window of an I/O run, simulated ms ([`Settings::runtime_ms`]).
    pub runtime_ms: u64,
    /// Shortest window of any run, simulated ms ([`Settings::window_ms_min`]).
    pub window_ms_min: u64,
    /// The device the run simulates.
    pub device: DeviceConfig,
}

/// The two kinds of calibration run: a rate that throttled jobs need first, or a run proper.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CalibrateJob {
    /// A fio job alone and unthrottled on its stack: the 100% of a job
    /// throttled to an intensity. Result: its rate, operations per second.
    Standalone(FioRun),
    /// A run that measured rows. Result: every number a row can ask of it.
    Run(Run),
}

/// A stored number, or why the run has none (JSON has no NaN: see `serde_float`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Number {
    /// The number.
    Value(#[serde(with = "crate::serde_float::plain")] f64),
    /// Why there is none (the run's error).
    Missing(String),
}

impl From<Result<f64>> for Number {
    fn from(r: Result<f64>) -> Self {
        r.map_or_else(|e| Number::Missing(e.to_string()), Number::Value)
    }
}

impl From<Number> for Result<f64> {
    fn from(n: Number) -> Self {
        match n {
            Number::Value(v) => Ok(v),
            Number::Missing(e) => Err(Error::Failed(e)),
        }
    }
}

/// What a run measured: [`value`] of every source its kind of run has, by metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measured {
    /// The job file of a fio run, for rerunning it with `zonelab run`.
    pub job_file: Option<String>,
    /// Every (source, metric) the run gives, or why it gives none.
    pub values: Vec<(super::plan::Source, Metric, Number)>,
}

/// Latency lists of a command-sequence run stored at least (rows read lists 0 and 1).
const LISTS_MIN: usize = 2;

impl Measured {
    /// Reads every number a row can ask of `outcome`.
    pub fn of(outcome: &Outcome) -> Measured {
        use super::plan::Source;
        let (sources, job_file) = match outcome {
            Outcome::Fio { job_file, .. } => {
                let dirs = [DDIR_READ, DDIR_WRITE, DDIR_TRIM];
                let s = dirs.iter().flat_map(|&dir| [false, true].map(|total| Source::FioDir { dir, total }));
                (s.collect::<Vec<_>>(), Some(job_file.clone()))
            }
            Outcome::Lists(lists) => ((0..lists.len().max(LISTS_MIN)).map(Source::List).collect(), None),
        };
        let values = sources
            .into_iter()
            .flat_map(|source| Metric::ALL.map(|metric| (source, metric, value(outcome, source, metric).into())))
            .collect();
        Measured { job_file, values }
    }

    /// The number a row asks for: as [`value`] gives it from the outcome.
    pub fn value(&self, source: super::plan::Source, metric: Metric) -> Result<f64> {
        let found = self.values.iter().find(|(s, m, _)| *s == source && *m == metric);
        match found {
            Some((_, _, n)) => n.clone().into(),
            None => Err(Error::Failed("the run's result does not hold this row's number".into())),
        }
    }
}

impl CalibrateRun {
    fn settings(&self) -> Settings {
        Settings { runtime_ms: self.runtime_ms, threads: 1, window_ms_min: self.window_ms_min }
    }

    /// A short description for progress lines.
    pub fn label(&self) -> String {
        let what = match &self.job {
            CalibrateJob::Standalone(f) => format!("{:?} alone", f.main.work),
            CalibrateJob::Run(Run::Fio(f)) => format!("{:?}", f.main.work),
            CalibrateJob::Run(Run::Device(d)) => format!("{d:?}"),
        };
        format!("calibrate {what}")
    }

    /// The standalone runs of the jobs throttled to an intensity, main job first.
    pub fn needs(&self) -> Vec<CalibrateRun> {
        let CalibrateJob::Run(Run::Fio(f)) = &self.job else { return Vec::new() };
        std::iter::once(f.main)
            .chain(f.other)
            .filter(|job| matches!(job.pace, Pace::IntensityCentiPct(_)))
            .map(|job| CalibrateRun { job: CalibrateJob::Standalone(standalone(f, job)), ..self.clone() })
            .collect()
    }

    /// Runs it; `needed`: the results of [`Self::needs`]. A failing
    /// simulation is a result too (its rows say why they have no number).
    pub fn run(&self, needed: &[Value]) -> Result<Value> {
        let settings = self.settings();
        let json = match &self.job {
            CalibrateJob::Standalone(f) => serde_json::to_value(Number::from(alone_rate(&self.device, f, settings))),
            CalibrateJob::Run(run) => {
                let mut rates = needed.iter();
                let mut alone = |_: &FioRun| -> Result<f64> {
                    let stored = rates
                        .next()
                        .ok_or_else(|| Error::Failed("a throttled job without its standalone run".into()))?;
                    let rate: Number =
                        serde_json::from_value(stored.clone()).map_err(json("a stored standalone rate"))?;
                    rate.into()
                };
                // Stored as text: a failed run's rows say why they have no number.
                let measured = run_paced(&self.device, run, settings, &mut alone)
                    .map(|o| Measured::of(&o))
                    .map_err(|e| e.to_string());
                serde_json::to_value(measured)
            }
        };
        Ok(json.expect("run results serialize"))
    }
}
