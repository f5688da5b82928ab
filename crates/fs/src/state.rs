//! The file system's state, below every operation: [`FsState`] owns the
//! device path, the page cache, the node tree and NAT, the SIT, the logs'
//! positions, the checkpoint's bookkeeping and the counters, and holds what
//! every operation shares: block addresses, claiming and releasing blocks,
//! the node tree's lookups, host CPU time, and the read-only queries [`Fs`]
//! offers. The operations are modules of functions over a `&mut FsState`
//! (`log`, `write`, `checkpoint`, `victim`, `gc`, `ops`, `mount`, `fsck`);
//! nothing here imports them, so the crate's module graph has no cycle
//! (`scripts/module-cycles`).
//!
//! [`Fs`]: crate::fs::Fs

use crate::cache::{PageCache, PageKey};
use crate::config::FsConfig;
use crate::hsr::Hsr;
use crate::io::{Io, Traffic};
use crate::layout::*;
use crate::pack::{check_checkpoint_fits, CpState, NAT_ENTRIES_PER_BLOCK};
use crate::sit::{Bitmap, LogType, Sit};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeSet, HashMap};
use zonelab_device::{CmdResult, Command, Device, MappingInfo, ZonedDevice};
use zonelab_sim::{Nanos, ServerPool};

/// Why a file-system operation, mkfs or mount failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    /// A path component or inode that does not exist.
    #[error("no such file or directory")]
    NotFound,
    /// Creating a name the directory already holds.
    #[error("file exists")]
    Exists,
    /// A directory operation on a regular file.
    #[error("not a directory")]
    NotDir,
    /// A name longer than [`NAME_BYTES_MAX`] bytes.
    #[error("name longer than {} bytes", NAME_BYTES_MAX)]
    NameTooLong,
    /// The device cannot hold this file system.
    #[error("device: {0}")]
    Device(String),
    /// Mount found something inconsistent.
    #[error("corrupt file system: {0}")]
    Corrupt(String),
}

/// Who holds a main-area block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// No one: the block is free or invalid.
    Free,
    /// Block `idx` of inode `ino` (file data or dentries).
    Data {
        /// Inode number.
        ino: u32,
        /// Block index in the file.
        idx: u64,
    },
    /// Node block `nid`.
    Node {
        /// Node id (the NAT's index).
        nid: u32,
    },
}

/// A directory's entries, slot by slot (slot / DENTRIES_PER_BLOCK is the dentry block).
#[derive(Debug, Clone, Default)]
pub struct Dir {
    /// Entries by slot: name and inode, `None` for a deleted entry.
    pub slots: Vec<Option<(String, u32)>>,
    /// Slot of each name.
    pub index: HashMap<String, usize>,
    /// Empty slots, reused before the directory grows.
    pub free_slots: Vec<usize>,
}

/// One of the six logs: the segment it writes and where in it.
#[derive(Debug, Clone)]
pub struct Log {
    /// Which log (temperature and node or data).
    pub log_type: LogType,
    /// Segment (= zone) the log writes.
    pub seg: u32,
    /// Next block to write in the segment.
    pub off: u32,
    /// Threaded logging: the blocks the TL_open kept (never written by the host).
    pub tl_kept: Option<Bitmap>,
}

/// One segment compaction, by phase (seed 002 Fig 6).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CompactionRecord {
    /// Valid blocks the victim held, each moved.
    pub valid_blocks: u64,
    /// Init phase: reading the nodes that point at the blocks to move (and the
    /// walk over blocks the host does not read).
    pub init_ns: Nanos,
    /// Host reads (ZNS) or, for IZC, zero.
    pub read_ns: Nanos,
    /// Read requests of the read phase (the compacting thread issues them one after another).
    pub read_requests: u64,
    /// Host writes (ZNS), or host writes and zone_compaction commands (IZC).
    pub write_ns: Nanos,
    /// The checkpoint that ends the compaction.
    pub checkpoint_ns: Nanos,
    /// Idle-time (background) compaction, not foreground.
    pub background: bool,
    /// Device commands issued before and after it (where a crash falls).
    pub first_command: u64,
    /// (Ends the range `first_command..end_command`.)
    pub end_command: u64,
}

