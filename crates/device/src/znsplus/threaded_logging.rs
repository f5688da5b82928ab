//! TL_open and internal plugging (ZNS+ threaded logging, seed 002 §3.2.2).
//!
//! State rules (where the paper leaves a choice):
//! - TL_open accepts a sequential zone that is Empty, opened, Closed or Full
//!   and not already TL_opened; Read Only and Offline -> zone_invalid_state_transition;
//!   conventional (or a zone over 2^24 blocks) -> invalid_zone_operation; SLBA not a zone start or a valid
//!   bit at or past the zone's write pointer (no data there) -> invalid_field;
//!   no spare block group left for the LogFBG -> too_many_active_zones.
//!   Resources as for Open (a Full zone needs an active and an open one, like an
//!   Empty zone); the zone becomes Explicitly Opened, so it is never auto-closed.
//! - The write pointer restarts at the zone start and new data goes to a LogFBG.
//!   Writes (and copy destinations) must be at or past the write pointer and
//!   on invalid blocks only, else zone_invalid_write; Zone Append ->
//!   invalid_zone_operation (the host picks threaded-logging LBAs itself).
//! - Blocks a write skips are plugged: valid ones copied from the original
//!   block group, invalid ones read as zeros. LBA-ordered plugging also moves
//!   the write pointer over the valid blocks that follow each write (and that
//!   start the zone); PPA-ordered plugging leaves the write pointer at the end
//!   of the write and copies fully valid chunks ahead of it while their die is
//!   idle, in page order; a write issues the plugs of the valid blocks it
//!   skips and does not wait for them (only page order on the die binds them).
//! - Close plugs up to the last valid block (the zone is Full if that reaches
//!   its capacity, else Closed); Finish plugs them too and the zone is Full.
//!   Either way the LogFBG replaces the original, which is erased and becomes
//!   a spare. Reset and Offline drop both.
//!
//! PPA-ordered plugging is a step of the device's event loop
//! ([`Device::advance`](crate::Device::advance), run before every command and whenever the host lets
//! time pass): each die of a TL_opened zone, from the moment it is idle,
//! plugs the unit next in page order in its LogFBG block while that unit is
//! fully valid and ahead of the fill, one unit per step, so a host command
//! waits for at most the plug under way on its die.

use crate::backend::Backend;
use crate::config::Plugging;
use crate::front::command::CmdResult;
use crate::scheduler::Next;
use crate::ssd::Ssd;

use crate::status::Status;
use crate::znsplus::{TlZone, TL_ZONE_BLOCKS_MAX};
use crate::zone::{ZoneState, ZoneType};
use zonelab_sim::Nanos;

/// After a sequential zone's write pointer moved: a TL_opened zone in
/// LBA-ordered plugging plugs the valid blocks that follow; a zone that
/// became full programs its partial units (and a TL_opened one swaps
/// its LogFBG in).
pub(crate) fn after_wp_moved(core: &mut Backend, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
    plug_following(core, ssd, zone, at_ns);
    if core.zones.state(zone) == ZoneState::Full {
        if core.translation.tl.contains_key(&zone) {
            tl_finalize(core, ssd, zone, at_ns);
        }
        core.flush_partial_units(ssd, zone, at_ns);
    }
}

pub(crate) fn tl_open(
    core: &mut Backend,
    ssd: &mut Ssd,
    ready_ns: Nanos,
    zslba: u64,
    valid: &[u64],
) -> (Status, Nanos, CmdResult) {
    match accept_tl_open(core, zslba, valid) {
        Err(status) => core.fail(ssd, ready_ns, status),
        Ok(zone) => {
            let fw_end = ssd.reserve_firmware(ready_ns, core.config.znsplus.tl_open_ns);
            start_threaded_logging(core, ssd, zone, valid, fw_end);
            (Status::Success, fw_end, CmdResult::None)
        }
    }
}

