//! `[[namespaces]]`: several namespaces on one device, each with its own
//! zone geometry over a share of every plane's blocks; the model that runs
//! them is [`crate::namespaces`].

use super::{ConfigError, DeviceConfig, Layout, NamespaceConfig};
use serde::{Deserialize, Serialize};

/// Most namespaces of one device (also the NSID range of pending-command tags).
pub const NAMESPACES_MAX: u32 = 16;

/// One `[[namespaces]]` entry: the fields it sets replace `[namespace]`'s.
/// MDTS stays the controller's (`namespace.mdts_bytes`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceEntry {
    /// Logical block size of this namespace in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lba_bytes: Option<u32>,
    /// Zones in this namespace, conventional ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zones: Option<u32>,
    /// Conventional zones at the start; all of them: an NVM namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conventional_zones: Option<u32>,
    /// Zone size in bytes (ZSZE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_size_bytes: Option<u64>,
    /// Zone capacity in bytes (ZCAP), at most the zone size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone_capacity_bytes: Option<u64>,
    /// Open zone limit of this namespace (0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open_zones: Option<u32>,
    /// Active zone limit of this namespace (0: no limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_active_zones: Option<u32>,
    /// Zone Append Size Limit in bytes (0: MDTS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zasl_bytes: Option<u64>,
    /// Whether reads may cross zone boundaries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cross_zone_read: Option<bool>,
    /// The drive's page-mapped FTL for this namespace (an NVM namespace
    /// beside zoned ones, seed 001): its garbage collection, as the
    /// device-wide `[conventional]`. Needs every zone conventional.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conventional: Option<super::ConventionalConfig>,
    /// The command set (CSI) of this namespace: `zoned` (the default) or
    /// `nvm`, a conventional namespace: every zone conventional, and the
    /// FTL its `conventional` gives or else the drive's (`nvm_ftl`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_set: Option<CommandSet>,
    /// Blocks per plane this namespace takes beyond what its zones need: a
    /// page-mapped namespace's over-provisioning (its garbage collection's
    /// room), a zoned one's spare block groups. Unset: an even share of the
    /// blocks the namespaces that set it leave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spare_blocks_per_plane: Option<u32>,
}

/// A namespace's I/O command set (its CSI in Identify and Namespace Management).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandSet {
    /// Zoned Namespace Command Set (CSI 2).
    #[default]
    Zoned,
    /// NVM Command Set (CSI 0): a block namespace the drive's FTL maps.
    Nvm,
}

impl NamespaceEntry {
    /// The namespace this entry describes over `base` (`[namespace]`).
    pub fn resolve(&self, base: &NamespaceConfig) -> NamespaceConfig {
        NamespaceConfig {
            lba_bytes: self.lba_bytes.unwrap_or(base.lba_bytes),
            zones: self.zones.unwrap_or(base.zones),
            conventional_zones: self.conventional_zones.unwrap_or(base.conventional_zones),
            zone_size_bytes: self.zone_size_bytes.unwrap_or(base.zone_size_bytes),
            zone_capacity_bytes: self.zone_capacity_bytes.unwrap_or(base.zone_capacity_bytes),
            max_open_zones: self.max_open_zones.unwrap_or(base.max_open_zones),
            max_active_zones: self.max_active_zones.unwrap_or(base.max_active_zones),
            zasl_bytes: self.zasl_bytes.unwrap_or(base.zasl_bytes),
            mdts_bytes: base.mdts_bytes,
            cross_zone_read: self.cross_zone_read.unwrap_or(base.cross_zone_read),
            // An NVM namespace has no zones to give a ZRWA.
            zrwa: base.zrwa.filter(|_| self.command_set != Some(CommandSet::Nvm)),
        }
    }
}

/// What Namespace Management's create asks for: the fields of the host's
/// data structure zonelab models (NVMe Base 2.0, §5.22: NSZE, NCAP, the
/// LBA format FLBAS picks, and the command set CSI in CDW11).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceRequest {
    /// Namespace size in logical blocks (NSZE).
    pub nsze: u64,
    /// Namespace capacity in logical blocks (NCAP): the size, as the drive
    /// does not thin-provision.
    pub ncap: u64,
    /// Logical block size of the format chosen (512 or 4096).
    pub lba_bytes: u32,
    /// The I/O command set of the namespace.
    pub command_set: CommandSet,
}

