//! Flexible Data Placement (NVMe TP4146, NVMe Base 2.1) over the target:
//! the placement directive of writes, I/O Management Receive and Send
//! (Reclaim Unit Handle Status and Update), the FDP log pages, the FDP and
//! FDP Events features and the directives' Identify parameters. The model
//! ([`zonelab_device::fdp`]) places the data and keeps the logs; this
//! module only encodes them (docs/nvme-tcp.md, "Flexible Data Placement").
//!
//! Each FDP namespace is its own endurance group, with the NSID as its
//! endurance group identifier: the model keeps handles, statistics and
//! events per namespace, so namespaces share none of them.

use crate::nvme_tcp::command::{put_u16, put_u32, put_u64, sc, Reply, Sqe};
use crate::nvme_tcp::io::answer;
use crate::nvme_tcp::target::{lock, NamespaceBackend as Backend, Target};
use zonelab_device::fdp::{FdpEvent, FdpEventKind, FdpLogs, EVENTS_MAX};
use zonelab_device::{CmdResult, Command, Status, ZonedDevice};
use zonelab_sim::Nanos;

/// I/O opcode: I/O Management Receive.
pub const OPC_IO_MGMT_RECV: u8 = 0x12;
/// I/O opcode: I/O Management Send.
pub const OPC_IO_MGMT_SEND: u8 = 0x1D;
/// Admin opcode: Directive Receive.
pub const OPC_DIRECTIVE_RECV: u8 = 0x1A;
/// Log page: Endurance Group Information.
pub const LID_ENDURANCE_GROUP: u8 = 0x09;
/// Log page: FDP Configurations.
pub const LID_FDP_CONFIGS: u8 = 0x20;
/// Log page: Reclaim Unit Handle Usage.
pub const LID_RUH_USAGE: u8 = 0x21;
/// Log page: FDP Statistics.
pub const LID_FDP_STATS: u8 = 0x22;
/// Log page: FDP Events.
pub const LID_FDP_EVENTS: u8 = 0x23;
/// Feature: Flexible Data Placement (per endurance group).
pub const FID_FDP: u8 = 0x1D;
/// Feature: FDP Events (per namespace and placement handle).
pub const FID_FDP_EVENTS: u8 = 0x1E;

/// Directive type of the Data Placement directive (CDW12 DTYPE of a write).
const DTYPE_DATA_PLACEMENT: u32 = 2;
/// Most placement identifiers a Reclaim Unit Handle Update names (MAXPIDS + 1).
pub const PIDS_MAX: usize = 128;
/// FDP events a log page holds: its 4 KiB take a 64-byte header and 63
/// events (hosts size their buffer so), the newest kept.
pub const LOG_EVENTS_MAX: usize = 63;
const RUH_STATUS_HEADER_BYTES: usize = 16;
const RUH_STATUS_DESCRIPTOR_BYTES: usize = 32;
const CONFIG_HEADER_BYTES: usize = 16;
const CONFIG_DESCRIPTOR_BYTES: usize = 64;
const EVENT_BYTES: usize = 64;

/// The placement identifier a Write names: DSPEC (CDW13 bits 31:16) when
/// DTYPE (CDW12 bits 23:20) is Data Placement; other directives are not
/// supported and, as without a directive, place nothing.
pub fn placement(sqe: &Sqe<'_>) -> Option<u16> {
    (sqe.cdw(12) >> 20 & 0xf == DTYPE_DATA_PLACEMENT).then(|| (sqe.cdw(13) >> 16) as u16)
}

