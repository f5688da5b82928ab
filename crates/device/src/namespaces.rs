//! Several namespaces on one device (seed 001 §8: namespaces that share a
//! device's flash, controller and link interfere).
//!
//! `[[namespaces]]` in the device configuration lists them, NSID 1, 2, ...
//! Each entry overrides the zone geometry of `[namespace]` and gets layers
//! of its own (zone table, write buffers, mapping: a `Front` over its
//! `Backend`) over its partition (`Partition`) of every plane's blocks, so that the
//! namespaces' zones never share a block. What they share is the drive
//! (`Ssd`: the firmware cores, the PCIe link, the flash array's dies,
//! planes and channels), owned once: each command borrows it for as long
//! as it runs, so a namespace's command queues behind the other
//! namespaces' reads, programs and erases.
//!
//! [`Namespace`] is one namespace (a [`ZonedDevice`], one per NVMe/TCP
//! namespace, each served on its own thread: the drive is behind a mutex
//! they take in turn); [`Namespaces`] routes commands by NSID and keeps the
//! namespaces' background work (finish padding, reset erases) in time order.

use crate::command::{Command, Completion, IdentifyData, Started, Tag, ZoneDescriptor};
use crate::config::namespaces::{namespace_configs, NamespaceRequest, NAMESPACES_MAX};
use crate::config::{ConfigError, DeviceConfig, Layout};
use crate::counters::DeviceCounters;
use crate::device::{with_front, Fronts};
use crate::fdp::{FdpEventKind, FdpLogs};
use crate::power::PowerCutReport;
use crate::ssd::{Partition, Ssd};
use crate::status::Status;
use crate::zone::{ZoneState, ZoneTable};
use crate::zoned::{invalid_namespace, NamespaceOp, ZonedDevice};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use zonelab_flash::FlashCounters;
use zonelab_sim::Nanos;

mod drive;
pub use drive::{AdminError, AdminStatus, Drive};

/// One namespace of a device: a [`ZonedDevice`] whose commands borrow the
/// drive they share with the device's other namespaces.
pub struct Namespace {
    nsid: u32,
    front: Fronts,
    ssd: Arc<Mutex<Ssd>>,
}

impl Namespace {
    /// Namespace identifier (1-based).
    pub fn nsid(&self) -> u32 {
        self.nsid
    }

    /// Bytes of flash the namespace holds: its blocks of every plane (its
    /// NVM capacity, NVMCAP).
    pub fn flash_bytes(&self) -> u64 {
        let g = &self.front.core().config.flash;
        let blocks = u64::from(self.front.core().partition.range().1);
        blocks * u64::from(g.dies_total()) * u64::from(g.planes_per_die) * g.block_bytes()
    }

    /// The drive, for one call. A command that panicked while holding it
    /// leaves the reservations it made, each whole, so the other namespaces
    /// go on with it (serve takes the faulty namespace offline).
    fn ssd(&self) -> MutexGuard<'_, Ssd> {
        self.ssd.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The page-mapped FTL's counters of an NVM namespace (write
    /// amplification, garbage collection); `None` for a zoned one.
    pub fn ftl_counters(&self) -> Option<crate::counters::FtlCounters> {
        with_front!(&self.front, f => f.ftl_counters())
    }
}

impl ZonedDevice for Namespace {
    fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        let mut ssd = self.ssd.lock().unwrap_or_else(PoisonError::into_inner);
        let submit_ns = ssd.enter_in_order(submit_ns);
        with_front!(&mut self.front, f => f.start(&mut ssd, submit_ns, cmd, read_out))
    }
    fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        let mut ssd = self.ssd.lock().unwrap_or_else(PoisonError::into_inner);
        let submit_ns = ssd.enter_in_order(submit_ns);
        with_front!(&mut self.front, f => f.submit(&mut ssd, submit_ns, cmd, read_out))
    }
    fn advance(&mut self, until_ns: Nanos) {
        let mut ssd = self.ssd.lock().unwrap_or_else(PoisonError::into_inner);
        with_front!(&mut self.front, f => {
            if f.next_event_ns(&ssd).is_some() {
                f.advance(&mut ssd, until_ns);
            }
        });
    }
    fn next_event_ns(&self) -> Option<Nanos> {
        with_front!(&self.front, f => f.next_event_ns(&self.ssd()))
    }
    fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        with_front!(&mut self.front, f => f.take_completed())
    }
    fn pending_tasks(&self) -> usize {
        with_front!(&self.front, f => f.pending_tasks())
    }
    fn identify(&self) -> IdentifyData {
        with_front!(&self.front, f => f.identify())
    }
    fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        with_front!(&self.front, f => f.descriptor(zone))
    }
    fn zones(&self) -> &ZoneTable {
        &self.front.core().zones
    }
    fn layout(&self) -> &Layout {
        &self.front.core().layout
    }
    fn config(&self) -> &DeviceConfig {
        &self.front.core().config
    }
    fn counters(&self) -> DeviceCounters {
        self.front.core().counters
    }
    /// The drive's flash: every namespace's work (the array is one).
    fn flash_counters(&self) -> FlashCounters {
        self.ssd().flash().counters()
    }
    fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        let mut ssd = self.ssd.lock().unwrap_or_else(PoisonError::into_inner);
        with_front!(&mut self.front, f => f.set_zone_state(&mut ssd, slba, state))
    }
    fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport {
        let mut ssd = self.ssd.lock().unwrap_or_else(PoisonError::into_inner);
        with_front!(&mut self.front, f => f.power_cut(&mut ssd, at_ns))
    }
    fn fdp_logs(&self) -> Option<FdpLogs> {
        with_front!(&self.front, f => f.fdp_logs())
    }
    fn set_fdp_events(&mut self, pid: u16, kinds: &[FdpEventKind], enable: bool) -> Result<(), Status> {
        with_front!(&mut self.front, f => f.set_fdp_events(pid, kinds, enable))
    }
}

