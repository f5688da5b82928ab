//! The six logs: where each writes next, append logging into free segments
//! and threaded logging into the free blocks of dirty ones (TL_open).

use crate::layout::META_ZONES;
use crate::sit::{Bitmap, LogType};
use crate::state::{FsState, Log};
use crate::victim::{note_tl_open, pick_threaded_segment};
use zonelab_device::ZonedDevice;
use zonelab_device::{Command, ZoneAction};
use zonelab_sim::Nanos;

/// Starts every log in a free segment.
pub(crate) fn open_logs<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) {
    fs.logs.clear();
    for lt in LogType::ALL {
        let seg = take_free_segment(fs, lt, now_ns).expect("a fresh file system has free segments");
        fs.logs.push(Log { log_type: lt, seg, off: 0, tl_kept: None });
    }
}

/// The address the log writes next.
pub(crate) fn log_next_addr<D: ZonedDevice>(fs: &FsState<D>, lt: LogType) -> u32 {
    let log = &fs.logs[lt.index()];
    fs.addr_of(log.seg, log.off)
}

/// Takes the log's next block; the log moves on (to a new segment if this one is used up).
pub(crate) fn alloc_block<D: ZonedDevice>(fs: &mut FsState<D>, lt: LogType, now_ns: Nanos) -> u32 {
    let log = &fs.logs[lt.index()];
    let addr = fs.addr_of(log.seg, log.off);
    debug_assert!(fs.sit.is_free_block(log.seg, log.off), "log {lt:?} writes a used block");
    fs.unplaced.insert(addr);
    let next = next_free_in_log(fs, lt, log.off + 1);
    match next {
        Some(off) => fs.logs[lt.index()].off = off,
        None => switch_segment(fs, lt, now_ns),
    }
    addr
}

/// Blocks the log may still write in its segment (at least one).
pub(crate) fn free_blocks_left<D: ZonedDevice>(fs: &FsState<D>, lt: LogType) -> u32 {
    let log = &fs.logs[lt.index()];
    match &log.tl_kept {
        None => fs.zone_blocks - log.off,
        Some(kept) => (log.off..fs.zone_blocks).filter(|&o| !kept.get(o as usize)).count() as u32,
    }
}

/// First block at or after `from` the log may write in its segment.
fn next_free_in_log<D: ZonedDevice>(fs: &FsState<D>, lt: LogType, from: u32) -> Option<u32> {
    let log = &fs.logs[lt.index()];
    match &log.tl_kept {
        None => (from < fs.zone_blocks).then_some(from),
        Some(kept) => (from..fs.zone_blocks).find(|&o| !kept.get(o as usize)),
    }
}

/// The log's segment is used up: threaded logging or a free segment next.
fn switch_segment<D: ZonedDevice>(fs: &mut FsState<D>, lt: LogType, now_ns: Nanos) {
    let old = fs.logs[lt.index()].seg;
    fs.sit.segs[old as usize].current = false;
    fs.left_segs.push(old);
    if fs.logs[lt.index()].tl_kept.is_some() {
        fs.pending_close.push(old + META_ZONES);
    }
    if let Some((seg, kept)) = pick_threaded_segment(fs, lt, Some(old)) {
        tl_open(fs, lt, seg, kept, now_ns);
        return;
    }
    let seg = take_free_segment(fs, lt, now_ns).unwrap_or_else(|| panic!("{}", no_space_message(fs)));
    fs.logs[lt.index()] = Log { log_type: lt, seg, off: 0, tl_kept: None };
}

fn no_space_message<D: ZonedDevice>(fs: &FsState<D>) -> String {
    format!(
        "no free segment left ({} segments, utilization {:.1}%): the file system is over-full for its recycling",
        fs.segments(),
        fs.utilization() * 100.0
    )
}

/// A free segment for append logging; its zone is reset if it holds data.
pub(crate) fn take_free_segment<D: ZonedDevice>(fs: &mut FsState<D>, lt: LogType, now_ns: Nanos) -> Option<u32> {
    // A segment just left may hold blocks allocated but not yet placed.
    let seg = (0..fs.segments()).find(|&s| fs.sit.is_free_seg(s) && !fs.left_segs.contains(&s))?;
    let e = &mut fs.sit.segs[seg as usize];
    e.current = true;
    e.log_type = Some(lt);
    e.tl_snapshot = None;
    e.tl_cold = None;
    if e.zone_written {
        e.zone_written = false;
        let slba = u64::from(fs.addr_of(seg, 0));
        let cmd = Command::ZoneMgmtSend { action: ZoneAction::Reset, slba, select_all: false };
        fs.io.submit(now_ns, &cmd, None);
    }
    Some(seg)
}

/// Opens `seg` for threaded logging by `lt`: TL_open with the blocks to keep.
pub(crate) fn tl_open<D: ZonedDevice>(fs: &mut FsState<D>, lt: LogType, seg: u32, kept: Bitmap, now_ns: Nanos) {
    if fs.left_segs.contains(&seg) {
        // The segment the log just left: its last writes go first.
        fs.pending_tl_open.push((seg, kept.clone()));
    } else {
        submit_tl_open(fs, seg, &kept, now_ns);
    }
    note_tl_open(fs, seg);
    let e = &mut fs.sit.segs[seg as usize];
    e.current = true;
    // The segment now belongs to the log that reclaims it (it may have been another temperature's).
    e.log_type = Some(lt);
    fs.stats.tl_segments += 1;
    let first = (0..fs.zone_blocks).find(|&o| !kept.get(o as usize)).expect("a TL segment has a free block");
    fs.logs[lt.index()] = Log { log_type: lt, seg, off: first, tl_kept: Some(kept) };
}

/// Closes the TL_opened zones whose writes are all submitted, then
/// TL_opens the segments logs just left and chose for threaded logging.
pub(crate) fn close_pending<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) {
    fs.left_segs.clear();
    // Callers place every block they allocated before this.
    fs.unplaced.clear();
    for zone in std::mem::take(&mut fs.pending_close) {
        // A zone whose last free block was written is full already.
        if !fs.io.device().zones().state(zone).is_open() {
            continue;
        }
        let slba = u64::from(zone * fs.zone_blocks);
        let cmd = Command::ZoneMgmtSend { action: ZoneAction::Close, slba, select_all: false };
        let done = fs.io.submit(now_ns, &cmd, None).complete_ns;
        fs.inflight_ns = fs.inflight_ns.max(done);
    }
    for (seg, kept) in std::mem::take(&mut fs.pending_tl_open) {
        submit_tl_open(fs, seg, &kept, now_ns);
    }
}

fn submit_tl_open<D: ZonedDevice>(fs: &mut FsState<D>, seg: u32, kept: &Bitmap, now_ns: Nanos) {
    let slba = u64::from(fs.addr_of(seg, 0));
    fs.io.submit(now_ns, &Command::TlOpen { zslba: slba, valid: kept.words() }, None);
}
