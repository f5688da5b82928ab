//! The data path of a Zone Random Write Area (NVMe TP 4076): what a write
//! into the window and a commit cost. The zone layer decides what is
//! allowed and where the write pointer goes (`zone::ZoneTable`); this moves
//! the data.
//!
//! A window write's data crosses the link into the zone's write buffer like
//! any write, but it cannot go to flash: it stays there, taking room, until
//! the write pointer passes it. Only LBAs the window does not hold yet take
//! room; a rewrite replaces buffered data (firmware and link time, no
//! flash work). A commit (implicit, explicit, or the one a finish makes)
//! hands the committed LBAs to the zone's fill, in order, from which
//! complete program units go to flash as a sequential write's do; LBAs of
//! the committed range that were never written take room as zeros then.

use crate::backend::Backend;
use crate::ssd::Ssd;
use zonelab_sim::Nanos;

/// Moves the data of an accepted window write of LBAs `slba..end` into
/// `zone`'s buffer from `ready_ns` on (crossing the link if `link`), then
/// commits the `commit_lbas` LBAs from `old_wp` the zone layer committed
/// with it. Returns when the data is in.
pub(crate) fn window_write(
    core: &mut Backend,
    ssd: &mut Ssd,
    zone: u32,
    lbas: std::ops::Range<u64>,
    ready_ns: Nanos,
    link: bool,
    old_wp: u64,
) -> Nanos {
    if old_wp == core.zones.zslba(zone) && !core.zone_holds_data(zone) && core.controller.window_extent(zone).0 == 0 {
        core.translation.mapping.start_zone(zone);
    }
    let new_lbas = core.controller.window_write(zone, lbas.start, lbas.end);
    let admitted = core.admit_lbas(zone, new_lbas, ready_ns);
    let bytes = (lbas.end - lbas.start) * core.layout.lba_bytes;
    let t = if link { ssd.take_write_data(admitted, bytes) } else { admitted };
    core.controller.window_note_ready(zone, t);
    let committed = core.zones.wp(zone).saturating_sub(old_wp);
    // A write that filled the zone released its ZRWA: its commit is the last.
    let wp_end = old_wp + committed;
    if committed > 0 {
        commit(core, ssd, zone, wp_end, committed, t);
    }
    t
}

/// The zone layer moved `zone`'s write pointer to `wp_end` by `lbas`: the
/// window's data below it goes to the fill from `at_ns` on, or once the
/// window's writes in flight are in (holes as zeros, which need room first).
/// Returns when the committed data is in the fill.
pub(crate) fn commit(core: &mut Backend, ssd: &mut Ssd, zone: u32, wp_end: u64, lbas: u64, at_ns: Nanos) -> Nanos {
    // Window writes still in flight finish coming in first.
    let at_ns = at_ns.max(core.controller.window_ready_ns(zone));
    let held = core.controller.window_commit_below(zone, wp_end);
    debug_assert!(held <= lbas);
    let t = core.admit_lbas(zone, lbas - held, at_ns);
    core.fill_committed(ssd, zone, lbas, t);
    if core.zones.state(zone) == crate::zone::ZoneState::Full {
        core.flush_partial_units(ssd, zone, t);
    }
    t
}

/// Before a finish of `zone`, whose write pointer is `wp`: what its ZRWA
/// holds is committed (up to its highest written LBA, holes as zeros) so
/// that the finish keeps it and pads only past it. Returns the LBAs committed.
pub(crate) fn commit_for_finish(core: &mut Backend, ssd: &mut Ssd, zone: u32, wp: u64, at_ns: Nanos) -> u64 {
    let Some(end) = core.controller.window_extent(zone).1 else { return 0 };
    let at_ns = at_ns.max(core.controller.window_ready_ns(zone));
    let lbas = end - wp;
    let held = core.controller.window_commit_below(zone, end);
    let t = core.admit_lbas(zone, lbas - held, at_ns);
    core.fill_committed(ssd, zone, lbas, t);
    lbas
}
