//! The flash array: timelines per channel and per plane, block wear and the
//! in-order programming rule.

use crate::{Geometry, Timing};
use std::collections::{BTreeMap, VecDeque};
use std::num::NonZeroU32;
use zonelab_sim::{transfer_ns, Bandwidth, Nanos, SlotTimeline, TimeSeries, Timeline, MS};

/// Interval of the chip utilization series: 100 ms of simulated time.
pub const UTILIZATION_INTERVAL_NS: Nanos = 100 * MS;
/// Intervals the series keeps (29 hours of simulated time, 8 MiB at most);
/// later samples are dropped.
const UTILIZATION_INTERVALS_MAX: usize = 1 << 20;
/// Programs and erases remembered per die for reads that go ahead of them
/// (`Suspend::read_priority`). Beyond that the oldest are forgotten, and a
/// read that comes while a forgotten one runs waits for the whole queue,
/// as it would without read priority.
const DIE_OPS_TRACKED_MAX: usize = 64;

/// A multi-plane block: block `block` on every plane of die `die`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BlockAddr {
    /// Die index, numbered across channels (see [`Geometry::dies_total`]).
    pub die: u32,
    /// Block index within each plane of the die.
    pub block: u32,
}

/// When a program's data left the channel and when the program finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramDone {
    /// When the last byte of the program data crossed the channel: the
    /// controller's buffer can be reused from then on.
    pub transfer_end_ns: Nanos,
    /// When the planes finished programming: the data is durable.
    pub done_ns: Nanos,
}

/// When a copyback's source pages are sensed into the page registers (the
/// data is in the die, as a read into the controller would have it) and when
/// its program ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopybackDone {
    /// The source pages are in the page registers.
    pub sensed_ns: Nanos,
    /// The copy is programmed.
    pub done_ns: Nanos,
}

/// Operation counts of a flash array since it was created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlashCounters {
    /// Pages sensed into a page register, by host reads and by copybacks.
    pub page_reads: u64,
    /// Multi-plane program operations (one per program unit), copybacks included.
    pub programs: u64,
    /// Pages programmed, over all planes (a program unit is planes × one-shot pages).
    pub pages_programmed: u64,
    /// Multi-plane block erases.
    pub erases: u64,
    /// Bytes moved over the channels, reads and programs together.
    pub channel_bytes: u64,
    /// Program units copied inside a die without crossing the channel.
    pub copybacks: u64,
}

/// The program or erase a die runs last, which a read may suspend.
#[derive(Debug, Clone, Copy)]
struct Suspendable {
    /// When the die was idle before the operation was reserved.
    idle_from_ns: Nanos,
    start_ns: Nanos,
    end_ns: Nanos,
    suspends: u32,
    /// When the operation's latest suspension let the die sense.
    suspended_ns: Nanos,
    /// When the reads of that suspension are sensed: the die resumes after.
    reads_end_ns: Nanos,
    /// When each plane is done sensing in that suspension (planes beyond
    /// `BATCH_PLANES_MAX` share), for `Suspend::batch_reads`.
    plane_free_ns: [Nanos; BATCH_PLANES_MAX],
}

/// Planes that sense a suspension's batched reads side by side.
const BATCH_PLANES_MAX: usize = 8;

#[derive(Debug, Clone, Copy, Default)]
struct BlockState {
    erase_count: u32,
    program_count: u32,
    /// Next page to program since the last erase.
    next_page: u32,
}

/// A flash operation the NAND rules forbid: the device model asked for it, so
/// it is a bug in the FTL above, reported instead of silently timed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FlashError {
    /// Pages of a block must be programmed in order, once, after an erase.
    OutOfOrderProgram {
        /// Die of the block.
        die: u32,
        /// Plane whose block is out of order.
        plane: u32,
        /// Block within the plane.
        block: u32,
        /// First page the program asked for.
        page: u32,
        /// The block's next programmable page.
        expected: u32,
    },
    /// Programming past the last page of a block.
    BlockFull {
        /// Die of the block.
        die: u32,
        /// Block within each plane.
        block: u32,
    },
    /// A copyback source page that is not programmed (nothing to copy).
    CopybackUnwritten {
        /// Die the copyback runs on.
        die: u32,
        /// Source block.
        block: u32,
        /// First source page.
        page: u32,
    },
}

impl std::fmt::Display for FlashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OutOfOrderProgram { die, plane, block, page, expected } => write!(
                f,
                "out-of-order program: die {die} plane {plane} block {block} page {page}, next programmable page is {expected}"
            ),
            Self::BlockFull { die, block } => write!(f, "program past the end of die {die} block {block}"),
            Self::CopybackUnwritten { die, block, page } => {
                write!(f, "copyback from die {die} block {block} page {page}, which is not programmed")
            }
        }
    }
}
impl std::error::Error for FlashError {}

/// Programs booked ahead that a [`Channel`] remembers for reads to pass.
const CHANNEL_PROGRAMS_MAX: usize = 256;

/// One channel between the controller and its dies. Reads cross it in the
/// order their data is asked for, programs in the order the firmware hands
/// them over and after the reads booked before them. With `reads_first`
/// (`Suspend::read_priority`: a flash scheduler that prefers reads) a read
/// takes the first gap long enough for it before the programs booked to
/// cross later; without it the channel is one queue in booking order.
///
/// Bound: it remembers the last `CHANNEL_PROGRAMS_MAX` programs ahead of
/// the reads; no read crosses before the end of one it forgot.
#[derive(Debug, Clone, Default)]
struct Channel {
    /// With `reads_first`, programs' transfers (start, end) that end after
    /// the last read's: sorted, disjoint.
    programs: VecDeque<(Nanos, Nanos)>,
    /// End of the last program it forgot.
    floor_ns: Nanos,
    busy_ns: Nanos,
    /// End of the last read's transfer: reads keep their order.
    reads_free_at_ns: Nanos,
    /// End of the last program's transfer.
    programs_free_at_ns: Nanos,
}

impl Channel {
    /// A read's transfer from `ready_ns` on, in the first gap before the
    /// programs ahead that holds it (after them without `reads_first`);
    /// returns its end. With no program ahead, one comparison.
    #[inline]
    fn reserve_read(&mut self, ready_ns: Nanos, xfer_ns: Nanos, reads_first: bool) -> Nanos {
        let mut start_ns = ready_ns.max(self.reads_free_at_ns).max(self.floor_ns);
        if !reads_first {
            start_ns = start_ns.max(self.programs_free_at_ns);
        } else if !self.programs.is_empty() {
            start_ns = self.gap_before_programs(start_ns, xfer_ns);
        }
        let end_ns = start_ns + xfer_ns;
        self.reads_free_at_ns = end_ns;
        self.busy_ns += xfer_ns;
        end_ns
    }

    /// Where a read of `xfer_ns` ready at `start_ns` starts among the
    /// programs ahead; forgets those that end before it does.
    #[inline(never)]
    fn gap_before_programs(&mut self, mut start_ns: Nanos, xfer_ns: Nanos) -> Nanos {
        // Bound: each step passes one remembered program.
        for &(busy_start_ns, busy_end_ns) in &self.programs {
            if start_ns + xfer_ns <= busy_start_ns {
                break;
            }
            start_ns = start_ns.max(busy_end_ns);
        }
        // Programs that end before this read can hold back no later read.
        let end_ns = start_ns + xfer_ns;
        while self.programs.front().is_some_and(|&(_, busy_end_ns)| busy_end_ns <= end_ns) {
            self.programs.pop_front();
        }
        start_ns
    }

    /// A program's transfer from `ready_ns` on, after the programs and the
    /// reads booked before it; returns its end.
    #[inline]
    fn reserve_program(&mut self, ready_ns: Nanos, xfer_ns: Nanos, reads_first: bool) -> Nanos {
        let start_ns = ready_ns.max(self.programs_free_at_ns).max(self.reads_free_at_ns);
        let end_ns = start_ns + xfer_ns;
        self.programs_free_at_ns = end_ns;
        self.busy_ns += xfer_ns;
        if reads_first && xfer_ns > 0 {
            self.programs.push_back((start_ns, end_ns));
            if self.programs.len() > CHANNEL_PROGRAMS_MAX {
                let (_, forgotten_end_ns) = self.programs.pop_front().expect("over the bound");
                self.floor_ns = self.floor_ns.max(forgotten_end_ns);
            }
        }
        end_ns
    }

