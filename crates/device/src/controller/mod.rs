//! A namespace's side of the controller: each zone's write buffer with its
//! progress towards flash (`ZoneIo`), the read-ahead buffer, the write
//! cache's durability and the write path's FTL core. The firmware cores and
//! the link every namespace shares are the drive's (`ssd::Ssd`).
//!
//! Host data crosses the link into a zone's buffer, which is released as
//! its program units finish, and into the pool all zones share (`pool`).
//! Writes also
//! take the write path's FTL core, which zone management's firmware work
//! shares (readers never wait for it).

pub mod buffer;
pub(crate) mod housekeeping;
pub mod pool;
pub(crate) mod program_path;
pub mod read_ahead;
mod window;
pub mod write_cache;

use buffer::ZoneBuffer;
use pool::{Crossing, DevicePool, PoolConfig};
use read_ahead::{ReadAhead, StreamRead};
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, VecDeque};
use write_cache::{WriteCache, ZoneDurability};
use zonelab_sim::{Nanos, ServerPool};

/// Write buffers, read-ahead and the FTL core of one namespace.
#[derive(Debug, Clone)]
pub(crate) struct Controller {
    /// The write path's FTL core: mapping updates of writes, unit commits and
    /// management firmware work; reserved through `reserve_ftl`.
    ftl: ServerPool,
    zone_io: Vec<ZoneIo>,
    /// Memory the zones' buffers share (`write_buffer.device_buffer_bytes`).
    pool: DevicePool,
    read_ahead: ReadAhead,
    /// Durability of each zone's data (Flush, FUA, power cut).
    write_cache: WriteCache,
    /// Ends of the programs whose unit commits (`controller.unit_commit_ns`)
    /// are not on the FTL core yet, earliest first.
    unit_commits: BinaryHeap<Reverse<Nanos>>,
    /// Until when a write waiting for room in the buffer holds up the
    /// commands taken after it (`controller.in_order`).
    room_wait_until_ns: Nanos,
    /// The latest completion of the commands taken before the current one,
    /// and when the current one came: the drive held no command between the
    /// two. The idle firmware took up a unit commit as soon as it came due
    /// then, and housekeeping judges idleness from the first.
    drive_empty_from_ns: Nanos,
    drive_empty_until_ns: Nanos,
}

impl Controller {
    pub(crate) fn new(zones: u32, pool: PoolConfig, read_ahead: ReadAhead) -> Self {
        Self {
            ftl: ServerPool::new(1),
            zone_io: vec![ZoneIo::default(); zones as usize],
            pool: DevicePool::new(pool, zones),
            read_ahead,
            write_cache: WriteCache::new(zones),
            unit_commits: BinaryHeap::new(),
            room_wait_until_ns: 0,
            drive_empty_from_ns: 0,
            drive_empty_until_ns: 0,
        }
    }

    /// When the FTL core is next idle (unit commits not yet on it aside).
    #[inline]
    pub(crate) fn ftl_free_at_ns(&self) -> Nanos {
        self.ftl.free_at_ns()
    }

    /// How many chunks past a stream's read the controller reads ahead (0: it
    /// does not).
    #[inline]
    pub(crate) fn read_ahead_window_chunks(&self) -> u64 {
        self.read_ahead.window_chunks()
    }

    /// Notes a read of LBAs `slba..end`: whether it continues a stream, and
    /// which read-ahead context reads for it.
    #[inline]
    pub(crate) fn note_read(&mut self, slba: u64, end: u64) -> StreamRead {
        self.read_ahead.note_read(slba, end)
    }

    /// When `chunk` of `zone` is in read-ahead context `context`'s part of
    /// the read buffer, if it is there.
    #[inline]
    pub(crate) fn read_buffer_lookup(&self, context: u8, zone: u32, chunk: u64) -> Option<Nanos> {
        self.read_ahead.lookup(context, zone, chunk)
    }

