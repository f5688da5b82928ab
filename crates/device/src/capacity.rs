//! `--capacity SIZE`: a device shrunk (or grown) to a user capacity, keeping
//! its geometry and its over-provisioning, so that writing a small drive
//! several times over, and so garbage collection at its steady state, takes
//! seconds of simulation instead of hours.
//!
//! The user capacity is what the host can write: per namespace its
//! conventional zones whole and its sequential zones up to their capacity
//! (ZCAP), summed over the namespaces (`[namespace]`, or each
//! `[[namespaces]]` entry). Scaling to SIZE multiplies it by f = SIZE / that
//! capacity: each namespace keeps floor(zones × f) zones, at least one (an
//! all-conventional namespace stays so; the conventional zones of a zoned one
//! are kept while a sequential zone remains), and `flash.blocks_per_plane`
//! becomes blocks × (new capacity / old capacity), rounded to the nearest
//! block, so flash bytes / user bytes stays within half a block per plane. It
//! is raised to what the namespaces need ([`blocks_needed`]); a SIZE where
//! that need lies more than one block per plane above the scaled flash is
//! refused, since the device would no longer have its over-provisioning. Dies,
//! planes, pages, zone size and capacity and every timing stay, but for a
//! page-mapped device's block size: its FTL keeps a few blocks of every die
//! open or free whatever the drive's size, so a small drive's blocks get
//! smaller (halved, twice as many per plane, the same flash) until those
//! blocks take at most twice the share of the spare flash they take on the
//! full drive (`with_room_to_collect`): a small drive then collects garbage
//! as the full one does.
//!
//! Of the parameters counted in blocks, a page-mapped FTL's
//! `gc_free_blocks_min` and `gc_free_blocks_target` stay: they are the
//! blocks a die needs to collect into whatever its size. Its
//! `gc_free_blocks_start` is a share of the over-provisioning (the sn640
//! starts background collection at 12 of a die's ~120 spare blocks), which
//! scales by f: kept, background collection would run from the first
//! overwrite on a small drive. It is rounded and kept above
//! `gc_free_blocks_min`, as validation requires. The spare block groups of
//! a zoned device (ZNS+ LogFBGs, dynamic mapping) are what the blocks per
//! plane leave beside the zones, so they scale with them.

use crate::config::namespaces::{blocks_per_plane_needed, namespace_config, CommandSet};
use crate::config::{ConfigError, ConventionalConfig, DeviceConfig, NamespaceConfig};

/// Bytes the host can write to `ns`: conventional zones whole, sequential
/// zones up to their capacity.
pub fn namespace_user_bytes(ns: &NamespaceConfig) -> u64 {
    let conventional = u64::from(ns.conventional_zones.min(ns.zones));
    let sequential = u64::from(ns.zones) - conventional;
    conventional.saturating_mul(ns.zone_size_bytes).saturating_add(sequential.saturating_mul(ns.zone_capacity_bytes))
}

/// The namespaces of `config` as the host sees them, in NSID order.
fn namespaces(config: &DeviceConfig) -> Vec<NamespaceConfig> {
    if config.namespaces.is_empty() {
        return vec![config.namespace.clone()];
    }
    let resolve = |entry: &crate::NamespaceEntry| {
        let mut ns = entry.resolve(&config.namespace);
        if entry.command_set == Some(CommandSet::Nvm) {
            ns.conventional_zones = ns.zones;
        }
        ns
    };
    config.namespaces.iter().map(resolve).collect()
}

/// The device's user capacity in bytes: the sum of its namespaces' (see
/// [`namespace_user_bytes`]).
pub fn user_capacity_bytes(config: &DeviceConfig) -> u64 {
    namespaces(config).iter().map(namespace_user_bytes).fold(0, u64::saturating_add)
}

