//! A device image on disk, so that a served device outlives its server
//! (`serve --backing FILE`, `exec --data --backing FILE`).
//!
//! Two files ([`mod@format`] has the bytes): FILE holds the data, sparse, each
//! LBA at `lba * lba_bytes`; FILE.zones holds a versioned header (the
//! geometry the image belongs to), one record per zone (state, write
//! pointer) rewritten in place when the zone changes, and a CRC32C per LBA
//! written with the data. Every answer is written to both before the server
//! gives it (in the kernel's page cache: a restart or `kill -9` of the server
//! keeps it); flush, a clean stop and [`Image::sync`] make it durable
//! (`fdatasync`), so a crash of the machine keeps what was flushed.
//!
//! Only an image this code created is ever written: [`files`] refuses
//! symlinks, devices and other non-regular files, a data file without its
//! zone file (or the reverse), and creates new files exclusively; an existing
//! pair is written only after its header, geometry, file lengths and zone
//! records have been checked.
//!
//! Loading replays the image into a fresh device through ordinary commands
//! (writes up to each write pointer, then the open, close, finish or fault
//! that leaves each zone in its saved state), so the model's flash, buffers
//! and resource accounting are consistent by construction. Timing state
//! (wear, queues) starts afresh. Each block replayed is checked against its
//! checksum on the way: one that fails is replayed as zeros (its bytes are
//! not trusted) and remembered as damaged, and the server answers reads of
//! it with Unrecovered Read Error until a write or a reset replaces it. The
//! server reads the data file only at load (and for copies, which check the
//! blocks they copy): the device in memory answers reads, so the check at
//! load is the one that matters, and damage done to the file while the
//! server runs is found at the next load or by `zonelab image check`.

pub mod check;
pub mod files;
pub mod format;

use crate::error::ImageError;
use crate::ServeError;
use files::{length, zones_path, Pair};
use format::{
    block_sum, bytes_of, decode_header, decode_record, encode_record, sums_of, verify, Header, Record, Sums, Verdict,
    HEADER_BYTES, RECORD_BYTES, SUM_BYTES, SUM_NONE, SUM_ZEROS,
};
pub use format::{Damage, Geometry, VERSION};
use std::collections::BTreeSet;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use zonelab_device::{Command, Mode, Payload, ZoneAction, ZoneState, ZonedDevice};
use zonelab_sim::Nanos;

/// Bytes replayed per write command when loading (below any MDTS).
const REPLAY_BYTES: u64 = 128 << 10;

fn geometry_of<D: ZonedDevice + ?Sized>(device: &D) -> Geometry {
    let l = device.layout();
    Geometry {
        lba_bytes: l.lba_bytes,
        zones: l.zones,
        conventional_zones: l.conventional_zones,
        zone_lbas: l.zone_lbas,
        zcap_lbas: l.zcap_lbas,
    }
}

/// LBAs per chunk when reading or replaying an image of `g`.
fn chunk_lbas(g: &Geometry) -> u64 {
    (REPLAY_BYTES / g.lba_bytes).max(1)
}

/// The LBAs of `zone` whose blocks hold data to check or replay: a
/// conventional zone's whole capacity, a sequential zone's up to its write
/// pointer, none of an offline zone's (which cannot be read).
fn written_end(g: &Geometry, zone: u32, (state, wp, _): Record) -> u64 {
    match state {
        ZoneState::NotWritePointer => g.zslba(zone) + g.zcap_lbas,
        _ => wp,
    }
}

/// `from..to` in replay chunks: (first LBA, LBAs).
fn chunks(g: &Geometry, from: u64, to: u64) -> impl Iterator<Item = (u64, u64)> {
    let per = chunk_lbas(g);
    (from..to).step_by(per as usize).map(move |lba| (lba, per.min(to - lba)))
}

/// Reads up to `n` bytes from the start of `file` (fewer if it is shorter).
fn read_prefix(file: &File, path: &Path, n: usize) -> Result<Vec<u8>, ImageError> {
    let mut buf = vec![0u8; n];
    let mut got = 0;
    while got < n {
        match file.read_at(&mut buf[got..], got as u64) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ImageError::io(path, e)),
        }
    }
    buf.truncate(got);
    Ok(buf)
}

