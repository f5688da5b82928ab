//! Fabrics commands (Connect, Property Get/Set) and the admin command set:
//! Identify, Get/Set Features, Get Log Page, Asynchronous Event Request and
//! Keep Alive, for the NVM subsystem's controllers and the discovery
//! controller.

use crate::nvme_tcp::command::{nul_terminated, put_ascii, put_nul_padded, put_u16, put_u32, put_u64, sc, Reply, Sqe};
use crate::nvme_tcp::fdp::{self, FID_FDP, FID_FDP_EVENTS, LID_FDP_CONFIGS, LID_FDP_EVENTS, OPC_DIRECTIVE_RECV};
use crate::nvme_tcp::io::{io_opcodes, is_nvm, namespace_page, zns_namespace_page};
use crate::nvme_tcp::manage::{self, OPC_NS_ATTACHMENT, OPC_NS_MANAGEMENT};
use crate::nvme_tcp::target::{
    lock, Controller, NamespaceBackend, Target, AERS_MAX, DISCOVERY_NQN, IO_QUEUES_MAX, QUEUE_ENTRIES_MAX,
};
use std::sync::Arc;
use zonelab_device::ZonedDevice;

/// Admin opcode: Get Log Page.
pub const OPC_GET_LOG_PAGE: u8 = 0x02;
/// Admin opcode: Identify.
pub const OPC_IDENTIFY: u8 = 0x06;
/// Admin opcode: Set Features.
pub const OPC_SET_FEATURES: u8 = 0x09;
/// Admin opcode: Get Features.
pub const OPC_GET_FEATURES: u8 = 0x0A;
/// Admin opcode: Asynchronous Event Request.
pub const OPC_ASYNC_EVENT: u8 = 0x0C;
/// Admin opcode: Keep Alive.
pub const OPC_KEEP_ALIVE: u8 = 0x18;

/// Fabrics command type: Property Set (a controller register).
pub const FCTYPE_PROPERTY_SET: u8 = 0x00;
/// Fabrics command type: Connect (creates a controller or joins a queue to it).
pub const FCTYPE_CONNECT: u8 = 0x01;
/// Fabrics command type: Property Get.
pub const FCTYPE_PROPERTY_GET: u8 = 0x04;

const PAGE_BYTES: usize = 4096;
const CSI_NVM: u8 = 0;
const CSI_ZNS: u8 = 2;
/// NVMe 2.0: the version the zoned command set needs.
const VERSION: u32 = 0x0002_0000;

const PROP_CAP: u32 = 0x00;
const PROP_VS: u32 = 0x08;
const PROP_CC: u32 = 0x14;
const PROP_CSTS: u32 = 0x1C;

/// CAP: MQES, contiguous queues required, 7.5 s timeout, NVM command set
/// and "I/O command sets" (CSS bits 0 and 6), 4 KiB memory pages.
fn capabilities() -> u64 {
    u64::from(QUEUE_ENTRIES_MAX - 1) | 1 << 16 | 15 << 24 | 1 << 37 | 1 << 43
}

/// What a Connect asks for, once checked.
pub struct Connected {
    /// The controller the queue belongs to.
    pub controller: Arc<Controller>,
    /// Queue id: 0 for the admin queue, 1 and up for I/O queues.
    pub qid: u16,
    /// Submission queue entries minus one, as Connect gives it.
    pub sqsize: u16,
}

