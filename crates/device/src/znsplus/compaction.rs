//! zone_compaction (ZNS+ IZC, seed 002 §3.2.1) and NVMe Simple Copy.
//!
//! Both copy block `src[i]` to LBA `dst[i]` inside the device. Destination
//! rules (checked in this order, after the list checks):
//! 1. lists of equal length, 1..=`copy_blocks_max` blocks -> invalid_field;
//!    an LBA beyond the namespace -> lba_out_of_range; a source in an offline
//!    zone -> zone_is_offline.
//! 2. every destination in one zone, else zone_boundary_error; a conventional
//!    zone -> invalid_zone_operation; then the write state checks (full, read
//!    only, offline).
//! 3. destinations strictly increasing and at or past the write pointer, and
//!    in a TL_opened zone only invalid blocks -> else zone_invalid_write. Simple
//!    Copy must start at the write pointer of a normal zone (it writes like a
//!    Write). Past the zone capacity -> zone_boundary_error.
//! 4. resources as for a Write (the destination zone opens implicitly).
//!
//! Blocks the destinations skip read as zeros in a normal zone; in a
//! TL_opened zone valid ones are plugged. Sources are read as they are when
//! the command is accepted. The completion comes when every copied block is
//! programmed or, for the last partial unit, in the write buffer.

use crate::backend::{Accepted, Backend};
use crate::front::command::{CmdResult, SourceRange};
use crate::ssd::Ssd;
use crate::status::Status;
use crate::zone::{ZoneState, ZoneType};
use zonelab_sim::Nanos;

pub(crate) fn zone_compaction(
    core: &mut Backend,
    ssd: &mut Ssd,
    ready_ns: Nanos,
    src: &[u64],
    dst: &[u64],
) -> (Status, Nanos, CmdResult) {
    match accept_copy(core, src, dst, false) {
        Err(status) => core.fail(ssd, ready_ns, status),
        Ok(accepted) => {
            core.znsplus.compactions += 1;
            let fw_end = ssd.reserve_firmware(ready_ns, accepted.firmware_ns);
            (Status::Success, run_copy(core, ssd, fw_end, src, dst), accepted.result)
        }
    }
}

pub(crate) fn simple_copy(
    core: &mut Backend,
    ssd: &mut Ssd,
    ready_ns: Nanos,
    ranges: &[SourceRange],
    sdlba: u64,
) -> (Status, Nanos, CmdResult) {
    let z = &core.config.znsplus;
    let blocks: u64 = ranges.iter().map(|r| u64::from(r.nlb)).sum();
    if ranges.is_empty()
        || ranges.len() > z.copy_ranges_max as usize
        || ranges.iter().any(|r| r.nlb == 0)
        || blocks > u64::from(z.copy_blocks_max)
    {
        return core.fail(ssd, ready_ns, Status::InvalidField);
    }
    let nsze = core.nsze();
    let in_range = |slba: u64, n: u64| slba.checked_add(n).is_some_and(|end| end <= nsze);
    if !ranges.iter().all(|r| in_range(r.slba, u64::from(r.nlb))) || !in_range(sdlba, blocks) {
        return core.fail(ssd, ready_ns, Status::LbaOutOfRange);
    }
    let src: Vec<u64> = ranges.iter().flat_map(|r| r.slba..r.slba + u64::from(r.nlb)).collect();
    let dst: Vec<u64> = (sdlba..sdlba + blocks).collect();
    match accept_copy(core, &src, &dst, true) {
        Err(status) => core.fail(ssd, ready_ns, status),
        Ok(accepted) => {
            core.znsplus.simple_copies += 1;
            let fw_end = ssd.reserve_firmware(ready_ns, accepted.firmware_ns);
            (Status::Success, run_copy(core, ssd, fw_end, &src, &dst), accepted.result)
        }
    }
}

