//! Zone states, write pointers and open/active resource accounting.

use crate::config::zrwa::ZrwaLimits;
use crate::status::Status;
use std::collections::BTreeMap;

mod zrwa;

/// Zone State of the zoned namespace state machine (ZNS Command Set §2.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZoneState {
    /// ZSE: no data, write pointer at the zone start.
    Empty,
    /// ZSIO: opened by a write; the device may close it to free an open resource.
    ImplicitlyOpened,
    /// ZSEO: opened by Open Zone; stays open until the host closes or finishes it.
    ExplicitlyOpened,
    /// ZSC: written, not open; still holds an active resource.
    Closed,
    /// ZSF: written to capacity or finished; no more writes until a reset.
    Full,
    /// ZSRO: readable only; set by fault injection (`set_zone_state`).
    ReadOnly,
    /// ZSO: neither readable nor writable.
    Offline,
    /// Conventional zones have no write pointer.
    NotWritePointer,
}

impl ZoneState {
    /// The states a sequential zone can be in (Report Zones filters).
    pub const SEQUENTIAL: [ZoneState; 7] = [
        ZoneState::Empty,
        ZoneState::ImplicitlyOpened,
        ZoneState::ExplicitlyOpened,
        ZoneState::Closed,
        ZoneState::Full,
        ZoneState::ReadOnly,
        ZoneState::Offline,
    ];

    /// The name traces and reports use (`empty`, `implicitly_opened`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ZoneState::Empty => "empty",
            ZoneState::ImplicitlyOpened => "implicitly_opened",
            ZoneState::ExplicitlyOpened => "explicitly_opened",
            ZoneState::Closed => "closed",
            ZoneState::Full => "full",
            ZoneState::ReadOnly => "read_only",
            ZoneState::Offline => "offline",
            ZoneState::NotWritePointer => "not_write_pointer",
        }
    }

    /// The state named `s`, as [`ZoneState::name`] spells it.
    pub fn parse(s: &str) -> Option<Self> {
        Self::SEQUENTIAL.into_iter().chain([ZoneState::NotWritePointer]).find(|z| z.name() == s)
    }

    /// Implicitly or explicitly opened: holds an open resource.
    #[inline]
    pub fn is_open(self) -> bool {
        matches!(self, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened)
    }

    /// Open or closed: holds an active resource.
    pub fn is_active(self) -> bool {
        self.is_open() || self == ZoneState::Closed
    }
}

/// Zone Type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZoneType {
    /// Randomly writable, no write pointer (at the start of the namespace).
    Conventional,
    /// Sequential Write Required: writes only at the write pointer.
    SeqWriteRequired,
}

impl ZoneType {
    /// The name traces and reports use.
    pub fn name(self) -> &'static str {
        match self {
            ZoneType::Conventional => "conventional",
            ZoneType::SeqWriteRequired => "seq_write_required",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Zone {
    state: ZoneState,
    /// Absolute LBA of the write pointer.
    wp: u64,
    /// When the zone became implicitly opened (key into the LRU).
    open_seq: u64,
    /// The zone holds a Zone Random Write Area (attribute ZRWAV).
    zrwa: bool,
}

/// Outcome of taking a zone for a write: whether the write opened it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteAdmission {
    /// The write took an empty or closed zone to implicitly opened.
    pub implicitly_opened: bool,
    /// A zone the device closed to free an open resource.
    pub auto_closed: Option<u32>,
    /// The zone holds a ZRWA: the write lands in its window and does not
    /// move the write pointer by itself.
    pub window: bool,
}

/// All zones of the namespace and the open/active resources they hold.
#[derive(Debug, Clone)]
pub struct ZoneTable {
    zones: Vec<Zone>,
    zone_lbas_log2: u32,
    zcap_lbas: u64,
    conventional: u32,
    /// 0 = unlimited.
    max_open: u32,
    max_active: u32,
    open: u32,
    active: u32,
    /// Implicitly opened zones by the order they were opened in.
    implicit_lru: BTreeMap<u64, u32>,
    seq_next: u64,
    /// ZRWA geometry (`lbas` 0: the namespace has none).
    zrwa: ZrwaLimits,
    /// Zones holding a ZRWA now.
    zrwa_held: u32,
}

impl ZoneTable {
    /// `zones` zones of 2^`zone_lbas_log2` LBAs each, the first `conventional`
    /// of them conventional, all others empty; `max_open` and `max_active`
    /// bound the open and active resources (0: no limit).
    pub fn new(
        zones: u32,
        conventional: u32,
        zone_lbas_log2: u32,
        zcap_lbas: u64,
        max_open: u32,
        max_active: u32,
    ) -> Self {
        assert!(conventional <= zones && zcap_lbas <= 1 << zone_lbas_log2);
        let table = (0..zones)
            .map(|i| Zone {
                state: if i < conventional { ZoneState::NotWritePointer } else { ZoneState::Empty },
                wp: u64::from(i) << zone_lbas_log2,
                open_seq: 0,
                zrwa: false,
            })
            .collect();
        Self {
            zones: table,
            zone_lbas_log2,
            zcap_lbas,
            conventional,
            max_open,
            max_active,
            open: 0,
            active: 0,
            implicit_lru: BTreeMap::new(),
            seq_next: 0,
            zrwa: ZrwaLimits::default(),
            zrwa_held: 0,
        }
    }

