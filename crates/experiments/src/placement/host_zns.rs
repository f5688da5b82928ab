//! ZNS with host garbage collection: the host maps the application's
//! logical blocks onto zones itself, as a log-structured layer (dm-zoned,
//! ZenFS) does. Each stream (application classes folded onto at most
//! [`STREAMS_MAX`]) appends to its own open zone; collection picks the full
//! zone with the fewest valid blocks, reads its valid blocks and writes
//! them to the collection zone of their stream, then resets the zone. It
//! runs in the background of application writes, a few 128 KiB steps
//! before each once free zones run low, and in the foreground when a
//! stream finds none. The host knows which blocks a deleted file held.

use super::driver::Queue;
use super::workload::CHUNK_BLOCKS;
use crate::error::{Error, Result};
use std::collections::VecDeque;
use zonelab_device::{Command, Device, ZoneAction};
use zonelab_sim::Nanos;

/// Most application streams: with a collection stream each, they stay
/// within the zn540's 14 active zones.
pub const STREAMS_MAX: u8 = 4;
const NONE: u32 = u32::MAX;
/// Most collection steps before one application write.
const STEPS_PER_WRITE_MAX: u32 = 8;

/// The zone collection is emptying.
#[derive(Debug, Clone, Copy)]
struct Victim {
    zone: u32,
    /// Next offset in the zone to look for valid blocks at.
    offset: u64,
    /// Steps per application write: ceil(valid / invalid) at selection, capped.
    pace: u32,
}

/// The host's log-structured layer over a zoned namespace.
pub(crate) struct HostZns {
    zone_lbas: u64,
    zcap: u64,
    /// Logical block → zone * zcap + offset, or NONE.
    map: Vec<u32>,
    /// Per zone: offset → logical block (NONE: stale or unwritten), while it holds data.
    p2l: Vec<Option<Box<[u32]>>>,
    valid: Vec<u32>,
    /// Per logical block: its stream.
    stream_of: Vec<u8>,
    /// Application streams; collection stream `s` is `streams + s`.
    streams: u8,
    /// Per stream: its open zone and write pointer offset.
    open: Vec<Option<(u32, u64)>>,
    free: VecDeque<u32>,
    victim: Option<Victim>,
    /// Collection runs in the background below this many free zones.
    gc_start: usize,
    /// Blocks collection copied, zones it reset.
    pub(crate) copied_blocks: u64,
    pub(crate) resets: u64,
}

impl HostZns {
    /// A layer over `dev`'s zones for `space_blocks` logical blocks of an
    /// application with `classes` classes.
    pub(crate) fn new(dev: &Device, space_blocks: u64, classes: u8) -> Result<Self> {
        let layout = dev.layout();
        let (zones, zcap) = (layout.zones, layout.zcap_lbas);
        let physical = u64::from(zones) * zcap;
        if physical >= u64::from(NONE) || space_blocks >= physical {
            return Err(Error::Invalid(format!(
                "host ZNS layer: {space_blocks} logical blocks over {zones} zones of {zcap} blocks leave no room to collect"
            )));
        }
        let streams = classes.clamp(1, STREAMS_MAX);
        let blocks = usize::try_from(space_blocks).expect("below 2^32");
        Ok(HostZns {
            zone_lbas: layout.zone_lbas,
            zcap,
            map: vec![NONE; blocks],
            p2l: vec![None; zones as usize],
            valid: vec![0; zones as usize],
            stream_of: vec![0; blocks],
            streams,
            open: vec![None; 2 * usize::from(streams)],
            free: (0..zones).collect(),
            victim: None,
            // Collection starts while each of its streams could still take a zone.
            gc_start: usize::from(streams) + 2,
            copied_blocks: 0,
            resets: 0,
        })
    }

    /// The stream of application class `class` of `classes`.
    pub(crate) fn stream(&self, class: u8, classes: u8) -> u8 {
        u8::try_from(u32::from(class) * u32::from(self.streams) / u32::from(classes.max(1))).expect("below streams")
    }

