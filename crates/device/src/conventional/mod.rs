//! A conventional (block-interface) SSD on the same flash as a ZNS one:
//! page-level mapping ([`ftl`]), over-provisioning (the flash the namespace
//! does not use), and greedy garbage collection when a die runs short of
//! free blocks. GC reads a victim's valid data and programs it on the same
//! die, then erases the victim; all of it is reserved on the die and channel
//! timelines, so host reads and writes queue behind it (seed 000 Obs 11).
//!
//! A device is conventional when its config has a `[conventional]` section;
//! its namespace is then all conventional zones (the `sn640` preset).

pub use crate::translation::ftl;

use crate::device::{Device, Source};
use crate::translation::conventional::Conventional;
use crate::translation::mapping::ChunkLocation;
use ftl::UnitSlot;
use zonelab_flash::BlockAddr;
use zonelab_sim::Nanos;

/// What garbage collection did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FtlCounters {
    pub host_units: u64,
    pub gc_units: u64,
    pub gc_lbas: u64,
    pub victims: u64,
    /// (host + GC) programs per host program.
    pub write_amplification: f64,
}

impl Device {
    pub(crate) fn conventional_mut(&mut self) -> &mut Conventional {
        self.translation.conventional.as_mut().expect("a conventional device")
    }

    /// Garbage collection so far; `None` for a zoned device.
    pub fn ftl_counters(&self) -> Option<FtlCounters> {
        self.translation.conventional.as_ref().map(|c| FtlCounters {
            host_units: c.ftl.host_units,
            gc_units: c.ftl.gc_units,
            gc_lbas: c.ftl.gc_lbas,
            victims: c.ftl.victims,
            write_amplification: c.ftl.write_amplification(),
        })
    }

    /// Whether a conventional device holds data for `lba` (in flash or in its buffer).
    pub fn ftl_holds(&self, lba: u64) -> bool {
        self.translation
            .conventional
            .as_ref()
            .is_some_and(|c| c.pending_pos.contains_key(&lba) || c.ftl.lookup(lba).is_some())
    }

    /// Checks the page mapping (a test aid); panics on a breach.
    pub fn check_ftl(&self) {
        if let Some(c) = &self.translation.conventional {
            c.ftl.check();
        }
    }

    /// Takes `lbas` host LBAs from `slba` into the shared write buffer
    /// (crossing the link if `link`); full units go to flash. Returns when
    /// the last piece is in.
    pub(crate) fn ftl_take_in(&mut self, slba: u64, lbas: u64, ready_ns: Nanos, link: bool) -> Nanos {
        let lba_bytes = self.layout.lba_bytes;
        let capacity = self.layout.zone_buffer_bytes;
        let per_unit = self.program_unit_bytes() / lba_bytes;
        let mut t = ready_ns;
        let mut lba = slba;
        let end = slba + lbas;
        while lba < end {
            let piece = (end - lba).min(per_unit - self.conventional_mut().pending.len() as u64).max(1);
            let admitted = self.conventional_mut().buffer.admit(t, piece * lba_bytes, capacity);
            t = if link { self.controller.link_reserve_to_device(admitted, piece * lba_bytes) } else { admitted };
            for l in lba..lba + piece {
                let c = self.conventional_mut();
                if !c.pending_pos.contains_key(&l) {
                    c.ftl.invalidate(l);
                    c.pending_pos.insert(l, c.pending.len());
                    c.pending.push(l);
                }
            }
            lba += piece;
            if self.conventional_mut().pending.len() as u64 >= per_unit {
                self.program_host_unit(t);
            }
        }
        t
    }

    fn program_host_unit(&mut self, at_ns: Nanos) {
        let dies = self.conventional_mut().ftl.dies();
        let die = self.conventional_mut().cursor;
        self.conventional_mut().cursor = (die + 1) % dies;
        if self.conventional_mut().ftl.needs_block(die, false) {
            self.collect_garbage(die, at_ns);
        }
        let c = self.conventional_mut();
        let lbas = std::mem::take(&mut c.pending);
        c.pending_pos.clear();
        let slot = c.ftl.place(die, false, &lbas);
        let done = self.program_slot(slot, at_ns);
        let bytes = lbas.len() as u64 * self.layout.lba_bytes;
        let c = self.conventional_mut();
        c.buffer.programmed(c.units_buffered, bytes, done);
        c.units_buffered += 1;
    }

