//! Command traces: one JSON object per line in, one JSON result per line out.
//!
//! Commands run one after another: each is submitted when the previous one
//! completed, later if `at_ns` asks, or without waiting for the previous one
//! when that one was `async`. Results print in submission order.

use crate::fdp_json::{handles_json, logs_json};
use serde_json::{json, Map, Value};
use std::io::{BufRead, Write};
use zonelab_device::config::namespaces::{CommandSet, NamespaceRequest};
use zonelab_device::status::AdminError;
use zonelab_device::zoned::NamespaceOp;
use zonelab_device::{
    CmdResult, Command, Completion, FdpEventKind, Payload, ReadPattern, ReportFilter, SourceRange, Status, ZoneAction,
    ZoneState, ZonedDevice,
};
use zonelab_sim::{Nanos, TIME_NS_MAX};

/// Longest trace line accepted, so a corrupt input cannot exhaust memory.
const LINE_BYTES_MAX: usize = 1 << 20;

/// Why a trace run stopped.
#[derive(Debug)]
pub enum TraceError {
    /// A line that is not a valid command; `line` counts from 1.
    Malformed {
        /// Line number in the trace, from 1.
        line: usize,
        /// What is wrong with the line.
        message: LineError,
    },
    /// Reading the trace or writing the results failed.
    Io(std::io::Error),
}

impl std::fmt::Display for TraceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TraceError::Malformed { line, message } => write!(f, "line {line}: {message}"),
            TraceError::Io(e) => write!(f, "{e}"),
        }
    }
}
impl std::error::Error for TraceError {}

/// What is wrong with one trace line. `key` names the JSON field; `got` is
/// the value found there, printed as JSON. Each message says what is valid.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// The line's bytes are not UTF-8.
    #[error("not valid UTF-8")]
    NotUtf8,
    /// The line exceeds the reader's bound.
    #[error("line longer than {} bytes", LINE_BYTES_MAX)]
    TooLong,
    /// The command's submission time (plus a wait) is past [`TIME_NS_MAX`].
    #[error("the command would run past the simulation horizon of {} ns", TIME_NS_MAX)]
    PastHorizon,
    /// The line does not parse as JSON.
    #[error("not valid JSON: {0}")]
    NotJson(serde_json::Error),
    /// The line is JSON but not an object.
    #[error("a command must be a JSON object")]
    NotAnObject,
    /// A required field is absent.
    #[error("missing \"{key}\"")]
    Missing {
        /// The field.
        key: &'static str,
    },
    /// Zone management without `slba` and without `select_all`.
    #[error("missing \"slba\" (required unless \"select_all\" is true)")]
    MissingSlba,
    /// A field that must be a non-negative integer.
    #[error("\"{key}\" must be a non-negative integer, got {got}")]
    NotUnsigned {
        /// The field.
        key: &'static str,
        /// The value found.
        got: Value,
    },
    /// A 32-bit field (`nlb`, `nsid`, `max`) given a larger number.
    #[error("\"{key}\" = {value} is larger than 2^32-1")]
    TooLargeU32 {
        /// The field.
        key: &'static str,
        /// The number found.
        value: u64,
    },
    /// A field that must be a boolean.
    #[error("\"{key}\" must be true or false, got {got}")]
    NotBool {
        /// The field.
        key: &'static str,
        /// The value found.
        got: Value,
    },
    /// A field that must be a string.
    #[error("\"{key}\" must be a string, got {got}")]
    NotString {
        /// The field.
        key: &'static str,
        /// The value found.
        got: Value,
    },
    /// An `op` the trace format does not have.
    #[error("unknown op \"{name}\"; valid: {}", OPS)]
    UnknownOp {
        /// The op as written.
        name: String,
    },
    /// A field the op does not take.
    #[error("unknown field \"{field}\" for op \"{op}\"; valid: {}", valid.join(", "))]
    UnknownField {
        /// The field as written.
        field: String,
        /// The op of the line.
        op: String,
        /// Every field the op takes, common ones included.
        valid: Vec<&'static str>,
    },
    /// `set_zone_state` to a state the command cannot set.
    #[error("\"state\" must be read_only or offline, got \"{state}\"")]
    BadState {
        /// The state as written.
        state: String,
    },
    /// A `pattern` that is not a byte.
    #[error("\"pattern\" must be a byte (0-255), got {value}")]
    NotByte {
        /// The number found.
        value: u64,
    },
    /// ZRWA Allocate on an action other than Open.
    #[error("\"zrwaa\" (ZRWA Allocate) applies to \"action\":\"open\" only")]
    ZrwaaNotOpen,
    /// A zone management `action` the command does not have.
    #[error("\"action\" must be open, close, finish, reset, offline or flush_zrwa, got \"{action}\"")]
    BadAction {
        /// The action as written.
        action: String,
    },
    /// A zone report `filter` that is not a reporting option.
    #[error("\"filter\" must be all, empty, implicitly_opened, explicitly_opened, closed, full, read_only or offline, got \"{filter}\"")]
    BadFilter {
        /// The filter as written.
        filter: String,
    },
    /// A list field that is not a JSON array.
    #[error("\"{key}\" must be an array, got {got}")]
    NotArray {
        /// The field.
        key: &'static str,
        /// The value found.
        got: Value,
    },
    /// A list longer than the bound (2^16 entries).
    #[error("\"{key}\" has {len} entries; at most {}", LIST_LEN_MAX)]
    ListTooLong {
        /// The field.
        key: &'static str,
        /// Entries in the list.
        len: usize,
    },
    /// An LBA list entry that is not a non-negative integer.
    #[error("\"{key}\" must hold non-negative integers, got {got}")]
    NotLba {
        /// The field.
        key: &'static str,
        /// The entry found.
        got: Value,
    },
    /// A copy range that is not `[slba, nlb]` with a 32-bit `nlb`.
    #[error("\"{key}\" must hold [slba, nlb] pairs, got {got}")]
    NotRange {
        /// The field.
        key: &'static str,
        /// The entry found.
        got: Value,
    },
    /// A `valid` entry of tl_open that is not an offset or an in-zone `[start, end)` run.
    #[error("\"valid\" must hold block offsets or [start, end) pairs below {zone_blocks}, got {got}")]
    BadValidEntry {
        /// Writable blocks of the zone (its capacity).
        zone_blocks: u64,
        /// The entry found.
        got: Value,
    },
    /// create_ns with a `command_set` that is not one.
    #[error("\"command_set\" must be zoned or nvm, got \"{got}\"")]
    BadCommandSet {
        /// The command set as written.
        got: String,
    },
    /// create_ns with an `nsid`: the device picks it.
    #[error("create_ns takes no \"nsid\": the device picks the lowest free one and the result gives it")]
    NsidOfCreate,
    /// A placement identifier (`pid`) that does not fit in 16 bits.
    #[error("\"{key}\" = {value} is not a placement identifier (0-65535)")]
    NotPid {
        /// The field.
        key: &'static str,
        /// The value found.
        value: Value,
    },
    /// `ruh_update` with an empty `pids`.
    #[error("\"pids\" must name at least one placement identifier")]
    NoPids,
    /// `fdp_events` with a `kinds` entry that is not an FDP event kind.
    #[error("\"kinds\" must hold ru_not_fully_written, invalid_placement_identifier or media_reallocated, got {got}")]
    BadEventKind {
        /// The entry found.
        got: Value,
    },
    /// tl_open on a namespace whose zones are larger than its bitmap covers.
    #[error("tl_open supports zones of at most {} blocks; this one has {zone_blocks}", TL_ZONE_BLOCKS_MAX)]
    ZoneTooLargeForTl {
        /// Writable blocks of the zone.
        zone_blocks: u64,
    },
}

impl From<std::io::Error> for TraceError {
    fn from(e: std::io::Error) -> Self {
        TraceError::Io(e)
    }
}

/// What a trace run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TraceSummary {
    /// Commands run.
    pub commands: u64,
    /// Commands whose status was not success.
    pub errors: u64,
    /// Simulated time when the last command completed.
    pub end_ns: Nanos,
}

