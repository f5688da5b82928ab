//! Soak: `zonelab serve --nvme-tcp` as a child process, for about a minute
//! (`ZONELAB_SOAK_SECS` changes it), with well-behaved hosts doing mixed I/O
//! (in-capsule and R2T writes, appends, reads), zone management (finish,
//! reset) and the ZNS+ zone_compaction and identify_mapping on zones of
//! their own, verifying every byte, while hostile clients misbehave: idle sockets that never send an
//! ICReq, hosts that pipeline reads and never read the answers, garbage
//! PDUs, disconnects in the middle of a transfer, silent admin Connects
//! without keep-alive. The well-behaved hosts must finish with their data
//! intact and the server's peak memory (VmHWM) must stay within its memory
//! budget above what it used before the clients came; the numbers are
//! printed (`cargo test -p zonelab --test nvme_tcp_soak -- --nocapture`).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use zonelab_serve::nvme_tcp::pdu::{read_pdu, Digests, Encoding, Pdu, ReadError};

const NQN: &str = "nqn.2026-11.io.zonelab:zns";
const LBA: usize = 4096;
/// Zones of 1 MiB (256 blocks), all of it writable.
const ZONE_LBAS: u64 = 256;
/// Small enough that the pipelining hosts exhaust it (4 MiB each, six of them).
const TOTAL_MEMORY: u64 = 24 << 20;
const CONNECTION_MEMORY: u64 = 4 << 20;
const GOOD_HOSTS: u64 = 3;
/// Zone 0 is the hostile clients'; good host `h` has zones 1 + 4h .. 4 + 4h.
const ZONES: u64 = 1 + 4 * GOOD_HOSTS;

type Io<T> = std::io::Result<T>;

fn protocol(what: &str) -> std::io::Error {
    std::io::Error::other(what.to_string())
}

/// A small NVMe/TCP host: every call may fail (the server may close a hostile one).
struct Host {
    stream: TcpStream,
    enc: Encoding,
    cid: u16,
}

struct Done {
    status: u16,
    result: u64,
    data: Vec<u8>,
}

fn sqe(opcode: u8, nsid: u32, cdws: &[(usize, u32)]) -> [u8; 64] {
    let mut s = [0u8; 64];
    s[0] = opcode;
    s[1] = 0x40;
    s[4..8].copy_from_slice(&nsid.to_le_bytes());
    for &(n, v) in cdws {
        s[40 + (n - 10) * 4..44 + (n - 10) * 4].copy_from_slice(&v.to_le_bytes());
    }
    s
}

fn lba_cdws(slba: u64, blocks: usize) -> [(usize, u32); 3] {
    [(10, slba as u32), (11, (slba >> 32) as u32), (12, blocks as u32 - 1)]
}

impl Host {
    fn open(addr: SocketAddr) -> Io<Host> {
        let stream = TcpStream::connect(addr)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut host = Host { stream, enc: Encoding::default(), cid: 0 };
        host.send(&Pdu::IcReq { pfv: 0, hpda: 0, digests: Digests::default(), maxr2t: 0 })?;
        match host.recv()? {
            Pdu::IcResp { .. } => Ok(host),
            _ => Err(protocol("no ICResp")),
        }
    }

    fn send(&mut self, pdu: &Pdu) -> Io<()> {
        self.stream.write_all(&self.enc.encode(pdu))
    }

    fn recv(&mut self) -> Io<Pdu> {
        match read_pdu(&mut self.stream, Digests::default(), 1 << 24) {
            Ok(pdu) => Ok(pdu),
            Err(ReadError::Closed(e)) => Err(e),
            Err(ReadError::Fatal(e)) => Err(protocol(e.reason)),
        }
    }

    /// Sends a command without waiting: `out` in the capsule or announced for R2T.
    fn submit(&mut self, mut s: [u8; 64], out: &[u8], in_capsule: bool, in_bytes: usize) -> Io<u16> {
        self.cid = self.cid.wrapping_add(1);
        s[2..4].copy_from_slice(&self.cid.to_le_bytes());
        let (sgl, len, data) = match (out.is_empty(), in_capsule) {
            (false, true) => (0x01, out.len(), out.to_vec()),
            (false, false) => (0x5A, out.len(), Vec::new()),
            (true, _) => (0x5A, in_bytes, Vec::new()),
        };
        s[32..36].copy_from_slice(&(len as u32).to_le_bytes());
        s[39] = sgl;
        self.send(&Pdu::CapsuleCmd { sqe: s, data, data_ok: true })?;
        Ok(self.cid)
    }

