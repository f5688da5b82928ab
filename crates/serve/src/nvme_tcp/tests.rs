//! Host-side tests: a small NVMe/TCP host speaking the protocol to the
//! target over loopback TCP.

use super::command::{put_nul_padded, put_u16, put_u32, put_u64, sc, SGL_IN_CAPSULE, SGL_TRANSPORT};
use super::pdu::{read_pdu, Digests, Encoding, Pdu, ReadError, CQE_BYTES, SQE_BYTES};
use super::target::{NamespaceBackend as Backend, Target, DISCOVERY_NQN};
use crate::backend::Pace;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;
use zonelab_device::{preset, DeviceConfig, DeviceOptions, Namespace, NamespaceEntry, Namespaces, Status};

pub(super) const NQN: &str = "nqn.2026-11.io.zonelab:test";
pub(super) const HOSTNQN: &str = "nqn.2014-08.org.nvmexpress:uuid:test-host";
/// Zones of 256 blocks of 4 KiB with 128 blocks of capacity.
pub(super) const ZONE_LBAS: u64 = 256;
pub(super) const ZCAP_LBAS: u64 = 128;

/// The tests' small zn540: 8 zones of `ZONE_LBAS`, `ZCAP_LBAS` of capacity.
pub(super) fn config(data: bool) -> DeviceConfig {
    let opts = DeviceOptions {
        zones: Some(8),
        zone_size_bytes: Some(ZONE_LBAS << 12),
        zone_capacity_bytes: Some(ZCAP_LBAS << 12),
        max_open_zones: Some(4),
        max_active_zones: Some(6),
        data,
        ..Default::default()
    };
    opts.apply(preset("zn540").unwrap()).unwrap()
}

pub(super) fn backend() -> Backend {
    Backend::new(alone(config(true)), Pace::Asap).unwrap()
}

/// The one namespace of a device.
pub(super) fn alone(config: DeviceConfig) -> Namespace {
    Namespaces::new(config).unwrap().into_namespaces().remove(0)
}

/// A target on an ephemeral loopback port, served until the test ends.
pub(super) fn start() -> (SocketAddr, Arc<Target>) {
    start_with(vec![backend()])
}

pub(super) fn start_with(namespaces: Vec<Backend>) -> (SocketAddr, Arc<Target>) {
    start_limited(namespaces, super::Limits::default())
}

/// A target with `limits` on an ephemeral loopback port.
pub(super) fn start_limited(namespaces: Vec<Backend>, limits: super::Limits) -> (SocketAddr, Arc<Target>) {
    let target = Arc::new(Target::new(NQN.into(), namespaces).with_limits(limits));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = Arc::clone(&target);
    std::thread::spawn(move || super::accept_loop(&listener, &t));
    (addr, target)
}

pub(super) struct Completion {
    pub(super) result: u64,
    /// `SCT << 8 | SC`.
    pub(super) status: u16,
    pub(super) sqid: u16,
    pub(super) data: Vec<u8>,
}

pub(super) struct Host {
    pub(super) stream: TcpStream,
    pub(super) enc: Encoding,
    pub(super) next_cid: u16,
}

pub(super) fn sqe(opcode: u8, nsid: u32, cdws: &[(usize, u32)]) -> [u8; SQE_BYTES] {
    let mut s = [0u8; SQE_BYTES];
    s[0] = opcode;
    s[1] = 0x40; // SGL
    put_u32(&mut s, 4, nsid);
    for &(n, v) in cdws {
        put_u32(&mut s, 40 + (n - 10) * 4, v);
    }
    s
}

impl Host {
    pub(super) fn open(addr: SocketAddr, digests: Digests) -> Host {
        let stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut host = Host { stream, enc: Encoding { digests, pda: 0 }, next_cid: 1 };
        host.send(&Pdu::IcReq { pfv: 0, hpda: 0, digests, maxr2t: 0 });
        match host.recv() {
            Pdu::IcResp { pfv: 0, cpda: 0, digests: d, maxh2cdata } => {
                assert_eq!(d, digests);
                assert!(maxh2cdata >= 4096);
            }
            other => panic!("expected ICResp, got {other:?}"),
        }
        host
    }

    pub(super) fn send(&mut self, pdu: &Pdu) {
        self.stream.write_all(&self.enc.encode(pdu)).unwrap();
    }

    /// Sends `pdu`; an error once the target has cut the host off.
    pub(super) fn try_send(&mut self, pdu: &Pdu) -> std::io::Result<()> {
        self.stream.write_all(&self.enc.encode(pdu))
    }

    pub(super) fn recv(&mut self) -> Pdu {
        match read_pdu(&mut self.stream, self.enc.digests, 1 << 24) {
            Ok(pdu) => pdu,
            Err(ReadError::Closed(e)) => panic!("connection closed: {e}"),
            Err(ReadError::Fatal(e)) => panic!("bad PDU from the target: {e:?}"),
        }
    }

