//! The calls a process makes: create, write, read, fsync, unlink, sync.

use crate::cache::PageKey;
use crate::checkpoint::checkpoint;
use crate::gc::compact_one;
use crate::layout::*;
use crate::state::{Dir, FsError, FsState};
use crate::victim::needs_foreground_compaction;
use crate::write::{load_page, make_room, writeback};
use zonelab_device::ZonedDevice;
use zonelab_sim::Nanos;

/// Before an operation that dirties pages: periodic checkpoint (ZNS+) and
/// foreground segment recycling when free segments run low.
fn balance<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Nanos {
    let mut t = now_ns;
    if fs.cfg.threaded_logging() && fs.sit.preinvalid_blocks >= fs.cfg.preinvalid_blocks_max {
        fs.stats.periodic_checkpoints += 1;
        t = checkpoint(fs, t);
    }
    // Bound: each round reclaims a segment or finds no victim.
    for _ in 0..fs.segments() {
        if !needs_foreground_compaction(fs) {
            break;
        }
        match compact_one(fs, t, fs.cfg.fg_victim, false) {
            Some(done) => t = done,
            None => break,
        }
    }
    t
}

/// A system call that may dirty pages: its entry cost, then [`balance`].
fn balance_after_syscall<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Nanos {
    let t = fs.host_work(now_ns, fs.cfg.host.syscall_ns);
    balance(fs, t)
}

/// Creates `name` in `dir`.
pub(crate) fn create<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    dir: u32,
    name: &str,
    kind: FileKind,
) -> Result<(u32, Nanos), FsError> {
    if name.len() > NAME_BYTES_MAX || name.is_empty() {
        return Err(FsError::NameTooLong);
    }
    if !fs.dirs.contains_key(&dir) {
        return Err(FsError::NotDir);
    }
    if fs.lookup(dir, name).is_some() {
        return Err(FsError::Exists);
    }
    let mut t = balance_after_syscall(fs, now_ns);
    let ino = fs.alloc_nid();
    fs.nodes.insert(ino, Node::new_inode(ino, kind, dir, name));
    t = make_room(fs, 2, t);
    fs.cache.insert(PageKey::Node { nid: ino }, true);
    match kind {
        FileKind::Dir => {
            fs.dirs.insert(ino, Dir::default());
        }
        FileKind::File => {
            fs.tags.insert(ino, Vec::new());
        }
    }
    t = add_dentry(fs, t, dir, name, ino);
    Ok((ino, throttle(fs, t)))
}

fn add_dentry<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, dir: u32, name: &str, ino: u32) -> Nanos {
    let d = fs.dirs.get_mut(&dir).expect("checked");
    let slot = d.free_slots.pop().unwrap_or_else(|| {
        d.slots.push(None);
        d.slots.len() - 1
    });
    d.slots[slot] = Some((name.to_string(), ino));
    d.index.insert(name.to_string(), slot);
    let blk = (slot / DENTRIES_PER_BLOCK) as u64;
    let key = PageKey::Data { ino: dir, idx: blk };
    let t = load_page(fs, PageKey::Node { nid: dir }, now_ns);
    let t = load_page(fs, key, t);
    fs.cache.insert(key, true);
    let inode = fs.inode_mut(dir);
    if inode.size_blocks <= blk {
        inode.size_blocks = blk + 1;
        fs.cache.insert(PageKey::Node { nid: dir }, true);
    }
    fs.host_work(t, fs.cfg.host.page_ns)
}

/// Writes blocks `idx .. idx + n` of file `ino`, each stamped `tag`.
pub(crate) fn write<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    ino: u32,
    idx: u64,
    n: u64,
    tag: u64,
) -> Result<Nanos, FsError> {
    match fs.inode(ino) {
        Some(i) if i.kind == FileKind::File => {}
        Some(_) => return Err(FsError::NotDir),
        None => return Err(FsError::NotFound),
    }
    let mut t = balance_after_syscall(fs, now_ns);
    t = load_page(fs, PageKey::Node { nid: ino }, t);
    for b in idx..idx + n {
        let (dn, _) = fs.dnode_for(ino, b);
        t = load_page(fs, PageKey::Node { nid: dn }, t);
        t = make_room(fs, 1, t);
        fs.cache.insert(PageKey::Data { ino, idx: b }, true);
        let tags = fs.tags.get_mut(&ino).expect("a file has tags");
        if tags.len() <= b as usize {
            tags.resize(b as usize + 1, 0);
        }
        tags[b as usize] = tag;
    }
    let inode = fs.inode_mut(ino);
    if inode.size_blocks < idx + n {
        inode.size_blocks = idx + n;
        fs.cache.insert(PageKey::Node { nid: ino }, true);
    }
    t = fs.host_work(t, n * fs.cfg.host.page_ns);
    Ok(throttle(fs, t))
}

/// Writers write back themselves while too much of the cache is dirty.
fn throttle<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Nanos {
    let limit = (fs.cache.capacity_pages() as f64 * fs.cfg.dirty_ratio) as usize;
    let mut t = now_ns;
    while fs.cache.dirty_pages() > limit {
        let batch = fs.cache.oldest_dirty(fs.cfg.request_blocks_max as usize * 4);
        t = writeback(fs, t, &batch, false);
    }
    t
}

