//! The host workloads of the placement study, as streams of logical writes
//! (and, for the LSM tree, file deletions) over a logical space of 4 KiB
//! blocks. Each write carries a class: how long its data lives, as the
//! application knows it (a temperature band, a cache engine, an LSM level),
//! which the interfaces may use for placement.

use serde::{Deserialize, Serialize};
use zonelab_sim::SimRng;

/// Blocks of 4 KiB in 128 KiB, the largest command the workloads send.
pub const CHUNK_BLOCKS: u64 = 32;

/// The study's host workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// Skewed random overwrites: eight equal bands of the space, band `i`
    /// taking 2^-(i+1) of the writes (32 KiB each); a band is a class.
    Skewed,
    /// A flash cache as CacheLib lays it out: 4 KiB random bucket writes
    /// into a small-object region (a tenth of the space, half the bytes;
    /// class 0) and a large-object log written sequentially over the rest
    /// (class 1), each region rewritten as the log wraps (FIFO eviction).
    Cache,
    /// A leveled LSM tree: a write-ahead log ring (class 0), 64 MiB files
    /// flushed into L0 and compacted down to L3 (classes 1-3 by level),
    /// inputs deleted after each compaction.
    Lsm,
}

impl Workload {
    /// Every workload, in plot order.
    pub const ALL: [Workload; 3] = [Workload::Skewed, Workload::Cache, Workload::Lsm];

    /// Classes the workload's writes carry.
    pub fn classes(self) -> u8 {
        match self {
            Workload::Skewed => 8,
            Workload::Cache => 2,
            Workload::Lsm => 4,
        }
    }

    /// Its name in tables and plots.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Skewed => "skewed",
            Workload::Cache => "cache",
            Workload::Lsm => "lsm",
        }
    }
}

/// One step of a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Write logical blocks from `block` on.
    Write {
        /// First logical block.
        block: u64,
        /// Blocks written.
        blocks: u32,
        /// The data's class (how long it lives).
        class: u8,
    },
    /// The application no longer needs these blocks (a deleted file); no
    /// command is sent (no discard), but a host that places data itself knows.
    Delete {
        /// First logical block.
        block: u64,
        /// Blocks deleted.
        blocks: u64,
    },
}

/// A workload's state: where its next steps go.
pub(crate) enum Generator {
    Skewed(Skewed),
    Cache(Cache),
    Lsm(Box<Lsm>),
}

impl Generator {
    /// `workload` over `space_blocks` logical blocks, drawing from `seed`.
    pub(crate) fn new(workload: Workload, space_blocks: u64, seed: u64) -> Self {
        let rng = SimRng::new(seed);
        match workload {
            Workload::Skewed => Generator::Skewed(Skewed { rng, band_blocks: space_blocks / 8 }),
            Workload::Cache => Generator::Cache(Cache::new(rng, space_blocks)),
            Workload::Lsm => Generator::Lsm(Box::new(Lsm::new(space_blocks))),
        }
    }

    /// Steps that fill the space once, in order, before the measured part
    /// (the LSM tree writes only its log and live files).
    pub(crate) fn fill(&self, space_blocks: u64) -> impl Iterator<Item = Step> + '_ {
        let chunks = (0..space_blocks.div_ceil(CHUNK_BLOCKS)).map(|i| i * CHUNK_BLOCKS);
        chunks.filter(|&block| self.holds_at_start(block)).map(move |block| {
            let blocks = u32::try_from((space_blocks - block).min(CHUNK_BLOCKS)).expect("a chunk");
            Step::Write { block, blocks, class: self.class_of(block) }
        })
    }

    /// Whether the application has data at `block` when the measured part starts.
    fn holds_at_start(&self, block: u64) -> bool {
        match self {
            Generator::Lsm(l) => l.holds(block),
            _ => true,
        }
    }

    /// The class data at `block` has when the space is first filled.
    fn class_of(&self, block: u64) -> u8 {
        match self {
            Generator::Skewed(s) => u8::try_from((block / s.band_blocks.max(1)).min(7)).expect("below 8"),
            Generator::Cache(c) => u8::from(block >= c.soc_blocks),
            Generator::Lsm(l) => l.class_of(block),
        }
    }

    /// The next step of the measured part.
    pub(crate) fn next_step(&mut self) -> Step {
        match self {
            Generator::Skewed(s) => s.next_step(),
            Generator::Cache(c) => c.next_step(),
            Generator::Lsm(l) => l.next_step(),
        }
    }
}