    /// Writes logical blocks `block..block + blocks` of `stream`, collecting
    /// garbage first as free zones require; returns when the last write completes.
    pub(crate) fn write(
        &mut self,
        dev: &mut Device,
        q: &mut Queue,
        block: u64,
        blocks: u32,
        stream: u8,
    ) -> Result<Nanos> {
        if self.free.len() < self.gc_start {
            let pace = self.victim_pace();
            for _ in 0..pace {
                self.collect_step(dev, q)?;
            }
        }
        let (mut done, mut done_ns) = (0, 0);
        while done < u64::from(blocks) {
            let (zone, wp) = self.zone_for(dev, q, stream)?;
            let n = (u64::from(blocks) - done).min(self.zcap - wp).min(CHUNK_BLOCKS);
            let slba = u64::from(zone) * self.zone_lbas + wp;
            done_ns = done_ns.max(q.write(dev, slba, u32::try_from(n).expect("a chunk"), None, 0)?);
            for i in 0..n {
                self.place(block + done + i, zone, wp + i, stream);
            }
            self.open[usize::from(stream)] = Some((zone, wp + n));
            done += n;
        }
        Ok(done_ns)
    }

    /// The application deleted blocks `block..block + blocks`: stale now.
    pub(crate) fn delete(&mut self, block: u64, blocks: u64) {
        for b in block..block + blocks {
            self.unmap(b);
        }
    }

    fn unmap(&mut self, block: u64) {
        let slot = &mut self.map[usize::try_from(block).expect("a logical block")];
        if *slot != NONE {
            let (zone, offset) = (u64::from(*slot) / self.zcap, u64::from(*slot) % self.zcap);
            let zone = zone as usize;
            self.valid[zone] -= 1;
            self.p2l[zone].as_mut().expect("a zone with data")[offset as usize] = NONE;
            *slot = NONE;
        }
    }

    fn place(&mut self, block: u64, zone: u32, offset: u64, stream: u8) {
        self.unmap(block);
        let index = usize::try_from(block).expect("a logical block");
        let physical = u64::from(zone) * self.zcap + offset;
        self.map[index] = u32::try_from(physical).expect("below NONE, checked at construction");
        self.stream_of[index] = stream % self.streams;
        let zcap = self.zcap as usize;
        let p2l = self.p2l[zone as usize].get_or_insert_with(|| vec![NONE; zcap].into_boxed_slice());
        p2l[offset as usize] = u32::try_from(block).expect("below 2^32");
        self.valid[zone as usize] += 1;
    }

    /// `stream`'s open zone with room, opening a free one (collecting in
    /// the foreground if none is free).
    fn zone_for(&mut self, dev: &mut Device, q: &mut Queue, stream: u8) -> Result<(u32, u64)> {
        if let Some((zone, wp)) = self.open[usize::from(stream)] {
            if wp < self.zcap {
                return Ok((zone, wp));
            }
        }
        // Bound: each step moves a victim's blocks forward or frees it.
        let steps_max = self.p2l.len() as u64 * (self.zcap / CHUNK_BLOCKS + 2);
        for _ in 0..steps_max {
            // The last zones are collection's: each of its streams may need one.
            if self.free.len() > usize::from(self.streams) {
                let zone = self.free.pop_front().expect("free zones");
                self.open[usize::from(stream)] = Some((zone, 0));
                return Ok((zone, 0));
            }
            if !self.collect_step(dev, q)? {
                break;
            }
        }
        Err(Error::Failed("host ZNS layer: no zone to write and none to collect".into()))
    }

    /// Whether `zone` is some stream's open zone.
    fn is_open(&self, zone: u32) -> bool {
        self.open.iter().flatten().any(|&(z, _)| z == zone)
    }

    /// The pace of the victim under way, choosing one if none is.
    fn victim_pace(&mut self) -> u32 {
        self.choose_victim().map_or(0, |v| v.pace)
    }

    fn choose_victim(&mut self) -> Option<Victim> {
        if self.victim.is_none() {
            let zone = (0..self.p2l.len() as u32)
                .filter(|&z| self.p2l[z as usize].is_some() && !self.is_open(z))
                .min_by_key(|&z| (self.valid[z as usize], z))?;
            let valid = u64::from(self.valid[zone as usize]);
            let invalid = (self.zcap - valid).max(1);
            let pace = u32::try_from(valid.div_ceil(invalid).div_ceil(CHUNK_BLOCKS).max(1)).unwrap_or(u32::MAX);
            self.victim = Some(Victim { zone, offset: 0, pace: pace.min(STEPS_PER_WRITE_MAX) });
        }
        self.victim
    }

