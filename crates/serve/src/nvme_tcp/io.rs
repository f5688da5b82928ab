//! The I/O command set (NVM and Zoned Namespace) and the ZNS+ vendor
//! commands, run on a namespace's [`Backend`]; completions carry the
//! model's own statuses. Also the namespace's Identify structures.

use crate::backend::{Pace, Refusal};
use crate::nvme_tcp::command::{put_u16, put_u32, put_u64, sc, Reply, Sqe};
use crate::nvme_tcp::fdp;
use crate::nvme_tcp::target::NamespaceBackend as Backend;
use crate::report::zone_cond_code;
use zonelab_device::{
    CmdResult, Command, Completion, Payload, ReportFilter, SourceRange, ZoneAction, ZoneDescriptor, ZoneState,
    ZoneType, ZonedDevice,
};
use zonelab_sim::Nanos;

/// I/O opcode: Flush.
pub const OPC_FLUSH: u8 = 0x00;
/// I/O opcode: Write.
pub const OPC_WRITE: u8 = 0x01;
/// I/O opcode: Read.
pub const OPC_READ: u8 = 0x02;
/// I/O opcode: Write Zeroes.
pub const OPC_WRITE_ZEROES: u8 = 0x08;
/// I/O opcode: Copy (Simple Copy).
pub const OPC_COPY: u8 = 0x19;
/// I/O opcode: Zone Management Send (open, close, finish, reset, offline).
pub const OPC_ZONE_MGMT_SEND: u8 = 0x79;
/// I/O opcode: Zone Management Receive (report zones).
pub const OPC_ZONE_MGMT_RECV: u8 = 0x7A;
/// I/O opcode: Zone Append.
pub const OPC_ZONE_APPEND: u8 = 0x7D;
/// ZNS+ (vendor specific, docs/nvme-tcp.md): host-to-controller pairs.
pub const OPC_ZONE_COMPACTION: u8 = 0x81;
/// ZNS+ TL_open: host-to-controller valid-block bitmap.
pub const OPC_TL_OPEN: u8 = 0x85;
/// ZNS+ identify_mapping: controller-to-host, 24 bytes.
pub const OPC_IDENTIFY_MAPPING: u8 = 0x86;

const REPORT_HEADER_BYTES: usize = 64;
const ZONE_DESCRIPTOR_BYTES: usize = 64;
const COPY_RANGE_BYTES: usize = 32;
const COMPACTION_PAIR_BYTES: usize = 16;
/// Bytes of the ZNS+ identify_mapping answer.
pub const IDENTIFY_MAPPING_BYTES: usize = 24;

/// (opcode, changes logical block content, zoned command set only), for the
/// commands supported and effects log.
pub fn io_opcodes() -> [(u8, bool, bool); 13] {
    [
        // A Reclaim Unit Handle Update changes where later data goes, not any block's content.
        (fdp::OPC_IO_MGMT_RECV, false, false),
        (fdp::OPC_IO_MGMT_SEND, false, false),
        (OPC_FLUSH, false, false),
        (OPC_WRITE, true, false),
        (OPC_READ, false, false),
        (OPC_WRITE_ZEROES, true, false),
        (OPC_COPY, true, false),
        (OPC_ZONE_MGMT_SEND, true, true),
        (OPC_ZONE_MGMT_RECV, false, true),
        (OPC_ZONE_APPEND, true, true),
        (OPC_ZONE_COMPACTION, true, true),
        (OPC_TL_OPEN, true, true),
        (OPC_IDENTIFY_MAPPING, false, true),
    ]
}

