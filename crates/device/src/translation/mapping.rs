//! Static zone-to-flash mapping of ZNS+ §2.2 (seed 002).
//!
//! The dies are split into flash chip groups (FCGs) of D_zone dies; zone `z`
//! lives in FCG `z mod N_FCG` and owns flash block group (FBG) `z / N_FCG` of
//! it: the same block offset(s) on every plane of the group's dies. Chunk `j`
//! of a zone (one flash page of data) lands on die `(j / S) mod D_zone` of
//! the FCG, where the stripe S is `mapping.stripe_chunks` consecutive chunks
//! (1 in ZNS+'s Fig 1: page by page), so the host can compute the die of any
//! chunk. A die's chunks fill its planes, then its pages; a program unit is
//! one one-shot program on all planes of one die, and a super word line is
//! one program unit on every die of the group. A stripe of a whole program
//! unit fills one die's unit before the next die's, so a zone's programs
//! start one after another instead of all together at the end of each super
//! word line.
//!
//! The zone-to-FBG table is the one piece of dynamic mapping: a zone starts
//! on FBG `z / N_FCG` of its FCG, and threaded logging (TL_open) moves it to
//! a LogFBG taken from the FCG's spare block groups, releasing the old one.

use crate::config::{ChunkOrder, Layout, StartDie};
use std::collections::VecDeque;
use std::num::NonZeroU32;
use zonelab_flash::{BlockAddr, Geometry};

/// Where a chunk (one flash page of zone data) lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkLocation {
    /// Die.
    pub die: u32,
    /// Plane within the die.
    pub plane: u32,
    /// Block within the plane.
    pub block: u32,
    /// Page within the block.
    pub page: u32,
}

/// Zone-to-flash mapping of ZNS+ (see the module comment).
#[derive(Debug, Clone)]
pub struct Mapping {
    d_zone: u32,
    /// Consecutive chunks on one die (S).
    stripe_chunks: u64,
    fcgs: u32,
    planes: u32,
    oneshot_pages: u32,
    pages_per_block: u32,
    fbg_blocks: u32,
    /// Block group each zone writes to.
    zone_fbg: Vec<u32>,
    /// Die of its group each zone's stripe starts on (`StartDie::Rotate`).
    zone_first_die: Vec<u32>,
    start_die: StartDie,
    chunk_order: ChunkOrder,
    /// First die of the next zone to start (`StartDie::Rotate`).
    next_first_die: u32,
    /// Block groups no zone uses, per FCG, oldest released first.
    free_fbgs: Vec<VecDeque<u32>>,
    /// The divisors of a chunk's place, for [`Mapping::place_in`].
    div: Divisors,
}

/// The layout's divisors of a chunk's place, checked nonzero once and in
/// u32 (a zone's chunks, as a rule, number fewer than 2^32): a division by
/// one is then a single machine instruction, where a u64 division by a
/// field also tests for zero and for operands that fit 32 bits.
#[derive(Debug, Clone, Copy)]
struct Divisors {
    stripe_chunks: NonZeroU32,
    d_zone: NonZeroU32,
    planes: NonZeroU32,
    oneshot_pages: NonZeroU32,
    /// Chunks of one program unit (planes × one-shot pages).
    unit_chunks: NonZeroU32,
    pages_per_block: NonZeroU32,
    fcgs: NonZeroU32,
}

impl Divisors {
    fn new(stripe_chunks: u64, d_zone: u32, planes: u32, oneshot_pages: u32, pages_per_block: u32, fcgs: u32) -> Self {
        let nonzero = |n: u64| {
            NonZeroU32::new(u32::try_from(n).expect("a layout divisor fits u32")).expect("a layout divisor is nonzero")
        };
        Self {
            stripe_chunks: nonzero(stripe_chunks),
            d_zone: nonzero(u64::from(d_zone)),
            planes: nonzero(u64::from(planes)),
            oneshot_pages: nonzero(u64::from(oneshot_pages)),
            unit_chunks: nonzero(u64::from(planes) * u64::from(oneshot_pages)),
            pages_per_block: nonzero(u64::from(pages_per_block)),
            fcgs: nonzero(u64::from(fcgs)),
        }
    }
}

