//! Reading a row's `background`: the job that ran beside the measured one,
//! and, on rows that measure a management job, that job's own throttle
//! (`docs/measurements.md` lists the phrases).

use crate::error::{Error, Result};

/// How fast a job was let run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Throttle {
    /// As fast as the job goes alone.
    Unthrottled,
    /// Percent of the job's standalone maximum (its rate run alone, unthrottled).
    Intensity(f64),
    /// Operations per second, as achieved in the measured run.
    PerSecond(f64),
}

/// A zone-management job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Mgmt {
    /// Resets of pre-filled full zones.
    Reset,
    /// A 4 KiB write into an empty zone, then Zone Finish.
    Finish,
    /// A 4 KiB write into an empty zone, then the host fills it in chunks.
    SoftFinish {
        /// Bytes the host writes per chunk.
        chunk_bytes: u64,
        /// The host's pause after each chunk (seed 003's softFinish(granularity, pause)).
        pause_ns: u64,
    },
}

/// The pause of ConfZNS++'s softFinish "with sleeps", which its measurements
/// do not state (`reproduce characterization` runs it): inferred from their
/// rates. At 8 KiB chunks and 50% intensity the C4 softFinish job runs
/// 0.20-0.24 zones/s without sleeps and 0.05-0.06 with them; a 1077 MiB zone
/// is 137,856 chunks, so the sleeps add (1/0.055 - 1/0.22) s / 137,856 = 99 µs
/// per chunk.
pub const SOFTFINISH_SLEEP_NS: u64 = 100_000;

/// An I/O or management job as a background phrase names it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Job {
    /// An fio I/O job: operation, block size, queue depth, clones, throttle.
    Io {
        /// What it does.
        op: IoOp,
        /// Block size in bytes.
        bs: u64,
        /// Queue depth of each clone.
        qd: u32,
        /// Clones (fio's numjobs).
        jobs: u32,
        /// How fast it was let run.
        throttle: Throttle,
    },
    /// A zone-management job and its throttle.
    Mgmt {
        /// Which management command.
        kind: Mgmt,
        /// How fast it was let run.
        throttle: Throttle,
    },
}

/// An I/O operation of a job, as fio's `rw` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum IoOp {
    /// Sequential writes at the zone's write pointer.
    Write,
    /// Zone Append (fio's io_uring_cmd with zone append).
    Append,
    /// Sequential reads.
    Read,
    /// Random reads.
    RandRead,
    /// fio's zoned emulation: each write at the write pointer of a random zone of the range.
    RandWrite,
}

/// ZINC's settings where a row gives them ("zinc epoch=64ms budget=20000");
/// None keeps the kernel module's default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ZincSettings {
    /// The epoch's length in ms.
    pub epoch_ms: Option<u64>,
    /// Write units (8 KiB) dispatched before a held command is released.
    pub budget_units: Option<u64>,
}

impl ZincSettings {
    /// Reads the words after "zinc"; unknown `key=value` words are errors.
    fn parse(rest: &str) -> Result<Self> {
        let mut out = ZincSettings::default();
        for word in rest.split_whitespace().filter(|w| w.contains('=')) {
            let (key, value) = word.split_once('=').expect("has '='");
            let bad = || Error::Unmapped(format!("ZINC setting '{word}': expected epoch=<N>ms or budget=<N>"));
            match key {
                "epoch" => out.epoch_ms = Some(value.strip_suffix("ms").and_then(|v| v.parse().ok()).ok_or_else(bad)?),
                "budget" => out.budget_units = Some(value.parse().map_err(|_| bad())?),
                _ => return Err(bad()),
            }
        }
        Ok(out)
    }
}

/// A whole `background` string, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Background {
    /// The ZINC scheduler ran in place of mq-deadline, with these settings.
    pub zinc: Option<ZincSettings>,
    /// The job beside the measured one.
    pub other: Option<Job>,
    /// On management rows: the measured job's own kind and throttle.
    pub own: Option<Job>,
}

