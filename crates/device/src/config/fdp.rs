//! `[fdp]`: Flexible Data Placement (NVMe TP4146) on a page-mapped
//! namespace. The host tags each write with a placement identifier; the
//! drive keeps each reclaim unit handle's data in reclaim units of its own
//! and still collects garbage itself (docs/device-model.md, "Flexible Data
//! Placement").

use super::ConfigError;
use serde::{Deserialize, Serialize};
use zonelab_flash::Geometry;

/// Most reclaim unit handles a namespace may have: each holds an open block
/// on every die of its reclaim group and a program unit in the write buffer.
pub const HANDLES_MAX: u16 = 128;

/// What a reclaim unit handle promises about garbage collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HandleType {
    /// Initially isolated: data written through different handles starts in
    /// different reclaim units, but garbage collection may move it together.
    InitiallyIsolated,
    /// Persistently isolated: garbage collection keeps each handle's data
    /// apart too (one collection stream per handle).
    PersistentlyIsolated,
}

impl HandleType {
    /// The Reclaim Unit Handle Type code of the FDP configurations log.
    pub fn code(self) -> u8 {
        match self {
            HandleType::InitiallyIsolated => 1,
            HandleType::PersistentlyIsolated => 2,
        }
    }
}

/// The FDP configuration of a page-mapped namespace. A reclaim unit is one
/// block on every die of its reclaim group: a handle's program units go
/// round robin over the group's dies, each into the handle's open block
/// there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FdpConfig {
    /// Reclaim groups (NRG): the dies split into this many equal groups; a
    /// placement identifier names one. 1: every die in one group.
    #[serde(default = "one")]
    pub reclaim_groups: u16,
    /// Reclaim unit handles (NRUH); the namespace's placement handle `i`
    /// is handle `i`.
    pub handles: u16,
    /// Initially or persistently isolated.
    pub handle_type: HandleType,
}

fn one() -> u16 {
    1
}

impl FdpConfig {
    /// Bits of a placement identifier that name the reclaim group (RGIF),
    /// the high bits of the 16.
    pub fn rgif(&self) -> u8 {
        // 1 group: no bits; n groups: enough bits for n - 1.
        let bits = u16::BITS - self.reclaim_groups.saturating_sub(1).leading_zeros();
        u8::try_from(bits).expect("at most 16 bits")
    }

    /// Garbage-collection streams: one per handle when persistently isolated.
    pub fn gc_streams(&self) -> u16 {
        match self.handle_type {
            HandleType::InitiallyIsolated => 1,
            HandleType::PersistentlyIsolated => self.handles,
        }
    }

    /// Dies in each reclaim group.
    pub fn dies_per_group(&self, g: &Geometry) -> u32 {
        g.dies_total() / u32::from(self.reclaim_groups.max(1))
    }

    /// Reclaim unit size in bytes (RUNS): a block of every die of a group.
    pub fn reclaim_unit_bytes(&self, g: &Geometry) -> u64 {
        u64::from(self.dies_per_group(g)) * u64::from(g.planes_per_die) * g.block_bytes()
    }

    /// Open blocks each die holds besides its free ones: one per handle
    /// and one per collection stream.
    pub fn open_blocks_per_die(&self) -> u32 {
        u32::from(self.handles) + u32::from(self.gc_streams())
    }

    /// Checks the configuration against the flash and the write buffer.
    pub fn validate(&self, g: &Geometry, buffer_bytes: u64) -> Result<(), ConfigError> {
        let (groups, handles) = (self.reclaim_groups, self.handles);
        if handles == 0 || handles > HANDLES_MAX {
            return Err(ConfigError(format!("fdp.handles = {handles} must be 1 to {HANDLES_MAX}")));
        }
        let dies = g.dies_total();
        if groups == 0 || !dies.is_multiple_of(u32::from(groups)) {
            return Err(ConfigError(format!(
                "fdp.reclaim_groups = {groups} must divide the {dies} dies into equal groups (1 puts every die in one)"
            )));
        }
        let ph_bits = u16::BITS - (handles - 1).leading_zeros();
        if u32::from(self.rgif()) + ph_bits > 16 {
            return Err(ConfigError(format!(
                "fdp.reclaim_groups = {groups} and fdp.handles = {handles} need more than the 16 bits of a placement identifier"
            )));
        }
        // Every handle of every group may hold a part-filled program unit in
        // the shared buffer; one more unit keeps writes moving.
        let units = u64::from(groups) * u64::from(handles) + 1;
        let need_bytes = units.saturating_mul(g.program_unit_bytes());
        if buffer_bytes < need_bytes {
            return Err(ConfigError(format!(
                "write_buffer.zone_buffer_bytes = {buffer_bytes} cannot hold a program unit for each of the {} handles of the {groups} reclaim group(s) and one more ({need_bytes} bytes): raise it or use fewer handles",
                handles
            )));
        }
        Ok(())
    }
}