    /// Reads `chunk` of `zone` into the read buffer for read-ahead context
    /// `context`, in from `ready_ns`.
    #[inline]
    pub(crate) fn read_buffer_insert(&mut self, context: u8, zone: u32, chunk: u64, ready_ns: Nanos) {
        self.read_ahead.insert(context, zone, chunk, ready_ns);
    }

    /// Drops `zone`'s chunks `chunks` from the read buffer (a page-mapped
    /// namespace's LBAs there were written again).
    #[inline]
    pub(crate) fn read_buffer_drop_chunks(&mut self, zone: u32, chunks: std::ops::Range<u64>) {
        self.read_ahead.drop_chunks(zone, chunks);
    }

    /// Drops every chunk of `zone` from the read buffer (it was reset).
    #[inline]
    pub(crate) fn read_buffer_drop_zone(&mut self, zone: u32) {
        self.read_ahead.drop_zone(zone);
    }

    /// Durability of `zone`'s data (the write cache's record of it).
    #[inline]
    pub(crate) fn durability(&self, zone: u32) -> &ZoneDurability {
        self.write_cache.zone(zone)
    }

    /// Durability of `zone`'s data, to note what happens to it.
    #[inline]
    pub(crate) fn durability_mut(&mut self, zone: u32) -> &mut ZoneDurability {
        self.write_cache.zone_mut(zone)
    }

    /// Nothing of `zone`'s data is in the controller any more (reset,
    /// offline, TL_open): the write cache forgets it.
    #[inline]
    pub(crate) fn discard_durability(&mut self, zone: u32) {
        self.write_cache.discard(zone);
    }

    /// `zone`'s progress towards flash.
    #[inline]
    pub(crate) fn zone_io(&self, zone: u32) -> &ZoneIo {
        &self.zone_io[zone as usize]
    }

    /// `zone`'s progress towards flash, to move it on.
    #[inline]
    pub(crate) fn zone_io_mut(&mut self, zone: u32) -> &mut ZoneIo {
        &mut self.zone_io[zone as usize]
    }

    /// LBAs of `zone` whose data has reached the controller (`ZoneIo::filled_lbas`).
    #[inline]
    pub(crate) fn filled_lbas(&self, zone: u32) -> u64 {
        self.zone_io[zone as usize].filled_lbas()
    }

    /// Program units of `zone` issued to flash in the current lap (`ZoneIo::flushed_units`).
    #[inline]
    pub(crate) fn flushed_units(&self, zone: u32) -> u64 {
        self.zone_io[zone as usize].flushed_units()
    }

    /// Unit `unit` of `zone` was programmed without the buffer: the fill skips it.
    #[inline]
    pub(crate) fn note_preprogrammed(&mut self, zone: u32, unit: u64) {
        self.zone_io[zone as usize].preprogrammed.insert(unit);
    }

    /// Whether unit `unit` of `zone` was programmed without the buffer.
    #[inline]
    pub(crate) fn is_preprogrammed(&self, zone: u32, unit: u64) -> bool {
        self.zone_io[zone as usize].is_preprogrammed(unit)
    }

    /// Copied data of `zone` up to its fill point is readable from
    /// `ready_ns` on (`ZoneIo::push_gate`).
    #[inline]
    pub(crate) fn push_gate(&mut self, zone: u32, ready_ns: Nanos, now_ns: Nanos) {
        self.zone_io[zone as usize].push_gate(ready_ns, now_ns);
    }

    /// LBAs `start..end` land in `zone`'s ZRWA: returns how many were not
    /// there yet (a rewrite takes no more room).
    pub(crate) fn window_write(&mut self, zone: u32, start: u64, end: u64) -> u64 {
        self.zone_io[zone as usize].window.write(start, end)
    }

    /// `zone`'s ZRWA data below LBA `end` is committed: returns how many of
    /// those LBAs it held (the rest were never written).
    pub(crate) fn window_commit_below(&mut self, zone: u32, end: u64) -> u64 {
        self.zone_io[zone as usize].window.commit_below(end)
    }

