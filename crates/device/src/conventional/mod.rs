//! A conventional (block-interface) SSD on the same flash as a ZNS one:
//! page-level mapping ([`ftl`]), over-provisioning (the flash the namespace
//! does not use), and greedy garbage collection per die. GC reads a
//! victim's valid data and programs it on the same die, then erases the
//! victim; all of it is reserved on the die and channel timelines, so host
//! reads and writes queue behind it (seed 000 Obs 11). Once a die runs
//! below `gc_free_blocks_start` free blocks, GC runs in the background of
//! host writes, a few units before each host unit on the die; only when a
//! die is at `gc_free_blocks_min` does a host unit wait for whole victims.
//!
//! A namespace is conventional when its config has a `[conventional]`
//! section (the `sn640` preset; or a `[[namespaces]]` entry's own, beside
//! zoned namespaces); its zones are then all conventional. Its data path is
//! the `DataPath` of `Conventional`, chosen when the namespace is built:
//! the front's write and read go here, and nothing of it is on a zoned
//! namespace's path.

pub use crate::translation::ftl;

use crate::backend::{Arrival, Backend, DataPath, Source};
use crate::ssd::Ssd;
mod fdp;
mod placement;
mod state;

pub use crate::counters::FtlCounters;
use crate::translation::mapping::ChunkLocation;
use ftl::{Stream, UnitSlot, OWNER_MIXED};
pub(crate) use state::Conventional;
use state::Victim;
use std::ops::Range;
use zonelab_flash::BlockAddr;
use zonelab_sim::Nanos;

impl Conventional {
    /// Garbage collection so far.
    pub(crate) fn counters(&self) -> FtlCounters {
        FtlCounters {
            host_units: self.ftl.host_units,
            gc_units: self.ftl.gc_units,
            gc_lbas: self.ftl.gc_lbas,
            victims: self.ftl.victims,
            write_amplification: self.ftl.write_amplification(),
            gc_foreground_units: self.gc_foreground_units,
            gc_units_before_host_unit_max: self.gc_units_before_host_unit_max,
        }
    }

    /// Whether the namespace holds data for `lba` (in flash or in its buffer).
    pub(crate) fn holds(&self, lba: u64) -> bool {
        self.pending_pos.contains_key(&lba) || self.ftl.lookup(lba).is_some()
    }

    /// Checks the page mapping (a test aid); panics on a breach.
    pub(crate) fn check(&self) {
        self.ftl.check();
    }
}

/// The page-mapped data path: one LBA space over the namespace's zones (they
/// are only a report), read-ahead of sequential streams over it (seed 001:
/// the conventional namespace's sequential 4 KiB reads reach 292 K/s at
/// QD 16, random ones 164 K/s), writes into one shared buffer whose full
/// units go to the die the FTL's cursor is on.
impl DataPath for Conventional {
    const ONE_SPACE: bool = true;
    const READ_AHEAD: bool = true;

    #[inline]
    fn take_in(
        &mut self,
        core: &mut Backend,
        ssd: &mut Ssd,
        _zone: u32,
        lbas: Range<u64>,
        ready_ns: Nanos,
        arrival: Arrival,
    ) -> Nanos {
        let stream = self.placement.stream_of(arrival.placement, ready_ns);
        ftl_take_in(self, core, ssd, stream, lbas, ready_ns, arrival.link)
    }

    #[inline]
    fn source(&self, core: &Backend, lba: u64, at_ns: Nanos) -> Source {
        ftl_source(self, core, lba, at_ns)
    }

    fn ftl_counters(&self) -> Option<FtlCounters> {
        Some(self.counters())
    }
    fn ftl_holds(&self, lba: u64) -> bool {
        self.holds(lba)
    }
    #[inline]
    fn write_queue(&self) -> Option<&crate::backend::write_queue::WriteQueue> {
        self.write_queue.as_ref()
    }
    #[inline]
    fn write_queue_mut(&mut self) -> Option<&mut crate::backend::write_queue::WriteQueue> {
        self.write_queue.as_mut()
    }
    fn check_ftl(&self) {
        self.check();
    }
    fn ruh_status(&self, core: &Backend) -> Result<Box<[crate::fdp::RuhStatus]>, crate::status::Status> {
        fdp::ruh_status(self, core)
    }
    fn ruh_update(&mut self, core: &Backend, ssd: &mut Ssd, pids: &[u16], at_ns: Nanos) -> crate::status::Status {
        fdp::ruh_update(self, core, ssd, pids, at_ns)
    }
    fn fdp_logs(&self, core: &Backend) -> Option<crate::fdp::FdpLogs> {
        fdp::logs(self, core)
    }
    fn set_fdp_events(
        &mut self,
        pid: u16,
        kinds: &[crate::fdp::FdpEventKind],
        enable: bool,
    ) -> Result<(), crate::status::Status> {
        fdp::set_events(self, pid, kinds, enable)
    }
}