/// `ns` with floor(zones × `size_bytes` / `total_bytes`) zones, at least one.
fn resize_namespace(ns: &mut NamespaceConfig, size_bytes: u64, total_bytes: u64) {
    let all_conventional = ns.conventional_zones >= ns.zones;
    let zones = u128::from(ns.zones) * u128::from(size_bytes) / u128::from(total_bytes.max(1));
    ns.zones = u32::try_from(zones).unwrap_or(u32::MAX).max(1);
    ns.conventional_zones = if all_conventional { ns.zones } else { ns.conventional_zones.min(ns.zones - 1) };
}

/// `config` with each namespace's zones scaled by `size_bytes` / its user capacity.
fn with_zones_scaled(config: &DeviceConfig, size_bytes: u64) -> DeviceConfig {
    let total_bytes = user_capacity_bytes(config);
    let mut out = config.clone();
    if out.namespaces.is_empty() {
        resize_namespace(&mut out.namespace, size_bytes, total_bytes);
        return out;
    }
    for entry in &mut out.namespaces {
        let mut ns = entry.resolve(&config.namespace);
        resize_namespace(&mut ns, size_bytes, total_bytes);
        entry.zones = Some(ns.zones);
        if entry.conventional_zones.is_some() || ns.conventional_zones != config.namespace.conventional_zones {
            entry.conventional_zones = Some(ns.conventional_zones);
        }
    }
    out
}

/// A page-mapped FTL over `ns`: its data in whole blocks of each die, the
/// blocks per plane it needs (the data, an open host block, an open GC
/// block and `gc_free_blocks_target` free blocks) and its configuration.
/// None for a zoned namespace.
fn ftl_blocks_needed(ns: &DeviceConfig) -> Option<(u64, u64, &ConventionalConfig)> {
    let c = ns.conventional.as_ref()?;
    let g = &ns.flash;
    let row_bytes =
        u64::from(g.dies_total()).saturating_mul(u64::from(g.planes_per_die)).saturating_mul(g.block_bytes());
    let data_blocks = namespace_user_bytes(&ns.namespace).div_ceil(row_bytes.max(1));
    // Open blocks: a host and a GC block, or with FDP one per handle and collection stream.
    let open_blocks = ns.fdp.as_ref().map_or(2, |f| u64::from(f.open_blocks_per_die()));
    Some((data_blocks, data_blocks + open_blocks + u64::from(c.gc_free_blocks_target), c))
}

/// Blocks per plane one namespace needs, and why in words.
fn namespace_need(ns: &DeviceConfig) -> Result<(u64, String), ConfigError> {
    let zones_blocks = blocks_per_plane_needed(ns)?;
    if let Some((data_blocks, need_blocks, c)) = ftl_blocks_needed(ns) {
        let open = match &ns.fdp {
            Some(f) => format!("{} open blocks (one per FDP handle and collection stream)", f.open_blocks_per_die()),
            None => "an open host block, an open GC block".to_string(),
        };
        let why = format!(
            "a page-mapped FTL needs per die {data_blocks} blocks of data, {open} and gc_free_blocks_target = {} free \
             blocks",
            c.gc_free_blocks_target
        );
        return Ok((need_blocks.max(zones_blocks), why));
    }
    let fit = ns.zone_fit().ok_or_else(|| ConfigError("the flash geometry leaves no room for a zone".into()))?;
    let why = format!(
        "{} zones need a flash block group of {} block(s) per plane each, over {} chip group(s)",
        ns.namespace.zones, fit.fbg_blocks, fit.fcgs
    );
    Ok((zones_blocks, why))
}

/// Blocks per plane the namespaces of `config` need: a block group per zone
/// of a zoned namespace; a page-mapped FTL's data, open host and GC blocks
/// and `gc_free_blocks_target` free blocks per die. With the reason.
pub fn blocks_needed(config: &DeviceConfig) -> Result<(u64, String), ConfigError> {
    if config.namespaces.is_empty() {
        return namespace_need(config);
    }
    let (mut total_blocks, mut whys) = (0u64, Vec::new());
    for (i, entry) in config.namespaces.iter().enumerate() {
        let (ns, _) = namespace_config(config, entry)?;
        let (need_blocks, why) = namespace_need(&ns)?;
        total_blocks = total_blocks.saturating_add(need_blocks);
        whys.push(format!("NSID {}: {need_blocks} ({why})", i + 1));
    }
    Ok((total_blocks, whys.join("; ")))
}