pub(crate) struct Skewed {
    rng: SimRng,
    band_blocks: u64,
}

impl Skewed {
    /// 32 KiB writes: 8 blocks.
    const WRITE_BLOCKS: u64 = 8;

    fn next_step(&mut self) -> Step {
        // Band i with probability 2^-(i+1); the last band takes the remainder.
        let draw = self.rng.below(1 << 8);
        let band = (draw.leading_zeros() - (64 - 8)).min(7);
        let slots = (self.band_blocks / Self::WRITE_BLOCKS).max(1);
        let block = u64::from(band) * self.band_blocks + self.rng.below(slots) * Self::WRITE_BLOCKS;
        let class = u8::try_from(band).expect("below 8");
        Step::Write { block, blocks: Self::WRITE_BLOCKS as u32, class }
    }
}

pub(crate) struct Cache {
    rng: SimRng,
    /// Small-object region: blocks `0..soc_blocks`.
    soc_blocks: u64,
    space_blocks: u64,
    /// Next block of the large-object log.
    log_next: u64,
}

impl Cache {
    fn new(rng: SimRng, space_blocks: u64) -> Self {
        let soc_blocks = space_blocks / 10;
        Cache { rng, soc_blocks, space_blocks, log_next: soc_blocks }
    }

    fn next_step(&mut self) -> Step {
        // Half the bytes each: 32 bucket writes of 4 KiB per 128 KiB log write.
        if self.rng.below(CHUNK_BLOCKS + 1) < CHUNK_BLOCKS {
            return Step::Write { block: self.rng.below(self.soc_blocks.max(1)), blocks: 1, class: 0 };
        }
        let block = self.log_next;
        let blocks = (self.space_blocks - block).min(CHUNK_BLOCKS);
        self.log_next = if block + blocks >= self.space_blocks { self.soc_blocks } else { block + blocks };
        Step::Write { block, blocks: u32::try_from(blocks).expect("a chunk"), class: 1 }
    }
}

/// A leveled LSM tree's file traffic: the WAL ring, flushes into L0, and
/// compactions of one file of a level with `FANIN` files of the next into
/// `FANIN + 1` new files there (L3 into itself, one file smaller: updates
/// and deletions shrink the data), inputs deleted.
pub(crate) struct Lsm {
    wal_blocks: u64,
    wal_next: u64,
    /// Files per slot of `FILE_BLOCKS`: the level of each slot's file, if any.
    slots: Vec<Option<u8>>,
    /// Level caps in files (L0..L3).
    caps: [usize; 4],
    /// Steps queued: the current flush or compaction, written chunk by chunk.
    queued: std::collections::VecDeque<Step>,
    /// Round robin over a level's files picks compaction inputs.
    cursor: usize,
}

const FILE_BLOCKS: u64 = 64 * 256;
const FANIN: usize = 2;
const LEVELS: usize = 4;

impl Lsm {
    fn new(space_blocks: u64) -> Self {
        let wal_blocks = (space_blocks / 20).max(FILE_BLOCKS) / CHUNK_BLOCKS * CHUNK_BLOCKS;
        let files = usize::try_from((space_blocks.saturating_sub(wal_blocks)) / FILE_BLOCKS).expect("fits usize");
        // Room for a compaction's outputs before its inputs are deleted.
        let live = files.saturating_sub(2 * (FANIN + 1)).max(LEVELS + FANIN);
        let (l1, l2) = ((live / 16).max(FANIN + 1), (live / 4).max(FANIN + 1));
        let caps = [4, l1, l2, live.saturating_sub(4 + l1 + l2).max(FANIN + 1)];
        let mut lsm =
            Lsm { wal_blocks, wal_next: 0, slots: vec![None; files], caps, queued: Default::default(), cursor: 0 };
        // The fill leaves each level one file below its cap, L3 in the first slots.
        let mut next = 0;
        for level in (1..LEVELS).rev() {
            for _ in 0..lsm.caps[level] - 1 {
                if next < files {
                    lsm.slots[next] = Some(u8::try_from(level).expect("a level"));
                    next += 1;
                }
            }
        }
        lsm
    }

