//! Commands the device accepts and what their completions carry.

use crate::status::Status;
use crate::zone::{ZoneState, ZoneType};
use zonelab_sim::Nanos;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZoneAction {
    Open,
    Close,
    Finish,
    Reset,
    Offline,
}

impl ZoneAction {
    pub fn name(self) -> &'static str {
        match self {
            ZoneAction::Open => "open",
            ZoneAction::Close => "close",
            ZoneAction::Finish => "finish",
            ZoneAction::Reset => "reset",
            ZoneAction::Offline => "offline",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "open" => ZoneAction::Open,
            "close" => ZoneAction::Close,
            "finish" => ZoneAction::Finish,
            "reset" => ZoneAction::Reset,
            "offline" => ZoneAction::Offline,
            _ => return None,
        })
    }
}

/// Zone Receive Action Specific filter of Report Zones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFilter {
    All,
    State(ZoneState),
}

impl ReportFilter {
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
    None,
    Pattern(u8),
    Bytes(&'a [u8]),
}

/// One source range of a Simple Copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceRange {
    pub slba: u64,
    pub nlb: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    Identify,
    Read {
        slba: u64,
        nlb: u32,
    },
    /// `fua` (Force Unit Access): completes only once the data is durable.
    Write {
        slba: u64,
        nlb: u32,
        payload: Payload<'a>,
        fua: bool,
    },
    WriteZeroes {
        slba: u64,
        nlb: u32,
    },
    Append {
        zslba: u64,
        nlb: u32,
        payload: Payload<'a>,
        fua: bool,
    },
    /// NVMe Flush: completes once the data of every write completed before
    /// it is durable (immediately with a power-loss-protected buffer).
    Flush,
    ZoneMgmtSend {
        action: ZoneAction,
        slba: u64,
        select_all: bool,
    },
    ReportZones {
        slba: u64,
        filter: ReportFilter,
        max_zones: u32,
        partial: bool,
    },
    /// ZNS+ in-storage zone compaction: block `src[i]` is copied to `dst[i]`.
    /// Destinations lie in one zone, strictly increasing, from its write
    /// pointer on; skipped blocks are plugged (TL_opened zone) or read as zeros.
    ZoneCompaction {
        src: &'a [u64],
        dst: &'a [u64],
    },
    /// NVMe Simple Copy: the ranges, in order, to `sdlba` onwards, written
    /// like a Write at `sdlba`.
    SimpleCopy {
        ranges: &'a [SourceRange],
        sdlba: u64,
    },
    /// ZNS+ TL_open: opens the zone for threaded logging; bit `i` of `valid`
    /// (word `i / 64`, bit `i % 64`) says block `zslba + i` holds valid data.
    TlOpen {
        zslba: u64,
        valid: &'a [u64],
    },
    /// ZNS+ identify_mapping: where the chip of a chunk is in its address.
    IdentifyMapping,
}

impl Command<'_> {
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
        }
    }
}

/// Identify Namespace (and the zoned I/O command set fields).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentifyData {
    pub lba_bytes: u32,
    /// Namespace size in logical blocks.
    pub nsze: u64,
    pub zsze: u64,
    pub zcap: u64,
    pub nr_zones: u32,
    pub nr_conventional_zones: u32,
    /// Max Active Resources, 0-based; `u32::MAX` means no limit.
    pub mar: u32,
    /// Max Open Resources, 0-based; `u32::MAX` means no limit.
    pub mor: u32,
    pub zasl_bytes: u64,
    pub mdts_bytes: u64,
}

/// identify_mapping (seed 002 §3.3.1): in a logical chunk address (LBA /
/// `lbas_per_chunk`), bits `[chip_id_shift, chip_id_shift + chip_id_bits)`
/// select the die within the flash chip group and bits `[fcg_id_shift,
/// fcg_id_shift + fcg_id_bits)` select the group: two chunks with equal
/// fields live on the same die, so a copy between them can be a copyback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappingInfo {
    pub lbas_per_chunk: u64,
    pub chip_id_shift: u32,
    pub chip_id_bits: u32,
    pub fcg_id_shift: u32,
    pub fcg_id_bits: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneDescriptor {
    pub zone_type: ZoneType,
    pub state: ZoneState,
    pub zcap: u64,
    pub zsze: u64,
    pub zslba: u64,
    pub wp: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneReport {
    /// Zones matching the filter from SLBA on, or the number of descriptors
    /// returned when the report is partial.
    pub nr_zones: u64,
    pub zones: Vec<ZoneDescriptor>,
}

/// What a read found, for checking data without copying it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadPattern {
    /// Every byte read holds this value.
    Uniform(u8),
    Mixed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CmdResult {
    None,
    /// LBA a Zone Append wrote to.
    Lba(u64),
    Identify(Box<IdentifyData>),
    Report(ZoneReport),
    /// Data mode only.
    Read(ReadPattern),
    Mapping(MappingInfo),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub status: Status,
    pub submit_ns: Nanos,
    pub complete_ns: Nanos,
    pub result: CmdResult,
}

impl Completion {
    pub fn latency_ns(&self) -> Nanos {
        self.complete_ns - self.submit_ns
    }
}

/// Identifies a command whose completion [`crate::ZonedDevice::take_completed`] reports later.
pub type Tag = u64;

/// What [`crate::ZonedDevice::start`] did with a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Started {
    Done(Completion),
    /// Accepted; its completion comes from [`crate::ZonedDevice::take_completed`].
    Pending(Tag),
}
