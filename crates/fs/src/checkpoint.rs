//! Checkpoints: dirty dentries and nodes, then the changed NAT and SIT
//! blocks and a checkpoint pack (head, location table, foot), appended to one
//! of the two checkpoint zones. When a zone fills, the other is reset and
//! takes a full copy: the older pack stays intact until the newer is down.

use crate::cache::PageKey;
use crate::fs::{Fs, META_ZONES};
use crate::io::BlockKind;
use crate::layout::*;
use crate::sit::LogType;
use zonelab_device::ZonedDevice;
use zonelab_device::{Command, ZoneAction};
use zonelab_sim::Nanos;

/// Node addresses per NAT block: 4-byte entries after an 8-byte header
/// (magic and block index).
pub const NAT_ENTRIES_PER_BLOCK: u32 = 1000;
const MAGIC_NAT: u32 = 0x4e41_5442;
const MAGIC_SIT: u32 = 0x5349_5442;
const MAGIC_CP_HEAD: u32 = 0x4350_4844;
const MAGIC_CP_FOOT: u32 = 0x4350_4654;
/// Bytes before the location table in a checkpoint head.
const CP_HEAD_BYTES: usize = 64;

/// Where the last checkpoint put things.
#[derive(Debug, Clone, Default)]
pub struct CpState {
    /// Version of the last checkpoint; node blocks written after it carry it.
    pub version: u64,
    /// Checkpoint zone in use (0 or 1) and its next block.
    pub meta_zone: u32,
    /// Next block to write in that zone.
    pub meta_next: u32,
    /// Address of each NAT and SIT block.
    pub nat_loc: Vec<u32>,
    /// Address of each SIT block.
    pub sit_loc: Vec<u32>,
}

/// What a checkpoint pack says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpPack {
    /// Version of this checkpoint.
    pub version: u64,
    /// Node ids the NAT covers (its length at the checkpoint).
    pub nat_entries: u32,
    /// Next address of each log.
    pub cursors: [u32; 6],
    /// Address of each NAT block.
    pub nat_loc: Vec<u32>,
    /// Address of each SIT block.
    pub sit_loc: Vec<u32>,
}

/// Checks up front that a full checkpoint fits one checkpoint zone: every
/// SIT block, the NAT of one node per main-area block (every node needs a
/// block of its own, so the NAT never grows past that) and the pack. A
/// larger file system would fail at its first checkpoint switch, possibly
/// hours into a run; its zone count is then what must shrink.
pub(crate) fn check_checkpoint_fits(zone_blocks: u32, segs: u32) -> Result<(), CheckpointFitError> {
    let sit_entry_bytes = 4 + (zone_blocks as usize).div_ceil(64) * 8;
    let sit_per_block = (BLOCK_BYTES - 8) / sit_entry_bytes;
    if sit_per_block == 0 {
        return Err(CheckpointFitError::ZoneTooLarge { zone_blocks });
    }
    let need = |segs: u32| {
        let nat_blocks = (segs as usize * zone_blocks as usize + 2).div_ceil(NAT_ENTRIES_PER_BLOCK as usize);
        let sit_blocks = (segs as usize).div_ceil(sit_per_block);
        let pack_blocks = 2 + ((nat_blocks + sit_blocks) * 4 + CP_HEAD_BYTES).div_ceil(BLOCK_BYTES) - 1;
        nat_blocks + sit_blocks + pack_blocks
    };
    if need(segs) <= zone_blocks as usize {
        return Ok(());
    }
    // `need` grows with `segs`: the largest that fits, for the message.
    let (mut low, mut high) = (0, segs);
    while low + 1 < high {
        let mid = low + (high - low) / 2;
        if need(mid) <= zone_blocks as usize {
            low = mid;
        } else {
            high = mid;
        }
    }
    Err(CheckpointFitError::TooManySegments {
        segs,
        zone_blocks,
        need_blocks: need(segs),
        fit_segs: low,
        fit_zones: low + META_ZONES,
    })
}

