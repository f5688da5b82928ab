//! Small devices for tests and crash runs.

use zonelab_device::{preset, DeviceConfig, Mode};

/// An MLC device of seed 002 shrunk to 4 dies and 4-page blocks: zones of
/// 64 blocks (256 KiB), `zones` of them, data kept.
pub fn tiny_device(zones: u32) -> DeviceConfig {
    let mut c = preset("mlc").expect("the mlc preset");
    c.name = "tiny".into();
    c.mode = Mode::Data;
    c.flash.channels = 2;
    c.flash.chips_per_channel = 2;
    c.flash.pages_per_block = 4;
    c.flash.blocks_per_plane = zones + 16;
    c.mapping.d_zone = 4;
    c.namespace.zones = zones;
    c.namespace.zone_size_bytes = 4 * 4 * u64::from(c.flash.page_bytes);
    c.namespace.zone_capacity_bytes = c.namespace.zone_size_bytes;
    c.validate().expect("the tiny device is valid");
    c
}

/// The MLC device of seed 002 with 4-die zones of 8 MiB, `zones` of them,
/// timing only: big enough for the workloads' data sets, quick to run.
pub fn small_device(zones: u32) -> DeviceConfig {
    let mut c = preset("mlc").expect("the mlc preset");
    c.mapping.d_zone = 4;
    c.namespace.zones = zones;
    c.namespace.zone_size_bytes = 4 * c.flash.block_bytes();
    c.namespace.zone_capacity_bytes = c.namespace.zone_size_bytes;
    c.flash.blocks_per_plane = zones + 16;
    c.validate().expect("the small device is valid");
    c
}
