//! The controller: firmware cores, the PCIe link in both directions and each
//! zone's write buffer with its progress towards flash (`ZoneIo`).
//!
//! Every command reserves a firmware core; host data crosses the link into a
//! zone's buffer, which is released as its program units finish. Writes also
//! take the write path's FTL core, which zone management's firmware work
//! shares (readers never wait for it).

pub mod buffer;
pub mod read_ahead;
pub mod write_cache;

use buffer::{DevicePool, ZoneBuffer};
use read_ahead::ReadAhead;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};
use write_cache::WriteCache;
use zonelab_sim::{transfer_ns, Nanos, ServerPool, SlotTimeline, Timeline};

/// Firmware, link and write buffers of one device.
#[derive(Debug, Clone)]
pub(crate) struct Controller {
    pub(crate) firmware: ServerPool,
    /// The write path's FTL core: mapping updates of writes, unit commits and
    /// management firmware work; reserved through `reserve_ftl`.
    pub(crate) ftl: ServerPool,
    pub(crate) link_to_device: Timeline,
    pub(crate) link_to_host: SlotTimeline,
    pub(crate) link_bytes_per_s: u64,
    pub(crate) zone_io: Vec<ZoneIo>,
    /// Memory the zones' buffers share (`write_buffer.device_buffer_bytes`).
    pub(crate) pool: DevicePool,
    pub(crate) read_ahead: ReadAhead,
    /// Durability of each zone's data (Flush, FUA, power cut).
    pub(crate) write_cache: WriteCache,
    /// Ends of the programs whose unit commits (`controller.unit_commit_ns`)
    /// are not on the FTL core yet, earliest first.
    unit_commits: BinaryHeap<Reverse<Nanos>>,
}

impl Controller {
    pub(crate) fn new(
        firmware_cores: u32,
        link_bytes_per_s: u64,
        zones: u32,
        pool_bytes: u64,
        read_ahead: ReadAhead,
    ) -> Self {
        Self {
            firmware: ServerPool::new(firmware_cores as usize),
            ftl: ServerPool::new(1),
            link_to_device: Timeline::new(),
            link_to_host: SlotTimeline::new(),
            link_bytes_per_s,
            zone_io: vec![ZoneIo::default(); zones as usize],
            pool: DevicePool::new(pool_bytes, zones),
            read_ahead,
            write_cache: WriteCache::new(zones),
            unit_commits: BinaryHeap::new(),
        }
    }

    /// A program unit of host data ends at `done_ns`: its commit is due then.
    pub(crate) fn note_unit_commit(&mut self, done_ns: Nanos) {
        self.unit_commits.push(Reverse(done_ns));
    }

    /// Reserves `work_ns` of the FTL core from `ready_ns` on, after the unit
    /// commits (`commit_ns` each, from their program's end) that came due by
    /// then; returns when the work is done. Bound: one commit per program in
    /// flight.
    pub(crate) fn reserve_ftl(&mut self, ready_ns: Nanos, work_ns: Nanos, commit_ns: Nanos) -> Nanos {
        while let Some(&Reverse(done_ns)) = self.unit_commits.peek() {
            if done_ns > ready_ns {
                break;
            }
            self.unit_commits.pop();
            self.ftl.reserve(done_ns, commit_ns);
        }
        self.ftl.reserve(ready_ns, work_ns)
    }

    /// Host data crossing the PCIe link into the device; returns when it is in.
    pub(crate) fn link_reserve_to_device(&mut self, ready_ns: Nanos, bytes: u64) -> Nanos {
        let ns = transfer_ns(bytes, self.link_bytes_per_s);
        self.link_to_device.reserve(ready_ns, ns)
    }

    /// Data crossing the PCIe link to the host; returns when it is there.
    pub(crate) fn link_reserve_to_host(&mut self, ready_ns: Nanos, bytes: u64) -> Nanos {
        let ns = transfer_ns(bytes, self.link_bytes_per_s);
        self.link_to_host.reserve(ready_ns, ns)
    }
}

/// Flash-side progress of one zone since its last reset.
#[derive(Debug, Clone, Default)]
pub(crate) struct ZoneIo {
    pub(crate) buffer: ZoneBuffer,
    /// LBAs whose data has reached the controller (for a conventional zone,
    /// the head of its log).
    pub(crate) filled_lbas: u64,
    /// Program units issued to flash in the current lap of the zone's block group.
    pub(crate) flushed_units: u64,
    /// Units of earlier laps (a conventional zone's log wraps), so that the
    /// buffer's unit ids keep increasing.
    pub(crate) lap_units: u64,
    /// Units already programmed without the buffer (copyback, plugging ahead
    /// of the write pointer): the fill skips them.
    pub(crate) preprogrammed: BTreeSet<u64>,
    /// When the data taken in for each unit not yet programmed is all in the controller.
    pub(crate) unit_ready: BTreeMap<u64, Nanos>,
    /// Internal copies in flight: LBAs below `end` (zone offset) are readable
    /// from `ready_ns` on; ready times never decrease, so a read waits for the
    /// device's write pointer to pass its block.
    pub(crate) gate: VecDeque<(u64, Nanos)>,
}

impl ZoneIo {
    /// When the device's write pointer passes zone offset `offset`.
    pub(crate) fn gate_ns(&self, offset: u64) -> Nanos {
        self.gate.iter().find(|&&(end, _)| end > offset).map_or(0, |&(_, ready)| ready)
    }

    /// Copied data up to the fill point is readable from `ready_ns` on; drops
    /// what was readable by `now_ns`.
    pub(crate) fn push_gate(&mut self, ready_ns: Nanos, now_ns: Nanos) {
        let ready_ns = self.gate.back().map_or(ready_ns, |&(_, r)| r.max(ready_ns));
        while self.gate.front().is_some_and(|&(_, r)| r <= now_ns) {
            self.gate.pop_front();
        }
        if ready_ns <= now_ns {
            return;
        }
        match self.gate.back_mut() {
            Some(last) if last.1 == ready_ns => last.0 = self.filled_lbas,
            _ => self.gate.push_back((self.filled_lbas, ready_ns)),
        }
    }
}