    /// The zones of a namespace with `layout` and the resource limits of `config`.
    pub fn of(config: &crate::config::DeviceConfig, layout: &crate::config::Layout) -> Self {
        let ns = &config.namespace;
        let (open_max, active_max) = (ns.max_open_zones, ns.max_active_zones);
        let table = Self::new(
            layout.zones,
            layout.conventional_zones,
            layout.zone_lbas_log2,
            layout.zcap_lbas,
            open_max,
            active_max,
        );
        match &ns.zrwa {
            Some(z) => table.with_zrwa(z.limits(config, layout).expect("a validated configuration")),
            None => table,
        }
    }

    /// Zones in the namespace.
    pub fn len(&self) -> u32 {
        u32::try_from(self.zones.len()).expect("built for layout.zones zones, a u32")
    }
    /// True for a namespace without zones.
    pub fn is_empty(&self) -> bool {
        self.zones.is_empty()
    }
    /// Zone Start LBA of `zone`.
    #[inline]
    pub fn zslba(&self, zone: u32) -> u64 {
        u64::from(zone) << self.zone_lbas_log2
    }
    /// The zone holding `lba`.
    #[inline]
    pub fn zone_of(&self, lba: u64) -> u32 {
        u32::try_from(lba >> self.zone_lbas_log2)
            .expect("an LBA of the namespace: its zone is below layout.zones, a u32")
    }
    /// Zone capacity in LBAs (the same for every zone).
    pub fn zcap(&self) -> u64 {
        self.zcap_lbas
    }
    /// State of `zone`.
    #[inline]
    pub fn state(&self, zone: u32) -> ZoneState {
        self.zones[zone as usize].state
    }
    /// Write pointer of `zone` (an absolute LBA).
    #[inline]
    pub fn wp(&self, zone: u32) -> u64 {
        self.zones[zone as usize].wp
    }
    /// Conventional or sequential-write-required.
    #[inline]
    pub fn zone_type(&self, zone: u32) -> ZoneType {
        if zone < self.conventional {
            ZoneType::Conventional
        } else {
            ZoneType::SeqWriteRequired
        }
    }
    /// Zones holding an open resource now.
    pub fn open_count(&self) -> u32 {
        self.open
    }
    /// Zones holding an active resource now.
    pub fn active_count(&self) -> u32 {
        self.active
    }

