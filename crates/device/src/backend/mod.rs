//! A namespace's layers assembled: [`Backend`] owns the zone layer, the
//! namespace's side of the controller, the flash translation and the
//! background work queue (and the data kept in data mode, the counters),
//! and holds the data path every command shares: taking data into a zone's
//! write buffer, programming complete units, finding where a block's data
//! is, erasing block groups. What the drive's namespaces share (firmware
//! cores, link, flash array) is the [`Ssd`], which each command borrows:
//! the methods that reserve it take it as their first argument.
//!
//! The clients above it are modules of functions over a `&mut Backend` and
//! the `&mut Ssd`:
//! [`crate::management`] (finish and reset tasks), [`crate::znsplus`] (the
//! ZNS+ commands), [`crate::conventional`] (the conventional FTL's garbage
//! collection) and [`crate::power`] (flush, FUA, power loss); the NVMe front
//! [`crate::device::Device`] dispatches commands to them. Nothing here
//! imports a client, so the crate's module graph has no cycle
//! (`scripts/module-cycles`).
//!
//! - [`durability`]: what of each zone's data would survive a power cut (the
//!   write cache's bookkeeping, called as data is taken in and programmed).

pub mod durability;
pub(crate) mod write_queue;

use crate::config::{DeviceConfig, Layout, Mode, PoolRelease, RoomOrder};
use crate::controller::pool::{Crossing, PoolConfig, WHOLE_UNIT};
use crate::controller::read_ahead::ReadAhead;
use crate::controller::Controller;
use crate::counters::{DeviceCounters, ZnsPlusCounters};
use crate::data::DataStore;
use crate::front::command::CmdResult;
use crate::scheduler::{Management, Scheduler};
use crate::ssd::{Partition, Ssd};
use crate::status::Status;
use crate::tracking::Tracking;
use crate::translation::mapping::{ChunkLocation, Mapping};
use crate::translation::Translation;
use crate::zone::{ZoneTable, ZoneType};
use std::collections::BTreeMap;
use std::ops::Range;
use zonelab_flash::{BlockAddr, ChunkRead};
use zonelab_sim::Nanos;

/// Where the data of a block is, for a read or an internal copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// Never written (or skipped): reads as zeros.
    Zeros,
    /// In the controller's write buffer from `ready_ns` on.
    Controller { ready_ns: Nanos },
    /// In flash; readable from `ready_ns` on.
    Flash { loc: ChunkLocation, ready_ns: Nanos },
}

/// A namespace's data path, chosen when it is built: where a write's data
/// goes and where a read finds it. [`Zoned`] is the zone-mapped path of a
/// ZNS namespace (its conventional zones included); the page-mapped FTL of
/// an NVM namespace implements it in [`crate::conventional`]. The front is
/// generic over it, so neither path tests for the other's features.
pub(crate) trait DataPath {
    /// The namespace's LBAs are one space (its zones only a report): writes
    /// and reads may cross zones.
    const ONE_SPACE: bool;
    /// The controller reads ahead of sequential streams.
    const READ_AHEAD: bool;
    /// Takes the LBAs `lbas` of an accepted write into `zone`, ready from
    /// `ready_ns`, arriving as `arrival` says; returns when they are in.
    fn take_in(
        &mut self,
        core: &mut Backend,
        ssd: &mut Ssd,
        zone: u32,
        lbas: Range<u64>,
        ready_ns: Nanos,
        arrival: Arrival,
    ) -> Nanos;
    /// Where the data of `lba` is at `at_ns`.
    fn source(&self, core: &Backend, lba: u64, at_ns: Nanos) -> Source;
    /// Garbage collection so far (a page-mapped path's).
    fn ftl_counters(&self) -> Option<crate::counters::FtlCounters> {
        None
    }
    /// Whether a page-mapped path holds data for `lba`.
    fn ftl_holds(&self, _lba: u64) -> bool {
        false
    }
    /// Checks a page-mapped path's map (a test aid).
    fn check_ftl(&self) {}
    /// The writes waiting for the FTL core in an order of its own
    /// (`conventional.write_order_window`); `None`: arrival order, no queue.
    #[inline(always)]
    fn write_queue(&self) -> Option<&write_queue::WriteQueue> {
        None
    }
    /// [`Self::write_queue`], to change.
    #[inline(always)]
    fn write_queue_mut(&mut self) -> Option<&mut write_queue::WriteQueue> {
        None
    }
    /// Reclaim Unit Handle Status (FDP).
    fn ruh_status(&self, _core: &Backend) -> Result<Box<[crate::fdp::RuhStatus]>, Status> {
        Err(Status::FdpDisabled)
    }
    /// Reclaim Unit Handle Update (FDP) of the handles `pids` name.
    fn ruh_update(&mut self, _core: &Backend, _ssd: &mut Ssd, _pids: &[u16], _at_ns: Nanos) -> Status {
        Status::FdpDisabled
    }
    /// The FDP logs; `None` without FDP.
    fn fdp_logs(&self, _core: &Backend) -> Option<crate::fdp::FdpLogs> {
        None
    }
    /// Set Features FDP Events for the handle `pid` names.
    fn set_fdp_events(&mut self, _pid: u16, _kinds: &[crate::fdp::FdpEventKind], _enable: bool) -> Result<(), Status> {
        Err(Status::FdpDisabled)
    }
}

