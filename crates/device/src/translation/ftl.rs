//! Page-level mapping of a conventional SSD, without timing.
//!
//! The unit of mapping is one LBA; the unit of writing is a program unit
//! (one multi-plane one-shot program on one die); the unit of erasing is a
//! die block (the same block on every plane of a die). Host units go to the
//! dies round robin, each die appending to its open host block; garbage
//! collection moves a victim's valid LBAs into the die's open GC block, so
//! hot host data and cold relocated data do not mix. Under Flexible Data
//! Placement there are several host streams (one per reclaim unit handle)
//! and, for persistently isolated handles, one GC stream per handle: each
//! stream has its own open block on every die, and a block holds one
//! stream's data.

use crate::config::VictimPolicy;
use std::collections::VecDeque;

/// LBAs per segment of the lazily allocated logical-to-physical table.
const SEGMENT_LEN: usize = 1 << 16;
/// [`SEGMENT_LEN`] as an LBA count.
const SEGMENT_LBAS: u64 = SEGMENT_LEN as u64;
const UNMAPPED: u32 = u32::MAX;

/// Where a program unit goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnitSlot {
    /// Die the unit goes to.
    pub die: u32,
    /// Block on every plane of the die.
    pub block: u32,
    /// Index of the unit within its block.
    pub unit: u32,
}

/// A physical LBA slot: die block and offset within it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slot {
    /// Die.
    pub die: u32,
    /// Block on every plane of the die.
    pub block: u32,
    /// LBA slot within the block.
    pub offset: u32,
}

/// A stream of program units with its own open block per die.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Host data of reclaim unit handle `h` (0 without FDP).
    Host(u16),
    /// Garbage collection's copies: stream `g` (one per handle when
    /// persistently isolated, else 0).
    Gc(u16),
}

/// [`Ftl::owner`] of a block whose data may come from any handle.
pub const OWNER_MIXED: u16 = u16::MAX;

/// Page-level FTL of a conventional SSD (see the module comment).
#[derive(Debug, Clone)]
pub struct Ftl {
    dies: u32,
    blocks: u32,
    lbas_per_unit: u32,
    units_per_block: u32,
    user_lbas: u64,
    l2p: Vec<Option<Box<[u32]>>>,
    /// Per die block: the LBA each slot holds (UNMAPPED when invalid or empty).
    p2l: Vec<Option<Box<[u32]>>>,
    valid: Vec<u32>,
    /// Per die block: opened by garbage collection (its data crossed no buffer).
    gc_block: Vec<bool>,
    /// Per die block: the handle whose data it holds ([`OWNER_MIXED`]: any).
    owner: Vec<u16>,
    /// Per die block: units programmed on the FTL (host and GC) when it
    /// took its last unit, the clock of [`VictimPolicy::CostBenefit`]'s age.
    written_at: Vec<u64>,
    /// How [`Ftl::victim`] chooses.
    policy: VictimPolicy,
    free: Vec<VecDeque<u32>>,
    /// Host streams; GC streams follow them in `open`.
    host_streams: u16,
    /// Open block and next unit, per stream and die.
    open: Vec<Vec<Option<(u32, u32)>>>,
    /// Program units of host data placed.
    pub host_units: u64,
    /// Program units garbage collection placed.
    pub gc_units: u64,
    /// LBAs garbage collection relocated.
    pub gc_lbas: u64,
    /// Victim blocks released.
    pub victims: u64,
}

