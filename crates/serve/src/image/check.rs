//! `zonelab image check` (an image's fsck: every structure and every written
//! block verified, nothing written) and `zonelab image upgrade` (format 1 to
//! format 2: checksums computed from the data as it is).

use super::files::{length, zones_path, Pair};
use super::format::{
    block_sum, bytes_of, decode_header, decode_record, encode_record, sums_of, verify, Damage, Geometry, Header,
    Record, Sums, Verdict, HEADER_BYTES, RECORD_BYTES, SUM_BYTES, SUM_NONE, SUM_ZEROS,
};
use super::{check_lengths, chunk_lbas, read_header, read_records, written_end};
use crate::error::ImageError;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use zonelab_device::ZoneState;

/// What `image check` found in an image.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// The data file checked.
    pub path: PathBuf,
    /// The geometry its header gives, if the header is sound.
    pub geometry: Option<Geometry>,
    /// Zone records that passed their checks.
    pub zones_ok: u32,
    /// Blocks verified (good or bad): up to each write pointer, a
    /// conventional zone's whole capacity.
    pub blocks_checked: u64,
    /// What is wrong, one line each, in LBA order within each part.
    pub problems: Vec<String>,
}

impl CheckReport {
    /// Whether nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

impl fmt::Display for CheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.display();
        match &self.geometry {
            Some(g) => writeln!(f, "{path}: zonelab image format {}, {g}", super::VERSION)?,
            None => writeln!(f, "{path}: zonelab image format {}, header unreadable", super::VERSION)?,
        }
        if let Some(g) = &self.geometry {
            writeln!(f, "zone records: {} of {} sound", self.zones_ok, g.zones)?;
        }
        writeln!(f, "blocks checked (up to each write pointer, and those written in a ZRWA): {}", self.blocks_checked)?;
        for problem in &self.problems {
            writeln!(f, "damage: {problem}")?;
        }
        match self.problems.len() {
            0 => writeln!(f, "{path}: clean"),
            n => writeln!(f, "{path}: {n} problem{} found", if n == 1 { "" } else { "s" }),
        }
    }
}

/// Checks the image at `path` (the data file; FILE.zones beside it) without
/// writing anything. `Err`: it is no image to check (missing, not a regular
/// file, not a zonelab image, another format); damage is in the report.
pub fn check(path: &Path) -> Result<CheckReport, ImageError> {
    let pair = Pair::open(path, false)?.ok_or_else(|| ImageError::NoImage { path: path.to_path_buf() })?;
    let mut report = CheckReport { path: path.to_path_buf(), ..Default::default() };
    let g = match read_header(&pair, path) {
        Ok(g) => g,
        Err(ImageError::Damaged { path, what }) => {
            report.problems.push(format!("{}: {what}", path.display()));
            return Ok(report);
        }
        Err(e) => return Err(e),
    };
    report.geometry = Some(g);
    if let Err(e) = check_lengths(&pair, path, &g) {
        // The records, checksums or data are not where the geometry puts them: nothing more can be checked.
        report.problems.push(e.to_string());
        return Ok(report);
    }
    let records = read_records(&pair, &g).map_err(|e| ImageError::io(&zones_path(path), e))?;
    for (zone, record) in (0..).zip(records) {
        match record {
            Ok(record) => {
                report.zones_ok += 1;
                check_blocks(&pair, path, &g, zone, record, &mut report)?;
            }
            Err(why) => report.problems.push(format!("zone {zone}: {why}")),
        }
    }
    Ok(report)
}

/// Verifies the written blocks of `zone`, adding runs of damaged ones to the report.
fn check_blocks(
    pair: &Pair,
    path: &Path,
    g: &Geometry,
    zone: u32,
    record: Record,
    report: &mut CheckReport,
) -> Result<(), ImageError> {
    if record.0 == ZoneState::Offline {
        return Ok(());
    }
    // A zone holding a ZRWA has its window's blocks above the write pointer:
    // those with a checksum are written data too.
    let (wp, zrwa) = (record.1, record.2);
    let end = if zrwa { g.zslba(zone) + g.zcap_lbas } else { written_end(g, zone, record) };
    let per = chunk_lbas(g);
    let mut data = vec![0u8; (per * g.lba_bytes) as usize];
    let mut sums = vec![0u8; (per * SUM_BYTES) as usize];
    let mut run: Option<(u64, u64, Damage)> = None;
    let mut lba = g.zslba(zone);
    while lba < end {
        let nlb = per.min(end - lba);
        let bytes = &mut data[..(nlb * g.lba_bytes) as usize];
        pair.data.read_exact_at(bytes, lba * g.lba_bytes).map_err(|e| ImageError::io(path, e))?;
        let stored = &mut sums[..(nlb * SUM_BYTES) as usize];
        let at = g.sums_offset() + lba * SUM_BYTES;
        pair.zones.read_exact_at(stored, at).map_err(|e| ImageError::io(&zones_path(path), e))?;
        for ((block, at), sum) in bytes.chunks_exact(g.lba_bytes as usize).zip(lba..).zip(sums_of(stored)) {
            if zrwa && at >= wp && matches!(sum.latest, SUM_NONE | SUM_ZEROS) {
                continue;
            }
            report.blocks_checked += 1;
            let Verdict::Damaged(damage) = verify(at, block, sum) else { continue };
            match &mut run {
                Some((_, last, d)) if *last + 1 == at && *d == damage => *last = at,
                _ => {
                    report.problems.extend(run.take().map(|r| describe_run(zone, r)));
                    run = Some((at, at, damage));
                }
            }
        }
        lba += nlb;
    }
    report.problems.extend(run.map(|r| describe_run(zone, r)));
    Ok(())
}

