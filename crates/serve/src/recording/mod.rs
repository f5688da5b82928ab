//! `serve --record FILE`: every command a host sent to the device model,
//! with when it arrived, when the model ran it and what it depended on, so
//! that `zonelab replay` can send the same command stream to a device in
//! virtual time (docs/nvme-tcp.md, "Recording and replay").
//!
//! The format is text, one command a line, versioned by its first line:
//!
//! ```text
//! zonelab recording 1
//! # comments: what served it, the columns
//! SEQ AT_NS VT_NS VC_NS QUEUE NSID DEP OUT STATUS RESULT OP ARGS...
//! ```
//!
//! SEQ numbers the commands from 1 in the order the model ran them; AT_NS
//! is the server's wall clock when the command was complete at the target
//! (its capsule, and its data when fetched by R2T), VT_NS and VC_NS its
//! submission and completion in the model's simulated time (the server's
//! clock: ns since it started); QUEUE is `CNTLID.QID` over NVMe/TCP and
//! `0.Q` over ublk; DEP is the SEQ of the last command of the same queue
//! whose completion had been sent to the host when this one arrived (`-`:
//! none), OUT the queue's commands outstanding then; STATUS the model's
//! status name, RESULT an append's LBA (`-` otherwise). OP and ARGS are in
//! [`Op`]. So `cut -d' ' -f6,11-` of two recordings compares the command
//! streams they carry.

pub mod replay;
mod writer;

pub use writer::{Arrival, QueueId, Recorder, RECORD_BYTES_MAX_DEFAULT};

use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;
#[cfg(test)]
use zonelab_device::Completion;
use zonelab_device::{Command, Payload, ReportFilter, SourceRange, Status, ZoneAction, ZoneState};
use zonelab_sim::Nanos;

/// The first line of a recording of this format.
pub const HEADER: &str = "zonelab recording 1";
/// Largest recording read (256 MiB, as fio's logs).
pub const RECORDING_BYTES_MAX: u64 = 256 << 20;
/// Latest time a recording may name: a replay stays within the model's
/// horizon (`TIME_NS_MAX`, 2^62 ns) with room for the commands' own time.
pub const TIME_NS_LAST: Nanos = zonelab_sim::TIME_NS_MAX / 4;
/// Most commands one replay holds.
pub const RECORDS_MAX: usize = 8 << 20;
/// Most LBAs or words one command's list may carry (copy ranges,
/// compaction pairs, a TL_open bitmap): MDTS bounds them far below this.
const LIST_MAX: usize = 1 << 20;

/// A command as the model ran it, owning its lists (no data: a recording
/// keeps the command stream, not the bytes). The fields are those of the
/// [`Command`] variants of the same names.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Op {
    /// Identify (never sent by the transports; kept for completeness).
    Identify,
    /// `read SLBA NLB`.
    Read { slba: u64, nlb: u32 },
    /// `write SLBA NLB [fua] [pid=PID]`: PID, the FDP placement identifier.
    Write { slba: u64, nlb: u32, fua: bool, placement: Option<u16> },
    /// `write_zeroes SLBA NLB [pid=PID]`.
    WriteZeroes { slba: u64, nlb: u32, placement: Option<u16> },
    /// `append ZSLBA NLB [fua]`: the LBA it wrote is the record's RESULT.
    Append { zslba: u64, nlb: u32, fua: bool },
    /// `flush`.
    Flush,
    /// `zone ACTION SLBA [all]`: Zone Management Send.
    Zone { action: ZoneAction, slba: u64, all: bool },
    /// `report SLBA MAX_ZONES FILTER [partial]`: FILTER is `all` or a state name.
    Report { slba: u64, max_zones: u32, filter: ReportFilter, partial: bool },
    /// `copy SDLBA SLBA:NLB...`: Simple Copy.
    Copy { sdlba: u64, ranges: Vec<SourceRange> },
    /// `compaction SRC:DST...`: ZNS+ zone_compaction.
    Compaction { src: Vec<u64>, dst: Vec<u64> },
    /// `tl_open ZSLBA WORD...`: ZNS+ TL_open, the bitmap in hex words.
    TlOpen { zslba: u64, valid: Vec<u64> },
    /// `identify_mapping`: ZNS+.
    IdentifyMapping,
    /// `ruh_status`: FDP Reclaim Unit Handle Status.
    RuhStatus,
    /// `ruh_update PID...`: FDP Reclaim Unit Handle Update.
    RuhUpdate { pids: Vec<u16> },
}