/// Every namespace of one device, commands routed by NSID, with Namespace
/// Management: namespaces are created and deleted on the drive's free
/// blocks ([`Drive`]) and attached or detached. As a [`ZonedDevice`], the
/// single-namespace methods address NSID 1 (or, once it is deleted, the
/// lowest allocated NSID; with none, the last deleted namespace as it was).
pub struct Namespaces {
    drive: Drive,
    /// NSID `i + 1`, if allocated: the namespace and whether it is attached.
    slots: Vec<Option<(Namespace, bool)>>,
    /// The last namespace deleted: what the single-namespace methods show
    /// when no namespace is allocated.
    retired: Option<Namespace>,
}

impl Namespaces {
    /// The namespaces of `config` (one without `[[namespaces]]`), attached.
    pub fn new(config: DeviceConfig) -> Result<Self, ConfigError> {
        let configs = namespace_configs(&config)?;
        let ssd = Arc::new(Mutex::new(Ssd::new(&config, crate::Tracking::ALL)));
        let blocks_per_plane = config.flash.blocks_per_plane;
        let mut drive = Drive::new(config, Arc::clone(&ssd));
        let mut first_block = 0;
        let mut slots: Vec<Option<(Namespace, bool)>> = (0..NAMESPACES_MAX).map(|_| None).collect();
        for (nsid, (c, layout)) in (1..).zip(configs) {
            // Each namespace's share of every plane follows the one before it.
            let partition = Partition::new(first_block, c.flash.blocks_per_plane);
            first_block += c.flash.blocks_per_plane;
            drive.hold(partition);
            let front = Fronts::new(c, layout, crate::Tracking::ALL, partition);
            slots[nsid as usize - 1] = Some((Namespace { nsid, front, ssd: Arc::clone(&ssd) }, true));
        }
        assert!(first_block <= blocks_per_plane, "validation keeps the namespaces within the flash");
        Ok(Self { drive, slots, retired: None })
    }

    /// The device's configuration, with its `[[namespaces]]`.
    pub fn device_config(&self) -> &DeviceConfig {
        self.drive.config()
    }

    /// The drive: its capacity, allocated and free.
    pub fn drive(&self) -> &Drive {
        &self.drive
    }

    /// The allocated namespace with `nsid` (attached or not), if there is one.
    pub fn namespace(&self, nsid: u32) -> Option<&Namespace> {
        self.slot(nsid).map(|(ns, _)| ns)
    }

    /// Whether namespace `nsid` is allocated and attached.
    pub fn attached(&self, nsid: u32) -> bool {
        self.slot(nsid).is_some_and(|&(_, attached)| attached)
    }

    /// The allocated NSIDs, lowest first.
    pub fn allocated(&self) -> impl Iterator<Item = u32> + '_ {
        (1..=NAMESPACES_MAX).filter(|&nsid| self.slot(nsid).is_some())
    }

    /// The namespaces, lowest NSID first, to serve each on its own.
    pub fn into_namespaces(self) -> Vec<Namespace> {
        self.into_parts().1
    }

    /// The drive (for Namespace Management) and its allocated namespaces,
    /// lowest NSID first.
    pub fn into_parts(self) -> (Drive, Vec<Namespace>) {
        (self.drive, self.slots.into_iter().flatten().map(|(ns, _)| ns).collect())
    }

    fn slot(&self, nsid: u32) -> Option<&(Namespace, bool)> {
        self.slots.get(usize::try_from(nsid).ok()?.checked_sub(1)?)?.as_ref()
    }

    /// The index of attached namespace `nsid`.
    fn index(&self, nsid: u32) -> Option<usize> {
        let index = usize::try_from(nsid).ok()?.checked_sub(1)?;
        matches!(self.slots.get(index), Some(Some((_, true)))).then_some(index)
    }

    fn tag(index: usize, tag: Tag) -> Tag {
        tag * Tag::from(NAMESPACES_MAX) + index as Tag
    }

    fn live(&self) -> impl Iterator<Item = (usize, &Namespace)> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.as_ref().map(|(ns, _)| (i, ns)))
    }

    /// What the single-namespace methods address.
    fn first(&self) -> &Namespace {
        let first = self.live().map(|(_, ns)| ns).next().or(self.retired.as_ref());
        first.expect("a namespace, or one deleted")
    }

    fn first_mut(&mut self) -> &mut Namespace {
        let first = self.slots.iter_mut().flatten().map(|(ns, _)| ns).next().or(self.retired.as_mut());
        first.expect("a namespace, or one deleted")
    }

    /// Simulated time a Namespace Management or Attachment command takes:
    /// the controller's submission and completion costs (its bookkeeping is
    /// not modelled).
    pub fn admin_ns(&self) -> Nanos {
        let c = &self.drive.config().controller;
        (c.submit_ns + c.complete_ns).max(1)
    }
}

/// Namespace Management and Attachment (NVMe Base 2.0, §5.22 and §5.23).
impl Namespaces {
    /// Creates a namespace (detached) with the lowest unallocated NSID, as
    /// controllers reuse them; returns the NSID.
    pub fn create(&mut self, request: &NamespaceRequest) -> Result<u32, AdminError> {
        let Some(nsid) = (1..=NAMESPACES_MAX).find(|&nsid| self.slot(nsid).is_none()) else {
            let detail = format!("all {NAMESPACES_MAX} NSIDs are allocated");
            return Err(AdminError::new(AdminStatus::IdUnavailable, detail));
        };
        let index = nsid as usize - 1;
        let ns = self.drive.create(nsid, request)?;
        self.slots[index] = Some((ns, false));
        Ok(nsid)
    }