fn describe_run(zone: u32, (first, last, damage): (u64, u64, Damage)) -> String {
    match last - first {
        0 => format!("LBA {first} (zone {zone}): {damage}"),
        n => format!("LBAs {first}..={last} (zone {zone}, {} blocks): {damage}", n + 1),
    }
}

/// What `image upgrade` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Upgrade {
    /// The image was already of the current format: nothing was written.
    AlreadyCurrent,
    /// FILE.zones was rewritten in the current format.
    Upgraded {
        /// Blocks given a checksum.
        blocks: u64,
    },
}

/// Converts a format 1 image at `path` to the current format: the data file
/// is kept as it is; the zone file is rewritten with a versioned header, the
/// same records and a checksum for every written block, computed from the
/// data as it is now (format 1 had none to check it against). The new zone
/// file is written beside the old one (created exclusively) and renamed over
/// it only when complete and durable.
pub fn upgrade(path: &Path) -> Result<Upgrade, ImageError> {
    let zones = zones_path(path);
    let pair = Pair::open(path, false)?.ok_or_else(|| ImageError::NoImage { path: path.to_path_buf() })?;
    let g = match decode_header(&super::read_prefix(&pair.zones, &zones, HEADER_BYTES as usize)?) {
        Header::Version1(g) => g,
        Header::Image(_) => return Ok(Upgrade::AlreadyCurrent),
        Header::OtherVersion(version) => return Err(ImageError::Version { path: zones, version }),
        Header::Damaged(what) => return Err(ImageError::damaged(&zones, what)),
        Header::Foreign => return Err(ImageError::NotAnImage { path: zones }),
    };
    if let Some(why) = g.implausible() {
        return Err(ImageError::damaged(&zones, format!("the header's geometry is impossible: {why}")));
    }
    let v1_zones_bytes = HEADER_BYTES + u64::from(g.zones) * RECORD_BYTES;
    for (file, p, want) in [(&pair.zones, zones.as_path(), v1_zones_bytes), (&pair.data, path, g.data_bytes())] {
        let have = length(file, p)?;
        if have != want {
            return Err(ImageError::damaged(p, format!("{have} bytes long, but a format 1 image of {g} has {want}")));
        }
    }
    let records = v1_records(&pair, &zones, &g)?;
    let new_path = PathBuf::from(format!("{}.upgrade", zones.display()));
    let new = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&new_path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => ImageError::UpgradeLeftover { path: new_path.clone() },
            _ => ImageError::io(&new_path, e),
        })?;
    let written = write_v2_zones(&pair, path, &new, &new_path, &g, &records)
        .and_then(|blocks| std::fs::rename(&new_path, &zones).map(|()| blocks).map_err(|e| ImageError::io(&zones, e)));
    if written.is_err() {
        // Ours, created exclusively above: the old zone file is still in place.
        let _ = std::fs::remove_file(&new_path);
    }
    written.map(|blocks| Upgrade::Upgraded { blocks })
}

/// A format 1 image's zone records, each checked (there is no checksum).
fn v1_records(pair: &Pair, zones: &Path, g: &Geometry) -> Result<Vec<Record>, ImageError> {
    let mut bytes = vec![0u8; g.zones as usize * RECORD_BYTES as usize];
    pair.zones.read_exact_at(&mut bytes, HEADER_BYTES).map_err(|e| ImageError::io(zones, e))?;
    (0..)
        .zip(bytes.chunks_exact(RECORD_BYTES as usize))
        .map(|(zone, r)| {
            decode_record(g, zone, r.try_into().expect("a record"), false)
                .map_err(|why| ImageError::damaged(zones, format!("zone {zone}: {why}")))
        })
        .collect()
}

/// Writes a format 2 zone file for `records` to `new`, with the checksums
/// of the written blocks of the data file; returns how many blocks got one.
fn write_v2_zones(
    pair: &Pair,
    path: &Path,
    new: &File,
    new_path: &Path,
    g: &Geometry,
    records: &[Record],
) -> Result<u64, ImageError> {
    let io = |e| ImageError::io(new_path, e);
    new.set_len(g.zones_file_bytes()).map_err(io)?;
    let bytes: Vec<u8> = records.iter().zip(0..).flat_map(|(&r, zone)| encode_record(zone, r)).collect();
    new.write_all_at(&bytes, HEADER_BYTES).map_err(io)?;
    let per = chunk_lbas(g);
    let mut data = vec![0u8; (per * g.lba_bytes) as usize];
    let mut blocks = 0;
    for (zone, &record) in (0..).zip(records) {
        let (mut lba, end) = (g.zslba(zone), written_end(g, zone, record));
        while lba < end {
            let nlb = per.min(end - lba);
            let chunk = &mut data[..(nlb * g.lba_bytes) as usize];
            pair.data.read_exact_at(chunk, lba * g.lba_bytes).map_err(|e| ImageError::io(path, e))?;
            let sums: Vec<Sums> = chunk
                .chunks_exact(g.lba_bytes as usize)
                .zip(lba..)
                .map(|(b, at)| if b.iter().all(|&x| x == 0) { Sums::NONE } else { Sums::written(block_sum(at, b)) })
                .collect();
            blocks += sums.iter().filter(|&&s| s != Sums::NONE).count() as u64;
            new.write_all_at(&bytes_of(&sums), g.sums_offset() + lba * SUM_BYTES).map_err(io)?;
            lba += nlb;
        }
    }
    new.write_all_at(&g.encode(), 0).map_err(io)?;
    new.sync_all().map_err(io)?;
    Ok(blocks)
}