    fn command(&mut self, s: [u8; 64], out: &[u8], in_capsule: bool, in_bytes: usize) -> Io<Done> {
        let cid = self.submit(s, out, in_capsule, in_bytes)?;
        let mut data = Vec::new();
        loop {
            match self.recv()? {
                Pdu::R2T { cccid, ttag, r2to, r2tl } if cccid == cid => {
                    let end = (r2to + r2tl) as usize;
                    for (i, chunk) in out[r2to as usize..end].chunks(128 << 10).enumerate() {
                        let datao = r2to + (i * (128 << 10)) as u32;
                        let last = datao as usize + chunk.len() == end;
                        let pdu = Pdu::H2CData { cccid, ttag, datao, data: chunk.to_vec(), last, data_ok: true };
                        self.send(&pdu)?;
                    }
                }
                Pdu::C2HData { cccid, data: d, .. } if cccid == cid => data.extend_from_slice(&d),
                Pdu::CapsuleResp { cqe } => {
                    let word = u16::from_le_bytes([cqe[14], cqe[15]]);
                    let status = (word >> 9 & 7) << 8 | (word >> 1 & 0xff);
                    let result = u64::from_le_bytes(cqe[..8].try_into().expect("8 bytes"));
                    return Ok(Done { status, result, data });
                }
                _ => return Err(protocol("unexpected PDU")),
            }
        }
    }

    fn connect(&mut self, qid: u16, cntlid: u16, kato_ms: u32, sqsize: u16) -> Io<Done> {
        let mut s = sqe(0x7F, 0, &[(12, kato_ms)]);
        s[4] = 0x01;
        s[42..44].copy_from_slice(&qid.to_le_bytes());
        s[44..46].copy_from_slice(&sqsize.to_le_bytes());
        let mut data = vec![0u8; 1024];
        data[16..18].copy_from_slice(&cntlid.to_le_bytes());
        data[256..256 + NQN.len()].copy_from_slice(NQN.as_bytes());
        let host = b"nqn.2014-08.org.nvmexpress:uuid:soak";
        data[512..512 + host.len()].copy_from_slice(host);
        self.command(s, &data, true, 0)
    }

    /// An enabled controller's admin queue and one I/O queue.
    fn attach(addr: SocketAddr, kato_ms: u32) -> Io<(Host, Host)> {
        let mut admin = Host::open(addr)?;
        let c = admin.connect(0, 0xFFFF, kato_ms, 31)?;
        if c.status != 0 {
            return Err(protocol("admin Connect refused"));
        }
        let cntlid = c.result as u16;
        let mut enable = sqe(0x7F, 0, &[]);
        enable[4] = 0x00;
        enable[44..48].copy_from_slice(&0x14u32.to_le_bytes());
        enable[48..52].copy_from_slice(&(1u32 | 6 << 4).to_le_bytes());
        if admin.command(enable, &[], false, 0)?.status != 0 {
            return Err(protocol("CC.EN refused"));
        }
        let mut io = Host::open(addr)?;
        if io.connect(1, cntlid, 0, 127)?.status != 0 {
            return Err(protocol("I/O Connect refused"));
        }
        Ok((admin, io))
    }
}

/// A block's contents: its tag (host, LBA, generation) repeated.
fn block(tag: u64) -> Vec<u8> {
    tag.to_le_bytes().iter().copied().cycle().take(LBA).collect()
}

/// One well-behaved host: its own controller (with keep-alive) and zones.
struct GoodHost {
    admin: Host,
    io: Host,
    zones: [u64; 4],
    generation: u64,
    id: u64,
}

impl GoodHost {
    fn tag(&self, lba: u64) -> u64 {
        self.id << 56 | self.generation << 32 | lba
    }

    fn ok(&mut self, d: Io<Done>, what: &str) -> Done {
        let d = d.unwrap_or_else(|e| panic!("good host {}: {what}: {e}", self.id));
        assert_eq!(d.status, 0, "good host {}: {what}: status {:#x}", self.id, d.status);
        d
    }

    fn zone_action(&mut self, zone: u64, action: u32) {
        let d = self.io.command(sqe(0x79, 1, &[(10, (zone * ZONE_LBAS) as u32), (13, action)]), &[], false, 0);
        self.ok(d, "zone management");
    }