/// One parsed trace line.
#[derive(Debug, Clone, PartialEq)]
enum Op {
    Identify,
    Write {
        slba: u64,
        nlb: u32,
        fua: bool,
        /// FDP placement identifier (the Data Placement directive's DSPEC).
        pid: Option<u16>,
    },
    WriteZeroes {
        slba: u64,
        nlb: u32,
    },
    Append {
        zslba: u64,
        nlb: u32,
        fua: bool,
    },
    Flush,
    /// Power fails at the op's submission time and comes back.
    PowerCut,
    Read {
        slba: u64,
        nlb: u32,
    },
    ZoneMgmt {
        action: ZoneAction,
        slba: u64,
        select_all: bool,
    },
    Report {
        slba: u64,
        filter: ReportFilter,
        max_zones: u32,
        partial: bool,
    },
    SetZoneState {
        slba: u64,
        state: ZoneState,
    },
    Wait {
        ns: u64,
    },
    ZoneCompaction {
        src: Vec<u64>,
        dst: Vec<u64>,
    },
    SimpleCopy {
        ranges: Vec<SourceRange>,
        sdlba: u64,
    },
    TlOpen {
        zslba: u64,
        valid: Vec<u64>,
    },
    IdentifyMapping,
    /// Namespace Management: create (its NSID in the result).
    CreateNs(NamespaceRequest),
    /// Namespace Management: delete `nsid` (4294967295: every namespace).
    DeleteNs,
    /// Namespace Attachment: attach (true) or detach `nsid`.
    AttachNs(bool),
    /// I/O Management Receive: Reclaim Unit Handle Status.
    RuhStatus,
    /// I/O Management Send: Reclaim Unit Handle Update of these identifiers.
    RuhUpdate(Vec<u16>),
    /// Set Features, FDP Events: enable or disable `kinds` on the handle `pid` names.
    FdpEvents {
        pid: u16,
        kinds: Vec<FdpEventKind>,
        enable: bool,
    },
    /// Get Log Page: every FDP log (configuration, statistics, usage, events).
    FdpLogs,
}

#[derive(Debug, Clone, PartialEq)]
struct Line {
    op: Op,
    name: String,
    id: Option<Value>,
    at_ns: Option<Nanos>,
    is_async: bool,
    pattern: Option<u8>,
    /// The namespace the command goes to (default 1).
    nsid: u32,
}

struct Fields<'a> {
    obj: &'a Map<String, Value>,
}

impl Fields<'_> {
    fn u64(&self, key: &'static str) -> Result<Option<u64>, LineError> {
        match self.obj.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| LineError::NotUnsigned { key, got: v.clone() }),
        }
    }
    fn req_u64(&self, key: &'static str) -> Result<u64, LineError> {
        self.u64(key)?.ok_or(LineError::Missing { key })
    }
    fn req_u32(&self, key: &'static str) -> Result<u32, LineError> {
        let v = self.req_u64(key)?;
        u32::try_from(v).map_err(|_| LineError::TooLargeU32 { key, value: v })
    }
    fn bool(&self, key: &'static str) -> Result<Option<bool>, LineError> {
        match self.obj.get(key) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| LineError::NotBool { key, got: v.clone() }),
        }
    }
    fn str(&self, key: &'static str) -> Result<Option<&str>, LineError> {
        match self.obj.get(key) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| LineError::NotString { key, got: v.clone() }),
        }
    }
}

const COMMON_KEYS: [&str; 6] = ["op", "id", "at_ns", "async", "pattern", "nsid"];

fn op_keys(op: &str) -> Option<&'static [&'static str]> {
    Some(match op {
        "identify" => &[],
        "write" => &["slba", "nlb", "fua", "pid"],
        "write_zeroes" | "read" => &["slba", "nlb"],
        "append" => &["zslba", "nlb", "fua"],
        "flush" | "power_cut" => &[],
        "zone_mgmt" => &["action", "slba", "select_all", "zrwaa"],
        "report_zones" => &["slba", "filter", "max", "partial"],
        "set_zone_state" => &["slba", "state"],
        "wait" => &["ns"],
        "zone_compaction" => &["src", "dst"],
        "simple_copy" => &["ranges", "sdlba"],
        "tl_open" => &["zslba", "valid"],
        "identify_mapping" => &[],
        "create_ns" => &["nsze", "ncap", "lba_bytes", "command_set"],
        "delete_ns" | "attach_ns" | "detach_ns" => &[],
        "ruh_status" | "fdp_logs" => &[],
        "ruh_update" => &["pids"],
        "fdp_events" => &["pid", "kinds", "enable"],
        _ => return None,
    })
}

const OPS: &str = "identify, write, write_zeroes, append, read, flush, zone_mgmt, report_zones, set_zone_state, \
                   wait, power_cut, zone_compaction, simple_copy, tl_open, identify_mapping, create_ns, delete_ns, \
                   attach_ns, detach_ns, ruh_status, ruh_update, fdp_events, fdp_logs";

/// Largest zone capacity a tl_open bitmap may cover (the device's limit too).
const TL_ZONE_BLOCKS_MAX: u64 = zonelab_device::znsplus::TL_ZONE_BLOCKS_MAX;

/// Most entries a list field may hold (LBA lists, ranges, valid offsets).
const LIST_LEN_MAX: usize = 1 << 16;

/// A JSON array of at most [`LIST_LEN_MAX`] entries.
fn list<'v>(v: &'v Value, key: &'static str) -> Result<&'v Vec<Value>, LineError> {
    let items = v.as_array().ok_or_else(|| LineError::NotArray { key, got: v.clone() })?;
    if items.len() > LIST_LEN_MAX {
        return Err(LineError::ListTooLong { key, len: items.len() });
    }
    Ok(items)
}

impl Fields<'_> {
    fn lba_list(&self, key: &'static str) -> Result<Vec<u64>, LineError> {
        let v = self.obj.get(key).ok_or(LineError::Missing { key })?;
        list(v, key)?.iter().map(|x| x.as_u64().ok_or_else(|| LineError::NotLba { key, got: x.clone() })).collect()
    }

    /// `[[slba, nlb], ...]`.
    fn ranges(&self, key: &'static str) -> Result<Vec<SourceRange>, LineError> {
        let v = self.obj.get(key).ok_or(LineError::Missing { key })?;
        let bad = |x: &Value| LineError::NotRange { key, got: x.clone() };
        list(v, key)?
            .iter()
            .map(|x| match x.as_array().map(Vec::as_slice) {
                Some([slba, nlb]) => {
                    let slba = slba.as_u64().ok_or_else(|| bad(x))?;
                    let nlb = nlb.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| bad(x))?;
                    Ok(SourceRange { slba, nlb })
                }
                _ => Err(bad(x)),
            })
            .collect()
    }
}

/// The valid bitmap of tl_open: a list of valid block offsets from the zone
/// start, each an offset or a `[start, end)` pair. Offsets past the zone's
/// blocks are refused here (the device checks them against the write pointer).
///
/// The runs are sorted and merged before they are set a word at a time, so a
/// line costs O(n log n) for its n entries plus one pass over the zone's
/// bitmap (at most 2^18 words), however long or overlapping its runs.
fn valid_bitmap(v: &Value, zone_blocks: u64) -> Result<Vec<u64>, LineError> {
    let bad = |x: &Value| LineError::BadValidEntry { zone_blocks, got: x.clone() };
    if zone_blocks > TL_ZONE_BLOCKS_MAX {
        return Err(LineError::ZoneTooLargeForTl { zone_blocks });
    }
    let mut runs = Vec::new();
    for x in list(v, "valid")? {
        let (start, end) = match (x.as_u64(), x.as_array().map(Vec::as_slice)) {
            (Some(o), _) => (o, o.saturating_add(1)),
            (None, Some([a, b])) => (a.as_u64().ok_or_else(|| bad(x))?, b.as_u64().ok_or_else(|| bad(x))?),
            _ => return Err(bad(x)),
        };
        if start >= end || end > zone_blocks {
            return Err(bad(x));
        }
        runs.push((start, end));
    }
    runs.sort_unstable();
    let mut words = vec![0u64; zone_blocks.div_ceil(64) as usize];
    let mut covered = 0;
    for (start, end) in runs {
        let start = start.max(covered);
        if start < end {
            set_bits(&mut words, start, end);
            covered = end;
        }
    }
    Ok(words)
}