/// Connect (Fabrics 1.1, §3.3): the admin queue creates a controller, an
/// I/O queue joins the one its data names.
pub fn connect(target: &Target, sqe: &Sqe<'_>, data: &[u8]) -> Result<Connected, Reply> {
    let (recfmt, qid, sqsize) = (sqe.u16_at(40), sqe.u16_at(42), sqe.u16_at(44));
    let invalid = |offset: u32, in_data: bool| Reply {
        result: u64::from(offset) << 16 | u64::from(in_data),
        ..Reply::status(sc::CONNECT_INVALID_PARAMETERS)
    };
    if recfmt != 0 {
        return Err(Reply::status(sc::CONNECT_INCOMPATIBLE_FORMAT));
    }
    if data.len() < 1024 {
        return Err(Reply::status(sc::SGL_LENGTH_INVALID));
    }
    if sqsize == 0 || sqsize >= QUEUE_ENTRIES_MAX {
        return Err(invalid(44, false));
    }
    let subnqn = nul_terminated(&data[256..512]);
    let hostnqn = nul_terminated(&data[512..768]);
    let cntlid = u16::from_le_bytes([data[16], data[17]]);
    let discovery = subnqn == DISCOVERY_NQN;
    if !discovery && subnqn != target.subnqn {
        return Err(invalid(256, true));
    }
    if qid == 0 {
        if cntlid != 0xFFFF {
            return Err(invalid(16, true));
        }
        let hostid = data[..16].try_into().expect("16 bytes");
        let kato_ms = sqe.cdw(12);
        let controller = target
            .create_controller(discovery, hostnqn, hostid)
            .ok_or_else(|| Reply::status(sc::CONNECT_CONTROLLER_BUSY))?;
        lock(&controller.state).kato_ms = kato_ms;
        return Ok(Connected { controller, qid, sqsize });
    }
    let Some(controller) = target.controller(cntlid).filter(|c| c.discovery == discovery) else {
        return Err(invalid(16, true));
    };
    if controller.hostnqn != hostnqn {
        return Err(Reply::status(sc::CONNECT_INVALID_HOST));
    }
    let granted = lock(&controller.state).io_queues.max(1);
    if discovery || qid > granted.min(IO_QUEUES_MAX) {
        return Err(invalid(42, false));
    }
    if !controller.enabled() {
        return Err(Reply::status(sc::COMMAND_SEQUENCE_ERROR));
    }
    Ok(Connected { controller, qid, sqsize })
}