/// Where `lba` is at `at_ns`.
fn ftl_source(c: &Conventional, core: &Backend, lba: u64, at_ns: Nanos) -> Source {
    if c.pending_pos.contains_key(&lba) {
        return Source::Controller { ready_ns: at_ns };
    }
    let Some(slot) = c.ftl.lookup(lba) else { return Source::Zeros };
    let g = &core.config.flash;
    let lbas_per_page = u64::from(g.page_bytes) / core.layout.lba_bytes;
    let per_unit = c.ftl.lbas_per_block() / c.ftl.units_per_block();
    let unit = slot.offset / per_unit;
    let done =
        c.unit_done[(slot.die * g.blocks_per_plane + slot.block) as usize].as_ref().map_or(0, |d| d[unit as usize]);
    // Host data waits in the write buffer until programmed; data garbage
    // collection is moving is read once its new copy is programmed (its old
    // copy sits on the same die, behind the same queue).
    if done > at_ns && !c.ftl.is_gc_block(slot.die, slot.block) {
        return Source::Controller { ready_ns: at_ns };
    }
    let page_in_unit = u64::from(slot.offset % per_unit) / lbas_per_page;
    let planes = u64::from(g.planes_per_die);
    let loc = ChunkLocation {
        die: slot.die,
        plane: u32::try_from(page_in_unit % planes).expect("below planes_per_die, a u32"),
        block: slot.block,
        page: u32::try_from(u64::from(unit) * u64::from(g.oneshot_pages) + page_in_unit / planes)
            .expect("a page of the block, below pages_per_block"),
    };
    Source::Flash { loc, ready_ns: done }
}

/// Takes host LBAs `lbas` into `stream`'s unit in the shared write buffer
/// (crossing the link if `link`); full units go to flash. Returns when
/// the last piece is in.
fn ftl_take_in(
    c: &mut Conventional,
    core: &mut Backend,
    ssd: &mut Ssd,
    stream: usize,
    lbas: Range<u64>,
    ready_ns: Nanos,
    link: bool,
) -> Nanos {
    let (slba, end) = (lbas.start, lbas.end);
    drop_read_ahead(core, slba, end);
    let lba_bytes = core.layout.lba_bytes;
    let capacity = core.layout.zone_buffer_bytes;
    let per_unit = core.program_unit_bytes() / lba_bytes;
    let mut t = ready_ns;
    let mut lba = slba;
    while lba < end {
        let filled = c.placement.units[stream].lbas.len() as u64;
        let piece = (end - lba).min(per_unit - filled).max(1);
        // An LBA already in this unit is overwritten in place: no more room.
        let fresh = (lba..lba + piece).filter(|l| !in_unit(c, *l, stream)).count() as u64;
        let admitted = if fresh == 0 { t } else { c.buffer.admit(t, fresh * lba_bytes, capacity) };
        t = if link { ssd.take_write_data(admitted, piece * lba_bytes) } else { admitted };
        for l in lba..lba + piece {
            pend(c, l, stream, lba_bytes);
        }
        c.placement.units[stream].bytes += fresh * lba_bytes;
        lba += piece;
        if c.placement.units[stream].lbas.len() as u64 >= per_unit {
            program_host_unit(c, core, ssd, stream, t);
        }
    }
    t
}

/// Whether `lba` waits in `stream`'s unit.
#[inline]
fn in_unit(c: &Conventional, lba: u64, stream: usize) -> bool {
    c.pending_pos.get(&lba).is_some_and(|&s| s as usize == stream)
}

/// Puts `lba` in `stream`'s unit: its copy in flash is stale, and a copy
/// waiting in another stream's unit leaves that unit (freeing its room).
#[inline]
fn pend(c: &mut Conventional, lba: u64, stream: usize, lba_bytes: u64) {
    let stream_id = u32::try_from(stream).expect("streams fit u32");
    match c.pending_pos.insert(lba, stream_id) {
        Some(s) if s == stream_id => {}
        Some(other) => {
            let unit = &mut c.placement.units[other as usize];
            unit.lbas.retain(|&l| l != lba);
            unit.bytes -= lba_bytes;
            c.buffer.release_unissued(lba_bytes);
            c.placement.units[stream].lbas.push(lba);
        }
        None => {
            c.ftl.invalidate(lba);
            c.placement.units[stream].lbas.push(lba);
        }
    }
}