/// How a write's data arrives at its data path.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Arrival {
    /// Over the link from the host (not made by the controller, as Write Zeroes' zeros are).
    pub(crate) link: bool,
    /// The placement identifier the write names (FDP).
    pub(crate) placement: Option<u16>,
}

/// The zone-mapped data path: each zone's data into its own write buffer
/// and block group ([`Backend::take_in`], [`Backend::source_of`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Zoned;

impl DataPath for Zoned {
    const ONE_SPACE: bool = false;
    const READ_AHEAD: bool = true;

    #[inline(always)]
    fn take_in(
        &mut self,
        core: &mut Backend,
        ssd: &mut Ssd,
        zone: u32,
        lbas: Range<u64>,
        ready_ns: Nanos,
        arrival: Arrival,
    ) -> Nanos {
        core.take_in(ssd, zone, lbas.end - lbas.start, ready_ns, arrival.link)
    }

    #[inline(always)]
    fn source(&self, core: &Backend, lba: u64, at_ns: Nanos) -> Source {
        core.source_in_line(lba, at_ns)
    }
}

/// The outcome of the checks and state change of a command, before timing.
pub(crate) struct Accepted {
    pub(crate) firmware_ns: Nanos,
    pub(crate) result: CmdResult,
}

/// The state of one zoned namespace's layers, in simulated time. The
/// drive's firmware cores, link and flash are not here: every method that
/// reserves them borrows the drive's [`Ssd`] for the command.
pub(crate) struct Backend {
    pub(crate) config: DeviceConfig,
    pub(crate) layout: Layout,
    /// The zone layer: states, write pointers, open/active resources.
    pub(crate) zones: ZoneTable,
    /// Firmware cores, the PCIe link and the zones' write buffers.
    pub(crate) controller: Controller,
    /// Zone-to-block-group mapping, LogFBGs, the conventional FTL.
    pub(crate) translation: Translation,
    /// The background work queued on the drive's flash.
    pub(crate) scheduler: Scheduler,
    /// The namespace's blocks of the drive's flash array.
    pub(crate) partition: Partition,
    pub(crate) data: Option<DataStore>,
    pub(crate) counters: DeviceCounters,
    pub(crate) last_submit_ns: Nanos,
    /// `controller.housekeeping_idle_ns`, or `Nanos::MAX` without
    /// housekeeping: the one place the idle threshold is judged, against the
    /// latest completion the controller keeps.
    housekeeping_idle_ns: Nanos,
    program_unit_bytes: u64,
    /// Time a program unit's data takes to cross the program path.
    program_path_unit_ns: Nanos,
    pub(crate) znsplus: ZnsPlusCounters,
    /// Latest program end since the current command started (copies complete
    /// when their data is programmed).
    pub(crate) op_done_max_ns: Nanos,
    /// Whether the write cache's durability is kept (`backend::durability`):
    /// a volatile cache times Flush and FUA by it, a power cut reads it.
    durability_kept: bool,
}

