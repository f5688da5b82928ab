//! blktrace captures (`blktrace -d DEV` writes `DEV.blktrace.N`, one per
//! CPU; `blkparse -d` merges them) read without blkparse, as fio's
//! `blktrace.c` reads them for `read_iolog`: records of `struct
//! blk_io_trace` (48 bytes, in the recording machine's byte order, magic
//! 0x65617400 with version 7 in the low byte) each followed by `pdu_len`
//! bytes of payload. Only queue events (`__BLK_TA_QUEUE`) become I/O, as in
//! fio; a record's delay is its time (ns) minus the previous queue event's.

use super::iolog::{Action, Entry, IoLog, IologError, IOLOG_ENTRIES_MAX};
use super::job::{DDIR_READ, DDIR_TRIM, DDIR_WRITE};

/// `BLK_IO_TRACE_MAGIC`: the high 24 bits of every record's first word.
const MAGIC: u32 = 0x6561_7400;
/// `BLK_IO_TRACE_VERSION`, the only one fio reads.
const VERSION: u32 = 7;
/// Bytes of `struct blk_io_trace` before its payload.
const RECORD_BYTES: usize = 48;
/// `__BLK_TA_QUEUE`, in the action's low 16 bits.
const TA_QUEUE: u32 = 1;
/// Categories (`BLK_TC_*`), in the action's high 16 bits.
const TC_WRITE: u32 = 1 << (1 + 16);
const TC_FLUSH: u32 = 1 << (2 + 16);
const TC_NOTIFY: u32 = 1 << (10 + 16);
const TC_DISCARD: u32 = 1 << (13 + 16);

/// Whether `bytes` start like a blktrace capture (either byte order).
pub fn is_blktrace(bytes: &[u8]) -> bool {
    let Some(first) = bytes.get(..4) else { return false };
    let word = [first[0], first[1], first[2], first[3]];
    [u32::from_le_bytes(word), u32::from_be_bytes(word)].iter().any(|m| m & 0xffff_ff00 == MAGIC)
}

/// One record's fields that a replay uses.
struct Record {
    time_ns: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    device: u32,
    pdu_bytes: usize,
}

/// Reads the record at `at` in the capture's byte order (`little`).
fn record(data: &[u8], at: usize, little: bool) -> Result<Record, String> {
    let Some(raw) = data.get(at..at + RECORD_BYTES) else {
        return Err(format!("a record cut short: {} of its {RECORD_BYTES} bytes", data.len() - at));
    };
    let u32_at = |i: usize| {
        let b = [raw[i], raw[i + 1], raw[i + 2], raw[i + 3]];
        if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }
    };
    let u64_at = |i: usize| {
        let (a, b) = (u64::from(u32_at(i)), u64::from(u32_at(i + 4)));
        if little {
            a | b << 32
        } else {
            a << 32 | b
        }
    };
    let magic = u32_at(0);
    if magic & 0xffff_ff00 != MAGIC {
        return Err(format!("bad magic {magic:#010x} (a blktrace record starts with 0x654174{VERSION:02x})"));
    }
    if magic & 0xff != VERSION {
        return Err(format!("blktrace version {} (fio and zonelab read version {VERSION})", magic & 0xff));
    }
    let pdu = u32_at(44);
    let pdu_len = if little { pdu >> 16 } else { pdu & 0xffff };
    Ok(Record {
        time_ns: u64_at(8),
        sector: u64_at(16),
        bytes: u32_at(24),
        action: u32_at(28),
        device: u32_at(36),
        pdu_bytes: pdu_len as usize,
    })
}

/// Parses a capture; `path` only names it in errors, whose "line" is the
/// record's number (from 1).
pub fn parse(path: &str, data: &[u8]) -> Result<IoLog, IologError> {
    let little = data.len() >= 4 && u32::from_le_bytes([data[0], data[1], data[2], data[3]]) & 0xffff_ff00 == MAGIC;
    let mut log = IoLog { version: 0, file: None, entries: Vec::new() };
    let (mut at, mut number, mut last_ns, mut device) = (0usize, 0u32, None::<u64>, None);
    while at < data.len() {
        number += 1;
        let error = |message: String| IologError { path: path.into(), line: number, message };
        let r = record(data, at, little).map_err(|m| error(format!("record at byte {at}: {m}")))?;
        at += RECORD_BYTES + r.pdu_bytes;
        if r.action & 0xffff != TA_QUEUE || r.action & TC_NOTIFY != 0 {
            continue;
        }
        if *device.get_or_insert(r.device) != r.device {
            let message = format!("a second device {:#x}: zonelab replays one device's I/O", r.device);
            return Err(error(message));
        }
        let delay_us = last_ns.map_or(0, |last| r.time_ns.saturating_sub(last) / 1000);
        last_ns = Some(r.time_ns);
        if log.entries.len() + 2 > IOLOG_ENTRIES_MAX {
            return Err(error(format!("more than {IOLOG_ENTRIES_MAX} entries, the most one replay holds")));
        }
        push_actions(&mut log.entries, &r, number, delay_us).map_err(error)?;
    }
    log.file = device.map(|d| format!("device {}:{}", d >> 20, d & 0xfffff));
    Ok(log)
}