impl Ftl {
    /// An empty FTL over `dies` dies of `blocks` blocks, each of
    /// `units_per_block` program units of `lbas_per_unit` LBAs; `user_lbas`
    /// must leave room for garbage collection. `streams`: host and GC streams.
    pub fn new(
        dies: u32,
        blocks: u32,
        lbas_per_unit: u32,
        units_per_block: u32,
        user_lbas: u64,
        streams: (u16, u16),
        policy: VictimPolicy,
    ) -> Self {
        let slots = u64::from(dies) * u64::from(blocks) * u64::from(lbas_per_unit) * u64::from(units_per_block);
        assert!(slots < u64::from(UNMAPPED), "physical slots fit 32 bits");
        assert!(user_lbas < slots, "over-provisioning leaves room to collect garbage");
        let die_blocks = (dies * blocks) as usize;
        let (host_streams, gc_streams) = streams;
        assert!(host_streams >= 1 && gc_streams >= 1, "an FTL has a host and a GC stream");
        Ftl {
            dies,
            blocks,
            lbas_per_unit,
            units_per_block,
            user_lbas,
            l2p: vec![None; usize::try_from(user_lbas.div_ceil(SEGMENT_LBAS)).expect("user_lbas < slots < 2^32")],
            p2l: vec![None; die_blocks],
            valid: vec![0; die_blocks],
            gc_block: vec![false; die_blocks],
            owner: vec![OWNER_MIXED; die_blocks],
            written_at: vec![0; die_blocks],
            policy,
            free: (0..dies).map(|_| (0..blocks).collect()).collect(),
            host_streams,
            open: vec![vec![None; dies as usize]; usize::from(host_streams) + usize::from(gc_streams)],
            host_units: 0,
            gc_units: 0,
            gc_lbas: 0,
            victims: 0,
        }
    }

    /// LBA slots in a block.
    pub fn lbas_per_block(&self) -> u32 {
        self.lbas_per_unit * self.units_per_block
    }

    fn die_block(&self, die: u32, block: u32) -> usize {
        (die * self.blocks + block) as usize
    }

    fn slot_index(&self, s: Slot) -> u32 {
        (s.die * self.blocks + s.block) * self.lbas_per_block() + s.offset
    }

    fn slot_of(&self, index: u32) -> Slot {
        let per = self.lbas_per_block();
        let db = index / per;
        Slot { die: db / self.blocks, block: db % self.blocks, offset: index % per }
    }

    /// Where `lba` lives, if it was written.
    pub fn lookup(&self, lba: u64) -> Option<Slot> {
        assert!(lba < self.user_lbas);
        let seg = self.l2p[(lba / SEGMENT_LBAS) as usize].as_ref()?;
        let index = seg[(lba % SEGMENT_LBAS) as usize];
        (index != UNMAPPED).then(|| self.slot_of(index))
    }

    fn set_l2p(&mut self, lba: u64, index: u32) {
        let seg = self.l2p[(lba / SEGMENT_LBAS) as usize]
            .get_or_insert_with(|| vec![UNMAPPED; SEGMENT_LEN].into_boxed_slice());
        seg[(lba % SEGMENT_LBAS) as usize] = index;
    }

    /// Drops `lba`'s old copy (it is being rewritten).
    pub fn invalidate(&mut self, lba: u64) {
        if let Some(old) = self.lookup(lba) {
            let db = self.die_block(old.die, old.block);
            self.valid[db] -= 1;
            self.p2l[db].as_mut().expect("a mapped slot's block is open or full")[old.offset as usize] = UNMAPPED;
            self.set_l2p(lba, UNMAPPED);
        }
    }

    /// Erased blocks left on `die`.
    pub fn free_blocks(&self, die: u32) -> usize {
        self.free[die as usize].len()
    }

    /// Index of `stream` in `open`.
    fn stream_index(&self, stream: Stream) -> usize {
        let index = match stream {
            Stream::Host(h) => usize::from(h),
            Stream::Gc(g) => usize::from(self.host_streams) + usize::from(g),
        };
        assert!(index < self.open.len(), "stream {stream:?} of this FTL");
        index
    }

    /// Whether `stream`'s next unit on `die` needs a fresh block.
    pub fn needs_block(&self, die: u32, stream: Stream) -> bool {
        self.open[self.stream_index(stream)][die as usize].is_none_or(|(_, unit)| unit >= self.units_per_block)
    }

    /// Closes `stream`'s open block on `die`, written or not (a reclaim
    /// unit handle moved on): it takes no more units and may be collected.
    pub fn close(&mut self, die: u32, stream: Stream) {
        let index = self.stream_index(stream);
        self.open[index][die as usize] = None;
    }

    /// The handle whose data block `block` of `die` holds ([`OWNER_MIXED`]: any).
    pub fn owner(&self, die: u32, block: u32) -> u16 {
        self.owner[self.die_block(die, block)]
    }