    /// The data written into `zone`'s ZRWA so far is in from `ready_ns` on.
    pub(crate) fn window_note_ready(&mut self, zone: u32, ready_ns: Nanos) {
        self.zone_io[zone as usize].window.note_ready(ready_ns);
    }

    /// When the data written into `zone`'s ZRWA so far is all in.
    pub(crate) fn window_ready_ns(&self, zone: u32) -> Nanos {
        self.zone_io[zone as usize].window.ready_ns()
    }

    /// Uncommitted LBAs of `zone`'s ZRWA and the end of the highest one.
    pub(crate) fn window_extent(&self, zone: u32) -> (u64, Option<u64>) {
        let w = &self.zone_io[zone as usize].window;
        (w.lbas(), w.end())
    }

    /// A piece of `bytes`, ready from `ready_ns` on, waits for room in the
    /// zone's buffer (`zone_capacity` bytes) and then in the shared pool;
    /// returns when it has both.
    #[inline(always)]
    pub(crate) fn admit_piece(&mut self, zone: u32, ready_ns: Nanos, bytes: u64, zone_capacity: u64) -> Nanos {
        let admitted = self.zone_io[zone as usize].buffer.admit(ready_ns, bytes, zone_capacity);
        let admitted = self.pool.admit(zone, admitted, bytes);
        if admitted > ready_ns {
            self.room_wait_until_ns = self.room_wait_until_ns.max(admitted);
        }
        admitted
    }

    /// When the writes taken so far stop waiting for room in the buffer:
    /// with commands taken in order, a later read starts no earlier.
    #[inline]
    pub(crate) fn room_wait_until_ns(&self) -> Nanos {
        self.room_wait_until_ns
    }

    /// Unit `unit` (of the current lap) of `zone` holds `data_bytes` of
    /// buffered data, crosses the program path (`crossing`) and is
    /// programmed at `done_ns`: the zone's buffer releases them then, the
    /// shared pool then or as they cross (`write_buffer.pool_release`).
    #[inline]
    pub(crate) fn release_programmed(
        &mut self,
        zone: u32,
        unit: u64,
        data_bytes: u64,
        done_ns: Nanos,
        crossing: Crossing,
    ) {
        let io = &mut self.zone_io[zone as usize];
        io.buffer.programmed(io.lap_units + unit, data_bytes, done_ns);
        self.pool.unit_programmed(zone, data_bytes, done_ns, crossing);
    }

    /// `bytes` of `zone`'s buffered data, in units not issued yet, are lost
    /// (a power cut): the zone's buffer and the shared pool release them.
    pub(crate) fn release_unissued(&mut self, zone: u32, bytes: u64) {
        self.zone_io[zone as usize].buffer.release_unissued(bytes);
        self.pool.release_unissued(zone, bytes);
    }

    /// `zone` starts over (reset, offline): its share of the pool and its
    /// progress towards flash go.
    pub(crate) fn discard_zone_io(&mut self, zone: u32) {
        self.pool.clear_zone(zone);
        self.zone_io[zone as usize] = ZoneIo::default();
    }

    /// When the next unit commit not yet on the FTL core comes due.
    #[inline]
    pub(crate) fn next_unit_commit_ns(&self) -> Option<Nanos> {
        self.unit_commits.peek().map(|&Reverse(done_ns)| done_ns)
    }

    /// A program unit of host data ends at `done_ns`: its commit is due then.
    pub(crate) fn note_unit_commit(&mut self, done_ns: Nanos) {
        self.unit_commits.push(Reverse(done_ns));
    }

    /// A command comes in at `submit_ns` (no earlier than the one before).
    #[inline]
    pub(crate) fn note_command_start(&mut self, submit_ns: Nanos) {
        self.drive_empty_until_ns = submit_ns;
    }

    /// A command taken so far completes at `complete_ns`.
    #[inline]
    pub(crate) fn note_command_done(&mut self, complete_ns: Nanos) {
        self.drive_empty_from_ns = self.drive_empty_from_ns.max(complete_ns);
    }

