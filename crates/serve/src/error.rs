//! Why serving, or keeping a device image, failed. Each message names the
//! file or address involved, as the CLI prints it.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use zonelab_device::{Status, ZoneState};

/// A device image that cannot be opened, created, loaded or saved. Each
/// message starts with the file concerned and says what is wrong with it, and
/// what would be valid.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    /// Reading or writing a file of the image failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The image file (data or `.zones`).
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// A symlink, directory, device, FIFO or socket where an image file belongs.
    #[error(
        "{}: is a {kind}; an image is two regular files, FILE and FILE.zones \
         (symlinks are not followed)",
        path.display()
    )]
    NotRegular {
        /// The path given or derived.
        path: PathBuf,
        /// What it is instead.
        kind: &'static str,
    },
    /// An image file with other names, through which another file could be written.
    #[error(
        "{}: has {links} names (hard links); an image's files have one, so that writing it changes no other file",
        path.display()
    )]
    HardLinked {
        /// The file.
        path: PathBuf,
        /// Its link count.
        links: u64,
    },
    /// Neither file of the image exists (where one must: `image check`).
    #[error("{}: no such image (neither it nor its .zones file exists)", path.display())]
    NoImage {
        /// The data file asked for.
        path: PathBuf,
    },
    /// One file of the pair exists without the other.
    #[error(
        "{}: exists, but {} does not, so it is not a zonelab image (or that file was lost); \
         it is left untouched: name a new FILE to create an image{hint}",
        present.display(),
        missing.display()
    )]
    HalfPair {
        /// The file that exists.
        present: PathBuf,
        /// The file missing.
        missing: PathBuf,
        /// What else the user can do (restore the missing file).
        hint: &'static str,
    },
    /// FILE.zones does not start with a zonelab header.
    #[error(
        "{}: not a zonelab device image (no ZLIMAGE header); it is left untouched: \
         name a new FILE to create an image",
        path.display()
    )]
    NotAnImage {
        /// The `.zones` file.
        path: PathBuf,
    },
    /// A format 1 image, which has no checksums.
    #[error(
        "{}: an image of format 1 (no checksums), which this zonelab does not load; \
         convert it once with `zonelab image upgrade {}` (it keeps the data file and rewrites the zone file)",
        path.display(),
        data.display()
    )]
    Version1 {
        /// The `.zones` file.
        path: PathBuf,
        /// The data file (what `image upgrade` is given).
        data: PathBuf,
    },
    /// `image upgrade`'s new zone file exists already.
    #[error(
        "{}: exists, left by an interrupted upgrade (the image itself is unchanged): remove it and run again",
        path.display()
    )]
    UpgradeLeftover {
        /// The new zone file's path.
        path: PathBuf,
    },
    /// A format version this zonelab does not know.
    #[error("{}: image format version {version}; this zonelab reads version {}", path.display(), crate::image::VERSION)]
    Version {
        /// The `.zones` file.
        path: PathBuf,
        /// The version found.
        version: u32,
    },
    /// The image's own structure is damaged (header, file lengths, a zone record).
    #[error("{}: damaged: {what}; `zonelab image check` reports the whole image", path.display())]
    Damaged {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong.
        what: String,
    },
    /// The `--backing` namespace list is not one zonelab wrote, or a file
    /// beside it is in the way.
    #[error("{}: {what}", path.display())]
    NamespaceList {
        /// The file concerned.
        path: PathBuf,
        /// What is wrong, with the line.
        what: String,
    },
    /// The image belongs to a namespace of another shape than the device options give.
    #[error("{}: the image is of another geometry ({saved}); the device options give {expected}", path.display())]
    Geometry {
        /// The `.zones` file.
        path: PathBuf,
        /// The image's geometry.
        saved: String,
        /// The device's geometry.
        expected: String,
    },
    /// Blocks fail their checksums, where they cannot be answered with an error.
    #[error(
        "{}: blocks failing their checksums: {count} (the first at LBA {first}); `zonelab image check {}` lists \
         them (serve answers reads of them with Unrecovered Read Error until they are rewritten)",
        path.display(),
        path.display()
    )]
    DamagedBlocks {
        /// The data file.
        path: PathBuf,
        /// Blocks that failed.
        count: usize,
        /// The first of them.
        first: u64,
    },
    /// Replaying the image left the device in another state than the image holds.
    #[error("{}: the replayed device differs from the image", path.display())]
    Differs {
        /// The image's data file.
        path: PathBuf,
    },
    /// A command replaying the image into the device failed.
    #[error("{}: replaying zone {zone} failed: {status}", path.display())]
    Replay {
        /// The image's data file.
        path: PathBuf,
        /// Zone being replayed.
        zone: u32,
        /// The NVMe status of the failed command.
        status: Status,
    },
    /// Restoring a read-only or offline zone failed.
    #[error("{}: zone {zone}: restoring {}: {status}", path.display(), state.name())]
    Restore {
        /// The image's data file.
        path: PathBuf,
        /// Zone index.
        zone: u32,
        /// The state being restored.
        state: ZoneState,
        /// Why the device refused it.
        status: Status,
    },
    /// Reading the device's data back to save it failed.
    #[error("{}: reading zone {zone} back failed: {status}", path.display())]
    ReadBack {
        /// The image's data file.
        path: PathBuf,
        /// Zone being saved.
        zone: u32,
        /// The NVMe status of the failed read.
        status: Status,
    },
    /// A block the image copies from fails its checksum (it changed on disk while the server ran).
    #[error("{}: LBA {lba}: {damage}, so it cannot be copied", path.display())]
    CopySource {
        /// The data file.
        path: PathBuf,
        /// The source block.
        lba: u64,
        /// How it fails.
        damage: crate::image::Damage,
    },
}

