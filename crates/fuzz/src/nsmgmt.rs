//! The `nsmgmt` target: sequences of Namespace Management, Attachment and
//! I/O sent by a host over NVMe/TCP (an admin queue and an I/O queue of one
//! controller, driven as byte streams through [`Session`]s) to a target
//! with a drive, checked against a reference model of what a controller
//! must answer: the NSID a create returns (the lowest free), every
//! attachment status, I/O to unallocated (Invalid Namespace), detached
//! (Invalid Field) and attached namespaces, NVM writes in range succeeding
//! and every read returning the bytes last written there (zeros where none
//! was: a created namespace never shows a deleted one's data), and the
//! capacity: TNVMCAP = UNVMCAP + what each allocated namespace took.
//!
//! The text format, one operation a line (others are skipped; at most
//! [`OPS_MAX`] run):
//!
//! ```text
//! create zoned|nvm NSZE 512|4096
//! delete NSID            # 4294967295: every namespace
//! attach NSID | detach NSID
//! write NSID SLBA NLB BYTE
//! read NSID SLBA NLB
//! flush NSID             # 4294967295: every attached namespace
//! aer                    # an Asynchronous Event Request, held
//! changed_log            # reads the Changed Namespace List
//! ```

use crate::targets::Failure;
use std::collections::BTreeMap;
use std::sync::Arc;
use zonelab_device::{preset, DeviceOptions, Namespaces};
use zonelab_serve::nvme_tcp::pdu::{read_pdu, Digests, Encoding, Pdu, SQE_BYTES};
use zonelab_serve::nvme_tcp::session::{Output, Session};
use zonelab_serve::nvme_tcp::Target;
use zonelab_serve::{Backend, Pace};
use zonelab_sim::SimRng;

/// Operations of one input that run.
pub const OPS_MAX: usize = 64;
/// The fuzz drive: zn540 flash cut to 16 blocks per plane; NSID 1 of 4
/// zones of 256 blocks (1 MiB, 512 KiB capacity) holds it all at first.
const BLOCKS_PER_PLANE: u32 = 16;
/// In-capsule data stays within the target's IOCCSZ (8 KiB); more is
/// fetched with an R2T.
const IN_CAPSULE_BYTES_MAX: usize = 8 << 10;
/// A write's bytes at most: the zn540's MDTS (a program unit is 192 KiB,
/// so that sequential writes reach the flash).
const WRITE_BYTES_MAX: usize = 128 << 10;
const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:fuzz-nsmgmt";
const NQN: &str = "nqn.2026-11.io.zonelab:fuzz";
const ALL: u32 = 0xFFFF_FFFF;

/// One operation of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Create {
        nvm: bool,
        nsze: u64,
        lba_bytes: u32,
    },
    Delete(u32),
    Attach(u32, bool),
    Write {
        nsid: u32,
        slba: u64,
        nlb: u32,
        byte: u8,
    },
    Read {
        nsid: u32,
        slba: u64,
        nlb: u32,
    },
    /// Flush: what the namespace buffers goes to flash (so that a later
    /// delete has written blocks to erase).
    Flush(u32),
    /// An Asynchronous Event Request, held until a notice completes it.
    Aer,
    /// Reads the Changed Namespace List (so that the next notice may come).
    ChangedLog,
}

fn parse(line: &str) -> Option<Op> {
    let words: Vec<&str> = line.split('#').next()?.split_whitespace().collect();
    let n = |i: usize| words.get(i)?.parse::<u64>().ok();
    let nsid = |i: usize| u32::try_from(n(i)?).ok();
    Some(match *words.first()? {
        "create" => {
            let nvm = match *words.get(1)? {
                "nvm" => true,
                "zoned" => false,
                _ => return None,
            };
            Op::Create { nvm, nsze: n(2)?, lba_bytes: u32::try_from(n(3)?).ok()? }
        }
        "delete" => Op::Delete(nsid(1)?),
        "attach" => Op::Attach(nsid(1)?, true),
        "detach" => Op::Attach(nsid(1)?, false),
        "write" => Op::Write { nsid: nsid(1)?, slba: n(2)?, nlb: u32::try_from(n(3)?).ok()?, byte: n(4)? as u8 },
        "read" => Op::Read { nsid: nsid(1)?, slba: n(2)?, nlb: u32::try_from(n(3)?).ok()? },
        "flush" => Op::Flush(nsid(1)?),
        "aer" => Op::Aer,
        "changed_log" => Op::ChangedLog,
        _ => return None,
    })
}

