//! Segment recycling: victim selection, segment compaction by host copy
//! (ZNS) or zone_compaction (IZC) with copyback-aware block allocation, and
//! hybrid segment recycling (seed 002 §3.3.2), which picks threaded logging
//! or compaction by their costs.

use crate::cache::PageKey;
use crate::config::{Recycling, VictimPolicy};
use crate::fs::{CompactionRecord, Fs, Owner};
use crate::sit::{Bitmap, LogType};
use std::collections::HashMap;
use zonelab_device::Command;
use zonelab_device::ZonedDevice;
use zonelab_sim::{transfer_ns, Nanos};

/// Hybrid segment recycling state: the cost model and its profiled factors.
#[derive(Debug, Clone, Default)]
pub struct Hsr {
    /// Node and metadata blocks written per relocated valid block (profiled).
    pub alpha: f64,
    /// Share of cold blocks still valid at the next threaded-logging open (profiled).
    pub beta: f64,
    /// Hybrid recycling chose compaction: the next operation runs it.
    pub sc_requested: bool,
    /// In-storage copy of one block, on-demand.
    copy_block_ns: f64,
    /// Host write of one block.
    write_block_ns: f64,
}

/// f_plugging(N) over the on-demand copy cost (seed 002 §3.3.2).
const PLUGGING_SHARE: f64 = 0.9;
/// Threaded logging needs at least 1/this of a segment free.
const TL_FREE_SHARE_MIN: u32 = 32;
/// Weight of a new sample in the profiled α and β.
const PROFILE_WEIGHT: f64 = 0.1;

impl Hsr {
    /// Costs per block from the device's flash timing and link.
    pub fn new<D: ZonedDevice>(fs: &Fs<D>) -> Self {
        let c = fs.device().config();
        let l = fs.device().layout();
        let page = u64::from(c.flash.page_bytes);
        let dma = transfer_ns(page, c.flash_timing.channel_bytes_per_s) as f64;
        let parallel = (l.lbas_per_chunk * u64::from(l.d_zone)) as f64;
        let copy = (c.flash_timing.read_ns as f64 + 2.0 * dma + c.flash_timing.program_ns as f64) / parallel;
        let link = transfer_ns(l.lba_bytes, c.link.bytes_per_s()) as f64;
        let write = (c.flash_timing.program_ns as f64 + dma) / parallel + link + fs.config().host.page_ns as f64;
        Self { alpha: 0.2, beta: 0.5, sc_requested: false, copy_block_ns: copy, write_block_ns: write }
    }
    fn f_copy(&self, n: f64) -> f64 {
        n * self.copy_block_ns
    }
    fn f_plugging(&self, n: f64) -> f64 {
        PLUGGING_SHARE * self.f_copy(n)
    }
    fn f_write(&self, n: f64) -> f64 {
        n * self.write_block_ns
    }
    /// C_TL = f_plugging(N_pre-invalid + N_valid).
    pub fn cost_threaded(&self, kept_blocks: u32) -> f64 {
        self.f_plugging(f64::from(kept_blocks))
    }
    /// C_SC = f_copy(N_valid) + f_write(α·N_valid) − f_plugging(β·N_cold).
    pub fn cost_compaction(&self, valid_blocks: u32, cold_blocks: u32) -> f64 {
        let v = f64::from(valid_blocks);
        self.f_copy(v) + self.f_write(self.alpha * v) - self.f_plugging(self.beta * f64::from(cold_blocks))
    }
}

impl<D: ZonedDevice> Fs<D> {
    pub(crate) fn needs_foreground_compaction(&self) -> bool {
        let free = self.sit.free_segs();
        let fg = self.cfg.fg_free_segments;
        if self.cfg.threaded_logging() {
            free < fg.div_ceil(2).max(2) || (self.hsr.sc_requested && free < fg)
        } else {
            free < fg
        }
    }