impl NamespaceRequest {
    /// The `[[namespaces]]` entry of the namespace this asks for on the
    /// drive `config`. A zoned one takes the drive's zone geometry and
    /// limits, NSZE rounded up to whole zones, no conventional zone; an NVM
    /// one is NSZE logical blocks laid out as at most [`super::ZONES_MAX`]
    /// conventional zones of a power-of-two size each. The error says what
    /// is wrong with NSZE.
    pub fn entry(&self, config: &DeviceConfig) -> Result<NamespaceEntry, String> {
        let lba = u64::from(self.lba_bytes);
        let zones_max = u64::from(super::ZONES_MAX);
        if self.command_set == CommandSet::Zoned {
            let zone_lbas = (config.namespace.zone_size_bytes / lba).max(1);
            let zones = self.nsze.div_ceil(zone_lbas);
            let Some(zones) = u32::try_from(zones).ok().filter(|&z| u64::from(z) <= zones_max) else {
                return Err(format!(
                    "NSZE {} is {zones} zones of {zone_lbas} LBAs; a namespace has at most {zones_max}",
                    self.nsze
                ));
            };
            return Ok(NamespaceEntry {
                lba_bytes: Some(self.lba_bytes),
                zones: Some(zones),
                conventional_zones: Some(0),
                command_set: Some(CommandSet::Zoned),
                ..Default::default()
            });
        }
        // The largest power of two dividing NSZE is the zone size (at most 2^40 LBAs).
        let zone_lbas = 1u64 << self.nsze.trailing_zeros().min(40);
        let zones = self.nsze / zone_lbas;
        let Some(zones) = u32::try_from(zones).ok().filter(|&z| u64::from(z) <= zones_max) else {
            let multiple = (self.nsze.div_ceil(zones_max)).next_power_of_two();
            return Err(format!(
                "NSZE {} would be {zones} ranges of {zone_lbas} LBAs (at most {zones_max}): use a multiple of {multiple}",
                self.nsze
            ));
        };
        let zone_bytes = zone_lbas.checked_mul(lba).ok_or_else(|| format!("NSZE {} is too large", self.nsze))?;
        Ok(NamespaceEntry {
            lba_bytes: Some(self.lba_bytes),
            zones: Some(zones),
            conventional_zones: Some(zones),
            zone_size_bytes: Some(zone_bytes),
            zone_capacity_bytes: Some(zone_bytes),
            max_open_zones: Some(0),
            max_active_zones: Some(0),
            command_set: Some(CommandSet::Nvm),
            ..Default::default()
        })
    }
}

/// The error of [`Device::new`] for a device with `[[namespaces]]`.
pub(crate) fn one_namespace_only(config: &DeviceConfig) -> ConfigError {
    ConfigError(format!(
        "the device has {} namespaces ([[namespaces]]) and this command drives one: serve them with \
         `zonelab serve --nvme-tcp`, run fio jobs on them with `zonelab run` (each job's filename=/dev/nvme0nN), \
         run a trace with `zonelab exec` (field \"nsid\"), or remove [[namespaces]]",
        config.namespaces.len()
    ))
}

/// Checks a device with `[[namespaces]]`: every namespace alone, and that
/// together their zones fit the flash. Returns their layouts in NSID order.
pub(crate) fn validate(config: &DeviceConfig) -> Result<Vec<Layout>, ConfigError> {
    Ok(namespace_configs(config)?.into_iter().map(|(_, layout)| layout).collect())
}

