//! ZNS+ threaded logging's translation state: a TL_opened zone's LogFBG and
//! the valid bitmap that says which blocks stay in the original block group.

use zonelab_sim::Nanos;

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
    /// When the LBA-ordered plugs issued so far are in: a write at the write
    /// pointer they moved cannot be handled before (seed 002 §3.2.2).
    pub(crate) wp_ready_ns: Nanos,
    zcap_lbas: u64,
}

impl TlZone {
    pub(crate) fn new(original_fbg: u32, original_lbas: u64, valid: &[u64], opened_ns: Nanos, zcap_lbas: u64) -> Self {
        let words = usize::try_from(zcap_lbas.div_ceil(64)).expect("a TL zone holds at most TL_ZONE_BLOCKS_MAX blocks");
        assert!(valid.len() <= words, "the caller checked the bitmap length");
        let mut bits = valid.to_vec();
        bits.resize(words, 0);
        Self { original_fbg, original_lbas, valid: bits, opened_ns, wp_ready_ns: opened_ns, zcap_lbas }
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
