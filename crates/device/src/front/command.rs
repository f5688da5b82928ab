//! Commands the device accepts and what their completions carry.

use crate::status::Status;
use crate::zone::{ZoneState, ZoneType};
use zonelab_sim::Nanos;

/// Zone Send Action of Zone Management Send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneAction {
    /// Open Zone: explicitly opened, counted against the open and active limits.
    Open,
    /// Close Zone: releases its open resource, stays active.
    Close,
    /// Finish Zone: the write pointer moves to the end; the zone becomes full.
    Finish,
    /// Reset Zone: empty, write pointer back at the zone start.
    Reset,
    /// Offline Zone: only from read-only; the zone becomes unusable.
    Offline,
    /// Open Zone with ZRWA Allocate (TP 4076): as Open, and the zone takes a
    /// Zone Random Write Area.
    OpenZrwa,
    /// Flush Explicit ZRWA Range (action 0x11): commits the zone's ZRWA up
    /// to and including the LBA the command gives (not a zone start).
    FlushZrwa,
}

impl ZoneAction {
    /// The name traces and reports use (`open`, `close`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ZoneAction::Open => "open",
            ZoneAction::Close => "close",
            ZoneAction::Finish => "finish",
            ZoneAction::Reset => "reset",
            ZoneAction::Offline => "offline",
            ZoneAction::OpenZrwa => "open_zrwa",
            ZoneAction::FlushZrwa => "flush_zrwa",
        }
    }

    /// The action named `s`, as [`ZoneAction::name`] spells it.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "open" => ZoneAction::Open,
            "close" => ZoneAction::Close,
            "finish" => ZoneAction::Finish,
            "reset" => ZoneAction::Reset,
            "offline" => ZoneAction::Offline,
            "open_zrwa" => ZoneAction::OpenZrwa,
            "flush_zrwa" => ZoneAction::FlushZrwa,
            _ => return None,
        })
    }
}

/// Zone Receive Action Specific filter of Report Zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFilter {
    /// Every zone.
    All,
    /// Sequential zones in this state.
    State(ZoneState),
}

impl ReportFilter {
    /// Whether a zone of `zone_type` in `state` is reported.
    pub fn matches(self, zone_type: ZoneType, state: ZoneState) -> bool {
        match self {
            ReportFilter::All => true,
            ReportFilter::State(s) => zone_type == ZoneType::SeqWriteRequired && s == state,
        }
    }
}

/// Data a write carries: nothing (metadata mode), one byte repeated over
/// every block, or the bytes themselves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload<'a> {
    /// No data: metadata mode, only timing and zone state are modelled.
    None,
    /// Every byte of every block holds this value.
    Pattern(u8),
    /// The data, `nlb` blocks of it.
    Bytes(&'a [u8]),
}

/// One source range of a Simple Copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceRange {
    /// Starting LBA.
    pub slba: u64,
    /// Logical blocks (1-based).
    pub nlb: u32,
}

