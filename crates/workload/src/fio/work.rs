//! How much simulation a job asks for, known before it runs.
//!
//! fio's size and time options multiply into work: `io_size=1p` at 4 KiB is
//! 2.7e11 I/Os, `ramp_time=86400` a day of simulated I/O. The engine's CPU
//! cost grows with the I/Os it simulates ([`IOS_PER_CPU_SECOND`]), so before
//! a run each job's I/Os are estimated from above: the smaller of what its
//! byte and count limits allow and what its simulated time allows at the
//! fastest rate the host and the device let it issue. A job over a minute
//! of CPU is announced on stderr; one over the run's cap (an hour of CPU
//! by default) is refused before anything runs (docs/fio.md, "How much work
//! a job may ask for").

use super::job::{JobSpec, RwKind, Verify, DDIRS, DDIR_WRITE};
use zonelab_device::{DeviceConfig, Layout};

/// Simulated I/Os per second of CPU of `zonelab run`, release build: 4 KiB
/// writes at QD 1 ran at 4.8 million (2026-11-28, `/usr/bin/time` user time
/// of `zonelab run --name=a --rw=write --zonemode=zbd --direct=1 --bs=4k
/// --size=20z`), 4 KiB random reads at 4.6-5.8 million, 128 KiB writes at
/// 2.1 million; docs/speed.md has 5.5 million on a quiet machine. Small
/// I/Os are the ones that come in such numbers, so their rate is used.
pub const IOS_PER_CPU_SECOND: f64 = 5e6;
/// Jobs estimated above this many I/Os (a minute of CPU) are announced.
pub const IOS_WARN: f64 = 60.0 * IOS_PER_CPU_SECOND;
/// The default cap of one job's I/Os (an hour of CPU): `RunOptions::work_cap_ios`.
pub const IOS_CAP: f64 = 3600.0 * IOS_PER_CPU_SECOND;

/// One thread of a job as the engine built it.
#[derive(Debug, Clone, Copy)]
pub struct ThreadShape {
    /// Bytes it may issue (`io_size`, else its range).
    pub limit_bytes: u64,
    /// I/Os it keeps in flight.
    pub qd: u32,
    /// Host time on its CPU per I/O (submission and reaping).
    pub cpu_ns: u64,
    /// Host time in each I/O's latency (submission, completion, reaping).
    pub host_ns: u64,
}

/// What bounds a job's I/Os.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// Its bytes: `option` is `io_size` or `size` (the range, by default the namespace).
    Bytes {
        /// The option that sets them.
        option: &'static str,
    },
    /// `number_ios`.
    Count,
    /// Its simulated time (`ramp_time` + `runtime`) at up to `per_s` I/Os per second.
    Time {
        /// The longer of `ramp_time` and `runtime`.
        option: &'static str,
        /// The fastest rate the job can issue at.
        per_s: f64,
    },
}

/// A job's estimated work.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobWork {
    /// At most this many requests.
    pub ios: f64,
    /// What bounds them.
    pub limit: Limit,
    /// The job's smallest block size, bytes.
    pub block_bytes: u64,
}

impl JobWork {
    /// The option whose value bounds the work.
    pub fn option(&self) -> &'static str {
        match self.limit {
            Limit::Bytes { option } | Limit::Time { option, .. } => option,
            Limit::Count => "number_ios",
        }
    }

    /// E.g. "io_size=1p: up to 2.75e11 I/Os of 4096 bytes, about 15.3 h of CPU at 5 million I/Os per CPU
    /// second".
    pub fn describe(&self, job: &JobSpec) -> String {
        let option = self.option();
        // Only `size` bounds a job without being set: its range then runs to the namespace's end.
        let written =
            job.source(option).map_or_else(|| " unset (the range to the end)".into(), |s| format!("={}", s.value));
        let basis = match self.limit {
            Limit::Time { per_s, .. } => {
                let seconds = (job.ramp_time_ns + job.runtime_ns.unwrap_or(0)) as f64 / 1e9;
                format!(" ({seconds} s of ramp_time and runtime at up to {per_s:.3e} I/Os per second)")
            }
            _ => String::new(),
        };
        format!(
            "{option}{written}: up to {:.2e} I/Os of {} bytes{basis}, about {} of CPU at {} million I/Os per CPU second",
            self.ios,
            self.block_bytes,
            cpu_time(self.ios / IOS_PER_CPU_SECOND),
            IOS_PER_CPU_SECOND / 1e6
        )
    }
}