    fn set_state(&mut self, zone: u32, state: ZoneState) {
        let z = &mut self.zones[zone as usize];
        let old = z.state;
        if old.is_open() {
            self.open -= 1;
        }
        if old.is_active() {
            self.active -= 1;
        }
        if old == ZoneState::ImplicitlyOpened {
            self.implicit_lru.remove(&z.open_seq);
        }
        z.state = state;
        // Only an active zone holds a ZRWA: finish, reset and failures release it.
        if z.zrwa && !state.is_active() {
            z.zrwa = false;
            self.zrwa_held -= 1;
        }
        if state.is_open() {
            self.open += 1;
        }
        if state.is_active() {
            self.active += 1;
        }
        if state == ZoneState::ImplicitlyOpened {
            z.open_seq = self.seq_next;
            self.implicit_lru.insert(self.seq_next, zone);
            self.seq_next += 1;
        }
        debug_assert!(self.max_open == 0 || self.open <= self.max_open);
        debug_assert!(self.max_active == 0 || self.active <= self.max_active);
    }

    /// Checks that `zone` (in state Empty or Closed) can become open, and
    /// take a ZRWA if `zrwa`, closing the implicitly opened zone opened
    /// longest ago if the open resources are used up. Returns the zone it
    /// closed, if any. A refusal changes nothing.
    fn make_room_to_open(&mut self, zone: u32, zrwa: bool) -> Result<Option<u32>, Status> {
        let state = self.state(zone);
        debug_assert!(matches!(state, ZoneState::Empty | ZoneState::Closed | ZoneState::Full));
        if state != ZoneState::Closed && self.max_active != 0 && self.active >= self.max_active {
            return Err(Status::TooManyActiveZones);
        }
        let open_full = self.max_open != 0 && self.open >= self.max_open;
        let victim = if open_full { self.implicit_lru.first_key_value().map(|(_, &v)| v) } else { None };
        if open_full && victim.is_none() {
            return Err(Status::TooManyOpenZones);
        }
        if zrwa && !self.zones[zone as usize].zrwa && self.zrwa_held >= self.zrwa.resources {
            return Err(Status::ZrwaResourcesUnavailable);
        }
        if let Some(victim) = victim {
            self.set_state(victim, ZoneState::Closed);
        }
        Ok(victim)
    }

    /// Takes `zone` for a write of `nlb` blocks at the write pointer: state
    /// and resource rules of Write and Zone Append (the caller has checked
    /// range, write pointer and boundary).
    #[inline(always)]
    pub fn admit_write(&mut self, zone: u32) -> Result<WriteAdmission, Status> {
        match self.state(zone) {
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::NotWritePointer => {
                Ok(WriteAdmission { implicitly_opened: false, auto_closed: None, window: false })
            }
            ZoneState::Empty | ZoneState::Closed => self.open_for_write(zone),
            ZoneState::Full => Err(Status::ZoneIsFull),
            ZoneState::ReadOnly => Err(Status::ZoneIsReadOnly),
            ZoneState::Offline => Err(Status::ZoneIsOffline),
        }
    }

    /// A write implicitly opens empty or closed `zone`. Out of line: most
    /// writes go to a zone that is open already.
    #[inline(never)]
    fn open_for_write(&mut self, zone: u32) -> Result<WriteAdmission, Status> {
        let auto_closed = self.make_room_to_open(zone, false)?;
        self.set_state(zone, ZoneState::ImplicitlyOpened);
        Ok(WriteAdmission { implicitly_opened: true, auto_closed, window: false })
    }

    /// Takes `zone` for a write of LBAs `slba..end` that must start at the
    /// write pointer: the checks of Write in the command set's order (state,
    /// write pointer, capacity), then [`ZoneTable::admit_write`].
    #[inline(always)]
    pub fn admit_write_at_wp(&mut self, zone: u32, slba: u64, end: u64) -> Result<WriteAdmission, Status> {
        let capacity_end = self.zslba(zone) + self.zcap_lbas;
        let z = &self.zones[zone as usize];
        // Most writes continue an open zone: every check passes, nothing changes.
        if z.state.is_open() && slba == z.wp && end <= capacity_end && !z.zrwa {
            return Ok(WriteAdmission { implicitly_opened: false, auto_closed: None, window: false });
        }
        self.check_writable(zone)?;
        if self.zones[zone as usize].zrwa {
            return self.admit_window_write(zone, slba, end);
        }
        if slba != self.wp(zone) {
            return Err(Status::ZoneInvalidWrite);
        }
        if end > capacity_end {
            return Err(Status::ZoneBoundaryError);
        }
        self.admit_write(zone)
    }

