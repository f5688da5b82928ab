//! A device image on disk, so that a served device outlives its server
//! (`serve --backing FILE`, `exec --data --backing FILE`).
//!
//! Two files: FILE holds the data, sparse, each LBA at `lba * lba_bytes`;
//! FILE.zones holds a header (the geometry the image belongs to) and one
//! 16-byte record per zone (state, write pointer), rewritten in place when
//! the zone changes. Every answer is written to both before the server gives
//! it (in the kernel's page cache: a restart or `kill -9` of the server keeps
//! it); flush, a clean stop and [`Image::sync`] make it durable
//! (`fdatasync`), so a crash of the machine keeps what was flushed.
//!
//! Loading replays the image into a fresh device through ordinary commands
//! (writes up to each write pointer, then the open, close, finish or fault
//! that leaves each zone in its saved state), so the model's flash, buffers
//! and resource accounting are consistent by construction. Timing state
//! (wear, queues) starts afresh.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use zonelab_device::{Command, Mode, Payload, ZoneAction, ZoneState, ZoneType, ZonedDevice};
use zonelab_sim::Nanos;

use crate::ServeError;

const MAGIC: &[u8; 8] = b"ZLIMAGE1";
const HEADER_BYTES: u64 = 64;
const RECORD_BYTES: u64 = 16;
/// Bytes replayed per write command when loading (below any MDTS).
const REPLAY_BYTES: u64 = 128 << 10;

/// The geometry an image belongs to: loading it into another is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Geometry {
    lba_bytes: u64,
    zones: u32,
    conventional_zones: u32,
    zone_lbas: u64,
    zcap_lbas: u64,
}

impl Geometry {
    fn of<D: ZonedDevice + ?Sized>(device: &D) -> Self {
        let l = device.layout();
        Geometry {
            lba_bytes: l.lba_bytes,
            zones: l.zones,
            conventional_zones: l.conventional_zones,
            zone_lbas: l.zone_lbas,
            zcap_lbas: l.zcap_lbas,
        }
    }

    fn encode(&self) -> [u8; HEADER_BYTES as usize] {
        let mut h = [0u8; HEADER_BYTES as usize];
        h[..8].copy_from_slice(MAGIC);
        h[8..16].copy_from_slice(&self.lba_bytes.to_le_bytes());
        h[16..20].copy_from_slice(&self.zones.to_le_bytes());
        h[20..24].copy_from_slice(&self.conventional_zones.to_le_bytes());
        h[24..32].copy_from_slice(&self.zone_lbas.to_le_bytes());
        h[32..40].copy_from_slice(&self.zcap_lbas.to_le_bytes());
        h
    }

    fn decode(h: &[u8; HEADER_BYTES as usize]) -> Option<Self> {
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
        let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().expect("4 bytes"));
        (&h[..8] == MAGIC).then(|| Geometry {
            lba_bytes: u64_at(8),
            zones: u32_at(16),
            conventional_zones: u32_at(20),
            zone_lbas: u64_at(24),
            zcap_lbas: u64_at(32),
        })
    }
}

/// A zone's saved state and write pointer (absolute LBA).
type Record = (ZoneState, u64);

fn state_code(state: ZoneState) -> u8 {
    ZoneState::SEQUENTIAL.iter().position(|&s| s == state).map_or(0xff, |i| i as u8)
}

fn state_of_code(code: u8) -> Option<ZoneState> {
    match code {
        0xff => Some(ZoneState::NotWritePointer),
        c => ZoneState::SEQUENTIAL.get(usize::from(c)).copied(),
    }
}

/// A device image on disk (see the module comment): the data file and the
/// zone records, open for reading and writing.
#[derive(Debug)]
pub struct Image {
    path: PathBuf,
    data: File,
    zones: File,
    geometry: Geometry,
    /// The records as last written, to find the zones a command changed.
    records: Vec<Record>,
}

impl Image {
    /// Opens the image at `path` and replays it into `device` (fresh, in data
    /// mode), or creates an empty one for it. Returns the image and the
    /// simulated time the replay took (the device's clock after it).
    pub fn open<D: ZonedDevice + ?Sized>(path: &Path, device: &mut D) -> Result<(Self, Nanos), ServeError> {
        if device.config().mode != Mode::Data {
            return Err(ServeError::ImageNeedsDataMode);
        }
        let geometry = Geometry::of(device);
        let zones_path = zones_path(path);
        let exists = zones_path.exists();
        let open = |p: &Path| OpenOptions::new().read(true).write(true).create(!exists).open(p);
        let describe = |p: &Path, e: std::io::Error| ServeError::ImageIo { path: p.to_path_buf(), source: e };
        let data = open(path).map_err(|e| describe(path, e))?;
        let zones = open(&zones_path).map_err(|e| describe(&zones_path, e))?;
        let mut image = Image { path: path.to_path_buf(), data, zones, geometry, records: records_of(device) };
        if !exists {
            image.create().map_err(|e| describe(path, e))?;
            return Ok((image, 0));
        }
        let saved = image.read_records()?;
        let end_ns = image.replay(device, &saved)?;
        image.records = records_of(device);
        if image.records != saved {
            return Err(ServeError::ImageDiffers { path: path.to_path_buf() });
        }
        Ok((image, end_ns))
    }