    /// Time the channel has been reserved for.
    fn busy_ns(&self) -> Nanos {
        self.busy_ns
    }
}

/// The dies, planes and channels of one device as timelines, with each block's
/// erase and program counts and its next programmable page.
pub struct FlashArray {
    geometry: Geometry,
    timing: Timing,
    channels: Vec<Channel>,
    /// Indexed by die * planes_per_die + plane.
    planes: Vec<Timeline>,
    /// Indexed by (die * planes_per_die + plane) * blocks_per_plane + block.
    blocks: Vec<BlockState>,
    counters: FlashCounters,
    page_transfer_ns: Nanos,
    /// tR of each page of a word line (`Timing::read_ns_of`), by page mod one-shot pages.
    read_ns_by_page: Vec<Nanos>,
    /// The geometry's divisors of a read (one-shot pages, planes per die,
    /// channels), nonzero by validation: their divisions need no zero test.
    read_divisors: [NonZeroU32; 3],
    /// A channel's bandwidth for reads, which mostly move the same size again.
    read_channel: Bandwidth,
    /// The controller's read data path (`Timing::read_decode_bytes_per_s`), if limited.
    decoder: Option<(SlotTimeline, Bandwidth)>,
    /// When each die runs the serial part of a sense (`Timing::die_sense_ns`), if it has one.
    die_sense: Option<DieSense>,
    /// Copybacks the data of a page went through since it last crossed the
    /// controller (which checks ECC), by (die, plane, block, page); absent = 0.
    /// Bit errors accumulate along such chains, so the device bounds them.
    copyback_chains: BTreeMap<(u32, u32, u32, u32), u32>,
    /// Busy time of all dies per 100 ms interval, in die-nanoseconds; kept
    /// only when asked for ([`FlashArray::keep_utilization`]).
    die_busy_series: Option<TimeSeries>,
    /// Per die: its programs and erases not yet known to have ended, oldest
    /// first (only the latest without `Suspend::read_priority`), for suspend.
    suspendable: Vec<VecDeque<Suspendable>>,
    /// Reads that suspended a program or erase.
    suspensions: u64,
    /// Per plane: the page row its register holds and when it was sensed
    /// there (`Timing::plane_interleave_bytes`).
    registers: Vec<Register>,
}

/// Serial parts of senses one die keeps booked ahead, at most: past that
/// the earliest is forgotten and no later one may start before it ends.
const DIE_SENSES_BOOKED_MAX: usize = 16;

/// The dies' serial parts of their senses (`Timing::die_sense_ns`), all of
/// one length: per die, the starts of those booked, in order, so a read
/// whose planes are free early takes an idle stretch before one booked by
/// a read that waits for its plane.
#[derive(Debug, Clone)]
struct DieSense {
    dies: Vec<DieSenses>,
    /// No read from now on is ready before this (`forget_decoded_until`).
    now_ns: Nanos,
}

/// One die's booked serial parts of senses: a ring of their starts, in order.
#[derive(Debug, Clone, Copy, Default)]
struct DieSenses {
    starts_ns: [Nanos; DIE_SENSES_BOOKED_MAX],
    /// Ring index of the earliest.
    head: usize,
    booked: usize,
    /// End of the latest one forgotten while still ahead: nothing starts before it.
    floor_ns: Nanos,
}

impl DieSenses {
    #[inline]
    fn start_ns(&self, k: usize) -> Nanos {
        self.starts_ns[(self.head + k) % DIE_SENSES_BOOKED_MAX]
    }

    /// Books `serial_ns` in the first idle stretch from `ready_ns` on, having
    /// forgotten those over by `now_ns`; returns when it starts.
    #[inline]
    fn book(&mut self, now_ns: Nanos, ready_ns: Nanos, serial_ns: Nanos) -> Nanos {
        // Bound: each step forgets one booked sense.
        while self.booked > 0 && self.start_ns(0) + serial_ns <= now_ns {
            (self.head, self.booked) = ((self.head + 1) % DIE_SENSES_BOOKED_MAX, self.booked - 1);
        }
        if self.booked == DIE_SENSES_BOOKED_MAX {
            // Full with every one still ahead: the earliest goes, and nothing may start before it ends.
            self.floor_ns = self.floor_ns.max(self.start_ns(0) + serial_ns);
            (self.head, self.booked) = ((self.head + 1) % DIE_SENSES_BOOKED_MAX, self.booked - 1);
        }
        let mut start_ns = ready_ns.max(self.floor_ns);
        let mut at = 0;
        // Bound: each step passes one booked sense.
        while at < self.booked {
            let booked_ns = self.start_ns(at);
            if start_ns + serial_ns <= booked_ns {
                break;
            }
            start_ns = start_ns.max(booked_ns + serial_ns);
            at += 1;
        }
        // Those after the new one move one place on, the last first.
        for k in (at..self.booked).rev() {
            self.starts_ns[(self.head + k + 1) % DIE_SENSES_BOOKED_MAX] = self.start_ns(k);
        }
        self.starts_ns[(self.head + at) % DIE_SENSES_BOOKED_MAX] = start_ns;
        self.booked += 1;
        debug_assert!((1..self.booked).all(|k| self.start_ns(k - 1) + serial_ns <= self.start_ns(k)), "one at a time");
        start_ns
    }
}

impl DieSense {
    fn new(dies: u32) -> Self {
        Self { dies: vec![DieSenses::default(); dies as usize], now_ns: 0 }
    }

    /// Books `serial_ns` of `die` in its first idle stretch from `ready_ns`
    /// on; returns when the sense starts.
    #[inline]
    fn reserve(&mut self, die: u32, ready_ns: Nanos, serial_ns: Nanos) -> Nanos {
        debug_assert!(ready_ns >= self.now_ns, "a read ready before the promised time");
        let start_ns = self.dies[die as usize].book(self.now_ns, ready_ns, serial_ns);
        debug_assert!(start_ns >= ready_ns);
        start_ns
    }
}

/// The page row a plane's register holds after a read sensed it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Register {
    /// Block × pages per block + page + 1 (0: nothing sensed).
    row: u64,
    sensed_ns: Nanos,
}

/// Consecutive planes of one die, wrapping at its last plane.
#[derive(Debug, Clone, Copy)]
struct PlaneSpan {
    /// Index of the die's plane 0.
    die_first: usize,
    first: u32,
    count: u32,
    per_die: u32,
}

impl PlaneSpan {
    fn iter(self) -> impl Iterator<Item = usize> {
        debug_assert!(self.first < self.per_die && self.count <= self.per_die);
        // The first plane and the count are below the die's planes: one subtraction wraps.
        (0..self.count).map(move |k| {
            let plane = self.first + k;
            self.die_first + (if plane >= self.per_die { plane - self.per_die } else { plane }) as usize
        })
    }
}

/// One read of part of a chunk: the chunk's place in flash and the bytes of
/// it read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRead {
    /// Die of the chunk.
    pub die: u32,
    /// Plane the chunk is mapped to.
    pub plane: u32,
    /// Block within the plane.
    pub block: u32,
    /// Page within the block.
    pub page: u32,
    /// First byte read, from the chunk's start.
    pub offset_bytes: u32,
    /// Bytes read.
    pub bytes: u32,
}

/// The flash time the namespaces of one device share: channel, plane and
/// die-sense timelines, the die busy series and what a read may suspend. Each
/// namespace keeps its own blocks; this moves between them so that their
/// commands queue on the same dies.
#[derive(Debug, Clone)]
pub struct SharedTime {
    channels: Vec<Channel>,
    planes: Vec<Timeline>,
    die_busy_series: Option<TimeSeries>,
    suspendable: Vec<VecDeque<Suspendable>>,
    registers: Vec<Register>,
    die_sense: Option<DieSense>,
}

