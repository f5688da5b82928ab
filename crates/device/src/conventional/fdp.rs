//! The FDP commands and logs of a page-mapped namespace: Reclaim Unit
//! Handle Status and Update (I/O Management Receive and Send), the events
//! garbage collection raises, and the logs ([`crate::fdp`]).

use super::{Conventional, Stream};
use crate::backend::Backend;
use crate::fdp::{FdpEvent, FdpEventKind, FdpLogs, FdpStats, RuhAttributes, RuhStatus};
use crate::ssd::Ssd;
use crate::status::Status;
use crate::translation::ftl::OWNER_MIXED;
use zonelab_sim::Nanos;

/// Reclaim Unit Handle Status: per placement identifier (every handle of
/// every group), the logical blocks its current reclaim unit still takes,
/// less those waiting in its buffered unit.
pub(super) fn ruh_status(c: &Conventional, core: &Backend) -> Result<Box<[RuhStatus]>, Status> {
    let fdp = c.placement.fdp.as_ref().ok_or(Status::FdpDisabled)?;
    let d = fdp.descriptor;
    let per_unit = u64::from(c.ftl.lbas_per_unit());
    let ru_units = u64::from(c.placement.ru_units(c.ftl.units_per_block()));
    debug_assert_eq!(per_unit * core.layout.lba_bytes, core.program_unit_bytes());
    let mut out = Vec::with_capacity(c.placement.units.len());
    for (stream, unit) in c.placement.units.iter().enumerate() {
        let (group, handle) = c.placement.group_handle(stream);
        let left = (ru_units - u64::from(unit.ru_units)) * per_unit;
        let ruamw_lbas = left.saturating_sub(unit.lbas.len() as u64);
        out.push(RuhStatus { pid: d.pid(group, handle), ruhid: handle, earutr_s: 0, ruamw_lbas });
    }
    Ok(out.into_boxed_slice())
}

/// Reclaim Unit Handle Update: each named handle's next unit starts an
/// empty reclaim unit. What the host wrote before belongs to the reclaim
/// unit it was written to: a unit still filling in the write buffer is
/// programmed there now, padded, as a drive flushes before it switches
/// units (so the new unit has its whole size left, as QEMU and fio's
/// t/nvmept_fdp.py expect). A reclaim unit written in part is closed as it
/// is (its unwritten pages stay erased until garbage collection takes it)
/// and raises RU Not Fully Written. Nothing changes if a placement
/// identifier is invalid.
pub(super) fn ruh_update(c: &mut Conventional, core: &Backend, ssd: &mut Ssd, pids: &[u16], at_ns: Nanos) -> Status {
    let Some(fdp) = c.placement.fdp.as_ref() else { return Status::FdpDisabled };
    let d = fdp.descriptor;
    let Some(targets) = pids.iter().map(|&p| d.parse_pid(p).map(|gh| (p, gh))).collect::<Option<Vec<_>>>() else {
        return Status::InvalidPlacementHandleList;
    };
    for (pid, (group, handle)) in targets {
        let stream = usize::from(group) * usize::from(c.placement.handles) + usize::from(handle);
        if !c.placement.units[stream].lbas.is_empty() {
            super::program_host_unit(c, core, ssd, stream, at_ns);
        }
        debug_assert!(c.placement.units[stream].lbas.is_empty(), "the handle's buffered unit went to flash");
        // Units in the current reclaim unit: it is started and not full.
        if c.placement.units[stream].ru_units > 0 {
            let kind = FdpEventKind::RuNotFullyWritten;
            let event = FdpEvent { kind, at_ns, pid: Some(pid), group, ruhid: Some(handle), lbas_moved: 0 };
            c.placement.fdp.as_mut().expect("checked above").log(event);
        }
        let first_die = c.placement.first_die(stream);
        for die in first_die..first_die + c.placement.dies_per_group {
            c.ftl.close(die, Stream::Host(handle));
        }
        let unit = &mut c.placement.units[stream];
        unit.cursor = 0;
        unit.ru_units = 0;
    }
    Status::Success
}

/// Garbage collection has emptied block `block` of `die`, moving
/// `lbas_moved` logical blocks: Media Reallocated, for the handle whose
/// data it held (a block of mixed handles names none).
pub(super) fn victim_released(c: &mut Conventional, die: u32, block: u32, lbas_moved: u64, at_ns: Nanos) {
    let dies_per_group = c.placement.dies_per_group;
    let owner = c.ftl.owner(die, block);
    let Some(fdp) = c.placement.fdp.as_mut() else { return };
    if lbas_moved == 0 {
        return;
    }
    let group = u16::try_from(die / dies_per_group).expect("groups fit u16");
    let ruhid = (owner != OWNER_MIXED).then_some(owner);
    let pid = ruhid.map(|h| fdp.descriptor.pid(group, h));
    fdp.log(FdpEvent { kind: FdpEventKind::MediaReallocated, at_ns, pid, group, ruhid, lbas_moved });
}

/// Every FDP log at once; `None` without FDP.
pub(super) fn logs(c: &Conventional, core: &Backend) -> Option<FdpLogs> {
    let fdp = c.placement.fdp.as_ref()?;
    let g = &core.config.flash;
    let unit_bytes = g.program_unit_bytes();
    let block_bytes = u64::from(g.planes_per_die) * g.block_bytes();
    let stats = FdpStats {
        host_bytes: core.counters.host_write_bytes,
        media_bytes: (c.ftl.host_units + c.ftl.gc_units) * unit_bytes,
        media_erased_bytes: c.ftl.victims * block_bytes,
    };
    let enabled_events =
        fdp.event_masks.iter().map(|&m| FdpEventKind::ALL.into_iter().filter(|k| m & k.bit() != 0).collect()).collect();
    Some(FdpLogs {
        descriptor: fdp.descriptor,
        stats,
        // The namespace's placement handle i is handle i: every handle is the host's.
        usage: vec![RuhAttributes::HostSpecified; usize::from(c.placement.handles)],
        host_events: fdp.host_events.to_vec(),
        controller_events: fdp.controller_events.to_vec(),
        enabled_events,
    })
}

/// Set Features FDP Events: the handle `pid` names reports (or stops
/// reporting) the event kinds `kinds`.
pub(super) fn set_events(c: &mut Conventional, pid: u16, kinds: &[FdpEventKind], enable: bool) -> Result<(), Status> {
    let fdp = c.placement.fdp.as_mut().ok_or(Status::FdpDisabled)?;
    let (_, handle) = fdp.descriptor.parse_pid(pid).ok_or(Status::InvalidField)?;
    let bits = kinds.iter().fold(0u8, |m, k| m | k.bit());
    let mask = &mut fdp.event_masks[usize::from(handle)];
    *mask = if enable { *mask | bits } else { *mask & !bits };
    Ok(())
}