fn accept_tl_open(core: &mut Backend, zslba: u64, valid: &[u64]) -> Result<u32, Status> {
    if zslba >= core.nsze() {
        return Err(Status::LbaOutOfRange);
    }
    let zone = core.zones.zone_of(zslba);
    if core.zones.zslba(zone) != zslba {
        return Err(Status::InvalidField);
    }
    if core.zones.zone_type(zone) == ZoneType::Conventional || core.layout.zcap_lbas > TL_ZONE_BLOCKS_MAX {
        return Err(Status::InvalidZoneOperation);
    }
    let written_lbas = core.zones.wp(zone) - zslba;
    let words =
        usize::try_from(core.layout.zcap_lbas.div_ceil(64)).expect("zcap_lbas is at most TL_ZONE_BLOCKS_MAX here");
    let beyond_data = valid.iter().enumerate().any(|(w, &bits)| {
        let first = w as u64 * 64;
        let mask = if first >= written_lbas {
            u64::MAX
        } else {
            // Shifting out every bit (64 or more) leaves no mask.
            u32::try_from(written_lbas - first).ok().and_then(|s| u64::MAX.checked_shl(s)).unwrap_or(0)
        };
        bits & mask != 0
    });
    if valid.len() > words || beyond_data {
        return Err(Status::InvalidField);
    }
    let state = core.zones.state(zone);
    if core.translation.tl.contains_key(&zone) || matches!(state, ZoneState::ReadOnly | ZoneState::Offline) {
        return Err(Status::ZoneInvalidStateTransition);
    }
    if !core.translation.mapping.has_free_fbg(zone) {
        return Err(Status::TooManyActiveZones);
    }
    let auto_closed = core.zones.tl_open(zone)?;
    core.note_auto_close(auto_closed);
    Ok(zone)
}

/// Moves the zone to a LogFBG: the original keeps what the zone held.
fn start_threaded_logging(core: &mut Backend, ssd: &mut Ssd, zone: u32, valid: &[u64], at_ns: Nanos) {
    core.flush_partial_units(ssd, zone, at_ns);
    let original_fbg = core.translation.mapping.fbg_of_zone(zone);
    let log_fbg = core.translation.mapping.take_free_fbg(zone).expect("checked when accepted");
    debug_assert!(core.translation.mapping.fcg_dies(zone).all(|die| core
        .translation
        .mapping
        .fbg_blocks(log_fbg)
        .all(|b| core.pages_written(ssd, die, b) == 0)));
    core.translation.mapping.set_zone_fbg(zone, log_fbg);
    // The LogFBG starts empty; the original's programs are on the flash timelines.
    let original_lbas = core.controller.zone_io_mut(zone).take_filled_lbas();
    core.cache_discard(zone);
    if let Some(d) = core.data.as_mut() {
        d.tl_open(zone);
    }
    let tl = TlZone::new(original_fbg, original_lbas, valid, at_ns, core.layout.zcap_lbas);
    core.translation.tl.insert(zone, tl);
    core.znsplus.tl_opens += 1;
    after_wp_moved(core, ssd, zone, at_ns);
}

/// Brings the zone's data up to zone offset `to` from its fill point:
/// in a TL_opened zone valid blocks are plugged from the original block
/// group and invalid ones read as zeros; elsewhere skipped blocks read as
/// zeros. Returns when the plugged data is in, or, for PPA-ordered
/// plugging of a TL_opened zone, `at_ns`: the plugs are issued and the
/// data that follows need not wait for them.
pub(crate) fn fill_gap(core: &mut Backend, ssd: &mut Ssd, zone: u32, to: u64, at_ns: Nanos) -> Nanos {
    let per_chunk = core.layout.lbas_per_chunk;
    let zslba = core.zones.zslba(zone);
    let mut done_ns = at_ns;
    // LBA-ordered plugs move the write pointer, so what follows waits for
    // them; PPA-ordered ones are bound only by page order on their die,
    // which the die's timeline keeps: the write goes on meanwhile.
    let waits_for_plugs = core.config.znsplus.plugging == Plugging::Lba || !core.translation.tl.contains_key(&zone);
    // Bound: every pass fills at least one block of the zone.
    for _ in 0..=core.layout.zcap_lbas {
        let from = core.controller.filled_lbas(zone);
        if from >= to {
            break;
        }
        let end = to.min((from / per_chunk + 1) * per_chunk);
        let valid: Vec<bool> = match core.translation.tl.get(&zone) {
            Some(tl) => (from..end).map(|o| tl.is_valid(o)).collect(),
            None => vec![false; usize::try_from(end - from).expect("at most one chunk of LBAs")],
        };
        let valid_lbas = valid.iter().filter(|&&v| v).count() as u64;
        let t = if valid_lbas == per_chunk {
            plug_whole_chunk(core, ssd, zone, from, at_ns)
        } else if valid_lbas > 0 {
            let ready_ns = core.fetch_chunk(ssd, zslba + from, at_ns);
            super::take_in_copy(core, ssd, zone, end - from, ready_ns, at_ns);
            core.znsplus.read_program_blocks += valid_lbas;
            core.znsplus.plugged_blocks_foreground += valid_lbas;
            ready_ns
        } else {
            core.take_in(ssd, zone, end - from, at_ns, false)
        };
        if waits_for_plugs {
            done_ns = done_ns.max(t);
        }
        if let Some(d) = core.data.as_mut() {
            for (o, v) in (from..end).zip(valid) {
                d.plug(zslba + o, v);
            }
        }
    }
    done_ns
}