impl FlashArray {
    /// An idle, fully erased array. `geometry` must have passed
    /// [`Geometry::validate`].
    pub fn new(geometry: Geometry, timing: Timing) -> Self {
        geometry.validate().expect("flash geometry validated by the caller");
        let planes_total = (geometry.dies_total() * geometry.planes_per_die) as usize;
        let page_transfer_ns = transfer_ns(u64::from(geometry.page_bytes), timing.channel_bytes_per_s);
        Self {
            channels: vec![Channel::default(); geometry.channels as usize],
            planes: vec![Timeline::new(); planes_total],
            blocks: vec![
                BlockState::default();
                usize::try_from(geometry.blocks_total()).expect("validate bounds the blocks to 2^24")
            ],
            counters: FlashCounters::default(),
            page_transfer_ns,
            read_ns_by_page: (0..geometry.oneshot_pages)
                .map(|p| timing.read_ns_of(p, geometry.oneshot_pages))
                .collect(),
            read_channel: Bandwidth::new(timing.channel_bytes_per_s),
            decoder: (timing.read_decode_bytes_per_s > 0)
                .then(|| (SlotTimeline::new(), Bandwidth::new(timing.read_decode_bytes_per_s))),
            die_sense: (timing.die_sense_ns > 0).then(|| DieSense::new(geometry.dies_total())),
            read_divisors: [geometry.oneshot_pages, geometry.planes_per_die, geometry.channels]
                .map(|n| NonZeroU32::new(n).expect("validate checks the geometry's counts are nonzero")),
            copyback_chains: BTreeMap::new(),
            die_busy_series: None,
            suspendable: vec![VecDeque::new(); geometry.dies_total() as usize],
            suspensions: 0,
            registers: vec![Register::default(); planes_total],
            geometry,
            timing,
        }
    }

    /// Keeps (or stops keeping) the dies' busy time per 100 ms, which
    /// [`FlashArray::chip_utilization`] reports: a run that never asks for it
    /// does not pay for it on every flash operation.
    pub fn keep_utilization(&mut self, keep: bool) {
        self.die_busy_series = keep.then(|| TimeSeries::new(UTILIZATION_INTERVAL_NS, UTILIZATION_INTERVALS_MAX));
    }

    /// Adds `share` of a die's time over `[start_ns, end_ns)` to the busy series, if kept.
    #[inline]
    fn note_busy(&mut self, start_ns: Nanos, end_ns: Nanos, share: f64) {
        if let Some(series) = self.die_busy_series.as_mut() {
            series.add_span(start_ns, end_ns, share);
        }
    }

    /// The physical organisation this array was built with.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// A copy of this array's time, to start a device's shared time from.
    pub fn shared_time(&self) -> SharedTime {
        SharedTime {
            channels: self.channels.clone(),
            planes: self.planes.clone(),
            die_busy_series: self.die_busy_series.clone(),
            suspendable: self.suspendable.clone(),
            registers: self.registers.clone(),
            die_sense: self.die_sense.clone(),
        }
    }

    /// Exchanges this array's time with `time` (same dies, planes and channels).
    pub fn swap_shared_time(&mut self, time: &mut SharedTime) {
        assert_eq!(self.channels.len(), time.channels.len(), "namespaces share one device's channels");
        assert_eq!(self.planes.len(), time.planes.len(), "namespaces share one device's planes");
        std::mem::swap(&mut self.channels, &mut time.channels);
        std::mem::swap(&mut self.planes, &mut time.planes);
        std::mem::swap(&mut self.die_busy_series, &mut time.die_busy_series);
        std::mem::swap(&mut self.suspendable, &mut time.suspendable);
        std::mem::swap(&mut self.registers, &mut time.registers);
        std::mem::swap(&mut self.die_sense, &mut time.die_sense);
    }

    /// Copies the timelines of `time` (not the busy series), so that reads
    /// between commands (when is a die idle) see the device's latest state.
    pub fn copy_timelines_from(&mut self, time: &SharedTime) {
        assert_eq!(self.planes.len(), time.planes.len(), "namespaces share one device's planes");
        self.channels.clone_from(&time.channels);
        self.planes.clone_from(&time.planes);
        self.suspendable.clone_from(&time.suspendable);
        self.registers.clone_from(&time.registers);
        self.die_sense.clone_from(&time.die_sense);
    }
    /// The operation latencies this array charges.
    pub fn timing(&self) -> &Timing {
        &self.timing
    }
    /// Operation counts so far.
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

    /// Nothing read from now on reaches the controller's read data path
    /// before `now_ns` (every read starts at or after it): what it did by
    /// then can be forgotten.
    #[inline]
    pub fn forget_decoded_until(&mut self, now_ns: Nanos) {
        if let Some((decoder, _)) = &mut self.decoder {
            decoder.forget_until(now_ns);
        }
        if let Some(dies) = &mut self.die_sense {
            // Handed to a die's timeline when a read reserves on it: one store per command, not one per die.
            dies.now_ns = now_ns;
        }
    }

    /// Time at which every plane of `die` is idle.
    pub fn die_free_at_ns(&self, die: u32) -> Nanos {
        self.planes[self.die_planes(die)].iter().map(Timeline::free_at_ns).max().unwrap_or(0)
    }

    /// Reads `bytes` of one page: array read on the plane, then transfer over
    /// the die's channel. Returns when the data is in the controller. The
    /// page's type is not known here, so tR is the mean `read_ns`.
    pub fn read(&mut self, ready_ns: Nanos, die: u32, plane: u32, bytes: u32) -> Nanos {
        self.read_sensed_in(ready_ns, die, plane, self.timing.read_ns, bytes)
    }

    /// [`read`](Self::read) of page `page` of its block: tR of the page's type.
    pub fn read_page(&mut self, ready_ns: Nanos, die: u32, plane: u32, page: u32, bytes: u32) -> Nanos {
        let read_ns = self.read_ns_of_page(page);
        self.read_sensed_in(ready_ns, die, plane, read_ns, bytes)
    }

    /// Reads part of a chunk (`Timing::plane_interleave_bytes`: the planes
    /// its bytes are on, in one sense, or none when their registers still
    /// hold its row); without interleaving, as [`read_page`](Self::read_page).
    pub fn read_chunk(&mut self, ready_ns: Nanos, r: ChunkRead) -> Nanos {
        let slice_bytes = self.timing.plane_interleave_bytes;
        if slice_bytes == 0 {
            return self.read_page(ready_ns, r.die, r.plane, r.page, r.bytes);
        }
        assert!(r.bytes > 0 && r.offset_bytes + r.bytes <= self.geometry.page_bytes, "a read within one chunk");
        let read_ns = self.read_ns_of_page(r.page);
        let planes_per_die = self.geometry.planes_per_die;
        let first_slice = r.offset_bytes / slice_bytes;
        let slices = (r.offset_bytes + r.bytes).div_ceil(slice_bytes) - first_slice;
        let planes = PlaneSpan {
            die_first: self.plane_index(r.die, 0),
            first: first_slice % self.read_divisors[1],
            count: slices.min(planes_per_die),
            per_die: planes_per_die,
        };
        let row = u64::from(r.block) * u64::from(self.geometry.pages_per_block) + u64::from(r.page) + 1;
        let sensed_ns = if planes.count == 1 {
            // A read within one slice, the common small read: the same steps,
            // with a constant count for the compiler to fold their loops away.
            self.sense_unless_held(ready_ns, r.die, PlaneSpan { count: 1, ..planes }, read_ns, row)
        } else {
            self.sense_unless_held(ready_ns, r.die, planes, read_ns, row)
        };
        let done_ns = self.transfer_read(sensed_ns, r.die, r.bytes);
        // Sensed once the request and the planes were ready, then sent over the channel.
        debug_assert!(sensed_ns >= ready_ns && done_ns > sensed_ns);
        done_ns
    }

    /// Senses page row `row` on `planes` of `die` unless their registers
    /// still hold it from a read that nothing on the planes followed; returns
    /// when it is sensed.
    #[inline(always)]
    fn sense_unless_held(&mut self, ready_ns: Nanos, die: u32, planes: PlaneSpan, read_ns: Nanos, row: u64) -> Nanos {
        let held = planes.iter().all(|i| {
            let reg = self.registers[i];
            reg.row == row && self.planes[i].free_at_ns() == reg.sensed_ns
        });
        if held {
            planes.iter().map(|i| self.registers[i].sensed_ns).fold(ready_ns, Nanos::max)
        } else {
            self.sense_planes(ready_ns, die, planes, read_ns, row)
        }
    }

    /// tR of page `page` of its block (`Timing::read_ns_of`), from the table.
    #[inline]
    fn read_ns_of_page(&self, page: u32) -> Nanos {
        let read_ns = self.read_ns_by_page[(page % self.read_divisors[0]) as usize];
        debug_assert_eq!(read_ns, self.timing.read_ns_of(page, self.geometry.oneshot_pages));
        read_ns
    }

