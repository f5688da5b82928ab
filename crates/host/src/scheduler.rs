//! The block layer between the host's threads and the device queue.
//!
//! `none` hands every request to the device at once. `mq-deadline` on a
//! zoned device holds a zone write lock: one write per sequential zone is at
//! the device, and the writes queued behind it wait; when the lock is
//! released, the queued writes that continue one another are merged into a
//! single request of at most `merge_bytes_max` (Linux's max_sectors_kb).
//! Reads, appends and zone management are not locked. `zinc` is
//! mq-deadline whose zone resets and finishes wait in a [`ZincGate`].

use crate::zinc::{Held, ZincConfig, ZincGate};
use std::collections::{HashMap, VecDeque};

/// The I/O scheduler of the block layer, as in `/sys/block/*/queue/scheduler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedulerKind {
    /// No scheduler: every request goes to the device at once, unordered.
    None,
    /// mq-deadline with zone write locking: one write per sequential zone at the
    /// device, the writes behind it merged when they continue one another.
    MqDeadline,
    /// mq-deadline whose zone resets and finishes wait in a [`ZincGate`].
    Zinc,
}

impl SchedulerKind {
    /// The name Linux gives the scheduler (`none`, `mq-deadline`), or `zinc`.
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::None => "none",
            SchedulerKind::MqDeadline => "mq-deadline",
            SchedulerKind::Zinc => "zinc",
        }
    }
}

/// What a request asks the device to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestOp {
    /// NVMe Read.
    Read,
    /// NVMe Write at an LBA (the write pointer, in a sequential zone).
    Write,
    /// Zone Append: the device picks the LBA, so no zone lock is needed.
    Append,
    /// Zone Management Send, Reset Zone.
    ZoneReset,
    /// Zone Management Send, Finish Zone.
    ZoneFinish,
}

/// One request from a thread; `tag` identifies it when it completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostRequest {
    /// The submitting thread's handle, returned on completion.
    pub tag: u64,
    /// The operation.
    pub op: RequestOp,
    /// Starting LBA (for zone management, the zone's start LBA).
    pub slba: u64,
    /// Number of logical blocks (1-based, unlike NVMe's 0-based NLB field).
    pub nlb: u32,
    /// The sequential zone a write goes to, for zone write locking; `None` for
    /// conventional space.
    pub locked_zone: Option<u32>,
}

/// A request leaving the block layer for the device; `id` is handed back to
/// `complete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dispatch {
    /// Slot of the request at the device; pass it to [`BlockLayer::complete`].
    pub id: u32,
    /// The operation.
    pub op: RequestOp,
    /// Starting LBA; for a merged write, the first request's.
    pub slba: u64,
    /// Number of logical blocks, merged requests summed.
    pub nlb: u32,
    /// Tag of the first request merged into it (the one whose LBA it starts at).
    pub first_tag: u64,
}

/// What /proc/diskstats would count: requests that reached the device and
/// requests merged into another one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedulerCounters {
    /// Reads dispatched to the device.
    pub read_ios: u64,
    /// Writes and appends dispatched to the device (after merging).
    pub write_ios: u64,
    /// Reads merged into another request: always 0, reads are not merged.
    pub read_merges: u64,
    /// Writes merged into a write queued behind a zone's lock.
    pub write_merges: u64,
}

impl std::ops::AddAssign for SchedulerCounters {
    fn add_assign(&mut self, other: Self) {
        self.read_ios += other.read_ios;
        self.write_ios += other.write_ios;
        self.read_merges += other.read_merges;
        self.write_merges += other.write_merges;
    }
}

#[derive(Debug, Default)]
struct Pending {
    op: Option<RequestOp>,
    slba: u64,
    nlb: u32,
    locked_zone: Option<u32>,
    first_tag: u64,
    /// Tags of the requests merged behind the first; empty (no heap) unless it merged.
    merged_tags: Vec<u64>,
}

/// The block layer of one device: its scheduler, the zone write locks, the
/// requests at the device and what they merged.
pub struct BlockLayer {
    kind: SchedulerKind,
    merge_lbas_max: u64,
    /// In flight at the device, by dispatch id; `op == None` marks a free slot.
    slots: Vec<Pending>,
    free_slots: Vec<u32>,
    /// Emptied tag buffers of completed merged dispatches, for the next merge:
    /// no more than the merged dispatches ever queued or in flight at once.
    spare_tags: Vec<Vec<u64>>,
    locked_zones: HashMap<u32, VecDeque<Pending>>,
    counters: SchedulerCounters,
    /// Zone management held back (`zinc` only).
    gate: Option<ZincGate<Pending>>,
    lba_bytes: u64,
    /// Requests passed through (`none`) and not completed yet.
    passed_inflight: u64,
}

