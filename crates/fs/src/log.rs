//! The six logs: where each writes next, append logging into free segments
//! and threaded logging into the free blocks of dirty ones (TL_open).

use crate::fs::Fs;
use crate::sit::{Bitmap, LogType};
use zonelab_device::ZonedDevice;
use zonelab_device::{Command, ZoneAction};
use zonelab_sim::Nanos;

/// One of the six logs: the segment it writes and where in it.
#[derive(Debug, Clone)]
pub struct Log {
    /// Which log (temperature and node or data).
    pub log_type: LogType,
    /// Segment (= zone) the log writes.
    pub seg: u32,
    /// Next block to write in the segment.
    pub off: u32,
    /// Threaded logging: the blocks the TL_open kept (never written by the host).
    pub tl_kept: Option<Bitmap>,
}

impl<D: ZonedDevice> Fs<D> {
    /// Starts every log in a free segment.
    pub(crate) fn open_logs(&mut self, now_ns: Nanos) {
        self.logs.clear();
        for lt in LogType::ALL {
            let seg = self.take_free_segment(lt, now_ns).expect("a fresh file system has free segments");
            self.logs.push(Log { log_type: lt, seg, off: 0, tl_kept: None });
        }
    }

    /// The address the log writes next.
    pub(crate) fn log_next_addr(&self, lt: LogType) -> u32 {
        let log = &self.logs[lt.index()];
        self.addr_of(log.seg, log.off)
    }

    /// Takes the log's next block; the log moves on (to a new segment if this one is used up).
    pub(crate) fn alloc_block(&mut self, lt: LogType, now_ns: Nanos) -> u32 {
        let log = &self.logs[lt.index()];
        let addr = self.addr_of(log.seg, log.off);
        debug_assert!(self.sit.is_free_block(log.seg, log.off), "log {lt:?} writes a used block");
        self.unplaced.push(addr);
        let next = self.next_free_in_log(lt, log.off + 1);
        match next {
            Some(off) => self.logs[lt.index()].off = off,
            None => self.switch_segment(lt, now_ns),
        }
        addr
    }

    /// Blocks the log may still write in its segment (at least one).
    pub(crate) fn free_blocks_left(&self, lt: LogType) -> u32 {
        let log = &self.logs[lt.index()];
        match &log.tl_kept {
            None => self.zone_blocks - log.off,
            Some(kept) => (log.off..self.zone_blocks).filter(|&o| !kept.get(o as usize)).count() as u32,
        }
    }

    /// First block at or after `from` the log may write in its segment.
    fn next_free_in_log(&self, lt: LogType, from: u32) -> Option<u32> {
        let log = &self.logs[lt.index()];
        match &log.tl_kept {
            None => (from < self.zone_blocks).then_some(from),
            Some(kept) => (from..self.zone_blocks).find(|&o| !kept.get(o as usize)),
        }
    }

    /// The log's segment is used up: threaded logging or a free segment next.
    fn switch_segment(&mut self, lt: LogType, now_ns: Nanos) {
        let old = self.logs[lt.index()].seg;
        self.sit.segs[old as usize].current = false;
        self.left_segs.push(old);
        if self.logs[lt.index()].tl_kept.is_some() {
            self.pending_close.push(old + crate::fs::META_ZONES);
        }
        if let Some((seg, kept)) = self.pick_threaded_segment(lt, Some(old)) {
            self.tl_open(lt, seg, kept, now_ns);
            return;
        }
        let seg = self.take_free_segment(lt, now_ns).unwrap_or_else(|| panic!("{}", self.no_space_message()));
        self.logs[lt.index()] = crate::log::Log { log_type: lt, seg, off: 0, tl_kept: None };
    }

    fn no_space_message(&self) -> String {
        format!(
            "no free segment left ({} segments, utilization {:.1}%): the file system is over-full for its recycling",
            self.segments(),
            self.utilization() * 100.0
        )
    }

    /// A free segment for append logging; its zone is reset if it holds data.
    pub(crate) fn take_free_segment(&mut self, lt: LogType, now_ns: Nanos) -> Option<u32> {
        // A segment just left may hold blocks allocated but not yet placed.
        let seg = (0..self.segments()).find(|&s| self.sit.is_free_seg(s) && !self.left_segs.contains(&s))?;
        let e = &mut self.sit.segs[seg as usize];
        e.current = true;
        e.log_type = Some(lt);
        e.tl_snapshot = None;
        e.tl_cold = None;
        if e.zone_written {
            e.zone_written = false;
            let slba = u64::from(self.addr_of(seg, 0));
            let cmd = Command::ZoneMgmtSend { action: ZoneAction::Reset, slba, select_all: false };
            self.io.submit(now_ns, &cmd, None);
        }
        Some(seg)
    }

    /// Opens `seg` for threaded logging by `lt`: TL_open with the blocks to keep.
    pub(crate) fn tl_open(&mut self, lt: LogType, seg: u32, kept: Bitmap, now_ns: Nanos) {
        if self.left_segs.contains(&seg) {
            // The segment the log just left: its last writes go first.
            self.pending_tl_open.push((seg, kept.clone()));
        } else {
            self.submit_tl_open(seg, &kept, now_ns);
        }
        self.note_tl_open(seg);
        let e = &mut self.sit.segs[seg as usize];
        e.current = true;
        // The segment now belongs to the log that reclaims it (it may have been another temperature's).
        e.log_type = Some(lt);
        self.stats.tl_segments += 1;
        let first = (0..self.zone_blocks).find(|&o| !kept.get(o as usize)).expect("a TL segment has a free block");
        self.logs[lt.index()] = Log { log_type: lt, seg, off: first, tl_kept: Some(kept) };
    }

    /// Closes the TL_opened zones whose writes are all submitted, then
    /// TL_opens the segments logs just left and chose for threaded logging.
    pub(crate) fn close_pending(&mut self, now_ns: Nanos) {
        self.left_segs.clear();
        // Callers place every block they allocated before this.
        self.unplaced.clear();
        for zone in std::mem::take(&mut self.pending_close) {
            // A zone whose last free block was written is full already.
            if !self.io.device().zones().state(zone).is_open() {
                continue;
            }
            let slba = u64::from(zone * self.zone_blocks);
            let cmd = Command::ZoneMgmtSend { action: ZoneAction::Close, slba, select_all: false };
            let done = self.io.submit(now_ns, &cmd, None).complete_ns;
            self.inflight_ns = self.inflight_ns.max(done);
        }
        for (seg, kept) in std::mem::take(&mut self.pending_tl_open) {
            self.submit_tl_open(seg, &kept, now_ns);
        }
    }

    fn submit_tl_open(&mut self, seg: u32, kept: &Bitmap, now_ns: Nanos) {
        let slba = u64::from(self.addr_of(seg, 0));
        self.io.submit(now_ns, &Command::TlOpen { zslba: slba, valid: kept.words() }, None);
    }
}