    /// Senses page row `row` on `planes` of `die` together (suspending a
    /// program or erase there if it may, placed in the suspension by the
    /// first of the planes only); returns when it is sensed.
    #[inline(always)]
    fn sense_planes(&mut self, ready_ns: Nanos, die: u32, planes: PlaneSpan, read_ns: Nanos, row: u64) -> Nanos {
        debug_assert!(planes.count > 0 && planes.count <= self.geometry.planes_per_die);
        // Only a die with a program or erase tracked can suspend one: test that in line first.
        if !self.suspendable[die as usize].is_empty() {
            if let Some(sensed_ns) = self.suspend_for_read(ready_ns, die, planes.first, read_ns) {
                return sensed_ns;
            }
        }
        let mut start_ns = planes.iter().map(|i| self.planes[i].free_at_ns()).fold(ready_ns, Nanos::max);
        if let Some(dies) = &mut self.die_sense {
            // The first idle stretch of the die's serial part from when the planes are free.
            start_ns = dies.reserve(die, start_ns, self.timing.die_sense_ns);
        }
        for i in planes.iter() {
            self.planes[i].occupy_until(start_ns, start_ns + read_ns);
            self.registers[i] = Register { row, sensed_ns: start_ns + read_ns };
        }
        if self.die_busy_series.is_some() {
            let share = f64::from(planes.count) / f64::from(self.geometry.planes_per_die);
            self.note_busy(start_ns, start_ns + read_ns, share);
        }
        start_ns + read_ns
    }

    /// The channel moves `bytes` sensed at `sensed_ns` on `die` to the
    /// controller; returns when they are there.
    #[inline]
    fn transfer_read(&mut self, sensed_ns: Nanos, die: u32, bytes: u32) -> Nanos {
        let channel = (die % self.read_divisors[2]) as usize;
        debug_assert_eq!(channel, self.geometry.channel_of_die(die) as usize);
        let xfer_ns = self.read_channel.transfer_ns(u64::from(bytes));
        let reads_first = self.timing.suspend.read_priority;
        let mut done_ns = self.channels[channel].reserve_read(sensed_ns, xfer_ns, reads_first);
        if let Some((decoder, rate)) = &mut self.decoder {
            done_ns = decoder.reserve(done_ns, rate.transfer_ns(u64::from(bytes)));
        }
        self.counters.page_reads += 1;
        self.counters.channel_bytes += u64::from(bytes);
        done_ns
    }

    fn read_sensed_in(&mut self, ready_ns: Nanos, die: u32, plane: u32, read_ns: Nanos, bytes: u32) -> Nanos {
        assert!(bytes <= self.geometry.page_bytes);
        let one_plane = PlaneSpan {
            die_first: self.plane_index(die, 0),
            first: plane,
            count: 1,
            per_die: self.geometry.planes_per_die,
        };
        // Row 0: a chunk whole on its plane leaves nothing a later read could take from the register.
        let sensed_ns = self.sense_planes(ready_ns, die, one_plane, read_ns, 0);
        self.transfer_read(sensed_ns, die, bytes)
    }

    /// Serves a read on `die` ahead of the program or erase it finds there,
    /// if that allows another read: a read that comes while the operation's
    /// data is still crossing the channel goes first (the flash scheduler
    /// prefers reads), one that comes while it runs suspends it. Without
    /// `Suspend::read_priority` only the die's latest operation, with nothing
    /// queued behind it, lets a read in; with it, a read also goes ahead of
    /// the operations queued behind, and when the running one allows no more
    /// suspensions it goes right after it. Returns when the read is sensed.
    /// What runs after the read on the die moves later by what the read took;
    /// the ends its callers were given stay (the model's approximation: one
    /// read's worth of time).
    #[inline(never)]
    fn suspend_for_read(&mut self, ready_ns: Nanos, die: u32, plane: u32, read_ns: Nanos) -> Option<Nanos> {
        let suspend = self.timing.suspend;
        let ops = &mut self.suspendable[die as usize];
        while ops.front().is_some_and(|op| op.end_ns <= ready_ns) {
            ops.pop_front();
        }
        // Cheapest tests first: most reads come after the die's last operation.
        let (op, last_end_ns, queued) = match (ops.front(), ops.back()) {
            (Some(first), Some(last)) => (*first, last.end_ns, ops.len() > 1),
            _ => return None,
        };
        if suspend.per_op_max == 0 || (queued && !suspend.read_priority) {
            return None;
        }
        // A read that comes while the die is still busy with what came before
        // the operation (other reads) waits for that, then goes first if the
        // scheduler prefers reads; without that preference it queues behind.
        if op.idle_from_ns > ready_ns && !suspend.read_priority {
            return None;
        }
        let ready_ns = ready_ns.max(op.idle_from_ns);
        // Something the die does that is not tracked here (a copyback, a read) comes last.
        if self.die_free_at_ns(die) != last_end_ns {
            return None;
        }
        if let Some(sensed_ns) = self.join_suspension(ready_ns, die, plane, read_ns, &op) {
            return Some(sensed_ns);
        }
        if op.suspends >= suspend.per_op_max {
            if !queued {
                return None;
            }
            // No more suspensions: the read goes between this operation and the next.
            self.suspendable[die as usize].pop_front();
            self.delay_die_ops(die, read_ns, read_ns);
            return Some(op.end_ns + read_ns);
        }
        // (sensed, how much later the operation ends, how much later it starts)
        if ready_ns < op.start_ns {
            // The operation has not started: the read goes first (counted
            // against the operation's limit, so reads cannot hold it off for
            // ever), and the next read that finds it waiting queues behind.
            let sensed_ns = ready_ns + read_ns;
            let delay_ns = sensed_ns.saturating_sub(op.start_ns);
            self.delay_die_ops(die, delay_ns, delay_ns);
            let front = self.suspendable[die as usize].front_mut().expect("the waiting operation is tracked");
            front.idle_from_ns = front.idle_from_ns.max(sensed_ns);
            front.suspends += 1;
            self.suspensions += 1;
            return Some(sensed_ns);
        }
        let (sensed_ns, delay_ns, start_delay_ns) = {
            // The operation works on to the end of its loop: that time is not
            // lost to it. Its loops go on from its latest resume, if any.
            let loops_from_ns = if op.reads_end_ns > 0 { op.reads_end_ns + suspend.resume_ns } else { op.start_ns };
            let step_ns = suspend.to_suspend_point_ns(loops_from_ns, ready_ns).min(op.end_ns - ready_ns);
            (ready_ns + step_ns + suspend.suspend_ns + read_ns, suspend.suspend_ns + read_ns + suspend.resume_ns, 0)
        };
        self.delay_die_ops(die, start_delay_ns, delay_ns);
        let front = self.suspendable[die as usize].front_mut().expect("the suspended operation is tracked");
        front.suspends += 1;
        front.suspended_ns = sensed_ns - read_ns;
        front.reads_end_ns = sensed_ns;
        front.plane_free_ns = [front.suspended_ns; BATCH_PLANES_MAX];
        front.plane_free_ns[plane as usize % BATCH_PLANES_MAX] = sensed_ns;
        self.suspensions += 1;
        debug_assert!(sensed_ns <= front.end_ns);
        Some(sensed_ns)
    }

    /// With `Suspend::batch_reads`, a read that reaches the die while it is
    /// suspended for reads (or about to be) is sensed in that suspension, on
    /// its plane beside the others, if it can start within one loop
    /// (`step_ns`) of the suspension's start: the firmware drains the die's
    /// read queue for at most that long before it resumes. The operation
    /// ends later by what the suspension grows.
    fn join_suspension(
        &mut self,
        ready_ns: Nanos,
        die: u32,
        plane: u32,
        read_ns: Nanos,
        op: &Suspendable,
    ) -> Option<Nanos> {
        let suspend = self.timing.suspend;
        if !suspend.batch_reads || op.suspends == 0 || ready_ns < op.start_ns || ready_ns > op.reads_end_ns {
            return None;
        }
        let slot = plane as usize % BATCH_PLANES_MAX;
        let start_ns = ready_ns.max(op.plane_free_ns[slot]).max(op.suspended_ns);
        if start_ns >= op.suspended_ns + suspend.step_ns.max(read_ns) {
            return None;
        }
        let sensed_ns = start_ns + read_ns;
        self.delay_die_ops(die, 0, sensed_ns.saturating_sub(op.reads_end_ns));
        let front = self.suspendable[die as usize].front_mut().expect("the suspended operation is tracked");
        front.reads_end_ns = front.reads_end_ns.max(sensed_ns);
        front.plane_free_ns[slot] = sensed_ns;
        debug_assert!(sensed_ns <= front.end_ns);
        Some(sensed_ns)
    }

