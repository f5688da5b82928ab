//! The on-disk format of a device image (format 2), as bytes.
//!
//! FILE.zones: a 64-byte header, one 16-byte record per zone, then (from the
//! next 4 KiB boundary) two 4-byte checksums per LBA of the namespace. FILE:
//! the data, each LBA at `lba * lba_bytes`. Every integer is little endian.
//!
//! Header: magic `ZLIMAGE\0`, version (u32, 2), checksum kind (u32, 1: CRC32C
//! per LBA), LBA bytes (u64), zones (u32), conventional zones (u32), zone
//! LBAs (u64), zone capacity in LBAs (u64), 12 reserved zero bytes, and the
//! CRC32C of the 60 bytes before it. Record: state code (u8), flags (u8:
//! bit 0, the zone holds a Zone Random Write Area; readers before the flag
//! refuse a record that has it), two zero bytes, the CRC32C of the zone's
//! index and the record's other 12 bytes, the write pointer (u64, absolute
//! LBA). Blocks above the write pointer of a zone holding a ZRWA that have
//! a checksum are its window's data, not yet committed.
//!
//! A block's checksum is the CRC32C of its LBA and its bytes, so a block
//! found at another LBA's place fails too. Two values are reserved and never
//! a checksum: [`SUM_NONE`] (the block was never written: the file is sparse
//! there and the data must be zeros) and [`SUM_ZEROS`] (the block reads as
//! zeros whatever the data file holds: a Finish skipped it, Write Zeroes
//! cleared it, or a saved batch found it zero); a checksum that would be one
//! of them is stored one off.
//!
//! Each LBA has two slots ([`Sums`]): the latest write's checksum, and, for a
//! block overwritten in place (a conventional zone), the one before it. An
//! overwrite stores both checksums before its data, so a server killed
//! between the two (before it answered the write) leaves the old data, which
//! still verifies, not a block that looks damaged. A write at a write pointer
//! replaces nothing (the zone had no data there), so its second slot is
//! [`SUM_NONE`], and a lost write there is reported as damage.

use std::fmt;
use zonelab_device::config::ZONES_MAX;
use zonelab_device::ZoneState;

/// Format 2's magic: format 1 (`ZLIMAGE1`) had no version field.
pub const MAGIC: &[u8; 8] = b"ZLIMAGE\0";
/// The first format's magic, recognized to say how to upgrade it.
pub const MAGIC_V1: &[u8; 8] = b"ZLIMAGE1";
/// The format this zonelab writes and reads.
pub const VERSION: u32 = 2;
/// Checksum kind 1: CRC32C of the LBA and the block, per LBA.
const SUM_KIND: u32 = 1;
/// Bytes of the header at the start of FILE.zones.
pub const HEADER_BYTES: u64 = 64;
/// Bytes of one zone's record.
pub const RECORD_BYTES: u64 = 16;
/// Bytes of one LBA's checksums (two slots).
pub const SUM_BYTES: u64 = 8;
/// Stored for a block never written: it must hold zeros.
pub const SUM_NONE: u32 = 0;
/// Stored for a block that reads as zeros whatever the data file holds.
pub const SUM_ZEROS: u32 = u32::MAX;

/// The geometry an image belongs to: loading it into another is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes per LBA.
    pub lba_bytes: u64,
    /// Zones in the namespace.
    pub zones: u32,
    /// The first this many zones are conventional.
    pub conventional_zones: u32,
    /// LBAs per zone (a power of two).
    pub zone_lbas: u64,
    /// Writable LBAs per zone.
    pub zcap_lbas: u64,
}

impl fmt::Display for Geometry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} zones ({} conventional) of {} LBAs of {} bytes, capacity {} LBAs",
            self.zones, self.conventional_zones, self.zone_lbas, self.lba_bytes, self.zcap_lbas
        )
    }
}

impl Geometry {
    /// LBAs in the namespace.
    pub fn lbas(&self) -> u64 {
        u64::from(self.zones) * self.zone_lbas
    }

    /// The length the data file has.
    pub fn data_bytes(&self) -> u64 {
        self.lbas() * self.lba_bytes
    }