/// Counters of a run: compactions, threaded logging, checkpoints, fsyncs.
#[derive(Debug, Clone, Default)]
pub struct FsStats {
    /// Every segment compaction, in order.
    pub compactions: Vec<CompactionRecord>,
    /// Segments reclaimed by threaded logging (TL_open).
    pub tl_segments: u64,
    /// Of those, segments another log type of the same kind (data or node) had written.
    pub tl_other_type_segments: u64,
    /// Hybrid recycling found compaction cheaper than every threaded-logging candidate.
    pub sc_chosen_by_cost: u64,
    /// Segments reclaimed by compaction.
    pub sc_segments: u64,
    /// Checkpoints written, of any cause.
    pub checkpoints: u64,
    /// Of those, periodic checkpoints that bound pre-invalid blocks at θ_PI
    /// (ZNS+).
    pub periodic_checkpoints: u64,
    /// Time spent writing checkpoints (everything else waits meanwhile).
    pub checkpoint_ns: Nanos,
    /// Blocks written by the user (file data and dentries).
    pub user_blocks: u64,
    /// fsync calls.
    pub fsyncs: u64,
}

/// The state of the file system on a zoned device `D`: page cache, node
/// tree, NAT, SIT, logs, checkpoint bookkeeping and counters. [`Fs`] derefs
/// to it for the queries below and for `stats`.
///
/// [`Fs`]: crate::fs::Fs
pub struct FsState<D: ZonedDevice = Device> {
    pub(crate) cfg: FsConfig,
    pub(crate) io: Io<D>,
    pub(crate) zone_blocks: u32,
    pub(crate) mapping: MappingInfo,
    pub(crate) nat: Vec<u32>,
    /// NAT blocks changed since the checkpoint.
    pub(crate) nat_dirty: BTreeSet<u32>,
    pub(crate) nodes: FxHashMap<u32, Node>,
    pub(crate) free_nids: Vec<u32>,
    /// Freed since the checkpoint: reusable after the next one.
    pub(crate) freed_nids: Vec<u32>,
    pub(crate) dirs: FxHashMap<u32, Dir>,
    /// File contents: a version stamp per block.
    pub(crate) tags: FxHashMap<u32, Vec<u64>>,
    pub(crate) owner: Vec<Owner>,
    pub(crate) sit: Sit,
    pub(crate) logs: Vec<Log>,
    pub(crate) cache: PageCache,
    /// Nodes written since the checkpoint without an fsync mark.
    pub(crate) unsynced: FxHashSet<u32>,
    /// Dirty data pages being moved by compaction (to the cold data log).
    pub(crate) relocating: FxHashSet<PageKey>,
    /// Latest completion of any write or copy issued.
    pub(crate) inflight_ns: Nanos,
    pub(crate) cp: CpState,
    pub(crate) hsr: Hsr,
    /// Zones to close once the writes queued to them are submitted.
    pub(crate) pending_close: Vec<u32>,
    /// Segments logs left whose writes are not all submitted yet.
    pub(crate) left_segs: Vec<u32>,
    /// Blocks logs allocated that no block is placed in yet (a compaction
    /// allocates a segment's worth before placing them one by one).
    pub(crate) unplaced: FxHashSet<u32>,
    /// TL_opens of segments a log just left, sent once the log's writes to
    /// them are (see [`crate::log::close_pending`]).
    pub(crate) pending_tl_open: Vec<(u32, Bitmap)>,
    /// The victim of the compaction under way: never a threaded-logging target.
    pub(crate) compacting: Option<u32>,
    /// The host's CPU cores: every system call, page and request costs time on one.
    pub(crate) cpu: ServerPool,
    /// Counters of the run.
    pub stats: FsStats,
}

