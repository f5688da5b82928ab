//! Zone Random Write Area (NVMe TP 4076) in the zone layer: which zones hold
//! a ZRWA, the ZRWA resources, the window a write may land in, and how
//! implicit and explicit commits move the write pointer. The data of the
//! window is the controller's (`controller::ZoneIo`).

use super::{WriteAdmission, ZoneState, ZoneTable};
use crate::config::zrwa::ZrwaLimits;
use crate::status::Status;

impl ZoneTable {
    /// The table with the namespace's ZRWA capabilities.
    pub fn with_zrwa(mut self, limits: ZrwaLimits) -> Self {
        assert!(limits.lbas > 0 && limits.flush_lbas > 0 && limits.lbas.is_multiple_of(limits.flush_lbas));
        assert!(limits.resources > 0 && self.zcap_lbas.is_multiple_of(limits.flush_lbas));
        self.zrwa = limits;
        self
    }

    /// The namespace's ZRWA geometry (`lbas` 0: it has none).
    pub fn zrwa_limits(&self) -> ZrwaLimits {
        self.zrwa
    }

    /// Whether `zone` holds a ZRWA (zone attribute ZRWAV).
    #[inline]
    pub fn has_zrwa(&self, zone: u32) -> bool {
        self.zones[zone as usize].zrwa
    }

    /// Zones holding a ZRWA now.
    pub fn zrwa_held(&self) -> u32 {
        self.zrwa_held
    }

    /// A write of LBAs `slba..end` into `zone`, which holds a ZRWA and is
    /// writable: it may start anywhere from the write pointer and end within
    /// the ZRWA and the implicit commit range beyond it (2 × ZRWAS from the
    /// write pointer) and within the capacity; then the write rules' resources.
    pub(super) fn admit_window_write(&mut self, zone: u32, slba: u64, end: u64) -> Result<WriteAdmission, Status> {
        let wp = self.wp(zone);
        if slba < wp || end > wp + 2 * self.zrwa.lbas {
            return Err(Status::ZoneInvalidWrite);
        }
        if end > self.zslba(zone) + self.zcap_lbas {
            return Err(Status::ZoneBoundaryError);
        }
        let admission = self.admit_write(zone)?;
        Ok(WriteAdmission { window: true, ..admission })
    }

    /// LBAs an admitted window write ending before `end` commits implicitly:
    /// what passes the ZRWA, rounded up to the flush granularity.
    pub fn implicit_commit_lbas(&self, zone: u32, end: u64) -> u64 {
        let window_end = self.wp(zone) + self.zrwa.lbas;
        end.saturating_sub(window_end).div_ceil(self.zrwa.flush_lbas) * self.zrwa.flush_lbas
    }

    /// Commits `lbas` LBAs of open `zone`'s ZRWA: the write pointer moves
    /// past them; returns true if the zone became full (its ZRWA released).
    pub fn commit(&mut self, zone: u32, lbas: u64) -> bool {
        debug_assert!(self.has_zrwa(zone) && lbas.is_multiple_of(self.zrwa.flush_lbas));
        lbas > 0 && self.advance_wp(zone, lbas)
    }

