//! Hostile hosts: the reported breakages, each reproduced with a raw
//! NVMe/TCP client over loopback, and what the server does about them now
//! (docs/nvme-tcp.md, "Limits").

use super::command::{put_u16, put_u32, sc, SGL_IN_CAPSULE, SGL_TRANSPORT};
use super::limits::{Limits, CONNECTION_FIXED_BYTES, MIB};
use super::pdu::{Digests, Pdu, SQE_BYTES};
use super::target::NamespaceBackend as Backend;
use super::tests::{
    alone, backend, identify, io_on, read, sqe, start_limited, start_with, write, Completion, Host, NQN,
};
use crate::backend::Pace;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use zonelab_device::{preset, DeviceOptions};

/// Sends a command without waiting for its answer.
fn submit(host: &mut Host, s: [u8; SQE_BYTES], cid: u16, sgl: u8, len: usize, data: Vec<u8>) {
    try_submit(host, s, cid, sgl, len, data).unwrap();
}

/// [`submit`], or the error of a host the target has cut off.
fn try_submit(
    host: &mut Host,
    mut s: [u8; SQE_BYTES],
    cid: u16,
    sgl: u8,
    len: usize,
    data: Vec<u8>,
) -> std::io::Result<()> {
    put_u16(&mut s, 2, cid);
    put_u32(&mut s, 32, len as u32);
    s[39] = sgl;
    host.try_send(&Pdu::CapsuleCmd { sqe: s, data, data_ok: true })
}