impl Mapping {
    /// The initial mapping: zone `z` on block group `z / N_FCG` of FCG `z mod N_FCG`.
    pub fn new(layout: &Layout, geometry: &Geometry) -> Self {
        assert!(layout.d_zone > 0 && layout.fcgs > 0 && layout.fbg_blocks > 0);
        let zone_fbg: Vec<u32> = (0..layout.zones).map(|z| z / layout.fcgs).collect();
        let free_fbgs = (0..layout.fcgs)
            .map(|fcg| {
                let used = (0..layout.zones).filter(|z| z % layout.fcgs == fcg).count();
                let used = u32::try_from(used).expect("at most layout.zones, a u32");
                assert!(used <= layout.fbgs_per_fcg, "validation guarantees a block group per zone");
                (used..layout.fbgs_per_fcg).collect()
            })
            .collect();
        assert!(
            u64::from(geometry.planes_per_die * geometry.oneshot_pages).is_multiple_of(layout.stripe_chunks),
            "validation guarantees stripes tile a program unit"
        );
        Self {
            d_zone: layout.d_zone,
            stripe_chunks: layout.stripe_chunks,
            fcgs: layout.fcgs,
            planes: geometry.planes_per_die,
            oneshot_pages: geometry.oneshot_pages,
            pages_per_block: geometry.pages_per_block,
            fbg_blocks: layout.fbg_blocks,
            zone_first_die: vec![0; zone_fbg.len()],
            zone_fbg,
            free_fbgs,
            start_die: layout.start_die,
            chunk_order: layout.chunk_order,
            next_first_die: 0,
            div: Divisors::new(
                layout.stripe_chunks,
                layout.d_zone,
                geometry.planes_per_die,
                geometry.oneshot_pages,
                geometry.pages_per_block,
                layout.fcgs,
            ),
        }
    }

    /// Flash chip groups (N_FCG).
    pub fn fcgs(&self) -> u32 {
        self.fcgs
    }

    /// Takes a spare block group of `zone`'s FCG (a LogFBG), if one is left.
    pub fn take_free_fbg(&mut self, zone: u32) -> Option<u32> {
        let fcg = self.fcg_of_zone(zone) as usize;
        self.free_fbgs[fcg].pop_front()
    }

    /// Whether `zone`'s FCG has a spare block group left.
    pub fn has_free_fbg(&self, zone: u32) -> bool {
        !self.free_fbgs[self.fcg_of_zone(zone) as usize].is_empty()
    }

    /// Returns block group `fbg` of `zone`'s FCG to the spares (erased by the caller).
    pub fn release_fbg(&mut self, zone: u32, fbg: u32) {
        let fcg = self.fcg_of_zone(zone) as usize;
        debug_assert!(!self.free_fbgs[fcg].contains(&fbg), "block group {fbg} released twice");
        self.free_fbgs[fcg].push_back(fbg);
    }

    /// Points `zone` at block group `fbg` of its FCG.
    pub fn set_zone_fbg(&mut self, zone: u32, fbg: u32) {
        self.zone_fbg[zone as usize] = fbg;
    }

    /// `zone`, which holds no data, takes its first write: under
    /// `StartDie::Rotate` its stripe starts one die after the previous
    /// zone's. A zone's start die never changes while it holds data.
    pub fn start_zone(&mut self, zone: u32) {
        if self.start_die == StartDie::Rotate {
            self.zone_first_die[zone as usize] = spread_die(self.next_first_die, self.d_zone);
            self.next_first_die = (self.next_first_die + 1) % self.d_zone;
        }
    }

    /// Die of `zone`'s group holding the zone's stripe `stripe` (die in
    /// group `stripe mod D_zone` counted from the zone's first die).
    #[inline]
    fn group_die(&self, zone: u32, stripe: u64) -> u32 {
        let d = u64::from(self.d_zone);
        u32::try_from((stripe % d + u64::from(self.zone_first_die[zone as usize])) % d).expect("below d_zone, a u32")
    }

    /// Dies per flash chip group (D_zone).
    pub fn d_zone(&self) -> u32 {
        self.d_zone
    }

    /// The flash chip group `zone` lives in.
    pub fn fcg_of_zone(&self, zone: u32) -> u32 {
        zone % self.fcgs
    }

    /// The block group `zone` writes to.
    pub fn fbg_of_zone(&self, zone: u32) -> u32 {
        self.zone_fbg[zone as usize]
    }

    /// The die chunk `chunk` of `zone` lands on.
    #[inline]
    pub fn die_of_chunk(&self, zone: u32, chunk: u64) -> u32 {
        self.fcg_of_zone(zone) * self.d_zone + self.group_die(zone, self.stripe_of(chunk))
    }

