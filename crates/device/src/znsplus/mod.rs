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

use crate::device::{Device, Source};
use crate::mapping::ChunkLocation;
use zonelab_sim::Nanos;

/// Largest zone capacity TL_open takes (its bitmap is kept per zone).
pub const TL_ZONE_BLOCKS_MAX: u64 = 1 << 24;

/// What the ZNS+ commands did, in blocks (logical blocks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZnsPlusCounters {
    pub compactions: u64,
    pub simple_copies: u64,
    pub tl_opens: u64,
    /// Blocks copied inside the device (compaction, Simple Copy, plugging) by copyback.
    pub copyback_blocks: u64,
    /// Blocks copied inside the device by a read into the controller and a program.
    pub read_program_blocks: u64,
    /// Valid blocks plugged into a LogFBG when the write pointer passed them.
    pub plugged_blocks_foreground: u64,
    /// Valid blocks plugged ahead of the write pointer while their die was idle.
    pub plugged_blocks_background: u64,
}

impl ZnsPlusCounters {
    /// What was counted after `before` was taken.
    pub fn since(self, before: ZnsPlusCounters) -> ZnsPlusCounters {
        ZnsPlusCounters {
            compactions: self.compactions - before.compactions,
            simple_copies: self.simple_copies - before.simple_copies,
            tl_opens: self.tl_opens - before.tl_opens,
            copyback_blocks: self.copyback_blocks - before.copyback_blocks,
            read_program_blocks: self.read_program_blocks - before.read_program_blocks,
            plugged_blocks_foreground: self.plugged_blocks_foreground - before.plugged_blocks_foreground,
            plugged_blocks_background: self.plugged_blocks_background - before.plugged_blocks_background,
        }
    }

    /// Share of internally copied blocks that went by copyback.
    pub fn copyback_ratio(&self) -> f64 {
        let total = self.copyback_blocks + self.read_program_blocks;
        if total == 0 {
            0.0
        } else {
            self.copyback_blocks as f64 / total as f64
        }
    }
}

/// A TL_opened zone: new data goes to the zone's LogFBG (its current block
/// group); blocks at or above the write pointer are read from the original.
#[derive(Debug, Clone)]
pub struct TlZone {
    pub(crate) original_fbg: u32,
    /// LBAs of the zone held by the original block group.
    pub(crate) original_lbas: u64,
    /// Valid bitmap over the zone capacity.
    valid: Vec<u64>,
    pub(crate) opened_ns: Nanos,
    zcap_lbas: u64,
}

impl TlZone {
    pub(crate) fn new(original_fbg: u32, original_lbas: u64, valid: &[u64], opened_ns: Nanos, zcap_lbas: u64) -> Self {
        let words = zcap_lbas.div_ceil(64) as usize;
        assert!(valid.len() <= words, "the caller checked the bitmap length");
        let mut bits = valid.to_vec();
        bits.resize(words, 0);
        Self { original_fbg, original_lbas, valid: bits, opened_ns, zcap_lbas }
    }

    pub(crate) fn is_valid(&self, offset: u64) -> bool {
        offset < self.zcap_lbas && self.valid[(offset / 64) as usize] >> (offset % 64) & 1 == 1
    }

    pub(crate) fn count_valid(&self, offset: u64, lbas: u64) -> u64 {
        (offset..offset + lbas).filter(|&o| self.is_valid(o)).count() as u64
    }

    pub(crate) fn any_valid(&self, offset: u64, lbas: u64) -> bool {
        (offset..offset + lbas).any(|o| self.is_valid(o))
    }

    /// First invalid block at or after `offset`, or the zone capacity. A
    /// word at a time: a zone holds up to 2^24 blocks and a command must not
    /// cost one step per block.
    pub(crate) fn next_invalid(&self, offset: u64) -> u64 {
        let mut o = offset;
        while o < self.zcap_lbas {
            let (word, bit) = ((o / 64) as usize, o % 64);
            // Valid blocks from `o` on within the word (the shift brings in invalid ones).
            let run = u64::from((!(self.valid[word] >> bit)).trailing_zeros()).min(64 - bit);
            if run < 64 - bit {
                return (o + run).min(self.zcap_lbas);
            }
            o += run;
        }
        self.zcap_lbas
    }

    /// One past the last valid block (0 if none), a word at a time.
    pub(crate) fn valid_end(&self) -> u64 {
        let last = self.valid.iter().rposition(|&w| w != 0);
        last.map_or(0, |i| (i as u64 * 64 + 64 - u64::from(self.valid[i].leading_zeros())).min(self.zcap_lbas))
    }
}

