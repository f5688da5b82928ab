//! The statistics file of `serve --stats`. The server runs as root, and a
//! plain write to a path under a world-writable directory would follow a
//! symlink planted there and truncate whatever it points to. So the file is
//! created exclusively when the server starts (an existing file or symlink is
//! refused) and later rewritten through the descriptor opened then, never by
//! path.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::ServeError;

/// The `--stats` file: created by the server, rewritten whole with each report.
#[derive(Debug)]
pub struct StatsFile {
    file: File,
    path: PathBuf,
}

impl StatsFile {
    /// Creates `path` (mode 0600); fails when anything already exists there.
    pub fn create(path: &Path) -> Result<Self, ServeError> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => ServeError::StatsFileExists { path: path.to_path_buf() },
            _ => ServeError::StatsFileCreate { path: path.to_path_buf(), source: e },
        })?;
        Ok(Self { file, path: path.to_path_buf() })
    }

    /// Replaces the file's contents with `report`.
    pub fn rewrite(&mut self, report: &str) -> Result<(), ServeError> {
        let result = (|| {
            self.file.set_len(0)?;
            self.file.seek(SeekFrom::Start(0))?;
            self.file.write_all(report.as_bytes())?;
            self.file.flush()
        })();
        result.map_err(|source| ServeError::StatsFileWrite { path: self.path.clone(), source })
    }

    /// Where the file is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Writes the statistics to the `--stats` file (replacing its contents) or to stderr.
pub fn write_stats(stats: &std::sync::Mutex<Option<StatsFile>>, report: &str) {
    let mut stats = stats.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match stats.as_mut() {
        Some(file) => {
            if let Err(e) = file.rewrite(report) {
                eprintln!("zonelab: {e}");
            }
        }
        None => eprint!("{report}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        crate::scratch_dir(&format!("stats-{name}"))
    }

    #[test]
    fn rewrites_replace_the_contents() {
        let dir = scratch("rewrite");
        let path = dir.join("stats.txt");
        let mut file = StatsFile::create(&path).unwrap();
        file.rewrite("a long first report\n").unwrap();
        file.rewrite("short\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "short\n");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_existing_file_is_refused_and_left_alone() {
        let dir = scratch("existing");
        let path = dir.join("stats.txt");
        std::fs::write(&path, "precious").unwrap();
        let err = StatsFile::create(&path).unwrap_err().to_string();
        assert!(err.contains("already exists"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_is_refused_and_its_target_untouched() {
        let dir = scratch("symlink");
        let target = dir.join("target");
        std::fs::write(&target, "precious").unwrap();
        let link = dir.join("stats.txt");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(StatsFile::create(&link).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        // A dangling link is refused too: creating through it would make a file where the link points.
        let dangling = dir.join("dangling");
        std::os::unix::fs::symlink(dir.join("nowhere"), &dangling).unwrap();
        assert!(StatsFile::create(&dangling).is_err());
        assert!(!dir.join("nowhere").exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