    /// Whether `block` holds the log or a live file.
    fn holds(&self, block: u64) -> bool {
        block < self.wal_blocks || self.slot_of(block).is_some_and(|slot| self.slots[slot].is_some())
    }

    /// The file slot holding `block`, if it is in the files' space.
    fn slot_of(&self, block: u64) -> Option<usize> {
        let slot = usize::try_from(block.checked_sub(self.wal_blocks)? / FILE_BLOCKS).ok()?;
        (slot < self.slots.len()).then_some(slot)
    }

    fn class_of(&self, block: u64) -> u8 {
        if block < self.wal_blocks {
            return 0;
        }
        match self.slot_of(block).and_then(|slot| self.slots[slot]) {
            Some(level) => level.max(1),
            None => 1,
        }
    }

    fn next_step(&mut self) -> Step {
        // Bound: a refill queues at least one write (a flush writes a file).
        for _ in 0..2 {
            if let Some(step) = self.queued.pop_front() {
                return step;
            }
            self.refill();
        }
        unreachable!("a flush queues its WAL and file writes")
    }

    /// Queues the next flush (its WAL writes, then its L0 file), then the
    /// compactions it makes due.
    fn refill(&mut self) {
        for _ in 0..FILE_BLOCKS / CHUNK_BLOCKS {
            let block = self.wal_next;
            self.wal_next = (self.wal_next + CHUNK_BLOCKS) % self.wal_blocks;
            self.queued.push_back(Step::Write { block, blocks: CHUNK_BLOCKS as u32, class: 0 });
        }
        self.write_file(0);
        for level in 0..LEVELS {
            // Bound: each compaction removes a file from `level`.
            for _ in 0..self.slots.len() {
                if self.count(level) <= self.caps[level] {
                    break;
                }
                self.compact(level);
            }
        }
    }

    fn count(&self, level: usize) -> usize {
        self.slots.iter().filter(|s| s.map(usize::from) == Some(level)).count()
    }

    /// Moves a file of `level` and `FANIN` of the next level into new files
    /// of the next level (L3 into itself, one file fewer), deleting the inputs.
    fn compact(&mut self, level: usize) {
        let to = (level + 1).min(LEVELS - 1);
        let mut inputs = self.pick(level, 1, &[]);
        let more = self.pick(to, FANIN, &inputs);
        inputs.extend(more);
        let outputs = if level == to { inputs.len().saturating_sub(1) } else { inputs.len() };
        for _ in 0..outputs {
            self.write_file(u8::try_from(to).expect("a level"));
        }
        for slot in inputs {
            self.slots[slot] = None;
            let block = self.wal_blocks + slot as u64 * FILE_BLOCKS;
            self.queued.push_back(Step::Delete { block, blocks: FILE_BLOCKS });
        }
    }

    /// Up to `n` files of `level` not in `taken`, round robin.
    fn pick(&mut self, level: usize, n: usize, taken: &[usize]) -> Vec<usize> {
        let len = self.slots.len();
        let mut out = Vec::with_capacity(n);
        for k in 0..len {
            let slot = (self.cursor + k) % len;
            if out.len() < n && self.slots[slot].map(usize::from) == Some(level) && !taken.contains(&slot) {
                out.push(slot);
            }
        }
        self.cursor = (self.cursor + 1) % len.max(1);
        out
    }

    /// Queues a new file of `level` into a free slot, chunk by chunk.
    fn write_file(&mut self, level: u8) {
        // The caps leave room for a compaction's outputs before its inputs go.
        let Some(slot) = self.slots.iter().position(Option::is_none) else {
            debug_assert!(false, "the level caps leave a free slot");
            return;
        };
        self.slots[slot] = Some(level);
        let start = self.wal_blocks + slot as u64 * FILE_BLOCKS;
        let class = level.max(1);
        for i in 0..FILE_BLOCKS / CHUNK_BLOCKS {
            self.queued.push_back(Step::Write { block: start + i * CHUNK_BLOCKS, blocks: CHUNK_BLOCKS as u32, class });
        }
    }
}