/// The device pool `config` describes (`[write_buffer]`).
fn pool_config(config: &DeviceConfig) -> PoolConfig {
    let wb = &config.write_buffer;
    let random = wb.room_order == RoomOrder::Random && config.spread.on;
    let crossed_piece_bytes = match wb.pool_release {
        PoolRelease::Programmed => None,
        // A multi-plane program moves a page of each of the die's planes at a time.
        PoolRelease::Crossed => Some(u64::from(config.flash.page_bytes) * u64::from(config.flash.planes_per_die)),
        PoolRelease::UnitCrossed => Some(WHOLE_UNIT),
    };
    PoolConfig {
        capacity_bytes: wb.device_buffer_bytes,
        random_seed: random.then_some(config.spread.seed),
        crossed_piece_bytes,
    }
}

impl Backend {
    /// The layers of a namespace over `layout`, which `config` was validated
    /// into, on `partition` of the drive's blocks, keeping what `tracking`
    /// asks for.
    pub(crate) fn new(config: DeviceConfig, layout: Layout, tracking: Tracking, partition: Partition) -> Self {
        let durability_kept = tracking.power_cuts || config.write_buffer.cache == crate::config::WriteCache::Volatile;
        let mapping = Mapping::new(&layout, &config.flash);
        let zones = ZoneTable::of(&config, &layout);
        let data = (config.mode == Mode::Data).then(|| DataStore::of(&layout));
        let housekeeping = config.controller.housekeeping_ns > 0 && config.spread.on;
        Self {
            zones,
            controller: Controller::new(
                layout.zones,
                pool_config(&config),
                ReadAhead::new(
                    config.controller.read_ahead_bytes / u64::from(config.flash.page_bytes),
                    config.controller.read_buffer_bytes / u64::from(config.flash.page_bytes),
                    config.controller.read_ahead_streams,
                ),
            ),
            translation: Translation { mapping, tl: BTreeMap::new() },
            scheduler: Scheduler { background: Management::new(&config) },
            partition,
            data,
            counters: DeviceCounters::default(),
            last_submit_ns: 0,
            housekeeping_idle_ns: if housekeeping { config.controller.housekeeping_idle_ns } else { Nanos::MAX },
            program_unit_bytes: config.flash.program_unit_bytes(),
            program_path_unit_ns: config.program_path_unit_ns(),
            znsplus: ZnsPlusCounters::default(),
            op_done_max_ns: 0,
            durability_kept,
            layout,
            config,
        }
    }

    /// Whether what a power cut needs is kept (see [`Tracking`]).
    #[inline]
    pub(crate) fn durability_kept(&self) -> bool {
        self.durability_kept
    }

    /// Namespace size in logical blocks (NSZE).
    pub(crate) fn nsze(&self) -> u64 {
        crate::front::nsze(&self.layout)
    }

    pub(crate) fn fail(&mut self, ssd: &mut Ssd, ready_ns: Nanos, status: Status) -> (Status, Nanos, CmdResult) {
        (status, self.fail_ns(ssd, ready_ns), CmdResult::None)
    }

    /// When a failed command's firmware work, from `ready_ns` on, is done.
    pub(crate) fn fail_ns(&mut self, ssd: &mut Ssd, ready_ns: Nanos) -> Nanos {
        ssd.reserve_firmware(ready_ns, self.config.controller.error_ns)
    }

    pub(crate) fn note_auto_close(&mut self, auto_closed: Option<u32>) {
        if auto_closed.is_some() {
            self.counters.auto_closes += 1;
        }
    }