impl<D: ZonedDevice> FsState<D> {
    /// A file system of the configured kind on `dev`, checked and empty.
    pub(crate) fn blank(dev: D, cfg: FsConfig, now_ns: Nanos) -> Result<Self, FsError> {
        let layout = dev.layout().clone();
        if layout.lba_bytes != BLOCK_BYTES as u64 || layout.conventional_zones != 0 {
            return Err(FsError::Device("needs 4 KiB blocks and no conventional zones".into()));
        }
        if layout.zcap_lbas != layout.zone_lbas || layout.zones < META_ZONES + 8 {
            return Err(FsError::Device("needs zone capacity = zone size and at least 10 zones".into()));
        }
        if cfg.host.cpus == 0 || cfg.host.cpus > 1024 {
            return Err(FsError::Device(format!("host cpus {} must be within 1 ..= 1024", cfg.host.cpus)));
        }
        let cfg_cpus = cfg.host.cpus as usize;
        let hsr = Hsr::new(&dev, &cfg.host);
        let mut io = Io::new(dev);
        let c = io.submit(now_ns, &Command::IdentifyMapping, None);
        let CmdResult::Mapping(mapping) = c.result else {
            return Err(FsError::Device("identify_mapping gave no mapping".into()));
        };
        let zone_blocks = u32::try_from(layout.zone_lbas).map_err(|_| FsError::Device("zone too large".into()))?;
        let segs = layout.zones - META_ZONES;
        check_checkpoint_fits(zone_blocks, segs).map_err(|e| FsError::Device(e.to_string()))?;
        let main_blocks = segs as usize * zone_blocks as usize;
        Ok(Self {
            cache: PageCache::new(cfg.cache_pages),
            cfg,
            io,
            zone_blocks,
            mapping: *mapping,
            nat: vec![NULL_ADDR; 2],
            nat_dirty: BTreeSet::new(),
            nodes: FxHashMap::default(),
            free_nids: Vec::new(),
            freed_nids: Vec::new(),
            dirs: FxHashMap::default(),
            tags: FxHashMap::default(),
            owner: vec![Owner::Free; main_blocks],
            sit: Sit::new(segs, zone_blocks),
            logs: Vec::new(),
            unsynced: FxHashSet::default(),
            relocating: FxHashSet::default(),
            inflight_ns: 0,
            cp: Default::default(),
            hsr,
            pending_close: Vec::new(),
            left_segs: Vec::new(),
            unplaced: FxHashSet::default(),
            pending_tl_open: Vec::new(),
            compacting: None,
            cpu: ServerPool::new(cfg_cpus),
            stats: FsStats::default(),
        })
    }

    /// The configuration it was made or mounted with.
    pub fn config(&self) -> &FsConfig {
        &self.cfg
    }

    /// The device, for its state and statistics.
    pub fn device(&self) -> &D {
        self.io.device()
    }

    /// Blocks written and read so far, by kind.
    pub fn traffic(&self) -> Traffic {
        self.io.traffic
    }

    /// Power fails at `at_ns` of simulated time (or at the next device
    /// command, if later): see [`crate::io::Io`].
    pub fn crash_at(&mut self, at_ns: Nanos) {
        self.io.crash_at(at_ns);
    }

    /// When every write issued so far has completed (after mkfs: when the
    /// file system is on the device).
    pub fn writes_done_ns(&self) -> Nanos {
        self.inflight_ns
    }

    /// Records the submission and completion of every later device command.
    pub fn record_commands(&mut self) {
        self.io.record_commands();
    }

    /// Submission and completion times of the commands recorded since
    /// [`Self::record_commands`].
    pub fn command_log(&self) -> &[(Nanos, Nanos)] {
        self.io.command_log()
    }

    /// The instant the power fails, if set.
    pub fn crash_at_ns(&self) -> Option<Nanos> {
        self.io.crash_at_ns()
    }

    /// Whether the power has failed: commands no longer reach the device.
    pub fn crashed(&self) -> bool {
        self.io.crashed()
    }

    /// When the last command reached the device (a remount starts there).
    pub fn last_submit_ns(&self) -> Nanos {
        self.io.last_submit_ns()
    }

    /// Commands sent to the device.
    pub fn device_commands(&self) -> u64 {
        self.io.commands()
    }

    /// Segments (= zones) of the main area.
    pub fn segments(&self) -> u32 {
        self.sit.segs.len() as u32
    }

