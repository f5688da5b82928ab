//! From a row to the run that measured it: a fio job file for fio-measured
//! rows, a command sequence for the custom SPDK programs of seed 000, or
//! the reason the row cannot be run yet.

use super::background::{self, IoOp, Job, Mgmt, Throttle};
use super::rows::{Metric, Op, Row, Stack};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use zonelab_workload::fio::job::{DDIR_READ, DDIR_TRIM, DDIR_WRITE};

/// How fast a job runs, in units that compare exactly (runs are keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Pace {
    /// As fast as it goes.
    Free,
    /// Hundredths of a percent of the job's standalone maximum.
    IntensityCentiPct(u32),
    /// Thousandths of an operation per second.
    MilliPerS(u64),
}

impl From<Throttle> for Pace {
    fn from(t: Throttle) -> Self {
        match t {
            Throttle::Unthrottled => Pace::Free,
            Throttle::Intensity(p) => Pace::IntensityCentiPct((p * 100.0).round() as u32),
            Throttle::PerSecond(r) => Pace::MilliPerS((r * 1000.0).round() as u64),
        }
    }
}

/// What a fio job of a run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Work {
    /// `jobs` fio jobs, each in zones of its own (writes) or over one pre-filled range (reads);
    /// random writes spread over `zones` zones (0: the default range);
    /// `overwrite`: the written zones are full first (fio resets each before writing it again).
    Io {
        /// What it does.
        op: IoOp,
        /// Block size in bytes.
        bs: u64,
        /// Queue depth of each job.
        qd: u32,
        /// Jobs (fio's numjobs).
        jobs: u32,
        /// Zones random writes spread over (0: the default range).
        zones: u32,
        /// Whether the zones are full first.
        overwrite: bool,
    },
    /// `jobs` management jobs at QD 1.
    Mgmt {
        /// Which management command.
        kind: Mgmt,
        /// Jobs at QD 1.
        jobs: u32,
    },
}

/// One fio job of a run: its work and its pace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FioJob {
    /// What it does.
    pub work: Work,
    /// How fast.
    pub pace: Pace,
}

/// A fio run: the measured job and the one beside it. Its `Debug` seeds
/// it; a run on the zoned namespace shows no `namespace` (seeds of older runs stay).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FioRun {
    /// The LBA format the namespace is formatted with (512 or 4096).
    pub lba_bytes: u32,
    /// Engine and block-layer scheduler.
    pub stack: Stack,
    /// ZINC in place of mq-deadline (on mq-deadline stacks), with its settings.
    pub zinc: Option<background::ZincSettings>,
    /// The measured job.
    pub main: FioJob,
    /// The job beside it.
    pub other: Option<FioJob>,
    /// The machine whose stack costs the run uses.
    pub host: Host,
    /// The namespace the jobs run on.
    #[serde(default, skip_serializing_if = "NamespaceKind::is_zoned")]
    pub namespace: NamespaceKind,
}

impl std::fmt::Debug for FioRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = f.debug_struct("FioRun");
        s.field("lba_bytes", &self.lba_bytes)
            .field("stack", &self.stack)
            .field("zinc", &self.zinc)
            .field("main", &self.main)
            .field("other", &self.other)
            .field("host", &self.host);
        if !self.namespace.is_zoned() {
            s.field("namespace", &self.namespace);
        }
        s.finish()
    }
}

/// Which of the drive's namespaces a run uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum NamespaceKind {
    /// The zoned namespace (every source but seed 001's conventional rows).
    #[default]
    Zoned,
    /// Seed 001's conventional namespace beside it: 4 GiB of the NVM
    /// command set that the drive's own FTL maps.
    Conventional,
}

impl NamespaceKind {
    /// Whether this is the zoned namespace.
    pub fn is_zoned(&self) -> bool {
        *self == NamespaceKind::Zoned
    }
}

/// The host machine that measured a row: stacks cost what they cost there
/// (`HostConfig::machine`; docs/measurements.md lists which source ran where).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Host {
    /// Seed 000's machine, and the default for sources not listed.
    #[default]
    Seed000,
    /// The ConfZNS++ hardware runs (seed 003).
    Seed003,
    /// The ZNS-Study runs.
    ZnsStudy,
}