    /// Deletes namespace `nsid` (0xFFFFFFFF: every one) at `at_ns`, after
    /// its background work due by then; attached, it is detached first.
    pub fn delete(&mut self, nsid: u32, at_ns: Nanos) -> Result<(), AdminError> {
        let nsids: Vec<u32> = match nsid {
            0xFFFF_FFFF => self.allocated().collect(),
            _ => vec![self.allocated_nsid(nsid)?],
        };
        self.advance(at_ns);
        for nsid in nsids {
            if let Some((ns, _)) = self.slots[nsid as usize - 1].take() {
                self.drive.delete(&ns, at_ns);
                self.retired = Some(ns);
            }
        }
        Ok(())
    }

    /// Attaches (`attach`) or detaches namespace `nsid`.
    pub fn set_attached(&mut self, nsid: u32, attach: bool) -> Result<(), AdminError> {
        let index = self.allocated_nsid(nsid)? as usize - 1;
        let Some((_, attached)) = self.slots[index].as_mut() else { unreachable!("allocated") };
        match (*attached, attach) {
            (true, true) => Err(AdminError::new(AdminStatus::AlreadyAttached, format!("NSID {nsid}"))),
            (false, false) => Err(AdminError::new(AdminStatus::NotAttached, format!("NSID {nsid}"))),
            _ => {
                *attached = attach;
                Ok(())
            }
        }
    }

    /// `nsid` if it names an allocated namespace; else Invalid Namespace or
    /// Format for an invalid NSID, Invalid Field for an unallocated one.
    fn allocated_nsid(&self, nsid: u32) -> Result<u32, AdminError> {
        if nsid == 0 || nsid > NAMESPACES_MAX {
            let detail = format!("NSID {nsid}: valid NSIDs are 1 to {NAMESPACES_MAX}");
            return Err(AdminError::new(AdminStatus::InvalidNamespace, detail));
        }
        match self.slot(nsid) {
            Some(_) => Ok(nsid),
            None => Err(AdminError::new(AdminStatus::InvalidField, format!("NSID {nsid} is not allocated"))),
        }
    }

    /// The completion of a command to `nsid`, which is not attached: Invalid
    /// Field for an allocated (inactive) NSID, as the specification says,
    /// Invalid Namespace or Format for one that names no namespace.
    fn not_attached(&self, nsid: u32, submit_ns: Nanos) -> Completion {
        let mut c = invalid_namespace(self.drive.config(), submit_ns);
        if self.slot(nsid).is_some() {
            c.status = Status::InvalidField;
        }
        c
    }
}

