//! Flush, FUA and power loss.
//!
//! The write buffer ([`crate::config::WriteCache`]) is either power-loss
//! protected (`plp`: whatever reached the controller survives a power cut,
//! capacitors program it) or volatile: data survives only once its program
//! unit is programmed, or once a Flush (or a FUA write) saved it. A Flush
//! waits for the data of every completed write; a zone whose data is not all
//! programmed has its partly filled unit saved to power-safe flash
//! (`write_buffer.partial_unit_flush_ns`, zones in parallel). A FUA write
//! completes only once its zone's data up to its end is durable.
//!
//! [`Device::power_cut`] at an instant: every sequential zone keeps the
//! longest prefix of its data that survives (durable, or with `plp` taken
//! in), and writes in flight are torn at that point or, with
//! `power_cut_in_flight = "lost"`, lost whole. On recovery the write pointer
//! is at the end of that prefix, a zone that lost data and was full is
//! closed (empty if nothing is left) and the data after it reads as zeros, as
//! on a drive whose write pointer is rebuilt from flash. Units that were
//! issued to flash but lost (torn programs) cannot be programmed again:
//! data later written into them is taken as programmed elsewhere, durable
//! one program time after it is in. Conventional zones and the conventional
//! FTL keep what they took in (their mapping is not rebuilt). Zone
//! management commands are durable when they complete; background work of
//! a pending finish or reset runs on.

use crate::config::{InFlight, WriteCache};
use crate::device::Device;
use crate::front::command::CmdResult;
use crate::status::Status;
use crate::zone::{ZoneState, ZoneType};
use zonelab_sim::Nanos;

/// What [`Device::power_cut`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PowerCutReport {
    /// Zones whose write pointer moved back.
    pub zones_rolled_back: u32,
    /// Blocks the host had written (or the device had copied) that are gone.
    pub lost_blocks: u64,
}

impl Device {
    fn volatile_cache(&self) -> bool {
        self.config.write_buffer.cache == WriteCache::Volatile
    }

    fn tracked(&self, zone: u32) -> bool {
        self.zones.zone_type(zone) == ZoneType::SeqWriteRequired && self.translation.conventional.is_none()
    }

    /// Hook, before the fill: `lbas` more LBAs of `zone` are in the
    /// controller at `at_ns` (a copy's as soon as its command is submitted:
    /// its source is still on flash and the firmware redoes it on recovery).
    pub(crate) fn cache_fill(&mut self, zone: u32, lbas: u64, at_ns: Nanos) {
        if !self.tracked(zone) {
            return;
        }
        let start = self.controller.zone_io[zone as usize].filled_lbas;
        let now_ns = self.last_submit_ns;
        let program_ns = self.config.flash_timing.program_ns;
        let z = &mut self.controller.write_cache.zones[zone as usize];
        z.fill(start, lbas, at_ns, now_ns);
        // Units issued before a power cut and lost with it are not programmed
        // again: data written into them is programmed elsewhere.
        if start < z.reissued_end_lbas {
            let end = (start + lbas).min(z.reissued_end_lbas);
            z.durable(start, end, at_ns + program_ns, now_ns);
        }
    }

    /// Zone offsets covered by the units issued to flash in the current lap.
    fn issued_end_lbas(&self, zone: u32) -> u64 {
        let flushed_units = self.controller.zone_io[zone as usize].flushed_units;
        if flushed_units == 0 {
            return 0;
        }
        let (_, last_chunk) = self.translation.mapping.unit_chunk_span(flushed_units - 1);
        (last_chunk + 1) * self.layout.lbas_per_chunk
    }

    /// Hook: program unit `unit` of `zone` holds its data on flash from `done_ns` on.
    pub(crate) fn cache_programmed(&mut self, zone: u32, unit: u64, done_ns: Nanos) {
        // With power-loss protection what is taken in survives: programs do not matter.
        if !self.volatile_cache() || !self.tracked(zone) {
            return;
        }
        let per_chunk = self.layout.lbas_per_chunk;
        let now_ns = self.last_submit_ns;
        let z = &mut self.controller.write_cache.zones[zone as usize];
        for chunk in self.translation.mapping.unit_chunks(unit) {
            z.durable(chunk * per_chunk, (chunk + 1) * per_chunk, done_ns, now_ns);
        }
    }

    /// Hook: a write (or append) from `slba` completes at `done_ns`.
    pub(crate) fn cache_write_issued(&mut self, slba: u64, done_ns: Nanos) {
        let zone = self.zones.zone_of(slba);
        if !self.tracked(zone) {
            return;
        }
        let start = slba - self.zones.zslba(zone);
        let now_ns = self.last_submit_ns;
        self.controller.write_cache.zones[zone as usize].write_issued(start, done_ns, now_ns);
    }

    /// Hook: the zone's buffered data is gone (reset, offline, TL_open).
    pub(crate) fn cache_discard(&mut self, zone: u32) {
        self.controller.write_cache.discard(zone);
    }

    /// NVMe Flush: completes once the data of every completed write is durable.
    pub(crate) fn flush(&mut self, ready_ns: Nanos) -> (Status, Nanos, CmdResult) {
        let fw_end = self.controller.firmware.reserve(ready_ns, self.config.write_buffer.flush_ns);
        self.counters.flushes += 1;
        if !self.volatile_cache() {
            return (Status::Success, fw_end, CmdResult::None);
        }
        let mut done = fw_end;
        for zone in 0..self.layout.zones {
            if self.tracked(zone) {
                done = done.max(self.save_zone(zone, fw_end, None));
            }
        }
        (Status::Success, done, CmdResult::None)
    }

