//! fio's I/O logs (`write_iolog`, `read_iolog`), versions 2 and 3, as fio's
//! `iolog.c` writes and reads them:
//!
//! ```text
//! fio version 2 iolog                 fio version 3 iolog
//! FILE add|open|close                 TIME_US FILE add|open|close
//! FILE ACTION OFFSET LENGTH           TIME_US FILE ACTION OFFSET LENGTH
//! ```
//!
//! ACTION is read, write, trim, sync, datasync or wait. A version 2 `wait`
//! holds the replay until OFFSET ms after the job started; version 3 has no
//! `wait` (its timestamps, in µs from the log's start, carry the delays).
//! Where fio logs a bad line and goes on, zonelab refuses the log, naming
//! the line: a replay that silently drops lines measures something else.

use super::job::{DDIR_READ, DDIR_TRIM, DDIR_WRITE};
use std::io::Read;
use std::path::Path;

/// Largest log read (256 MiB): about 8 million lines of fio's writing.
pub const IOLOG_BYTES_MAX: u64 = 256 << 20;
/// Most entries of one log: bounds the memory a replay holds (40 B each, 320 MiB).
pub const IOLOG_ENTRIES_MAX: usize = 8 << 20;

/// What one line of a log asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// A read, write or trim (`ddir` is fio's direction index) of
    /// `len_bytes` at `offset_bytes` of the file.
    Io {
        /// DDIR_READ, DDIR_WRITE or DDIR_TRIM.
        ddir: usize,
        /// Byte offset in the file.
        offset_bytes: u64,
        /// Length in bytes (fio reads it as a 32-bit number).
        len_bytes: u32,
    },
    /// `sync` or `datasync`: the I/Os issued before it complete first.
    Sync,
    /// Version 2 `wait`: nothing is issued before this many ms into the job.
    Wait {
        /// Time from the job's start, in ms.
        at_ms: u64,
    },
    /// `add`, `open` or `close`: nothing to do on a device, but in a
    /// version 3 log its timestamp still delays what follows, as in fio.
    File,
}

/// One line of a log that does something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// The line's number in the file, from 1.
    pub line: u32,
    /// Version 3: µs since the previous line's timestamp (0 for the first
    /// line, or a timestamp earlier than the previous one, as in fio).
    pub delay_us: u64,
    /// What the line asks for.
    pub action: Action,
}

/// A parsed log: its version, the one file it names, its entries in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IoLog {
    /// 2 or 3; 0 for a blktrace capture.
    pub version: u8,
    /// The file name its lines use (zonelab replays it onto the device).
    pub file: Option<String>,
    /// Every line after the header that does something, in order.
    pub entries: Vec<Entry>,
}

/// A log zonelab cannot replay: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IologError {
    /// The log's path as given.
    pub path: String,
    /// The line at fault, from 1 (0: the file as a whole).
    pub line: u32,
    /// What is wrong and what would be valid.
    pub message: String,
}

impl std::fmt::Display for IologError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            // The message of an unreadable file names it already.
            0 => write!(f, "{}", self.message),
            line => write!(f, "{}:{line}: {}", self.path, self.message),
        }
    }
}

impl std::error::Error for IologError {}

/// Reads and parses the log at `path` (at most [`IOLOG_BYTES_MAX`] bytes):
/// an iolog, or a blktrace capture (told apart by its magic, as fio does).
pub fn read(path: &str) -> Result<IoLog, IologError> {
    let error = |message: String| IologError { path: path.to_string(), line: 0, message };
    let mut bytes = Vec::new();
    let file = zonelab_sim::input::open_input(Path::new(path)).map_err(|e| error(e.to_string()))?;
    file.take(IOLOG_BYTES_MAX + 1).read_to_end(&mut bytes).map_err(|e| error(format!("{path}: {e}")))?;
    if bytes.len() as u64 > IOLOG_BYTES_MAX {
        return Err(error(format!("{path} is larger than {IOLOG_BYTES_MAX} bytes, the most read as a replay log")));
    }
    if super::blktrace::is_blktrace(&bytes) {
        return super::blktrace::parse(path, &bytes);
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| error(format!("{path} is neither a fio iolog (UTF-8 text) nor a blktrace capture")))?;
    parse(path, &text)
}

