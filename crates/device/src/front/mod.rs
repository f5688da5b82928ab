//! The NVMe front: command decoding and the checks every data command shares
//! (their completion statuses are in [`crate::status`]), Identify and Report
//! Zones data.
//!
//! The front reads the zone layer ([`crate::zone`]) and the namespace layout;
//! it owns no timing. Both device models ([`crate::Device`] and
//! [`crate::ideal::IdealDevice`]) decode commands through it, so they return the
//! same NVMe statuses for the same invalid commands.

pub mod command;

use crate::config::{DeviceConfig, Layout};
use crate::status::Status;
use crate::zone::{ZoneState, ZoneTable, ZoneType};
use command::{IdentifyData, ReportFilter, ZoneAction, ZoneDescriptor, ZoneReport};

/// Largest NLB a command can carry (16-bit, 0-based field).
pub(crate) const NLB_MAX: u32 = 1 << 16;
/// Bytes of a Report Zones header and of each zone descriptor.
pub(crate) const REPORT_HEADER_BYTES: u64 = 64;
pub(crate) const ZONE_DESCRIPTOR_BYTES: u64 = 64;
/// Bytes of an Identify data structure.
pub(crate) const IDENTIFY_BYTES: u64 = 4096;

/// Namespace size in logical blocks.
#[inline]
pub(crate) fn nsze(layout: &Layout) -> u64 {
    debug_assert_eq!(layout.nsze_lbas, u64::from(layout.zones) * layout.zone_lbas);
    layout.nsze_lbas
}

/// Checks shared by every data command: NLB and MDTS, then the LBA range.
pub(crate) fn check_range(layout: &Layout, slba: u64, nlb: u32, mdts_applies: bool) -> Result<(), Status> {
    if nlb == 0 || nlb > NLB_MAX || (mdts_applies && u64::from(nlb) > layout.mdts_lbas) {
        return Err(Status::InvalidField);
    }
    match slba.checked_add(u64::from(nlb)) {
        Some(end) if end <= nsze(layout) => Ok(()),
        _ => Err(Status::LbaOutOfRange),
    }
}

/// The zone a Zone Management Send or Zone Append addresses by its ZSLBA:
/// in range, at a zone start and sequential.
pub(crate) fn addressed_zone(layout: &Layout, zones: &ZoneTable, zslba: u64) -> Result<u32, Status> {
    if zslba >= nsze(layout) {
        return Err(Status::LbaOutOfRange);
    }
    let zone = zones.zone_of(zslba);
    if zones.zslba(zone) != zslba {
        return Err(Status::InvalidField);
    }
    if zones.zone_type(zone) == ZoneType::Conventional {
        return Err(Status::InvalidZoneOperation);
    }
    Ok(zone)
}

/// The zone Flush Explicit ZRWA Range addresses by an LBA of it (not its
/// start): in range, without Select All, sequential.
pub(crate) fn flush_zrwa_zone(layout: &Layout, zones: &ZoneTable, elba: u64, select_all: bool) -> Result<u32, Status> {
    if select_all {
        return Err(Status::InvalidField);
    }
    if elba >= nsze(layout) {
        return Err(Status::LbaOutOfRange);
    }
    let zone = zones.zone_of(elba);
    if zones.zone_type(zone) == ZoneType::Conventional {
        return Err(Status::InvalidZoneOperation);
    }
    Ok(zone)
}

/// Identify Namespace (zoned): sizes, zone resources (0-based, all ones for
/// no limit) and transfer limits.
pub(crate) fn identify(config: &DeviceConfig, layout: &Layout) -> IdentifyData {
    let ns = &config.namespace;
    let zero_based = |limit: u32| if limit == 0 { u32::MAX } else { limit - 1 };
    IdentifyData {
        lba_bytes: ns.lba_bytes,
        nsze: nsze(layout),
        zsze: layout.zone_lbas,
        zcap: layout.zcap_lbas,
        nr_zones: layout.zones,
        nr_conventional_zones: layout.conventional_zones,
        mar: zero_based(ns.max_active_zones),
        mor: zero_based(ns.max_open_zones),
        zasl_bytes: layout.zasl_lbas * layout.lba_bytes,
        mdts_bytes: ns.mdts_bytes,
        zrwa: ns.zrwa.map(|z| z.limits(config, layout).expect("a validated configuration")),
    }
}

