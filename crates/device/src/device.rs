//! The ZNS device: NVMe zoned command handling on top of the flash model.
//!
//! Each command is checked in the order of the semantics sheet, changes zone
//! state when it is accepted, and is timed by reserving the resources it uses
//! in order: host interface (`submit_ns`), a firmware core, the zone's write
//! buffer, the PCIe link, and flash channels and dies for the program units it
//! completes or the pages it reads. Commands must be submitted in
//! non-decreasing time order.

use crate::config::{DeviceConfig, Layout, Mode};
use crate::controller::read_ahead::ReadAhead;
use crate::controller::{Controller, ZoneIo};
use crate::counters::{DeviceCounters, ZnsPlusCounters};
use crate::data::DataStore;
use crate::front::command::*;
use crate::front::{self, IDENTIFY_BYTES};
use crate::scheduler::{Management, Phase, Scheduler};
use crate::status::Status;
use crate::translation::conventional::Conventional;
use crate::translation::mapping::{ChunkLocation, Mapping};
use crate::translation::Translation;
use crate::zone::{ZoneState, ZoneTable, ZoneType};
use std::collections::BTreeMap;
use zonelab_flash::{FlashArray, FlashCounters};
use zonelab_sim::{Nanos, TIME_NS_MAX};

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

/// One zoned namespace of a ZNS SSD model: the NVMe front, the zone state
/// machine, the controller, the flash translation and the flash, in simulated time.
pub struct Device {
    pub(crate) config: DeviceConfig,
    pub(crate) layout: Layout,
    /// The zone layer: states, write pointers, open/active resources.
    pub(crate) zones: ZoneTable,
    /// Firmware cores, the PCIe link and the zones' write buffers.
    pub(crate) controller: Controller,
    /// Zone-to-block-group mapping, LogFBGs, the conventional FTL.
    pub(crate) translation: Translation,
    /// The flash timelines and the background work queued on them.
    pub(crate) scheduler: Scheduler,
    pub(crate) data: Option<DataStore>,
    pub(crate) counters: DeviceCounters,
    pub(crate) last_submit_ns: Nanos,
    program_unit_bytes: u64,
    pub(crate) znsplus: ZnsPlusCounters,
    /// Latest program end since the current command started (copies complete
    /// when their data is programmed).
    pub(crate) op_done_max_ns: Nanos,
}

/// The outcome of the checks and state change of a command, before timing.
pub(crate) struct Accepted {
    pub(crate) firmware_ns: Nanos,
    pub(crate) result: CmdResult,
}

impl Device {
    /// A device for `config`, validated first: the error names the field to change.
    pub fn new(config: DeviceConfig) -> Result<Self, crate::config::ConfigError> {
        if !config.namespaces.is_empty() {
            return Err(crate::config::namespaces::one_namespace_only(&config));
        }
        let layout = config.validate()?;
        Ok(Self::with_layout(config, layout))
    }

    /// A device over `layout`, which `config` was validated into (a namespace
    /// of a shared device: `namespaces`).
    pub(crate) fn with_layout(config: DeviceConfig, layout: Layout) -> Self {
        let mapping = Mapping::new(&layout, &config.flash);
        let zones = ZoneTable::of(&config, &layout);
        let data = (config.mode == Mode::Data).then(|| DataStore::of(&layout));
        let conventional = config
            .conventional
            .is_some()
            .then(|| Conventional::new(&config, layout.zone_lbas * u64::from(layout.zones)));
        Self {
            zones,
            controller: Controller::new(
                config.controller.firmware_cores,
                config.link.bytes_per_s(),
                layout.zones,
                ReadAhead::new(
                    config.controller.read_ahead_bytes / u64::from(config.flash.page_bytes),
                    config.controller.read_buffer_bytes / u64::from(config.flash.page_bytes),
                ),
            ),
            translation: Translation { mapping, tl: BTreeMap::new(), conventional },
            scheduler: Scheduler {
                flash: FlashArray::new(config.flash.clone(), config.flash_timing.clone()),
                background: Management::default(),
            },
            data,
            counters: DeviceCounters::default(),
            last_submit_ns: 0,
            program_unit_bytes: config.flash.program_unit_bytes(),
            znsplus: ZnsPlusCounters::default(),
            op_done_max_ns: 0,
            layout,
            config,
        }
    }