/// I/O Management Receive: MO 0 does nothing, MO 1 is Reclaim Unit Handle
/// Status, NUMD (CDW11, 0-based dwords) long at most.
pub fn io_mgmt_receive(ns: &mut Backend, wall_ns: Nanos, sqe: &Sqe<'_>, transfer_max: usize) -> Reply {
    let bytes = (u64::from(sqe.cdw(11)) + 1) * 4;
    if bytes > transfer_max as u64 {
        return Reply::status(sc::INVALID_FIELD);
    }
    match sqe.cdw(10) & 0xff {
        0 => Reply::ok(),
        1 => {
            let completion = ns.submit(wall_ns, &Command::ReclaimUnitHandleStatus, None);
            answer(ns, completion, |c| match &c.result {
                CmdResult::ReclaimUnitHandles(handles) => {
                    let mut page = ruh_status_page(handles);
                    page.truncate(bytes as usize);
                    Reply::data(page)
                }
                _ => Reply::status(sc::INTERNAL_ERROR),
            })
        }
        _ => Reply::status(sc::INVALID_FIELD),
    }
}

/// The Reclaim Unit Handle Status data: a 16-byte header with the count,
/// then 32 bytes per placement identifier.
fn ruh_status_page(handles: &[zonelab_device::fdp::RuhStatus]) -> Vec<u8> {
    let mut page = vec![0u8; RUH_STATUS_HEADER_BYTES + handles.len() * RUH_STATUS_DESCRIPTOR_BYTES];
    put_u16(&mut page, 14, u16::try_from(handles.len()).unwrap_or(u16::MAX));
    let descriptors = page[RUH_STATUS_HEADER_BYTES..].chunks_exact_mut(RUH_STATUS_DESCRIPTOR_BYTES);
    for (d, h) in descriptors.zip(handles) {
        put_u16(d, 0, h.pid);
        put_u16(d, 2, h.ruhid);
        put_u32(d, 4, h.earutr_s);
        put_u64(d, 8, h.ruamw_lbas);
    }
    page
}

/// I/O Management Send: MO 0 does nothing, MO 1 is Reclaim Unit Handle
/// Update of NPID (CDW10 bits 31:16, 0-based) placement identifiers, the
/// list in the data. A list longer than the namespace has placement
/// identifiers (at most [`PIDS_MAX`]) or naming one it lacks is Invalid
/// Field, as TP4146 and QEMU have it; data shorter than the list is Data
/// SGL Length Invalid, as for every command here.
pub fn io_mgmt_send(ns: &mut Backend, wall_ns: Nanos, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    match sqe.cdw(10) & 0xff {
        0 => return Reply::ok(),
        1 => {}
        _ => return Reply::status(sc::INVALID_FIELD),
    }
    let npid = (sqe.cdw(10) >> 16) as usize + 1;
    let Some(logs) = ns.device().fdp_logs() else { return Reply::model(Status::FdpDisabled) };
    if npid > pids_max(&logs) {
        return Reply::status(sc::INVALID_FIELD);
    }
    if data.len() < npid * 2 {
        return Reply::status(sc::SGL_LENGTH_INVALID);
    }
    let pids: Vec<u16> = data.chunks_exact(2).take(npid).map(|w| u16::from_le_bytes([w[0], w[1]])).collect();
    let completion = ns.submit(wall_ns, &Command::ReclaimUnitHandleUpdate { pids: &pids }, None);
    let mut reply = answer(ns, completion, |_| Reply::ok());
    if reply.status == Status::InvalidPlacementHandleList.code() {
        // The model's status names the list; the command's is Invalid Field.
        reply.status = sc::INVALID_FIELD;
    }
    reply
}

/// Placement identifiers of the namespace, at most [`PIDS_MAX`]: MAXPIDS + 1.
fn pids_max(logs: &FdpLogs) -> usize {
    let d = &logs.descriptor;
    (usize::from(d.reclaim_groups) * usize::from(d.handles)).min(PIDS_MAX)
}

/// Whether namespace `ns` has Flexible Data Placement.
pub fn has_fdp(ns: &Backend) -> bool {
    ns.device().fdp_logs().is_some()
}

/// Whether any namespace of the target has FDP (Identify Controller CTRATT.FDPS).
pub fn target_has_fdp(target: &Target) -> bool {
    target.slots().iter().any(|(_, slot)| has_fdp(&lock(&slot.backend)))
}

