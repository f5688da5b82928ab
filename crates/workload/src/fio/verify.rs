//! fio-style verification in data mode: every block written carries a header
//! (magic, zone generation, LBA, checksum of the rest of the block) so that a
//! read-back finds misplaced, stale and corrupted blocks, as fio's
//! `verify=crc32c|md5` does.

use super::job::Verify;
use md5::{Digest, Md5};

const MAGIC: &[u8; 4] = b"zlv1";
const HEADER_BYTES: usize = 32;
const CHECKSUM_AT: usize = 16;

/// Fills `block` with the content of `lba` at `generation`.
pub fn fill_block(block: &mut [u8], kind: Verify, seed: u64, lba: u64, generation: u32) {
    assert!(block.len() > HEADER_BYTES, "blocks are larger than the verify header");
    block[..4].copy_from_slice(MAGIC);
    block[4..8].copy_from_slice(&generation.to_le_bytes());
    block[8..16].copy_from_slice(&lba.to_le_bytes());
    let mut state = seed ^ lba.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ u64::from(generation) << 40;
    for chunk in block[HEADER_BYTES..].chunks_mut(8) {
        state = splitmix(state);
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
    let sum = checksum(kind, &block[HEADER_BYTES..]);
    block[CHECKSUM_AT..CHECKSUM_AT + sum.len()].copy_from_slice(&sum);
    block[CHECKSUM_AT + sum.len()..HEADER_BYTES].fill(0);
}

/// What a read-back found wrong with a block, as fio's verify reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The block has no verify header: never written by the job, or overwritten.
    #[error("bad magic header at lba {lba}")]
    BadMagic {
        /// LBA read.
        lba: u64,
    },
    /// The block carries another LBA's data: a write landed in the wrong place.
    #[error("block at lba {lba} holds the data of lba {found_lba}")]
    Misplaced {
        /// LBA read.
        lba: u64,
        /// LBA the header names.
        found_lba: u64,
    },
    /// The block is from an earlier generation of its zone (written before a reset).
    #[error("stale block at lba {lba}: generation {found}, expected {expected}")]
    Stale {
        /// LBA read.
        lba: u64,
        /// Generation in the header.
        found: u32,
        /// Generation of the latest write to the LBA.
        expected: u32,
    },
    /// The payload does not match the header's checksum: corrupted data.
    #[error("bad {} at lba {lba}", kind_name(*kind))]
    BadChecksum {
        /// The checksum kind (crc32c or md5).
        kind: Verify,
        /// LBA read.
        lba: u64,
    },
}

/// Checks a block read back from `lba`; `Err` says what fio would complain about.
pub fn check_block(block: &[u8], kind: Verify, lba: u64, generation: u32) -> Result<(), VerifyError> {
    if block.len() <= HEADER_BYTES || &block[..4] != MAGIC {
        return Err(VerifyError::BadMagic { lba });
    }
    let found_lba = u64::from_le_bytes(block[8..16].try_into().expect("8 bytes"));
    if found_lba != lba {
        return Err(VerifyError::Misplaced { lba, found_lba });
    }
    let found_generation = u32::from_le_bytes(block[4..8].try_into().expect("4 bytes"));
    if found_generation != generation {
        return Err(VerifyError::Stale { lba, found: found_generation, expected: generation });
    }
    let sum = checksum(kind, &block[HEADER_BYTES..]);
    if block[CHECKSUM_AT..CHECKSUM_AT + sum.len()] != sum[..] {
        return Err(VerifyError::BadChecksum { kind, lba });
    }
    Ok(())
}

impl VerifyError {
    /// The LBA whose block is bad.
    pub fn lba(&self) -> u64 {
        match *self {
            VerifyError::BadMagic { lba }
            | VerifyError::Misplaced { lba, .. }
            | VerifyError::Stale { lba, .. }
            | VerifyError::BadChecksum { lba, .. } => lba,
        }
    }