impl Op {
    /// The command `cmd`, without its data.
    pub fn of(cmd: &Command<'_>) -> Op {
        match *cmd {
            Command::Identify => Op::Identify,
            Command::Read { slba, nlb } => Op::Read { slba, nlb },
            Command::Write { slba, nlb, fua, placement, .. } => Op::Write { slba, nlb, fua, placement },
            Command::WriteZeroes { slba, nlb, placement } => Op::WriteZeroes { slba, nlb, placement },
            Command::Append { zslba, nlb, fua, .. } => Op::Append { zslba, nlb, fua },
            Command::Flush => Op::Flush,
            Command::ZoneMgmtSend { action, slba, select_all } => Op::Zone { action, slba, all: select_all },
            Command::ReportZones { slba, filter, max_zones, partial } => {
                Op::Report { slba, max_zones, filter, partial }
            }
            Command::SimpleCopy { ranges, sdlba } => Op::Copy { sdlba, ranges: ranges.to_vec() },
            Command::ZoneCompaction { src, dst } => Op::Compaction { src: src.to_vec(), dst: dst.to_vec() },
            Command::TlOpen { zslba, valid } => Op::TlOpen { zslba, valid: valid.to_vec() },
            Command::IdentifyMapping => Op::IdentifyMapping,
            Command::ReclaimUnitHandleStatus => Op::RuhStatus,
            Command::ReclaimUnitHandleUpdate { pids } => Op::RuhUpdate { pids: pids.to_vec() },
        }
    }

    /// The command to send again; writes carry `payload` (the recording
    /// has no data).
    pub fn command(&self, payload: Payload<'static>) -> Command<'_> {
        match self {
            Op::Identify => Command::Identify,
            &Op::Read { slba, nlb } => Command::Read { slba, nlb },
            &Op::Write { slba, nlb, fua, placement } => Command::Write { slba, nlb, payload, fua, placement },
            &Op::WriteZeroes { slba, nlb, placement } => Command::WriteZeroes { slba, nlb, placement },
            &Op::Append { zslba, nlb, fua } => Command::Append { zslba, nlb, payload, fua },
            Op::Flush => Command::Flush,
            &Op::Zone { action, slba, all } => Command::ZoneMgmtSend { action, slba, select_all: all },
            &Op::Report { slba, max_zones, filter, partial } => {
                Command::ReportZones { slba, filter, max_zones, partial }
            }
            Op::Copy { sdlba, ranges } => Command::SimpleCopy { ranges, sdlba: *sdlba },
            Op::Compaction { src, dst } => Command::ZoneCompaction { src, dst },
            Op::TlOpen { zslba, valid } => Command::TlOpen { zslba: *zslba, valid },
            Op::IdentifyMapping => Command::IdentifyMapping,
            Op::RuhStatus => Command::ReclaimUnitHandleStatus,
            Op::RuhUpdate { pids } => Command::ReclaimUnitHandleUpdate { pids },
        }
    }

    /// Its name, the line's OP field.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Identify => "identify",
            Op::Read { .. } => "read",
            Op::Write { .. } => "write",
            Op::WriteZeroes { .. } => "write_zeroes",
            Op::Append { .. } => "append",
            Op::Flush => "flush",
            Op::Zone { .. } => "zone",
            Op::Report { .. } => "report",
            Op::Copy { .. } => "copy",
            Op::Compaction { .. } => "compaction",
            Op::TlOpen { .. } => "tl_open",
            Op::IdentifyMapping => "identify_mapping",
            Op::RuhStatus => "ruh_status",
            Op::RuhUpdate { .. } => "ruh_update",
        }
    }

    /// OP and ARGS as a line carries them.
    fn write_to(&self, out: &mut String) {
        out.push_str(self.name());
        let flag = |out: &mut String, on: bool, name: &str| {
            if on {
                let _ = write!(out, " {name}");
            }
        };
        match self {
            Op::Identify | Op::Flush | Op::IdentifyMapping | Op::RuhStatus => {}
            Op::Read { slba, nlb } => {
                let _ = write!(out, " {slba} {nlb}");
            }
            Op::Write { slba, nlb, fua, placement } => {
                let _ = write!(out, " {slba} {nlb}");
                flag(out, *fua, "fua");
                if let Some(pid) = placement {
                    let _ = write!(out, " pid={pid}");
                }
            }
            Op::WriteZeroes { slba, nlb, placement } => {
                let _ = write!(out, " {slba} {nlb}");
                if let Some(pid) = placement {
                    let _ = write!(out, " pid={pid}");
                }
            }
            Op::Append { zslba, nlb, fua } => {
                let _ = write!(out, " {zslba} {nlb}");
                flag(out, *fua, "fua");
            }
            Op::RuhUpdate { pids } => {
                for pid in pids {
                    let _ = write!(out, " {pid}");
                }
            }
            Op::Zone { action, slba, all } => {
                let _ = write!(out, " {} {slba}", action.name());
                flag(out, *all, "all");
            }
            Op::Report { slba, max_zones, filter, partial } => {
                let filter = match filter {
                    ReportFilter::All => "all",
                    ReportFilter::State(state) => state.name(),
                };
                let _ = write!(out, " {slba} {max_zones} {filter}");
                flag(out, *partial, "partial");
            }
            Op::Copy { sdlba, ranges } => {
                let _ = write!(out, " {sdlba}");
                for r in ranges {
                    let _ = write!(out, " {}:{}", r.slba, r.nlb);
                }
            }
            Op::Compaction { src, dst } => {
                for (s, d) in src.iter().zip(dst) {
                    let _ = write!(out, " {s}:{d}");
                }
            }
            Op::TlOpen { zslba, valid } => {
                let _ = write!(out, " {zslba}");
                for word in valid {
                    let _ = write!(out, " {word:016x}");
                }
            }
        }
    }
}