    /// Takes `lbas` LBAs of data, ready from `ready_ns` on, into the zone's
    /// buffer at its fill point, piece by piece; host data (`link`) also
    /// crosses the link. Returns when the last piece is in.
    #[inline(always)]
    pub(crate) fn take_in(&mut self, ssd: &mut Ssd, zone: u32, lbas: u64, ready_ns: Nanos, link: bool) -> Nanos {
        let (piece, unit) = self.next_piece(ssd, zone, lbas, ready_ns);
        // Data within one chunk (most small writes) is one piece.
        if piece == lbas {
            let filled_before = self.controller.filled_lbas(zone);
            let t = self.take_piece(ssd, zone, unit, piece, ready_ns, link);
            debug_assert!(t >= ready_ns);
            debug_assert!(self.controller.filled_lbas(zone) >= filled_before + lbas || self.is_conventional(zone));
            return t;
        }
        self.take_in_pieces(ssd, zone, lbas, ready_ns, link)
    }

    /// [`Backend::take_in`] of data that spans chunks.
    #[inline(never)]
    fn take_in_pieces(&mut self, ssd: &mut Ssd, zone: u32, lbas: u64, ready_ns: Nanos, link: bool) -> Nanos {
        let filled_before = self.controller.filled_lbas(zone);
        let conventional = self.is_conventional(zone);
        debug_assert!(conventional || filled_before + lbas <= self.layout.zcap_lbas, "data beyond the zone's capacity");
        let mut t = ready_ns;
        let mut remaining = lbas;
        while remaining > 0 {
            let (piece, unit) = self.next_piece(ssd, zone, remaining, t);
            t = self.take_piece(ssd, zone, unit, piece, t, link);
            remaining -= piece;
        }
        // Everything is in, in order, no earlier than it was ready (a
        // conventional zone's log may have wrapped meanwhile).
        debug_assert!(t >= ready_ns);
        debug_assert!(conventional || self.controller.filled_lbas(zone) == filled_before + lbas);
        t
    }

    /// Hands `lbas` LBAs whose data is in the zone's buffer already (a
    /// ZRWA's committed data, admitted when written) to the fill at its fill
    /// point, piece by piece, from `at_ns` on: complete units are programmed.
    pub(crate) fn fill_committed(&mut self, ssd: &mut Ssd, zone: u32, lbas: u64, at_ns: Nanos) {
        let filled_before = self.controller.filled_lbas(zone);
        let mut remaining = lbas;
        // Bound: each pass fills at least one LBA (the capacity is not reached).
        while remaining > 0 {
            let (piece, unit) = self.next_piece(ssd, zone, remaining, at_ns);
            self.cache_fill(zone, piece, at_ns);
            self.fill_unit(ssd, zone, unit, piece, at_ns);
            remaining -= piece;
        }
        debug_assert_eq!(self.controller.filled_lbas(zone), filled_before + lbas);
    }

    /// A ZRWA's uncommitted data is not part of the zone yet: a power cut or a
    /// failure of the zone discards it (it leaves the buffer; data mode reads
    /// zeros there). Returns the LBAs it held.
    pub(crate) fn drop_zrwa_window(&mut self, zone: u32) -> u64 {
        let (lbas, _) = self.controller.window_extent(zone);
        self.controller.window_commit_below(zone, u64::MAX);
        self.controller.release_unissued(zone, lbas * self.layout.lba_bytes);
        if let Some(d) = self.data.as_mut() {
            d.truncate(self.zones.wp(zone));
        }
        lbas
    }

    /// Room in the zone's buffer and the shared pool for `lbas` LBAs ready
    /// from `ready_ns` on; returns when there is.
    pub(crate) fn admit_lbas(&mut self, zone: u32, lbas: u64, ready_ns: Nanos) -> Nanos {
        let bytes = lbas * self.layout.lba_bytes;
        if bytes == 0 {
            return ready_ns;
        }
        self.controller.admit_piece(zone, ready_ns, bytes, self.layout.zone_buffer_bytes)
    }

