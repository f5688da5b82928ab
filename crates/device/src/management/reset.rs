//! Reset: the zone becomes empty at once; the firmware then unmaps what was
//! written, and the zone's blocks are erased inside the reset, in idle die
//! time after it, or only before they are next programmed.
//!
//! The unmapping cost grows with occupancy (seed 000 Obs 10: 11.60 ms for a
//! half-full zone, 16.19 ms for a full one); an open or closed zone also
//! tears down its write state (buffer, open blocks), which a finish or the
//! last write already did for a full zone, so a finished zone resets faster
//! than an unfinished one of the same occupancy. With dynamic zone mapping
//! the zone leaves its block group to be erased and takes the one that has
//! been free longest, which spreads erases over the flash.

use super::Phase;
use crate::backend::Backend;
use crate::config::{EraseAt, EraseScope, HoldSpan, ZoneMapping};
use crate::ssd::Ssd;
use crate::zone::ZoneState;
use zonelab_sim::Nanos;

/// The work of resetting `zone`, accepted at `ready_ns`, which was in
/// `old_state` with `written_lbas` written. Marks its blocks to erase and,
/// with dynamic mapping, moves it to another block group.
pub(crate) fn reset_phases(
    core: &mut Backend,
    ssd: &mut Ssd,
    zone: u32,
    ready_ns: Nanos,
    old_state: ZoneState,
    written_lbas: u64,
) -> Vec<Phase> {
    let m = &core.config.management;
    if old_state == ZoneState::Empty {
        // Nothing to undo (CLUSTER'23 Fig 5: 2.1 µs for a never-written zone).
        return vec![Phase::Firmware { left_ns: 0 }];
    }
    let map_units = core.config.map_units(&core.layout, written_lbas);
    let unmap_ns = m.reset.unmap_per_lba_ns.saturating_mul(map_units);
    let mut left_ns = m.reset_ns + unmap_ns;
    // Open blocks exist once a unit went to flash: with less in the buffer
    // the reset costs what a finished zone's does (1.63-1.67 ms either way).
    if old_state.is_active() && core.controller.flushed_units(zone) > 0 {
        left_ns += m.reset.active_ns;
    }
    let hold_ns = match (m.reset.unmap_holds_programs, m.reset.hold_span) {
        (false, _) => 0,
        (true, HoldSpan::Unmap) => unmap_ns,
        (true, HoldSpan::Work) => left_ns,
    };
    debug_assert!(hold_ns <= left_ns, "a hold lasts no longer than the reset's work");
    let sync = m.reset.erase_at == EraseAt::Sync;
    let fbg = release_blocks(core, ssd, zone, ready_ns);
    let mut phases = Vec::with_capacity(3);
    if hold_ns > 0 {
        phases.push(Phase::Hold { ns: hold_ns });
    }
    phases.push(Phase::Firmware { left_ns });
    if sync {
        phases.push(Phase::Erase { zone, fbg });
    }
    phases
}

/// Marks the zone's block group to erase on every die where it holds data
/// (or on all, with `erase = "all"`); with dynamic mapping, gives the
/// group back and takes the longest-free one. Returns the old group.
fn release_blocks(core: &mut Backend, ssd: &mut Ssd, zone: u32, ready_ns: Nanos) -> u32 {
    let fbg = core.translation.mapping.fbg_of_zone(zone);
    let all = core.config.management.reset.erase == EraseScope::All;
    for die in core.translation.mapping.fcg_dies(zone) {
        let written = core.translation.mapping.fbg_blocks(fbg).any(|b| core.pages_written(ssd, die, b) > 0);
        if all || written {
            let ready = core.scheduler.background.pending_erase.entry((die, fbg)).or_insert(ready_ns);
            *ready = (*ready).min(ready_ns);
        }
    }
    if core.config.mapping.zone_mapping == ZoneMapping::Dynamic {
        core.translation.mapping.release_fbg(zone, fbg);
        let next = core.translation.mapping.take_free_fbg(zone).expect("the group just released is free");
        core.translation.mapping.set_zone_fbg(zone, next);
    }
    fbg
}