    /// Places `lbas` (at most one unit) as the next unit of `die`'s open
    /// block of `stream`, mapping them there.
    pub fn place(&mut self, die: u32, stream: Stream, lbas: &[u64]) -> UnitSlot {
        assert!(lbas.len() <= self.lbas_per_unit as usize && !lbas.is_empty());
        let gc = matches!(stream, Stream::Gc(_));
        let index = self.stream_index(stream);
        if self.needs_block(die, stream) {
            let block = self.free[die as usize].pop_front().expect("the caller collected garbage first");
            let db = self.die_block(die, block);
            self.p2l[db] = Some(vec![UNMAPPED; self.lbas_per_block() as usize].into_boxed_slice());
            self.valid[db] = 0;
            self.gc_block[db] = gc;
            // One GC stream mixes every handle's data; otherwise a stream is one handle's.
            let gc_streams = self.open.len() - usize::from(self.host_streams);
            self.owner[db] = match stream {
                Stream::Host(h) => h,
                Stream::Gc(g) if gc_streams > 1 => g,
                Stream::Gc(_) => OWNER_MIXED,
            };
            self.open[index][die as usize] = Some((block, 0));
        }
        let (block, unit) = self.open[index][die as usize].expect("an open block");
        self.open[index][die as usize] = Some((block, unit + 1));
        let db = self.die_block(die, block);
        // At most `lbas_per_unit` LBAs (asserted above): their indices are u32s.
        for (i, &lba) in (0u32..).zip(lbas) {
            let offset = unit * self.lbas_per_unit + i;
            let index = self.slot_index(Slot { die, block, offset });
            self.p2l[db].as_mut().expect("open block")[offset as usize] =
                u32::try_from(lba).expect("an LBA below user_lbas, which is below 2^32");
            self.set_l2p(lba, index);
        }
        self.valid[db] += u32::try_from(lbas.len()).expect("at most lbas_per_unit LBAs (asserted above)");
        self.written_at[db] = self.host_units + self.gc_units;
        if gc {
            self.gc_units += 1;
            self.gc_lbas += lbas.len() as u64;
        } else {
            self.host_units += 1;
        }
        UnitSlot { die, block, unit }
    }

    /// The full block of `die` to collect next, by the policy: one with
    /// fewer valid LBAs than a whole block, if any.
    pub fn victim(&self, die: u32) -> Option<u32> {
        let open: Vec<u32> = self.open.iter().filter_map(|o| o[die as usize].map(|(b, _)| b)).collect();
        let per_block = self.lbas_per_block();
        let candidates = (0..self.blocks).filter(|b| {
            let db = self.die_block(die, *b);
            !open.contains(b) && self.p2l[db].is_some() && self.valid[db] < per_block
        });
        match self.policy {
            VictimPolicy::Greedy => candidates.min_by_key(|&b| (self.valid[self.die_block(die, b)], b)),
            VictimPolicy::CostBenefit => {
                let now = self.host_units + self.gc_units;
                // Highest (P − v) · age / (P + v), compared exactly in integers;
                // the lower block number wins a tie (`max_by` keeps the last maximum).
                let score = |b: u32| {
                    let db = self.die_block(die, b);
                    let (p, v) = (u128::from(per_block), u128::from(self.valid[db]));
                    // Age 1 at least, so that a block just written still ranks by its free space.
                    let age = u128::from(now - self.written_at[db]).max(1);
                    ((p - v) * age, p + v)
                };
                candidates.rev().max_by(|&a, &b| {
                    let ((na, da), (nb, db)) = (score(a), score(b));
                    (na * db).cmp(&(nb * da))
                })
            }
        }
    }

    /// The valid LBAs of block `block` of `die`, by offset.
    pub fn valid_lbas(&self, die: u32, block: u32) -> Vec<(u32, u64)> {
        let p2l = self.p2l[self.die_block(die, block)].as_ref().expect("a written block");
        // A block's `lbas_per_block` offsets are u32s.
        (0u32..).zip(p2l.iter()).filter(|(_, &l)| l != UNMAPPED).map(|(o, &l)| (o, u64::from(l))).collect()
    }