    /// N_cold of `seg`: blocks unchanged across its last two
    /// threaded-logging opens and still valid (compaction would move them).
    /// Zero until the segment was TL_opened twice.
    fn cold_blocks(&self, seg: u32) -> u32 {
        let e = &self.sit.segs[seg as usize];
        e.tl_cold.as_ref().map_or(0, |c| c.count_and(&e.valid))
    }

    /// Hybrid segment recycling at a log switch (seed 002 §4.3): the
    /// threaded-logging candidate with the lowest C_TL against compaction's
    /// best victim, C_SC. Candidates are dirty segments of the log's own type
    /// and, as F2FS's SSR does when its own type has none cheap enough
    /// (`FsConfig::tl_other_types`), of the other temperatures of the same
    /// kind (data or node), so node and data never mix. `left`, the segment
    /// the log is leaving, is one too (no log writes to it any more; its
    /// TL_open waits for the log's last writes to it).
    pub(crate) fn pick_threaded_segment(&mut self, lt: LogType, left: Option<u32>) -> Option<(u32, Bitmap)> {
        if !self.cfg.threaded_logging() {
            return None;
        }
        let free = self.sit.free_segs();
        if free >= self.cfg.fg_free_segments {
            return None;
        }
        let own = self.tl_candidate(left, |t| t == Some(lt));
        let other = if self.cfg.tl_other_types {
            self.tl_candidate(left, |t| t != Some(lt) && t.is_some_and(|t| t.is_node() == lt.is_node()))
        } else {
            None
        };
        // Another type's segment only when it is cheaper to reclaim than the own type's best.
        let (seg, kept) = match (own, other) {
            (Some(o), Some(x)) if x.1.count() < o.1.count() => x,
            (Some(o), _) => o,
            (None, Some(x)) => x,
            (None, None) => return None,
        };
        let c_tl = self.hsr.cost_threaded(kept.count());
        let c_sc = self.select_victim(VictimPolicy::Greedy, 0).map_or(f64::INFINITY, |v| {
            self.hsr.cost_compaction(self.sit.segs[v as usize].valid_blocks, self.cold_blocks(v))
        });
        if c_tl <= c_sc || free <= 1 {
            if self.sit.segs[seg as usize].log_type != Some(lt) {
                self.stats.tl_other_type_segments += 1;
            }
            return Some((seg, kept));
        }
        self.stats.sc_chosen_by_cost += 1;
        self.hsr.sc_requested = true;
        None
    }

    /// The dirty segment with the fewest blocks to keep among those whose
    /// log type passes `accept`, and the blocks a TL_open would keep.
    pub(crate) fn tl_candidate(
        &self,
        left: Option<u32>,
        accept: impl Fn(Option<LogType>) -> bool,
    ) -> Option<(u32, Bitmap)> {
        (0..self.segments())
            .filter(|&s| {
                let e = &self.sit.segs[s as usize];
                accept(e.log_type)
                    && !e.current
                    && e.zone_written
                    && !self.sit.is_free_seg(s)
                    && (left == Some(s) || !self.left_segs.contains(&s))
                    && self.compacting != Some(s)
            })
            .map(|s| (s, self.kept_with_unplaced(s)))
            // A segment with little free space is not worth a TL_open.
            .filter(|(_, k)| k.count() + self.zone_blocks / TL_FREE_SHARE_MIN < self.zone_blocks)
            .min_by_key(|(s, k)| (k.count(), *s))
    }

    /// The blocks a TL_open of `seg` keeps: [`Sit::kept_blocks`] and those
    /// a log allocated there whose block is not placed yet (the segment a
    /// log is leaving, as F2FS's SSR may pick any segment no log writes to).
    fn kept_with_unplaced(&self, seg: u32) -> Bitmap {
        let mut kept = self.sit.kept_blocks(seg);
        let first = self.addr_of(seg, 0);
        for &a in self.unplaced.iter().filter(|&&a| a >= first && a < first + self.zone_blocks) {
            kept.set((a - first) as usize, true);
        }
        kept
    }