/// Why a capacity cannot be had with the device's over-provisioning.
enum Refusal {
    /// The namespaces need more than one block per plane beyond the flash
    /// scaled to the capacity: `ideal_blocks` per plane against `need_blocks`.
    Need { ideal_blocks: f64, need_blocks: u64, why: String },
    /// Anything else (a value that does not fit), said by validation.
    Config(ConfigError),
}

/// `config` scaled to `size_bytes` of user capacity, not yet validated.
fn scaled(config: &DeviceConfig, size_bytes: u64) -> Result<DeviceConfig, Refusal> {
    let total_bytes = u128::from(user_capacity_bytes(config).max(1));
    let mut out = with_zones_scaled(config, size_bytes);
    let user_bytes = u128::from(user_capacity_bytes(&out));
    let blocks = u128::from(config.flash.blocks_per_plane);
    let (need_blocks, why) = blocks_needed(&out).map_err(Refusal::Config)?;
    // need_blocks <= blocks × user_bytes / total_bytes + 1, in integers.
    if u128::from(need_blocks) * total_bytes > blocks * user_bytes + total_bytes {
        let ideal_blocks = (blocks * user_bytes) as f64 / total_bytes as f64;
        return Err(Refusal::Need { ideal_blocks, need_blocks, why });
    }
    let nearest_blocks = (2 * blocks * user_bytes + total_bytes) / (2 * total_bytes);
    let scaled_blocks = nearest_blocks.max(u128::from(need_blocks)).max(1);
    out.flash.blocks_per_plane = u32::try_from(scaled_blocks).map_err(|_| {
        Refusal::Config(ConfigError(format!("it needs {scaled_blocks} blocks per plane, more than 2^32")))
    })?;
    scale_gc_start(&mut out, user_bytes, total_bytes);
    Ok(out)
}

/// Every page-mapped FTL's `gc_free_blocks_start` (a share of the
/// over-provisioning) times `user_bytes / total_bytes`, rounded, above
/// `gc_free_blocks_min`.
fn scale_gc_start(config: &mut DeviceConfig, user_bytes: u128, total_bytes: u128) {
    let scale = |c: &mut ConventionalConfig| {
        if c.gc_free_blocks_start == 0 {
            return; // no background collection
        }
        let start = (2 * u128::from(c.gc_free_blocks_start) * user_bytes + total_bytes) / (2 * total_bytes);
        c.gc_free_blocks_start = u32::try_from(start).unwrap_or(u32::MAX).max(c.gc_free_blocks_min.saturating_add(1));
    };
    let entries = config.namespaces.iter_mut().filter_map(|e| e.conventional.as_mut());
    config.conventional.iter_mut().chain(config.nvm_ftl.iter_mut()).chain(entries).for_each(scale);
}

/// The user capacity of one zone of each namespace: no capacity below it
/// leaves every namespace a zone.
fn one_zone_each_bytes(config: &DeviceConfig) -> u64 {
    let one_zone = |ns: &NamespaceConfig| {
        if ns.conventional_zones >= ns.zones {
            ns.zone_size_bytes
        } else {
            ns.zone_capacity_bytes
        }
    };
    namespaces(config).iter().map(one_zone).fold(0, u64::saturating_add)
}