    /// Up to `max` valid LBAs of block `block` of `die` at or after
    /// `offset`, by offset, and the offset to continue from.
    pub fn valid_lbas_from(&self, die: u32, block: u32, offset: u32, max: usize) -> (Vec<(u32, u64)>, u32) {
        let p2l = self.p2l[self.die_block(die, block)].as_ref().expect("a written block");
        let mut found = Vec::with_capacity(max);
        let mut next = offset;
        while (next as usize) < p2l.len() && found.len() < max {
            let lba = p2l[next as usize];
            if lba != UNMAPPED {
                found.push((next, u64::from(lba)));
            }
            next += 1;
        }
        (found, next)
    }

    /// Valid LBAs in block `block` of `die`.
    pub fn valid_count(&self, die: u32, block: u32) -> u32 {
        self.valid[self.die_block(die, block)]
    }

    /// LBAs per program unit.
    pub fn lbas_per_unit(&self) -> u32 {
        self.lbas_per_unit
    }

    /// Whether garbage collection wrote block `block` of `die`.
    pub fn is_gc_block(&self, die: u32, block: u32) -> bool {
        self.gc_block[self.die_block(die, block)]
    }

    /// Returns an emptied victim to the free list (the caller erases it).
    pub fn release(&mut self, die: u32, block: u32) {
        let db = self.die_block(die, block);
        assert_eq!(self.valid[db], 0, "a released block holds no valid data");
        self.p2l[db] = None;
        self.victims += 1;
        self.free[die as usize].push_back(block);
    }

    /// Program units per block.
    pub fn units_per_block(&self) -> u32 {
        self.units_per_block
    }

    /// Dies the FTL spreads over.
    pub fn dies(&self) -> u32 {
        self.dies
    }

    /// Programmed units per host unit: (host + GC) / host.
    pub fn write_amplification(&self) -> f64 {
        if self.host_units == 0 {
            return 1.0;
        }
        (self.host_units + self.gc_units) as f64 / self.host_units as f64
    }

    /// Checks the mapping both ways and the valid counts; panics on a breach.
    pub fn check(&self) {
        let mut counted = vec![0u32; self.valid.len()];
        for lba in 0..self.user_lbas {
            if let Some(s) = self.lookup(lba) {
                let db = self.die_block(s.die, s.block);
                let p2l = self.p2l[db].as_ref().expect("a mapped LBA's block holds data");
                assert_eq!(u64::from(p2l[s.offset as usize]), lba, "slot {s:?} does not point back at LBA {lba}");
                counted[db] += 1;
            }
        }
        assert_eq!(counted, self.valid, "valid counts match the mapping");
        for die in 0..self.dies {
            for &b in &self.free[die as usize] {
                assert!(self.p2l[self.die_block(die, b)].is_none(), "free block {die}/{b} holds data");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One die of 8 blocks of two 2-LBA units: block 0 (LBAs 0-3) written
    /// first, two blocks of other data, block 3 (LBAs 4-7), then LBAs 0, 4
    /// and 5 rewritten: block 0 is old with 3 valid LBAs of 4, block 3
    /// young with 2.
    fn old_fuller_and_young_emptier(policy: VictimPolicy) -> Ftl {
        let mut ftl = Ftl::new(1, 8, 2, 2, 24, (1, 1), policy);
        let host = Stream::Host(0);
        for pair in [[0, 1], [2, 3], [8, 9], [10, 11], [12, 13], [14, 15], [4, 5], [6, 7]] {
            ftl.place(0, host, &pair);
        }
        for lba in [0, 4, 5] {
            ftl.invalidate(lba);
        }
        ftl.place(0, host, &[0, 4]);
        ftl.place(0, host, &[5, 16]);
        assert_eq!((ftl.valid_count(0, 0), ftl.valid_count(0, 3)), (3, 2));
        ftl
    }

    #[test]
    fn greedy_collects_the_block_with_least_valid_data() {
        assert_eq!(old_fuller_and_young_emptier(VictimPolicy::Greedy).victim(0), Some(3));
    }

    #[test]
    fn cost_benefit_collects_an_old_block_before_a_young_emptier_one() {
        // Block 0: (4 − 3) · age 8 / (4 + 3) = 1.14; block 3: (4 − 2) · age 2 / (4 + 2) = 0.67.
        assert_eq!(old_fuller_and_young_emptier(VictimPolicy::CostBenefit).victim(0), Some(0));
    }
}