impl Host {
    /// The host of a measurement source.
    pub fn of_source(source: &str) -> Self {
        match source {
            "ConfZNS++" => Host::Seed003,
            "ZNS-Study" => Host::ZnsStudy,
            _ => Host::Seed000,
        }
    }
    /// The name `HostConfig::machine` and `zonelab run --host-machine` take.
    pub fn name(self) -> &'static str {
        match self {
            Host::Seed000 => "seed000",
            Host::Seed003 => "seed003",
            Host::ZnsStudy => "zns-study",
        }
    }
}

/// Zone occupancy before a timed management command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Occupancy {
    /// This many LBAs.
    Lbas(u64),
    /// Hundredths of a percent of the zone capacity.
    CentiPct(u32),
    /// All but one LBA of the capacity.
    AllButOne,
}

/// Seed 000's custom SPDK programs, as command sequences on the device.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DeviceRun {
    /// Fig 5: open a zone (unless `opened` is false: a never-opened empty
    /// zone), fill it, rest 1 s, time `op` (reset, finish, or finish then
    /// rest then time the reset).
    Occupancy {
        /// The timed command.
        op: Op,
        /// How full the zone is first.
        occupancy: Occupancy,
        /// Whether the zone was opened (else never-opened and empty).
        opened: bool,
    },
    /// QD-1 `op` in one zone (random reads in a full one), steady state.
    Qd1 {
        /// What it does.
        op: IoOp,
        /// Block size in bytes.
        bs: u64,
    },
    /// Explicit open, then close, of empty zones; both timed.
    OpenClose,
    /// Zones opened (explicitly, or implicitly by the write), written 4 KiB,
    /// then closed; the closes timed.
    CloseWritten {
        /// Whether the write opened the zone.
        implicit: bool,
    },
    /// The first QD-1 `op` of `bs` into empty zones, one zone after another
    /// (each opens its zone implicitly).
    FirstIo {
        /// Write or append.
        op: IoOp,
        /// Block size in bytes.
        bs: u64,
    },
    /// Fig 7: resets of full zones back to back beside QD-1 4 KiB `io`
    /// (none, read, write, append); lists: resets, I/Os.
    ResetBeside {
        /// The I/O beside the resets.
        io: BesideIo,
    },
}

/// A run that measures rows: an fio job file or a command sequence. Its `Debug` seeds it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Run {
    /// fio jobs on a block-layer stack.
    Fio(FioRun),
    /// One of seed 000's SPDK programs.
    Device(DeviceRun),
}

/// What runs beside Fig 7's resets: none, read, write or append. Its
/// `Debug` is the name's (run descriptions and seeds are made of `Debug`).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct BesideIo(pub &'static str);

const BESIDE_IO: [&str; 4] = ["none", "read", "write", "append"];

impl std::fmt::Debug for BesideIo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.0, f)
    }
}

impl<'de> Deserialize<'de> for BesideIo {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        let found = BESIDE_IO.into_iter().find(|io| *io == name);
        found
            .map(BesideIo)
            .ok_or_else(|| serde::de::Error::custom(format!("io '{name}': use {}", BESIDE_IO.join(", "))))
    }
}

/// Where a row's number comes from in its run's result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub enum Source {
    /// A direction of the measured fio job; `total` = percentiles of total latency, else of clat.
    FioDir {
        /// fio's direction index (read, write, trim).
        dir: usize,
        /// Total latency (else completion latency).
        total: bool,
    },
    /// The `n`th latency list of a device run.
    List(usize),
}

/// A row's run and where its number is in the result.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The run.
    pub run: Run,
    /// Where the row's number is in it.
    pub source: Source,
}

/// The run that measured `row`, or why zonelab cannot run it yet.
pub fn plan(row: &Row) -> Result<Plan> {
    if row.op == Op::RocksdbZenfs {
        return Err(Error::Unmapped(
            "an application benchmark (RocksDB on ZenFS): zonelab has no application model".into(),
        ));
    }
    let bg = background::parse(&row.background)?;
    // Zone commands a profile's script timed run as seed 000's Fig 5 programs did.
    let custom = timed(row)
        || (row.source == "CLUSTER23" && ["Fig 5", "Open/close", "Fig 7"].iter().any(|f| row.figure.starts_with(f)));
    if custom {
        return device_plan(row, &bg);
    }
    fio_plan(row, &bg)
}