/// The smallest user capacity `config` scales to with its
/// over-provisioning kept, among k / zones of its capacity (k = 1, 2, ...:
/// with one namespace, whole zones); None if only its own does.
pub fn smallest_capacity_bytes(config: &DeviceConfig) -> Option<u64> {
    let total_bytes = u128::from(user_capacity_bytes(config));
    let zones: u64 = namespaces(config).iter().map(|ns| u64::from(ns.zones)).sum();
    let floor_bytes = one_zone_each_bytes(config);
    // Bound: one scaling (a few clones of the configuration) per zone.
    (1..zones)
        .filter_map(|k| u64::try_from((total_bytes * u128::from(k)).div_ceil(u128::from(zones))).ok())
        .filter(|&size_bytes| size_bytes >= floor_bytes)
        .find(|&size_bytes| scaled(config, size_bytes).is_ok_and(|c| c.validate().is_ok()))
}

/// `config` scaled to a user capacity of `capacity_bytes` (see the module
/// comment). The error names `--capacity`, the value and what would be valid.
pub fn scale_to_capacity(config: &DeviceConfig, capacity_bytes: u64) -> Result<DeviceConfig, ConfigError> {
    config.validate()?;
    let option = format!("--capacity {capacity_bytes} ({})", size_text(capacity_bytes));
    let floor_bytes = one_zone_each_bytes(config);
    if capacity_bytes < floor_bytes {
        let each = if config.namespaces.is_empty() { "one zone" } else { "one zone of each namespace" };
        return Err(ConfigError(format!(
            "{option}: {} holds at least {each}, {floor_bytes} bytes ({}); use at least that",
            config.name,
            size_text(floor_bytes)
        )));
    }
    let invalid = |e: ConfigError| {
        let largest = largest_capacity_bytes(config, capacity_bytes)
            .map(|bytes| format!("; use at most {bytes} bytes ({})", size_text(bytes)))
            .unwrap_or_default();
        ConfigError(format!("{option}: {e}{largest}"))
    };
    if let Some(out) = with_room_to_collect(config, capacity_bytes) {
        return Ok(out);
    }
    match scaled(config, capacity_bytes) {
        Ok(out) => {
            out.validate().map_err(invalid)?;
            Ok(out)
        }
        Err(Refusal::Config(e)) => Err(invalid(e)),
        Err(Refusal::Need { ideal_blocks, need_blocks, why }) => {
            Err(too_small(config, &option, ideal_blocks, need_blocks, &why))
        }
    }
}

/// Most halvings of the block size a capacity may take.
const BLOCK_HALVINGS_MAX: u32 = 6;

/// `config` at `capacity_bytes` with the largest blocks (its own, or
/// halved up to [`BLOCK_HALVINGS_MAX`] times) at which a page-mapped FTL's
/// open and free blocks take at most twice the share of each die's spare
/// blocks they take at the device's own capacity ([`reserve_share`]): they
/// are a fixed number of blocks per die whatever the drive's size, so with
/// the device's own blocks a small drive would leave its FTL little spare
/// flash to collect into, or none. If no block size keeps that share, the
/// valid one with the smallest share. None if none is valid (the caller
/// then says why with the device's own blocks); a zoned device, whose zones
/// need their block groups whole, keeps its blocks.
fn with_room_to_collect(config: &DeviceConfig, capacity_bytes: u64) -> Option<DeviceConfig> {
    let own_share = reserve_share(config)?;
    let mut best: Option<(f64, DeviceConfig)> = None;
    for halvings in 0..=BLOCK_HALVINGS_MAX {
        let Some(blocks) = with_smaller_blocks(config, halvings) else { continue };
        let Some(out) = scaled(&blocks, capacity_bytes).ok().filter(|c| c.validate().is_ok()) else { continue };
        let share = reserve_share(&out)?;
        if share <= 2.0 * own_share {
            return Some(out);
        }
        if best.as_ref().is_none_or(|(s, _)| share < *s) {
            best = Some((share, out));
        }
    }
    best.map(|(_, out)| out)
}