    /// Open Zone with ZRWA Allocate: as Open, and the zone takes a ZRWA
    /// resource (keeps the one it holds). Its write pointer must lie on the
    /// flush granularity. Returns the zone auto-closed, if any.
    pub fn open_zrwa(&mut self, zone: u32) -> Result<Option<u32>, Status> {
        if self.zrwa.lbas == 0 {
            return Err(Status::InvalidZoneOperation);
        }
        if !(self.wp(zone) - self.zslba(zone)).is_multiple_of(self.zrwa.flush_lbas) {
            return Err(Status::ZrwaResourcesUnavailable);
        }
        let auto_closed = match self.state(zone) {
            ZoneState::Empty | ZoneState::Closed => self.make_room_to_open(zone, true)?,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                if !self.has_zrwa(zone) && self.zrwa_held >= self.zrwa.resources {
                    return Err(Status::ZrwaResourcesUnavailable);
                }
                None
            }
            _ => return Err(Status::ZoneInvalidStateTransition),
        };
        if self.state(zone) != ZoneState::ExplicitlyOpened {
            self.set_state(zone, ZoneState::ExplicitlyOpened);
        }
        if !self.has_zrwa(zone) {
            self.zones[zone as usize].zrwa = true;
            self.zrwa_held += 1;
        }
        debug_assert!(self.zrwa_held <= self.zrwa.resources);
        Ok(auto_closed)
    }

    /// The checks of Flush Explicit ZRWA Range up to LBA `elba` (inclusive)
    /// in sequential `zone`, then the zone taken as a write takes it (a
    /// closed zone opens implicitly). Returns the LBAs to commit and the
    /// admission; the caller commits them ([`ZoneTable::commit`]).
    pub fn explicit_commit(&mut self, zone: u32, elba: u64) -> Result<(u64, WriteAdmission), Status> {
        if self.zrwa.lbas == 0 {
            return Err(Status::InvalidZoneOperation);
        }
        if !self.zrwa.explicit_commit || !self.has_zrwa(zone) {
            return Err(Status::InvalidField);
        }
        let wp = self.wp(zone);
        if elba < wp || elba >= wp + self.zrwa.lbas || elba >= self.zslba(zone) + self.zcap_lbas {
            return Err(Status::ZoneBoundaryError);
        }
        let lbas = elba + 1 - wp;
        if !lbas.is_multiple_of(self.zrwa.flush_lbas) {
            return Err(Status::InvalidField);
        }
        let admission = self.admit_write(zone)?;
        Ok((lbas, admission))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 8 zones of 64 LBAs, capacity 48, 2 open, 3 active, 2 ZRWAs of 8 LBAs
    /// committed 4 at a time.
    fn table() -> ZoneTable {
        let limits = ZrwaLimits { lbas: 8, flush_lbas: 4, resources: 2, explicit_commit: true };
        ZoneTable::new(8, 0, 6, 48, 2, 3).with_zrwa(limits)
    }

    #[test]
    fn a_window_write_lands_anywhere_in_twice_the_zrwa() {
        let mut t = table();
        t.open_zrwa(0).unwrap();
        assert!(t.admit_write_at_wp(0, 5, 8).unwrap().window);
        assert_eq!(t.implicit_commit_lbas(0, 8), 0, "inside the ZRWA: nothing commits");
        assert_eq!(t.admit_write_at_wp(0, 10, 17), Err(Status::ZoneInvalidWrite), "past 2 x ZRWAS");
        assert!(t.admit_write_at_wp(0, 10, 16).is_ok());
        assert_eq!(t.implicit_commit_lbas(0, 16), 8);
        assert_eq!(t.implicit_commit_lbas(0, 9), 4, "rounded up to the flush granularity");
        assert!(!t.commit(0, 4));
        assert_eq!(t.admit_write_at_wp(0, 3, 4), Err(Status::ZoneInvalidWrite), "below the write pointer");
    }

    #[test]
    fn zrwa_resources_are_taken_by_open_and_released_by_finish_and_reset() {
        let mut t = table();
        t.open_zrwa(0).unwrap();
        t.open_zrwa(1).unwrap();
        assert_eq!(t.open_zrwa(1), Ok(None), "a zone keeps its ZRWA");
        assert_eq!(t.open_zrwa(2), Err(Status::TooManyOpenZones), "open before ZRWA");
        t.close(1).unwrap();
        assert_eq!(t.open_zrwa(2), Err(Status::ZrwaResourcesUnavailable));
        assert_eq!(t.state(2), ZoneState::Empty, "a refusal changes nothing");
        t.finish(0).unwrap();
        assert!(!t.has_zrwa(0));
        t.open_zrwa(2).unwrap();
        assert!(t.has_zrwa(1), "closing keeps the ZRWA");
        t.reset(1).unwrap();
        assert_eq!(t.zrwa_held(), 1);
    }

    #[test]
    fn explicit_commits_follow_granularity_and_bounds() {
        let mut t = table();
        assert_eq!(t.explicit_commit(0, 3), Err(Status::InvalidField), "no ZRWA");
        t.open_zrwa(0).unwrap();
        assert_eq!(t.explicit_commit(0, 2), Err(Status::InvalidField), "3 LBAs: not a granule");
        assert_eq!(t.explicit_commit(0, 8), Err(Status::ZoneBoundaryError), "past the ZRWA");
        let (lbas, _) = t.explicit_commit(0, 7).unwrap();
        assert!(!t.commit(0, lbas));
        assert_eq!(t.wp(0), 8);
        t.close(0).unwrap();
        let (lbas, admission) = t.explicit_commit(0, 11).unwrap();
        assert!(admission.implicitly_opened, "a closed zone opens to commit");
        assert_eq!(lbas, 4);
    }

    #[test]
    fn committing_to_capacity_fills_the_zone_and_frees_its_zrwa() {
        let mut t = table();
        t.open_zrwa(0).unwrap();
        for _ in 0..5 {
            t.commit(0, 8);
        }
        assert_eq!(t.explicit_commit(0, 48), Err(Status::ZoneBoundaryError), "past the capacity");
        assert!(t.commit(0, 8));
        assert_eq!((t.state(0), t.has_zrwa(0), t.zrwa_held()), (ZoneState::Full, false, 0));
    }

    #[test]
    fn zrwa_allocation_needs_support_and_an_aligned_write_pointer() {
        let mut plain = ZoneTable::new(8, 0, 6, 48, 2, 3);
        assert_eq!(plain.open_zrwa(0), Err(Status::InvalidZoneOperation));
        let mut t = table();
        t.admit_write(0).unwrap();
        t.advance_wp(0, 2);
        assert_eq!(t.open_zrwa(0), Err(Status::ZrwaResourcesUnavailable));
        t.advance_wp(0, 2);
        t.open_zrwa(0).unwrap();
        assert_eq!(t.state(0), ZoneState::ExplicitlyOpened);
    }
}