/// The configuration of each namespace of `config`: its geometry, and its
/// share of every plane's blocks as `flash.blocks_per_plane`.
pub fn namespace_configs(config: &DeviceConfig) -> Result<Vec<(DeviceConfig, Layout)>, ConfigError> {
    let count = config.namespaces.len();
    if count == 0 {
        return Ok(vec![(config.clone(), config.validate()?)]);
    }
    if count > NAMESPACES_MAX as usize {
        return Err(ConfigError(format!(
            "[[namespaces]] lists {count} namespaces; a device has at most {NAMESPACES_MAX}"
        )));
    }
    let mut configs = Vec::with_capacity(count);
    let mut needs = Vec::with_capacity(count);
    for (i, entry) in config.namespaces.iter().enumerate() {
        let (ns, need) = namespace_config(config, entry).map_err(|e| in_namespace(i, e))?;
        needs.push(need);
        configs.push(ns);
    }
    let blocks_per_plane = u64::from(config.flash.blocks_per_plane);
    let needed: u64 = needs.iter().sum();
    if needed > blocks_per_plane {
        let each: Vec<String> = needs.iter().enumerate().map(|(i, n)| format!("NSID {}: {n}", i + 1)).collect();
        return Err(ConfigError(format!(
            "the namespaces need {needed} blocks per plane ({}) but flash.blocks_per_plane = {blocks_per_plane}: \
             lower the namespaces' zones or zone capacity, or raise flash.blocks_per_plane",
            each.join(", ")
        )));
    }
    // The spare blocks (LogFBGs, dynamic mapping, GC room): what an entry
    // asks for, the rest split evenly among the others.
    let spares = spare_shares(config, blocks_per_plane - needed)?;
    let mut out = Vec::with_capacity(configs.len());
    for (i, ((mut ns, need), spare)) in configs.into_iter().zip(needs).zip(spares).enumerate() {
        let share = u32::try_from(need + spare).expect("at most flash.blocks_per_plane");
        ns.flash.blocks_per_plane = share;
        let layout = ns.validate_with(true).map_err(|e| in_namespace(i, e))?;
        out.push((ns, layout));
    }
    Ok(out)
}

/// Each namespace's spare blocks per plane out of `spare`, the blocks per
/// plane left once every namespace has what its zones need: an entry's
/// `spare_blocks_per_plane`, or an even share of what those leave.
fn spare_shares(config: &DeviceConfig, spare: u64) -> Result<Vec<u64>, ConfigError> {
    let asked: u64 = config.namespaces.iter().filter_map(|e| e.spare_blocks_per_plane).map(u64::from).sum();
    if asked > spare {
        return Err(ConfigError(format!(
            "the namespaces' spare_blocks_per_plane add up to {asked}, but {spare} blocks per plane are left once \
             their zones have theirs: lower them, or raise flash.blocks_per_plane"
        )));
    }
    let unset = config.namespaces.iter().filter(|e| e.spare_blocks_per_plane.is_none()).count() as u64;
    let each = (spare - asked).checked_div(unset).unwrap_or(0);
    Ok(config.namespaces.iter().map(|e| e.spare_blocks_per_plane.map_or(each, u64::from)).collect())
}

/// The configuration of the namespace `entry` describes on the drive
/// `config` (without its share of the blocks yet) and the blocks per plane
/// it needs: what `[[namespaces]]` and Namespace Management
/// ([`crate::namespaces::Drive::create`]) both build a namespace from.
pub(crate) fn namespace_config(
    config: &DeviceConfig,
    entry: &NamespaceEntry,
) -> Result<(DeviceConfig, u64), ConfigError> {
    let mut ns = config.clone();
    ns.namespaces = Vec::new();
    ns.namespace = entry.resolve(&config.namespace);
    if let Some(ftl) = &entry.conventional {
        ns.conventional = Some(ftl.clone());
    }
    if entry.command_set == Some(CommandSet::Nvm) {
        let ftl = ns.conventional.clone().or_else(|| config.nvm_ftl.clone()).ok_or_else(|| {
            ConfigError(
                "command_set = \"nvm\" needs an FTL: give the entry a `conventional` table or the device an \
                 `nvm_ftl` one"
                    .into(),
            )
        })?;
        ns.conventional = Some(ftl);
        ns.namespace.conventional_zones = ns.namespace.zones;
    }
    if ns.conventional.is_none() {
        // FDP is the page-mapped namespaces' placement; zoned ones place by zone.
        ns.fdp = None;
    }
    let need = blocks_per_plane_needed(&ns)?;
    Ok((ns, need))
}

fn in_namespace(index: usize, e: ConfigError) -> ConfigError {
    ConfigError(format!("namespaces[{index}] (NSID {}): {}", index + 1, e.0))
}

/// Blocks per plane a namespace's zones take: a block group per zone, or
/// for a conventional device its data plus the GC reserve and one block.
pub(crate) fn blocks_per_plane_needed(ns: &DeviceConfig) -> Result<u64, ConfigError> {
    let g = &ns.flash;
    if let Some(c) = &ns.conventional {
        let row_bytes = u64::from(g.dies_total()) * u64::from(g.planes_per_die) * g.block_bytes();
        let user_bytes = u64::from(ns.namespace.zones).saturating_mul(ns.namespace.zone_size_bytes);
        let open_extra = ns.fdp.as_ref().map_or(0, |f| u64::from(f.open_blocks_per_die()) - 2);
        return Ok(user_bytes.div_ceil(row_bytes.max(1)) + u64::from(c.gc_free_blocks_target) + 1 + open_extra);
    }
    match ns.zone_fit() {
        Some(fit) => Ok(fit.blocks_per_plane_needed),
        // The namespace's own validation says what is wrong.
        None => Err(ns.validate_with(true).err().unwrap_or_else(|| ConfigError("no room for a zone".into()))),
    }
}