impl ZonedDevice for Namespaces {
    fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        self.start_in(1, submit_ns, cmd, read_out)
    }
    fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        self.submit_in(1, submit_ns, cmd, read_out)
    }

    /// Runs every namespace's background steps that start before `until_ns`,
    /// earliest first, so that they take the shared dies in time order
    /// (a detached namespace's too: the drive goes on with them).
    fn advance(&mut self, until_ns: Nanos) {
        // Each round runs at least one step, or refreshes the stale die times
        // of a namespace once; the devices bound their own steps.
        for _ in 0..u32::MAX {
            let next = self
                .live()
                .filter_map(|(i, ns)| ns.next_event_ns().map(|t| (t, i)))
                .filter(|&(t, _)| t < until_ns)
                .min();
            let Some((t, i)) = next else { return };
            if let Some((ns, _)) = self.slots[i].as_mut() {
                ns.advance(t.saturating_add(1).min(until_ns));
            }
        }
        panic!("namespaces' background work did not settle");
    }
    fn next_event_ns(&self) -> Option<Nanos> {
        self.live().filter_map(|(_, ns)| ns.next_event_ns()).min()
    }
    /// Completions of every namespace, by completion time; tags carry the
    /// namespace (tag × [`NAMESPACES_MAX`] + NSID − 1).
    fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        let mut all: Vec<(Tag, Completion)> = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some((ns, _)) = slot {
                all.extend(ns.take_completed().into_iter().map(|(tag, c)| (Self::tag(i, tag), c)));
            }
        }
        all.sort_by_key(|(tag, c)| (c.complete_ns, *tag));
        all
    }
    fn pending_tasks(&self) -> usize {
        self.live().map(|(_, ns)| ns.pending_tasks()).sum()
    }
    fn identify(&self) -> IdentifyData {
        self.first().identify()
    }
    fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        self.first().descriptor(zone)
    }
    fn zones(&self) -> &ZoneTable {
        self.first().zones()
    }
    fn layout(&self) -> &Layout {
        self.first().layout()
    }
    fn config(&self) -> &DeviceConfig {
        self.first().config()
    }
    fn counters(&self) -> DeviceCounters {
        self.first().counters()
    }
    /// The device's flash: every namespace's work.
    fn flash_counters(&self) -> FlashCounters {
        self.drive.ssd.lock().unwrap_or_else(PoisonError::into_inner).flash().counters()
    }
    fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        self.first_mut().set_zone_state(slba, state)
    }
    /// Power fails for the whole device: every namespace loses what it had
    /// not made durable.
    fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport {
        let reports: Vec<PowerCutReport> = self.slots.iter_mut().flatten().map(|(ns, _)| ns.power_cut(at_ns)).collect();
        reports.into_iter().fold(PowerCutReport::default(), |a, b| PowerCutReport {
            zones_rolled_back: a.zones_rolled_back + b.zones_rolled_back,
            lost_blocks: a.lost_blocks + b.lost_blocks,
        })
    }
    /// The highest attached NSID (lower ones may be unallocated or detached).
    fn namespace_count(&self) -> u32 {
        (1..=NAMESPACES_MAX).rev().find(|&nsid| self.attached(nsid)).unwrap_or(0)
    }
    fn layout_in(&self, nsid: u32) -> Option<&Layout> {
        self.index(nsid).and_then(|i| self.slots[i].as_ref()).map(|(ns, _)| ns.layout())
    }
    fn fdp_logs(&self) -> Option<FdpLogs> {
        self.first().fdp_logs()
    }
    fn set_fdp_events(&mut self, pid: u16, kinds: &[FdpEventKind], enable: bool) -> Result<(), Status> {
        self.first_mut().set_fdp_events(pid, kinds, enable)
    }
    fn fdp_logs_in(&self, nsid: u32) -> Option<FdpLogs> {
        self.index(nsid).and_then(|i| self.slots[i].as_ref()).and_then(|(ns, _)| ns.fdp_logs())
    }
    fn set_fdp_events_in(&mut self, nsid: u32, pid: u16, kinds: &[FdpEventKind], enable: bool) -> Result<(), Status> {
        let Some(index) = self.index(nsid) else { return Err(self.not_attached(nsid, 0).status) };
        let (ns, _) = self.slots[index].as_mut().expect("attached");
        ns.set_fdp_events(pid, kinds, enable)
    }
    fn set_zone_state_in(&mut self, nsid: u32, slba: u64, state: ZoneState) -> Result<(), Status> {
        let Some(index) = self.index(nsid) else { return Err(self.not_attached(nsid, 0).status) };
        let (ns, _) = self.slots[index].as_mut().expect("attached");
        ns.set_zone_state(slba, state)
    }
    fn start_in(&mut self, nsid: u32, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        let Some(index) = self.index(nsid) else { return Started::Done(self.not_attached(nsid, submit_ns)) };
        self.advance(submit_ns);
        let (ns, _) = self.slots[index].as_mut().expect("attached");
        match ns.start(submit_ns, cmd, read_out) {
            Started::Pending(tag) => Started::Pending(Self::tag(index, tag)),
            done => done,
        }
    }
    fn manage_namespaces(&mut self, submit_ns: Nanos, op: &NamespaceOp) -> (Result<u32, AdminError>, Nanos) {
        let complete_ns = submit_ns.saturating_add(self.admin_ns());
        let result = match *op {
            NamespaceOp::Create(request) => self.create(&request),
            NamespaceOp::Delete(nsid) => self.delete(nsid, submit_ns).map(|()| nsid),
            NamespaceOp::Attach(nsid) => self.set_attached(nsid, true).map(|()| nsid),
            NamespaceOp::Detach(nsid) => self.set_attached(nsid, false).map(|()| nsid),
        };
        (result, complete_ns)
    }
    fn submit_in(&mut self, nsid: u32, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        let Some(index) = self.index(nsid) else { return self.not_attached(nsid, submit_ns) };
        self.advance(submit_ns);
        let (ns, _) = self.slots[index].as_mut().expect("attached");
        ns.submit(submit_ns, cmd, read_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Payload, ZoneAction};
    use crate::config::namespaces::two_namespaces;

    fn write(slba: u64, nlb: u32) -> Command<'static> {
        Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None }
    }

    #[test]
    fn commands_are_routed_by_nsid() {
        let mut dev = Namespaces::new(two_namespaces()).unwrap();
        assert_eq!(dev.namespace_count(), 2);
        let c = dev.submit_in(2, 0, &write(0, 8), None);
        assert_eq!(c.status, Status::Success);
        assert_eq!(dev.namespace(2).unwrap().zones().wp(0), 8);
        assert_eq!(dev.namespace(1).unwrap().zones().wp(0), 0, "namespace 1 is untouched");
        // Namespace 2 holds 4 zones of 65536 LBAs; namespace 1's last LBA is beyond it.
        let c = dev.submit_in(2, c.complete_ns, &Command::Read { slba: 4 * 65536, nlb: 1 }, None);
        assert_eq!(c.status, Status::LbaOutOfRange);
        let c = dev.submit_in(1, c.complete_ns, &Command::Read { slba: 4 * 16384 - 1, nlb: 1 }, None);
        assert_eq!(c.status, Status::Success);
        for nsid in [0, 3, u32::MAX] {
            let bad = dev.submit_in(nsid, c.complete_ns, &write(0, 1), None);
            assert_eq!(bad.status, Status::InvalidNamespace, "NSID {nsid}");
            assert!(bad.complete_ns > bad.submit_ns);
        }
        // Zone resource limits are per namespace: namespace 2 allows 2 active zones.
        let mut t = c.complete_ns;
        for (zone, status) in [(1, Status::Success), (2, Status::TooManyActiveZones)] {
            let c = dev.submit_in(2, t, &write(zone * 65536, 8), None);
            assert_eq!(c.status, status, "zone {zone}");
            t = c.complete_ns;
        }
        assert_eq!(dev.submit_in(1, t, &write(16384, 8), None).status, Status::Success);
    }

    #[test]
    fn pending_resets_carry_their_namespace_in_the_tag() {
        let mut dev = Namespaces::new(two_namespaces()).unwrap();
        let mut t = 0;
        for nsid in [1, 2] {
            t = dev.submit_in(nsid, t, &write(0, 64), None).complete_ns;
        }
        let reset = Command::ZoneMgmtSend { action: ZoneAction::Reset, slba: 0, select_all: false };
        let mut tags = Vec::new();
        for nsid in [1, 2] {
            match dev.start_in(nsid, t, &reset, None) {
                Started::Pending(tag) => tags.push(tag),
                Started::Done(c) => assert_eq!(c.status, Status::Success),
            }
        }
        dev.advance(t + 1_000_000_000);
        let done: Vec<Tag> = dev.take_completed().into_iter().map(|(tag, _)| tag).collect();
        assert_eq!(dev.pending_tasks(), 0);
        assert!(tags.iter().all(|tag| done.contains(tag)), "{tags:?} {done:?}");
        assert!(tags.iter().enumerate().all(|(i, tag)| tag % Tag::from(NAMESPACES_MAX) == i as Tag || tags.len() < 2));
    }

    #[test]
    fn the_namespaces_program_their_own_blocks_of_one_array() {
        let mut dev = Namespaces::new(two_namespaces()).unwrap();
        let shares: Vec<u32> = dev.live().map(|(_, ns)| ns.front.core().config.flash.blocks_per_plane).collect();
        assert_eq!(dev.namespace(2).unwrap().front.core().partition, Partition::new(shares[0], shares[1]));
        // A whole program unit of zone 0 in each namespace: 192 KiB, on the zone's first die.
        let mut t = 0;
        for (nsid, lbas) in [(1, 4u32), (2, 32)] {
            for piece in 0..12 {
                let c = dev.submit_in(nsid, t, &write(piece * u64::from(lbas), lbas), None);
                assert_eq!(c.status, Status::Success);
                t = c.complete_ns;
            }
        }
        dev.advance(t + 1_000_000_000);
        let ssd = dev.namespace(1).unwrap().ssd();
        let written = |block: u32| {
            (0..ssd.flash().geometry().dies_total()).any(|die| ssd.flash().pages_written(die, 0, block) > 0)
        };
        assert!(written(0), "namespace 1's zone 0 is in its first block");
        assert!(written(shares[0]), "namespace 2's zone 0 is in the first block after namespace 1's");
        assert!(!(1..shares[0]).any(written), "nothing else of namespace 1's share is written");
        let counters = ssd.flash().counters();
        drop(ssd);
        assert_eq!(counters.programs, 2, "one array counts both namespaces' programs");
        assert_eq!(dev.flash_counters(), counters);
    }

    /// The zn540's flash with a zoned namespace of 4 zones beside an NVM
    /// namespace of 1 GiB on the drive's page-mapped FTL (seed 001's
    /// setup, smaller), over few blocks so that its garbage collection runs.
    fn zoned_beside_page_mapped() -> DeviceConfig {
        let opts = crate::DeviceOptions { zones: Some(4), ..Default::default() };
        let mut config = opts.apply(crate::preset("zn540").unwrap()).unwrap();
        let ftl = crate::ConventionalConfig {
            gc_free_blocks_min: 2,
            gc_free_blocks_target: 4,
            gc_free_blocks_start: 5,
            gc_units_per_host_unit_max: 8,
            gc_victim: crate::VictimPolicy::Greedy,
            write_order_window: 0,
        };
        config.namespaces = vec![
            crate::NamespaceEntry { zones: Some(4), ..Default::default() },
            crate::NamespaceEntry {
                zones: Some(4),
                conventional_zones: Some(4),
                zone_size_bytes: Some(256 << 20),
                zone_capacity_bytes: Some(256 << 20),
                max_open_zones: Some(0),
                max_active_zones: Some(0),
                conventional: Some(ftl),
                ..Default::default()
            },
        ];
        config.flash.blocks_per_plane = 11;
        config
    }

    #[test]
    fn a_page_mapped_namespace_collects_garbage_beside_a_zoned_one() {
        let mut dev = Namespaces::new(zoned_beside_page_mapped()).unwrap();
        assert!(
            with_front!(&dev.namespace(2).unwrap().front, f => f.ftl_counters()).is_some(),
            "NSID 2 is page-mapped"
        );
        assert!(with_front!(&dev.namespace(1).unwrap().front, f => f.ftl_counters()).is_none(), "NSID 1 is zoned");
        let (zoned, nvm) = (
            dev.namespace(1).unwrap().front.core().layout.zones,
            dev.namespace(2).unwrap().front.core().layout.nsze_lbas,
        );
        assert_eq!(zoned, 4);
        // Random 128 KiB overwrites of the whole NVM namespace, three times over.
        let mut rng = zonelab_sim::SimRng::new(7);
        let mut t = 0;
        let units = nvm / 32;
        for _ in 0..3 * units {
            let c = dev.submit_in(2, t, &write(rng.below(units) * 32, 32), None);
            assert_eq!(c.status, Status::Success);
            t = c.complete_ns;
        }
        let gc = with_front!(&dev.namespace(2).unwrap().front, f => f.ftl_counters()).unwrap();
        let shares: Vec<u32> = dev.live().map(|(_, ns)| ns.front.core().config.flash.blocks_per_plane).collect();
        eprintln!("blocks per plane {shares:?}; after 3 overwrites of NSID 2: {gc:?}");
        assert!(gc.victims > 0 && gc.write_amplification > 1.05, "{gc:?} {shares:?}");
        with_front!(&dev.namespace(2).unwrap().front, f => f.check_ftl());
        // Its zoned neighbour still takes sequential writes; its zone lives on its own blocks.
        let c = dev.submit_in(1, t, &write(0, 32), None);
        assert_eq!(c.status, Status::Success);
        let c = dev.submit_in(
            2,
            c.complete_ns,
            &Command::ZoneMgmtSend { action: crate::ZoneAction::Reset, slba: 0, select_all: false },
            None,
        );
        assert_eq!(c.status, Status::InvalidZoneOperation, "an NVM namespace's zones are conventional");
    }

    #[test]
    fn a_page_mapped_namespace_with_more_spare_blocks_copies_less() {
        // NSID 2's over-provisioning is its own setting; by default it would
        // take half of what the namespaces' zones leave.
        let overwritten = |spare: u32| {
            let mut config = zoned_beside_page_mapped();
            config.flash.blocks_per_plane = 16;
            config.namespaces[1].spare_blocks_per_plane = Some(spare);
            let mut dev = Namespaces::new(config).unwrap();
            let nvm = dev.namespace(2).unwrap().front.core().layout.nsze_lbas;
            let mut rng = zonelab_sim::SimRng::new(7);
            let (mut t, units) = (0, nvm / 32);
            for _ in 0..3 * units {
                let c = dev.submit_in(2, t, &write(rng.below(units) * 32, 32), None);
                assert_eq!(c.status, Status::Success);
                t = c.complete_ns;
            }
            with_front!(&dev.namespace(2).unwrap().front, f => f.ftl_counters()).unwrap().write_amplification
        };
        let (tight, roomy) = (overwritten(0), overwritten(4));
        eprintln!("write amplification of NSID 2: no spare block {tight:.3}, 4 spare blocks per plane {roomy:.3}");
        assert!(tight > 1.1 && roomy < tight, "no spare {tight}, 4 spare {roomy}");
    }

    /// Mean latency of 4 KiB reads at queue depth 1 over namespace 1's
    /// zone 0 (written, in flash) for `window_ns`, while `writers` zones of
    /// `other`'s namespace 2 take 128 KiB writes back to back.
    fn read_latency_ns(dev: &mut Namespaces, other: Option<&mut Namespaces>, writers: u64) -> (u64, u64) {
        let mut t = 0;
        for i in 0..512u64 {
            t = dev.submit_in(1, t, &write(i * 32, 32), None).complete_ns;
        }
        let start_ns = t + 100_000_000;
        let window_ns = 20_000_000;
        let mut other = other;
        let (mut read_next, mut reads, mut read_sum_ns) = (start_ns, 0u64, 0u64);
        let mut writer_next: Vec<(Nanos, u64)> = (0..writers).map(|z| (start_ns, z * 65536)).collect();
        for _ in 0..1_000_000 {
            let earliest_writer = writer_next.iter().enumerate().min_by_key(|(_, w)| w.0).map(|(i, w)| (w.0, i));
            match earliest_writer {
                Some((at, i)) if at < read_next => {
                    let lba = writer_next[i].1;
                    let target = other.as_deref_mut().unwrap_or(&mut *dev);
                    let c = target.submit_in(2, at, &write(lba, 256), None);
                    assert_eq!(c.status, Status::Success);
                    writer_next[i] = (c.complete_ns, lba + 256);
                }
                _ => {
                    if read_next >= start_ns + window_ns {
                        return (read_sum_ns / reads, reads);
                    }
                    let slba = (reads * 7919) % 16384;
                    let c = dev.submit_in(1, read_next, &Command::Read { slba, nlb: 1 }, None);
                    assert_eq!(c.status, Status::Success);
                    read_sum_ns += c.latency_ns();
                    reads += 1;
                    read_next = c.complete_ns;
                }
            }
        }
        panic!("the window did not end");
    }

    #[test]
    fn a_reader_slows_down_while_another_namespace_is_written() {
        let alone = read_latency_ns(&mut Namespaces::new(two_namespaces()).unwrap(), None, 0);
        let shared = read_latency_ns(&mut Namespaces::new(two_namespaces()).unwrap(), None, 2);
        let mut elsewhere = Namespaces::new(two_namespaces()).unwrap();
        let separate = read_latency_ns(&mut Namespaces::new(two_namespaces()).unwrap(), Some(&mut elsewhere), 2);
        eprintln!("mean read latency, reads: alone {alone:?}, namespace 2 written {shared:?}");
        assert_eq!(separate, alone, "writes to another device do not touch the reader");
        assert!(shared.0 > alone.0 * 3 / 2, "reader alone {alone:?} vs with namespace 2 written {shared:?}");
        let again = read_latency_ns(&mut Namespaces::new(two_namespaces()).unwrap(), None, 2);
        assert_eq!(again, shared, "deterministic");
    }
}

