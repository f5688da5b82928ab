//! The ZNS device's NVMe front: [`Device`] takes each command, checks it in
//! the order docs/command-semantics.md gives, changes zone state when it is accepted,
//! and times it by reserving the resources it uses in order: host interface
//! (`submit_ns`), a firmware core, the zone's write buffer, the PCIe link,
//! and flash channels and dies for the program units it completes or the
//! pages it reads. Commands must be submitted in non-decreasing time order.
//!
//! The layers' state is a `Backend` (`src/backend/`); the work that is not
//! a plain read or write goes to the clients over it: finish and reset tasks
//! to [`crate::management`], the ZNS+ commands to [`crate::znsplus`], a
//! conventional device's writes to [`crate::conventional`], Flush, FUA and
//! power cuts to [`crate::power`]. None of them calls back into `Device`.

use crate::backend::write_queue::{QueuedWrite, WriteQueue};
use crate::backend::{Accepted, Arrival, Backend, DataPath, Source, Zoned};
use crate::config::{DeviceConfig, Layout};
use crate::controller::read_ahead::StreamRead;
use crate::conventional::{Conventional, FtlCounters};
use crate::counters::{DeviceCounters, ZnsPlusCounters};
use crate::data::DataStore;
use crate::front::command::*;
use crate::front::{self, IDENTIFY_BYTES};
use crate::management::{self, zrwa};
use crate::power::{self, PowerCutReport};
use crate::scheduler::Phase;
use crate::ssd::{Partition, Ssd};
use crate::status::Status;
use crate::tracking::Tracking;
use crate::translation::mapping::{ChunkLocation, Mapping};
use crate::znsplus;
use crate::zone::{WriteAdmission, ZoneState, ZoneTable, ZoneType};
use zonelab_flash::{ChunkRead, FlashArray, FlashCounters};
use zonelab_sim::{Nanos, TIME_NS_MAX};

/// A ZNS SSD model with one namespace, in simulated time: the drive's
/// shared hardware (`Ssd`: firmware cores, link, flash array) and the
/// namespace's NVMe front over its layers.
pub struct Device {
    front: Fronts,
    ssd: Ssd,
}

/// One namespace's NVMe front over its layers (`Backend`: the zone state
/// machine, the namespace's side of the controller, the flash translation
/// and the background work): every command borrows the drive's `Ssd` for
/// as long as it runs. A [`Device`] owns one; the namespaces of a shared
/// drive ([`crate::namespaces`]) take turns on theirs.
// `repr(C)`: the layers come first in every front, so that reaching them
// through `Fronts` is one address whatever the path (no branch).
#[repr(C)]
pub(crate) struct Front<P: DataPath> {
    pub(crate) core: Backend,
    /// Where writes go and reads look: zone-mapped or page-mapped.
    path: P,
}

/// A namespace's front with the data path its configuration chose when it
/// was built: the one branch a command takes between the two.
// Both variants hold a namespace's layers (about 2 KiB); the page-mapped FTL's
// state adds a few hundred bytes. A namespace holds one `Fronts`, so a box
// would save nothing and cost a pointer on every command.
// `repr(u8)`: both fronts start at the same offset, so that reaching the
// layers (`Fronts::core`) compiles to one address, not a branch (without it
// and `Front`'s `repr(C)`: 588 instructions per 4 KiB write in `zonelab
// bench`, 567 with).
#[allow(clippy::large_enum_variant)]
#[repr(u8)]
pub(crate) enum Fronts {
    Zoned(Front<Zoned>),
    PageMapped(Front<Conventional>),
}

/// Runs `$body` with `$front` bound to the namespace's front, whichever path it has.
macro_rules! with_front {
    ($fronts:expr, $front:ident => $body:expr) => {
        match $fronts {
            $crate::device::Fronts::Zoned($front) => $body,
            $crate::device::Fronts::PageMapped($front) => $body,
        }
    };
}
pub(crate) use with_front;

impl Fronts {
    /// The front of a namespace over `layout`, which `config` was validated
    /// into, on `partition` of the drive's blocks: page-mapped when `config`
    /// has `[conventional]`.
    pub(crate) fn new(config: DeviceConfig, layout: Layout, tracking: Tracking, partition: Partition) -> Self {
        let page_mapped = config
            .conventional
            .is_some()
            .then(|| Conventional::new(&config, layout.zone_lbas * u64::from(layout.zones)));
        let core = Backend::new(config, layout, tracking, partition);
        match page_mapped {
            None => Fronts::Zoned(Front { core, path: Zoned }),
            Some(path) => Fronts::PageMapped(Front { core, path }),
        }
    }

    /// The namespace's layers.
    #[inline]
    pub(crate) fn core(&self) -> &Backend {
        with_front!(self, f => &f.core)
    }
}

/// What a write puts in its blocks.
#[derive(Debug, Clone, Copy)]
enum WriteData<'a> {
    /// The host's payload, which crosses the link, and its placement identifier (FDP).
    Host { payload: Payload<'a>, placement: Option<u16> },
    /// Zeroes the controller makes (Write Zeroes): nothing crosses the link;
    /// the placement identifier it names (FDP).
    Zeroes { placement: Option<u16> },
}

impl<'a> WriteData<'a> {
    #[inline(always)]
    fn is_zeroes(self) -> bool {
        matches!(self, WriteData::Zeroes { .. })
    }
    #[inline(always)]
    fn crosses_link(self) -> bool {
        !self.is_zeroes()
    }
    /// What data mode keeps.
    #[inline(always)]
    fn payload(self) -> Payload<'a> {
        match self {
            WriteData::Host { payload, .. } => payload,
            WriteData::Zeroes { .. } => Payload::Pattern(0),
        }
    }
    /// The placement identifier the write names (FDP).
    #[inline(always)]
    fn placement(self) -> Option<u16> {
        match self {
            WriteData::Host { placement, .. } | WriteData::Zeroes { placement } => placement,
        }
    }
}

/// A write's or append's firmware work and how it uses the cores.
#[derive(Debug, Clone, Copy)]
struct Firmware {
    /// Firmware time; its last `controller.write_ftl_ns` also needs the FTL core.
    ns: Nanos,
    /// When nonzero, the FTL part instead: it runs after the rest, on the FTL core alone.
    pipelined_ftl_ns: Nanos,
    /// FTL-core work left behind once the command is done.
    ftl_after_ns: Nanos,
    /// The data starts coming in only once the firmware is done
    /// (`controller.append_data_after_firmware`), not while it runs.
    data_after_firmware: bool,
}
impl Device {
    /// A device for `config`, validated first (the error names the field to
    /// change), that tracks everything ([`Tracking::ALL`]).
    pub fn new(config: DeviceConfig) -> Result<Self, crate::config::ConfigError> {
        Self::with_tracking(config, Tracking::ALL)
    }

    /// A device for `config` that keeps only what `tracking` asks for
    /// beyond its timing: the same timing and results, less work per
    /// command ([`crate::tracking`]).
    pub fn with_tracking(config: DeviceConfig, tracking: Tracking) -> Result<Self, crate::config::ConfigError> {
        if !config.namespaces.is_empty() {
            return Err(crate::config::namespaces::one_namespace_only(&config));
        }
        let layout = config.validate()?;
        let ssd = Ssd::new(&config, tracking);
        let partition = Partition::new(0, config.flash.blocks_per_plane);
        Ok(Self { front: Fronts::new(config, layout, tracking, partition), ssd })
    }

    /// The configuration the device was built from.
    pub fn config(&self) -> &DeviceConfig {
        &self.front.core().config
    }
    /// The namespace's shape as derived from the configuration.
    pub fn layout(&self) -> &Layout {
        &self.front.core().layout
    }
    /// The static zone-to-flash mapping (ZNS+ §2.2).
    pub fn mapping(&self) -> &Mapping {
        &self.front.core().translation.mapping
    }
    /// Zone states, write pointers and resources.
    pub fn zones(&self) -> &ZoneTable {
        &self.front.core().zones
    }
    /// The flash array and its timelines.
    pub fn flash(&self) -> &FlashArray {
        self.ssd.flash()
    }
    /// Host command counts and bytes.
    pub fn counters(&self) -> DeviceCounters {
        self.front.core().counters
    }
    /// Flash operation counts.
    pub fn flash_counters(&self) -> FlashCounters {
        self.ssd.flash().counters()
    }
    /// What the ZNS+ commands did.
    pub fn znsplus_counters(&self) -> ZnsPlusCounters {
        self.front.core().znsplus
    }
    /// Chip utilization per 100 ms of simulated time (interval start, busy
    /// share); empty for a device built without [`Tracking::chip_utilization`].
    pub fn chip_utilization(&self) -> Vec<(Nanos, f64)> {
        self.ssd.flash().chip_utilization()
    }
    /// Whether `zone` is TL_opened.
    pub fn is_tl_opened(&self, zone: u32) -> bool {
        self.front.core().translation.tl.contains_key(&zone)
    }
    /// Namespace size in logical blocks (NSZE).
    pub fn nsze(&self) -> u64 {
        front::nsze(&self.front.core().layout)
    }
    /// Bytes of data kept in data mode.
    pub fn data_bytes(&self) -> usize {
        self.front.core().data.as_ref().map_or(0, DataStore::bytes)
    }