/// One line of a recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// From 1, in the order the model ran the commands.
    pub seq: u64,
    /// Server wall clock at arrival, ns since it started.
    pub at_ns: Nanos,
    /// Simulated submission time (the server's clock).
    pub vt_ns: Nanos,
    /// Simulated completion time.
    pub vc_ns: Nanos,
    /// The transport queue it came on.
    pub queue: QueueId,
    /// The namespace.
    pub nsid: u32,
    /// The last command of the queue whose completion the host had been
    /// sent when this one arrived.
    pub dep: Option<u64>,
    /// Commands of the queue outstanding at its arrival.
    pub outstanding: u32,
    /// The model's status.
    pub status: Status,
    /// The LBA an append wrote.
    pub result_lba: Option<u64>,
    /// The command.
    pub op: Op,
}

impl Record {
    /// The line (without its newline).
    pub fn to_line(&self) -> String {
        let mut out = String::with_capacity(96);
        let dep = self.dep.map_or("-".to_string(), |d| d.to_string());
        let result = self.result_lba.map_or("-".to_string(), |l| l.to_string());
        let _ = write!(
            out,
            "{} {} {} {} {} {} {dep} {} {} {result} ",
            self.seq, self.at_ns, self.vt_ns, self.vc_ns, self.queue, self.nsid, self.outstanding, self.status
        );
        self.op.write_to(&mut out);
        out
    }
}

/// A recording that cannot be replayed: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordingError {
    /// The recording's path as given.
    pub path: String,
    /// The line at fault, from 1 (0: the file as a whole).
    pub line: usize,
    /// The field at fault (empty: the line or the file).
    pub field: &'static str,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl std::fmt::Display for RecordingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.line, self.field) {
            (0, _) => write!(f, "{}: {}", self.path, self.message),
            (line, "") => write!(f, "{}:{line}: {}", self.path, self.message),
            (line, field) => write!(f, "{}:{line}: field '{field}': {}", self.path, self.message),
        }
    }
}

impl std::error::Error for RecordingError {}

/// Whether `bytes` begin like a recording (`zonelab replay` tells formats apart so).
pub fn is_recording(bytes: &[u8]) -> bool {
    bytes.starts_with(b"zonelab recording ")
}

