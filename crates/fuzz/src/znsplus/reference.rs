//! The reference model of the ZNS+ command set that sequences are checked
//! against: written from the rules in `zonelab_device::znsplus` and the NVMe
//! ZNS state machine, independently of the device's code. One byte per
//! block (every write fills a block with one value), zone states, write
//! pointers, TL_open's valid bitmaps and the open/active resource limits
//! with the device's choice of the zone to close implicitly (the oldest
//! implicitly opened one).

use zonelab_device::{Status, ZoneAction, ZoneState};

/// The geometry and limits the model follows, read from the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Sequential zones (the model has no conventional zones).
    pub zones: u32,
    /// LBAs per zone (its size).
    pub zone_lbas: u64,
    /// Writable LBAs per zone (its capacity).
    pub zcap_lbas: u64,
    /// LBAs per flash chunk, for copies of whole chunks.
    pub chunk_lbas: u64,
    /// Maximum open resources.
    pub max_open: u32,
    /// Maximum active resources.
    pub max_active: u32,
}

impl Geometry {
    /// LBAs of the namespace.
    pub fn nsze(&self) -> u64 {
        u64::from(self.zones) * self.zone_lbas
    }

    /// The first LBA of `zone`.
    pub fn zslba(&self, zone: u32) -> u64 {
        u64::from(zone) * self.zone_lbas
    }

    /// The zone of `lba`.
    pub fn zone_of(&self, lba: u64) -> u32 {
        (lba / self.zone_lbas) as u32
    }

    /// One past the zone's last writable LBA.
    pub fn zcap_end(&self, zone: u32) -> u64 {
        self.zslba(zone) + self.zcap_lbas
    }
}

/// One zone as the model sees it.
#[derive(Debug, Clone)]
pub struct Zone {
    /// Its state.
    pub state: ZoneState,
    /// Its write pointer (an absolute LBA).
    pub wp: u64,
    /// The valid bitmap over the zone's capacity while it is TL_opened.
    pub tl: Option<Vec<bool>>,
}

/// The reference model.
pub struct Model {
    /// Its geometry.
    pub geometry: Geometry,
    lba_ordered: bool,
    zones: Vec<Zone>,
    implicit_order: Vec<u32>,
    /// One byte per block: the value its 4 KiB hold (0 reads as zeros).
    pub data: Vec<u8>,
}

fn is_open(s: ZoneState) -> bool {
    matches!(s, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened)
}

fn is_active(s: ZoneState) -> bool {
    is_open(s) || s == ZoneState::Closed
}

impl Model {
    /// Every zone empty; `lba_ordered` plugging moves a TL_opened zone's
    /// write pointer over the valid blocks that follow it.
    pub fn new(geometry: Geometry, lba_ordered: bool) -> Self {
        let zones =
            (0..geometry.zones).map(|z| Zone { state: ZoneState::Empty, wp: geometry.zslba(z), tl: None }).collect();
        let data = vec![0; geometry.nsze() as usize];
        Self { geometry, lba_ordered, zones, implicit_order: Vec::new(), data }
    }

    /// Zone `zone`.
    pub fn z(&self, zone: u32) -> &Zone {
        &self.zones[zone as usize]
    }

    fn set_state(&mut self, zone: u32, state: ZoneState) {
        self.implicit_order.retain(|&z| z != zone);
        if state == ZoneState::ImplicitlyOpened {
            self.implicit_order.push(zone);
        }
        self.zones[zone as usize].state = state;
    }

    fn take_resources(&mut self, zone: u32) -> Result<(), Status> {
        let open = self.zones.iter().filter(|z| is_open(z.state)).count() as u32;
        let active = self.zones.iter().filter(|z| is_active(z.state)).count() as u32;
        if self.z(zone).state != ZoneState::Closed && active >= self.geometry.max_active {
            return Err(Status::TooManyActiveZones);
        }
        if open < self.geometry.max_open {
            return Ok(());
        }
        match self.implicit_order.first() {
            Some(&oldest) => {
                self.set_state(oldest, ZoneState::Closed);
                Ok(())
            }
            None => Err(Status::TooManyOpenZones),
        }
    }

    fn writable(&self, zone: u32) -> Result<(), Status> {
        match self.z(zone).state {
            ZoneState::Full => Err(Status::ZoneIsFull),
            ZoneState::ReadOnly => Err(Status::ZoneIsReadOnly),
            ZoneState::Offline => Err(Status::ZoneIsOffline),
            _ => Ok(()),
        }
    }

    /// Whether `lba` is a valid block of a TL_opened zone.
    pub fn valid(&self, lba: u64) -> bool {
        let g = self.geometry;
        let z = self.z(g.zone_of(lba));
        z.tl.as_ref().is_some_and(|v| v.get((lba - g.zslba(g.zone_of(lba))) as usize).copied().unwrap_or(false))
    }