    /// Stripe (run of `stripe_chunks` chunks on one die) holding `chunk`.
    #[inline]
    fn stripe_of(&self, chunk: u64) -> u64 {
        // Page striping, the common case, needs no division.
        if self.stripe_chunks == 1 {
            chunk
        } else {
            chunk / self.stripe_chunks
        }
    }

    /// Position of `chunk` among the chunks of the zone on its die.
    #[inline]
    fn index_on_die(&self, chunk: u64) -> u64 {
        let s = self.stripe_chunks;
        if s == 1 {
            return chunk / u64::from(self.d_zone);
        }
        (chunk / (s * u64::from(self.d_zone))) * s + chunk % s
    }

    /// The chunk at position `index` on die `die_in_group` of the zone.
    #[inline]
    fn chunk_at(&self, die_in_group: u64, index: u64) -> u64 {
        let s = self.stripe_chunks;
        if s == 1 {
            return index * u64::from(self.d_zone) + die_in_group;
        }
        (index / s) * s * u64::from(self.d_zone) + die_in_group * s + index % s
    }

    /// Chunks of one program unit (planes × one-shot pages).
    #[inline]
    fn unit_chunks_len(&self) -> u64 {
        u64::from(self.planes) * u64::from(self.oneshot_pages)
    }

    /// Block within its block group of page `page_in_fbg` (on one plane) of the group.
    #[inline]
    fn block_in_fbg(&self, page_in_fbg: u64) -> u32 {
        u32::try_from(page_in_fbg / u64::from(self.pages_per_block)).expect("below fbg_blocks, a u32")
    }

    /// Where chunk `chunk` of `zone` lives in its current block group.
    #[inline]
    pub fn locate(&self, zone: u32, chunk: u64) -> ChunkLocation {
        self.locate_in(zone, self.fbg_of_zone(zone), chunk)
    }

    /// Where `chunk` of `zone` lies in block group `fbg` of the zone's FCG.
    #[inline]
    pub fn locate_in(&self, zone: u32, fbg: u32, chunk: u64) -> ChunkLocation {
        self.place_in(zone, fbg, chunk).1
    }

    /// The program unit holding `chunk` of `zone` and where the chunk lies in
    /// block group `fbg` of the zone's FCG ([`Mapping::unit_of_chunk`] and
    /// [`Mapping::locate_in`] together): a read needs both, and they share
    /// their divisions, each done once here in u32.
    #[inline]
    pub fn place_in(&self, zone: u32, fbg: u32, chunk: u64) -> (u64, ChunkLocation) {
        let Ok(c) = u32::try_from(chunk) else { return self.place_wide(zone, fbg, chunk) };
        let v = self.div;
        let (stripe, in_stripe) = (c / v.stripe_chunks, c % v.stripe_chunks);
        let (row, die_in_group) = (stripe / v.d_zone, stripe % v.d_zone);
        // Position among the zone's chunks on its die: at most `c`, so no overflow.
        let index = row * v.stripe_chunks.get() + in_stripe;
        let unit = u64::from(index / v.unit_chunks) * u64::from(self.d_zone) + u64::from(die_in_group);
        // Both below D_zone: one subtraction wraps the rotation.
        let rotated = die_in_group + self.zone_first_die[zone as usize];
        let die_in_fcg = if rotated >= self.d_zone { rotated - self.d_zone } else { rotated };
        let (page_in_fbg, plane) = match self.chunk_order {
            ChunkOrder::PlanesFirst => (index / v.planes, index % v.planes),
            ChunkOrder::PagesFirst => {
                let (unit_on_die, i) = (index / v.unit_chunks, index % v.unit_chunks);
                (unit_on_die * v.oneshot_pages.get() + i % v.oneshot_pages, i / v.oneshot_pages)
            }
        };
        let loc = ChunkLocation {
            die: (zone % v.fcgs) * self.d_zone + die_in_fcg,
            plane,
            block: fbg * self.fbg_blocks + page_in_fbg / v.pages_per_block,
            page: page_in_fbg % v.pages_per_block,
        };
        debug_assert_eq!((unit, loc), self.place_wide(zone, fbg, chunk), "chunk {chunk} of zone {zone}");
        (unit, loc)
    }