/// Sets bits `[start, end)` of `words` (`start < end`), whole words at a time.
fn set_bits(words: &mut [u64], start: u64, end: u64) {
    let mask = |from: u64, to: u64| (u64::MAX >> (64 - (to - from))) << from;
    let (first, last) = ((start / 64) as usize, ((end - 1) / 64) as usize);
    if first == last {
        words[first] |= mask(start % 64, (end - 1) % 64 + 1);
        return;
    }
    words[first] |= mask(start % 64, 64);
    words[first + 1..last].fill(u64::MAX);
    words[last] |= mask(0, (end - 1) % 64 + 1);
}

/// `geometry(nsid)`: the zones and the zone capacity of namespace `nsid`.
fn parse_line(text: &str, geometry: &dyn Fn(u32) -> (u32, u64)) -> Result<Line, LineError> {
    let value: Value = serde_json::from_str(text).map_err(LineError::NotJson)?;
    let obj = value.as_object().ok_or(LineError::NotAnObject)?;
    let f = Fields { obj };
    let nsid = match f.u64("nsid")? {
        None => 1,
        Some(n) => u32::try_from(n).map_err(|_| LineError::TooLargeU32 { key: "nsid", value: n })?,
    };
    let (nr_zones, nr_zone_blocks) = geometry(nsid);
    let name = f.str("op")?.ok_or(LineError::Missing { key: "op" })?.to_string();
    let keys = op_keys(&name).ok_or_else(|| LineError::UnknownOp { name: name.clone() })?;
    if let Some(k) = obj.keys().find(|k| !keys.contains(&k.as_str()) && !COMMON_KEYS.contains(&k.as_str())) {
        let valid = [keys, &COMMON_KEYS[1..]].concat();
        return Err(LineError::UnknownField { field: k.clone(), op: name, valid });
    }
    let op = match name.as_str() {
        "identify" => Op::Identify,
        "write" => parse_write(&f)?,
        "write_zeroes" => Op::WriteZeroes { slba: f.req_u64("slba")?, nlb: f.req_u32("nlb")? },
        "read" => Op::Read { slba: f.req_u64("slba")?, nlb: f.req_u32("nlb")? },
        "append" => {
            Op::Append { zslba: f.req_u64("zslba")?, nlb: f.req_u32("nlb")?, fua: f.bool("fua")?.unwrap_or(false) }
        }
        "flush" => Op::Flush,
        "power_cut" => Op::PowerCut,
        "zone_mgmt" => parse_zone_mgmt(&f)?,
        "report_zones" => parse_report(&f, nr_zones)?,
        "set_zone_state" => {
            let state = f.str("state")?.ok_or(LineError::Missing { key: "state" })?;
            let state = match state {
                "read_only" => ZoneState::ReadOnly,
                "offline" => ZoneState::Offline,
                _ => return Err(LineError::BadState { state: state.to_string() }),
            };
            Op::SetZoneState { slba: f.req_u64("slba")?, state }
        }
        "wait" => Op::Wait { ns: f.req_u64("ns")? },
        "zone_compaction" => Op::ZoneCompaction { src: f.lba_list("src")?, dst: f.lba_list("dst")? },
        "simple_copy" => Op::SimpleCopy { ranges: f.ranges("ranges")?, sdlba: f.req_u64("sdlba")? },
        "tl_open" => {
            let zslba = f.req_u64("zslba")?;
            let valid = match f.obj.get("valid") {
                None => Vec::new(),
                Some(v) => valid_bitmap(v, nr_zone_blocks)?,
            };
            Op::TlOpen { zslba, valid }
        }
        "identify_mapping" => Op::IdentifyMapping,
        "create_ns" | "delete_ns" | "attach_ns" | "detach_ns" => parse_namespace_op(&name, &f)?,
        "ruh_status" | "ruh_update" | "fdp_events" | "fdp_logs" => parse_fdp_op(&name, &f)?,
        _ => unreachable!("op_keys accepted it"),
    };
    let pattern = match f.u64("pattern")? {
        None => None,
        Some(p) => Some(u8::try_from(p).map_err(|_| LineError::NotByte { value: p })?),
    };
    Ok(Line {
        op,
        name,
        id: obj.get("id").cloned(),
        at_ns: f.u64("at_ns")?,
        is_async: f.bool("async")?.unwrap_or(false),
        pattern,
        nsid,
    })
}

/// `write`: `slba`, `nlb`, `fua` and the placement identifier `pid`.
fn parse_write(f: &Fields<'_>) -> Result<Op, LineError> {
    Ok(Op::Write {
        slba: f.req_u64("slba")?,
        nlb: f.req_u32("nlb")?,
        fua: f.bool("fua")?.unwrap_or(false),
        pid: f.obj.get("pid").map(|v| pid(v, "pid")).transpose()?,
    })
}

/// A placement identifier: an integer 0-65535.
fn pid(v: &Value, key: &'static str) -> Result<u16, LineError> {
    v.as_u64().and_then(|p| u16::try_from(p).ok()).ok_or_else(|| LineError::NotPid { key, value: v.clone() })
}

/// The FDP ops: `ruh_status`, `ruh_update` (`pids`, at least one),
/// `fdp_events` (`pid`, `kinds`, `enable` true unless given) and `fdp_logs`.
fn parse_fdp_op(name: &str, f: &Fields<'_>) -> Result<Op, LineError> {
    Ok(match name {
        "ruh_status" => Op::RuhStatus,
        "fdp_logs" => Op::FdpLogs,
        "ruh_update" => {
            let v = f.obj.get("pids").ok_or(LineError::Missing { key: "pids" })?;
            let pids = list(v, "pids")?.iter().map(|p| pid(p, "pids")).collect::<Result<Vec<u16>, _>>()?;
            if pids.is_empty() {
                return Err(LineError::NoPids);
            }
            Op::RuhUpdate(pids)
        }
        _ => {
            let handle = pid(f.obj.get("pid").ok_or(LineError::Missing { key: "pid" })?, "pid")?;
            let v = f.obj.get("kinds").ok_or(LineError::Missing { key: "kinds" })?;
            let kind = |k: &Value| {
                let named = FdpEventKind::ALL.into_iter().find(|kind| k.as_str() == Some(kind.name()));
                named.ok_or_else(|| LineError::BadEventKind { got: k.clone() })
            };
            let kinds = list(v, "kinds")?.iter().map(kind).collect::<Result<Vec<_>, _>>()?;
            Op::FdpEvents { pid: handle, kinds, enable: f.bool("enable")?.unwrap_or(true) }
        }
    })
}

/// Namespace Management and Attachment: `create_ns` takes no `nsid` (the
/// device picks it), the others need one.
fn parse_namespace_op(name: &str, f: &Fields<'_>) -> Result<Op, LineError> {
    let has_nsid = f.obj.contains_key("nsid");
    Ok(match name {
        "create_ns" if has_nsid => return Err(LineError::NsidOfCreate),
        "create_ns" => Op::CreateNs(parse_create_ns(f)?),
        _ if !has_nsid => return Err(LineError::Missing { key: "nsid" }),
        "delete_ns" => Op::DeleteNs,
        "attach_ns" => Op::AttachNs(true),
        _ => Op::AttachNs(false),
    })
}

/// `create_ns`: `nsze` LBAs (required), `ncap` (NSZE if absent),
/// `lba_bytes` (4096 if absent; the device answers invalid_format for
/// another than 512 or 4096) and `command_set` ("zoned" if absent, or "nvm").
fn parse_create_ns(f: &Fields<'_>) -> Result<NamespaceRequest, LineError> {
    let nsze = f.req_u64("nsze")?;
    let lba_bytes = match f.u64("lba_bytes")? {
        None => 4096,
        Some(v) => u32::try_from(v).map_err(|_| LineError::TooLargeU32 { key: "lba_bytes", value: v })?,
    };
    let command_set = match f.str("command_set")?.unwrap_or("zoned") {
        "zoned" => CommandSet::Zoned,
        "nvm" => CommandSet::Nvm,
        other => return Err(LineError::BadCommandSet { got: other.to_string() }),
    };
    Ok(NamespaceRequest { nsze, ncap: f.u64("ncap")?.unwrap_or(nsze), lba_bytes, command_set })
}