/// Runs an I/O command at `wall_ns` on `ns`. `data` holds what the host
/// sent (a write's blocks, copy ranges...).
pub fn io_command(ns: &mut Backend, wall_ns: Nanos, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    // An NVM namespace has no zoned command set: its opcodes are unknown there.
    if is_nvm(ns) && io_opcodes().iter().any(|&(opc, _, zoned)| zoned && opc == sqe.opcode()) {
        return Reply::status(sc::INVALID_OPCODE);
    }
    let lba_bytes = ns.geometry().lba_bytes as usize;
    let transfer_max = ns.geometry().io_bytes_max as usize;
    let nlb = (sqe.cdw(12) & 0xffff) + 1;
    let bytes = nlb as usize * lba_bytes;
    let slba = sqe.cdw10_11();
    // Force Unit Access: the write completes once its data is durable.
    let fua = sqe.cdw(12) >> 30 & 1 == 1;
    let run = |ns: &mut Backend, cmd: &Command<'_>| {
        let completion = ns.submit(wall_ns, cmd, None);
        answer(ns, completion, |_| Reply::ok())
    };
    match sqe.opcode() {
        OPC_FLUSH => {
            // The device's volatile write cache saves what it holds, then the image file is synced.
            let completion = ns.submit(wall_ns, &Command::Flush, None);
            match ns.flush(wall_ns) {
                Some(_) => answer(ns, completion, |_| Reply::ok()),
                None => Reply::status(sc::INTERNAL_ERROR),
            }
        }
        OPC_READ if bytes > transfer_max => Reply::status(sc::INVALID_FIELD),
        OPC_READ => {
            let mut buf = vec![0u8; bytes];
            let completion = ns.submit(wall_ns, &Command::Read { slba, nlb }, Some(&mut buf));
            answer(ns, completion, |_| Reply::data(buf))
        }
        OPC_WRITE | OPC_ZONE_APPEND if bytes > transfer_max => Reply::status(sc::INVALID_FIELD),
        OPC_WRITE | OPC_ZONE_APPEND if data.len() < bytes => Reply::status(sc::SGL_LENGTH_INVALID),
        OPC_WRITE => {
            let placement = fdp::placement(sqe);
            run(ns, &Command::Write { slba, nlb, payload: Payload::Bytes(&data[..bytes]), fua, placement })
        }
        OPC_ZONE_APPEND => {
            let cmd = Command::Append { zslba: slba, nlb, payload: Payload::Bytes(&data[..bytes]), fua };
            let completion = ns.submit(wall_ns, &cmd, None);
            answer(ns, completion, |c| match c.result {
                CmdResult::Lba(lba) => Reply::result(lba),
                _ => Reply::status(sc::INTERNAL_ERROR),
            })
        }
        OPC_WRITE_ZEROES => run(ns, &Command::WriteZeroes { slba, nlb, placement: fdp::placement(sqe) }),
        OPC_ZONE_MGMT_SEND => zone_send(ns, wall_ns, sqe),
        OPC_ZONE_MGMT_RECV => zone_receive(ns, wall_ns, sqe),
        OPC_COPY => copy(ns, wall_ns, sqe, data),
        fdp::OPC_IO_MGMT_RECV => fdp::io_mgmt_receive(ns, wall_ns, sqe, transfer_max),
        fdp::OPC_IO_MGMT_SEND => fdp::io_mgmt_send(ns, wall_ns, sqe, data),
        OPC_ZONE_COMPACTION => compaction(ns, wall_ns, sqe, data),
        OPC_TL_OPEN => {
            if data.is_empty() || !data.len().is_multiple_of(8) {
                return Reply::status(sc::SGL_LENGTH_INVALID);
            }
            let valid: Vec<u64> = data.chunks_exact(8).map(|w| u64::from_le_bytes(w.try_into().expect("8"))).collect();
            run(ns, &Command::TlOpen { zslba: slba, valid: &valid })
        }
        OPC_IDENTIFY_MAPPING => identify_mapping(ns, wall_ns),
        _ => Reply::status(sc::INVALID_OPCODE),
    }
}

/// ZNS+ identify_mapping: its 24 bytes.
fn identify_mapping(ns: &mut Backend, wall_ns: Nanos) -> Reply {
    let completion = ns.submit(wall_ns, &Command::IdentifyMapping, None);
    answer(ns, completion, |c| match &c.result {
        CmdResult::Mapping(m) => {
            let mut page = vec![0u8; IDENTIFY_MAPPING_BYTES];
            put_u64(&mut page, 0, m.lbas_per_chunk);
            put_u32(&mut page, 8, m.chip_id_shift);
            put_u32(&mut page, 12, m.chip_id_bits);
            put_u32(&mut page, 16, m.fcg_id_shift);
            put_u32(&mut page, 20, m.fcg_id_bits);
            Reply::data(page)
        }
        _ => Reply::status(sc::INTERNAL_ERROR),
    })
}

/// Whether the namespace has only conventional zones: an NVM namespace
/// (command set 0), not a zoned one.
pub fn is_nvm(ns: &Backend) -> bool {
    let layout = ns.device().layout();
    layout.conventional_zones == layout.zones
}

/// When the answer is due: the simulated completion under realtime pacing.
fn due(ns: &Backend, complete_ns: Nanos) -> Nanos {
    match ns.pace() {
        Pace::Realtime => complete_ns,
        Pace::Asap => 0,
    }
}

