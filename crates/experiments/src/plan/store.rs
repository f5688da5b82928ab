//! The result store: a directory of JSON Lines files, one line per finished
//! run, `{"key": ..., "spec": ..., "result": ...}`, keyed by the hash of the
//! run's specification. Each writer (the serial runner, a shard of a Slurm
//! job array, a sweep's driver) appends to its own file, so writers never
//! share one; reading takes every `*.jsonl` of the directory.

use super::RunSpec;
use crate::error::{io, json, Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Files of a store read at most, so a wrong directory cannot take forever.
const FILES_MAX: usize = 100_000;
/// Largest store file read (a characterization record with its figure is ~100 KiB).
const FILE_BYTES_MAX: u64 = 4 << 30;

/// One stored line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stored {
    /// Hash of the spec ([`RunSpec::key`]).
    pub key: String,
    /// What ran.
    pub spec: RunSpec,
    /// What it gave.
    pub result: Value,
}

impl Stored {
    /// The line as stored (without its newline).
    pub fn line(&self) -> String {
        serde_json::to_string(self).expect("stored runs serialize")
    }

    /// Parses a stored line; `what` names it in errors.
    pub fn parse(line: &str, what: &str) -> Result<Stored> {
        let stored: Stored = serde_json::from_str(line).map_err(json(what))?;
        let key = stored.spec.key();
        if stored.key != key {
            return Err(Error::Invalid(format!("{what}: key {} is not the hash of its spec ({key})", stored.key)));
        }
        Ok(stored)
    }
}

/// The runs of a store directory, and the file this writer appends to.
pub struct Store {
    runs: BTreeMap<String, Stored>,
    file: PathBuf,
}

impl Store {
    /// Opens (creating it) directory `dir`, reading every `*.jsonl` in it;
    /// new runs go to `dir/file_name`.
    pub fn open(dir: &Path, file_name: &str) -> Result<Store> {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io(dir))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .take(FILES_MAX)
            .collect();
        files.sort();
        let mut store = Store { runs: BTreeMap::new(), file: dir.join(file_name) };
        for path in files {
            store.read(&path)?;
        }
        Ok(store)
    }

    fn read(&mut self, path: &Path) -> Result<()> {
        let text = zonelab_sim::input::read_text(path, FILE_BYTES_MAX)?;
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            // A writer killed mid-line leaves a partial last line: that run reruns.
            let last_partial = i + 1 == lines.len() && !text.ends_with('\n');
            match Stored::parse(line, &format!("{}: line {}", path.display(), i + 1)) {
                Ok(stored) => {
                    self.runs.entry(stored.key.clone()).or_insert(stored);
                }
                Err(_) if last_partial => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// The stored run with `key`, if any.
    pub fn get(&self, key: &str) -> Option<&Stored> {
        self.runs.get(key)
    }

    /// Stored runs.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Appends a finished run (flushed, so a crash keeps what finished).
    pub fn append(&mut self, stored: Stored) -> Result<()> {
        let mut file =
            std::fs::OpenOptions::new().create(true).append(true).open(&self.file).map_err(io(&self.file))?;
        let mut line = stored.line();
        line.push('\n');
        file.write_all(line.as_bytes()).map_err(io(&self.file))?;
        self.runs.insert(stored.key.clone(), stored);
        Ok(())
    }

    /// An in-memory store (nothing written): the runner without `--store`.
    pub fn memory() -> Store {
        Store { runs: BTreeMap::new(), file: PathBuf::new() }
    }

    /// Stores a finished run: in memory, or appended to this writer's file.
    pub fn insert(&mut self, stored: Stored) -> Result<()> {
        if self.file.as_os_str().is_empty() {
            self.runs.insert(stored.key.clone(), stored);
            return Ok(());
        }
        self.append(stored)
    }
}
