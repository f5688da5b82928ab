//! Zone management on the host side: ZINC's epoch timer, which releases the
//! resets and finishes the `zinc` scheduler holds back, and the jobs whose
//! operations span several requests (finish=1: write one block to open a
//! zone, then finish it; softfinish=1: fill the zone with writes instead,
//! in chunks with pauses between them, as ConfZNS++ does).

use super::*;

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// ZINC's epoch timer ticks while it holds zone management back.
    pub(super) fn arm_epoch(&mut self, now: Nanos, k: usize) {
        let space = self.spaces.get_mut(k);
        let zinc = space.layers.get(HostPath::Kernel(SchedulerKind::Zinc));
        if space.epoch_armed || zinc.held() == 0 {
            return;
        }
        let epoch_ns = zinc.epoch_ns().expect("the zinc layer runs zinc");
        space.epoch_armed = true;
        self.schedule((now / epoch_ns + 1) * epoch_ns, Event::Epoch(Self::space_tag(k)));
    }

    /// ZINC's epoch of space `k`: what it releases goes to the device.
    pub(super) fn epoch(&mut self, now: Nanos, k: usize) {
        self.spaces.get_mut(k).epoch_armed = false;
        let path = HostPath::Kernel(SchedulerKind::Zinc);
        let mut out = std::mem::take(&mut self.dispatched);
        self.spaces.get_mut(k).layers.get_mut(path).epoch(&mut out);
        self.send(now, k, path, &mut out);
        self.dispatched = out;
        self.arm_epoch(now, k);
    }

    /// finish=1 and softfinish=1: an operation spans several requests.
    pub(super) fn advance_chain(&mut self, now: Nanos, io: &Io) {
        if !matches!(io.kind, IoKind::OpenBlock | IoKind::SoftFill | IoKind::Finish) {
            // Not part of a chain: nothing to look up (the common case).
            return;
        }
        let t = io.thread;
        let job = &self.set.jobs[self.threads[t as usize].spec];
        let (softfinish, chunk) = (job.softfinish, job.softfinish_chunk);
        match io.kind {
            IoKind::OpenBlock => {
                let zone = io.zone.expect("the opening block has a zone");
                self.threads[t as usize].chain = Some(Chain { zone, start_ns: now, fill_bytes: 0 });
                if softfinish {
                    self.soft_fill(now, t, chunk);
                } else {
                    self.finish_zone(now, t, zone);
                }
            }
            IoKind::SoftFill => {
                let lba_bytes = self.spaces.get(self.space_of(t)).lba_bytes;
                let chain = self.threads[t as usize].chain.as_mut().expect("a fill belongs to a chain");
                chain.fill_bytes += u64::from(io.nlb) * lba_bytes;
                let pause_ns = job.softfinish_pause_ns;
                if pause_ns == 0 {
                    self.soft_fill(now, t, chunk);
                } else {
                    // Pauses add up over many chunks: none takes the run past its horizon.
                    self.schedule((now + pause_ns).min(RUN_NS_MAX.max(now)), Event::SoftFill(t));
                }
            }
            IoKind::Finish => self.threads[t as usize].chain = None,
            _ => {}
        }
    }

    /// finish=1: the zone just opened is finished.
    fn finish_zone(&mut self, now: Nanos, t: u32, zone: u32) {
        let zones = &mut self.spaces.get_mut(self.space_of(t)).zones;
        zones.set_full(zone);
        let slba = zones.zslba(zone);
        let kind = IoKind::Finish;
        let finish = Planned { ddir: DDIR_TRIM, op: RequestOp::ZoneFinish, slba, nlb: 0, zone: Some(zone), kind };
        self.issue_chained(now, t, finish);
    }

    /// The pause after a softFinish chunk is over.
    pub(super) fn soft_fill_next(&mut self, now: Nanos, t: u32) {
        let chunk = self.set.jobs[self.threads[t as usize].spec].softfinish_chunk;
        self.soft_fill(now, t, chunk);
    }

    /// Writes the next softFinish chunk, or ends the operation when the zone is full.
    fn soft_fill(&mut self, now: Nanos, t: u32, chunk: Option<Size>) {
        let chain = self.threads[t as usize].chain.expect("softfinish runs in a chain");
        let k = self.space_of(t);
        let space = self.spaces.get_mut(k);
        let room = space.zones.room(chain.zone);
        if room == 0 {
            self.soft_fill_done(now, t, chain);
            return;
        }
        let (lba_bytes, mdts_lbas) = (space.lba_bytes, space.shape.0.mdts_lbas);
        let zone_bytes = space.zones.zone_lbas * lba_bytes;
        let chunk_lbas = chunk.map_or(mdts_lbas, |c| c.resolve(zone_bytes, zone_bytes) / lba_bytes);
        let nlb = chunk_lbas.clamp(1, mdts_lbas.max(1)).min(room);
        let lba = space.zones.reserve(chain.zone, nlb);
        let fill = Planned {
            ddir: DDIR_TRIM,
            op: RequestOp::Write,
            slba: lba,
            nlb: nlb as u32,
            zone: Some(chain.zone),
            kind: IoKind::SoftFill,
        };
        self.issue_chained(now, t, fill);
    }

    /// The zone is full: the softFinish operation counts as one trim of the
    /// bytes it wrote, from its start.
    fn soft_fill_done(&mut self, now: Nanos, t: u32, chain: Chain) {
        let thread = &mut self.threads[t as usize];
        if now >= thread.stats_start_ns {
            let elapsed_ns = now - chain.start_ns;
            thread.stats.dirs[DDIR_TRIM].add_io(chain.fill_bytes, Some(0), elapsed_ns, elapsed_ns);
        }
        thread.chain = None;
    }

    /// Issues a request of a chained operation without ending the chain.
    fn issue_chained(&mut self, now: Nanos, t: u32, planned: Planned) {
        let chain = self.threads[t as usize].chain.take();
        self.issue(now, t, planned);
        self.threads[t as usize].chain = chain;
    }
}
