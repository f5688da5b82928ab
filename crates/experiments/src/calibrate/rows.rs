//! Reading a measurements file (`docs/measurements.md`): one measured
//! number per row, with the run that measured it.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use zonelab_sim::input::{read_text, TEXT_BYTES_MAX};

/// The first line every measurements file starts with.
pub const VERSION_LINE: &str = "# zonelab-measurements v1";

/// The columns of format v1, in order.
pub const COLUMNS: [&str; 14] = [
    "id",
    "source",
    "figure",
    "lba_bytes",
    "stack",
    "op",
    "bs",
    "qd",
    "jobs",
    "zones",
    "background",
    "metric",
    "value",
    "notes",
];

/// The I/O path of a run: engine and block-layer scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Stack {
    #[serde(rename = "spdk")]
    /// Seed 000's SPDK programs.
    Spdk,
    #[serde(rename = "io_uring_cmd")]
    /// fio's io_uring_cmd (NVMe passthrough, no block layer).
    IoUringCmd,
    #[serde(rename = "io_uring-none")]
    /// io_uring through the block layer with no scheduler.
    IoUringNone,
    #[serde(rename = "io_uring-mq-deadline")]
    /// io_uring through mq-deadline.
    IoUringMqDeadline,
    #[serde(rename = "libaio-none")]
    /// libaio with no scheduler.
    LibaioNone,
    #[serde(rename = "libaio-mq-deadline")]
    /// libaio through mq-deadline.
    LibaioMqDeadline,
    #[serde(rename = "psync-none")]
    /// Synchronous I/O with no scheduler.
    PsyncNone,
    #[serde(rename = "psync-mq-deadline")]
    /// Synchronous I/O through mq-deadline.
    PsyncMqDeadline,
}

impl Stack {
    /// fio's `ioengine` for the stack.
    pub fn ioengine(self) -> &'static str {
        match self {
            Stack::Spdk => "spdk",
            Stack::IoUringCmd => "io_uring_cmd",
            Stack::IoUringNone | Stack::IoUringMqDeadline => "io_uring",
            Stack::LibaioNone | Stack::LibaioMqDeadline => "libaio",
            Stack::PsyncNone | Stack::PsyncMqDeadline => "psync",
        }
    }

    /// Whether the block layer runs mq-deadline (else none, or no block layer at all).
    pub fn mq_deadline(self) -> bool {
        matches!(self, Stack::IoUringMqDeadline | Stack::LibaioMqDeadline | Stack::PsyncMqDeadline)
    }
}

/// What the measured job did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Op {
    /// Sequential writes.
    Write,
    /// Zone Append.
    Append,
    /// Sequential reads.
    Read,
    /// Random reads.
    Randread,
    /// Random writes (one at the write pointer of a random zone).
    Randwrite,
    /// Sequential writes into full zones (reset first).
    OverwriteSeq,
    /// Random writes into full zones.
    OverwriteRand,
    /// Random writes over written zones (conventional namespace).
    Randoverwrite,
    /// Zone Reset.
    Reset,
    /// Zone Finish.
    Finish,
    /// Explicit Zone Open.
    Open,
    /// Zone Close.
    Close,
    /// A reset right after a finish.
    ResetAfterFinish,
    /// An fio job of finishes.
    FinishJob,
    /// An fio job of softFinishes (the host fills the zone).
    SoftfinishJob,
    /// RocksDB on ZenFS.
    RocksdbZenfs,
}

/// What was measured, and its unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Thousands of operations per second.
    Kiops,
    /// MiB per second.
    Mibs,
    /// Mean latency, µs.
    LatMeanUs,
    /// Median latency, µs.
    LatP50Us,
    /// 95th-percentile latency, µs.
    LatP95Us,
    /// 99th-percentile latency, µs.
    LatP99Us,
    /// Mean latency, ms.
    MsMean,
    /// 95th-percentile latency, ms.
    MsP95,
    /// Operations per second.
    PerS,
}

/// Where a latency metric sits in its distribution.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub enum Level {
    /// The mean.
    Mean,
    /// A percentile (50: the median).
    Percentile(f64),
}

