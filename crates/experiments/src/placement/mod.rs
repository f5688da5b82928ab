//! The placement study: the same host workloads on one flash (the zn540's
//! geometry and timing, fewer blocks per plane) behind three interfaces —
//! a conventional FTL, Flexible Data Placement with 1, 2, 4 or 8 reclaim
//! unit handles, and ZNS with the host collecting garbage — at a range of
//! utilizations: write amplification, throughput and p99 write latency over
//! time (docs/placement.md). One run is one [`PlacementRun`]; the sweep
//! engine runs a plan of them (`RunSpec::Placement`).

mod driver;
mod host_zns;
pub mod workload;

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
pub use workload::Workload;
use zonelab_device::{preset, Device, DeviceConfig, FdpConfig, HandleType, Tracking, VictimPolicy};

/// The interface the host writes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Interface {
    /// A page-mapped FTL; writes carry no placement (the `sn640`).
    Conventional,
    /// The same FTL with FDP and this many initially isolated handles; the
    /// workload's classes fold onto them in order (`zn540-fdp`).
    Fdp(u16),
    /// Zoned: the host maps and collects (a log-structured layer in the host, `placement/host_zns.rs`; the `zn540`).
    Zns,
}

impl Interface {
    /// Its name in tables and plots: `conventional`, `fdp-4`, `zns`.
    pub fn name(self) -> String {
        match self {
            Interface::Conventional => "conventional".into(),
            Interface::Fdp(h) => format!("fdp-{h}"),
            Interface::Zns => "zns".into(),
        }
    }
}

/// One run of the study.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlacementRun {
    /// What the host writes through.
    pub interface: Interface,
    /// What the host writes.
    pub workload: Workload,
    /// The workload's logical space as a percentage of the conventional
    /// namespace on this flash (50 to 95).
    pub utilization_pct: u32,
    /// Flash blocks per plane (the zn540 has 916); every interface gets this flash.
    pub blocks_per_plane: u32,
    /// Pages per block (the zn540's 1152); smaller only for quick tests.
    pub pages_per_block: u32,
    /// Bytes the application writes after filling its space, as multiples of the space.
    pub overwrites: u32,
    /// Host queue depth.
    pub queue_depth: u32,
    /// Windows the measured part is split into.
    pub windows: u32,
    /// Seed of the workload's random numbers.
    pub seed: u64,
    /// How the device's FTL picks its garbage collection victims (the
    /// conventional and FDP interfaces; with ZNS the host collects).
    #[serde(default)]
    pub gc_victim: VictimPolicy,
}

/// One window of a run's measured part.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Application bytes written since the fill, at the window's end (GiB).
    pub written_gib: f64,
    /// Media bytes programmed over application bytes written in the window.
    pub write_amplification: f64,
    /// Application bytes per second of simulated time in the window.
    pub throughput_mib_s: f64,
    /// 99th percentile of the application's write latencies in the window.
    pub p99_latency_us: f64,
}

/// A run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlacementResult {
    /// The logical space (GiB).
    pub space_gib: f64,
    /// Windows of the measured part, in order.
    pub windows: Vec<Window>,
    /// Over the last half of the windows (steady state): write amplification.
    pub write_amplification: f64,
    /// Over the last half: throughput.
    pub throughput_mib_s: f64,
    /// Over the last half: the highest window p99.
    pub p99_latency_us: f64,
}

impl PlacementRun {
    /// Its label in progress lines.
    pub fn label(&self) -> String {
        let victim = match self.gc_victim {
            VictimPolicy::Greedy => "",
            VictimPolicy::CostBenefit => " cost-benefit",
        };
        format!("placement {} {} {}%{victim}", self.interface.name(), self.workload.name(), self.utilization_pct)
    }