/// The entries of a queue event: a discard's trim, a flush's sync and then
/// its data if it carries some (fio keeps only the flush), a read or write.
fn push_actions(entries: &mut Vec<Entry>, r: &Record, line: u32, delay_us: u64) -> Result<(), String> {
    let offset_bytes = r.sector.checked_mul(512).ok_or_else(|| format!("sector {} is past 2^64 bytes", r.sector))?;
    let io = |ddir| Action::Io { ddir, offset_bytes, len_bytes: r.bytes };
    let mut delay_us = delay_us;
    if r.action & TC_DISCARD != 0 {
        entries.push(Entry { line, delay_us, action: io(DDIR_TRIM) });
        return Ok(());
    }
    if r.action & TC_FLUSH != 0 {
        entries.push(Entry { line, delay_us, action: Action::Sync });
        delay_us = 0;
    }
    if r.bytes > 0 {
        let ddir = if r.action & TC_WRITE != 0 { DDIR_WRITE } else { DDIR_READ };
        entries.push(Entry { line, delay_us, action: io(ddir) });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A little-endian record of `action` (category bits included).
    pub(crate) fn record_bytes(time_ns: u64, sector: u64, bytes: u32, action: u32, pdu: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend((MAGIC | VERSION).to_le_bytes());
        out.extend(0u32.to_le_bytes());
        out.extend(time_ns.to_le_bytes());
        out.extend(sector.to_le_bytes());
        out.extend(bytes.to_le_bytes());
        out.extend(action.to_le_bytes());
        out.extend([0u8; 4]); // pid
        out.extend((259u32 << 20 | 1).to_le_bytes());
        out.extend([0u8; 4]); // cpu
        out.extend(0u16.to_le_bytes());
        out.extend((pdu.len() as u16).to_le_bytes());
        out.extend(pdu);
        out
    }

    const QUEUE: u32 = TA_QUEUE | 1 << (4 + 16);
    const ISSUE: u32 = 7 | 1 << (6 + 16);

    #[test]
    fn queue_events_become_entries() {
        let mut data = record_bytes(1000, 0, 4096, QUEUE | TC_WRITE, &[]);
        data.extend(record_bytes(1500, 0, 4096, ISSUE | TC_WRITE, b"pdu"));
        data.extend(record_bytes(5000, 8, 8192, QUEUE | 1 << 16, &[]));
        data.extend(record_bytes(9000, 0, 0, QUEUE | TC_FLUSH, &[]));
        data.extend(record_bytes(9000, 4096, 1 << 20, QUEUE | TC_DISCARD | TC_WRITE, &[]));
        assert!(is_blktrace(&data));
        let log = parse("t", &data).unwrap();
        let got: Vec<(u32, u64, Action)> = log.entries.iter().map(|e| (e.line, e.delay_us, e.action)).collect();
        let io = |ddir, offset_bytes, len_bytes| Action::Io { ddir, offset_bytes, len_bytes };
        assert_eq!(
            got,
            [
                (1, 0, io(DDIR_WRITE, 0, 4096)),
                (3, 4, io(DDIR_READ, 4096, 8192)),
                (4, 4, Action::Sync),
                (5, 0, io(DDIR_TRIM, 4096 * 512, 1 << 20))
            ]
        );
        assert_eq!(log.file.as_deref(), Some("device 259:1"));
    }

    #[test]
    fn bad_captures_are_located() {
        let mut data = record_bytes(0, 0, 4096, QUEUE, &[]);
        data.extend(&record_bytes(0, 0, 4096, QUEUE, &[])[..20]);
        assert_eq!(
            parse("t", &data).unwrap_err().to_string(),
            "t:2: record at byte 48: a record cut short: 20 of its 48 bytes"
        );
        let mut data = record_bytes(0, 0, 4096, QUEUE, &[]);
        data[0] = 6;
        assert!(parse("t", &data).unwrap_err().message.contains("blktrace version 6"));
        let mut data = record_bytes(0, 0, 4096, QUEUE, &[]);
        data.extend([0u8; 48]);
        assert!(parse("t", &data).unwrap_err().message.contains("bad magic 0x00000000"));
    }

    proptest::proptest! {
        /// Whatever the bytes after a valid first record, parsing never panics.
        #[test]
        fn parsing_never_panics(tail in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            let mut data = record_bytes(0, 0, 4096, QUEUE, &[]);
            data.extend(tail);
            let _ = parse("t", &data);
        }
    }
}
