//! Flush, FUA and power loss.
//!
//! The write buffer ([`crate::config::WriteCache`]) is either power-loss
//! protected (`plp`: whatever reached the controller survives a power cut,
//! capacitors program it) or volatile: data survives only once its program
//! unit is programmed, or once a Flush (or a FUA write) saved it. A Flush
//! waits for the data of every completed write; a zone whose data is not all
//! programmed has its partly filled unit saved to power-safe flash
//! (`write_buffer.partial_unit_flush_ns`, zones in parallel). A FUA write
//! completes only once its zone's data up to its end is durable.
//!
//! [`Device::power_cut`](crate::Device::power_cut) at an instant: every sequential zone keeps the
//! longest prefix of its data that survives (durable, or with `plp` taken
//! in), and writes in flight are torn at that point or, with
//! `power_cut_in_flight = "lost"`, lost whole. On recovery the write pointer
//! is at the end of that prefix, a zone that lost data and was full is
//! closed (empty if nothing is left) and the data after it reads as zeros, as
//! on a drive whose write pointer is rebuilt from flash. Units that were
//! issued to flash but lost (torn programs) cannot be programmed again:
//! data later written into them is taken as programmed elsewhere, durable
//! one program time after it is in. Conventional zones and the conventional
//! FTL keep what they took in (their mapping is not rebuilt). Zone
//! management commands are durable when they complete; background work of
//! a pending finish or reset runs on.

use crate::backend::Backend;
use crate::config::InFlight;
use crate::front::command::CmdResult;
use crate::ssd::Ssd;
use crate::status::Status;
use crate::zone::ZoneState;
use zonelab_sim::Nanos;

/// What [`Device::power_cut`](crate::Device::power_cut) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PowerCutReport {
    /// Zones whose write pointer moved back.
    pub zones_rolled_back: u32,
    /// Blocks the host had written (or the device had copied) that are gone.
    pub lost_blocks: u64,
}

/// NVMe Flush: completes once the data of every completed write is durable.
pub(crate) fn flush(core: &mut Backend, ssd: &mut Ssd, ready_ns: Nanos) -> (Status, Nanos, CmdResult) {
    let fw_end = ssd.reserve_firmware(ready_ns, core.config.write_buffer.flush_ns);
    core.counters.flushes += 1;
    if !core.volatile_cache() {
        return (Status::Success, fw_end, CmdResult::None);
    }
    let mut done = fw_end;
    for zone in 0..core.layout.zones {
        if core.tracked(zone) {
            done = done.max(save_zone(core, zone, fw_end, None));
        }
    }
    (Status::Success, done, CmdResult::None)
}

/// A FUA write of `zone` up to zone offset `end` was in at `done_ns`:
/// when it is durable.
pub(crate) fn fua_done(core: &mut Backend, ssd: &mut Ssd, slba: u64, nlb: u32, done_ns: Nanos) -> Nanos {
    let zone = core.zones.zone_of(slba);
    if !core.volatile_cache() || !core.tracked(zone) {
        return done_ns;
    }
    let end = slba + u64::from(nlb) - core.zones.zslba(zone);
    let fw_end = ssd.reserve_firmware(done_ns, core.config.write_buffer.flush_ns);
    save_zone(core, zone, fw_end, Some(end))
}

/// Saves the zone's data in the controller at `at_ns` (up to `end`, if
/// given) that is not durable yet; returns when it is.
fn save_zone(core: &mut Backend, zone: u32, at_ns: Nanos, end: Option<u64>) -> Nanos {
    let now_ns = core.last_submit_ns;
    let partial_ns = core.config.write_buffer.partial_unit_flush_ns;
    let z = core.controller.durability_mut(zone);
    let taken = z.taken_prefix(at_ns);
    let end = end.map_or(taken, |e| e.max(taken));
    if z.durable_prefix(at_ns) >= end {
        return at_ns;
    }
    let done = at_ns + partial_ns;
    z.durable(0, end, done, now_ns);
    core.counters.flush_saves += 1;
    done
}

/// Power fails at `at_ns` (not before the last submitted command) and
/// comes back: every zone keeps what survives, as the module describes.
pub(crate) fn power_cut(core: &mut Backend, at_ns: Nanos) -> PowerCutReport {
    assert!(at_ns >= core.last_submit_ns, "a power cut cannot undo a later submission");
    assert!(core.durability_kept(), "a power cut needs a device built to track it (Tracking::power_cuts)");
    let mut report = PowerCutReport::default();
    for zone in 0..core.layout.zones {
        if core.zones.has_zrwa(zone) {
            report.lost_blocks += core.drop_zrwa_window(zone);
        }
        if !core.tracked(zone) || !matches!(core.zones.state(zone), s if s.is_active() || s == ZoneState::Full) {
            continue;
        }
        let z = core.controller.durability(zone);
        let mut keep = if core.volatile_cache() { z.durable_prefix(at_ns) } else { z.taken_prefix(at_ns) };
        if core.config.write_buffer.power_cut_in_flight == InFlight::Lost {
            keep = keep.min(z.first_incomplete(at_ns).unwrap_or(u64::MAX));
        }
        let written = core.zones.wp(zone) - core.zones.zslba(zone);
        let filled = z.filled_lbas();
        if keep >= filled.min(written) {
            // Nothing the host wrote is lost (the fill may run ahead of
            // the write pointer in a TL_opened zone: kept with it).
            core.controller.durability_mut(zone).recovered(filled);
            continue;
        }
        if filled < written {
            // Finished (durably, a zone management command): it stays
            // full, the data it lost reads as zeros.
            report.lost_blocks += filled - keep;
            if let Some(d) = core.data.as_mut() {
                d.truncate(core.zones.zslba(zone) + keep);
            }
            core.controller.durability_mut(zone).recovered(keep);
            continue;
        }
        report.zones_rolled_back += 1;
        report.lost_blocks += written - keep;
        roll_back(core, zone, keep);
    }
    core.counters.power_cuts += 1;
    core.last_submit_ns = at_ns;
    report
}

/// The zone keeps its first `keep` LBAs.
fn roll_back(core: &mut Backend, zone: u32, keep: u64) {
    let zslba = core.zones.zslba(zone);
    core.zones.recover_wp(zone, zslba + keep, core.translation.tl.contains_key(&zone));
    if let Some(d) = core.data.as_mut() {
        d.truncate(zslba + keep);
    }
    let per_chunk = core.layout.lbas_per_chunk;
    // Data lost from units not issued yet leaves the buffer.
    let issued_end = core.issued_end_lbas(zone);
    let unissued_lost = core.controller.filled_lbas(zone).max(issued_end) - keep.max(issued_end);
    core.controller.release_unissued(zone, unissued_lost * core.layout.lba_bytes);
    let first_lost_unit = core.translation.mapping.unit_of_chunk(keep / per_chunk);
    core.controller.zone_io_mut(zone).roll_back(keep, first_lost_unit);
    let z = core.controller.durability_mut(zone);
    z.recovered(keep);
    z.reissued_end_lbas = issued_end;
}
