//! Result directories (the CLI's `--out`, the Python package's `out=`): a
//! run's files never mix with an earlier run's, and zonelab never deletes
//! files it did not write.
//!
//! A run claims its directory before it starts: an absent or empty one is
//! taken (and marked with [`MARKER`]); one that holds files is refused,
//! unless `--force`, which empties it only if the marker says zonelab wrote
//! it. A run that fails half way leaves its marker, so the next one must say
//! `--force` to replace what is there.

use crate::error::Error;
use std::path::Path;

/// The file that marks a directory zonelab wrote (its content never varies,
/// so two runs' directories compare equal).
pub const MARKER: &str = ".zonelab-out";
const MARKER_TEXT: &str = "zonelab wrote this directory; a run with --force may replace what it holds.\n";
/// Bound on the entries a directory is searched for before it is refused.
const ENTRIES_MAX: usize = 1 << 20;

/// What claiming a directory will do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Claim {
    /// Create it.
    Create,
    /// Take it as it is: empty, or only the marker.
    Take,
    /// Empty it first (`--force` on an earlier run's results).
    Replace,
}

/// Checks, without touching anything, that a run may write into `dir`: a
/// command calls it before its runs, so that a refusal comes at once, not
/// after them.
pub fn check(dir: &Path, force: bool) -> Result<(), Error> {
    plan(dir, force).map(drop)
}

/// Makes `dir` ready for a run's files, just before they are written (see
/// the module comment): a run that writes nothing (one shard of several)
/// leaves no directory behind.
pub fn claim(dir: &Path, force: bool) -> Result<(), Error> {
    let io = |source: std::io::Error| Error::Io { path: dir.to_path_buf(), source };
    match plan(dir, force)? {
        Claim::Create => std::fs::create_dir_all(dir).map_err(io)?,
        Claim::Take => {}
        Claim::Replace => empty(dir)?,
    }
    std::fs::write(dir.join(MARKER), MARKER_TEXT).map_err(io)
}

fn plan(dir: &Path, force: bool) -> Result<Claim, Error> {
    let shown = dir.display();
    let io = |source: std::io::Error| Error::Io { path: dir.to_path_buf(), source };
    let link = match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Claim::Create),
        Err(e) => return Err(io(e)),
        Ok(m) => m.file_type().is_symlink(),
    };
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        let what = if link { "a link to something other than a directory" } else { "not a directory" };
        return Err(Error::Invalid(format!("output directory {shown} is {what}")));
    }
    let others = entries_besides_marker(dir).map_err(io)?;
    if others == 0 {
        return Ok(Claim::Take);
    }
    if !force {
        return Err(Error::Invalid(format!(
            "output directory {shown} already holds {others} files or directories: name a new one, or replace the \
             results of an earlier zonelab run there (--force; force=True in Python)"
        )));
    }
    if !dir.join(MARKER).is_file() {
        return Err(Error::Invalid(format!(
            "output directory {shown} holds files zonelab did not write (it has no {MARKER}): forcing (--force, \
             force=True) replaces only an earlier run's results; name a new directory"
        )));
    }
    Ok(Claim::Replace)
}

/// Entries of `dir` other than the marker (at most [`ENTRIES_MAX`] counted).
fn entries_besides_marker(dir: &Path) -> std::io::Result<usize> {
    let mut count = 0;
    for entry in std::fs::read_dir(dir)?.take(ENTRIES_MAX) {
        if entry?.file_name() != MARKER {
            count += 1;
        }
    }
    Ok(count)
}

/// Removes what an earlier run wrote into `dir` (the directory stays).
fn empty(dir: &Path) -> Result<(), Error> {
    let io = |source: std::io::Error| Error::Io { path: dir.to_path_buf(), source };
    for entry in std::fs::read_dir(dir).map_err(io)?.take(ENTRIES_MAX) {
        let entry = entry.map_err(io)?;
        // Links are removed, never followed.
        if entry.file_type().map_err(io)?.is_dir() {
            std::fs::remove_dir_all(entry.path()).map_err(io)?;
        } else {
            std::fs::remove_file(entry.path()).map_err(io)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("zonelab-out-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        dir
    }

    #[test]
    fn a_new_or_empty_directory_is_taken_and_marked() {
        let dir = scratch("new");
        assert!(check(&dir, false).is_ok());
        assert!(!dir.exists(), "checking creates nothing");
        assert!(claim(&dir, false).is_ok());
        assert!(dir.join(MARKER).is_file());
        // Only the marker: as good as empty (a shard that rendered nothing).
        assert!(claim(&dir, false).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn earlier_results_need_force_and_go_with_it() {
        let dir = scratch("again");
        assert!(claim(&dir, false).is_ok());
        std::fs::create_dir(dir.join("jobs")).unwrap();
        std::fs::write(dir.join("jobs/a.fio"), "x").unwrap();
        std::fs::write(dir.join("old.csv"), "x").unwrap();
        let refused = claim(&dir, false).unwrap_err().to_string();
        assert!(refused.contains("already holds 2") && refused.contains("--force"), "{refused}");
        assert_eq!(check(&dir, false).unwrap_err().to_string(), refused, "the early check says the same");
        assert!(check(&dir, true).is_ok());
        assert!(dir.join("old.csv").exists(), "checking touches nothing");
        assert!(claim(&dir, true).is_ok());
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [MARKER], "only the new run's marker is left");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn force_never_empties_a_directory_zonelab_did_not_write() {
        let dir = scratch("foreign");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("thesis.tex"), "mine").unwrap();
        let refused = claim(&dir, true).unwrap_err().to_string();
        assert!(refused.contains("did not write"), "{refused}");
        assert_eq!(std::fs::read_to_string(dir.join("thesis.tex")).unwrap(), "mine");
        let file = dir.join("thesis.tex");
        assert!(claim(&file, true).unwrap_err().to_string().contains("not a directory"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
