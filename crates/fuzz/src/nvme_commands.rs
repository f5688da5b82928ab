//! Structure-aware inputs for the `nvme-tcp` target: a connection that
//! does what a host does (ICReq, Connect of I/O queue 1), then a sequence
//! of well-formed command capsules whose fields are drawn near the values
//! that matter: LBAs at and around zone starts, write pointers and the end
//! of the namespace, block counts around the transfer limit, every zone
//! action with and without Select All, Copy ranges, zone_compaction pairs,
//! TL_open bitmaps, and now and then an unknown opcode or namespace. Byte
//! mutation rarely gets a capsule past the PDU checks; these reach the
//! model, which a command sequence can drive into states no single command
//! reaches (the random `exec` fuzzer that found the compaction panic worked
//! the same way). Written as the target's hex text, one `#` comment a
//! command, so a finding reads as what was sent.

use zonelab_serve::nvme_tcp::pdu::{Encoding, Pdu, SQE_BYTES};
use zonelab_sim::SimRng;

/// The corpus stream whose ICReq and Connect every generated one starts with.
const CONNECTED: &str = include_str!("../corpus/nvme-tcp/io.hex");
/// Commands a generated stream holds at most.
const COMMANDS_MAX: u64 = 48;
/// The fuzz device (`targets::small_device(8)`): 8 zones of 256 blocks.
const ZONE_LBAS: u64 = 256;
const ZONES: u64 = 8;
/// In-capsule data stays within the target's IOCCSZ (8 KiB of data).
const IN_CAPSULE_BYTES_MAX: usize = 8 << 10;