    /// At a threaded-logging open of `seg`: profiles β (the share of the
    /// last N_cold blocks still valid now, seed 002 §4.3) and takes the new
    /// N_cold set (valid now and at the previous open) and snapshot.
    pub(crate) fn note_tl_open(&mut self, seg: u32) {
        let e = &mut self.sit.segs[seg as usize];
        if let Some(cold) = &e.tl_cold {
            let before = cold.count();
            if before > 0 {
                let sample = f64::from(cold.count_and(&e.valid)) / f64::from(before);
                self.hsr.beta += PROFILE_WEIGHT * (sample - self.hsr.beta);
            }
        }
        e.tl_cold = e.tl_snapshot.as_ref().map(|snap| {
            let words = snap.words().iter().zip(e.valid.words()).map(|(a, b)| a & b).collect();
            Bitmap::from_words(words)
        });
        e.tl_snapshot = Some(e.valid.clone());
    }

    /// The compaction victim: any dirty segment no log writes to.
    pub(crate) fn select_victim(&self, policy: VictimPolicy, now_ns: Nanos) -> Option<u32> {
        let zb = f64::from(self.zone_blocks);
        let candidates = (0..self.segments()).filter(|&s| {
            let e = &self.sit.segs[s as usize];
            !e.current && !self.sit.is_free_seg(s) && e.valid_blocks < self.zone_blocks && !self.left_segs.contains(&s)
        });
        match policy {
            VictimPolicy::Greedy => candidates.min_by_key(|&s| (self.sit.segs[s as usize].valid_blocks, s)),
            VictimPolicy::CostBenefit => candidates
                .map(|s| {
                    let e = &self.sit.segs[s as usize];
                    let u = f64::from(e.valid_blocks) / zb;
                    let age = now_ns.saturating_sub(e.mtime_ns) as f64 + 1.0;
                    (s, (1.0 - u) / (1.0 + u) * age)
                })
                .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
                .map(|(s, _)| s),
        }
    }

    fn key_of(owner: Owner) -> PageKey {
        match owner {
            Owner::Data { ino, idx } => PageKey::Data { ino, idx },
            Owner::Node { nid } => PageKey::Node { nid },
            Owner::Free => unreachable!("valid blocks have owners"),
        }
    }

    /// Compacts one victim segment and checkpoints; `None` without a victim.
    pub(crate) fn compact_one(&mut self, now_ns: Nanos, policy: VictimPolicy, background: bool) -> Option<Nanos> {
        let victim = self.select_victim(policy, now_ns)?;
        self.compacting = Some(victim);
        let first_command = self.io.commands();
        let first = self.addr_of(victim, 0);
        let blocks: Vec<(u32, PageKey)> = (0..self.zone_blocks)
            .filter(|&o| self.sit.segs[victim as usize].valid.get(o as usize))
            .map(|o| (first + o, Self::key_of(self.owner[self.main_index(first + o)])))
            .collect();
        // Init: the nodes that point to the blocks to move, read all at once.
        let mut init_end = now_ns;
        for &(_, key) in &blocks {
            if let PageKey::Data { ino, idx } = key {
                let (dn, _) = self.dnode_for(ino, idx);
                init_end = init_end.max(self.load_page(PageKey::Node { nid: dn }, now_ns));
            }
        }
        let (host, device): (Vec<_>, Vec<_>) = blocks.iter().partition(|&&(_, k)| self.copied_by_host(k));
        // The walk over the blocks a host copy does not read (cached, or
        // copied by the device); the reads carry their own share.
        let walked = blocks.len() - host.iter().filter(|&&(_, k)| !self.cache.contains(k)).count();
        let init_end = self.host_work(init_end, self.cfg.host.gc_block_ns * walked as u64);
        let reads_before = self.io.traffic.read_requests;
        let read_end = self.host_read(init_end, &host);
        let read_requests = self.io.traffic.read_requests - reads_before;
        let mut write_end = self.host_write(read_end, &host);
        write_end = write_end.max(self.device_copy(read_end, &device));
        self.compacting = None;
        let (meta_before, node_before) = (self.io.traffic.meta_blocks, self.io.traffic.node_blocks);
        let cp_end = self.checkpoint(write_end);
        if !blocks.is_empty() {
            let written = self.io.traffic.meta_blocks - meta_before + self.io.traffic.node_blocks - node_before;
            let sample = written as f64 / blocks.len() as f64;
            self.hsr.alpha += PROFILE_WEIGHT * (sample - self.hsr.alpha);
        }
        self.hsr.sc_requested = false;
        self.stats.sc_segments += 1;
        self.stats.compactions.push(CompactionRecord {
            valid_blocks: blocks.len() as u64,
            init_ns: init_end - now_ns,
            read_ns: read_end - init_end,
            read_requests,
            write_ns: write_end - read_end,
            checkpoint_ns: cp_end - write_end,
            background,
            first_command,
            end_command: self.io.commands(),
        });
        Some(cp_end)
    }