/// An NVMe command as the device model takes it: LBAs and block counts
/// (1-based, unlike the 0-based NLB of the wire format).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    /// Identify Namespace (with the zoned command set's fields).
    Identify,
    /// Read.
    Read {
        /// Starting LBA.
        slba: u64,
        /// Logical blocks.
        nlb: u32,
    },
    /// `fua` (Force Unit Access): completes only once the data is durable.
    Write {
        /// Starting LBA: the write pointer in a sequential zone.
        slba: u64,
        /// Logical blocks.
        nlb: u32,
        /// The data written.
        payload: Payload<'a>,
        /// Force Unit Access.
        fua: bool,
        /// The Data Placement directive (DTYPE 2) with its DSPEC, the
        /// placement identifier (reclaim group in the high `rgif` bits,
        /// placement handle below): which reclaim unit handle of an FDP
        /// namespace takes the data. `None`: no directive (handle 0);
        /// ignored without FDP.
        placement: Option<u16>,
    },
    /// Write Zeroes: like a write of zeros, without data transfer.
    WriteZeroes {
        /// Starting LBA.
        slba: u64,
        /// Logical blocks.
        nlb: u32,
        /// The Data Placement directive's placement identifier, as for
        /// [`Command::Write`]'s `placement`.
        placement: Option<u16>,
    },
    /// Zone Append: the device writes at the zone's write pointer and returns the LBA.
    Append {
        /// Start LBA of the zone.
        zslba: u64,
        /// Logical blocks (at most ZASL).
        nlb: u32,
        /// The data written.
        payload: Payload<'a>,
        /// Force Unit Access.
        fua: bool,
    },
    /// NVMe Flush: completes once the data of every write completed before
    /// it is durable (immediately with a power-loss-protected buffer).
    Flush,
    /// Zone Management Send.
    ZoneMgmtSend {
        /// What to do to the zone.
        action: ZoneAction,
        /// Start LBA of the zone (ignored with `select_all`).
        slba: u64,
        /// Select All: every zone the action applies to.
        select_all: bool,
    },
    /// Zone Management Receive, Report Zones.
    ReportZones {
        /// LBA to report from (its zone is the first).
        slba: u64,
        /// Which zones to report.
        filter: ReportFilter,
        /// Most descriptors to return.
        max_zones: u32,
        /// Partial Report: `nr_zones` counts the descriptors returned, not all matches.
        partial: bool,
    },
    /// ZNS+ in-storage zone compaction: block `src[i]` is copied to `dst[i]`.
    /// Destinations lie in one zone, strictly increasing, from its write
    /// pointer on; skipped blocks are plugged (TL_opened zone) or read as zeros.
    ZoneCompaction {
        /// Source LBAs.
        src: &'a [u64],
        /// Destination LBAs, one per source.
        dst: &'a [u64],
    },
    /// NVMe Simple Copy: the ranges, in order, to `sdlba` onwards, written
    /// like a Write at `sdlba`.
    SimpleCopy {
        /// Source ranges.
        ranges: &'a [SourceRange],
        /// Destination LBA of the first block copied.
        sdlba: u64,
    },
    /// ZNS+ TL_open: opens the zone for threaded logging; bit `i` of `valid`
    /// (word `i / 64`, bit `i % 64`) says block `zslba + i` holds valid data.
    TlOpen {
        /// Start LBA of the zone.
        zslba: u64,
        /// Valid-block bitmap over the zone's capacity.
        valid: &'a [u64],
    },
    /// ZNS+ identify_mapping: where the chip of a chunk is in its address.
    IdentifyMapping,
    /// I/O Management Receive, Reclaim Unit Handle Status (FDP): for each
    /// placement identifier of the namespace, its handle and what is left
    /// of the reclaim unit it writes.
    ReclaimUnitHandleStatus,
    /// I/O Management Send, Reclaim Unit Handle Update (FDP): each named
    /// placement identifier's handle moves to an empty reclaim unit.
    ReclaimUnitHandleUpdate {
        /// Placement identifiers.
        pids: &'a [u16],
    },
}

impl Command<'_> {
    /// The name traces and reports use (`write`, `zone_mgmt`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            Command::Identify => "identify",
            Command::Read { .. } => "read",
            Command::Write { .. } => "write",
            Command::WriteZeroes { .. } => "write_zeroes",
            Command::Append { .. } => "append",
            Command::Flush => "flush",
            Command::ZoneMgmtSend { .. } => "zone_mgmt",
            Command::ReportZones { .. } => "report_zones",
            Command::ZoneCompaction { .. } => "zone_compaction",
            Command::SimpleCopy { .. } => "simple_copy",
            Command::TlOpen { .. } => "tl_open",
            Command::IdentifyMapping => "identify_mapping",
            Command::ReclaimUnitHandleStatus => "ruh_status",
            Command::ReclaimUnitHandleUpdate { .. } => "ruh_update",
        }
    }
}

