//! The file system's interface: [`Fs`], on top of every other module.
//! Namespace operations (`ops`), mkfs and mount, idle-time compaction (`gc`)
//! and fsck each run as functions over the [`FsState`] it owns. Every
//! operation takes the simulated time it starts at and returns when it is
//! done; device time comes from the device model.

use crate::cache::PageKey;
use crate::config::FsConfig;
use crate::fsck::{FsckError, FsckReport};
use crate::layout::*;
use crate::{checkpoint, fsck, gc, log, mount, ops};
use std::ops::{Deref, DerefMut};
use zonelab_device::{Device, ZonedDevice};
use zonelab_sim::Nanos;

pub use crate::state::{CompactionRecord, Dir, FsError, FsState, FsStats, Owner};

/// The file system on a zoned device `D`: namespace operations, page cache,
/// node tree, logs, segment recycling and checkpoints, in simulated time.
///
/// It derefs to its [`FsState`] for the read-only queries (`segments`,
/// `lookup`, `cache`, ...) and the counters of the run (`stats`), which the
/// operations below it share.
pub struct Fs<D: ZonedDevice = Device> {
    state: FsState<D>,
}

impl<D: ZonedDevice> Deref for Fs<D> {
    type Target = FsState<D>;
    fn deref(&self) -> &FsState<D> {
        &self.state
    }
}

impl<D: ZonedDevice> DerefMut for Fs<D> {
    fn deref_mut(&mut self) -> &mut FsState<D> {
        &mut self.state
    }
}

impl<D: ZonedDevice> Fs<D> {
    /// Formats `dev`: an empty root directory and a first checkpoint.
    pub fn mkfs(dev: D, cfg: FsConfig) -> Result<Self, FsError> {
        let mut fs = FsState::blank(dev, cfg, 0)?;
        fs.nodes.insert(ROOT_INO, Node::new_inode(ROOT_INO, FileKind::Dir, ROOT_INO, ""));
        fs.nat = vec![NULL_ADDR; 2];
        fs.dirs.insert(ROOT_INO, Dir::default());
        fs.cache.insert(PageKey::Node { nid: ROOT_INO }, true);
        fs.nat_dirty.insert(0);
        log::open_logs(&mut fs, 0);
        let t = checkpoint::checkpoint(&mut fs, 1);
        // Like mkfs.f2fs, whatever the ordering: the new file system is on flash.
        let t = fs.io.flush(t);
        fs.inflight_ns = fs.inflight_ns.max(t);
        Ok(Self { state: fs })
    }

    /// Mounts the file system on `dev` (data mode), from `now_ns` on.
    pub fn mount(dev: D, cfg: FsConfig, now_ns: Nanos) -> Result<(Self, Nanos), FsError> {
        let (state, t) = mount::mount(dev, cfg, now_ns)?;
        Ok((Self { state }, t))
    }

    /// The device, for a remount (cut if a power failure was set).
    pub fn into_device(self) -> D {
        self.state.io.into_device()
    }

    /// Creates `name` in `dir`.
    pub fn create(&mut self, now_ns: Nanos, dir: u32, name: &str, kind: FileKind) -> Result<(u32, Nanos), FsError> {
        ops::create(&mut self.state, now_ns, dir, name, kind)
    }

    /// Writes blocks `idx .. idx + n` of file `ino`, each stamped `tag`.
    pub fn write(&mut self, now_ns: Nanos, ino: u32, idx: u64, n: u64, tag: u64) -> Result<Nanos, FsError> {
        ops::write(&mut self.state, now_ns, ino, idx, n, tag)
    }

    /// Reads blocks `idx .. idx + n` of file `ino` (beyond the end reads nothing).
    pub fn read(&mut self, now_ns: Nanos, ino: u32, idx: u64, n: u64) -> Result<Nanos, FsError> {
        ops::read(&mut self.state, now_ns, ino, idx, n)
    }

    /// Makes the file durable as F2FS does: its data written and waited on
    /// (with every write still in flight), the device cache flushed, then
    /// its nodes with the fsync mark, written FUA.
    pub fn fsync(&mut self, now_ns: Nanos, ino: u32) -> Result<Nanos, FsError> {
        ops::fsync(&mut self.state, now_ns, ino)
    }

    /// Removes `name` from `dir`, freeing the file's blocks and nodes.
    pub fn unlink(&mut self, now_ns: Nanos, dir: u32, name: &str) -> Result<Nanos, FsError> {
        ops::unlink(&mut self.state, now_ns, dir, name)
    }

    /// Makes everything durable: dirty data, then a checkpoint.
    pub fn sync(&mut self, now_ns: Nanos) -> Nanos {
        ops::sync(&mut self.state, now_ns)
    }

    /// The file system is idle from `now_ns` to `until_ns`: background
    /// compaction while free segments are below the background threshold.
    pub fn idle(&mut self, now_ns: Nanos, until_ns: Nanos) -> Nanos {
        gc::idle(&mut self.state, now_ns, until_ns)
    }

    /// Checks the file system; reads every block back in data mode.
    pub fn fsck(&mut self, now_ns: Nanos) -> Result<FsckReport, FsckError> {
        fsck::fsck(&mut self.state, now_ns)
    }
}