/// The Report Zones descriptor of `zone`.
pub(crate) fn descriptor(layout: &Layout, zones: &ZoneTable, zone: u32) -> ZoneDescriptor {
    let zone_type = zones.zone_type(zone);
    let zslba = zones.zslba(zone);
    let (zcap, wp) = match zone_type {
        // A conventional zone has no write pointer; report it past the end as Linux does.
        ZoneType::Conventional => (layout.zone_lbas, zslba + layout.zone_lbas),
        ZoneType::SeqWriteRequired => (layout.zcap_lbas, zones.wp(zone)),
    };
    let zrwa = zones.has_zrwa(zone);
    ZoneDescriptor { zone_type, state: zones.state(zone), zcap, zsze: layout.zone_lbas, zslba, wp, zrwa }
}

/// Report Zones from `slba`: up to `max_zones` descriptors that match
/// `filter`; NR_ZONES counts every match unless `partial`.
pub(crate) fn report(
    layout: &Layout,
    zones: &ZoneTable,
    slba: u64,
    filter: ReportFilter,
    max_zones: u32,
    partial: bool,
) -> Result<ZoneReport, Status> {
    if slba >= nsze(layout) {
        return Err(Status::LbaOutOfRange);
    }
    let mut report = Vec::new();
    let mut matching = 0u64;
    for zone in zones.zone_of(slba)..layout.zones {
        if !filter.matches(zones.zone_type(zone), zones.state(zone)) {
            continue;
        }
        matching += 1;
        if report.len() < max_zones as usize {
            report.push(descriptor(layout, zones, zone));
        } else if partial {
            break;
        }
    }
    let nr_zones = if partial { report.len() as u64 } else { matching };
    Ok(ZoneReport { nr_zones, zones: report })
}

/// Byte size of a zone report's data (header and descriptors).
pub(crate) fn report_bytes(report: &ZoneReport) -> u64 {
    REPORT_HEADER_BYTES + ZONE_DESCRIPTOR_BYTES * report.zones.len() as u64
}

/// Read checks after the range: an offline first zone, then a read across
/// zones where the namespace forbids it, then any offline zone it touches.
#[inline]
/// `cross_zone_ok` is asked only of a read that does cross zones.
pub(crate) fn check_read(
    zones: &ZoneTable,
    slba: u64,
    nlb: u32,
    cross_zone_ok: impl FnOnce() -> bool,
) -> Result<(), Status> {
    let first = zones.zone_of(slba);
    if zones.state(first) == ZoneState::Offline {
        return Err(Status::ZoneIsOffline);
    }
    // Most reads stay in one zone, whose state is checked: the next zone's
    // start (a shift; `first` is below the zone count, a u32) tells.
    let end = slba + u64::from(nlb);
    if end <= zones.zslba(first + 1) {
        return Ok(());
    }
    let last = zones.zone_of(end - 1);
    if !cross_zone_ok() {
        return Err(Status::ZoneBoundaryError);
    }
    if (first + 1..=last).any(|z| zones.state(z) == ZoneState::Offline) {
        return Err(Status::ZoneIsOffline);
    }
    Ok(())
}

/// Whether Select All applies `action` to a zone in `state`: the states of
/// NVMe TP 4053 (Open: closed; Close: opened; Finish: opened and closed;
/// Reset: opened, closed and full; Offline: read only).
pub(crate) fn select_all_applies(action: ZoneAction, state: ZoneState) -> bool {
    match action {
        ZoneAction::Open | ZoneAction::OpenZrwa => state == ZoneState::Closed,
        ZoneAction::Close => state.is_open(),
        ZoneAction::Finish => state.is_active(),
        ZoneAction::Reset => state.is_active() || state == ZoneState::Full,
        ZoneAction::Offline => state == ZoneState::ReadOnly,
        // Refused with Select All before any zone is selected.
        ZoneAction::FlushZrwa => false,
    }
}

/// The zone fault injection targets at `slba`: a zone start, failing into
/// read only or offline. `Ok(None)` when it is offline already and stays so.
pub(crate) fn fault_target(
    layout: &Layout,
    zones: &ZoneTable,
    slba: u64,
    state: ZoneState,
) -> Result<Option<u32>, Status> {
    if slba >= nsze(layout) {
        return Err(Status::LbaOutOfRange);
    }
    let zone = zones.zone_of(slba);
    if zones.zslba(zone) != slba || !matches!(state, ZoneState::ReadOnly | ZoneState::Offline) {
        return Err(Status::InvalidField);
    }
    // Offline is final: nothing brings a zone back from it.
    if zones.state(zone) == ZoneState::Offline {
        return if state == ZoneState::Offline { Ok(None) } else { Err(Status::ZoneInvalidStateTransition) };
    }
    Ok(Some(zone))
}