    /// Where the checksums start in FILE.zones (a 4 KiB boundary, so that a
    /// record update and a checksum update never share a page).
    pub fn sums_offset(&self) -> u64 {
        (HEADER_BYTES + u64::from(self.zones) * RECORD_BYTES).next_multiple_of(4096)
    }

    /// The length FILE.zones has.
    pub fn zones_file_bytes(&self) -> u64 {
        self.sums_offset() + self.lbas() * SUM_BYTES
    }

    /// First LBA of `zone`.
    pub fn zslba(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_lbas
    }

    /// Why a decoded geometry cannot be an image's (a damaged header whose
    /// checksum happened to match, or a hand-made file), or None. Bounds the
    /// sizes so that every offset computed from them fits in a u64 and the
    /// zone records fit in memory (no more zones than a device may have).
    pub fn implausible(&self) -> Option<String> {
        let lba_ok = self.lba_bytes.is_power_of_two() && (512..=1 << 16).contains(&self.lba_bytes);
        let total = u64::from(self.zones).checked_mul(self.zone_lbas).and_then(|lbas| lbas.checked_mul(self.lba_bytes));
        let why = if !lba_ok {
            "the LBA size is not a power of two from 512 to 65536"
        } else if self.zones == 0 || self.zones > ZONES_MAX || self.conventional_zones > self.zones {
            "no zones, more than a device can have, or more conventional zones than zones"
        } else if !self.zone_lbas.is_power_of_two() || self.zone_lbas > 1 << 40 {
            "the zone size is not a power of two of at most 2^40 LBAs"
        } else if self.zcap_lbas == 0 || self.zcap_lbas > self.zone_lbas {
            "the zone capacity is 0 or larger than the zone"
        } else if total.is_none_or(|t| t > 1 << 60) {
            "the namespace is larger than 2^60 bytes"
        } else {
            return None;
        };
        Some(format!("{why} ({self})"))
    }

    /// The format 2 header.
    pub fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut h = [0u8; HEADER_BYTES as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..12].copy_from_slice(&VERSION.to_le_bytes());
        h[12..16].copy_from_slice(&SUM_KIND.to_le_bytes());
        h[16..24].copy_from_slice(&self.lba_bytes.to_le_bytes());
        h[24..28].copy_from_slice(&self.zones.to_le_bytes());
        h[28..32].copy_from_slice(&self.conventional_zones.to_le_bytes());
        h[32..40].copy_from_slice(&self.zone_lbas.to_le_bytes());
        h[40..48].copy_from_slice(&self.zcap_lbas.to_le_bytes());
        let crc = crc32c::crc32c(&h[..60]);
        h[60..].copy_from_slice(&crc.to_le_bytes());
        h
    }
}

