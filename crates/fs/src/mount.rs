//! Mount after a clean stop or a power failure: the newest whole checkpoint
//! pack, its NAT and SIT, the node tree, then roll-forward of the nodes that
//! fsync wrote after it (F2FS's recovery), and a new checkpoint.

use crate::checkpoint::{decode_pack, CpPack};
use crate::config::FsConfig;
use crate::fs::{Dir, Fs, FsError, Owner, META_ZONES};
use crate::layout::*;
use crate::sit::LogType;
use zonelab_device::{CmdResult, Command, ReportFilter, ZoneAction, ZoneDescriptor, ZonedDevice};
use zonelab_sim::Nanos;

fn corrupt<T>(msg: impl Into<String>) -> Result<T, FsError> {
    Err(FsError::Corrupt(msg.into()))
}

impl<D: ZonedDevice> Fs<D> {
    /// Mounts the file system on `dev` (data mode), from `now_ns` on.
    pub fn mount(dev: D, cfg: FsConfig, now_ns: Nanos) -> Result<(Self, Nanos), FsError> {
        if dev.config().mode != zonelab_device::Mode::Data {
            return Err(FsError::Device("mount needs a device in data mode".into()));
        }
        let mut fs = Self::blank(dev, cfg, now_ns)?;
        fs.hsr = crate::gc::Hsr::new(&fs);
        let mut t = fs.io.last_submit_ns();
        let zones = fs.report_and_close(t)?;
        let (pack, meta_zone, meta_next, meta_bytes, t1) = fs.find_checkpoint(t, &zones)?;
        t = t1;
        fs.cp.version = pack.version;
        fs.cp.meta_zone = meta_zone;
        fs.cp.meta_next = meta_next;
        fs.load_tables(&pack, &meta_bytes)?;
        for (s, z) in zones.iter().skip(META_ZONES as usize).enumerate() {
            fs.sit.segs[s].zone_written = z.wp > z.zslba;
        }
        t = fs.load_nodes(t)?;
        t = fs.load_dirs(t)?;
        t = fs.roll_forward(t, &pack)?;
        t = fs.load_file_tags(t)?;
        fs.rebuild_owners()?;
        fs.free_nids = (2..fs.nat.len() as u32).filter(|&n| fs.nat[n as usize] == NULL_ADDR).rev().collect();
        fs.resume_logs(t, &pack, &zones)?;
        let t = fs.checkpoint(t);
        Ok((fs, t))
    }

    /// Zone states; open zones are closed (a TL_opened zone's LogFBG takes over).
    fn report_and_close(&mut self, now_ns: Nanos) -> Result<Vec<ZoneDescriptor>, FsError> {
        let zones = self.device().layout().zones;
        let cmd = Command::ReportZones { slba: 0, filter: ReportFilter::All, max_zones: zones, partial: false };
        let CmdResult::Report(report) = self.io.submit(now_ns, &cmd, None).result else {
            return corrupt("report zones gave no report");
        };
        let open: Vec<u64> = report.zones.iter().filter(|z| z.state.is_open()).map(|z| z.zslba).collect();
        if open.is_empty() {
            return Ok(report.zones);
        }
        for slba in open {
            let close = Command::ZoneMgmtSend { action: ZoneAction::Close, slba, select_all: false };
            self.io.submit(now_ns, &close, None);
        }
        // Closing plugs TL_opened zones: their write pointers moved.
        self.report_and_close(now_ns)
    }

    /// Reads both checkpoint zones; the newest whole pack, its zone, the next free block there.
    #[allow(clippy::type_complexity)]
    fn find_checkpoint(
        &mut self,
        now_ns: Nanos,
        zones: &[ZoneDescriptor],
    ) -> Result<(CpPack, u32, u32, Vec<Vec<u8>>, Nanos), FsError> {
        let mut best: Option<(CpPack, u32)> = None;
        let mut all = Vec::new();
        let mut t = now_ns;
        for z in 0..META_ZONES {
            let written = (zones[z as usize].wp - zones[z as usize].zslba) as u32;
            let (bytes, done) = self.read_blocks(t, z * self.zone_blocks, written);
            t = done;
            let mut at = 0;
            while at < written as usize {
                match decode_pack(&bytes, at) {
                    Some((pack, n)) => {
                        if best.as_ref().is_none_or(|(b, _)| pack.version > b.version) {
                            best = Some((pack, z));
                        }
                        at += n;
                    }
                    None => at += 1,
                }
            }
            all.push(bytes);
        }
        let Some((pack, zone)) = best else {
            return corrupt("no whole checkpoint pack");
        };
        let next = (zones[zone as usize].wp - zones[zone as usize].zslba) as u32;
        Ok((pack, zone, next, all, t))
    }

