//! `serve`: the device model as a Linux zoned block device (`/dev/ublkbN`)
//! through the kernel's ublk driver, or as an NVMe/TCP target ([`nvme_tcp`]:
//! user space only, in the default build).
//!
//! Request translation ([`request`]), zone report encoding ([`report`]) and
//! the model side ([`backend`]: timing, pacing, statistics) are plain
//! functions tested on any host; `ublk` is the thin layer that talks to the
//! driver (via the `libublk` crate) and needs Linux 6.6 or later with
//! `ublk_drv` loaded, as root. It is built only with the `ublk` feature,
//! because libublk's bindings need libclang at build time.

pub mod backend;
pub mod error;
pub mod image;
pub mod nvme_tcp;
pub mod recording;
pub mod report;
pub mod request;
pub mod stats;
pub mod stats_file;
// ublk calls libc directly (prctl, geteuid, kill, pread/pwrite on the driver's character device): unsafe code,
// which the workspace denies elsewhere.
#[cfg(feature = "ublk")]
#[allow(unsafe_code)]
pub mod ublk;

pub use backend::{Backend, Outcome, Pace};
pub use error::{ImageError, ServeError};
pub use image::Image;
pub use stats_file::StatsFile;
#[cfg(feature = "ublk")]
pub use ublk::{serve, ServeOptions};

/// A fresh, empty directory for a test's files: `zonelab-NAME-PID` under the
/// temporary directory (left over from an earlier run: emptied).
#[cfg(test)]
pub(crate) fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
