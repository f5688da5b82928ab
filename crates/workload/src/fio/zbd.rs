//! fio's zonemode=zbd, as its own test suite relies on: writes go to a zone's
//! write pointer, the number of zones written at once stays within
//! max_open_zones (shared by all jobs) and job_max_open_zones (per job), a
//! write that finds its zone full resets it first, reads stay below the write
//! pointer unless read_beyond_wp. Write pointers are tracked as fio does, at
//! submission, so that queued writes and appends never overflow a zone.

use zonelab_device::{ZoneState, ZoneType, ZonedDevice};

pub struct ZoneView {
    pub zone_lbas: u64,
    pub zcap_lbas: u64,
    pub zones: u32,
    /// Each zone's state as the jobs plan it; one entry per zone, so that a
    /// write looks its zone up once.
    slots: Vec<ZoneSlot>,
    /// Zones written by jobs and not yet full, in opening order.
    open: Vec<u32>,
    pub open_limit: u32,
}

#[derive(Debug, Clone, Copy)]
struct ZoneSlot {
    /// Written or reserved LBAs, counted from the zone's start.
    planned_wp: u64,
    sequential: bool,
    /// Whether the zone is in `open`: checked on every write.
    is_open: bool,
}

impl ZoneView {
    pub fn new<D: ZonedDevice + ?Sized>(device: &D, open_limit: u32) -> Self {
        let layout = device.layout();
        let zones = device.zones();
        let mut slots = Vec::with_capacity(layout.zones as usize);
        let mut open = Vec::new();
        for zone in 0..layout.zones {
            let seq = zones.zone_type(zone) == ZoneType::SeqWriteRequired;
            let state = zones.state(zone);
            let wp = match state {
                ZoneState::Full | ZoneState::ReadOnly | ZoneState::Offline => layout.zcap_lbas,
                _ if seq => zones.wp(zone) - zones.zslba(zone),
                _ => 0,
            };
            let is_open = seq && state.is_open();
            if is_open {
                open.push(zone);
            }
            slots.push(ZoneSlot { planned_wp: wp, sequential: seq, is_open });
        }
        assert!(open_limit > 0);
        ZoneView {
            zone_lbas: layout.zone_lbas,
            zcap_lbas: layout.zcap_lbas,
            zones: layout.zones,
            slots,
            open,
            open_limit,
        }
    }

    /// fio's zones over a namespace without any (`init_zone_info`): `zones`
    /// sequential zones of `zone_lbas`, `zcap_lbas` writable, all empty.
    pub fn emulated(zone_lbas: u64, zcap_lbas: u64, zones: u32, open_limit: u32) -> Self {
        assert!(open_limit > 0 && zcap_lbas <= zone_lbas);
        let empty = ZoneSlot { planned_wp: 0, sequential: true, is_open: false };
        ZoneView { zone_lbas, zcap_lbas, zones, slots: vec![empty; zones as usize], open: Vec::new(), open_limit }
    }

    pub fn zone_of(&self, lba: u64) -> u32 {
        (lba / self.zone_lbas) as u32
    }
    pub fn zslba(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_lbas
    }
    pub fn is_sequential(&self, zone: u32) -> bool {
        self.slots[zone as usize].sequential
    }
    /// Room left for writes, in LBAs.
    pub fn room(&self, zone: u32) -> u64 {
        self.zcap_lbas - self.slots[zone as usize].planned_wp
    }
    /// The zone's room left for writes (in LBAs), whether it is sequential,
    /// and whether it is open: what a write looks at, in one lookup.
    #[inline]
    pub fn state_of(&self, zone: u32) -> (u64, bool, bool) {
        let slot = self.slots[zone as usize];
        (self.zcap_lbas - slot.planned_wp, slot.sequential, slot.is_open)
    }
    pub fn is_open(&self, zone: u32) -> bool {
        self.slots[zone as usize].is_open
    }
    pub fn open_zones(&self) -> &[u32] {
        &self.open
    }
    pub fn can_open(&self) -> bool {
        (self.open.len() as u32) < self.open_limit
    }

    /// Reserves `nlb` at the zone's write pointer; returns the LBA written.
    #[inline]
    pub fn reserve(&mut self, zone: u32, nlb: u64) -> u64 {
        let zslba = self.zslba(zone);
        let slot = &mut self.slots[zone as usize];
        assert!(nlb <= self.zcap_lbas - slot.planned_wp, "write beyond zone capacity");
        let lba = zslba + slot.planned_wp;
        slot.planned_wp += nlb;
        let full = slot.planned_wp == self.zcap_lbas;
        if slot.sequential && !slot.is_open {
            slot.is_open = true;
            self.open.push(zone);
        }
        if full {
            self.close(zone);
        }
        lba
    }

    /// The zone is no longer open: full, reset or finished.
    fn close(&mut self, zone: u32) {
        if std::mem::replace(&mut self.slots[zone as usize].is_open, false) {
            self.open.retain(|&z| z != zone);
        }
    }

    pub fn any_sequential(&self, first: u32, end: u32) -> bool {
        self.slots[first as usize..end as usize].iter().any(|s| s.sequential)
    }

    /// The zone was reset or finished.
    pub fn set_empty(&mut self, zone: u32) {
        self.slots[zone as usize].planned_wp = 0;
        self.close(zone);
    }
    pub fn set_full(&mut self, zone: u32) {
        self.slots[zone as usize].planned_wp = self.zcap_lbas;
        self.close(zone);
    }

    /// Written LBAs over the sequential zones of [first, end).
    pub fn written_lbas(&self, first: u32, end: u32) -> u64 {
        self.slots[first as usize..end as usize].iter().map(|s| s.planned_wp).sum()
    }
}