    /// Copies up to a chunk of the victim's valid blocks to their
    /// collection streams, resetting the victim once it holds none.
    /// Returns false when there is nothing to collect.
    fn collect_step(&mut self, dev: &mut Device, q: &mut Queue) -> Result<bool> {
        let Some(v) = self.choose_victim() else { return Ok(false) };
        let p2l = self.p2l[v.zone as usize].as_ref().expect("a victim holds data");
        let mut found = Vec::with_capacity(CHUNK_BLOCKS as usize);
        let mut offset = v.offset;
        while offset < self.zcap && found.len() < CHUNK_BLOCKS as usize {
            if p2l[offset as usize] != NONE {
                found.push((offset, u64::from(p2l[offset as usize])));
            }
            offset += 1;
        }
        let read_done = self.read_runs(dev, q, v.zone, &found)?;
        // Each stream's blocks go to its collection zone in one write (two at a zone's end).
        for s in 0..self.streams {
            let blocks: Vec<u64> = found.iter().map(|&(_, b)| b).filter(|&b| self.stream_of[b as usize] == s).collect();
            self.copy_to(dev, q, self.streams + s, &blocks, read_done)?;
        }
        self.victim = Some(Victim { offset, ..v });
        if offset >= self.zcap {
            debug_assert_eq!(self.valid[v.zone as usize], 0);
            let reset = Command::ZoneMgmtSend {
                action: ZoneAction::Reset,
                slba: u64::from(v.zone) * self.zone_lbas,
                select_all: false,
            };
            q.command(dev, &reset, read_done)?;
            self.p2l[v.zone as usize] = None;
            self.free.push_back(v.zone);
            self.victim = None;
            self.resets += 1;
        }
        Ok(true)
    }

    /// Writes `blocks` (read by `ready_ns`) to collection stream `stream`'s zone.
    fn copy_to(&mut self, dev: &mut Device, q: &mut Queue, stream: u8, blocks: &[u64], ready_ns: Nanos) -> Result<()> {
        let mut k = 0;
        while k < blocks.len() {
            let (zone, wp) = self.gc_zone(stream)?;
            let n = (blocks.len() - k).min(usize::try_from(self.zcap - wp).unwrap_or(usize::MAX));
            let nlb = u32::try_from(n).expect("at most a chunk");
            q.write(dev, u64::from(zone) * self.zone_lbas + wp, nlb, None, ready_ns)?;
            for (i, &block) in blocks[k..k + n].iter().enumerate() {
                self.place(block, zone, wp + i as u64, stream - self.streams);
            }
            self.open[usize::from(stream)] = Some((zone, wp + n as u64));
            self.copied_blocks += n as u64;
            k += n;
        }
        Ok(())
    }

    /// Reads the victim's blocks at `found` offsets in runs of consecutive
    /// offsets; returns when the last read is done.
    fn read_runs(&self, dev: &mut Device, q: &mut Queue, zone: u32, found: &[(u64, u64)]) -> Result<Nanos> {
        let mut done = q.now_ns();
        let mut i = 0;
        while i < found.len() {
            let start = found[i].0;
            let mut j = i + 1;
            while j < found.len() && found[j].0 == start + (j - i) as u64 {
                j += 1;
            }
            let nlb = u32::try_from(j - i).expect("a chunk");
            let read = Command::Read { slba: u64::from(zone) * self.zone_lbas + start, nlb };
            done = done.max(q.command(dev, &read, 0)?.complete_ns);
            i = j;
        }
        Ok(done)
    }

    /// The collection stream's open zone with room: a free zone when full
    /// (collection keeps zones back for itself: it starts with 2 spare).
    fn gc_zone(&mut self, stream: u8) -> Result<(u32, u64)> {
        if let Some((zone, wp)) = self.open[usize::from(stream)] {
            if wp < self.zcap {
                return Ok((zone, wp));
            }
        }
        let zone =
            self.free.pop_front().ok_or_else(|| Error::Failed("host ZNS layer: collection ran out of zones".into()))?;
        self.open[usize::from(stream)] = Some((zone, 0));
        Ok((zone, 0))
    }
}
