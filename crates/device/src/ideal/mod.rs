//! An ideal zoned namespace: every command completes when it is submitted.
//!
//! It decodes commands through the same front ([`crate::front`]) and keeps
//! zones in the same state machine ([`crate::zone::ZoneTable`]) as
//! [`crate::Device`], so writes, appends, open, close, finish, reset and
//! offline change states, write pointers and open/active resources exactly as
//! there, but it has no flash, buffers or firmware: no time passes. It is the
//! second implementation of [`ZonedDevice`] that proves the seam, and a
//! reference for what a workload does when the device costs nothing. The ZNS+
//! commands are not supported (Invalid Field, as a device without ZNS+).

use crate::config::{DeviceConfig, Layout, Mode};
use crate::counters::DeviceCounters;
use crate::data::DataStore;
use crate::front;
use crate::front::command::{
    CmdResult, Command, Completion, IdentifyData, Payload, Started, Tag, ZoneAction, ZoneDescriptor,
};
use crate::status::Status;
use crate::zone::{ZoneState, ZoneTable, ZoneType};
use zonelab_flash::FlashCounters;
use zonelab_sim::Nanos;

use crate::zoned::ZonedDevice;

/// A zero-latency zoned namespace with the zone semantics of [`crate::Device`].
#[derive(Debug, Clone)]
pub struct IdealDevice {
    config: DeviceConfig,
    layout: Layout,
    zones: ZoneTable,
    data: Option<DataStore>,
    counters: DeviceCounters,
    last_submit_ns: Nanos,
}

impl IdealDevice {
    /// An ideal device with the geometry, zone resources and mode of `config`
    /// (its timing is ignored).
    pub fn new(config: DeviceConfig) -> Result<Self, crate::config::ConfigError> {
        let layout = config.validate()?;
        let zones = ZoneTable::of(&config, &layout);
        let data = (config.mode == Mode::Data).then(|| DataStore::of(&layout));
        Ok(Self { config, layout, zones, data, counters: DeviceCounters::default(), last_submit_ns: 0 })
    }

