//! Where a page-mapped namespace's host data goes: one stream of program
//! units per reclaim unit handle and reclaim group (one stream without
//! FDP). A stream fills its own unit in the shared write buffer and sends
//! full units round robin over its group's dies, into its own open block
//! on each; those blocks, one per die of the group, are the handle's
//! reclaim unit. Also the FDP state the logs report: events and which
//! kinds each handle reports.

use crate::config::DeviceConfig;
use crate::fdp::{EventLog, FdpDescriptor, FdpEvent, FdpEventKind};
use zonelab_sim::Nanos;

/// The program unit a stream is filling and where its next one goes.
#[derive(Debug, Clone, Default)]
pub(crate) struct HostUnit {
    /// LBAs in the unit, in arrival order.
    pub(crate) lbas: Vec<u64>,
    /// Buffer bytes the unit holds (an LBA rewritten in it takes no more).
    pub(crate) bytes: u64,
    /// Die within the group the next full unit goes to.
    pub(crate) cursor: u32,
    /// Units programmed into the current reclaim unit.
    pub(crate) ru_units: u32,
}

/// FDP's own state: the configuration and the event logs.
#[derive(Debug, Clone)]
pub(crate) struct FdpState {
    pub(crate) descriptor: FdpDescriptor,
    pub(crate) host_events: EventLog,
    pub(crate) controller_events: EventLog,
    /// Per handle: the event kinds it reports ([`FdpEventKind::bit`]).
    pub(crate) event_masks: Vec<u8>,
    /// The latest event's time: the logs keep events in the order they happen.
    pub(crate) last_event_ns: Nanos,
}

impl FdpState {
    /// Logs `event` if its handle (handle 0 for an event of no handle) reports its kind.
    pub(crate) fn log(&mut self, mut event: FdpEvent) {
        let handle = usize::from(event.ruhid.unwrap_or(0));
        if self.event_masks[handle] & event.kind.bit() == 0 {
            return;
        }
        // Garbage collection on one die may be timed before a host write
        // handled earlier: the controller logs it when it decides it.
        event.at_ns = event.at_ns.max(self.last_event_ns);
        self.last_event_ns = event.at_ns;
        if event.kind.is_host() {
            self.host_events.push(event);
        } else {
            self.controller_events.push(event);
        }
    }
}

/// The streams of host data and, with FDP, its state.
#[derive(Debug, Clone)]
pub(crate) struct Placement {
    /// Per stream (`group * handles + handle`): its unit being filled.
    pub(crate) units: Vec<HostUnit>,
    pub(crate) handles: u16,
    pub(crate) dies_per_group: u32,
    /// Persistently isolated handles: garbage collection keeps them apart.
    pub(crate) persistent: bool,
    pub(crate) fdp: Option<Box<FdpState>>,
}

impl Placement {
    pub(crate) fn new(device: &DeviceConfig) -> Self {
        let g = &device.flash;
        let Some(f) = &device.fdp else {
            return Placement {
                units: vec![HostUnit::default()],
                handles: 1,
                dies_per_group: g.dies_total(),
                persistent: false,
                fdp: None,
            };
        };
        let streams = usize::from(f.reclaim_groups) * usize::from(f.handles);
        let fdp = FdpState {
            descriptor: FdpDescriptor::new(f, g),
            host_events: EventLog::default(),
            controller_events: EventLog::default(),
            event_masks: vec![0; usize::from(f.handles)],
            last_event_ns: 0,
        };
        Placement {
            units: vec![HostUnit::default(); streams],
            handles: f.handles,
            dies_per_group: f.dies_per_group(g),
            persistent: f.gc_streams() > 1,
            fdp: Some(Box::new(fdp)),
        }
    }

    /// The stream a write naming `pid` goes to: handle 0 of group 0 without
    /// a directive, without FDP, or (logging the event) for a placement
    /// identifier the namespace does not have.
    #[inline]
    pub(crate) fn stream_of(&mut self, pid: Option<u16>, at_ns: Nanos) -> usize {
        let (Some(pid), Some(fdp)) = (pid, self.fdp.as_mut()) else { return 0 };
        match fdp.descriptor.parse_pid(pid) {
            Some((group, handle)) => usize::from(group) * usize::from(self.handles) + usize::from(handle),
            None => {
                let kind = FdpEventKind::InvalidPlacementIdentifier;
                fdp.log(FdpEvent { kind, at_ns, pid: Some(pid), group: 0, ruhid: None, lbas_moved: 0 });
                0
            }
        }
    }

    /// Reclaim group and handle of `stream`.
    pub(crate) fn group_handle(&self, stream: usize) -> (u16, u16) {
        let handles = usize::from(self.handles);
        let group = u16::try_from(stream / handles).expect("groups fit u16");
        let handle = u16::try_from(stream % handles).expect("handles fit u16");
        (group, handle)
    }

    /// The first die of `stream`'s reclaim group.
    pub(crate) fn first_die(&self, stream: usize) -> u32 {
        u32::from(self.group_handle(stream).0) * self.dies_per_group
    }

    /// Program units in a reclaim unit.
    pub(crate) fn ru_units(&self, units_per_block: u32) -> u32 {
        self.dies_per_group * units_per_block
    }
}
