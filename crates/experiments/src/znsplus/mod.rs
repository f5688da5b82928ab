//! Seed 002 (ZNS+, OSDI'21) §4 on the simulated file system: compaction
//! time by phase (Fig 6), bandwidth by medium (Table 4), ZNS / IZC / ZNS+
//! with and without copyback and their metadata traffic (Fig 7), threaded
//! logging and background plugging ratios (Table 5), utilization sweep with
//! WAF (Fig 8), chip utilization (Fig 9, 10), copyback-aware allocation
//! across chip counts (Fig 11) and PCIe lanes (Fig 12).
//!
//! Every run formats a fresh file system on a device built from a seed-002
//! preset, fills it to the wanted utilization, then measures the workload
//! until it has written a fixed volume. The full run is at the paper's scale
//! (16 GiB, 512 segments of 32 MiB, θ_PI = 128 MiB); `--quick` scales it down
//! (see [`Scale`]); everything else follows Table 2 and 3.

use crate::error::{Error, Result};
use zonelab_device::{preset, Device, DeviceConfig, Plugging, Tracking};
use zonelab_fs::{Fs, FsConfig, Recycling};
use zonelab_workload::fsbench::{self, FsBenchConfig, FsBenchResult, FsWorkload};

/// One run's setup.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// The seed-002 preset of the flash medium: `tlc`, `mlc` or `znand`.
    pub medium: &'static str,
    /// How the file system reclaims segments.
    pub recycling: Recycling,
    /// The device may copy by copyback (on-chip, no transfer to the controller).
    pub copyback: bool,
    /// The file system's copyback-aware block allocation (§3.3.1).
    pub copyback_aware: bool,
    /// The order the device plugs a TL_opened zone's free blocks in.
    pub plugging: Plugging,
    /// The workload, its Table 3 threads unless `threads` is set.
    pub workload: FsWorkload,
    /// The data set over the file system's user blocks.
    pub utilization: f64,
    /// Parallel flash chips (D_zone = chips: the zone spans them all).
    pub chips: u32,
    /// PCIe lanes of the link.
    pub lanes: u32,
    /// File-system size in bytes: its zone count at this chip count.
    pub fs_bytes: u64,
    /// Bytes the measured part writes.
    pub write_bytes: u64,
    /// Threads; the workload's default of Table 3 when absent.
    pub threads: Option<u32>,
    /// Seed of the workload's random draws.
    pub seed: u64,
}

/// How big the simulated runs are.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// File-system size in bytes.
    pub fs_bytes: u64,
    /// Bytes the workload writes in the measured part, per GiB of file system.
    pub write_per_fs: f64,
}

impl Scale {
    /// 2 GiB (64 segments at 16 chips), 1 GiB written per run.
    pub const QUICK: Scale = Scale { fs_bytes: 2 << 30, write_per_fs: 0.5 };
    /// Seed 002 §4: a 16 GiB file system, 512 segments of 32 MiB at 16
    /// chips (θ_PI and the reserve follow from the size in [`fs_config`]),
    /// 8 GiB written per run.
    pub const FULL: Scale = Scale { fs_bytes: 16 << 30, write_per_fs: 0.5 };
}

impl RunSpec {
    /// The paper's default: MLC, 16 chips, PCIe Gen2 × 2, 90% utilization, copyback and CAB on, PPA plugging.
    pub fn new(workload: FsWorkload, recycling: Recycling, scale: Scale) -> Self {
        Self {
            medium: "mlc",
            recycling,
            copyback: true,
            copyback_aware: true,
            plugging: Plugging::Ppa,
            workload,
            utilization: 0.9,
            chips: 16,
            lanes: 2,
            fs_bytes: scale.fs_bytes,
            write_bytes: (scale.fs_bytes as f64 * scale.write_per_fs) as u64,
            threads: None,
            seed: 1,
        }
    }
}

