//! The seam between a zoned namespace and what drives it.
//!
//! [`ZonedDevice`] is what the fio engine, the trace runner, the file system,
//! the servers and the experiments use: NVMe commands in, completions out, on
//! a virtual clock the caller advances. [`Device`] (the flash-backed ZNS SSD)
//! and [`crate::ideal::IdealDevice`] (zero latency, same zone semantics)
//! implement it, and so do a drive's namespaces ([`crate::Namespaces`]);
//! a pass-through to a real zoned drive would be a further implementation.

use crate::config::namespaces::NamespaceRequest;
use crate::config::{DeviceConfig, Layout};
use crate::counters::DeviceCounters;
use crate::device::Device;
use crate::fdp::{FdpEventKind, FdpLogs};
use crate::front::command::{Command, Completion, IdentifyData, Started, Tag, ZoneDescriptor};
use crate::power::PowerCutReport;
use crate::status::{AdminError, AdminStatus, Status};
use crate::zone::{ZoneState, ZoneTable};
use zonelab_flash::FlashCounters;
use zonelab_sim::Nanos;

/// A zoned namespace driven in simulated time.
///
/// Commands are submitted in non-decreasing time order. A command either
/// completes when it is started or (a Zone Management Send finish or reset
/// whose work runs in the background) is pending until a later
/// [`ZonedDevice::advance`] reports it through
/// [`ZonedDevice::take_completed`].
pub trait ZonedDevice {
    /// Starts `cmd` at `submit_ns` (NVMe: the doorbell write). Invalid
    /// commands complete at once with the status a device returns (Invalid
    /// Field, LBA Out of Range, Zone Invalid Write, ...). In data mode a Read
    /// fills `read_out` with the data.
    fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started;

    /// Submits `cmd` and waits for its completion queue entry: a pending
    /// command runs to its end as if no other command arrived meanwhile.
    fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion;

    /// Lets simulated time run to `until_ns`: background work (finish
    /// padding, reset erases) that starts before it takes its resources.
    fn advance(&mut self, until_ns: Nanos);

    /// When the next background step could start if no command came first;
    /// `None` with no background work.
    fn next_event_ns(&self) -> Option<Nanos>;

    /// Completions of pending commands, in the order they completed.
    fn take_completed(&mut self) -> Vec<(Tag, Completion)>;

    /// Pending commands not completed yet.
    fn pending_tasks(&self) -> usize;

    /// Identify Namespace (zoned command set): sizes, MAR/MOR, ZASL, MDTS.
    fn identify(&self) -> IdentifyData;

    /// The Report Zones descriptor of `zone` (type, state, ZSLBA, ZCAP, write
    /// pointer), read without taking simulated time.
    fn descriptor(&self, zone: u32) -> ZoneDescriptor;

    /// The zone state machine: states, write pointers and open/active
    /// resources of every zone.
    fn zones(&self) -> &ZoneTable;

    /// The namespace's geometry (LBA and zone sizes, transfer limits).
    fn layout(&self) -> &Layout;

    /// The configuration the device was built from (mode, name, geometry;
    /// a model that has no flash ignores the timing parts).
    fn config(&self) -> &DeviceConfig;

    /// Host-visible command counters.
    fn counters(&self) -> DeviceCounters;

    /// Flash counters (all zero for a device without flash).
    fn flash_counters(&self) -> FlashCounters;

    /// Fault injection (not an NVMe command): the zone at `slba` turns read
    /// only or offline, as a failing device would report it.
    fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status>;

    /// Power fails at `at_ns` (not before the last submission) and comes
    /// back: what was not durable is lost (see [`crate::power`]).
    fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport;
    /// The Flexible Data Placement logs of a page-mapped namespace with
    /// `[fdp]` (configuration, statistics, handle usage, events); `None`
    /// without FDP.
    fn fdp_logs(&self) -> Option<FdpLogs> {
        None
    }

    /// Set Features FDP Events: the handle placement identifier `pid`
    /// names reports (`enable`) or stops reporting the event kinds `kinds`.
    /// FDP Disabled without FDP; Invalid Field for a `pid` the namespace lacks.
    fn set_fdp_events(&mut self, pid: u16, kinds: &[FdpEventKind], enable: bool) -> Result<(), Status> {
        let _ = (pid, kinds, enable);
        Err(Status::FdpDisabled)
    }

    /// [`ZonedDevice::fdp_logs`] of namespace `nsid`.
    fn fdp_logs_in(&self, nsid: u32) -> Option<FdpLogs> {
        if nsid == 1 {
            return self.fdp_logs();
        }
        None
    }