    /// Reads `n` blocks from `addr` (in requests of at most MDTS).
    pub(crate) fn read_blocks(&mut self, now_ns: Nanos, addr: u32, n: u32) -> (Vec<u8>, Nanos) {
        let mut bytes = vec![0u8; n as usize * BLOCK_BYTES];
        let step = (self.device().layout().mdts_lbas as u32).max(1);
        let mut done = now_ns;
        for k in (0..n).step_by(step as usize) {
            let nlb = step.min(n - k);
            let out = &mut bytes[k as usize * BLOCK_BYTES..(k + nlb) as usize * BLOCK_BYTES];
            done = done.max(self.io.read(now_ns, u64::from(addr + k), nlb, Some(out)));
        }
        (bytes, done)
    }

    fn load_tables(&mut self, pack: &CpPack, meta: &[Vec<u8>]) -> Result<(), FsError> {
        self.nat = vec![NULL_ADDR; pack.nat_entries as usize];
        self.cp.nat_loc = pack.nat_loc.clone();
        self.cp.sit_loc = pack.sit_loc.clone();
        let zb = self.zone_blocks;
        let block = |addr: u32| {
            let (z, o) = ((addr / zb) as usize, (addr % zb) as usize);
            meta.get(z).and_then(|b| b.get(o * BLOCK_BYTES..(o + 1) * BLOCK_BYTES))
        };
        for (b, &addr) in pack.nat_loc.iter().enumerate() {
            let ok = block(addr).and_then(|buf| self.load_nat_block(b as u32, buf));
            ok.ok_or_else(|| FsError::Corrupt(format!("NAT block {b} at {addr} unreadable")))?;
        }
        for (b, &addr) in pack.sit_loc.iter().enumerate() {
            let ok = block(addr).and_then(|buf| self.load_sit_block(b as u32, buf));
            ok.ok_or_else(|| FsError::Corrupt(format!("SIT block {b} at {addr} unreadable")))?;
        }
        Ok(())
    }

    fn load_nodes(&mut self, now_ns: Nanos) -> Result<Nanos, FsError> {
        let mut t = now_ns;
        for nid in 1..self.nat.len() as u32 {
            let addr = self.nat[nid as usize];
            if addr == NULL_ADDR {
                continue;
            }
            if addr < self.meta_end() || addr as usize >= self.meta_end() as usize + self.owner.len() {
                return corrupt(format!("node {nid} at {addr}, outside the main area"));
            }
            let (bytes, done) = self.read_blocks(now_ns, addr, 1);
            t = t.max(done);
            match decode_node(&bytes) {
                Some((node, _)) if node.nid == nid => {
                    self.nodes.insert(nid, node);
                }
                _ => return corrupt(format!("node {nid} at {addr} unreadable")),
            }
        }
        match self.inode(ROOT_INO) {
            Some(i) if i.kind == FileKind::Dir => Ok(t),
            _ => corrupt("no root directory"),
        }
    }

    fn load_dirs(&mut self, now_ns: Nanos) -> Result<Nanos, FsError> {
        let mut t = now_ns;
        let dirs: Vec<u32> =
            self.nodes.values().filter(|n| n.inode().is_some_and(|i| i.kind == FileKind::Dir)).map(|n| n.nid).collect();
        for ino in dirs {
            let mut dir = Dir::default();
            for blk in 0..self.size_blocks(ino).unwrap_or(0) {
                let addr = self.data_addr(ino, blk);
                let mut slots = vec![None; DENTRIES_PER_BLOCK];
                if addr != NULL_ADDR {
                    let (bytes, done) = self.read_blocks(now_ns, addr, 1);
                    t = t.max(done);
                    slots = decode_dentries(&bytes)
                        .ok_or_else(|| FsError::Corrupt(format!("dentry block {blk} of {ino}")))?;
                }
                dir.slots.extend(slots);
            }
            for (i, s) in dir.slots.iter().enumerate() {
                match s {
                    Some((name, _)) => {
                        dir.index.insert(name.clone(), i);
                    }
                    None => dir.free_slots.push(i),
                }
            }
            dir.free_slots.reverse();
            self.dirs.insert(ino, dir);
        }
        Ok(t)
    }