/// The next completion on `host` (C2HData gathered on the way).
fn next_completion(host: &mut Host) -> (u16, Completion) {
    let mut data = Vec::new();
    loop {
        match host.recv() {
            Pdu::C2HData { data: d, .. } => data.extend_from_slice(&d),
            Pdu::CapsuleResp { cqe } => {
                let cid = u16::from_le_bytes([cqe[12], cqe[13]]);
                return (cid, super::tests::completion(&cqe, cid, data));
            }
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Whether the target closed `stream` within `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    stream.set_read_timeout(Some(within)).unwrap();
    let mut byte = [0u8; 1];
    matches!(stream.read(&mut byte), Ok(0))
        || matches!(stream.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset)
}

/// An I/O queue of `entries` entries on a new controller.
fn io_queue_of(addr: SocketAddr, entries: u16) -> (Host, Host) {
    let (admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::open(addr, Digests::default());
    assert_eq!(io.connect_sized(NQN, 1, cntlid, 0, entries - 1).status, sc::SUCCESS);
    (admin, io)
}

/// Reproducer 1: a host pipelined 128 KiB reads and never read the
/// answers; the server grew by 133 MB per connection. Now the connection's
/// answers stop at its budget (the socket is not read meanwhile), and every
/// answer still arrives once the host reads.
#[test]
fn a_host_that_never_reads_is_held_to_its_memory_budget() {
    let limits = Limits { connection_memory: 3 * MIB, ..Limits::default() };
    let (addr, target) = start_limited(vec![backend()], limits);
    let (_admin, mut io) = io_queue_of(addr, 128);
    assert_eq!(write(&mut io, 0x01, 0, 32, 0x5A, false).status, sc::SUCCESS);
    // 128 reads of 128 KiB: 16 MiB of answers, more than the kernel's socket buffers hold.
    for cid in 0..128 {
        submit(&mut io, sqe(0x02, 1, &[(12, 31)]), cid, SGL_TRANSPORT, 128 << 10, Vec::new());
    }
    std::thread::sleep(Duration::from_millis(1500));
    let peak = target.memory().peak();
    assert!(peak <= 3 * MIB + 4 * CONNECTION_FIXED_BYTES, "peak {peak} bytes over a 3 MiB connection budget");
    for _ in 0..128 {
        let (_, c) = next_completion(&mut io);
        assert!(c.status == sc::SUCCESS && c.data.len() == 128 << 10 && c.data.iter().all(|&b| b == 0x5A));
    }
    println!("server memory budget peak with a host reading nothing: {peak} bytes");
}

/// Reproducer 1: 1 MiB Get Log Pages grew the server by 900 MB per
/// connection. Transfers above MDTS (512 KiB here) get Invalid Field, before
/// anything is allocated.
#[test]
fn log_pages_and_transfers_above_mdts_are_refused() {
    let (addr, _target) = start_with(vec![backend()]);
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    let one_mib_numd = (1u32 << 18) - 1;
    let smart = sqe(0x02, 0xFFFF_FFFF, &[(10, 0x02 | (one_mib_numd & 0xffff) << 16), (11, one_mib_numd >> 16)]);
    assert_eq!(admin.admin(smart, 1 << 20).status, sc::INVALID_FIELD, "a 1 MiB buffer");
    assert_eq!(admin.admin(smart, 4096).status, sc::INVALID_FIELD, "1 MiB of log into a 4 KiB buffer");
    assert_eq!(admin.admin(sqe(0x02, 0xFFFF_FFFF, &[(10, 0x02 | 127 << 16)]), 512).status, sc::SUCCESS);
    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(io.admin(sqe(0x02, 1, &[(12, 255)]), 1 << 20).status, sc::INVALID_FIELD, "a 1 MiB read");
}

/// Reproducer 1: after an ICReq alone, the server granted R2Ts and buffered
/// their data (143 MB for 8 connections). No R2T before Connect now.
#[test]
fn no_r2t_before_connect() {
    let (addr, target) = start_with(vec![backend()]);
    let mut host = Host::open(addr, Digests::default());
    let before = target.memory().used();
    submit(&mut host, sqe(0x01, 1, &[(12, 15)]), 9, SGL_TRANSPORT, 64 << 10, Vec::new());
    let (cid, c) = next_completion(&mut host);
    assert_eq!((cid, c.status), (9, sc::COMMAND_SEQUENCE_ERROR), "an answer, not an R2T");
    // The answer's memory is given back just after it is written.
    let deadline = Instant::now() + Duration::from_secs(2);
    while target.memory().used() > before && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(target.memory().used() <= before, "nothing buffered");
}

/// Reproducer 3: a 64 KiB in-capsule write was executed although IOCCSZ
/// says 8 KiB. It is a fatal Data Transfer Limit Exceeded now, and the
/// device is untouched.
#[test]
fn in_capsule_data_beyond_ioccsz_is_fatal() {
    let (addr, _target) = start_with(vec![backend()]);
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    // The target may close before it has taken all of the capsule.
    let _ = try_submit(&mut io, sqe(0x01, 1, &[(12, 15)]), 1, SGL_IN_CAPSULE, 64 << 10, vec![7; 64 << 10]);
    assert_eq!(io.expect_term_req(), (0x05, 4), "Data Transfer Limit Exceeded at PLEN");
    let mut other = Host::io_queue(addr, cntlid, 1);
    assert!(read(&mut other, 0, 1).data.iter().all(|&b| b == 0), "not written");
}

/// A device whose writes take 50 ms of simulated time, paced in real time:
/// answers wait, so commands stay outstanding.
fn slow_backend() -> Backend {
    let opts = DeviceOptions {
        zones: Some(8),
        zone_size_bytes: Some(super::tests::ZONE_LBAS << 12),
        zone_capacity_bytes: Some(super::tests::ZCAP_LBAS << 12),
        sets: vec![("controller.write_ns".into(), "20ms".into())],
        data: true,
        ..Default::default()
    };
    Backend::new(alone(opts.apply(preset("zn540").unwrap()).unwrap()), Pace::Realtime).unwrap()
}

/// Reproducer 3: 200 commands on a 32-entry queue were all answered. A host
/// may have as many commands outstanding as its queue has entries; one more
/// is a fatal PDU Sequence Error.
#[test]
fn a_host_beyond_its_queue_entries_is_cut_off() {
    let (addr, _target) = start_with(vec![slow_backend()]);
    let (_admin, mut io) = io_queue_of(addr, 32);
    for cid in 0..32 {
        submit(&mut io, sqe(0x01, 1, &[(10, u32::from(cid))]), cid, SGL_IN_CAPSULE, 4096, vec![1; 4096]);
    }
    for _ in 0..32 {
        assert_eq!(next_completion(&mut io).1.status, sc::SUCCESS, "a full queue is fine");
    }
    // The target may cut the host off while it is still sending: its
    // writes then fail, and what the target sent before closing is read
    // (on a loaded machine, completions of commands it finished first).
    for cid in 0..200 {
        let s = sqe(0x01, 1, &[(10, 32 + u32::from(cid))]);
        if try_submit(&mut io, s, cid, SGL_IN_CAPSULE, 4096, vec![1; 4096]).is_err() {
            break;
        }
    }
    assert_eq!(io.expect_term_req_after_completions(200).0, 0x02, "PDU Sequence Error");
}

/// Reproducer 2: 1,030 idle connections that never sent an ICReq locked
/// every new host out. At the cap the oldest unconnected one makes room;
/// connected hosts keep their queues; idle ones go after the ICReq timeout.
#[test]
fn idle_sockets_cannot_lock_hosts_out() {
    let limits = Limits { max_connections: 8, icreq_timeout: Duration::from_millis(600), ..Limits::default() };
    let (addr, target) = start_limited(vec![backend()], limits);
    let mut idle: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();
    std::thread::sleep(Duration::from_millis(50));
    let (mut admin, _) = Host::attach(addr, NQN);
    idle.extend((0..30).map(|_| TcpStream::connect(addr).unwrap()));
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(identify(&mut admin, 1, 0, 0).status, sc::SUCCESS, "a connected host stays");
    assert!(closed_within(&mut idle[0], Duration::from_secs(2)), "the oldest idle socket made room");
    let started = Instant::now();
    assert!(closed_within(idle.last_mut().unwrap(), Duration::from_secs(3)), "no ICReq: closed");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(target.connection_count() <= 8 + 64, "{} connections", target.connection_count());
}

/// A connection that sends its ICReq but never connects is closed after
/// the Connect timeout.
#[test]
fn a_connection_that_never_connects_is_closed() {
    let limits = Limits { connect_timeout: Duration::from_millis(300), ..Limits::default() };
    let (addr, _target) = start_limited(vec![backend()], limits);
    let mut host = Host::open(addr, Digests::default());
    assert!(closed_within(&mut host.stream, Duration::from_secs(3)));
}

/// Reproducer 2: 64 admin Connects with KATO 0 that went silent left every
/// other host with Controller Busy. At the cap, the one silent longest (for
/// `--idle-reclaim`) makes room.
#[test]
fn silent_controllers_without_keep_alive_are_reclaimed_at_the_cap() {
    let limits = Limits { max_controllers: 4, idle_reclaim: Duration::from_millis(300), ..Limits::default() };
    let (addr, target) = start_limited(vec![backend()], limits);
    let mut silent: Vec<Host> = (0..4)
        .map(|_| {
            let mut host = Host::open(addr, Digests::default());
            assert_eq!(host.connect(NQN, 0, 0xFFFF).status, sc::SUCCESS);
            host
        })
        .collect();
    let mut late = Host::open(addr, Digests::default());
    assert_eq!(late.connect(NQN, 0, 0xFFFF).status, sc::CONNECT_CONTROLLER_BUSY, "all four are recent");
    std::thread::sleep(Duration::from_millis(400));
    let mut late = Host::open(addr, Digests::default());
    assert_eq!(late.connect(NQN, 0, 0xFFFF).status, sc::SUCCESS, "the oldest silent one made room");
    assert!(closed_within(&mut silent[0].stream, Duration::from_secs(2)), "and its queue is closed");
    assert_eq!(target.controller_count(), 4);
}

/// Reproducer 4: a model fault stopped (or failed) everything. Now the
/// namespace whose command made the model panic goes offline; the others,
/// and other hosts, go on; the logs say so.
#[test]
fn a_model_fault_takes_only_its_namespace_offline() {
    let (addr, target) = start_with(vec![backend(), backend()]);
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    target.inject_fault(2, 0x01);
    assert_eq!(io_on(&mut io, 0x01, 2, 0, 1, 9).status, sc::INTERNAL_ERROR, "the command that hit the fault");
    assert_eq!(io_on(&mut io, 0x01, 2, 0, 1, 9).status, sc::NAMESPACE_NOT_READY);
    assert_eq!(io_on(&mut io, 0x02, 2, 0, 1, 0).status, sc::NAMESPACE_NOT_READY);
    assert_namespace_one_and_others_go_on(addr, &mut io);
    let smart = admin.admin(sqe(0x02, 0xFFFF_FFFF, &[(10, 0x02 | 127 << 16)]), 512);
    assert_eq!(smart.data[0] & 0x04, 0x04, "critical warning: reliability degraded");
    let errors = admin.admin(sqe(0x02, 0, &[(10, 0x01 | 15 << 16)]), 64);
    assert_eq!(u32::from_le_bytes(errors.data[24..28].try_into().unwrap()), 2, "the error names namespace 2");
    assert_eq!(u16::from_le_bytes([errors.data[12], errors.data[13]]) >> 1, sc::INTERNAL_ERROR);
    assert!(target.namespace_offline(2) && !target.namespace_offline(1));
}

/// Namespace 1 answers on `io`, a flush of all namespaces succeeds, and a
/// new host attaches and writes.
fn assert_namespace_one_and_others_go_on(addr: SocketAddr, io: &mut Host) {
    assert_eq!(io_on(io, 0x01, 1, 0, 1, 7).status, sc::SUCCESS);
    assert!(io_on(io, 0x02, 1, 0, 1, 0).data.iter().all(|&b| b == 7));
    assert_eq!(io.admin(sqe(0x00, 0xFFFF_FFFF, &[]), 0).status, sc::SUCCESS, "flush of the online ones");
    let (_other, other_cntlid) = Host::attach(addr, NQN);
    let mut other_io = Host::io_queue(addr, other_cntlid, 1);
    assert_eq!(io_on(&mut other_io, 0x01, 1, 1, 1, 8).status, sc::SUCCESS, "another host goes on");
}

/// The same policy when the model itself panics inside the backend (which
/// catches it and marks itself failed): here a write whose buffer does not
/// hold its blocks trips the model's own assertion.
#[test]
fn a_panic_inside_the_backend_takes_its_namespace_offline() {
    let (addr, target) = start_with(vec![backend(), backend()]);
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    {
        let slot = target.namespace(2).unwrap();
        let mut ns = super::target::lock(&slot.backend);
        let short = zonelab_device::Payload::Bytes(&[0u8; 100]);
        let write = zonelab_device::Command::Write { slba: 0, nlb: 8, payload: short, fua: false, placement: None };
        assert!(matches!(ns.submit(0, &write, None), Err(crate::backend::Refusal::Failed)), "the model panicked");
    }
    assert_eq!(io_on(&mut io, 0x02, 2, 0, 1, 0).status, sc::INTERNAL_ERROR);
    assert_eq!(io_on(&mut io, 0x02, 2, 0, 1, 0).status, sc::NAMESPACE_NOT_READY);
    assert_namespace_one_and_others_go_on(addr, &mut io);
}

/// When hosts that read nothing exhaust the total budget, a well-behaved
/// host's command waits, then the stalled connection holding the most is
/// closed and the command goes through.
#[test]
fn an_exhausted_total_budget_closes_the_stalled_connection_holding_most() {
    let limits = Limits {
        connection_memory: 3 * MIB,
        total_memory: 5 * MIB,
        stall_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (addr, target) = start_limited(vec![backend()], limits);
    let (_admin, mut good) = io_queue_of(addr, 32);
    assert_eq!(write(&mut good, 0x01, 0, 32, 0x3C, false).status, sc::SUCCESS);
    let hostile: Vec<(Host, Host)> = (0..2)
        .map(|_| {
            let (admin, mut io) = io_queue_of(addr, 128);
            for cid in 0..128 {
                submit(&mut io, sqe(0x02, 1, &[(12, 31)]), cid, SGL_TRANSPORT, 128 << 10, Vec::new());
            }
            (admin, io)
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    println!("held by the hosts that read nothing: {} bytes", target.memory().used());
    let started = Instant::now();
    let back = read(&mut good, 0, 32);
    assert!(back.status == sc::SUCCESS && back.data.iter().all(|&b| b == 0x3C));
    assert!(started.elapsed() < Duration::from_secs(5), "served after {:?}", started.elapsed());
    let peak = target.memory().peak();
    assert!(peak <= 5 * MIB, "peak {peak} bytes over the total budget");
    let deadline = Instant::now() + Duration::from_secs(2);
    while target.connection_count() >= 6 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(target.connection_count() < 6, "a stalled connection was closed");
    drop(hostile);
}

/// Pipelines `count` writes of 128 KiB from `slba` and sends each one's data
/// when its R2T comes; true once all succeeded.
fn pipelined_writes(io: &mut Host, slba: u64, count: u16) -> bool {
    for cid in 0..count {
        let s = sqe(0x01, 1, &[(10, (slba + u64::from(cid) * 32) as u32), (12, 31)]);
        submit(io, s, cid, SGL_TRANSPORT, 128 << 10, Vec::new());
    }
    let mut done = 0;
    while done < count {
        match io.recv() {
            Pdu::R2T { cccid, ttag, r2tl, .. } => {
                let data = vec![cccid as u8; r2tl as usize];
                io.send(&Pdu::H2CData { cccid, ttag, datao: 0, data, last: true, data_ok: true });
            }
            Pdu::CapsuleResp { cqe } => {
                if super::tests::completion(&cqe, u16::from_le_bytes([cqe[12], cqe[13]]), Vec::new()).status != 0 {
                    return false;
                }
                done += 1;
            }
            _ => return false,
        }
    }
    true
}

/// Several hosts pipelining large writes through R2T on a total budget
/// that fits a few transfers at a time: every write completes (no reader
/// waits for memory while holding some, so none waits forever).
#[test]
fn writers_on_a_tight_total_budget_all_finish() {
    let limits = Limits { connection_memory: 2 * MIB, total_memory: 3 * MIB, ..Limits::default() };
    let (addr, target) = start_limited(vec![backend()], limits);
    let writers: Vec<_> = (0..4u64)
        .map(|zone| {
            std::thread::spawn(move || {
                let (_admin, mut io) = io_queue_of(addr, 32);
                pipelined_writes(&mut io, zone * super::tests::ZONE_LBAS, 4)
            })
        })
        .collect();
    for writer in writers {
        assert!(writer.join().unwrap(), "a writer failed");
    }
    assert!(target.memory().peak() <= 3 * MIB);
}

/// A host that trickles its ICReq a byte at a time is closed when the ICReq
/// timeout runs out, however recently it sent a byte.
#[test]
fn a_trickled_icreq_is_closed_on_time() {
    use std::io::Write;
    let limits = Limits { icreq_timeout: Duration::from_millis(400), ..Limits::default() };
    let (addr, _target) = start_limited(vec![backend()], limits);
    let mut stream = TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    let mut closed = false;
    for byte in [0u8, 0, 128, 0, 128, 0, 0, 0].iter().cycle().take(100) {
        if stream.write_all(&[*byte]).is_err() || closed_within(&mut stream, Duration::from_millis(50)) {
            closed = true;
            break;
        }
    }
    assert!(closed && started.elapsed() < Duration::from_secs(3), "open after {:?}", started.elapsed());
}