impl Metric {
    /// Every metric a row can name, in the order a run's numbers are kept.
    pub const ALL: [Metric; 9] = [
        Metric::Kiops,
        Metric::Mibs,
        Metric::PerS,
        Metric::LatMeanUs,
        Metric::LatP50Us,
        Metric::LatP95Us,
        Metric::LatP99Us,
        Metric::MsMean,
        Metric::MsP95,
    ];

    /// The metric a file names `name`.
    pub fn named(name: &str) -> Option<Metric> {
        Self::ALL.into_iter().find(|m| m.name() == name)
    }

    /// A latency metric's place in its distribution and its unit in µs;
    /// `None` for throughputs and rates.
    pub fn latency(self) -> Option<(Level, f64)> {
        Some(match self {
            Metric::LatMeanUs => (Level::Mean, 1.0),
            Metric::LatP50Us => (Level::Percentile(50.0), 1.0),
            Metric::LatP95Us => (Level::Percentile(95.0), 1.0),
            Metric::LatP99Us => (Level::Percentile(99.0), 1.0),
            Metric::MsMean => (Level::Mean, 1000.0),
            Metric::MsP95 => (Level::Percentile(95.0), 1000.0),
            Metric::Kiops | Metric::Mibs | Metric::PerS => return None,
        })
    }

    /// The metric's name as the file writes it.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Kiops => "kiops",
            Metric::Mibs => "mibs",
            Metric::LatMeanUs => "lat_mean_us",
            Metric::LatP50Us => "lat_p50_us",
            Metric::LatP95Us => "lat_p95_us",
            Metric::LatP99Us => "lat_p99_us",
            Metric::MsMean => "ms_mean",
            Metric::MsP95 => "ms_p95",
            Metric::PerS => "per_s",
        }
    }
}

/// One measured number.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Unique id, for messages and rows.csv.
    pub id: String,
    /// Paper or data set the number comes from.
    pub source: String,
    /// Figure or table it is read from.
    pub figure: String,
    /// LBA format of the namespace (512 or 4096).
    pub lba_bytes: u32,
    /// Engine and scheduler.
    pub stack: Stack,
    /// What the measured job did.
    pub op: Op,
    /// Block size in bytes (I/O rows).
    pub bs: Option<u64>,
    /// Queue depth.
    pub qd: Option<u32>,
    /// Jobs (fio's numjobs).
    pub jobs: Option<u32>,
    /// Zones the job spread over.
    pub zones: Option<u32>,
    /// What ran beside it (`docs/measurements.md` lists the phrases).
    pub background: String,
    /// What was measured.
    pub metric: Metric,
    /// The measured number, in the metric's unit.
    pub value: f64,
    /// Free text; some rows keep settings here (occupancy, chunk size).
    pub notes: String,
    /// Line of the row in its file (1-based), for messages.
    #[serde(skip)]
    pub line: u64,
}

impl Row {
    /// Source × figure × metric: the unit the report summarises.
    pub fn group(&self) -> String {
        format!("{} / {} / {}", self.source, self.figure, self.metric.name())
    }
}

/// Reads a measurements file as every input file is read: a device node,
/// socket or directory is refused before it is opened, and at most
/// [`TEXT_BYTES_MAX`] bytes are read (`/dev/zero` was read for ever).
pub fn read_file(path: &Path) -> Result<Vec<Row>> {
    let text = read_text(path, TEXT_BYTES_MAX).map_err(|e| Error::Input(e).within("measurements file"))?;
    parse(&path.display().to_string(), &text)
}