    /// Follows each node log from its checkpointed position; applies fsynced nodes.
    fn roll_forward(&mut self, now_ns: Nanos, pack: &CpPack) -> Result<Nanos, FsError> {
        let mut t = now_ns;
        let main = self.meta_end()..self.meta_end() + self.owner.len() as u32;
        for lt in [LogType::HotNode, LogType::WarmNode, LogType::ColdNode] {
            let mut addr = pack.cursors[lt.index()];
            for _ in 0..self.owner.len() {
                if !main.contains(&addr) {
                    break;
                }
                let (bytes, done) = self.read_blocks(t, addr, 1);
                t = done;
                let Some((node, footer)) = decode_node(&bytes) else { break };
                if footer.cp_version != pack.version {
                    break;
                }
                if footer.fsync {
                    self.recover_node(node, addr)?;
                }
                addr = footer.next_addr;
            }
        }
        Ok(t)
    }

    /// Puts a node written by fsync after the checkpoint in place.
    fn recover_node(&mut self, node: Node, addr: u32) -> Result<(), FsError> {
        let nid = node.nid;
        if nid as usize >= self.nat.len() {
            self.nat.resize(nid as usize + 1, NULL_ADDR);
        }
        let old_addr = self.nat[nid as usize];
        if old_addr == addr {
            return Ok(());
        }
        let old: Vec<u32> = self.nodes.get(&nid).map_or(Vec::new(), |n| n.data_addrs().to_vec());
        for (i, &a) in node.data_addrs().iter().enumerate() {
            let before = old.get(i).copied().unwrap_or(NULL_ADDR);
            if a != before {
                self.sit_flip(before, false)?;
                self.sit_flip(a, true)?;
            }
        }
        self.sit_flip(old_addr, false)?;
        self.sit_flip(addr, true)?;
        self.set_nat(nid, addr);
        let relink = node.inode().filter(|_| old_addr == NULL_ADDR).map(|i| (i.parent, i.name.clone(), i.kind));
        self.nodes.insert(nid, node);
        if let Some((parent, name, kind)) = relink {
            let parent = if self.dirs.contains_key(&parent) { parent } else { ROOT_INO };
            let existing = self.lookup(parent, &name);
            if existing.is_some_and(|old| old != nid && self.inode(old).is_some_and(|i| i.kind == FileKind::File)) {
                // F2FS's recover_dentry: the fsynced file replaces an older one of the same name.
                self.drop_file(existing.expect("checked"))?;
                let d = self.dirs.get_mut(&parent).expect("a directory");
                let slot = d.index[&name];
                d.slots[slot] = Some((name.clone(), nid));
                let blk = (slot / DENTRIES_PER_BLOCK) as u64;
                self.cache.insert(crate::cache::PageKey::Data { ino: parent, idx: blk }, true);
            } else if existing.is_none() {
                let d = self.dirs.get_mut(&parent).expect("a directory");
                d.slots.push(Some((name.clone(), nid)));
                d.index.insert(name, d.slots.len() - 1);
                let blk = ((d.slots.len() - 1) / DENTRIES_PER_BLOCK) as u64;
                self.cache.insert(crate::cache::PageKey::Data { ino: parent, idx: blk }, true);
                let inode = self.inode_mut(parent);
                inode.size_blocks = inode.size_blocks.max(blk + 1);
                self.cache.insert(crate::cache::PageKey::Node { nid: parent }, true);
            }
            if kind == FileKind::Dir {
                self.dirs.entry(nid).or_default();
            }
        }
        Ok(())
    }

    /// Frees a file's nodes and blocks during recovery.
    fn drop_file(&mut self, ino: u32) -> Result<(), FsError> {
        for nid in self.nids_of(ino) {
            let data: Vec<u32> = self.nodes[&nid].data_addrs().to_vec();
            for a in data {
                self.sit_flip(a, false)?;
            }
            let addr = self.nat[nid as usize];
            self.sit_flip(addr, false)?;
            self.set_nat(nid, NULL_ADDR);
            self.nodes.remove(&nid);
        }
        Ok(())
    }