    /// The latest completion of the commands taken before the current one.
    #[inline]
    pub(crate) fn drive_empty_from_ns(&self) -> Nanos {
        self.drive_empty_from_ns
    }

    /// Reserves `work_ns` of the FTL core from `ready_ns` on, with the unit
    /// commits (`commit_ns` each) that came due by then; returns when the
    /// work is done. The firmware takes a commit up between commands: one
    /// that came due with no command in the drive ran then, one that came
    /// due while commands were in it follows this work (the command that
    /// finds it due passes it, the next waits for what is left). Bound: one
    /// commit per program in flight.
    #[inline]
    pub(crate) fn reserve_ftl(&mut self, ready_ns: Nanos, work_ns: Nanos, commit_ns: Nanos) -> Nanos {
        // Most writes find no commit due: one look at the earliest.
        if self.unit_commits.peek().is_none_or(|&Reverse(done_ns)| done_ns > ready_ns) {
            return self.ftl.reserve(ready_ns, work_ns);
        }
        self.reserve_ftl_with_commits(ready_ns, work_ns, commit_ns)
    }

    /// Reserves a management slice of `work_ns` on the FTL core from
    /// `ready_ns` on, after the unit commits that came due by then (from
    /// their due time on: the slices stop where one comes due and leave the
    /// core to it); returns when the slice is done.
    #[inline]
    pub(crate) fn reserve_ftl_slice(&mut self, ready_ns: Nanos, work_ns: Nanos, commit_ns: Nanos) -> Nanos {
        self.take_due_commits(ready_ns, commit_ns, false);
        self.ftl.reserve(ready_ns, work_ns)
    }

    /// [`Controller::reserve_ftl`] once a commit is due.
    #[inline(never)]
    fn reserve_ftl_with_commits(&mut self, ready_ns: Nanos, work_ns: Nanos, commit_ns: Nanos) -> Nanos {
        let deferred = self.take_due_commits(ready_ns, commit_ns, true);
        let end_ns = self.ftl.reserve(ready_ns, work_ns);
        for _ in 0..deferred {
            self.ftl.reserve(end_ns, commit_ns);
        }
        debug_assert!(end_ns >= ready_ns + work_ns, "the work runs whole after it is ready");
        end_ns
    }

    /// Takes the unit commits due by `ready_ns` off the list: each runs on
    /// the FTL core from its due time on, unless `defer` holds and it came
    /// due with a command in the drive; returns how many were deferred.
    fn take_due_commits(&mut self, ready_ns: Nanos, commit_ns: Nanos, defer: bool) -> u32 {
        let mut deferred = 0;
        // Bound: one commit per program in flight.
        while let Some(&Reverse(done_ns)) = self.unit_commits.peek() {
            if done_ns > ready_ns {
                break;
            }
            self.unit_commits.pop();
            if defer && !(self.drive_empty_from_ns..self.drive_empty_until_ns).contains(&done_ns) {
                deferred += 1;
            } else {
                self.ftl.reserve(done_ns, commit_ns);
            }
        }
        deferred
    }
}

/// Flash-side progress of one zone since its last reset.
#[derive(Debug, Clone, Default)]
pub(crate) struct ZoneIo {
    buffer: ZoneBuffer,
    /// LBAs whose data has reached the controller (for a conventional zone,
    /// the head of its log).
    filled_lbas: u64,
    /// Program units issued to flash in the current lap of the zone's block group.
    flushed_units: u64,
    /// Units of earlier laps (a conventional zone's log wraps), so that the
    /// buffer's unit ids keep increasing.
    lap_units: u64,
    /// Units already programmed without the buffer (copyback, plugging ahead
    /// of the write pointer): the fill skips them.
    preprogrammed: BTreeSet<u64>,
    /// When the data taken in for each unit not yet programmed is all in the controller.
    unit_ready: UnitReady,
    /// Internal copies in flight: LBAs below `end` (zone offset) are readable
    /// from `ready_ns` on; ready times never decrease, so a read waits for the
    /// device's write pointer to pass its block.
    gate: VecDeque<(u64, Nanos)>,
    /// Memo of the chunk the fill point is in: its zone offsets `[start,
    /// end)` and its program unit (`Mapping::unit_of_chunk`, a pure function
    /// of the chunk): consecutive small writes fill the same chunk.
    fill_chunk: (u64, u64, u64),
    /// Memo of where the unit to program next ends: (unit, zone offset past
    /// its last chunk), a pure function of the unit.
    flush_end: Option<(u64, u64)>,
    /// The ZRWA's uncommitted data (absolute LBAs), already in `buffer`.
    window: window::Window,
}