    /// Whether the host moves this block (through the page cache) rather than the device.
    fn copied_by_host(&self, key: PageKey) -> bool {
        match self.cfg.recycling {
            Recycling::Zns => true,
            Recycling::IzcH | Recycling::ZnsPlus => self.cache.contains(key),
            Recycling::IzcD => self.cache.is_dirty(key),
        }
    }

    /// Read phase of a host copy (seed 002 §3.1, Fig 3a): every block not
    /// cached, one request after another from the compacting thread (runs
    /// of neighbours merged with `gc_read_merge`); the write phase starts
    /// when all are in.
    fn host_read(&mut self, now_ns: Nanos, blocks: &[(u32, PageKey)]) -> Nanos {
        let misses: Vec<(u32, PageKey)> = blocks.iter().copied().filter(|&(_, k)| !self.cache.contains(k)).collect();
        let t = self.make_room(misses.len(), now_ns);
        let mut done = t;
        let mut issue = t;
        let mut i = 0;
        while i < misses.len() {
            let mut j = i + 1;
            while self.cfg.gc_read_merge
                && j < misses.len()
                && misses[j].0 == misses[j - 1].0 + 1
                && !misses[j].0.is_multiple_of(self.zone_blocks)
                && j - i < self.cfg.request_blocks_max as usize
            {
                j += 1;
            }
            // The compacting thread walks to the blocks, allocates their
            // pages and submits the request, one after another.
            let work_ns =
                (self.cfg.host.gc_block_ns + self.cfg.host.page_ns) * (j - i) as u64 + self.cfg.host.request_ns;
            issue = self.host_work(issue, work_ns);
            done = done.max(self.io.read(issue, u64::from(misses[i].0), (j - i) as u32, None));
            i = j;
        }
        for &(_, k) in &misses {
            self.cache.insert(k, false);
        }
        done
    }

    /// Write phase of a host copy: the pages go to the cold logs.
    fn host_write(&mut self, now_ns: Nanos, blocks: &[(u32, PageKey)]) -> Nanos {
        let keys: Vec<PageKey> = blocks.iter().map(|&(_, k)| k).collect();
        for &k in &keys {
            self.relocating.insert(k);
            self.cache.insert(k, true);
        }
        self.writeback(now_ns, &keys, false)
    }