    /// One piece of `piece` LBAs for `unit`, ready from `ready_ns` on: room
    /// in the buffers, the link for host data, then the fill; returns when it is in.
    #[inline(always)]
    fn take_piece(&mut self, ssd: &mut Ssd, zone: u32, unit: u64, piece: u64, ready_ns: Nanos, link: bool) -> Nanos {
        let bytes = piece * self.layout.lba_bytes;
        let admitted = self.controller.admit_piece(zone, ready_ns, bytes, self.layout.zone_buffer_bytes);
        let t = if link { ssd.take_write_data(admitted, bytes) } else { admitted };
        // A copy's source stays on flash: it counts from its command's submission.
        self.cache_fill(zone, piece, if link { t } else { self.last_submit_ns });
        self.fill_unit(ssd, zone, unit, piece, t);
        t
    }

    #[inline]
    fn is_conventional(&self, zone: u32) -> bool {
        self.zones.zone_type(zone) == ZoneType::Conventional
    }

    /// LBAs of the next piece, up to the end of the current chunk so that a
    /// piece never spans two program units, and the unit it goes to.
    #[inline(always)]
    fn next_piece(&mut self, ssd: &mut Ssd, zone: u32, remaining: u64, at_ns: Nanos) -> (u64, u64) {
        if self.is_conventional(zone) && self.controller.filled_lbas(zone) >= self.layout.zcap_lbas {
            // The conventional zone's log wrapped: start over on freshly erased blocks.
            self.flush_partial_units(ssd, zone, at_ns);
            self.erase_zone_blocks(ssd, zone, at_ns);
            self.controller.zone_io_mut(zone).start_lap();
        }
        let (unit, chunk_end) = self.fill_point(zone);
        let filled_lbas = self.controller.filled_lbas(zone);
        let room = (self.layout.zcap_lbas - filled_lbas).max(1);
        (remaining.min(chunk_end - filled_lbas).min(room), unit)
    }

    /// The program unit the zone's fill point is in, and the zone offset
    /// where the fill point's chunk ends.
    #[inline(always)]
    fn fill_point(&mut self, zone: u32) -> (u64, u64) {
        let per_chunk = self.layout.lbas_per_chunk;
        let mapping = &self.translation.mapping;
        self.controller.zone_io_mut(zone).fill_point(per_chunk, |chunk| mapping.unit_of_chunk(chunk))
    }

    /// The zone offset past the last chunk of the unit the zone programs next.
    #[inline(always)]
    fn flush_end_lbas(&mut self, zone: u32) -> u64 {
        let per_chunk = self.layout.lbas_per_chunk;
        let mapping = &self.translation.mapping;
        self.controller.zone_io_mut(zone).flush_end_lbas(per_chunk, |unit| mapping.unit_chunk_span(unit).1)
    }

    /// `lbas` more LBAs of the zone are in the buffer at `at_ns`: program
    /// every unit they complete.
    pub(crate) fn fill(&mut self, ssd: &mut Ssd, zone: u32, lbas: u64, at_ns: Nanos) {
        let (unit, _) = self.fill_point(zone);
        self.fill_unit(ssd, zone, unit, lbas, at_ns);
    }

    /// [`Backend::fill`] with the unit of the fill point known (`fill_point`).
    #[inline(always)]
    fn fill_unit(&mut self, ssd: &mut Ssd, zone: u32, unit: u64, lbas: u64, at_ns: Nanos) {
        debug_assert_eq!(unit, self.fill_point(zone).0, "the unit of the fill point");
        self.controller.zone_io_mut(zone).note_filled(unit, lbas, at_ns);
        // The next unit is complete once the fill passes its last chunk.
        if self.controller.filled_lbas(zone) >= self.flush_end_lbas(zone) {
            self.program_complete_units(ssd, zone, at_ns);
        }
    }

    /// Programs every unit the fill has completed.
    #[inline(never)]
    fn program_complete_units(&mut self, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
        // Bound: each pass programs one unit, and units end below the fill point.
        while self.controller.filled_lbas(zone) >= self.flush_end_lbas(zone) {
            if self.config.management.finish.pad_turns {
                self.scheduler.background.unit_turn(zone, at_ns);
            }
            self.program_unit(ssd, zone, at_ns, self.program_unit_bytes);
        }
    }

