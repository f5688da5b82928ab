//! The write cache's bookkeeping: what of each sequential zone's data is
//! taken in and what is durable, updated as data enters a zone's buffer and
//! as its units are programmed. [`crate::power`] reads it for Flush, FUA and
//! a power cut.

use super::Backend;
use crate::config::WriteCache;
use crate::zone::ZoneType;
use zonelab_sim::Nanos;

impl Backend {
    pub(crate) fn volatile_cache(&self) -> bool {
        self.config.write_buffer.cache == WriteCache::Volatile
    }

    /// Whether `zone`'s durability is kept: a sequential zone of a zoned
    /// namespace, on a device that keeps durability at all.
    #[inline]
    pub(crate) fn tracked(&self, zone: u32) -> bool {
        // A page-mapped namespace's zones are all conventional.
        self.durability_kept() && self.zones.zone_type(zone) == ZoneType::SeqWriteRequired
    }

    /// Hook, before the fill: `lbas` more LBAs of `zone` are in the
    /// controller at `at_ns` (a copy's as soon as its command is submitted:
    /// its source is still on flash and the firmware redoes it on recovery).
    #[inline(always)]
    pub(crate) fn cache_fill(&mut self, zone: u32, lbas: u64, at_ns: Nanos) {
        // Inlined, so that a device that keeps no durability pays one test.
        if self.durability_kept() {
            self.cache_fill_kept(zone, lbas, at_ns);
        }
    }

    #[inline(never)]
    fn cache_fill_kept(&mut self, zone: u32, lbas: u64, at_ns: Nanos) {
        if !self.tracked(zone) {
            return;
        }
        let start = self.controller.filled_lbas(zone);
        let now_ns = self.last_submit_ns;
        let program_ns = self.config.flash_timing.program_ns;
        let z = self.controller.durability_mut(zone);
        z.fill(start, lbas, at_ns, now_ns);
        // Units issued before a power cut and lost with it are not programmed
        // again: data written into them is programmed elsewhere.
        if start < z.reissued_end_lbas {
            let end = (start + lbas).min(z.reissued_end_lbas);
            z.durable(start, end, at_ns + program_ns, now_ns);
        }
    }

    /// Zone offsets covered by the units issued to flash in the current lap.
    pub(crate) fn issued_end_lbas(&self, zone: u32) -> u64 {
        let flushed_units = self.controller.flushed_units(zone);
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
        let z = self.controller.durability_mut(zone);
        for chunk in self.translation.mapping.unit_chunks(unit) {
            z.durable(chunk * per_chunk, (chunk + 1) * per_chunk, done_ns, now_ns);
        }
    }

    /// Hook: a write (or append) from `slba` completes at `done_ns`.
    #[inline(always)]
    pub(crate) fn cache_write_issued(&mut self, slba: u64, done_ns: Nanos) {
        if self.durability_kept() {
            self.cache_write_issued_kept(slba, done_ns);
        }
    }

    #[inline(never)]
    fn cache_write_issued_kept(&mut self, slba: u64, done_ns: Nanos) {
        let zone = self.zones.zone_of(slba);
        if !self.tracked(zone) {
            return;
        }
        let start = slba - self.zones.zslba(zone);
        let now_ns = self.last_submit_ns;
        self.controller.durability_mut(zone).write_issued(start, done_ns, now_ns);
    }

    /// Hook: the zone's buffered data is gone (reset, offline, TL_open).
    pub(crate) fn cache_discard(&mut self, zone: u32) {
        self.controller.discard_durability(zone);
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
            let z = self.controller.durability_mut(zone);
            let filled = z.filled_lbas();
            z.fill(0, filled, at_ns, now_ns);
            z.durable(0, filled, at_ns, now_ns);
        }
    }
}