/// The share of each die's spare blocks (beyond its data) that a
/// one-namespace page-mapped device's FTL keeps open or free; None for
/// any other device.
fn reserve_share(config: &DeviceConfig) -> Option<f64> {
    if !config.namespaces.is_empty() {
        return None;
    }
    let (data_blocks, need_blocks, _) = ftl_blocks_needed(config)?;
    let spare_blocks = u64::from(config.flash.blocks_per_plane).saturating_sub(data_blocks);
    Some((need_blocks - data_blocks) as f64 / spare_blocks.max(1) as f64)
}

/// `config` with blocks 2^`halvings` times smaller and as many times more
/// per plane; background collection starts at as many times more free
/// blocks (the same share of the spare flash). None if the pages per block
/// would not stay whole one-shot programs.
fn with_smaller_blocks(config: &DeviceConfig, halvings: u32) -> Option<DeviceConfig> {
    if halvings == 0 {
        return Some(config.clone());
    }
    let g = &config.flash;
    let pages = g.pages_per_block >> halvings;
    if pages << halvings != g.pages_per_block || pages == 0 || !pages.is_multiple_of(g.oneshot_pages) {
        return None;
    }
    let mut out = config.clone();
    out.flash.pages_per_block = pages;
    out.flash.blocks_per_plane = g.blocks_per_plane.checked_mul(1 << halvings)?;
    let more_start =
        |c: &mut ConventionalConfig| c.gc_free_blocks_start = c.gc_free_blocks_start.saturating_mul(1 << halvings);
    let entries = out.namespaces.iter_mut().filter_map(|e| e.conventional.as_mut());
    out.conventional.iter_mut().chain(out.nvm_ftl.iter_mut()).chain(entries).for_each(more_start);
    Some(out)
}