/// A zone geometry whose full checkpoint cannot fit one checkpoint zone.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum CheckpointFitError {
    /// One segment's SIT entry (its valid bitmap) outgrows a block.
    #[error("a zone of {zone_blocks} blocks is too large: its SIT entry must fit one 4 KiB block")]
    ZoneTooLarge { zone_blocks: u32 },
    /// NAT, SIT and pack outgrow one zone; `fit_segs` is the most that fit.
    #[error(
        "{segs} segments of {zone_blocks} blocks are too many: a full checkpoint ({need_blocks} blocks of NAT, SIT \
         and pack) must fit one zone; at most {fit_segs} segments ({fit_zones} zones) fit"
    )]
    TooManySegments { segs: u32, zone_blocks: u32, need_blocks: usize, fit_segs: u32, fit_zones: u32 },
}

impl<D: ZonedDevice> Fs<D> {
    /// SIT entries per SIT block.
    pub(crate) fn sit_per_block(&self) -> usize {
        (BLOCK_BYTES - 8) / self.sit_entry_bytes()
    }
    fn sit_entry_bytes(&self) -> usize {
        4 + (self.zone_blocks as usize).div_ceil(64) * 8
    }

    /// Writes a checkpoint; returns when its pack is durable.
    pub(crate) fn checkpoint(&mut self, now_ns: Nanos) -> Nanos {
        let dirs = &self.dirs;
        let dents = self.cache.dirty_matching(|k| matches!(k, PageKey::Data { ino, .. } if dirs.contains_key(ino)));
        let mut t = self.writeback(now_ns, &dents, false);
        let nodes = self.cache.dirty_matching(|k| matches!(k, PageKey::Node { .. }));
        t = t.max(self.writeback(now_ns, &nodes, false));
        let t = self.write_meta(t.max(self.inflight_ns));
        self.sit.checkpointed();
        self.nat_dirty.clear();
        self.free_nids.append(&mut self.freed_nids);
        self.unsynced.clear();
        self.stats.checkpoints += 1;
        self.stats.checkpoint_ns += t - now_ns;
        self.inflight_ns = self.inflight_ns.max(t);
        t
    }

    /// NAT and SIT blocks that changed, then the pack.
    fn write_meta(&mut self, now_ns: Nanos) -> Nanos {
        let nat_blocks = self.nat.len().div_ceil(NAT_ENTRIES_PER_BLOCK as usize);
        let sit_blocks = self.sit.segs.len().div_ceil(self.sit_per_block());
        self.cp.nat_loc.resize(nat_blocks, NULL_ADDR);
        self.cp.sit_loc.resize(sit_blocks, NULL_ADDR);
        let per = self.sit_per_block() as u32;
        let mut nat: Vec<u32> = (0..nat_blocks as u32)
            .filter(|&b| self.nat_dirty.contains(&b) || self.cp.nat_loc[b as usize] == NULL_ADDR)
            .collect();
        let mut sit: Vec<u32> = (0..sit_blocks as u32)
            .filter(|&b| {
                self.cp.sit_loc[b as usize] == NULL_ADDR
                    || self.sit.dirty.range(b * per..(b + 1) * per).next().is_some()
            })
            .collect();
        let loc_entries = nat_blocks + sit_blocks;
        let pack_blocks = 2 + (loc_entries * 4 + CP_HEAD_BYTES).div_ceil(BLOCK_BYTES) - 1;
        let need = (nat.len() + sit.len() + pack_blocks) as u32;
        if self.cp.meta_next + need > self.zone_blocks {
            self.switch_meta_zone(now_ns);
            nat = (0..nat_blocks as u32).collect();
            sit = (0..sit_blocks as u32).collect();
            assert!(
                (nat.len() + sit.len() + pack_blocks) as u32 <= self.zone_blocks,
                "a full checkpoint must fit one zone"
            );
        }
        let first = self.cp.meta_zone * self.zone_blocks + self.cp.meta_next;
        for (i, &b) in nat.iter().enumerate() {
            self.cp.nat_loc[b as usize] = first + i as u32;
        }
        for (i, &b) in sit.iter().enumerate() {
            self.cp.sit_loc[b as usize] = first + (nat.len() + i) as u32;
        }
        let bytes = self.io.data_mode().then(|| self.encode_tables(&nat, &sit));
        let t = self.write_meta_blocks(now_ns, (nat.len() + sit.len()) as u32, bytes.as_deref(), false);
        self.cp.version += 1;
        let pack = self.current_pack();
        let bytes = self.io.data_mode().then(|| encode_pack(&pack, pack_blocks));
        // F2FS: everything the pack refers to is flushed first, the pack
        // itself written FUA, so a pack on flash never points at lost blocks.
        let ordered = !self.cfg.broken_ordering;
        let t = if ordered { self.io.flush(t) } else { t };
        self.write_meta_blocks(t, pack_blocks as u32, bytes.as_deref(), ordered)
    }