/// Reads `text`; an error says what is not understood.
pub fn parse(text: &str) -> Result<Background> {
    let mut out = Background::default();
    // Parts keep their places: "; reset job at 50% intensity" is a management row's own throttle alone.
    let mut parts: Vec<&str> = text.split(';').map(str::trim).collect();
    if let Some(first) = parts.first().copied() {
        if let Some(rest) = first.strip_prefix("zinc") {
            if rest.contains("holds") {
                return Err(Error::Unmapped(
                    "a ZINC 'max epoch holds' sweep whose other settings are not given".into(),
                ));
            }
            out.zinc = Some(ZincSettings::parse(rest)?);
            parts.remove(0);
            if parts.as_slice() == ["concurrent writes"] || rest.contains("no resets") {
                parts.clear();
            }
        }
    }
    while parts.last() == Some(&"") {
        parts.pop();
    }
    match parts.as_slice() {
        [] => {}
        [one] => out.other = Some(job(one)?),
        [io, own] => {
            if !io.is_empty() {
                out.other = Some(job(io)?);
            }
            let own = own
                .strip_suffix(" job unthrottled")
                .map(|k| format!("{k} unthrottled"))
                .unwrap_or_else(|| own.replacen(" job at ", " ", 1));
            out.own = Some(job(&own)?);
        }
        _ => return Err(Error::Unmapped(format!("'{text}': more than two ';'-separated parts"))),
    }
    Ok(out)
}

/// One job phrase, e.g. "write 8KiB QD1 x3 jobs", "finish 25% intensity (0.27 finishes/s)".
fn job(phrase: &str) -> Result<Job> {
    let (head, paren) = match phrase.split_once('(') {
        Some((h, p)) => (h.trim(), Some(p.trim_end_matches(')'))),
        None => (phrase.trim(), None),
    };
    let words: Vec<&str> = head.split_whitespace().collect();
    let unknown = || Error::Unmapped(format!("'{phrase}' is not a job this version reads"));
    let (&kind, rest) = words.split_first().ok_or_else(unknown)?;
    let throttle = checked(phrase, throttle(rest, paren).ok_or_else(unknown)?)?;
    let mgmt = match kind {
        "reset" => Some(Mgmt::Reset),
        "finish" => Some(Mgmt::Finish),
        "softfinish" => {
            let chunk = rest.iter().find_map(|w| w.strip_prefix("chunk=")).ok_or_else(unknown)?;
            if chunk.ends_with("+sleep") {
                // The pause's length is inferred (SOFTFINISH_SLEEP_NS), and such a job
                // completes no softFinish in a run's window alone, so its 50% has no rate.
                return Err(Error::Unmapped("softFinish with sleeps between chunks, whose length is not given".into()));
            }
            Some(Mgmt::SoftFinish { chunk_bytes: kib(chunk).ok_or_else(unknown)?, pause_ns: 0 })
        }
        _ => None,
    };
    if let Some(kind) = mgmt {
        return Ok(Job::Mgmt { kind, throttle });
    }
    let op = match kind {
        "write" => IoOp::Write,
        "append" => IoOp::Append,
        "read" => IoOp::Read,
        "randread" => IoOp::RandRead,
        _ => return Err(unknown()),
    };
    // Unstated sizes are those of seed 003's victims: 8 KiB at QD 1, one job;
    // but its interfering appender is one job at QD 8 (appends scale within a
    // zone by queue depth, and the pairs that state its size say QD 8).
    let qd_unstated = if op == IoOp::Append { 8 } else { 1 };
    let (mut bs, mut qd, mut jobs) = (8192, qd_unstated, 1);
    for (i, w) in rest.iter().enumerate() {
        if let Some(b) = kib(w) {
            bs = b;
        } else if let Some(q) = w.strip_prefix("QD").and_then(|q| q.parse().ok()) {
            qd = q;
        } else if let Some(n) = w.strip_prefix('x').and_then(|n| n.parse().ok()) {
            if rest.get(i + 1) == Some(&"jobs") {
                jobs = n;
            }
        }
    }
    Ok(Job::Io { op, bs, qd, jobs, throttle })
}

