//! The flash array: timelines per channel and per plane, block wear and the
//! in-order programming rule.

use crate::{Geometry, Timing};
use zonelab_sim::{transfer_ns, Nanos, Timeline};

/// A multi-plane block: block `block` on every plane of die `die`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockAddr {
    pub die: u32,
    pub block: u32,
}

/// When a program's data left the channel and when the program finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramDone {
    pub transfer_end_ns: Nanos,
    pub done_ns: Nanos,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlashCounters {
    pub page_reads: u64,
    pub programs: u64,
    pub pages_programmed: u64,
    pub erases: u64,
    pub channel_bytes: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct BlockState {
    erase_count: u32,
    program_count: u32,
    /// Next page to program since the last erase.
    next_page: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlashError {
    /// Pages of a block must be programmed in order, once, after an erase.
    OutOfOrderProgram { die: u32, plane: u32, block: u32, page: u32, expected: u32 },
    /// Programming past the last page of a block.
    BlockFull { die: u32, block: u32 },
}

impl std::fmt::Display for FlashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OutOfOrderProgram { die, plane, block, page, expected } => write!(
                f,
                "out-of-order program: die {die} plane {plane} block {block} page {page}, next programmable page is {expected}"
            ),
            Self::BlockFull { die, block } => write!(f, "program past the end of die {die} block {block}"),
        }
    }
}
impl std::error::Error for FlashError {}

pub struct FlashArray {
    geometry: Geometry,
    timing: Timing,
    channels: Vec<Timeline>,
    /// Indexed by die * planes_per_die + plane.
    planes: Vec<Timeline>,
    /// Indexed by (die * planes_per_die + plane) * blocks_per_plane + block.
    blocks: Vec<BlockState>,
    counters: FlashCounters,
    page_transfer_ns: Nanos,
}

impl FlashArray {
    pub fn new(geometry: Geometry, timing: Timing) -> Self {
        geometry.validate().expect("flash geometry validated by the caller");
        let planes_total = (geometry.dies_total() * geometry.planes_per_die) as usize;
        let page_transfer_ns = transfer_ns(u64::from(geometry.page_bytes), timing.channel_bytes_per_s);
        Self {
            channels: vec![Timeline::new(); geometry.channels as usize],
            planes: vec![Timeline::new(); planes_total],
            blocks: vec![BlockState::default(); geometry.blocks_total() as usize],
            counters: FlashCounters::default(),
            page_transfer_ns,
            geometry,
            timing,
        }
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }
    pub fn timing(&self) -> &Timing {
        &self.timing
    }
    pub fn counters(&self) -> FlashCounters {
        self.counters
    }

    #[inline]
    fn plane_index(&self, die: u32, plane: u32) -> usize {
        debug_assert!(die < self.geometry.dies_total() && plane < self.geometry.planes_per_die);
        (die * self.geometry.planes_per_die + plane) as usize
    }

    #[inline]
    fn block_index(&self, die: u32, plane: u32, block: u32) -> usize {
        debug_assert!(block < self.geometry.blocks_per_plane);
        self.plane_index(die, plane) * self.geometry.blocks_per_plane as usize + block as usize
    }

    fn die_planes(&self, die: u32) -> std::ops::Range<usize> {
        let first = self.plane_index(die, 0);
        first..first + self.geometry.planes_per_die as usize
    }

    /// Time at which every plane of `die` is idle.
    pub fn die_free_at_ns(&self, die: u32) -> Nanos {
        self.planes[self.die_planes(die)].iter().map(Timeline::free_at_ns).max().unwrap_or(0)
    }

    /// Reads `bytes` of one page: array read on the plane, then transfer over
    /// the die's channel. Returns when the data is in the controller.
    pub fn read(&mut self, ready_ns: Nanos, die: u32, plane: u32, bytes: u32) -> Nanos {
        assert!(bytes <= self.geometry.page_bytes);
        let plane_index = self.plane_index(die, plane);
        let sensed_ns = self.planes[plane_index].reserve(ready_ns, self.timing.read_ns);
        let channel = self.geometry.channel_of_die(die) as usize;
        let xfer_ns = transfer_ns(u64::from(bytes), self.timing.channel_bytes_per_s);
        let done_ns = self.channels[channel].reserve(sensed_ns, xfer_ns);
        self.counters.page_reads += 1;
        self.counters.channel_bytes += u64::from(bytes);
        done_ns
    }

    /// Programs `oneshot_pages` pages starting at `first_page` on every plane of
    /// block `addr`: the data crosses the channel, then all planes program together.
    pub fn program(&mut self, ready_ns: Nanos, addr: BlockAddr, first_page: u32) -> Result<ProgramDone, FlashError> {
        self.check_and_advance_program(addr, first_page)?;
        let pages = self.geometry.planes_per_die * self.geometry.oneshot_pages;
        let page_bytes = self.geometry.page_bytes;
        let channel = self.geometry.channel_of_die(addr.die) as usize;
        let transfer_end_ns = self.channels[channel].reserve(ready_ns, self.page_transfer_ns * Nanos::from(pages));
        let done_ns = self.reserve_die(addr.die, transfer_end_ns, self.timing.program_ns);
        self.counters.programs += 1;
        self.counters.pages_programmed += u64::from(pages);
        self.counters.channel_bytes += u64::from(pages) * u64::from(page_bytes);
        Ok(ProgramDone { transfer_end_ns, done_ns })
    }