    /// [`ZonedDevice::set_fdp_events`] on namespace `nsid`.
    fn set_fdp_events_in(&mut self, nsid: u32, pid: u16, kinds: &[FdpEventKind], enable: bool) -> Result<(), Status> {
        if nsid == 1 {
            return self.set_fdp_events(pid, kinds, enable);
        }
        Err(Status::InvalidNamespace)
    }

    /// Active namespaces, NSID 1 to this; every method above addresses
    /// namespace 1 ([`crate::namespaces::Namespaces`] has several).
    fn namespace_count(&self) -> u32 {
        1
    }

    /// [`ZonedDevice::start`] on namespace `nsid`; an inactive one completes
    /// with Invalid Namespace or Format.
    fn start_in(&mut self, nsid: u32, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        if nsid == 1 {
            return self.start(submit_ns, cmd, read_out);
        }
        Started::Done(invalid_namespace(self.config(), submit_ns))
    }

    /// The layout of namespace `nsid`, if active.
    fn layout_in(&self, nsid: u32) -> Option<&Layout> {
        (nsid == 1).then(|| self.layout())
    }

    /// [`ZonedDevice::set_zone_state`] on namespace `nsid`.
    fn set_zone_state_in(&mut self, nsid: u32, slba: u64, state: ZoneState) -> Result<(), Status> {
        if nsid == 1 {
            return self.set_zone_state(slba, state);
        }
        Err(Status::InvalidNamespace)
    }

    /// Namespace Management or Attachment `op` at `submit_ns`: the NSID it
    /// created or addressed, and when it completes. Only a device of
    /// several namespaces ([`crate::Namespaces`]) has them; another answers
    /// Invalid Command Opcode at once.
    fn manage_namespaces(&mut self, submit_ns: Nanos, op: &NamespaceOp) -> (Result<u32, AdminError>, Nanos) {
        let _ = op;
        let detail = "a device of one namespace has no Namespace Management (give it [[namespaces]])";
        (Err(AdminError::new(AdminStatus::InvalidOpcode, detail)), submit_ns)
    }

    /// [`ZonedDevice::submit`] on namespace `nsid`.
    fn submit_in(&mut self, nsid: u32, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        if nsid == 1 {
            return self.submit(submit_ns, cmd, read_out);
        }
        invalid_namespace(self.config(), submit_ns)
    }
}

/// A Namespace Management or Attachment command
/// ([`ZonedDevice::manage_namespaces`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceOp {
    /// Namespace Management, create.
    Create(NamespaceRequest),
    /// Namespace Management, delete (0xFFFFFFFF: every namespace).
    Delete(u32),
    /// Namespace Attachment, attach.
    Attach(u32),
    /// Namespace Attachment, detach.
    Detach(u32),
}

/// The completion of a command to an inactive namespace: the controller
/// rejects it without touching a namespace (host interface and error path).
pub fn invalid_namespace(config: &DeviceConfig, submit_ns: Nanos) -> Completion {
    let c = &config.controller;
    let complete_ns = submit_ns.saturating_add(c.submit_ns + c.error_ns + c.complete_ns).max(submit_ns + 1);
    Completion { status: Status::InvalidNamespace, submit_ns, complete_ns, result: crate::command::CmdResult::None }
}

impl ZonedDevice for Device {
    fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        Device::start(self, submit_ns, cmd, read_out)
    }
    fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        Device::submit(self, submit_ns, cmd, read_out)
    }
    fn advance(&mut self, until_ns: Nanos) {
        Device::advance(self, until_ns)
    }
    fn next_event_ns(&self) -> Option<Nanos> {
        Device::next_event_ns(self)
    }
    fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        Device::take_completed(self)
    }
    fn pending_tasks(&self) -> usize {
        Device::pending_tasks(self)
    }
    fn identify(&self) -> IdentifyData {
        Device::identify(self)
    }
    fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        Device::descriptor(self, zone)
    }
    fn zones(&self) -> &ZoneTable {
        Device::zones(self)
    }
    fn layout(&self) -> &Layout {
        Device::layout(self)
    }
    fn config(&self) -> &DeviceConfig {
        Device::config(self)
    }
    fn counters(&self) -> DeviceCounters {
        Device::counters(self)
    }
    fn flash_counters(&self) -> FlashCounters {
        Device::flash_counters(self)
    }
    fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        Device::set_zone_state(self, slba, state)
    }
    fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport {
        Device::power_cut(self, at_ns)
    }
    fn fdp_logs(&self) -> Option<FdpLogs> {
        Device::fdp_logs(self)
    }
    fn set_fdp_events(&mut self, pid: u16, kinds: &[FdpEventKind], enable: bool) -> Result<(), Status> {
        Device::set_fdp_events(self, pid, kinds, enable)
    }
}