    /// The configuration the device was built from.
    pub fn config(&self) -> &DeviceConfig {
        &self.config
    }
    /// The namespace's shape as derived from the configuration.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    /// The static zone-to-flash mapping (ZNS+ §2.2).
    pub fn mapping(&self) -> &Mapping {
        &self.translation.mapping
    }
    /// Zone states, write pointers and resources.
    pub fn zones(&self) -> &ZoneTable {
        &self.zones
    }
    /// The flash array and its timelines.
    pub fn flash(&self) -> &FlashArray {
        &self.scheduler.flash
    }
    /// Host command counts and bytes.
    pub fn counters(&self) -> DeviceCounters {
        self.counters
    }
    /// Flash operation counts.
    pub fn flash_counters(&self) -> FlashCounters {
        self.scheduler.flash.counters()
    }
    /// What the ZNS+ commands did.
    pub fn znsplus_counters(&self) -> ZnsPlusCounters {
        self.znsplus
    }
    /// Chip utilization per 100 ms of simulated time (interval start, busy share).
    pub fn chip_utilization(&self) -> Vec<(Nanos, f64)> {
        self.scheduler.flash.chip_utilization()
    }
    /// Whether `zone` is TL_opened.
    pub fn is_tl_opened(&self, zone: u32) -> bool {
        self.translation.tl.contains_key(&zone)
    }
    /// Namespace size in logical blocks (NSZE).
    pub fn nsze(&self) -> u64 {
        front::nsze(&self.layout)
    }

    /// Bytes of data kept in data mode.
    pub fn data_bytes(&self) -> usize {
        self.data.as_ref().map_or(0, DataStore::bytes)
    }

    /// Handles `cmd` at `submit_ns`; `read_out`, in data mode, receives the
    /// data of a read. A finish or reset queues its work instead of
    /// completing (see [`crate::management`]).
    pub(crate) fn execute(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        assert!(submit_ns >= self.last_submit_ns, "commands must be submitted in time order");
        assert!(submit_ns <= TIME_NS_MAX, "submission past the simulation horizon");
        self.last_submit_ns = submit_ns;
        self.counters.commands += 1;
        self.op_done_max_ns = 0;
        let ready_ns = submit_ns + self.config.controller.submit_ns;
        let (status, complete_ns, result) = match *cmd {
            Command::Write { slba, nlb, payload, fua } => self.write(ready_ns, slba, nlb, payload, false, fua),
            Command::WriteZeroes { slba, nlb } => self.write(ready_ns, slba, nlb, Payload::None, true, false),
            Command::Append { zslba, nlb, payload, fua } => self.append(ready_ns, zslba, nlb, payload, fua),
            Command::Flush => self.flush(ready_ns),
            Command::Read { slba, nlb } => self.read(ready_ns, slba, nlb, read_out),
            Command::ZoneMgmtSend { action, slba, select_all } => self.zone_mgmt(ready_ns, action, slba, select_all),
            Command::ReportZones { slba, filter, max_zones, partial } => {
                self.report(ready_ns, slba, filter, max_zones, partial)
            }
            Command::Identify => {
                let fw_end = self.controller.firmware.reserve(ready_ns, self.config.controller.identify_ns);
                let done = self.controller.link_reserve_to_host(fw_end, IDENTIFY_BYTES);
                (Status::Success, done, CmdResult::Identify(Box::new(self.identify())))
            }
            Command::ZoneCompaction { src, dst } => self.zone_compaction(ready_ns, src, dst),
            Command::SimpleCopy { ranges, sdlba } => self.simple_copy(ready_ns, ranges, sdlba),
            Command::TlOpen { zslba, valid } => self.tl_open(ready_ns, zslba, valid),
            Command::IdentifyMapping => self.identify_mapping_command(ready_ns),
        };
        if !status.is_success() {
            self.counters.errors += 1;
        }
        let complete_ns = complete_ns + self.config.controller.complete_ns;
        debug_assert!(complete_ns > submit_ns);
        Completion { status, submit_ns, complete_ns, result }
    }

