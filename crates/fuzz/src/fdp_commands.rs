//! Structure-aware inputs for the `nvme-tcp-fdp` target: a connection to
//! a namespace with Flexible Data Placement (4 reclaim unit handles) that
//! either joins I/O queue 1 and sends writes with the Data Placement
//! directive and I/O Management Receive and Send, or connects an admin
//! queue and asks for the FDP log pages, features and directive
//! parameters. Fields are drawn near the values that matter: placement
//! identifiers around the valid ones, NPID, NUMD and NOET from 0 to far
//! beyond their data, log offsets at and past each log's end. Written as
//! the target's hex text, one `#` comment a command.

use zonelab_serve::nvme_tcp::pdu::{Encoding, Pdu, SQE_BYTES};
use zonelab_sim::SimRng;

const IO: &str = include_str!("../corpus/nvme-tcp/io.hex");
const ADMIN: &str = include_str!("../corpus/nvme-tcp/admin.hex");
/// Commands a generated stream holds at most.
const COMMANDS_MAX: u64 = 40;
/// LBAs of the fuzz namespace (100 MiB of 4 KiB blocks).
const LBAS: u64 = 25_600;

/// A generated stream, as the target's hex text.
pub fn generate(rng: &mut SimRng) -> String {
    let admin = rng.chance(0.35);
    let (prefix, end) = if admin { (ADMIN, "# Property Get") } else { (IO, "# Write") };
    let mut text: String = prefix.lines().take_while(|l| !l.starts_with(end)).map(|l| format!("{l}\n")).collect();
    for cid in 0..1 + rng.below(COMMANDS_MAX) {
        let cid = cid as u16 + 16;
        let (what, sqe, data) = if admin { admin_command(rng, cid) } else { io_command(rng, cid) };
        let bytes = Encoding::default().encode(&Pdu::CapsuleCmd { sqe, data, data_ok: true });
        text.push_str(&format!("# {what}\n"));
        for row in bytes.chunks(32) {
            let hex: Vec<String> = row.iter().map(|b| format!("{b:02x}")).collect();
            text.push_str(&hex.join(" "));
            text.push('\n');
        }
    }
    text
}

/// A placement identifier: mostly a valid one (0 to 3), else just past
/// them, or any.
fn pid(rng: &mut SimRng) -> u16 {
    match rng.below(10) {
        0..=6 => rng.below(4) as u16,
        7 | 8 => 4 + rng.below(4) as u16,
        _ => rng.below(1 << 16) as u16,
    }
}

/// A count field (0-based or not): small, around a boundary, or huge.
fn count(rng: &mut SimRng, around: u32) -> u32 {
    match rng.below(10) {
        0..=5 => rng.below(u64::from(around) + 2) as u32,
        6..=8 => around.saturating_add(rng.below(64) as u32),
        _ => [u32::MAX, 0xFFFF, 0xFF, 1 << 20][rng.below(4) as usize],
    }
}

/// A submission queue entry on NSID 1 (now and then another), in-capsule
/// data of `data_bytes` or a transport block for data to the host.
fn sqe(rng: &mut SimRng, opcode: u8, cid: u16, data_bytes: usize, in_bytes: u32, cdw: [u32; 6]) -> [u8; SQE_BYTES] {
    let mut s = [0u8; SQE_BYTES];
    s[0] = opcode;
    s[1] = 0x40; // PSDT: SGL
    s[2..4].copy_from_slice(&cid.to_le_bytes());
    let nsid: u32 = if rng.chance(0.95) { 1 } else { [0, 2, u32::MAX][rng.below(3) as usize] };
    s[4..8].copy_from_slice(&nsid.to_le_bytes());
    let length = if data_bytes > 0 { data_bytes as u32 } else { in_bytes };
    s[32..36].copy_from_slice(&length.to_le_bytes());
    s[39] = if data_bytes > 0 { 0x01 } else { 0x5A };
    for (i, dw) in cdw.iter().enumerate() {
        s[40 + 4 * i..44 + 4 * i].copy_from_slice(&dw.to_le_bytes());
    }
    s
}