    fn admit(&mut self, zone: u32) -> Result<(), Status> {
        if matches!(self.z(zone).state, ZoneState::Empty | ZoneState::Closed) {
            self.take_resources(zone)?;
            self.set_state(zone, ZoneState::ImplicitlyOpened);
        }
        Ok(())
    }

    /// The write pointer moves to `to`: skipped blocks of a TL_opened zone
    /// keep their data if valid and read as zeros if not.
    fn move_wp(&mut self, zone: u32, to: u64) {
        let wp = self.z(zone).wp;
        for lba in wp..to {
            if !self.valid(lba) {
                self.data[lba as usize] = 0;
            }
        }
        self.zones[zone as usize].wp = to.max(wp);
    }

    /// After a write pointer move: LBA-ordered plugging, then full handling.
    fn after_move(&mut self, zone: u32) {
        let end = self.geometry.zcap_end(zone);
        if self.lba_ordered && self.z(zone).tl.is_some() && is_open(self.z(zone).state) {
            let mut to = self.z(zone).wp;
            while to < end && self.valid(to) {
                to += 1;
            }
            self.move_wp(zone, to);
        }
        if self.z(zone).wp == end {
            self.set_state(zone, ZoneState::Full);
            self.finalize(zone);
        }
    }

    /// The LogFBG replaces the original: nothing is left above the write pointer.
    fn finalize(&mut self, zone: u32) {
        if self.zones[zone as usize].tl.take().is_some() {
            let wp = self.z(zone).wp;
            let end = self.geometry.zslba(zone) + self.geometry.zone_lbas;
            self.data[wp as usize..end as usize].fill(0);
        }
    }

    fn valid_end(&self, zone: u32) -> u64 {
        let start = self.geometry.zslba(zone);
        (start..self.geometry.zcap_end(zone)).rev().find(|&l| self.valid(l)).map_or(start, |l| l + 1)
    }

    /// Write of `nlb` blocks of value `p` at `slba`.
    pub fn write(&mut self, slba: u64, nlb: u32, p: u8) -> Result<(), Status> {
        if slba.saturating_add(u64::from(nlb)) > self.geometry.nsze() {
            return Err(Status::LbaOutOfRange);
        }
        self.write_checked(slba, nlb, p)
    }

    /// Write after the range check (Zone Append checks its range at the zone start).
    fn write_checked(&mut self, slba: u64, nlb: u32, p: u8) -> Result<(), Status> {
        let end = slba + u64::from(nlb);
        let zone = self.geometry.zone_of(slba);
        let zcap_end = self.geometry.zcap_end(zone);
        self.writable(zone)?;
        let bad = match self.z(zone).tl {
            Some(_) => slba < self.z(zone).wp || (slba..end.min(zcap_end)).any(|l| self.valid(l)),
            None => slba != self.z(zone).wp,
        };
        if bad {
            return Err(Status::ZoneInvalidWrite);
        }
        if end > zcap_end {
            return Err(Status::ZoneBoundaryError);
        }
        self.admit(zone)?;
        self.move_wp(zone, slba);
        self.data[slba as usize..end as usize].fill(p);
        self.zones[zone as usize].wp = end;
        self.after_move(zone);
        Ok(())
    }

    /// Zone Append of `nlb` blocks to `zone`: where they went.
    pub fn append(&mut self, zone: u32, nlb: u32, p: u8) -> Result<u64, Status> {
        if self.z(zone).tl.is_some() {
            return Err(Status::InvalidZoneOperation);
        }
        self.writable(zone)?;
        let lba = self.z(zone).wp;
        self.write_checked(lba, nlb, p)?;
        Ok(lba)
    }

    /// zone_compaction (`simple`: Simple Copy) of block `src[i]` to `dst[i]`.
    pub fn copy(&mut self, src: &[u64], dst: &[u64], simple: bool) -> Result<(), Status> {
        if src.len() != dst.len() || src.is_empty() {
            return Err(Status::InvalidField);
        }
        let g = self.geometry;
        if src.iter().chain(dst).any(|&l| l >= g.nsze()) {
            return Err(Status::LbaOutOfRange);
        }
        if src.iter().any(|&l| self.z(g.zone_of(l)).state == ZoneState::Offline) {
            return Err(Status::ZoneIsOffline);
        }
        let zone = g.zone_of(dst[0]);
        if dst.iter().any(|&l| g.zone_of(l) != zone) {
            return Err(Status::ZoneBoundaryError);
        }
        self.writable(zone)?;
        let wp = self.z(zone).wp;
        let increasing = dst.windows(2).all(|w| w[0] < w[1]);
        let bad = match self.z(zone).tl {
            Some(_) => dst.iter().any(|&l| self.valid(l)),
            None => simple && dst[0] != wp,
        };
        if !increasing || dst[0] < wp || bad {
            return Err(Status::ZoneInvalidWrite);
        }
        if dst[dst.len() - 1] >= g.zcap_end(zone) {
            return Err(Status::ZoneBoundaryError);
        }
        self.admit(zone)?;
        let blocks: Vec<u8> = src.iter().map(|&l| self.data[l as usize]).collect();
        for (&d, b) in dst.iter().zip(blocks) {
            self.move_wp(zone, d);
            self.data[d as usize] = b;
            self.zones[zone as usize].wp = d + 1;
        }
        self.after_move(zone);
        Ok(())
    }

