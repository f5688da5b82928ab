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
}