    /// Each log goes on in its checkpointed segment after what the device
    /// holds there (blocks written after the checkpoint stay unused), or in a
    /// free segment if that one is full.
    fn resume_logs(&mut self, now_ns: Nanos, pack: &CpPack, zones: &[ZoneDescriptor]) -> Result<(), FsError> {
        self.logs.clear();
        for lt in LogType::ALL {
            let cursor = pack.cursors[lt.index()];
            if cursor < self.meta_end() || cursor >= self.meta_end() + self.owner.len() as u32 {
                return corrupt(format!("log {lt:?} at {cursor}, outside the main area"));
            }
            let (seg, _) = self.seg_of(cursor);
            let z = &zones[(seg + META_ZONES) as usize];
            let off = (z.wp - z.zslba) as u32;
            let taken = self.logs.iter().any(|l| l.seg == seg);
            let seg_off = if off < self.zone_blocks && !taken {
                let e = &mut self.sit.segs[seg as usize];
                e.current = true;
                e.log_type = Some(lt);
                (seg, off)
            } else {
                let free = (0..self.segments()).filter(|&s| self.sit.is_free_seg(s)).count();
                let why =
                    format!("no free segment for log {lt:?} (segment {seg} at {off}, taken {taken}, {free} free)");
                match self.take_free_segment(lt, now_ns) {
                    Some(s) => (s, 0),
                    // No free segment: ZNS+ goes on by threaded logging in the
                    // dirty segment of the same kind that keeps the fewest blocks.
                    None if self.cfg.threaded_logging() => {
                        let same_kind = |t: Option<LogType>| t.is_some_and(|t| t.is_node() == lt.is_node());
                        let (s, kept) = self.tl_candidate(None, same_kind).ok_or(FsError::Corrupt(why))?;
                        self.logs.push(crate::log::Log { log_type: lt, seg: s, off: 0, tl_kept: None });
                        self.tl_open(lt, s, kept, now_ns);
                        continue;
                    }
                    None => return Err(FsError::Corrupt(why)),
                }
            };
            if let Some(o) = (seg_off.1..self.zone_blocks).find(|&o| !self.sit.is_free_block(seg_off.0, o)) {
                let e = &self.sit.segs[seg_off.0 as usize];
                return corrupt(format!(
                    "log {lt:?} resumes in segment {} at {} (cursor {cursor}, zone {:?} wp {}) but block {o} is in use (valid {} ckpt {} epoch {})",
                    seg_off.0, seg_off.1, z.state, z.wp - z.zslba, e.valid.get(o as usize), e.ckpt_valid.get(o as usize), e.epoch_written.get(o as usize)
                ));
            }
            self.logs.push(crate::log::Log { log_type: lt, seg: seg_off.0, off: seg_off.1, tl_kept: None });
        }
        Ok(())
    }

    /// Marks a main-area block valid or invalid during recovery.
    fn sit_flip(&mut self, addr: u32, valid: bool) -> Result<(), FsError> {
        if addr == NULL_ADDR {
            return Ok(());
        }
        let (seg, off) = self.seg_of(addr);
        if self.sit.segs[seg as usize].valid.get(off as usize) == valid {
            return corrupt(format!("roll-forward: block {addr} already {}", if valid { "valid" } else { "free" }));
        }
        if valid {
            self.sit.validate(seg, off, 0);
        } else {
            self.sit.invalidate(seg, off);
        }
        Ok(())
    }

    /// Reads every file block for its version stamp.
    fn load_file_tags(&mut self, now_ns: Nanos) -> Result<Nanos, FsError> {
        let mut t = now_ns;
        let files: Vec<(u32, u64)> = self
            .nodes
            .values()
            .filter_map(|n| n.inode().filter(|i| i.kind == FileKind::File).map(|i| (n.nid, i.size_blocks)))
            .collect();
        for (ino, size) in files {
            let mut tags = vec![0; size as usize];
            for (idx, tag) in tags.iter_mut().enumerate() {
                let addr = self.data_addr(ino, idx as u64);
                if addr == NULL_ADDR {
                    continue;
                }
                let (bytes, done) = self.read_blocks(now_ns, addr, 1);
                t = t.max(done);
                match decode_data(&bytes) {
                    Some((i, x, v)) if i == ino && x == idx as u64 => *tag = v,
                    _ => return corrupt(format!("file {ino} block {idx} at {addr} holds something else")),
                }
            }
            self.tags.insert(ino, tags);
        }
        Ok(t)
    }

    /// The owner map from the node tree.
    fn rebuild_owners(&mut self) -> Result<(), FsError> {
        let mut nids: Vec<u32> = self.nodes.keys().copied().collect();
        nids.sort_unstable();
        for nid in nids {
            let addr = self.nat[nid as usize];
            self.own(addr, Owner::Node { nid })?;
            let node = &self.nodes[&nid];
            if node.inode().is_some() {
                let size = node.inode().map_or(0, |i| i.size_blocks);
                for idx in 0..size {
                    let a = self.data_addr(nid, idx);
                    self.own(a, Owner::Data { ino: nid, idx })?;
                }
            }
        }
        Ok(())
    }

    fn own(&mut self, addr: u32, owner: Owner) -> Result<(), FsError> {
        if addr == NULL_ADDR {
            return Ok(());
        }
        let i = self.main_index(addr);
        if self.owner[i] != Owner::Free {
            return corrupt(format!("block {addr} owned by {:?} and {owner:?}", self.owner[i]));
        }
        self.owner[i] = owner;
        Ok(())
    }
}