/// The geometry FILE.zones's header gives, or why it gives none: not an
/// image, format 1, another version, a damaged header.
pub(crate) fn read_header(pair: &Pair, data_path: &Path) -> Result<Geometry, ImageError> {
    let path = zones_path(data_path);
    let head = read_prefix(&pair.zones, &path, HEADER_BYTES as usize)?;
    let g = match decode_header(&head) {
        Header::Image(g) => g,
        Header::Version1(_) => return Err(ImageError::Version1 { path, data: data_path.to_path_buf() }),
        Header::OtherVersion(version) => return Err(ImageError::Version { path, version }),
        Header::Damaged(what) => return Err(ImageError::damaged(&path, what)),
        Header::Foreign => return Err(ImageError::NotAnImage { path }),
    };
    match g.implausible() {
        Some(why) => Err(ImageError::damaged(&path, format!("the header's geometry is impossible: {why}"))),
        None => Ok(g),
    }
}

/// Checks that both files have the lengths the geometry gives them: a short
/// file is cut off, a long one is not this image's.
pub(crate) fn check_lengths(pair: &Pair, data_path: &Path, g: &Geometry) -> Result<(), ImageError> {
    let zones = zones_path(data_path);
    for (file, path, want) in
        [(&pair.zones, zones.as_path(), g.zones_file_bytes()), (&pair.data, data_path, g.data_bytes())]
    {
        let have = length(file, path)?;
        if have != want {
            let what = format!("{have} bytes long, but an image of {g} has {want} (cut off, or not this image's file)");
            return Err(ImageError::damaged(path, what));
        }
    }
    Ok(())
}

/// The saved zone records, each checked (checksum, state, write pointer);
/// `Err((zone, why))` for a bad one.
pub(crate) fn read_records(pair: &Pair, g: &Geometry) -> std::io::Result<Vec<Result<Record, String>>> {
    let mut bytes = vec![0u8; g.zones as usize * RECORD_BYTES as usize];
    pair.zones.read_exact_at(&mut bytes, HEADER_BYTES)?;
    let records = bytes.chunks_exact(RECORD_BYTES as usize).zip(0..);
    Ok(records.map(|(r, zone)| decode_record(g, zone, r.try_into().expect("a record"), true)).collect())
}

/// A device image on disk (see the module comment): the data file and the
/// zone file, open for reading and writing.
#[derive(Debug)]
pub struct Image {
    path: PathBuf,
    pair: Pair,
    geometry: Geometry,
    /// The records as last written, to find the zones a command changed.
    records: Vec<Record>,
    /// Blocks that failed their checksums at load and have not been
    /// rewritten since: reads of them fail.
    damaged: BTreeSet<u64>,
    /// LBA ranges written since the zone records were last updated: a write
    /// pointer that moved past anything else skipped it (Finish).
    fresh: Vec<(u64, u64)>,
}