    /// Starts `cmd` at `submit_ns`: a finish or reset may complete later.
    #[inline]
    pub fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        with_front!(&mut self.front, f => f.start(&mut self.ssd, submit_ns, cmd, read_out))
    }
    /// Submits `cmd` and waits for it: a pending finish or reset runs to its
    /// end as if no other command arrived meanwhile.
    #[inline]
    pub fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        with_front!(&mut self.front, f => f.submit(&mut self.ssd, submit_ns, cmd, read_out))
    }
    /// When the next management step could start if no host command came
    /// first; `None` when there is no management work.
    pub fn next_event_ns(&self) -> Option<Nanos> {
        with_front!(&self.front, f => f.next_event_ns(&self.ssd))
    }
    /// Reserves every management step that starts before `until_ns`.
    pub fn advance(&mut self, until_ns: Nanos) {
        with_front!(&mut self.front, f => f.advance(&mut self.ssd, until_ns));
    }
    /// Completions of pending commands, in the order they completed.
    pub fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        with_front!(&mut self.front, f => f.take_completed())
    }
    /// Management tasks accepted but not completed.
    pub fn pending_tasks(&self) -> usize {
        with_front!(&self.front, f => f.pending_tasks())
    }
    /// Reserves all management work, as if the device were left alone.
    pub fn drain(&mut self) {
        with_front!(&mut self.front, f => f.drain(&mut self.ssd));
    }
    /// Power fails at `at_ns` (not before the last submitted command) and
    /// comes back: every zone keeps what survives, as [`crate::power`] describes.
    /// The device must have been built with [`Tracking::power_cuts`] (as
    /// [`Device::new`] builds it).
    pub fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport {
        with_front!(&mut self.front, f => f.power_cut(&mut self.ssd, at_ns))
    }
    /// The FDP logs of a page-mapped namespace with `[fdp]`; `None` otherwise.
    pub fn fdp_logs(&self) -> Option<crate::fdp::FdpLogs> {
        with_front!(&self.front, f => f.fdp_logs())
    }
    /// Set Features FDP Events (see [`ZonedDevice::set_fdp_events`](crate::ZonedDevice::set_fdp_events)).
    pub fn set_fdp_events(&mut self, pid: u16, kinds: &[crate::fdp::FdpEventKind], enable: bool) -> Result<(), Status> {
        with_front!(&mut self.front, f => f.set_fdp_events(pid, kinds, enable))
    }
    /// Where a read of `lba` would find its data in flash now: `None` when
    /// it is in the controller or reads as zeros. During threaded logging
    /// this is the LogFBG below the write pointer and the original above it.
    pub fn flash_location(&self, lba: u64) -> Option<ChunkLocation> {
        with_front!(&self.front, f => f.flash_location(lba))
    }
    /// The chip and FCG id fields of a chunk address, if the mapping has them
    /// (ZNS+ identify_mapping).
    pub fn identify_mapping(&self) -> Option<MappingInfo> {
        with_front!(&self.front, f => f.identify_mapping())
    }
    /// Garbage collection so far; `None` for a zoned device.
    pub fn ftl_counters(&self) -> Option<FtlCounters> {
        with_front!(&self.front, f => f.ftl_counters())
    }
    /// Whether a conventional device holds data for `lba` (in flash or in its buffer).
    pub fn ftl_holds(&self, lba: u64) -> bool {
        with_front!(&self.front, f => f.ftl_holds(lba))
    }
    /// Checks the page mapping (a test aid); panics on a breach.
    pub fn check_ftl(&self) {
        with_front!(&self.front, f => f.check_ftl());
    }
    /// Fault injection (not an NVMe command): the zone turns read-only or offline.
    pub fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        with_front!(&mut self.front, f => f.set_zone_state(&mut self.ssd, slba, state))
    }
    /// The Identify Namespace data the device reports.
    pub fn identify(&self) -> IdentifyData {
        with_front!(&self.front, f => f.identify())
    }
    /// The Zone Descriptor of `zone`, as a report would return it.
    pub fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        with_front!(&self.front, f => f.descriptor(zone))
    }
}

impl<P: DataPath> Front<P> {
    /// Starts `cmd` at `submit_ns`: a finish or reset may complete later.
    #[inline(always)]
    pub(crate) fn start(
        &mut self,
        ssd: &mut Ssd,
        submit_ns: Nanos,
        cmd: &Command<'_>,
        read_out: Option<&mut [u8]>,
    ) -> Started {
        self.serve_waiting_writes(ssd, submit_ns);
        management::advance(&mut self.core, ssd, submit_ns);
        let completion = self.execute(ssd, submit_ns, cmd, read_out);
        match self.core.scheduler.background.queued.take() {
            Some(tag) => {
                debug_assert!(completion.status.is_success());
                management::advance(&mut self.core, ssd, submit_ns);
                Started::Pending(tag)
            }
            None => Started::Done(completion),
        }
    }

    /// Submits `cmd` and waits for it: a pending finish or reset runs to its
    /// end as if no other command arrived meanwhile.
    #[inline]
    pub(crate) fn submit(
        &mut self,
        ssd: &mut Ssd,
        submit_ns: Nanos,
        cmd: &Command<'_>,
        read_out: Option<&mut [u8]>,
    ) -> Completion {
        match self.start(ssd, submit_ns, cmd, read_out) {
            Started::Done(c) => c,
            Started::Pending(tag) => {
                if self.path.write_queue().is_some_and(|q| q.holds(tag)) {
                    // Nothing else comes: the waiting writes are served in turn.
                    self.serve_waiting_writes(ssd, TIME_NS_MAX);
                }
                management::run_until_completed(&mut self.core, ssd, tag)
            }
        }
    }

    /// When the next management step could start if no host command came
    /// first; `None` when there is no management work.
    pub(crate) fn next_event_ns(&self, ssd: &Ssd) -> Option<Nanos> {
        let management = management::next_event_ns(&self.core, ssd);
        match self.next_queued_write_ns() {
            Some(w) => Some(management.map_or(w, |m| m.min(w))),
            None => management,
        }
    }

    /// Reserves every management step that starts before `until_ns`.
    pub(crate) fn advance(&mut self, ssd: &mut Ssd, until_ns: Nanos) {
        self.serve_waiting_writes(ssd, until_ns);
        management::advance(&mut self.core, ssd, until_ns);
    }

