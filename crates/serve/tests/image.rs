//! `--backing` images: what they refuse to touch (foreign files, symlinks,
//! devices, half pairs, old formats), what they detect (a flipped byte in
//! the data, the checksums, a zone record or the header) and how damage is
//! answered (EIO on the block path), checked by `image check` and repaired by
//! a rewrite; and that an intact image still round-trips.

use std::fs;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use zonelab_device::{preset, Device, DeviceOptions};
use zonelab_serve::image::check::{check, upgrade, Upgrade};
use zonelab_serve::image::format::{Geometry, SUM_BYTES};
use zonelab_serve::request::{errno, BlockOp, BlockRequest};
use zonelab_serve::{Backend, Pace};

/// 4 zones of 256 LBAs of 4 KiB, capacity 128, zone 0 conventional.
const G: Geometry = Geometry { lba_bytes: 4096, zones: 4, conventional_zones: 1, zone_lbas: 256, zcap_lbas: 128 };

fn backend() -> Backend {
    let opts = DeviceOptions {
        zones: Some(4),
        zone_size_bytes: Some(1 << 20),
        zone_capacity_bytes: Some(512 << 10),
        conventional_zones: Some(1),
        data: true,
        ..Default::default()
    };
    Backend::new(Device::new(opts.apply(preset("zn540").unwrap()).unwrap()).unwrap(), Pace::Asap).unwrap()
}

/// A fresh directory for one test; returns the image path in it.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-image-it-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir.join("dev.img")
}

fn zones_of(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.zones", path.display()))
}

fn open_error(path: &Path) -> String {
    match backend().with_image(path) {
        Ok(_) => panic!("{}: opened", path.display()),
        Err(e) => e.to_string(),
    }
}

/// Runs a block request of `nlb` LBAs from `lba` (writes carry `byte`); returns the result and the data.
fn io(b: &mut Backend, op: BlockOp, lba: u64, nlb: u32, byte: u8) -> (i32, Vec<u8>) {
    let carries = matches!(op, BlockOp::Write | BlockOp::ZoneAppend);
    let mut data = if carries { vec![byte; nlb as usize * 4096] } else { Vec::new() };
    let out = b.handle(0, &BlockRequest { op, start_sector: lba * 8, count: nlb * 8 }, &mut data);
    (out.result, data)
}

/// [`io`], which must succeed; reads longer than one request are split.
fn ok(b: &mut Backend, op: BlockOp, lba: u64, nlb: u32, byte: u8) -> Vec<u8> {
    if op == BlockOp::Read && nlb > 32 {
        let mut data = ok(b, op, lba, 32, byte);
        data.extend(ok(b, op, lba + 32, nlb - 32, byte));
        return data;
    }
    let (result, data) = io(b, op, lba, nlb, byte);
    assert!(result >= 0, "{op:?} at LBA {lba}: {result}");
    data
}

fn flip(path: &Path, at: u64) {
    let f = fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
    let mut byte = [0u8];
    f.read_exact_at(&mut byte, at).unwrap();
    f.write_all_at(&[byte[0] ^ 0x10], at).unwrap();
}

fn cleanup(path: &Path) {
    fs::remove_dir_all(path.parent().unwrap()).unwrap();
}

#[test]
fn an_existing_foreign_file_is_refused_and_left_as_it_was() {
    let path = scratch("foreign");
    let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i.wrapping_mul(7) % 251) as u8).collect();
    fs::write(&path, &bytes).unwrap();
    let err = open_error(&path);
    assert!(err.contains("dev.img.zones does not") && err.contains("untouched"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), bytes, "not one byte changed");
    assert!(!zones_of(&path).exists(), "nothing created beside it");
    // A foreign file where the zone file belongs: refused, and no data file is created.
    fs::rename(&path, zones_of(&path)).unwrap();
    let err = open_error(&path);
    assert!(err.contains("dev.img does not"), "{err}");
    assert!(!path.exists());
    // Both present but no image: refused on the header, both unchanged.
    fs::write(&path, &bytes).unwrap();
    assert!(open_error(&path).contains("not a zonelab device image"));
    assert_eq!((fs::read(&path).unwrap(), fs::read(zones_of(&path)).unwrap()), (bytes.clone(), bytes));
    cleanup(&path);
}

