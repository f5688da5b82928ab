//! One NVMe/TCP connection (one queue) as a state machine: PDUs in, PDUs
//! out with the wall time they are due. Initialization (ICReq), capsules
//! with in-capsule or R2T-fetched data, C2HData and responses, and the
//! fatal errors that end the connection. No sockets here: the server feeds
//! it from a TCP stream, the tests and the fuzzer from bytes.
//!
//! What a host makes the connection hold is charged to its memory share
//! before it is allocated (docs/nvme-tcp.md, "Limits"): each PDU's buffer
//! once its header gives its length, each answer before its command runs,
//! each R2T's data before the R2T is sent. A charge that does not fit waits
//! (the socket is not read meanwhile: backpressure), except R2Ts, which are
//! deferred while the host's other traffic goes on.

use crate::nvme_tcp::admin::{self, FCTYPE_CONNECT, FCTYPE_PROPERTY_GET, FCTYPE_PROPERTY_SET, OPC_GET_LOG_PAGE};
use crate::nvme_tcp::command::{sc, Direction, Reply, Sqe, OPC_FABRICS, SGL_IN_CAPSULE, SGL_TRANSPORT};
use crate::nvme_tcp::connection::{Connection, Phase};
use crate::nvme_tcp::io::{self, OPC_FLUSH};
use crate::nvme_tcp::limits::{Charge, Use, PDU_BYTES_MAX, REPLY_BYTES_MAX, STEP_RESERVE};
use crate::nvme_tcp::pdu::{
    read_body, read_header, read_sqe, term_req, DataLimits, Digests, Encoding, Fes, Pdu, PduError, ReadError,
    H2C_DATA_BYTES_MAX, IC_BYTES, IN_CAPSULE_BYTES_MAX, SQE_BYTES,
};
use crate::nvme_tcp::target::{lock, Controller, NamespaceBackend, Target, QUEUE_ENTRIES_MAX};
use crate::recording::{Arrival, QueueId};
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use zonelab_sim::Nanos;

/// What a response without data may take (a CapsuleResp and its digest),
/// charged before it is encoded.
const RESPONSE_BYTES: usize = 64;

/// Bytes for the wire, and when (server wall time; 0: at once).
#[derive(Debug)]
pub struct Output {
    /// When to send (server wall time; 0: at once).
    pub due_ns: Nanos,
    /// Encoded PDUs.
    pub bytes: Vec<u8>,
    /// The response that ends a command: the command stops counting against
    /// the queue's entries (SQSIZE) when it is sent.
    pub completes: bool,
    /// The memory `bytes` hold, given back when the output is dropped.
    pub charge: Option<Charge>,
    /// A termination request: nothing may follow it on the wire.
    pub closes: bool,
    /// `serve --record`: the SEQ of the recorded command this response ends (0: none).
    pub seq: u64,
}

/// The queue a Connect bound this connection to.
struct Queue {
    controller: Arc<Controller>,
    qid: u16,
    /// Entries minus one, as Connect gives it.
    sqsize: u16,
    sqhd: u16,
}

/// A host-to-controller transfer asked for with an R2T.
struct PendingWrite {
    sqe: [u8; SQE_BYTES],
    expected_bytes: usize,
    data: Vec<u8>,
    data_ok: bool,
    /// The memory `data` will take, charged before the R2T was sent.
    _charge: Charge,
}

/// Why handling a PDU stopped the connection.
enum Stop {
    /// A protocol violation: answer a C2HTermReq and close.
    Fatal(PduError),
    /// The server closes the connection (while a charge waited).
    Closing,
}

impl From<PduError> for Stop {
    fn from(e: PduError) -> Self {
        Stop::Fatal(e)
    }
}

/// One connection's protocol state: ICReq negotiation, the queue Connect
/// bound it to, and the write transfers waiting for H2CData.
pub struct Session {
    target: Arc<Target>,
    conn: Arc<Connection>,
    /// The address the host reached us at (the discovery log's entry).
    local: SocketAddr,
    /// Set by the ICReq.
    encoding: Option<Encoding>,
    queue: Option<Queue>,
    pending: BTreeMap<u16, PendingWrite>,
    /// Commands whose R2T waits for memory, in arrival order (at most the
    /// queue's entries: each is an outstanding command).
    deferred: VecDeque<[u8; SQE_BYTES]>,
    next_ttag: u16,
    /// MDTS in bytes: the largest transfer a command may ask for.
    transfer_bytes_max: usize,
    /// The charge of the PDU being handled (its buffer and its answer).
    step: Option<Charge>,
    /// `serve --record`: SEQ of the command just run, for its response.
    recorded_seq: u64,
}

