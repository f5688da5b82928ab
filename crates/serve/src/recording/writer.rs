//! The writing side of a recording: one buffered file the transports'
//! threads share, each command a line under one lock. A write that fails
//! ends the recording (said once on stderr), never the server.

use super::{Op, Record, HEADER};
use crate::ServeError;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use zonelab_device::{CmdResult, Command, Completion};
use zonelab_sim::Nanos;

/// Buffered bytes of a recording: a write to the file every ~600 commands.
const BUFFER_BYTES: usize = 64 << 10;

/// The largest recording unless the server is told otherwise
/// (`serve --record-max-bytes`): a host that floods commands fills no more
/// of the disk than this (about 170 million commands).
pub const RECORD_BYTES_MAX_DEFAULT: u64 = 16 << 30;

/// A transport queue: an NVMe/TCP controller's queue, or ublk's queue
/// `qid` (controller 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct QueueId {
    /// NVMe/TCP: the controller (CNTLID); 0 for ublk.
    pub controller: u16,
    /// The queue (NVMe/TCP: QID; ublk: the queue's index).
    pub qid: u16,
}

impl std::fmt::Display for QueueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.controller, self.qid)
    }
}

impl QueueId {
    /// `CNTLID.QID` as [`QueueId`]'s Display writes it.
    pub fn parse(s: &str) -> Option<Self> {
        let (controller, qid) = s.split_once('.')?;
        Some(QueueId { controller: controller.parse().ok()?, qid: qid.parse().ok()? })
    }
}

/// What the transport knows of a command when it hands it to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Arrival {
    /// The queue it came on.
    pub queue: QueueId,
    /// Server wall time, ns since it started.
    pub at_ns: Nanos,
    /// The queue's last command whose completion the host had been sent.
    pub dep: Option<u64>,
    /// The queue's commands outstanding (not counting this one).
    pub outstanding: u32,
}

/// `serve --record FILE`: the recording being written.
pub struct Recorder {
    path: PathBuf,
    state: Mutex<State>,
}

struct State {
    out: Option<BufWriter<File>>,
    next_seq: u64,
    /// Bytes written so far (header included), and the most there may be.
    bytes: u64,
    bytes_max: u64,
}

impl Recorder {
    /// Creates `path` exclusively (never over an existing file or through
    /// a symlink) and writes the header and `comment` lines.
    pub fn create(path: &Path, comment: &str) -> Result<Self, ServeError> {
        let error = |source| ServeError::RecordCreate { path: path.to_path_buf(), source };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
        let file = options.open(path).map_err(error)?;
        let mut out = BufWriter::with_capacity(BUFFER_BYTES, file);
        let columns = "# seq at_ns vt_ns vc_ns queue nsid dep out status result op args...";
        let mut head = format!("{HEADER}\n");
        for line in comment.lines() {
            head += &format!("# {line}\n");
        }
        head += columns;
        writeln!(out, "{head}").and_then(|()| out.flush()).map_err(error)?;
        let state =
            State { out: Some(out), next_seq: 1, bytes: head.len() as u64 + 1, bytes_max: RECORD_BYTES_MAX_DEFAULT };
        Ok(Recorder { path: path.to_path_buf(), state: Mutex::new(state) })
    }

    /// The recording ends (said once on stderr, the server goes on) before
    /// a line would take it past `bytes_max` bytes.
    pub fn with_bytes_max(self, bytes_max: u64) -> Self {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).bytes_max = bytes_max;
        self
    }

    /// Writes the line of `cmd`, which the model answered with `completion`
    /// (times in the server's clock); returns its SEQ.
    pub fn record(&self, arrival: &Arrival, nsid: u32, cmd: &Command<'_>, completion: &Completion) -> u64 {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let seq = state.next_seq;
        state.next_seq += 1;
        let result_lba = match (&completion.result, cmd) {
            (CmdResult::Lba(lba), Command::Append { .. }) => Some(*lba),
            _ => None,
        };
        let record = Record {
            seq,
            at_ns: arrival.at_ns,
            vt_ns: completion.submit_ns,
            vc_ns: completion.complete_ns,
            queue: arrival.queue,
            nsid,
            dep: arrival.dep,
            outstanding: arrival.outstanding,
            status: completion.status,
            result_lba,
            op: Op::of(cmd),
        };
        if state.out.is_none() {
            return seq;
        }
        let line = record.to_line();
        let bytes = state.bytes + line.len() as u64 + 1;
        if bytes > state.bytes_max {
            let full = std::io::Error::other(format!(
                "the recording reached its {} bytes (--record-max-bytes)",
                state.bytes_max
            ));
            self.fail(&mut state, &full);
            return seq;
        }
        state.bytes = bytes;
        if let Some(Err(e)) = state.out.as_mut().map(|out| writeln!(out, "{line}")) {
            self.fail(&mut state, &e);
        }
        seq
    }

    /// Hands what is buffered to the file (on a clean stop, on SIGUSR1).
    pub fn flush(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(Err(e)) = state.out.as_mut().map(|out| out.flush()) {
            self.fail(&mut state, &e);
        }
    }

    fn fail(&self, state: &mut State, e: &std::io::Error) {
        // What is buffered is whole lines: keep them (a second error is moot).
        if let Some(mut out) = state.out.take() {
            let _ = out.flush();
        }
        eprintln!(
            "zonelab: --record {}: {e}; the recording ends here (commands up to {} may be missing), the server goes on",
            self.path.display(),
            state.next_seq - 1
        );
    }
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.flush();
    }
}
