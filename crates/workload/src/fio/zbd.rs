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
    /// Written or reserved LBAs of each zone, counted from its start.
    planned_wp: Vec<u64>,
    sequential: Vec<bool>,
    /// Zones written by jobs and not yet full, in opening order.
    open: Vec<u32>,
    /// Whether each zone is in `open`: checked on every write.
    is_open: Vec<bool>,
    pub open_limit: u32,
}

impl ZoneView {
    pub fn new<D: ZonedDevice + ?Sized>(device: &D, open_limit: u32) -> Self {
        let layout = device.layout();
        let zones = device.zones();
        let mut planned_wp = Vec::with_capacity(layout.zones as usize);
        let mut sequential = Vec::with_capacity(layout.zones as usize);
        let mut open = Vec::new();
        let mut is_open = vec![false; layout.zones as usize];
        for zone in 0..layout.zones {
            let seq = zones.zone_type(zone) == ZoneType::SeqWriteRequired;
            let state = zones.state(zone);
            let wp = match state {
                ZoneState::Full | ZoneState::ReadOnly | ZoneState::Offline => layout.zcap_lbas,
                _ if seq => zones.wp(zone) - zones.zslba(zone),
                _ => 0,
            };
            if seq && state.is_open() {
                open.push(zone);
                is_open[zone as usize] = true;
            }
            planned_wp.push(wp);
            sequential.push(seq);
        }
        assert!(open_limit > 0);
        ZoneView {
            zone_lbas: layout.zone_lbas,
            zcap_lbas: layout.zcap_lbas,
            zones: layout.zones,
            planned_wp,
            sequential,
            open,
            is_open,
            open_limit,
        }
    }

    pub fn zone_of(&self, lba: u64) -> u32 {
        (lba / self.zone_lbas) as u32
    }
    pub fn zslba(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_lbas
    }
    pub fn is_sequential(&self, zone: u32) -> bool {
        self.sequential[zone as usize]
    }
    /// Room left for writes, in LBAs.
    pub fn room(&self, zone: u32) -> u64 {
        self.zcap_lbas - self.planned_wp[zone as usize]
    }
    pub fn planned_wp(&self, zone: u32) -> u64 {
        self.zslba(zone) + self.planned_wp[zone as usize]
    }
    pub fn is_open(&self, zone: u32) -> bool {
        self.is_open[zone as usize]
    }
    pub fn open_zones(&self) -> &[u32] {
        &self.open
    }
    pub fn can_open(&self) -> bool {
        (self.open.len() as u32) < self.open_limit
    }

    /// Reserves `nlb` at the zone's write pointer; returns the LBA written.
    pub fn reserve(&mut self, zone: u32, nlb: u64) -> u64 {
        assert!(nlb <= self.room(zone), "write beyond zone capacity");
        let lba = self.planned_wp(zone);
        let wp = &mut self.planned_wp[zone as usize];
        *wp += nlb;
        let full = *wp == self.zcap_lbas;
        if self.sequential[zone as usize] && !self.is_open[zone as usize] {
            self.open.push(zone);
            self.is_open[zone as usize] = true;
        }
        if full {
            self.close(zone);
        }
        lba
    }

    /// The zone is no longer open: full, reset or finished.
    fn close(&mut self, zone: u32) {
        if std::mem::replace(&mut self.is_open[zone as usize], false) {
            self.open.retain(|&z| z != zone);
        }
    }

    pub fn any_sequential(&self, first: u32, end: u32) -> bool {
        self.sequential[first as usize..end as usize].iter().any(|&s| s)
    }

    /// The zone was reset or finished.
    pub fn set_empty(&mut self, zone: u32) {
        self.planned_wp[zone as usize] = 0;
        self.close(zone);
    }
    pub fn set_full(&mut self, zone: u32) {
        self.planned_wp[zone as usize] = self.zcap_lbas;
        self.close(zone);
    }

    /// Written LBAs over the sequential zones of [first, end).
    pub fn written_lbas(&self, first: u32, end: u32) -> u64 {
        self.planned_wp[first as usize..end as usize].iter().sum()
    }
}