    /// Moves the die's tracked operations, and its planes' reservations, later
    /// by `delay_ns` (the first operation's start by `start_delay_ns` only:
    /// it may already be running).
    fn delay_die_ops(&mut self, die: u32, start_delay_ns: Nanos, delay_ns: Nanos) {
        if delay_ns == 0 {
            return;
        }
        let (free_at_ns, planes) = (self.die_free_at_ns(die), self.die_planes(die));
        for plane in &mut self.planes[planes] {
            plane.occupy_until(free_at_ns, free_at_ns + delay_ns);
        }
        self.note_busy(free_at_ns, free_at_ns + delay_ns, 1.0);
        for (i, op) in self.suspendable[die as usize].iter_mut().enumerate() {
            op.start_ns += if i == 0 { start_delay_ns } else { delay_ns };
            op.end_ns += delay_ns;
        }
        debug_assert_eq!(self.suspendable[die as usize].back().map(|op| op.end_ns), Some(free_at_ns + delay_ns));
    }

    /// Reads that suspended a program or erase so far.
    pub fn suspensions(&self) -> u64 {
        self.suspensions
    }

    /// Programs `oneshot_pages` pages starting at `first_page` on every plane of
    /// block `addr`: the data crosses the channel, then all planes program together.
    pub fn program(&mut self, ready_ns: Nanos, addr: BlockAddr, first_page: u32) -> Result<ProgramDone, FlashError> {
        debug_assert!(addr.die < self.geometry.dies_total() && addr.block < self.geometry.blocks_per_plane);
        self.check_and_advance_program(addr, first_page)?;
        self.clear_chains(addr, first_page..first_page + self.geometry.oneshot_pages);
        let pages = self.geometry.planes_per_die * self.geometry.oneshot_pages;
        let page_bytes = self.geometry.page_bytes;
        let channel = self.geometry.channel_of_die(addr.die) as usize;
        let reads_first = self.timing.suspend.read_priority;
        let transfer_end_ns =
            self.channels[channel].reserve_program(ready_ns, self.page_transfer_ns * Nanos::from(pages), reads_first);
        let idle_from_ns = self.die_free_at_ns(addr.die);
        let program_ns = self.timing.program_ns_of(addr.die, addr.block, first_page);
        let done_ns = self.reserve_die(addr.die, transfer_end_ns, program_ns);
        self.note_suspendable(addr.die, idle_from_ns, done_ns, program_ns);
        self.counters.programs += 1;
        self.counters.pages_programmed += u64::from(pages);
        self.counters.channel_bytes += u64::from(pages) * u64::from(page_bytes);
        // The data crosses the channel first, then the die programs it.
        debug_assert!(transfer_end_ns >= ready_ns && done_ns >= transfer_end_ns + program_ns);
        Ok(ProgramDone { transfer_end_ns, done_ns })
    }

    /// Copies one program unit inside die `die` (copyback): every plane reads
    /// the `oneshot_pages` pages from `src_first_page` of `src_block` into its
    /// page register, then all planes program them at `dst_first_page` of
    /// `dst_block`. Nothing crosses the channel, so this costs the array read
    /// and the program only. Each copied page's copyback chain grows by one.
    /// Returns when the pages are in the page registers and when the program ends.
    pub fn copyback(
        &mut self,
        ready_ns: Nanos,
        die: u32,
        src_block: u32,
        src_first_page: u32,
        dst: BlockAddr,
        dst_first_page: u32,
    ) -> Result<CopybackDone, FlashError> {
        assert!(dst.die == die, "copyback stays inside one die");
        let oneshot = self.geometry.oneshot_pages;
        for plane in 0..self.geometry.planes_per_die {
            let written = self.blocks[self.block_index(die, plane, src_block)].next_page;
            if src_first_page + oneshot > written {
                return Err(FlashError::CopybackUnwritten { die, block: src_block, page: src_first_page });
            }
        }
        let chains: Vec<u32> = (0..self.geometry.planes_per_die)
            .flat_map(|plane| (0..oneshot).map(move |i| (plane, i)))
            .map(|(plane, i)| self.copyback_chain(die, plane, src_block, src_first_page + i))
            .collect();
        self.check_and_advance_program(dst, dst_first_page)?;
        let sensed_ns = self.reserve_die(die, ready_ns, self.timing.read_ns * Nanos::from(oneshot));
        let program_ns = self.timing.program_ns_of(die, dst.block, dst_first_page);
        let done_ns = self.reserve_die(die, sensed_ns, program_ns);
        let mut chain = chains.into_iter();
        for plane in 0..self.geometry.planes_per_die {
            for i in 0..oneshot {
                let next = chain.next().expect("one chain per copied page") + 1;
                self.copyback_chains.insert((die, plane, dst.block, dst_first_page + i), next);
            }
        }
        let pages = self.geometry.planes_per_die * oneshot;
        self.counters.page_reads += u64::from(pages);
        self.counters.programs += 1;
        self.counters.pages_programmed += u64::from(pages);
        self.counters.copybacks += 1;
        Ok(CopybackDone { sensed_ns, done_ns })
    }

    /// Copybacks the data of a page has been through since it last crossed
    /// the controller.
    pub fn copyback_chain(&self, die: u32, plane: u32, block: u32, page: u32) -> u32 {
        self.copyback_chains.get(&(die, plane, block, page)).copied().unwrap_or(0)
    }

    /// Drops the chains of `pages` of block `addr` on every plane. Only the
    /// pages that have a chain are visited: visiting every page of the range
    /// made an erase cost `pages_per_block` × planes steps (12.6 s for an
    /// erase with 2^32 pages per block).
    fn clear_chains(&mut self, addr: BlockAddr, pages: std::ops::Range<u32>) {
        if self.copyback_chains.is_empty() || pages.is_empty() {
            return;
        }
        for plane in 0..self.geometry.planes_per_die {
            let (first, end) = ((addr.die, plane, addr.block, pages.start), (addr.die, plane, addr.block, pages.end));
            let chained: Vec<_> = self.copyback_chains.range(first..end).map(|(&key, _)| key).collect();
            for key in chained {
                self.copyback_chains.remove(&key);
            }
        }
    }

    /// Erases block `addr` on every plane of its die.
    pub fn erase(&mut self, ready_ns: Nanos, addr: BlockAddr) -> Nanos {
        self.clear_chains(addr, 0..self.geometry.pages_per_block);
        for plane in 0..self.geometry.planes_per_die {
            let b = self.block_index(addr.die, plane, addr.block);
            self.blocks[b].erase_count += 1;
            self.blocks[b].next_page = 0;
        }
        self.counters.erases += 1;
        let idle_from_ns = self.die_free_at_ns(addr.die);
        let done_ns = self.reserve_die(addr.die, ready_ns, self.timing.erase_ns);
        self.note_suspendable(addr.die, idle_from_ns, done_ns, self.timing.erase_ns);
        done_ns
    }

    fn note_suspendable(&mut self, die: u32, idle_from_ns: Nanos, end_ns: Nanos, duration_ns: Nanos) {
        let start_ns = end_ns - duration_ns;
        debug_assert!(idle_from_ns <= start_ns);
        let ops = &mut self.suspendable[die as usize];
        if !self.timing.suspend.read_priority {
            ops.clear();
        } else if ops.len() >= DIE_OPS_TRACKED_MAX {
            ops.pop_front();
        }
        ops.push_back(Suspendable {
            idle_from_ns,
            start_ns,
            end_ns,
            suspends: 0,
            suspended_ns: 0,
            reads_end_ns: 0,
            plane_free_ns: [0; BATCH_PLANES_MAX],
        });
        debug_assert!(ops.len() <= DIE_OPS_TRACKED_MAX);
    }

