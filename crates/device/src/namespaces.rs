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
use crate::config::namespaces::{namespace_configs, NAMESPACES_MAX};
use crate::config::{ConfigError, DeviceConfig, Layout};
use crate::counters::DeviceCounters;
use crate::device::{with_front, Fronts};
use crate::power::PowerCutReport;
use crate::ssd::{Partition, Ssd};
use crate::status::Status;
use crate::zone::{ZoneState, ZoneTable};
use crate::zoned::{invalid_namespace, ZonedDevice};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use zonelab_flash::FlashCounters;
use zonelab_sim::Nanos;

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
        with_front!(&mut self.front, f => f.power_cut(at_ns))
    }
}

/// Every namespace of one device, commands routed by NSID. As a
/// [`ZonedDevice`], the single-namespace methods address NSID 1.
pub struct Namespaces {
    config: DeviceConfig,
    list: Vec<Namespace>,
}

impl Namespaces {
    /// The namespaces of `config` (one without `[[namespaces]]`).
    pub fn new(config: DeviceConfig) -> Result<Self, ConfigError> {
        let configs = namespace_configs(&config)?;
        let ssd = Arc::new(Mutex::new(Ssd::new(&config, crate::Tracking::ALL)));
        let mut first_block = 0;
        let mut list = Vec::with_capacity(configs.len());
        for (nsid, (c, layout)) in (1..).zip(configs) {
            // Each namespace's share of every plane follows the one before it.
            let partition = Partition::new(first_block, c.flash.blocks_per_plane);
            first_block += c.flash.blocks_per_plane;
            let front = Fronts::new(c, layout, crate::Tracking::ALL, partition);
            list.push(Namespace { nsid, front, ssd: Arc::clone(&ssd) });
        }
        assert!(first_block <= config.flash.blocks_per_plane, "validation keeps the namespaces within the flash");
        Ok(Self { config, list })
    }

    /// The device's configuration, with its `[[namespaces]]`.
    pub fn device_config(&self) -> &DeviceConfig {
        &self.config
    }

    /// The namespace with `nsid`, if there is one.
    pub fn namespace(&self, nsid: u32) -> Option<&Namespace> {
        self.list.get(usize::try_from(nsid).ok()?.checked_sub(1)?)
    }

    /// The namespaces, NSID 1 first, to serve each on its own.
    pub fn into_namespaces(self) -> Vec<Namespace> {
        self.list
    }

    fn index(&self, nsid: u32) -> Option<usize> {
        let index = usize::try_from(nsid).ok()?.checked_sub(1)?;
        (index < self.list.len()).then_some(index)
    }