/// Parses the text of a log; `path` only names it in errors.
pub fn parse(path: &str, text: &str) -> Result<IoLog, IologError> {
    let error = |line: usize, message: String| IologError { path: path.to_string(), line: line as u32, message };
    let mut lines = text.lines().enumerate();
    let header = lines.next().map_or("", |(_, l)| l.trim());
    let version = match header {
        "fio version 2 iolog" => 2,
        "fio version 3 iolog" => 3,
        _ => {
            let message = format!(
                "not a fio iolog: the first line is '{}', expected 'fio version 2 iolog' or 'fio version 3 iolog' \
                 or a binary blktrace capture (version 1 logs are not read)",
                shorten(header)
            );
            return Err(error(1, message));
        }
    };
    let mut log = IoLog { version, file: None, entries: Vec::new() };
    let mut last_time_us = None;
    for (index, raw) in lines {
        let number = index + 1;
        if raw.trim().is_empty() {
            continue;
        }
        if log.entries.len() >= IOLOG_ENTRIES_MAX {
            return Err(error(number, format!("more than {IOLOG_ENTRIES_MAX} entries, the most one replay holds")));
        }
        let line = parse_line(version, raw).map_err(|m| error(number, m))?;
        check_file(&mut log.file, line.file).map_err(|m| error(number, m))?;
        let delay_us = match (line.time_us, last_time_us) {
            (Some(now), Some(last)) if now >= last => now - last,
            _ => 0,
        };
        last_time_us = line.time_us.or(last_time_us);
        log.entries.push(Entry { line: number as u32, delay_us, action: line.action });
    }
    Ok(log)
}

/// A line's fields once read.
struct Line<'a> {
    time_us: Option<u64>,
    file: &'a str,
    action: Action,
}

fn parse_line(version: u8, raw: &str) -> Result<Line<'_>, String> {
    let fields: Vec<&str> = raw.split_whitespace().take(7).collect();
    let (time_us, rest) = if version == 3 {
        let time = fields[0].parse::<u64>().map_err(|_| {
            format!("'{}' is not a timestamp: version 3 lines start with µs since the log's start", shorten(fields[0]))
        })?;
        (Some(time), &fields[1..])
    } else {
        (None, &fields[..])
    };
    let action = match rest {
        [_, action] => file_action(action)?,
        [_, action, offset, length] => io_action(version, action, offset, length)?,
        _ => {
            let prefix = if version == 3 { "TIME_US " } else { "" };
            return Err(format!(
                "{} fields; a version {version} line is '{prefix}FILE add|open|close' or \
                 '{prefix}FILE read|write|trim|sync|datasync{} OFFSET LENGTH'",
                fields.len(),
                if version == 2 { "|wait" } else { "" }
            ));
        }
    };
    Ok(Line { time_us, file: rest[0], action })
}

fn file_action(action: &str) -> Result<Action, String> {
    match action {
        "add" | "open" | "close" => Ok(Action::File),
        "read" | "write" | "trim" | "sync" | "datasync" | "wait" => {
            Err(format!("'{action}' needs an offset and a length after it"))
        }
        _ => Err(format!("unknown file action '{}' (valid: add, open, close)", shorten(action))),
    }
}

fn io_action(version: u8, action: &str, offset: &str, length: &str) -> Result<Action, String> {
    let offset_bytes =
        offset.parse::<u64>().map_err(|_| format!("offset '{}' is not a byte count", shorten(offset)))?;
    let len_bytes = length
        .parse::<u32>()
        .map_err(|_| format!("length '{}' is not a byte count below 4 GiB (fio reads 32 bits)", shorten(length)))?;
    let ddir = match action {
        "read" => DDIR_READ,
        "write" => DDIR_WRITE,
        "trim" => DDIR_TRIM,
        "sync" | "datasync" => return Ok(Action::Sync),
        "wait" if version == 2 => return Ok(Action::Wait { at_ms: offset_bytes }),
        "wait" => {
            return Err("'wait' is not part of version 3 logs (fio ignores it): the timestamps carry the delays".into())
        }
        "add" | "open" | "close" => return Err(format!("'{action}' takes no offset nor length")),
        _ => {
            return Err(format!(
                "unknown action '{}' (valid: read, write, trim, sync, datasync{}, add, open, close)",
                shorten(action),
                if version == 2 { ", wait" } else { "" }
            ))
        }
    };
    if len_bytes == 0 {
        return Err(format!("a {action} of 0 bytes"));
    }
    Ok(Action::Io { ddir, offset_bytes, len_bytes })
}