/// The checks of the module comment; on success the destination zone is
/// admitted for writing.
fn accept_copy(core: &mut Backend, src: &[u64], dst: &[u64], simple: bool) -> Result<Accepted, Status> {
    let z = &core.config.znsplus;
    if src.len() != dst.len() || src.is_empty() || src.len() > z.copy_blocks_max as usize {
        return Err(Status::InvalidField);
    }
    let nsze = core.nsze();
    if src.iter().chain(dst).any(|&lba| lba >= nsze) {
        return Err(Status::LbaOutOfRange);
    }
    if src.iter().any(|&lba| core.zones.state(core.zones.zone_of(lba)) == ZoneState::Offline) {
        return Err(Status::ZoneIsOffline);
    }
    let zone = core.zones.zone_of(dst[0]);
    if dst.iter().any(|&lba| core.zones.zone_of(lba) != zone) {
        return Err(Status::ZoneBoundaryError);
    }
    if core.zones.zone_type(zone) == ZoneType::Conventional {
        return Err(Status::InvalidZoneOperation);
    }
    core.zones.check_writable(zone)?;
    let (zslba, wp) = (core.zones.zslba(zone), core.zones.wp(zone));
    let increasing = dst.windows(2).all(|w| w[0] < w[1]);
    let invalid_write = match core.translation.tl.get(&zone) {
        Some(tl) => dst.iter().any(|&lba| tl.is_valid(lba - zslba)),
        None => simple && dst[0] != wp,
    };
    if !increasing || dst[0] < wp || invalid_write {
        return Err(Status::ZoneInvalidWrite);
    }
    if dst[dst.len() - 1] >= zslba + core.layout.zcap_lbas {
        return Err(Status::ZoneBoundaryError);
    }
    let admission = core.zones.admit_write(zone)?;
    core.note_auto_close(admission.auto_closed);
    let implicit_ns = if admission.implicitly_opened { core.config.controller.implicit_open_write_ns } else { 0 };
    let z = &core.config.znsplus;
    let firmware_ns = z.copy_ns + z.copy_per_block_ns * src.len() as u64 + implicit_ns;
    Ok(Accepted { firmware_ns, result: CmdResult::None })
}

/// Runs an accepted copy from `at_ns`: destination chunk by destination
/// chunk, a copyback where the rule allows, else through the controller.
fn run_copy(core: &mut Backend, ssd: &mut Ssd, at_ns: Nanos, src: &[u64], dst: &[u64]) -> Nanos {
    let zone = core.zones.zone_of(dst[0]);
    // Into a TL_opened zone, after the LBA-ordered plugs before the copy.
    let at_ns = super::threaded_logging::wp_ready_ns(core, zone, at_ns);
    let zslba = core.zones.zslba(zone);
    let per_chunk = core.layout.lbas_per_chunk;
    // Data mode: the sources as they are now, before the copy moves anything.
    let snapshot: Vec<Vec<u8>> =
        core.data.as_ref().map_or_else(Vec::new, |d| src.iter().map(|&l| d.block_copy(l)).collect());
    // Destination chunks: (first index, end index) into src / dst.
    let mut groups: Vec<(usize, usize)> =
        Vec::with_capacity(dst.len().div_ceil(usize::try_from(per_chunk).expect("a chunk's LBAs, at most page_bytes")));
    let mut i = 0;
    while i < dst.len() {
        let chunk = (dst[i] - zslba) / per_chunk;
        let j = i + dst[i..].iter().take_while(|&&d| (d - zslba) / per_chunk == chunk).count();
        groups.push((i, j));
        i = j;
    }
    // A window wider than the address space takes every group at once.
    let window =
        usize::try_from((core.layout.zone_buffer_bytes / u64::from(core.chunk_bytes())).max(1)).unwrap_or(usize::MAX);
    let mut done_ns = at_ns;
    for part in groups.chunks(window) {
        let fetched = prefetch_sources(core, ssd, zone, src, dst, part, at_ns);
        for &(i, j) in part {
            done_ns = done_ns.max(super::threaded_logging::fill_gap(core, ssd, zone, dst[i] - zslba, at_ns));
            let blocks = snapshot.get(i..j);
            match if whole_chunk(src, i, j, per_chunk) {
                super::try_copyback(core, ssd, zone, src[i], at_ns).map(|(_, done)| done)
            } else {
                None
            } {
                Some(t) => {
                    done_ns = done_ns.max(t);
                    for (k, &d) in dst[i..j].iter().enumerate() {
                        store_copy(core, d, blocks.map(|b| &b[k][..]));
                    }
                }
                None => {
                    let t = copy_through_controller(core, ssd, &src[i..j], &dst[i..j], blocks, &fetched, at_ns);
                    done_ns = done_ns.max(t);
                }
            }
        }
    }
    let wp = core.zones.wp(zone);
    core.zones.advance_wp(zone, dst[dst.len() - 1] + 1 - wp);
    super::threaded_logging::after_wp_moved(core, ssd, zone, at_ns);
    done_ns.max(core.op_done_max_ns)
}