    /// Blocks per segment (the zone's 4 KiB blocks).
    pub fn blocks_per_segment(&self) -> u32 {
        self.zone_blocks
    }

    /// Segments free for append logging: not open, no block valid now or at
    /// the last checkpoint, none written since it (roll-forward may read those).
    pub fn free_segments(&self) -> u32 {
        self.sit.free_segs()
    }

    /// Blocks the user may fill: the main area less the six open logs, the
    /// foreground-compaction reserve and 5% over-provisioning (as F2FS keeps).
    pub fn user_blocks(&self) -> u64 {
        let reserve = u64::from(6 + self.cfg.fg_free_segments) * u64::from(self.zone_blocks);
        (self.owner.len() as u64 * 95 / 100).saturating_sub(reserve)
    }

    /// Valid blocks over main-area blocks.
    pub fn utilization(&self) -> f64 {
        let valid: u64 = self.sit.segs.iter().map(|e| u64::from(e.valid_blocks)).sum();
        valid as f64 / self.owner.len() as f64
    }

    /// The page cache, for its hit and dirty counts.
    pub fn cache(&self) -> &PageCache {
        &self.cache
    }

    pub(crate) fn addr_of(&self, seg: u32, off: u32) -> u32 {
        (seg + META_ZONES) * self.zone_blocks + off
    }

    /// (segment, offset) of a main-area address.
    pub(crate) fn seg_of(&self, addr: u32) -> (u32, u32) {
        assert!(addr >= META_ZONES * self.zone_blocks, "address {addr} is not in the main area");
        (addr / self.zone_blocks - META_ZONES, addr % self.zone_blocks)
    }

    pub(crate) fn main_index(&self, addr: u32) -> usize {
        (addr - META_ZONES * self.zone_blocks) as usize
    }

    /// Inode `ino`, if it exists.
    pub fn inode(&self, ino: u32) -> Option<&Inode> {
        self.nodes.get(&ino).and_then(Node::inode)
    }

    /// The inode `name` in directory `dir` names, if any.
    pub fn lookup(&self, dir: u32, name: &str) -> Option<u32> {
        let d = self.dirs.get(&dir)?;
        d.index.get(name).and_then(|&s| d.slots[s].as_ref().map(|e| e.1))
    }

    /// Names in directory `dir`.
    pub fn list(&self, dir: u32) -> Vec<(String, u32)> {
        self.dirs.get(&dir).map_or(Vec::new(), |d| d.slots.iter().flatten().cloned().collect())
    }

    /// File size in blocks.
    pub fn size_blocks(&self, ino: u32) -> Option<u64> {
        self.inode(ino).map(|i| i.size_blocks)
    }

    /// Version stamps of a file's blocks as the file system holds them.
    pub fn file_tags(&self, ino: u32) -> Option<&[u64]> {
        self.tags.get(&ino).map(Vec::as_slice)
    }

    pub(crate) fn alloc_nid(&mut self) -> u32 {
        if let Some(nid) = self.free_nids.pop() {
            return nid;
        }
        self.nat.push(NULL_ADDR);
        (self.nat.len() - 1) as u32
    }

    pub(crate) fn set_nat(&mut self, nid: u32, addr: u32) {
        self.nat[nid as usize] = addr;
        self.nat_dirty.insert(nid / NAT_ENTRIES_PER_BLOCK);
    }

    /// The block at `addr` is dropped by its owner.
    pub(crate) fn release_block(&mut self, addr: u32) {
        if addr == NULL_ADDR {
            return;
        }
        let (seg, off) = self.seg_of(addr);
        self.sit.invalidate(seg, off);
        let i = self.main_index(addr);
        self.owner[i] = Owner::Free;
    }

    /// The block at `addr` now belongs to `owner`.
    pub(crate) fn claim_block(&mut self, addr: u32, owner: Owner, now_ns: Nanos) {
        let (seg, off) = self.seg_of(addr);
        self.sit.validate(seg, off, now_ns);
        let i = self.main_index(addr);
        assert_eq!(self.owner[i], Owner::Free, "block {addr} owned twice");
        self.owner[i] = owner;
    }