/// zonelab replays one file onto the device: a log of several is refused.
fn check_file(known: &mut Option<String>, file: &str) -> Result<(), String> {
    match known {
        Some(name) if name != file => Err(format!(
            "a second file '{}' (the log's file is '{}'): zonelab replays one file's I/O onto the device",
            shorten(file),
            shorten(name)
        )),
        Some(_) => Ok(()),
        None => {
            *known = Some(file.to_string());
            Ok(())
        }
    }
}

/// At most 60 characters of what was written, for messages.
fn shorten(text: &str) -> String {
    match text.char_indices().nth(60) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        let e = parse("log", text).unwrap_err();
        format!("{}: {}", e.line, e.message)
    }

    #[test]
    fn version_2_logs_parse_with_waits() {
        let log = parse("log", "fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x write 0 4096\n\n/dev/x wait 5 0\n/dev/x read 4096 8192\n/dev/x sync 0 0\n/dev/x close\n").unwrap();
        assert_eq!(log.version, 2);
        assert_eq!(log.file.as_deref(), Some("/dev/x"));
        let actions: Vec<Action> = log.entries.iter().map(|e| e.action).collect();
        assert_eq!(
            actions,
            [
                Action::File,
                Action::File,
                Action::Io { ddir: DDIR_WRITE, offset_bytes: 0, len_bytes: 4096 },
                Action::Wait { at_ms: 5 },
                Action::Io { ddir: DDIR_READ, offset_bytes: 4096, len_bytes: 8192 },
                Action::Sync,
                Action::File
            ]
        );
        assert_eq!(log.entries[3].line, 6);
    }

    #[test]
    fn version_3_delays_come_from_timestamps() {
        let log = parse(
            "log",
            "fio version 3 iolog\n0 f add\n10 f open\n25 f write 0 4096\n20 f write 4096 4096\n40 f trim 0 4096\n",
        )
        .unwrap();
        let delays: Vec<u64> = log.entries.iter().map(|e| e.delay_us).collect();
        assert_eq!(delays, [0, 10, 15, 0, 20]);
    }

    #[test]
    fn bad_lines_are_located_and_say_what_is_valid() {
        assert_eq!(err(""), "1: not a fio iolog: the first line is '', expected 'fio version 2 iolog' or 'fio version 3 iolog' or a binary blktrace capture (version 1 logs are not read)");
        assert!(err("fio version 2 iolog\nf write 0\n").starts_with("2: 3 fields; a version 2 line is"));
        assert!(err("fio version 2 iolog\nf write x 1\n").starts_with("2: offset 'x' is not a byte count"));
        assert!(err("fio version 2 iolog\nf write 0 4294967296\n").starts_with("2: length '4294967296'"));
        assert!(err("fio version 2 iolog\nf write 0 0\n").starts_with("2: a write of 0 bytes"));
        assert!(err("fio version 2 iolog\nf frob 0 1\n").starts_with("2: unknown action 'frob'"));
        assert!(err("fio version 2 iolog\nf frob\n").starts_with("2: unknown file action 'frob'"));
        assert!(err("fio version 2 iolog\nf read\n").starts_with("2: 'read' needs an offset"));
        assert!(err("fio version 2 iolog\nf add 1 2\n").starts_with("2: 'add' takes no offset"));
        assert!(err("fio version 2 iolog\nf add\ng add\n").starts_with("3: a second file 'g'"));
        assert!(err("fio version 3 iolog\nx f add\n").starts_with("2: 'x' is not a timestamp"));
        assert!(err("fio version 3 iolog\n1 f wait 1 0\n").starts_with("2: 'wait' is not part of version 3"));
        assert!(err("fio version 3 iolog\nf write 0 1\n").starts_with("2: 'f' is not a timestamp"));
    }

    #[test]
    fn entries_stay_small() {
        assert!(std::mem::size_of::<Entry>() <= 40, "{}", std::mem::size_of::<Entry>());
    }

    proptest::proptest! {
        /// Whatever the text, parsing returns a log or an error, never panics.
        #[test]
        fn parsing_never_panics(version in 2u8..=3, lines in proptest::collection::vec(
            proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::string_regex("[a-z]{0,6}").unwrap(),
                    proptest::string::string_regex("[0-9]{0,21}").unwrap(),
                    proptest::string::string_regex("\\PC{0,8}").unwrap(),
                    proptest::strategy::Just("write".to_string()),
                    proptest::strategy::Just("wait".to_string()),
                ],
                0..7,
            ),
            0..20,
        )) {
            let mut text = format!("fio version {version} iolog\n");
            for fields in lines {
                text.push_str(&fields.join(" "));
                text.push('\n');
            }
            let _ = parse("log", &text);
        }
    }
}