    /// Sends a command with `out` (in the capsule or through R2T) expecting
    /// `in_bytes` back, and collects its completion.
    pub(super) fn command(
        &mut self,
        mut s: [u8; SQE_BYTES],
        out: &[u8],
        in_capsule: bool,
        in_bytes: usize,
    ) -> Completion {
        let cid = self.next_cid;
        self.next_cid += 1;
        put_u16(&mut s, 2, cid);
        let (sgl, len, data) = match (out.is_empty(), in_capsule) {
            (false, true) => (SGL_IN_CAPSULE, out.len(), out.to_vec()),
            (false, false) => (SGL_TRANSPORT, out.len(), Vec::new()),
            (true, _) => (SGL_TRANSPORT, in_bytes, Vec::new()),
        };
        put_u32(&mut s, 32, len as u32);
        s[39] = sgl;
        self.send(&Pdu::CapsuleCmd { sqe: s, data, data_ok: true });
        let mut received = Vec::new();
        loop {
            match self.recv() {
                Pdu::R2T { cccid, ttag, r2to, r2tl } => {
                    assert_eq!(cccid, cid);
                    let range = r2to as usize..(r2to + r2tl) as usize;
                    for (i, chunk) in out[range.clone()].chunks(64 << 10).enumerate() {
                        let datao = r2to + (i * (64 << 10)) as u32;
                        let last = datao as usize + chunk.len() == range.end;
                        let data = chunk.to_vec();
                        self.send(&Pdu::H2CData { cccid, ttag, datao, data, last, data_ok: true });
                    }
                }
                Pdu::C2HData { cccid, datao, data, .. } => {
                    assert_eq!((cccid, datao as usize), (cid, received.len()));
                    received.extend_from_slice(&data);
                }
                Pdu::CapsuleResp { cqe } => return completion(&cqe, cid, received),
                other => panic!("unexpected {other:?}"),
            }
        }
    }

    pub(super) fn admin(&mut self, s: [u8; SQE_BYTES], in_bytes: usize) -> Completion {
        self.command(s, &[], false, in_bytes)
    }

    pub(super) fn connect(&mut self, subnqn: &str, qid: u16, cntlid: u16) -> Completion {
        self.connect_kato(subnqn, qid, cntlid, 0)
    }

    pub(super) fn connect_kato(&mut self, subnqn: &str, qid: u16, cntlid: u16, kato_ms: u32) -> Completion {
        self.connect_sized(subnqn, qid, cntlid, kato_ms, 31)
    }

    /// Connect with a KATO and an SQSIZE (entries minus one).
    pub(super) fn connect_sized(
        &mut self,
        subnqn: &str,
        qid: u16,
        cntlid: u16,
        kato_ms: u32,
        sqsize: u16,
    ) -> Completion {
        let mut s = sqe(0x7F, 0, &[]);
        s[4] = 0x01;
        put_u16(&mut s, 42, qid);
        put_u16(&mut s, 44, sqsize);
        put_u32(&mut s, 48, kato_ms);
        let mut data = vec![0u8; 1024];
        data[..16].copy_from_slice(&[7; 16]);
        put_u16(&mut data, 16, cntlid);
        put_nul_padded(&mut data, 256, 256, subnqn);
        put_nul_padded(&mut data, 512, 256, HOSTNQN);
        self.command(s, &data, true, 0)
    }

    pub(super) fn property(&mut self, fctype: u8, offset: u32, eight_bytes: bool, value: u64) -> Completion {
        let mut s = sqe(0x7F, 0, &[]);
        s[4] = fctype;
        s[40] = u8::from(eight_bytes);
        put_u32(&mut s, 44, offset);
        put_u64(&mut s, 48, value);
        self.admin(s, 0)
    }

    /// Admin queue: Connect, then enable the controller with all I/O command sets.
    pub(super) fn attach(addr: SocketAddr, subnqn: &str) -> (Host, u16) {
        let mut host = Host::open(addr, Digests::default());
        let c = host.connect(subnqn, 0, 0xFFFF);
        assert_eq!(c.status, sc::SUCCESS);
        let cntlid = c.result as u16;
        assert_eq!(host.property(0x00, 0x14, false, 1 | 6 << 4).status, sc::SUCCESS);
        assert_eq!(host.property(0x04, 0x1C, false, 0).result & 1, 1, "CSTS.RDY");
        (host, cntlid)
    }

    pub(super) fn io_queue(addr: SocketAddr, cntlid: u16, qid: u16) -> Host {
        let mut host = Host::open(addr, Digests::default());
        let c = host.connect(NQN, qid, cntlid);
        assert_eq!((c.status, c.sqid), (sc::SUCCESS, qid));
        host
    }

    /// Expects the target to end the connection after a C2HTermReq; returns its FES and FEI.
    pub(super) fn expect_term_req(&mut self) -> (u16, u32) {
        let pdu = self.recv();
        self.expect_term_req_in(pdu)
    }

    /// [`Host::expect_term_req`] after at most `max` completions of commands
    /// the target finished before it cut the host off.
    pub(super) fn expect_term_req_after_completions(&mut self, max: usize) -> (u16, u32) {
        let mut pdu = self.recv();
        for _ in 0..max {
            if !matches!(pdu, Pdu::CapsuleResp { .. }) {
                break;
            }
            pdu = self.recv();
        }
        self.expect_term_req_in(pdu)
    }