/// Parses a measurements file's text; `name` locates errors.
pub fn parse(name: &str, text: &str) -> Result<Vec<Row>> {
    let first = text.lines().next().unwrap_or("").trim_end();
    if first != VERSION_LINE {
        let hint = if first.starts_with("# zonelab-measurements") {
            "this zonelab reads format v1 only".to_string()
        } else {
            format!("the first line must be '{VERSION_LINE}'")
        };
        return Err(Error::Invalid(format!("{name}:1: not a measurements file ({hint}); see docs/measurements.md")));
    }
    let mut reader = csv::ReaderBuilder::new().comment(Some(b'#')).from_reader(text.as_bytes());
    let mut lines = Lines { text, byte: 0, line: 1 };
    let header = reader.headers().map_err(|e| Error::Invalid(located(name, &mut lines, &e, &[])))?.clone();
    let found: Vec<&str> = header.iter().collect();
    if found != COLUMNS {
        return Err(Error::Invalid(format!(
            "{name}:2: the header must be {} (found {})",
            COLUMNS.join(","),
            found.join(",")
        )));
    }
    let mut rows = Vec::new();
    let mut ids = std::collections::HashMap::new();
    for record in reader.records() {
        let record = record.map_err(|e| Error::Invalid(located(name, &mut lines, &e, &COLUMNS)))?;
        let line = record.position().map_or(0, |p| lines.at(p.byte()));
        let mut row: Row = record.deserialize(Some(&header)).map_err(|e| {
            let message = located(name, &mut lines, &e, &COLUMNS);
            // serde names no field for an unknown enum value: find the column that holds it.
            let bad = message.split("unknown variant '").nth(1).and_then(|m| m.split('\'').next());
            match bad.and_then(|b| record.iter().position(|f| f == b)) {
                Some(i) => Error::Invalid(message.replacen("column '?'", &format!("column '{}'", COLUMNS[i]), 1)),
                None => Error::Invalid(message),
            }
        })?;
        row.line = line;
        check(name, &row)?;
        if let Some(before) = ids.insert(row.id.clone(), line) {
            return Err(Error::Invalid(format!(
                "{name}:{line}: column 'id': '{}' is already the id of line {before}",
                row.id
            )));
        }
        rows.push(row);
    }
    Ok(rows)
}

/// `rows` as a measurements file (what [`parse`] reads back).
pub fn to_csv(rows: &[Row]) -> Result<String> {
    let mut w = csv::WriterBuilder::new().terminator(csv::Terminator::Any(b'\n')).from_writer(Vec::new());
    let failed = |e: csv::Error| Error::Failed(format!("a measurements row: {e}"));
    w.write_record(COLUMNS).map_err(failed)?;
    for r in rows {
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| v.to_string());
        let record = [
            r.id.clone(),
            r.source.clone(),
            r.figure.clone(),
            r.lba_bytes.to_string(),
            serial_name(&r.stack),
            serial_name(&r.op),
            opt(r.bs),
            opt(r.qd.map(u64::from)),
            opt(r.jobs.map(u64::from)),
            opt(r.zones.map(u64::from)),
            r.background.clone(),
            r.metric.name().to_string(),
            format!("{}", r.value),
            r.notes.clone(),
        ];
        w.write_record(&record).map_err(failed)?;
    }
    let body = String::from_utf8(w.into_inner().map_err(|e| Error::Failed(e.to_string()))?)
        .map_err(|e| Error::Failed(e.to_string()))?;
    Ok(format!("{VERSION_LINE}\n{body}"))
}

/// The name serde gives a unit variant: the file's spelling.
fn serial_name<T: Serialize>(v: &T) -> String {
    serde_json::to_value(v).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default()
}

/// What serde cannot check: values that parse but make no sense.
fn check(name: &str, row: &Row) -> Result<()> {
    let at = |column: &str, what: &str| Err(Error::Invalid(format!("{name}:{}: column '{column}': {what}", row.line)));
    if row.id.trim().is_empty() {
        return at("id", "must not be empty");
    }
    if row.lba_bytes != 512 && row.lba_bytes != 4096 {
        return at("lba_bytes", &format!("{} is not 512 or 4096", row.lba_bytes));
    }
    if !row.value.is_finite() || row.value < 0.0 {
        return at("value", &format!("{} is not a finite number >= 0", row.value));
    }
    if row.bs == Some(0) || row.qd == Some(0) || row.jobs == Some(0) || row.zones == Some(0) {
        return at("bs/qd/jobs/zones", "must be empty or at least 1");
    }
    // A phrase this version cannot read is the planner's to skip; a value out of range is an error in the file.
    match super::background::parse(&row.background) {
        Err(Error::Invalid(what)) => at("background", &what),
        _ => Ok(()),
    }
}

/// The line of a record, from the byte where the csv reader began reading
/// it; counted on from the last one asked for (rows come in order). The
/// reader's own line count, and its position, include the comment lines it
/// skipped before the record, and in a CRLF file (the shipped zn540.csv)
/// start at the previous line's `\n`: rows were named a line or more early.
struct Lines<'a> {
    text: &'a str,
    byte: usize,
    line: u64,
}