    /// A multi-plane operation starts when every plane of the die is free.
    fn reserve_die(&mut self, die: u32, ready_ns: Nanos, duration_ns: Nanos) -> Nanos {
        let range = self.die_planes(die);
        let start_ns = self.planes[range.clone()].iter().map(Timeline::free_at_ns).fold(ready_ns, Nanos::max);
        for plane in &mut self.planes[range] {
            plane.occupy_until(start_ns, start_ns + duration_ns);
        }
        self.note_busy(start_ns, start_ns + duration_ns, 1.0);
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

    /// Time `channel` has spent transferring data.
    pub fn channel_busy_ns(&self, channel: u32) -> Nanos {
        self.channels[channel as usize].busy_ns()
    }

    /// Chip utilization per 100 ms of simulated time: (interval start, share
    /// of the dies' time they were busy, 0..=1). A die is busy while any of
    /// its planes reads, programs or erases. Empty unless the array keeps
    /// the series ([`FlashArray::keep_utilization`]).
    pub fn chip_utilization(&self) -> Vec<(Nanos, f64)> {
        let capacity_ns = (UTILIZATION_INTERVAL_NS * Nanos::from(self.geometry.dies_total())) as f64;
        let Some(series) = self.die_busy_series.as_ref() else { return Vec::new() };
        series.samples().map(|(t, busy_ns)| (t, busy_ns / capacity_ns)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Suspend;

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
        let t = Timing {
            read_ns: 50_000,
            program_ns: 1_000_000,
            erase_ns: 3_000_000,
            channel_bytes_per_s: 1_638_400_000,
            suspend: Suspend::OFF,
            program_spread_ns: 0,
            read_step_ns: 0,
            plane_interleave_bytes: 0,
            read_decode_bytes_per_s: 0,
            die_sense_ns: 0,
        };
        FlashArray::new(g, t)
    }

    fn suspending_array(per_op_max: u32) -> FlashArray {
        let mut f = array();
        f.timing.suspend = Suspend {
            suspend_ns: 20_000,
            resume_ns: 10_000,
            per_op_max,
            step_ns: 0,
            read_priority: false,
            batch_reads: false,
        };
        f
    }

    /// One die of four planes whose page rows are interleaved in 4 KiB slices.
    fn interleaved_array() -> FlashArray {
        let g = Geometry { channels: 1, planes_per_die: 4, ..*array().geometry() };
        let t = Timing { plane_interleave_bytes: 4096, ..array().timing().clone() };
        FlashArray::new(g, t)
    }

    fn chunk_read(page: u32, offset_bytes: u32, bytes: u32) -> ChunkRead {
        ChunkRead { die: 0, plane: 0, block: 1, page, offset_bytes, bytes }
    }

    #[test]
    fn an_interleaved_read_holds_the_planes_its_slices_are_on() {
        let mut f = interleaved_array();
        // Slices 0-1 (planes 0 and 1): sensed at 50 µs, 5 µs on the channel.
        assert_eq!(f.read_chunk(0, chunk_read(0, 0, 8192)), 55_000);
        // Slice 2 of another row: plane 2 is free, so it senses alongside.
        assert_eq!(f.read_chunk(0, chunk_read(1, 8192, 4096)), 57_500);
        // Slice 1 of a third row: plane 1 is taken by the first read.
        assert_eq!(f.read_chunk(0, chunk_read(2, 4096, 4096)), 102_500);
        // A whole chunk takes every plane: after the third read.
        assert_eq!(f.read_chunk(0, chunk_read(3, 0, 16384)), 160_000);
    }

    #[test]
    fn a_die_runs_the_serial_part_of_one_sense_at_a_time() {
        // Two dies on two channels, 4 planes each, 20 µs of every 50 µs sense serial on the die.
        let g = Geometry { planes_per_die: 4, ..*array().geometry() };
        let t = Timing { plane_interleave_bytes: 4096, die_sense_ns: 20_000, ..array().timing().clone() };
        let mut f = FlashArray::new(g, t);
        // Planes 0-1 in one multi-plane sense: one serial part, 0-20 µs.
        assert_eq!(f.read_chunk(0, chunk_read(0, 0, 8192)), 55_000);
        // Plane 2 is free at once, the die's serial part at 20 µs: sensed at 70.
        assert_eq!(f.read_chunk(0, chunk_read(1, 8192, 4096)), 72_500);
        // Plane 3 waits for the die again: 40-90 µs.
        assert_eq!(f.read_chunk(0, chunk_read(2, 12288, 4096)), 92_500);
        // The other die senses at once.
        assert_eq!(f.read_chunk(0, ChunkRead { die: 1, ..chunk_read(0, 0, 4096) }), 52_500);
        // A read ready later takes the die's first idle stretch: plane 0 is free at 50 µs,
        // the die from 60 µs on (its serial part was busy 0-60).
        assert_eq!(f.read_chunk(45_000, chunk_read(3, 0, 4096)), 112_500);
    }

    #[test]
    fn read_data_passes_the_decoder_one_read_after_another_in_the_order_it_arrives() {
        // 16 KiB pages cross a channel in 10 µs and the decoder in 4 µs.
        let t = Timing { read_decode_bytes_per_s: 4_096_000_000, ..array().timing().clone() };
        let mut f = FlashArray::new(array().geometry().clone(), t);
        // Dies 0 and 1 (channels 0 and 1) sense together: both pages reach
        // the controller after the channels, one decoded after the other.
        assert_eq!(f.read(0, 0, 0, 16384), 64_000);
        assert_eq!(f.read(0, 1, 0, 16384), 68_000);
        // Plane 0 of die 0 again, sensed after its first read: its data comes
        // later, yet a page reserved after it whose data is in first is decoded first.
        assert_eq!(f.read(0, 0, 0, 16384), 114_000);
        assert_eq!(f.read(20_000, 1, 1, 16384), 84_000);
        // Without a decoder limit the channel ends the read.
        assert_eq!(array().read(0, 0, 0, 16384), 60_000);
    }

    #[test]
    fn an_interleaved_row_stays_in_the_page_registers_until_its_planes_sense_another() {
        let mut f = interleaved_array();
        assert_eq!(f.read_chunk(0, chunk_read(0, 0, 16384)), 60_000);
        // The rest of the row needs no second sense, only the channel.
        assert_eq!(f.read_chunk(100_000, chunk_read(0, 4096, 8192)), 105_000);
        // Plane 0 senses another row; reading the first one there again senses it again.
        assert_eq!(f.read_chunk(100_000, chunk_read(1, 0, 4096)), 152_500);
        assert_eq!(f.read_chunk(200_000, chunk_read(0, 0, 4096)), 252_500);
        assert_eq!(f.read_chunk(300_000, chunk_read(0, 4096, 4096)), 302_500, "plane 1 still holds row 0");
    }

    #[test]
    fn a_read_suspends_a_program_instead_of_waiting_it_out() {
        let mut f = suspending_array(2);
        let program = f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        assert_eq!(program.done_ns, 1_060_000);
        // Sensed 20 µs (suspend) + 50 µs (tR) after arriving, then 10 µs on the channel.
        assert_eq!(f.read(500_000, 0, 0, 16384), 580_000);
        assert_eq!(f.suspensions(), 1);
        // The program finishes later by suspend, read and resume: 80 µs.
        assert_eq!(f.die_free_at_ns(0), 1_140_000);
    }

    #[test]
    fn a_suspend_waits_for_the_end_of_the_programs_loop() {
        let mut f = suspending_array(2);
        f.timing.suspend.step_ns = 100_000;
        let program = f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        // The program runs from 60 µs (after its transfer); 500 µs is 40 µs into its fifth loop.
        assert_eq!(program.done_ns, 1_060_000);
        assert_eq!(f.read(500_000, 0, 0, 16384), 500_000 + 60_000 + 20_000 + 50_000 + 10_000);
        // The loop's rest was the program's own work: it ends later by suspend, read and resume only.
        assert_eq!(f.die_free_at_ns(0), 1_140_000);
        // A read at a loop's end suspends at once.
        let mut g = suspending_array(2);
        g.timing.suspend.step_ns = 100_000;
        g.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        assert_eq!(g.read(560_000, 0, 0, 16384), 560_000 + 20_000 + 50_000 + 10_000);
    }

    /// Die 0 programming from 60 µs to 1.06 ms in loops of 100 µs.
    fn programming_in_loops(per_op_max: u32, batch_reads: bool) -> FlashArray {
        let mut f = suspending_array(per_op_max);
        f.timing.suspend.step_ns = 100_000;
        f.timing.suspend.batch_reads = batch_reads;
        f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        f
    }

    #[test]
    fn with_batched_reads_a_read_during_a_suspension_joins_it() {
        let mut f = programming_in_loops(1, true);
        // The first read suspends at the loop's end (560 µs) and is sensed at 630 µs.
        assert_eq!(f.read(500_000, 0, 0, 16384), 630_000 + 10_000);
        // The second arrives before that: it is sensed in the same suspension, on
        // its own plane beside the first (then waits for the channel), though the
        // program allows only one suspension, and costs the program nothing more.
        assert_eq!(f.read(520_000, 0, 1, 16384), 630_000 + 2 * 10_000);
        assert_eq!(f.die_free_at_ns(0), 1_060_000 + 80_000);
        // A third on the first read's plane is sensed after it; the program waits for it.
        assert_eq!(f.read(540_000, 0, 0, 16384), 680_000 + 10_000);
        assert_eq!(f.die_free_at_ns(0), 1_060_000 + 80_000 + 50_000);
        assert_eq!(f.suspensions(), 1);
        // One that comes after the die resumed needs a suspension of its own,
        // and the program allows no more: it waits for the program's end.
        assert_eq!(f.read(700_000, 0, 0, 16384), 1_190_000 + 50_000 + 10_000);
        // Without batching the second read would have waited for the program too.
        let mut g = programming_in_loops(1, false);
        g.read(500_000, 0, 0, 16384);
        assert_eq!(g.read(520_000, 0, 1, 16384), 1_140_000 + 50_000 + 10_000);
    }

    #[test]
    fn after_a_resume_the_loops_go_on_from_the_resume() {
        let mut f = programming_in_loops(3, false);
        // The first read suspends at the end of the loop it comes in (560 µs,
        // the loops counted from the program's start at 60 µs) and is sensed
        // at 630 µs; the program resumes 10 µs later.
        assert_eq!(f.read(500_000, 0, 0, 16384), 630_000 + 10_000);
        // The next read waits for a whole loop from the resume (640 µs), not
        // for 760 µs as if the program had never stopped.
        assert_eq!(f.read(700_000, 0, 0, 16384), 740_000 + 20_000 + 50_000 + 10_000);
        // One that comes while the program resumes (the suspension sensed at
        // 810 µs, resumed at 820 µs) waits for the first loop after it.
        assert_eq!(f.read(815_000, 0, 0, 16384), 920_000 + 20_000 + 50_000 + 10_000);
        assert_eq!(f.suspensions(), 3);
    }

    #[test]
    fn a_batched_suspension_serves_reads_for_one_loop_at_most() {
        let mut f = programming_in_loops(2, true);
        // Reads on one plane, each arriving while the one before is sensed: the
        // suspension (sensing from 580 µs) takes those that start before 680 µs.
        let mut t = 500_000;
        for sensed_ns in [630_000, 680_000] {
            assert_eq!(f.read(t, 0, 0, 16384), sensed_ns + 10_000);
            t = sensed_ns - 1_000;
        }
        // The next would start at 680 µs: the die resumes, and it asks for a second suspension.
        assert!(f.read(t, 0, 0, 16384) > 680_000 + 50_000 + 10_000);
        assert_eq!(f.suspensions(), 2);
    }

    #[test]
    fn a_read_goes_before_a_program_whose_data_is_still_crossing() {
        let mut f = suspending_array(2);
        // The program's 60 µs transfer runs until 60 µs; the read comes at 30 µs.
        f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        assert_eq!(f.read(30_000, 0, 0, 16384), 30_000 + 50_000 + 10_000);
        // The program starts when the read is sensed: 20 µs later than planned.
        assert_eq!(f.die_free_at_ns(0), 1_080_000);
        assert_eq!(f.suspensions(), 1);
    }

    #[test]
    fn an_operation_allows_a_limited_number_of_suspensions() {
        let mut f = suspending_array(2);
        f.erase(0, BlockAddr { die: 0, block: 2 });
        let mut t = 100_000;
        for _ in 0..2 {
            t = f.read(t, 0, 1, 16384);
        }
        assert_eq!(f.suspensions(), 2);
        let erase_end_ns = f.die_free_at_ns(0);
        assert_eq!(erase_end_ns, 3_000_000 + 2 * 80_000);
        // The third read waits for the erase to finish.
        let sensed_ns = f.read(t, 0, 1, 16384) - 10_000;
        assert_eq!(sensed_ns, erase_end_ns + 50_000);
    }

    #[test]
    fn with_read_priority_a_read_goes_ahead_of_programs_queued_on_its_die() {
        let (mut fifo, mut prio) = (suspending_array(2), suspending_array(2));
        prio.timing.suspend.read_priority = true;
        for f in [&mut fifo, &mut prio] {
            // Two programs back to back on die 0: 0.06-1.06 ms and 1.06-2.06 ms.
            f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
            assert_eq!(f.program(0, BlockAddr { die: 0, block: 2 }, 0).unwrap().done_ns, 2_060_000);
        }
        // In order, the read waits out both programs.
        assert_eq!(fifo.read(500_000, 0, 0, 16384), 2_060_000 + 50_000 + 10_000);
        // Preferred, it suspends the running one; both move later by suspend, read and resume.
        assert_eq!(prio.read(500_000, 0, 0, 16384), 500_000 + 20_000 + 50_000 + 10_000);
        assert_eq!(prio.die_free_at_ns(0), 2_060_000 + 80_000);
        assert_eq!(prio.suspensions(), 1);
    }

    #[test]
    fn a_read_behind_other_reads_goes_before_the_program_queued_after_them() {
        let (mut fifo, mut prio) = (suspending_array(2), suspending_array(2));
        prio.timing.suspend.read_priority = true;
        for f in [&mut fifo, &mut prio] {
            // A long read holds die 0 (plane 0) until 100 µs and the channel
            // to 110 µs; a program is queued behind it, its data crossing
            // next (to 170 µs): it runs 0.17-1.17 ms.
            f.timing.read_ns = 100_000;
            assert_eq!(f.read(0, 0, 0, 16384), 110_000);
            f.timing.read_ns = 50_000;
            assert_eq!(f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap().done_ns, 1_170_000);
        }
        // A read on plane 1 comes at 30 µs, while the die still reads.
        // In order it waits out the program.
        assert_eq!(fifo.read(30_000, 0, 1, 16384), 1_170_000 + 50_000 + 10_000);
        // Preferred, it is sensed once the die is free (100-150 µs), before the
        // program starts, and crosses the channel after the program's data.
        assert_eq!(prio.read(30_000, 0, 1, 16384), 170_000 + 10_000);
        assert_eq!(prio.die_free_at_ns(0), 1_170_000);
        // The next read that finds the program waiting queues behind that one
        // (sensed 150-200 µs) and holds the program's start back by 30 µs.
        assert_eq!(prio.read(40_000, 0, 1, 16384), 200_000 + 10_000);
        assert_eq!(prio.die_free_at_ns(0), 1_200_000);
    }

    /// An array with read priority, `per_op_max` suspensions per operation and
    /// two programs queued on die 0: 0.06-1.06 ms and 1.06-2.06 ms.
    fn two_programs_with_read_priority(per_op_max: u32) -> FlashArray {
        let mut f = suspending_array(per_op_max);
        f.timing.suspend.read_priority = true;
        f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        assert_eq!(f.program(0, BlockAddr { die: 0, block: 2 }, 0).unwrap().done_ns, 2_060_000);
        f
    }

    #[test]
    fn with_read_priority_a_read_past_the_suspend_limit_goes_between_operations() {
        let mut f = two_programs_with_read_priority(1);
        f.read(200_000, 0, 0, 16384);
        // The first program (now ending at 1.14 ms) allows no second suspension:
        // the read is sensed right after it, and only the second program waits for it.
        assert_eq!(f.read(300_000, 0, 0, 16384), 1_140_000 + 50_000 + 10_000);
        assert_eq!(f.die_free_at_ns(0), 2_060_000 + 80_000 + 50_000);
        assert_eq!(f.suspensions(), 1);
        // Once the queue has drained, reads find the die idle again.
        assert_eq!(f.read(3_000_000, 0, 0, 16384), 3_000_000 + 50_000 + 10_000);
    }

    #[test]
    fn with_read_priority_a_read_before_a_spent_operation_starts_goes_after_it() {
        let mut f = two_programs_with_read_priority(1);
        // The first read comes while the first program's data crosses (until 60 µs) and uses its one
        // suspension: sensed at 60 µs, it then waits for the channel behind the second program's data (120 µs).
        assert_eq!(f.read(10_000, 0, 0, 16384), 120_000 + 10_000);
        // The second comes in that window too: it is sensed after the first program, not after the queue.
        assert_eq!(f.read(20_000, 0, 0, 16384), 1_060_000 + 50_000 + 10_000);
        assert_eq!(f.die_free_at_ns(0), 2_060_000 + 50_000);
    }

    #[test]
    fn without_suspend_a_read_waits_for_the_program() {
        let mut f = array();
        f.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap();
        assert_eq!(f.read(500_000, 0, 0, 16384), 1_060_000 + 50_000 + 10_000);
        assert_eq!(f.suspensions(), 0);
    }

    #[test]
    fn shared_time_carries_one_arrays_work_to_another() {
        let (mut first, mut second) = (array(), array());
        let mut time = first.shared_time();
        first.swap_shared_time(&mut time);
        let done = first.program(0, BlockAddr { die: 0, block: 1 }, 0).unwrap().done_ns;
        first.swap_shared_time(&mut time);
        second.swap_shared_time(&mut time);
        // The second array's blocks are its own, but die 0 is busy with the first's program.
        assert_eq!(second.pages_written(0, 0, 1), 0);
        assert_eq!(second.read(0, 0, 0, 4096), done + 50_000 + 2_500);
        second.swap_shared_time(&mut time);
        assert_eq!(second.die_free_at_ns(0), 0, "the time went back to the shared state");
        second.copy_timelines_from(&time);
        assert_eq!(second.die_free_at_ns(0), done + 50_000);
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
    fn with_read_priority_a_read_takes_the_channel_before_a_program_whose_data_crosses_later() {
        // Two dies on one channel.
        let g = Geometry { channels: 1, chips_per_channel: 2, ..*array().geometry() };
        let mut t = array().timing().clone();
        t.suspend.read_priority = true;
        // Without read priority the channel is one queue: the read waits for the program's data.
        let mut fifo = FlashArray::new(g.clone(), array().timing().clone());
        let p = fifo.program(10_000_000, BlockAddr { die: 0, block: 0 }, 0).unwrap();
        assert!(fifo.read(0, 1, 0, 4096) > p.transfer_end_ns);
        let mut f = FlashArray::new(g, t);
        let xfer_ns = f.read_channel.transfer_ns(4096);
        // Die 0's program is handed over for 10 ms from now: its data crosses then.
        let p = f.program(10_000_000, BlockAddr { die: 0, block: 0 }, 0).unwrap();
        assert!(p.transfer_end_ns > 10_000_000);
        // A read on die 1 now is sensed and crosses at once, in the gap before it.
        assert_eq!(f.read(0, 1, 0, 4096), 50_000 + xfer_ns);
        // Reads keep their order: one asked for later, sensed earlier, crosses after.
        let first = f.read(100_000, 1, 0, 4096);
        let second = f.read(0, 1, 1, 4096);
        assert_eq!(first, 150_000 + xfer_ns);
        assert_eq!(second, first + xfer_ns, "a later read crosses after an earlier one");
        // Programs keep theirs: one ready now crosses after the one handed over before it.
        let q = f.program(0, BlockAddr { die: 1, block: 1 }, 0).unwrap();
        assert!(q.transfer_end_ns > p.transfer_end_ns, "programs cross in the order they were handed over");
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

    /// The ZNS+ emulated SSD of seed 002 (Table 2): one plane, page programs.
    fn table2(read_us: u64, program_us: u64, channel_bytes_per_s: u64) -> FlashArray {
        let g = Geometry {
            channels: 1,
            chips_per_channel: 1,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 4,
            pages_per_block: 8,
            page_bytes: 16384,
            oneshot_pages: 1,
        };
        let t = Timing {
            read_ns: read_us * 1000,
            program_ns: program_us * 1000,
            erase_ns: 1_000_000,
            channel_bytes_per_s,
            suspend: Suspend::OFF,
            program_spread_ns: 0,
            read_step_ns: 0,
            plane_interleave_bytes: 0,
            read_decode_bytes_per_s: 0,
            die_sense_ns: 0,
        };
        FlashArray::new(g, t)
    }

    /// Copyback = read + program; a copy through the controller adds two
    /// channel transfers. With Table 2's latencies and DMA times the ratio
    /// is the paper's normalized copyback latency.
    #[test]
    fn copyback_skips_the_channel_and_matches_table_2() {
        for (read_us, program_us, bw, paper) in
            [(60, 700, 682_666_667, 0.94), (35, 390, 682_666_667, 0.90), (3, 100, 4_818_823_530, 0.94)]
        {
            let mut f = table2(read_us, program_us, bw);
            let src = BlockAddr { die: 0, block: 0 };
            let t0 = f.program(0, src, 0).unwrap().done_ns;
            let copyback_ns = f.copyback(t0, 0, 0, 0, BlockAddr { die: 0, block: 1 }, 0).unwrap().done_ns - t0;
            let channel_bytes = f.counters().channel_bytes;
            let read_ns = f.read(t0 + copyback_ns, 0, 0, 16384) - (t0 + copyback_ns);
            let via_controller_ns =
                f.program(t0 + copyback_ns + read_ns, BlockAddr { die: 0, block: 2 }, 0).unwrap().done_ns
                    - (t0 + copyback_ns);
            assert_eq!(copyback_ns, (read_us + program_us) * 1000);
            assert_eq!(channel_bytes, 16384, "only the first program crossed the channel");
            let ratio = copyback_ns as f64 / via_controller_ns as f64;
            assert!((ratio - paper).abs() < 0.005, "{read_us}/{program_us}: ratio {ratio:.4}, paper {paper}");
            assert_eq!(f.counters().copybacks, 1);
        }
    }

    /// An erase visited every page of the block for copyback chains: with 3 × 2^30 pages per block one erase
    /// took seconds (issue: `--set flash.pages_per_block=4294967295`, 12.6 s for 7 commands). It visits only the
    /// chained pages now.
    #[test]
    fn an_erase_costs_the_chains_of_its_block_not_its_pages() {
        let mut f = table2(35, 390, 682_666_667);
        f.geometry.pages_per_block = 3 << 30;
        let (a, b) = (BlockAddr { die: 0, block: 0 }, BlockAddr { die: 0, block: 1 });
        f.program(0, a, 0).unwrap();
        f.copyback(0, 0, 0, 0, b, 0).unwrap();
        assert_eq!(f.copyback_chain(0, 0, 1, 0), 1);
        let started = std::time::Instant::now();
        f.erase(0, b);
        assert_eq!(f.copyback_chain(0, 0, 1, 0), 0, "the chain went with the erase");
        assert!(started.elapsed() < std::time::Duration::from_millis(500), "{:?}", started.elapsed());
    }

    #[test]
    fn copyback_chains_grow_and_reset_through_the_controller() {
        let mut f = table2(35, 390, 682_666_667);
        f.keep_utilization(true);
        let a = BlockAddr { die: 0, block: 0 };
        let b = BlockAddr { die: 0, block: 1 };
        assert!(matches!(f.copyback(0, 0, 0, 0, b, 0), Err(FlashError::CopybackUnwritten { .. })));
        f.program(0, a, 0).unwrap();
        f.copyback(0, 0, 0, 0, b, 0).unwrap();
        f.copyback(0, 0, 1, 0, b, 1).unwrap();
        assert_eq!((f.copyback_chain(0, 0, 1, 0), f.copyback_chain(0, 0, 1, 1)), (1, 2));
        assert!(matches!(f.copyback(0, 0, 0, 0, b, 3), Err(FlashError::OutOfOrderProgram { expected: 2, .. })));
        f.erase(0, b);
        assert_eq!(f.copyback_chain(0, 0, 1, 1), 0, "erase drops the chains of the block");
        f.program(0, b, 0).unwrap();
        assert_eq!(f.copyback_chain(0, 0, 1, 0), 0);
        // Utilization: the die was busy for every operation above.
        let busy: f64 = f.chip_utilization().iter().map(|(_, u)| u).sum();
        assert!(busy > 0.0 && busy <= 1.0, "{busy}");
        f.keep_utilization(false);
        f.program(0, a, 1).unwrap();
        assert!(f.chip_utilization().is_empty(), "a series not kept is not reported");
    }
}
