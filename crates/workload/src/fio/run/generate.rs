//! What a thread issues next: direction, block size and offset, with fio's
//! rules for sequential and random access, rate limits, and zonemode=zbd.

use super::*;

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    pub(super) fn next_io(&mut self, now: Nanos, t: u32) -> Next {
        let k = self.space_of(t);
        if self.threads[t as usize].replay.is_some() {
            return self.next_replay(now, t);
        }
        let thread = &mut self.threads[t as usize];
        let options = &thread.options;
        let bytes_left = thread.limit_bytes.saturating_sub(thread.issued_bytes);
        if (!options.time_based && bytes_left == 0) || options.number_ios.is_some_and(|n| thread.issued_ios >= n) {
            return Next::End;
        }
        let ddir = match options.rw {
            RwKind::Read | RwKind::RandRead => DDIR_READ,
            RwKind::Write | RwKind::RandWrite => DDIR_WRITE,
            RwKind::Trim => DDIR_TRIM,
            RwKind::ReadWrite | RwKind::RandRw => {
                if thread.rng.below(100) < u64::from(options.rwmixread) {
                    DDIR_READ
                } else {
                    DDIR_WRITE
                }
            }
        };
        if now < thread.rate_next_ns[ddir] {
            return Next::Ahead(thread.rate_next_ns[ddir]);
        }
        let bs = options.bs[ddir];
        let time_based = options.time_based;
        let mut bytes = bs.min_bytes + thread.rng.below(bs.choices) * bs.unit_bytes;
        if !time_based {
            bytes = bytes.min(bytes_left / self.spaces.get(k).lba_bytes * self.spaces.get(k).lba_bytes);
            if bytes == 0 {
                return Next::End;
            }
        }
        let nlb = if bytes == bs.min_bytes { bs.min_lbas } else { (bytes / self.spaces.get(k).lba_bytes) as u32 };
        if thread.options.zbd {
            return match ddir {
                DDIR_WRITE => self.zbd_write(now, t, nlb),
                DDIR_READ => self.zbd_read(t, nlb),
                _ => self.zbd_trim(now, t, nlb),
            };
        }
        let slba = self.plain_offset(t, ddir, nlb);
        let op = if ddir == DDIR_READ { RequestOp::Read } else { RequestOp::Write };
        let zone = Some(self.spaces.get(k).zones.zone_of(slba));
        Next::Io(Planned { ddir, op, slba, nlb, zone, kind: IoKind::Data })
    }

    /// zonemode=none: sequential offsets wrap at the end of the range; random
    /// ones come from the distribution, aligned to the smallest block size.
    fn plain_offset(&mut self, t: u32, ddir: usize, nlb: u32) -> u64 {
        let k = self.space_of(t);
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let thread = &mut self.threads[t as usize];
        let nlb = u64::from(nlb);
        if job.rw.is_random() {
            let unit = (job.bs[ddir].min_bytes / self.spaces.get(k).lba_bytes).max(1);
            let block = thread.offsets.next(&mut thread.rng);
            let slba = thread.region_start + block * unit;
            return slba.min(thread.region_end - nlb);
        }
        if thread.seq_next[ddir] + nlb > thread.region_end {
            thread.seq_next[ddir] = thread.region_start;
        }
        let slba = thread.seq_next[ddir];
        thread.seq_next[ddir] += nlb;
        slba
    }

    fn random_zone(&mut self, t: u32) -> u32 {
        let k = self.space_of(t);
        let thread = &mut self.threads[t as usize];
        let block = thread.offsets.next(&mut thread.rng);
        let lba = thread.region_start + block * thread.unit_lbas;
        self.spaces.get(k).zones.zone_of(lba).clamp(thread.first_zone, thread.end_zone - 1)
    }

    /// Writes go to the write pointer; a zone found full is reset before it
    /// is rewritten; at most `open_limit` zones (and job_max_open_zones per
    /// thread) are written at once.
    fn zbd_write(&mut self, now: Nanos, t: u32, nlb: u32) -> Next {
        let k = self.space_of(t);
        let thread = &self.threads[t as usize];
        let options = &thread.options;
        let (random, management, kind, op) =
            (options.rw.is_random(), options.management, options.write_kind, options.write_op);
        let zones_in_range = thread.end_zone - thread.first_zone;
        for _ in 0..=zones_in_range + 1 {
            let wanted = if random { self.random_zone(t) } else { self.threads[t as usize].cursor_zone[DDIR_WRITE] };
            let Some(zone) = self.admit_zone(t, wanted) else { return self.wait_for_open_zone(now, t) };
            // One look at the zone: nothing below changes it before `reserve`.
            let (room, sequential, open) = self.spaces.get(k).zones.state_of(zone);
            let written_here = self.threads[t as usize].cursor_written;
            if !random && written_here && (management || room < u64::from(nlb)) {
                // The cursor's zone is done with: move on.
                self.advance_write_cursor(t);
                continue;
            }
            if !sequential {
                // Conventional zones take plain writes anywhere: the cursor
                // wraps without a reset, and zone management skips them.
                if management {
                    self.advance_write_cursor(t);
                    continue;
                }
                if room < u64::from(nlb) {
                    self.spaces.get_mut(k).zones.set_empty(zone);
                }
                self.threads[t as usize].cursor_written = true;
                let slba = self.spaces.get_mut(k).zones.reserve(zone, u64::from(nlb));
                return Next::Io(Planned { ddir: DDIR_WRITE, op: RequestOp::Write, slba, nlb, zone: Some(zone), kind });
            }
            let must_be_empty = management && room < self.spaces.get(k).zones.zcap_lbas;
            let threshold = random && room < self.spaces.get(k).zones.zcap_lbas && self.over_reset_threshold(t);
            if room < u64::from(nlb) || must_be_empty || threshold {
                return Next::Reset(zone);
            }
            let thread = &mut self.threads[t as usize];
            thread.open_retries = 0;
            thread.cursor_written = true;
            debug_assert_eq!(open, self.spaces.get(k).zones.is_open(zone));
            let slba = self.spaces.get_mut(k).zones.reserve(zone, u64::from(nlb));
            if !open {
                self.spaces.get_mut(k).zone_opener[zone as usize] = t;
            }
            return Next::Io(Planned { ddir: DDIR_WRITE, op, slba, nlb, zone: Some(zone), kind });
        }
        Next::End
    }

    /// The zone to write, within the open-zone limits: `zone` itself if it is
    /// open or may be opened, else one of the zones already open in range.
    fn admit_zone(&mut self, t: u32, zone: u32) -> Option<u32> {
        let k = self.space_of(t);
        if self.spaces.get(k).zones.is_open(zone) {
            return Some(zone);
        }
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let thread = &self.threads[t as usize];
        let space = self.spaces.get(k);
        let own_open = space.zones.open_zones().iter().filter(|&&z| space.zone_opener[z as usize] == t).count();
        let job_limit_ok = job.job_max_open_zones == 0 || (own_open as u32) < job.job_max_open_zones;
        if space.zones.can_open() && job_limit_ok {
            return Some(zone);
        }
        let candidates: Vec<u32> = space
            .zones
            .open_zones()
            .iter()
            .copied()
            .filter(|&z| z >= thread.first_zone && z < thread.end_zone)
            .collect();
        if candidates.is_empty() {
            return None;
        }
        let thread = &mut self.threads[t as usize];
        let pick = candidates[thread.rng.below(candidates.len() as u64) as usize];
        if !job.rw.is_random() {
            thread.cursor_zone[DDIR_WRITE] = pick;
        }
        Some(pick)
    }

    fn wait_for_open_zone(&mut self, now: Nanos, t: u32) -> Next {
        let thread = &mut self.threads[t as usize];
        thread.open_retries += 1;
        if thread.open_retries > OPEN_RETRIES_MAX {
            return Next::End;
        }
        Next::Wait(now + OPEN_RETRY_NS)
    }

    fn advance_write_cursor(&mut self, t: u32) {
        let k = self.space_of(t);
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let zone_bytes = self.spaces.get(k).zones.zone_lbas * self.spaces.get(k).lba_bytes;
        let skip = (job.zoneskip.resolve(zone_bytes, zone_bytes) / zone_bytes) as u32;
        let thread = &mut self.threads[t as usize];
        let mut next = thread.cursor_zone[DDIR_WRITE] + 1 + skip;
        if next >= thread.end_zone {
            next = thread.first_zone;
        }
        thread.cursor_zone[DDIR_WRITE] = next;
        thread.cursor_written = false;
    }

    /// fio's zone_reset_threshold and zone_reset_frequency for random writes.
    fn over_reset_threshold(&mut self, t: u32) -> bool {
        let k = self.space_of(t);
        let job = &self.set.jobs[self.threads[t as usize].spec];
        if job.zone_reset_frequency <= 0.0 {
            return false;
        }
        let thread = &self.threads[t as usize];
        let written = self.spaces.get(k).zones.written_lbas(thread.first_zone, thread.end_zone);
        let capacity = u64::from(thread.end_zone - thread.first_zone) * self.spaces.get(k).zones.zcap_lbas;
        if (written as f64) < job.zone_reset_threshold * capacity as f64 {
            return false;
        }
        let frequency = job.zone_reset_frequency;
        self.threads[t as usize].rng.chance(frequency)
    }

    /// Reads stay below the write pointer (unless read_beyond_wp); a range
    /// without data ends the job, as fio does.
    fn zbd_read(&mut self, t: u32, nlb: u32) -> Next {
        let k = self.space_of(t);
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let (random, beyond) = (job.rw.is_random(), job.read_beyond_wp);
        let nlb64 = u64::from(nlb);
        let thread = &self.threads[t as usize];
        let (first, end) = (thread.first_zone, thread.end_zone);
        let start_zone = if random {
            self.random_zone(t)
        } else {
            self.spaces.get(k).zones.zone_of(self.threads[t as usize].seq_next[DDIR_READ])
        };
        for step in 0..=(end - first) {
            let zone = first + (start_zone - first + step) % (end - first);
            let zslba = self.spaces.get(k).zones.zslba(zone);
            let limit = if beyond || !self.spaces.get(k).zones.is_sequential(zone) {
                zslba + self.spaces.get(k).zones.zcap_lbas
            } else {
                self.device_wp(k, zone).max(zslba)
            };
            let thread = &mut self.threads[t as usize];
            if random {
                if limit - zslba < nlb64 {
                    continue;
                }
                let unit = (job.bs[DDIR_READ].min_bytes / self.spaces.get(k).lba_bytes).max(1);
                let slots = (limit - zslba - nlb64) / unit + 1;
                let slba = zslba + thread.rng.below(slots) * unit;
                return read_at(slba, nlb, zone);
            }
            let cursor = thread.seq_next[DDIR_READ].max(zslba);
            if step > 0 || cursor < zslba || cursor >= zslba + self.spaces.get(k).zones.zone_lbas {
                thread.seq_next[DDIR_READ] = zslba;
            }
            let slba = thread.seq_next[DDIR_READ];
            if slba + nlb64 <= limit {
                thread.seq_next[DDIR_READ] = slba + nlb64;
                return read_at(slba, nlb, zone);
            }
            let next = if zone + 1 >= end { first } else { zone + 1 };
            thread.seq_next[DDIR_READ] = self.spaces.get(k).zones.zslba(next);
        }
        self.threads[t as usize].life.found_no_data = true;
        Next::End
    }

    /// A trim in zonemode=zbd resets a zone, as fio does.
    fn zbd_trim(&mut self, now: Nanos, t: u32, nlb: u32) -> Next {
        let k = self.space_of(t);
        let random = self.set.jobs[self.threads[t as usize].spec].rw.is_random();
        let zone = if random {
            self.random_zone(t)
        } else {
            let thread = &mut self.threads[t as usize];
            let zone = thread.cursor_zone[DDIR_TRIM];
            thread.cursor_zone[DDIR_TRIM] = if zone + 1 >= thread.end_zone { thread.first_zone } else { zone + 1 };
            zone
        };
        if !self.spaces.get(k).zones.is_sequential(zone) {
            // Conventional zones have no reset and the device no deallocate.
            return if self
                .spaces
                .get(k)
                .zones
                .any_sequential(self.threads[t as usize].first_zone, self.threads[t as usize].end_zone)
            {
                Next::Wait(now)
            } else {
                Next::End
            };
        }
        let slba = self.spaces.get(k).zones.zslba(zone);
        Next::Io(Planned {
            ddir: DDIR_TRIM,
            op: RequestOp::ZoneReset,
            slba,
            nlb,
            zone: Some(zone),
            kind: IoKind::TrimReset,
        })
    }
}

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// The write pointer of zone `zone` of space `k` on the device; fio's
    /// own over its emulated zones.
    fn device_wp(&self, k: usize, zone: u32) -> u64 {
        let space = self.spaces.get(k);
        if !MULTI {
            return self.device.zones().wp(zone);
        }
        if space.emulated {
            let zones = &space.zones;
            return zones.zslba(zone) + zones.zcap_lbas - zones.room(zone);
        }
        (self.zone_table)(self.device, space.nsid).wp(zone)
    }
}

fn read_at(slba: u64, nlb: u32, zone: u32) -> Next {
    Next::Io(Planned { ddir: DDIR_READ, op: RequestOp::Read, slba, nlb, zone: Some(zone), kind: IoKind::Data })
}