impl Session {
    /// A connection to `target` that the host reached at `local`, with no
    /// socket and no memory limit (driven from bytes: tests, fuzzing).
    pub fn new(target: Arc<Target>, local: SocketAddr) -> Self {
        let conn = target.detached_connection();
        Self::with_connection(target, conn, local)
    }

    /// The session of the server's connection `conn`.
    pub fn with_connection(target: Arc<Target>, conn: Arc<Connection>, local: SocketAddr) -> Self {
        let transfer_bytes_max = admin::mdts_bytes(&target);
        Session {
            target,
            conn,
            local,
            encoding: None,
            queue: None,
            pending: BTreeMap::new(),
            deferred: VecDeque::new(),
            next_ttag: 0,
            transfer_bytes_max,
            step: None,
            recorded_seq: 0,
        }
    }

    /// The controller and queue id, once connected.
    pub fn binding(&self) -> Option<(Arc<Controller>, u16)> {
        self.queue.as_ref().map(|q| (Arc::clone(&q.controller), q.qid))
    }

    /// Whether commands wait for memory to get their R2T.
    pub fn has_deferred(&self) -> bool {
        !self.deferred.is_empty()
    }

    fn digests(&self) -> Digests {
        self.encoding.map(|e| e.digests).unwrap_or_default()
    }

    /// What the next PDU may carry: an ICReq only at first, then the
    /// in-capsule data size IOCCSZ announces and MAXH2CDATA.
    fn limits(&self) -> DataLimits {
        match self.encoding {
            None => DataLimits { plen_max: IC_BYTES, capsule_data_max: 0, h2c_data_max: 0 },
            Some(_) => DataLimits {
                plen_max: PDU_BYTES_MAX,
                capsule_data_max: IN_CAPSULE_BYTES_MAX,
                h2c_data_max: H2C_DATA_BYTES_MAX,
            },
        }
    }

    /// Reads and handles one PDU. `Ok(false)`: the host ended the connection
    /// (H2CTermReq). A fatal error queues the C2HTermReq before returning it.
    pub fn step<R: Read>(&mut self, r: &mut R, out: &mut Vec<Output>) -> Result<bool, ReadError> {
        let mut header = read_header(r, self.digests(), &self.limits()).map_err(|e| self.fatal_read(e, out))?;
        self.touch();
        // The PDU's buffer and its answer are charged at once, before the
        // buffer is allocated; until they fit, the rest of the PDU stays in
        // the socket. A command's answer is split off this charge: nothing
        // waits for memory while holding some (no deadlock between readers).
        // A capsule's SQE says whether its answer carries data.
        let sqe = read_sqe(r, &mut header)?;
        let returns_data = sqe.is_some_and(|s| Direction::of(&Sqe(&s)) == Direction::ControllerToHost);
        let answer = if returns_data { REPLY_BYTES_MAX } else { RESPONSE_BYTES };
        let bytes = header.plen() + answer;
        let Some(step) = self.conn.memory.charge(Use::Pdu, bytes, &|| self.waiting()) else {
            return Err(closing());
        };
        self.step = Some(step);
        let pdu = read_body(r, header).map_err(|e| self.fatal_read(e, out));
        self.touch();
        let result = match pdu {
            Ok(pdu) => self.on_pdu(pdu, out),
            Err(e) => {
                self.step = None;
                return Err(e);
            }
        };
        self.step = None;
        self.grant_deferred(out);
        // Event completions that found no room in the writer's queue.
        for output in self.conn.take_pending() {
            self.emit(output, out);
        }
        match result {
            Ok(open) => Ok(open),
            Err(Stop::Fatal(e)) => {
                self.send_term_req(&e, out);
                Err(ReadError::Fatal(e))
            }
            Err(Stop::Closing) => Err(closing()),
        }
    }

    /// The host sent something: its connection and controller are alive.
    fn touch(&self) {
        let now = self.target.wall_ns();
        self.conn.touch(now);
        if let Some(queue) = &self.queue {
            queue.controller.touch(now);
        }
    }

    /// While a charge waits, the host's bytes wait in the socket unread: that
    /// is the server's doing, not the host's silence, so its keep-alive and
    /// progress timers do not run. True once the connection is closing.
    fn waiting(&self) -> bool {
        self.touch();
        self.conn.closing()
    }