/// What the first bytes of FILE.zones say.
#[derive(Debug, PartialEq, Eq)]
pub enum Header {
    /// A format 2 header with a geometry to check.
    Image(Geometry),
    /// Format 1 (`ZLIMAGE1`): no version, no checksums.
    Version1(Geometry),
    /// The zonelab magic with another version.
    OtherVersion(u32),
    /// The zonelab magic, but the header's checksum or its fixed fields are wrong.
    Damaged(&'static str),
    /// No zonelab magic.
    Foreign,
}

/// Decodes a header (`h` may be shorter than a header: a short file).
pub fn decode_header(h: &[u8]) -> Header {
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
    if h.len() < HEADER_BYTES as usize {
        let zonelab = h.len() >= 8 && (&h[..8] == MAGIC || &h[..8] == MAGIC_V1);
        return if zonelab { Header::Damaged("the header is cut short") } else { Header::Foreign };
    }
    if &h[..8] == MAGIC_V1 {
        let (lba_bytes, zones, conventional_zones) = (u64_at(8), u32_at(16), u32_at(20));
        return Header::Version1(Geometry {
            lba_bytes,
            zones,
            conventional_zones,
            zone_lbas: u64_at(24),
            zcap_lbas: u64_at(32),
        });
    }
    if &h[..8] != MAGIC {
        return Header::Foreign;
    }
    if crc32c::crc32c(&h[..60]) != u32_at(60) {
        return Header::Damaged("the header's checksum does not match it");
    }
    if u32_at(8) != VERSION {
        return Header::OtherVersion(u32_at(8));
    }
    if u32_at(12) != SUM_KIND || h[48..60].iter().any(|&b| b != 0) {
        return Header::Damaged("unknown checksum kind or reserved bytes set");
    }
    let (lba_bytes, zones, conventional_zones) = (u64_at(16), u32_at(24), u32_at(28));
    Header::Image(Geometry { lba_bytes, zones, conventional_zones, zone_lbas: u64_at(32), zcap_lbas: u64_at(40) })
}

/// A zone's saved state, write pointer (absolute LBA) and whether it holds
/// a Zone Random Write Area.
pub type Record = (ZoneState, u64, bool);

/// Record flag: the zone holds a ZRWA.
const FLAG_ZRWA: u8 = 1;

fn state_code(state: ZoneState) -> u8 {
    ZoneState::SEQUENTIAL.iter().position(|&s| s == state).map_or(0xff, |i| i as u8)
}

fn state_of_code(code: u8) -> Option<ZoneState> {
    match code {
        0xff => Some(ZoneState::NotWritePointer),
        c => ZoneState::SEQUENTIAL.get(usize::from(c)).copied(),
    }
}

fn record_crc(zone: u32, r: &[u8; RECORD_BYTES as usize]) -> u32 {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&zone.to_le_bytes()), &r[..4]);
    crc32c::crc32c_append(crc, &r[8..])
}

/// Zone `zone`'s record, with its checksum.
pub fn encode_record(zone: u32, (state, wp, zrwa): Record) -> [u8; RECORD_BYTES as usize] {
    let mut r = [0u8; RECORD_BYTES as usize];
    r[0] = state_code(state);
    r[1] = if zrwa { FLAG_ZRWA } else { 0 };
    r[8..].copy_from_slice(&wp.to_le_bytes());
    let crc = record_crc(zone, &r);
    r[4..8].copy_from_slice(&crc.to_le_bytes());
    r
}

/// Decodes zone `zone`'s record (`checked`: format 2, which has a checksum)
/// and checks it against the geometry; the error says what is wrong.
pub fn decode_record(
    g: &Geometry,
    zone: u32,
    r: &[u8; RECORD_BYTES as usize],
    checked: bool,
) -> Result<Record, String> {
    let crc = u32::from_le_bytes(r[4..8].try_into().expect("4 bytes"));
    if checked && (crc != record_crc(zone, r) || r[1] & !FLAG_ZRWA != 0 || r[2..4] != [0, 0]) {
        return Err("the zone record's checksum does not match it".into());
    }
    // Format 1 had no flags.
    let zrwa = checked && r[1] & FLAG_ZRWA != 0;
    let state = state_of_code(r[0]).ok_or_else(|| format!("state code {} is no zone state", r[0]))?;
    let wp = u64::from_le_bytes(r[8..].try_into().expect("8 bytes"));
    let (zslba, end) = (g.zslba(zone), g.zslba(zone) + g.zcap_lbas);
    let conventional = zone < g.conventional_zones;
    let why = if wp < zslba || wp > end {
        format!("write pointer {wp} outside the zone's LBAs {zslba}..={end}")
    } else if conventional != (state == ZoneState::NotWritePointer) {
        format!("state {} in a {} zone", state.name(), if conventional { "conventional" } else { "sequential" })
    } else if state == ZoneState::Empty && wp != zslba {
        format!("empty, but its write pointer {wp} is not the zone start {zslba}")
    } else if (state.is_active()) && wp == end {
        format!("{}, but its write pointer {wp} is at the zone's capacity", state.name())
    } else if zrwa && !state.is_active() {
        format!("{}, but it holds a ZRWA (only an open or closed zone does)", state.name())
    } else {
        return Ok((state, wp, zrwa));
    };
    Err(why)
}