    /// TL_open of `zone` with the valid bitmap `valid` (over its capacity).
    pub fn tl_open(&mut self, zone: u32, valid: &[bool]) -> Result<(), Status> {
        let written = self.z(zone).wp - self.geometry.zslba(zone);
        if valid.iter().enumerate().any(|(o, &v)| v && o as u64 >= written) {
            return Err(Status::InvalidField);
        }
        let state = self.z(zone).state;
        if self.z(zone).tl.is_some() || matches!(state, ZoneState::ReadOnly | ZoneState::Offline) {
            return Err(Status::ZoneInvalidStateTransition);
        }
        if matches!(state, ZoneState::Empty | ZoneState::Closed | ZoneState::Full) {
            self.take_resources(zone)?;
        }
        self.set_state(zone, ZoneState::ExplicitlyOpened);
        let start = self.geometry.zslba(zone);
        let z = &mut self.zones[zone as usize];
        z.wp = start;
        z.tl = Some(valid.to_vec());
        self.after_move(zone);
        Ok(())
    }

    /// Zone Management Send `action` on `zone`, or with Select All on every
    /// zone in a state it applies to, in zone order, stopping at the first
    /// error.
    pub fn mgmt(&mut self, action: ZoneAction, zone: u32, select_all: bool) -> Result<(), Status> {
        if !select_all {
            return self.mgmt_one(action, zone);
        }
        for z in 0..self.geometry.zones {
            let state = self.z(z).state;
            let applies = match action {
                ZoneAction::Open => state == ZoneState::Closed,
                ZoneAction::Close => is_open(state),
                ZoneAction::Finish => is_active(state),
                ZoneAction::Reset => is_active(state) || state == ZoneState::Full,
                ZoneAction::Offline => state == ZoneState::ReadOnly,
                ZoneAction::OpenZrwa | ZoneAction::FlushZrwa => false,
            };
            if applies {
                self.mgmt_one(action, z)?;
            }
        }
        Ok(())
    }

    fn mgmt_one(&mut self, action: ZoneAction, zone: u32) -> Result<(), Status> {
        use ZoneState::*;
        let state = self.z(zone).state;
        let bad = Err(Status::ZoneInvalidStateTransition);
        match action {
            ZoneAction::Open => match state {
                Empty | Closed => {
                    self.take_resources(zone)?;
                    self.set_state(zone, ExplicitlyOpened);
                }
                ImplicitlyOpened | ExplicitlyOpened => self.set_state(zone, ExplicitlyOpened),
                _ => return bad,
            },
            ZoneAction::Close if self.z(zone).tl.is_some() => self.close_tl(zone),
            ZoneAction::Close => match state {
                ImplicitlyOpened | ExplicitlyOpened | Closed => self.set_state(zone, Closed),
                _ => return bad,
            },
            ZoneAction::Finish => match state {
                ReadOnly | Offline => return bad,
                _ => self.finish(zone),
            },
            ZoneAction::Reset => match state {
                ReadOnly | Offline => return bad,
                _ => self.reset(zone),
            },
            ZoneAction::Offline => return bad,
            // The device fuzzed here has no ZRWA.
            ZoneAction::OpenZrwa | ZoneAction::FlushZrwa => return Err(Status::InvalidZoneOperation),
        }
        Ok(())
    }

    /// Close of a TL_opened zone: its write pointer moves past its last
    /// valid block and the original block group is dropped.
    fn close_tl(&mut self, zone: u32) {
        let end = self.valid_end(zone);
        self.move_wp(zone, end);
        let state = if self.z(zone).wp == self.geometry.zcap_end(zone) { ZoneState::Full } else { ZoneState::Closed };
        self.set_state(zone, state);
        self.finalize(zone);
    }

    fn finish(&mut self, zone: u32) {
        if self.z(zone).tl.is_some() {
            let end = self.valid_end(zone);
            self.move_wp(zone, end);
            self.finalize(zone);
        }
        self.set_state(zone, ZoneState::Full);
        self.zones[zone as usize].wp = self.geometry.zcap_end(zone);
    }

    fn reset(&mut self, zone: u32) {
        self.set_state(zone, ZoneState::Empty);
        let start = self.geometry.zslba(zone);
        let z = &mut self.zones[zone as usize];
        z.wp = start;
        z.tl = None;
        self.data[start as usize..(start + self.geometry.zone_lbas) as usize].fill(0);
    }
}