    /// Programs the zone's next unit once its data is in (or skips it if it
    /// was programmed without the buffer).
    pub(crate) fn program_unit(&mut self, ssd: &mut Ssd, zone: u32, at_ns: Nanos, data_bytes: u64) -> Nanos {
        debug_assert!(data_bytes <= self.program_unit_bytes, "a unit holds at most one unit of data");
        let (unit, ready_ns, preprogrammed) = self.controller.zone_io_mut(zone).issue_next_unit(at_ns);
        if preprogrammed {
            self.cache_programmed(zone, unit, ready_ns);
            return ready_ns;
        }
        let ready_ns = self.scheduler.background.after_dispatch_hold(ready_ns);
        let (addr, first_page) = self.translation.mapping.unit_target(zone, unit);
        self.erase_before_program(ssd, addr, ready_ns);
        // A finish's padding (no data) does not cross the program data path.
        let ready_ns = if data_bytes > 0 { ssd.hand_program_over(ready_ns) } else { ready_ns };
        let cross_ns = if data_bytes > 0 { self.program_path_unit_ns } else { 0 };
        let done = ssd
            .flash_mut()
            .program(ready_ns, self.partition.addr(addr), first_page)
            .unwrap_or_else(|e| panic!("zone {zone} unit {unit}: {e}"));
        self.op_done_max_ns = self.op_done_max_ns.max(done.done_ns);
        self.cache_programmed(zone, unit, done.done_ns);
        let crossing = Crossing { start_ns: ready_ns, cross_ns };
        self.controller.release_programmed(zone, unit, data_bytes, done.done_ns, crossing);
        if data_bytes > 0 && self.config.controller.unit_commit_ns > 0 {
            self.controller.note_unit_commit(done.done_ns);
        }
        // Units go to flash in order, each once, after its data is in.
        debug_assert_eq!(self.controller.flushed_units(zone), unit + 1);
        debug_assert!(done.done_ns > ready_ns);
        done.done_ns
    }

    /// Whether `zone` holds data (buffered, programmed or, TL_opened, in its
    /// original block group): its start die may change only when not.
    pub(crate) fn zone_holds_data(&self, zone: u32) -> bool {
        self.controller.zone_io(zone).holds_data() || self.translation.tl.contains_key(&zone)
    }

    pub(crate) fn program_unit_bytes(&self) -> u64 {
        self.program_unit_bytes
    }

    /// A command completes at `complete_ns`.
    #[inline]
    pub(crate) fn note_complete(&mut self, complete_ns: Nanos) {
        self.controller.note_command_done(complete_ns);
    }

    /// Whether a command reaching the firmware at `ready_ns` may find the
    /// drive idle long enough for housekeeping (the firmware's own state and
    /// queued management work decide then).
    #[inline]
    pub(crate) fn housekeeping_may_run(&self, ready_ns: Nanos) -> bool {
        // Without housekeeping the threshold saturates: never idle enough.
        ready_ns >= self.controller.drive_empty_from_ns().saturating_add(self.housekeeping_idle_ns)
    }

    pub(crate) fn count_pad_bytes(&mut self, bytes: u64) {
        self.counters.pad_bytes += bytes;
    }

    /// Programs the units that hold buffered data but are not complete,
    /// padding them (a zone that became full or was finished).
    pub(crate) fn flush_partial_units(&mut self, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
        let per_chunk = self.layout.lbas_per_chunk;
        let filled_lbas = self.controller.filled_lbas(zone);
        // Bound: a zone has fewer program units than LBAs of capacity.
        for _ in 0..self.layout.zcap_lbas {
            let unit = self.controller.flushed_units(zone);
            let (first_chunk, _) = self.translation.mapping.unit_chunk_span(unit);
            if first_chunk * per_chunk >= filled_lbas {
                return;
            }
            let data_lbas: u64 = self
                .translation
                .mapping
                .unit_chunks(unit)
                .map(|c| filled_lbas.saturating_sub(c * per_chunk).min(per_chunk))
                .sum();
            let data_bytes = data_lbas * self.layout.lba_bytes;
            debug_assert!(data_bytes < self.program_unit_bytes, "complete units are programmed as they fill");
            if !self.controller.is_preprogrammed(zone, unit) {
                self.counters.pad_bytes += self.program_unit_bytes - data_bytes;
            }
            self.program_unit(ssd, zone, at_ns, data_bytes);
        }
    }