    /// zone_compaction of `blocks` into the cold logs; returns when the copies are programmed.
    fn device_copy(&mut self, now_ns: Nanos, blocks: &[(u32, PageKey)]) -> Nanos {
        let mut done = now_ns;
        for lt in [LogType::ColdData, LogType::ColdNode] {
            let srcs: Vec<(u32, PageKey)> =
                blocks.iter().copied().filter(|(_, k)| matches!(k, PageKey::Node { .. }) == lt.is_node()).collect();
            if srcs.is_empty() {
                continue;
            }
            // One destination segment at a time: what is left of the log's segment.
            let mut rest = &srcs[..];
            while !rest.is_empty() {
                let n = rest.len().min(self.free_blocks_left(lt) as usize);
                let slots: Vec<u32> = (0..n).map(|_| self.alloc_block(lt, now_ns)).collect();
                let mut pairs = self.assign_destinations(&rest[..n], &slots);
                for &(src, dst) in &pairs {
                    let key = Self::key_of(self.owner[self.main_index(src)]);
                    self.place(key, dst, now_ns);
                }
                pairs.sort_by_key(|&(_, d)| d);
                done = done.max(self.submit_compaction(now_ns, &pairs));
                self.close_pending(now_ns);
                rest = &rest[n..];
            }
        }
        self.inflight_ns = self.inflight_ns.max(done);
        done
    }

    /// zone_compaction commands for (source, destination) pairs sorted by destination.
    fn submit_compaction(&mut self, now_ns: Nanos, pairs: &[(u32, u32)]) -> Nanos {
        let max = self.device().config().znsplus.copy_blocks_max as usize;
        let mut done = now_ns;
        let mut t = now_ns;
        let mut i = 0;
        while i < pairs.len() {
            let zone = pairs[i].1 / self.zone_blocks;
            let j = i + pairs[i..].iter().take(max).take_while(|p| p.1 / self.zone_blocks == zone).count();
            let src: Vec<u64> = pairs[i..j].iter().map(|p| u64::from(p.0)).collect();
            let dst: Vec<u64> = pairs[i..j].iter().map(|p| u64::from(p.1)).collect();
            t = self.host_work(t, self.cfg.host.request_ns);
            done = done.max(self.io.submit(t, &Command::ZoneCompaction { src: &src, dst: &dst }, None).complete_ns);
            self.io.traffic.device_copied_blocks += src.len() as u64;
            i = j;
        }
        done
    }

    /// The chip (flash chip group, chip in group) of a logical chunk.
    fn chip_of_chunk(&self, chunk: u64) -> (u64, u64) {
        let m = &self.mapping;
        let field = |shift: u32, bits: u32| (chunk >> shift) & ((1u64 << bits) - 1);
        (field(m.fcg_id_shift, m.fcg_id_bits), field(m.chip_id_shift, m.chip_id_bits))
    }

    /// Destinations for the sources (sorted by address) among `slots`.
    /// Copyback-aware (§3.3.1): each fully copied source chunk goes to a
    /// whole destination chunk on the same chip; the rest fill what is left.
    pub(crate) fn assign_destinations(&self, srcs: &[(u32, PageKey)], slots: &[u32]) -> Vec<(u32, u32)> {
        assert_eq!(srcs.len(), slots.len());
        let per = self.mapping.lbas_per_chunk as u32;
        let mut pairs = Vec::with_capacity(srcs.len());
        let mut src_used = vec![false; srcs.len()];
        let mut slot_used = vec![false; slots.len()];
        if self.cfg.copyback_aware && self.cfg.recycling.in_storage_copy() {
            // Whole destination chunks among the slots, by chip.
            let mut free_chunks: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
            let mut k = 0;
            while k + per as usize <= slots.len() {
                let whole =
                    slots[k].is_multiple_of(per) && (0..per as usize).all(|d| slots[k + d] == slots[k] + d as u32);
                if whole {
                    free_chunks.entry(self.chip_of_chunk(u64::from(slots[k] / per))).or_default().push(k);
                    k += per as usize;
                } else {
                    k += 1;
                }
            }
            free_chunks.values_mut().for_each(|v| v.reverse());
            let mut i = 0;
            while i + per as usize <= srcs.len() {
                let a = srcs[i].0;
                let whole = a.is_multiple_of(per) && (0..per as usize).all(|d| srcs[i + d].0 == a + d as u32);
                let target = whole.then(|| free_chunks.get_mut(&self.chip_of_chunk(u64::from(a / per)))).flatten();
                match target.and_then(Vec::pop) {
                    Some(k) => {
                        for d in 0..per as usize {
                            pairs.push((srcs[i + d].0, slots[k + d]));
                            src_used[i + d] = true;
                            slot_used[k + d] = true;
                        }
                        i += per as usize;
                    }
                    None => i += 1,
                }
            }
        }
        let mut free = slots.iter().zip(&slot_used).filter(|(_, &u)| !u).map(|(&s, _)| s);
        for (s, _) in srcs.iter().zip(&src_used).filter(|(_, &u)| !u) {
            pairs.push((s.0, free.next().expect("as many slots as sources")));
        }
        pairs
    }