    fn fatal_read(&self, e: ReadError, out: &mut Vec<Output>) -> ReadError {
        if let ReadError::Fatal(fatal) = &e {
            self.send_term_req(fatal, out);
        }
        e
    }

    fn send_term_req(&self, e: &PduError, out: &mut Vec<Output>) {
        let encoding = self.encoding.unwrap_or_default();
        let bytes = encoding.encode(&term_req(e));
        out.push(Output { due_ns: 0, bytes, completes: false, charge: None, closes: true, seq: 0 });
    }

    /// Queues `output`; without a writer (no socket), a response leaves the
    /// outstanding count at once.
    fn emit(&self, output: Output, out: &mut Vec<Output>) {
        if output.completes && !self.conn.has_writer() {
            self.conn.outstanding.fetch_sub(1, Ordering::Relaxed);
            self.conn.note_sent(output.seq);
        }
        out.push(output);
    }

    /// Handles one PDU, queueing what to send in `out`. `Ok(false)`: the host
    /// ended the connection.
    fn on_pdu(&mut self, pdu: Pdu, out: &mut Vec<Output>) -> Result<bool, Stop> {
        let header = || Encoding::default().encode(&pdu);
        match pdu {
            Pdu::IcReq { pfv, hpda, digests, .. } => {
                if self.encoding.is_some() {
                    return Err(PduError::new(Fes::SequenceError, 0, &header(), "a second ICReq").into());
                }
                if pfv != 0 {
                    return Err(PduError::new(Fes::UnsupportedParameter, 8, &header(), "PDU format version").into());
                }
                if hpda > 31 {
                    return Err(PduError::new(Fes::UnsupportedParameter, 10, &header(), "HPDA above 31").into());
                }
                self.encoding = Some(Encoding { digests, pda: hpda });
                self.conn.set_encoding(Encoding { digests, pda: hpda });
                self.conn.set_phase(Phase::AwaitConnect, self.target.wall_ns());
                let maxh2cdata = H2C_DATA_BYTES_MAX as u32;
                let resp = Pdu::IcResp { pfv: 0, cpda: 0, digests, maxh2cdata };
                let bytes = Encoding::default().encode(&resp);
                out.push(Output { due_ns: 0, bytes, completes: false, charge: None, closes: false, seq: 0 });
                Ok(true)
            }
            _ if self.encoding.is_none() => {
                Err(PduError::new(Fes::SequenceError, 0, &header(), "PDU before ICReq").into())
            }
            Pdu::H2CTermReq { fes, fei, .. } => {
                self.target
                    .log(format_args!("the host ended the connection (fatal error status {fes}, information {fei})"));
                Ok(false)
            }
            Pdu::CapsuleCmd { sqe, data, data_ok } => {
                self.on_capsule(&sqe, data, data_ok, out)?;
                Ok(true)
            }
            Pdu::H2CData { cccid, ttag, datao, ref data, last, data_ok } => {
                let hdr = header();
                self.on_data(cccid, ttag, datao, data, last, data_ok, &hdr, out)?;
                Ok(true)
            }
            _ => Err(PduError::new(Fes::InvalidHeaderField, 0, &header(), "a PDU type hosts do not send").into()),
        }
    }
}

fn closing() -> ReadError {
    ReadError::Closed(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "closed by the server"))
}

/// Commands: the queue's entries, data transfers, execution and answers.
impl Session {
    /// A command arrives: one more outstanding. A host may not have more
    /// commands outstanding than the queue has entries (SQSIZE + 1; NVMe over
    /// Fabrics 1.1, §2.4.1 with SQ flow control disabled): a fatal error, as
    /// Linux's target treats it (it closes the connection).
    fn admit_command(&self, raw: &[u8; SQE_BYTES]) -> Result<(), Stop> {
        let entries = self.queue.as_ref().map_or(usize::from(QUEUE_ENTRIES_MAX), |q| usize::from(q.sqsize) + 1);
        let outstanding = self.conn.outstanding.fetch_add(1, Ordering::Relaxed) + 1;
        if outstanding > entries {
            let header = Encoding::default().encode(&Pdu::CapsuleCmd { sqe: *raw, data: Vec::new(), data_ok: true });
            let reason = "more commands outstanding than the queue has entries (SQSIZE)";
            return Err(PduError::new(Fes::SequenceError, 0, &header, reason).into());
        }
        Ok(())
    }