/// Requests at the device at once; more means a thread ignored its iodepth.
const SLOTS_MAX: usize = 1 << 20;

impl BlockLayer {
    /// A block layer with default ZINC settings and 4096-byte LBAs; merged
    /// writes stay within `merge_lbas_max` LBAs.
    pub fn new(kind: SchedulerKind, merge_lbas_max: u64) -> Self {
        Self::with_zinc(kind, merge_lbas_max, ZincConfig::default(), 4096)
    }

    /// A block layer whose `zinc` scheduler uses `zinc`; writes of `lba_bytes` LBAs.
    pub fn with_zinc(kind: SchedulerKind, merge_lbas_max: u64, zinc: ZincConfig, lba_bytes: u64) -> Self {
        assert!(merge_lbas_max > 0 && lba_bytes > 0);
        BlockLayer {
            kind,
            merge_lbas_max,
            slots: Vec::new(),
            free_slots: Vec::new(),
            spare_tags: Vec::new(),
            locked_zones: HashMap::new(),
            counters: SchedulerCounters::default(),
            gate: (kind == SchedulerKind::Zinc).then(|| ZincGate::new(zinc)),
            lba_bytes,
            passed_inflight: 0,
        }
    }

    /// Zone management commands held back by `zinc`.
    pub fn held(&self) -> usize {
        self.gate.as_ref().map_or(0, ZincGate::held)
    }

    /// ZINC's epoch length, if this layer is `zinc`.
    pub fn epoch_ns(&self) -> Option<zonelab_sim::Nanos> {
        self.gate.as_ref().map(|g| g.config().epoch_ns)
    }

    /// ZINC's epoch timer fired: held commands may go to the device.
    pub fn epoch(&mut self, out: &mut Vec<Dispatch>) {
        let Some(gate) = self.gate.as_mut() else { return };
        let mut released = Vec::new();
        gate.epoch(&mut released);
        for pending in released {
            out.push(self.dispatch(pending));
        }
    }

    /// The scheduler this layer runs.
    pub fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// diskstats-style counts so far.
    pub fn counters(&self) -> SchedulerCounters {
        self.counters
    }

    /// Whether requests go to the device as they come and complete alone
    /// (`none`: no zone locks, merges or gate). Such a layer keeps no slot
    /// per request: [`BlockLayer::pass`] and [`BlockLayer::complete_passed`]
    /// take and complete its requests, and a dispatch's id is its tag.
    #[inline]
    pub fn passes_through(&self) -> bool {
        self.kind == SchedulerKind::None
    }

    /// Takes a request of a layer that [passes requests through](Self::passes_through):
    /// the dispatch that goes to the device now, whose id is the request's
    /// tag (below 2^32).
    #[inline]
    pub fn pass(&mut self, request: HostRequest) -> Dispatch {
        assert!(self.passes_through(), "{} holds requests", self.kind.name());
        let id = u32::try_from(request.tag).expect("a passed request's tag fits a dispatch id");
        self.count_dispatch(request.op);
        self.passed_inflight += 1;
        let (op, slba, nlb) = (request.op, request.slba, request.nlb);
        Dispatch { id, op, slba, nlb, first_tag: request.tag }
    }

    /// The device finished the passed dispatch `id`: its request's tag.
    #[inline]
    pub fn complete_passed(&mut self, id: u32) -> u64 {
        debug_assert!(self.passes_through());
        assert!(self.passed_inflight > 0, "completion of a request that is not at the device");
        self.passed_inflight -= 1;
        u64::from(id)
    }