impl Image {
    /// Opens the image at `path` and replays it into `device` (fresh, in data
    /// mode), or creates an empty one for it when neither FILE nor FILE.zones
    /// exists. Returns the image and the simulated time the replay took (the
    /// device's clock after it). Refuses, before writing anything, whatever
    /// is not an image of this device's geometry.
    pub fn open<D: ZonedDevice + ?Sized>(path: &Path, device: &mut D) -> Result<(Self, Nanos), ServeError> {
        if device.config().mode != Mode::Data {
            return Err(ServeError::ImageNeedsDataMode);
        }
        let geometry = geometry_of(device);
        let records = records_of(device);
        let Some(pair) = Pair::open(path, true)? else {
            let pair = Pair::create(path, |pair| create(pair, path, &geometry, &records))?;
            let image = Image::new(path, pair, geometry, records);
            return Ok((image, 0));
        };
        let zones_path = zones_path(path);
        let saved_geometry = read_header(&pair, path)?;
        if saved_geometry != geometry {
            let (saved, expected) = (saved_geometry.to_string(), geometry.to_string());
            return Err(ImageError::Geometry { path: zones_path, saved, expected }.into());
        }
        check_lengths(&pair, path, &geometry)?;
        let saved = read_records(&pair, &geometry)
            .map_err(|e| ImageError::io(&zones_path, e))?
            .into_iter()
            .zip(0..)
            .map(|(r, zone)| r.map_err(|why| ImageError::damaged(&zones_path, format!("zone {zone}: {why}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let mut image = Image::new(path, pair, geometry, records);
        let end_ns = image.replay(device, &saved)?;
        image.records = records_of(device);
        if image.records.iter().zip(&saved).any(|(&restored, &saved)| !restored_as_saved(saved, restored)) {
            return Err(ImageError::Differs { path: path.to_path_buf() }.into());
        }
        Ok((image, end_ns))
    }

    /// [`Image::open`], refusing an image with damaged blocks: for a batch
    /// (`exec --backing`), whose reads go to the device directly and so could
    /// not be answered with an error.
    pub fn open_undamaged<D: ZonedDevice + ?Sized>(path: &Path, device: &mut D) -> Result<(Self, Nanos), ServeError> {
        let (image, end_ns) = Image::open(path, device)?;
        match image.damaged.first() {
            None => Ok((image, end_ns)),
            Some(&first) => {
                let (path, count) = (path.to_path_buf(), image.damaged.len());
                Err(ImageError::DamagedBlocks { path, count, first }.into())
            }
        }
    }

    fn new(path: &Path, pair: Pair, geometry: Geometry, records: Vec<Record>) -> Self {
        let path = path.to_path_buf();
        Image { path, pair, geometry, records, damaged: BTreeSet::new(), fresh: Vec::new() }
    }

    /// The blocks that failed their checksums at load and have not been
    /// rewritten since.
    pub fn damaged(&self) -> &BTreeSet<u64> {
        &self.damaged
    }

    /// The first damaged block among `nlb` from `slba`, if any: a read of
    /// them must fail with Unrecovered Read Error.
    pub fn first_damaged(&self, slba: u64, nlb: u64) -> Option<u64> {
        self.damaged.range(slba..slba.saturating_add(nlb)).next().copied()
    }

    fn io_error(&self, source: std::io::Error) -> ImageError {
        ImageError::io(&self.path, source)
    }

    fn zones_io_error(&self, source: std::io::Error) -> ImageError {
        ImageError::io(&zones_path(&self.path), source)
    }

    fn write_record(&self, zone: u32) -> Result<(), ImageError> {
        let r = encode_record(zone, self.records[zone as usize]);
        let at = HEADER_BYTES + u64::from(zone) * RECORD_BYTES;
        self.pair.zones.write_all_at(&r, at).map_err(|e| self.zones_io_error(e))
    }

    fn read_sums(&self, slba: u64, nlb: u64) -> Result<Vec<Sums>, ImageError> {
        let mut bytes = vec![0u8; (nlb * SUM_BYTES) as usize];
        let at = self.geometry.sums_offset() + slba * SUM_BYTES;
        self.pair.zones.read_exact_at(&mut bytes, at).map_err(|e| self.zones_io_error(e))?;
        Ok(sums_of(&bytes))
    }

    fn write_sums(&self, slba: u64, sums: &[Sums]) -> Result<(), ImageError> {
        let at = self.geometry.sums_offset() + slba * SUM_BYTES;
        self.pair.zones.write_all_at(&bytes_of(sums), at).map_err(|e| self.zones_io_error(e))
    }

    /// Reads the blocks from `slba` into `bytes`, each checked: a block that
    /// reads as zeros or fails its check is zeros in `bytes`. Returns the
    /// blocks that failed.
    fn read_checked(&self, slba: u64, bytes: &mut [u8]) -> Result<Vec<(u64, Damage)>, ImageError> {
        let lba_bytes = self.geometry.lba_bytes as usize;
        self.pair.data.read_exact_at(bytes, slba * lba_bytes as u64).map_err(|e| self.io_error(e))?;
        let sums = self.read_sums(slba, (bytes.len() / lba_bytes) as u64)?;
        let mut damaged = Vec::new();
        for ((block, lba), stored) in bytes.chunks_exact_mut(lba_bytes).zip(slba..).zip(sums) {
            match verify(lba, block, stored) {
                Verdict::Data => {}
                Verdict::Zeros => block.fill(0),
                Verdict::Damaged(damage) => {
                    block.fill(0);
                    damaged.push((lba, damage));
                }
            }
        }
        Ok(damaged)
    }

    /// Writes `bytes` at `slba` (data a command just wrote) with their
    /// checksums; they replace any damaged block there. The checksums go
    /// first: an overwrite in place keeps the old one too (see [`Sums`]), so
    /// that being killed before the data is written leaves a block that
    /// verifies; a write at a write pointer is not part of the image until
    /// its zone record moves the pointer past it, which comes last.
    pub fn write_data(&mut self, slba: u64, bytes: &[u8]) -> Result<(), ServeError> {
        let lba_bytes = self.geometry.lba_bytes as usize;
        let nlb = (bytes.len() / lba_bytes) as u64;
        let conventional_end = self.geometry.zslba(self.geometry.conventional_zones);
        let held = if slba < conventional_end { self.read_sums(slba, nlb)? } else { vec![Sums::NONE; nlb as usize] };
        let sums: Vec<Sums> = (bytes.chunks_exact(lba_bytes).zip(slba..).zip(held))
            .map(|((b, lba), held)| match lba < conventional_end {
                true => held.overwritten(block_sum(lba, b)),
                false => Sums::written(block_sum(lba, b)),
            })
            .collect();
        self.write_sums(slba, &sums)?;
        self.pair.data.write_all_at(bytes, slba * lba_bytes as u64).map_err(|e| self.io_error(e))?;
        self.written(slba, nlb);
        Ok(())
    }

    /// Records that `nlb` blocks from `slba` now read as zeros (Write
    /// Zeroes): only their checksums change, so the file stays sparse.
    pub fn write_zeros(&mut self, slba: u64, nlb: u64) -> Result<(), ServeError> {
        self.write_sums(slba, &vec![Sums::ZEROS; nlb as usize])?;
        self.written(slba, nlb);
        Ok(())
    }

    fn written(&mut self, slba: u64, nlb: u64) {
        let end = slba + nlb;
        let replaced: Vec<u64> = self.damaged.range(slba..end).copied().collect();
        for lba in replaced {
            self.damaged.remove(&lba);
        }
        self.fresh.push((slba, end));
    }

    /// Copies single blocks (source, destination) within the image, as a
    /// Simple Copy or a zone_compaction did on the device. A source block that
    /// fails its check is an error (the copy would spread the damage).
    pub fn copy_blocks(&mut self, pairs: impl Iterator<Item = (u64, u64)>) -> Result<(), ServeError> {
        let mut block = vec![0u8; self.geometry.lba_bytes as usize];
        for (src, dst) in pairs {
            if let Some(&(lba, damage)) = self.read_checked(src, &mut block)?.first() {
                return Err(ImageError::CopySource { path: self.path.clone(), lba, damage }.into());
            }
            self.write_data(dst, &block)?;
        }
        Ok(())
    }

    /// Writes the records of every zone whose state or write pointer changed
    /// (a command can change zones besides its own: an implicit open closes
    /// another zone, select-all touches them all). A write pointer that
    /// moved past blocks no write gave (Finish) marks them as reading zeros
    /// first, so stale bytes there are never taken for data; one that went
    /// back (Reset) forgets the damage past it.
    pub fn update_zones<D: ZonedDevice + ?Sized>(&mut self, device: &D) -> Result<(), ServeError> {
        self.update_records(device, true)
    }

    /// [`Image::update_zones`]; `forget`: a zone that took a ZRWA forgets
    /// the checksums above its write pointer ([`Image::save`] did it first).
    fn update_records<D: ZonedDevice + ?Sized>(&mut self, device: &D, forget: bool) -> Result<(), ServeError> {
        let fresh = std::mem::take(&mut self.fresh);
        let g = self.geometry;
        let zones = device.zones();
        for zone in 0..g.zones {
            let now = (zones.state(zone), zones.wp(zone), zones.has_zrwa(zone));
            let (_, old_wp, old_zrwa) = self.records[zone as usize];
            if now == self.records[zone as usize] {
                continue;
            }
            // A zone's ZRWA holds writes above its write pointer, which a
            // commit or finish then passes: of the blocks it passes, those
            // no write gave since the ZRWA was taken have no checksum.
            if now.1 > old_wp && zone >= g.conventional_zones {
                match old_zrwa {
                    false => self.mark_skipped(old_wp, now.1, &fresh)?,
                    true => self.mark_unwritten(old_wp, now.1)?,
                }
            }
            if forget && now.2 && !old_zrwa {
                self.forget_above(now.1, g.zslba(zone) + g.zcap_lbas)?;
            }
            if now.1 < old_wp {
                let gone: Vec<u64> = self.damaged.range(now.1..g.zslba(zone) + g.zone_lbas).copied().collect();
                for lba in gone {
                    self.damaged.remove(&lba);
                }
            }
            self.records[zone as usize] = now;
            self.write_record(zone)?;
        }
        Ok(())
    }

    /// Forgets the checksums of blocks `from..to` (above a zone's write
    /// pointer, where a ZRWA is taken): stale blocks of the zone's data before
    /// its last reset must not pass for its window's. Bounded by a zone's capacity.
    fn forget_above(&self, from: u64, to: u64) -> Result<(), ImageError> {
        for (lba, nlb) in chunks(&self.geometry, from, to) {
            self.write_sums(lba, &vec![Sums::NONE; nlb as usize])?;
        }
        Ok(())
    }

    /// Marks the blocks of `from..to` that have no checksum as reading zeros.
    fn mark_unwritten(&self, from: u64, to: u64) -> Result<(), ImageError> {
        for (lba, nlb) in chunks(&self.geometry, from, to) {
            let mut sums = self.read_sums(lba, nlb)?;
            if sums.iter().any(|s| s.latest == SUM_NONE) {
                for s in sums.iter_mut().filter(|s| s.latest == SUM_NONE) {
                    *s = Sums::ZEROS;
                }
                self.write_sums(lba, &sums)?;
            }
        }
        Ok(())
    }

    /// Marks the blocks of `from..to` that no range of `fresh` wrote as reading zeros.
    fn mark_skipped(&self, from: u64, to: u64, fresh: &[(u64, u64)]) -> Result<(), ImageError> {
        let mut covered: Vec<(u64, u64)> = fresh.iter().filter(|&&(s, e)| s < to && e > from).copied().collect();
        covered.sort_unstable();
        let mut at = from;
        for (start, end) in covered.into_iter().chain([(to, to)]) {
            if start > at {
                self.write_sums(at, &vec![Sums::ZEROS; (start.min(to) - at) as usize])?;
            }
            at = at.max(end);
            if at >= to {
                break;
            }
        }
        Ok(())
    }

    /// Writes the device's data and zone states to the image and makes them
    /// durable (`exec --backing`: a batch saves once, at its end). The data is
    /// read back through Read commands submitted at `at_ns`; blocks the image
    /// already holds are not rewritten, so the file stays sparse.
    pub fn save<D: ZonedDevice + ?Sized>(&mut self, device: &mut D, mut at_ns: Nanos) -> Result<(), ServeError> {
        let g = self.geometry;
        assert_eq!(geometry_of(device), g, "an image is saved from the device it was opened with");
        let per = chunk_lbas(&g);
        let mut got = vec![0u8; (per * g.lba_bytes) as usize];
        let zrwa_lbas = device.zones().zrwa_limits().lbas;
        for zone in 0..g.zones {
            let record = (device.zones().state(zone), device.zones().wp(zone), device.zones().has_zrwa(zone));
            let mut end = if record.0 == ZoneState::Offline { g.zslba(zone) } else { written_end(&g, zone, record) };
            if record.2 {
                // The window too: its blocks read as written or as zeros.
                if !self.records[zone as usize].2 {
                    self.forget_above(record.1, g.zslba(zone) + g.zcap_lbas)?;
                }
                end = (record.1 + zrwa_lbas).min(g.zslba(zone) + g.zcap_lbas);
            }
            let mut lba = g.zslba(zone);
            while lba < end {
                let nlb = per.min(end - lba);
                let len = (nlb * g.lba_bytes) as usize;
                let c = device.submit(at_ns, &Command::Read { slba: lba, nlb: nlb as u32 }, Some(&mut got[..len]));
                if !c.status.is_success() {
                    return Err(ImageError::ReadBack { path: self.path.clone(), zone, status: c.status }.into());
                }
                at_ns = c.complete_ns;
                self.save_chunk(lba, &got[..len])?;
                lba += nlb;
            }
            // Every block up to the write pointer was just saved: none is skipped.
            self.fresh.push((g.zslba(zone), end));
        }
        self.update_records(device, false)?;
        self.sync().map_err(|e| self.io_error(e).into())
    }

    /// Saves the blocks `got` from `slba` where the image does not already
    /// hold them, checksums first as [`Image::write_data`] does. A damaged
    /// block the device was never given stays as it is, so that saving never
    /// makes its damage look like data.
    fn save_chunk(&mut self, slba: u64, got: &[u8]) -> Result<(), ImageError> {
        let lba_bytes = self.geometry.lba_bytes as usize;
        let conventional_end = self.geometry.zslba(self.geometry.conventional_zones);
        let mut held = vec![0u8; got.len()];
        self.pair.data.read_exact_at(&mut held, slba * lba_bytes as u64).map_err(|e| self.io_error(e))?;
        let stored = self.read_sums(slba, (got.len() / lba_bytes) as u64)?;
        let mut sums = stored.clone();
        let mut rewrite = Vec::new();
        let blocks = got.chunks_exact(lba_bytes).zip(held.chunks_exact(lba_bytes));
        for (((want, have), lba), sum) in blocks.zip(slba..).zip(sums.iter_mut()) {
            let zero = want.iter().all(|&b| b == 0);
            let kept = match verify(lba, have, *sum) {
                Verdict::Data => want == have,
                Verdict::Zeros => zero,
                Verdict::Damaged(_) => false,
            };
            if kept || self.damaged.contains(&lba) {
                continue;
            }
            *sum = match (zero, lba < conventional_end) {
                // Zeros need no data: the file stays sparse.
                (true, _) => Sums::ZEROS,
                (false, true) => sum.overwritten(block_sum(lba, want)),
                (false, false) => Sums::written(block_sum(lba, want)),
            };
            if !zero {
                rewrite.push((lba, want));
            }
        }
        if sums != stored {
            self.write_sums(slba, &sums)?;
        }
        for (lba, want) in rewrite {
            self.pair.data.write_all_at(want, lba * lba_bytes as u64).map_err(|e| self.io_error(e))?;
        }
        Ok(())
    }

    /// Makes everything written so far durable.
    pub fn sync(&self) -> std::io::Result<()> {
        self.pair.data.sync_data()?;
        self.pair.zones.sync_data()
    }

    /// The runs of whole replay chunks in LBAs `from..to` where the data
    /// file or the checksums may hold something (not holes in both), in
    /// order and apart.
    fn chunks_holding_data(&self, from: u64, to: u64) -> Result<Vec<(u64, u64)>, ImageError> {
        let g = self.geometry;
        let per = chunk_lbas(&g);
        let sums_at = g.sums_offset();
        let data =
            files::data_ranges(&self.pair.data, from * g.lba_bytes, to * g.lba_bytes).map_err(|e| self.io_error(e))?;
        let sums = files::data_ranges(&self.pair.zones, sums_at + from * SUM_BYTES, sums_at + to * SUM_BYTES)
            .map_err(|e| self.zones_io_error(e))?;
        let lbas_of =
            |(start, end): (u64, u64), base: u64, unit: u64| ((start - base) / unit, (end - base).div_ceil(unit));
        let mut runs: Vec<(u64, u64)> = data
            .into_iter()
            .map(|r| lbas_of(r, 0, g.lba_bytes))
            .chain(sums.into_iter().map(|r| lbas_of(r, sums_at, SUM_BYTES)))
            // Whole chunks, as a full replay takes them.
            .map(|(start, end)| (from + (start - from) / per * per, (from + (end - from).div_ceil(per) * per).min(to)))
            .collect();
        runs.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(runs.len());
        for (start, end) in runs {
            match merged.last_mut() {
                Some((_, last_end)) if start <= *last_end => *last_end = (*last_end).max(end),
                _ => merged.push((start, end)),
            }
        }
        debug_assert!(merged.iter().all(|&(s, e)| from <= s && s < e && e <= to));
        Ok(merged)
    }

    /// Rebuilds the saved zones on `device`; returns its clock afterwards.
    fn replay<D: ZonedDevice + ?Sized>(&mut self, device: &mut D, saved: &[Record]) -> Result<Nanos, ServeError> {
        let mut t: Nanos = 0;
        // Zones that end inactive first, then closed, then open ones, so the
        // replay never holds more active or open zones than the image does.
        let rank = |s: ZoneState| match s {
            ZoneState::Closed => 1,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => 2,
            _ => 0,
        };
        let mut order: Vec<u32> = (0..self.geometry.zones).collect();
        order.sort_by_key(|&z| rank(saved[z as usize].0));
        for zone in order {
            t = self.replay_zone(device, zone, saved[zone as usize], t)?;
        }
        Ok(t)
    }

    fn replay_zone<D: ZonedDevice + ?Sized>(
        &mut self,
        device: &mut D,
        zone: u32,
        (state, wp, zrwa): Record,
        mut t: Nanos,
    ) -> Result<Nanos, ServeError> {
        let g = self.geometry;
        let zslba = g.zslba(zone);
        let conventional = state == ZoneState::NotWritePointer;
        let end = written_end(&g, zone, (state, wp, zrwa));
        let per = chunk_lbas(&g);
        let mut buf = vec![0u8; (per * g.lba_bytes) as usize];
        // A conventional zone's chunks that are holes in both files read as
        // zeros with no checksum: nothing to check or replay there.
        let runs = if conventional { self.chunks_holding_data(zslba, end)? } else { vec![(zslba, end)] };
        for (lba, nlb) in runs.into_iter().flat_map(|(from, to)| chunks(&g, from, to)) {
            let bytes = &mut buf[..(nlb * g.lba_bytes) as usize];
            let damaged = self.read_checked(lba, bytes)?;
            // An offline zone cannot be read: its blocks need no answer.
            if state != ZoneState::Offline {
                self.damaged.extend(damaged.into_iter().map(|(lba, _)| lba));
            }
            // A conventional zone's holes read as zeros anyway: only written blocks are replayed.
            if !conventional || bytes.iter().any(|&b| b != 0) {
                let cmd = Command::Write {
                    slba: lba,
                    nlb: nlb as u32,
                    payload: Payload::Bytes(bytes),
                    fua: false,
                    placement: None,
                };
                t = self.replay_command(device, t, &cmd, zone)?;
            }
        }
        if zrwa {
            return self.replay_zrwa(device, zone, (state, wp), t);
        }
        let action = match state {
            ZoneState::Closed => Some(ZoneAction::Close),
            ZoneState::Full | ZoneState::ReadOnly if wp < zslba + g.zcap_lbas => Some(ZoneAction::Finish),
            ZoneState::ExplicitlyOpened => Some(ZoneAction::Open),
            _ => None,
        };
        if let Some(action) = action {
            let cmd = Command::ZoneMgmtSend { action, slba: zslba, select_all: false };
            t = self.replay_command(device, t, &cmd, zone)?;
        }
        if matches!(state, ZoneState::ReadOnly | ZoneState::Offline) {
            device.set_zone_state(zslba, state).map_err(|status| ImageError::Restore {
                path: self.path.clone(),
                zone,
                state,
                status,
            })?;
        }
        Ok(t)
    }

    /// The rest of a zone that holds a ZRWA, its data up to the write
    /// pointer replayed: Open with ZRWA Allocate, the window's blocks that
    /// have a checksum written back uncommitted (within the ZRWA, so no
    /// write commits), and the state it was saved in.
    fn replay_zrwa<D: ZonedDevice + ?Sized>(
        &mut self,
        device: &mut D,
        zone: u32,
        (state, wp): (ZoneState, u64),
        mut t: Nanos,
    ) -> Result<Nanos, ServeError> {
        let g = self.geometry;
        let zslba = g.zslba(zone);
        let window_end = (wp + device.zones().zrwa_limits().lbas).min(zslba + g.zcap_lbas);
        let runs = self.window_runs(wp, window_end)?;
        let zone_cmd = |action| Command::ZoneMgmtSend { action, slba: zslba, select_all: false };
        t = self.replay_command(device, t, &zone_cmd(ZoneAction::OpenZrwa), zone)?;
        // A write opens a closed zone implicitly.
        let implicit = state == ZoneState::ImplicitlyOpened && !runs.is_empty();
        if implicit {
            t = self.replay_command(device, t, &zone_cmd(ZoneAction::Close), zone)?;
        }
        let mut buf = Vec::new();
        for (slba, end) in runs {
            buf.resize(((end - slba) * g.lba_bytes) as usize, 0);
            let damaged = self.read_checked(slba, &mut buf)?;
            self.damaged.extend(damaged.into_iter().map(|(lba, _)| lba));
            let cmd = Command::Write {
                slba,
                nlb: u32::try_from(end - slba).expect("a window's LBAs fit a command"),
                payload: Payload::Bytes(&buf),
                fua: false,
                placement: None,
            };
            t = self.replay_command(device, t, &cmd, zone)?;
        }
        if state == ZoneState::Closed {
            t = self.replay_command(device, t, &zone_cmd(ZoneAction::Close), zone)?;
        }
        Ok(t)
    }

    /// The runs of blocks in `from..to` that hold written data (a checksum
    /// of a write, not "never written" or "reads as zeros"), each at most a
    /// replay chunk.
    fn window_runs(&self, from: u64, to: u64) -> Result<Vec<(u64, u64)>, ImageError> {
        let per = chunk_lbas(&self.geometry);
        let sums = self.read_sums(from, to.saturating_sub(from))?;
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for (lba, s) in (from..to).zip(sums) {
            if matches!(s.latest, SUM_NONE | SUM_ZEROS) {
                continue;
            }
            match runs.last_mut() {
                Some((start, end)) if *end == lba && lba - *start < per => *end += 1,
                _ => runs.push((lba, lba + 1)),
            }
        }
        Ok(runs)
    }

    fn replay_command<D: ZonedDevice + ?Sized>(
        &self,
        device: &mut D,
        t: Nanos,
        cmd: &Command<'_>,
        zone: u32,
    ) -> Result<Nanos, ServeError> {
        let c = device.submit(t, cmd, None);
        if !c.status.is_success() {
            return Err(ImageError::Replay { path: self.path.clone(), zone, status: c.status }.into());
        }
        Ok(c.complete_ns)
    }
}

/// Fills a newly created pair: the lengths (sparse), the header, the zone
/// records of a fresh device; made durable so that the image exists whole.
fn create(pair: &Pair, path: &Path, g: &Geometry, records: &[Record]) -> Result<(), ImageError> {
    let zones = zones_path(path);
    pair.data.set_len(g.data_bytes()).map_err(|e| ImageError::io(path, e))?;
    let io = |e| ImageError::io(&zones, e);
    pair.zones.set_len(g.zones_file_bytes()).map_err(io)?;
    let bytes: Vec<u8> = records.iter().zip(0..).flat_map(|(&r, zone)| encode_record(zone, r)).collect();
    pair.zones.write_all_at(&bytes, HEADER_BYTES).map_err(io)?;
    // The header last: a pair cut short by a crash here is refused as not an image, never loaded.
    pair.zones.write_all_at(&g.encode(), 0).map_err(io)?;
    pair.data.sync_all().map_err(|e| ImageError::io(path, e))?;
    pair.zones.sync_all().map_err(io)
}

fn records_of<D: ZonedDevice + ?Sized>(device: &D) -> Vec<Record> {
    let z = device.zones();
    (0..z.len()).map(|zone| (z.state(zone), z.wp(zone), z.has_zrwa(zone))).collect()
}

/// Whether a zone restored as `restored` is the one saved as `saved`: an
/// implicitly opened zone holding a ZRWA (a write to it or a commit opened
/// it) comes back opened explicitly when its window holds no data, since
/// only a write can open a zone implicitly.
fn restored_as_saved(saved: Record, restored: Record) -> bool {
    saved == restored
        || (saved.0 == ZoneState::ImplicitlyOpened
            && saved.2
            && (restored.0, restored.1, restored.2) == (ZoneState::ExplicitlyOpened, saved.1, true))
}