    fn on_capsule(
        &mut self,
        raw: &[u8; SQE_BYTES],
        data: Vec<u8>,
        data_ok: bool,
        out: &mut Vec<Output>,
    ) -> Result<(), Stop> {
        self.admit_command(raw)?;
        let sqe = Sqe(raw);
        if !data_ok {
            return self.respond(raw, Reply::status(sc::TRANSIENT_TRANSPORT_ERROR), None, out);
        }
        // Fabrics carry SGLs only (PSDT 01b or 10b).
        if sqe.psdt() == 0 || sqe.psdt() == 3 {
            return self.respond(raw, Reply::status(sc::INVALID_FIELD), None, out);
        }
        let direction = Direction::of(&sqe);
        let length = sqe.sgl_length() as usize;
        let reply = match (sqe.sgl_id(), direction) {
            (_, Direction::Bidirectional) => Reply::status(sc::INVALID_OPCODE),
            // Above MDTS: Invalid Field in Command (NVMe Base 2.0, §5.15.2.1).
            (_, Direction::HostToController | Direction::ControllerToHost) if length > self.transfer_bytes_max => {
                Reply::status(sc::INVALID_FIELD)
            }
            (SGL_IN_CAPSULE, Direction::HostToController) if sqe.sgl_address() != 0 => Reply::status(0x016), // SGL Offset Invalid
            (SGL_IN_CAPSULE, Direction::HostToController) if length != data.len() => {
                Reply::status(sc::SGL_LENGTH_INVALID)
            }
            (SGL_IN_CAPSULE, Direction::HostToController) => return self.run(raw, &data, out),
            (_, _) if !data.is_empty() => Reply::status(sc::SGL_LENGTH_INVALID),
            // No R2T before Connect: an unconnected host gets no buffers.
            (SGL_TRANSPORT, Direction::HostToController) if length > 0 && self.queue.is_none() => {
                Reply::status(sc::COMMAND_SEQUENCE_ERROR)
            }
            (SGL_TRANSPORT, Direction::HostToController) if length > 0 => {
                // Asked for once memory allows (see grant_deferred), in order.
                self.deferred.push_back(*raw);
                return Ok(());
            }
            (SGL_TRANSPORT, _) | (_, Direction::None) => return self.run(raw, &[], out),
            _ => Reply::status(sc::SGL_TYPE_INVALID),
        };
        self.respond(raw, reply, None, out)
    }