    /// Takes a request; pushes onto `out` what goes to the device now.
    pub fn insert(&mut self, request: HostRequest, out: &mut Vec<Dispatch>) {
        if self.passes_through() {
            out.push(self.pass(request));
            return;
        }
        let locking = matches!(self.kind, SchedulerKind::MqDeadline | SchedulerKind::Zinc);
        let zone = if locking && request.op == RequestOp::Write { request.locked_zone } else { None };
        let pending = Pending {
            op: Some(request.op),
            slba: request.slba,
            nlb: request.nlb,
            locked_zone: zone,
            first_tag: request.tag,
            merged_tags: Vec::new(),
        };
        if let (Some(kind), Some(gate)) = (held_kind(request.op), self.gate.as_mut()) {
            if let Some(pending) = gate.hold(kind, pending) {
                out.push(self.dispatch(pending));
            }
            return;
        }
        let Some(zone) = zone else {
            out.push(self.dispatch(pending));
            return;
        };
        match self.locked_zones.get_mut(&zone) {
            None => {
                self.locked_zones.insert(zone, VecDeque::new());
                out.push(self.dispatch(pending));
            }
            Some(queue) => {
                if let Some(tail) = queue.back_mut() {
                    let contiguous = tail.slba + u64::from(tail.nlb) == request.slba;
                    if contiguous && u64::from(tail.nlb) + u64::from(request.nlb) <= self.merge_lbas_max {
                        tail.nlb += request.nlb;
                        if tail.merged_tags.capacity() == 0 {
                            tail.merged_tags = self.spare_tags.pop().unwrap_or_default();
                        }
                        tail.merged_tags.push(request.tag);
                        self.counters.write_merges += 1;
                        return;
                    }
                }
                queue.push_back(pending);
            }
        }
    }

    /// The device finished dispatch `id`: its tags go to `tags`, and a write
    /// waiting for the zone's lock may now go to the device.
    pub fn complete(&mut self, id: u32, tags: &mut Vec<u64>, out: &mut Vec<Dispatch>) {
        if self.passes_through() {
            tags.push(self.complete_passed(id));
            return;
        }
        let slot = &mut self.slots[id as usize];
        let op = slot.op.take().expect("completion of a request that is not at the device");
        let nlb = slot.nlb;
        tags.push(slot.first_tag);
        if slot.merged_tags.capacity() > 0 {
            let mut merged = std::mem::take(&mut slot.merged_tags);
            tags.extend_from_slice(&merged);
            merged.clear();
            self.spare_tags.push(merged);
        }
        let zone = slot.locked_zone;
        self.free_slots.push(id);
        if let Some(gate) = self.gate.as_mut() {
            let released = match (op, held_kind(op)) {
                (RequestOp::Write | RequestOp::Append, _) => {
                    gate.write_completed(u64::from(nlb) * self.lba_bytes);
                    None
                }
                (_, Some(kind)) => gate.management_completed(kind),
                _ => None,
            };
            if let Some(pending) = released {
                out.push(self.dispatch(pending));
            }
        }
        let Some(zone) = zone else { return };
        let queue = self.locked_zones.get_mut(&zone).expect("a locked zone has a queue");
        match queue.pop_front() {
            Some(next) => out.push(self.dispatch(next)),
            None => {
                self.locked_zones.remove(&zone);
            }
        }
    }

    /// Dispatch `id`, at the device now (of a layer that keeps slots: not
    /// one that [passes requests through](Self::passes_through)).
    pub fn at_device(&self, id: u32) -> Dispatch {
        assert!(!self.passes_through(), "a passed dispatch has no slot");
        let slot = &self.slots[id as usize];
        let op = slot.op.expect("the dispatch is at the device");
        Dispatch { id, op, slba: slot.slba, nlb: slot.nlb, first_tag: slot.first_tag }
    }

    /// Counts a request of `op` that goes to the device.
    #[inline]
    fn count_dispatch(&mut self, op: RequestOp) {
        match op {
            RequestOp::Read => self.counters.read_ios += 1,
            RequestOp::Write | RequestOp::Append => self.counters.write_ios += 1,
            RequestOp::ZoneReset | RequestOp::ZoneFinish => {}
        }
    }

    #[inline]
    fn dispatch(&mut self, pending: Pending) -> Dispatch {
        let op = pending.op.expect("a pending request has an operation");
        self.count_dispatch(op);
        if let (RequestOp::Write | RequestOp::Append, Some(gate)) = (op, self.gate.as_mut()) {
            gate.write_dispatched(u64::from(pending.nlb) * self.lba_bytes);
        }
        let dispatch = Dispatch { id: 0, op, slba: pending.slba, nlb: pending.nlb, first_tag: pending.first_tag };
        let id = match self.free_slots.pop() {
            Some(id) => {
                // A free slot's tag buffer went back to `spare_tags`: nothing to drop.
                self.slots[id as usize] = pending;
                id
            }
            None => {
                assert!(self.slots.len() < SLOTS_MAX, "more than {SLOTS_MAX} requests at the device");
                self.slots.push(pending);
                (self.slots.len() - 1) as u32
            }
        };
        Dispatch { id, ..dispatch }
    }
}

