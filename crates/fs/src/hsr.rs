//! The cost model of hybrid segment recycling (seed 002 §3.3.2): what
//! threaded logging (plugging the blocks a segment keeps) and compaction
//! (copying the valid blocks, writing their metadata) cost per block, from
//! the device's timing, with the profiled factors α and β.

use crate::config::HostCosts;
use zonelab_device::ZonedDevice;
use zonelab_sim::transfer_ns;

/// Hybrid segment recycling state: the cost model and its profiled factors.
#[derive(Debug, Clone, Default)]
pub struct Hsr {
    /// Node and metadata blocks written per relocated valid block (profiled).
    pub alpha: f64,
    /// Share of cold blocks still valid at the next threaded-logging open (profiled).
    pub beta: f64,
    /// Hybrid recycling chose compaction: the next operation runs it.
    pub sc_requested: bool,
    /// In-storage copy of one block, on-demand.
    copy_block_ns: f64,
    /// Host write of one block.
    write_block_ns: f64,
    /// The compaction path's host work per valid block (the walk).
    walk_block_ns: f64,
}

/// f_plugging(N) over the on-demand copy cost (seed 002 §3.3.2).
const PLUGGING_SHARE: f64 = 0.9;
/// Weight of a new sample in the profiled α and β.
pub(crate) const PROFILE_WEIGHT: f64 = 0.1;

impl Hsr {
    /// Costs per block from the device's flash timing and link.
    pub fn new<D: ZonedDevice>(dev: &D, host: &HostCosts) -> Self {
        let c = dev.config();
        let l = dev.layout();
        let page = u64::from(c.flash.page_bytes);
        let dma = transfer_ns(page, c.flash_timing.channel_bytes_per_s) as f64;
        let parallel = (l.lbas_per_chunk * u64::from(l.d_zone)) as f64;
        let copy = (c.flash_timing.read_ns as f64 + 2.0 * dma + c.flash_timing.program_ns as f64) / parallel;
        let link = transfer_ns(l.lba_bytes, c.link.bytes_per_s()) as f64;
        let write = (c.flash_timing.program_ns as f64 + dma) / parallel + link + host.page_ns as f64;
        let walk = host.gc_block_ns as f64;
        Self {
            alpha: 0.2,
            beta: 0.5,
            sc_requested: false,
            copy_block_ns: copy,
            write_block_ns: write,
            walk_block_ns: walk,
        }
    }
    fn f_copy(&self, n: f64) -> f64 {
        n * self.copy_block_ns
    }
    fn f_plugging(&self, n: f64) -> f64 {
        PLUGGING_SHARE * self.f_copy(n)
    }
    fn f_write(&self, n: f64) -> f64 {
        n * self.write_block_ns
    }
    /// C_TL = f_plugging(N_pre-invalid + N_valid).
    pub fn cost_threaded(&self, kept_blocks: u32) -> f64 {
        self.f_plugging(f64::from(kept_blocks))
    }
    /// C_SC = f_copy(N_valid) + f_write(α·N_valid) − f_plugging(β·N_cold),
    /// where a compaction's copy also costs the host its walk over each
    /// valid block (F2FS's GC path: summary, node lookup, liveness, node
    /// update), which plugging inside the device never pays.
    pub fn cost_compaction(&self, valid_blocks: u32, cold_blocks: u32) -> f64 {
        let v = f64::from(valid_blocks);
        let copy = self.f_copy(v) + v * self.walk_block_ns;
        copy + self.f_write(self.alpha * v) - self.f_plugging(self.beta * f64::from(cold_blocks))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tiny_device;
    use zonelab_device::Device;

    #[test]
    fn hybrid_recycling_prefers_the_cheaper_policy() {
        let h = Hsr::new(&Device::new(tiny_device(16)).unwrap(), &HostCosts::default());
        // Few blocks to plug against a full compaction with metadata writes.
        assert!(h.cost_threaded(100) < h.cost_compaction(1000, 0));
        // Plugging more blocks than compaction would copy costs more.
        assert!(h.cost_threaded(4000) > h.cost_compaction(1000, 0));
        // Cold blocks that compaction moves away lower its cost.
        assert!(h.cost_compaction(1000, 800) < h.cost_compaction(1000, 0));
    }

    /// Compaction's host walk per valid block is part of its cost; plugging
    /// inside the device pays none.
    #[test]
    fn the_compaction_walk_counts_against_compaction_only() {
        let dev = Device::new(tiny_device(16)).unwrap();
        let free = Hsr::new(&dev, &HostCosts { gc_block_ns: 0, ..HostCosts::default() });
        let paid = Hsr::new(&dev, &HostCosts { gc_block_ns: 16_000, ..HostCosts::default() });
        assert_eq!(free.cost_threaded(500), paid.cost_threaded(500));
        let extra = paid.cost_compaction(1000, 0) - free.cost_compaction(1000, 0);
        assert!((extra - 1000.0 * 16_000.0).abs() < 1.0, "{extra}");
    }
}
