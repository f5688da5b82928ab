//! ZNS+ (seed 002, OSDI'21): the device does the copies of a log-structured
//! file system's segment compaction and threaded logging.
//!
//! - [`compaction`]: `zone_compaction` (block `src[i]` to LBA `dst[i]`,
//!   destinations sparse) and NVMe Simple Copy (one contiguous destination).
//! - [`threaded_logging`]: `TL_open`, the LogFBG and internal plugging, LBA- or
//!   PPA-ordered.
//! - [`identify_mapping`]: where a chunk's chip is in its address.
//!
//! Every internal copy moves one chunk (flash page) at a time: by copyback
//! when the whole chunk is copied, source and destination sit on the same
//! die, a program unit is one page, and the source's copyback chain is below
//! `znsplus.copyback_chain_max`; otherwise read into the controller and
//! programmed from there (two channel transfers, no host link). Copies are
//! reserved on the flash timelines when the command is accepted, so host
//! commands submitted later queue behind them only on the dies and channels
//! they share.

pub mod compaction;
pub mod identify_mapping;
pub mod threaded_logging;

pub use crate::counters::ZnsPlusCounters;
pub use crate::translation::log_fbg::TlZone;

use crate::backend::{Backend, Source};
use crate::ssd::Ssd;
use crate::translation::mapping::ChunkLocation;
use zonelab_sim::Nanos;

/// Largest zone capacity TL_open takes (its bitmap is kept per zone).
pub const TL_ZONE_BLOCKS_MAX: u64 = 1 << 24;

/// Copies the chunk holding `src_lba` (whole and chunk-aligned) into the
/// zone's next chunk by copyback, if the rule allows it: one-page program
/// units, a source in flash on the destination's die, and a copyback chain
/// below the limit. Returns when the source is sensed into the die's
/// page register (the data is in, as a read into the controller would
/// be) and when the copy is programmed.
pub(crate) fn try_copyback(
    core: &mut Backend,
    ssd: &mut Ssd,
    zone: u32,
    src_lba: u64,
    at_ns: Nanos,
) -> Option<(Nanos, Nanos)> {
    let per_chunk = core.layout.lbas_per_chunk;
    let filled_lbas = core.controller.filled_lbas(zone);
    assert!(filled_lbas.is_multiple_of(per_chunk), "copyback fills a whole chunk");
    let dst_chunk = filled_lbas / per_chunk;
    let (loc, ready_ns) = copyback_source(core, ssd, zone, dst_chunk, src_lba, at_ns)?;
    let unit = core.translation.mapping.unit_of_chunk(dst_chunk);
    if unit < core.controller.flushed_units(zone) {
        // Issued before a power cut and lost with it: no copyback into it.
        return None;
    }
    assert_eq!(unit, core.controller.flushed_units(zone), "one-page units are programmed as they fill");
    let (addr, first_page) = core.translation.mapping.unit_target(zone, unit);
    core.erase_before_program(ssd, addr, at_ns);
    let zonelab_flash::CopybackDone { sensed_ns, done_ns } = ssd
        .flash_mut()
        .copyback(
            at_ns.max(ready_ns),
            loc.die,
            core.partition.block(loc.block),
            loc.page,
            core.partition.addr(addr),
            first_page,
        )
        .unwrap_or_else(|e| panic!("zone {zone} unit {unit}: {e}"));
    core.op_done_max_ns = core.op_done_max_ns.max(done_ns);
    core.controller.note_preprogrammed(zone, unit);
    core.cache_fill(zone, per_chunk, core.last_submit_ns);
    core.fill(ssd, zone, per_chunk, done_ns);
    core.controller.push_gate(zone, done_ns, at_ns);
    core.znsplus.copyback_blocks += per_chunk;
    Some((sensed_ns, done_ns))
}

/// Where the chunk at `src_lba` would be copied back from into chunk
/// `dst_chunk` of `zone`, if the copyback rule allows it.
pub(crate) fn copyback_source(
    core: &Backend,
    ssd: &Ssd,
    zone: u32,
    dst_chunk: u64,
    src_lba: u64,
    at_ns: Nanos,
) -> Option<(ChunkLocation, Nanos)> {
    let chain_max = core.config.znsplus.copyback_chain_max;
    let g = &core.config.flash;
    if chain_max == 0 || g.planes_per_die != 1 || g.oneshot_pages != 1 {
        return None;
    }
    assert!(src_lba.is_multiple_of(core.layout.lbas_per_chunk), "copyback copies whole chunks");
    let Source::Flash { loc, ready_ns } = core.source_of(src_lba, at_ns) else {
        return None;
    };
    let (addr, _) = core.translation.mapping.unit_target(zone, core.translation.mapping.unit_of_chunk(dst_chunk));
    let chained = core.copyback_chain(ssd, loc);
    (addr.die == loc.die && chained < chain_max).then_some((loc, ready_ns))
}

/// Takes `lbas` copied blocks, in the controller from `ready_ns` on, into
/// the zone at its fill point; reads wait until they are in.
pub(crate) fn take_in_copy(
    core: &mut Backend,
    ssd: &mut Ssd,
    zone: u32,
    lbas: u64,
    ready_ns: Nanos,
    at_ns: Nanos,
) -> Nanos {
    let t = core.take_in(ssd, zone, lbas, ready_ns, false);
    core.controller.push_gate(zone, ready_ns, at_ns);
    t
}

/// Where a read of `lba` would find its data in flash now: `None` when
/// it is in the controller or reads as zeros. During threaded logging
/// this is the LogFBG below the write pointer and the original above it.
pub(crate) fn flash_location(core: &Backend, lba: u64) -> Option<ChunkLocation> {
    match core.source_of(lba, core.last_submit_ns) {
        Source::Flash { loc, .. } => Some(loc),
        Source::Zeros | Source::Controller { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time scans agree with block-by-block ones.
    #[test]
    fn valid_scans_match_block_by_block() {
        let mut rng = zonelab_sim::SimRng::new(5);
        for zcap in [1u64, 63, 64, 65, 200, 1000] {
            for density in [0.0, 0.1, 0.5, 0.9, 1.0] {
                let mut valid = vec![0u64; usize::try_from(zcap.div_ceil(64)).expect("a small zone")];
                for o in 0..zcap {
                    if rng.chance(density) {
                        valid[(o / 64) as usize] |= 1 << (o % 64);
                    }
                }
                let tl = TlZone::new(0, 0, &valid, 0, zcap);
                let end = (0..zcap).rev().find(|&o| tl.is_valid(o)).map_or(0, |o| o + 1);
                assert_eq!(tl.valid_end(), end, "{zcap} {density}");
                for offset in 0..=zcap {
                    let next = (offset..zcap).find(|&o| !tl.is_valid(o)).unwrap_or(zcap);
                    assert_eq!(tl.next_invalid(offset), next, "{zcap} {density} {offset}");
                }
            }
        }
    }
}
