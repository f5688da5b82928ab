//! `fs`: a ZNS+-aware log-structured file system (F2FS-like) in simulated
//! time (seed 002).
//!
//! Files and directories; node blocks (inodes, direct and indirect nodes)
//! found through a node address table (NAT); six logs (hot, warm, cold × node,
//! data) with segment = zone; a segment information table (SIT); a page cache
//! of clean and dirty pages; two checkpoint zones used in turn; mount with
//! roll-forward of fsynced files; and an fsck-style checker. Segments are
//! recycled by compaction, through the host (ZNS) or the device
//! (zone_compaction: IZC-H, IZC-D), or, in ZNS+, by threaded logging
//! (TL_open) chosen by hybrid segment recycling, with copyback-aware block
//! allocation for in-storage copies.
//!
//! The file system issues real device commands; every time comes from the
//! device model plus the host costs of [`HostCosts`]. The file system keeps
//! its metadata and the version stamp of each file block in memory (the page
//! cache decides what is read or written, not what is known), so runs in the
//! device's metadata mode are exact in time; in data mode every block is
//! also encoded on the device, which is what [`Fs::mount`] reads back.

pub mod cache;
pub mod checkpoint;
pub mod config;
pub mod fs;
pub mod fsck;
pub mod gc;
pub mod hsr;
pub mod io;
pub mod layout;
pub mod log;
pub mod mount;
pub mod ops;
pub mod pack;
pub mod sit;
pub mod state;
pub mod testing;
pub mod victim;
pub mod write;

pub use config::{FsConfig, HostCosts, Recycling, VictimPolicy};
pub use fs::{CompactionRecord, Fs, FsError, FsStats};
pub use fsck::{FsckError, FsckReport};
pub use io::Traffic;
pub use layout::{file_node_blocks, FileKind, FILE_BLOCKS_MAX, ROOT_INO};
