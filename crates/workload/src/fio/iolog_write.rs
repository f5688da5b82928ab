//! `write_iolog=FILE`: the I/Os a thread queues, as fio 3.33's `iolog.c`
//! writes them (version 3): the header, `TIME_US FILE add` and `open` when
//! the thread starts, `TIME_US FILE ACTION OFFSET LENGTH` for each I/O as it
//! is issued (`log_io_u`, from `td_io_queue`: before the device sees it,
//! so an append's line has its zone's offset), `TIME_US FILE close` at the
//! end. TIME_US is whole µs of simulated time since the thread started.
//! FILE is the job's `filename`, else fio's default `JOBNAME.CLONE.0`.
//!
//! Unlike fio, which appends to the file, zonelab creates it exclusively
//! (an existing file refuses the run), as the other logs.

use super::job::{DDIR_READ, DDIR_TRIM, DDIR_WRITE};
use super::log::LogFile;
use std::path::PathBuf;

/// fio's `DDIR_SYNC`: an `end_fsync` flush. fio logs the offset and length
/// its recycled io_u held before; zonelab writes 0 and 0.
pub const DDIR_SYNC: usize = 3;

/// A thread's iolog being written.
#[derive(Debug)]
pub struct IologWriter {
    file: LogFile,
    /// The name its lines give the file (fio's `file_name`).
    name: String,
}

impl IologWriter {
    /// Creates `path` (which must not exist) with the lines fio writes
    /// before the first I/O.
    pub(super) fn create(path: &str, name: String) -> Result<Self, String> {
        let mut file = LogFile::create(PathBuf::from(path), "write_iolog", false)?;
        file.text(format_args!("fio version 3 iolog\n0 {name} add\n0 {name} open\n"));
        Ok(IologWriter { file, name })
    }

    /// A queued I/O of direction `ddir` (fio's `io_ddir_name`).
    pub(super) fn io(&mut self, time_us: u64, ddir: usize, offset: u64, len: u64) {
        let action = match ddir {
            DDIR_READ => "read",
            DDIR_WRITE => "write",
            DDIR_TRIM => "trim",
            _ => "sync",
        };
        self.file.text(format_args!("{time_us} {} {action} {offset} {len}\n", self.name));
    }

    /// The thread ends: its file closes.
    pub(super) fn close(&mut self, time_us: u64) {
        self.file.text(format_args!("{time_us} {} close\n", self.name));
    }

    pub(super) fn file_mut(&mut self) -> &mut LogFile {
        &mut self.file
    }
}