    /// [`Mapping::place_in`] in u64, for a chunk past 2^32 (and its reference).
    #[cold]
    #[inline(never)]
    fn place_wide(&self, zone: u32, fbg: u32, chunk: u64) -> (u64, ChunkLocation) {
        let index = self.index_on_die(chunk);
        let (planes, oneshot) = (u64::from(self.planes), u64::from(self.oneshot_pages));
        let (page_in_fbg, plane) = match self.chunk_order {
            ChunkOrder::PlanesFirst => (index / planes, index % planes),
            ChunkOrder::PagesFirst => {
                let i = index % self.unit_chunks_len();
                ((index / self.unit_chunks_len()) * oneshot + i % oneshot, i / oneshot)
            }
        };
        let loc = ChunkLocation {
            die: self.die_of_chunk(zone, chunk),
            plane: u32::try_from(plane).expect("below planes_per_die, a u32"),
            block: fbg * self.fbg_blocks + self.block_in_fbg(page_in_fbg),
            page: u32::try_from(page_in_fbg % u64::from(self.pages_per_block)).expect("below pages_per_block, a u32"),
        };
        (self.unit_of_chunk(chunk), loc)
    }

    /// Program unit holding `chunk`. Units are numbered super word line by
    /// super word line, die by die within one.
    #[inline]
    pub fn unit_of_chunk(&self, chunk: u64) -> u64 {
        let d = u64::from(self.d_zone);
        (self.index_on_die(chunk) / self.unit_chunks_len()) * d + self.stripe_of(chunk) % d
    }

    /// First and last chunk of unit `unit`.
    #[inline]
    pub fn unit_chunk_span(&self, unit: u64) -> (u64, u64) {
        let d = u64::from(self.d_zone);
        let first_index = (unit / d) * self.unit_chunks_len();
        let die_in_group = unit % d;
        (
            self.chunk_at(die_in_group, first_index),
            self.chunk_at(die_in_group, first_index + self.unit_chunks_len() - 1),
        )
    }

    /// Chunks in one page row of a die (the same page on every plane).
    pub fn row_len(&self) -> u32 {
        self.planes
    }

    /// The `k`-th chunk (`k` below [`Mapping::row_len`]) of the page row
    /// holding `chunk`: the chunks one multi-plane sense brings into the
    /// planes' registers together, in zone order.
    pub fn row_chunk(&self, chunk: u64, k: u32) -> u64 {
        debug_assert!(k < self.planes);
        let index = self.index_on_die(chunk);
        let die_in_group = self.stripe_of(chunk) % u64::from(self.d_zone);
        let (unit_chunks, planes, oneshot) =
            (self.unit_chunks_len(), u64::from(self.planes), u64::from(self.oneshot_pages));
        let (base, i) = (index - index % unit_chunks, index % unit_chunks);
        let (first, step) = match self.chunk_order {
            ChunkOrder::PlanesFirst => (base + i - i % planes, 1),
            ChunkOrder::PagesFirst => (base + i % oneshot, oneshot),
        };
        self.chunk_at(die_in_group, first + u64::from(k) * step)
    }

    /// The chunks of unit `unit`, in zone order.
    pub fn unit_chunks(&self, unit: u64) -> impl Iterator<Item = u64> + '_ {
        let d = u64::from(self.d_zone);
        let first_index = (unit / d) * self.unit_chunks_len();
        (first_index..first_index + self.unit_chunks_len()).map(move |i| self.chunk_at(unit % d, i))
    }

    /// Where program unit `unit` of `zone` goes: the block and first page.
    pub fn unit_target(&self, zone: u32, unit: u64) -> (BlockAddr, u32) {
        let d = u64::from(self.d_zone);
        let first_page_in_fbg = (unit / d) * u64::from(self.oneshot_pages);
        let die = self.fcg_of_zone(zone) * self.d_zone + self.group_die(zone, unit);
        let fbg = self.fbg_of_zone(zone);
        let block = fbg * self.fbg_blocks + self.block_in_fbg(first_page_in_fbg);
        let first_page =
            u32::try_from(first_page_in_fbg % u64::from(self.pages_per_block)).expect("below pages_per_block, a u32");
        // The unit lies in the zone's group of dies and block group, and its
        // one-shot program fits its block.
        debug_assert!(self.fcg_dies(zone).contains(&die) && self.fbg_blocks(fbg).contains(&block));
        debug_assert!(first_page + self.oneshot_pages <= self.pages_per_block);
        (BlockAddr { die, block }, first_page)
    }

    /// Blocks (per plane) of block group `fbg` on one die.
    pub fn fbg_blocks(&self, fbg: u32) -> std::ops::Range<u32> {
        let first = fbg * self.fbg_blocks;
        first..first + self.fbg_blocks
    }

    /// Dies of the zone's flash chip group.
    pub fn fcg_dies(&self, zone: u32) -> std::ops::Range<u32> {
        let first = self.fcg_of_zone(zone) * self.d_zone;
        first..first + self.d_zone
    }
}

