//! Flexible Data Placement (NVMe TP4146) as the host sees it: the
//! placement identifiers a write names, and the logs that say whether
//! placement worked (configuration, statistics, reclaim unit handle usage
//! and status, events). The placement itself is the page-mapped FTL's
//! ([`crate::conventional`]); `[fdp]` in the device configuration
//! ([`crate::config::fdp::FdpConfig`]) turns it on.

use crate::config::fdp::{FdpConfig, HandleType};
use std::collections::VecDeque;
use zonelab_sim::Nanos;

/// Events each of the two FDP event logs (host, controller) keeps; older
/// ones are dropped first.
pub const EVENTS_MAX: usize = 64;

/// The FDP configuration descriptor the FDP Configurations log reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdpDescriptor {
    /// Reclaim Group Identifier Format: high bits of a placement identifier naming the group.
    pub rgif: u8,
    /// Reclaim groups.
    pub reclaim_groups: u16,
    /// Reclaim unit handles.
    pub handles: u16,
    /// Every handle's type.
    pub handle_type: HandleType,
    /// Reclaim unit size in bytes.
    pub reclaim_unit_bytes: u64,
}

impl FdpDescriptor {
    /// The descriptor of `config` over the geometry `g`.
    pub fn new(config: &FdpConfig, g: &zonelab_flash::Geometry) -> Self {
        Self {
            rgif: config.rgif(),
            reclaim_groups: config.reclaim_groups,
            handles: config.handles,
            handle_type: config.handle_type,
            reclaim_unit_bytes: config.reclaim_unit_bytes(g),
        }
    }

    /// The placement identifier of handle `handle` in reclaim group `group`.
    pub fn pid(&self, group: u16, handle: u16) -> u16 {
        if self.rgif == 0 {
            return handle;
        }
        (group << (16 - u32::from(self.rgif))) | handle
    }

    /// The reclaim group and handle `pid` names, if the namespace has them.
    pub fn parse_pid(&self, pid: u16) -> Option<(u16, u16)> {
        let (group, handle) = if self.rgif == 0 {
            (0, pid)
        } else {
            let shift = 16 - u32::from(self.rgif);
            (pid >> shift, pid & ((1u16 << shift) - 1))
        };
        (group < self.reclaim_groups && handle < self.handles).then_some((group, handle))
    }
}

/// The FDP Statistics log: bytes the host wrote, bytes the media took
/// (host data and garbage collection's copies) and bytes erased. Media
/// bytes over host bytes is the write amplification.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FdpStats {
    /// Host Bytes with Metadata Written (HBMW).
    pub host_bytes: u64,
    /// Media Bytes with Metadata Written (MBMW).
    pub media_bytes: u64,
    /// Media Bytes Erased (MBE).
    pub media_erased_bytes: u64,
}

/// One entry of Reclaim Unit Handle Status (I/O Management Receive).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuhStatus {
    /// Placement identifier.
    pub pid: u16,
    /// Reclaim unit handle identifier.
    pub ruhid: u16,
    /// Estimated Active Reclaim Unit Time Remaining in seconds (0: no limit modelled).
    pub earutr_s: u32,
    /// Reclaim Unit Available Media Writes: logical blocks the handle's
    /// current reclaim unit still takes.
    pub ruamw_lbas: u64,
}

/// How a reclaim unit handle has been used (Reclaim Unit Handle Usage log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuhAttributes {
    /// No namespace's placement handle references it.
    Unused,
    /// A placement handle references it (the host names it on writes).
    HostSpecified,
    /// The controller chose it (no placement handle references it).
    ControllerSpecified,
}

impl RuhAttributes {
    /// The Reclaim Unit Handle Attributes code.
    pub fn code(self) -> u8 {
        match self {
            RuhAttributes::Unused => 0,
            RuhAttributes::HostSpecified => 1,
            RuhAttributes::ControllerSpecified => 2,
        }
    }
}

/// The kinds of FDP event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FdpEventKind {
    /// Host event: a Reclaim Unit Handle Update left a reclaim unit partly written.
    RuNotFullyWritten,
    /// Host event: a write named a placement identifier the namespace does not have.
    InvalidPlacementIdentifier,
    /// Controller event: garbage collection moved a handle's data.
    MediaReallocated,
}

impl FdpEventKind {
    /// Every kind, in code order.
    pub const ALL: [FdpEventKind; 3] =
        [FdpEventKind::RuNotFullyWritten, FdpEventKind::InvalidPlacementIdentifier, FdpEventKind::MediaReallocated];

    /// The FDP Event Type code.
    pub fn code(self) -> u8 {
        match self {
            FdpEventKind::RuNotFullyWritten => 0x00,
            FdpEventKind::InvalidPlacementIdentifier => 0x03,
            FdpEventKind::MediaReallocated => 0x80,
        }
    }

    /// The kind of code `code`, if modelled.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// Whether the host's commands cause it (the host events log) rather
    /// than the controller's own work.
    pub fn is_host(self) -> bool {
        self.code() < 0x80
    }

    /// The name traces and reports use.
    pub fn name(self) -> &'static str {
        match self {
            FdpEventKind::RuNotFullyWritten => "ru_not_fully_written",
            FdpEventKind::InvalidPlacementIdentifier => "invalid_placement_identifier",
            FdpEventKind::MediaReallocated => "media_reallocated",
        }
    }

    /// Bit of the kind in a handle's event mask.
    pub(crate) fn bit(self) -> u8 {
        match self {
            FdpEventKind::RuNotFullyWritten => 1,
            FdpEventKind::InvalidPlacementIdentifier => 2,
            FdpEventKind::MediaReallocated => 4,
        }
    }
}

/// One FDP event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdpEvent {
    /// What happened.
    pub kind: FdpEventKind,
    /// When (simulated time).
    pub at_ns: Nanos,
    /// The placement identifier involved, if one is (PIV).
    pub pid: Option<u16>,
    /// Reclaim group.
    pub group: u16,
    /// Reclaim unit handle, if the event concerns one handle's data.
    pub ruhid: Option<u16>,
    /// Media Reallocated: logical blocks moved.
    pub lbas_moved: u64,
}

/// What [`crate::ZonedDevice::fdp_logs`] returns: every FDP log of a namespace at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdpLogs {
    /// The configuration in use.
    pub descriptor: FdpDescriptor,
    /// Statistics.
    pub stats: FdpStats,
    /// Each handle's usage, by handle.
    pub usage: Vec<RuhAttributes>,
    /// Host events, oldest first.
    pub host_events: Vec<FdpEvent>,
    /// Controller events, oldest first.
    pub controller_events: Vec<FdpEvent>,
    /// Each handle's enabled event kinds.
    pub enabled_events: Vec<Vec<FdpEventKind>>,
}

/// A bounded log of events (one of the two FDP event logs).
#[derive(Debug, Clone, Default)]
pub(crate) struct EventLog {
    events: VecDeque<FdpEvent>,
}

impl EventLog {
    /// Appends `event`, dropping the oldest once [`EVENTS_MAX`] are kept.
    pub(crate) fn push(&mut self, event: FdpEvent) {
        if self.events.len() == EVENTS_MAX {
            self.events.pop_front();
        }
        self.events.push_back(event);
        debug_assert!(self.events.len() <= EVENTS_MAX);
    }

    /// The events, oldest first.
    pub(crate) fn to_vec(&self) -> Vec<FdpEvent> {
        self.events.iter().copied().collect()
    }
}