/// When the data taken in for each program unit not yet programmed is all
/// in the controller, by unit in ascending order. Only the units a zone is
/// filling have an entry (about one per die it spans), so a sorted vector,
/// searched from the end the fill is at, beats a tree.
#[derive(Debug, Clone, Default)]
pub(crate) struct UnitReady(Vec<(u64, Nanos)>);

impl UnitReady {
    /// Data of `unit` is in from `at_ns` on: the unit is ready once its last data is.
    #[inline]
    pub(crate) fn note(&mut self, unit: u64, at_ns: Nanos) {
        match self.0.iter().rposition(|&(u, _)| u <= unit) {
            Some(i) if self.0[i].0 == unit => self.0[i].1 = self.0[i].1.max(at_ns),
            Some(i) => self.0.insert(i + 1, (unit, at_ns)),
            None => self.0.insert(0, (unit, at_ns)),
        }
        debug_assert!(self.0.windows(2).all(|w| w[0].0 < w[1].0), "units stay sorted and distinct");
    }

    /// Removes `unit` (it is being programmed): when its data is all in, if any was taken in.
    #[inline]
    pub(crate) fn take(&mut self, unit: u64) -> Option<Nanos> {
        // Units are programmed in order, so it is usually the first.
        let i = self.0.iter().position(|&(u, _)| u == unit)?;
        Some(self.0.remove(i).1)
    }

    /// Drops the units from `unit` on (their data was lost).
    pub(crate) fn retain_below(&mut self, unit: u64) {
        self.0.retain(|&(u, _)| u < unit);
    }
}

impl ZoneIo {
    /// LBAs whose data has reached the controller (the fill point).
    #[inline]
    pub(crate) fn filled_lbas(&self) -> u64 {
        self.filled_lbas
    }

    /// Program units issued to flash in the current lap.
    #[inline]
    pub(crate) fn flushed_units(&self) -> u64 {
        self.flushed_units
    }

    /// Whether the zone holds data in the controller or on flash.
    #[inline]
    pub(crate) fn holds_data(&self) -> bool {
        self.filled_lbas > 0 || self.flushed_units > 0
    }

    /// Whether `unit` was programmed without the buffer (copyback, plugging ahead).
    #[inline]
    pub(crate) fn is_preprogrammed(&self, unit: u64) -> bool {
        self.preprogrammed.contains(&unit)
    }

    /// `lbas` more LBAs of `unit` are in the controller from `at_ns` on.
    #[inline(always)]
    pub(crate) fn note_filled(&mut self, unit: u64, lbas: u64, at_ns: Nanos) {
        self.unit_ready.note(unit, at_ns);
        self.filled_lbas += lbas;
    }

    /// Issues the next unit to flash: its number, when its data is all in
    /// (from `at_ns` on), and whether it was programmed already without the buffer.
    #[inline]
    pub(crate) fn issue_next_unit(&mut self, at_ns: Nanos) -> (u64, Nanos, bool) {
        let unit = self.flushed_units;
        let ready_ns = self.unit_ready.take(unit).map_or(at_ns, |r| r.max(at_ns));
        self.flushed_units += 1;
        (unit, ready_ns, self.preprogrammed.remove(&unit))
    }