impl Lines<'_> {
    /// The line (1-based) of the record the reader began reading at `byte`.
    fn at(&mut self, byte: u64) -> u64 {
        let mut byte = usize::try_from(byte).unwrap_or(usize::MAX).min(self.text.len());
        // Bound: each pass moves past one line ending or one comment line.
        while let Some(rest) = self.text.get(byte..).filter(|r| r.starts_with(['\n', '\r', '#'])) {
            let skip = if rest.starts_with('#') { rest.find('\n').map_or(rest.len(), |n| n + 1) } else { 1 };
            byte += skip;
        }
        if byte < self.byte {
            (self.byte, self.line) = (0, 1);
        }
        self.line += self.text.as_bytes()[self.byte..byte].iter().filter(|&&b| b == b'\n').count() as u64;
        self.byte = byte;
        self.line
    }
}

/// A csv error as `file:line: column 'c': message`.
fn located(name: &str, lines: &mut Lines, e: &csv::Error, columns: &[&str]) -> String {
    let line = e.position().map_or(0, |p| lines.at(p.byte()));
    match e.kind() {
        csv::ErrorKind::Deserialize { err, .. } => {
            let column = err.field().and_then(|f| columns.get(f as usize)).copied().unwrap_or("?");
            format!("{name}:{line}: column '{column}': {}", describe(err.kind()))
        }
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("{name}:{line}: {len} fields, the header has {expected_len} (quote values that contain commas)")
        }
        _ => format!("{name}:{line}: {e}"),
    }
}