/// The device of a run: the medium's preset with `chips` chips (8 channels at most, then more ways).
pub fn device_config(spec: &RunSpec) -> Result<DeviceConfig> {
    let mut c = preset(spec.medium).ok_or_else(|| Error::Invalid(format!("unknown medium '{}'", spec.medium)))?;
    if !spec.chips.is_power_of_two() || !(2..=64).contains(&spec.chips) {
        return Err(Error::Invalid(format!("chips {} must be a power of two within 2 ..= 64", spec.chips)));
    }
    c.flash.channels = spec.chips.min(8);
    c.flash.chips_per_channel = spec.chips / c.flash.channels;
    c.mapping.d_zone = spec.chips;
    let zone_bytes = u64::from(spec.chips) * c.flash.block_bytes();
    let zones =
        u32::try_from(spec.fs_bytes / zone_bytes).map_err(|_| Error::Invalid("file system too large".to_string()))?;
    if zones < 24 {
        return Err(Error::Invalid(format!(
            "{} bytes hold {zones} zones of {zone_bytes} bytes; at least 24 are needed",
            spec.fs_bytes
        )));
    }
    c.namespace.zones = zones;
    c.namespace.zone_size_bytes = zone_bytes;
    c.namespace.zone_capacity_bytes = zone_bytes;
    c.flash.blocks_per_plane = zones + 32;
    c.link.lanes = spec.lanes;
    c.znsplus.copyback_chain_max = if spec.copyback { c.znsplus.copyback_chain_max.max(1) } else { 0 };
    c.znsplus.plugging = spec.plugging;
    c.write_buffer.zone_buffer_bytes =
        c.write_buffer.zone_buffer_bytes.max(u64::from(spec.chips) * u64::from(c.flash.page_bytes));
    c.validate()?;
    Ok(c)
}

/// The file system of a run: the page cache at 1/8 of the file system
/// (seed 002's guest had 2 GB of DRAM for 16 GB; the OLTP runs' buffer pool
/// takes half of it), θ_PI at 128 MB per 16 GB (§3.3.2), and a reserve of
/// 1/12 of the segments (42 of 512 at paper scale; the paper does not give
/// its F2FS reserve) below which segments are reclaimed, twice that for
/// background compaction.
pub fn fs_config(spec: &RunSpec) -> FsConfig {
    let mut cfg = FsConfig::new(spec.recycling);
    cfg.copyback_aware = spec.copyback_aware;
    let fs_blocks = spec.fs_bytes / 4096;
    // The OLTP servers' buffer pool holds half of the guest's DRAM (1 of 2 GB).
    let cache_share = if spec.workload.is_oltp() { 16 } else { 8 };
    cfg.cache_pages = (fs_blocks / cache_share) as usize;
    cfg.preinvalid_blocks_max = fs_blocks / 128;
    // Reserve: about 8% of the segments, and never fewer than the six logs.
    let segments = (spec.fs_bytes / (u64::from(spec.chips) * 2 * 1024 * 1024)) as u32;
    cfg.fg_free_segments = (segments / 12).max(6);
    cfg.bg_free_segments = cfg.fg_free_segments * 2;
    cfg
}

/// Formats, fills and measures.
pub fn run(spec: &RunSpec) -> Result<FsBenchResult> {
    run_with_progress(spec, &mut |_, _, _| {})
}

/// [`run`], reporting the workload's progress (`fsbench::run_with_progress`).
pub fn run_with_progress(spec: &RunSpec, progress: fsbench::Progress<'_>) -> Result<FsBenchResult> {
    // Fig 9 plots chip utilization; nothing cuts the power.
    let tracking = Tracking { power_cuts: false, chip_utilization: true };
    let dev = Device::with_tracking(device_config(spec)?, tracking)?;
    let mut fs = Fs::mkfs(dev, fs_config(spec))?;
    let mut cfg = FsBenchConfig::new(spec.workload);
    cfg.utilization = spec.utilization;
    cfg.write_bytes = spec.write_bytes;
    cfg.seed = spec.seed;
    if let Some(t) = spec.threads {
        cfg.threads = t;
    }
    Ok(fsbench::run_with_progress(&mut fs, &cfg, progress)?)
}

mod claims;
mod figures;
#[cfg(test)]
mod tests;
pub use figures::{plan, render, reproduce, Output};

/// Runs `specs` on `workers` threads; results in the same order.
pub fn run_all(
    specs: &[RunSpec],
    workers: usize,
    progress: &(dyn Fn(usize, &RunSpec) + Sync),
) -> Result<Vec<FsBenchResult>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let slots: Vec<std::sync::Mutex<Option<Result<FsBenchResult>>>> =
        specs.iter().map(|_| Default::default()).collect();
    std::thread::scope(|scope| {
        for _ in 0..workers.max(1) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(spec) = specs.get(i) else { break };
                progress(i, spec);
                let r = run(spec).map_err(|e| {
                    e.within(format!("{} {} on {}", spec.workload.name(), spec.recycling.name(), spec.medium))
                });
                *slots[i].lock().expect("no worker panics") = Some(r);
            });
        }
    });
    slots.into_iter().map(|s| s.into_inner().expect("no worker panics").expect("every spec ran")).collect()
}