/// The reply to a completion: `ok` builds a success's, the model's status
/// otherwise; a model failure is an Internal Error.
/// A command that reads a block of the image that failed its checksum did
/// not run: Unrecovered Read Error, as a drive answers an uncorrectable block.
pub(crate) fn answer(
    ns: &Backend,
    completion: Result<Completion, Refusal>,
    ok: impl FnOnce(&Completion) -> Reply,
) -> Reply {
    let completion = match completion {
        Ok(completion) => completion,
        Err(Refusal::Failed) => return Reply::status(sc::INTERNAL_ERROR),
        Err(Refusal::UnrecoveredRead { .. }) => return Reply::status(sc::UNRECOVERED_READ_ERROR),
    };
    let mut reply = if completion.status.is_success() { ok(&completion) } else { Reply::model(completion.status) };
    reply.due_ns = due(ns, completion.complete_ns);
    reply
}

fn zone_send(ns: &mut Backend, wall_ns: Nanos, sqe: &Sqe<'_>) -> Reply {
    let cdw13 = sqe.cdw(13);
    let zrwa_allocate = cdw13 & 1 << 9 != 0;
    let action = match (cdw13 & 0xff, zrwa_allocate) {
        (0x01, _) => ZoneAction::Close,
        (0x02, _) => ZoneAction::Finish,
        (0x03, false) => ZoneAction::Open,
        (0x03, true) => ZoneAction::OpenZrwa,
        (0x04, _) => ZoneAction::Reset,
        (0x05, _) => ZoneAction::Offline,
        // Flush Explicit ZRWA Range: SLBA is the last LBA to commit.
        (0x11, _) => ZoneAction::FlushZrwa,
        // Set Zone Descriptor Extension (ZDES is 0) is not supported.
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    let cmd = Command::ZoneMgmtSend { action, slba: sqe.cdw10_11(), select_all: cdw13 & 1 << 8 != 0 };
    let completion = ns.submit(wall_ns, &cmd, None);
    answer(ns, completion, |_| Reply::ok())
}

fn zone_receive(ns: &mut Backend, wall_ns: Nanos, sqe: &Sqe<'_>) -> Reply {
    let bytes = (sqe.cdw(12) as usize + 1) * 4;
    let cdw13 = sqe.cdw(13);
    // Only the plain report: the extended report needs zone descriptor extensions (ZDES 0).
    if bytes > ns.geometry().io_bytes_max as usize || cdw13 & 0xff != 0 {
        return Reply::status(sc::INVALID_FIELD);
    }
    let filter = match cdw13 >> 8 & 0xff {
        0 => ReportFilter::All,
        code @ 1..=7 => ReportFilter::State(state_of_filter(code as u8)),
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    let max_zones = (bytes.saturating_sub(REPORT_HEADER_BYTES) / ZONE_DESCRIPTOR_BYTES) as u32;
    let cmd = Command::ReportZones { slba: sqe.cdw10_11(), filter, max_zones, partial: cdw13 & 1 << 16 != 0 };
    let completion = ns.submit(wall_ns, &cmd, None);
    answer(ns, completion, |c| match &c.result {
        CmdResult::Report(report) => {
            let mut page = vec![0u8; REPORT_HEADER_BYTES + report.zones.len() * ZONE_DESCRIPTOR_BYTES];
            put_u64(&mut page, 0, report.nr_zones);
            for (i, zone) in report.zones.iter().enumerate() {
                encode_zone(&mut page[REPORT_HEADER_BYTES + i * ZONE_DESCRIPTOR_BYTES..], zone);
            }
            page.truncate(bytes);
            Reply::data(page)
        }
        _ => Reply::status(sc::INTERNAL_ERROR),
    })
}

/// Zone Receive Action Specific field 1..=7 (NVMe ZNS 1.1, Figure 37).
fn state_of_filter(code: u8) -> ZoneState {
    match code {
        1 => ZoneState::Empty,
        2 => ZoneState::ImplicitlyOpened,
        3 => ZoneState::ExplicitlyOpened,
        4 => ZoneState::Closed,
        5 => ZoneState::Full,
        6 => ZoneState::ReadOnly,
        _ => ZoneState::Offline,
    }
}

/// One zone descriptor (NVMe ZNS 1.1, Figure 39).
fn encode_zone(out: &mut [u8], zone: &ZoneDescriptor) {
    out[0] = match zone.zone_type {
        ZoneType::SeqWriteRequired => 0x2,
        // Not a ZNS type: conventional zones exist only in configurations that ask for them.
        ZoneType::Conventional => 0x1,
    };
    out[1] = zone_cond_code(zone.state) << 4;
    out[2] = u8::from(zone.zrwa) << 3; // ZA: ZRWAV
    put_u64(out, 8, zone.zcap);
    put_u64(out, 16, zone.zslba);
    put_u64(out, 24, zone.wp);
}

/// Copy with source range entries of format 0 (32 bytes each).
fn copy(ns: &mut Backend, wall_ns: Nanos, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    let cdw12 = sqe.cdw(12);
    if cdw12 >> 8 & 0xf != 0 {
        return Reply::status(sc::INVALID_FIELD);
    }
    let ranges_count = (cdw12 & 0xff) as usize + 1;
    if data.len() < ranges_count * COPY_RANGE_BYTES {
        return Reply::status(sc::SGL_LENGTH_INVALID);
    }
    let ranges: Vec<SourceRange> = data
        .chunks_exact(COPY_RANGE_BYTES)
        .take(ranges_count)
        .map(|r| SourceRange {
            slba: u64::from_le_bytes(r[8..16].try_into().expect("8 bytes")),
            nlb: u32::from(u16::from_le_bytes([r[16], r[17]])) + 1,
        })
        .collect();
    let cmd = Command::SimpleCopy { ranges: &ranges, sdlba: sqe.cdw10_11() };
    let completion = ns.submit(wall_ns, &cmd, None);
    answer(ns, completion, |_| Reply::ok())
}

/// ZNS+ zone_compaction: CDW10 pairs of (source LBA, destination LBA).
fn compaction(ns: &mut Backend, wall_ns: Nanos, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    let pairs = sqe.cdw(10) as usize;
    if pairs == 0 || data.len() < pairs.saturating_mul(COMPACTION_PAIR_BYTES) {
        return Reply::status(sc::SGL_LENGTH_INVALID);
    }
    let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
    let entries = data.chunks_exact(COMPACTION_PAIR_BYTES).take(pairs);
    let (src, dst): (Vec<u64>, Vec<u64>) = entries.map(|p| (word(&p[..8]), word(&p[8..]))).unzip();
    let cmd = Command::ZoneCompaction { src: &src, dst: &dst };
    let completion = ns.submit(wall_ns, &cmd, None);
    answer(ns, completion, |_| Reply::ok())
}

/// Identify Namespace (CNS 00h) of the zoned namespace.
pub fn namespace_page(ns: &Backend) -> Vec<u8> {
    let id = ns.device().identify();
    let znsplus = &ns.device().config().znsplus;
    let mut p = vec![0u8; 4096];
    put_u64(&mut p, 0, id.nsze); // NSZE
    put_u64(&mut p, 8, id.nsze); // NCAP
    put_u64(&mut p, 16, id.nsze); // NUSE
    put_u16(&mut p, 74, znsplus.copy_blocks_max.min(0xffff) as u16); // MSSRL
    put_u32(&mut p, 76, znsplus.copy_blocks_max); // MCL
    p[80] = znsplus.copy_ranges_max.clamp(1, 256).saturating_sub(1) as u8; // MSRC, 0-based
    let capacity = u128::from(id.nsze) * u128::from(id.lba_bytes);
    p[48..64].copy_from_slice(&capacity.to_le_bytes()); // NVMCAP
    p[128 + 2] = id.lba_bytes.trailing_zeros() as u8; // LBAF0: LBADS
    p
}

/// I/O Command Set specific Identify Namespace for ZNS (CNS 05h, CSI 02h).
pub fn zns_namespace_page(ns: &Backend) -> Vec<u8> {
    let id = ns.device().identify();
    let mut p = vec![0u8; 4096];
    put_u32(&mut p, 4, id.mar); // MAR (0-based, FFFFFFFFh: no limit)
    put_u32(&mut p, 8, id.mor); // MOR
    if let Some(z) = id.zrwa {
        put_u16(&mut p, 2, 1 << 1); // OZCS: ZRWASUP
        put_u32(&mut p, 44, z.resources - 1); // NUMZRWA (0-based)
        put_u16(&mut p, 48, u16::try_from(z.flush_lbas).expect("ZRWAFG is validated to fit 16 bits"));
        put_u16(&mut p, 50, u16::try_from(z.lbas).expect("ZRWAS is validated to fit 16 bits"));
        p[52] = u8::from(z.explicit_commit); // ZRWACAP: EXPFLUSHSUP
    }
    put_u64(&mut p, 2816, id.zsze); // LBAFE0: ZSZE (ZDES 0)
    p
}