fn io_op(op: Op) -> Option<IoOp> {
    match op {
        Op::Write => Some(IoOp::Write),
        Op::Append => Some(IoOp::Append),
        Op::Read => Some(IoOp::Read),
        Op::Randread => Some(IoOp::RandRead),
        Op::OverwriteSeq => Some(IoOp::Write),
        // All measure fio's zoned random-write emulation (the notes say so).
        Op::Randwrite | Op::Randoverwrite | Op::OverwriteRand => Some(IoOp::RandWrite),
        _ => None,
    }
}

fn fio_plan(row: &Row, bg: &background::Background) -> Result<Plan> {
    let jobs = row.jobs.unwrap_or(1);
    let own_pace = match bg.own {
        Some(Job::Mgmt { throttle, .. }) => Pace::from(throttle),
        _ => Pace::Free,
    };
    let (work, dir) = if let Some(op) = io_op(row.op) {
        let bs = row.bs.ok_or_else(|| Error::Unmapped("an I/O row without 'bs'".into()))?;
        let dir = if matches!(op, IoOp::Read | IoOp::RandRead) { DDIR_READ } else { DDIR_WRITE };
        let zones = if op == IoOp::RandWrite { row.zones.unwrap_or(0) } else { 0 };
        let overwrite = matches!(row.op, Op::OverwriteSeq | Op::OverwriteRand);
        (Work::Io { op, bs, qd: row.qd.unwrap_or(1), jobs, zones, overwrite }, dir)
    } else {
        let kind = match row.op {
            Op::Reset => Mgmt::Reset,
            Op::FinishJob => Mgmt::Finish,
            Op::SoftfinishJob => softfinish_kind(row, bg)?,
            other => {
                return Err(Error::Unmapped(format!(
                    "op {other:?} outside seed 000's custom programs has no fio mapping"
                )))
            }
        };
        // The finish jobs' latencies are of their opening 4 KiB write (the artifact's notes say so).
        let dir = if kind == Mgmt::Reset || row.metric == Metric::PerS { DDIR_TRIM } else { DDIR_WRITE };
        (Work::Mgmt { kind, jobs: concurrent_resets(&row.notes).unwrap_or(jobs) }, dir)
    };
    let other = bg.other.map(|job| match job {
        Job::Io { op, bs, qd, jobs, throttle } => {
            FioJob { work: Work::Io { op, bs, qd, jobs, zones: 0, overwrite: false }, pace: throttle.into() }
        }
        Job::Mgmt { kind, throttle } => FioJob { work: Work::Mgmt { kind, jobs: 1 }, pace: throttle.into() },
    });
    let run = FioRun {
        lba_bytes: row.lba_bytes,
        stack: row.stack,
        zinc: bg.zinc,
        main: FioJob { work, pace: own_pace },
        other,
        host: Host::of_source(&row.source),
        namespace: if row.notes.contains("conventional namespace") {
            NamespaceKind::Conventional
        } else {
            NamespaceKind::Zoned
        },
    };
    // ConfZNS++ reports percentiles of total latency, the others of completion latency.
    let total = row.source == "ConfZNS++";
    Ok(Plan { run: Run::Fio(run), source: Source::FioDir { dir, total } })
}

/// The chunk of a softFinish job: from its throttle phrase, else from the notes ("= 8 KiB").
fn softfinish_kind(row: &Row, bg: &background::Background) -> Result<Mgmt> {
    if let Some(Job::Mgmt { kind: kind @ Mgmt::SoftFinish { .. }, .. }) = bg.own {
        return Ok(kind);
    }
    let (_, after) = row
        .notes
        .split_once("= ")
        .ok_or_else(|| Error::Unmapped("a softFinish job whose chunk size is not given".into()))?;
    let kib: u64 = after
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Error::Unmapped("softFinish chunk unreadable".into()))?;
    if row.notes.contains("sleep") {
        return Err(Error::Unmapped("softFinish with sleeps between chunks, whose length is not given".into()));
    }
    Ok(Mgmt::SoftFinish { chunk_bytes: kib * 1024, pause_ns: 0 })
}