/// A CPU time as a person reads it: seconds, minutes, hours or days.
pub fn cpu_time(seconds: f64) -> String {
    match seconds {
        s if s < 120.0 => format!("{s:.0} s"),
        s if s < 2.0 * 3600.0 => format!("{:.0} min", s / 60.0),
        s if s < 2.0 * 86400.0 => format!("{:.1} h", s / 3600.0),
        s => format!("{:.0} days", s / 86400.0),
    }
}

/// The directions a job's `rw` issues.
fn directions(job: &JobSpec) -> [bool; DDIRS] {
    match job.rw {
        RwKind::Read | RwKind::RandRead => [true, false, false],
        RwKind::Write | RwKind::RandWrite => [false, true, false],
        RwKind::Trim => [false, false, true],
        RwKind::ReadWrite | RwKind::RandRw => [job.rwmixread > 0, job.rwmixread < 100, false],
    }
}

/// Estimates the requests of `job`, whose threads the engine built as `threads`, on `device`.
pub fn estimate(job: &JobSpec, threads: &[ThreadShape], device: &DeviceConfig, layout: &Layout) -> JobWork {
    let used = directions(job);
    let block_bytes =
        (0..DDIRS).filter(|&d| used[d]).map(|d| job.bs[d].min_bytes).min().unwrap_or(layout.lba_bytes).max(1);
    let per_op = requests_per_op(job, layout) * if job.verify != Verify::None && used[DDIR_WRITE] { 2.0 } else { 1.0 };
    // The engine stops a thread at its bytes (unless time_based) or at number_ios operations.
    let mut by_size = 0.0;
    let mut counted = true;
    for t in threads {
        let by_bytes = if job.time_based { f64::INFINITY } else { t.limit_bytes.div_ceil(block_bytes) as f64 };
        let by_count = job.number_ios.map_or(f64::INFINITY, |n| n as f64);
        counted &= by_count < by_bytes;
        by_size += by_bytes.min(by_count) * per_op;
    }
    let option = if job.io_size.is_some() { "io_size" } else { "size" };
    let size_limit = if counted && !threads.is_empty() { Limit::Count } else { Limit::Bytes { option } };
    let Some(runtime_ns) = job.runtime_ns else {
        return JobWork { ios: by_size, limit: size_limit, block_bytes };
    };
    let per_s = rate_per_s(job, threads, device, &used, block_bytes);
    let by_time = (job.ramp_time_ns + runtime_ns) as f64 / 1e9 * per_s;
    if by_size <= by_time {
        return JobWork { ios: by_size, limit: size_limit, block_bytes };
    }
    let option = if job.ramp_time_ns > runtime_ns { "ramp_time" } else { "runtime" };
    JobWork { ios: by_time, limit: Limit::Time { option, per_s }, block_bytes }
}

/// Requests of one operation: 1, or the opening write and the finish, or
/// the opening write and the softFinish chunks that fill the zone.
fn requests_per_op(job: &JobSpec, layout: &Layout) -> f64 {
    if job.softfinish {
        let zone_bytes = layout.zone_lbas * layout.lba_bytes;
        let mdts_bytes = layout.mdts_lbas.max(1) * layout.lba_bytes;
        let chunk = job.softfinish_chunk.map_or(mdts_bytes, |c| c.resolve(zone_bytes, zone_bytes)).clamp(1, mdts_bytes);
        1.0 + (layout.zcap_lbas * layout.lba_bytes).div_ceil(chunk) as f64
    } else if job.finish {
        2.0
    } else {
        1.0
    }
}