    /// Completions of pending commands, in the order they completed.
    pub(crate) fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        management::take_completed(&mut self.core)
    }

    /// Management tasks accepted but not completed.
    pub(crate) fn pending_tasks(&self) -> usize {
        management::pending_tasks(&self.core) + self.path.write_queue().map_or(0, |q| q.len())
    }

    /// Reserves all management work, as if the device were left alone.
    pub(crate) fn drain(&mut self, ssd: &mut Ssd) {
        self.serve_waiting_writes(ssd, TIME_NS_MAX);
        management::drain(&mut self.core, ssd);
    }

    /// Power fails at `at_ns` (not before the last submitted command) and
    /// comes back: every zone keeps what survives, as [`crate::power`] describes.
    /// The device must have been built with [`Tracking::power_cuts`] (as
    /// [`Device::new`] builds it).
    pub(crate) fn power_cut(&mut self, ssd: &mut Ssd, at_ns: Nanos) -> PowerCutReport {
        // Writes waiting for the FTL core were accepted: they are in flight
        // at the cut, served (and timed) as if the power held.
        self.serve_waiting_writes(ssd, TIME_NS_MAX);
        power::power_cut(&mut self.core, at_ns)
    }

    /// Where a read of `lba` would find its data in flash now: `None` when
    /// it is in the controller or reads as zeros. During threaded logging
    /// this is the LogFBG below the write pointer and the original above it.
    pub(crate) fn flash_location(&self, lba: u64) -> Option<ChunkLocation> {
        znsplus::flash_location(&self.core, lba)
    }

    /// The chip and FCG id fields of a chunk address, if the mapping has them
    /// (ZNS+ identify_mapping).
    pub(crate) fn identify_mapping(&self) -> Option<MappingInfo> {
        znsplus::identify_mapping::identify_mapping(&self.core)
    }

    /// Garbage collection so far; `None` for a zoned device.
    pub(crate) fn ftl_counters(&self) -> Option<FtlCounters> {
        self.path.ftl_counters()
    }

    /// Whether a conventional device holds data for `lba` (in flash or in its buffer).
    pub(crate) fn ftl_holds(&self, lba: u64) -> bool {
        self.path.ftl_holds(lba)
    }

    /// Checks the page mapping (a test aid); panics on a breach.
    pub(crate) fn check_ftl(&self) {
        self.path.check_ftl();
    }

    /// Handles `cmd` at `submit_ns`; `read_out`, in data mode, receives the
    /// data of a read. A finish or reset queues its work instead of
    /// completing (see [`crate::management`]).
    #[inline(always)]
    pub(crate) fn execute(
        &mut self,
        ssd: &mut Ssd,
        submit_ns: Nanos,
        cmd: &Command<'_>,
        read_out: Option<&mut [u8]>,
    ) -> Completion {
        assert!(submit_ns >= self.core.last_submit_ns, "commands must be submitted in time order");
        assert!(submit_ns <= TIME_NS_MAX, "submission past the simulation horizon");
        self.core.last_submit_ns = submit_ns;
        self.core.controller.note_command_start(submit_ns);
        // Nothing from now on reaches the link before this command is submitted.
        ssd.forget_link_to_host_until(submit_ns);
        self.core.counters.commands += 1;
        self.core.op_done_max_ns = 0;
        let ready_ns = submit_ns + self.core.config.controller.submit_ns;
        // A command that finds the drive idle may meet its housekeeping.
        if self.core.housekeeping_may_run(ready_ns) && self.core.scheduler.background.queue.is_empty() {
            ssd.housekeeping_before(ready_ns);
        }
        let (status, complete_ns, result) = match *cmd {
            // Writes, the most frequent commands, return no result: their
            // completion is made in place.
            Command::Write { slba, nlb, payload, fua, placement } => {
                let data = WriteData::Host { payload, placement };
                let (status, done_ns) = self.write(ssd, ready_ns, slba, nlb, data, fua);
                return self.complete(submit_ns, status, done_ns, CmdResult::None);
            }
            Command::WriteZeroes { slba, nlb, placement } => {
                let (status, done_ns) = self.write(ssd, ready_ns, slba, nlb, WriteData::Zeroes { placement }, false);
                return self.complete(submit_ns, status, done_ns, CmdResult::None);
            }
            Command::Append { zslba, nlb, payload, fua } => self.append(ssd, ready_ns, zslba, nlb, payload, fua),
            Command::Flush => power::flush(&mut self.core, ssd, ready_ns),
            Command::Read { slba, nlb } => {
                let (status, done_ns) = self.read(ssd, ready_ns, slba, nlb);
                // Only data mode reads the blocks' contents, and only a read that succeeded.
                let result = match self.core.data.as_ref() {
                    Some(d) if status.is_success() => CmdResult::Read(d.read(slba, u64::from(nlb), read_out)),
                    _ => CmdResult::None,
                };
                return self.complete(submit_ns, status, done_ns, result);
            }
            Command::ZoneMgmtSend { action, slba, select_all } => {
                self.zone_mgmt(ssd, ready_ns, action, slba, select_all)
            }
            Command::ReportZones { slba, filter, max_zones, partial } => {
                self.report(ssd, ready_ns, slba, filter, max_zones, partial)
            }
            Command::Identify => {
                let fw_end = ssd.reserve_firmware(ready_ns, self.core.config.controller.identify_ns);
                let done = ssd.link_reserve_to_host(fw_end, IDENTIFY_BYTES);
                (Status::Success, done, CmdResult::Identify(Box::new(self.identify())))
            }
            Command::ZoneCompaction { src, dst } => {
                znsplus::compaction::zone_compaction(&mut self.core, ssd, ready_ns, src, dst)
            }
            Command::SimpleCopy { ranges, sdlba } => {
                znsplus::compaction::simple_copy(&mut self.core, ssd, ready_ns, ranges, sdlba)
            }
            Command::TlOpen { zslba, valid } => {
                znsplus::threaded_logging::tl_open(&mut self.core, ssd, ready_ns, zslba, valid)
            }
            Command::IdentifyMapping => {
                znsplus::identify_mapping::identify_mapping_command(&mut self.core, ssd, ready_ns)
            }
            Command::ReclaimUnitHandleStatus => self.ruh_status(ssd, ready_ns),
            Command::ReclaimUnitHandleUpdate { pids } => self.ruh_update(ssd, ready_ns, pids),
        };
        self.complete(submit_ns, status, complete_ns, result)
    }

    /// The completion of a command submitted at `submit_ns` whose work ends
    /// at `done_ns`: it reaches the host after the completion cost.
    #[inline(always)]
    fn complete(&mut self, submit_ns: Nanos, status: Status, done_ns: Nanos, result: CmdResult) -> Completion {
        if !status.is_success() {
            self.core.counters.errors += 1;
        }
        let complete_ns = done_ns + self.core.config.controller.complete_ns;
        debug_assert!(complete_ns > submit_ns);
        self.core.note_complete(complete_ns);
        Completion { status, submit_ns, complete_ns, result }
    }

    /// Fault injection (not an NVMe command): the zone turns read-only or offline.
    pub(crate) fn set_zone_state(&mut self, ssd: &mut Ssd, slba: u64, state: ZoneState) -> Result<(), Status> {
        let Some(zone) = front::fault_target(&self.core.layout, &self.core.zones, slba, state)? else { return Ok(()) };
        // A failed zone is no longer TL_opened: its LogFBG holds what was written.
        let now_ns = self.core.last_submit_ns;
        znsplus::threaded_logging::tl_drop(&mut self.core, ssd, zone, now_ns);
        if self.core.zones.has_zrwa(zone) {
            self.core.drop_zrwa_window(zone);
        }
        self.core.zones.inject_fault(zone, state);
        if state == ZoneState::Offline {
            self.discard_zone(ssd, zone);
        }
        Ok(())
    }

    /// I/O Management Receive, Reclaim Unit Handle Status: firmware work
    /// and the transfer of the list (16 bytes a handle after a 16-byte header).
    fn ruh_status(&mut self, ssd: &mut Ssd, ready_ns: Nanos) -> (Status, Nanos, CmdResult) {
        match self.path.ruh_status(&self.core) {
            Err(status) => self.core.fail(ssd, ready_ns, status),
            Ok(list) => {
                let fw_end = ssd.reserve_firmware(ready_ns, self.core.config.controller.identify_ns);
                let done = ssd.link_reserve_to_host(fw_end, 16 + 16 * list.len() as u64);
                (Status::Success, done, CmdResult::ReclaimUnitHandles(list))
            }
        }
    }

    /// I/O Management Send, Reclaim Unit Handle Update: the list crosses
    /// the link, then the firmware moves the handles.
    fn ruh_update(&mut self, ssd: &mut Ssd, ready_ns: Nanos, pids: &[u16]) -> (Status, Nanos, CmdResult) {
        let listed_ns = ssd.link_reserve_to_device(ready_ns, 2 * pids.len() as u64);
        let status = self.path.ruh_update(&self.core, ssd, pids, listed_ns);
        if !status.is_success() {
            return self.core.fail(ssd, listed_ns, status);
        }
        let done = ssd.reserve_firmware(listed_ns, self.core.config.controller.identify_ns);
        (Status::Success, done, CmdResult::None)
    }

    /// The FDP logs; `None` without FDP.
    pub(crate) fn fdp_logs(&self) -> Option<crate::fdp::FdpLogs> {
        self.path.fdp_logs(&self.core)
    }

    /// Set Features FDP Events (not timed: an admin command).
    pub(crate) fn set_fdp_events(
        &mut self,
        pid: u16,
        kinds: &[crate::fdp::FdpEventKind],
        enable: bool,
    ) -> Result<(), Status> {
        self.path.set_fdp_events(pid, kinds, enable)
    }

    /// The Identify Namespace data the device reports.
    pub(crate) fn identify(&self) -> IdentifyData {
        front::identify(&self.core.config, &self.core.layout)
    }

    fn write(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        slba: u64,
        nlb: u32,
        data: WriteData<'_>,
        fua: bool,
    ) -> (Status, Nanos) {
        match self.accept_write(slba, nlb, data.is_zeroes()) {
            Err(status) => (status, self.core.fail_ns(ssd, ready_ns)),
            Ok((firmware_ns, window)) => {
                let firmware = self.write_firmware(firmware_ns, slba, nlb);
                if window.is_none() && firmware.pipelined_ftl_ns > 0 && self.path.write_queue().is_some() {
                    return (Status::Success, self.write_queued(ssd, ready_ns, firmware, slba, nlb, data, fua));
                }
                let mut done = match window {
                    None => self.write_data(ssd, ready_ns, firmware, slba, nlb, data),
                    Some(old_wp) => self.write_window(ssd, ready_ns, firmware, slba, nlb, data, old_wp),
                };
                if fua {
                    done = power::fua_done(&mut self.core, ssd, slba, nlb, done);
                }
                self.core.cache_write_issued(slba, done);
                (Status::Success, done)
            }
        }
    }

    /// How a write of `nlb` LBAs at `slba` with `firmware_ns` of firmware
    /// work uses the cores: its FTL stage on the FTL core alone
    /// (`controller.write_ftl_pipelined`), and the merge of a mapping unit
    /// it covers only part of (`controller.write_partial_unit_ns`).
    #[inline]
    fn write_firmware(&self, firmware_ns: Nanos, slba: u64, nlb: u32) -> Firmware {
        let c = &self.core.config.controller;
        let pipelined_ftl_ns = if c.write_ftl_pipelined { c.write_ftl_ns } else { 0 };
        let partial = c.write_partial_unit_ns > 0 && self.covers_part_of_a_unit(slba, slba + u64::from(nlb));
        let ftl_after_ns = if partial { c.write_partial_unit_ns } else { 0 };
        Firmware { ns: firmware_ns, pipelined_ftl_ns, ftl_after_ns, data_after_firmware: false }
    }

    /// Whether data at LBAs `slba..end` (4 KiB LBAs or larger) covers only
    /// part of a mapping unit (`controller.small_lba_map_unit_bytes`) at
    /// either end, leaving it to merge. Below 4 KiB LBAs every write merges
    /// its partial unit in its own time (`partial_unit_ns`) instead. Units
    /// count from the zone's start.
    #[inline]
    fn covers_part_of_a_unit(&self, slba: u64, end: u64) -> bool {
        let unit_bytes = self.core.config.controller.small_lba_map_unit_bytes;
        let lba_bytes = self.core.layout.lba_bytes;
        if unit_bytes == 0 || lba_bytes < 4096 {
            return false;
        }
        let zslba = self.core.zones.zslba(self.core.zones.zone_of(slba));
        let (start_bytes, end_bytes) = ((slba - zslba) * lba_bytes, (end - zslba) * lba_bytes);
        !(start_bytes.is_multiple_of(unit_bytes) && end_bytes.is_multiple_of(unit_bytes))
    }

    /// The checks and zone state change of a Write or Write Zeroes; returns
    /// its firmware time and, for a write into a ZRWA, the write pointer
    /// before the write's implicit commit (which moved it already).
    #[inline(always)]
    fn accept_write(&mut self, slba: u64, nlb: u32, zeroes: bool) -> Result<(Nanos, Option<u64>), Status> {
        front::check_range(&self.core.layout, slba, nlb, !zeroes)?;
        let zone = self.core.zones.zone_of(slba);
        let c = &self.core.config.controller;
        let base_ns = if zeroes { c.write_zeroes_ns } else { c.write_ns };
        if self.core.zones.zone_type(zone) == ZoneType::Conventional {
            self.accept_conventional_write(zone, slba, nlb)?;
            return Ok((base_ns, None));
        }
        let end = slba + u64::from(nlb);
        let admission = if self.core.translation.tl.is_empty() {
            self.core.zones.admit_write_at_wp(zone, slba, end)?
        } else {
            self.admit_write_beside_tl(zone, slba, end)?
        };
        let extra_ns = if admission.implicitly_opened { self.core.config.controller.implicit_open_write_ns } else { 0 };
        self.core.note_auto_close(admission.auto_closed);
        let window = admission.window.then(|| self.commit_implicitly(zone, end));
        Ok((base_ns + extra_ns, window))
    }

    /// The implicit commit of a window write ending before `end`: the zone
    /// layer moves the write pointer; returns where it was.
    #[inline(never)]
    fn commit_implicitly(&mut self, zone: u32, end: u64) -> u64 {
        let old_wp = self.core.zones.wp(zone);
        let lbas = self.core.zones.implicit_commit_lbas(zone, end);
        self.core.zones.commit(zone, lbas);
        old_wp
    }

    /// Times an accepted write into a ZRWA and applies it (see
    /// [`management::zrwa`]): firmware, then its data into the window.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn write_window(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        firmware: Firmware,
        slba: u64,
        nlb: u32,
        data: WriteData<'_>,
        old_wp: u64,
    ) -> Nanos {
        let zone = self.core.zones.zone_of(slba);
        ssd.start_write_data(ready_ns, 0);
        let fw_end = self.place_firmware(ssd, ready_ns, firmware);
        let end = slba + u64::from(nlb);
        if let Some(d) = self.core.data.as_mut() {
            d.write_window(slba, u64::from(nlb), data.payload());
        }
        self.core.counters.host_write_bytes += u64::from(nlb) * self.core.layout.lba_bytes;
        let link = data.crosses_link();
        let t = management::zrwa::window_write(&mut self.core, ssd, zone, slba..end, fw_end, link, old_wp);
        if !self.core.scheduler.background.pad_turns_due.is_empty() {
            management::take_pad_turns(&mut self.core, ssd);
        }
        t
    }

    /// [`Device::accept_write`] into a conventional zone.
    fn accept_conventional_write(&self, zone: u32, slba: u64, nlb: u32) -> Result<(), Status> {
        self.core.zones.check_writable(zone)?;
        let zone_end = self.core.zones.zslba(zone) + self.core.layout.zone_lbas;
        // A conventional device's zones are only a report: its blocks are one space.
        if slba + u64::from(nlb) > zone_end && !P::ONE_SPACE {
            return Err(Status::ZoneBoundaryError);
        }
        Ok(())
    }

    /// [`ZoneTable::admit_write_at_wp`] while some zone is TL_opened: a
    /// TL_opened zone takes writes at or past its write pointer, into
    /// blocks its valid bitmap leaves free.
    #[inline(never)]
    fn admit_write_beside_tl(&mut self, zone: u32, slba: u64, end: u64) -> Result<WriteAdmission, Status> {
        let zones = &self.core.zones;
        let Some(tl) = self.core.translation.tl.get(&zone) else {
            return self.core.zones.admit_write_at_wp(zone, slba, end);
        };
        zones.check_writable(zone)?;
        if slba < zones.wp(zone) || tl.any_valid(slba - zones.zslba(zone), end - slba) {
            return Err(Status::ZoneInvalidWrite);
        }
        if end > zones.zslba(zone) + self.core.layout.zcap_lbas {
            return Err(Status::ZoneBoundaryError);
        }
        self.core.zones.admit_write(zone)
    }

    fn append(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        zslba: u64,
        nlb: u32,
        payload: Payload<'_>,
        fua: bool,
    ) -> (Status, Nanos, CmdResult) {
        match self.accept_append(zslba, nlb) {
            Err(status) => self.core.fail(ssd, ready_ns, status),
            Ok((accepted, lba)) => {
                let firmware = self.append_firmware(accepted.firmware_ns, zslba, lba, nlb);
                let mut done =
                    self.write_data(ssd, ready_ns, firmware, lba, nlb, WriteData::Host { payload, placement: None });
                if fua {
                    done = power::fua_done(&mut self.core, ssd, lba, nlb, done);
                }
                self.core.cache_write_issued(lba, done);
                (Status::Success, done, accepted.result)
            }
        }
    }

    fn accept_append(&mut self, zslba: u64, nlb: u32) -> Result<(Accepted, u64), Status> {
        front::check_range(&self.core.layout, zslba, nlb, true)?;
        let zone = front::addressed_zone(&self.core.layout, &self.core.zones, zslba)?;
        if self.core.zones.has_zrwa(zone) {
            // The window decouples writes from the write pointer an append would use.
            return Err(Status::InvalidZoneOperation);
        }
        if u64::from(nlb) > self.core.layout.zasl_lbas {
            return Err(Status::InvalidField);
        }
        if self.core.translation.tl.contains_key(&zone) {
            // Threaded logging writes at LBAs the host chose from the valid bitmap.
            return Err(Status::InvalidZoneOperation);
        }
        self.core.zones.check_writable(zone)?;
        let lba = self.core.zones.wp(zone);
        if lba + u64::from(nlb) > zslba + self.core.layout.zcap_lbas {
            return Err(Status::ZoneBoundaryError);
        }
        let admission = self.core.zones.admit_write(zone)?;
        let c = &self.core.config.controller;
        let extra_ns = if admission.implicitly_opened { c.implicit_open_append_ns } else { 0 };
        let firmware_ns = c.append_ns + extra_ns;
        self.core.note_auto_close(admission.auto_closed);
        Ok((Accepted { firmware_ns, result: CmdResult::Lba(lba) }, lba))
    }

    /// How an append of `nlb` LBAs at `lba` (in the zone at `zslba`) with `firmware_ns` of firmware
    /// work uses the cores: its FTL stage, and the merge of a mapping unit it
    /// covers only part of (it starts or ends inside one).
    fn append_firmware(&self, firmware_ns: Nanos, zslba: u64, lba: u64, nlb: u32) -> Firmware {
        let c = &self.core.config.controller;
        debug_assert_eq!(self.core.zones.zslba(self.core.zones.zone_of(lba)), zslba);
        if !self.covers_part_of_a_unit(lba, lba + u64::from(nlb)) {
            return Firmware {
                ns: firmware_ns,
                pipelined_ftl_ns: c.append_ftl_ns,
                ftl_after_ns: 0,
                data_after_firmware: c.append_data_after_firmware,
            };
        }
        // The FTL records the partial unit before the append completes (on
        // the FTL core, after the firmware core let go) and merges it after.
        let held_ns = c.append_partial_unit_held_ns;
        debug_assert!(held_ns <= c.append_partial_unit_ns, "validation bounds the held part");
        Firmware {
            ns: firmware_ns + held_ns,
            pipelined_ftl_ns: c.append_ftl_ns + held_ns,
            ftl_after_ns: c.append_partial_unit_ns - held_ns,
            data_after_firmware: c.append_data_after_firmware,
        }
    }

    /// Times an accepted write of `nlb` blocks at `slba` and applies it:
    /// firmware, then page-sized pieces that each wait for buffer room and
    /// cross the link; complete program units go to flash.
    #[inline(always)]
    fn write_data(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        firmware: Firmware,
        slba: u64,
        nlb: u32,
        data: WriteData<'_>,
    ) -> Nanos {
        let zone = self.core.zones.zone_of(slba);
        let nlb = u64::from(nlb);
        let fw_end = self.place_firmware(ssd, ready_ns, firmware);
        ssd.start_write_data(ready_ns, if firmware.data_after_firmware { fw_end } else { 0 });
        // Work after the command (merging a partly filled mapping unit): it
        // holds the FTL core, not the command.
        let after_ns = firmware.ftl_after_ns + self.partial_unit_merge_ns(slba, slba + nlb);
        self.reserve_ftl_after(fw_end, after_ns);
        let sequential = self.core.zones.zone_type(zone) == ZoneType::SeqWriteRequired;
        let mut data_ready_ns = fw_end;
        if sequential {
            data_ready_ns = self.gap_filled_ns(ssd, zone, slba, fw_end);
            let wp = self.core.zones.wp(zone);
            if wp == self.core.zones.zslba(zone) && !self.core.zone_holds_data(zone) {
                self.core.translation.mapping.start_zone(zone);
            }
            self.core.zones.advance_wp(zone, slba + nlb - wp);
        }
        self.accept_write_data(slba, nlb, data);
        // Write Zeroes moves no data over the link.
        let arrival = Arrival { link: data.crosses_link(), placement: data.placement() };
        let t = self.path.take_in(&mut self.core, ssd, zone, slba..slba + nlb, data_ready_ns, arrival);
        if !self.core.scheduler.background.pad_turns_due.is_empty() {
            management::take_pad_turns(&mut self.core, ssd);
        }
        if sequential {
            self.after_wp_moved(ssd, zone, t);
        }
        t
    }

    /// An accepted write on a path whose FTL core takes waiting writes in
    /// an order of its own (`conventional.write_order_window`): its
    /// firmware-core stage now, then the FTL core at once if it is free and
    /// no write waits, or a place among the waiting writes (the command is
    /// pending). Returns when it is done, or when it reached the controller
    /// if it waits (its completion comes later, [`Self::serve_waiting_writes`]).
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn write_queued(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        firmware: Firmware,
        slba: u64,
        nlb: u32,
        data: WriteData<'_>,
        fua: bool,
    ) -> Nanos {
        let (core_end, ftl_ns) = Self::firmware_core_stage(ssd, ready_ns, firmware);
        // Accepted: the data and the counters are the command's from now on.
        self.accept_write_data(slba, u64::from(nlb), data);
        let after_ns = firmware.ftl_after_ns + self.partial_unit_merge_ns(slba, slba + u64::from(nlb));
        let arrival = Arrival { link: data.crosses_link(), placement: data.placement() };
        let tag = self.core.scheduler.background.next_tag;
        let write = QueuedWrite {
            tag,
            submit_ns: self.core.last_submit_ns,
            arrived_ns: ready_ns,
            ready_ns: core_end,
            slba,
            nlb,
            ftl_ns,
            after_ns,
            arrival,
            fua,
        };
        let queue = self.path.write_queue().expect("the caller checked the queue");
        let core_free = self.core.controller.ftl_free_at_ns() <= core_end;
        if (queue.is_empty() && core_free) || !queue.has_room() {
            return self.serve_write(ssd, write, core_end);
        }
        let m = &mut self.core.scheduler.background;
        m.next_tag += 1;
        m.queued = Some(tag);
        self.path.write_queue_mut().expect("checked").push(write);
        ready_ns
    }

    /// The FTL core takes `write` at `start_ns`: its stage, the work after
    /// it, then its data into the buffer, as [`Self::write_data`] does;
    /// returns when it is done.
    fn serve_write(&mut self, ssd: &mut Ssd, write: QueuedWrite, start_ns: Nanos) -> Nanos {
        debug_assert!(start_ns >= write.ready_ns, "the core takes a write once its firmware stage is done");
        let ftl_end = management::ftl_turn(&mut self.core, start_ns, write.ftl_ns);
        self.reserve_ftl_after(ftl_end, write.after_ns);
        ssd.start_write_data(write.arrived_ns, 0);
        let (slba, end) = (write.slba, write.slba + u64::from(write.nlb));
        let zone = self.core.zones.zone_of(slba);
        let mut done = self.path.take_in(&mut self.core, ssd, zone, slba..end, ftl_end, write.arrival);
        if write.fua {
            done = power::fua_done(&mut self.core, ssd, slba, write.nlb, done);
        }
        self.core.cache_write_issued(slba, done);
        done
    }

    /// When the FTL core takes its next waiting write; `None` with none.
    fn next_queued_write_ns(&self) -> Option<Nanos> {
        self.path.write_queue()?.next_start_ns(self.core.controller.ftl_free_at_ns())
    }

    /// Serves the waiting writes the FTL core takes before `until_ns`, each
    /// completing as a pending command.
    fn serve_waiting_writes(&mut self, ssd: &mut Ssd, until_ns: Nanos) {
        let Some(waiting) = self.path.write_queue().map(WriteQueue::len) else { return };
        // Bound: each turn serves one waiting write.
        for _ in 0..waiting {
            let Some(start_ns) = self.next_queued_write_ns().filter(|&s| s < until_ns) else { return };
            let write = self.path.write_queue_mut().expect("checked").take(start_ns);
            let done_ns = self.serve_write(ssd, write, start_ns);
            let complete_ns = done_ns + self.core.config.controller.complete_ns;
            self.core.note_complete(complete_ns);
            let completion = Completion {
                status: Status::Success,
                submit_ns: write.submit_ns,
                complete_ns,
                result: CmdResult::None,
            };
            self.core.scheduler.background.completed.push((write.tag, completion));
        }
    }

    /// Places a write's firmware from `ready_ns` on; returns when it is
    /// done. The command's last `write_ftl_ns` of firmware work (the mapping
    /// update) also needs the write path's FTL core; waiting for it does not
    /// hold the firmware core, and a pipelined stage (`pipelined_ftl_ns`)
    /// holds only the FTL core.
    #[inline(always)]
    fn place_firmware(&mut self, ssd: &mut Ssd, ready_ns: Nanos, firmware: Firmware) -> Nanos {
        if firmware.pipelined_ftl_ns > 0 {
            let (core_end, ftl_ns) = Self::firmware_core_stage(ssd, ready_ns, firmware);
            return management::ftl_turn(&mut self.core, core_end, ftl_ns);
        }
        let ftl_ns = self.core.config.controller.write_ftl_ns.min(firmware.ns);
        let fw_end = ssd.reserve_firmware(ready_ns, firmware.ns);
        management::ftl_turn(&mut self.core, fw_end - ftl_ns, ftl_ns).max(fw_end)
    }

    /// A pipelined write's stage on the firmware core, from `ready_ns` on:
    /// when it ends, and the FTL core's stage that follows it.
    #[inline]
    fn firmware_core_stage(ssd: &mut Ssd, ready_ns: Nanos, firmware: Firmware) -> (Nanos, Nanos) {
        debug_assert!(firmware.pipelined_ftl_ns > 0, "only a pipelined write has two stages");
        let ftl_ns = firmware.pipelined_ftl_ns.min(firmware.ns);
        (ssd.reserve_firmware(ready_ns, firmware.ns - ftl_ns), ftl_ns)
    }

    /// The FTL core's work after a write's stage (merging a partly filled
    /// mapping unit), from `from_ns` on: it holds the core, not the command.
    #[inline]
    fn reserve_ftl_after(&mut self, from_ns: Nanos, after_ns: Nanos) {
        if after_ns > 0 {
            let commit_ns = self.core.config.controller.unit_commit_ns;
            self.core.controller.reserve_ftl(from_ns, after_ns, commit_ns);
        }
    }

    /// An accepted write's `nlb` LBAs at `slba`: its data (when kept) and
    /// the host-write counter are the command's from now on.
    #[inline]
    fn accept_write_data(&mut self, slba: u64, nlb: u64, data: WriteData<'_>) {
        if let Some(d) = self.core.data.as_mut() {
            d.write(slba, nlb, data.payload());
        }
        self.core.counters.host_write_bytes += nlb * self.core.layout.lba_bytes;
    }

    /// When the data of a write at `slba` into sequential `zone` can enter
    /// the buffer, its firmware done at `fw_end`: a TL_opened zone's write
    /// waits for the LBA-ordered plugs before it, and blocks a write skips
    /// are plugged first. Without threaded logging and with the fill at the
    /// write, nothing waits.
    #[inline]
    fn gap_filled_ns(&mut self, ssd: &mut Ssd, zone: u32, slba: u64, fw_end: Nanos) -> Nanos {
        let gap_end = slba - self.core.zones.zslba(zone);
        let no_gap = gap_end <= self.core.controller.filled_lbas(zone);
        if no_gap && self.core.translation.tl.is_empty() {
            return fw_end;
        }
        // A TL_opened zone's write is handled once the LBA-ordered plugs
        // before it are in and the blocks it skips are plugged.
        let handled_ns = znsplus::threaded_logging::wp_ready_ns(&self.core, zone, fw_end);
        let plugged_ns = znsplus::threaded_logging::fill_gap(&mut self.core, ssd, zone, gap_end, handled_ns);
        handled_ns.max(plugged_ns)
    }

    /// After a write moved a sequential zone's write pointer: threaded
    /// logging's plugs, or, for a zone that became full, its partial units.
    #[inline]
    fn after_wp_moved(&mut self, ssd: &mut Ssd, zone: u32, at_ns: Nanos) {
        if !self.core.translation.tl.is_empty() {
            znsplus::threaded_logging::after_wp_moved(&mut self.core, ssd, zone, at_ns);
        } else if self.core.zones.state(zone) == ZoneState::Full {
            self.core.flush_partial_units(ssd, zone, at_ns);
        }
    }

    /// FTL-core time a write of LBAs `slba..end_lba` adds by leaving a
    /// mapping unit partly filled (LBA formats below 4 KiB only): the merge,
    /// and the copy of the bytes the write brought into that unit.
    #[inline]
    fn partial_unit_merge_ns(&self, slba: u64, end_lba: u64) -> Nanos {
        if self.core.layout.lba_bytes >= 4096 {
            return 0;
        }
        self.small_lba_merge_ns(slba, end_lba)
    }

    /// [`Self::partial_unit_merge_ns`] with LBAs below 4 KiB.
    #[inline(never)]
    fn small_lba_merge_ns(&self, slba: u64, end_lba: u64) -> Nanos {
        let c = &self.core.config.controller;
        let unit_bytes = c.small_lba_map_unit_bytes;
        let lba_bytes = self.core.layout.lba_bytes;
        let end_in_unit_bytes = if unit_bytes == 0 { 0 } else { (end_lba * lba_bytes) % unit_bytes };
        if end_in_unit_bytes == 0 {
            return 0;
        }
        let brought_bytes = end_in_unit_bytes.min((end_lba - slba) * lba_bytes);
        let copy_ns = match c.partial_unit_bytes_per_s {
            0 => 0,
            bytes_per_s => zonelab_sim::transfer_ns(brought_bytes, bytes_per_s),
        };
        // The unit's earlier pieces, merged with the write's.
        let held_ns = match c.partial_unit_held_bytes_per_s {
            0 => 0,
            bytes_per_s => zonelab_sim::transfer_ns(end_in_unit_bytes - brought_bytes, bytes_per_s),
        };
        c.partial_unit_ns + copy_ns + held_ns
    }

    /// Out of line so that the read path (the checks, read-ahead's stream
    /// bookkeeping, the fetch) is inlined into one function of its own
    /// without crowding the command dispatch out of `Device::start`.
    #[inline(never)]
    fn read(&mut self, ssd: &mut Ssd, ready_ns: Nanos, slba: u64, nlb: u32) -> (Status, Nanos) {
        if let Err(status) = self.check_read(slba, nlb) {
            return (status, self.core.fail_ns(ssd, ready_ns));
        }
        let ready_ns = if self.core.config.controller.in_order {
            ready_ns.max(self.core.controller.room_wait_until_ns())
        } else {
            ready_ns
        };
        let fw_end = ssd.reserve_firmware(ready_ns, self.core.config.controller.read_ns);
        let mut data_ready = fw_end;
        let per_chunk = self.core.layout.lbas_per_chunk;
        let (mut lba, end) = (slba, slba + u64::from(nlb));
        let stream = self.core.controller.note_read(slba, end);
        while lba < end {
            let offset_lbas = self.core.layout.offset_in_chunk(lba);
            let piece_end = end.min(lba - offset_lbas + per_chunk);
            data_ready = data_ready.max(self.read_piece(ssd, fw_end, lba, offset_lbas, piece_end - lba, stream));
            lba = piece_end;
        }
        if let StreamRead::Continues(context) = stream {
            self.read_ahead(ssd, context, end, fw_end);
        }
        let bytes = u64::from(nlb) * self.core.layout.lba_bytes;
        self.core.counters.host_read_bytes += bytes;
        let done = ssd.link_reserve_to_host(data_ready, bytes);
        (Status::Success, done)
    }

    fn check_read(&self, slba: u64, nlb: u32) -> Result<(), Status> {
        front::check_range(&self.core.layout, slba, nlb, true)?;
        let cross_zone_ok = || self.core.config.namespace.cross_zone_read || P::ONE_SPACE;
        front::check_read(&self.core.zones, slba, nlb, cross_zone_ok)
    }

    /// Times the read of `lbas` LBAs within one chunk, from `lba`,
    /// `offset_lbas` into it: nothing for unwritten blocks, controller memory
    /// for data not yet programmed or read ahead for a stream this read
    /// continues, the whole chunk into the read buffer for a stream that
    /// takes a read-ahead context, else flash.
    fn read_piece(
        &mut self,
        ssd: &mut Ssd,
        at_ns: Nanos,
        lba: u64,
        offset_lbas: u64,
        lbas: u64,
        stream: StreamRead,
    ) -> Nanos {
        // Only a stream's reads look in the read buffer: random reads, the
        // common case, skip the lookup.
        match stream {
            StreamRead::Random => {}
            StreamRead::Continues(context) => {
                let buffered = self
                    .read_ahead_chunk(lba)
                    .and_then(|(zone, chunk)| self.core.controller.read_buffer_lookup(context, zone, chunk));
                if let Some(ready_ns) = buffered {
                    return at_ns.max(ready_ns);
                }
            }
            StreamRead::Starts(context) => {
                let read = self
                    .read_ahead_chunk(lba)
                    .and_then(|key| self.read_chunk_into_buffer(ssd, context, key, lba, at_ns));
                if let Some(in_ns) = read {
                    return in_ns;
                }
            }
        }
        let bytes = u32::try_from(lbas * self.core.layout.lba_bytes).expect("a piece is within one page");
        self.core.fetch(&self.path, ssd, lba, offset_lbas, at_ns, bytes)
    }

    /// Reads the chunk holding `lba`, buffered under `(zone, chunk)`
    /// (`read_ahead_chunk`), whole into read-ahead context `context`'s
    /// buffer, if it is in flash; when it is in.
    fn read_chunk_into_buffer(
        &mut self,
        ssd: &mut Ssd,
        context: u8,
        (zone, chunk): (u32, u64),
        lba: u64,
        at_ns: Nanos,
    ) -> Option<Nanos> {
        let in_ns = if P::ONE_SPACE {
            let per_chunk = self.core.layout.lbas_per_chunk;
            self.read_ahead_mapped(ssd, lba - lba % per_chunk, at_ns)
        } else {
            self.read_ahead_page(ssd, lba, at_ns)
        }?;
        self.core.controller.read_buffer_insert(context, zone, chunk, in_ns);
        Some(in_ns)
    }

    /// The (zone, chunk) the read buffer would hold `lba` under: read-ahead
    /// follows sequential zones of a zoned namespace, and any LBA of a
    /// page-mapped one (its zones only a report, the key a range of LBAs).
    fn read_ahead_chunk(&self, lba: u64) -> Option<(u32, u64)> {
        if !P::READ_AHEAD || self.core.controller.read_ahead_window_chunks() == 0 {
            return None;
        }
        let zone = self.core.zones.zone_of(lba);
        if !P::ONE_SPACE && self.core.zones.zone_type(zone) != ZoneType::SeqWriteRequired {
            return None;
        }
        Some((zone, (lba - self.core.zones.zslba(zone)) / self.core.layout.lbas_per_chunk))
    }

    /// Reads the pages of the read-ahead window after `end` that are in
    /// flash and not buffered yet into context `context`'s buffer, from
    /// `at_ns` on.
    fn read_ahead(&mut self, ssd: &mut Ssd, context: u8, end: u64, at_ns: Nanos) {
        let per_chunk = self.core.layout.lbas_per_chunk;
        let window_end = end.saturating_add(self.core.controller.read_ahead_window_chunks() * per_chunk);
        let window_end = window_end.min(self.core.layout.zone_lbas * u64::from(self.core.layout.zones));
        let mut lba = end;
        // Bound: the window holds `window_chunks` chunks.
        for _ in 0..=self.core.controller.read_ahead_window_chunks() {
            if lba >= window_end {
                return;
            }
            let Some((zone, chunk)) = self.read_ahead_chunk(lba) else { return };
            // A chunk not in flash (unwritten, or still in the write buffer) is not read ahead.
            if self.core.controller.read_buffer_lookup(context, zone, chunk).is_none()
                && self.read_chunk_into_buffer(ssd, context, (zone, chunk), lba, at_ns).is_some()
                && !P::ONE_SPACE
            {
                self.read_row_into_buffer(ssd, context, zone, chunk, at_ns);
            }
            lba = (lba / per_chunk + 1) * per_chunk;
        }
    }

    /// Takes the chunks after `chunk` in its page row, which its read just
    /// sensed, into context `context`'s buffer from the planes' registers: a
    /// stream's read-ahead reads whole rows, whatever order the chunks of a
    /// program unit are in (`mapping.chunk_order`).
    fn read_row_into_buffer(&mut self, ssd: &mut Ssd, context: u8, zone: u32, chunk: u64, at_ns: Nanos) {
        let per_chunk = self.core.layout.lbas_per_chunk;
        let zone_chunks = self.core.layout.zcap_lbas.div_ceil(per_chunk);
        for k in 0..self.core.translation.mapping.row_len() {
            let mate = self.core.translation.mapping.row_chunk(chunk, k);
            if mate <= chunk
                || mate >= zone_chunks
                || self.core.controller.read_buffer_lookup(context, zone, mate).is_some()
            {
                continue;
            }
            let lba = self.core.zones.zslba(zone) + mate * per_chunk;
            if let Some(in_ns) = self.read_ahead_page(ssd, lba, at_ns) {
                self.core.controller.read_buffer_insert(context, zone, mate, in_ns);
            }
        }
    }

    /// Reads the page holding `lba`'s chunk, if it is in flash; when it is in.
    fn read_ahead_page(&mut self, ssd: &mut Ssd, lba: u64, at_ns: Nanos) -> Option<Nanos> {
        let Source::Flash { loc, ready_ns } = self.path.source(&self.core, lba, at_ns) else { return None };
        Some(self.read_page(ssd, loc, at_ns.max(ready_ns)))
    }

    /// A page-mapped chunk's LBAs may lie in several pages (written at
    /// random): reads each page holding some of them once; when the last is
    /// in, if any was in flash.
    fn read_ahead_mapped(&mut self, ssd: &mut Ssd, first: u64, at_ns: Nanos) -> Option<Nanos> {
        let lbas = self.core.layout.zone_lbas * u64::from(self.core.layout.zones);
        let end = (first + self.core.layout.lbas_per_chunk).min(lbas);
        let mut in_ns = None;
        let mut last = None;
        for lba in first..end {
            let Source::Flash { loc, ready_ns } = self.path.source(&self.core, lba, at_ns) else { continue };
            if last != Some(loc) {
                last = Some(loc);
                in_ns = in_ns.max(Some(self.read_page(ssd, loc, at_ns.max(ready_ns))));
            }
        }
        in_ns
    }

    /// Reads the whole page at `loc` from `at_ns`; when it is in.
    fn read_page(&mut self, ssd: &mut Ssd, loc: ChunkLocation, at_ns: Nanos) -> Nanos {
        let bytes = self.core.config.flash.page_bytes;
        let read =
            ChunkRead { die: loc.die, plane: loc.plane, block: loc.block, page: loc.page, offset_bytes: 0, bytes };
        ssd.flash_mut().read_chunk(at_ns, self.core.partition.read(read))
    }

    fn zone_mgmt(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        action: ZoneAction,
        slba: u64,
        select_all: bool,
    ) -> (Status, Nanos, CmdResult) {
        if action == ZoneAction::FlushZrwa {
            return self.flush_zrwa(ssd, ready_ns, slba, select_all);
        }
        if select_all {
            return self.zone_mgmt_all(ssd, ready_ns, action);
        }
        let zone = match front::addressed_zone(&self.core.layout, &self.core.zones, slba) {
            Ok(zone) => zone,
            Err(status) => return self.core.fail(ssd, ready_ns, status),
        };
        let mut phases = Vec::new();
        match self.apply_action(ssd, ready_ns, action, zone, &mut phases) {
            Ok(done) => {
                self.queue_management(done, action, phases);
                (Status::Success, done, CmdResult::None)
            }
            Err(status) => self.core.fail(ssd, ready_ns, status),
        }
    }

    /// Flush Explicit ZRWA Range up to LBA `elba` of its zone: the write
    /// pointer moves past it, and the committed data goes towards flash.
    fn flush_zrwa(&mut self, ssd: &mut Ssd, ready_ns: Nanos, elba: u64, all: bool) -> (Status, Nanos, CmdResult) {
        let zone = match front::flush_zrwa_zone(&self.core.layout, &self.core.zones, elba, all) {
            Ok(zone) => zone,
            Err(status) => return self.core.fail(ssd, ready_ns, status),
        };
        let old_wp = self.core.zones.wp(zone);
        let (lbas, admission) = match self.core.zones.explicit_commit(zone, elba) {
            Ok(accepted) => accepted,
            Err(status) => return self.core.fail(ssd, ready_ns, status),
        };
        self.core.note_auto_close(admission.auto_closed);
        self.core.zones.commit(zone, lbas);
        let commit_ns = self.core.config.namespace.zrwa.map_or(0, |z| z.commit_ns);
        let done = ssd.reserve_firmware(ready_ns, commit_ns);
        management::zrwa::commit(&mut self.core, ssd, zone, old_wp + lbas, lbas, done);
        (Status::Success, done, CmdResult::None)
    }

    /// Queues the work of an accepted finish or reset, if it has any.
    fn queue_management(&mut self, ready_ns: Nanos, action: ZoneAction, phases: Vec<Phase>) {
        if phases.is_empty() {
            return;
        }
        let preempt = action != ZoneAction::Finish || self.core.config.management.finish.preempt;
        management::queue_task(&mut self.core, ready_ns, phases, preempt);
    }

    /// Select All: the action on every zone in a state it applies to
    /// ([`front::select_all_applies`]), in zone order, stopping at the first
    /// error without undoing earlier zones.
    fn zone_mgmt_all(&mut self, ssd: &mut Ssd, ready_ns: Nanos, action: ZoneAction) -> (Status, Nanos, CmdResult) {
        let mut done = ssd.reserve_firmware(ready_ns, self.core.config.controller.error_ns);
        let mut phases = Vec::new();
        for zone in self.core.layout.conventional_zones..self.core.layout.zones {
            if !front::select_all_applies(action, self.core.zones.state(zone)) {
                continue;
            }
            match self.apply_action(ssd, done, action, zone, &mut phases) {
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
        ssd: &mut Ssd,
        ready_ns: Nanos,
        action: ZoneAction,
        zone: u32,
        phases: &mut Vec<Phase>,
    ) -> Result<Nanos, Status> {
        let m = &self.core.config.management;
        let cost_ns = match action {
            ZoneAction::Open | ZoneAction::OpenZrwa => m.open_ns,
            ZoneAction::Close if self.core.zones.wp(zone) > self.core.zones.zslba(zone) => {
                m.close_ns + m.close_written_ns
            }
            ZoneAction::Close => m.close_ns,
            ZoneAction::Offline => m.offline_ns,
            ZoneAction::Finish => return self.finish_zone(ssd, ready_ns, zone, phases),
            ZoneAction::Reset => return self.reset_zone(ssd, ready_ns, zone, phases),
            ZoneAction::FlushZrwa => unreachable!("flush_zrwa handles it"),
        };
        match action {
            ZoneAction::Open => {
                let auto_closed = self.core.zones.open(zone)?;
                self.core.note_auto_close(auto_closed);
            }
            // A TL_opened zone takes writes below where a window would start.
            ZoneAction::OpenZrwa if self.core.translation.tl.contains_key(&zone) => {
                return Err(Status::InvalidZoneOperation)
            }
            ZoneAction::OpenZrwa => {
                let auto_closed = self.core.zones.open_zrwa(zone)?;
                self.core.note_auto_close(auto_closed);
            }
            // A TL_opened zone is always open, so closing it succeeds.
            ZoneAction::Close if self.core.translation.tl.contains_key(&zone) => {
                znsplus::threaded_logging::tl_close(&mut self.core, ssd, zone, ready_ns)
            }
            ZoneAction::Close => self.core.zones.close(zone)?,
            _ => {
                self.core.zones.offline(zone)?;
                self.discard_zone(ssd, zone);
            }
        }
        Ok(ssd.reserve_firmware(ready_ns, cost_ns))
    }

    fn finish_zone(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        zone: u32,
        phases: &mut Vec<Phase>,
    ) -> Result<Nanos, Status> {
        let was_full = self.core.zones.state(zone) == ZoneState::Full;
        if self.core.translation.tl.contains_key(&zone) {
            znsplus::threaded_logging::tl_plug_all(&mut self.core, ssd, zone, ready_ns);
        }
        // What the ZRWA holds is committed first: the finish keeps it.
        let wp = self.core.zones.wp(zone);
        let committed = if self.core.zones.has_zrwa(zone) {
            zrwa::commit_for_finish(&mut self.core, ssd, zone, wp, ready_ns)
        } else {
            0
        };
        let old_wp = self.core.zones.finish(zone)? + committed;
        if self.core.translation.tl.contains_key(&zone) {
            znsplus::threaded_logging::tl_finalize(&mut self.core, ssd, zone, ready_ns);
        }
        if !was_full {
            self.core.counters.finishes += 1;
            let written_lbas = old_wp - self.core.zones.zslba(zone);
            phases.extend(management::finish::finish_phases(&mut self.core, ssd, zone, ready_ns, written_lbas));
        }
        Ok(ready_ns)
    }

    fn reset_zone(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        zone: u32,
        phases: &mut Vec<Phase>,
    ) -> Result<Nanos, Status> {
        let old_state = self.core.zones.state(zone);
        self.core.zones.reset(zone)?;
        if old_state != ZoneState::Empty {
            self.core.counters.resets += 1;
        }
        znsplus::threaded_logging::tl_drop(&mut self.core, ssd, zone, ready_ns);
        // What the host wrote is mapped; a finish's padding is not.
        let written_lbas = self.core.controller.filled_lbas(zone);
        phases.extend(management::reset::reset_phases(&mut self.core, ssd, zone, ready_ns, old_state, written_lbas));
        self.core.controller.read_buffer_drop_zone(zone);
        self.discard_zone(ssd, zone);
        Ok(ready_ns)
    }

    fn discard_zone(&mut self, ssd: &mut Ssd, zone: u32) {
        management::cancel_padding(&mut self.core, zone);
        let now_ns = self.core.last_submit_ns;
        znsplus::threaded_logging::tl_drop(&mut self.core, ssd, zone, now_ns);
        self.core.controller.discard_zone_io(zone);
        self.core.cache_discard(zone);
        if let Some(d) = self.core.data.as_mut() {
            d.reset(zone);
        }
    }

    fn report(
        &mut self,
        ssd: &mut Ssd,
        ready_ns: Nanos,
        slba: u64,
        filter: ReportFilter,
        max_zones: u32,
        partial: bool,
    ) -> (Status, Nanos, CmdResult) {
        let report = match front::report(&self.core.layout, &self.core.zones, slba, filter, max_zones, partial) {
            Ok(report) => report,
            Err(status) => return self.core.fail(ssd, ready_ns, status),
        };
        let c = &self.core.config.controller;
        let fw_ns = c.report_ns + c.report_per_zone_ns * report.zones.len() as u64;
        let fw_end = ssd.reserve_firmware(ready_ns, fw_ns);
        let done = ssd.link_reserve_to_host(fw_end, front::report_bytes(&report));
        (Status::Success, done, CmdResult::Report(Box::new(report)))
    }

    /// The Zone Descriptor of `zone`, as a report would return it.
    pub(crate) fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        front::descriptor(&self.core.layout, &self.core.zones, zone)
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
    fn a_zrwa_window_takes_buffer_room_once_per_lba_until_programmed() {
        let set = |k: &str, v: &str| (k.to_string(), v.to_string());
        let sets = vec![
            set("namespace.zrwa.size_bytes", "64k"),
            set("namespace.zrwa.flush_granularity_bytes", "16k"),
            set("namespace.zrwa.resources", "2"),
        ];
        let opts = DeviceOptions { zones: Some(4), zone_size_bytes: Some(64 << 20), sets, ..Default::default() };
        let mut dev = Device::new(opts.apply(preset("zn540").unwrap()).unwrap()).unwrap();
        let mut now = 0;
        let mut run = |dev: &mut Device, cmd: Command<'_>| {
            let c = dev.submit(now, &cmd, None);
            assert_eq!(c.status, Status::Success, "{cmd:?}");
            now = c.complete_ns;
        };
        let held = |dev: &Device| dev.front.core().controller.zone_io(0).buffer_occupied_bytes();
        let write = |slba, nlb| Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None };
        run(&mut dev, Command::ZoneMgmtSend { action: ZoneAction::OpenZrwa, slba: 0, select_all: false });
        run(&mut dev, write(0, 16));
        assert_eq!(held(&dev), 16 * 4096);
        run(&mut dev, write(4, 8));
        assert_eq!(held(&dev), 16 * 4096, "a rewrite takes no more room");
        run(&mut dev, write(20, 4));
        assert_eq!(held(&dev), 20 * 4096, "16..20 not written: no room");
        run(&mut dev, Command::ZoneMgmtSend { action: ZoneAction::FlushZrwa, slba: 23, select_all: false });
        assert_eq!(held(&dev), 24 * 4096, "the committed hole takes room as zeros");
        assert_eq!(dev.front.core().controller.filled_lbas(0), 24, "committed data is in the fill");
        assert_eq!(dev.flash_counters().programs, 0, "no unit complete yet: still in the buffer");
    }

    #[test]
    fn metadata_finish_pads_exactly_the_partly_filled_units() {
        let opts = DeviceOptions { zones: Some(4), zone_size_bytes: Some(64 << 20), ..Default::default() };
        let mut config = opts.apply(preset("zn540").unwrap()).unwrap();
        config.management.finish.design = crate::config::FinishDesign::Metadata;
        let mut dev = Device::new(config).unwrap();
        let c = dev.submit(
            0,
            &Command::Write { slba: 0, nlb: 1, payload: Payload::None, fua: false, placement: None },
            None,
        );
        assert_eq!(dev.front.core().controller.zone_io(0).buffer_occupied_bytes(), 4096);
        let f = dev.submit(
            c.complete_ns,
            &Command::ZoneMgmtSend { action: ZoneAction::Finish, slba: 0, select_all: false },
            None,
        );
        assert_eq!(f.status, Status::Success);
        // One LBA lives in die 0's first unit (4 planes × 3 pages × 16 KiB): the rest is padding.
        assert_eq!(dev.counters().pad_bytes, 192 * 1024 - 4096);
        assert_eq!(dev.flash_counters().programs, 1);
        assert_eq!(dev.flash().pages_written(0, 0, 0), 3);
        assert_eq!(dev.flash().pages_written(1, 0, 0), 0, "dies without data are not programmed");
        // The buffer frees exactly what it held once the program is done.
        with_front!(&mut dev.front, f => f.core.controller.zone_io_mut(0).reclaim_buffer_until(u64::MAX / 2));
        assert_eq!(dev.front.core().controller.zone_io(0).buffer_occupied_bytes(), 0);
    }

    #[test]
    fn full_super_word_line_programs_every_die_once() {
        let mut dev = zn540_small();
        let mut t = 0;
        // 3 MiB = one super word line: 16 dies × 192 KiB, written as 24 × 128 KiB.
        for i in 0..24u64 {
            t = dev
                .submit(
                    t,
                    &Command::Write { slba: i * 32, nlb: 32, payload: Payload::None, fua: false, placement: None },
                    None,
                )
                .complete_ns;
        }
        assert_eq!(dev.flash_counters().programs, 16);
        assert_eq!(dev.counters().pad_bytes, 0);
        assert!((0..16).all(|die| dev.flash().pages_written(die, 3, 0) == 3));
    }

    #[test]
    fn writes_feel_back_pressure_once_the_buffer_is_full() {
        let mut dev = zn540_small();
        // All writes submitted at once: the buffer (6 MiB) absorbs two super word
        // lines at link speed; after that, writes wait for programs (2.5 ms each).
        let lat: Vec<Nanos> = (0..96u64)
            .map(|i| {
                dev.submit(
                    0,
                    &Command::Write { slba: i * 32, nlb: 32, payload: Payload::None, fua: false, placement: None },
                    None,
                )
                .complete_ns
            })
            .collect();
        assert!(lat[40] < 2_000_000, "within the buffer: link-bound, {} ns", lat[40]);
        assert!(lat[60] > 2_500_000, "beyond the buffer: waits for a program, {} ns", lat[60]);
    }
}