/// Plugs the fully valid chunk at zone offset `from` (the fill point),
/// unless it was plugged ahead already; returns when its data is in.
fn plug_whole_chunk(core: &mut Backend, ssd: &mut Ssd, zone: u32, from: u64, at_ns: Nanos) -> Nanos {
    let per_chunk = core.layout.lbas_per_chunk;
    let unit = core.translation.mapping.unit_of_chunk(from / per_chunk);
    if core.controller.is_preprogrammed(zone, unit) {
        core.cache_fill(zone, per_chunk, core.last_submit_ns);
        core.fill(ssd, zone, per_chunk, at_ns);
        return at_ns;
    }
    core.znsplus.plugged_blocks_foreground += per_chunk;
    let src_lba = core.zones.zslba(zone) + from;
    if let Some((sensed_ns, _)) = super::try_copyback(core, ssd, zone, src_lba, at_ns) {
        return sensed_ns;
    }
    let ready_ns = core.fetch_chunk(ssd, src_lba, at_ns);
    super::take_in_copy(core, ssd, zone, per_chunk, ready_ns, at_ns);
    core.znsplus.read_program_blocks += per_chunk;
    ready_ns
}

/// LBA-ordered plugging: the write pointer of an open TL_opened zone moves
/// over the valid blocks that follow it, once they are plugged; the next
/// write to the zone waits for that (`wp_ready_ns`).
pub(crate) fn plug_following(core: &mut Backend, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
    if core.config.znsplus.plugging != Plugging::Lba || !core.zones.state(zone).is_open() {
        return;
    }
    let Some(tl) = core.translation.tl.get(&zone) else {
        return;
    };
    let zslba = core.zones.zslba(zone);
    let wp = core.zones.wp(zone);
    let to = tl.next_invalid(wp - zslba);
    let done_ns = move_wp_to(core, ssd, zone, to, at_ns);
    if let Some(tl) = core.translation.tl.get_mut(&zone) {
        tl.wp_ready_ns = tl.wp_ready_ns.max(done_ns);
    }
}

/// When a write to `zone` can be handled: after the LBA-ordered plugs
/// that moved its write pointer (`at_ns` if none are pending).
pub(crate) fn wp_ready_ns(core: &Backend, zone: u32, at_ns: Nanos) -> Nanos {
    core.translation.tl.get(&zone).map_or(at_ns, |tl| tl.wp_ready_ns.max(at_ns))
}

/// Plugs the zone's data and moves its write pointer up to zone offset
/// `to`; returns when the plugged data is in.
fn move_wp_to(core: &mut Backend, ssd: &mut Ssd, zone: u32, to: u64, at_ns: Nanos) -> Nanos {
    let wp = core.zones.wp(zone);
    let target = core.zones.zslba(zone) + to;
    if target <= wp {
        return at_ns;
    }
    let done_ns = fill_gap(core, ssd, zone, to, at_ns);
    core.zones.advance_wp(zone, target - wp);
    done_ns
}

/// Plugs every valid block left (Close and Finish).
pub(crate) fn tl_plug_all(core: &mut Backend, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
    let tl = core.translation.tl.get(&zone).expect("a TL_opened zone");
    debug_assert!(core.zones.state(zone).is_open(), "TL_opened zones stay open");
    let to = tl.valid_end();
    move_wp_to(core, ssd, zone, to, at_ns);
}

/// Close of a TL_opened zone: plug the rest, then the LogFBG takes over.
pub(crate) fn tl_close(core: &mut Backend, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
    tl_plug_all(core, ssd, zone, at_ns);
    if core.zones.state(zone) == ZoneState::Full {
        after_wp_moved(core, ssd, zone, at_ns);
    } else {
        core.zones.close(zone).expect("an open zone closes");
        tl_finalize(core, ssd, zone, at_ns);
    }
}

/// The LogFBG replaces the original block group, which is erased and spared.
pub(crate) fn tl_finalize(core: &mut Backend, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
    let tl = core.translation.tl.remove(&zone).expect("a TL_opened zone");
    // The original is dropped only once the LogFBG's data is durable.
    core.cache_persist(zone);
    core.erase_fbg(ssd, zone, tl.original_fbg, at_ns);
    core.translation.mapping.release_fbg(zone, tl.original_fbg);
    if let Some(d) = core.data.as_mut() {
        d.tl_close(zone);
    }
}

/// Reset or offline: the original block group goes back to the spares.
pub(crate) fn tl_drop(core: &mut Backend, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
    if core.translation.tl.contains_key(&zone) {
        tl_finalize(core, ssd, zone, at_ns);
    }
}