/// "X% intensity", with the achieved rate in parentheses when given; "unthrottled"; nothing.
fn throttle(rest: &[&str], paren: Option<&str>) -> Option<Throttle> {
    let achieved = paren.and_then(|p| {
        let words: Vec<&str> = p.split([' ', ',']).filter(|w| !w.is_empty()).collect();
        let at = words.iter().position(|w| w.ends_with("/s"))?;
        words.get(at.checked_sub(1)?)?.parse::<f64>().ok()
    });
    if rest.contains(&"unthrottled") || rest.contains(&"back-to-back") {
        return Some(Throttle::Unthrottled);
    }
    let pct = rest
        .iter()
        .position(|w| *w == "intensity")
        .and_then(|i| rest.get(i.checked_sub(1)?)?.strip_suffix('%')?.parse::<f64>().ok());
    match (pct, achieved) {
        (Some(_), Some(rate)) => Some(Throttle::PerSecond(rate)),
        (Some(p), None) => Some(Throttle::Intensity(p)),
        (None, _) if !rest.iter().any(|w| w.ends_with('%')) => Some(Throttle::Unthrottled),
        _ => None,
    }
}

/// The smallest intensity a run holds a job to, in percent: runs keep
/// intensities in hundredths of a percent (`Pace::IntensityCentiPct`), so a
/// smaller one would be no rate at all.
pub const INTENSITY_PCT_MIN: f64 = 0.01;
/// The smallest achieved rate a run holds a job to, operations per second:
/// runs keep rates in thousandths (`Pace::MilliPerS`).
pub const RATE_PER_S_MIN: f64 = 0.001;

/// `throttle`, if a run can hold a job to it. An intensity is a share of
/// what the job does alone, so above 100% it asks for more than it can do;
/// 0% would be a job that never runs, which is no job: the row then
/// describes a run without it and leaves it out of `background`.
fn checked(phrase: &str, throttle: Throttle) -> Result<Throttle> {
    match throttle {
        Throttle::Intensity(p) if !(INTENSITY_PCT_MIN..=100.0).contains(&p) => Err(Error::Invalid(format!(
            "'{phrase}': an intensity of {p}% is not a share a job can run at: use {INTENSITY_PCT_MIN} to 100 \
             (percent of the job's rate alone); for no such job, leave it out"
        ))),
        Throttle::PerSecond(r) if !(r.is_finite() && r >= RATE_PER_S_MIN) => Err(Error::Invalid(format!(
            "'{phrase}': an achieved rate of {r} per second is not a rate a job can be held to: use a finite \
             number of at least {RATE_PER_S_MIN} operations per second"
        ))),
        t => Ok(t),
    }
}