/// The logs of endurance group `endgid` (an FDP namespace's NSID): Invalid
/// Field when it names no active namespace, FDP Disabled when that one has
/// no FDP.
fn group_logs(target: &Target, endgid: u32) -> Result<FdpLogs, Reply> {
    let slot = target.active(endgid).ok_or_else(|| Reply::status(sc::INVALID_FIELD))?;
    let logs = lock(&slot.backend).device().fdp_logs();
    logs.ok_or_else(|| Reply::model(Status::FdpDisabled))
}

/// One of the FDP log pages (LID 20h-23h) of the endurance group LSI
/// (CDW11 bits 31:16), whole; the caller cuts the part asked for.
pub fn log_page(target: &Target, sqe: &Sqe<'_>) -> Result<Vec<u8>, Reply> {
    let (lid, lsi) = ((sqe.cdw(10) & 0xff) as u8, sqe.cdw(11) >> 16);
    let logs = group_logs(target, lsi)?;
    Ok(match lid {
        LID_FDP_CONFIGS => configs_log(&logs),
        LID_RUH_USAGE => usage_log(&logs),
        LID_FDP_STATS => stats_log(&logs),
        _ => {
            // LSP bit 0 (CDW10 bit 8): host events, else the controller's.
            let host = sqe.cdw(10) >> 8 & 1 == 1;
            events_log(if host { &logs.host_events } else { &logs.controller_events }, lsi)
        }
    })
}

/// Endurance Group Information (LID 09h) of the FDP namespace LSI names:
/// full spare, data units read and written and media units written (MBMW)
/// in SMART's units of 1000 512-byte blocks; the command counts are not
/// kept (0). Invalid Field for an LSI naming no FDP namespace: only those
/// are endurance groups here.
pub fn endurance_group_log(target: &Target, sqe: &Sqe<'_>) -> Result<Vec<u8>, Reply> {
    let lsi = sqe.cdw(11) >> 16;
    let degraded = target.namespace_offline(lsi);
    let slot = target.active(lsi).ok_or_else(|| Reply::status(sc::INVALID_FIELD))?;
    let ns = lock(&slot.backend);
    let logs = ns.device().fdp_logs().ok_or_else(|| Reply::status(sc::INVALID_FIELD))?;
    let counters = ns.device().counters();
    let mut log = vec![0u8; 512];
    log[0] = u8::from(degraded) << 2; // critical warning: reliability degraded
    log[3] = 100; // available spare
    log[4] = 10; // its threshold
    let units = [counters.host_read_bytes, counters.host_write_bytes, logs.stats.media_bytes];
    for (at, bytes) in [48, 64, 80].into_iter().zip(units) {
        log[at..at + 16].copy_from_slice(&u128::from(bytes.div_ceil(512_000)).to_le_bytes());
    }
    Ok(log)
}

/// FDP Configurations: one configuration (index 0, in use), its
/// descriptor and each reclaim unit handle's type.
fn configs_log(logs: &FdpLogs) -> Vec<u8> {
    let d = &logs.descriptor;
    let descriptor_bytes = (CONFIG_DESCRIPTOR_BYTES + 4 * usize::from(d.handles)).next_multiple_of(8);
    let mut log = vec![0u8; CONFIG_HEADER_BYTES + descriptor_bytes];
    let total = log.len() as u32;
    put_u16(&mut log, 0, 0); // NUMFDPC, 0-based: one configuration
    put_u32(&mut log, 4, total); // SIZE
    let c = &mut log[CONFIG_HEADER_BYTES..];
    put_u16(c, 0, descriptor_bytes as u16);
    // FDPA: valid, a volatile write cache (Identify's VWC), the RGIF.
    c[2] = 1 << 7 | 1 << 4 | (d.rgif & 0xf);
    put_u32(c, 4, u32::from(d.reclaim_groups)); // NRG
    put_u16(c, 8, d.handles); // NRUH
    put_u16(c, 10, (pids_max(logs) - 1) as u16); // MAXPIDS, 0-based
    put_u32(c, 12, 1); // NNSS: the configuration is one namespace's
    put_u64(c, 16, d.reclaim_unit_bytes); // RUNS
                                          // ERUTL 0: reclaim units have no time limit.
    for h in 0..usize::from(d.handles) {
        c[CONFIG_DESCRIPTOR_BYTES + 4 * h] = d.handle_type.code();
    }
    log
}