/// Chunks read ahead that held LBAs `slba..end` leave the read buffer:
/// their pages no longer hold the data.
fn drop_read_ahead(core: &mut Backend, slba: u64, end: u64) {
    let per_chunk = core.layout.lbas_per_chunk;
    let mut lba = slba;
    // Bound: one step per zone the write crosses.
    for _ in 0..core.layout.zones {
        if lba >= end {
            return;
        }
        let zone = core.zones.zone_of(lba);
        let zslba = core.zones.zslba(zone);
        let zone_end = end.min(zslba + core.layout.zone_lbas);
        core.controller
            .read_buffer_drop_chunks(zone, (lba - zslba) / per_chunk..(zone_end - zslba).div_ceil(per_chunk));
        lba = zone_end;
    }
}

/// Programs `stream`'s full unit on the next die of its reclaim group,
/// into the handle's open block there, collecting garbage first as needed.
pub(super) fn program_host_unit(c: &mut Conventional, core: &Backend, ssd: &mut Ssd, stream: usize, at_ns: Nanos) {
    let (_, handle) = c.placement.group_handle(stream);
    let first_die = c.placement.first_die(stream);
    let unit = &mut c.placement.units[stream];
    let die = first_die + unit.cursor;
    unit.cursor = (unit.cursor + 1) % c.placement.dies_per_group;
    let gc_units_before = c.ftl.gc_units;
    collect_in_background(c, core, ssd, die, at_ns);
    if c.ftl.needs_block(die, Stream::Host(handle)) {
        collect_in_foreground(c, core, ssd, die, at_ns);
    }
    let moved = c.ftl.gc_units - gc_units_before;
    c.gc_units_before_host_unit_max = c.gc_units_before_host_unit_max.max(moved);
    let ru_units = c.placement.ru_units(c.ftl.units_per_block());
    let unit = &mut c.placement.units[stream];
    let lbas = std::mem::take(&mut unit.lbas);
    let bytes = std::mem::take(&mut unit.bytes);
    // A full reclaim unit: the next unit starts another.
    unit.ru_units = (unit.ru_units + 1) % ru_units;
    if c.placement.units.len() == 1 {
        c.pending_pos.clear();
    } else {
        for l in &lbas {
            c.pending_pos.remove(l);
        }
    }
    let slot = c.ftl.place(die, Stream::Host(handle), &lbas);
    let done = program_slot(c, core, ssd, slot, at_ns);
    c.buffer.programmed(c.units_buffered, bytes, done);
    c.units_buffered += 1;
}

fn program_slot(c: &mut Conventional, core: &Backend, ssd: &mut Ssd, slot: UnitSlot, at_ns: Nanos) -> Nanos {
    let oneshot = core.config.flash.oneshot_pages;
    let addr = BlockAddr { die: slot.die, block: slot.block };
    let at_ns = ssd.hand_program_over(at_ns);
    let done = ssd
        .flash_mut()
        .program(at_ns, core.partition.addr(addr), slot.unit * oneshot)
        .unwrap_or_else(|e| panic!("conventional unit {slot:?}: {e}"))
        .done_ns;
    let blocks = core.config.flash.blocks_per_plane;
    let units = c.ftl.units_per_block() as usize;
    let done_by_unit =
        c.unit_done[(slot.die * blocks + slot.block) as usize].get_or_insert_with(|| vec![0; units].into_boxed_slice());
    done_by_unit[slot.unit as usize] = done;
    done
}

/// Background collection, interleaved with host writes as an FTL does
/// it: while `die` has fewer free blocks than the start threshold, each
/// host unit on it is preceded by a few units of the victim's valid
/// data (the victim's pace, at most the configured maximum), so no host
/// unit waits for a whole victim, and the die's reads queue behind
/// these copies.
fn collect_in_background(c: &mut Conventional, core: &Backend, ssd: &mut Ssd, die: u32, at_ns: Nanos) {
    let (start, units_max) = (c.gc_start, c.gc_units_max);
    let mut moved = 0;
    // A step moves at most one unit or frees an emptied victim.
    for _ in 0..2 * units_max + 2 {
        if c.ftl.free_blocks(die) >= start {
            return;
        }
        let Some(victim) = victim_of(c, die) else { return };
        if moved >= victim.units_per_host_unit {
            return;
        }
        moved += collect_unit(c, core, ssd, die, at_ns);
    }
}