/// `config` with its namespace split into `count` namespaces of the same
/// zone geometry (`serve --namespaces N`): the zones are divided evenly (the
/// first namespace takes the remainder and the conventional zones).
pub fn split(config: &DeviceConfig, count: u32) -> Result<DeviceConfig, ConfigError> {
    let zones = config.namespace.zones;
    if !config.namespaces.is_empty() {
        return Err(ConfigError("--namespaces splits a device with one namespace; this one has [[namespaces]]".into()));
    }
    if count == 0 || count > NAMESPACES_MAX || count > zones {
        return Err(ConfigError(format!(
            "--namespaces {count}: use 1 to {} (at most {NAMESPACES_MAX}, and a zone per namespace of the {zones})",
            NAMESPACES_MAX.min(zones)
        )));
    }
    let mut out = config.clone();
    if count == 1 {
        return Ok(out);
    }
    let each = zones / count;
    let conventional = config.namespace.conventional_zones;
    let all_conventional = conventional == zones;
    out.namespaces = (0..count)
        .map(|i| {
            let zones_i = if i == 0 { each + zones % count } else { each };
            let conventional_i = match (all_conventional, i) {
                (true, _) => zones_i,
                (false, 0) => conventional,
                (false, _) => 0,
            };
            NamespaceEntry { zones: Some(zones_i), conventional_zones: Some(conventional_i), ..Default::default() }
        })
        .collect();
    out.validate()?;
    Ok(out)
}

