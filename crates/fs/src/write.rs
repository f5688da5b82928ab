//! Write-back: dirty pages get block addresses from their log, the node tree
//! and NAT learn them, and runs of consecutive blocks go to the device.

use crate::cache::PageKey;
use crate::io::BlockKind;
use crate::layout::*;
use crate::log::{alloc_block, close_pending, log_next_addr};
use crate::sit::LogType;
use crate::state::{FsState, Owner};
use zonelab_device::ZonedDevice;
use zonelab_sim::Nanos;

/// One block on its way to the device.
struct Queued {
    addr: u32,
    key: PageKey,
    /// For a node: where its log writes next (the roll-forward chain).
    next_addr: u32,
    /// Moved by a compaction's host copy, unchanged.
    relocated: bool,
}

/// The log a page goes to (F2FS's six-type policy).
pub(crate) fn log_of<D: ZonedDevice>(fs: &FsState<D>, key: PageKey) -> LogType {
    match key {
        PageKey::Data { ino, .. } => {
            if fs.relocating.contains(&key) {
                LogType::ColdData
            } else if fs.dirs.contains_key(&ino) {
                LogType::HotData
            } else {
                LogType::WarmData
            }
        }
        PageKey::Node { nid } => match fs.nodes.get(&nid).map(|n| &n.body) {
            Some(NodeBody::Indirect(_)) => LogType::ColdNode,
            _ if fs.relocating.contains(&key) => LogType::ColdNode,
            _ => {
                let ino = fs.nodes.get(&nid).map_or(nid, |n| n.ino);
                if fs.dirs.contains_key(&ino) {
                    LogType::HotNode
                } else {
                    LogType::WarmNode
                }
            }
        },
    }
}

/// Writes `keys` back (data before nodes); node blocks carry the fsync
/// mark if `fsync`. Returns when the last write completes.
pub(crate) fn writeback<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, keys: &[PageKey], fsync: bool) -> Nanos {
    let mut by_log: Vec<Vec<PageKey>> = vec![Vec::new(); LogType::ALL.len()];
    for &k in keys {
        if fs.cache.is_dirty(k) {
            by_log[log_of(fs, k).index()].push(k);
        }
    }
    let mut done = now_ns;
    // Data logs first: writing data dirties the nodes that point to it.
    for lt in [LogType::HotData, LogType::WarmData, LogType::ColdData] {
        let batch = std::mem::take(&mut by_log[lt.index()]);
        done = done.max(write_log(fs, now_ns, lt, &batch, fsync));
    }
    for lt in [LogType::HotNode, LogType::WarmNode, LogType::ColdNode] {
        let batch = std::mem::take(&mut by_log[lt.index()]);
        done = done.max(write_log(fs, now_ns, lt, &batch, fsync));
    }
    done
}

/// Allocates blocks in log `lt` for `keys` and submits them.
fn write_log<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, lt: LogType, keys: &[PageKey], fsync: bool) -> Nanos {
    if keys.is_empty() {
        return now_ns;
    }
    let mut queued = Vec::with_capacity(keys.len());
    let mut done = now_ns;
    for &key in keys {
        let addr = alloc_block(fs, lt, now_ns);
        place(fs, key, addr, now_ns);
        let next_addr = log_next_addr(fs, lt);
        let relocated = fs.relocating.remove(&key);
        queued.push(Queued { addr, key, next_addr, relocated });
        fs.cache.mark_clean(key);
        if let PageKey::Node { nid } = key {
            if fsync {
                fs.unsynced.remove(&nid);
            } else {
                fs.unsynced.insert(nid);
            }
        }
        // The log moved to another segment: finish the one it left first.
        if !fs.left_segs.is_empty() {
            done = done.max(submit_runs(fs, now_ns, lt, &queued, fsync));
            queued.clear();
            close_pending(fs, now_ns);
        }
    }
    done = done.max(submit_runs(fs, now_ns, lt, &queued, fsync));
    close_pending(fs, now_ns);
    done
}

/// Records that `key` now lives at `addr`: tree or NAT, SIT, owner map.
pub(crate) fn place<D: ZonedDevice>(fs: &mut FsState<D>, key: PageKey, addr: u32, now_ns: Nanos) {
    fs.unplaced.remove(&addr);
    let old = match key {
        PageKey::Data { ino, idx } => {
            fs.claim_block(addr, Owner::Data { ino, idx }, now_ns);
            fs.set_data_addr(ino, idx, addr)
        }
        PageKey::Node { nid } => {
            fs.claim_block(addr, Owner::Node { nid }, now_ns);
            let old = fs.nat[nid as usize];
            fs.set_nat(nid, addr);
            old
        }
    };
    fs.release_block(old);
}

