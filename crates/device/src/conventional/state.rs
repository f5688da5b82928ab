//! The conventional FTL's state: the page map, the host unit being filled
//! and its write buffer, and the garbage-collection thresholds and the
//! victim each die is collecting.

use super::placement::Placement;
use crate::controller::buffer::ZoneBuffer;
use crate::translation::ftl::Ftl;
use std::collections::HashMap;
use zonelab_sim::Nanos;

/// A victim block garbage collection is moving out of, unit by unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Victim {
    pub(crate) block: u32,
    /// The next offset in the block to look for valid data at.
    pub(crate) offset: u32,
    /// Units to move per host unit so the victim is free before host
    /// writes use a block: ceil(valid / invalid units), capped.
    pub(crate) units_per_host_unit: u32,
    /// LBAs moved out of it so far (FDP's Media Reallocated event).
    pub(crate) lbas_moved: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Conventional {
    pub(crate) ftl: Ftl,
    /// The host streams (one per reclaim unit handle and group under FDP)
    /// and the units they are filling.
    pub(crate) placement: Placement,
    /// Each LBA waiting in the buffer and the stream whose unit holds it.
    pub(crate) pending_pos: HashMap<u64, u32>,
    pub(crate) buffer: ZoneBuffer,
    pub(crate) units_buffered: u64,
    /// When each unit of each die block finishes programming.
    pub(crate) unit_done: Vec<Option<Box<[Nanos]>>>,
    pub(crate) gc_min: usize,
    pub(crate) gc_target: usize,
    /// Background collection below this many free blocks; 0: none.
    pub(crate) gc_start: usize,
    pub(crate) gc_units_max: u32,
    /// Per die: the victim being collected, if any.
    pub(crate) victims: Vec<Option<Victim>>,
    /// GC units moved while a host unit waited for a free block.
    pub(crate) gc_foreground_units: u64,
    /// The most GC units moved before one host unit.
    pub(crate) gc_units_before_host_unit_max: u64,
    /// Writes waiting for the FTL core in an order of its own; `None`:
    /// arrival order (`conventional.write_order_window` 0).
    pub(crate) write_queue: Option<crate::backend::write_queue::WriteQueue>,
}

impl Conventional {
    pub(crate) fn new(device: &crate::config::DeviceConfig, user_lbas: u64) -> Self {
        let g = &device.flash;
        let c = device.conventional.as_ref().expect("a conventional config");
        let lba_bytes = u64::from(device.namespace.lba_bytes);
        let lbas_per_unit = u32::try_from(g.program_unit_bytes() / lba_bytes)
            .expect("validation: the flash holds fewer than 2^32 LBAs");
        let units_per_block = g.pages_per_block / g.oneshot_pages;
        let streams = device.fdp.as_ref().map_or((1, 1), |f| (f.handles, f.gc_streams()));
        let blocks = g.blocks_per_plane;
        let ftl = Ftl::new(g.dies_total(), blocks, lbas_per_unit, units_per_block, user_lbas, streams, c.gc_victim);
        Conventional {
            ftl,
            placement: Placement::new(device),
            pending_pos: HashMap::new(),
            buffer: ZoneBuffer::default(),
            units_buffered: 0,
            unit_done: vec![None; (g.dies_total() * g.blocks_per_plane) as usize],
            gc_min: c.gc_free_blocks_min as usize,
            gc_target: c.gc_free_blocks_target as usize,
            gc_start: c.gc_free_blocks_start as usize,
            gc_units_max: c.gc_units_per_host_unit_max,
            victims: vec![None; g.dies_total() as usize],
            gc_foreground_units: 0,
            gc_units_before_host_unit_max: 0,
            write_queue: (c.write_order_window > 0).then(|| {
                crate::backend::write_queue::WriteQueue::new(c.write_order_window, device.spread.seed, device.spread.on)
            }),
        }
    }
}