/// The PPA-ordered plug that could start first (a step of the device's
/// event loop, [`Device::advance`](crate::Device::advance)): over the dies of the TL_opened
/// zones, the unit next in page order in the die's LogFBG block when it
/// is fully valid and still ahead of the fill, from the moment the die is
/// idle. Ties go to the lowest zone, then die.
pub(crate) fn background_plug(core: &Backend, ssd: &Ssd) -> Option<Next> {
    if core.config.znsplus.plugging != Plugging::Ppa || core.translation.tl.is_empty() {
        return None;
    }
    let mut first: Option<Next> = None;
    for (&zone, tl) in &core.translation.tl {
        for die in core.translation.mapping.fcg_dies(zone) {
            let start_ns = ssd.flash().die_free_at_ns(die).max(tl.opened_ns);
            if first.is_some_and(|f| f.start_ns() <= start_ns) {
                continue;
            }
            let Some(unit) = next_unit_on_die(core, ssd, zone, die) else { continue };
            if pluggable_ahead(core, zone, unit) {
                first = Some(Next::Plug { zone, unit, start_ns });
            }
        }
    }
    first
}

/// The LogFBG unit that is next to program on `die` (in page order).
fn next_unit_on_die(core: &Backend, ssd: &Ssd, zone: u32, die: u32) -> Option<u64> {
    let g = &core.config.flash;
    let rows_per_block = u64::from(g.pages_per_block / g.oneshot_pages);
    let fbg = core.translation.mapping.fbg_of_zone(zone);
    let die_in_fcg = u64::from(die - core.translation.mapping.fcg_dies(zone).start);
    let d = u64::from(core.translation.mapping.d_zone());
    core.translation.mapping.fbg_blocks(fbg).enumerate().find_map(|(b, block)| {
        let written = core.pages_written(ssd, die, block);
        (written < g.pages_per_block)
            .then(|| (b as u64 * rows_per_block + u64::from(written / g.oneshot_pages)) * d + die_in_fcg)
    })
}

/// Every chunk of `unit` is fully valid, held by the original block group,
/// and not reached by the fill.
fn pluggable_ahead(core: &Backend, zone: u32, unit: u64) -> bool {
    let tl = &core.translation.tl[&zone];
    let per_chunk = core.layout.lbas_per_chunk;
    let filled = core.controller.filled_lbas(zone);
    core.translation.mapping.unit_chunks(unit).all(|c| {
        let (start, end) = (c * per_chunk, (c + 1) * per_chunk);
        start >= filled && end <= tl.original_lbas && tl.count_valid(start, per_chunk) == per_chunk
    })
}

/// Copies `unit` from the original block group to the LogFBG from `start_ns`.
pub(crate) fn plug_unit_ahead(core: &mut Backend, ssd: &mut Ssd, zone: u32, unit: u64, start_ns: Nanos) {
    let per_chunk = core.layout.lbas_per_chunk;
    let original_fbg = core.translation.tl[&zone].original_fbg;
    let chunks: Vec<u64> = core.translation.mapping.unit_chunks(unit).collect();
    let first = chunks[0];
    let (addr, first_page) = core.translation.mapping.unit_target(zone, unit);
    let src = core.translation.mapping.locate_in(zone, original_fbg, first);
    core.erase_before_program(ssd, addr, start_ns);
    let blocks = chunks.len() as u64 * per_chunk;
    let g = &core.config.flash;
    let one_page_units = g.planes_per_die == 1 && g.oneshot_pages == 1;
    let chain_ok = core.copyback_chain(ssd, src) < core.config.znsplus.copyback_chain_max;
    if one_page_units && chain_ok {
        let (src_block, dst) = (core.partition.block(src.block), core.partition.addr(addr));
        ssd.flash_mut()
            .copyback(start_ns, src.die, src_block, src.page, dst, first_page)
            .unwrap_or_else(|e| panic!("zone {zone} unit {unit}: {e}"));
        core.znsplus.copyback_blocks += blocks;
    } else {
        let chunk_bytes = core.chunk_bytes();
        let mut ready_ns = start_ns;
        for &c in &chunks {
            let loc = core.translation.mapping.locate_in(zone, original_fbg, c);
            ready_ns = ready_ns.max(ssd.flash_mut().read(start_ns, loc.die, loc.plane, chunk_bytes));
        }
        // The data came into the controller: it goes back out over the program data path.
        let ready_ns = ssd.hand_program_over(ready_ns);
        ssd.flash_mut()
            .program(ready_ns, core.partition.addr(addr), first_page)
            .unwrap_or_else(|e| panic!("zone {zone} unit {unit}: {e}"));
        core.znsplus.read_program_blocks += blocks;
    }
    core.controller.note_preprogrammed(zone, unit);
    core.znsplus.plugged_blocks_background += blocks;
}