/// The largest user capacity below `refused_bytes` that `config` scales to,
/// when that is above its own: what a capacity too large for validation's
/// bounds (zones, blocks, LBAs of a page map) could be instead.
fn largest_capacity_bytes(config: &DeviceConfig, refused_bytes: u64) -> Option<u64> {
    let valid = |size_bytes: u64| scaled(config, size_bytes).is_ok_and(|c| c.validate().is_ok());
    let (mut good, mut bad) = (user_capacity_bytes(config), refused_bytes);
    if good >= bad || !valid(good) {
        return None;
    }
    // Bound: 64 halvings of a u64 interval.
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if valid(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    // In whole zones, as the capacity it gives.
    scaled(config, good).ok().map(|c| user_capacity_bytes(&c))
}

/// The error of a capacity too small to keep the over-provisioning.
fn too_small(config: &DeviceConfig, option: &str, ideal_blocks: f64, need_blocks: u64, why: &str) -> ConfigError {
    let ratio = config.flash.raw_bytes() as f64 / user_capacity_bytes(config).max(1) as f64;
    let smallest = match smallest_capacity_bytes(config) {
        Some(bytes) => format!("use at least {bytes} bytes ({})", size_text(bytes)),
        None => "no smaller capacity keeps it".to_string(),
    };
    let hint = if why.contains("gc_free_blocks_target") {
        ", or lower conventional.gc_free_blocks_target with --set (at least gc_free_blocks_min + 1)"
    } else {
        ""
    };
    ConfigError(format!(
        "{option}: {} would not keep its over-provisioning (flash / user bytes = {ratio:.3}): its flash scaled to \
         this capacity is {ideal_blocks:.1} blocks per plane, but {why}: {need_blocks} blocks per plane; {smallest}{hint}",
        config.name
    ))
}

/// `bytes` in the largest binary unit that divides it into fewer than
/// 10,000 (16 GiB, 1077 MiB), else in the largest unit it holds, with two
/// decimals (950.79 GiB, 13.88 TiB).
pub fn size_text(bytes: u64) -> String {
    const UNITS: [(u32, &str); 4] = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
    for (shift, unit) in UNITS {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) && bytes >> shift < 10_000 {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    match UNITS.iter().find(|(shift, _)| bytes >= 1 << shift) {
        Some((shift, unit)) => format!("{:.2} {unit}", bytes as f64 / (1u64 << shift) as f64),
        None => format!("{bytes} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{preset, DeviceOptions, PRESET_NAMES};

    fn at_capacity(name: &str, capacity_bytes: u64) -> Result<DeviceConfig, String> {
        let opts = DeviceOptions { capacity_bytes: Some(capacity_bytes), ..Default::default() };
        opts.apply(preset(name).unwrap()).map_err(|e| e.0)
    }

    /// Blocks per plane (of `after`'s size) off the preset's ratio: scaled
    /// flash minus flash × new / old user capacity.
    fn blocks_off_ratio(before: &DeviceConfig, after: &DeviceConfig) -> f64 {
        let ratio = user_capacity_bytes(after) as f64 / user_capacity_bytes(before) as f64;
        let block_row_bytes = after.flash.raw_bytes() as f64 / f64::from(after.flash.blocks_per_plane);
        (after.flash.raw_bytes() as f64 - before.flash.raw_bytes() as f64 * ratio) / block_row_bytes
    }

    #[test]
    fn every_preset_scales_keeping_geometry_and_over_provisioning() {
        for name in PRESET_NAMES {
            let before = preset(name).unwrap();
            let own = user_capacity_bytes(&before);
            assert_eq!(at_capacity(name, own).unwrap(), before, "{name} at its own capacity is itself");
            let smallest = smallest_capacity_bytes(&before).expect("a smaller capacity");
            let at_smallest = at_capacity(name, smallest).unwrap();
            eprintln!(
                "{name}: {} of user capacity, the smallest {} ({} blocks per plane)",
                size_text(own),
                size_text(smallest),
                at_smallest.flash.blocks_per_plane
            );
            for capacity in [smallest, own / 2, own / 4, own * 2, smallest + (own - smallest) / 3] {
                let after = at_capacity(name, capacity).unwrap_or_else(|e| panic!("{name} at {capacity}: {e}"));
                let user = user_capacity_bytes(&after);
                let off = blocks_off_ratio(&before, &after);
                assert!(off.abs() <= 1.0, "{name} at {capacity}: {off} blocks per plane off the ratio");
                if before.namespaces.is_empty() {
                    // Whole zones, rounded down (several namespaces keep a zone each besides).
                    assert!(user <= capacity && capacity - user < after.namespace.zone_capacity_bytes, "{name}");
                }
                let mut geometry = after.flash.clone();
                geometry.blocks_per_plane = before.flash.blocks_per_plane;
                // A page-mapped device's blocks may be halved (twice as many per plane).
                let halvings = (before.flash.pages_per_block / after.flash.pages_per_block).trailing_zeros();
                assert_eq!(after.flash.pages_per_block << halvings, before.flash.pages_per_block, "{name}");
                assert!(halvings == 0 || reserve_share(&before).is_some(), "{name}: a zoned device keeps its blocks");
                geometry.pages_per_block = before.flash.pages_per_block;
                assert_eq!(geometry, before.flash, "{name}: only blocks per plane and their size change");
                assert_eq!(after.flash_timing, before.flash_timing);
                assert_eq!(after.namespace.zone_size_bytes, before.namespace.zone_size_bytes);
                // What `device show` prints loads back as the same device.
                assert_eq!(DeviceConfig::from_toml(&after.to_toml()).unwrap(), after, "{name}");
            }
        }
    }

    #[test]
    fn sn640_scales_to_whole_zones_with_its_gc_thresholds() {
        let before = preset("sn640").unwrap();
        let after = at_capacity("sn640", 100 << 30).unwrap();
        assert_eq!((after.namespace.zones, after.namespace.conventional_zones), (50, 50));
        // 916 × 50 / 447 = 102.46 blocks per plane of 1152 pages; 8 times as
        // many of 144 pages keep the FTL's 6 blocks within twice their share.
        assert_eq!((after.flash.blocks_per_plane, after.flash.pages_per_block), (820, 144));
        let (c, c0) = (after.conventional.as_ref().unwrap(), before.conventional.as_ref().unwrap());
        assert_eq!((c.gc_free_blocks_min, c.gc_free_blocks_target), (c0.gc_free_blocks_min, c0.gc_free_blocks_target));
        assert_eq!(c.gc_units_per_host_unit_max, c0.gc_units_per_host_unit_max);
        // 12 × 8 × 50 / 447 = 10.7: the same share of the spare blocks.
        assert_eq!(c.gc_free_blocks_start, 11);
        // Half the drive: the FTL's 6 blocks are 10% of a die's 60 spare ones, just over twice the full drive's
        // 4.96%, so its blocks halve once and background collection starts at 12 × 2 × 223 / 447.
        let half = at_capacity("sn640", 447 << 30).unwrap();
        assert_eq!(half.flash.pages_per_block, 576);
        assert_eq!(half.conventional.unwrap().gc_free_blocks_start, 12);
    }

    #[test]
    fn small_page_mapped_drives_get_smaller_blocks_and_keep_room_to_collect() {
        for name in ["sn640", "zn540-fdp"] {
            let before = preset(name).unwrap();
            let own_share = reserve_share(&before).unwrap();
            let mut pages_before = 0;
            for gib in [2u64, 4, 16, 42, 100, 300] {
                let after = at_capacity(name, gib << 30).unwrap_or_else(|e| panic!("{name} {gib}g: {e}"));
                let share = reserve_share(&after).unwrap();
                assert!(blocks_off_ratio(&before, &after).abs() <= 1.0, "{name} {gib}g");
                // Below 16 GiB six halvings do not get there: the smallest share then.
                if gib >= 16 {
                    assert!(share <= 2.0 * own_share, "{name} {gib}g: {share} against {own_share}");
                }
                let pages = after.flash.pages_per_block;
                assert!(pages.is_multiple_of(after.flash.oneshot_pages) && pages >= pages_before, "{name} {gib}g");
                pages_before = pages;
            }
        }
        // A zoned device's zones need their block groups whole: it keeps its blocks.
        assert_eq!(at_capacity("zn540", 4 << 30).unwrap().flash.pages_per_block, 1152);
    }

    /// The smallest sn640 with its own blocks (what an error names) is where
    /// the flash scaled by 916 / 447 blocks per plane per zone holds what
    /// its FTL needs per die: the data, an open host and an open GC block
    /// and `gc_free_blocks_target` free blocks.
    #[test]
    fn the_smallest_sn640_holds_its_ftls_reserve() {
        let config = preset("sn640").unwrap();
        let smallest = smallest_capacity_bytes(&config).unwrap();
        let zone_bytes = config.namespace.zone_size_bytes;
        let row_bytes = 16 * 4 * config.flash.block_bytes();
        let fits = |zones: u64| (zones * zone_bytes).div_ceil(row_bytes) + 2 + 4 <= (916 * zones) / 447 + 1;
        let zones = (1..447).find(|&z| fits(z)).unwrap();
        assert_eq!(smallest, zones * zone_bytes);
        assert!(scaled(&config, smallest).is_ok());
        assert!(scaled(&config, smallest - zone_bytes).is_err(), "not with its own blocks");
        // With the FTL keeping 60 blocks of each die free, no block size keeps a 2 GiB drive's over-provisioning.
        let sets = vec![("conventional.gc_free_blocks_target".to_string(), "60".to_string())];
        let greedy = DeviceOptions { sets, ..Default::default() }.apply(config.clone()).unwrap();
        let opts = DeviceOptions { capacity_bytes: Some(zone_bytes), ..Default::default() };
        let e = opts.apply(greedy).unwrap_err().0;
        assert!(e.starts_with(&format!("--capacity {zone_bytes}")), "{e}");
        for needle in ["sn640 would not keep its over-provisioning", "open GC block", "gc_free_blocks_target = 60"] {
            assert!(e.contains(needle), "{needle}: {e}");
        }
        // A smaller reserve makes a smaller drive possible.
        let sets = vec![("conventional.gc_free_blocks_target".to_string(), "3".to_string())];
        let opts = DeviceOptions { sets, ..Default::default() };
        assert!(smallest_capacity_bytes(&opts.apply(config).unwrap()).unwrap() < smallest);
    }

    #[test]
    fn several_namespaces_scale_together() {
        let before = preset("zn540-seed001").unwrap();
        let after = at_capacity("zn540-seed001", user_capacity_bytes(&before) / 2).unwrap();
        let zones: Vec<_> = after.namespaces.iter().map(|e| e.zones).collect();
        assert_eq!(zones, [Some(25), Some(1)], "50 / 2, 2 / 2");
        let small = at_capacity("zn540-seed001", user_capacity_bytes(&before) / 10).unwrap();
        let zones: Vec<_> = small.namespaces.iter().map(|e| e.zones).collect();
        assert_eq!(zones, [Some(4), Some(1)], "floor(4.99), and at least one zone");
        assert!(blocks_off_ratio(&before, &after).abs() <= 1.0);
        crate::Namespaces::new(after).unwrap();
    }

    #[test]
    fn bad_capacities_name_the_option_and_what_is_valid() {
        let cases: [(&str, u64, &str); 4] = [
            ("sn640", 0, "--capacity 0 (0 bytes): sn640 holds at least one zone, 2147483648 bytes (2 GiB)"),
            ("zn540", 1 << 20, "zn540 holds at least one zone, 1129316352 bytes (1077 MiB)"),
            ("zn540-seed001", 2 << 30, "at least one zone of each namespace"),
            ("sn640", 1 << 62, "--capacity 4611686018427387904 (4194304.00 TiB): it needs 4400660004 blocks"),
        ];
        for (name, bytes, needle) in cases {
            let e = at_capacity(name, bytes).unwrap_err();
            assert!(e.contains(needle), "{name} {bytes}: {e}");
        }
        // Larger than validation allows: the largest capacity that it does, which scales to whole zones below 2^32 LBAs.
        let e = at_capacity("sn640", 100 << 40).unwrap_err();
        let largest: u64 = e.split("use at most ").nth(1).and_then(|t| t.split(' ').next()?.parse().ok()).unwrap();
        let config = at_capacity("sn640", largest).unwrap();
        assert_eq!(user_capacity_bytes(&config), largest, "whole zones");
        assert!(e.contains("fewer than 2^32 LBAs") && config.flash.raw_bytes() / 4096 < 1 << 32, "{e}");
        assert!(at_capacity("sn640", largest + (2 << 30)).is_err(), "one more zone is refused");
        let opts = DeviceOptions { capacity_bytes: Some(64 << 30), zones: Some(8), ..Default::default() };
        let e = opts.apply(preset("sn640").unwrap()).unwrap_err().0;
        assert!(e.contains("--capacity 68719476736 and --zones 8 both set the namespace's size"), "{e}");
    }

    #[test]
    fn sizes_read_as_written() {
        let cases = [(0, "0 bytes"), (1 << 20, "1 MiB"), (1077 << 20, "1077 MiB"), (14212 << 30, "13.88 TiB")];
        for (bytes, text) in cases {
            assert_eq!(size_text(bytes), text);
        }
        assert_eq!(size_text((1 << 30) + 1), "1.00 GiB");
    }

    #[test]
    fn other_shortcuts_apply_before_the_capacity() {
        let opts =
            DeviceOptions { zone_size_bytes: Some(64 << 20), capacity_bytes: Some(1 << 30), ..Default::default() };
        let c = opts.apply(preset("zn540").unwrap()).unwrap();
        assert_eq!((c.namespace.zones, c.namespace.zone_capacity_bytes), (16, 64 << 20));
    }
}