fn describe(kind: &csv::DeserializeErrorKind) -> String {
    match kind {
        csv::DeserializeErrorKind::Message(m) => m.replace('`', "'"),
        csv::DeserializeErrorKind::ParseInt(e) => format!("not a whole number ({e})"),
        csv::DeserializeErrorKind::ParseFloat(e) => format!("not a number ({e})"),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "id,source,figure,lba_bytes,stack,op,bs,qd,jobs,zones,background,metric,value,notes\n";

    fn file(rows: &str) -> String {
        format!("{VERSION_LINE}\n{HEADER}{rows}")
    }

    #[test]
    fn a_good_row_parses_with_empty_optionals() {
        let rows = parse("m.csv", &file("A1,S,Fig 1,4096,spdk,reset,,1,1,,,ms_p95,16.2,\"a, b\"\n")).unwrap();
        assert_eq!(rows[0].op, Op::Reset);
        assert_eq!(rows[0].bs, None);
        assert_eq!(rows[0].line, 3);
        assert_eq!(rows[0].notes, "a, b");
    }

    #[test]
    fn bad_rows_are_located_with_what_is_valid() {
        let cases = [
            ("A1,S,F,4096,spdk,write,4k,1,1,1,,kiops,1,\n", "m.csv:3: column 'bs'"),
            ("A1,S,F,4096,nvme,write,4096,1,1,1,,kiops,1,\n", "one of"),
            ("A1,S,F,4096,spdk,write,4096,1,1,1,,iops,1,\n", "column 'metric'"),
            ("A1,S,F,4096,spdk,scan,4096,1,1,1,,kiops,1,\n", "column 'op'"),
            ("A1,S,F,4096,spdk,write,4096,1,1,1,,kiops,,\n", "column 'value'"),
            ("A1,S,F,4096,spdk,write,4096,1,1,1,,kiops\n", "fields"),
            ("A1,S,F,1024,spdk,write,4096,1,1,1,,kiops,1,\n", "512 or 4096"),
        ];
        for (row, needle) in cases {
            let err = parse("m.csv", &file(row)).unwrap_err().to_string();
            assert!(err.contains(needle), "{row}: {err}");
        }
        let err = parse("m.csv", &file("A1,S,F,4096,nvme,write,4096,1,1,1,,kiops,1,\n")).unwrap_err().to_string();
        assert!(err.contains("m.csv:3: column 'stack'") && err.contains("io_uring_cmd"), "{err}");
    }

    /// The csv reader counted lines of CRLF files (as the shipped zn540.csv is) one short: errors named the line
    /// before the bad row.
    #[test]
    fn rows_are_located_in_crlf_and_lf_files_alike() {
        let rows =
            "A0,S,F,4096,spdk,open,,1,1,1,,lat_mean_us,9,\n# a comment\nA1,S,F,1024,spdk,open,,1,1,1,,lat_mean_us,9,\n";
        for text in [file(rows), file(rows).replace('\n', "\r\n")] {
            let err = parse("m.csv", &text).unwrap_err().to_string();
            assert!(err.starts_with("m.csv:5: column 'lba_bytes'"), "{err}");
            let fields = text.replace("A1,S,F,1024,spdk,open,,1,1,1,,lat_mean_us,9,", "A1,S");
            assert!(parse("m.csv", &fields).unwrap_err().to_string().starts_with("m.csv:5: 2 fields"));
        }
        let shipped =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/measurements/zn540.csv"));
        let rows = parse("zn540.csv", &shipped.unwrap()).unwrap();
        assert_eq!((rows[0].line, rows.last().unwrap().line), (3, 3228), "the file's last line is its last row");
    }

    /// `zonelab calibrate /dev/zero` read the device until stopped.
    #[cfg(unix)]
    #[test]
    fn device_nodes_and_directories_are_refused_before_reading() {
        let e = read_file(Path::new("/dev/zero")).unwrap_err().to_string();
        assert_eq!(e, "measurements file: /dev/zero is a device node, not a file");
        let e = read_file(&std::env::temp_dir()).unwrap_err().to_string();
        assert!(e.starts_with("measurements file: ") && e.ends_with("is a directory, not a file"), "{e}");
    }

    /// A 0% management job beside a measured one panicked the run (a rate of 0 per second); such values are
    /// refused with the file, line and column, as other bad values are.
    #[test]
    fn throttles_that_ask_for_no_rate_are_refused_where_they_are() {
        let row = |bg: &str| format!("A1,S,F,4096,spdk,reset,,1,1,,{bg},per_s,1,\n");
        for (bg, needle) in [
            ("write 8KiB QD1 x1 jobs; reset job at 0% intensity", "0.01 to 100"),
            ("reset full zones 0% intensity", "0.01 to 100"),
            ("write 64KiB 150% intensity", "0.01 to 100"),
            ("write 64KiB -5% intensity", "0.01 to 100"),
            ("finish 25% intensity (0 finishes/s)", "at least 0.001"),
            ("finish 25% intensity (inf finishes/s)", "at least 0.001"),
        ] {
            let err = parse("m.csv", &file(&row(bg))).unwrap_err().to_string();
            assert!(err.starts_with("m.csv:3: column 'background': "), "{bg}: {err}");
            assert!(err.contains(needle), "{bg}: {err}");
        }
        // Phrases this version does not read stay rows the report skips, not errors.
        assert!(parse("m.csv", &file(&row("softfinish chunk=8KiB+sleep 50% intensity (0.05 finishes/s)"))).is_ok());
        assert!(parse("m.csv", &file(&row("write 8KiB QD1 x1 jobs; reset job at 0.01% intensity"))).is_ok());
    }

    #[test]
    fn rows_written_as_csv_read_back_the_same() {
        let text = file(
            "A1,S,\"Fig, 1\",512,io_uring-mq-deadline,softfinish-job,,1,1,,\"write 8KiB QD1 x3 jobs; finish job unthrottled\",per_s,0.25,\"a \"\"b\"\"\"\n\
             A2,S,F,4096,io_uring_cmd,randread,8192,16,2,3,,lat_p95_us,123.5,\n",
        );
        let rows = parse("m.csv", &text).unwrap();
        let again = parse("again.csv", &to_csv(&rows).unwrap()).unwrap();
        assert_eq!(again, rows);
    }

    #[test]
    fn the_version_line_and_header_are_required_and_ids_unique() {
        assert!(parse("m.csv", HEADER).unwrap_err().to_string().contains(VERSION_LINE));
        let v2 = format!("# zonelab-measurements v2\n{HEADER}");
        assert!(parse("m.csv", &v2).unwrap_err().to_string().contains("v1 only"));
        let err = parse("m.csv", &format!("{VERSION_LINE}\nid,value\n")).unwrap_err().to_string();
        assert!(err.contains("m.csv:2: the header"), "{err}");
        let twice = "A1,S,F,4096,spdk,open,,1,1,1,,lat_mean_us,9,\nA1,S,F,4096,spdk,open,,1,1,1,,lat_mean_us,9,\n";
        assert!(parse("m.csv", &file(twice)).unwrap_err().to_string().contains("m.csv:4: column 'id'"));
    }
}