#[cfg(test)]
/// A test device: zn540 cut to 8 zones of 64 MiB, then two namespaces: 4 zones of
/// 64 MiB, and 4 of 32 MiB with 512-byte LBAs and 2 open zones.
pub(crate) fn two_namespaces() -> DeviceConfig {
    let opts = crate::DeviceOptions { zones: Some(8), zone_size_bytes: Some(64 << 20), ..Default::default() };
    let mut config = opts.apply(crate::preset("zn540").unwrap()).unwrap();
    config.namespaces = vec![
        NamespaceEntry { zones: Some(4), ..Default::default() },
        NamespaceEntry {
            zones: Some(4),
            lba_bytes: Some(512),
            zone_size_bytes: Some(32 << 20),
            zone_capacity_bytes: Some(32 << 20),
            max_open_zones: Some(2),
            max_active_zones: Some(2),
            ..Default::default()
        },
    ];
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{preset, Device, DeviceOptions};

    #[test]
    fn each_namespace_has_its_own_geometry_and_a_share_of_the_blocks() {
        let config = two_namespaces();
        let layouts = validate(&config).unwrap();
        assert_eq!((layouts[0].lba_bytes, layouts[0].zone_lbas, layouts[0].zones), (4096, 16384, 4));
        assert_eq!((layouts[1].lba_bytes, layouts[1].zone_lbas, layouts[1].zones), (512, 65536, 4));
        assert_eq!(config.validate().unwrap(), layouts[0], "validate answers namespace 1's layout");
        let configs = namespace_configs(&config).unwrap();
        let shares: u32 = configs.iter().map(|(c, _)| c.flash.blocks_per_plane).sum();
        assert!(shares <= config.flash.blocks_per_plane);
        assert_eq!(configs[1].0.namespace.max_open_zones, 2);
        assert_eq!(configs[1].0.namespace.mdts_bytes, config.namespace.mdts_bytes, "MDTS is the controller's");
    }

    #[test]
    fn a_namespace_takes_the_spare_blocks_it_asks_for_and_the_others_share_the_rest() {
        let even = namespace_configs(&two_namespaces()).unwrap();
        let need = |configs: &[(DeviceConfig, Layout)], i: usize| blocks_per_plane_needed(&configs[i].0).unwrap();
        let spare = |configs: &[(DeviceConfig, Layout)], i: usize| {
            u64::from(configs[i].0.flash.blocks_per_plane) - need(configs, i)
        };
        let left = spare(&even, 0) + spare(&even, 1);
        let mut config = two_namespaces();
        config.namespaces[1].spare_blocks_per_plane = Some(3);
        let asked = namespace_configs(&config).unwrap();
        assert_eq!((spare(&asked, 1), spare(&asked, 0)), (3, left - 3), "NSID 1 takes what NSID 2 leaves");
        config.namespaces[0].spare_blocks_per_plane = Some(1);
        let both = namespace_configs(&config).unwrap();
        assert_eq!((spare(&both, 0), spare(&both, 1)), (1, 3), "blocks nobody asked for stay unused");
        let total = u32::try_from(left + need(&even, 0) + need(&even, 1)).unwrap();
        config.namespaces[0].spare_blocks_per_plane = Some(total);
        let e = config.validate().unwrap_err().0;
        assert!(e.contains("spare_blocks_per_plane add up to") && e.contains("left"), "{e}");
    }

    #[test]
    fn namespaces_that_do_not_fit_the_flash_are_refused_with_what_to_change() {
        let mut config = two_namespaces();
        config.namespaces[1].zones = Some(config.flash.blocks_per_plane + 1);
        let e = config.validate().unwrap_err().0;
        assert!(e.contains("blocks per plane") && e.contains("NSID 2"), "{e}");
        let mut config = two_namespaces();
        config.namespaces[1].zone_capacity_bytes = Some(64 << 20);
        let e = config.validate().unwrap_err().0;
        assert!(e.starts_with("namespaces[1] (NSID 2): namespace.zone_capacity_bytes"), "{e}");
        let mut config = two_namespaces();
        config.namespaces = vec![NamespaceEntry::default(); NAMESPACES_MAX as usize + 1];
        assert!(config.validate().unwrap_err().0.contains("at most 16"));
        let e = Device::new(two_namespaces()).err().unwrap().0;
        assert!(e.contains("2 namespaces"), "{e}");
    }

    #[test]
    fn namespaces_load_from_toml_and_round_trip() {
        let config = two_namespaces();
        let text = config.to_toml();
        assert!(text.contains("[[namespaces]]"), "{text}");
        assert_eq!(DeviceConfig::from_toml(&text).unwrap(), config);
        let bad = text.replacen("[[namespaces]]\n", "[[namespaces]]\nzone_sise_bytes = 1\n", 1);
        let e = DeviceConfig::from_toml(&bad).unwrap_err().0;
        assert!(e.contains("zone_sise_bytes"), "{e}");
        // Older files without the list load as one namespace.
        let one = preset("zn540").unwrap();
        assert!(!one.to_toml().contains("namespaces"));
    }

    #[test]
    fn an_nvm_entry_runs_the_drives_ftl_over_conventional_zones() {
        let mut config = two_namespaces();
        config.namespaces[1].command_set = Some(CommandSet::Nvm);
        let configs = namespace_configs(&config).unwrap();
        let nvm = &configs[1].0;
        assert_eq!(nvm.conventional, config.nvm_ftl, "the drive's FTL");
        assert_eq!(nvm.namespace.conventional_zones, nvm.namespace.zones);
        assert_eq!(configs[1].1.conventional_zones, configs[1].1.zones);
        assert!(configs[0].0.conventional.is_none(), "NSID 1 stays zoned");
        config.nvm_ftl = None;
        let e = config.validate().unwrap_err().0;
        assert!(e.contains("NSID 2") && e.contains("nvm_ftl"), "{e}");
        let mut config = two_namespaces();
        config.namespaces[1].command_set = Some(CommandSet::Nvm);
        let text = config.to_toml();
        assert!(text.contains("command_set = \"nvm\""), "{text}");
        assert_eq!(DeviceConfig::from_toml(&text).unwrap(), config);
    }

    #[test]
    fn split_divides_the_zones() {
        let opts = DeviceOptions { zones: Some(9), zone_size_bytes: Some(64 << 20), ..Default::default() };
        let config = opts.apply(preset("zn540").unwrap()).unwrap();
        let split3 = split(&config, 3).unwrap();
        let zones: Vec<u32> = validate(&split3).unwrap().iter().map(|l| l.zones).collect();
        assert_eq!(zones, [3, 3, 3]);
        assert!(split(&config, 0).is_err() && split(&config, 10).is_err());
        assert!(split(&config, 1).unwrap().namespaces.is_empty());
    }
}