/// What the reference model knows of an allocated namespace.
#[derive(Debug, Clone)]
struct RefNs {
    nvm: bool,
    lba_bytes: u32,
    nsze: u64,
    attached: bool,
    /// Bytes of UNVMCAP it took.
    taken: u128,
    /// The byte last written to each LBA.
    data: BTreeMap<u64, u8>,
}

/// A host on the target: its admin and I/O queues, and the reference model.
struct Harness {
    target: Arc<Target>,
    admin: Session,
    io: Session,
    cntlid: u16,
    next_cid: u16,
    namespaces: BTreeMap<u32, RefNs>,
    total: u128,
    unallocated: u128,
    counts: Counts,
    /// Command ids of the event requests sent and not answered yet.
    aers: Vec<u16>,
    /// Completions of event requests, as received (dword 0).
    notices: Vec<u64>,
    /// A notice is owed: an attachment changed since the last one reported.
    notice_owed: bool,
    /// A notice was reported and the log not read since.
    masked: bool,
}

/// What an input reached: to check that generated inputs get past the refusals.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Namespaces created.
    pub creates: u64,
    /// Namespaces deleted.
    pub deletes: u64,
    /// Writes that succeeded.
    pub writes: u64,
    /// Blocks read back and compared with what was written.
    pub blocks_checked: u64,
    /// Namespace Attribute Changed notices received.
    pub notices: u64,
}

/// A command's answer: status (`SCT << 8 | SC`), dword 0-1, data.
struct Answer {
    status: u16,
    result: u64,
    data: Vec<u8>,
}

fn mismatch(what: String) -> Failure {
    Failure::Mismatch(what)
}

impl Harness {
    fn new() -> Self {
        let opts = DeviceOptions {
            zones: Some(4),
            zone_size_bytes: Some(1 << 20),
            zone_capacity_bytes: Some(512 << 10),
            data: true,
            ..Default::default()
        };
        let mut config = opts.apply(preset("zn540").expect("zn540")).expect("small zn540");
        config.flash.blocks_per_plane = BLOCKS_PER_PLANE;
        let (drive, namespaces) = Namespaces::new(config).expect("fits").into_parts();
        let backends = namespaces.into_iter().map(|ns| Backend::new(ns, Pace::Asap).expect("data mode")).collect();
        let target = Arc::new(Target::new(NQN.into(), backends).with_drive(drive));
        let local = "127.0.0.1:4420".parse().expect("an address");
        let admin = Session::new(Arc::clone(&target), local);
        let io = Session::new(Arc::clone(&target), local);
        let mut h = Harness {
            target,
            admin,
            io,
            cntlid: 0,
            next_cid: 1,
            namespaces: BTreeMap::new(),
            total: 0,
            unallocated: 0,
            counts: Counts::default(),
            aers: Vec::new(),
            notices: Vec::new(),
            notice_owed: false,
            masked: false,
        };
        h.connect();
        (h.total, h.unallocated) = h.capacity();
        let taken = h.total - h.unallocated;
        let first = RefNs { nvm: false, lba_bytes: 4096, nsze: 1024, attached: true, taken, data: BTreeMap::new() };
        h.namespaces.insert(1, first);
        h
    }