/// The fastest the job's threads together can issue requests: each thread
/// at most its queue depth per shortest latency (host stack, the
/// controller's submission, firmware and completion; one at a time with a
/// thinktime), its CPU's and its rate limits' pace; all of them at most what
/// the controller's firmware cores complete.
fn rate_per_s(job: &JobSpec, threads: &[ThreadShape], device: &DeviceConfig, used: &[bool; DDIRS], bs: u64) -> f64 {
    let c = &device.controller;
    let firmware_ns = [c.read_ns, if job.zone_append { c.append_ns } else { c.write_ns }, device.management.reset_ns];
    let firmware_ns = (0..DDIRS).filter(|&d| used[d]).map(|d| firmware_ns[d]).min().unwrap_or(0);
    let limited = (0..DDIRS).filter(|&d| used[d]).map(|d| {
        let by_bytes = job.rate_bytes_per_s[d].map(|b| b as f64 / bs as f64);
        let by_iops = job.rate_iops[d].map(|n| n as f64);
        by_bytes.into_iter().chain(by_iops).reduce(f64::min)
    });
    // Rate limits bound a thread only if every direction it issues has one.
    let rate_limit: Option<f64> = limited.sum();
    let threads_per_s: f64 = threads
        .iter()
        .map(|t| {
            let latency_ns = (t.host_ns + c.submit_ns + c.complete_ns + firmware_ns).max(1) as f64;
            let by_depth = match job.thinktime_ns {
                0 => f64::from(t.qd.max(1)) * 1e9 / latency_ns,
                think => 1e9 / (latency_ns + think as f64),
            };
            let by_cpu = if t.cpu_ns > 0 { 1e9 / t.cpu_ns as f64 } else { f64::INFINITY };
            by_depth.min(by_cpu).min(rate_limit.unwrap_or(f64::INFINITY))
        })
        .sum();
    let firmware_per_s = f64::from(c.firmware_cores.max(1)) * 1e9 / firmware_ns.max(1) as f64;
    threads_per_s.min(firmware_per_s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio::job::{Size, DDIR_READ};

    fn zn540() -> (DeviceConfig, Layout) {
        let config = zonelab_device::preset("zn540").expect("zn540");
        let layout = config.validate().expect("valid");
        (config, layout)
    }

    fn shape(limit_bytes: u64, qd: u32) -> ThreadShape {
        ThreadShape { limit_bytes, qd, cpu_ns: 1260, host_ns: 1260 }
    }

    #[test]
    fn a_byte_limit_counts_blocks_and_names_its_option() {
        let (config, layout) = zn540();
        let mut job = JobSpec::new("a", "command line");
        job.io_size = Some(Size::Bytes(1 << 50));
        let work = estimate(&job, &[shape(1 << 50, 1)], &config, &layout);
        assert_eq!(work.ios, (1u64 << 38) as f64);
        assert_eq!(work.limit, Limit::Bytes { option: "io_size" });
        job.number_ios = Some(1000);
        assert_eq!(estimate(&job, &[shape(1 << 50, 1)], &config, &layout).limit, Limit::Count);
    }

    #[test]
    fn time_bounds_by_depth_firmware_and_rate_limits() {
        let (config, layout) = zn540();
        let mut job = JobSpec::new("a", "command line");
        job.rw = RwKind::RandRead;
        job.time_based = true;
        job.runtime_ns = Some(1_000_000_000);
        job.ramp_time_ns = 86_400_000_000_000;
        // QD 1: one read per shortest latency (1,260 ns host + 2,400 + 2,520 + 2,400 firmware).
        let qd1 = estimate(&job, &[shape(0, 1)], &config, &layout);
        assert!(matches!(qd1.limit, Limit::Time { option: "ramp_time", .. }), "{qd1:?}");
        assert!((qd1.ios - 86_401.0 * 1e9 / 8_580.0).abs() < 1.0, "{qd1:?}");
        // QD 32: the firmware core's 2,400 ns per read bounds it.
        let qd32 = estimate(&job, &[shape(0, 32)], &config, &layout);
        assert!((qd32.ios - 86_401.0 * 1e9 / 2_400.0).abs() < 1.0, "{qd32:?}");
        job.rate_iops[DDIR_READ] = Some(100);
        assert!((estimate(&job, &[shape(0, 32)], &config, &layout).ios - 86_401.0 * 100.0).abs() < 1.0);
    }

    #[test]
    fn cpu_times_read_as_a_person_says_them() {
        assert_eq!(cpu_time(59.4), "59 s");
        assert_eq!(cpu_time(600.0), "10 min");
        assert_eq!(cpu_time(15.0 * 3600.0), "15.0 h");
        assert_eq!(cpu_time(10.0 * 86400.0), "10 days");
    }
}