/// Reclaim Unit Handle Usage: an 8-byte header, 8 bytes per handle.
fn usage_log(logs: &FdpLogs) -> Vec<u8> {
    let mut log = vec![0u8; 8 + 8 * logs.usage.len()];
    put_u16(&mut log, 0, logs.usage.len() as u16);
    for (i, attributes) in logs.usage.iter().enumerate() {
        log[8 + 8 * i] = attributes.code();
    }
    log
}

/// FDP Statistics: HBMW, MBMW and MBE as 128-bit counters, 64 bytes.
fn stats_log(logs: &FdpLogs) -> Vec<u8> {
    let mut log = vec![0u8; 64];
    let s = &logs.stats;
    for (at, value) in [(0, s.host_bytes), (16, s.media_bytes), (32, s.media_erased_bytes)] {
        log[at..at + 16].copy_from_slice(&u128::from(value).to_le_bytes());
    }
    log
}

/// FDP Events: a 64-byte header with the count, then the newest
/// [`LOG_EVENTS_MAX`] events, oldest first, 64 bytes each.
fn events_log(events: &[FdpEvent], nsid: u32) -> Vec<u8> {
    debug_assert!(events.len() <= EVENTS_MAX);
    let kept = &events[events.len().saturating_sub(LOG_EVENTS_MAX)..];
    let mut log = vec![0u8; EVENT_BYTES * (1 + kept.len())];
    put_u32(&mut log, 0, kept.len() as u32);
    for (record, event) in log[EVENT_BYTES..].chunks_exact_mut(EVENT_BYTES).zip(kept) {
        encode_event(record, event, nsid);
    }
    log
}

/// One FDP event record. The timestamp is the model's simulated time in
/// milliseconds (Timestamp Origin 0: counted from the controller's start).
fn encode_event(r: &mut [u8], e: &FdpEvent, nsid: u32) {
    r[0] = e.kind.code();
    // FDPEF: PIV (placement identifier valid), NSIDV, LV (reclaim group and handle valid).
    r[1] = u8::from(e.pid.is_some()) | 1 << 1 | u8::from(e.ruhid.is_some()) << 2;
    put_u16(r, 2, e.pid.unwrap_or(0));
    let ms = e.at_ns / 1_000_000;
    r[4..10].copy_from_slice(&ms.to_le_bytes()[..6]);
    put_u32(r, 12, nsid);
    if e.kind == FdpEventKind::MediaReallocated {
        // Event specific: NLBAM (16 bits); no LBA given (LBAV clear).
        put_u16(r, 18, u16::try_from(e.lbas_moved).unwrap_or(u16::MAX));
    }
    put_u16(r, 32, e.group);
    r[34] = e.ruhid.map_or(0, |h| u8::try_from(h).unwrap_or(u8::MAX));
}

/// Get Features FDP: enabled (bit 0) with configuration 0 (bits 15:8) for
/// an FDP namespace's endurance group (CDW11 bits 15:0); 0 for a namespace
/// without FDP; Invalid Field for an identifier naming none.
pub fn get_fdp(target: &Target, sqe: &Sqe<'_>) -> Reply {
    match group_logs(target, sqe.cdw(11) & 0xffff) {
        Ok(_) => Reply::result(1),
        Err(reply) if reply.status == sc::INVALID_FIELD => reply,
        Err(_) => Reply::result(0),
    }
}

/// Set Features FDP: FDP is configured while the endurance group has
/// namespaces, and every FDP group here has its one namespace, so this is
/// Command Sequence Error (as TP4146 and QEMU); Invalid Field for an
/// identifier naming no namespace.
pub fn set_fdp(target: &Target, sqe: &Sqe<'_>) -> Reply {
    match target.active(sqe.cdw(11) & 0xffff) {
        Some(_) => Reply::status(sc::COMMAND_SEQUENCE_ERROR),
        None => Reply::status(sc::INVALID_FIELD),
    }
}