    fn expect_term_req_in(&mut self, pdu: Pdu) -> (u16, u32) {
        let Pdu::C2HTermReq { fes, fei, .. } = pdu else { panic!("expected C2HTermReq, got {pdu:?}") };
        let mut rest = [0u8; 1];
        assert_eq!(self.stream.read(&mut rest).unwrap_or(0), 0, "the target closes the connection");
        (fes, fei)
    }
}

pub(super) fn completion(cqe: &[u8; CQE_BYTES], cid: u16, data: Vec<u8>) -> Completion {
    assert_eq!(u16::from_le_bytes([cqe[12], cqe[13]]), cid);
    let word = u16::from_le_bytes([cqe[14], cqe[15]]);
    Completion {
        result: u64::from_le_bytes(cqe[..8].try_into().unwrap()),
        status: (word >> 9 & 7) << 8 | (word >> 1 & 0xff),
        sqid: u16::from_le_bytes([cqe[10], cqe[11]]),
        data,
    }
}

pub(super) fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

pub(super) fn identify(host: &mut Host, cns: u32, csi: u32, nsid: u32) -> Completion {
    host.admin(sqe(0x06, nsid, &[(10, cns), (11, csi << 24)]), 4096)
}

#[test]
fn connect_and_identify_the_zoned_namespace() {
    let (addr, _target) = start();
    let (mut host, cntlid) = Host::attach(addr, NQN);
    let cap = host.property(0x04, 0x00, true, 0).result;
    assert_eq!(cap & 0xffff, 127, "MQES");
    assert_ne!(cap & 1 << 43, 0, "I/O command sets");
    assert_eq!(host.property(0x04, 0x08, false, 0).result, 0x0002_0000);
    let ctrl = identify(&mut host, 1, 0, 0);
    assert_eq!(ctrl.status, sc::SUCCESS);
    assert_eq!(u16::from_le_bytes([ctrl.data[78], ctrl.data[79]]), cntlid);
    assert_eq!(ctrl.data[111], 1, "I/O controller");
    assert!(ctrl.data[768..].starts_with(NQN.as_bytes()));
    assert_eq!(u32::from_le_bytes(ctrl.data[516..520].try_into().unwrap()), 1, "one namespace");
    let ns = identify(&mut host, 0, 0, 1);
    assert_eq!(u64_at(&ns.data, 0), 8 * ZONE_LBAS, "NSZE");
    assert_eq!(ns.data[130], 12, "4 KiB blocks");
    let descriptors = identify(&mut host, 3, 0, 1);
    assert_eq!(&descriptors.data[20..25], &[4, 1, 0, 0, 2], "CSI descriptor: zoned");
    let zns = identify(&mut host, 5, 2, 1);
    assert_eq!(u64_at(&zns.data, 2816), ZONE_LBAS, "ZSZE");
    assert_eq!(u32::from_le_bytes(zns.data[8..12].try_into().unwrap()), 3, "MOR: 4 open zones, 0-based");
    assert_eq!(identify(&mut host, 6, 2, 0).status, sc::SUCCESS);
    let list = identify(&mut host, 2, 0, 0);
    assert_eq!(&list.data[..8], &[1, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(identify(&mut host, 0, 0, 9999).status, sc::INVALID_NAMESPACE);
    assert_eq!(identify(&mut host, 0x42, 0, 0).status, sc::INVALID_FIELD);
    // Linux forces a zoned namespace read-only unless this log says Zone Append is supported.
    let effects = host.admin(sqe(0x02, 0, &[(10, 0x05 | 1023 << 16), (14, 2 << 24)]), 4096);
    assert_eq!(effects.data[1024 + 0x7d * 4] & 1, 1);
    let queues = host.admin(sqe(0x09, 0, &[(10, 0x07), (11, 3 | 3 << 16)]), 0);
    assert_eq!(queues.result, 3 | 3 << 16);
}

pub(super) fn zone_mgmt(host: &mut Host, zslba: u64, action: u32, all: bool) -> u16 {
    let cdw13 = action | u32::from(all) << 8;
    host.admin(sqe(0x79, 1, &[(10, zslba as u32), (11, (zslba >> 32) as u32), (13, cdw13)]), 0).status
}

pub(super) fn write(host: &mut Host, opcode: u8, slba: u64, blocks: usize, byte: u8, in_capsule: bool) -> Completion {
    let cdws = [(10, slba as u32), (11, (slba >> 32) as u32), (12, blocks as u32 - 1)];
    host.command(sqe(opcode, 1, &cdws), &vec![byte; blocks * 4096], in_capsule, 0)
}

pub(super) fn read(host: &mut Host, slba: u64, blocks: usize) -> Completion {
    let cdws = [(10, slba as u32), (11, (slba >> 32) as u32), (12, blocks as u32 - 1)];
    host.admin(sqe(0x02, 1, &cdws), blocks * 4096)
}

/// Report Zones from `slba` into a buffer of `zones` descriptors; (count, [(state, wp)]).
pub(super) fn report(host: &mut Host, slba: u64, zones: usize, filter: u32, partial: bool) -> (u64, Vec<(u8, u64)>) {
    let bytes = 64 + zones * 64;
    let cdw13 = filter << 8 | u32::from(partial) << 16;
    let c = host.admin(sqe(0x7A, 1, &[(10, slba as u32), (12, (bytes / 4 - 1) as u32), (13, cdw13)]), bytes);
    assert_eq!(c.status, sc::SUCCESS);
    let descriptors = c.data[64..].chunks_exact(64).map(|d| (d[1] >> 4, u64_at(d, 24))).collect();
    (u64_at(&c.data, 0), descriptors)
}

#[test]
fn writes_appends_and_zone_management_on_an_io_queue() {
    let (addr, _target) = start();
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(write(&mut io, 0x01, 0, 2, 0xAB, true).status, sc::SUCCESS, "in-capsule write");
    assert_eq!(write(&mut io, 0x01, 2, 8, 0xCD, false).status, sc::SUCCESS, "write through R2T");
    let back = read(&mut io, 0, 10);
    assert_eq!(back.status, sc::SUCCESS);
    assert!(back.data[..8192].iter().all(|&b| b == 0xAB) && back.data[8192..].iter().all(|&b| b == 0xCD));
    let first = write(&mut io, 0x7D, ZONE_LBAS, 4, 1, false);
    let second = write(&mut io, 0x7D, ZONE_LBAS, 4, 2, false);
    assert_eq!((first.status, first.result, second.result), (sc::SUCCESS, ZONE_LBAS, ZONE_LBAS + 4));
    let (count, zones) = report(&mut io, 0, 8, 0, false);
    assert_eq!(count, 8);
    assert_eq!(zones[..3], [(0x2, 10), (0x2, ZONE_LBAS + 8), (0x1, 2 * ZONE_LBAS)]);
    let (count, zones) = report(&mut io, 0, 1, 2, true);
    assert_eq!((count, zones.len()), (1, 1), "partial report of implicitly opened zones");
    let (count, _) = report(&mut io, 0, 1, 2, false);
    assert_eq!(count, 2, "all implicitly opened zones counted without the partial bit");
    assert_eq!(zone_mgmt(&mut io, ZONE_LBAS, 0x02, false), sc::SUCCESS, "finish");
    assert_eq!(report(&mut io, ZONE_LBAS, 1, 0, false).1[0], (0xE, ZONE_LBAS + ZCAP_LBAS));
    let full = write(&mut io, 0x7D, ZONE_LBAS, 1, 3, true);
    assert_eq!(full.status, Status::ZoneIsFull.code());
    assert_eq!(zone_mgmt(&mut io, 0, 0x04, true), sc::SUCCESS, "reset all");
    assert_eq!(report(&mut io, 0, 2, 0, false).1, [(0x1, 0), (0x1, ZONE_LBAS)]);
    let off_wp = write(&mut io, 0x01, 5, 1, 0, true);
    assert_eq!(off_wp.status, Status::ZoneInvalidWrite.code());
    assert_eq!(zone_mgmt(&mut io, 3, 0x03, false), Status::InvalidField.code(), "open off a zone start");
    assert_eq!(zone_mgmt(&mut io, 0, 0x10, false), sc::INVALID_FIELD, "no zone descriptor extensions");
}

#[test]
fn copy_flush_write_zeroes_and_the_vendor_commands() {
    let (addr, _target) = start();
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(write(&mut io, 0x01, 0, 4, 0x11, false).status, sc::SUCCESS);
    let mut range = vec![0u8; 32];
    put_u64(&mut range, 8, 1);
    put_u16(&mut range, 16, 1); // two blocks
    let copy = io.command(sqe(0x19, 1, &[(10, ZONE_LBAS as u32), (12, 0)]), &range, true, 0);
    assert_eq!(copy.status, sc::SUCCESS);
    assert!(read(&mut io, ZONE_LBAS, 2).data.iter().all(|&b| b == 0x11));
    let zeroes = io.admin(sqe(0x08, 1, &[(10, 4), (12, 3)]), 0);
    assert_eq!(zeroes.status, sc::SUCCESS);
    assert!(read(&mut io, 4, 4).data.iter().all(|&b| b == 0));
    assert_eq!(io.admin(sqe(0x00, 0xFFFF_FFFF, &[]), 0).status, sc::SUCCESS, "flush");
    let mapping = io.admin(sqe(0x86, 1, &[]), 24);
    assert_eq!(mapping.status, sc::SUCCESS);
    assert!(u64_at(&mapping.data, 0) > 0, "LBAs per chunk");
    let mut pairs = vec![0u8; 16];
    put_u64(&mut pairs, 0, 0);
    put_u64(&mut pairs, 8, 2 * ZONE_LBAS);
    let compaction = io.command(sqe(0x81, 1, &[(10, 1)]), &pairs, true, 0);
    assert_eq!(compaction.status, sc::SUCCESS);
    assert_eq!(read(&mut io, 2 * ZONE_LBAS, 1).data[0], 0x11);
}

/// Flush and FUA reach the device model: with a volatile write cache a FUA
/// write counts as durable and Flush is counted by the device.
#[test]
fn flush_and_fua_reach_the_device() {
    let opts = DeviceOptions { zones: Some(8), data: true, ..Default::default() };
    let config = opts.apply(preset("zn540").unwrap()).unwrap();
    let config = zonelab_device::options::set_parameter(&config, "write_buffer.cache", "volatile").unwrap();
    let (addr, target) = start_with(vec![Backend::new(alone(config), Pace::Asap).unwrap()]);
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    let fua_write = sqe(0x01, 1, &[(10, 0), (12, 1 << 30)]);
    assert_eq!(io.command(fua_write, &[7u8; 4096], true, 0).status, sc::SUCCESS);
    assert_eq!(io.admin(sqe(0x00, 1, &[]), 0).status, sc::SUCCESS, "flush");
    let ns = target.namespace(1).unwrap();
    let counters = zonelab_device::ZonedDevice::counters(super::target::lock(&ns.backend).device());
    assert_eq!(counters.flushes, 1, "the device saw the flush");
}

#[test]
fn command_errors_get_nvme_statuses() {
    let (addr, _target) = start();
    let mut early = Host::open(addr, Digests::default());
    assert_eq!(identify(&mut early, 1, 0, 0).status, sc::COMMAND_SEQUENCE_ERROR, "before Connect");
    assert_eq!(early.connect("nqn.wrong", 0, 0xFFFF).status, sc::CONNECT_INVALID_PARAMETERS);
    let c = early.connect(NQN, 0, 0xFFFF);
    assert_eq!(c.status, sc::SUCCESS);
    assert_eq!(identify(&mut early, 1, 0, 0).status, sc::COMMAND_SEQUENCE_ERROR, "before CC.EN");
    let mut stray = Host::open(addr, Digests::default());
    assert_eq!(stray.connect(NQN, 1, 0x4242).status, sc::CONNECT_INVALID_PARAMETERS, "no such controller");
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    assert_eq!(admin.admin(sqe(0xC3, 0, &[]), 0).status, sc::INVALID_OPCODE);
    assert_eq!(admin.admin(sqe(0x02, 0, &[(10, 0x33 | 15 << 16)]), 64).status, sc::INVALID_LOG_PAGE);
    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(io.admin(sqe(0x02, 7, &[(12, 0)]), 4096).status, sc::INVALID_NAMESPACE);
    assert_eq!(io.admin(sqe(0x55, 1, &[]), 0).status, sc::INVALID_OPCODE);
    assert_eq!(read(&mut io, 8 * ZONE_LBAS, 1).status, Status::LbaOutOfRange.code());
    let mut prp = sqe(0x02, 1, &[]);
    prp[1] = 0;
    assert_eq!(io.admin(prp, 4096).status, sc::INVALID_FIELD, "PRPs on a fabric");
    // Held asynchronous event requests: the fifth is refused.
    for _ in 0..4 {
        let mut s = sqe(0x0C, 0, &[]);
        put_u16(&mut s, 2, 900);
        s[39] = SGL_TRANSPORT;
        admin.send(&Pdu::CapsuleCmd { sqe: s, data: Vec::new(), data_ok: true });
    }
    assert_eq!(admin.admin(sqe(0x0C, 0, &[]), 0).status, sc::AER_LIMIT_EXCEEDED);
}

#[test]
fn discovery_lists_the_subsystem() {
    let (addr, _target) = start();
    let (mut host, _) = Host::attach(addr, DISCOVERY_NQN);
    let ctrl = identify(&mut host, 1, 0, 0);
    assert_eq!(ctrl.data[111], 2, "discovery controller");
    let header = host.admin(sqe(0x02, 0, &[(10, 0x70 | 255 << 16)]), 1024);
    assert_eq!(u64_at(&header.data, 8), 1, "one record");
    let entry = host.admin(sqe(0x02, 0, &[(10, 0x70 | 255 << 16), (12, 1024)]), 1024);
    assert_eq!(entry.data[0], 3, "TCP");
    assert!(entry.data[256..].starts_with(NQN.as_bytes()));
    assert!(entry.data[32..].starts_with(addr.port().to_string().as_bytes()));
    assert!(entry.data[512..].starts_with(b"127.0.0.1"));
    let mut io = Host::open(addr, Digests::default());
    let cntlid = host.property(0x04, 0x1C, false, 0).result; // any: discovery has no I/O queues
    assert_ne!(io.connect(DISCOVERY_NQN, 1, cntlid as u16).status, sc::SUCCESS);
}

#[test]
fn digests_are_checked_when_negotiated() {
    let (addr, _target) = start();
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let digests = Digests { header: true, data: true };
    let mut io = Host::open(addr, digests);
    assert_eq!(io.connect(NQN, 1, cntlid).status, sc::SUCCESS);
    assert_eq!(write(&mut io, 0x01, 0, 3, 0x5A, false).status, sc::SUCCESS);
    assert!(read(&mut io, 0, 3).data.iter().all(|&b| b == 0x5A));
    // A capsule whose data digest is wrong fails with a transient transport error.
    let mut s = sqe(0x01, 1, &[(10, 3)]);
    put_u16(&mut s, 2, 77);
    put_u32(&mut s, 32, 4096);
    s[39] = SGL_IN_CAPSULE;
    let mut bytes = io.enc.encode(&Pdu::CapsuleCmd { sqe: s, data: vec![1; 4096], data_ok: true });
    let n = bytes.len();
    bytes[n - 1] ^= 0xFF;
    io.stream.write_all(&bytes).unwrap();
    let Pdu::CapsuleResp { cqe } = io.recv() else { panic!() };
    assert_eq!(completion(&cqe, 77, Vec::new()).status, sc::TRANSIENT_TRANSPORT_ERROR);
    // A bad header digest is fatal.
    let mut bytes = io.enc.encode(&Pdu::CapsuleCmd { sqe: s, data: vec![1; 4096], data_ok: true });
    bytes[20] ^= 1;
    io.stream.write_all(&bytes).unwrap();
    assert_eq!(io.expect_term_req().0, 0x03);
}

#[test]
fn malformed_pdus_end_the_connection_with_a_term_req() {
    let (addr, target) = start();
    let mut host = Host::open(addr, Digests::default());
    host.stream.write_all(&[0x04, 0, 24, 0, 24, 0, 0, 0]).unwrap();
    assert_eq!(host.expect_term_req(), (0x01, 2), "a capsule with a 24-byte header");
    let mut host = TcpStream::connect(addr).unwrap();
    host.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    host.write_all(&Encoding::default().encode(&Pdu::CapsuleResp { cqe: [0; 16] })).unwrap();
    let mut host = Host { stream: host, enc: Encoding::default(), next_cid: 1 };
    assert_eq!(host.expect_term_req().0, 0x02, "a PDU before ICReq");
    let mut host = Host::open(addr, Digests::default());
    host.send(&Pdu::H2CData { cccid: 1, ttag: 9, datao: 0, data: vec![0; 8], last: true, data_ok: true });
    assert_eq!(host.expect_term_req(), (0x01, 10), "H2CData without an R2T");
    let mut host = Host::open(addr, Digests::default());
    host.send(&Pdu::IcReq { pfv: 0, hpda: 0, digests: Digests::default(), maxr2t: 0 });
    assert_eq!(host.expect_term_req().0, 0x02, "a second ICReq");
    // The target keeps serving others.
    let (mut admin, _) = Host::attach(addr, NQN);
    assert_eq!(identify(&mut admin, 1, 0, 0).status, sc::SUCCESS);
    assert!(!target.failed());
}

#[test]
fn a_host_leaving_mid_transfer_leaves_the_device_intact() {
    let (addr, target) = start();
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    let mut stray = Host::open(addr, Digests::default());
    assert_eq!(stray.connect(NQN, 2, cntlid).status, sc::CONNECT_INVALID_PARAMETERS, "one I/O queue granted");
    assert_eq!(admin.admin(sqe(0x09, 0, &[(10, 0x07), (11, 2 | 2 << 16)]), 0).status, sc::SUCCESS);
    let mut io = Host::io_queue(addr, cntlid, 1);
    let mut s = sqe(0x01, 1, &[(10, 0), (12, 7)]);
    put_u16(&mut s, 2, 5);
    put_u32(&mut s, 32, 8 * 4096);
    s[39] = SGL_TRANSPORT;
    io.send(&Pdu::CapsuleCmd { sqe: s, data: Vec::new(), data_ok: true });
    let Pdu::R2T { ttag, .. } = io.recv() else { panic!("expected R2T") };
    io.send(&Pdu::H2CData { cccid: 5, ttag, datao: 0, data: vec![9; 4096], last: false, data_ok: true });
    drop(io);
    // Out-of-order data on another queue is fatal too.
    let mut io = Host::io_queue(addr, cntlid, 2);
    io.send(&Pdu::CapsuleCmd { sqe: s, data: Vec::new(), data_ok: true });
    let Pdu::R2T { ttag, .. } = io.recv() else { panic!("expected R2T") };
    io.send(&Pdu::H2CData { cccid: 5, ttag, datao: 4096, data: vec![9; 4096], last: false, data_ok: true });
    assert_eq!(io.expect_term_req(), (0x04, 12));
    let mut io = Host::io_queue(addr, cntlid, 3);
    assert_eq!(report(&mut io, 0, 1, 0, false).1, [(0x1, 0)], "nothing was written");
    assert_eq!(write(&mut io, 0x01, 0, 8, 3, false).status, sc::SUCCESS);
    assert!(!target.failed());
}

#[test]
fn several_namespaces_keep_their_own_geometry() {
    let opts = DeviceOptions {
        zones: Some(4),
        zone_size_bytes: Some(2 << 20),
        zone_capacity_bytes: Some(1 << 20),
        data: true,
        ..Default::default()
    };
    let second = Backend::new(alone(opts.apply(preset("zn540").unwrap()).unwrap()), Pace::Asap).unwrap();
    let (addr, _target) = start_with(vec![backend(), second]);
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    assert_eq!(&identify(&mut admin, 2, 0, 0).data[..12], &[1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(u64_at(&identify(&mut admin, 5, 2, 2).data, 2816), 512, "namespace 2: zones of 512 blocks");
    assert_eq!(u64_at(&identify(&mut admin, 0, 0, 2).data, 0), 4 * 512);
    let mut io = Host::io_queue(addr, cntlid, 1);
    let mut append = sqe(0x7D, 2, &[(10, 512), (12, 0)]);
    append[1] = 0x40;
    let c = io.command(append, &[5; 4096], true, 0);
    assert_eq!((c.status, c.result), (sc::SUCCESS, 512), "an append on namespace 2");
    assert_eq!(report(&mut io, ZONE_LBAS, 1, 0, false).1, [(0x1, ZONE_LBAS)], "namespace 1 untouched");
}

#[test]
fn realtime_pacing_never_answers_before_the_simulated_completion() {
    let opts = DeviceOptions {
        zones: Some(8),
        zone_size_bytes: Some(ZONE_LBAS << 12),
        zone_capacity_bytes: Some(ZCAP_LBAS << 12),
        sets: vec![("controller.write_ns".into(), "50ms".into())],
        data: true,
        ..Default::default()
    };
    let slow = Backend::new(alone(opts.apply(preset("zn540").unwrap()).unwrap()), Pace::Realtime);
    let (addr, _target) = start_with(vec![slow.unwrap()]);
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    let sent = std::time::Instant::now();
    assert_eq!(write(&mut io, 0x01, 0, 1, 1, true).status, sc::SUCCESS);
    assert!(sent.elapsed() >= Duration::from_millis(50), "answered after {:?}", sent.elapsed());
}

#[test]
fn a_silent_admin_queue_is_closed_after_its_keep_alive_timeout() {
    let (addr, target) = start();
    let mut host = Host::open(addr, Digests::default());
    let c = host.connect_kato(NQN, 0, 0xFFFF, 100);
    assert_eq!(c.status, sc::SUCCESS);
    let mut rest = [0u8; 1];
    assert_eq!(host.stream.read(&mut rest).unwrap_or(0), 0, "closed by the target");
    let mut io = Host::open(addr, Digests::default());
    let reply = io.connect(NQN, 1, c.result as u16);
    assert_eq!(reply.status, sc::CONNECT_INVALID_PARAMETERS, "the controller is gone");
    assert!(target.controller(c.result as u16).is_none());
}

/// Three namespaces of one device: NSID 1 of 4 zones as [`backend`]'s,
/// NSID 2 of 2 zones of 512 blocks, NSID 3 of 2 conventional zones (NVM).
pub(super) fn one_device_three_namespaces() -> Vec<Backend> {
    let opts = DeviceOptions {
        zones: Some(8),
        zone_size_bytes: Some(ZONE_LBAS << 12),
        zone_capacity_bytes: Some(ZCAP_LBAS << 12),
        data: true,
        ..Default::default()
    };
    let mut config = opts.apply(preset("zn540").unwrap()).unwrap();
    config.namespaces = vec![
        NamespaceEntry { zones: Some(4), ..Default::default() },
        NamespaceEntry {
            zones: Some(2),
            zone_size_bytes: Some(2 << 20),
            zone_capacity_bytes: Some(1 << 20),
            ..Default::default()
        },
        NamespaceEntry { zones: Some(2), conventional_zones: Some(2), ..Default::default() },
    ];
    let namespaces = Namespaces::new(config).unwrap().into_namespaces();
    namespaces.into_iter().map(|ns| Backend::new(ns, Pace::Asap).unwrap()).collect()
}

pub(super) fn io_on(host: &mut Host, opcode: u8, nsid: u32, slba: u64, blocks: usize, byte: u8) -> Completion {
    let cdws = [(10, slba as u32), (11, (slba >> 32) as u32), (12, blocks as u32 - 1)];
    let out = if opcode == 0x02 { Vec::new() } else { vec![byte; blocks * 4096] };
    let in_bytes = if opcode == 0x02 { blocks * 4096 } else { 0 };
    host.command(sqe(opcode, nsid, &cdws), &out, false, in_bytes)
}

#[test]
fn namespaces_of_one_device_are_identified_and_addressed_by_nsid() {
    let (addr, _target) = start_with(one_device_three_namespaces());
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    let ctrl = identify(&mut admin, 1, 0, 0);
    assert_eq!(u32::from_le_bytes(ctrl.data[516..520].try_into().unwrap()), 3, "NN");
    let ids = |c: &Completion| {
        c.data.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).take(4).collect::<Vec<_>>()
    };
    assert_eq!(ids(&identify(&mut admin, 2, 0, 0)), [1, 2, 3, 0], "active namespace list");
    assert_eq!(ids(&identify(&mut admin, 2, 0, 1)), [2, 3, 0, 0], "ids above 1");
    // Each namespace's own geometry and command set.
    assert_eq!(u64_at(&identify(&mut admin, 5, 2, 1).data, 2816), ZONE_LBAS);
    assert_eq!(u64_at(&identify(&mut admin, 5, 2, 2).data, 2816), 512);
    assert_eq!(u64_at(&identify(&mut admin, 0, 0, 2).data, 0), 2 * 512, "NSZE of namespace 2");
    assert_eq!(u64_at(&identify(&mut admin, 0, 0, 3).data, 0), 2 * ZONE_LBAS, "NSZE of namespace 3");
    for (nsid, csi) in [(1, 2), (2, 2), (3, 0)] {
        assert_eq!(identify(&mut admin, 3, 0, nsid).data[24], csi, "command set of namespace {nsid}");
    }
    assert_eq!(identify(&mut admin, 5, 2, 3).status, sc::INVALID_FIELD, "an NVM namespace has no ZNS structure");
    for nsid in [4, 0] {
        assert_eq!(identify(&mut admin, 5, 2, nsid).status, sc::INVALID_NAMESPACE, "NSID {nsid}");
        assert_eq!(identify(&mut admin, 3, 0, nsid).status, sc::INVALID_NAMESPACE, "NSID {nsid}");
    }

    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(io_on(&mut io, 0x01, 2, 0, 8, 0x22).status, sc::SUCCESS, "a write to namespace 2");
    assert_eq!(report(&mut io, 0, 1, 0, false).1, [(0x1, 0)], "namespace 1's zone 0 stays empty");
    assert_eq!(io_on(&mut io, 0x01, 1, 0, 4, 0x11).status, sc::SUCCESS, "namespace 1 writes at its own LBA 0");
    let back = io_on(&mut io, 0x02, 2, 0, 8, 0);
    assert!(back.status == sc::SUCCESS && back.data.iter().all(|&b| b == 0x22), "namespace 2 keeps its data");
    let append = io_on(&mut io, 0x7D, 2, 512, 2, 0x33);
    assert_eq!((append.status, append.result), (sc::SUCCESS, 512), "an append to namespace 2's zone 1");
    // Namespace 3 is NVM: random writes anywhere, no zoned commands.
    assert_eq!(io_on(&mut io, 0x01, 3, 100, 2, 0x44).status, sc::SUCCESS);
    assert_eq!(io_on(&mut io, 0x7D, 3, 0, 1, 0).status, sc::INVALID_OPCODE);
    for nsid in [0, 4, 0xFFFF_FFFE] {
        assert_eq!(io_on(&mut io, 0x01, nsid, 0, 1, 0).status, sc::INVALID_NAMESPACE, "NSID {nsid}");
    }
    assert_eq!(io_on(&mut io, 0x02, 2, 2 * 512, 1, 0).status, Status::LbaOutOfRange.code(), "past namespace 2's end");
}

/// A block of the `--backing` image that fails its checksum at load is
/// answered with Unrecovered Read Error (SCT 2h, SC 81h), to a read and to a
/// copy from it; its neighbours are served, and a write over it heals it.
#[test]
fn a_damaged_image_block_is_an_unrecovered_read_error() {
    use std::os::unix::fs::FileExt;
    let dir = crate::scratch_dir("nvme-image");
    let path = dir.join("dev.img");
    let mut first = backend().with_image(&path).unwrap();
    let data = vec![0x3Cu8; 4 * 4096];
    let cmd = zonelab_device::Command::Write {
        slba: ZONE_LBAS,
        nlb: 4,
        payload: zonelab_device::Payload::Bytes(&data),
        fua: false,
        placement: None,
    };
    assert_eq!(first.submit(0, &cmd, None).unwrap().status, Status::Success);
    drop(first);
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all_at(&[0xFF], (ZONE_LBAS + 2) * 4096 + 33).unwrap();
    let (addr, _target) = start_with(vec![backend().with_image(&path).unwrap()]);
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(sc::UNRECOVERED_READ_ERROR, 0x281);
    assert_eq!(read(&mut io, ZONE_LBAS + 2, 1).status, sc::UNRECOVERED_READ_ERROR);
    assert_eq!(read(&mut io, ZONE_LBAS, 4).status, sc::UNRECOVERED_READ_ERROR);
    let good = read(&mut io, ZONE_LBAS, 2);
    assert_eq!(good.status, sc::SUCCESS);
    assert!(good.data.iter().all(|&b| b == 0x3C));
    let mut range = vec![0u8; 32];
    put_u64(&mut range, 8, ZONE_LBAS + 1);
    put_u16(&mut range, 16, 1); // LBAs 257 and 258
    let copy = io.command(sqe(0x19, 1, &[(10, 2 * ZONE_LBAS as u32), (12, 0)]), &range, true, 0);
    assert_eq!(copy.status, sc::UNRECOVERED_READ_ERROR, "a copy would spread the damage");
    assert_eq!(zone_mgmt(&mut io, ZONE_LBAS, 0x04, false), sc::SUCCESS, "reset");
    assert_eq!(write(&mut io, 0x01, ZONE_LBAS, 4, 0x4D, false).status, sc::SUCCESS);
    assert_eq!(read(&mut io, ZONE_LBAS + 2, 1).status, sc::SUCCESS, "rewritten");
    std::fs::remove_dir_all(&dir).unwrap();
}