    /// A conventional zone's log wrapped: it starts over, its units keep counting.
    pub(crate) fn start_lap(&mut self) {
        self.lap_units += self.flushed_units;
        self.filled_lbas = 0;
        self.flushed_units = 0;
    }

    /// A power cut kept the first `keep` LBAs: the data from unit
    /// `first_lost_unit` on and the copies in flight are gone.
    pub(crate) fn roll_back(&mut self, keep: u64, first_lost_unit: u64) {
        self.filled_lbas = keep;
        self.unit_ready.retain_below(first_lost_unit);
        self.gate.clear();
    }

    /// Starts over empty (a TL_opened zone's LogFBG); returns the fill point it had.
    pub(crate) fn take_filled_lbas(&mut self) -> u64 {
        std::mem::take(self).filled_lbas
    }

    /// Whether unit `unit`'s data is still in the buffer at `at_ns`: not
    /// issued, or its program not ended.
    #[inline]
    pub(crate) fn buffered(&self, unit: u64, at_ns: Nanos) -> bool {
        unit >= self.flushed_units || self.buffer.unit_pending_until(self.lap_units + unit, at_ns).is_some()
    }

    /// Bytes the zone's buffer holds (a test aid).
    #[cfg(test)]
    pub(crate) fn buffer_occupied_bytes(&self) -> u64 {
        self.buffer.occupied_bytes()
    }

    /// Frees what the programs that ended by `at_ns` held (a test aid).
    #[cfg(test)]
    pub(crate) fn reclaim_buffer_until(&mut self, at_ns: Nanos) {
        self.buffer.admit(at_ns, 0, 1);
    }

    /// The program unit the fill point is in (`unit_of_chunk`, the
    /// mapping's), and the zone offset where the fill point's chunk (of
    /// `per_chunk` LBAs) ends.
    #[inline(always)]
    pub(crate) fn fill_point(&mut self, per_chunk: u64, unit_of_chunk: impl Fn(u64) -> u64) -> (u64, u64) {
        let (start, end, unit) = self.fill_chunk;
        if (start..end).contains(&self.filled_lbas) {
            return (unit, end);
        }
        let chunk = self.filled_lbas / per_chunk;
        let unit = unit_of_chunk(chunk);
        self.fill_chunk = (chunk * per_chunk, (chunk + 1) * per_chunk, unit);
        (unit, (chunk + 1) * per_chunk)
    }

    /// The zone offset past the last chunk of the unit to program next
    /// (`last_chunk_of`: the mapping's last chunk of a unit).
    #[inline(always)]
    pub(crate) fn flush_end_lbas(&mut self, per_chunk: u64, last_chunk_of: impl Fn(u64) -> u64) -> u64 {
        match self.flush_end {
            Some((unit, end)) if unit == self.flushed_units => end,
            _ => {
                let last_chunk = last_chunk_of(self.flushed_units);
                let end = (last_chunk + 1) * per_chunk;
                self.flush_end = Some((self.flushed_units, end));
                end
            }
        }
    }

    /// When the device's write pointer passes zone offset `offset`.
    pub(crate) fn gate_ns(&self, offset: u64) -> Nanos {
        self.gate.iter().find(|&&(end, _)| end > offset).map_or(0, |&(_, ready)| ready)
    }

    /// Copied data up to the fill point is readable from `ready_ns` on; drops
    /// what was readable by `now_ns`.
    pub(crate) fn push_gate(&mut self, ready_ns: Nanos, now_ns: Nanos) {
        let ready_ns = self.gate.back().map_or(ready_ns, |&(_, r)| r.max(ready_ns));
        while self.gate.front().is_some_and(|&(_, r)| r <= now_ns) {
            self.gate.pop_front();
        }
        if ready_ns <= now_ns {
            return;
        }
        match self.gate.back_mut() {
            Some(last) if last.1 == ready_ns => last.0 = self.filled_lbas,
            _ => self.gate.push_back((self.filled_lbas, ready_ns)),
        }
    }
}