/// Reads and parses the recording at `path` (at most [`RECORDING_BYTES_MAX`]).
pub fn read(path: &str) -> Result<Vec<Record>, RecordingError> {
    let error = |message: String| RecordingError { path: path.to_string(), line: 0, field: "", message };
    let file = zonelab_sim::input::open_input(Path::new(path)).map_err(|e| error(e.to_string()))?;
    let mut bytes = Vec::new();
    file.take(RECORDING_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(|e| error(e.to_string()))?;
    if bytes.len() as u64 > RECORDING_BYTES_MAX {
        return Err(error(format!("larger than {RECORDING_BYTES_MAX} bytes, the most read as a recording")));
    }
    let text = String::from_utf8(bytes).map_err(|_| error("not UTF-8 text: not a zonelab recording".into()))?;
    parse(path, &text)
}

/// Parses a recording's text; `path` only names it in errors. Every line
/// is checked: numbers, names, SEQ increasing, DEP an earlier command of the
/// same queue, completion no earlier than submission.
pub fn parse(path: &str, text: &str) -> Result<Vec<Record>, RecordingError> {
    let error = |line: usize, field: &'static str, message: String| RecordingError {
        path: path.to_string(),
        line,
        field,
        message,
    };
    let mut lines = text.lines().enumerate();
    let header = lines.next().map_or("", |(_, l)| l.trim_end());
    if header != HEADER {
        let shown: String = header.chars().take(60).collect();
        return Err(error(1, "", format!("the first line is '{shown}', expected '{HEADER}'")));
    }
    let mut records: Vec<Record> = Vec::new();
    let mut queue_of = std::collections::BTreeMap::new();
    for (index, raw) in lines {
        let number = index + 1;
        let raw = raw.trim();
        if raw.is_empty() || raw.starts_with('#') {
            continue;
        }
        if records.len() >= RECORDS_MAX {
            return Err(error(number, "", format!("more than {RECORDS_MAX} commands, the most one replay holds")));
        }
        let record = parse_line(raw).map_err(|(field, m)| error(number, field, m))?;
        if records.last().is_some_and(|last| record.seq <= last.seq) {
            return Err(error(number, "seq", format!("{} does not follow the line before's", record.seq)));
        }
        if let Some((field, _)) = [("at_ns", record.at_ns), ("vt_ns", record.vt_ns), ("vc_ns", record.vc_ns)]
            .into_iter()
            .find(|&(_, t)| t > TIME_NS_LAST)
        {
            return Err(error(number, field, format!("past {TIME_NS_LAST} ns, the last time a replay simulates")));
        }
        if record.vc_ns < record.vt_ns {
            return Err(error(number, "vc_ns", "earlier than vt_ns: a command completes after it starts".into()));
        }
        if let Some(dep) = record.dep {
            if queue_of.get(&dep) != Some(&record.queue) {
                let message = format!("{dep} is no earlier command of queue {}", record.queue);
                return Err(error(number, "dep", message));
            }
        }
        queue_of.insert(record.seq, record.queue);
        records.push(record);
    }
    Ok(records)
}

