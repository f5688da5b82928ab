//! Why serving, or keeping a device image, failed. Each message names the
//! file or address involved, as the CLI prints it.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use zonelab_device::{Status, ZoneState};

/// An error of the servers, their device images and statistics files.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--backing` with a device that does not keep data.
    #[error("a device image needs the device in data mode (--data)")]
    ImageNeedsDataMode,
    /// Reading or writing a file of the image failed.
    #[error("--backing {}: {source}", path.display())]
    ImageIo {
        /// The image file (data or `.zones`).
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The image's `.zones` file lacks the zonelab header.
    #[error("--backing {}: not a zonelab device image", path.display())]
    NotAnImage {
        /// The `.zones` file.
        path: PathBuf,
    },
    /// The image belongs to a namespace of another shape than the device options give.
    #[error("--backing {}: the image is of another geometry ({saved}); the device options give {expected}", path.display())]
    ImageGeometry {
        /// The `.zones` file.
        path: PathBuf,
        /// The image's geometry (LBA size, zones, zone size and capacity).
        saved: String,
        /// The device's geometry.
        expected: String,
    },
    /// A zone record with a state code no zone state has.
    #[error("--backing {}: zone {zone}: state code {code}", path.display())]
    ImageStateCode {
        /// The `.zones` file.
        path: PathBuf,
        /// Zone index.
        zone: u32,
        /// The code found.
        code: u8,
    },
    /// A zone record whose write pointer is outside its zone's writable LBAs.
    #[error("--backing {}: zone {zone}: write pointer {wp} outside the zone", path.display())]
    ImageWritePointer {
        /// The `.zones` file.
        path: PathBuf,
        /// Zone index.
        zone: u32,
        /// The saved write pointer (absolute LBA).
        wp: u64,
    },
    /// Replaying a zone left the device in another state than the image holds.
    #[error("--backing {}: the replayed device differs from the image", path.display())]
    ImageDiffers {
        /// The image's data file.
        path: PathBuf,
    },
    /// A command replaying the image into the device failed.
    #[error("--backing {}: replaying zone {zone} failed: {status}", path.display())]
    ImageReplay {
        /// The image's data file.
        path: PathBuf,
        /// Zone being replayed.
        zone: u32,
        /// The NVMe status of the failed command.
        status: Status,
    },
    /// Restoring a read-only or offline zone failed.
    #[error("zone {zone}: restoring {}: {status}", state.name())]
    ImageRestore {
        /// Zone index.
        zone: u32,
        /// The state being restored.
        state: ZoneState,
        /// Why the device refused it.
        status: Status,
    },
    /// Reading the device's data back to save it failed.
    #[error("--backing {}: reading zone {zone} back failed: {status}", path.display())]
    ImageReadBack {
        /// The image's data file.
        path: PathBuf,
        /// Zone being saved.
        zone: u32,
        /// The NVMe status of the failed read.
        status: Status,
    },
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
