//! verify: a job that verifies writes a pattern (fio's crc32c or md5
//! header, seeded by the LBA and the zone's reset generation), remembers
//! the ranges it wrote, and once it stops issuing reads them back and
//! checks every block.

use super::super::verify;
use super::*;
use zonelab_device::Payload;

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// Reads back the thread's written ranges, as many as its queue depth
    /// allows, each read no longer than the device's MDTS.
    pub(super) fn issue_verify_reads(&mut self, now: Nanos, t: u32) {
        let mdts = self.spaces.get(self.space_of(t)).shape.0.mdts_lbas.max(1) as u32;
        // Bounded by the queue depth: each pass puts one read in flight.
        for _ in 0..=IODEPTH_MAX {
            let thread = &mut self.threads[t as usize];
            if thread.inflight >= thread.qd {
                break;
            }
            let Some((slba, nlb)) = thread.verify_ranges.pop() else { break };
            let head = nlb.min(mdts);
            if head < nlb {
                thread.verify_ranges.push((slba + u64::from(head), nlb - head));
            }
            let kind = IoKind::VerifyRead;
            let read = Planned { ddir: DDIR_READ, op: RequestOp::Read, slba, nlb: head, zone: None, kind };
            self.issue(now, t, read);
        }
    }

    /// What `dispatch` writes on a device that keeps data: the job's verify
    /// pattern (built in `buffer`), else a fixed byte; nothing in metadata mode.
    pub(super) fn write_payload<'b>(
        &self,
        buffer: &'b mut Vec<u8>,
        k: usize,
        dispatch: &Dispatch,
        verify: Verify,
    ) -> Payload<'b> {
        if !self.data_mode {
            return Payload::None;
        }
        let writes = matches!(dispatch.op, RequestOp::Write | RequestOp::Append);
        if !writes || verify == Verify::None {
            return Payload::Pattern(0x5a);
        }
        buffer.resize((u64::from(dispatch.nlb) * self.spaces.get(k).lba_bytes) as usize, 0);
        self.fill_verify(buffer, k, verify, dispatch.slba, dispatch.nlb);
        Payload::Bytes(buffer)
    }

    fn fill_verify(&self, buffer: &mut [u8], k: usize, verify: Verify, slba: u64, nlb: u32) {
        // An append lands at the write pointer the zone view planned for it,
        // which is the `slba` the request carries.
        let space = self.spaces.get(k);
        for (i, block) in buffer.chunks_mut(space.lba_bytes as usize).take(nlb as usize).enumerate() {
            let lba = slba + i as u64;
            let generation = space.zone_generation[(lba / space.zones.zone_lbas) as usize];
            verify::fill_block(block, verify, self.verify_seed, lba, generation);
        }
    }

    /// Checks the blocks read back from `slba` by verify read `tag`; what
    /// is wrong waits for the read's completion, which may make it the
    /// thread's error ([`Self::verify_log_of`]).
    pub(super) fn check_read_back(&mut self, tag: u32, data: &[u8], verify: Verify, slba: u64) {
        let t = self.ios[tag as usize].thread;
        let space = self.spaces.get(self.space_of(t));
        let generation = |lba: u64| space.zone_generation[(lba / space.zones.zone_lbas) as usize];
        let fatal = self.threads[t as usize].options.verify_fatal;
        let failures = verify::check_blocks(data, space.lba_bytes as usize, verify, slba, generation, fatal);
        self.ios[tag as usize].verify_error = !failures.is_empty();
        if !failures.is_empty() {
            self.verify_failures.insert(tag, failures);
        }
    }

    /// fio's verify messages for the failed read `io` (tag `tag`), a line per bad block.
    pub(super) fn verify_log_of(&mut self, tag: u32, io: &Io) -> Vec<String> {
        let failures = self.verify_failures.remove(&tag).unwrap_or_default();
        let lba_bytes = self.spaces.get(self.space_of(io.thread)).lba_bytes;
        let (offset, length) = (io.slba * lba_bytes, u64::from(io.nlb) * lba_bytes);
        failures
            .iter()
            .map(|failure| {
                let at = failure.lba() * lba_bytes;
                format!(
                    "verify: {failure} (offset {at}, length {}; requested block: offset={offset}, length={length})",
                    lba_bytes
                )
            })
            .collect()
    }
}