#[test]
fn a_symlink_or_hard_link_is_refused_and_its_target_unchanged() {
    let path = scratch("symlink");
    let dir = path.parent().unwrap();
    let target = dir.join("precious");
    fs::write(&target, b"precious data").unwrap();
    std::os::unix::fs::symlink(&target, &path).unwrap();
    assert!(open_error(&path).contains("is a symbolic link"));
    assert_eq!(fs::read(&target).unwrap(), b"precious data");
    assert!(!zones_of(&path).exists());
    // A dangling symlink is not followed to create its target.
    let dangling = dir.join("dangling.img");
    std::os::unix::fs::symlink(dir.join("absent"), &dangling).unwrap();
    assert!(open_error(&dangling).contains("is a symbolic link"));
    assert!(!dir.join("absent").exists() && !zones_of(&dangling).exists());
    // Nor is a symlink in the zone file's place.
    let other = dir.join("other.img");
    std::os::unix::fs::symlink(&target, zones_of(&other)).unwrap();
    assert!(open_error(&other).contains("other.img.zones: is a symbolic link"));
    assert_eq!(fs::read(&target).unwrap(), b"precious data");
    assert!(!other.exists());
    // A hard link is another name for someone's file: an image whose data file has one is refused.
    let linked = dir.join("linked.img");
    drop(backend().with_image(&linked).unwrap());
    fs::remove_file(&linked).unwrap();
    fs::write(&target, vec![9u8; G.data_bytes() as usize]).unwrap();
    fs::hard_link(&target, &linked).unwrap();
    assert!(open_error(&linked).contains("linked.img: has 2 names (hard links)"));
    assert!(fs::read(&target).unwrap().iter().all(|&b| b == 9));
    cleanup(&path);
}

#[test]
fn devices_directories_and_fifos_are_refused_before_anything_is_created() {
    let zero_zones = Path::new("/dev/zero.zones");
    let existed = zero_zones.exists();
    let err = open_error(Path::new("/dev/zero"));
    if !existed && zero_zones.exists() {
        let _ = fs::remove_file(zero_zones);
        panic!("/dev/zero.zones was created");
    }
    assert!(err.contains("/dev/zero: is a character device"), "{err}");
    let path = scratch("special");
    fs::create_dir(&path).unwrap();
    assert!(open_error(&path).contains("is a directory"));
    assert!(!zones_of(&path).exists());
    let fifo = path.parent().unwrap().join("fifo.img");
    if std::process::Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success()) {
        assert!(open_error(&fifo).contains("is a FIFO"));
        assert!(!zones_of(&fifo).exists());
    }
    cleanup(&path);
}

#[test]
fn half_an_image_is_refused_naming_the_missing_file() {
    let path = scratch("half");
    let mut b = backend().with_image(&path).unwrap();
    ok(&mut b, BlockOp::Write, 2, 4, 0x42);
    drop(b);
    let data = fs::read(&path).unwrap();
    let zones = fs::read(zones_of(&path)).unwrap();
    fs::remove_file(zones_of(&path)).unwrap();
    let err = open_error(&path);
    assert!(err.contains("dev.img.zones does not"), "{err}");
    assert_eq!(fs::read(&path).unwrap(), data);
    assert!(!zones_of(&path).exists(), "never recreated empty");
    // A zone file cut short: refused, naming it and the length it should have.
    fs::write(zones_of(&path), &zones[..zones.len() - 4096]).unwrap();
    let err = open_error(&path);
    assert!(err.contains("dev.img.zones: damaged") && err.contains("bytes long"), "{err}");
    fs::write(zones_of(&path), &zones).unwrap();
    fs::remove_file(&path).unwrap();
    assert!(open_error(&path).contains("dev.img does not"));
    assert!(!path.exists());
    cleanup(&path);
}