type FieldError = (&'static str, String);
/// A line's fields, words separated by blanks.
type Tokens<'a> = std::iter::Peekable<std::str::SplitAsciiWhitespace<'a>>;

fn number<T: std::str::FromStr>(field: &'static str, token: Option<&str>) -> Result<T, FieldError> {
    let token = token.ok_or((field, "missing".to_string()))?;
    token.parse().map_err(|_| (field, format!("'{}' is not a number of its range", shorten(token))))
}

fn shorten(token: &str) -> String {
    token.chars().take(40).collect()
}

fn parse_line(line: &str) -> Result<Record, FieldError> {
    let mut t = line.split_ascii_whitespace().peekable();
    let seq = number("seq", t.next())?;
    let (at_ns, vt_ns, vc_ns) = (number("at_ns", t.next())?, number("vt_ns", t.next())?, number("vc_ns", t.next())?);
    let queue = t.next().ok_or(("queue", "missing".to_string()))?;
    let queue = QueueId::parse(queue).ok_or(("queue", format!("'{}' is not CNTLID.QID", shorten(queue))))?;
    let nsid = number("nsid", t.next())?;
    let dep = match t.next() {
        Some("-") => None,
        token => Some(number("dep", token)?),
    };
    let outstanding = number("out", t.next())?;
    let status = t.next().ok_or(("status", "missing".to_string()))?;
    let status = Status::ALL
        .into_iter()
        .find(|s| s.name() == status)
        .ok_or(("status", format!("'{}' is not a status name (success, zone_is_full, ...)", shorten(status))))?;
    let result_lba = match t.next() {
        Some("-") => None,
        token => Some(number("result", token)?),
    };
    let op = parse_op(&mut t)?;
    if let Some(extra) = t.next() {
        return Err(("args", format!("'{}' after the command's arguments", shorten(extra))));
    }
    Ok(Record { seq, at_ns, vt_ns, vc_ns, queue, nsid, dep, outstanding, status, result_lba, op })
}

/// Reads a trailing flag word, if it is `name`.
fn flag(t: &mut Tokens<'_>, name: &str) -> bool {
    t.next_if_eq(&name).is_some()
}

fn nlb(token: Option<&str>) -> Result<u32, FieldError> {
    let nlb: u32 = number("nlb", token)?;
    if nlb == 0 {
        return Err(("nlb", "0: a command moves at least one block".into()));
    }
    Ok(nlb)
}

/// A write's optional last word, `pid=N` (its FDP placement identifier);
/// `expected` says what else may stand there.
fn placement(t: &mut Tokens<'_>, expected: &str) -> Result<Option<u16>, FieldError> {
    let Some(word) = t.next() else { return Ok(None) };
    let pid = word.strip_prefix("pid=").ok_or(("pid", format!("'{}': {expected}", shorten(word))))?;
    number("pid", Some(pid)).map(Some)
}

fn parse_op(t: &mut Tokens<'_>) -> Result<Op, FieldError> {
    let name = t.next().ok_or(("op", "missing".to_string()))?;
    Ok(match name {
        "identify" => Op::Identify,
        "identify_mapping" => Op::IdentifyMapping,
        "flush" => Op::Flush,
        "read" => Op::Read { slba: number("slba", t.next())?, nlb: nlb(t.next())? },
        "write_zeroes" => {
            let (slba, nlb) = (number("slba", t.next())?, nlb(t.next())?);
            Op::WriteZeroes { slba, nlb, placement: placement(t, "write_zeroes's last word is pid=N")? }
        }
        "write" => {
            let (slba, nlb, fua) = (number("slba", t.next())?, nlb(t.next())?, flag(t, "fua"));
            Op::Write { slba, nlb, fua, placement: placement(t, "a write's last word is fua or pid=N")? }
        }
        "ruh_status" => Op::RuhStatus,
        "ruh_update" => {
            let mut pids = Vec::new();
            for word in t.by_ref() {
                if pids.len() == usize::from(u16::MAX) {
                    return Err(("pid", "more placement identifiers than a command carries".into()));
                }
                pids.push(number("pid", Some(word))?);
            }
            if pids.is_empty() {
                return Err(("pid", "ruh_update names at least one placement identifier".into()));
            }
            Op::RuhUpdate { pids }
        }
        "append" => Op::Append { zslba: number("zslba", t.next())?, nlb: nlb(t.next())?, fua: flag(t, "fua") },
        "zone" => {
            let action = t.next().ok_or(("action", "missing".to_string()))?;
            let action = ZoneAction::parse(action).ok_or((
                "action",
                format!("'{}': use open, close, finish, reset, offline, open_zrwa or flush_zrwa", shorten(action)),
            ))?;
            Op::Zone { action, slba: number("slba", t.next())?, all: flag(t, "all") }
        }
        "report" => {
            let (slba, max_zones) = (number("slba", t.next())?, number("max_zones", t.next())?);
            let filter = match t.next().ok_or(("filter", "missing".to_string()))? {
                "all" => ReportFilter::All,
                name => ReportFilter::State(
                    ZoneState::parse(name)
                        .ok_or(("filter", format!("'{}' is neither all nor a zone state", shorten(name))))?,
                ),
            };
            Op::Report { slba, max_zones, filter, partial: flag(t, "partial") }
        }
        "copy" => {
            let sdlba = number("sdlba", t.next())?;
            let ranges = pairs::<u32>("range", t)?;
            if ranges.iter().any(|&(_, n)| n == 0) {
                return Err(("range", "a range of 0 blocks".into()));
            }
            Op::Copy { sdlba, ranges: ranges.into_iter().map(|(slba, nlb)| SourceRange { slba, nlb }).collect() }
        }
        "compaction" => {
            let (src, dst) = pairs::<u64>("pair", t)?.into_iter().unzip();
            Op::Compaction { src, dst }
        }
        "tl_open" => {
            let zslba = number("zslba", t.next())?;
            let mut valid = Vec::new();
            for word in t.by_ref().take(LIST_MAX + 1) {
                valid.push(
                    u64::from_str_radix(word, 16)
                        .map_err(|_| ("bitmap", format!("'{}' is no hex word", shorten(word))))?,
                );
            }
            if valid.is_empty() || valid.len() > LIST_MAX {
                return Err(("bitmap", format!("1 to {LIST_MAX} words")));
            }
            Op::TlOpen { zslba, valid }
        }
        other => {
            let valid = "read, write, append, write_zeroes, flush, zone, report, copy, compaction, tl_open, identify, \
                         identify_mapping";
            return Err(("op", format!("'{}' is not a command ({valid})", shorten(other))));
        }
    })
}

/// The rest of the line as `A:B` tokens (at least one).
fn pairs<T: std::str::FromStr>(field: &'static str, t: &mut Tokens<'_>) -> Result<Vec<(u64, T)>, FieldError> {
    let mut out = Vec::new();
    for token in t.take(LIST_MAX + 1) {
        let (a, b) = token.split_once(':').ok_or((field, format!("'{}' is not A:B", shorten(token))))?;
        out.push((number(field, Some(a))?, number(field, Some(b))?));
    }
    if out.is_empty() || out.len() > LIST_MAX {
        return Err((field, format!("1 to {LIST_MAX} of them")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