/// Foreground collection: the die has no block for the host unit and
/// is at the floor, so the host unit waits while victims are freed
/// (greedy) until the die has the target number of free blocks.
fn collect_in_foreground(c: &mut Conventional, core: &Backend, ssd: &mut Ssd, die: u32, at_ns: Nanos) {
    let (min, target) = (c.gc_min, c.gc_target);
    if c.ftl.free_blocks(die) > min {
        return;
    }
    let gc_units_before = c.ftl.gc_units;
    let g = &core.config.flash;
    let steps_max = u64::from(g.blocks_per_plane) * u64::from(g.pages_per_block + 1);
    for _ in 0..steps_max {
        if c.ftl.free_blocks(die) >= target || victim_of(c, die).is_none() {
            break;
        }
        collect_unit(c, core, ssd, die, at_ns);
    }
    c.gc_foreground_units += c.ftl.gc_units - gc_units_before;
}

/// The victim `die` is collecting, choosing one (greedy: fewest valid
/// LBAs) if none is under way; `None` if no full block holds garbage.
fn victim_of(c: &mut Conventional, die: u32) -> Option<Victim> {
    if c.victims[die as usize].is_none() {
        let block = c.ftl.victim(die)?;
        let units = c.ftl.units_per_block();
        let valid_units = c.ftl.valid_count(die, block).div_ceil(c.ftl.lbas_per_unit());
        let invalid_units = units.saturating_sub(valid_units).max(1);
        let pace = valid_units.div_ceil(invalid_units).clamp(1, c.gc_units_max.max(1));
        c.victims[die as usize] = Some(Victim { block, offset: 0, units_per_host_unit: pace, lbas_moved: 0 });
    }
    c.victims[die as usize]
}

/// Moves the next unit of valid data of `die`'s victim to the die's GC
/// block (read the pages, program them), and erases and frees the
/// victim once no valid data is left in it. Returns the units moved.
fn collect_unit(c: &mut Conventional, core: &Backend, ssd: &mut Ssd, die: u32, at_ns: Nanos) -> u32 {
    let victim = c.victims[die as usize].expect("a victim under way");
    let per_unit = c.ftl.lbas_per_unit() as usize;
    let lbas_per_block = c.ftl.lbas_per_block();
    let (valid, next) = c.ftl.valid_lbas_from(die, victim.block, victim.offset, per_unit);
    assert!(next > victim.offset || victim.offset == lbas_per_block);
    let mut read_done = at_ns;
    if !valid.is_empty() {
        read_done = read_victim_pages(core, ssd, die, &valid, at_ns);
        let lbas: Vec<u64> = valid.iter().map(|&(_, l)| l).collect();
        for &l in &lbas {
            c.ftl.invalidate(l);
        }
        let slot = c.ftl.place(die, gc_stream(c, die, victim.block), &lbas);
        program_slot(c, core, ssd, slot, read_done);
    }
    let blocks = core.config.flash.blocks_per_plane;
    let lbas_moved = victim.lbas_moved + valid.len() as u64;
    c.victims[die as usize] = Some(Victim { offset: next, lbas_moved, ..victim });
    if next >= lbas_per_block {
        fdp::victim_released(c, die, victim.block, lbas_moved, read_done);
        c.victims[die as usize] = None;
        c.ftl.release(die, victim.block);
        c.unit_done[(die * blocks + victim.block) as usize] = None;
        ssd.flash_mut().erase(read_done, core.partition.addr(BlockAddr { die, block: victim.block }));
    }
    u32::from(!valid.is_empty())
}

/// The stream garbage collection copies block `block` of `die` into: its
/// handle's under persistent isolation, else the one GC stream.
fn gc_stream(c: &Conventional, die: u32, block: u32) -> Stream {
    if !c.placement.persistent {
        return Stream::Gc(0);
    }
    let owner = c.ftl.owner(die, block);
    debug_assert_ne!(owner, OWNER_MIXED, "persistently isolated blocks hold one handle's data");
    Stream::Gc(if owner == OWNER_MIXED { 0 } else { owner })
}

/// Reads the flash pages holding `valid` (offsets in a block of `die`),
/// each page once; returns when the last read is done.
fn read_victim_pages(core: &Backend, ssd: &mut Ssd, die: u32, valid: &[(u32, u64)], at_ns: Nanos) -> Nanos {
    let (page_bytes, planes) = (core.config.flash.page_bytes, core.config.flash.planes_per_die);
    let lbas_per_page = u64::from(page_bytes) / core.layout.lba_bytes;
    let mut read_done = at_ns;
    let mut last_page = u64::MAX;
    for &(offset, _) in valid {
        let page_in_block = u64::from(offset) / lbas_per_page;
        if page_in_block != last_page {
            last_page = page_in_block;
            let plane = u32::try_from(page_in_block % u64::from(planes)).expect("below planes_per_die, a u32");
            read_done = read_done.max(ssd.flash_mut().read(at_ns, die, plane, page_bytes));
        }
    }
    read_done
}
