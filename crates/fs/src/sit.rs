//! The segment information table: per segment (= zone) which blocks are
//! valid now, which were valid at the last checkpoint, which were written
//! since it, and the segment's log type.

use zonelab_sim::Nanos;

/// The six logs of F2FS (multi-head logging).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LogType {
    HotNode,
    WarmNode,
    ColdNode,
    HotData,
    WarmData,
    ColdData,
}

impl LogType {
    pub const ALL: [LogType; 6] = [
        LogType::HotNode,
        LogType::WarmNode,
        LogType::ColdNode,
        LogType::HotData,
        LogType::WarmData,
        LogType::ColdData,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_index(i: usize) -> Option<Self> {
        Self::ALL.get(i).copied()
    }

    pub fn is_node(self) -> bool {
        matches!(self, LogType::HotNode | LogType::WarmNode | LogType::ColdNode)
    }
}

#[derive(Debug, Clone, Default)]
pub struct Bitmap(Vec<u64>);

impl Bitmap {
    pub fn new(bits: usize) -> Self {
        Bitmap(vec![0; bits.div_ceil(64)])
    }
    pub fn get(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }
    pub fn set(&mut self, i: usize, v: bool) {
        if v {
            self.0[i / 64] |= 1 << (i % 64);
        } else {
            self.0[i / 64] &= !(1 << (i % 64));
        }
    }
    pub fn words(&self) -> &[u64] {
        &self.0
    }
    pub fn from_words(words: Vec<u64>) -> Self {
        Bitmap(words)
    }
    /// Bits set in both maps.
    pub fn count_and(&self, other: &Bitmap) -> u32 {
        self.0.iter().zip(&other.0).map(|(a, b)| (a & b).count_ones()).sum()
    }
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
    pub fn clear(&mut self) {
        self.0.fill(0);
    }
    /// Bitwise or of several maps.
    pub fn union(maps: &[&Bitmap]) -> Bitmap {
        let mut out = maps[0].clone();
        for m in &maps[1..] {
            out.0.iter_mut().zip(&m.0).for_each(|(a, b)| *a |= b);
        }
        out
    }
}

#[derive(Debug, Clone)]
pub struct SegEntry {
    pub valid: Bitmap,
    pub valid_blocks: u32,
    /// Valid at the last checkpoint: must survive until the next one.
    pub ckpt_valid: Bitmap,
    pub ckpt_valid_blocks: u32,
    /// Written since the last checkpoint: roll-forward may walk them.
    pub epoch_written: Bitmap,
    pub epoch_written_blocks: u32,
    pub log_type: Option<LogType>,
    /// Last time a block of the segment was written (cost-benefit age).
    pub mtime_ns: Nanos,
    /// The segment's zone holds data (reset before appending).
    pub zone_written: bool,
    /// A log writes to it now.
    pub current: bool,
    /// Blocks valid at the segment's last threaded-logging open (for β and N_cold).
    pub tl_snapshot: Option<Bitmap>,
    /// N_cold's blocks (seed 002 §4.3): valid at both of the segment's last
    /// two threaded-logging opens, unchanged across them.
    pub tl_cold: Option<Bitmap>,
}

/// The table, plus the counts the recycling policies need.
pub struct Sit {
    pub segs: Vec<SegEntry>,
    pub blocks_per_seg: u32,
    /// Blocks valid at the checkpoint and invalid now.
    pub preinvalid_blocks: u64,
    /// Segments changed since the checkpoint (their SIT entries are rewritten).
    pub dirty: std::collections::BTreeSet<u32>,
}

impl Sit {
    pub fn new(segs: u32, blocks_per_seg: u32) -> Self {
        let e = SegEntry {
            valid: Bitmap::new(blocks_per_seg as usize),
            valid_blocks: 0,
            ckpt_valid: Bitmap::new(blocks_per_seg as usize),
            ckpt_valid_blocks: 0,
            epoch_written: Bitmap::new(blocks_per_seg as usize),
            epoch_written_blocks: 0,
            log_type: None,
            mtime_ns: 0,
            zone_written: false,
            current: false,
            tl_snapshot: None,
            tl_cold: None,
        };
        Self { segs: vec![e; segs as usize], blocks_per_seg, preinvalid_blocks: 0, dirty: Default::default() }
    }