    /// ICReq and Connect on both queues, the controller enabled in between.
    fn connect(&mut self) {
        for admin in [true, false] {
            let ic = Pdu::IcReq { pfv: 0, hpda: 0, digests: Digests::default(), maxr2t: 0 };
            let _ = self.step(admin, &ic);
            let mut s = [0u8; SQE_BYTES];
            (s[0], s[1], s[4]) = (0x7F, 0x40, 0x01);
            s[42..44].copy_from_slice(&u16::from(!admin).to_le_bytes()); // QID
            s[44..46].copy_from_slice(&31u16.to_le_bytes()); // SQSIZE
            let mut data = vec![0u8; 1024];
            let cntlid = if admin { 0xFFFF } else { self.cntlid };
            data[16..18].copy_from_slice(&cntlid.to_le_bytes());
            data[256..256 + NQN.len()].copy_from_slice(NQN.as_bytes());
            data[512..512 + HOSTNQN.len()].copy_from_slice(HOSTNQN.as_bytes());
            let answer = self.command(admin, s, &data, 0);
            assert_eq!(answer.status, 0, "Connect");
            if admin {
                self.cntlid = answer.result as u16;
                let mut s = [0u8; SQE_BYTES];
                (s[0], s[1], s[4]) = (0x7F, 0x40, 0x00); // Property Set CC: EN, all command sets
                s[44..48].copy_from_slice(&0x14u32.to_le_bytes());
                s[48..52].copy_from_slice(&(1u32 | 6 << 4).to_le_bytes());
                assert_eq!(self.command(true, s, &[], 0).status, 0, "CC.EN");
                // Asynchronous Event Configuration: namespace attribute notices.
                assert_eq!(self.command(true, sqe(0x09, 0, [0x0B, 1 << 8]), &[], 0).status, 0, "AEC");
            }
        }
    }

    /// Feeds one PDU to a queue's session; returns the PDUs it answered.
    fn step(&mut self, admin: bool, pdu: &Pdu) -> Vec<Pdu> {
        let bytes = Encoding::default().encode(pdu);
        let session = if admin { &mut self.admin } else { &mut self.io };
        let mut outputs: Vec<Output> = Vec::new();
        let _ = session.step(&mut bytes.as_slice(), &mut outputs);
        let out: Vec<u8> = outputs.into_iter().flat_map(|o| o.bytes).collect();
        let mut r = out.as_slice();
        let mut pdus = Vec::new();
        while !r.is_empty() {
            match read_pdu(&mut r, Digests::default(), 1 << 24) {
                Ok(pdu) => pdus.push(pdu),
                Err(_) => break,
            }
        }
        pdus
    }

    /// Sends `s` with `data` in the capsule, or asking for `in_bytes`.
    fn command(&mut self, admin: bool, mut s: [u8; SQE_BYTES], data: &[u8], in_bytes: usize) -> Answer {
        let cid = self.next_cid;
        self.next_cid = self.next_cid.wrapping_add(1);
        s[2..4].copy_from_slice(&cid.to_le_bytes());
        let length = if data.is_empty() { in_bytes } else { data.len() };
        s[32..36].copy_from_slice(&(length as u32).to_le_bytes());
        // In the capsule up to IOCCSZ, else fetched with an R2T.
        let in_capsule = !data.is_empty() && data.len() <= IN_CAPSULE_BYTES_MAX;
        s[39] = if in_capsule { 0x01 } else { 0x5A };
        let capsule =
            Pdu::CapsuleCmd { sqe: s, data: if in_capsule { data.to_vec() } else { Vec::new() }, data_ok: true };
        let mut answer = Answer { status: 0xFFFF, result: 0, data: Vec::new() };
        let mut pdus = self.step(admin, &capsule);
        if let Some(&Pdu::R2T { ttag, .. }) = pdus.iter().find(|p| matches!(p, Pdu::R2T { .. })) {
            let h2c = Pdu::H2CData { cccid: cid, ttag, datao: 0, data: data.to_vec(), last: true, data_ok: true };
            pdus = self.step(admin, &h2c);
        }
        for pdu in pdus {
            match pdu {
                Pdu::CapsuleResp { cqe } if self.aers.contains(&u16::from_le_bytes([cqe[12], cqe[13]])) => {
                    let aer = u16::from_le_bytes([cqe[12], cqe[13]]);
                    self.aers.retain(|&c| c != aer);
                    self.notices.push(u64::from_le_bytes(cqe[..8].try_into().expect("8 bytes")));
                }
                Pdu::C2HData { data, .. } => answer.data = data,
                Pdu::CapsuleResp { cqe } if u16::from_le_bytes([cqe[12], cqe[13]]) == cid => {
                    let word = u16::from_le_bytes([cqe[14], cqe[15]]);
                    answer.status = (word >> 9 & 7) << 8 | (word >> 1 & 0xff);
                    answer.result = u64::from_le_bytes(cqe[..8].try_into().expect("8 bytes"));
                }
                _ => {}
            }
        }
        answer
    }