/// The placement handle (CDW11 bits 15:0) and event type count (bits
/// 23:16) of the FDP Events feature.
fn handle_and_count(sqe: &Sqe<'_>) -> (u16, usize) {
    ((sqe.cdw(11) & 0xffff) as u16, (sqe.cdw(11) >> 16 & 0xff) as usize)
}

/// Set Features FDP Events on namespace NSID: CDW12 bit 0 enables (else
/// disables) the NOET event types the data lists for placement handle PH.
/// An event type the model does not raise is Invalid Field.
pub fn set_fdp_events(target: &Target, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    let (handle, count) = handle_and_count(sqe);
    if data.len() < count {
        return Reply::status(sc::SGL_LENGTH_INVALID);
    }
    let Some(kinds) = data[..count].iter().map(|&c| FdpEventKind::from_code(c)).collect::<Option<Vec<_>>>() else {
        return Reply::status(sc::INVALID_FIELD);
    };
    let enable = sqe.cdw(12) & 1 == 1;
    target.run_io(sqe.nsid(), 0, sqe, |ns| {
        let Some(logs) = ns.device().fdp_logs() else { return Reply::model(Status::FdpDisabled) };
        // A placement handle of reclaim group 0 is its own placement identifier.
        let pid = logs.descriptor.pid(0, handle);
        if handle >= logs.descriptor.handles {
            return Reply::status(sc::INVALID_FIELD);
        }
        match ns.set_fdp_events(pid, &kinds, enable) {
            Ok(()) => Reply::ok(),
            Err(status) => Reply::model(status),
        }
    })
}

/// Get Features FDP Events of namespace NSID and placement handle PH: up
/// to NOET descriptors (type, enabled) of the event types modelled, their
/// count in dword 0. NOET 0 is Invalid Field (QEMU's rule).
pub fn get_fdp_events(target: &Target, sqe: &Sqe<'_>) -> Reply {
    let (handle, count) = handle_and_count(sqe);
    if count == 0 {
        return Reply::status(sc::INVALID_FIELD);
    }
    target.run_io(sqe.nsid(), 0, sqe, |ns| {
        let Some(logs) = ns.device().fdp_logs() else { return Reply::model(Status::FdpDisabled) };
        let Some(enabled) = logs.enabled_events.get(usize::from(handle)) else {
            return Reply::status(sc::INVALID_FIELD);
        };
        let listed: Vec<FdpEventKind> = FdpEventKind::ALL.into_iter().take(count).collect();
        let mut data = vec![0u8; 2 * count];
        for (d, kind) in data.chunks_exact_mut(2).zip(&listed) {
            d[0] = kind.code();
            d[1] = u8::from(enabled.contains(kind));
        }
        Reply { result: listed.len() as u64, ..Reply::data(data) }
    })
}

/// Directive Receive: only the Identify directive's Return Parameters
/// (DTYPE 0, DOPER 1), 4 KiB: Identify and Data Placement supported, Data
/// Placement enabled and persistent on an FDP namespace. Anything else is
/// Invalid Field.
pub fn directive_receive(target: &Target, sqe: &Sqe<'_>) -> Reply {
    let (doper, dtype) = (sqe.cdw(11) & 0xff, sqe.cdw(11) >> 8 & 0xff);
    if (dtype, doper) != (0, 1) {
        return Reply::status(sc::INVALID_FIELD);
    }
    let Some(slot) = target.active(sqe.nsid()) else {
        return Reply::status(sc::INVALID_NAMESPACE);
    };
    let fdp = has_fdp(&lock(&slot.backend));
    let mut page = vec![0u8; 4096];
    page[0] = 1 | 1 << DTYPE_DATA_PLACEMENT; // supported
    page[32] = 1 | u8::from(fdp) << DTYPE_DATA_PLACEMENT; // enabled
    page[64] = u8::from(fdp) << DTYPE_DATA_PLACEMENT; // persistent across a controller reset
    let numd = (u64::from(sqe.cdw(10)) + 1) * 4;
    page.truncate(numd.min(4096) as usize);
    Reply::data(page)
}