impl ImageError {
    /// An I/O error on `path`.
    pub fn io(path: &std::path::Path, source: io::Error) -> Self {
        ImageError::Io { path: path.to_path_buf(), source }
    }

    /// Damage to `path`'s structure.
    pub fn damaged(path: &std::path::Path, what: impl Into<String>) -> Self {
        ImageError::Damaged { path: path.to_path_buf(), what: what.into() }
    }
}

/// An error of the servers, their device images and statistics files.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--backing` with a device that does not keep data.
    #[error("a device image needs the device in data mode (--data)")]
    ImageNeedsDataMode,
    /// The image given to `--backing` cannot be used (the message names the file).
    #[error("--backing {0}")]
    Image(#[from] ImageError),
    /// Making the image durable on a clean stop failed.
    #[error("syncing the device image: {0}")]
    ImageSync(io::Error),
    /// Making the image durable for an NVMe or block-layer Flush failed.
    #[error("flushing the device image: {0}")]
    ImageFlush(io::Error),
    /// The device given to a server does not keep data.
    #[error("serve needs the device in data mode")]
    NeedsDataMode,
    /// `--stats FILE` names a file that already exists.
    #[error(
        "--stats {}: the file already exists; the server only writes a file it creates \
         (remove it or name a new one)",
        path.display()
    )]
    StatsFileExists {
        /// The statistics file.
        path: PathBuf,
    },
    /// Creating the statistics file failed.
    #[error("--stats {}: {source}", path.display())]
    StatsFileCreate {
        /// The statistics file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// Rewriting the statistics file failed.
    #[error("cannot write statistics to {}: {source}", path.display())]
    StatsFileWrite {
        /// The statistics file.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// `--record FILE` cannot be created (it exists, or the system refused).
    #[error(
        "--record {}: {source} (the server writes a recording only to a new file it creates; remove it or name \
         another)",
        path.display()
    )]
    RecordCreate {
        /// The recording.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The NVMe/TCP listening address cannot be bound.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address asked for.
        address: SocketAddr,
        /// The operating system's error.
        source: io::Error,
    },
    /// The bound socket's address cannot be read.
    #[error("listening socket: {0}")]
    ListeningSocket(io::Error),
    /// SIGINT, SIGTERM and SIGUSR1 handlers cannot be installed.
    #[error("cannot handle signals: {0}")]
    Signals(io::Error),
    /// ublk cannot be used on this machine (`reason` says why and what to do).
    #[error("{reason}")]
    UblkUnavailable {
        /// What is missing: kernel version, driver, root, zoned support.
        reason: String,
    },
    /// The ublk driver refused to create the device.
    #[error("cannot create a ublk device: {reason}")]
    UblkCreate {
        /// The driver's error.
        reason: String,
    },
    /// The ublk device stopped with an error.
    #[error("ublk device failed: {reason}")]
    UblkFailed {
        /// The driver's error.
        reason: String,
    },
}