    /// Brings `bytes` of `lba`'s chunk, from `lba` on, into the controller;
    /// returns when they are there. `lba` is `offset_lbas` into its chunk
    /// (the caller split its range at chunk ends, so it knows).
    pub(crate) fn fetch<P: DataPath>(
        &mut self,
        path: &P,
        ssd: &mut Ssd,
        lba: u64,
        offset_lbas: u64,
        at_ns: Nanos,
        bytes: u32,
    ) -> Nanos {
        debug_assert_eq!(offset_lbas, lba % self.layout.lbas_per_chunk);
        let offset_bytes = u32::try_from(offset_lbas * self.layout.lba_bytes).expect("within one page");
        let source = path.source(self, lba, at_ns);
        self.fetch_span(ssd, source, at_ns, offset_bytes, bytes)
    }

    /// Brings the whole chunk that holds `lba` into the controller, from the
    /// place `lba`'s data is at: copies and plugs read a source chunk once
    /// for all the blocks they take from it, whichever of them comes first.
    pub(crate) fn fetch_chunk(&mut self, ssd: &mut Ssd, lba: u64, at_ns: Nanos) -> Nanos {
        let source = self.source_in_line(lba, at_ns);
        self.fetch_span(ssd, source, at_ns, 0, self.chunk_bytes())
    }

    /// `bytes` from `offset_bytes` of the chunk at `source`. In line in
    /// both fetches: out of line, it was a call per host read.
    #[inline(always)]
    fn fetch_span(&mut self, ssd: &mut Ssd, source: Source, at_ns: Nanos, offset_bytes: u32, bytes: u32) -> Nanos {
        debug_assert!(offset_bytes + bytes <= self.chunk_bytes(), "a fetch stays within its chunk");
        match source {
            Source::Zeros => at_ns,
            Source::Controller { ready_ns } => at_ns.max(ready_ns),
            Source::Flash { loc, ready_ns } => {
                let block = self.partition.block(loc.block);
                let read = ChunkRead { die: loc.die, plane: loc.plane, block, page: loc.page, offset_bytes, bytes };
                ssd.flash_mut().read_chunk(at_ns.max(ready_ns), read)
            }
        }
    }

    /// Where the data of `lba` is at `at_ns`. A TL_opened zone's blocks at or
    /// above the write pointer are in its original block group.
    pub(crate) fn source_of(&self, lba: u64, at_ns: Nanos) -> Source {
        self.source_in_line(lba, at_ns)
    }

    /// [`Backend::source_of`], in line in the fetch that every read makes,
    /// where the source need not be built only to be taken apart.
    #[inline(always)]
    pub(crate) fn source_in_line(&self, lba: u64, at_ns: Nanos) -> Source {
        let zone = self.zones.zone_of(lba);
        let offset = lba - self.zones.zslba(zone);
        let io = self.controller.zone_io(zone);
        let per_chunk = self.layout.lbas_per_chunk;
        let conventional = self.zones.zone_type(zone) == ZoneType::Conventional;
        if !conventional && offset >= io.filled_lbas() {
            return self.unfilled_source(zone, offset);
        }
        let ready_ns = io.gate_ns(offset);
        let chunk = self.layout.chunk_of(offset);
        let chunk = if conventional { chunk % self.layout.zcap_lbas.div_ceil(per_chunk) } else { chunk };
        // The location is worked out with the unit, whose divisions it shares,
        // though a chunk still in the buffer does not need it.
        let mapping = &self.translation.mapping;
        let (unit, loc) = mapping.place_in(zone, mapping.fbg_of_zone(zone), chunk);
        if io.buffered(unit, at_ns) {
            return Source::Controller { ready_ns }; // still in the write buffer
        }
        Source::Flash { loc, ready_ns }
    }