    fn switch_meta_zone(&mut self, now_ns: Nanos) {
        self.cp.meta_zone = 1 - self.cp.meta_zone;
        self.cp.meta_next = 0;
        let slba = u64::from(self.cp.meta_zone * self.zone_blocks);
        let cmd = Command::ZoneMgmtSend { action: ZoneAction::Reset, slba, select_all: false };
        self.io.submit(now_ns, &cmd, None);
    }

    /// Appends `n` blocks to the checkpoint zone; returns when they are written.
    fn write_meta_blocks(&mut self, now_ns: Nanos, n: u32, bytes: Option<&[u8]>, fua: bool) -> Nanos {
        let mut done = now_ns;
        let mut t = now_ns;
        let step = self.cfg.request_blocks_max;
        for k in (0..n).step_by(step as usize) {
            let nlb = step.min(n - k);
            let slba = u64::from(self.cp.meta_zone * self.zone_blocks + self.cp.meta_next);
            let part = bytes.map(|b| &b[k as usize * BLOCK_BYTES..(k + nlb) as usize * BLOCK_BYTES]);
            t = self.host_work(t, self.cfg.host.request_ns);
            done = done.max(self.io.write(t, slba, nlb, part, BlockKind::Meta, fua));
            self.cp.meta_next += nlb;
        }
        done
    }

    pub(crate) fn current_pack(&self) -> CpPack {
        let mut cursors = [0; 6];
        for lt in LogType::ALL {
            cursors[lt.index()] = self.log_next_addr(lt);
        }
        CpPack {
            version: self.cp.version,
            nat_entries: self.nat.len() as u32,
            cursors,
            nat_loc: self.cp.nat_loc.clone(),
            sit_loc: self.cp.sit_loc.clone(),
        }
    }

    fn encode_tables(&self, nat: &[u32], sit: &[u32]) -> Vec<u8> {
        let mut bytes = vec![0u8; (nat.len() + sit.len()) * BLOCK_BYTES];
        let mut blocks = bytes.chunks_mut(BLOCK_BYTES);
        for &b in nat {
            let buf = blocks.next().expect("sized");
            let first = (b * NAT_ENTRIES_PER_BLOCK) as usize;
            let entries = self.nat.iter().skip(first).take(NAT_ENTRIES_PER_BLOCK as usize);
            let words: Vec<u32> = [MAGIC_NAT, b].into_iter().chain(entries.copied()).collect();
            put_u32s(buf, &words);
        }
        let per = self.sit_per_block();
        for &b in sit {
            let buf = blocks.next().expect("sized");
            put_u32s(buf, &[MAGIC_SIT, b]);
            for (i, e) in self.sit.segs.iter().skip(b as usize * per).take(per).enumerate() {
                let at = 8 + i * self.sit_entry_bytes();
                let kind = e.log_type.map_or(0, |lt| lt.index() as u32 + 1);
                buf[at..at + 4].copy_from_slice(&kind.to_le_bytes());
                put_words(&mut buf[at + 4..], e.valid.words());
            }
        }
        bytes
    }

    /// Decodes NAT block `b` into the table.
    pub(crate) fn load_nat_block(&mut self, b: u32, buf: &[u8]) -> Option<()> {
        let mut r = Reader::new(buf);
        (r.u32()? == MAGIC_NAT && r.u32()? == b).then_some(())?;
        let first = (b * NAT_ENTRIES_PER_BLOCK) as usize;
        for i in first..(first + NAT_ENTRIES_PER_BLOCK as usize).min(self.nat.len()) {
            self.nat[i] = r.u32()?;
        }
        Some(())
    }