    fn write(&mut self, opcode: u8, slba: u64, first_lba: u64, blocks: usize, in_capsule: bool) -> Done {
        let data: Vec<u8> = (0..blocks as u64).flat_map(|i| block(self.tag(first_lba + i))).collect();
        let d = self.io.command(sqe(opcode, 1, &lba_cdws(slba, blocks)), &data, in_capsule, 0);
        self.ok(d, "write")
    }

    /// Reads `blocks` from `slba` (in reads of 32 blocks: zn540's MDTS is
    /// 128 KiB) and checks each against the tag of the LBA `tag_lba` gives.
    fn verify(&mut self, slba: u64, blocks: usize, tag_lba: impl Fn(u64) -> u64) {
        for start in (slba..slba + blocks as u64).step_by(32) {
            let n = (slba + blocks as u64 - start).min(32) as usize;
            let d = self.io.command(sqe(0x02, 1, &lba_cdws(start, n)), &[], false, n * LBA);
            let d = self.ok(d, "read");
            for (i, got) in d.data.chunks(LBA).enumerate() {
                let lba = start + i as u64;
                assert_eq!(got, block(self.tag(tag_lba(lba))), "good host {}: LBA {lba} reads back wrong", self.id);
            }
        }
    }

    /// One round on two of its zones; every byte written is read back.
    fn round(&mut self) {
        self.generation += 1;
        let (a, b) = (self.zones[self.generation as usize % 4], self.zones[(self.generation as usize + 1) % 4]);
        let (za, zb) = (a * ZONE_LBAS, b * ZONE_LBAS);
        self.zone_action(a, 0x04);
        self.zone_action(b, 0x04);
        for i in 0..4 {
            self.write(0x01, za + i, za + i, 1, true);
        }
        self.write(0x01, za + 4, za + 4, 32, false);
        self.write(0x01, za + 36, za + 36, 28, false);
        let append = self.write(0x7D, za, za + 64, 16, false);
        assert_eq!(append.result, za + 64, "good host {}: append LBA", self.id);
        self.verify(za, 80, |lba| lba);
        // zone_compaction: 16 blocks of zone a to the start of zone b.
        let pairs: Vec<u8> =
            (0..16u64).flat_map(|i| [(za + 8 + i).to_le_bytes(), (zb + i).to_le_bytes()]).flatten().collect();
        let d = self.io.command(sqe(0x81, 1, &[(10, 16)]), &pairs, false, 0);
        self.ok(d, "zone_compaction");
        self.verify(zb, 16, |lba| lba - zb + za + 8);
        let mapping = self.io.command(sqe(0x86, 1, &[]), &[], false, 24);
        let mapping = self.ok(mapping, "identify_mapping");
        assert!(mapping.data.len() == 24 && mapping.data[..8] != [0; 8], "good host {}: identify_mapping", self.id);
        self.zone_action(a, 0x02);
        let report = self.io.command(sqe(0x7A, 1, &[(10, za as u32), (12, 31)]), &[], false, 128);
        let report = self.ok(report, "report zones");
        assert_eq!(report.data[64 + 1] >> 4, 0xE, "good host {}: zone {a} full after finish", self.id);
        let keep_alive = self.admin.command(sqe(0x18, 0, &[]), &[], false, 0);
        self.ok(keep_alive, "keep alive");
    }
}

fn good_host(addr: SocketAddr, id: u64, until: Instant, rounds: &AtomicU64) {
    let (admin, io) = Host::attach(addr, 5000).unwrap_or_else(|e| panic!("good host {id}: attach: {e}"));
    let first = 1 + 4 * id;
    let mut host = GoodHost { admin, io, zones: [first, first + 1, first + 2, first + 3], generation: 0, id };
    while Instant::now() < until {
        host.round();
        rounds.fetch_add(1, Ordering::Relaxed);
    }
}