    /// TNVMCAP and UNVMCAP from Identify Controller.
    fn capacity(&mut self) -> (u128, u128) {
        let page = self.command(true, sqe(0x06, 0, [1, 0]), &[], 4096).data;
        let at = |i: usize| page.get(i..i + 16).map_or(0, |b| u128::from_le_bytes(b.try_into().expect("16 bytes")));
        (at(280), at(296))
    }
}

/// An SQE: opcode, NSID, CDW10 and CDW11 (SGL; the rest zero).
fn sqe(opcode: u8, nsid: u32, cdw: [u32; 2]) -> [u8; SQE_BYTES] {
    let mut s = [0u8; SQE_BYTES];
    (s[0], s[1]) = (opcode, 0x40);
    s[4..8].copy_from_slice(&nsid.to_le_bytes());
    s[40..44].copy_from_slice(&cdw[0].to_le_bytes());
    s[44..48].copy_from_slice(&cdw[1].to_le_bytes());
    s
}

fn io_sqe(opcode: u8, nsid: u32, slba: u64, nlb: u32) -> [u8; SQE_BYTES] {
    let mut s = sqe(opcode, nsid, [slba as u32, (slba >> 32) as u32]);
    s[48..52].copy_from_slice(&nlb.saturating_sub(1).to_le_bytes());
    s
}

/// Runs an input (see the module comment) and checks every answer.
pub fn run_text(input: &str) -> Result<(), Failure> {
    run_counting(input).map(drop)
}

/// [`run_text`], saying what the input reached.
pub fn run_counting(input: &str) -> Result<Counts, Failure> {
    let mut h = Harness::new();
    for op in input.lines().filter_map(parse).take(OPS_MAX) {
        match op {
            Op::Create { nvm, nsze, lba_bytes } => h.create(nvm, nsze, lba_bytes)?,
            Op::Delete(nsid) => h.delete(nsid)?,
            Op::Attach(nsid, attach) => h.attach(nsid, attach)?,
            Op::Write { nsid, slba, nlb, byte } => h.write(nsid, slba, nlb, byte)?,
            Op::Read { nsid, slba, nlb } => h.read(nsid, slba, nlb)?,
            Op::Flush(nsid) => h.flush(nsid)?,
            Op::Aer => h.aer()?,
            Op::ChangedLog => h.changed_log()?,
        }
        h.check_notices()?;
        h.check_capacity()?;
    }
    if h.target.failed() {
        return Err(Failure::Model);
    }
    Ok(h.counts)
}

