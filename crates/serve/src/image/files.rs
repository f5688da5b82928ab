//! Finding, opening and creating the two files of an image without ever
//! touching a file that is not one: the server runs as root, so a path it is
//! given may name another program's data, a device or a symlink to either.
//!
//! Every check is made before anything is created or written: both paths
//! are looked at with `symlink_metadata` (a symlink is refused, never
//! followed), existing files are opened with `O_NOFOLLOW | O_NONBLOCK` (a
//! symlink or FIFO swapped in after the look is not followed or waited on)
//! and must be the regular file looked at, with no other name (hard link),
//! and new files are created with
//! `O_CREAT | O_EXCL`, so a file that appears meanwhile is never truncated.

use crate::error::ImageError;
use std::fs::{File, Metadata, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The zone file of the image whose data file is `path`.
pub fn zones_path(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".zones");
    PathBuf::from(p)
}

/// The two files of an image, open.
#[derive(Debug)]
pub struct Pair {
    /// FILE: the data.
    pub data: File,
    /// FILE.zones: header, zone records, checksums.
    pub zones: File,
}

/// What is at an image path.
enum Found {
    Missing,
    Regular(Metadata),
}

fn look(path: &Path) -> Result<Found, ImageError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Found::Missing),
        Err(e) => return Err(ImageError::io(path, e)),
    };
    let t = meta.file_type();
    let kind = if t.is_file() {
        return Ok(Found::Regular(meta));
    } else if t.is_symlink() {
        "symbolic link"
    } else if t.is_dir() {
        "directory"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_socket() {
        "socket"
    } else {
        "file of an unknown kind"
    };
    Err(ImageError::NotRegular { path: path.to_path_buf(), kind })
}

/// Opens the regular file `looked` described, refusing anything else.
fn open_regular(path: &Path, looked: &Metadata, writable: bool) -> Result<File, ImageError> {
    let file = OpenOptions::new()
        .read(true)
        .write(writable)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // O_NOFOLLOW's answer for a symlink put there since the look.
            Some(libc::ELOOP) => ImageError::NotRegular { path: path.to_path_buf(), kind: "symbolic link" },
            _ => ImageError::io(path, e),
        })?;
    let meta = file.metadata().map_err(|e| ImageError::io(path, e))?;
    if !meta.is_file() || (meta.dev(), meta.ino()) != (looked.dev(), looked.ino()) {
        return Err(ImageError::NotRegular { path: path.to_path_buf(), kind: "file replaced while it was opened" });
    }
    // Another name for the same file could be anyone's file (a hard link made to /etc/shadow, say): writing
    // through this one would change it. An image's files have one name.
    if meta.nlink() != 1 {
        return Err(ImageError::HardLinked { path: path.to_path_buf(), links: meta.nlink() });
    }
    Ok(file)
}

impl Pair {
    /// Opens the image at `path` (FILE and FILE.zones). `Ok(None)`: neither
    /// exists. One without the other, or either not a regular file, is an
    /// error naming it.
    pub fn open(path: &Path, writable: bool) -> Result<Option<Pair>, ImageError> {
        let zones_path = zones_path(path);
        let (data, zones) = (look(path)?, look(&zones_path)?);
        let half = |present: &Path, missing: &Path, hint| ImageError::HalfPair {
            present: present.to_path_buf(),
            missing: missing.to_path_buf(),
            hint,
        };
        match (data, zones) {
            (Found::Missing, Found::Missing) => Ok(None),
            (Found::Regular(_), Found::Missing) => {
                Err(half(path, &zones_path, ", or restore the zone file if it was this image's"))
            }
            (Found::Missing, Found::Regular(_)) => {
                Err(half(&zones_path, path, ", or restore the data file if it was this image's"))
            }
            (Found::Regular(d), Found::Regular(z)) => Ok(Some(Pair {
                data: open_regular(path, &d, writable)?,
                zones: open_regular(&zones_path, &z, writable)?,
            })),
        }
    }