    fn create(&mut self) -> std::io::Result<()> {
        let g = &self.geometry;
        self.data.set_len(u64::from(g.zones) * g.zone_lbas * g.lba_bytes)?;
        self.zones.set_len(HEADER_BYTES + u64::from(g.zones) * RECORD_BYTES)?;
        self.zones.write_all_at(&g.encode(), 0)?;
        for zone in 0..g.zones {
            self.write_record(zone)?;
        }
        self.sync()
    }

    fn read_records(&self) -> Result<Vec<Record>, ServeError> {
        let path = zones_path(&self.path);
        let io = |source| ServeError::ImageIo { path: path.clone(), source };
        let mut header = [0u8; HEADER_BYTES as usize];
        self.zones.read_exact_at(&mut header, 0).map_err(io)?;
        let saved = Geometry::decode(&header).ok_or_else(|| ServeError::NotAnImage { path: path.clone() })?;
        if saved != self.geometry {
            let (saved, expected) = (format!("{saved:?}"), format!("{:?}", self.geometry));
            return Err(ServeError::ImageGeometry { path: path.clone(), saved, expected });
        }
        let g = &self.geometry;
        (0..g.zones)
            .map(|zone| {
                let mut r = [0u8; RECORD_BYTES as usize];
                self.zones.read_exact_at(&mut r, HEADER_BYTES + u64::from(zone) * RECORD_BYTES).map_err(io)?;
                let state = state_of_code(r[0]).ok_or_else(|| ServeError::ImageStateCode {
                    path: path.clone(),
                    zone,
                    code: r[0],
                })?;
                let wp = u64::from_le_bytes(r[8..16].try_into().expect("8 bytes"));
                let zslba = u64::from(zone) * g.zone_lbas;
                if wp < zslba || wp > zslba + g.zcap_lbas {
                    return Err(ServeError::ImageWritePointer { path: path.clone(), zone, wp });
                }
                Ok((state, wp))
            })
            .collect()
    }

    fn write_record(&self, zone: u32) -> std::io::Result<()> {
        let (state, wp) = self.records[zone as usize];
        let mut r = [0u8; RECORD_BYTES as usize];
        r[0] = state_code(state);
        r[8..16].copy_from_slice(&wp.to_le_bytes());
        self.zones.write_all_at(&r, HEADER_BYTES + u64::from(zone) * RECORD_BYTES)
    }

    /// Writes `bytes` at `slba` (data a command just wrote).
    pub fn write_data(&self, slba: u64, bytes: &[u8]) -> Result<(), ServeError> {
        self.data.write_all_at(bytes, slba * self.geometry.lba_bytes).map_err(|e| self.io_error(e))
    }

    fn io_error(&self, source: std::io::Error) -> ServeError {
        ServeError::ImageIo { path: self.path.clone(), source }
    }

    /// Copies single blocks (source, destination) within the image, as a
    /// Simple Copy or a zone_compaction did on the device.
    pub fn copy_blocks(&self, pairs: impl Iterator<Item = (u64, u64)>) -> Result<(), ServeError> {
        let lba_bytes = self.geometry.lba_bytes;
        let mut block = vec![0u8; lba_bytes as usize];
        for (src, dst) in pairs {
            self.data
                .read_exact_at(&mut block, src * lba_bytes)
                .or_else(|e| match e.kind() {
                    // Past the sparse file's end: never written, reads as zeros.
                    std::io::ErrorKind::UnexpectedEof => {
                        block.fill(0);
                        Ok(())
                    }
                    _ => Err(e),
                })
                .map_err(|e| self.io_error(e))?;
            self.write_data(dst, &block)?;
        }
        Ok(())
    }

    /// Writes the records of every zone whose state or write pointer changed
    /// (a command can change zones besides its own: an implicit open closes
    /// another zone, select-all touches them all).
    pub fn update_zones<D: ZonedDevice + ?Sized>(&mut self, device: &D) -> Result<(), ServeError> {
        let zones = device.zones();
        for zone in 0..self.geometry.zones {
            let now = (zones.state(zone), zones.wp(zone));
            if now != self.records[zone as usize] {
                self.records[zone as usize] = now;
                self.write_record(zone).map_err(|e| self.io_error(e))?;
            }
        }
        Ok(())
    }