impl Harness {
    fn create(&mut self, nvm: bool, nsze: u64, lba_bytes: u32) -> Result<(), Failure> {
        let mut data = vec![0u8; 4096];
        data[..8].copy_from_slice(&nsze.to_le_bytes());
        data[8..16].copy_from_slice(&nsze.to_le_bytes());
        data[26] = u8::from(lba_bytes == 4096) | if lba_bytes == 512 || lba_bytes == 4096 { 0 } else { 2 };
        let csi = if nvm { 0 } else { 2u32 << 24 };
        let a = self.command(true, sqe(0x0D, 0, [0, csi]), &data, 0);
        let free = (1..=16).find(|n| !self.namespaces.contains_key(n));
        let allowed: &[u16] = match (free, nsze, data[26]) {
            (_, _, 2) => &[0x10A],
            (None, _, _) => &[0x116],
            (_, 0, _) => &[0x002],
            _ => &[0, 0x002, 0x115],
        };
        if !allowed.contains(&a.status) {
            return Err(mismatch(format!(
                "create {nvm} {nsze} {lba_bytes}: status {:#x}, expected {allowed:x?}",
                a.status
            )));
        }
        let before = self.unallocated;
        self.unallocated = self.capacity().1;
        if a.status != 0 {
            return match self.unallocated == before {
                true => Ok(()),
                false => Err(mismatch(format!("a refused create took capacity: {before} -> {}", self.unallocated))),
            };
        }
        let nsid = u32::try_from(a.result).unwrap_or(0);
        if Some(nsid) != free || self.unallocated >= before {
            return Err(mismatch(format!(
                "create gave NSID {nsid} (lowest free {free:?}), UNVMCAP {before} -> {}",
                self.unallocated
            )));
        }
        let nsze = if nvm {
            nsze
        } else {
            nsze.div_ceil(256 * 4096 / u64::from(lba_bytes)) * (256 * 4096 / u64::from(lba_bytes))
        };
        let ns =
            RefNs { nvm, lba_bytes, nsze, attached: false, taken: before - self.unallocated, data: BTreeMap::new() };
        self.namespaces.insert(nsid, ns);
        self.counts.creates += 1;
        Ok(())
    }

    fn delete(&mut self, nsid: u32) -> Result<(), Failure> {
        let a = self.command(true, sqe(0x0D, nsid, [1, 0]), &[], 0);
        let expected = match nsid {
            ALL => 0,
            0 | 17.. => 0x00B,
            _ if self.namespaces.contains_key(&nsid) => 0,
            _ => 0x002,
        };
        if a.status != expected {
            return Err(mismatch(format!("delete {nsid}: status {:#x}, expected {expected:#x}", a.status)));
        }
        if a.status == 0 {
            let gone: Vec<u32> = if nsid == ALL { self.namespaces.keys().copied().collect() } else { vec![nsid] };
            for n in gone {
                let ns = self.namespaces.remove(&n).expect("allocated");
                self.unallocated += ns.taken;
                self.notice_owed |= ns.attached;
                self.counts.deletes += 1;
            }
        }
        Ok(())
    }

    fn attach(&mut self, nsid: u32, attach: bool) -> Result<(), Failure> {
        let mut list = vec![0u8; 4096];
        list[..2].copy_from_slice(&1u16.to_le_bytes());
        list[2..4].copy_from_slice(&self.cntlid.to_le_bytes());
        let a = self.command(true, sqe(0x15, nsid, [u32::from(!attach), 0]), &list, 0);
        let expected = match self.namespaces.get_mut(&nsid) {
            None if nsid == 0 || nsid > 16 => 0x00B,
            None => 0x002,
            Some(ns) if ns.attached == attach => {
                if attach {
                    0x118
                } else {
                    0x11A
                }
            }
            Some(ns) => {
                ns.attached = attach;
                self.notice_owed = true;
                0
            }
        };
        if a.status != expected {
            return Err(mismatch(format!("attach {nsid} {attach}: status {:#x}, expected {expected:#x}", a.status)));
        }
        Ok(())
    }

    /// The status an I/O to `nsid` must get before the namespace's own
    /// rules: `None` when it reaches an attached namespace.
    fn gate(&self, nsid: u32) -> Option<u16> {
        match self.namespaces.get(&nsid) {
            None => Some(0x00B),
            Some(ns) if !ns.attached => Some(0x002),
            Some(_) => None,
        }
    }