/// "64KiB" as bytes.
fn kib(word: &str) -> Option<u64> {
    word.strip_suffix("KiB")?.parse::<u64>().ok().map(|k| k * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Throttle::*;

    fn io(op: IoOp, bs: u64, qd: u32, jobs: u32, throttle: Throttle) -> Option<Job> {
        Some(Job::Io { op, bs, qd, jobs, throttle })
    }

    #[test]
    fn victim_side_phrases() {
        let reset = parse("reset full zones 50% intensity (30.1 resets/s)").unwrap();
        assert_eq!(reset.other, Some(Job::Mgmt { kind: Mgmt::Reset, throttle: PerSecond(30.1) }));
        let finish = parse("finish unthrottled (0.53 finishes/s)").unwrap();
        assert_eq!(finish.other, Some(Job::Mgmt { kind: Mgmt::Finish, throttle: Unthrottled }));
        let soft = parse("softfinish chunk=256KiB 50% intensity (0.54 finishes/s)").unwrap();
        let kind = Mgmt::SoftFinish { chunk_bytes: 256 * 1024, pause_ns: 0 };
        assert_eq!(soft.other, Some(Job::Mgmt { kind, throttle: PerSecond(0.54) }));
        assert_eq!(parse("write 64KiB 5% intensity").unwrap().other, io(IoOp::Write, 65536, 1, 1, Intensity(5.0)));
        assert_eq!(
            parse("append 8KiB QD8 10% intensity").unwrap().other,
            io(IoOp::Append, 8192, 8, 1, Intensity(10.0))
        );
        assert_eq!(parse("randread 1% intensity").unwrap().other, io(IoOp::RandRead, 8192, 1, 1, Intensity(1.0)));
        // Seed 003's interfering appender is one job at QD 8 unless the phrase says otherwise.
        assert_eq!(parse("append 10% intensity").unwrap().other, io(IoOp::Append, 8192, 8, 1, Intensity(10.0)));
        assert_eq!(parse("append 8KiB QD1").unwrap().other, io(IoOp::Append, 8192, 1, 1, Unthrottled));
        let unthrottled = parse("reset full zones unthrottled (1 job QD1, 53.2 resets/s)").unwrap();
        assert_eq!(unthrottled.other, Some(Job::Mgmt { kind: Mgmt::Reset, throttle: Unthrottled }));
    }

    #[test]
    fn management_side_phrases_name_the_io_then_the_own_throttle() {
        let b = parse("write 8KiB QD1 x3 jobs; reset job at 50% intensity").unwrap();
        assert_eq!(b.other, io(IoOp::Write, 8192, 1, 3, Unthrottled));
        assert_eq!(b.own, Some(Job::Mgmt { kind: Mgmt::Reset, throttle: Intensity(50.0) }));
        let b = parse("randread 8KiB QD16; finish job unthrottled").unwrap();
        assert_eq!(b.other, io(IoOp::RandRead, 8192, 16, 1, Unthrottled));
        assert_eq!(b.own, Some(Job::Mgmt { kind: Mgmt::Finish, throttle: Unthrottled }));
        let b = parse("write 8KiB QD1 x1 jobs; softfinish chunk=4KiB job at 50% intensity").unwrap();
        let kind = Mgmt::SoftFinish { chunk_bytes: 4096, pause_ns: 0 };
        assert_eq!(b.own, Some(Job::Mgmt { kind, throttle: Intensity(50.0) }));
        let alone = parse("; reset job at 50% intensity").unwrap();
        assert_eq!(alone.other, None, "nothing beside the management job");
        assert_eq!(alone.own, Some(Job::Mgmt { kind: Mgmt::Reset, throttle: Intensity(50.0) }));
        assert_eq!(parse("randread 8KiB QD16;").unwrap().other, io(IoOp::RandRead, 8192, 16, 1, Unthrottled));
    }

    #[test]
    fn zinc_prefixes_and_what_is_refused() {
        let b = parse("zinc epoch=64ms budget=20000; write 8KiB QD1 x2 jobs; reset job at 50% intensity").unwrap();
        assert_eq!(b.zinc, Some(ZincSettings { epoch_ms: Some(64), budget_units: Some(20000) }));
        assert!(b.own.is_some());
        let b = parse("zinc scheduler (default settings), no resets").unwrap();
        assert_eq!(b.zinc, Some(ZincSettings::default()));
        assert!(b.other.is_none());
        assert!(parse("zinc epoch=64; concurrent writes").unwrap_err().to_string().contains("epoch=<N>ms"));
        assert!(parse("zinc quantum=3; concurrent writes").is_err());
        assert!(parse("zinc max epoch holds=3; concurrent writes").is_err());
        assert!(parse("softfinish chunk=8KiB+sleep 50% intensity (0.05 finishes/s)")
            .unwrap_err()
            .to_string()
            .contains("sleep"));
        assert!(parse("trim 5% intensity").is_err());
        assert_eq!(parse("").unwrap(), Background::default());
    }
}