    /// Writes the device's data and zone states to the image and makes them
    /// durable (`exec --backing`: a batch saves once, at its end). The data is
    /// read back through Read commands submitted at `at_ns`; chunks the image
    /// already holds are not rewritten, so the file stays sparse.
    pub fn save<D: ZonedDevice + ?Sized>(&mut self, device: &mut D, mut at_ns: Nanos) -> Result<(), ServeError> {
        let g = self.geometry;
        assert_eq!(Geometry::of(device), g, "an image is saved from the device it was opened with");
        let per = REPLAY_BYTES / g.lba_bytes;
        let mut got = vec![0u8; REPLAY_BYTES as usize];
        let mut held = vec![0u8; REPLAY_BYTES as usize];
        let path = self.path.clone();
        let io = |source| ServeError::ImageIo { path: path.clone(), source };
        for zone in 0..g.zones {
            let zslba = u64::from(zone) * g.zone_lbas;
            let end = match device.zones().state(zone) {
                ZoneState::Offline => continue,
                ZoneState::NotWritePointer => zslba + g.zcap_lbas,
                _ => device.zones().wp(zone),
            };
            let mut lba = zslba;
            while lba < end {
                let nlb = per.min(end - lba);
                let len = (nlb * g.lba_bytes) as usize;
                let c = device.submit(at_ns, &Command::Read { slba: lba, nlb: nlb as u32 }, Some(&mut got[..len]));
                if !c.status.is_success() {
                    return Err(ServeError::ImageReadBack { path, zone, status: c.status });
                }
                at_ns = c.complete_ns;
                self.data.read_exact_at(&mut held[..len], lba * g.lba_bytes).map_err(io)?;
                if got[..len] != held[..len] {
                    self.data.write_all_at(&got[..len], lba * g.lba_bytes).map_err(io)?;
                }
                lba += nlb;
            }
        }
        self.update_zones(device)?;
        self.sync().map_err(io)
    }

    /// Makes everything written so far durable.
    pub fn sync(&self) -> std::io::Result<()> {
        self.data.sync_data()?;
        self.zones.sync_data()
    }

    /// Rebuilds the saved zones on `device`; returns its clock afterwards.
    fn replay<D: ZonedDevice + ?Sized>(&self, device: &mut D, saved: &[Record]) -> Result<Nanos, ServeError> {
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
        &self,
        device: &mut D,
        zone: u32,
        (state, wp): Record,
        mut t: Nanos,
    ) -> Result<Nanos, ServeError> {
        let g = self.geometry;
        let zslba = u64::from(zone) * g.zone_lbas;
        let conventional = device.zones().zone_type(zone) == ZoneType::Conventional;
        let end = if conventional { zslba + g.zcap_lbas } else { wp };
        let per = REPLAY_BYTES / g.lba_bytes;
        let mut buf = vec![0u8; REPLAY_BYTES as usize];
        let mut lba = zslba;
        while lba < end {
            let nlb = per.min(end - lba);
            let bytes = &mut buf[..(nlb * g.lba_bytes) as usize];
            self.data.read_exact_at(bytes, lba * g.lba_bytes).map_err(|e| self.io_error(e))?;
            // A conventional zone's holes read as zeros anyway: only written blocks are replayed.
            if !conventional || bytes.iter().any(|&b| b != 0) {
                let cmd = Command::Write { slba: lba, nlb: nlb as u32, payload: Payload::Bytes(bytes), fua: false };
                t = self.replay_command(device, t, &cmd, zone)?;
            }
            lba += nlb;
        }
        let action = match state {
            ZoneState::Closed => Some(ZoneAction::Close),
            ZoneState::Full | ZoneState::ReadOnly if wp < zslba + g.zcap_lbas => Some(ZoneAction::Finish),
            ZoneState::ExplicitlyOpened => Some(ZoneAction::Open),
            _ => None,
        };
        if let Some(action) = action {
            t = self.replay_command(
                device,
                t,
                &Command::ZoneMgmtSend { action, slba: zslba, select_all: false },
                zone,
            )?;
        }
        if matches!(state, ZoneState::ReadOnly | ZoneState::Offline) {
            device.set_zone_state(zslba, state).map_err(|status| ServeError::ImageRestore { zone, state, status })?;
        }
        Ok(t)
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
            return Err(ServeError::ImageReplay { path: self.path.clone(), zone, status: c.status });
        }
        Ok(c.complete_ns)
    }
}

fn zones_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".zones");
    PathBuf::from(p)
}

fn records_of<D: ZonedDevice + ?Sized>(device: &D) -> Vec<Record> {
    let z = device.zones();
    (0..z.len()).map(|zone| (z.state(zone), z.wp(zone))).collect()
}
