//! The conventional FTL's state: the page map, the host unit being filled
//! and its write buffer, and the garbage-collection thresholds.

use super::ftl::Ftl;
use crate::controller::buffer::ZoneBuffer;
use std::collections::HashMap;
use zonelab_sim::Nanos;

#[derive(Debug, Clone)]
pub(crate) struct Conventional {
    pub(crate) ftl: Ftl,
    /// LBAs of the host unit being filled, and where each sits in it.
    pub(crate) pending: Vec<u64>,
    pub(crate) pending_pos: HashMap<u64, usize>,
    pub(crate) buffer: ZoneBuffer,
    pub(crate) units_buffered: u64,
    pub(crate) cursor: u32,
    /// When each unit of each die block finishes programming.
    pub(crate) unit_done: Vec<Option<Box<[Nanos]>>>,
    pub(crate) gc_min: usize,
    pub(crate) gc_target: usize,
}

impl Conventional {
    pub(crate) fn new(device: &crate::config::DeviceConfig, user_lbas: u64) -> Self {
        let g = &device.flash;
        let c = device.conventional.as_ref().expect("a conventional config");
        let lba_bytes = u64::from(device.namespace.lba_bytes);
        let lbas_per_unit = (g.program_unit_bytes() / lba_bytes) as u32;
        let units_per_block = g.pages_per_block / g.oneshot_pages;
        let ftl = Ftl::new(g.dies_total(), g.blocks_per_plane, lbas_per_unit, units_per_block, user_lbas);
        Conventional {
            ftl,
            pending: Vec::new(),
            pending_pos: HashMap::new(),
            buffer: ZoneBuffer::default(),
            units_buffered: 0,
            cursor: 0,
            unit_done: vec![None; (g.dies_total() * g.blocks_per_plane) as usize],
            gc_min: c.gc_free_blocks_min as usize,
            gc_target: c.gc_free_blocks_target as usize,
        }
    }
}