    /// Fault injection (not an NVMe command): the zone turns read-only or offline.
    pub fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        let Some(zone) = front::fault_target(&self.layout, &self.zones, slba, state)? else { return Ok(()) };
        // A failed zone is no longer TL_opened: its LogFBG holds what was written.
        self.tl_drop(zone, self.last_submit_ns);
        self.zones.inject_fault(zone, state);
        if state == ZoneState::Offline {
            self.discard_zone(zone);
        }
        Ok(())
    }

    pub(crate) fn fail(&mut self, ready_ns: Nanos, status: Status) -> (Status, Nanos, CmdResult) {
        let done = self.controller.firmware.reserve(ready_ns, self.config.controller.error_ns);
        (status, done, CmdResult::None)
    }

    /// The Identify Namespace data the device reports.
    pub fn identify(&self) -> IdentifyData {
        front::identify(&self.config, &self.layout)
    }

    fn write(
        &mut self,
        ready_ns: Nanos,
        slba: u64,
        nlb: u32,
        payload: Payload<'_>,
        zeroes: bool,
        fua: bool,
    ) -> (Status, Nanos, CmdResult) {
        match self.accept_write(slba, nlb, zeroes) {
            Err(status) => self.fail(ready_ns, status),
            Ok(accepted) => {
                let mut done = self.write_data(ready_ns, accepted.firmware_ns, slba, nlb, payload, zeroes);
                if fua {
                    done = self.fua_done(slba, nlb, done);
                }
                self.cache_write_issued(slba, done);
                (Status::Success, done, accepted.result)
            }
        }
    }

    fn accept_write(&mut self, slba: u64, nlb: u32, zeroes: bool) -> Result<Accepted, Status> {
        front::check_range(&self.layout, slba, nlb, !zeroes)?;
        let zone = self.zones.zone_of(slba);
        let zone_end = self.zones.zslba(zone) + self.layout.zone_lbas;
        let c = &self.config.controller;
        let base_ns = if zeroes { c.write_zeroes_ns } else { c.write_ns };
        if self.zones.zone_type(zone) == ZoneType::Conventional {
            self.zones.check_writable(zone)?;
            // A conventional device's zones are only a report: its blocks are one space.
            if slba + u64::from(nlb) > zone_end && self.translation.conventional.is_none() {
                return Err(Status::ZoneBoundaryError);
            }
            return Ok(Accepted { firmware_ns: base_ns, result: CmdResult::None });
        }
        self.zones.check_writable(zone)?;
        let end = slba + u64::from(nlb);
        let invalid_write = match self.translation.tl.get(&zone) {
            // Sparse sequential: at or past the write pointer, invalid blocks only.
            Some(tl) => slba < self.zones.wp(zone) || tl.any_valid(slba - self.zones.zslba(zone), end - slba),
            None => slba != self.zones.wp(zone),
        };
        if invalid_write {
            return Err(Status::ZoneInvalidWrite);
        }
        if end > self.zones.zslba(zone) + self.layout.zcap_lbas {
            return Err(Status::ZoneBoundaryError);
        }
        let admission = self.zones.admit_write(zone)?;
        let extra_ns = if admission.implicitly_opened { self.config.controller.implicit_open_write_ns } else { 0 };
        self.note_auto_close(admission.auto_closed);
        Ok(Accepted { firmware_ns: base_ns + extra_ns, result: CmdResult::None })
    }

    pub(crate) fn note_auto_close(&mut self, auto_closed: Option<u32>) {
        if auto_closed.is_some() {
            self.counters.auto_closes += 1;
        }
    }

    fn append(
        &mut self,
        ready_ns: Nanos,
        zslba: u64,
        nlb: u32,
        payload: Payload<'_>,
        fua: bool,
    ) -> (Status, Nanos, CmdResult) {
        match self.accept_append(zslba, nlb) {
            Err(status) => self.fail(ready_ns, status),
            Ok((accepted, lba)) => {
                let mut done = self.write_data(ready_ns, accepted.firmware_ns, lba, nlb, payload, false);
                if fua {
                    done = self.fua_done(lba, nlb, done);
                }
                self.cache_write_issued(lba, done);
                (Status::Success, done, accepted.result)
            }
        }
    }

    fn accept_append(&mut self, zslba: u64, nlb: u32) -> Result<(Accepted, u64), Status> {
        front::check_range(&self.layout, zslba, nlb, true)?;
        let zone = front::addressed_zone(&self.layout, &self.zones, zslba)?;
        if u64::from(nlb) > self.layout.zasl_lbas {
            return Err(Status::InvalidField);
        }
        if self.translation.tl.contains_key(&zone) {
            // Threaded logging writes at LBAs the host chose from the valid bitmap.
            return Err(Status::InvalidZoneOperation);
        }
        self.zones.check_writable(zone)?;
        let lba = self.zones.wp(zone);
        if lba + u64::from(nlb) > zslba + self.layout.zcap_lbas {
            return Err(Status::ZoneBoundaryError);
        }
        let admission = self.zones.admit_write(zone)?;
        let c = &self.config.controller;
        let extra_ns = if admission.implicitly_opened { c.implicit_open_append_ns } else { 0 };
        let firmware_ns = c.append_ns + extra_ns;
        self.note_auto_close(admission.auto_closed);
        Ok((Accepted { firmware_ns, result: CmdResult::Lba(lba) }, lba))
    }

    /// Times an accepted write of `nlb` blocks at `slba` and applies it:
    /// firmware, then page-sized pieces that each wait for buffer room and
    /// cross the link; complete program units go to flash.
    fn write_data(
        &mut self,
        ready_ns: Nanos,
        firmware_ns: Nanos,
        slba: u64,
        nlb: u32,
        payload: Payload<'_>,
        zeroes: bool,
    ) -> Nanos {
        let zone = self.zones.zone_of(slba);
        let nlb = u64::from(nlb);
        // The command's last `write_ftl_ns` of firmware work (the mapping
        // update) also needs the write path's FTL core; waiting for it does
        // not hold the firmware core.
        let ftl_ns = self.config.controller.write_ftl_ns.min(firmware_ns);
        let merge_ns = self.partial_unit_merge_ns(slba + nlb);
        let fw_end = self.controller.firmware.reserve(ready_ns, firmware_ns);
        let fw_end = self.ftl_turn(fw_end - ftl_ns, ftl_ns + merge_ns).max(fw_end);
        let sequential = self.zones.zone_type(zone) == ZoneType::SeqWriteRequired;
        let mut data_ready_ns = fw_end;
        if sequential {
            // A TL_opened zone's write is handled once the LBA-ordered plugs
            // before it are in and the blocks it skips are plugged.
            let handled_ns = self.wp_ready_ns(zone, fw_end);
            let plugged_ns = self.fill_gap(zone, slba - self.zones.zslba(zone), handled_ns);
            data_ready_ns = handled_ns.max(plugged_ns);
            let wp = self.zones.wp(zone);
            self.zones.advance_wp(zone, slba + nlb - wp);
        }
        if let Some(d) = self.data.as_mut() {
            d.write(slba, nlb, if zeroes { Payload::Pattern(0) } else { payload });
        }
        self.counters.host_write_bytes += nlb * self.layout.lba_bytes;
        // Write Zeroes moves no data over the link.
        if self.translation.conventional.is_some() {
            return self.ftl_take_in(slba, nlb, data_ready_ns, !zeroes);
        }
        let t = self.take_in(zone, nlb, data_ready_ns, !zeroes);
        if sequential {
            self.after_wp_moved(zone, t);
        }
        t
    }

    /// FTL-core time a write ending before LBA `end_lba` adds by leaving a
    /// mapping unit partly filled (LBA formats below 4 KiB only).
    fn partial_unit_merge_ns(&self, end_lba: u64) -> Nanos {
        let c = &self.config.controller;
        let unit_bytes = c.small_lba_map_unit_bytes;
        let lba_bytes = self.layout.lba_bytes;
        if unit_bytes == 0 || lba_bytes >= 4096 || (end_lba * lba_bytes).is_multiple_of(unit_bytes) {
            return 0;
        }
        c.partial_unit_ns
    }

    /// Takes `lbas` LBAs of data, ready from `ready_ns` on, into the zone's
    /// buffer at its fill point, piece by piece; host data (`link`) also
    /// crosses the link. Returns when the last piece is in.
    pub(crate) fn take_in(&mut self, zone: u32, lbas: u64, ready_ns: Nanos, link: bool) -> Nanos {
        let lba_bytes = self.layout.lba_bytes;
        let capacity = self.layout.zone_buffer_bytes;
        let mut t = ready_ns;
        let mut remaining = lbas;
        while remaining > 0 {
            let piece = self.next_piece(zone, remaining, t);
            let bytes = piece * lba_bytes;
            let admitted = self.controller.zone_io[zone as usize].buffer.admit(t, bytes, capacity);
            t = if link { self.controller.link_reserve_to_device(admitted, bytes) } else { admitted };
            // A copy's source stays on flash: it counts from its command's submission.
            self.cache_fill(zone, piece, if link { t } else { self.last_submit_ns });
            self.fill(zone, piece, t);
            remaining -= piece;
        }
        t
    }

    /// After a sequential zone's write pointer moved: a TL_opened zone in
    /// LBA-ordered plugging plugs the valid blocks that follow; a zone that
    /// became full programs its partial units (and a TL_opened one swaps
    /// its LogFBG in).
    pub(crate) fn after_wp_moved(&mut self, zone: u32, at_ns: Nanos) {
        self.plug_following(zone, at_ns);
        if self.zones.state(zone) == ZoneState::Full {
            if self.translation.tl.contains_key(&zone) {
                self.tl_finalize(zone, at_ns);
            }
            self.flush_partial_units(zone, at_ns);
        }
    }

    /// LBAs of the next piece: up to the end of the current chunk, so a piece
    /// never spans two program units.
    fn next_piece(&mut self, zone: u32, remaining: u64, at_ns: Nanos) -> u64 {
        let per_chunk = self.layout.lbas_per_chunk;
        let conventional = self.zones.zone_type(zone) == ZoneType::Conventional;
        if conventional && self.controller.zone_io[zone as usize].filled_lbas >= self.layout.zcap_lbas {
            // The conventional zone's log wrapped: start over on freshly erased blocks.
            self.flush_partial_units(zone, at_ns);
            self.erase_zone_blocks(zone, at_ns);
            let io = &mut self.controller.zone_io[zone as usize];
            io.lap_units += io.flushed_units;
            io.filled_lbas = 0;
            io.flushed_units = 0;
        }
        let io = &self.controller.zone_io[zone as usize];
        let room = (self.layout.zcap_lbas - io.filled_lbas).max(1);
        remaining.min(per_chunk - io.filled_lbas % per_chunk).min(room)
    }

    /// `lbas` more LBAs of the zone are in the buffer at `at_ns`: program
    /// every unit they complete.
    pub(crate) fn fill(&mut self, zone: u32, lbas: u64, at_ns: Nanos) {
        let io = &mut self.controller.zone_io[zone as usize];
        let unit = self.translation.mapping.unit_of_chunk(io.filled_lbas / self.layout.lbas_per_chunk);
        let ready = io.unit_ready.entry(unit).or_insert(at_ns);
        *ready = (*ready).max(at_ns);
        io.filled_lbas += lbas;
        let complete_chunks = io.filled_lbas / self.layout.lbas_per_chunk;
        loop {
            let io = &self.controller.zone_io[zone as usize];
            let (_, last_chunk) = self.translation.mapping.unit_chunk_span(io.flushed_units);
            if last_chunk >= complete_chunks {
                break;
            }
            self.program_unit(zone, at_ns, self.program_unit_bytes);
        }
    }

    /// Programs the zone's next unit once its data is in (or skips it if it
    /// was programmed without the buffer).
    pub(crate) fn program_unit(&mut self, zone: u32, at_ns: Nanos, data_bytes: u64) -> Nanos {
        let io = &mut self.controller.zone_io[zone as usize];
        let unit = io.flushed_units;
        let ready_ns = io.unit_ready.remove(&unit).map_or(at_ns, |r| r.max(at_ns));
        io.flushed_units += 1;
        if io.preprogrammed.remove(&unit) {
            self.cache_programmed(zone, unit, ready_ns);
            return ready_ns;
        }
        let (addr, first_page) = self.translation.mapping.unit_target(zone, unit);
        self.erase_before_program(addr, ready_ns);
        let done = self
            .scheduler
            .flash
            .program(ready_ns, addr, first_page)
            .unwrap_or_else(|e| panic!("zone {zone} unit {unit}: {e}"));
        self.op_done_max_ns = self.op_done_max_ns.max(done.done_ns);
        self.cache_programmed(zone, unit, done.done_ns);
        let io = &mut self.controller.zone_io[zone as usize];
        io.buffer.programmed(io.lap_units + unit, data_bytes, done.done_ns);
        done.done_ns
    }

    pub(crate) fn program_unit_bytes(&self) -> u64 {
        self.program_unit_bytes
    }

    pub(crate) fn count_pad_bytes(&mut self, bytes: u64) {
        self.counters.pad_bytes += bytes;
    }

    /// Programs the units that hold buffered data but are not complete,
    /// padding them (a zone that became full or was finished).
    pub(crate) fn flush_partial_units(&mut self, zone: u32, at_ns: Nanos) {
        let per_chunk = self.layout.lbas_per_chunk;
        let filled_lbas = self.controller.zone_io[zone as usize].filled_lbas;
        // Bound: a zone has fewer program units than LBAs of capacity.
        for _ in 0..self.layout.zcap_lbas {
            let unit = self.controller.zone_io[zone as usize].flushed_units;
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
            let io = &self.controller.zone_io[zone as usize];
            if !io.preprogrammed.contains(&io.flushed_units) {
                self.counters.pad_bytes += self.program_unit_bytes - data_bytes;
            }
            self.program_unit(zone, at_ns, data_bytes);
        }
    }

    fn read(&mut self, ready_ns: Nanos, slba: u64, nlb: u32, out: Option<&mut [u8]>) -> (Status, Nanos, CmdResult) {
        if let Err(status) = self.check_read(slba, nlb) {
            return self.fail(ready_ns, status);
        }
        let fw_end = self.controller.firmware.reserve(ready_ns, self.config.controller.read_ns);
        let mut data_ready = fw_end;
        let per_chunk = self.layout.lbas_per_chunk;
        let (mut lba, end) = (slba, slba + u64::from(nlb));
        let sequential = self.controller.read_ahead.note_read(slba, end);
        while lba < end {
            let piece_end = end.min((lba / per_chunk + 1) * per_chunk);
            data_ready = data_ready.max(self.read_piece(fw_end, lba, piece_end - lba, sequential));
            lba = piece_end;
        }
        if sequential {
            self.read_ahead(end, fw_end);
        }
        let bytes = u64::from(nlb) * self.layout.lba_bytes;
        self.counters.host_read_bytes += bytes;
        let done = self.controller.link_reserve_to_host(data_ready, bytes);
        let result = match self.data.as_ref() {
            Some(d) => CmdResult::Read(d.read(slba, u64::from(nlb), out)),
            None => CmdResult::None,
        };
        (Status::Success, done, result)
    }

    fn check_read(&self, slba: u64, nlb: u32) -> Result<(), Status> {
        front::check_range(&self.layout, slba, nlb, true)?;
        let cross_zone_ok = self.config.namespace.cross_zone_read || self.translation.conventional.is_some();
        front::check_read(&self.zones, slba, nlb, cross_zone_ok)
    }

    /// Times the read of `lbas` LBAs within one chunk: nothing for unwritten
    /// blocks, controller memory for data not yet programmed or read ahead
    /// for a stream this read continues, else flash.
    fn read_piece(&mut self, at_ns: Nanos, lba: u64, lbas: u64, sequential: bool) -> Nanos {
        // Only a stream's reads look in the read buffer: random reads, the
        // common case, skip the lookup.
        let buffered = sequential
            .then(|| self.read_ahead_chunk(lba))
            .flatten()
            .and_then(|(zone, chunk)| self.controller.read_ahead.lookup(zone, chunk));
        if let Some(ready_ns) = buffered {
            return at_ns.max(ready_ns);
        }
        let bytes = u32::try_from(lbas * self.layout.lba_bytes).expect("a piece is within one page");
        self.fetch(lba, at_ns, bytes)
    }

    /// The (zone, chunk) the read buffer would hold `lba` under: read-ahead
    /// follows sequential zones of a zoned namespace.
    fn read_ahead_chunk(&self, lba: u64) -> Option<(u32, u64)> {
        if self.controller.read_ahead.window_chunks() == 0 || self.translation.conventional.is_some() {
            return None;
        }
        let zone = self.zones.zone_of(lba);
        if self.zones.zone_type(zone) != ZoneType::SeqWriteRequired {
            return None;
        }
        Some((zone, (lba - self.zones.zslba(zone)) / self.layout.lbas_per_chunk))
    }

    /// Reads the pages of the read-ahead window after `end` that are in
    /// flash and not buffered yet into the read buffer, from `at_ns` on.
    fn read_ahead(&mut self, end: u64, at_ns: Nanos) {
        let per_chunk = self.layout.lbas_per_chunk;
        let page_bytes = self.config.flash.page_bytes;
        let window_end = end.saturating_add(self.controller.read_ahead.window_chunks() * per_chunk);
        let window_end = window_end.min(self.layout.zone_lbas * u64::from(self.layout.zones));
        let mut lba = end;
        // Bound: the window holds `window_chunks` chunks.
        for _ in 0..=self.controller.read_ahead.window_chunks() {
            if lba >= window_end {
                return;
            }
            let Some((zone, chunk)) = self.read_ahead_chunk(lba) else { return };
            if self.controller.read_ahead.lookup(zone, chunk).is_none() {
                if let Source::Flash { loc, ready_ns } = self.source_of(lba, at_ns) {
                    let in_ns =
                        self.scheduler.flash.read_page(at_ns.max(ready_ns), loc.die, loc.plane, loc.page, page_bytes);
                    self.controller.read_ahead.insert(zone, chunk, in_ns);
                }
            }
            lba = (lba / per_chunk + 1) * per_chunk;
        }
    }

    /// Brings `bytes` of `lba`'s chunk into the controller; returns when they are there.
    pub(crate) fn fetch(&mut self, lba: u64, at_ns: Nanos, bytes: u32) -> Nanos {
        match self.source_of(lba, at_ns) {
            Source::Zeros => at_ns,
            Source::Controller { ready_ns } => at_ns.max(ready_ns),
            Source::Flash { loc, ready_ns } => {
                self.scheduler.flash.read_page(at_ns.max(ready_ns), loc.die, loc.plane, loc.page, bytes)
            }
        }
    }

    /// Where the data of `lba` is at `at_ns`. A TL_opened zone's blocks at or
    /// above the write pointer are in its original block group.
    pub(crate) fn source_of(&self, lba: u64, at_ns: Nanos) -> Source {
        if self.translation.conventional.is_some() {
            return self.ftl_source(lba, at_ns);
        }
        let zone = self.zones.zone_of(lba);
        let offset = lba - self.zones.zslba(zone);
        let io = &self.controller.zone_io[zone as usize];
        let per_chunk = self.layout.lbas_per_chunk;
        let conventional = self.zones.zone_type(zone) == ZoneType::Conventional;
        if !conventional && offset >= io.filled_lbas {
            return match self.translation.tl.get(&zone) {
                Some(tl) if offset < tl.original_lbas => Source::Flash {
                    loc: self.translation.mapping.locate_in(zone, tl.original_fbg, offset / per_chunk),
                    ready_ns: 0,
                },
                _ => Source::Zeros, // never written: the mapping says zeros
            };
        }
        let ready_ns = io.gate_ns(offset);
        let chunk = offset / per_chunk;
        let chunk = if conventional { chunk % self.layout.zcap_lbas.div_ceil(per_chunk) } else { chunk };
        let unit = self.translation.mapping.unit_of_chunk(chunk);
        if unit >= io.flushed_units || io.buffer.unit_pending_until(io.lap_units + unit, at_ns).is_some() {
            return Source::Controller { ready_ns }; // still in the write buffer
        }
        Source::Flash { loc: self.translation.mapping.locate(zone, chunk), ready_ns }
    }

    fn zone_mgmt(
        &mut self,
        ready_ns: Nanos,
        action: ZoneAction,
        slba: u64,
        select_all: bool,
    ) -> (Status, Nanos, CmdResult) {
        if select_all {
            return self.zone_mgmt_all(ready_ns, action);
        }
        let zone = match front::addressed_zone(&self.layout, &self.zones, slba) {
            Ok(zone) => zone,
            Err(status) => return self.fail(ready_ns, status),
        };
        let mut phases = Vec::new();
        match self.apply_action(ready_ns, action, zone, &mut phases) {
            Ok(done) => {
                self.queue_management(done, action, phases);
                (Status::Success, done, CmdResult::None)
            }
            Err(status) => self.fail(ready_ns, status),
        }
    }

    /// Queues the work of an accepted finish or reset, if it has any.
    fn queue_management(&mut self, ready_ns: Nanos, action: ZoneAction, phases: Vec<Phase>) {
        if phases.is_empty() {
            return;
        }
        let preempt = action != ZoneAction::Finish || self.config.management.finish.preempt;
        self.queue_task(ready_ns, phases, preempt);
    }

    /// Select All: the action on every zone in a state it applies to
    /// ([`front::select_all_applies`]), in zone order, stopping at the first
    /// error without undoing earlier zones.
    fn zone_mgmt_all(&mut self, ready_ns: Nanos, action: ZoneAction) -> (Status, Nanos, CmdResult) {
        let mut done = self.controller.firmware.reserve(ready_ns, self.config.controller.error_ns);
        let mut phases = Vec::new();
        for zone in self.layout.conventional_zones..self.layout.zones {
            if !front::select_all_applies(action, self.zones.state(zone)) {
                continue;
            }
            match self.apply_action(done, action, zone, &mut phases) {
                Ok(t) => done = t,
                Err(status) => {
                    assert!(phases.is_empty(), "finish and reset apply to every state Select All picks");
                    return (status, done, CmdResult::None);
                }
            }
        }
        self.queue_management(done, action, phases);
        (Status::Success, done, CmdResult::None)
    }

    /// Applies `action` to one sequential zone at `ready_ns`; returns when its
    /// firmware work is done, or, for finish and reset, appends the work to
    /// `phases` and returns `ready_ns`.
    fn apply_action(
        &mut self,
        ready_ns: Nanos,
        action: ZoneAction,
        zone: u32,
        phases: &mut Vec<Phase>,
    ) -> Result<Nanos, Status> {
        let m = &self.config.management;
        let cost_ns = match action {
            ZoneAction::Open => m.open_ns,
            ZoneAction::Close => m.close_ns,
            ZoneAction::Offline => m.offline_ns,
            ZoneAction::Finish => return self.finish_zone(ready_ns, zone, phases),
            ZoneAction::Reset => return self.reset_zone(ready_ns, zone, phases),
        };
        match action {
            ZoneAction::Open => {
                let auto_closed = self.zones.open(zone)?;
                self.note_auto_close(auto_closed);
            }
            // A TL_opened zone is always open, so closing it succeeds.
            ZoneAction::Close if self.translation.tl.contains_key(&zone) => self.tl_close(zone, ready_ns),
            ZoneAction::Close => self.zones.close(zone)?,
            _ => {
                self.zones.offline(zone)?;
                self.discard_zone(zone);
            }
        }
        Ok(self.controller.firmware.reserve(ready_ns, cost_ns))
    }

    fn finish_zone(&mut self, ready_ns: Nanos, zone: u32, phases: &mut Vec<Phase>) -> Result<Nanos, Status> {
        let was_full = self.zones.state(zone) == ZoneState::Full;
        if self.translation.tl.contains_key(&zone) {
            self.tl_plug_all(zone, ready_ns);
        }
        let old_wp = self.zones.finish(zone)?;
        if self.translation.tl.contains_key(&zone) {
            self.tl_finalize(zone, ready_ns);
        }
        if !was_full {
            self.counters.finishes += 1;
            let written_lbas = old_wp - self.zones.zslba(zone);
            phases.extend(self.finish_phases(zone, ready_ns, written_lbas));
        }
        Ok(ready_ns)
    }

    fn reset_zone(&mut self, ready_ns: Nanos, zone: u32, phases: &mut Vec<Phase>) -> Result<Nanos, Status> {
        let old_state = self.zones.state(zone);
        self.zones.reset(zone)?;
        if old_state != ZoneState::Empty {
            self.counters.resets += 1;
        }
        self.tl_drop(zone, ready_ns);
        // What the host wrote is mapped; a finish's padding is not.
        let written_lbas = self.controller.zone_io[zone as usize].filled_lbas;
        phases.extend(self.reset_phases(zone, ready_ns, old_state, written_lbas));
        self.controller.read_ahead.drop_zone(zone);
        self.discard_zone(zone);
        Ok(ready_ns)
    }

    /// Erases, from `at_ns` on, every block of the zone's group that holds data.
    fn erase_zone_blocks(&mut self, zone: u32, at_ns: Nanos) {
        self.erase_fbg(zone, self.translation.mapping.fbg_of_zone(zone), at_ns);
    }

    /// Erases the blocks of block group `fbg` of `zone`'s FCG that hold data.
    pub(crate) fn erase_fbg(&mut self, zone: u32, fbg: u32, at_ns: Nanos) {
        for die in self.translation.mapping.fcg_dies(zone) {
            for block in self.translation.mapping.fbg_blocks(fbg) {
                if self.scheduler.flash.pages_written(die, 0, block) > 0 {
                    self.scheduler.flash.erase(at_ns, zonelab_flash::BlockAddr { die, block });
                }
            }
        }
    }

    fn discard_zone(&mut self, zone: u32) {
        self.cancel_padding(zone);
        self.tl_drop(zone, self.last_submit_ns);
        self.controller.zone_io[zone as usize] = ZoneIo::default();
        self.cache_discard(zone);
        if let Some(d) = self.data.as_mut() {
            d.reset(zone);
        }
    }

    fn report(
        &mut self,
        ready_ns: Nanos,
        slba: u64,
        filter: ReportFilter,
        max_zones: u32,
        partial: bool,
    ) -> (Status, Nanos, CmdResult) {
        let report = match front::report(&self.layout, &self.zones, slba, filter, max_zones, partial) {
            Ok(report) => report,
            Err(status) => return self.fail(ready_ns, status),
        };
        let c = &self.config.controller;
        let fw_ns = c.report_ns + c.report_per_zone_ns * report.zones.len() as u64;
        let fw_end = self.controller.firmware.reserve(ready_ns, fw_ns);
        let done = self.controller.link_reserve_to_host(fw_end, front::report_bytes(&report));
        (Status::Success, done, CmdResult::Report(report))
    }

    /// The Zone Descriptor of `zone`, as a report would return it.
    pub fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        front::descriptor(&self.layout, &self.zones, zone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{preset, DeviceOptions};

    fn zn540_small() -> Device {
        let opts = DeviceOptions { zones: Some(4), zone_size_bytes: Some(64 << 20), ..Default::default() };
        Device::new(opts.apply(preset("zn540").unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn metadata_finish_pads_exactly_the_partly_filled_units() {
        let opts = DeviceOptions { zones: Some(4), zone_size_bytes: Some(64 << 20), ..Default::default() };
        let mut config = opts.apply(preset("zn540").unwrap()).unwrap();
        config.management.finish.design = crate::config::FinishDesign::Metadata;
        let mut dev = Device::new(config).unwrap();
        let c = dev.submit(0, &Command::Write { slba: 0, nlb: 1, payload: Payload::None, fua: false }, None);
        assert_eq!(dev.controller.zone_io[0].buffer.occupied_bytes(), 4096);
        let f = dev.submit(
            c.complete_ns,
            &Command::ZoneMgmtSend { action: ZoneAction::Finish, slba: 0, select_all: false },
            None,
        );
        assert_eq!(f.status, Status::Success);
        // One LBA lives in die 0's first unit (4 planes × 3 pages × 16 KiB): the rest is padding.
        assert_eq!(dev.counters().pad_bytes, 192 * 1024 - 4096);
        assert_eq!(dev.flash_counters().programs, 1);
        assert_eq!(dev.scheduler.flash.pages_written(0, 0, 0), 3);
        assert_eq!(dev.scheduler.flash.pages_written(1, 0, 0), 0, "dies without data are not programmed");
        // The buffer frees exactly what it held once the program is done.
        dev.controller.zone_io[0].buffer.admit(u64::MAX / 2, 0, 1);
        assert_eq!(dev.controller.zone_io[0].buffer.occupied_bytes(), 0);
    }

    #[test]
    fn full_super_word_line_programs_every_die_once() {
        let mut dev = zn540_small();
        let mut t = 0;
        // 3 MiB = one super word line: 16 dies × 192 KiB, written as 24 × 128 KiB.
        for i in 0..24u64 {
            t = dev
                .submit(t, &Command::Write { slba: i * 32, nlb: 32, payload: Payload::None, fua: false }, None)
                .complete_ns;
        }
        assert_eq!(dev.flash_counters().programs, 16);
        assert_eq!(dev.counters().pad_bytes, 0);
        assert!((0..16).all(|die| dev.scheduler.flash.pages_written(die, 3, 0) == 3));
    }

    #[test]
    fn writes_feel_back_pressure_once_the_buffer_is_full() {
        let mut dev = zn540_small();
        // All writes submitted at once: the buffer (6 MiB) absorbs two super word
        // lines at link speed; after that, writes wait for programs (2.5 ms each).
        let lat: Vec<Nanos> = (0..96u64)
            .map(|i| {
                dev.submit(0, &Command::Write { slba: i * 32, nlb: 32, payload: Payload::None, fua: false }, None)
                    .complete_ns
            })
            .collect();
        assert!(lat[40] < 2_000_000, "within the buffer: link-bound, {} ns", lat[40]);
        assert!(lat[60] > 2_500_000, "beyond the buffer: waits for a program, {} ns", lat[60]);
    }
}