/// The checksum stored for `block` at `lba` (never a reserved value).
pub fn block_sum(lba: u64, block: &[u8]) -> u32 {
    match crc32c::crc32c_append(crc32c::crc32c(&lba.to_le_bytes()), block) {
        SUM_NONE => 1,
        SUM_ZEROS => SUM_ZEROS - 1,
        sum => sum,
    }
}

/// What a block of the image holds, by its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The data file's bytes, as written.
    Data,
    /// Zeros, whatever the data file holds there.
    Zeros,
    /// Neither: the bytes or the checksum changed since they were written.
    Damaged(Damage),
}

/// How a block fails its check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// The bytes do not match the checksum.
    Mismatch,
    /// Bytes where no write was recorded.
    Unrecorded,
}

impl fmt::Display for Damage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Damage::Mismatch => "data does not match its checksum",
            Damage::Unrecorded => "data where no write is recorded (no checksum)",
        })
    }
}

/// An LBA's stored checksums.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sums {
    /// The latest write's checksum, or a reserved value.
    pub latest: u32,
    /// For an overwrite in place, what the block held before: its checksum,
    /// [`SUM_ZEROS`] for zeros, [`SUM_NONE`] for nothing to fall back to.
    pub previous: u32,
}

impl Sums {
    /// Never written.
    pub const NONE: Sums = Sums { latest: SUM_NONE, previous: SUM_NONE };
    /// Reads as zeros.
    pub const ZEROS: Sums = Sums { latest: SUM_ZEROS, previous: SUM_NONE };

    /// A block written where nothing was (at a write pointer).
    pub fn written(sum: u32) -> Sums {
        Sums { latest: sum, previous: SUM_NONE }
    }

    /// A block overwritten in place: what it held stays acceptable until
    /// the new data is known to be in the file.
    pub fn overwritten(self, sum: u32) -> Sums {
        let previous = match self.latest {
            SUM_NONE | SUM_ZEROS => SUM_ZEROS,
            held => held,
        };
        Sums { latest: sum, previous }
    }
}

/// Checks `block` at `lba` against its stored checksums.
pub fn verify(lba: u64, block: &[u8], stored: Sums) -> Verdict {
    let zero = || block.iter().all(|&b| b == 0);
    match stored.latest {
        SUM_ZEROS => return Verdict::Zeros,
        SUM_NONE if zero() => return Verdict::Zeros,
        SUM_NONE => return Verdict::Damaged(Damage::Unrecorded),
        _ => {}
    }
    let sum = block_sum(lba, block);
    if sum == stored.latest {
        return Verdict::Data;
    }
    // An overwrite whose data never reached the file: the block as it was.
    match stored.previous {
        SUM_NONE => Verdict::Damaged(Damage::Mismatch),
        SUM_ZEROS if zero() => Verdict::Zeros,
        previous if previous == sum => Verdict::Data,
        _ => Verdict::Damaged(Damage::Mismatch),
    }
}

/// Stored checksums from bytes.
pub fn sums_of(bytes: &[u8]) -> Vec<Sums> {
    let u32_at = |c: &[u8], i: usize| u32::from_le_bytes(c[i..i + 4].try_into().expect("4 bytes"));
    bytes.chunks_exact(SUM_BYTES as usize).map(|c| Sums { latest: u32_at(c, 0), previous: u32_at(c, 4) }).collect()
}