/// The `k`-th zone's first die among `d`: the bit-reversed order (0, d/2,
/// d/4, 3d/4, ... for a power of two) keeps zones started one after another
/// as far apart as possible, whatever their number.
fn spread_die(k: u32, d: u32) -> u32 {
    if !d.is_power_of_two() {
        return k % d;
    }
    let bits = d.trailing_zeros();
    if bits == 0 {
        return 0;
    }
    (k % d).reverse_bits() >> (32 - bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Figure 1 of seed 002: D_zone = 4 of 8 dies, so two FCGs.
    fn figure1() -> Mapping {
        Mapping {
            d_zone: 4,
            stripe_chunks: 1,
            fcgs: 2,
            planes: 1,
            oneshot_pages: 1,
            pages_per_block: 8,
            fbg_blocks: 1,
            zone_fbg: (0..8).map(|z| z / 2).collect(),
            free_fbgs: vec![VecDeque::new(); 2],
            zone_first_die: vec![0; 8],
            start_die: StartDie::First,
            chunk_order: ChunkOrder::PlanesFirst,
            next_first_die: 0,
            div: Divisors::new(1, 4, 1, 1, 8, 2),
        }
    }

    #[test]
    fn zone_and_chunk_land_as_in_figure_1() {
        let m = figure1();
        // Zone 3: FCG 1, second FBG; chunk 10: third stripe, third die of the group.
        let loc = m.locate(3, 10);
        assert_eq!(loc, ChunkLocation { die: 4 + 2, plane: 0, block: 1, page: 2 });
        assert_eq!(m.die_of_chunk(2, 5), 1);
    }

    /// Two dies of two planes, three-page one-shot programs: six chunks a unit.
    fn two_dies(stripe_chunks: u64) -> Mapping {
        Mapping {
            d_zone: 2,
            stripe_chunks,
            fcgs: 1,
            planes: 2,
            oneshot_pages: 3,
            pages_per_block: 6,
            fbg_blocks: 2,
            zone_fbg: vec![0],
            free_fbgs: vec![VecDeque::new()],
            zone_first_die: vec![0],
            start_die: StartDie::First,
            chunk_order: ChunkOrder::PlanesFirst,
            next_first_die: 0,
            div: Divisors::new(stripe_chunks, 2, 2, 3, 6, 1),
        }
    }

    #[test]
    fn units_cover_super_rows_die_by_die() {
        let orders = [ChunkOrder::PlanesFirst, ChunkOrder::PagesFirst];
        for (stripe, start_die, order) in [1, 2, 3, 6]
            .into_iter()
            .flat_map(|s| [StartDie::First, StartDie::Rotate].into_iter().flat_map(move |d| orders.map(|o| (s, d, o))))
        {
            let mut m = two_dies(stripe);
            m.start_die = start_die;
            m.chunk_order = order;
            // The second zone started under Rotate begins on die 1.
            m.start_zone(0);
            m.start_zone(0);
            let mut places = std::collections::HashSet::new();
            // Every chunk lies in exactly the unit that lists it, on that unit's die and pages.
            for chunk in 0..48u64 {
                let unit = m.unit_of_chunk(chunk);
                let chunks: Vec<u64> = m.unit_chunks(unit).collect();
                assert!(chunks.contains(&chunk), "stripe {stripe}: chunk {chunk} unit {unit} {chunks:?}");
                assert_eq!(m.unit_chunk_span(unit), (chunks[0], chunks[5]), "stripe {stripe} unit {unit}");
                let loc = m.locate(0, chunk);
                assert!(places.insert((loc.die, loc.plane, loc.block, loc.page)), "stripe {stripe}: {loc:?} twice");
                let (addr, first_page) = m.unit_target(0, unit);
                assert_eq!((loc.die, loc.block), (addr.die, addr.block));
                assert!(loc.page >= first_page && loc.page < first_page + 3);
            }
            // The last chunks of units grow with the unit number: units complete in order.
            let lasts: Vec<u64> = (0..8).map(|u| m.unit_chunk_span(u).1).collect();
            assert!(lasts.windows(2).all(|w| w[0] < w[1]), "stripe {stripe}: {lasts:?}");
            // Unit 4: third super row, the zone's first die, page 6 = block 1 page 0.
            let first_die = u32::from(start_die == StartDie::Rotate);
            assert_eq!(m.unit_target(0, 4), (BlockAddr { die: first_die, block: 1 }, 0));
        }
    }

    #[test]
    fn a_page_row_holds_one_chunk_per_plane_and_pages_first_puts_neighbours_in_other_rows() {
        for (stripe, order) in [(2, ChunkOrder::PlanesFirst), (6, ChunkOrder::PlanesFirst), (6, ChunkOrder::PagesFirst)]
        {
            let mut m = two_dies(stripe);
            m.chunk_order = order;
            for chunk in 0..48u64 {
                let loc = m.locate(0, chunk);
                let row: Vec<u64> = (0..m.row_len()).map(|k| m.row_chunk(chunk, k)).collect();
                assert!(
                    row.contains(&chunk) && row.windows(2).all(|w| w[0] < w[1]),
                    "{order:?}: chunk {chunk} row {row:?}"
                );
                let planes: Vec<u32> = row.iter().map(|&c| m.locate(0, c).plane).collect();
                assert_eq!(planes, [0, 1], "{order:?}: one chunk on each plane");
                for &mate in &row {
                    let l = m.locate(0, mate);
                    assert_eq!(
                        (l.die, l.block, l.page),
                        (loc.die, loc.block, loc.page),
                        "{order:?}: {chunk} and {mate}"
                    );
                }
                // The next chunk on the same die shares the row only when the planes fill first.
                if m.die_of_chunk(0, chunk + 1) == loc.die {
                    assert_eq!(
                        row.contains(&(chunk + 1)),
                        order == ChunkOrder::PlanesFirst && chunk % 2 == 0,
                        "{order:?} {chunk}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_chunk_placed_in_u32_lands_where_the_u64_arithmetic_puts_it() {
        // Three dies a group (not a power of two), two groups, rotated start dies, two block groups.
        let orders = [ChunkOrder::PlanesFirst, ChunkOrder::PagesFirst];
        for (stripe, chunk_order) in [1, 2, 3, 6].into_iter().flat_map(|s| orders.map(|o| (s, o))) {
            let mut m = Mapping {
                d_zone: 3,
                stripe_chunks: stripe,
                fcgs: 2,
                planes: 2,
                oneshot_pages: 3,
                pages_per_block: 6,
                fbg_blocks: 2,
                zone_fbg: vec![0, 0, 1, 1],
                free_fbgs: vec![VecDeque::new(); 2],
                zone_first_die: vec![0; 4],
                start_die: StartDie::Rotate,
                chunk_order,
                next_first_die: 0,
                div: Divisors::new(stripe, 3, 2, 3, 6, 2),
            };
            for zone in 0..4 {
                m.start_zone(zone);
                for chunk in 0..3 * 2 * 6 * 2 {
                    let fbg = m.fbg_of_zone(zone);
                    let wide = m.place_wide(zone, fbg, chunk);
                    assert_eq!(m.place_in(zone, fbg, chunk), wide, "stripe {stripe} zone {zone} chunk {chunk}");
                    assert_eq!((m.unit_of_chunk(chunk), m.locate(zone, chunk)), wide);
                }
            }
        }
    }

    #[test]
    fn zones_started_in_turn_start_on_bit_reversed_dies() {
        let order: Vec<u32> = (0..8).map(|k| spread_die(k, 16)).collect();
        assert_eq!(order, vec![0, 8, 4, 12, 2, 10, 6, 14]);
        assert_eq!((0..3).map(|k| spread_die(k, 3)).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(spread_die(5, 1), 0);
    }

    #[test]
    fn a_unit_wide_stripe_keeps_each_unit_contiguous() {
        let m = two_dies(6);
        assert_eq!(m.unit_chunks(0).collect::<Vec<_>>(), (0..6).collect::<Vec<_>>());
        assert_eq!(m.unit_chunks(3).collect::<Vec<_>>(), (18..24).collect::<Vec<_>>());
        assert_eq!((m.die_of_chunk(0, 5), m.die_of_chunk(0, 6)), (0, 1));
        // Page striping puts neighbours on different dies.
        assert_eq!(two_dies(1).unit_chunks(1).collect::<Vec<_>>(), vec![1, 3, 5, 7, 9, 11]);
    }
}