    fn tag(index: usize, tag: Tag) -> Tag {
        tag * Tag::from(NAMESPACES_MAX) + index as Tag
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
    /// earliest first, so that they take the shared dies in time order.
    fn advance(&mut self, until_ns: Nanos) {
        // Each round runs at least one step, or refreshes the stale die times
        // of a namespace once; the devices bound their own steps.
        for _ in 0..u32::MAX {
            let next = (0..self.list.len())
                .filter_map(|i| self.list[i].next_event_ns().map(|t| (t, i)))
                .filter(|&(t, _)| t < until_ns)
                .min();
            let Some((t, i)) = next else { return };
            self.list[i].advance(t.saturating_add(1).min(until_ns));
        }
        panic!("namespaces' background work did not settle");
    }
    fn next_event_ns(&self) -> Option<Nanos> {
        self.list.iter().filter_map(Namespace::next_event_ns).min()
    }
    /// Completions of every namespace, by completion time; tags carry the
    /// namespace (tag × [`NAMESPACES_MAX`] + NSID − 1).
    fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        let mut all: Vec<(Tag, Completion)> = Vec::new();
        for (i, ns) in self.list.iter_mut().enumerate() {
            all.extend(ns.take_completed().into_iter().map(|(tag, c)| (Self::tag(i, tag), c)));
        }
        all.sort_by_key(|(tag, c)| (c.complete_ns, *tag));
        all
    }
    fn pending_tasks(&self) -> usize {
        self.list.iter().map(Namespace::pending_tasks).sum()
    }
    fn identify(&self) -> IdentifyData {
        self.list[0].identify()
    }
    fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        self.list[0].descriptor(zone)
    }
    fn zones(&self) -> &ZoneTable {
        self.list[0].zones()
    }
    fn layout(&self) -> &Layout {
        self.list[0].layout()
    }
    fn config(&self) -> &DeviceConfig {
        self.list[0].config()
    }
    fn counters(&self) -> DeviceCounters {
        self.list[0].counters()
    }
    /// The device's flash: every namespace's work.
    fn flash_counters(&self) -> FlashCounters {
        self.list[0].flash_counters()
    }
    fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        self.list[0].set_zone_state(slba, state)
    }
    /// Power fails for the whole device: every namespace loses what it had
    /// not made durable.
    fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport {
        self.list.iter_mut().map(|ns| ns.power_cut(at_ns)).fold(PowerCutReport::default(), |a, b| PowerCutReport {
            zones_rolled_back: a.zones_rolled_back + b.zones_rolled_back,
            lost_blocks: a.lost_blocks + b.lost_blocks,
        })
    }
    fn namespace_count(&self) -> u32 {
        u32::try_from(self.list.len()).expect("at most NAMESPACES_MAX namespaces")
    }
    fn layout_in(&self, nsid: u32) -> Option<&Layout> {
        self.namespace(nsid).map(Namespace::layout)
    }
    fn set_zone_state_in(&mut self, nsid: u32, slba: u64, state: ZoneState) -> Result<(), Status> {
        let index = self.index(nsid).ok_or(Status::InvalidNamespace)?;
        self.list[index].set_zone_state(slba, state)
    }
    fn start_in(&mut self, nsid: u32, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        let Some(index) = self.index(nsid) else {
            return Started::Done(invalid_namespace(&self.config, submit_ns));
        };
        self.advance(submit_ns);
        match self.list[index].start(submit_ns, cmd, read_out) {
            Started::Pending(tag) => Started::Pending(Self::tag(index, tag)),
            done => done,
        }
    }
    fn submit_in(&mut self, nsid: u32, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        let Some(index) = self.index(nsid) else { return invalid_namespace(&self.config, submit_ns) };
        self.advance(submit_ns);
        self.list[index].submit(submit_ns, cmd, read_out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Payload, ZoneAction};
    use crate::config::namespaces::two_namespaces;

    fn write(slba: u64, nlb: u32) -> Command<'static> {
        Command::Write { slba, nlb, payload: Payload::None, fua: false }
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
        let shares: Vec<u32> = dev.list.iter().map(|ns| ns.front.core().config.flash.blocks_per_plane).collect();
        assert_eq!(dev.list[1].front.core().partition, Partition::new(shares[0], shares[1]));
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
        let ssd = dev.list[0].ssd();
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
        assert!(with_front!(&dev.list[1].front, f => f.ftl_counters()).is_some(), "NSID 2 is page-mapped");
        assert!(with_front!(&dev.list[0].front, f => f.ftl_counters()).is_none(), "NSID 1 is zoned");
        let (zoned, nvm) = (dev.list[0].front.core().layout.zones, dev.list[1].front.core().layout.nsze_lbas);
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
        let gc = with_front!(&dev.list[1].front, f => f.ftl_counters()).unwrap();
        let shares: Vec<u32> = dev.list.iter().map(|ns| ns.front.core().config.flash.blocks_per_plane).collect();
        eprintln!("blocks per plane {shares:?}; after 3 overwrites of NSID 2: {gc:?}");
        assert!(gc.victims > 0 && gc.write_amplification > 1.05, "{gc:?} {shares:?}");
        with_front!(&dev.list[1].front, f => f.check_ftl());
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