/// Namespace Management on a drive: capacity, NSIDs, attachment.
#[cfg(test)]
pub(super) mod management_tests {
    use super::*;
    use crate::command::{CmdResult, Payload, ReadPattern};
    use crate::config::namespaces::CommandSet;

    /// A zn540 of 24 blocks per plane (a 1152 MiB row each) in data mode:
    /// NSID 1, 4 zones of 2 GiB, holds them all, as a drive ships.
    pub(super) fn small_zn540() -> DeviceConfig {
        let opts = crate::DeviceOptions { zones: Some(4), data: true, ..Default::default() };
        let mut config = opts.apply(crate::preset("zn540").unwrap()).unwrap();
        config.flash.blocks_per_plane = 24;
        config
    }

    pub(super) fn zoned(zones: u64, lba_bytes: u32) -> NamespaceRequest {
        let nsze = zones * (2 << 30) / u64::from(lba_bytes);
        NamespaceRequest { nsze, ncap: nsze, lba_bytes, command_set: CommandSet::Zoned }
    }

    pub(super) fn nvm(bytes: u64, lba_bytes: u32) -> NamespaceRequest {
        let nsze = bytes / u64::from(lba_bytes);
        NamespaceRequest { nsze, ncap: nsze, lba_bytes, command_set: CommandSet::Nvm }
    }