/// The queue ZINC holds `op` in, if it holds it.
fn held_kind(op: RequestOp) -> Option<Held> {
    match op {
        RequestOp::ZoneReset => Some(Held::Reset),
        RequestOp::ZoneFinish => Some(Held::Finish),
        RequestOp::Read | RequestOp::Write | RequestOp::Append => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(tag: u64, slba: u64, nlb: u32) -> HostRequest {
        HostRequest { tag, op: RequestOp::Write, slba, nlb, locked_zone: Some(0) }
    }

    #[test]
    fn mq_deadline_locks_a_zone_and_merges_queued_writes() {
        let mut layer = BlockLayer::new(SchedulerKind::MqDeadline, 32);
        let mut out = Vec::new();
        for i in 0..5 {
            layer.insert(write(i, i * 4, 4), &mut out);
        }
        assert_eq!(out.len(), 1, "one write per zone at the device");
        assert_eq!((out[0].slba, out[0].nlb), (0, 4));
        let first = out.pop().unwrap();
        let mut tags = Vec::new();
        layer.complete(first.id, &mut tags, &mut out);
        assert_eq!(tags, vec![0]);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].slba, out[0].nlb), (4, 16), "the four queued writes leave as one");
        assert_eq!(layer.counters().write_merges, 3);
        let merged = out.pop().unwrap();
        tags.clear();
        layer.complete(merged.id, &mut tags, &mut out);
        assert_eq!(tags, vec![1, 2, 3, 4]);
        assert!(out.is_empty());
        assert_eq!(layer.counters().write_ios, 2);
    }

    #[test]
    fn merging_stops_at_the_request_size_limit_and_at_gaps() {
        let mut layer = BlockLayer::new(SchedulerKind::MqDeadline, 8);
        let mut out = Vec::new();
        layer.insert(write(0, 0, 4), &mut out);
        layer.insert(write(1, 4, 4), &mut out);
        layer.insert(write(2, 8, 4), &mut out);
        layer.insert(write(3, 12, 4), &mut out);
        layer.insert(write(4, 100, 4), &mut out);
        let mut tags = Vec::new();
        let mut sizes = Vec::new();
        while let Some(d) = out.pop() {
            sizes.push((d.slba, d.nlb));
            tags.clear();
            layer.complete(d.id, &mut tags, &mut out);
        }
        assert_eq!(sizes, vec![(0, 4), (4, 8), (12, 4), (100, 4)]);
    }

    #[test]
    fn none_passes_requests_through_under_their_tags() {
        let mut layer = BlockLayer::new(SchedulerKind::None, 32);
        assert!(layer.passes_through() && !BlockLayer::new(SchedulerKind::MqDeadline, 32).passes_through());
        let first = layer.pass(write(7, 0, 4));
        assert_eq!((first.id, first.first_tag, first.slba, first.nlb), (7, 7, 0, 4));
        let mut out = Vec::new();
        layer.insert(HostRequest { op: RequestOp::Read, ..write(9, 4, 4) }, &mut out);
        assert_eq!(out[0].id, 9);
        let mut tags = Vec::new();
        layer.complete(out[0].id, &mut tags, &mut out);
        assert_eq!(tags, vec![9]);
        assert_eq!(layer.complete_passed(first.id), 7);
        assert_eq!((layer.counters().write_ios, layer.counters().read_ios), (1, 1));
    }

    #[test]
    #[should_panic(expected = "not at the device")]
    fn none_refuses_a_completion_of_nothing() {
        BlockLayer::new(SchedulerKind::None, 32).complete_passed(0);
    }

    #[test]
    fn none_and_reads_are_never_held() {
        let mut layer = BlockLayer::new(SchedulerKind::None, 32);
        let mut out = Vec::new();
        for i in 0..4 {
            layer.insert(write(i, i * 4, 4), &mut out);
        }
        assert_eq!(out.len(), 4);
        let mut deadline = BlockLayer::new(SchedulerKind::MqDeadline, 32);
        out.clear();
        for i in 0..4 {
            deadline.insert(HostRequest { op: RequestOp::Read, ..write(i, i * 4, 4) }, &mut out);
        }
        assert_eq!(out.len(), 4);
        assert_eq!(deadline.counters().read_ios, 4);
    }
}