#[test]
fn a_flipped_data_byte_fails_reads_of_its_block_until_rewritten() {
    let path = scratch("flip");
    let mut b = backend().with_image(&path).unwrap();
    ok(&mut b, BlockOp::Write, 3, 2, 0xA5); // conventional zone 0
    ok(&mut b, BlockOp::Write, 256, 8, 0x5A); // sequential zone 1
    drop(b);
    assert!(check(&path).unwrap().is_clean());
    flip(&path, 4 * 4096 + 100);
    flip(&path, 258 * 4096 + 7);
    let report = check(&path).unwrap();
    assert_eq!(report.problems.len(), 2, "{report}");
    assert!(report.problems[0].starts_with("LBA 4 (zone 0)"), "{report}");
    assert!(report.problems[1].starts_with("LBA 258 (zone 1)"), "{report}");
    let mut b = backend().with_image(&path).unwrap();
    assert_eq!(ok(&mut b, BlockOp::Read, 3, 1, 0), vec![0xA5; 4096], "the block beside it is served");
    assert_eq!(io(&mut b, BlockOp::Read, 4, 1, 0).0, -errno::EIO);
    assert_eq!(io(&mut b, BlockOp::Read, 256, 8, 0).0, -errno::EIO, "a read covering it fails whole");
    assert_eq!(ok(&mut b, BlockOp::Read, 256, 2, 0), vec![0x5A; 8192]);
    // A write replaces the damaged block; a reset forgets the zone's.
    ok(&mut b, BlockOp::Write, 4, 1, 0x11);
    assert_eq!(ok(&mut b, BlockOp::Read, 4, 1, 0), vec![0x11; 4096]);
    ok(&mut b, BlockOp::ZoneReset, 256, 0, 0);
    ok(&mut b, BlockOp::Write, 256, 4, 0x22);
    assert_eq!(ok(&mut b, BlockOp::Read, 256, 4, 0), vec![0x22; 4 * 4096]);
    drop(b);
    assert!(check(&path).unwrap().is_clean(), "{}", check(&path).unwrap());
    cleanup(&path);
}

#[test]
fn a_flipped_checksum_record_or_header_is_found() {
    let path = scratch("meta");
    let mut b = backend().with_image(&path).unwrap();
    ok(&mut b, BlockOp::Write, 512, 4, 0x33);
    drop(b);
    let zones = zones_of(&path);
    flip(&zones, G.sums_offset() + 513 * SUM_BYTES + 1);
    let report = check(&path).unwrap();
    assert_eq!(report.problems, ["LBA 513 (zone 2): data does not match its checksum"], "{report}");
    let mut b = backend().with_image(&path).unwrap();
    assert_eq!(io(&mut b, BlockOp::Read, 513, 1, 0).0, -errno::EIO);
    drop(b);
    flip(&zones, G.sums_offset() + 513 * SUM_BYTES + 1);
    flip(&zones, 64 + 2 * 16 + 9); // zone 2's write pointer
    assert!(open_error(&path).contains("zone 2: the zone record's checksum"));
    assert!(check(&path).unwrap().problems[0].starts_with("zone 2:"));
    flip(&zones, 64 + 2 * 16 + 9);
    flip(&zones, 20);
    assert!(open_error(&path).contains("header's checksum"));
    let report = check(&path).unwrap();
    assert!(!report.is_clean() && report.geometry.is_none(), "{report}");
    cleanup(&path);
}