    /// A block of `seg` at `off` now holds live data.
    pub fn validate(&mut self, seg: u32, off: u32, now_ns: Nanos) {
        let e = &mut self.segs[seg as usize];
        assert!(!e.valid.get(off as usize), "segment {seg} block {off} owned twice");
        e.valid.set(off as usize, true);
        e.valid_blocks += 1;
        if !e.epoch_written.get(off as usize) {
            e.epoch_written.set(off as usize, true);
            e.epoch_written_blocks += 1;
        }
        e.mtime_ns = now_ns;
        e.zone_written = true;
        self.dirty.insert(seg);
    }

    pub fn invalidate(&mut self, seg: u32, off: u32) {
        let e = &mut self.segs[seg as usize];
        assert!(e.valid.get(off as usize), "segment {seg} block {off} freed twice");
        e.valid.set(off as usize, false);
        e.valid_blocks -= 1;
        if e.ckpt_valid.get(off as usize) {
            self.preinvalid_blocks += 1;
        }
        self.dirty.insert(seg);
    }

    /// A block a log may write: not valid now, not needed by the checkpoint,
    /// and not written since it (roll-forward may still read it).
    pub fn is_free_block(&self, seg: u32, off: u32) -> bool {
        let e = &self.segs[seg as usize];
        let o = off as usize;
        !e.valid.get(o) && !e.ckpt_valid.get(o) && !e.epoch_written.get(o)
    }

    /// Blocks a threaded-logging open must keep (valid, pre-invalid, or written since the checkpoint).
    pub fn kept_blocks(&self, seg: u32) -> Bitmap {
        let e = &self.segs[seg as usize];
        Bitmap::union(&[&e.valid, &e.ckpt_valid, &e.epoch_written])
    }

    /// Free for append logging.
    pub fn is_free_seg(&self, seg: u32) -> bool {
        let e = &self.segs[seg as usize];
        !e.current && e.valid_blocks == 0 && e.ckpt_valid_blocks == 0 && e.epoch_written_blocks == 0
    }

    pub fn free_segs(&self) -> u32 {
        (0..self.segs.len() as u32).filter(|&s| self.is_free_seg(s)).count() as u32
    }

    /// The checkpoint is on disk: what is valid now is what it holds.
    pub fn checkpointed(&mut self) {
        for e in &mut self.segs {
            e.ckpt_valid = e.valid.clone();
            e.ckpt_valid_blocks = e.valid_blocks;
            e.epoch_written.clear();
            e.epoch_written_blocks = 0;
            if e.valid_blocks == 0 && !e.current {
                e.log_type = None;
            }
        }
        self.preinvalid_blocks = 0;
        self.dirty.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_free_only_after_a_checkpoint() {
        let mut sit = Sit::new(2, 64);
        sit.validate(0, 3, 10);
        assert!(!sit.is_free_block(0, 3));
        assert!(!sit.is_free_seg(0) && sit.is_free_seg(1));
        sit.invalidate(0, 3);
        // Written since the checkpoint: roll-forward may still need it.
        assert!(!sit.is_free_block(0, 3) && !sit.is_free_seg(0));
        assert_eq!(sit.preinvalid_blocks, 0);
        sit.validate(0, 4, 11);
        sit.checkpointed();
        assert!(sit.is_free_block(0, 3) && !sit.is_free_block(0, 4));
        sit.invalidate(0, 4);
        assert_eq!(sit.preinvalid_blocks, 1, "valid at the checkpoint, invalid now");
        assert!(!sit.is_free_block(0, 4));
        assert_eq!(sit.kept_blocks(0).count(), 1);
        sit.checkpointed();
        assert_eq!(sit.free_segs(), 2);
    }
}