fn parse_zone_mgmt(f: &Fields<'_>) -> Result<Op, LineError> {
    let action = f.str("action")?.ok_or(LineError::Missing { key: "action" })?;
    let action = ZoneAction::parse(action).ok_or_else(|| LineError::BadAction { action: action.to_string() })?;
    // ZRWA Allocate (TP 4076) is a flag of Open, as in the command.
    let action = match (action, f.bool("zrwaa")?.unwrap_or(false)) {
        (ZoneAction::Open, true) => ZoneAction::OpenZrwa,
        (_, true) => return Err(LineError::ZrwaaNotOpen),
        (action, false) => action,
    };
    let select_all = f.bool("select_all")?.unwrap_or(false);
    let slba = match f.u64("slba")? {
        Some(s) => s,
        None if select_all => 0,
        None => return Err(LineError::MissingSlba),
    };
    Ok(Op::ZoneMgmt { action, slba, select_all })
}

fn parse_report(f: &Fields<'_>, nr_zones: u32) -> Result<Op, LineError> {
    let filter = match f.str("filter")?.unwrap_or("all") {
        "all" => ReportFilter::All,
        s => match ZoneState::parse(s) {
            Some(state) if state != ZoneState::NotWritePointer => ReportFilter::State(state),
            _ => return Err(LineError::BadFilter { filter: s.to_string() }),
        },
    };
    let max_zones = match f.u64("max")? {
        None => nr_zones,
        Some(m) => u32::try_from(m).map_err(|_| LineError::TooLargeU32 { key: "max", value: m })?,
    };
    Ok(Op::Report {
        slba: f.u64("slba")?.unwrap_or(0),
        filter,
        max_zones,
        partial: f.bool("partial")?.unwrap_or(false),
    })
}

/// Runs the trace in `input` on `device`, writing one result per command to
/// `out`. Stops at the first malformed line, after writing the results of the
/// lines before it.
pub fn run_trace<D: ZonedDevice + ?Sized, R: BufRead, W: Write>(
    device: &mut D,
    input: R,
    out: W,
) -> Result<TraceSummary, TraceError> {
    run_trace_from(device, input, out, 0)
}

/// [`run_trace`] with the trace's clock starting at `start_ns` instead of 0:
/// for a device whose clock has already moved (one loaded from an image), as
/// the device takes commands in submission order.
pub fn run_trace_from<D: ZonedDevice + ?Sized, R: BufRead, W: Write>(
    device: &mut D,
    mut input: R,
    mut out: W,
    start_ns: Nanos,
) -> Result<TraceSummary, TraceError> {
    let mut summary = TraceSummary { end_ns: start_ns, ..TraceSummary::default() };
    let mut now_ns: Nanos = start_ns;
    let mut text = String::new();
    let mut line_no = 0usize;
    loop {
        text.clear();
        let read = std::io::Read::take(&mut input, LINE_BYTES_MAX as u64 + 1).read_line(&mut text);
        let read = match read {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                out.flush()?;
                return Err(TraceError::Malformed { line: line_no + 1, message: LineError::NotUtf8 });
            }
            Err(e) => return Err(e.into()),
        };
        if read == 0 {
            break;
        }
        line_no += 1;
        if text.len() > LINE_BYTES_MAX {
            out.flush()?;
            return Err(TraceError::Malformed { line: line_no, message: LineError::TooLong });
        }
        if text.trim().is_empty() {
            continue;
        }
        // Namespaces come and go (create_ns, delete_ns): each line is parsed
        // with the geometry of the moment. An inactive namespace's commands
        // fail at the device; they are parsed with the first active one's.
        let geometry = |nsid: u32| {
            let first = (1..=device.namespace_count()).find_map(|n| device.layout_in(n));
            device.layout_in(nsid).or(first).map_or((0, 0), |l| (l.zones, l.zcap_lbas))
        };
        let line = match parse_line(text.trim(), &geometry) {
            Ok(l) => l,
            Err(message) => {
                out.flush()?;
                return Err(TraceError::Malformed { line: line_no, message });
            }
        };
        let submit_ns = now_ns.max(line.at_ns.unwrap_or(0));
        let wait_ns = if let Op::Wait { ns } = line.op { ns } else { 0 };
        if submit_ns.saturating_add(wait_ns) > TIME_NS_MAX {
            out.flush()?;
            return Err(TraceError::Malformed { line: line_no, message: LineError::PastHorizon });
        }
        let (result, complete_ns) = execute(device, &line, submit_ns);
        serde_json::to_writer(&mut out, &result).map_err(std::io::Error::from)?;
        out.write_all(b"\n")?;
        summary.commands += 1;
        if result.get("status").and_then(Value::as_str) != Some("success") {
            summary.errors += 1;
        }
        summary.end_ns = summary.end_ns.max(complete_ns);
        now_ns = if line.is_async { submit_ns } else { complete_ns };
    }
    out.flush()?;
    Ok(summary)
}

fn status_fields(map: &mut Map<String, Value>, status: Status) {
    map.insert("status".into(), status.name().into());
    map.insert("sct".into(), status.sct().into());
    map.insert("sc".into(), status.sc().into());
    map.insert("dnr".into(), status.dnr().into());
}

fn execute<D: ZonedDevice + ?Sized>(device: &mut D, line: &Line, submit_ns: Nanos) -> (Map<String, Value>, Nanos) {
    let mut map = Map::new();
    if let Some(id) = &line.id {
        map.insert("id".into(), id.clone());
    }
    map.insert("op".into(), line.name.as_str().into());
    if line.nsid != 1 {
        map.insert("nsid".into(), line.nsid.into());
    }
    let payload = line.pattern.map_or(Payload::None, Payload::Pattern);
    let cmd = match &line.op {
        Op::Identify => Command::Identify,
        &Op::Write { slba, nlb, fua, pid } => Command::Write { slba, nlb, payload, fua, placement: pid },
        &Op::WriteZeroes { slba, nlb } => Command::WriteZeroes { slba, nlb, placement: None },
        &Op::Append { zslba, nlb, fua } => Command::Append { zslba, nlb, payload, fua },
        Op::Flush => Command::Flush,
        Op::PowerCut => {
            let report = device.power_cut(submit_ns);
            status_fields(&mut map, Status::Success);
            map.insert("zones_rolled_back".into(), report.zones_rolled_back.into());
            map.insert("lost_blocks".into(), report.lost_blocks.into());
            times(&mut map, submit_ns, submit_ns);
            return (map, submit_ns);
        }
        &Op::Read { slba, nlb } => Command::Read { slba, nlb },
        &Op::ZoneMgmt { action, slba, select_all } => Command::ZoneMgmtSend { action, slba, select_all },
        &Op::Report { slba, filter, max_zones, partial } => Command::ReportZones { slba, filter, max_zones, partial },
        Op::ZoneCompaction { src, dst } => Command::ZoneCompaction { src, dst },
        Op::SimpleCopy { ranges, sdlba } => Command::SimpleCopy { ranges, sdlba: *sdlba },
        Op::TlOpen { zslba, valid } => Command::TlOpen { zslba: *zslba, valid },
        Op::IdentifyMapping => Command::IdentifyMapping,
        &Op::SetZoneState { slba, state } => {
            let status = device.set_zone_state_in(line.nsid, slba, state).err().unwrap_or(Status::Success);
            status_fields(&mut map, status);
            times(&mut map, submit_ns, submit_ns);
            return (map, submit_ns);
        }
        &Op::Wait { ns } => {
            status_fields(&mut map, Status::Success);
            times(&mut map, submit_ns, submit_ns + ns);
            return (map, submit_ns + ns);
        }
        Op::CreateNs(_) | Op::DeleteNs | Op::AttachNs(_) => return manage(device, line, submit_ns, map),
        Op::RuhStatus => Command::ReclaimUnitHandleStatus,
        Op::RuhUpdate(pids) => Command::ReclaimUnitHandleUpdate { pids },
        Op::FdpEvents { .. } | Op::FdpLogs => return fdp_admin(device, line, submit_ns, map),
    };
    let completion = device.submit_in(line.nsid, submit_ns, &cmd, None);
    status_fields(&mut map, completion.status);
    result_fields(&mut map, &completion);
    times(&mut map, completion.submit_ns, completion.complete_ns);
    (map, completion.complete_ns)
}