    /// The file system is idle from `now_ns` to `until_ns`: background
    /// compaction while free segments are below the background threshold.
    pub fn idle(&mut self, now_ns: Nanos, until_ns: Nanos) -> Nanos {
        let mut t = now_ns;
        while t < until_ns && self.sit.free_segs() < self.cfg.bg_free_segments {
            match self.compact_one(t, self.cfg.bg_victim, true) {
                Some(done) => t = done,
                None => break,
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tiny_device;
    use crate::FsConfig;
    use zonelab_device::Device;

    fn fs(copyback_aware: bool) -> Fs {
        let mut cfg = FsConfig::new(Recycling::IzcH);
        cfg.copyback_aware = copyback_aware;
        Fs::mkfs(Device::new(tiny_device(16)).unwrap(), cfg).unwrap()
    }

    /// Sources: two whole chunks (chips 1 and 2 of the 4-chip zone) and a lone block.
    fn sources(fs: &Fs) -> Vec<(u32, PageKey)> {
        let base = fs.addr_of(5, 0);
        [4, 5, 6, 7, 8, 9, 10, 11, 13].iter().map(|&o| (base + o, PageKey::Node { nid: o })).collect()
    }

    #[test]
    fn copyback_aware_allocation_keeps_whole_chunks_on_their_chip() {
        let fs = fs(true);
        let srcs = sources(&fs);
        // Nine free slots from chip 1 of the destination: chips 1, 2, then part of 3.
        let dst0 = fs.addr_of(7, 20);
        let slots: Vec<u32> = (dst0..dst0 + 9).collect();
        let pairs = fs.assign_destinations(&srcs, &slots);
        assert_eq!(pairs.len(), 9);
        let chip = |a: u32| fs.chip_of_chunk(u64::from(a / 4));
        for &(s, d) in &pairs[..8] {
            assert_eq!(chip(s), chip(d), "{s} -> {d}: a whole chunk stays on its chip");
            assert_eq!(s % 4, d % 4, "in order within the chunk");
        }
        let mut used: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        used.sort_unstable();
        assert_eq!(used, slots, "every reserved slot is used once");
    }

    #[test]
    fn copyback_unaware_allocation_is_in_source_order() {
        let fs = fs(false);
        let srcs = sources(&fs);
        let dst0 = fs.addr_of(7, 16);
        let slots: Vec<u32> = (dst0..dst0 + 9).collect();
        let pairs = fs.assign_destinations(&srcs, &slots);
        let want: Vec<(u32, u32)> = srcs.iter().map(|s| s.0).zip(slots).collect();
        assert_eq!(pairs, want);
    }

    #[test]
    fn hybrid_recycling_prefers_the_cheaper_policy() {
        let fs = fs(true);
        let h = &fs.hsr;
        // Few blocks to plug against a full compaction with metadata writes.
        assert!(h.cost_threaded(100) < h.cost_compaction(1000, 0));
        // Plugging more blocks than compaction would copy costs more.
        assert!(h.cost_threaded(4000) > h.cost_compaction(1000, 0));
        // Cold blocks that compaction moves away lower its cost.
        assert!(h.cost_compaction(1000, 800) < h.cost_compaction(1000, 0));
    }

    /// Two dirty segments: a warm-data one keeping 56 of 64 blocks and a
    /// hot-data one keeping 8, with free segments below the threshold.
    fn fs_with_two_dirty_segments(tl_other_types: bool) -> (Fs, u32, u32) {
        let mut cfg = FsConfig::new(Recycling::ZnsPlus);
        cfg.tl_other_types = tl_other_types;
        cfg.fg_free_segments = 1000;
        let mut fs = Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg).unwrap();
        let (warm, hot) = (fs.segments() - 1, fs.segments() - 2);
        for (seg, lt, valid) in [(warm, LogType::WarmData, 56), (hot, LogType::HotData, 8)] {
            for off in 0..valid {
                fs.sit.validate(seg, off, 0);
            }
            fs.sit.segs[seg as usize].log_type = Some(lt);
        }
        (fs, warm, hot)
    }

    #[test]
    fn threaded_logging_takes_another_types_segment_when_it_costs_less() {
        let (mut fs, _, hot) = fs_with_two_dirty_segments(true);
        let (seg, kept) = fs.pick_threaded_segment(LogType::WarmData, None).expect("threaded logging is cheaper");
        assert_eq!(seg, hot, "the hot-data segment keeps 8 blocks, the warm one 56");
        assert_eq!(kept.count(), 8);
        assert_eq!(fs.stats.tl_other_type_segments, 1);
        // Node logs never take data segments.
        assert!(fs.pick_threaded_segment(LogType::WarmNode, None).is_none());
    }

    #[test]
    fn own_type_only_threaded_logging_loses_to_compaction_by_cost() {
        let (mut fs, _, _) = fs_with_two_dirty_segments(false);
        // Plugging 56 blocks costs more than compacting the 8-block segment.
        assert!(fs.pick_threaded_segment(LogType::WarmData, None).is_none());
        assert_eq!(fs.stats.sc_chosen_by_cost, 1);
        assert!(fs.hsr.sc_requested);
    }

    #[test]
    fn cold_blocks_need_two_threaded_logging_opens() {
        let (mut fs, warm, _) = fs_with_two_dirty_segments(true);
        fs.note_tl_open(warm);
        assert_eq!(fs.cold_blocks(warm), 0, "one open: nothing known to be unchanged yet");
        fs.sit.invalidate(warm, 0);
        fs.note_tl_open(warm);
        assert_eq!(fs.cold_blocks(warm), 55, "valid at both opens");
        let beta = fs.hsr.beta;
        fs.sit.invalidate(warm, 1);
        fs.note_tl_open(warm);
        // 54 of the 55 cold blocks are still valid: β moves towards 54/55.
        assert!(fs.hsr.beta > beta, "β {beta} -> {}", fs.hsr.beta);
    }

    /// The segment a log is leaving is a threaded-logging candidate (F2FS's
    /// SSR takes any segment no log writes to), keeping the blocks the log
    /// allocated there but has not placed yet; other left segments are not.
    #[test]
    fn the_segment_a_log_leaves_is_a_threaded_logging_candidate() {
        let (mut fs, warm, hot) = fs_with_two_dirty_segments(false);
        // The hot segment full: no compaction victim but the left one.
        for off in 8..64 {
            fs.sit.validate(hot, off, 0);
        }
        for seg in [warm, hot] {
            fs.sit.segs[seg as usize].zone_written = true;
        }
        fs.left_segs.push(warm);
        let last = fs.addr_of(warm, 60);
        fs.unplaced.push(last);
        assert!(fs.pick_threaded_segment(LogType::WarmData, None).is_none(), "a left segment is no candidate");
        let (seg, kept) = fs.pick_threaded_segment(LogType::WarmData, Some(warm)).expect("the segment just left");
        assert_eq!(seg, warm);
        assert_eq!(kept.count(), 57, "56 valid and the block allocated but not placed");
        assert!(kept.get(60));
    }
}
