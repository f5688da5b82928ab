//! What every namespace of one drive shares, owned once: the firmware cores,
//! the PCIe link in both directions and the flash array (its dies, planes
//! and channels as timelines, and every block).
//!
//! A namespace's layers ([`crate::backend::Backend`]: zones, write buffers,
//! translation, background work) do not hold an `Ssd`; each command borrows
//! the drive's for as long as it runs. A single-namespace [`crate::Device`]
//! owns its `Ssd`; the namespaces of a shared drive ([`crate::namespaces`])
//! take theirs in turn, so a command of one queues behind the reads,
//! programs and erases the others reserved, with nothing copied between them.
//!
//! Each namespace owns a disjoint range of every plane's blocks, its
//! [`Partition`]; its layers number blocks from 0 and the partition places
//! them on the array.

use crate::config::DeviceConfig;
use crate::controller::housekeeping::Housekeeping;
use crate::controller::program_path::{Journal, ProgramPath};
use crate::tracking::Tracking;
use zonelab_flash::{BlockAddr, ChunkRead, FlashArray};
use zonelab_sim::{Bandwidth, Nanos, ServerPool, SlotTimeline, Timeline};

/// The shared hardware of one drive, in simulated time.
pub(crate) struct Ssd {
    /// Dies, planes, channels and blocks of the whole drive.
    flash: FlashArray,
    firmware: ServerPool,
    link_to_device: Timeline,
    link_to_host: SlotTimeline,
    /// The link's bandwidth (both directions).
    link: Bandwidth,
    /// The controller's program data path and mapping journal.
    program_path: ProgramPath,
    /// The latest submission to any namespace: commands enter the drive in
    /// arrival order, and one that comes with an earlier time enters at this.
    last_submit_ns: Nanos,
    /// What the firmware does while idle (`controller.housekeeping_*`).
    housekeeping: Option<Housekeeping>,
    /// One write's data pace (`controller.write_dma_bytes_per_s`), if bounded.
    write_dma: Option<WriteDma>,
}

/// The data of the write in progress, read from the host at one command's
/// pace from `start_ns` after the command reached the controller.
struct WriteDma {
    pace: Bandwidth,
    /// From the command's arrival until its data starts coming in.
    start_ns: Nanos,
    /// When the data taken so far is in at the pace. Piece by piece, so
    /// that pieces of one size (a chunk) reuse their transfer time.
    paced_ns: Nanos,
}

impl Ssd {
    /// The drive `config` describes (validated), idle, its flash erased,
    /// keeping what `tracking` asks for.
    pub(crate) fn new(config: &DeviceConfig, tracking: Tracking) -> Self {
        let mut flash = FlashArray::new(config.flash.clone(), config.flash_timing.clone());
        flash.keep_utilization(tracking.chip_utilization);
        Self {
            flash,
            firmware: ServerPool::new(config.controller.firmware_cores as usize),
            link_to_device: Timeline::new(),
            link_to_host: SlotTimeline::new(),
            link: Bandwidth::new(config.link.bytes_per_s()),
            program_path: ProgramPath::new(
                config.program_path_unit_ns(),
                Journal {
                    units: config.controller.journal_units,
                    ns: config.controller.journal_ns,
                    checkpoint_journals: config.controller.checkpoint_journals,
                    checkpoint_ns: config.controller.checkpoint_ns,
                },
            ),
            last_submit_ns: 0,
            housekeeping: Housekeeping::new(
                config.controller.housekeeping_ns,
                config.controller.housekeeping_period_ns,
                config.spread.on.then_some(config.spread.seed),
            ),
            write_dma: (config.controller.write_dma_bytes_per_s > 0).then(|| WriteDma {
                pace: Bandwidth::new(config.controller.write_dma_bytes_per_s),
                start_ns: config.controller.write_dma_start_ns,
                paced_ns: 0,
            }),
        }
    }

    /// The flash array (timelines, block states, counters).
    #[inline]
    pub(crate) fn flash(&self) -> &FlashArray {
        &self.flash
    }

    /// The flash array, to reserve operations on it: the callers address
    /// blocks through their namespace's [`Partition`].
    #[inline]
    pub(crate) fn flash_mut(&mut self) -> &mut FlashArray {
        &mut self.flash
    }

    /// Reserves a firmware core for `work_ns` from `ready_ns` on; returns
    /// when the work is done.
    #[inline]
    pub(crate) fn reserve_firmware(&mut self, ready_ns: Nanos, work_ns: Nanos) -> Nanos {
        self.firmware.reserve(ready_ns, work_ns)
    }