    /// Creates both files, each exclusively (never an existing file), and
    /// hands them to `init`; if anything fails, removes what it created.
    pub fn create(path: &Path, init: impl FnOnce(&Pair) -> Result<(), ImageError>) -> Result<Pair, ImageError> {
        let zones_path = zones_path(path);
        let create = |p: &Path| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(p)
                .map_err(|e| ImageError::io(p, e))
        };
        let data = create(path)?;
        let zones = match create(&zones_path) {
            Ok(zones) => zones,
            Err(e) => {
                let _ = std::fs::remove_file(path);
                return Err(e);
            }
        };
        let pair = Pair { data, zones };
        if let Err(e) = init(&pair) {
            // Both files are ours (created exclusively just now): nothing else is lost.
            let _ = std::fs::remove_file(path);
            let _ = std::fs::remove_file(&zones_path);
            return Err(e);
        }
        Ok(pair)
    }
}

/// The length of `file` (at `path`, for the error).
pub fn length(file: &File, path: &Path) -> Result<u64, ImageError> {
    file.metadata().map(|m| m.len()).map_err(|e| ImageError::io(path, e))
}

/// The parts of `file` between byte `from` and `to` that may hold data,
/// as byte ranges in order: everything else is a hole, which reads as
/// zeros. A file system that cannot tell holes gives the whole range.
/// A restart of a large conventional namespace reads only these instead
/// of gigabytes of zeros.
pub fn data_ranges(file: &File, from: u64, to: u64) -> std::io::Result<Vec<(u64, u64)>> {
    use rustix::fs::{seek, SeekFrom};
    use rustix::io::Errno;
    // The offset it moves is not used: the image reads and writes at positions.
    let seek_to = |pos| match seek(file, pos) {
        Ok(at) => Ok(Some(at)),
        // No data (or hole) at or after the position.
        Err(Errno::NXIO) => Ok(None),
        Err(e) => Err(std::io::Error::from(e)),
    };
    let mut ranges = Vec::new();
    let mut at = from;
    // Bound: each pass moves `at` past one data range.
    while at < to {
        let Some(start) = seek_to(SeekFrom::Data(at))? else { break };
        if start >= to {
            break;
        }
        let end = seek_to(SeekFrom::Hole(start))?.unwrap_or(to).min(to);
        debug_assert!(end > start, "a data range ends after it starts");
        ranges.push((start, end));
        at = end;
    }
    Ok(ranges)
}

#[cfg(test)]
mod tests {
    use super::data_ranges;
    use std::os::unix::fs::{FileExt, MetadataExt};

    #[test]
    fn data_ranges_cover_what_was_written_and_skip_holes_the_file_system_reports() {
        let dir = crate::scratch_dir("data-ranges");
        let path = dir.join("sparse");
        let file = std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).unwrap();
        let len: u64 = 64 << 20;
        file.set_len(len).unwrap();
        file.write_all_at(&[1; 4096], 4096).unwrap();
        file.write_all_at(&[2; 4096], 32 << 20).unwrap();
        let ranges = data_ranges(&file, 0, len).unwrap();
        let covered = |at: u64| ranges.iter().any(|&(s, e)| s <= at && at < e);
        assert!(covered(4096) && covered(4096 + 4095) && covered(32 << 20), "{ranges:?}");
        assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0) && ranges.iter().all(|&(s, e)| s < e && e <= len));
        // Where the file system keeps the file sparse (allocated far below its
        // length), the untouched middle is a hole and left out.
        if file.metadata().unwrap().blocks() * 512 < len / 2 {
            assert!(!covered(16 << 20), "{ranges:?}");
        }
        let inside = data_ranges(&file, 8 << 20, 40 << 20).unwrap();
        assert!(inside.iter().all(|&(s, e)| (8 << 20) <= s && e <= (40 << 20)), "{inside:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
