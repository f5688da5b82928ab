//! Checkpoints: dirty dentries and nodes, then the changed NAT and SIT
//! blocks and a checkpoint pack (head, location table, foot), appended to one
//! of the two checkpoint zones. When a zone fills, the other is reset and
//! takes a full copy: the older pack stays intact until the newer is down.

use crate::cache::PageKey;
use crate::io::BlockKind;
use crate::layout::*;
use crate::log::log_next_addr;
use crate::pack::*;
use crate::sit::{Bitmap, LogType};
use crate::state::FsState;
use crate::write::writeback;
use zonelab_device::ZonedDevice;
use zonelab_device::{Command, ZoneAction};
use zonelab_sim::Nanos;

/// SIT entries per SIT block.
pub(crate) fn sit_per_block<D: ZonedDevice>(fs: &FsState<D>) -> usize {
    (BLOCK_BYTES - 8) / sit_entry_bytes(fs)
}

fn sit_entry_bytes<D: ZonedDevice>(fs: &FsState<D>) -> usize {
    4 + (fs.zone_blocks as usize).div_ceil(64) * 8
}

/// Writes a checkpoint; returns when its pack is durable.
pub(crate) fn checkpoint<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Nanos {
    let dirs = &fs.dirs;
    let dents = fs.cache.dirty_matching(|k| matches!(k, PageKey::Data { ino, .. } if dirs.contains_key(ino)));
    let mut t = writeback(fs, now_ns, &dents, false);
    let nodes = fs.cache.dirty_matching(|k| matches!(k, PageKey::Node { .. }));
    t = t.max(writeback(fs, now_ns, &nodes, false));
    let t = write_meta(fs, t.max(fs.inflight_ns));
    fs.sit.checkpointed();
    fs.nat_dirty.clear();
    fs.free_nids.append(&mut fs.freed_nids);
    fs.unsynced.clear();
    fs.stats.checkpoints += 1;
    fs.stats.checkpoint_ns += t - now_ns;
    fs.inflight_ns = fs.inflight_ns.max(t);
    t
}

/// NAT and SIT blocks that changed, then the pack.
fn write_meta<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Nanos {
    let nat_blocks = fs.nat.len().div_ceil(NAT_ENTRIES_PER_BLOCK as usize);
    let sit_blocks = fs.sit.segs.len().div_ceil(sit_per_block(fs));
    fs.cp.nat_loc.resize(nat_blocks, NULL_ADDR);
    fs.cp.sit_loc.resize(sit_blocks, NULL_ADDR);
    let per = sit_per_block(fs) as u32;
    let mut nat: Vec<u32> = (0..nat_blocks as u32)
        .filter(|&b| fs.nat_dirty.contains(&b) || fs.cp.nat_loc[b as usize] == NULL_ADDR)
        .collect();
    let mut sit: Vec<u32> = (0..sit_blocks as u32)
        .filter(|&b| {
            fs.cp.sit_loc[b as usize] == NULL_ADDR || fs.sit.dirty.range(b * per..(b + 1) * per).next().is_some()
        })
        .collect();
    let loc_entries = nat_blocks + sit_blocks;
    let pack_blocks = 2 + (loc_entries * 4 + CP_HEAD_BYTES).div_ceil(BLOCK_BYTES) - 1;
    let need = (nat.len() + sit.len() + pack_blocks) as u32;
    if fs.cp.meta_next + need > fs.zone_blocks {
        switch_meta_zone(fs, now_ns);
        nat = (0..nat_blocks as u32).collect();
        sit = (0..sit_blocks as u32).collect();
        assert!((nat.len() + sit.len() + pack_blocks) as u32 <= fs.zone_blocks, "a full checkpoint must fit one zone");
    }
    let first = fs.cp.meta_zone * fs.zone_blocks + fs.cp.meta_next;
    for (i, &b) in nat.iter().enumerate() {
        fs.cp.nat_loc[b as usize] = first + i as u32;
    }
    for (i, &b) in sit.iter().enumerate() {
        fs.cp.sit_loc[b as usize] = first + (nat.len() + i) as u32;
    }
    let bytes = fs.io.data_mode().then(|| encode_tables(fs, &nat, &sit));
    let t = write_meta_blocks(fs, now_ns, (nat.len() + sit.len()) as u32, bytes.as_deref(), false);
    fs.cp.version += 1;
    let pack = current_pack(fs);
    let bytes = fs.io.data_mode().then(|| encode_pack(&pack, pack_blocks));
    // F2FS: everything the pack refers to is flushed first, the pack
    // itself written FUA, so a pack on flash never points at lost blocks.
    let ordered = !fs.cfg.broken_ordering;
    let t = if ordered { fs.io.flush(t) } else { t };
    write_meta_blocks(fs, t, pack_blocks as u32, bytes.as_deref(), ordered)
}