/// Identify Namespace (and the zoned I/O command set fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifyData {
    /// Logical block size in bytes (LBA format data size).
    pub lba_bytes: u32,
    /// Namespace size in logical blocks.
    pub nsze: u64,
    /// Zone size in logical blocks (ZSZE).
    pub zsze: u64,
    /// Zone capacity in logical blocks (ZCAP).
    pub zcap: u64,
    /// Zones in the namespace.
    pub nr_zones: u32,
    /// Conventional zones, at the start of the namespace.
    pub nr_conventional_zones: u32,
    /// Max Active Resources, 0-based; `u32::MAX` means no limit.
    pub mar: u32,
    /// Max Open Resources, 0-based; `u32::MAX` means no limit.
    pub mor: u32,
    /// Zone Append Size Limit in bytes (ZASL).
    pub zasl_bytes: u64,
    /// Maximum Data Transfer Size in bytes (MDTS).
    pub mdts_bytes: u64,
    /// Zone Random Write Area: ZRWAS, ZRWAFG, NUMZRWA (a count, not
    /// 0-based) and EXPFLUSHSUP; None: the namespace has none (OZCS ZRWASUP clear).
    pub zrwa: Option<crate::config::zrwa::ZrwaLimits>,
}

/// identify_mapping (seed 002 §3.3.1): in a logical chunk address (LBA /
/// `lbas_per_chunk`), bits `[chip_id_shift, chip_id_shift + chip_id_bits)`
/// select the die within the flash chip group and bits `[fcg_id_shift,
/// fcg_id_shift + fcg_id_bits)` select the group: two chunks with equal
/// fields live on the same die, so a copy between them can be a copyback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingInfo {
    /// Logical blocks per chunk, the unit the mapping works in.
    pub lbas_per_chunk: u64,
    /// Lowest bit of the chip (die) id in a chunk address.
    pub chip_id_shift: u32,
    /// Width of the chip id.
    pub chip_id_bits: u32,
    /// Lowest bit of the flash chip group id in a chunk address.
    pub fcg_id_shift: u32,
    /// Width of the flash chip group id.
    pub fcg_id_bits: u32,
}

/// One Zone Descriptor of a zone report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneDescriptor {
    /// Zone Type.
    pub zone_type: ZoneType,
    /// Zone State.
    pub state: ZoneState,
    /// Zone Capacity in logical blocks.
    pub zcap: u64,
    /// Zone size in logical blocks.
    pub zsze: u64,
    /// Zone Start LBA.
    pub zslba: u64,
    /// Write Pointer (an LBA).
    pub wp: u64,
    /// Zone attribute ZRWAV: the zone holds a Zone Random Write Area.
    pub zrwa: bool,
}

/// The answer to Report Zones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneReport {
    /// Zones matching the filter from SLBA on, or the number of descriptors
    /// returned when the report is partial.
    pub nr_zones: u64,
    /// Zone descriptors, in LBA order.
    pub zones: Vec<ZoneDescriptor>,
}

/// What a read found, for checking data without copying it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPattern {
    /// Every byte read holds this value.
    Uniform(u8),
    /// Not every byte is the same.
    Mixed,
}

/// What a completion carries besides its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdResult {
    /// Nothing.
    None,
    /// LBA a Zone Append wrote to.
    Lba(u64),
    /// Identify Namespace data.
    Identify(Box<IdentifyData>),
    /// Report Zones data (boxed, as the other large results, so that the
    /// completion every command returns stays small).
    Report(Box<ZoneReport>),
    /// Data mode only.
    Read(ReadPattern),
    /// identify_mapping data (ZNS+).
    Mapping(Box<MappingInfo>),
    /// Reclaim Unit Handle Status (FDP): one entry per placement identifier.
    ReclaimUnitHandles(Box<[crate::fdp::RuhStatus]>),
}

/// The completion of one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// NVMe status.
    pub status: Status,
    /// When the command was submitted (simulated time).
    pub submit_ns: Nanos,
    /// When the command completed (simulated time).
    pub complete_ns: Nanos,
    /// What the completion carries.
    pub result: CmdResult,
}

impl Completion {
    /// Time from submission to completion.
    pub fn latency_ns(&self) -> Nanos {
        self.complete_ns - self.submit_ns
    }
}

/// Identifies a command whose completion [`crate::ZonedDevice::take_completed`] reports later.
pub type Tag = u64;

/// What [`crate::ZonedDevice::start`] did with a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    /// Completed at once.
    Done(Completion),
    /// Accepted; its completion comes from [`crate::ZonedDevice::take_completed`].
    Pending(Tag),
}