    /// Decodes SIT block `b`: valid maps and log types (valid at the checkpoint).
    pub(crate) fn load_sit_block(&mut self, b: u32, buf: &[u8]) -> Option<()> {
        let mut r = Reader::new(buf);
        (r.u32()? == MAGIC_SIT && r.u32()? == b).then_some(())?;
        let per = self.sit_per_block();
        let words = (self.zone_blocks as usize).div_ceil(64);
        let segs = self.sit.segs.len();
        for s in b as usize * per..((b as usize + 1) * per).min(segs) {
            let kind = r.u32()?;
            let w: Vec<u64> = (0..words).map(|_| r.u64()).collect::<Option<_>>()?;
            let e = &mut self.sit.segs[s];
            e.log_type = if kind == 0 { None } else { Some(LogType::from_index(kind as usize - 1)?) };
            e.valid = crate::sit::Bitmap::from_words(w);
            e.valid_blocks = e.valid.count();
            e.ckpt_valid = e.valid.clone();
            e.ckpt_valid_blocks = e.valid_blocks;
        }
        Some(())
    }

    /// Last address of the checkpoint area.
    pub(crate) fn meta_end(&self) -> u32 {
        META_ZONES * self.zone_blocks
    }
}

fn put_u32s(buf: &mut [u8], words: &[u32]) {
    for (i, w) in words.iter().enumerate() {
        buf[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
}

/// Head (with the start of the location table), more table, foot.
fn encode_pack(pack: &CpPack, blocks: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; blocks * BLOCK_BYTES];
    let mut head = vec![MAGIC_CP_HEAD, pack.version as u32, (pack.version >> 32) as u32, pack.nat_entries];
    head.extend([pack.nat_loc.len() as u32, pack.sit_loc.len() as u32]);
    head.extend(pack.cursors);
    head.resize(CP_HEAD_BYTES / 4, 0);
    head.extend(pack.nat_loc.iter().chain(&pack.sit_loc));
    let table_end = (blocks - 1) * BLOCK_BYTES;
    put_u32s(&mut bytes[..table_end], &head);
    put_u32s(&mut bytes[table_end..], &[MAGIC_CP_FOOT, pack.version as u32, (pack.version >> 32) as u32]);
    bytes
}

/// The pack starting at block `at` of `zone_bytes`, if whole.
pub(crate) fn decode_pack(zone_bytes: &[u8], at: usize) -> Option<(CpPack, usize)> {
    let block = |i: usize| zone_bytes.get(i * BLOCK_BYTES..(i + 1) * BLOCK_BYTES);
    let mut r = Reader::new(block(at)?);
    (r.u32()? == MAGIC_CP_HEAD).then_some(())?;
    let version = u64::from(r.u32()?) | u64::from(r.u32()?) << 32;
    let nat_entries = r.u32()?;
    let (n_nat, n_sit) = (r.u32()? as usize, r.u32()? as usize);
    let mut cursors = [0; 6];
    for c in &mut cursors {
        *c = r.u32()?;
    }
    let blocks = 2 + ((n_nat + n_sit) * 4 + CP_HEAD_BYTES).div_ceil(BLOCK_BYTES) - 1;
    let table = zone_bytes.get(at * BLOCK_BYTES..(at + blocks - 1) * BLOCK_BYTES)?;
    let mut r = Reader::new(table);
    r.bytes(CP_HEAD_BYTES)?;
    let loc: Vec<u32> = (0..n_nat + n_sit).map(|_| r.u32()).collect::<Option<_>>()?;
    let mut f = Reader::new(block(at + blocks - 1)?);
    let foot_version = (f.u32()? == MAGIC_CP_FOOT)
        .then_some(())
        .and_then(|_| Some(u64::from(f.u32()?) | u64::from(f.u32()?) << 32))?;
    (foot_version == version).then_some(())?;
    let pack = CpPack { version, nat_entries, cursors, nat_loc: loc[..n_nat].to_vec(), sit_loc: loc[n_nat..].to_vec() };
    Some((pack, blocks))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A zone over 32,640 blocks has a SIT entry larger than a block: mkfs
    /// divided by zero.
    #[test]
    fn zones_whose_sit_entry_outgrows_a_block_are_refused() {
        check_checkpoint_fits(32_640, 10).expect("one entry per block");
        let e = check_checkpoint_fits(32_641, 10).unwrap_err().to_string();
        assert!(e.contains("its SIT entry must fit one 4 KiB block"), "{e}");
    }
}