/// Idle sockets that never send an ICReq, 40 held at a time.
fn idle_sockets(addr: SocketAddr, stop: &AtomicBool) {
    let mut held = std::collections::VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..10 {
            if let Ok(s) = TcpStream::connect(addr) {
                held.push_back(s);
            }
        }
        while held.len() > 40 {
            held.pop_front();
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Pipelines 128 reads of 128 KiB (and 1 MiB log pages) and never reads.
fn pipeliner(addr: SocketAddr, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let attempt = || -> Io<(Host, Host)> {
            let (mut admin, mut io) = Host::attach(addr, 0)?;
            for _ in 0..127 {
                io.submit(sqe(0x02, 1, &lba_cdws(0, 32)), &[], false, 128 << 10)?;
            }
            let numd = (1u32 << 18) - 1;
            admin.submit(
                sqe(0x02, 0xFFFF_FFFF, &[(10, 0x02 | (numd & 0xffff) << 16), (11, numd >> 16)]),
                &[],
                false,
                1 << 20,
            )?;
            Ok((admin, io))
        };
        let held = attempt();
        std::thread::sleep(Duration::from_secs(3));
        drop(held);
    }
}

/// Garbage: random bytes before and after an ICReq, and oversized PDUs.
fn garbage(addr: SocketAddr, stop: &AtomicBool) {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    while !stop.load(Ordering::Relaxed) {
        let bytes: Vec<u8> = (0..1 + random() % 4096).map(|_| random() as u8).collect();
        if random() % 2 == 0 {
            if let Ok(mut s) = TcpStream::connect(addr) {
                let _ = s.write_all(&bytes);
                drain(&mut s);
            }
        } else if let Ok(mut host) = Host::open(addr) {
            let mut header = bytes.clone();
            header.truncate(8);
            header[0] = [0x04, 0x06, 0x00, 0x05][random() as usize % 4];
            let _ = host.stream.write_all(&header);
            let _ = host.stream.write_all(&bytes);
            drain(&mut host.stream);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn drain(s: &mut TcpStream) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 4096];
    while matches!(s.read(&mut buf), Ok(n) if n > 0) {}
}

/// Writes through R2T, sends half of the data and goes.
fn mid_transfer(addr: SocketAddr, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        if let Ok((_admin, mut io)) = Host::attach(addr, 0) {
            if let Ok(cid) = io.submit(sqe(0x01, 1, &lba_cdws(0, 32)), &[1; 128 << 10], false, 0) {
                if let Ok(Pdu::R2T { ttag, .. }) = io.recv() {
                    let half = Pdu::H2CData {
                        cccid: cid,
                        ttag,
                        datao: 0,
                        data: vec![1; 64 << 10],
                        last: false,
                        data_ok: true,
                    };
                    let _ = io.send(&half);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Admin Connects without keep-alive that then say nothing, 20 held.
fn silent_admins(addr: SocketAddr, stop: &AtomicBool) {
    let mut held = std::collections::VecDeque::new();
    while !stop.load(Ordering::Relaxed) {
        if let Ok(mut host) = Host::open(addr) {
            if host.connect(0, 0xFFFF, 0, 31).is_ok() {
                held.push_back(host);
            }
        }
        while held.len() > 20 {
            held.pop_front();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn status_kib(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status.lines().find(|l| l.starts_with(field)).unwrap_or("");
    line.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0)
}

fn start_server() -> (Child, SocketAddr, Arc<Mutex<String>>) {
    let zones = ZONES.to_string();
    let (total, conn) = (TOTAL_MEMORY.to_string(), CONNECTION_MEMORY.to_string());
    let mut server = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .args(["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--pace", "asap", "--zones", &zones])
        .args(["--zone-size", "1m", "--zone-capacity", "1m", "--conventional-zones", "0"])
        .args(["--max-open", "0", "--max-active", "0", "--max-connections", "64", "--max-controllers", "16"])
        .args(["--connection-memory", &conn, "--total-memory", &total, "--icreq-timeout", "2s"])
        .args(["--connect-timeout", "2s", "--idle-reclaim", "2s"])
        // glibc's default threshold for mmap'd buffers rises after one is freed, and then the freed 128 KiB to
        // 1 MiB buffers stay in the heap: the peak measures the allocator more than the budget (+61 MB instead of
        // +32 MB for this 24 MiB budget). Fixing the threshold at its default (128 KiB) keeps it from rising.
        .env("MALLOC_MMAP_THRESHOLD_", "131072")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = common::announced_address(&mut server);
    // Its log is read as it comes, so the server never blocks on a full pipe.
    let log = Arc::new(Mutex::new(String::new()));
    let (sink, stderr) = (Arc::clone(&log), server.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let mut log = sink.lock().unwrap();
            if log.len() < 1 << 20 {
                log.push_str(&line);
                log.push('\n');
            }
        }
    });
    (server, addr, log)
}

/// Starts the hostile clients (none with `ZONELAB_SOAK_HOSTILE=0`, to
/// compare the server's footprint); they run until `stop`.
fn start_hostile(addr: SocketAddr, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    let with_hostile = std::env::var("ZONELAB_SOAK_HOSTILE").map_or(true, |v| v != "0");
    let pipeliners: [fn(SocketAddr, &AtomicBool); 6] = [pipeliner; 6];
    let others: [fn(SocketAddr, &AtomicBool); 4] = [idle_sockets, garbage, mid_transfer, silent_admins];
    let hostile = pipeliners.into_iter().chain(others).filter(|_| with_hostile);
    hostile
        .map(|f| {
            let stop = Arc::clone(stop);
            std::thread::spawn(move || f(addr, &stop))
        })
        .collect()
}

/// Samples the server's thread count until `stop`; the most seen.
fn sample_threads(pid: u32, stop: &Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    let stop = Arc::clone(stop);
    std::thread::spawn(move || {
        let mut most = 0;
        while !stop.load(Ordering::Relaxed) {
            most = most.max(status_kib(pid, "Threads:"));
            std::thread::sleep(Duration::from_millis(100));
        }
        most
    })
}

/// Runs the good hosts for `seconds`; their results and the rounds done.
fn run_good_hosts(addr: SocketAddr, seconds: u64) -> (Vec<std::thread::Result<()>>, u64) {
    let until = Instant::now() + Duration::from_secs(seconds);
    let rounds = Arc::new(AtomicU64::new(0));
    let good: Vec<_> = (0..GOOD_HOSTS)
        .map(|id| {
            let rounds = Arc::clone(&rounds);
            std::thread::spawn(move || good_host(addr, id, until, &rounds))
        })
        .collect();
    let results = good.into_iter().map(|h| h.join()).collect();
    (results, rounds.load(Ordering::Relaxed))
}

#[test]
fn well_behaved_hosts_keep_their_data_under_hostile_clients_within_the_memory_budget() {
    let seconds: u64 = std::env::var("ZONELAB_SOAK_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(60);
    let (mut server, addr, log) = start_server();
    let pid = server.id();
    std::thread::sleep(Duration::from_millis(300));
    let baseline_kib = status_kib(pid, "VmRSS:");
    // Zone 0 holds data for the hostile readers.
    let (_admin, mut io) = Host::attach(addr, 0).unwrap();
    assert_eq!(io.command(sqe(0x01, 1, &lba_cdws(0, 32)), &[0xEE; 128 << 10], false, 0).unwrap().status, 0);
    drop((_admin, io));
    let stop = Arc::new(AtomicBool::new(false));
    let hostile = start_hostile(addr, &stop);
    std::thread::sleep(Duration::from_millis(500));
    let sampler = sample_threads(pid, &stop);
    let (good_results, rounds) = run_good_hosts(addr, seconds);
    stop.store(true, Ordering::Relaxed);
    let threads_max = sampler.join().unwrap_or(0);
    hostile.into_iter().for_each(|h| drop(h.join()));
    let peak_kib = status_kib(pid, "VmHWM:");
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let exit = server.wait().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let log = log.lock().unwrap().clone();
    let budget_line = log.lines().find(|l| l.contains("memory budget: peak")).unwrap_or("");
    let grew = peak_kib.saturating_sub(baseline_kib);
    println!(
        "soak {seconds} s: {rounds} good rounds; server VmRSS before clients {baseline_kib} KiB, VmHWM {peak_kib} KiB \
         (+{grew} KiB; budget {} KiB), at most {threads_max} threads; {budget_line}",
        TOTAL_MEMORY >> 10,
    );
    for (id, r) in good_results.into_iter().enumerate() {
        assert!(r.is_ok(), "good host {id} failed (see its panic above)");
    }
    assert_eq!(exit.code(), Some(0), "the server survived and stopped cleanly");
    assert!(rounds >= GOOD_HOSTS, "every good host got work done");
    // Two threads per connection: the cap (64) and those being closed (64), the listener, reaper, signals.
    assert!(threads_max <= 2 * (64 + 64) + 8, "threads bounded by the connection cap");
    // The budget bounds what clients make the server hold; the rest is the
    // model's data (at most the device's 13 MiB), thread stacks and the allocator.
    let slack_kib = 24 << 10;
    assert!(peak_kib <= baseline_kib + (TOTAL_MEMORY >> 10) + slack_kib, "server peak {peak_kib} KiB");
}