    fn execute(&mut self, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Result<CmdResult, Status> {
        match *cmd {
            Command::Identify => Ok(CmdResult::Identify(Box::new(self.identify()))),
            // Zero latency: a write is durable when it completes, FUA or not.
            Command::Write { slba, nlb, payload, .. } => self.write(slba, nlb, payload, false),
            Command::WriteZeroes { slba, nlb, .. } => self.write(slba, nlb, Payload::None, true),
            Command::Append { zslba, nlb, payload, .. } => self.append(zslba, nlb, payload),
            Command::Flush => Ok(CmdResult::None),
            Command::Read { slba, nlb } => self.read(slba, nlb, read_out),
            Command::ZoneMgmtSend { action, slba, select_all } => self.zone_mgmt(action, slba, select_all),
            Command::ReportZones { slba, filter, max_zones, partial } => {
                front::report(&self.layout, &self.zones, slba, filter, max_zones, partial)
                    .map(|r| CmdResult::Report(Box::new(r)))
            }
            Command::ZoneCompaction { .. }
            | Command::SimpleCopy { .. }
            | Command::TlOpen { .. }
            | Command::IdentifyMapping => Err(Status::InvalidField),
            // No flash, so no placement: the ideal device has no FDP.
            Command::ReclaimUnitHandleStatus | Command::ReclaimUnitHandleUpdate { .. } => Err(Status::FdpDisabled),
        }
    }

    fn write(&mut self, slba: u64, nlb: u32, payload: Payload<'_>, zeroes: bool) -> Result<CmdResult, Status> {
        front::check_range(&self.layout, slba, nlb, !zeroes)?;
        let zone = self.zones.zone_of(slba);
        let end = slba + u64::from(nlb);
        self.zones.check_writable(zone)?;
        if self.zones.zone_type(zone) == ZoneType::Conventional {
            if end > self.zones.zslba(zone) + self.layout.zone_lbas {
                return Err(Status::ZoneBoundaryError);
            }
        } else if self.zones.has_zrwa(zone) {
            return self.write_window(zone, slba, nlb, if zeroes { Payload::Pattern(0) } else { payload });
        } else {
            if slba != self.zones.wp(zone) {
                return Err(Status::ZoneInvalidWrite);
            }
            if end > self.zones.zslba(zone) + self.layout.zcap_lbas {
                return Err(Status::ZoneBoundaryError);
            }
            self.admit(zone, nlb)?;
        }
        self.store(slba, nlb, if zeroes { Payload::Pattern(0) } else { payload });
        Ok(CmdResult::None)
    }

    /// A write into `zone`'s ZRWA: the window rules, then its implicit commit.
    fn write_window(&mut self, zone: u32, slba: u64, nlb: u32, payload: Payload<'_>) -> Result<CmdResult, Status> {
        let end = slba + u64::from(nlb);
        let admission = self.zones.admit_write_at_wp(zone, slba, end)?;
        self.counters.auto_closes += u64::from(admission.auto_closed.is_some());
        let lbas = self.zones.implicit_commit_lbas(zone, end);
        self.zones.commit(zone, lbas);
        self.counters.host_write_bytes += u64::from(nlb) * self.layout.lba_bytes;
        if let Some(d) = self.data.as_mut() {
            d.write_window(slba, u64::from(nlb), payload);
        }
        Ok(CmdResult::None)
    }

    fn append(&mut self, zslba: u64, nlb: u32, payload: Payload<'_>) -> Result<CmdResult, Status> {
        front::check_range(&self.layout, zslba, nlb, true)?;
        let zone = front::addressed_zone(&self.layout, &self.zones, zslba)?;
        if self.zones.has_zrwa(zone) {
            return Err(Status::InvalidZoneOperation);
        }
        if u64::from(nlb) > self.layout.zasl_lbas {
            return Err(Status::InvalidField);
        }
        self.zones.check_writable(zone)?;
        let lba = self.zones.wp(zone);
        if lba + u64::from(nlb) > zslba + self.layout.zcap_lbas {
            return Err(Status::ZoneBoundaryError);
        }
        self.admit(zone, nlb)?;
        self.store(lba, nlb, payload);
        Ok(CmdResult::Lba(lba))
    }

    /// Takes the zone for a write at its write pointer and moves the pointer.
    fn admit(&mut self, zone: u32, nlb: u32) -> Result<(), Status> {
        let admission = self.zones.admit_write(zone)?;
        if admission.auto_closed.is_some() {
            self.counters.auto_closes += 1;
        }
        self.zones.advance_wp(zone, u64::from(nlb));
        Ok(())
    }

    fn store(&mut self, lba: u64, nlb: u32, payload: Payload<'_>) {
        self.counters.host_write_bytes += u64::from(nlb) * self.layout.lba_bytes;
        if let Some(d) = self.data.as_mut() {
            d.write(lba, u64::from(nlb), payload);
        }
    }

    fn read(&mut self, slba: u64, nlb: u32, out: Option<&mut [u8]>) -> Result<CmdResult, Status> {
        front::check_range(&self.layout, slba, nlb, true)?;
        front::check_read(&self.zones, slba, nlb, || self.config.namespace.cross_zone_read)?;
        self.counters.host_read_bytes += u64::from(nlb) * self.layout.lba_bytes;
        Ok(match self.data.as_ref() {
            Some(d) => CmdResult::Read(d.read(slba, u64::from(nlb), out)),
            None => CmdResult::None,
        })
    }

    fn zone_mgmt(&mut self, action: ZoneAction, slba: u64, select_all: bool) -> Result<CmdResult, Status> {
        if action == ZoneAction::FlushZrwa {
            let zone = front::flush_zrwa_zone(&self.layout, &self.zones, slba, select_all)?;
            let (lbas, admission) = self.zones.explicit_commit(zone, slba)?;
            self.counters.auto_closes += u64::from(admission.auto_closed.is_some());
            self.zones.commit(zone, lbas);
            return Ok(CmdResult::None);
        }
        if !select_all {
            let zone = front::addressed_zone(&self.layout, &self.zones, slba)?;
            self.apply(action, zone)?;
            return Ok(CmdResult::None);
        }
        for zone in self.layout.conventional_zones..self.layout.zones {
            if front::select_all_applies(action, self.zones.state(zone)) {
                self.apply(action, zone)?;
            }
        }
        Ok(CmdResult::None)
    }

    fn apply(&mut self, action: ZoneAction, zone: u32) -> Result<(), Status> {
        match action {
            ZoneAction::Open => {
                if self.zones.open(zone)?.is_some() {
                    self.counters.auto_closes += 1;
                }
            }
            ZoneAction::OpenZrwa => {
                if self.zones.open_zrwa(zone)?.is_some() {
                    self.counters.auto_closes += 1;
                }
            }
            ZoneAction::FlushZrwa => unreachable!("zone_mgmt commits before selecting zones"),
            ZoneAction::Close => self.zones.close(zone)?,
            ZoneAction::Finish => {
                let was_full = self.zones.state(zone) == ZoneState::Full;
                self.zones.finish(zone)?;
                self.counters.finishes += u64::from(!was_full);
            }
            ZoneAction::Reset => {
                let was_empty = self.zones.state(zone) == ZoneState::Empty;
                self.zones.reset(zone)?;
                self.discard(zone);
                self.counters.resets += u64::from(!was_empty);
            }
            ZoneAction::Offline => {
                self.zones.offline(zone)?;
                self.discard(zone);
            }
        }
        Ok(())
    }

    fn discard(&mut self, zone: u32) {
        if let Some(d) = self.data.as_mut() {
            d.reset(zone);
        }
    }
}

impl ZonedDevice for IdealDevice {
    fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        Started::Done(self.submit(submit_ns, cmd, read_out))
    }

    fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        assert!(submit_ns >= self.last_submit_ns, "commands must be submitted in time order");
        self.last_submit_ns = submit_ns;
        self.counters.commands += 1;
        let (status, result) = match self.execute(cmd, read_out) {
            Ok(result) => (Status::Success, result),
            Err(status) => {
                self.counters.errors += 1;
                (status, CmdResult::None)
            }
        };
        Completion { status, submit_ns, complete_ns: submit_ns, result }
    }

    fn advance(&mut self, _until_ns: Nanos) {}

    fn next_event_ns(&self) -> Option<Nanos> {
        None
    }

    fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        Vec::new()
    }

    fn pending_tasks(&self) -> usize {
        0
    }

    fn identify(&self) -> IdentifyData {
        front::identify(&self.config, &self.layout)
    }

    fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        front::descriptor(&self.layout, &self.zones, zone)
    }

    fn zones(&self) -> &ZoneTable {
        &self.zones
    }

    fn layout(&self) -> &Layout {
        &self.layout
    }

    fn config(&self) -> &DeviceConfig {
        &self.config
    }

    fn counters(&self) -> DeviceCounters {
        self.counters
    }

    fn flash_counters(&self) -> FlashCounters {
        FlashCounters::default()
    }

    fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        let Some(zone) = front::fault_target(&self.layout, &self.zones, slba, state)? else { return Ok(()) };
        // As on the device: the ZRWA's uncommitted data goes with the failure.
        if let Some(d) = self.data.as_mut().filter(|_| self.zones.has_zrwa(zone)) {
            d.truncate(self.zones.wp(zone));
        }
        self.zones.inject_fault(zone, state);
        if state == ZoneState::Offline {
            self.discard(zone);
        }
        Ok(())
    }
    /// Commands complete the instant they are submitted, durable: a power
    /// cut finds nothing in flight and no cache, so nothing is lost.
    fn power_cut(&mut self, at_ns: Nanos) -> crate::power::PowerCutReport {
        self.last_submit_ns = self.last_submit_ns.max(at_ns);
        crate::power::PowerCutReport::default()
    }
}