/// An I/O command: a placed write, a read, Write Zeroes, a flush, Reclaim
/// Unit Handle Status or Update, or an unknown I/O Management operation.
fn io_command(rng: &mut SimRng, cid: u16) -> (String, [u8; SQE_BYTES], Vec<u8>) {
    let slba = if rng.chance(0.95) { rng.below(LBAS) } else { LBAS - rng.below(4) };
    let nlb = rng.below(8) as u32; // 0-based
    match rng.below(100) {
        0..=44 => {
            let nlb = nlb.min(1);
            let dtype = [2u32, 2, 2, 0, 1, 15][rng.below(6) as usize];
            let dspec = u32::from(pid(rng));
            let data = vec![rng.below(256) as u8; (nlb as usize + 1) * 4096];
            let cdw = [slba as u32, (slba >> 32) as u32, nlb | dtype << 20, dspec << 16, 0, 0];
            (
                format!("write {slba} +{} dtype {dtype} dspec {dspec}", nlb + 1),
                sqe(rng, 0x01, cid, data.len(), 0, cdw),
                data,
            )
        }
        45..=54 => {
            let cdw = [slba as u32, (slba >> 32) as u32, nlb, 0, 0, 0];
            (format!("read {slba}"), sqe(rng, 0x02, cid, 0, (nlb + 1) * 4096, cdw), vec![])
        }
        55..=59 => {
            let cdw = [slba as u32, (slba >> 32) as u32, nlb | 2 << 20, u32::from(pid(rng)) << 16, 0, 0];
            (format!("write zeroes {slba}"), sqe(rng, 0x08, cid, 0, 0, cdw), vec![])
        }
        60..=74 => {
            let (mo, numd) = ([1u32, 1, 1, 0, 2][rng.below(5) as usize], count(rng, 35));
            let in_bytes = 4 * (numd.min(1023) + 1);
            let s = sqe(rng, 0x12, cid, 0, in_bytes, [mo, numd, 0, 0, 0, 0]);
            (format!("ruh status mo {mo} numd {numd}"), s, vec![])
        }
        75..=94 => ruh_update(rng, cid),
        95 => ("flush".into(), sqe(rng, 0x00, cid, 0, 0, [0; 6]), vec![]),
        _ => {
            let opcode = [0x12u8, 0x1D, 0x09, 0x0D][rng.below(4) as usize];
            let cdw = [rng.next_u64() as u32, rng.next_u64() as u32, 0, 0, 0, 0];
            (format!("opcode {opcode:#x} with any dwords"), sqe(rng, opcode, cid, 0, 0, cdw), vec![])
        }
    }
}

/// Reclaim Unit Handle Update: NPID near the list's length or not, the
/// list sometimes shorter than NPID says.
fn ruh_update(rng: &mut SimRng, cid: u16) -> (String, [u8; SQE_BYTES], Vec<u8>) {
    let listed = 1 + rng.below(6) as usize;
    let npid = if rng.chance(0.8) { listed as u32 - 1 } else { count(rng, 4) & 0xFFFF };
    let mo = if rng.chance(0.9) { 1 } else { rng.below(4) as u32 };
    let data: Vec<u8> = (0..listed).flat_map(|_| pid(rng).to_le_bytes()).collect();
    let s = sqe(rng, 0x1D, cid, data.len(), 0, [mo | npid << 16, 0, 0, 0, 0, 0]);
    (format!("ruh update mo {mo} npid {npid} of {listed}"), s, data)
}

/// An admin command: an FDP or Endurance Group Information log page (any
/// LSI, LSP, offset and length),
/// Get or Set Features FDP and FDP Events, Directive Receive, Identify.
fn admin_command(rng: &mut SimRng, cid: u16) -> (String, [u8; SQE_BYTES], Vec<u8>) {
    let group = [1u32, 1, 1, 0, 2, 0xFFFF][rng.below(6) as usize];
    match rng.below(100) {
        0..=49 => {
            let lid = [0x09u32, 0x20, 0x21, 0x22, 0x23][rng.below(5) as usize];
            let numd = count(rng, 31);
            let offset = [0u32, 4, 16, 64, 88, 2, 4096][rng.below(7) as usize];
            let cdw10 = lid | (rng.below(2) as u32) << 8 | (numd & 0xFFFF) << 16;
            let cdw = [cdw10, numd >> 16 | group << 16, offset, 0, 0, 0];
            let in_bytes = 4 * ((numd & 0xFFFF).min(1023) + 1);
            (
                format!("log {lid:#x} group {group} offset {offset} numd {numd}"),
                sqe(rng, 0x02, cid, 0, in_bytes, cdw),
                vec![],
            )
        }
        50..=79 => {
            let noet = count(rng, 3) & 0xFF;
            let handle = pid(rng) as u32 & 0xF;
            let types: Vec<u8> =
                (0..1 + rng.below(8)).map(|_| [0u8, 3, 0x80, 1, 0xFF][rng.below(5) as usize]).collect();
            let cdw = [0x1E, handle | noet << 16, u32::from(rng.chance(0.5)), 0, 0, 0];
            if rng.chance(0.5) {
                (
                    format!("set fdp events noet {noet} of {}", types.len()),
                    sqe(rng, 0x09, cid, types.len(), 0, cdw),
                    types,
                )
            } else {
                (format!("get fdp events noet {noet}"), sqe(rng, 0x0A, cid, 0, 2 * noet.max(1), cdw), vec![])
            }
        }
        80..=89 => {
            let opcode = if rng.chance(0.5) { 0x0A } else { 0x09 };
            (
                format!("features fdp {opcode:#x} group {group}"),
                sqe(rng, opcode, cid, 0, 0, [0x1D, group, 0, 0, 0, 0]),
                vec![],
            )
        }
        90..=94 => {
            let cdw11 = [0x01u32, 0x0201, 0x0100, 0x01][rng.below(4) as usize];
            (format!("directive receive {cdw11:#x}"), sqe(rng, 0x1A, cid, 0, 4096, [1023, cdw11, 0, 0, 0, 0]), vec![])
        }
        _ => {
            let cns = [0u32, 1][rng.below(2) as usize];
            (format!("identify cns {cns}"), sqe(rng, 0x06, cid, 0, 4096, [cns, 0, 0, 0, 0, 0]), vec![])
        }
    }
}