#[test]
fn an_intact_image_round_trips_and_checks_clean() {
    let path = scratch("roundtrip");
    let mut b = backend().with_image(&path).unwrap();
    ok(&mut b, BlockOp::Write, 10, 3, 1);
    ok(&mut b, BlockOp::Write, 256, 16, 2);
    ok(&mut b, BlockOp::ZoneAppend, 256, 4, 3);
    ok(&mut b, BlockOp::ZoneClose, 256, 0, 0);
    for lba in (512..640).step_by(32) {
        ok(&mut b, BlockOp::Write, lba, 32, 4); // to capacity: full
    }
    let before: Vec<Vec<u8>> =
        [(0, 128), (256, 20), (512, 128)].iter().map(|&(lba, nlb)| ok(&mut b, BlockOp::Read, lba, nlb, 0)).collect();
    drop(b); // no flush: as after kill -9
    let report = check(&path).unwrap();
    assert!(report.is_clean() && report.blocks_checked == 128 + 20 + 128, "{report}");
    let mut b = backend().with_image(&path).unwrap();
    for (&(lba, nlb), data) in [(0, 128), (256, 20), (512, 128)].iter().zip(&before) {
        assert_eq!(&ok(&mut b, BlockOp::Read, lba, nlb, 0), data, "LBA {lba}");
    }
    assert!(before[1][..16 * 4096].iter().all(|&x| x == 2) && before[1][16 * 4096..].iter().all(|&x| x == 3));
    cleanup(&path);
}

/// A finished zone's blocks past its last write read as zeros; after a
/// reset, the data file still holds the zone's old bytes there, which a
/// restart must not bring back.
#[test]
fn a_finish_after_a_reset_never_revives_the_old_data() {
    let path = scratch("finish");
    let mut b = backend().with_image(&path).unwrap();
    for lba in (256..384).step_by(32) {
        ok(&mut b, BlockOp::Write, lba, 32, 0x77);
    }
    ok(&mut b, BlockOp::ZoneReset, 256, 0, 0);
    ok(&mut b, BlockOp::Write, 256, 1, 0x88);
    ok(&mut b, BlockOp::ZoneFinish, 256, 0, 0);
    let before = ok(&mut b, BlockOp::Read, 256, 64, 0);
    drop(b);
    assert!(check(&path).unwrap().is_clean());
    let mut b = backend().with_image(&path).unwrap();
    assert_eq!(ok(&mut b, BlockOp::Read, 256, 64, 0), before);
    assert!(before[4096..].iter().all(|&x| x != 0x77), "the old data stays gone");
    cleanup(&path);
}

/// Writes a format 1 image (`ZLIMAGE1`, no checksums) as the previous zonelab did.
fn write_v1(path: &Path) {
    let mut zones = vec![0u8; 64 + 4 * 16];
    zones[..8].copy_from_slice(b"ZLIMAGE1");
    zones[8..16].copy_from_slice(&4096u64.to_le_bytes());
    zones[16..20].copy_from_slice(&4u32.to_le_bytes());
    zones[20..24].copy_from_slice(&1u32.to_le_bytes());
    zones[24..32].copy_from_slice(&256u64.to_le_bytes());
    zones[32..40].copy_from_slice(&128u64.to_le_bytes());
    for (zone, (code, wp)) in [(0xffu8, 0u64), (3, 264), (0, 512), (0, 768)].into_iter().enumerate() {
        zones[64 + zone * 16] = code;
        zones[64 + zone * 16 + 8..64 + zone * 16 + 16].copy_from_slice(&wp.to_le_bytes());
    }
    fs::write(zones_of(path), zones).unwrap();
    let data = fs::File::create(path).unwrap();
    data.set_len(G.data_bytes()).unwrap();
    data.write_all_at(&[0x66; 4096], 2 * 4096).unwrap();
    data.write_all_at(&[0x77; 8 * 4096], 256 * 4096).unwrap();
}