impl Device {
    /// Copies the chunk holding `src_lba` (whole and chunk-aligned) into the
    /// zone's next chunk by copyback, if the rule allows it: one-page program
    /// units, a source in flash on the destination's die, and a copyback chain
    /// below the limit. Returns when the copy is programmed.
    pub(crate) fn try_copyback(&mut self, zone: u32, src_lba: u64, at_ns: Nanos) -> Option<Nanos> {
        let per_chunk = self.layout.lbas_per_chunk;
        let io = &self.zone_io[zone as usize];
        assert!(io.filled_lbas.is_multiple_of(per_chunk), "copyback fills a whole chunk");
        let dst_chunk = io.filled_lbas / per_chunk;
        let (loc, ready_ns) = self.copyback_source(zone, dst_chunk, src_lba, at_ns)?;
        let unit = self.mapping.unit_of_chunk(dst_chunk);
        assert_eq!(unit, self.zone_io[zone as usize].flushed_units, "one-page units are programmed as they fill");
        let (addr, first_page) = self.mapping.unit_target(zone, unit);
        self.erase_before_program(addr, at_ns);
        let done_ns = self
            .flash
            .copyback(at_ns.max(ready_ns), loc.die, loc.block, loc.page, addr, first_page)
            .unwrap_or_else(|e| panic!("zone {zone} unit {unit}: {e}"));
        self.op_done_max_ns = self.op_done_max_ns.max(done_ns);
        self.zone_io[zone as usize].preprogrammed.insert(unit);
        self.fill(zone, per_chunk, done_ns);
        self.zone_io[zone as usize].push_gate(done_ns, at_ns);
        self.znsplus.copyback_blocks += per_chunk;
        Some(done_ns)
    }

    /// Where the chunk at `src_lba` would be copied back from into chunk
    /// `dst_chunk` of `zone`, if the copyback rule allows it.
    pub(crate) fn copyback_source(
        &self,
        zone: u32,
        dst_chunk: u64,
        src_lba: u64,
        at_ns: Nanos,
    ) -> Option<(ChunkLocation, Nanos)> {
        let chain_max = self.config.znsplus.copyback_chain_max;
        let g = self.flash.geometry();
        if chain_max == 0 || g.planes_per_die != 1 || g.oneshot_pages != 1 {
            return None;
        }
        assert!(src_lba.is_multiple_of(self.layout.lbas_per_chunk), "copyback copies whole chunks");
        let Source::Flash { loc, ready_ns } = self.source_of(src_lba, at_ns) else {
            return None;
        };
        let (addr, _) = self.mapping.unit_target(zone, self.mapping.unit_of_chunk(dst_chunk));
        let chained = self.flash.copyback_chain(loc.die, loc.plane, loc.block, loc.page);
        (addr.die == loc.die && chained < chain_max).then_some((loc, ready_ns))
    }

    /// Takes `lbas` copied blocks, in the controller from `ready_ns` on, into
    /// the zone at its fill point; reads wait until they are in.
    pub(crate) fn take_in_copy(&mut self, zone: u32, lbas: u64, ready_ns: Nanos, at_ns: Nanos) -> Nanos {
        let t = self.take_in(zone, lbas, ready_ns, false);
        self.zone_io[zone as usize].push_gate(ready_ns, at_ns);
        t
    }

    /// Where a read of `lba` would find its data in flash now: `None` when
    /// it is in the controller or reads as zeros. During threaded logging
    /// this is the LogFBG below the write pointer and the original above it.
    pub fn flash_location(&self, lba: u64) -> Option<ChunkLocation> {
        match self.source_of(lba, self.last_submit_ns) {
            Source::Flash { loc, .. } => Some(loc),
            Source::Zeros | Source::Controller { .. } => None,
        }
    }

    /// Bytes of one chunk (a flash page).
    pub(crate) fn chunk_bytes(&self) -> u32 {
        u32::try_from(self.layout.lbas_per_chunk * self.layout.lba_bytes).expect("a chunk is one flash page")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time scans agree with block-by-block ones.
    #[test]
    fn valid_scans_match_block_by_block() {
        let mut rng = zonelab_sim::SimRng::new(5);
        for zcap in [1, 63, 64, 65, 200, 1000] {
            for density in [0.0, 0.1, 0.5, 0.9, 1.0] {
                let mut valid = vec![0u64; (zcap as usize).div_ceil(64)];
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