/// Property Get: CAP, VS, CC, CSTS.
pub fn property_get(controller: &Controller, sqe: &Sqe<'_>) -> Reply {
    let eight_bytes = sqe.0[40] & 7 == 1;
    let offset = sqe.u32_at(44);
    let state = lock(&controller.state);
    let value = match (offset, eight_bytes) {
        (PROP_CAP, true) => capabilities(),
        (PROP_VS, false) => u64::from(VERSION),
        (PROP_CC, false) => u64::from(state.cc),
        (PROP_CSTS, false) => u64::from(state.csts),
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    Reply::result(value)
}

/// Property Set of CC: enabling makes the controller ready, clearing EN
/// resets it (the held event requests are dropped: returns how many), a
/// shutdown notification completes at once (after the images are made
/// durable).
pub fn property_set(target: &Target, controller: &Controller, sqe: &Sqe<'_>) -> (Reply, usize) {
    let (eight_bytes, offset) = (sqe.0[40] & 7 == 1, sqe.u32_at(44));
    if offset != PROP_CC || eight_bytes {
        return (Reply::status(sc::INVALID_FIELD), 0);
    }
    let cc = sqe.u32_at(48);
    let css = cc >> 4 & 7;
    if cc & 1 != 0 && css != 0 && css != 6 {
        return (Reply::status(sc::INVALID_FIELD), 0);
    }
    let shutdown = cc >> 14 & 3 != 0;
    if shutdown {
        if let Err(e) = target.sync_images() {
            eprintln!("zonelab: {e}");
        }
    }
    let mut state = lock(&controller.state);
    state.cc = cc;
    // CSTS: RDY follows EN; SHST reads "shutdown complete" (2) after a notification.
    state.csts = (cc & 1) | if shutdown { 2 << 2 } else { 0 };
    let dropped = if cc & 1 == 0 { state.events.drop_held() } else { 0 };
    (Reply::ok(), dropped)
}

/// The admin commands (`data`: what the host sent with one); `None`: an
/// Asynchronous Event Request, held (no answer until an event, and zonelab
/// raises none).
pub fn admin_command(target: &Target, controller: &Controller, sqe: &Sqe<'_>, data: &[u8]) -> Option<Reply> {
    Some(match sqe.opcode() {
        OPC_IDENTIFY => identify(target, controller, sqe),
        OPC_NS_MANAGEMENT | OPC_NS_ATTACHMENT if controller.discovery => Reply::status(sc::INVALID_OPCODE),
        OPC_NS_MANAGEMENT => manage::namespace_management(target, sqe, data),
        OPC_NS_ATTACHMENT => manage::namespace_attachment(target, sqe, data),
        OPC_GET_LOG_PAGE => get_log_page(target, controller, sqe),
        OPC_SET_FEATURES => set_features(target, controller, sqe, data),
        OPC_GET_FEATURES => get_features(target, controller, sqe),
        OPC_DIRECTIVE_RECV if !controller.discovery => fdp::directive_receive(target, sqe),
        OPC_KEEP_ALIVE => Reply::ok(),
        OPC_ASYNC_EVENT => {
            if !lock(&controller.state).events.hold(sqe.cid()) {
                return Some(Reply::status(sc::AER_LIMIT_EXCEEDED));
            }
            // A notice may be waiting for a request.
            target.deliver(controller);
            return None;
        }
        _ => Reply::status(sc::INVALID_OPCODE),
    })
}

fn identify(target: &Target, controller: &Controller, sqe: &Sqe<'_>) -> Reply {
    let cns = (sqe.cdw(10) & 0xff) as u8;
    let csi = (sqe.cdw(11) >> 24) as u8;
    let nsid = sqe.nsid();
    if controller.discovery && cns != 1 {
        return Reply::status(sc::INVALID_FIELD);
    }
    let page = match (cns, csi) {
        (0x01, _) => controller_page(target, controller),
        (0x02, _) => manage::nsid_list(&target.nsids(true), nsid),
        (0x07, _) => manage::nsid_list(&nsids_of(target, true, csi), nsid),
        (0x10, _) => manage::nsid_list(&target.nsids(false), nsid),
        (0x1A, _) => manage::nsid_list(&nsids_of(target, false, csi), nsid),
        (0x12, _) => {
            let attached = target.namespace(nsid).is_some_and(|ns| ns.attached());
            let ids = if attached { target.controller_ids(sqe.u16_at(42)) } else { Vec::new() };
            manage::controller_list(&ids)
        }
        (0x13, _) => manage::controller_list(&target.controller_ids(sqe.u16_at(42))),
        (0x1C, _) => {
            let mut page = vec![0; PAGE_BYTES];
            put_u64(&mut page, 0, 1 << CSI_NVM | 1 << CSI_ZNS);
            page
        }
        (0x06, CSI_NVM) => vec![0; PAGE_BYTES],
        (0x06, CSI_ZNS) => {
            let mut page = vec![0; PAGE_BYTES];
            page[0] = zasl(target);
            page
        }
        _ => return identify_namespace(target, cns, csi, nsid),
    };
    Reply::data(page)
}

/// The NSIDs of the allocated (`active`: attached) namespaces of command set `csi`.
fn nsids_of(target: &Target, active: bool, csi: u8) -> Vec<u32> {
    let slots = target.slots().into_iter().filter(|(_, slot)| !active || slot.attached());
    slots.filter(|(_, slot)| csi_of(&lock(&slot.backend)) == csi).map(|(nsid, _)| nsid).collect()
}

fn csi_of(ns: &NamespaceBackend) -> u8 {
    if is_nvm(ns) {
        CSI_NVM
    } else {
        CSI_ZNS
    }
}

/// The Identify structures of one namespace: CNS 00h, 03h and 05h for an
/// active NSID, 11h and 1Bh for an allocated one. An inactive valid NSID
/// gets a zero-filled Identify Namespace; FFFFFFFFh the common one.
fn identify_namespace(target: &Target, cns: u8, csi: u8, nsid: u32) -> Reply {
    let valid = nsid > 0 && nsid <= target.nn();
    let slot = match cns {
        0x00 | 0x03 | 0x05 => target.active(nsid),
        0x11 | 0x1B => target.namespace(nsid),
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    let Some(slot) = slot else {
        let zone_bytes = target.drive.as_ref().map(|d| lock(d).config().namespace.zone_size_bytes);
        return match (cns, zone_bytes) {
            (0x00 | 0x11, _) if nsid == 0xFFFF_FFFF => Reply::data(manage::common_namespace_page()),
            (0x05 | 0x1B, Some(zone_bytes)) if nsid == 0xFFFF_FFFF && csi == CSI_ZNS => {
                Reply::data(manage::common_zns_page(zone_bytes))
            }
            (0x00 | 0x11, _) if valid => Reply::data(vec![0; PAGE_BYTES]),
            _ if valid => Reply::status(sc::INVALID_FIELD),
            _ => Reply::status(sc::INVALID_NAMESPACE),
        };
    };
    let ns = lock(&slot.backend);
    let page = match (cns, csi) {
        (0x00 | 0x11, _) => {
            let mut page = namespace_page(&ns);
            if fdp::has_fdp(&ns) {
                // ENDGID: an FDP namespace is its own endurance group (crate::nvme_tcp::fdp).
                put_u16(&mut page, 102, nsid as u16);
            }
            page
        }
        (0x03, _) => descriptors(&target.subnqn, nsid, slot.generation, csi_of(&ns)),
        // An NVM namespace has no zoned command set structure.
        (0x05 | 0x1B, CSI_ZNS) if is_nvm(&ns) => return Reply::status(sc::INVALID_FIELD),
        (0x05 | 0x1B, CSI_ZNS) => zns_namespace_page(&ns),
        (0x05 | 0x1B, CSI_NVM) => vec![0; PAGE_BYTES],
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    Reply::data(page)
}

/// A power of two in 4 KiB pages: MDTS and ZASL's unit.
fn pages_log2(bytes: u64) -> u8 {
    let pages = (bytes / PAGE_BYTES as u64).max(1);
    (63 - pages.leading_zeros()) as u8
}

/// MDTS in bytes: the largest transfer any command may ask for.
pub fn mdts_bytes(target: &Target) -> usize {
    PAGE_BYTES << pages_log2(transfer_bytes_max(target))
}

/// Namespaces share the transfer limits: the smallest of theirs.
fn transfer_bytes_max(target: &Target) -> u64 {
    target.transfer_bytes_max()
}

fn zasl(target: &Target) -> u8 {
    pages_log2(target.zasl_bytes().min(transfer_bytes_max(target)))
}

/// Identify Controller (CNS 01h).
fn controller_page(target: &Target, controller: &Controller) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    put_ascii(&mut p, 4, 20, &format!("ZL{:016x}", fnv(target.subnqn.as_bytes())));
    put_ascii(&mut p, 24, 40, "zonelab ZNS");
    put_ascii(&mut p, 64, 8, env!("CARGO_PKG_VERSION"));
    p[77] = pages_log2(transfer_bytes_max(target)); // MDTS
    put_u16(&mut p, 78, controller.cntlid);
    put_u32(&mut p, 80, VERSION);
    let fdp = !controller.discovery && fdp::target_has_fdp(target);
    if fdp {
        put_u32(&mut p, 96, 1 << 4 | 1 << 19); // CTRATT: endurance groups, Flexible Data Placement
        put_u16(&mut p, 340, target.nn() as u16); // ENDGIDMAX: FDP groups are named by NSID
    }
    // OACS: Directives with FDP (the Identify directive lists Data Placement).
    put_u16(&mut p, 256, u16::from(fdp) << 5);
    if let Some((total, unallocated)) = target.capacity().filter(|_| !controller.discovery) {
        put_u16(&mut p, 256, 1 << 3 | u16::from(fdp) << 5); // OACS: Namespace Management and Attachment
        p[280..296].copy_from_slice(&u128::from(total).to_le_bytes()); // TNVMCAP
        p[296..312].copy_from_slice(&u128::from(unallocated).to_le_bytes()); // UNVMCAP
    }
    // OAES: zone descriptor changed notices; namespace attribute notices with Namespace Management.
    put_u32(&mut p, 92, 1 << 27 | u32::from(target.drive.is_some()) << 8);
    p[111] = if controller.discovery { 2 } else { 1 }; // CNTRLTYPE
    p[259] = (AERS_MAX - 1) as u8; // AERL
    p[261] = 0x06; // LPA: commands supported and effects, extended data
    put_u16(&mut p, 320, 10); // KAS: 100 ms units
    p[512] = 0x66; // SQES
    p[513] = 0x44; // CQES
    put_u16(&mut p, 514, QUEUE_ENTRIES_MAX); // MAXCMD
    if !controller.discovery {
        put_u32(&mut p, 516, target.nn()); // NN
        put_u16(&mut p, 520, 1 << 3 | 1 << 8); // ONCS: write zeroes, copy
        p[525] = 1; // VWC: Flush makes the image durable
        put_u16(&mut p, 534, 1); // OCFS: copy format 0
        put_u32(&mut p, 540, target.nn()); // MNAN
    }
    put_u32(&mut p, 536, 1 | 1 << 20); // SGLS: supported, offsets
    let nqn = if controller.discovery { DISCOVERY_NQN } else { &target.subnqn };
    put_nul_padded(&mut p, 768, 256, nqn);
    put_u32(&mut p, 1792, ((64 + crate::nvme_tcp::pdu::IN_CAPSULE_BYTES_MAX) / 16) as u32); // IOCCSZ
    put_u32(&mut p, 1796, 1); // IORCSZ
    p[1803] = 1; // MSDBD
    p
}

/// Namespace Identification Descriptors (CNS 03h): a UUID (derived from
/// the subsystem NQN and the namespace id: stable across restarts) and the
/// command set (zoned, or NVM for a namespace of conventional zones only).
fn descriptors(subnqn: &str, nsid: u32, generation: u64, csi: u8) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    p[0] = 3; // NIDT: UUID
    p[1] = 16;
    // A created namespace's generation makes its UUID new, even on a reused NSID.
    let name = match generation {
        0 => format!("{subnqn}/{nsid}"),
        g => format!("{subnqn}/{nsid}/{g}"),
    };
    let hash = fnv(name.as_bytes());
    put_u64(&mut p, 4, hash);
    put_u64(&mut p, 12, hash.rotate_left(29) ^ 0x5a5a_5a5a_5a5a_5a5a);
    p[20] = 4; // NIDT: command set identifier
    p[21] = 1;
    p[24] = csi;
    p
}

/// FNV-1a: a stable 64-bit digest for identifiers.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

const FID_VOLATILE_WRITE_CACHE: u8 = 0x06;
const FID_NUMBER_OF_QUEUES: u8 = 0x07;
const FID_ASYNC_EVENT_CONFIG: u8 = 0x0B;
const FID_KEEP_ALIVE_TIMER: u8 = 0x0F;

fn set_features(target: &Target, controller: &Controller, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    let fid = (sqe.cdw(10) & 0xff) as u8;
    let value = sqe.cdw(11);
    match fid {
        FID_FDP if !controller.discovery => return fdp::set_fdp(target, sqe),
        FID_FDP_EVENTS if !controller.discovery => return fdp::set_fdp_events(target, sqe, data),
        _ => {}
    }
    let mut state = lock(&controller.state);
    match fid {
        FID_NUMBER_OF_QUEUES => {
            let (nsqr, ncqr) = ((value & 0xffff) as u16, (value >> 16) as u16);
            if nsqr == 0xffff || ncqr == 0xffff {
                return Reply::status(sc::INVALID_FIELD);
            }
            let granted = nsqr.min(ncqr).min(IO_QUEUES_MAX - 1) + 1;
            state.io_queues = granted;
            let zero_based = u64::from(granted - 1);
            Reply::result(zero_based | zero_based << 16)
        }
        FID_ASYNC_EVENT_CONFIG => {
            state.async_event_config = value;
            Reply::ok()
        }
        FID_KEEP_ALIVE_TIMER => {
            state.kato_ms = value;
            Reply::ok()
        }
        FID_VOLATILE_WRITE_CACHE if !controller.discovery => {
            state.volatile_write_cache = value & 1 != 0;
            Reply::ok()
        }
        _ => Reply::status(sc::INVALID_FIELD),
    }
}

fn get_features(target: &Target, controller: &Controller, sqe: &Sqe<'_>) -> Reply {
    let fid = (sqe.cdw(10) & 0xff) as u8;
    match fid {
        FID_FDP if !controller.discovery => return fdp::get_fdp(target, sqe),
        FID_FDP_EVENTS if !controller.discovery => return fdp::get_fdp_events(target, sqe),
        _ => {}
    }
    let state = lock(&controller.state);
    let value = match fid {
        FID_NUMBER_OF_QUEUES => {
            let zero_based = u64::from(state.io_queues.clamp(1, IO_QUEUES_MAX) - 1);
            zero_based | zero_based << 16
        }
        FID_ASYNC_EVENT_CONFIG => u64::from(state.async_event_config),
        FID_KEEP_ALIVE_TIMER => u64::from(state.kato_ms),
        FID_VOLATILE_WRITE_CACHE if !controller.discovery => u64::from(state.volatile_write_cache),
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    Reply::result(value)
}

const LID_ERROR: u8 = 0x01;
const LID_SMART: u8 = 0x02;
const LID_FIRMWARE_SLOT: u8 = 0x03;
const LID_EFFECTS: u8 = 0x05;
const LID_DISCOVERY: u8 = 0x70;
const LID_CHANGED_ZONE_LIST: u8 = 0xBF;

/// Get Log Page: the whole log, then the part the offset and length ask for.
fn get_log_page(target: &Target, controller: &Controller, sqe: &Sqe<'_>) -> Reply {
    let lid = (sqe.cdw(10) & 0xff) as u8;
    let numd = (u64::from(sqe.cdw(10) >> 16) | u64::from(sqe.cdw(11) & 0xffff) << 16) + 1;
    let offset = u64::from(sqe.cdw(12)) | u64::from(sqe.cdw(13)) << 32;
    let csi = (sqe.cdw(14) >> 24) as u8;
    let log = match (lid, controller.discovery) {
        (LID_DISCOVERY, true) => return Reply::status(sc::INVALID_LOG_PAGE), // answered by the session
        (LID_ERROR, false) => error_log(target),
        (LID_SMART, false) => smart_log(target),
        (LID_FIRMWARE_SLOT, false) => {
            let mut log = vec![0u8; 512];
            log[0] = 1; // slot 1 active
            put_ascii(&mut log, 8, 8, env!("CARGO_PKG_VERSION"));
            log
        }
        (LID_EFFECTS, false) if csi == CSI_NVM || csi == CSI_ZNS => {
            effects_log(csi, target.drive.is_some(), fdp::target_has_fdp(target))
        }
        (fdp::LID_ENDURANCE_GROUP, false) => match fdp::endurance_group_log(target, sqe) {
            Ok(log) => log,
            Err(reply) => return reply,
        },
        (LID_FDP_CONFIGS..=LID_FDP_EVENTS, false) => match fdp::log_page(target, sqe) {
            Ok(log) => log,
            Err(reply) => return reply,
        },
        (crate::nvme_tcp::events::LID_CHANGED_NS_LIST, false) => {
            target.changed_namespace_log(controller, sqe.cdw(10) >> 15 & 1 == 1)
        }
        (LID_CHANGED_ZONE_LIST, false) => match target.active(sqe.nsid()) {
            // No zone ever raises a Zone Descriptor Changed event: the list is empty.
            Some(_) => vec![0u8; 4096],
            None => return Reply::status(sc::INVALID_NAMESPACE),
        },
        _ => return Reply::status(sc::INVALID_LOG_PAGE),
    };
    log_slice(&log, offset, numd, mdts_bytes(target))
}

/// `numd` dwords of `log` from `offset` (zeros past its end); more than
/// `bytes_max` (MDTS) is Invalid Field, refused before it is allocated.
pub fn log_slice(log: &[u8], offset: u64, numd: u64, bytes_max: usize) -> Reply {
    if !offset.is_multiple_of(4) || offset >= log.len() as u64 || numd * 4 > bytes_max as u64 {
        return Reply::status(sc::INVALID_FIELD);
    }
    let mut out = vec![0u8; (numd * 4) as usize];
    let available = &log[offset as usize..];
    let n = available.len().min(out.len());
    out[..n].copy_from_slice(&available[..n]);
    Reply::data(out)
}

/// SMART / Health Information: temperature, spare, and the data units and
/// commands the namespaces saw (units of 1000 512-byte blocks).
fn smart_log(target: &Target) -> Vec<u8> {
    let mut log = vec![0u8; 512];
    // Critical warning, bit 2: reliability degraded by an internal error
    // (a namespace went offline after a model fault).
    let offline = target.nsids(false).into_iter().any(|nsid| target.namespace_offline(nsid));
    log[0] = u8::from(offline) << 2;
    put_u16(&mut log, 1, 313); // composite temperature, kelvin
    log[3] = 100; // available spare
    log[4] = 10; // threshold
    let (mut read_bytes, mut written_bytes) = (0u64, 0u64);
    for (_, slot) in target.slots() {
        let counters = lock(&slot.backend).device().counters();
        read_bytes += counters.host_read_bytes;
        written_bytes += counters.host_write_bytes;
    }
    put_u64(&mut log, 32, read_bytes.div_ceil(512_000));
    put_u64(&mut log, 48, written_bytes.div_ceil(512_000));
    log
}

/// Error Information (LID 01h): the model faults that took namespaces
/// offline, newest first (64 bytes each; at least one, empty, entry).
fn error_log(target: &Target) -> Vec<u8> {
    let entries = target.error_entries();
    let mut log = vec![0u8; 64 * entries.len().max(1)];
    for (entry, e) in log.chunks_exact_mut(64).zip(&entries) {
        put_u64(entry, 0, e.count);
        put_u16(entry, 8, e.sqid);
        put_u16(entry, 10, e.cid);
        put_u16(entry, 12, e.status << 1); // status field, phase tag 0
        put_u32(entry, 24, e.nsid);
    }
    log
}

/// Commands Supported and Effects for `csi`: supported (bit 0), changes
/// logical block content (bit 1), namespace inventory (bit 3: Namespace
/// Management and Attachment, when `managed`); Directive Receive with FDP.
fn effects_log(csi: u8, managed: bool, fdp: bool) -> Vec<u8> {
    let mut log = vec![0u8; 4096];
    for opc in [OPC_GET_LOG_PAGE, OPC_IDENTIFY, OPC_SET_FEATURES, OPC_GET_FEATURES, OPC_ASYNC_EVENT, OPC_KEEP_ALIVE] {
        put_u32(&mut log, usize::from(opc) * 4, 1);
    }
    if fdp {
        put_u32(&mut log, usize::from(OPC_DIRECTIVE_RECV) * 4, 1);
    }
    if managed {
        for opc in [OPC_NS_MANAGEMENT, OPC_NS_ATTACHMENT] {
            put_u32(&mut log, usize::from(opc) * 4, 1 | 1 << 3);
        }
    }
    for (opc, changes_content, zoned) in io_opcodes() {
        if zoned && csi != CSI_ZNS {
            continue;
        }
        put_u32(&mut log, 1024 + usize::from(opc) * 4, 1 | u32::from(changes_content) << 1);
    }
    log
}

/// The discovery log page (LID 70h): one entry, this subsystem at this port.
pub fn discovery_log(target: &Target, traddr: &std::net::SocketAddr, sqe: &Sqe<'_>) -> Reply {
    let mut log = vec![0u8; 2048];
    put_u64(&mut log, 0, 1); // GENCTR
    put_u64(&mut log, 8, 1); // NUMREC
    let e = &mut log[1024..];
    e[0] = 3; // TRTYPE: TCP
    e[1] = if traddr.is_ipv4() { 1 } else { 2 }; // ADRFAM
    e[2] = 2; // SUBTYPE: NVM subsystem
    e[3] = 0x04; // TREQ: SQ flow control may be disabled
    put_u16(e, 6, 0xFFFF); // dynamic controllers
    put_u16(e, 8, QUEUE_ENTRIES_MAX); // ASQSZ
    put_ascii(e, 32, 32, &traddr.port().to_string());
    put_nul_padded(e, 256, 256, &target.subnqn);
    put_ascii(e, 512, 256, &traddr.ip().to_string());
    let numd = (u64::from(sqe.cdw(10) >> 16) | u64::from(sqe.cdw(11) & 0xffff) << 16) + 1;
    let offset = u64::from(sqe.cdw(12)) | u64::from(sqe.cdw(13)) << 32;
    log_slice(&log, offset, numd, mdts_bytes(target))
}
