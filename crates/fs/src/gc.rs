//! Segment compaction: the victim [`crate::victim`] picks is moved by host
//! copy (ZNS) or zone_compaction (IZC) with copyback-aware block
//! allocation, then checkpointed; and background compaction when idle.

use crate::cache::PageKey;
use crate::checkpoint::checkpoint;
use crate::config::{Recycling, VictimPolicy};
use crate::hsr::PROFILE_WEIGHT;
use crate::log::{alloc_block, close_pending, free_blocks_left};
use crate::sit::LogType;
use crate::state::{CompactionRecord, FsState, Owner};
use crate::victim::select_victim;
use crate::write::{load_page, make_room, place, writeback};
use std::collections::HashMap;
use zonelab_device::Command;
use zonelab_device::ZonedDevice;
use zonelab_sim::Nanos;

fn key_of(owner: Owner) -> PageKey {
    match owner {
        Owner::Data { ino, idx } => PageKey::Data { ino, idx },
        Owner::Node { nid } => PageKey::Node { nid },
        Owner::Free => unreachable!("valid blocks have owners"),
    }
}

/// Compacts one victim segment and checkpoints; `None` without a victim.
pub(crate) fn compact_one<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    policy: VictimPolicy,
    background: bool,
) -> Option<Nanos> {
    let victim = select_victim(fs, policy, now_ns)?;
    fs.compacting = Some(victim);
    let first_command = fs.io.commands();
    let first = fs.addr_of(victim, 0);
    let blocks: Vec<(u32, PageKey)> = (0..fs.zone_blocks)
        .filter(|&o| fs.sit.segs[victim as usize].valid.get(o as usize))
        .map(|o| (first + o, key_of(fs.owner[fs.main_index(first + o)])))
        .collect();
    // Init: the nodes that point to the blocks to move, read all at once.
    let mut init_end = now_ns;
    for &(_, key) in &blocks {
        if let PageKey::Data { ino, idx } = key {
            let (dn, _) = fs.dnode_for(ino, idx);
            init_end = init_end.max(load_page(fs, PageKey::Node { nid: dn }, now_ns));
        }
    }
    let (host, device): (Vec<_>, Vec<_>) = blocks.iter().partition(|&&(_, k)| copied_by_host(fs, k));
    // The walk over the blocks a host copy does not read (cached, or
    // copied by the device); the reads carry their own share.
    let walked = blocks.len() - host.iter().filter(|&&(_, k)| !fs.cache.contains(k)).count();
    let init_end = fs.host_work(init_end, fs.cfg.host.gc_block_ns * walked as u64);
    let reads_before = fs.io.traffic.read_requests;
    let read_end = host_read(fs, init_end, &host);
    let read_requests = fs.io.traffic.read_requests - reads_before;
    let copied_ns = host_write(fs, read_end, &host).max(device_copy(fs, read_end, &device));
    fs.compacting = None;
    // F2FS submits the moved blocks and goes on to the checkpoint, whose
    // pack waits for them (seed 002 §4.1): the write phase ends at the last
    // submission, and the wait for the copies is the checkpoint's.
    fs.inflight_ns = fs.inflight_ns.max(copied_ns);
    let write_end = fs.io.last_submit_ns().clamp(read_end, copied_ns);
    let (meta_before, node_before) = (fs.io.traffic.meta_blocks, fs.io.traffic.node_blocks);
    let cp_end = checkpoint(fs, write_end);
    assert!(cp_end >= copied_ns, "a checkpoint's pack is written after the blocks it refers to");
    if !blocks.is_empty() {
        let written = fs.io.traffic.meta_blocks - meta_before + fs.io.traffic.node_blocks - node_before;
        let sample = written as f64 / blocks.len() as f64;
        fs.hsr.alpha += PROFILE_WEIGHT * (sample - fs.hsr.alpha);
    }
    fs.hsr.sc_requested = false;
    fs.stats.sc_segments += 1;
    fs.stats.compactions.push(CompactionRecord {
        valid_blocks: blocks.len() as u64,
        init_ns: init_end - now_ns,
        read_ns: read_end - init_end,
        read_requests,
        write_ns: write_end - read_end,
        checkpoint_ns: cp_end - write_end,
        background,
        first_command,
        end_command: fs.io.commands(),
    });
    Some(cp_end)
}

/// Whether the host moves this block (through the page cache) rather than the device.
fn copied_by_host<D: ZonedDevice>(fs: &FsState<D>, key: PageKey) -> bool {
    match fs.cfg.recycling {
        Recycling::Zns => true,
        Recycling::IzcH | Recycling::ZnsPlus => fs.cache.contains(key),
        Recycling::IzcD => fs.cache.is_dirty(key),
    }
}

/// Read phase of a host copy (seed 002 §3.1, Fig 3a): every block not
/// cached, one request after another from the compacting thread (runs
/// of neighbours merged with `gc_read_merge`); the write phase starts
/// when all are in.
fn host_read<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, blocks: &[(u32, PageKey)]) -> Nanos {
    let misses: Vec<(u32, PageKey)> = blocks.iter().copied().filter(|&(_, k)| !fs.cache.contains(k)).collect();
    let t = make_room(fs, misses.len(), now_ns);
    let mut done = t;
    let mut issue = t;
    let mut i = 0;
    while i < misses.len() {
        let mut j = i + 1;
        while fs.cfg.gc_read_merge
            && j < misses.len()
            && misses[j].0 == misses[j - 1].0 + 1
            && !misses[j].0.is_multiple_of(fs.zone_blocks)
            && j - i < fs.cfg.request_blocks_max as usize
        {
            j += 1;
        }
        // The compacting thread walks to the blocks, allocates their
        // pages and submits the request, one after another.
        let work_ns = (fs.cfg.host.gc_block_ns + fs.cfg.host.page_ns) * (j - i) as u64 + fs.cfg.host.request_ns;
        issue = fs.host_work(issue, work_ns);
        done = done.max(fs.io.read(issue, u64::from(misses[i].0), (j - i) as u32, None));
        i = j;
    }
    for &(_, k) in &misses {
        fs.cache.insert(k, false);
    }
    done
}

