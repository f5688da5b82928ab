//! Zone reports in the layout of Linux's `struct blk_zone`
//! (include/uapi/linux/blkzoned.h), which is what ublk returns for
//! REPORT_ZONES. Pure, so tested on any host.

use crate::request::Geometry;
use zonelab_device::{ZoneDescriptor, ZoneState, ZoneType};

/// `sizeof(struct blk_zone)`.
pub const BLK_ZONE_BYTES: usize = 64;

/// `enum blk_zone_type`.
fn zone_type_code(zone_type: ZoneType) -> u8 {
    match zone_type {
        ZoneType::Conventional => 1,
        ZoneType::SeqWriteRequired => 2,
    }
}

/// `enum blk_zone_cond`, which takes NVMe's Zone State codes.
pub(crate) fn zone_cond_code(state: ZoneState) -> u8 {
    match state {
        ZoneState::NotWritePointer => 0x0,
        ZoneState::Empty => 0x1,
        ZoneState::ImplicitlyOpened => 0x2,
        ZoneState::ExplicitlyOpened => 0x3,
        ZoneState::Closed => 0x4,
        ZoneState::ReadOnly => 0xD,
        ZoneState::Full => 0xE,
        ZoneState::Offline => 0xF,
    }
}

/// Appends one `struct blk_zone` for `zone` to `out`. As Linux's NVMe driver
/// does, a full zone reports its write pointer at the zone's end.
fn encode_zone(zone: &ZoneDescriptor, geometry: &Geometry, out: &mut Vec<u8>) {
    let start = geometry.lba_to_sector(zone.zslba);
    let len = geometry.lba_to_sector(zone.zsze);
    let wp = if zone.state == ZoneState::Full { start + len } else { geometry.lba_to_sector(zone.wp) };
    let before = out.len();
    out.extend_from_slice(&start.to_ne_bytes());
    out.extend_from_slice(&len.to_ne_bytes());
    out.extend_from_slice(&wp.to_ne_bytes());
    out.push(zone_type_code(zone.zone_type));
    out.push(zone_cond_code(zone.state));
    out.extend_from_slice(&[0u8; 6]); // non_seq, reset, resv[4]
    out.extend_from_slice(&geometry.lba_to_sector(zone.zcap).to_ne_bytes());
    out.extend_from_slice(&[0u8; 24]);
    debug_assert_eq!(out.len() - before, BLK_ZONE_BYTES);
}

/// The report for `zones` when `requested` were asked for: a zeroed entry
/// after the last one tells the driver the report ended early.
pub fn encode_report(zones: &[ZoneDescriptor], requested: u32, geometry: &Geometry) -> Vec<u8> {
    assert!(zones.len() <= requested as usize, "more zones than requested");
    let mut out = Vec::with_capacity((zones.len() + 1) * BLK_ZONE_BYTES);
    for zone in zones {
        encode_zone(zone, geometry, &mut out);
    }
    if zones.len() < requested as usize {
        out.resize(out.len() + BLK_ZONE_BYTES, 0);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Geometry = Geometry { lba_bytes: 4096, nsze_lbas: 4 * 16384, zone_lbas: 16384, io_bytes_max: 1 << 20 };

    fn zone(zone_type: ZoneType, state: ZoneState, zslba: u64, wp: u64) -> ZoneDescriptor {
        ZoneDescriptor { zone_type, state, zcap: 12288, zsze: 16384, zslba, wp, zrwa: false }
    }

    fn u64_at(bytes: &[u8], offset: usize) -> u64 {
        u64::from_ne_bytes(bytes[offset..offset + 8].try_into().unwrap())
    }

    #[test]
    fn fields_sit_where_blk_zone_has_them() {
        let out = encode_report(&[zone(ZoneType::SeqWriteRequired, ZoneState::Closed, 16384, 16400)], 1, &G);
        assert_eq!(out.len(), BLK_ZONE_BYTES);
        assert_eq!(u64_at(&out, 0), 16384 * 8, "start");
        assert_eq!(u64_at(&out, 8), 16384 * 8, "len");
        assert_eq!(u64_at(&out, 16), 16400 * 8, "wp");
        assert_eq!(out[24], 2, "type: sequential write required");
        assert_eq!(out[25], 4, "cond: closed");
        assert_eq!(u64_at(&out, 32), 12288 * 8, "capacity");
        assert!(out[40..].iter().all(|&b| b == 0));
    }

    #[test]
    fn full_zones_report_the_write_pointer_at_the_zone_end() {
        let out = encode_report(&[zone(ZoneType::SeqWriteRequired, ZoneState::Full, 0, 12288)], 1, &G);
        assert_eq!(out[25], 0xE);
        assert_eq!(u64_at(&out, 16), 16384 * 8);
    }

    #[test]
    fn every_state_has_its_linux_condition() {
        let expected = [
            (ZoneState::NotWritePointer, 0x0),
            (ZoneState::Empty, 0x1),
            (ZoneState::ImplicitlyOpened, 0x2),
            (ZoneState::ExplicitlyOpened, 0x3),
            (ZoneState::Closed, 0x4),
            (ZoneState::ReadOnly, 0xD),
            (ZoneState::Full, 0xE),
            (ZoneState::Offline, 0xF),
        ];
        for (state, cond) in expected {
            assert_eq!(zone_cond_code(state), cond, "{}", state.name());
        }
        assert_eq!(zone_type_code(ZoneType::Conventional), 1);
    }

    #[test]
    fn a_short_report_ends_with_a_zeroed_entry() {
        let zones = [zone(ZoneType::Conventional, ZoneState::NotWritePointer, 0, 16384)];
        let out = encode_report(&zones, 4, &G);
        assert_eq!(out.len(), 2 * BLK_ZONE_BYTES);
        assert!(out[BLK_ZONE_BYTES..].iter().all(|&b| b == 0));
        assert_eq!(out[24], 1);
    }
}