    fn program_slot(&mut self, slot: UnitSlot, at_ns: Nanos) -> Nanos {
        let oneshot = self.scheduler.flash.geometry().oneshot_pages;
        let addr = BlockAddr { die: slot.die, block: slot.block };
        let done = self
            .scheduler
            .flash
            .program(at_ns, addr, slot.unit * oneshot)
            .unwrap_or_else(|e| panic!("conventional unit {slot:?}: {e}"))
            .done_ns;
        let blocks = self.scheduler.flash.geometry().blocks_per_plane;
        let units = self.conventional_mut().ftl.units_per_block() as usize;
        let c = self.conventional_mut();
        let done_by_unit = c.unit_done[(slot.die * blocks + slot.block) as usize]
            .get_or_insert_with(|| vec![0; units].into_boxed_slice());
        done_by_unit[slot.unit as usize] = done;
        done
    }

    /// Frees blocks on `die` until it has the target number, victim by
    /// victim (greedy): read the valid data, program it in the die's GC
    /// block, erase the victim.
    fn collect_garbage(&mut self, die: u32, at_ns: Nanos) {
        let (min, target) = (self.conventional_mut().gc_min, self.conventional_mut().gc_target);
        if self.conventional_mut().ftl.free_blocks(die) > min {
            return;
        }
        let blocks = self.scheduler.flash.geometry().blocks_per_plane;
        for _ in 0..blocks {
            if self.conventional_mut().ftl.free_blocks(die) >= target {
                return;
            }
            let Some(victim) = self.conventional_mut().ftl.victim(die) else { return };
            self.relocate(die, victim, at_ns);
        }
    }

    fn relocate(&mut self, die: u32, victim: u32, at_ns: Nanos) {
        let g = self.scheduler.flash.geometry().clone();
        let lbas_per_page = u64::from(g.page_bytes) / self.layout.lba_bytes;
        let valid = self.conventional_mut().ftl.valid_lbas(die, victim);
        let mut read_done = at_ns;
        let mut last_page = u64::MAX;
        for &(offset, _) in &valid {
            let page_in_block = u64::from(offset) / lbas_per_page;
            if page_in_block != last_page {
                last_page = page_in_block;
                let plane = (page_in_block % u64::from(g.planes_per_die)) as u32;
                read_done = read_done.max(self.scheduler.flash.read(at_ns, die, plane, g.page_bytes));
            }
        }
        let per_unit = (self.program_unit_bytes() / self.layout.lba_bytes) as usize;
        let lbas: Vec<u64> = valid.iter().map(|&(_, l)| l).collect();
        for chunk in lbas.chunks(per_unit) {
            for &l in chunk {
                self.conventional_mut().ftl.invalidate(l);
            }
            let slot = self.conventional_mut().ftl.place(die, true, chunk);
            self.program_slot(slot, read_done);
        }
        self.scheduler.flash.erase(read_done, BlockAddr { die, block: victim });
        let c = self.conventional_mut();
        c.ftl.release(die, victim);
        c.unit_done[(die * g.blocks_per_plane + victim) as usize] = None;
    }

    /// Where `lba` of a conventional device is at `at_ns`.
    pub(crate) fn ftl_source(&self, lba: u64, at_ns: Nanos) -> Source {
        let c = self.translation.conventional.as_ref().expect("a conventional device");
        if c.pending_pos.contains_key(&lba) {
            return Source::Controller { ready_ns: at_ns };
        }
        let Some(slot) = c.ftl.lookup(lba) else { return Source::Zeros };
        let g = self.scheduler.flash.geometry();
        let lbas_per_page = u64::from(g.page_bytes) / self.layout.lba_bytes;
        let per_unit = u64::from(c.ftl.lbas_per_block() / c.ftl.units_per_block());
        let unit = u64::from(slot.offset) / per_unit;
        let done =
            c.unit_done[(slot.die * g.blocks_per_plane + slot.block) as usize].as_ref().map_or(0, |d| d[unit as usize]);
        // Host data waits in the write buffer until programmed; data garbage
        // collection is moving is read once its new copy is programmed (its old
        // copy sits on the same die, behind the same queue).
        if done > at_ns && !c.ftl.is_gc_block(slot.die, slot.block) {
            return Source::Controller { ready_ns: at_ns };
        }
        let page_in_unit = (u64::from(slot.offset) % per_unit) / lbas_per_page;
        let planes = u64::from(g.planes_per_die);
        let loc = ChunkLocation {
            die: slot.die,
            plane: (page_in_unit % planes) as u32,
            block: slot.block,
            page: (unit * u64::from(g.oneshot_pages) + page_in_unit / planes) as u32,
        };
        Source::Flash { loc, ready_ns: done }
    }
}