/// A generated stream, as the target's hex text.
pub fn generate(rng: &mut SimRng) -> String {
    let mut text: String =
        CONNECTED.lines().take_while(|l| !l.starts_with("# Write")).map(|l| format!("{l}\n")).collect();
    for cid in 0..1 + rng.below(COMMANDS_MAX) {
        let (what, sqe, data) = command(rng, cid as u16 + 16);
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

/// An LBA worth trying: a zone start, near a write pointer a few writes
/// would reach, the zone's capacity or end, or the namespace's end.
fn lba(rng: &mut SimRng) -> u64 {
    let zone = rng.below(ZONES) * ZONE_LBAS;
    match rng.below(10) {
        0..=4 => zone,
        5 | 6 => zone + rng.below(32),
        7 => zone + ZONE_LBAS / 2 - 1 + rng.below(3),
        8 => zone + ZONE_LBAS - 1,
        _ => [ZONES * ZONE_LBAS, u64::MAX, 1 << 32][rng.below(3) as usize],
    }
}

/// A submission queue entry: opcode, command id, namespace 1 (now and then
/// another), in-capsule SGL of `data_bytes`, CDW10-15.
fn sqe(rng: &mut SimRng, opcode: u8, cid: u16, data_bytes: usize, cdw: [u32; 6]) -> [u8; SQE_BYTES] {
    let mut s = [0u8; SQE_BYTES];
    s[0] = opcode;
    s[1] = 0x40; // PSDT: SGL
    s[2..4].copy_from_slice(&cid.to_le_bytes());
    let nsid: u32 = if rng.chance(0.97) { 1 } else { [0, 2, u32::MAX][rng.below(3) as usize] };
    s[4..8].copy_from_slice(&nsid.to_le_bytes());
    s[32..36].copy_from_slice(&(data_bytes as u32).to_le_bytes());
    s[39] = if data_bytes > 0 { 0x01 } else { 0x5A }; // in-capsule data, or a transport block for reads
    for (i, dw) in cdw.iter().enumerate() {
        s[40 + 4 * i..44 + 4 * i].copy_from_slice(&dw.to_le_bytes());
    }
    s
}

fn lo(v: u64) -> u32 {
    v as u32
}

fn hi(v: u64) -> u32 {
    (v >> 32) as u32
}

/// One command: what it is (for the comment), its SQE and its data.
fn command(rng: &mut SimRng, cid: u16) -> (String, [u8; SQE_BYTES], Vec<u8>) {
    let slba = lba(rng);
    let nlb = if rng.chance(0.9) { rng.below(8) } else { rng.below(64) } as u32; // 0-based
    match rng.below(100) {
        0..=29 => {
            let (opcode, name) = if rng.chance(0.7) { (0x01, "write") } else { (0x7D, "zone append") };
            let nlb = nlb.min((IN_CAPSULE_BYTES_MAX / 4096) as u32 - 1);
            let data = vec![rng.below(256) as u8; (nlb as usize + 1) * 4096];
            (
                format!("{name} {slba} +{}", nlb + 1),
                sqe(rng, opcode, cid, data.len(), [lo(slba), hi(slba), nlb, 0, 0, 0]),
                data,
            )
        }
        30..=44 => {
            (format!("read {slba} +{}", nlb + 1), sqe(rng, 0x02, cid, 0, [lo(slba), hi(slba), nlb, 0, 0, 0]), vec![])
        }
        45..=64 => {
            let action = [0x01u32, 0x02, 0x03, 0x04, 0x05, 0x10][rng.below(6) as usize];
            let all = u32::from(rng.chance(0.15)) << 8;
            let s = sqe(rng, 0x79, cid, 0, [lo(slba), hi(slba), 0, action | all, 0, 0]);
            (format!("zone send action {action:#x} {slba} all {}", all != 0), s, vec![])
        }
        65..=69 => {
            let dwords = rng.below(64) as u32;
            let filter = (rng.below(9) as u32) << 8 | u32::from(rng.chance(0.5)) << 16;
            (format!("report zones {slba}"), sqe(rng, 0x7A, cid, 0, [lo(slba), hi(slba), dwords, filter, 0, 0]), vec![])
        }
        70..=79 => compaction(rng, cid),
        80..=85 => copy(rng, cid, slba),
        86..=91 => tl_open(rng, cid, slba),
        92..=94 => (format!("write zeroes {slba}"), sqe(rng, 0x08, cid, 0, [lo(slba), hi(slba), nlb, 0, 0, 0]), vec![]),
        95 => ("identify_mapping".into(), sqe(rng, 0x86, cid, 0, [0; 6]), vec![]),
        96 => ("flush".into(), sqe(rng, 0x00, cid, 0, [0; 6]), vec![]),
        _ => {
            let opcode = rng.below(256) as u8;
            (format!("opcode {opcode:#x}"), sqe(rng, opcode, cid, 0, [lo(slba), hi(slba), nlb, 0, 0, 0]), vec![])
        }
    }
}

/// zone_compaction: pairs of (source, destination), destinations from a
/// zone's start or a little past it, increasing.
fn compaction(rng: &mut SimRng, cid: u16) -> (String, [u8; SQE_BYTES], Vec<u8>) {
    let pairs = 1 + rng.below(12);
    let mut dst = rng.below(ZONES) * ZONE_LBAS + if rng.chance(0.6) { 0 } else { rng.below(16) };
    let mut data = Vec::with_capacity(pairs as usize * 16);
    for _ in 0..pairs {
        data.extend_from_slice(&lba(rng).to_le_bytes());
        data.extend_from_slice(&dst.to_le_bytes());
        dst += 1 + u64::from(rng.chance(0.2));
    }
    let s = sqe(rng, 0x81, cid, data.len(), [pairs as u32, 0, 0, 0, 0, 0]);
    (format!("zone_compaction, {pairs} pairs"), s, data)
}

/// Copy (format 0 ranges) to `sdlba`.
fn copy(rng: &mut SimRng, cid: u16, sdlba: u64) -> (String, [u8; SQE_BYTES], Vec<u8>) {
    let ranges = 1 + rng.below(4) as usize;
    let mut data = vec![0u8; ranges * 32];
    for r in data.chunks_exact_mut(32) {
        r[8..16].copy_from_slice(&lba(rng).to_le_bytes());
        r[16..18].copy_from_slice(&(rng.below(8) as u16).to_le_bytes());
    }
    let s = sqe(rng, 0x19, cid, data.len(), [lo(sdlba), hi(sdlba), ranges as u32 - 1, 0, 0, 0]);
    (format!("copy of {ranges} ranges to {sdlba}"), s, data)
}

/// TL_open of the zone at `zslba` with a bitmap of the first blocks.
fn tl_open(rng: &mut SimRng, cid: u16, zslba: u64) -> (String, [u8; SQE_BYTES], Vec<u8>) {
    let words = 1 + rng.below(4) as usize;
    let mut data = Vec::with_capacity(words * 8);
    for w in 0..words {
        let bits = if w == 0 { rng.next_u64() & ((1 << rng.below(64)) - 1) } else { 0 };
        data.extend_from_slice(&bits.to_le_bytes());
    }
    (format!("tl_open {zslba}"), sqe(rng, 0x85, cid, data.len(), [lo(zslba), hi(zslba), 0, 0, 0, 0]), data)
}