/// Namespace Management and Attachment: the status (the device's admin
/// status names), a created namespace's NSID, the controller's time.
fn manage<D: ZonedDevice + ?Sized>(
    device: &mut D,
    line: &Line,
    submit_ns: Nanos,
    mut map: Map<String, Value>,
) -> (Map<String, Value>, Nanos) {
    let op = match line.op {
        Op::CreateNs(request) => NamespaceOp::Create(request),
        Op::DeleteNs => NamespaceOp::Delete(line.nsid),
        Op::AttachNs(true) => NamespaceOp::Attach(line.nsid),
        Op::AttachNs(false) => NamespaceOp::Detach(line.nsid),
        _ => unreachable!("execute sends only the namespace ops here"),
    };
    let (result, complete_ns) = device.manage_namespaces(submit_ns, &op);
    if let (NamespaceOp::Create(_), Ok(nsid)) = (op, &result) {
        map.insert("nsid".into(), (*nsid).into());
    }
    admin_status_fields(&mut map, result.map(drop));
    times(&mut map, submit_ns, complete_ns);
    (map, complete_ns)
}

/// Set Features (FDP events) and Get Log Page (the FDP logs): admin
/// commands the model answers at once; a namespace without FDP answers
/// `fdp_disabled`.
fn fdp_admin<D: ZonedDevice + ?Sized>(
    device: &mut D,
    line: &Line,
    submit_ns: Nanos,
    mut map: Map<String, Value>,
) -> (Map<String, Value>, Nanos) {
    match &line.op {
        Op::FdpEvents { pid, kinds, enable } => {
            let status = device.set_fdp_events_in(line.nsid, *pid, kinds, *enable).err().unwrap_or(Status::Success);
            status_fields(&mut map, status);
        }
        _ => match device.fdp_logs_in(line.nsid) {
            Some(logs) => {
                status_fields(&mut map, Status::Success);
                map.extend(logs_json(&logs).as_object().expect("an object").clone());
            }
            None => status_fields(&mut map, Status::FdpDisabled),
        },
    }
    times(&mut map, submit_ns, submit_ns);
    (map, submit_ns)
}

fn admin_status_fields(map: &mut Map<String, Value>, result: Result<(), AdminError>) {
    let Err(e) = result else { return status_fields(map, Status::Success) };
    map.insert("status".into(), e.status.name().into());
    map.insert("sct".into(), e.status.sct().into());
    map.insert("sc".into(), e.status.sc().into());
    map.insert("dnr".into(), true.into());
    if !e.detail.is_empty() {
        map.insert("detail".into(), e.detail.into());
    }
}

fn times(map: &mut Map<String, Value>, submit_ns: Nanos, complete_ns: Nanos) {
    map.insert("submit_ns".into(), submit_ns.into());
    map.insert("complete_ns".into(), complete_ns.into());
    map.insert("latency_ns".into(), (complete_ns - submit_ns).into());
}