    /// A command that finds the drive idle long enough (the backend judges
    /// that) reaches the firmware at `ready_ns`: unless a core is still busy,
    /// a housekeeping task in progress holds one to its end
    /// (`controller.housekeeping_*`).
    #[inline(never)]
    pub(crate) fn housekeeping_before(&mut self, ready_ns: Nanos) {
        let Some(h) = self.housekeeping.as_mut() else { return };
        if ready_ns < self.firmware.all_free_at_ns() {
            return;
        }
        let wait_ns = h.wait_ns();
        if wait_ns > 0 {
            self.firmware.reserve(ready_ns, wait_ns);
        }
    }

    /// A program unit of buffered data, ready from `ready_ns` on, crosses
    /// the program data path; returns when its data starts out to the
    /// die's channel.
    #[inline]
    pub(crate) fn hand_program_over(&mut self, ready_ns: Nanos) -> Nanos {
        self.program_path.hand_over(ready_ns)
    }

    /// Moves `bytes` from the host over the link, from `ready_ns` on;
    /// returns when they are in.
    #[inline]
    pub(crate) fn link_reserve_to_device(&mut self, ready_ns: Nanos, bytes: u64) -> Nanos {
        let ns = self.link.transfer_ns(bytes);
        self.link_to_device.reserve(ready_ns, ns)
    }

    /// A host write reached the controller at `ready_ns`: its data starts
    /// coming in `controller.write_dma_start_ns` later, and not before
    /// `not_before_ns` (an append's firmware end) ([`Ssd::take_write_data`]).
    #[inline]
    pub(crate) fn start_write_data(&mut self, ready_ns: Nanos, not_before_ns: Nanos) {
        if let Some(dma) = self.write_dma.as_mut() {
            dma.paced_ns = (ready_ns + dma.start_ns).max(not_before_ns);
        }
    }

    /// The next `bytes` of the write in progress, with room for them from
    /// `ready_ns` on, cross the link; returns when they are in: no sooner
    /// than the write's data so far takes at one command's pace
    /// (`controller.write_dma_bytes_per_s`), counted from its start, as the
    /// controller reads it while the firmware works.
    #[inline]
    pub(crate) fn take_write_data(&mut self, ready_ns: Nanos, bytes: u64) -> Nanos {
        let in_ns = self.link_reserve_to_device(ready_ns, bytes);
        let Some(dma) = self.write_dma.as_mut() else { return in_ns };
        dma.paced_ns += dma.pace.transfer_ns(bytes);
        in_ns.max(dma.paced_ns)
    }

    /// Moves `bytes` to the host over the link, from `ready_ns` on (into
    /// the earliest gap that holds them); returns when they are out.
    #[inline]
    pub(crate) fn link_reserve_to_host(&mut self, ready_ns: Nanos, bytes: u64) -> Nanos {
        let ns = self.link.transfer_ns(bytes);
        self.link_to_host.reserve(ready_ns, ns)
    }

    /// A command for one of the drive's namespaces arrives at `submit_ns`:
    /// the time it enters the drive, not before an earlier arrival at
    /// another namespace (commands enter in arrival order).
    pub(crate) fn enter_in_order(&mut self, submit_ns: Nanos) -> Nanos {
        let submit_ns = submit_ns.max(self.last_submit_ns);
        self.last_submit_ns = submit_ns;
        submit_ns
    }

    /// Nothing from `now_ns` on reaches the link to the host before it: the
    /// link's spans that end by then can go.
    #[inline]
    pub(crate) fn forget_link_to_host_until(&mut self, now_ns: Nanos) {
        self.link_to_host.forget_until(now_ns);
        // Reads start no earlier than the command that makes them, or the management step they serve.
        self.flash.forget_decoded_until(now_ns);
    }
}

/// A namespace's blocks: `first_block..first_block + blocks` of every plane.
/// Its layers number them from 0; these place them on the drive's array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Partition {
    first_block: u32,
    blocks: u32,
}

impl Partition {
    /// Blocks `first_block..first_block + blocks` of every plane.
    pub(crate) fn new(first_block: u32, blocks: u32) -> Self {
        Self { first_block, blocks }
    }

    /// The first block of every plane it holds, and how many.
    pub(crate) fn range(self) -> (u32, u32) {
        (self.first_block, self.blocks)
    }

    /// The array's number of the namespace's block `block`.
    #[inline(always)]
    pub(crate) fn block(self, block: u32) -> u32 {
        debug_assert!(block < self.blocks, "block {block} of a partition of {} blocks", self.blocks);
        self.first_block + block
    }

    /// The array's address of the namespace's block `addr`.
    #[inline(always)]
    pub(crate) fn addr(self, addr: BlockAddr) -> BlockAddr {
        BlockAddr { die: addr.die, block: self.block(addr.block) }
    }

    /// A read of the namespace's chunk `read`, addressed on the array.
    #[inline(always)]
    pub(crate) fn read(self, read: ChunkRead) -> ChunkRead {
        ChunkRead { block: self.block(read.block), ..read }
    }
}
