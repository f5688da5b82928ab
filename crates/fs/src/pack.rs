//! The checkpoint's on-disk format: the pack (head, location table, foot)
//! that says where the NAT and SIT blocks are, the tables' block magic, and
//! the check that a full checkpoint fits one checkpoint zone.

use crate::layout::*;

/// Node addresses per NAT block: 4-byte entries after an 8-byte header
/// (magic and block index).
pub const NAT_ENTRIES_PER_BLOCK: u32 = 1000;
pub(crate) const MAGIC_NAT: u32 = 0x4e41_5442;
pub(crate) const MAGIC_SIT: u32 = 0x5349_5442;
const MAGIC_CP_HEAD: u32 = 0x4350_4844;
const MAGIC_CP_FOOT: u32 = 0x4350_4654;
/// Bytes before the location table in a checkpoint head.
pub(crate) const CP_HEAD_BYTES: usize = 64;

/// Where the last checkpoint put things.
#[derive(Debug, Clone, Default)]
pub struct CpState {
    /// Version of the last checkpoint; node blocks written after it carry it.
    pub version: u64,
    /// Checkpoint zone in use (0 or 1) and its next block.
    pub meta_zone: u32,
    /// Next block to write in that zone.
    pub meta_next: u32,
    /// Address of each NAT and SIT block.
    pub nat_loc: Vec<u32>,
    /// Address of each SIT block.
    pub sit_loc: Vec<u32>,
}

/// What a checkpoint pack says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpPack {
    /// Version of this checkpoint.
    pub version: u64,
    /// Node ids the NAT covers (its length at the checkpoint).
    pub nat_entries: u32,
    /// Next address of each log.
    pub cursors: [u32; 6],
    /// Address of each NAT block.
    pub nat_loc: Vec<u32>,
    /// Address of each SIT block.
    pub sit_loc: Vec<u32>,
}

/// Checks up front that a full checkpoint fits one checkpoint zone: every
/// SIT block, the NAT of one node per main-area block (every node needs a
/// block of its own, so the NAT never grows past that) and the pack. A
/// larger file system would fail at its first checkpoint switch, possibly
/// hours into a run; its zone count is then what must shrink.
pub(crate) fn check_checkpoint_fits(zone_blocks: u32, segs: u32) -> Result<(), CheckpointFitError> {
    let sit_entry_bytes = 4 + (zone_blocks as usize).div_ceil(64) * 8;
    let sit_per_block = (BLOCK_BYTES - 8) / sit_entry_bytes;
    if sit_per_block == 0 {
        return Err(CheckpointFitError::ZoneTooLarge { zone_blocks });
    }
    let need = |segs: u32| {
        let nat_blocks = (segs as usize * zone_blocks as usize + 2).div_ceil(NAT_ENTRIES_PER_BLOCK as usize);
        let sit_blocks = (segs as usize).div_ceil(sit_per_block);
        let pack_blocks = 2 + ((nat_blocks + sit_blocks) * 4 + CP_HEAD_BYTES).div_ceil(BLOCK_BYTES) - 1;
        nat_blocks + sit_blocks + pack_blocks
    };
    if need(segs) <= zone_blocks as usize {
        return Ok(());
    }
    // `need` grows with `segs`: the largest that fits, for the message.
    let (mut low, mut high) = (0, segs);
    while low + 1 < high {
        let mid = low + (high - low) / 2;
        if need(mid) <= zone_blocks as usize {
            low = mid;
        } else {
            high = mid;
        }
    }
    Err(CheckpointFitError::TooManySegments {
        segs,
        zone_blocks,
        need_blocks: need(segs),
        fit_segs: low,
        fit_zones: low + META_ZONES,
    })
}

