//! Write-back: dirty pages get block addresses from their log, the node tree
//! and NAT learn them, and runs of consecutive blocks go to the device.

use crate::cache::PageKey;
use crate::fs::{Fs, Owner};
use crate::io::BlockKind;
use crate::layout::*;
use crate::sit::LogType;
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

impl<D: ZonedDevice> Fs<D> {
    /// The log a page goes to (F2FS's six-type policy).
    pub(crate) fn log_of(&self, key: PageKey) -> LogType {
        match key {
            PageKey::Data { ino, .. } => {
                if self.relocating.contains(&key) {
                    LogType::ColdData
                } else if self.dirs.contains_key(&ino) {
                    LogType::HotData
                } else {
                    LogType::WarmData
                }
            }
            PageKey::Node { nid } => match self.nodes.get(&nid).map(|n| &n.body) {
                Some(NodeBody::Indirect(_)) => LogType::ColdNode,
                _ if self.relocating.contains(&key) => LogType::ColdNode,
                _ => {
                    let ino = self.nodes.get(&nid).map_or(nid, |n| n.ino);
                    if self.dirs.contains_key(&ino) {
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
    pub(crate) fn writeback(&mut self, now_ns: Nanos, keys: &[PageKey], fsync: bool) -> Nanos {
        let mut by_log: Vec<Vec<PageKey>> = vec![Vec::new(); LogType::ALL.len()];
        for &k in keys {
            if self.cache.is_dirty(k) {
                by_log[self.log_of(k).index()].push(k);
            }
        }
        let mut done = now_ns;
        // Data logs first: writing data dirties the nodes that point to it.
        for lt in [LogType::HotData, LogType::WarmData, LogType::ColdData] {
            let batch = std::mem::take(&mut by_log[lt.index()]);
            done = done.max(self.write_log(now_ns, lt, &batch, fsync));
        }
        for lt in [LogType::HotNode, LogType::WarmNode, LogType::ColdNode] {
            let batch = std::mem::take(&mut by_log[lt.index()]);
            done = done.max(self.write_log(now_ns, lt, &batch, fsync));
        }
        done
    }

    /// Allocates blocks in log `lt` for `keys` and submits them.
    fn write_log(&mut self, now_ns: Nanos, lt: LogType, keys: &[PageKey], fsync: bool) -> Nanos {
        if keys.is_empty() {
            return now_ns;
        }
        let mut queued = Vec::with_capacity(keys.len());
        let mut done = now_ns;
        for &key in keys {
            let addr = self.alloc_block(lt, now_ns);
            self.place(key, addr, now_ns);
            let next_addr = self.log_next_addr(lt);
            let relocated = self.relocating.remove(&key);
            queued.push(Queued { addr, key, next_addr, relocated });
            self.cache.mark_clean(key);
            if let PageKey::Node { nid } = key {
                if fsync {
                    self.unsynced.remove(&nid);
                } else {
                    self.unsynced.insert(nid);
                }
            }
            // The log moved to another segment: finish the one it left first.
            if !self.left_segs.is_empty() {
                done = done.max(self.submit_runs(now_ns, lt, &queued, fsync));
                queued.clear();
                self.close_pending(now_ns);
            }
        }
        done = done.max(self.submit_runs(now_ns, lt, &queued, fsync));
        self.close_pending(now_ns);
        done
    }

    /// Records that `key` now lives at `addr`: tree or NAT, SIT, owner map.
    pub(crate) fn place(&mut self, key: PageKey, addr: u32, now_ns: Nanos) {
        if let Some(i) = self.unplaced.iter().position(|&a| a == addr) {
            self.unplaced.swap_remove(i);
        }
        let old = match key {
            PageKey::Data { ino, idx } => {
                self.claim_block(addr, Owner::Data { ino, idx }, now_ns);
                self.set_data_addr(ino, idx, addr)
            }
            PageKey::Node { nid } => {
                self.claim_block(addr, Owner::Node { nid }, now_ns);
                let old = self.nat[nid as usize];
                self.set_nat(nid, addr);
                old
            }
        };
        self.release_block(old);
    }

    /// Submits runs of consecutive addresses, each one request.
    fn submit_runs(&mut self, now_ns: Nanos, lt: LogType, queued: &[Queued], fsync: bool) -> Nanos {
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
                && j - i < self.cfg.request_blocks_max as usize
                && !queued[j].addr.is_multiple_of(self.zone_blocks)
            {
                j += 1;
            }
            let bytes = self.io.data_mode().then(|| self.encode_run(&queued[i..j], fsync));
            t = self.host_work(t, self.cfg.host.request_ns);
            let nlb = (j - i) as u32;
            // fsync's nodes are durable when written (F2FS: REQ_FUA).
            let fua = fsync && lt.is_node() && !self.cfg.broken_ordering;
            let run_kind = if kind == BlockKind::Node { node_kind(&queued[i]) } else { kind };
            let c = self.io.write(t, u64::from(queued[i].addr), nlb, bytes.as_deref(), run_kind, fua);
            done = done.max(c);
            i = j;
        }
        if kind == BlockKind::Data {
            self.stats.user_blocks += queued.len() as u64;
        }
        self.inflight_ns = self.inflight_ns.max(done);
        done
    }

    /// The bytes of a run (data mode).
    fn encode_run(&self, run: &[Queued], fsync: bool) -> Vec<u8> {
        let mut bytes = vec![0; run.len() * BLOCK_BYTES];
        for (q, buf) in run.iter().zip(bytes.chunks_mut(BLOCK_BYTES)) {
            match q.key {
                PageKey::Node { nid } => {
                    let footer = Footer { cp_version: self.cp.version, fsync, next_addr: q.next_addr };
                    encode_node(&self.nodes[&nid], footer, buf);
                }
                PageKey::Data { ino, idx } => match self.dirs.get(&ino) {
                    Some(dir) => {
                        let first = idx as usize * DENTRIES_PER_BLOCK;
                        let mut slots: Vec<_> =
                            dir.slots.iter().skip(first).take(DENTRIES_PER_BLOCK).cloned().collect();
                        slots.resize(DENTRIES_PER_BLOCK, None);
                        encode_dentries(&slots, buf);
                    }
                    None => encode_data(ino, idx, self.tags[&ino][idx as usize], buf),
                },
            }
        }
        bytes
    }
}