    fn write(&mut self, nsid: u32, slba: u64, nlb: u32, byte: u8) -> Result<(), Failure> {
        let lba_bytes = self.namespaces.get(&nsid).map_or(4096, |ns| ns.lba_bytes as usize);
        let nlb = nlb.clamp(1, (WRITE_BYTES_MAX / lba_bytes) as u32);
        let data = vec![byte; nlb as usize * lba_bytes];
        let a = self.command(false, io_sqe(0x01, nsid, slba, nlb), &data, 0);
        let gate = self.gate(nsid);
        let ns = self.namespaces.get_mut(&nsid);
        let in_range =
            ns.as_ref().is_some_and(|ns| ns.nvm && slba.checked_add(u64::from(nlb)).is_some_and(|e| e <= ns.nsze));
        match (gate, ns) {
            (Some(expected), _) if a.status != expected => {
                Err(mismatch(format!("write to NSID {nsid}: status {:#x}, expected {expected:#x}", a.status)))
            }
            (None, _) if in_range && a.status != 0 => {
                Err(mismatch(format!("NVM write {nsid} {slba} {nlb}: status {:#x}", a.status)))
            }
            (None, Some(ns)) if a.status == 0 => {
                for lba in slba..slba + u64::from(nlb) {
                    ns.data.insert(lba, byte);
                }
                self.counts.writes += 1;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn read(&mut self, nsid: u32, slba: u64, nlb: u32) -> Result<(), Failure> {
        let lba_bytes = self.namespaces.get(&nsid).map_or(4096, |ns| ns.lba_bytes as usize);
        let nlb = nlb.clamp(1, 16);
        let a = self.command(false, io_sqe(0x02, nsid, slba, nlb), &[], nlb as usize * lba_bytes);
        if let Some(expected) = self.gate(nsid) {
            return match a.status == expected {
                true => Ok(()),
                false => Err(mismatch(format!("read of NSID {nsid}: status {:#x}, expected {expected:#x}", a.status))),
            };
        }
        let ns = &self.namespaces[&nsid];
        let in_range = ns.nvm && slba.checked_add(u64::from(nlb)).is_some_and(|e| e <= ns.nsze);
        if in_range && a.status != 0 {
            return Err(mismatch(format!("NVM read {nsid} {slba} {nlb}: status {:#x}", a.status)));
        }
        if a.status != 0 {
            return Ok(());
        }
        for (i, block) in a.data.chunks(lba_bytes).enumerate() {
            let lba = slba + i as u64;
            let want = ns.data.get(&lba).copied().unwrap_or(0);
            if block.iter().any(|&b| b != want) {
                return Err(mismatch(format!("NSID {nsid} LBA {lba}: read {:#x}, wrote {want:#x}", block[0])));
            }
            self.counts.blocks_checked += 1;
        }
        Ok(())
    }

    fn flush(&mut self, nsid: u32) -> Result<(), Failure> {
        let a = self.command(false, sqe(0x00, nsid, [0, 0]), &[], 0);
        let expected = if nsid == ALL { 0 } else { self.gate(nsid).unwrap_or(0) };
        match a.status == expected {
            true => Ok(()),
            false => Err(mismatch(format!("flush of NSID {nsid}: status {:#x}, expected {expected:#x}", a.status))),
        }
    }

    /// TNVMCAP is UNVMCAP plus what each allocated namespace took.
    fn check_capacity(&mut self) -> Result<(), Failure> {
        let (total, unallocated) = self.capacity();
        let taken: u128 = self.namespaces.values().map(|ns| ns.taken).sum();
        if total != self.total || unallocated != self.unallocated || unallocated + taken != total {
            return Err(mismatch(format!(
                "capacity: TNVMCAP {total}, UNVMCAP {unallocated} (expected {}), taken {taken}",
                self.unallocated
            )));
        }
        Ok(())
    }
}

/// A generated input: mostly valid operations on NSIDs 1 to 4, sizes a few
/// zones or around a mebibyte, LBAs near the starts and ends that matter.
pub fn generate(rng: &mut SimRng) -> String {
    let mut text = String::new();
    let mut next = [0u64; 5];
    if rng.chance(0.8) {
        text.push_str("delete 1\n");
    }
    for _ in 0..1 + rng.below(40) {
        let nsid = match rng.below(20) {
            0 => [0, 17, ALL][rng.below(3) as usize],
            1..=3 => 4,
            _ => 1 + rng.below(3) as u32,
        };
        let lba_bytes: u32 = if rng.chance(0.5) { 512 } else { 4096 };
        let slba = [0, 1, 7, 255, 256, 511, 1023, 2047, 2048, 4095][rng.below(10) as usize] + rng.below(2);
        let line = match rng.below(100) {
            0..=24 => {
                let nvm = rng.chance(0.5);
                let nsze = match (nvm, rng.below(10)) {
                    (_, 0) => rng.next_u64() >> rng.below(64),
                    (true, _) => (1 + rng.below(4)) << (8 + rng.below(6)),
                    (false, _) => (1 + rng.below(3)) * (256 * 4096 / u64::from(lba_bytes)) - rng.below(2),
                };
                let lba_bytes = if rng.chance(0.05) { 1024 } else { lba_bytes };
                let create = format!("create {} {nsze} {lba_bytes}", if nvm { "nvm" } else { "zoned" });
                // Mostly attached at once, so that I/O reaches it (the NSID a guess: a low one).
                match rng.chance(0.7) {
                    true => format!("{create}\nattach {}", 1 + rng.below(3)),
                    false => create,
                }
            }
            25..=32 => format!("delete {nsid}"),
            33..=44 => format!("attach {nsid}"),
            45..=49 => format!("detach {nsid}"),
            50..=77 => {
                // Half the writes go on sequentially from the last one to the NSID (a zone's write pointer).
                let nlb = if rng.chance(0.7) { 1 + rng.below(16) } else { 1 + rng.below(256) };
                let slba = if rng.chance(0.5) { next[nsid as usize % 5] } else { slba };
                next[nsid as usize % 5] = slba + nlb;
                format!("write {nsid} {slba} {nlb} {}", rng.below(256))
            }
            78..=84 => format!("flush {nsid}"),
            85..=88 => "aer".to_string(),
            89..=90 => "changed_log".to_string(),
            _ => format!("read {nsid} {slba} {}", 1 + rng.below(16)),
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Event requests and notices: a notice comes only for an attachment that
/// changed, when a request is held and the log was read since the last one.
impl Harness {
    fn aer(&mut self) -> Result<(), Failure> {
        let cid = self.next_cid;
        let held = self.aers.len();
        let a = self.command(true, sqe(0x0C, 0, [0, 0]), &[], 0);
        match (held, a.status) {
            // Held: no answer now (0xFFFF), unless an owed notice completes it at once.
            (0..=3, 0xFFFF) => self.aers.push(cid),
            (0..=3, 0) => self.notices.push(a.result),
            (4.., 0x105) => {}
            _ => return Err(mismatch(format!("AER with {held} held: status {:#x}", a.status))),
        }
        self.check_notices()
    }

    fn changed_log(&mut self) -> Result<(), Failure> {
        let a = self.command(true, sqe(0x02, ALL, [0x04 | 1023 << 16, 0]), &[], 4096);
        if a.status != 0 {
            return Err(mismatch(format!("Changed Namespace List: status {:#x}", a.status)));
        }
        self.masked = false;
        self.check_notices()
    }

    /// Notices received so far are what the model owes, no more.
    fn check_notices(&mut self) -> Result<(), Failure> {
        for result in std::mem::take(&mut self.notices) {
            if result != 0x04_0002 || !self.notice_owed || self.masked {
                let (owed, masked) = (self.notice_owed, self.masked);
                return Err(mismatch(format!("notice {result:#x} (owed {owed}, masked {masked})")));
            }
            (self.notice_owed, self.masked) = (false, true);
            self.counts.notices += 1;
        }
        Ok(())
    }
}
