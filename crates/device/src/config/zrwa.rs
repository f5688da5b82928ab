//! Zone Random Write Area (NVMe TP 4076) capabilities of a zoned namespace:
//! `[namespace.zrwa]`. Absent (the default of every preset), the namespace
//! has no ZRWA and Open with ZRWA Allocate fails as on a drive without one.

use super::{err, ConfigError, DeviceConfig, Layout};
use serde::{Deserialize, Serialize};
use zonelab_sim::Nanos;

/// ZRWA capabilities Identify Namespace (zoned) reports, and the cost of
/// an explicit commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZrwaConfig {
    /// ZRWA Size (ZRWAS) in bytes: the window above the write pointer a
    /// zone with a ZRWA takes writes in; a multiple of the flush granularity.
    pub size_bytes: u64,
    /// ZRWA Flush Granularity (ZRWAFG) in bytes: the write pointer moves in
    /// multiples of it; divides the zone capacity.
    pub flush_granularity_bytes: u64,
    /// Number of ZRWA Resources (NUMZRWA): zones that may hold a ZRWA at
    /// once; 0 = as many as the zones that may be active.
    #[serde(default)]
    pub resources: u32,
    /// ZRWACAP EXPFLUSHSUP: the host may commit with Zone Management Send
    /// action 0x11 (Flush Explicit ZRWA Range).
    #[serde(default = "default_true")]
    pub explicit_commit: bool,
    /// Firmware time of an explicit commit (uncalibrated: the ZN540 has no ZRWA).
    #[serde(default = "default_commit_ns")]
    pub commit_ns: Nanos,
}

fn default_true() -> bool {
    true
}

fn default_commit_ns() -> Nanos {
    5_000
}

impl Default for ZrwaConfig {
    fn default() -> Self {
        Self {
            size_bytes: 64 << 10,
            flush_granularity_bytes: 16 << 10,
            resources: 0,
            explicit_commit: true,
            commit_ns: default_commit_ns(),
        }
    }
}

/// The ZRWA geometry in LBAs, as the zone layer uses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ZrwaLimits {
    /// ZRWAS in LBAs; 0: the namespace has no ZRWA.
    pub lbas: u64,
    /// ZRWAFG in LBAs.
    pub flush_lbas: u64,
    /// Zones that may hold a ZRWA at once (at least 1).
    pub resources: u32,
    /// Explicit commits allowed.
    pub explicit_commit: bool,
}

/// Largest ZRWAS and ZRWAFG: 16-bit fields of Identify Namespace (zoned).
const FIELD_LBAS_MAX: u64 = u16::MAX as u64;

impl ZrwaConfig {
    /// Checks the ZRWA of `config`'s namespace over `layout`; returns its limits in LBAs.
    pub(crate) fn limits(&self, config: &DeviceConfig, layout: &Layout) -> Result<ZrwaLimits, ConfigError> {
        let lba = layout.lba_bytes;
        let (size, fg) = (self.size_bytes, self.flush_granularity_bytes);
        if fg == 0 || !fg.is_multiple_of(lba) || fg / lba > FIELD_LBAS_MAX {
            return err(format!(
                "namespace.zrwa.flush_granularity_bytes = {fg} must be a positive multiple of the LBA size {lba}, at most {} bytes",
                FIELD_LBAS_MAX * lba
            ));
        }
        if size == 0 || !size.is_multiple_of(fg) || size / lba > FIELD_LBAS_MAX || size / lba > layout.zcap_lbas {
            return err(format!(
                "namespace.zrwa.size_bytes = {size} must be a positive multiple of namespace.zrwa.flush_granularity_bytes = {fg}, at most {} bytes and at most the zone capacity",
                FIELD_LBAS_MAX * lba
            ));
        }
        if !layout.zcap_lbas.is_multiple_of(fg / lba) {
            return err(format!(
                "namespace.zrwa.flush_granularity_bytes = {fg} must divide the zone capacity ({} bytes), so that commits end on it",
                layout.zcap_lbas * lba
            ));
        }
        let ns = &config.namespace;
        let active_max = if ns.max_active_zones == 0 { ns.zones } else { ns.max_active_zones };
        if self.resources > active_max {
            return err(format!(
                "namespace.zrwa.resources = {} must be at most the zones that may be active ({active_max}); 0 means that many",
                self.resources
            ));
        }
        let resources = if self.resources == 0 { active_max } else { self.resources };
        self.check_buffers(config, layout, resources)?;
        Ok(ZrwaLimits { lbas: size / lba, flush_lbas: fg / lba, resources, explicit_commit: self.explicit_commit })
    }

    /// A zone's uncommitted window data (up to ZRWAS, plus one command's
    /// worth before its implicit commit) waits in its write buffer, which
    /// must still have room for a program to start; so must the shared pool
    /// with every ZRWA in use.
    fn check_buffers(&self, config: &DeviceConfig, layout: &Layout, resources: u32) -> Result<(), ConfigError> {
        let window_bytes = self.size_bytes + config.namespace.mdts_bytes;
        let zone_need = window_bytes + layout.super_row_chunks * u64::from(config.flash.page_bytes);
        let zone_bytes = config.write_buffer.zone_buffer_bytes;
        if zone_bytes < zone_need {
            return err(format!(
                "write_buffer.zone_buffer_bytes = {zone_bytes} cannot hold a ZRWA's window (namespace.zrwa.size_bytes + namespace.mdts_bytes = {window_bytes}) beside one super word line: raise it to at least {zone_need} or shrink the ZRWA"
            ));
        }
        let pool_bytes = config.write_buffer.device_buffer_bytes;
        let pool_need = config.device_pool_min_bytes(layout).saturating_add(window_bytes * u64::from(resources));
        if pool_bytes != 0 && pool_bytes < pool_need {
            return err(format!(
                "write_buffer.device_buffer_bytes = {pool_bytes} cannot hold the windows of {resources} ZRWAs ({window_bytes} bytes each) beside the first program unit of every active zone: use 0 (no device-wide limit), at least {pool_need}, or fewer namespace.zrwa.resources"
            ));
        }
        Ok(())
    }
}