/// Write phase of a host copy: the pages go to the cold logs.
fn host_write<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, blocks: &[(u32, PageKey)]) -> Nanos {
    let keys: Vec<PageKey> = blocks.iter().map(|&(_, k)| k).collect();
    for &k in &keys {
        fs.relocating.insert(k);
        fs.cache.insert(k, true);
    }
    writeback(fs, now_ns, &keys, false)
}

/// zone_compaction of `blocks` into the cold logs; returns when the copies are programmed.
fn device_copy<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, blocks: &[(u32, PageKey)]) -> Nanos {
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
            let n = rest.len().min(free_blocks_left(fs, lt) as usize);
            let slots: Vec<u32> = (0..n).map(|_| alloc_block(fs, lt, now_ns)).collect();
            let mut pairs = assign_destinations(fs, &rest[..n], &slots);
            for &(src, dst) in &pairs {
                let key = key_of(fs.owner[fs.main_index(src)]);
                place(fs, key, dst, now_ns);
            }
            pairs.sort_by_key(|&(_, d)| d);
            done = done.max(submit_compaction(fs, now_ns, &pairs));
            close_pending(fs, now_ns);
            rest = &rest[n..];
        }
    }
    fs.inflight_ns = fs.inflight_ns.max(done);
    done
}

/// zone_compaction commands for (source, destination) pairs sorted by destination.
fn submit_compaction<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, pairs: &[(u32, u32)]) -> Nanos {
    let max = fs.device().config().znsplus.copy_blocks_max as usize;
    let mut done = now_ns;
    let mut t = now_ns;
    let mut i = 0;
    while i < pairs.len() {
        let zone = pairs[i].1 / fs.zone_blocks;
        let j = i + pairs[i..].iter().take(max).take_while(|p| p.1 / fs.zone_blocks == zone).count();
        let src: Vec<u64> = pairs[i..j].iter().map(|p| u64::from(p.0)).collect();
        let dst: Vec<u64> = pairs[i..j].iter().map(|p| u64::from(p.1)).collect();
        t = fs.host_work(t, fs.cfg.host.request_ns);
        done = done.max(fs.io.submit(t, &Command::ZoneCompaction { src: &src, dst: &dst }, None).complete_ns);
        fs.io.traffic.device_copied_blocks += src.len() as u64;
        i = j;
    }
    done
}

/// The chip (flash chip group, chip in group) of a logical chunk.
fn chip_of_chunk<D: ZonedDevice>(fs: &FsState<D>, chunk: u64) -> (u64, u64) {
    let m = &fs.mapping;
    let field = |shift: u32, bits: u32| (chunk >> shift) & ((1u64 << bits) - 1);
    (field(m.fcg_id_shift, m.fcg_id_bits), field(m.chip_id_shift, m.chip_id_bits))
}

/// Destinations for the sources (sorted by address) among `slots`.
/// Copyback-aware (§3.3.1): each fully copied source chunk goes to a
/// whole destination chunk on the same chip; the rest fill what is left.
pub(crate) fn assign_destinations<D: ZonedDevice>(
    fs: &FsState<D>,
    srcs: &[(u32, PageKey)],
    slots: &[u32],
) -> Vec<(u32, u32)> {
    assert_eq!(srcs.len(), slots.len());
    let per = fs.mapping.lbas_per_chunk as u32;
    let mut pairs = Vec::with_capacity(srcs.len());
    let mut src_used = vec![false; srcs.len()];
    let mut slot_used = vec![false; slots.len()];
    if fs.cfg.copyback_aware && fs.cfg.recycling.in_storage_copy() {
        // Whole destination chunks among the slots, by chip.
        let mut free_chunks: HashMap<(u64, u64), Vec<usize>> = HashMap::new();
        let mut k = 0;
        while k + per as usize <= slots.len() {
            let whole = slots[k].is_multiple_of(per) && (0..per as usize).all(|d| slots[k + d] == slots[k] + d as u32);
            if whole {
                free_chunks.entry(chip_of_chunk(fs, u64::from(slots[k] / per))).or_default().push(k);
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
            let target = whole.then(|| free_chunks.get_mut(&chip_of_chunk(fs, u64::from(a / per)))).flatten();
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
pub(crate) fn idle<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, until_ns: Nanos) -> Nanos {
    let mut t = now_ns;
    while t < until_ns && fs.sit.free_segs() < fs.cfg.bg_free_segments {
        match compact_one(fs, t, fs.cfg.bg_victim, true) {
            Some(done) => t = done,
            None => break,
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tiny_device;
    use crate::{Fs, FsConfig};
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
        let pairs = assign_destinations(&fs, &srcs, &slots);
        assert_eq!(pairs.len(), 9);
        let chip = |a: u32| chip_of_chunk(&fs, u64::from(a / 4));
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
        let pairs = assign_destinations(&fs, &srcs, &slots);
        let want: Vec<(u32, u32)> = srcs.iter().map(|s| s.0).zip(slots).collect();
        assert_eq!(pairs, want);
    }
}