    fn status(r: Result<impl std::fmt::Debug, AdminError>) -> AdminStatus {
        r.expect_err("refused").status
    }

    #[test]
    fn creating_until_full_then_deleting_gives_the_capacity_back() {
        let mut dev = Namespaces::new(small_zn540()).unwrap();
        let row = dev.drive().row_bytes();
        assert_eq!(row, 1152 << 20);
        assert_eq!((dev.drive().free_blocks_per_plane(), dev.drive().capacity_bytes()), (0, 24 * row));
        assert_eq!(status(dev.create(&zoned(1, 4096))), AdminStatus::InsufficientCapacity, "NSID 1 holds it all");
        dev.delete(1, 0).unwrap();
        assert_eq!(dev.drive().unallocated_bytes(), 24 * row);
        assert_eq!(dev.create(&zoned(8, 4096)), Ok(1), "the lowest free NSID");
        assert_eq!(dev.drive().free_blocks_per_plane(), 16, "a block per plane per zone");
        // 4 GiB of data (4 rows) plus the FTL's reserve: gc_free_blocks_target (4) and one.
        assert_eq!(dev.create(&nvm(4 << 30, 512)), Ok(2));
        assert_eq!(dev.drive().free_blocks_per_plane(), 7);
        let e = dev.create(&nvm(4 << 30, 4096)).unwrap_err();
        assert_eq!(e.status, AdminStatus::InsufficientCapacity);
        assert!(e.detail.contains("9 blocks per plane") && e.detail.contains("only 7 are free"), "{e}");
        assert_eq!(dev.create(&zoned(7, 4096)), Ok(3));
        assert_eq!(status(dev.create(&zoned(1, 512))), AdminStatus::InsufficientCapacity);
        dev.delete(1, 0).unwrap();
        assert_eq!(dev.drive().free_blocks_per_plane(), 8);
        assert_eq!(status(dev.create(&nvm(4 << 30, 4096))), AdminStatus::InsufficientCapacity, "9 > 8");
        assert_eq!(dev.create(&zoned(8, 4096)), Ok(1), "NSID 1 again, on the blocks it freed");
        assert_eq!(dev.namespace(1).unwrap().front.core().partition, Partition::new(0, 8));
        dev.delete(0xFFFF_FFFF, 0).unwrap();
        assert_eq!((dev.drive().free_blocks_per_plane(), dev.allocated().count()), (24, 0));
    }