    /// `work_ns` of host CPU work that can start at `ready_ns`; returns when it is done.
    pub(crate) fn host_work(&mut self, ready_ns: Nanos, work_ns: Nanos) -> Nanos {
        if work_ns == 0 {
            return ready_ns;
        }
        self.cpu.reserve(ready_ns, work_ns)
    }

    /// Address of block `idx` of `ino`, or NULL.
    pub(crate) fn data_addr(&self, ino: u32, idx: u64) -> u32 {
        let Some(inode) = self.inode(ino) else {
            return NULL_ADDR;
        };
        match slot_of(idx) {
            Slot::Inode(i) => inode.addrs[i],
            Slot::Direct { indirect, direct, off } => {
                let ind = inode.indirect[indirect];
                let Some(Node { body: NodeBody::Indirect(nids), .. }) = self.nodes.get(&ind) else {
                    return NULL_ADDR;
                };
                match self.nodes.get(&nids[direct]) {
                    Some(Node { body: NodeBody::Direct(a), .. }) => a[off],
                    _ => NULL_ADDR,
                }
            }
        }
    }

    /// The nid of the node holding the address of block `idx` (created with
    /// its indirect node if missing), and the nodes it created.
    pub(crate) fn dnode_for(&mut self, ino: u32, idx: u64) -> (u32, Vec<u32>) {
        let Slot::Direct { indirect, direct, .. } = slot_of(idx) else {
            return (ino, Vec::new());
        };
        let mut created = Vec::new();
        let mut ind = self.inode(ino).expect("an inode").indirect[indirect];
        if ind == 0 {
            ind = self.alloc_nid();
            let node = Node { nid: ind, ino, body: NodeBody::Indirect(vec![0; NODE_NIDS]) };
            self.nodes.insert(ind, node);
            self.inode_mut(ino).indirect[indirect] = ind;
            created.push(ind);
            created.push(ino);
        }
        let NodeBody::Indirect(nids) = &self.nodes[&ind].body else { unreachable!("an indirect node") };
        let mut dn = nids[direct];
        if dn == 0 {
            dn = self.alloc_nid();
            self.nodes.insert(dn, Node { nid: dn, ino, body: NodeBody::Direct(vec![NULL_ADDR; NODE_ADDRS]) });
            if let NodeBody::Indirect(nids) = &mut self.nodes.get_mut(&ind).expect("just read").body {
                nids[direct] = dn;
            }
            created.push(dn);
            created.push(ind);
        }
        (dn, created)
    }

    pub(crate) fn inode_mut(&mut self, ino: u32) -> &mut Inode {
        self.nodes.get_mut(&ino).and_then(Node::inode_mut).expect("an inode")
    }

    /// Points block `idx` of `ino` at `addr`; returns the old address. The
    /// node holding it turns dirty.
    pub(crate) fn set_data_addr(&mut self, ino: u32, idx: u64, addr: u32) -> u32 {
        let (nid, created) = self.dnode_for(ino, idx);
        for n in created {
            self.cache.insert(PageKey::Node { nid: n }, true);
        }
        self.cache.insert(PageKey::Node { nid }, true);
        let node = self.nodes.get_mut(&nid).expect("the dnode exists");
        let slot = match (&mut node.body, slot_of(idx)) {
            (NodeBody::Inode(i), Slot::Inode(s)) => &mut i.addrs[s],
            (NodeBody::Direct(a), Slot::Direct { off, .. }) => &mut a[off],
            _ => unreachable!("dnode_for gives the node of the slot"),
        };
        std::mem::replace(slot, addr)
    }

    /// The file's nodes: inode, indirect and direct nodes.
    pub(crate) fn nids_of(&self, ino: u32) -> Vec<u32> {
        let mut out = vec![ino];
        let Some(inode) = self.inode(ino) else {
            return Vec::new();
        };
        for &ind in inode.indirect.iter().filter(|&&n| n != 0) {
            out.push(ind);
            out.extend(self.nodes[&ind].child_nids());
        }
        out
    }
}