/// Bytes of stored checksums.
pub fn bytes_of(sums: &[Sums]) -> Vec<u8> {
    sums.iter().flat_map(|s| s.latest.to_le_bytes().into_iter().chain(s.previous.to_le_bytes())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Geometry = Geometry { lba_bytes: 4096, zones: 4, conventional_zones: 1, zone_lbas: 256, zcap_lbas: 128 };

    #[test]
    fn a_header_round_trips_and_a_flipped_bit_is_damage() {
        let mut h = G.encode();
        assert_eq!(decode_header(&h), Header::Image(G));
        h[20] ^= 1;
        assert!(matches!(decode_header(&h), Header::Damaged(_)));
        assert_eq!(decode_header(b"ZLIMAGE\0short"), Header::Damaged("the header is cut short"));
        assert_eq!(decode_header(&[0u8; 100]), Header::Foreign);
        assert_eq!(decode_header(b""), Header::Foreign);
    }

    #[test]
    fn records_check_their_checksum_and_the_zone_rules() {
        let r = encode_record(2, (ZoneState::Closed, 2 * 256 + 5, false));
        assert_eq!(decode_record(&G, 2, &r, true), Ok((ZoneState::Closed, 517, false)));
        assert!(decode_record(&G, 3, &r, true).is_err(), "a record in another zone's place");
        let z = encode_record(2, (ZoneState::ExplicitlyOpened, 2 * 256 + 8, true));
        assert_eq!(decode_record(&G, 2, &z, true), Ok((ZoneState::ExplicitlyOpened, 520, true)));
        assert_eq!(z[1], FLAG_ZRWA);
        let mut unknown = z;
        unknown[1] = 2;
        assert!(decode_record(&G, 2, &unknown, true).is_err(), "a flag this format does not define");
        let bad = |zone, record: Record| decode_record(&G, zone, &encode_record(zone, record), true).unwrap_err();
        assert!(bad(1, (ZoneState::Empty, 257, false)).contains("not the zone start"));
        assert!(bad(1, (ZoneState::Full, 256 + 129, false)).contains("outside"));
        assert!(bad(0, (ZoneState::Empty, 0, false)).contains("conventional"));
        assert!(bad(1, (ZoneState::NotWritePointer, 256, false)).contains("sequential"));
        assert!(bad(1, (ZoneState::ImplicitlyOpened, 256 + 128, false)).contains("capacity"));
        assert!(bad(1, (ZoneState::Full, 256 + 128, true)).contains("ZRWA"));
        assert!(bad(0, (ZoneState::NotWritePointer, 0, true)).contains("ZRWA"));
    }

    #[test]
    fn blocks_verify_by_lba_and_content() {
        let block = vec![7u8; 4096];
        let sums = Sums::written(block_sum(9, &block));
        assert_eq!(verify(9, &block, sums), Verdict::Data);
        assert_eq!(verify(10, &block, sums), Verdict::Damaged(Damage::Mismatch), "the same bytes at another LBA");
        let mut flipped = block.clone();
        flipped[100] ^= 0x10;
        assert_eq!(verify(9, &flipped, sums), Verdict::Damaged(Damage::Mismatch));
        assert_eq!(verify(9, &block, Sums::NONE), Verdict::Damaged(Damage::Unrecorded));
        assert_eq!(verify(9, &[0u8; 4096], Sums::NONE), Verdict::Zeros);
        assert_eq!(verify(9, &block, Sums::ZEROS), Verdict::Zeros);
        assert_eq!(sums_of(&bytes_of(&[sums, Sums::ZEROS])), [sums, Sums::ZEROS]);
    }

    /// An overwrite cut short between its checksums and its data leaves the
    /// old block, which verifies; a write at a write pointer has no old block.
    #[test]
    fn an_overwrite_keeps_the_old_block_acceptable() {
        let (old, new) = (vec![1u8; 512], vec![2u8; 512]);
        let first = Sums::NONE.overwritten(block_sum(3, &old));
        assert_eq!(verify(3, &[0u8; 512], first), Verdict::Zeros, "the first write never landed");
        let second = first.overwritten(block_sum(3, &new));
        assert_eq!((verify(3, &old, second), verify(3, &new, second)), (Verdict::Data, Verdict::Data));
        assert_eq!(verify(3, &[0u8; 512], second), Verdict::Damaged(Damage::Mismatch));
        let at_wp = Sums::written(block_sum(3, &new));
        assert_eq!(verify(3, &[0u8; 512], at_wp), Verdict::Damaged(Damage::Mismatch), "a lost write is damage");
    }

    #[test]
    fn implausible_geometries_are_named() {
        assert_eq!(G.implausible(), None);
        assert!(Geometry { lba_bytes: 1000, ..G }.implausible().is_some());
        assert!(Geometry { zcap_lbas: 0, ..G }.implausible().is_some());
        assert!(Geometry { zones: u32::MAX, zone_lbas: 1 << 40, ..G }.implausible().is_some());
    }
}
