//! The calls a process makes: create, write, read, fsync, unlink, sync.

use crate::cache::PageKey;
use crate::fs::{Dir, Fs, FsError};
use crate::layout::*;
use zonelab_device::ZonedDevice;
use zonelab_sim::Nanos;

impl<D: ZonedDevice> Fs<D> {
    /// Before an operation that dirties pages: periodic checkpoint (ZNS+) and
    /// foreground segment recycling when free segments run low.
    fn balance(&mut self, now_ns: Nanos) -> Nanos {
        let mut t = now_ns;
        if self.cfg.threaded_logging() && self.sit.preinvalid_blocks >= self.cfg.preinvalid_blocks_max {
            self.stats.periodic_checkpoints += 1;
            t = self.checkpoint(t);
        }
        // Bound: each round reclaims a segment or finds no victim.
        for _ in 0..self.segments() {
            if !self.needs_foreground_compaction() {
                break;
            }
            match self.compact_one(t, self.cfg.fg_victim, false) {
                Some(done) => t = done,
                None => break,
            }
        }
        t
    }

    /// A system call that may dirty pages: its entry cost, then [`Self::balance`].
    fn balance_after_syscall(&mut self, now_ns: Nanos) -> Nanos {
        let t = self.host_work(now_ns, self.cfg.host.syscall_ns);
        self.balance(t)
    }

    /// Creates `name` in `dir`.
    pub fn create(&mut self, now_ns: Nanos, dir: u32, name: &str, kind: FileKind) -> Result<(u32, Nanos), FsError> {
        if name.len() > NAME_BYTES_MAX || name.is_empty() {
            return Err(FsError::NameTooLong);
        }
        if !self.dirs.contains_key(&dir) {
            return Err(FsError::NotDir);
        }
        if self.lookup(dir, name).is_some() {
            return Err(FsError::Exists);
        }
        let mut t = self.balance_after_syscall(now_ns);
        let ino = self.alloc_nid();
        self.nodes.insert(ino, Node::new_inode(ino, kind, dir, name));
        t = self.make_room(2, t);
        self.cache.insert(PageKey::Node { nid: ino }, true);
        match kind {
            FileKind::Dir => {
                self.dirs.insert(ino, Dir::default());
            }
            FileKind::File => {
                self.tags.insert(ino, Vec::new());
            }
        }
        t = self.add_dentry(t, dir, name, ino);
        Ok((ino, self.throttle(t)))
    }

    fn add_dentry(&mut self, now_ns: Nanos, dir: u32, name: &str, ino: u32) -> Nanos {
        let d = self.dirs.get_mut(&dir).expect("checked");
        let slot = d.free_slots.pop().unwrap_or_else(|| {
            d.slots.push(None);
            d.slots.len() - 1
        });
        d.slots[slot] = Some((name.to_string(), ino));
        d.index.insert(name.to_string(), slot);
        let blk = (slot / DENTRIES_PER_BLOCK) as u64;
        let key = PageKey::Data { ino: dir, idx: blk };
        let t = self.load_page(PageKey::Node { nid: dir }, now_ns);
        let t = self.load_page(key, t);
        self.cache.insert(key, true);
        let inode = self.inode_mut(dir);
        if inode.size_blocks <= blk {
            inode.size_blocks = blk + 1;
            self.cache.insert(PageKey::Node { nid: dir }, true);
        }
        self.host_work(t, self.cfg.host.page_ns)
    }

    /// Writes blocks `idx .. idx + n` of file `ino`, each stamped `tag`.
    pub fn write(&mut self, now_ns: Nanos, ino: u32, idx: u64, n: u64, tag: u64) -> Result<Nanos, FsError> {
        match self.inode(ino) {
            Some(i) if i.kind == FileKind::File => {}
            Some(_) => return Err(FsError::NotDir),
            None => return Err(FsError::NotFound),
        }
        let mut t = self.balance_after_syscall(now_ns);
        t = self.load_page(PageKey::Node { nid: ino }, t);
        for b in idx..idx + n {
            let (dn, _) = self.dnode_for(ino, b);
            t = self.load_page(PageKey::Node { nid: dn }, t);
            t = self.make_room(1, t);
            self.cache.insert(PageKey::Data { ino, idx: b }, true);
            let tags = self.tags.get_mut(&ino).expect("a file has tags");
            if tags.len() <= b as usize {
                tags.resize(b as usize + 1, 0);
            }
            tags[b as usize] = tag;
        }
        let inode = self.inode_mut(ino);
        if inode.size_blocks < idx + n {
            inode.size_blocks = idx + n;
            self.cache.insert(PageKey::Node { nid: ino }, true);
        }
        t = self.host_work(t, n * self.cfg.host.page_ns);
        Ok(self.throttle(t))
    }

    /// Writers write back themselves while too much of the cache is dirty.
    fn throttle(&mut self, now_ns: Nanos) -> Nanos {
        let limit = (self.cache.capacity_pages() as f64 * self.cfg.dirty_ratio) as usize;
        let mut t = now_ns;
        while self.cache.dirty_pages() > limit {
            let batch = self.cache.oldest_dirty(self.cfg.request_blocks_max as usize * 4);
            t = self.writeback(t, &batch, false);
        }
        t
    }