    /// The device this run's interface gets: the zn540's flash with
    /// `blocks_per_plane` and `pages_per_block`, its namespaces shrunk in
    /// proportion (the conventional namespace keeps the sn640's share of
    /// the flash, the zoned one the zn540's share of zones).
    pub fn device(&self) -> Result<DeviceConfig> {
        let name = match self.interface {
            Interface::Conventional => "sn640",
            Interface::Fdp(_) => "zn540-fdp",
            Interface::Zns => "zn540",
        };
        let mut c = preset(name).expect("a preset");
        let full = preset("zn540").expect("zn540").flash;
        let (b, pages) = (self.blocks_per_plane, self.pages_per_block);
        c.flash.blocks_per_plane = b;
        c.flash.pages_per_block = pages;
        let ns = &mut c.namespace;
        match self.interface {
            Interface::Zns => {
                // A zone's capacity keeps the zn540's share of its block group
                // (359 of 384 super word lines of 3 MiB); its size the next power of two.
                let rows = 359 * u64::from(pages) / u64::from(full.pages_per_block);
                ns.zone_capacity_bytes = rows.max(1) * 3 * (1 << 20);
                ns.zone_size_bytes = ns.zone_capacity_bytes.next_power_of_two();
                ns.zones = u32::try_from(u64::from(b) * 904 / u64::from(full.blocks_per_plane)).expect("fits");
            }
            _ => {
                // The sn640's 894 GiB of 1030 (its zones are only a report: a power of two near 2 GiB's share).
                let full_ns_bytes = 447 * (2u64 << 30);
                let bytes = full_ns_bytes / u64::from(full.blocks_per_plane) * u64::from(b)
                    / u64::from(full.pages_per_block)
                    * u64::from(pages);
                ns.zone_size_bytes = (bytes / 64).next_power_of_two().min(2 << 30);
                ns.zone_capacity_bytes = ns.zone_size_bytes;
                ns.zones = u32::try_from(bytes / ns.zone_size_bytes).expect("fits");
                ns.conventional_zones = ns.zones;
            }
        }
        if let Interface::Fdp(handles) = self.interface {
            c.fdp = Some(FdpConfig { reclaim_groups: 1, handles, handle_type: HandleType::InitiallyIsolated });
        }
        if let Some(ftl) = c.conventional.as_mut() {
            ftl.gc_victim = self.gc_victim;
        }
        c.validate().map_err(|e| Error::Invalid(format!("{}: {}", self.label(), e.0)))?;
        Ok(c)
    }

    /// The workload's logical space in 4 KiB blocks: its share of the
    /// conventional namespace on this flash.
    pub fn space_blocks(&self) -> Result<u64> {
        if !(50..=95).contains(&self.utilization_pct) {
            return Err(Error::Invalid(format!("utilization_pct = {}: use 50 to 95", self.utilization_pct)));
        }
        let conventional = PlacementRun { interface: Interface::Conventional, ..self.clone() }.device()?;
        let ns_bytes = u64::from(conventional.namespace.zones) * conventional.namespace.zone_size_bytes;
        Ok(ns_bytes / 4096 * u64::from(self.utilization_pct) / 100)
    }

    /// Runs it.
    pub fn run(&self) -> Result<PlacementResult> {
        if self.overwrites == 0 || self.windows == 0 || self.queue_depth == 0 || self.queue_depth > 1024 {
            return Err(Error::Invalid(format!(
                "{}: overwrites, windows and queue_depth (1 to 1024) must be positive",
                self.label()
            )));
        }
        let space_blocks = self.space_blocks()?;
        let mut dev = Device::with_tracking(self.device()?, Tracking::NONE).map_err(|e| Error::Invalid(e.0))?;
        let classes = self.workload.classes();
        let mut target = driver::Target::new(self.interface, &dev, space_blocks, classes)?;
        let mut gen = workload::Generator::new(self.workload, space_blocks, self.seed);
        let overwrite_bytes = space_blocks * 4096 * u64::from(self.overwrites);
        let windows = driver::run(
            &mut dev,
            &mut target,
            &mut gen,
            space_blocks,
            classes,
            self.queue_depth,
            overwrite_bytes,
            self.windows,
        )?;
        Ok(summarize(space_blocks, windows))
    }
}

fn summarize(space_blocks: u64, windows: Vec<Window>) -> PlacementResult {
    let steady = &windows[windows.len() / 2..];
    let n = steady.len().max(1) as f64;
    let mean = |f: fn(&Window) -> f64| steady.iter().map(f).sum::<f64>() / n;
    PlacementResult {
        space_gib: (space_blocks * 4096) as f64 / (1u64 << 30) as f64,
        write_amplification: mean(|w| w.write_amplification),
        throughput_mib_s: mean(|w| w.throughput_mib_s),
        p99_latency_us: steady.iter().map(|w| w.p99_latency_us).fold(0.0, f64::max),
        windows,
    }
}

/// The study's plan: every interface, workload and utilization.
pub fn plan(quick: bool) -> Vec<PlacementRun> {
    let interfaces = [
        Interface::Conventional,
        Interface::Fdp(1),
        Interface::Fdp(2),
        Interface::Fdp(4),
        Interface::Fdp(8),
        Interface::Zns,
    ];
    let utilizations: &[u32] = if quick { &[60, 90] } else { &[50, 60, 70, 80, 90] };
    let mut out = Vec::new();
    for workload in Workload::ALL {
        for &utilization_pct in utilizations {
            for interface in interfaces {
                out.push(PlacementRun {
                    interface,
                    workload,
                    utilization_pct,
                    blocks_per_plane: if quick { 96 } else { 128 },
                    pages_per_block: if quick { 96 } else { 1152 },
                    overwrites: 4,
                    queue_depth: 8,
                    windows: if quick { 8 } else { 24 },
                    seed: 1,
                    gc_victim: VictimPolicy::Greedy,
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