    /// Where the data of `offset` of sequential `zone`, at or past its fill
    /// point, is: zeros, or, TL_opened, the original block group. Out of
    /// line: reads mostly find written data.
    #[cold]
    #[inline(never)]
    fn unfilled_source(&self, zone: u32, offset: u64) -> Source {
        match self.translation.tl.get(&zone) {
            Some(tl) if offset < tl.original_lbas => Source::Flash {
                loc: self.translation.mapping.locate_in(zone, tl.original_fbg, offset / self.layout.lbas_per_chunk),
                ready_ns: 0,
            },
            _ => Source::Zeros, // never written: the mapping says zeros
        }
    }

    /// Erases, from `at_ns` on, every block of the zone's group that holds data.
    fn erase_zone_blocks(&mut self, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
        self.erase_fbg(ssd, zone, self.translation.mapping.fbg_of_zone(zone), at_ns);
    }

    /// Erases the blocks of block group `fbg` of `zone`'s FCG that hold data.
    pub(crate) fn erase_fbg(&mut self, ssd: &mut Ssd, zone: u32, fbg: u32, at_ns: Nanos) {
        for die in self.translation.mapping.fcg_dies(zone) {
            for block in self.translation.mapping.fbg_blocks(fbg) {
                if self.pages_written(ssd, die, block) > 0 {
                    ssd.flash_mut().erase(at_ns, self.partition.addr(BlockAddr { die, block }));
                }
            }
        }
    }

    /// Before a program into `addr`: erases its block group on that die if a
    /// reset left it to erase (deferred erase, or a dynamically mapped group
    /// taken before the idle-time erase reached it).
    pub(crate) fn erase_before_program(&mut self, ssd: &mut Ssd, addr: BlockAddr, at_ns: Nanos) {
        let fbg = addr.block / self.layout.fbg_blocks;
        if self.scheduler.background.pending_erase.contains_key(&(addr.die, fbg)) {
            self.erase_pending(ssd, addr.die, fbg, at_ns);
        }
    }

    /// Erases block group `fbg` on `die` if it is pending; returns when done.
    pub(crate) fn erase_pending(&mut self, ssd: &mut Ssd, die: u32, fbg: u32, at_ns: Nanos) -> Nanos {
        let Some(ready_ns) = self.scheduler.background.pending_erase.remove(&(die, fbg)) else {
            return at_ns;
        };
        let all = self.config.management.reset.erase == crate::config::EraseScope::All;
        let mut end = at_ns;
        for block in self.translation.mapping.fbg_blocks(fbg) {
            if all || self.pages_written(ssd, die, block) > 0 {
                let addr = self.partition.addr(BlockAddr { die, block });
                end = end.max(ssd.flash_mut().erase(at_ns.max(ready_ns), addr));
            }
        }
        end
    }

    /// Program units a zone's capacity spans.
    pub(crate) fn zone_units(&self) -> u64 {
        let chunks = self.layout.zcap_lbas.div_ceil(self.layout.lbas_per_chunk);
        self.translation.mapping.unit_of_chunk(chunks - 1) + 1
    }

    /// Pages written in the namespace's block `block` of `die` (plane 0).
    pub(crate) fn pages_written(&self, ssd: &Ssd, die: u32, block: u32) -> u32 {
        ssd.flash().pages_written(die, 0, self.partition.block(block))
    }

    /// Copybacks the data at `loc` went through since it last crossed the controller.
    pub(crate) fn copyback_chain(&self, ssd: &Ssd, loc: ChunkLocation) -> u32 {
        ssd.flash().copyback_chain(loc.die, loc.plane, self.partition.block(loc.block), loc.page)
    }

    /// Bytes of one chunk (a flash page).
    pub(crate) fn chunk_bytes(&self) -> u32 {
        u32::try_from(self.layout.lbas_per_chunk * self.layout.lba_bytes).expect("a chunk is one flash page")
    }
}