    /// Reads blocks `idx .. idx + n` of file `ino` (beyond the end reads nothing).
    pub fn read(&mut self, now_ns: Nanos, ino: u32, idx: u64, n: u64) -> Result<Nanos, FsError> {
        let size = self.size_blocks(ino).ok_or(FsError::NotFound)?;
        let mut t = self.host_work(now_ns, self.cfg.host.syscall_ns);
        t = self.load_page(PageKey::Node { nid: ino }, t);
        let end = (idx + n).min(size);
        let mut misses = Vec::new();
        for b in idx..end {
            let (dn, _) = self.dnode_for(ino, b);
            t = self.load_page(PageKey::Node { nid: dn }, t);
            let key = PageKey::Data { ino, idx: b };
            if !self.cache.touch(key) {
                misses.push(b);
            }
        }
        let start = self.make_room(misses.len(), t);
        let mut done = start;
        let mut issue = start;
        let mut run_start = 0;
        for i in 0..misses.len() {
            self.cache.insert(PageKey::Data { ino, idx: misses[i] }, false);
            let a = self.data_addr(ino, misses[i]);
            let next = misses.get(i + 1).map(|&b| self.data_addr(ino, b));
            if next != Some(a + 1)
                || (a + 1).is_multiple_of(self.zone_blocks)
                || i + 1 - run_start >= self.cfg.request_blocks_max as usize
            {
                let first = self.data_addr(ino, misses[run_start]);
                if first != NULL_ADDR {
                    let nlb = (i + 1 - run_start) as u32;
                    issue = self.host_work(issue, self.cfg.host.request_ns);
                    done = done.max(self.io.read(issue, u64::from(first), nlb, None));
                }
                run_start = i + 1;
            }
        }
        Ok(self.host_work(done, end.saturating_sub(idx) * self.cfg.host.page_ns))
    }

    /// Makes the file durable as F2FS does: its data written and waited on
    /// (with every write still in flight), the device cache flushed, then
    /// its nodes with the fsync mark, written FUA.
    pub fn fsync(&mut self, now_ns: Nanos, ino: u32) -> Result<Nanos, FsError> {
        if self.inode(ino).is_none() {
            return Err(FsError::NotFound);
        }
        self.stats.fsyncs += 1;
        let t = self.balance_after_syscall(now_ns);
        let data = self.cache.dirty_data_of(ino);
        if self.cfg.broken_ordering {
            return Ok(self.fsync_broken(t, ino, &data));
        }
        let done = self.writeback(t, &data, false).max(self.inflight_ns);
        let t = self.io.flush(done);
        let nodes = self.fsync_nodes(ino);
        let done = self.writeback(t, &nodes, true);
        self.inflight_ns = self.inflight_ns.max(done);
        Ok(done.max(t))
    }

    /// The ordering bug the crash tests must catch: nodes first, data at the
    /// same time, nothing flushed.
    fn fsync_broken(&mut self, t: Nanos, ino: u32, data: &[PageKey]) -> Nanos {
        let nodes = self.fsync_nodes(ino);
        let done = self.writeback(t, &nodes, true);
        done.max(self.writeback(t, data, false)).max(t)
    }

    /// The file's node pages an fsync writes (marked dirty).
    fn fsync_nodes(&mut self, ino: u32) -> Vec<PageKey> {
        let mut nodes: Vec<PageKey> = self
            .nids_of(ino)
            .into_iter()
            .map(|nid| PageKey::Node { nid })
            .filter(|&k| self.cache.is_dirty(k) || matches!(k, PageKey::Node { nid } if self.unsynced.contains(&nid)))
            .collect();
        nodes.sort();
        for &k in &nodes {
            self.cache.insert(k, true);
        }
        nodes
    }

    /// Removes `name` from `dir`, freeing the file's blocks and nodes.
    pub fn unlink(&mut self, now_ns: Nanos, dir: u32, name: &str) -> Result<Nanos, FsError> {
        let ino = self.lookup(dir, name).ok_or(FsError::NotFound)?;
        if self.dirs.get(&ino).is_some_and(|d| d.slots.iter().any(Option::is_some)) {
            return Err(FsError::Exists);
        }
        let t = self.balance_after_syscall(now_ns);
        let d = self.dirs.get_mut(&dir).expect("looked up");
        let slot = d.index.remove(name).expect("looked up");
        d.slots[slot] = None;
        d.free_slots.push(slot);
        let key = PageKey::Data { ino: dir, idx: (slot / DENTRIES_PER_BLOCK) as u64 };
        let mut t = self.load_page(key, t);
        self.cache.insert(key, true);
        t = self.free_file(t, ino);
        Ok(self.throttle(t))
    }

    /// Drops every block and node of `ino`.
    fn free_file(&mut self, now_ns: Nanos, ino: u32) -> Nanos {
        let size = self.size_blocks(ino).unwrap_or(0);
        for idx in 0..size {
            let a = self.data_addr(ino, idx);
            self.release_block(a);
            self.cache.remove(PageKey::Data { ino, idx });
        }
        for nid in self.nids_of(ino) {
            let a = self.nat[nid as usize];
            self.release_block(a);
            self.set_nat(nid, NULL_ADDR);
            self.nodes.remove(&nid);
            self.unsynced.remove(&nid);
            self.cache.remove(PageKey::Node { nid });
            self.freed_nids.push(nid);
        }
        self.tags.remove(&ino);
        self.dirs.remove(&ino);
        self.host_work(now_ns, size * self.cfg.host.page_ns / 8)
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

    /// Makes everything durable: dirty data, then a checkpoint.
    pub fn sync(&mut self, now_ns: Nanos) -> Nanos {
        let keys = self.cache.dirty_matching(|k| matches!(k, PageKey::Data { .. }));
        let t = self.host_work(now_ns, self.cfg.host.syscall_ns);
        let t = self.writeback(t, &keys, false);
        self.checkpoint(t)
    }
}