/// Reads blocks `idx .. idx + n` of file `ino` (beyond the end reads nothing).
pub(crate) fn read<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    ino: u32,
    idx: u64,
    n: u64,
) -> Result<Nanos, FsError> {
    let size = fs.size_blocks(ino).ok_or(FsError::NotFound)?;
    let mut t = fs.host_work(now_ns, fs.cfg.host.syscall_ns);
    t = load_page(fs, PageKey::Node { nid: ino }, t);
    let end = (idx + n).min(size);
    let mut misses = Vec::new();
    for b in idx..end {
        let (dn, _) = fs.dnode_for(ino, b);
        t = load_page(fs, PageKey::Node { nid: dn }, t);
        let key = PageKey::Data { ino, idx: b };
        if !fs.cache.touch(key) {
            misses.push(b);
        }
    }
    let start = make_room(fs, misses.len(), t);
    let mut done = start;
    let mut issue = start;
    let mut run_start = 0;
    for i in 0..misses.len() {
        fs.cache.insert(PageKey::Data { ino, idx: misses[i] }, false);
        let a = fs.data_addr(ino, misses[i]);
        let next = misses.get(i + 1).map(|&b| fs.data_addr(ino, b));
        if next != Some(a + 1)
            || (a + 1).is_multiple_of(fs.zone_blocks)
            || i + 1 - run_start >= fs.cfg.request_blocks_max as usize
        {
            let first = fs.data_addr(ino, misses[run_start]);
            if first != NULL_ADDR {
                let nlb = (i + 1 - run_start) as u32;
                issue = fs.host_work(issue, fs.cfg.host.request_ns);
                done = done.max(fs.io.read(issue, u64::from(first), nlb, None));
            }
            run_start = i + 1;
        }
    }
    Ok(fs.host_work(done, end.saturating_sub(idx) * fs.cfg.host.page_ns))
}

/// Makes the file durable as F2FS does: its data written and waited on
/// (with every write still in flight), the device cache flushed, then
/// its nodes with the fsync mark, written FUA.
pub(crate) fn fsync<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, ino: u32) -> Result<Nanos, FsError> {
    if fs.inode(ino).is_none() {
        return Err(FsError::NotFound);
    }
    fs.stats.fsyncs += 1;
    let t = balance_after_syscall(fs, now_ns);
    let data = fs.cache.dirty_data_of(ino);
    if fs.cfg.broken_ordering {
        return Ok(fsync_broken(fs, t, ino, &data));
    }
    let done = writeback(fs, t, &data, false).max(fs.inflight_ns);
    let t = fs.io.flush(done);
    let nodes = fsync_nodes(fs, ino);
    let done = writeback(fs, t, &nodes, true);
    fs.inflight_ns = fs.inflight_ns.max(done);
    Ok(done.max(t))
}

/// The ordering bug the crash tests must catch: nodes first, data at the
/// same time, nothing flushed.
fn fsync_broken<D: ZonedDevice>(fs: &mut FsState<D>, t: Nanos, ino: u32, data: &[PageKey]) -> Nanos {
    let nodes = fsync_nodes(fs, ino);
    let done = writeback(fs, t, &nodes, true);
    done.max(writeback(fs, t, data, false)).max(t)
}

/// The file's node pages an fsync writes (marked dirty).
fn fsync_nodes<D: ZonedDevice>(fs: &mut FsState<D>, ino: u32) -> Vec<PageKey> {
    let mut nodes: Vec<PageKey> = fs
        .nids_of(ino)
        .into_iter()
        .map(|nid| PageKey::Node { nid })
        .filter(|&k| fs.cache.is_dirty(k) || matches!(k, PageKey::Node { nid } if fs.unsynced.contains(&nid)))
        .collect();
    nodes.sort();
    for &k in &nodes {
        fs.cache.insert(k, true);
    }
    nodes
}

/// Removes `name` from `dir`, freeing the file's blocks and nodes.
pub(crate) fn unlink<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    dir: u32,
    name: &str,
) -> Result<Nanos, FsError> {
    let ino = fs.lookup(dir, name).ok_or(FsError::NotFound)?;
    if fs.dirs.get(&ino).is_some_and(|d| d.slots.iter().any(Option::is_some)) {
        return Err(FsError::Exists);
    }
    let t = balance_after_syscall(fs, now_ns);
    let d = fs.dirs.get_mut(&dir).expect("looked up");
    let slot = d.index.remove(name).expect("looked up");
    d.slots[slot] = None;
    d.free_slots.push(slot);
    let key = PageKey::Data { ino: dir, idx: (slot / DENTRIES_PER_BLOCK) as u64 };
    let mut t = load_page(fs, key, t);
    fs.cache.insert(key, true);
    t = free_file(fs, t, ino);
    Ok(throttle(fs, t))
}

/// Drops every block and node of `ino`.
fn free_file<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, ino: u32) -> Nanos {
    let size = fs.size_blocks(ino).unwrap_or(0);
    for idx in 0..size {
        let a = fs.data_addr(ino, idx);
        fs.release_block(a);
        fs.cache.remove(PageKey::Data { ino, idx });
    }
    for nid in fs.nids_of(ino) {
        let a = fs.nat[nid as usize];
        fs.release_block(a);
        fs.set_nat(nid, NULL_ADDR);
        fs.nodes.remove(&nid);
        fs.unsynced.remove(&nid);
        fs.cache.remove(PageKey::Node { nid });
        fs.freed_nids.push(nid);
    }
    fs.tags.remove(&ino);
    fs.dirs.remove(&ino);
    fs.host_work(now_ns, size * fs.cfg.host.page_ns / 8)
}

/// Makes everything durable: dirty data, then a checkpoint.
pub(crate) fn sync<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Nanos {
    let keys = fs.cache.dirty_matching(|k| matches!(k, PageKey::Data { .. }));
    let t = fs.host_work(now_ns, fs.cfg.host.syscall_ns);
    let t = writeback(fs, t, &keys, false);
    checkpoint(fs, t)
}