    /// A bad header (fio's `verify_header`): fio stops checking the read there.
    fn is_header(&self) -> bool {
        !matches!(self, VerifyError::BadChecksum { .. })
    }
}

/// Checks the `lba_bytes` blocks of a read from `slba` as fio's `verify_io_u`
/// does: it stops at a bad header; at a bad checksum it stops only when
/// `fatal` (`verify_fatal`), else it goes on and reports every bad block.
/// `generation` gives each LBA's expected zone generation.
pub fn check_blocks(
    data: &[u8],
    lba_bytes: usize,
    kind: Verify,
    slba: u64,
    generation: impl Fn(u64) -> u32,
    fatal: bool,
) -> Vec<VerifyError> {
    let mut failures = Vec::new();
    for (i, block) in data.chunks(lba_bytes).enumerate() {
        let lba = slba + i as u64;
        if let Err(error) = check_block(block, kind, lba, generation(lba)) {
            failures.push(error);
            if fatal || error.is_header() {
                break;
            }
        }
    }
    failures
}

fn kind_name(kind: Verify) -> &'static str {
    match kind {
        Verify::Crc32c => "crc32c",
        Verify::Md5 => "md5",
        Verify::None => "none",
    }
}

fn checksum(kind: Verify, bytes: &[u8]) -> Vec<u8> {
    match kind {
        Verify::Crc32c => crc32c::crc32c(bytes).to_le_bytes().to_vec(),
        Verify::Md5 => Md5::digest(bytes).to_vec(),
        Verify::None => Vec::new(),
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_block_verifies_and_any_damage_is_found() {
        for kind in [Verify::Crc32c, Verify::Md5] {
            let mut block = vec![0u8; 4096];
            fill_block(&mut block, kind, 7, 1234, 2);
            assert_eq!(check_block(&block, kind, 1234, 2), Ok(()));
            assert!(check_block(&block, kind, 1235, 2).unwrap_err().to_string().contains("holds the data of lba 1234"));
            assert!(check_block(&block, kind, 1234, 3).unwrap_err().to_string().contains("stale"));
            block[100] ^= 1;
            assert!(check_block(&block, kind, 1234, 2).unwrap_err().to_string().contains("bad"));
            assert!(check_block(&[0u8; 4096], kind, 1, 0).unwrap_err().to_string().contains("magic"));
        }
    }

    /// Four blocks from LBA 10: `damage` flips a payload byte (a bad checksum)
    /// or clears the magic (a bad header) of the blocks it names.
    fn read_with(damage: &[(usize, bool)]) -> Vec<u8> {
        let mut data = vec![0u8; 4 * 512];
        for (i, block) in data.chunks_mut(512).enumerate() {
            fill_block(block, Verify::Crc32c, 3, 10 + i as u64, 0);
        }
        for &(i, header) in damage {
            let at = if header { 0 } else { 100 };
            data[i * 512 + at] ^= 0xff;
        }
        data
    }

    #[test]
    fn verify_fatal_stops_at_the_first_bad_block_and_a_bad_header_always_stops() {
        let check = |data: &[u8], fatal| check_blocks(data, 512, Verify::Crc32c, 10, |_| 0, fatal);
        assert_eq!(check(&read_with(&[]), false), []);
        let sums = read_with(&[(1, false), (3, false)]);
        let bad = |lba| VerifyError::BadChecksum { kind: Verify::Crc32c, lba };
        // fio's verify_fatal=0 checks the whole read and reports each bad block.
        assert_eq!(check(&sums, false), [bad(11), bad(13)]);
        assert_eq!(check(&sums, true), [bad(11)]);
        // A bad header ends the check whatever verify_fatal says.
        let header = read_with(&[(0, true), (2, false)]);
        assert_eq!(check(&header, false), [VerifyError::BadMagic { lba: 10 }]);
        let after = read_with(&[(1, false), (2, true), (3, false)]);
        assert_eq!(check(&after, false), [bad(11), VerifyError::BadMagic { lba: 12 }]);
    }
}