#[test]
fn a_format_1_image_is_refused_until_upgraded() {
    let path = scratch("v1");
    write_v1(&path);
    let old = fs::read(zones_of(&path)).unwrap();
    let err = open_error(&path);
    assert!(err.contains("format 1") && err.contains("zonelab image upgrade"), "{err}");
    assert_eq!(fs::read(zones_of(&path)).unwrap(), old, "refused without a write");
    assert_eq!(upgrade(&path).unwrap(), Upgrade::Upgraded { blocks: 9 });
    assert!(check(&path).unwrap().is_clean());
    let mut b = backend().with_image(&path).unwrap();
    assert_eq!(ok(&mut b, BlockOp::Read, 2, 1, 0), vec![0x66; 4096]);
    assert_eq!(ok(&mut b, BlockOp::Read, 256, 8, 0), vec![0x77; 8 * 4096]);
    assert_eq!(io(&mut b, BlockOp::Write, 256, 1, 0).0, -errno::EIO, "still closed at 264: not at the wp");
    drop(b);
    assert_eq!(upgrade(&path).unwrap(), Upgrade::AlreadyCurrent);
    cleanup(&path);
}

/// A server killed between an overwrite's checksums and its data (before it
/// answered) leaves the block as it was: that must verify, not look damaged.
#[test]
fn an_overwrite_cut_short_keeps_the_old_block_readable() {
    let path = scratch("torn");
    let mut b = backend().with_image(&path).unwrap();
    ok(&mut b, BlockOp::Write, 7, 1, 0xAA);
    ok(&mut b, BlockOp::Write, 8, 1, 0xAA);
    ok(&mut b, BlockOp::Write, 7, 2, 0xBB);
    drop(b);
    // LBA 7's new data never reached the file; LBA 8's did.
    let data = fs::OpenOptions::new().write(true).open(&path).unwrap();
    data.write_all_at(&[0xAA; 4096], 7 * 4096).unwrap();
    assert!(check(&path).unwrap().is_clean(), "{}", check(&path).unwrap());
    let mut b = backend().with_image(&path).unwrap();
    assert_eq!(ok(&mut b, BlockOp::Read, 7, 1, 0), vec![0xAA; 4096], "the old block");
    assert_eq!(ok(&mut b, BlockOp::Read, 8, 1, 0), vec![0xBB; 4096], "the new block");
    drop(b);
    // Neither old nor new (a torn block) is damage.
    data.write_all_at(&[0xAA; 100], 8 * 4096).unwrap();
    assert_eq!(check(&path).unwrap().problems.len(), 1);
    cleanup(&path);
}

/// A restart replays only the chunks of a conventional zone where the data
/// file or the checksums hold something; damage in a chunk never written
/// (a stray byte in the data's hole, or in the checksums' hole) is still found.
#[test]
fn damage_in_a_never_written_part_of_a_conventional_zone_is_found_after_a_restart() {
    let path = scratch("hole");
    let mut b = backend().with_image(&path).unwrap();
    ok(&mut b, BlockOp::Write, 3, 1, 0xA5); // chunk 0 of the conventional zone
    drop(b);
    flip(&path, 100 * 4096 + 9); // LBA 100, chunk 3: data where the file had a hole
    flip(&zones_of(&path), G.sums_offset() + 70 * SUM_BYTES); // LBA 70, chunk 2: a checksum where none was
    let report = check(&path).unwrap();
    assert_eq!(report.problems.len(), 2, "{report}");
    let mut b = backend().with_image(&path).unwrap();
    assert_eq!(ok(&mut b, BlockOp::Read, 3, 1, 0), vec![0xA5; 4096], "the written block came back");
    assert_eq!(io(&mut b, BlockOp::Read, 100, 1, 0).0, -errno::EIO, "the stray data byte is damage");
    assert_eq!(io(&mut b, BlockOp::Read, 70, 1, 0).0, -errno::EIO, "the stray checksum is damage");
    assert_eq!(ok(&mut b, BlockOp::Read, 40, 1, 0), vec![0; 4096], "chunk 1, holes in both files, reads zeros");
    drop(b);
    cleanup(&path);
}