    /// State check of a write, before the write pointer and boundary checks.
    #[inline]
    pub fn check_writable(&self, zone: u32) -> Result<(), Status> {
        match self.state(zone) {
            ZoneState::Full => Err(Status::ZoneIsFull),
            ZoneState::ReadOnly => Err(Status::ZoneIsReadOnly),
            ZoneState::Offline => Err(Status::ZoneIsOffline),
            _ => Ok(()),
        }
    }

    /// Advances the write pointer of an admitted write; returns true if the
    /// zone became full.
    #[inline]
    pub fn advance_wp(&mut self, zone: u32, nlb: u64) -> bool {
        let end = self.zslba(zone) + self.zcap_lbas;
        let z = &mut self.zones[zone as usize];
        assert!(z.state.is_open(), "write pointer moves only in an open zone");
        z.wp += nlb;
        assert!(z.wp <= end, "write past zone capacity");
        if z.wp == end {
            self.fill_up(zone);
            return true;
        }
        false
    }

    /// The zone's write pointer reached its capacity.
    #[inline(never)]
    fn fill_up(&mut self, zone: u32) {
        self.set_state(zone, ZoneState::Full);
    }

    /// After a power cut the zone's write pointer is rebuilt at `wp`, below
    /// where it was: a full zone is closed, a zone left without data empty
    /// (unless TL_opened, which stays open).
    pub fn recover_wp(&mut self, zone: u32, wp: u64, tl_opened: bool) {
        let zslba = self.zslba(zone);
        assert!(wp >= zslba && wp <= self.zones[zone as usize].wp, "a power cut only loses data");
        self.zones[zone as usize].wp = wp;
        let state = self.state(zone);
        if tl_opened {
            return;
        }
        if wp == zslba && state != ZoneState::Empty {
            self.set_state(zone, ZoneState::Empty);
        } else if state == ZoneState::Full {
            self.set_state(zone, ZoneState::Closed);
        }
    }

    /// Open Zone: empty, closed or implicitly opened becomes explicitly opened.
    /// Returns a zone the device closed to make room, if any; the NVMe status
    /// when the transition or the resources forbid it.
    pub fn open(&mut self, zone: u32) -> Result<Option<u32>, Status> {
        match self.state(zone) {
            ZoneState::Empty | ZoneState::Closed => {
                let auto_closed = self.make_room_to_open(zone, false)?;
                self.set_state(zone, ZoneState::ExplicitlyOpened);
                Ok(auto_closed)
            }
            ZoneState::ImplicitlyOpened => {
                self.set_state(zone, ZoneState::ExplicitlyOpened);
                Ok(None)
            }
            ZoneState::ExplicitlyOpened => Ok(None),
            _ => Err(Status::ZoneInvalidStateTransition),
        }
    }

    /// TL_open (ZNS+): the zone becomes explicitly opened with its write
    /// pointer back at its start. Resources as for Open, a full zone needing an
    /// active and an open one like an empty zone. Returns the zone auto-closed
    /// to free an open resource, if any.
    pub fn tl_open(&mut self, zone: u32) -> Result<Option<u32>, Status> {
        if self.zones[zone as usize].zrwa {
            // Threaded logging writes below the window's write pointer.
            return Err(Status::InvalidZoneOperation);
        }
        let auto_closed = match self.state(zone) {
            ZoneState::Empty | ZoneState::Closed | ZoneState::Full => self.make_room_to_open(zone, false)?,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => None,
            _ => return Err(Status::ZoneInvalidStateTransition),
        };
        self.set_state(zone, ZoneState::ExplicitlyOpened);
        self.zones[zone as usize].wp = self.zslba(zone);
        Ok(auto_closed)
    }

    /// Close Zone: an open zone becomes closed (closing a closed zone is a no-op).
    pub fn close(&mut self, zone: u32) -> Result<(), Status> {
        match self.state(zone) {
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                self.set_state(zone, ZoneState::Closed);
                Ok(())
            }
            ZoneState::Closed => Ok(()),
            _ => Err(Status::ZoneInvalidStateTransition),
        }
    }