    #[test]
    fn bad_requests_get_the_statuses_a_controller_gives() {
        let mut dev = Namespaces::new(small_zn540()).unwrap();
        dev.delete(1, 0).unwrap();
        let mut thin = zoned(1, 4096);
        thin.ncap -= 1;
        assert_eq!(status(dev.create(&thin)), AdminStatus::ThinProvisioningNotSupported);
        thin.ncap = thin.nsze + 1;
        assert_eq!(status(dev.create(&thin)), AdminStatus::InvalidField);
        assert_eq!(status(dev.create(&NamespaceRequest { nsze: 0, ..zoned(1, 4096) })), AdminStatus::InvalidField);
        assert_eq!(status(dev.create(&zoned(1, 1024))), AdminStatus::InvalidFormat);
        let odd = NamespaceRequest { nsze: (1 << 21) + 1, ncap: (1 << 21) + 1, ..nvm(0, 512) };
        let e = dev.create(&odd).unwrap_err();
        assert!(e.status == AdminStatus::InvalidField && e.detail.contains("use a multiple of"), "{e}");
        let mut config = small_zn540();
        config.nvm_ftl = None;
        let mut no_ftl = Namespaces::new(config).unwrap();
        no_ftl.delete(1, 0).unwrap();
        assert_eq!(status(no_ftl.create(&nvm(1 << 30, 4096))), AdminStatus::IoCommandSetNotSupported);
        for nsid in [0, NAMESPACES_MAX + 1] {
            assert_eq!(status(dev.delete(nsid, 0)), AdminStatus::InvalidNamespace, "NSID {nsid}");
        }
        assert_eq!(status(dev.delete(1, 0)), AdminStatus::InvalidField, "unallocated");
        assert_eq!(status(dev.set_attached(1, true)), AdminStatus::InvalidField, "unallocated");
        // Every NSID taken: the seventeenth create has none.
        let mut config = small_zn540();
        config.flash.blocks_per_plane = 40;
        let mut many = Namespaces::new(config).unwrap();
        many.delete(1, 0).unwrap();
        for nsid in 1..=NAMESPACES_MAX {
            assert_eq!(many.create(&zoned(1, 4096)), Ok(nsid));
        }
        assert_eq!(status(many.create(&zoned(1, 4096))), AdminStatus::IdUnavailable);
    }

    fn read_pattern(dev: &mut Namespaces, nsid: u32, at: Nanos, slba: u64, nlb: u32) -> (Status, Option<u8>, Nanos) {
        let c = dev.submit_in(nsid, at, &Command::Read { slba, nlb }, None);
        let pattern = match c.result {
            CmdResult::Read(ReadPattern::Uniform(b)) => Some(b),
            _ => None,
        };
        (c.status, pattern, c.complete_ns)
    }

