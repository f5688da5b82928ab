//! Input files (device configurations, job files, traces) opened only if
//! they are files, and read with a size cap: a device node given by mistake
//! (`/dev/zero`, a disk) or a huge file is an error, not an endless read.

use std::fs::{File, FileType};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest configuration or job file read whole (16 MiB).
pub const TEXT_BYTES_MAX: u64 = 16 << 20;

/// Why a file type is refused, or `None` for a regular file or a pipe
/// (process substitution, `/dev/stdin` redirected from a file).
fn refusal(kind: FileType) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return None;
        }
        if kind.is_char_device() || kind.is_block_device() {
            return Some("is a device node, not a file");
        }
        if kind.is_socket() {
            return Some("is a socket, not a file");
        }
    }
    if kind.is_dir() {
        return Some("is a directory, not a file");
    }
    (!kind.is_file()).then_some("is not a regular file")
}

/// Why an input file could not be read. Each message starts with the path
/// as given, so the CLI can print it as is.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The path exists but is not something to read text from: a device
    /// node, a socket or a directory (`why` says which).
    #[error("{} {why}", path.display())]
    Refused {
        /// The path as given.
        path: PathBuf,
        /// What the path is instead of a file, e.g. "is a device node, not a file".
        why: &'static str,
    },
    /// The operating system refused to stat, open or read the file.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file holds more than the cap for a text input.
    #[error("{} is larger than {max_bytes} bytes, the most read as a text input", path.display())]
    TooLarge {
        /// The path as given.
        path: PathBuf,
        /// The cap the caller read with.
        max_bytes: u64,
    },
    /// The file's bytes are not valid UTF-8.
    #[error("{} is not UTF-8 text", path.display())]
    NotUtf8 {
        /// The path as given.
        path: PathBuf,
    },
}

/// For callers that still report errors as text.
impl From<InputError> for String {
    fn from(e: InputError) -> String {
        e.to_string()
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> InputError + '_ {
    move |source| InputError::Io { path: path.to_path_buf(), source }
}

/// Opens `path` for reading if it is a regular file or a pipe. The type is
/// checked before opening (opening a device can have effects) and again on
/// the open handle (the path may have changed in between).
pub fn open_input(path: &Path) -> Result<File, InputError> {
    let refused = |why| InputError::Refused { path: path.to_path_buf(), why };
    let kind = std::fs::metadata(path).map_err(io_error(path))?.file_type();
    if let Some(why) = refusal(kind) {
        return Err(refused(why));
    }
    let file = File::open(path).map_err(io_error(path))?;
    let kind = file.metadata().map_err(io_error(path))?.file_type();
    match refusal(kind) {
        Some(why) => Err(refused(why)),
        None => Ok(file),
    }
}

/// Reads the UTF-8 text of `path`, at most `max_bytes` of it: a larger file
/// is an error (its contents are never echoed).
pub fn read_text(path: &Path, max_bytes: u64) -> Result<String, InputError> {
    let mut bytes = Vec::new();
    open_input(path)?.take(max_bytes + 1).read_to_end(&mut bytes).map_err(io_error(path))?;
    if bytes.len() as u64 > max_bytes {
        return Err(InputError::TooLarge { path: path.to_path_buf(), max_bytes });
    }
    String::from_utf8(bytes).map_err(|_| InputError::NotUtf8 { path: path.to_path_buf() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("zonelab-input-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn files_are_read_up_to_the_cap() {
        let path = temp("ten", b"0123456789");
        assert_eq!(read_text(&path, 10).unwrap(), "0123456789");
        let e = read_text(&path, 9).unwrap_err().to_string();
        assert!(e.ends_with("is larger than 9 bytes, the most read as a text input"), "{e}");
        std::fs::write(&path, b"ok\xff").unwrap();
        assert!(read_text(&path, 10).unwrap_err().to_string().ends_with("is not UTF-8 text"));
        std::fs::remove_file(path).unwrap();
    }

    /// `/dev/zero` as a configuration or job file was read until memory ran out.
    #[cfg(unix)]
    #[test]
    fn device_nodes_and_directories_are_refused() {
        assert_eq!(
            read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string(),
            "/dev/zero is a device node, not a file"
        );
        assert!(open_input(Path::new("/dev/null")).unwrap_err().to_string().contains("device node"));
        let dir = std::env::temp_dir();
        assert!(read_text(&dir, 10).unwrap_err().to_string().ends_with("is a directory, not a file"));
        assert!(open_input(Path::new("/surely/missing")).unwrap_err().to_string().starts_with("/surely/missing: "));
    }
}