    /// A FUA write of `zone` up to zone offset `end` was in at `done_ns`:
    /// when it is durable.
    pub(crate) fn fua_done(&mut self, slba: u64, nlb: u32, done_ns: Nanos) -> Nanos {
        let zone = self.zones.zone_of(slba);
        if !self.volatile_cache() || !self.tracked(zone) {
            return done_ns;
        }
        let end = slba + u64::from(nlb) - self.zones.zslba(zone);
        let fw_end = self.controller.firmware.reserve(done_ns, self.config.write_buffer.flush_ns);
        self.save_zone(zone, fw_end, Some(end))
    }

    /// Hook: a TL_opened zone's LogFBG replaces its original block group
    /// (close, finish, or a write reaching the zone's end). The swap is
    /// atomic with the command that causes it: from its submission on the
    /// zone's data survives a power cut, copies and that command's data in
    /// flight too (the model keeps no original to fall back to).
    pub(crate) fn cache_persist(&mut self, zone: u32) {
        if self.tracked(zone) {
            let now_ns = self.last_submit_ns;
            let at_ns = now_ns;
            let z = &mut self.controller.write_cache.zones[zone as usize];
            let filled = z.filled_lbas();
            z.fill(0, filled, at_ns, now_ns);
            z.durable(0, filled, at_ns, now_ns);
        }
    }

    /// Saves the zone's data in the controller at `at_ns` (up to `end`, if
    /// given) that is not durable yet; returns when it is.
    fn save_zone(&mut self, zone: u32, at_ns: Nanos, end: Option<u64>) -> Nanos {
        let now_ns = self.last_submit_ns;
        let partial_ns = self.config.write_buffer.partial_unit_flush_ns;
        let z = &mut self.controller.write_cache.zones[zone as usize];
        let taken = z.taken_prefix(at_ns);
        let end = end.map_or(taken, |e| e.max(taken));
        if z.durable_prefix(at_ns) >= end {
            return at_ns;
        }
        let done = at_ns + partial_ns;
        z.durable(0, end, done, now_ns);
        self.counters.flush_saves += 1;
        done
    }

    /// Power fails at `at_ns` (not before the last submitted command) and
    /// comes back: every zone keeps what survives, as the module describes.
    pub fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport {
        assert!(at_ns >= self.last_submit_ns, "a power cut cannot undo a later submission");
        let mut report = PowerCutReport::default();
        for zone in 0..self.layout.zones {
            if !self.tracked(zone) || !matches!(self.zones.state(zone), s if s.is_active() || s == ZoneState::Full) {
                continue;
            }
            let z = &self.controller.write_cache.zones[zone as usize];
            let mut keep = if self.volatile_cache() { z.durable_prefix(at_ns) } else { z.taken_prefix(at_ns) };
            if self.config.write_buffer.power_cut_in_flight == InFlight::Lost {
                keep = keep.min(z.first_incomplete(at_ns).unwrap_or(u64::MAX));
            }
            let written = self.zones.wp(zone) - self.zones.zslba(zone);
            let filled = z.filled_lbas();
            if keep >= filled.min(written) {
                // Nothing the host wrote is lost (the fill may run ahead of
                // the write pointer in a TL_opened zone: kept with it).
                self.controller.write_cache.zones[zone as usize].recovered(filled);
                continue;
            }
            if filled < written {
                // Finished (durably, a zone management command): it stays
                // full, the data it lost reads as zeros.
                report.lost_blocks += filled - keep;
                if let Some(d) = self.data.as_mut() {
                    d.truncate(self.zones.zslba(zone) + keep);
                }
                self.controller.write_cache.zones[zone as usize].recovered(keep);
                continue;
            }
            report.zones_rolled_back += 1;
            report.lost_blocks += written - keep;
            self.roll_back(zone, keep);
        }
        self.counters.power_cuts += 1;
        self.last_submit_ns = at_ns;
        report
    }

    /// The zone keeps its first `keep` LBAs.
    fn roll_back(&mut self, zone: u32, keep: u64) {
        let zslba = self.zones.zslba(zone);
        self.zones.recover_wp(zone, zslba + keep, self.translation.tl.contains_key(&zone));
        if let Some(d) = self.data.as_mut() {
            d.truncate(zslba + keep);
        }
        let per_chunk = self.layout.lbas_per_chunk;
        // Data lost from units not issued yet leaves the buffer.
        let issued_end = self.issued_end_lbas(zone);
        let io = &mut self.controller.zone_io[zone as usize];
        let unissued_lost = io.filled_lbas.max(issued_end) - keep.max(issued_end);
        io.buffer.release_unissued(unissued_lost * self.layout.lba_bytes);
        io.filled_lbas = keep;
        let first_lost_unit = self.translation.mapping.unit_of_chunk(keep / per_chunk);
        io.unit_ready.retain(|&u, _| u < first_lost_unit);
        io.gate.clear();
        let z = &mut self.controller.write_cache.zones[zone as usize];
        z.recovered(keep);
        z.reissued_end_lbas = issued_end;
    }
}