    /// Erases block `addr` on every plane of its die.
    pub fn erase(&mut self, ready_ns: Nanos, addr: BlockAddr) -> Nanos {
        for plane in 0..self.geometry.planes_per_die {
            let b = self.block_index(addr.die, plane, addr.block);
            self.blocks[b].erase_count += 1;
            self.blocks[b].next_page = 0;
        }
        self.counters.erases += 1;
        self.reserve_die(addr.die, ready_ns, self.timing.erase_ns)
    }

    /// A multi-plane operation starts when every plane of the die is free.
    fn reserve_die(&mut self, die: u32, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        let range = self.die_planes(die);
        let start_ns = self.planes[range.clone()].iter().map(Timeline::free_at_ns).fold(ready_ns, Nanos::max);
        for plane in &mut self.planes[range] {
            plane.occupy_until(start_ns, start_ns + duration_ns);
        }
        start_ns + duration_ns
    }

    fn check_and_advance_program(&mut self, addr: BlockAddr, first_page: u32) -> Result<(), FlashError> {
        let oneshot = self.geometry.oneshot_pages;
        if first_page + oneshot > self.geometry.pages_per_block {
            return Err(FlashError::BlockFull { die: addr.die, block: addr.block });
        }
        for plane in 0..self.geometry.planes_per_die {
            let state = &self.blocks[self.block_index(addr.die, plane, addr.block)];
            if state.next_page != first_page {
                return Err(FlashError::OutOfOrderProgram {
                    die: addr.die,
                    plane,
                    block: addr.block,
                    page: first_page,
                    expected: state.next_page,
                });
            }
        }
        for plane in 0..self.geometry.planes_per_die {
            let b = self.block_index(addr.die, plane, addr.block);
            self.blocks[b].next_page += oneshot;
            self.blocks[b].program_count += 1;
        }
        Ok(())
    }

    /// Erase count of one block of one plane.
    pub fn erase_count(&self, die: u32, plane: u32, block: u32) -> u32 {
        self.blocks[self.block_index(die, plane, block)].erase_count
    }

    /// Lifetime program operations on one block of one plane.
    pub fn program_count(&self, die: u32, plane: u32, block: u32) -> u32 {
        self.blocks[self.block_index(die, plane, block)].program_count
    }

    /// Pages programmed since the block's last erase.
    pub fn pages_written(&self, die: u32, plane: u32, block: u32) -> u32 {
        self.blocks[self.block_index(die, plane, block)].next_page
    }

    /// Erase counts of all blocks, for wear statistics.
    pub fn erase_counts(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks.iter().map(|b| b.erase_count)
    }

    /// Busy time of a die: the mean over its planes.
    pub fn die_busy_ns(&self, die: u32) -> Nanos {
        let range = self.die_planes(die);
        let n = range.len() as Nanos;
        self.planes[range].iter().map(Timeline::busy_ns).sum::<Nanos>() / n
    }

    pub fn channel_busy_ns(&self, channel: u32) -> Nanos {
        self.channels[channel as usize].busy_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array() -> FlashArray {
        let g = Geometry {
            channels: 2,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 4,
            pages_per_block: 6,
            page_bytes: 16384,
            oneshot_pages: 3,
        };
        let t =
            Timing { read_ns: 50_000, program_ns: 1_000_000, erase_ns: 3_000_000, channel_bytes_per_s: 1_638_400_000 };
        FlashArray::new(g, t)
    }

    #[test]
    fn program_transfers_then_programs_all_planes() {
        let mut f = array();
        let done = f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        // 6 pages of 16 KiB at 1.6384 GB/s = 60 µs.
        assert_eq!(done.transfer_end_ns, 60_000);
        assert_eq!(done.done_ns, 1_060_000);
        assert_eq!(f.pages_written(0, 1, 1), 3);
        assert_eq!(f.program_count(0, 0, 1), 1);
    }

    #[test]
    fn dies_on_other_channels_run_in_parallel_and_same_die_serialises() {
        let mut f = array();
        let a = f.program(0, BlockAddr { die: 0, block: 0 }, 0).unwrap();
        let b = f.program(0, BlockAddr { die: 1, block: 0 }, 0).unwrap();
        assert_eq!(a.done_ns, b.done_ns, "separate channels and dies overlap fully");
        let c = f.program(0, BlockAddr { die: 0, block: 0 }, 3).unwrap();
        assert_eq!(c.done_ns, a.done_ns + 1_000_000, "same die waits for the previous program");
        // A read on die 0 waits for its plane to finish programming.
        let r = f.read(0, 0, 0, 4096);
        assert!(r > c.done_ns);
    }

    #[test]
    fn programs_must_be_in_order_and_erase_restarts() {
        let mut f = array();
        let addr = BlockAddr { die: 1, block: 2 };
        assert!(matches!(f.program(0, addr, 3), Err(FlashError::OutOfOrderProgram { expected: 0, .. })));
        f.program(0, addr, 0).unwrap();
        f.program(0, addr, 3).unwrap();
        assert!(matches!(f.program(0, addr, 6), Err(FlashError::BlockFull { .. })));
        f.erase(0, addr);
        assert_eq!(f.erase_count(1, 0, 2), 1);
        assert_eq!(f.erase_count(1, 1, 2), 1);
        assert_eq!(f.pages_written(1, 0, 2), 0);
        f.program(0, addr, 0).unwrap();
    }
}