/// Submits runs of consecutive addresses, each one request.
fn submit_runs<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    lt: LogType,
    queued: &[Queued],
    fsync: bool,
) -> Nanos {
    let node_kind = |q: &Queued| if q.relocated { BlockKind::RelocatedNode } else { BlockKind::Node };
    let kind = if lt.is_node() {
        BlockKind::Node
    } else if lt == LogType::ColdData {
        BlockKind::Relocated
    } else {
        BlockKind::Data
    };
    let mut done = now_ns;
    let mut t = now_ns;
    let mut i = 0;
    while i < queued.len() {
        let mut j = i + 1;
        while j < queued.len()
            && queued[j].addr == queued[j - 1].addr + 1
            && queued[j].relocated == queued[i].relocated
            && j - i < fs.cfg.request_blocks_max as usize
            && !queued[j].addr.is_multiple_of(fs.zone_blocks)
        {
            j += 1;
        }
        let bytes = fs.io.data_mode().then(|| encode_run(fs, &queued[i..j], fsync));
        t = fs.host_work(t, fs.cfg.host.request_ns);
        let nlb = (j - i) as u32;
        // fsync's nodes are durable when written (F2FS: REQ_FUA).
        let fua = fsync && lt.is_node() && !fs.cfg.broken_ordering;
        let run_kind = if kind == BlockKind::Node { node_kind(&queued[i]) } else { kind };
        let c = fs.io.write(t, u64::from(queued[i].addr), nlb, bytes.as_deref(), run_kind, fua);
        done = done.max(c);
        i = j;
    }
    if kind == BlockKind::Data {
        fs.stats.user_blocks += queued.len() as u64;
    }
    fs.inflight_ns = fs.inflight_ns.max(done);
    done
}

/// The bytes of a run (data mode).
fn encode_run<D: ZonedDevice>(fs: &FsState<D>, run: &[Queued], fsync: bool) -> Vec<u8> {
    let mut bytes = vec![0; run.len() * BLOCK_BYTES];
    for (q, buf) in run.iter().zip(bytes.chunks_mut(BLOCK_BYTES)) {
        match q.key {
            PageKey::Node { nid } => {
                let footer = Footer { cp_version: fs.cp.version, fsync, next_addr: q.next_addr };
                encode_node(&fs.nodes[&nid], footer, buf);
            }
            PageKey::Data { ino, idx } => match fs.dirs.get(&ino) {
                Some(dir) => {
                    let first = idx as usize * DENTRIES_PER_BLOCK;
                    let mut slots: Vec<_> = dir.slots.iter().skip(first).take(DENTRIES_PER_BLOCK).cloned().collect();
                    slots.resize(DENTRIES_PER_BLOCK, None);
                    encode_dentries(&slots, buf);
                }
                None => encode_data(ino, idx, fs.tags[&ino][idx as usize], buf),
            },
        }
    }
    bytes
}

/// Makes sure the page is cached, reading it at `now_ns` if it is on
/// disk; returns when it is there.
pub(crate) fn load_page<D: ZonedDevice>(fs: &mut FsState<D>, key: PageKey, now_ns: Nanos) -> Nanos {
    if fs.cache.touch(key) {
        return now_ns;
    }
    let addr = match key {
        PageKey::Node { nid } => fs.nat[nid as usize],
        PageKey::Data { ino, idx } => fs.data_addr(ino, idx),
    };
    let t = make_room(fs, 1, now_ns);
    fs.cache.insert(key, false);
    if addr == NULL_ADDR {
        return t;
    }
    let at = fs.host_work(t, fs.cfg.host.request_ns);
    fs.io.read(at, u64::from(addr), 1, None)
}

/// Evicts clean pages, writing back dirty ones if needed, so that `pages` fit.
pub(crate) fn make_room<D: ZonedDevice>(fs: &mut FsState<D>, pages: usize, now_ns: Nanos) -> Nanos {
    let mut t = now_ns;
    while !fs.cache.evict_clean(pages) {
        let batch = fs.cache.oldest_dirty(fs.cfg.request_blocks_max as usize);
        assert!(!batch.is_empty(), "page cache smaller than one operation");
        t = writeback(fs, t, &batch, false);
    }
    t
}