/// Whether destination chunk `src[i..j]` copies one whole source chunk in order.
fn whole_chunk(src: &[u64], i: usize, j: usize, per_chunk: u64) -> bool {
    (j - i) as u64 == per_chunk
        && src[i].is_multiple_of(per_chunk)
        && src[i..j].iter().enumerate().all(|(k, &s)| s == src[i] + k as u64)
}

/// Reads into the controller, up front, every source chunk of the
/// destination chunks `part` that cannot go by copyback, so the reads of
/// a buffer's worth of copies run in parallel instead of each waiting
/// behind the program before it. Returns (source chunk, when it is in).
/// The copyback test here is the one `try_copyback` makes later; a chunk
/// it turns down after all is read then.
fn prefetch_sources(
    core: &mut Backend,
    ssd: &mut Ssd,
    zone: u32,
    src: &[u64],
    dst: &[u64],
    part: &[(usize, usize)],
    at_ns: Nanos,
) -> Vec<(u64, Nanos)> {
    let per_chunk = core.layout.lbas_per_chunk;
    let zslba = core.zones.zslba(zone);
    let mut fetched: Vec<(u64, Nanos)> = Vec::with_capacity(part.len() * 2);
    for &(i, j) in part {
        let dst_chunk = (dst[i] - zslba) / per_chunk;
        if whole_chunk(src, i, j, per_chunk)
            && super::copyback_source(core, ssd, zone, dst_chunk, src[i], at_ns).is_some()
        {
            continue;
        }
        for &s in &src[i..j] {
            if !fetched.iter().any(|&(c, _)| c == s / per_chunk) {
                fetched.push((s / per_chunk, core.fetch_chunk(ssd, s, at_ns)));
            }
        }
    }
    fetched
}

/// Copies the blocks of one destination chunk through the controller:
/// each distinct source chunk is read once (or was `fetched` ahead);
/// skipped blocks between destinations are zero-filled or plugged.
fn copy_through_controller(
    core: &mut Backend,
    ssd: &mut Ssd,
    src: &[u64],
    dst: &[u64],
    blocks: Option<&[Vec<u8>]>,
    fetched: &[(u64, Nanos)],
    at_ns: Nanos,
) -> Nanos {
    let zone = core.zones.zone_of(dst[0]);
    let per_chunk = core.layout.lbas_per_chunk;
    let zslba = core.zones.zslba(zone);
    let mut reads: Vec<(u64, Nanos)> = Vec::with_capacity(src.len());
    for &s in src {
        let c = s / per_chunk;
        if !reads.iter().any(|&(r, _)| r == c) {
            let ready = match fetched.iter().find(|&&(f, _)| f == c) {
                Some(&(_, t)) => t,
                None => core.fetch_chunk(ssd, s, at_ns),
            };
            reads.push((c, ready));
        }
    }
    let ready_ns = reads.iter().map(|&(_, t)| t).fold(at_ns, Nanos::max);
    let mut done_ns = ready_ns;
    for (k, &d) in dst.iter().enumerate() {
        super::threaded_logging::fill_gap(core, ssd, zone, d - zslba, at_ns);
        done_ns = done_ns.max(super::take_in_copy(core, ssd, zone, 1, ready_ns, at_ns));
        store_copy(core, d, blocks.map(|b| &b[k][..]));
    }
    core.znsplus.read_program_blocks += dst.len() as u64;
    done_ns
}

/// Data mode: block `lba` now holds `bytes`.
fn store_copy(core: &mut Backend, lba: u64, bytes: Option<&[u8]>) {
    if let (Some(d), Some(b)) = (core.data.as_mut(), bytes) {
        d.write(lba, 1, crate::front::command::Payload::Bytes(b));
    }
}