    /// Sends the R2Ts that memory allows, oldest command first: one R2T
    /// covering all of a command's data, charged before it is sent. Grants
    /// keep [`STEP_RESERVE`] free so the PDUs that bring the data can be read.
    pub fn grant_deferred(&mut self, out: &mut Vec<Output>) {
        while let Some(raw) = self.deferred.front() {
            let length = Sqe(raw).sgl_length() as usize;
            let Some(charge) = self.conn.memory.try_charge(Use::R2t, length, STEP_RESERVE) else { break };
            let Some(raw) = self.deferred.pop_front() else { break };
            // Fewer pending transfers than tags (at most the queue's entries).
            let Some(ttag) =
                (0..=u16::MAX).map(|i| self.next_ttag.wrapping_add(i)).find(|t| !self.pending.contains_key(t))
            else {
                break;
            };
            self.next_ttag = ttag.wrapping_add(1);
            let data = Vec::with_capacity(length);
            let pending = PendingWrite { sqe: raw, expected_bytes: length, data, data_ok: true, _charge: charge };
            self.pending.insert(ttag, pending);
            let r2t = Pdu::R2T { cccid: Sqe(&raw).cid(), ttag, r2to: 0, r2tl: length as u32 };
            let bytes = self.encoding.unwrap_or_default().encode(&r2t);
            out.push(Output { due_ns: 0, bytes, completes: false, charge: None, closes: false, seq: 0 });
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn on_data(
        &mut self,
        cccid: u16,
        ttag: u16,
        datao: u32,
        data: &[u8],
        last: bool,
        data_ok: bool,
        header: &[u8],
        out: &mut Vec<Output>,
    ) -> Result<(), Stop> {
        let Some(pending) = self.pending.get_mut(&ttag) else {
            return Err(PduError::new(Fes::InvalidHeaderField, 10, header, "H2CData for no R2T").into());
        };
        if Sqe(&pending.sqe).cid() != cccid {
            return Err(PduError::new(Fes::InvalidHeaderField, 8, header, "H2CData for another command").into());
        }
        if datao as usize != pending.data.len() {
            return Err(PduError::new(Fes::DataOutOfRange, 12, header, "H2CData out of order").into());
        }
        if pending.data.len() + data.len() > pending.expected_bytes {
            return Err(PduError::new(Fes::DataOutOfRange, 16, header, "H2CData beyond the R2T").into());
        }
        pending.data.extend_from_slice(data);
        pending.data_ok &= data_ok;
        let complete = pending.data.len() == pending.expected_bytes;
        if last != complete {
            let reason = "last-PDU flag does not end the transfer";
            return Err(PduError::new(Fes::SequenceError, 1, header, reason).into());
        }
        if !complete {
            return Ok(());
        }
        let Some(pending) = self.pending.remove(&ttag) else { return Ok(()) };
        if !pending.data_ok {
            return self.respond(&pending.sqe, Reply::status(sc::TRANSIENT_TRANSPORT_ERROR), None, out);
        }
        self.run(&pending.sqe, &pending.data, out)
    }

    /// Runs a command with its answer's memory charged first (waiting for
    /// it: the socket is not read meanwhile), then answers it.
    fn run(&mut self, raw: &[u8; SQE_BYTES], data: &[u8], out: &mut Vec<Output>) -> Result<(), Stop> {
        let bound =
            if Direction::of(&Sqe(raw)) == Direction::ControllerToHost { REPLY_BYTES_MAX } else { RESPONSE_BYTES };
        let charge = self.charge_reply(bound)?;
        match self.execute(raw, data) {
            Some(reply) => self.respond(raw, reply, Some(charge), out),
            // Held (an event request): answered when an event comes.
            None => Ok(()),
        }
    }

    /// An answer's charge, from the step's (see [`Session::step`]).
    fn charge_reply(&mut self, bytes: usize) -> Result<Charge, Stop> {
        match &mut self.step {
            Some(step) if step.bytes() >= bytes => Ok(step.split(Use::Reply, bytes)),
            // Not reached: a step charges for one answer of this size.
            _ => self.conn.memory.charge(Use::Reply, bytes, &|| self.waiting()).ok_or(Stop::Closing),
        }
    }

    /// Sends the data (if any) and the response, holding `charge` (or a new
    /// one for a response without data) until they are sent.
    fn respond(
        &mut self,
        raw: &[u8; SQE_BYTES],
        reply: Reply,
        charge: Option<Charge>,
        out: &mut Vec<Output>,
    ) -> Result<(), Stop> {
        let mut charge = match charge {
            Some(charge) => charge,
            None => self.charge_reply(RESPONSE_BYTES)?,
        };
        let sqe = Sqe(raw);
        let (sqhd, sqid) = match &mut self.queue {
            Some(q) => {
                q.sqhd = (q.sqhd + 1) % (q.sqsize + 1);
                (q.sqhd, q.qid)
            }
            None => (0, 0),
        };
        let cqe = reply.cqe(sqhd, sqid, sqe.cid());
        let host_bytes = if Direction::of(&sqe) == Direction::ControllerToHost { sqe.sgl_length() as usize } else { 0 };
        let (status, due_ns, mut data) = (reply.status, reply.due_ns, reply.data);
        data.truncate(host_bytes);
        let encoding = self.encoding.unwrap_or_default();
        let response = encoding.encode(&Pdu::CapsuleResp { cqe });
        let mut bytes = Vec::new();
        if status == sc::SUCCESS && !data.is_empty() {
            let c2h = Pdu::C2HData { cccid: sqe.cid(), datao: 0, data, last: true, success: false };
            bytes = encoding.encode(&c2h);
        }
        // Exact capacity: a queued answer holds what it is charged for (a
        // growing Vec would double its buffer).
        bytes.reserve_exact(response.len());
        bytes.extend_from_slice(&response);
        charge.shrink(bytes.capacity());
        let seq = std::mem::take(&mut self.recorded_seq);
        self.emit(Output { due_ns, bytes, completes: true, charge: Some(charge), closes: false, seq }, out);
        Ok(())
    }
}

/// Execution: fabrics, admin and I/O commands.
impl Session {
    /// Runs a command; `None` for a held Asynchronous Event Request.
    fn execute(&mut self, raw: &[u8; SQE_BYTES], data: &[u8]) -> Option<Reply> {
        let sqe = Sqe(raw);
        if sqe.opcode() == OPC_FABRICS {
            return Some(self.fabrics(&sqe, data));
        }
        let Some(queue) = &self.queue else { return Some(Reply::status(sc::COMMAND_SEQUENCE_ERROR)) };
        let (controller, qid) = (Arc::clone(&queue.controller), queue.qid);
        if !controller.enabled() {
            return Some(Reply::status(sc::COMMAND_SEQUENCE_ERROR));
        }
        if qid == 0 {
            if controller.discovery && sqe.opcode() == OPC_GET_LOG_PAGE && sqe.cdw(10) & 0xff == 0x70 {
                return Some(admin::discovery_log(&self.target, &self.local, &sqe));
            }
            return admin::admin_command(&self.target, &controller, &sqe, data);
        }
        let wall_ns = self.target.wall_ns();
        let target = Arc::clone(&self.target);
        let arrival = self.arrival(&controller, qid, wall_ns);
        let mut recorded = 0;
        let mut run = |ns: &mut NamespaceBackend| match arrival {
            Some(arrival) => {
                ns.set_arrival(arrival);
                let reply = io::io_command(ns, wall_ns, &sqe, data);
                recorded = recorded.max(ns.take_recorded().unwrap_or(0));
                reply
            }
            None => io::io_command(ns, wall_ns, &sqe, data),
        };
        let reply = if sqe.opcode() == OPC_FLUSH && sqe.nsid() == 0xFFFF_FFFF {
            // Every namespace still online (an offline one holds nothing to flush).
            let mut reply = Reply::ok();
            for nsid in target.nsids(true).into_iter().filter(|&n| !target.namespace_offline(n)) {
                let reply_ns = target.run_io(nsid, qid, &sqe, &mut run);
                if reply_ns.status != sc::SUCCESS || reply.status == sc::SUCCESS {
                    reply = Reply { due_ns: reply.due_ns.max(reply_ns.due_ns), ..reply_ns };
                }
            }
            reply
        } else {
            target.run_io(sqe.nsid(), qid, &sqe, &mut run)
        };
        self.recorded_seq = recorded;
        Some(reply)
    }

    /// `serve --record`: how an I/O command arrived (its queue, time and the
    /// last completion sent before it); `None` when not recording.
    fn arrival(&self, controller: &Controller, qid: u16, wall_ns: Nanos) -> Option<Arrival> {
        if !self.target.recording() {
            return None;
        }
        // The admission counted this command already.
        let outstanding = self.conn.outstanding.load(Ordering::Relaxed).saturating_sub(1);
        Some(Arrival {
            queue: QueueId { controller: controller.cntlid, qid },
            at_ns: wall_ns,
            dep: self.conn.last_sent(),
            outstanding: u32::try_from(outstanding).unwrap_or(u32::MAX),
        })
    }

    fn fabrics(&mut self, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
        match (sqe.fctype(), &self.queue) {
            (FCTYPE_CONNECT, None) => match admin::connect(&self.target, sqe, data) {
                Ok(connected) => {
                    let cntlid = connected.controller.cntlid;
                    self.bind(connected);
                    Reply::result(u64::from(cntlid))
                }
                Err(reply) => reply,
            },
            (FCTYPE_CONNECT, Some(_)) => Reply::status(sc::COMMAND_SEQUENCE_ERROR),
            (FCTYPE_PROPERTY_GET, Some(q)) if q.qid == 0 => admin::property_get(&q.controller, sqe),
            (FCTYPE_PROPERTY_SET, Some(q)) if q.qid == 0 => {
                let (reply, dropped) = admin::property_set(&self.target, &q.controller, sqe);
                // A reset drops the held event requests: no answer will come.
                self.conn.outstanding.fetch_sub(dropped, Ordering::Relaxed);
                reply
            }
            (FCTYPE_PROPERTY_GET | FCTYPE_PROPERTY_SET, None) => Reply::status(sc::COMMAND_SEQUENCE_ERROR),
            _ => Reply::status(sc::INVALID_FIELD),
        }
    }

    /// Binds the connection to the queue Connect created, registered with
    /// its controller so that the controller's end closes it.
    fn bind(&mut self, connected: admin::Connected) {
        let controller = connected.controller;
        {
            let mut state = lock(&controller.state);
            state.queues.insert(self.conn.id);
            if connected.qid == 0 {
                state.admin_connection = Some(Arc::downgrade(&self.conn));
            }
        }
        // Removed meanwhile (keep-alive expiry, reclaim): nothing will close us.
        if !self.target.controller(controller.cntlid).is_some_and(|c| Arc::ptr_eq(&c, &controller)) {
            self.conn.close();
        }
        let now = self.target.wall_ns();
        controller.touch(now);
        self.conn.set_phase(Phase::Connected, now);
        self.queue = Some(Queue { controller, qid: connected.qid, sqsize: connected.sqsize, sqhd: 0 });
    }
}