    #[test]
    fn a_created_nvm_namespace_beside_a_zoned_one_takes_writes_and_reads_back() {
        let mut dev = Namespaces::new(small_zn540()).unwrap();
        dev.delete(1, 0).unwrap();
        assert_eq!(dev.create(&zoned(4, 4096)), Ok(1));
        assert_eq!(dev.create(&nvm(4 << 30, 512)), Ok(2));
        let write = |slba, nlb, byte| Command::Write {
            slba,
            nlb,
            payload: Payload::Pattern(byte),
            fua: false,
            placement: None,
        };
        // Detached: the NSID is allocated but inactive (Invalid Field); NSID 3 is not allocated.
        assert_eq!(dev.submit_in(2, 0, &write(0, 8, 1), None).status, Status::InvalidField);
        assert_eq!(dev.submit_in(3, 0, &write(0, 8, 1), None).status, Status::InvalidNamespace);
        dev.set_attached(1, true).unwrap();
        dev.set_attached(2, true).unwrap();
        assert_eq!(status(dev.set_attached(2, true)), AdminStatus::AlreadyAttached);
        let nvm_layout = dev.layout_in(2).unwrap().clone();
        assert_eq!((nvm_layout.lba_bytes, nvm_layout.nsze_lbas), (512, 8 << 20));
        assert_eq!(nvm_layout.conventional_zones, nvm_layout.zones, "NVM: no write pointer");
        let mut t = 0;
        // Random-order writes to the NVM namespace, sequential ones to the zoned one, interleaved.
        for (i, slba) in (0u8..).zip([4096u64, 0, (8 << 20) - 256, 77 * 512]) {
            let c = dev.submit_in(2, t, &write(slba, 256, 10 + i), None);
            assert_eq!(c.status, Status::Success, "NVM write at {slba}");
            let c = dev.submit_in(1, c.complete_ns, &write(u64::from(i) * 32, 32, 20 + i), None);
            assert_eq!(c.status, Status::Success);
            t = c.complete_ns;
        }
        for (i, slba) in (0u8..).zip([4096u64, 0, (8 << 20) - 256, 77 * 512]) {
            let (s, pattern, at) = read_pattern(&mut dev, 2, t, slba, 256);
            assert_eq!((s, pattern), (Status::Success, Some(10 + i)), "NVM read at {slba}");
            let (s, pattern, at) = read_pattern(&mut dev, 1, at, u64::from(i) * 32, 32);
            assert_eq!((s, pattern), (Status::Success, Some(20 + i)));
            t = at;
        }
        dev.set_attached(2, false).unwrap();
        assert_eq!(status(dev.set_attached(2, false)), AdminStatus::NotAttached);
        assert_eq!(read_pattern(&mut dev, 2, t, 0, 8).0, Status::InvalidField, "detached again");
    }

    #[test]
    fn deleted_blocks_are_erased_on_their_dies_and_written_again() {
        let mut dev = Namespaces::new(small_zn540()).unwrap();
        let write = |slba, nlb| Command::Write { slba, nlb, payload: Payload::Pattern(3), fua: false, placement: None };
        // A whole program unit of zone 0 (192 KiB), so that a block is written.
        let mut t = 0;
        for piece in 0..6u64 {
            t = dev.submit_in(1, t, &write(piece * 8, 8), None).complete_ns;
        }
        dev.advance(t + 1_000_000_000);
        let before = dev.flash_counters();
        assert!(before.programs >= 1);
        let at = t + 1_000_000_000;
        dev.delete(1, at).unwrap();
        let after = dev.flash_counters();
        assert_eq!(after.erases - before.erases, 1, "the one written block (every plane of its die)");
        // The same blocks, as a new namespace: its first program finds them erased.
        assert_eq!(dev.create(&zoned(4, 4096)), Ok(1));
        dev.set_attached(1, true).unwrap();
        let mut t = at;
        for piece in 0..6u64 {
            let c = dev.submit_in(1, t, &write(piece * 8, 8), None);
            assert_eq!(c.status, Status::Success);
            t = c.complete_ns;
        }
        dev.advance(t + 1_000_000_000);
        assert!(dev.flash_counters().programs > after.programs);
        // The erase held the die: the new namespace's program waited for it.
        assert!(t > at, "{t} {at}");
    }
}

/// What a delete costs the namespaces that stay.
#[cfg(test)]
mod delete_cost_tests {
    use super::management_tests::{nvm, small_zn540, zoned};
    use super::*;
    use crate::command::Payload;

    /// Latency of a 4 KiB read of NVM namespace 2 at `at_ns`.
    fn read_ns(dev: &mut Namespaces, at_ns: Nanos) -> Nanos {
        let c = dev.submit_in(2, at_ns, &Command::Read { slba: 0, nlb: 8 }, None);
        assert_eq!(c.status, Status::Success);
        c.latency_ns()
    }

    #[test]
    fn deleting_a_written_zoned_namespace_erases_on_the_shared_dies() {
        let mut dev = Namespaces::new(small_zn540()).unwrap();
        dev.delete(1, 0).unwrap();
        assert_eq!(dev.create(&zoned(2, 4096)), Ok(1));
        assert_eq!(dev.create(&nvm(4 << 30, 512)), Ok(2));
        dev.set_attached(1, true).unwrap();
        dev.set_attached(2, true).unwrap();
        // 4 MiB of the NVM namespace, so that its first blocks are in flash (not in its buffer).
        let mut t = 0;
        for slba in (0..8192u64).step_by(256) {
            let write = Command::Write { slba, nlb: 256, payload: Payload::None, fua: false, placement: None };
            t = dev.submit_in(2, t, &write, None).complete_ns;
        }
        // Zone 0 of namespace 1 written whole (1077 MiB of 128 KiB writes): a block on every plane.
        let zcap = dev.layout_in(1).unwrap().zcap_lbas;
        for slba in (0..zcap).step_by(32) {
            let nlb = (zcap - slba).min(32) as u32;
            t = dev
                .submit_in(
                    1,
                    t,
                    &Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None },
                    None,
                )
                .complete_ns;
        }
        let settled = t + 1_000_000_000;
        dev.advance(settled);
        let before = read_ns(&mut dev, settled);
        let erases = dev.flash_counters().erases;
        let delete_at = settled + 1_000_000;
        dev.delete(1, delete_at).unwrap();
        let erased = dev.flash_counters().erases - erases;
        let after = read_ns(&mut dev, delete_at);
        let later = read_ns(&mut dev, delete_at + 100_000_000);
        eprintln!("delete of a zoned namespace with one full zone: {erased} erases; a 4 KiB read of the NVM namespace: {before} ns before, {after} ns right after, {later} ns 100 ms later");
        assert_eq!(erased, 16, "the zone's block on each of the 16 dies (every plane at once)");
        // The read suspends the erase on its die (zn540: reads take priority): it waits, less than an erase.
        assert!(after > before + 100_000 && after < before + 3_500_000 && later == before, "{before} {after} {later}");
    }
}
