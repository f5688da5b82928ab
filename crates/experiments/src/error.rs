//! The experiments' error type. Messages are the ones the CLI prints after
//! `zonelab: `, so each names the file, run or option at fault and, for bad
//! input, what would be valid.

use std::path::{Path, PathBuf};

use zonelab_device::{ConfigError, ValueError};
use zonelab_workload::fio::job::JobError;

/// Why an experiment, a plan or a calibration could not run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Input the user gave (an option, a filter, a measurements file, a
    /// shard) is not valid; the message says what would be.
    #[error("{0}")]
    Invalid(String),
    /// A file or directory could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A CSV file that could not be written or read.
    #[error("{}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// The CSV library's error.
        source: csv::Error,
    },
    /// An input file (a store, a measurements file) that cannot be read.
    #[error(transparent)]
    Input(#[from] zonelab_sim::input::InputError),
    /// A device configuration that cannot describe a device.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A device option value (a size) that does not parse.
    #[error(transparent)]
    Value(#[from] ValueError),
    /// A fio job file that does not parse, or whose jobs cannot run.
    #[error(transparent)]
    Job(#[from] JobError),
    /// A stored or serialized result that does not (de)serialize; `what`
    /// names it.
    #[error("{what}: {source}")]
    Json {
        /// What was being read or written, e.g. "a stored calibration result".
        what: String,
        /// The parser's error.
        source: serde_json::Error,
    },
    /// A measurement or run that zonelab does not map to a simulation; the
    /// message says what it lacks.
    #[error("{0}")]
    Unmapped(String),
    /// A run that went through but whose result cannot be used: a command
    /// failed, a job reported an error, a number is missing.
    #[error("{0}")]
    Failed(String),
    /// Drawing a plot failed (the plotting library's message).
    #[error("{0}")]
    Plot(String),
    /// The file system refused the device (a ZNS+ run's mkfs).
    #[error(transparent)]
    Fs(#[from] zonelab_fs::FsError),
    /// A file-system benchmark that could not run or failed under its
    /// workload.
    #[error(transparent)]
    FsBench(#[from] zonelab_workload::fsbench::FsBenchError),
    /// An error inside a named run or experiment: "`context`: `source`".
    #[error("{context}: {source}")]
    In {
        /// The run, experiment or file the error happened in.
        context: String,
        /// The cause.
        source: Box<Error>,
    },
}

/// Experiments' results.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps `self` with the name of the run or experiment it happened in.
    pub fn within(self, context: impl Into<String>) -> Error {
        Error::In { context: context.into(), source: Box::new(self) }
    }
}

/// A closure for `map_err` that names the file or directory an I/O error
/// happened on.
pub fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io { path: path.to_path_buf(), source }
}

/// A closure for `map_err` that names what a JSON error happened on.
pub fn json(what: &str) -> impl FnOnce(serde_json::Error) -> Error + '_ {
    move |source| Error::Json { what: what.to_string(), source }
}