    /// Finish: the zone becomes full with its write pointer at the end; returns
    /// the write pointer it had.
    pub fn finish(&mut self, zone: u32) -> Result<u64, Status> {
        match self.state(zone) {
            ZoneState::Empty | ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened | ZoneState::Closed => {
                let old_wp = self.wp(zone);
                self.set_state(zone, ZoneState::Full);
                self.zones[zone as usize].wp = self.zslba(zone) + self.zcap_lbas;
                Ok(old_wp)
            }
            ZoneState::Full => Ok(self.wp(zone)),
            _ => Err(Status::ZoneInvalidStateTransition),
        }
    }

    /// Reset: the zone becomes empty; returns the write pointer it had.
    pub fn reset(&mut self, zone: u32) -> Result<u64, Status> {
        match self.state(zone) {
            ZoneState::ReadOnly | ZoneState::Offline | ZoneState::NotWritePointer => {
                Err(Status::ZoneInvalidStateTransition)
            }
            _ => {
                let old_wp = self.wp(zone);
                self.set_state(zone, ZoneState::Empty);
                self.zones[zone as usize].wp = self.zslba(zone);
                Ok(old_wp)
            }
        }
    }

    /// Offline Zone: only a read-only zone may go offline.
    pub fn offline(&mut self, zone: u32) -> Result<(), Status> {
        match self.state(zone) {
            ZoneState::ReadOnly | ZoneState::Offline => {
                self.set_state(zone, ZoneState::Offline);
                Ok(())
            }
            _ => Err(Status::ZoneInvalidStateTransition),
        }
    }

    /// Fault injection: the zone fails into Read Only or Offline, releasing
    /// whatever resources it held.
    pub fn inject_fault(&mut self, zone: u32, state: ZoneState) {
        assert!(matches!(state, ZoneState::ReadOnly | ZoneState::Offline));
        self.set_state(zone, state);
    }

    /// Recounts resources from the states (for invariant checks in tests).
    pub fn recount(&self) -> (u32, u32) {
        let count = |is: fn(ZoneState) -> bool| {
            u32::try_from(self.zones.iter().filter(|z| is(z.state)).count()).expect("at most layout.zones, a u32")
        };
        (count(ZoneState::is_open), count(ZoneState::is_active))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> ZoneTable {
        ZoneTable::new(8, 0, 4, 12, 2, 3)
    }

    #[test]
    fn write_opens_implicitly_and_auto_closes_oldest() {
        let mut t = table();
        assert!(t.admit_write(0).unwrap().implicitly_opened);
        t.admit_write(1).unwrap();
        let a = t.admit_write(2).unwrap();
        assert_eq!(a.auto_closed, Some(0), "zone opened longest ago is closed");
        assert_eq!(t.state(0), ZoneState::Closed);
        assert_eq!((t.open_count(), t.active_count()), (2, 3));
        assert_eq!(t.admit_write(3), Err(Status::TooManyActiveZones));
        assert_eq!(t.recount(), (2, 3));
    }

    #[test]
    fn explicit_opens_are_never_auto_closed() {
        let mut t = table();
        t.open(0).unwrap();
        t.open(1).unwrap();
        assert_eq!(t.admit_write(2), Err(Status::TooManyOpenZones));
        assert_eq!(t.state(2), ZoneState::Empty);
        assert_eq!(t.open(2), Err(Status::TooManyOpenZones));
    }

    #[test]
    fn full_releases_resources() {
        let mut t = table();
        t.admit_write(0).unwrap();
        assert!(!t.advance_wp(0, 8));
        assert!(t.advance_wp(0, 4));
        assert_eq!(t.state(0), ZoneState::Full);
        assert_eq!((t.open_count(), t.active_count()), (0, 0));
        assert_eq!(t.reset(0), Ok(12));
        assert_eq!((t.state(0), t.wp(0)), (ZoneState::Empty, 0));
    }
}