/// "N concurrent reset jobs" in the notes of seed 003's C3 rows.
fn concurrent_resets(notes: &str) -> Option<u32> {
    let at = notes.find(" concurrent reset jobs")?;
    notes[..at].rsplit(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

fn device_plan(row: &Row, bg: &background::Background) -> Result<Plan> {
    let list0 = |run| Ok(Plan { run: Run::Device(run), source: Source::List(0) });
    match row.op {
        Op::Reset | Op::Finish | Op::ResetAfterFinish if row.figure.starts_with("Fig 5") || timed(row) => {
            let opened = !row.notes.contains("not opened");
            list0(DeviceRun::Occupancy { op: row.op, occupancy: occupancy(&row.notes)?, opened })
        }
        Op::Open => list0(DeviceRun::OpenClose),
        Op::Close if row.notes.contains("after a write") => {
            list0(DeviceRun::CloseWritten { implicit: row.notes.contains("implicitly") })
        }
        Op::Close => Ok(Plan { run: Run::Device(DeviceRun::OpenClose), source: Source::List(1) }),
        Op::Reset => {
            let io = match bg.other {
                None => "none",
                Some(Job::Io { op: IoOp::RandRead, .. }) => "read",
                Some(Job::Io { op: IoOp::Write, .. }) => "write",
                Some(Job::Io { op: IoOp::Append, .. }) => "append",
                Some(other) => return Err(Error::Unmapped(format!("Fig 7 with {other:?} beside the resets"))),
            };
            list0(DeviceRun::ResetBeside { io: BesideIo(io) })
        }
        op => {
            let io = io_op(op).ok_or_else(|| Error::Unmapped(format!("op {op:?} in {} is not mapped", row.figure)))?;
            let bs = row.bs.ok_or_else(|| Error::Unmapped("an I/O row without 'bs'".into()))?;
            let first = row.notes.contains("first write into an empty zone")
                || row.notes.contains("first append into an empty zone");
            match (bg.other, io) {
                (None, IoOp::Write | IoOp::Append) if first => list0(DeviceRun::FirstIo { op: io, bs }),
                (None, _) => list0(DeviceRun::Qd1 { op: io, bs }),
                (Some(Job::Mgmt { kind: Mgmt::Reset, .. }), IoOp::RandRead) => Ok(Plan {
                    run: Run::Device(DeviceRun::ResetBeside { io: BesideIo("read") }),
                    source: Source::List(1),
                }),
                (Some(Job::Mgmt { kind: Mgmt::Reset, .. }), IoOp::Write) => Ok(Plan {
                    run: Run::Device(DeviceRun::ResetBeside { io: BesideIo("write") }),
                    source: Source::List(1),
                }),
                (Some(Job::Mgmt { kind: Mgmt::Reset, .. }), IoOp::Append) => Ok(Plan {
                    run: Run::Device(DeviceRun::ResetBeside { io: BesideIo("append") }),
                    source: Source::List(1),
                }),
                (Some(other), _) => {
                    Err(Error::Unmapped(format!("{op:?} beside {other:?} in {} is not mapped", row.figure)))
                }
            }
        }
    }
}

/// A zone command timed by a profile's script (`zonelab profile`).
fn timed(row: &Row) -> bool {
    row.notes.contains(super::profile::TIMED_NOTE)
}

/// Fig 5's occupancy from the notes: "occupancy 12.5% = 34464 LBAs",
/// "occupancy 0 LBAs", "occupancy 1 LBA written", "occupancy cap-1 = …".
fn occupancy(notes: &str) -> Result<Occupancy> {
    let text = notes
        .split_once("occupancy ")
        .map(|(_, t)| t)
        .ok_or_else(|| Error::Unmapped("Fig 5 row without 'occupancy' in its notes".into()))?;
    let first = text.split_whitespace().next().unwrap_or("");
    if first == "cap-1" {
        return Ok(Occupancy::AllButOne);
    }
    if let Some(pct) = first.strip_suffix('%').and_then(|p| p.parse::<f64>().ok()) {
        return Ok(Occupancy::CentiPct((pct * 100.0).round() as u32));
    }
    first.parse().map(Occupancy::Lbas).map_err(|_| Error::Unmapped(format!("occupancy '{first}' unreadable")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn occupancies_and_reset_job_counts_are_read_from_the_notes() {
        assert_eq!(occupancy("occupancy 12.5% = 34464 LBAs; x").ok(), Some(Occupancy::CentiPct(1250)));
        assert_eq!(occupancy("occupancy 1 LBA written (<0.1%)").ok(), Some(Occupancy::Lbas(1)));
        assert_eq!(occupancy("occupancy cap-1 = 275711 LBAs").ok(), Some(Occupancy::AllButOne));
        assert!(occupancy("no such thing").is_err());
        assert_eq!(concurrent_resets("7 concurrent reset jobs (QD1 each)"), Some(7));
        assert_eq!(concurrent_resets("one reset job"), None);
    }
}