fn result_fields(map: &mut Map<String, Value>, completion: &Completion) {
    match &completion.result {
        CmdResult::None => {}
        CmdResult::Lba(lba) => {
            map.insert("lba".into(), (*lba).into());
        }
        CmdResult::Read(pattern) => {
            let v = match pattern {
                ReadPattern::Uniform(b) => Value::from(*b),
                ReadPattern::Mixed => Value::from("mixed"),
            };
            map.insert("pattern".into(), v);
        }
        CmdResult::Identify(id) => {
            let v = json!({
                "lba_bytes": id.lba_bytes, "nsze": id.nsze, "zsze": id.zsze, "zcap": id.zcap,
                "nr_zones": id.nr_zones, "nr_conventional_zones": id.nr_conventional_zones,
                "mar": id.mar, "mor": id.mor, "zasl_bytes": id.zasl_bytes, "mdts_bytes": id.mdts_bytes,
            });
            map.extend(v.as_object().expect("object literal").clone());
            // Only a namespace with a ZRWA says so: other answers stay as they were.
            if let Some(z) = id.zrwa {
                let zrwa = json!({"zrwas": z.lbas, "zrwafg": z.flush_lbas, "numzrwa": z.resources,
                                  "expflushsup": z.explicit_commit});
                map.insert("zrwa".into(), zrwa);
            }
        }
        CmdResult::Mapping(m) => {
            let v = json!({
                "lbas_per_chunk": m.lbas_per_chunk,
                "chip_id": {"shift": m.chip_id_shift, "bits": m.chip_id_bits},
                "fcg_id": {"shift": m.fcg_id_shift, "bits": m.fcg_id_bits},
            });
            map.extend(v.as_object().expect("object literal").clone());
        }
        CmdResult::Report(report) => {
            map.insert("nr_zones".into(), report.nr_zones.into());
            let zones: Vec<Value> = report
                .zones
                .iter()
                .map(|z| {
                    let mut d = json!({"zslba": z.zslba, "wp": z.wp, "zcap": z.zcap, "zsze": z.zsze,
                           "state": z.state.name(), "type": z.zone_type.name()});
                    if z.zrwa {
                        d["zrwav"] = true.into();
                    }
                    d
                })
                .collect();
            map.insert("zones".into(), zones.into());
        }
        CmdResult::ReclaimUnitHandles(list) => {
            map.insert("handles".into(), handles_json(list));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonelab_device::{preset, Device, DeviceOptions};

    fn device() -> Device {
        let opts = DeviceOptions {
            zones: Some(4),
            zone_size_bytes: Some(1 << 20),
            zone_capacity_bytes: Some(512 << 10),
            data: true,
            ..Default::default()
        };
        Device::new(opts.apply(preset("zn540").unwrap()).unwrap()).unwrap()
    }

    #[test]
    fn a_zrwa_is_opened_written_and_flushed_from_a_trace() {
        let mut config = preset("zn540").unwrap();
        for (path, value) in [
            ("namespace.zrwa.size_bytes", "64k"),
            ("namespace.zrwa.flush_granularity_bytes", "16k"),
            ("namespace.zrwa.resources", "2"),
        ] {
            config = zonelab_device::options::set_parameter(&config, path, value).unwrap();
        }
        let opts = DeviceOptions { zones: Some(4), zone_size_bytes: Some(1 << 20), data: true, ..Default::default() };
        let mut dev = Device::new(opts.apply(config).unwrap()).unwrap();
        let trace = concat!(
            "{\"op\":\"identify\"}\n",
            "{\"op\":\"zone_mgmt\",\"action\":\"open\",\"slba\":0,\"zrwaa\":true}\n",
            "{\"op\":\"write\",\"slba\":4,\"nlb\":4,\"pattern\":9}\n",
            "{\"op\":\"report_zones\",\"max\":2}\n",
            "{\"op\":\"zone_mgmt\",\"action\":\"flush_zrwa\",\"slba\":6}\n",
            "{\"op\":\"zone_mgmt\",\"action\":\"flush_zrwa\",\"slba\":7}\n",
            "{\"op\":\"read\",\"slba\":4,\"nlb\":4}\n",
            "{\"op\":\"report_zones\",\"max\":1}\n",
        );
        let mut out = Vec::new();
        run_trace(&mut dev, trace.as_bytes(), &mut out).unwrap();
        let l: Vec<Value> = String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(l[0]["zrwa"], json!({"zrwas": 16, "zrwafg": 4, "numzrwa": 2, "expflushsup": true}));
        assert_eq!((l[1]["status"].as_str(), l[2]["status"].as_str()), (Some("success"), Some("success")));
        assert_eq!((l[3]["zones"][0]["zrwav"].as_bool(), l[3]["zones"][0]["wp"].as_u64()), (Some(true), Some(0)));
        assert!(l[3]["zones"][1].get("zrwav").is_none(), "shown only on a zone with a ZRWA");
        assert_eq!(l[4]["status"], "invalid_field", "7 LBAs: not a granule");
        assert_eq!((l[5]["status"].as_str(), l[6]["pattern"].as_u64()), (Some("success"), Some(9)));
        assert_eq!(l[7]["zones"][0]["wp"], 8);
    }

    #[test]
    fn nsid_picks_the_namespace_of_a_device_with_several() {
        let opts = DeviceOptions { zones: Some(4), zone_size_bytes: Some(1 << 20), data: true, ..Default::default() };
        let mut config = opts.apply(preset("zn540").unwrap()).unwrap();
        let entry = |zones| zonelab_device::NamespaceEntry { zones: Some(zones), ..Default::default() };
        config.namespaces = vec![entry(2), entry(3)];
        let mut dev = zonelab_device::Namespaces::new(config).unwrap();
        let mut out = Vec::new();
        let trace = concat!(
            "{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"pattern\":7,\"nsid\":2}\n",
            "{\"op\":\"report_zones\",\"nsid\":2}\n",
            "{\"op\":\"report_zones\"}\n",
            "{\"op\":\"read\",\"slba\":0,\"nlb\":8,\"nsid\":2}\n",
            "{\"op\":\"read\",\"slba\":0,\"nlb\":8,\"nsid\":3}\n",
            "{\"op\":\"set_zone_state\",\"slba\":0,\"state\":\"offline\",\"nsid\":5}\n",
        );
        run_trace(&mut dev, trace.as_bytes(), &mut out).unwrap();
        let lines: Vec<Value> =
            String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!((lines[0]["status"].as_str(), lines[0]["nsid"].as_u64()), (Some("success"), Some(2)));
        assert_eq!((lines[1]["nr_zones"].as_u64(), lines[1]["zones"][0]["wp"].as_u64()), (Some(3), Some(8)));
        assert_eq!((lines[2]["nr_zones"].as_u64(), lines[2]["zones"][0]["wp"].as_u64()), (Some(2), Some(0)));
        assert!(lines[2].get("nsid").is_none(), "namespace 1 is the default");
        assert_eq!(lines[3]["pattern"], 7);
        assert_eq!((lines[4]["status"].as_str(), lines[4]["sc"].as_u64()), (Some("invalid_namespace"), Some(11)));
        assert_eq!(lines[5]["status"], "invalid_namespace");
    }

    /// A zn540 of 24 blocks per plane with one `[[namespaces]]` entry of
    /// 4 zones of 64 MiB (48 MiB capacity) that holds them all.
    fn managed() -> zonelab_device::Namespaces {
        let opts = DeviceOptions {
            zones: Some(4),
            zone_size_bytes: Some(64 << 20),
            zone_capacity_bytes: Some(48 << 20),
            data: true,
            ..Default::default()
        };
        let mut config = opts.apply(preset("zn540").unwrap()).unwrap();
        config.flash.blocks_per_plane = 24;
        config.namespaces = vec![zonelab_device::NamespaceEntry::default()];
        zonelab_device::Namespaces::new(config).unwrap()
    }

    fn run_lines(dev: &mut dyn ZonedDevice, trace: &str) -> Vec<Value> {
        let mut out = Vec::new();
        run_trace(dev, trace.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn namespaces_are_created_attached_used_and_deleted() {
        let trace = concat!(
            "{\"op\":\"create_ns\",\"nsze\":16384}\n",
            "{\"op\":\"delete_ns\",\"nsid\":1}\n",
            "{\"op\":\"create_ns\",\"nsze\":8388608,\"lba_bytes\":512,\"command_set\":\"nvm\"}\n",
            "{\"op\":\"create_ns\",\"nsze\":32768}\n",
            "{\"op\":\"write\",\"slba\":800,\"nlb\":8,\"pattern\":5}\n",
            "{\"op\":\"attach_ns\",\"nsid\":1}\n",
            "{\"op\":\"attach_ns\",\"nsid\":2}\n",
            "{\"op\":\"write\",\"slba\":800,\"nlb\":8,\"pattern\":5}\n",
            "{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"pattern\":6,\"nsid\":2}\n",
            "{\"op\":\"read\",\"slba\":800,\"nlb\":8}\n",
            "{\"op\":\"report_zones\",\"nsid\":2}\n",
            "{\"op\":\"detach_ns\",\"nsid\":2}\n",
            "{\"op\":\"detach_ns\",\"nsid\":2}\n",
            "{\"op\":\"create_ns\",\"nsze\":16384,\"lba_bytes\":1024}\n",
            "{\"op\":\"delete_ns\",\"nsid\":4294967295}\n",
        );
        let lines = run_lines(&mut managed(), trace);
        let status = |i: usize| lines[i]["status"].as_str().unwrap().to_string();
        assert_eq!(status(0), "namespace_insufficient_capacity", "NSID 1 holds the drive");
        assert!(lines[0]["detail"].as_str().unwrap().contains("blocks per plane"), "{}", lines[0]);
        assert_eq!(status(1), "success");
        assert_eq!((status(2).as_str(), lines[2]["nsid"].as_u64()), ("success", Some(1)), "NSID 1 reused");
        assert_eq!((status(3).as_str(), lines[3]["nsid"].as_u64()), ("success", Some(2)));
        assert_eq!((status(4).as_str(), lines[4]["sc"].as_u64()), ("invalid_field", Some(2)), "not attached");
        assert_eq!([status(5), status(6), status(7), status(8)], ["success"; 4]);
        assert_eq!((status(9).as_str(), lines[9]["pattern"].as_u64()), ("success", Some(5)), "NVM reads back");
        assert_eq!(lines[10]["nr_zones"].as_u64(), Some(2), "a zoned namespace of two zones");
        assert_eq!((status(11).as_str(), status(12).as_str()), ("success", "namespace_not_attached"));
        assert_eq!((status(13).as_str(), lines[13]["sc"].as_u64()), ("invalid_format", Some(10)));
        assert_eq!(status(14), "success");
        assert!(lines[5]["complete_ns"].as_u64() > lines[5]["submit_ns"].as_u64(), "the controller's time");
    }

    #[test]
    fn namespace_ops_are_checked_and_need_a_device_of_namespaces() {
        let bad = [
            ("{\"op\":\"create_ns\"}", "missing \"nsze\""),
            ("{\"op\":\"create_ns\",\"nsze\":8,\"command_set\":\"kv\"}", "must be zoned or nvm, got \"kv\""),
            ("{\"op\":\"create_ns\",\"nsze\":8,\"nsid\":3}", "create_ns takes no \"nsid\""),
            ("{\"op\":\"delete_ns\"}", "missing \"nsid\""),
            ("{\"op\":\"attach_ns\",\"nsid\":1,\"controllers\":[1]}", "unknown field \"controllers\""),
        ];
        for (text, message) in bad {
            let (_, r) = run(text);
            let e = r.unwrap_err().to_string();
            assert!(e.starts_with("line 1: ") && e.contains(message), "{text}: {e}");
        }
        let lines = run_lines(&mut device(), "{\"op\":\"delete_ns\",\"nsid\":1}\n");
        assert_eq!((lines[0]["status"].as_str(), lines[0]["sc"].as_u64()), (Some("invalid_opcode"), Some(1)));
    }

    fn run(trace: &str) -> (String, Result<TraceSummary, TraceError>) {
        let mut out = Vec::new();
        let r = run_trace(&mut device(), trace.as_bytes(), &mut out);
        (String::from_utf8(out).unwrap(), r)
    }

    #[test]
    fn flush_fua_and_power_cut_follow_the_write_cache() {
        let mut dev = device();
        let mut config = dev.config().clone();
        config.write_buffer.cache = zonelab_device::WriteCache::Volatile;
        dev = Device::new(config).unwrap();
        let trace = concat!(
            "{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"pattern\":1}\n",
            "{\"op\":\"flush\"}\n",
            "{\"op\":\"write\",\"slba\":8,\"nlb\":8,\"pattern\":2}\n",
            "{\"op\":\"write\",\"slba\":256,\"nlb\":4,\"fua\":true}\n",
            "{\"op\":\"power_cut\"}\n",
            "{\"op\":\"report_zones\",\"slba\":0,\"filter\":\"all\",\"max\":2}\n",
        );
        let mut out = Vec::new();
        run_trace(&mut dev, trace.as_bytes(), &mut out).unwrap();
        let lines: Vec<Value> =
            String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[1]["op"], "flush");
        assert_eq!(lines[4]["lost_blocks"], 8, "only the write after the flush is lost");
        assert_eq!(lines[5]["zones"][0]["wp"], 8);
        assert_eq!(lines[5]["zones"][1]["wp"], 260, "the FUA write survives");
        let (_, r) = run("{\"op\":\"flush\",\"slba\":0}\n");
        assert!(matches!(r, Err(TraceError::Malformed { line: 1, .. })));
    }

    #[test]
    fn results_follow_the_contract() {
        let (out, r) = run(concat!(
            "{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"pattern\":7,\"id\":\"w1\"}\n",
            "\n",
            "{\"op\":\"append\",\"zslba\":0,\"nlb\":2}\n",
            "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
            "{\"op\":\"write\",\"slba\":0,\"nlb\":1}\n",
            "{\"op\":\"report_zones\",\"slba\":0,\"filter\":\"implicitly_opened\",\"max\":16,\"partial\":true}\n",
        ));
        assert_eq!(r.unwrap().commands, 5);
        let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[0]["id"], "w1");
        assert_eq!(lines[0]["status"], "success");
        assert_eq!(lines[1]["lba"], 8);
        assert_eq!(lines[2]["pattern"], 7);
        assert_eq!(
            (lines[3]["status"].as_str(), lines[3]["sct"].as_u64(), lines[3]["sc"].as_u64()),
            (Some("zone_invalid_write"), Some(1), Some(188))
        );
        assert_eq!(lines[3]["dnr"], true);
        assert_eq!(lines[4]["nr_zones"], 1);
        assert_eq!(lines[4]["zones"][0]["wp"], 10);
        assert!(out
            .lines()
            .next()
            .unwrap()
            .starts_with("{\"id\":\"w1\",\"op\":\"write\",\"status\":\"success\",\"sct\":0,\"sc\":0,\"dnr\":false"));
    }

    #[test]
    fn commands_wait_for_each_other_unless_async() {
        let (out, _) = run(concat!(
            "{\"op\":\"write\",\"slba\":0,\"nlb\":1}\n",
            "{\"op\":\"write\",\"slba\":1,\"nlb\":1,\"async\":true}\n",
            "{\"op\":\"write\",\"slba\":2,\"nlb\":1}\n",
            "{\"op\":\"wait\",\"ns\":1000000}\n",
            "{\"op\":\"identify\",\"at_ns\":5000000}\n",
        ));
        let l: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let (c0, s1, s2) = (l[0]["complete_ns"].as_u64(), l[1]["submit_ns"].as_u64(), l[2]["submit_ns"].as_u64());
        assert_eq!(c0, s1, "submitted when the previous completed");
        assert_eq!(s1, s2, "an async command does not hold back the next one");
        assert_eq!(l[3]["latency_ns"], 1_000_000);
        assert_eq!(l[4]["submit_ns"], 5_000_000);
    }

    #[test]
    fn malformed_lines_are_located() {
        let cases = [
            ("{\"op\":\"write\",\"slba\":0}", "missing \"nlb\""),
            ("{\"op\":\"fly\"}", "unknown op \"fly\""),
            ("{\"op\":\"write\",\"slba\":-1,\"nlb\":1}", "non-negative integer"),
            ("{\"op\":\"write\",\"slba\":0,\"nlb\":1,\"sbla\":3}", "unknown field \"sbla\""),
            ("{\"op\":\"zone_mgmt\",\"action\":\"explode\",\"slba\":0}", "\"action\" must be"),
            (
                "{\"op\":\"zone_mgmt\",\"action\":\"close\",\"slba\":0,\"zrwaa\":true}",
                "applies to \"action\":\"open\" only",
            ),
            ("[1,2]", "JSON object"),
            ("{\"op\":\"write\"", "not valid JSON"),
            ("{\"op\":\"write\",\"slba\":0,\"nlb\":1,\"pattern\":300}", "byte"),
            ("{\"op\":\"report_zones\",\"filter\":\"opened\"}", "\"filter\" must be"),
            ("{\"op\":\"identify\",\"at_ns\":18446744073709551615}", "horizon"),
            ("{\"op\":\"wait\",\"ns\":18446744073709551615}", "horizon"),
        ];
        let znsplus_cases = [
            ("{\"op\":\"zone_compaction\",\"src\":[0]}", "missing \"dst\""),
            ("{\"op\":\"zone_compaction\",\"src\":[-1],\"dst\":[0]}", "non-negative integers"),
            ("{\"op\":\"zone_compaction\",\"src\":5,\"dst\":[0]}", "must be an array"),
            ("{\"op\":\"simple_copy\",\"ranges\":[[0]],\"sdlba\":0}", "[slba, nlb] pairs"),
            ("{\"op\":\"simple_copy\",\"ranges\":[[0,4294967296]],\"sdlba\":0}", "[slba, nlb] pairs"),
            ("{\"op\":\"tl_open\",\"zslba\":0,\"valid\":[[3,2]]}", "[start, end) pairs"),
            ("{\"op\":\"tl_open\",\"zslba\":0,\"valid\":[1000000]}", "below"),
            ("{\"op\":\"tl_open\",\"valid\":[]}", "missing \"zslba\""),
        ];
        for (bad, needle) in cases.into_iter().chain(znsplus_cases) {
            let trace = format!("{{\"op\":\"identify\"}}\n{bad}\n{{\"op\":\"identify\"}}\n");
            let (out, r) = run(&trace);
            assert_eq!(out.lines().count(), 1, "results before the bad line only: {bad}");
            match r {
                Err(TraceError::Malformed { line: 2, message }) => {
                    assert!(message.to_string().contains(needle), "{bad}: {message}")
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn znsplus_commands_in_traces() {
        let (out, r) = run(concat!(
            "{\"op\":\"write\",\"slba\":0,\"nlb\":16,\"pattern\":7}\n",
            "{\"op\":\"identify_mapping\"}\n",
            "{\"op\":\"zone_compaction\",\"src\":[0,1,2],\"dst\":[256,258,259],\"async\":true}\n",
            "{\"op\":\"read\",\"slba\":256,\"nlb\":4}\n",
            "{\"op\":\"simple_copy\",\"ranges\":[[0,2],[8,2]],\"sdlba\":512}\n",
            "{\"op\":\"simple_copy\",\"ranges\":[[0,2]],\"sdlba\":520}\n",
            "{\"op\":\"tl_open\",\"zslba\":0,\"valid\":[0,[4,8]]}\n",
            "{\"op\":\"write\",\"slba\":1,\"nlb\":3,\"pattern\":9}\n",
            "{\"op\":\"read\",\"slba\":0,\"nlb\":1}\n",
            "{\"op\":\"report_zones\",\"slba\":0,\"max\":1}\n",
        ));
        assert_eq!(r.unwrap().errors, 1);
        let l: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(l[1]["chip_id"]["bits"], 4, "16 dies per zone");
        assert_eq!(l[1]["lbas_per_chunk"], 4);
        assert_eq!(l[2]["status"], "success");
        assert!(l[3]["complete_ns"].as_u64() >= l[2]["complete_ns"].as_u64(), "the read waits for the copy");
        assert_eq!(l[3]["pattern"], "mixed", "copied blocks and a zero hole");
        assert_eq!(l[4]["status"], "success");
        assert_eq!((l[5]["status"].as_str(), l[5]["sc"].as_u64()), (Some("zone_invalid_write"), Some(0xBC)));
        assert_eq!(l[8]["pattern"], 7, "valid block 0 plugged");
        assert_eq!(l[9]["zones"][0]["wp"], 4, "PPA-ordered plugging (the default) leaves it at the write's end");
    }

    /// A 26 KB line of whole-zone runs once took minutes (each run was set
    /// bit by bit); merged runs set a word at a time take milliseconds.
    #[test]
    fn tl_open_runs_are_not_expanded_bit_by_bit() {
        let zone = TL_ZONE_BLOCKS_MAX;
        let runs: Vec<Value> = (0..4000).map(|i| json!([i % 7, zone - i % 5])).collect();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(valid_bitmap(&Value::Array(runs), zone)));
        let words = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("parsed in bounded time").unwrap();
        assert_eq!(words.len() as u64, zone / 64);
        assert!(words.iter().all(|&w| w == u64::MAX), "[0, zone) is covered");
    }

    proptest::proptest! {
        #[test]
        fn valid_bitmap_sets_exactly_the_runs(
            runs in proptest::collection::vec((0u64..300, 1u64..140), 0..12),
        ) {
            let runs: Vec<(u64, u64)> = runs.into_iter().map(|(s, n)| (s, (s + n).min(300))).collect();
            let v = Value::Array(runs.iter().map(|&(s, e)| json!([s, e])).collect());
            let words = valid_bitmap(&v, 300).unwrap();
            for o in 0..320u64 {
                let want = runs.iter().any(|&(s, e)| (s..e).contains(&o));
                proptest::prop_assert_eq!(words[(o / 64) as usize] >> (o % 64) & 1 == 1, want, "offset {}", o);
            }
        }
    }

    /// The zn540-fdp's scale model: 100 MiB over 144 MiB of flash, 2 handles.
    fn fdp_device() -> Device {
        Device::new(zonelab_device::fdp_scale_model()).unwrap()
    }

    #[test]
    fn fdp_ops_place_writes_update_handles_and_read_the_logs() {
        let mut dev = fdp_device();
        let lines = run_lines(
            &mut dev,
            concat!(
                "{\"op\":\"ruh_status\"}\n",
                "{\"op\":\"fdp_events\",\"pid\":1,\"kinds\":[\"ru_not_fully_written\"]}\n",
                "{\"op\":\"write\",\"slba\":0,\"nlb\":16,\"pid\":1}\n",
                "{\"op\":\"write\",\"slba\":16,\"nlb\":12}\n",
                "{\"op\":\"ruh_status\"}\n",
                "{\"op\":\"ruh_update\",\"pids\":[1]}\n",
                "{\"op\":\"ruh_update\",\"pids\":[0,2]}\n",
                "{\"op\":\"fdp_events\",\"pid\":5,\"kinds\":[]}\n",
                "{\"op\":\"fdp_logs\"}\n",
            ),
        );
        let ruamw = |l: &Value| l["handles"].as_array().unwrap().iter().map(|h| h["ruamw"].clone()).collect::<Vec<_>>();
        assert_eq!(ruamw(&lines[0]), [768, 768], "a reclaim unit: a 768 KiB block on each of 4 dies");
        assert_eq!(lines[1]["status"], "success");
        assert_eq!(ruamw(&lines[4]), [768 - 12, 768 - 16], "pid 1's write on handle 1, the other on 0");
        assert_eq!(lines[5]["status"], "success");
        assert_eq!(lines[6]["status"], "invalid_placement_handle_list");
        assert_eq!(lines[7]["status"], "invalid_field");
        let logs = &lines[8];
        assert_eq!(logs["stats"]["host_bytes"], 28 * 4096);
        assert_eq!(logs["config"]["handles"], 2);
        assert_eq!(logs["usage"][1]["events"], json!(["ru_not_fully_written"]));
        let event = &logs["host_events"][0];
        assert_eq!((event["kind"].as_str(), event["pid"].as_u64()), (Some("ru_not_fully_written"), Some(1)));
        assert_eq!(lines[8]["latency_ns"], 0, "the model answers admin commands at once");
        // Without FDP: the I/O management commands and the logs answer fdp_disabled.
        let plain = run_lines(&mut device(), "{\"op\":\"ruh_status\"}\n{\"op\":\"fdp_logs\"}\n");
        assert_eq!(
            (plain[0]["status"].as_str(), plain[1]["status"].as_str()),
            (Some("fdp_disabled"), Some("fdp_disabled"))
        );
    }

    #[test]
    fn bad_fdp_fields_name_the_field_and_what_is_valid() {
        let cases = [
            (
                "{\"op\":\"write\",\"slba\":0,\"nlb\":1,\"pid\":65536}",
                "\"pid\" = 65536 is not a placement identifier (0-65535)",
            ),
            ("{\"op\":\"write\",\"slba\":0,\"nlb\":1,\"pid\":\"1\"}", "\"pid\" = \"1\" is not a placement"),
            ("{\"op\":\"ruh_update\"}", "missing \"pids\""),
            ("{\"op\":\"ruh_update\",\"pids\":[]}", "at least one placement identifier"),
            ("{\"op\":\"ruh_update\",\"pids\":[1,-2]}", "\"pids\" = -2 is not a placement"),
            ("{\"op\":\"ruh_update\",\"pids\":3}", "\"pids\" must be an array"),
            ("{\"op\":\"fdp_events\",\"kinds\":[]}", "missing \"pid\""),
            ("{\"op\":\"fdp_events\",\"pid\":0}", "missing \"kinds\""),
            ("{\"op\":\"fdp_events\",\"pid\":0,\"kinds\":[\"gc\"]}", "\"kinds\" must hold ru_not_fully_written"),
            ("{\"op\":\"fdp_events\",\"pid\":0,\"kinds\":[],\"enable\":1}", "\"enable\" must be true or false"),
            ("{\"op\":\"fdp_logs\",\"pid\":0}", "unknown field \"pid\" for op \"fdp_logs\""),
            ("{\"op\":\"append\",\"zslba\":0,\"nlb\":1,\"pid\":0}", "unknown field \"pid\" for op \"append\""),
        ];
        for (line, want) in cases {
            let (_, r) = run(&format!("{{\"op\":\"identify\"}}\n{line}\n"));
            match r {
                Err(TraceError::Malformed { line: 2, message }) => {
                    assert!(message.to_string().contains(want), "{line}: {message}")
                }
                other => panic!("{line}: {other:?}"),
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_input_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let mut out = Vec::new();
            let _ = run_trace(&mut device(), &bytes[..], &mut out);
        }

        #[test]
        fn command_sequences_never_panic(
            cmds in proptest::collection::vec((0usize..17, proptest::prelude::any::<u64>(), 0u64..300, 0usize..5, proptest::prelude::any::<bool>()), 1..40),
        ) {
            // Valid lines with arbitrary values, so that they reach the device.
            let actions = ["open", "close", "finish", "reset", "offline"];
            let mut trace = String::new();
            for (op, a, n, act, flag) in cmds {
                let slba = if flag { a % 1100 } else { a };
                let line = match op {
                    0 => format!("{{\"op\":\"write\",\"slba\":{slba},\"nlb\":{n},\"pattern\":{}}}", n % 256),
                    1 => format!("{{\"op\":\"write_zeroes\",\"slba\":{slba},\"nlb\":{n}}}"),
                    2 => format!("{{\"op\":\"append\",\"zslba\":{},\"nlb\":{n},\"async\":{flag}}}", (a % 5) * 256),
                    3 => format!("{{\"op\":\"read\",\"slba\":{slba},\"nlb\":{n}}}"),
                    4 => format!("{{\"op\":\"zone_mgmt\",\"action\":\"{}\",\"slba\":{},\"select_all\":{flag}}}", actions[act], (a % 5) * 256),
                    5 => format!("{{\"op\":\"report_zones\",\"slba\":{slba},\"max\":{n},\"partial\":{flag}}}"),
                    6 => format!("{{\"op\":\"set_zone_state\",\"slba\":{},\"state\":\"read_only\"}}", (a % 5) * 256),
                    7 => format!("{{\"op\":\"wait\",\"ns\":{}}}", if flag { a >> (n % 64) } else { n }),
                    9 => format!("{{\"op\":\"zone_compaction\",\"src\":[{},{}],\"dst\":[{slba},{}]}}", a % 1100, n, slba + n % 3 + 1),
                    10 => format!("{{\"op\":\"simple_copy\",\"ranges\":[[{},{}]],\"sdlba\":{slba}}}", a % 1100, n % 20),
                    11 => format!("{{\"op\":\"tl_open\",\"zslba\":{},\"valid\":[[0,{}]],\"async\":{flag}}}", (a % 5) * 256, n % 128 + 1),
                    12 => "{\"op\":\"identify_mapping\"}".to_string(),
                    13 => format!("{{\"op\":\"write\",\"slba\":{slba},\"nlb\":{n},\"pid\":{}}}", a % 65536),
                    14 => format!("{{\"op\":\"ruh_update\",\"pids\":[{},{}]}}", a % 65536, n),
                    15 => format!("{{\"op\":\"fdp_events\",\"pid\":{},\"kinds\":[\"media_reallocated\"],\"enable\":{flag}}}", n),
                    16 => ["{\"op\":\"ruh_status\"}", "{\"op\":\"fdp_logs\"}"][act % 2].to_string(),
                    _ => format!("{{\"op\":\"identify\",\"at_ns\":{}}}", if flag { a >> (n % 64) } else { a % 1_000_000_000 }),
                };
                trace.push_str(&line);
                trace.push('\n');
            }
            let mut out = Vec::new();
            let r = run_trace(&mut device(), trace.as_bytes(), &mut out);
            // The only line these can be refused for is one past the horizon.
            let past_horizon = matches!(&r, Err(TraceError::Malformed { message, .. }) if message.to_string().contains("horizon"));
            proptest::prop_assert!(r.is_ok() || past_horizon, "{r:?}");
            // The same lines on an FDP namespace, where placement and the FDP ops take effect.
            let r = run_trace(&mut fdp_device(), trace.as_bytes(), &mut Vec::new());
            let past_horizon = matches!(&r, Err(TraceError::Malformed { message, .. }) if message.to_string().contains("horizon"));
            proptest::prop_assert!(r.is_ok() || past_horizon, "{r:?}");
        }
    }
}