/// A zone geometry whose full checkpoint cannot fit one checkpoint zone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CheckpointFitError {
    /// One segment's SIT entry (its valid bitmap) outgrows a block.
    #[error("a zone of {zone_blocks} blocks is too large: its SIT entry must fit one 4 KiB block")]
    ZoneTooLarge { zone_blocks: u32 },
    /// NAT, SIT and pack outgrow one zone; `fit_segs` is the most that fit.
    #[error(
        "{segs} segments of {zone_blocks} blocks are too many: a full checkpoint ({need_blocks} blocks of NAT, SIT \
         and pack) must fit one zone; at most {fit_segs} segments ({fit_zones} zones) fit"
    )]
    TooManySegments { segs: u32, zone_blocks: u32, need_blocks: usize, fit_segs: u32, fit_zones: u32 },
}

pub(crate) fn put_u32s(buf: &mut [u8], words: &[u32]) {
    for (i, w) in words.iter().enumerate() {
        buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
}

/// Head (with the start of the location table), more table, foot.
pub(crate) fn encode_pack(pack: &CpPack, blocks: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; blocks * BLOCK_BYTES];
    let mut head = vec![MAGIC_CP_HEAD, pack.version as u32, (pack.version >> 32) as u32, pack.nat_entries];
    head.extend([pack.nat_loc.len() as u32, pack.sit_loc.len() as u32]);
    head.extend(pack.cursors);
    head.resize(CP_HEAD_BYTES / 4, 0);
    head.extend(pack.nat_loc.iter().chain(&pack.sit_loc));
    let table_end = (blocks - 1) * BLOCK_BYTES;
    put_u32s(&mut bytes[..table_end], &head);
    put_u32s(&mut bytes[table_end..], &[MAGIC_CP_FOOT, pack.version as u32, (pack.version >> 32) as u32]);
    bytes
}

/// The pack starting at block `at` of `zone_bytes`, if whole.
pub(crate) fn decode_pack(zone_bytes: &[u8], at: usize) -> Option<(CpPack, usize)> {
    let block = |i: usize| zone_bytes.get(i * BLOCK_BYTES..(i + 1) * BLOCK_BYTES);
    let mut r = Reader::new(block(at)?);
    (r.u32()? == MAGIC_CP_HEAD).then_some(())?;
    let version = u64::from(r.u32()?) | u64::from(r.u32()?) << 32;
    let nat_entries = r.u32()?;
    let (n_nat, n_sit) = (r.u32()? as usize, r.u32()? as usize);
    let mut cursors = [0; 6];
    for c in &mut cursors {
        *c = r.u32()?;
    }
    let blocks = 2 + ((n_nat + n_sit) * 4 + CP_HEAD_BYTES).div_ceil(BLOCK_BYTES) - 1;
    let table = zone_bytes.get(at * BLOCK_BYTES..(at + blocks - 1) * BLOCK_BYTES)?;
    let mut r = Reader::new(table);
    r.bytes(CP_HEAD_BYTES)?;
    let loc: Vec<u32> = (0..n_nat + n_sit).map(|_| r.u32()).collect::<Option<_>>()?;
    let mut f = Reader::new(block(at + blocks - 1)?);
    let foot_version = (f.u32()? == MAGIC_CP_FOOT)
        .then_some(())
        .and_then(|_| Some(u64::from(f.u32()?) | u64::from(f.u32()?) << 32))?;
    (foot_version == version).then_some(())?;
    let pack = CpPack { version, nat_entries, cursors, nat_loc: loc[..n_nat].to_vec(), sit_loc: loc[n_nat..].to_vec() };
    Some((pack, blocks))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zone over 32,640 blocks has a SIT entry larger than a block: mkfs
    /// divided by zero.
    #[test]
    fn zones_whose_sit_entry_outgrows_a_block_are_refused() {
        check_checkpoint_fits(32_640, 10).expect("one entry per block");
        let e = check_checkpoint_fits(32_641, 10).unwrap_err().to_string();
        assert!(e.contains("its SIT entry must fit one 4 KiB block"), "{e}");
    }
}