fn switch_meta_zone<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) {
    fs.cp.meta_zone = 1 - fs.cp.meta_zone;
    fs.cp.meta_next = 0;
    let slba = u64::from(fs.cp.meta_zone * fs.zone_blocks);
    let cmd = Command::ZoneMgmtSend { action: ZoneAction::Reset, slba, select_all: false };
    fs.io.submit(now_ns, &cmd, None);
}

/// Appends `n` blocks to the checkpoint zone; returns when they are written.
fn write_meta_blocks<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    n: u32,
    bytes: Option<&[u8]>,
    fua: bool,
) -> Nanos {
    let mut done = now_ns;
    let mut t = now_ns;
    let step = fs.cfg.request_blocks_max;
    for k in (0..n).step_by(step as usize) {
        let nlb = step.min(n - k);
        let slba = u64::from(fs.cp.meta_zone * fs.zone_blocks + fs.cp.meta_next);
        let part = bytes.map(|b| &b[k as usize * BLOCK_BYTES..(k + nlb) as usize * BLOCK_BYTES]);
        t = fs.host_work(t, fs.cfg.host.request_ns);
        done = done.max(fs.io.write(t, slba, nlb, part, BlockKind::Meta, fua));
        fs.cp.meta_next += nlb;
    }
    done
}

pub(crate) fn current_pack<D: ZonedDevice>(fs: &FsState<D>) -> CpPack {
    let mut cursors = [0; 6];
    for lt in LogType::ALL {
        cursors[lt.index()] = log_next_addr(fs, lt);
    }
    CpPack {
        version: fs.cp.version,
        nat_entries: fs.nat.len() as u32,
        cursors,
        nat_loc: fs.cp.nat_loc.clone(),
        sit_loc: fs.cp.sit_loc.clone(),
    }
}

fn encode_tables<D: ZonedDevice>(fs: &FsState<D>, nat: &[u32], sit: &[u32]) -> Vec<u8> {
    let mut bytes = vec![0u8; (nat.len() + sit.len()) * BLOCK_BYTES];
    let mut blocks = bytes.chunks_mut(BLOCK_BYTES);
    for &b in nat {
        let buf = blocks.next().expect("sized");
        let first = (b * NAT_ENTRIES_PER_BLOCK) as usize;
        let entries = fs.nat.iter().skip(first).take(NAT_ENTRIES_PER_BLOCK as usize);
        let words: Vec<u32> = [MAGIC_NAT, b].into_iter().chain(entries.copied()).collect();
        put_u32s(buf, &words);
    }
    let per = sit_per_block(fs);
    for &b in sit {
        let buf = blocks.next().expect("sized");
        put_u32s(buf, &[MAGIC_SIT, b]);
        for (i, e) in fs.sit.segs.iter().skip(b as usize * per).take(per).enumerate() {
            let at = 8 + i * sit_entry_bytes(fs);
            let kind = e.log_type.map_or(0, |lt| lt.index() as u32 + 1);
            buf[at..at + 4].copy_from_slice(&kind.to_le_bytes());
            put_words(&mut buf[at + 4..], e.valid.words());
        }
    }
    bytes
}

/// Decodes NAT block `b` into the table.
pub(crate) fn load_nat_block<D: ZonedDevice>(fs: &mut FsState<D>, b: u32, buf: &[u8]) -> Option<()> {
    let mut r = Reader::new(buf);
    (r.u32()? == MAGIC_NAT && r.u32()? == b).then_some(())?;
    let first = (b * NAT_ENTRIES_PER_BLOCK) as usize;
    for i in first..(first + NAT_ENTRIES_PER_BLOCK as usize).min(fs.nat.len()) {
        fs.nat[i] = r.u32()?;
    }
    Some(())
}

/// Decodes SIT block `b`: valid maps and log types (valid at the checkpoint).
pub(crate) fn load_sit_block<D: ZonedDevice>(fs: &mut FsState<D>, b: u32, buf: &[u8]) -> Option<()> {
    let mut r = Reader::new(buf);
    (r.u32()? == MAGIC_SIT && r.u32()? == b).then_some(())?;
    let per = sit_per_block(fs);
    let words = (fs.zone_blocks as usize).div_ceil(64);
    let segs = fs.sit.segs.len();
    for s in b as usize * per..((b as usize + 1) * per).min(segs) {
        let kind = r.u32()?;
        let w: Vec<u64> = (0..words).map(|_| r.u64()).collect::<Option<_>>()?;
        let e = &mut fs.sit.segs[s];
        e.log_type = if kind == 0 { None } else { Some(LogType::from_index(kind as usize - 1)?) };
        e.valid = Bitmap::from_words(w);
        e.valid_blocks = e.valid.count();
        e.ckpt_valid = e.valid.clone();
        e.ckpt_valid_blocks = e.valid_blocks;
    }
    Some(())
}

/// Last address of the checkpoint area.
pub(crate) fn meta_end<D: ZonedDevice>(fs: &FsState<D>) -> u32 {
    META_ZONES * fs.zone_blocks
}
