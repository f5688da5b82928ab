//! One NVMe/TCP connection (one queue) as a state machine: PDUs in, PDUs
//! out with the wall time they are due. Initialization (ICReq), capsules
//! with in-capsule or R2T-fetched data, C2HData and responses, and the
//! fatal errors that end the connection. No sockets here: the server feeds
//! it from a TCP stream, the tests and the fuzzer from bytes.

use crate::nvme_tcp::admin::{self, FCTYPE_CONNECT, FCTYPE_PROPERTY_GET, FCTYPE_PROPERTY_SET, OPC_GET_LOG_PAGE};
use crate::nvme_tcp::command::{sc, Direction, Reply, Sqe, OPC_FABRICS, SGL_IN_CAPSULE, SGL_TRANSPORT};
use crate::nvme_tcp::io::{self, OPC_FLUSH};
use crate::nvme_tcp::pdu::{
    read_pdu, term_req, Digests, Encoding, Fes, Pdu, PduError, ReadError, H2C_DATA_BYTES_MAX, IC_BYTES,
    IN_CAPSULE_BYTES_MAX, SQE_BYTES,
};
use crate::nvme_tcp::target::{lock, Controller, Target, QUEUE_ENTRIES_MAX};
use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::Arc;
use zonelab_sim::Nanos;

/// Bytes for the wire, and when (server wall time; 0: at once).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    /// When to send (server wall time; 0: at once).
    pub due_ns: Nanos,
    /// Encoded PDUs.
    pub bytes: Vec<u8>,
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
}

/// One connection's protocol state: ICReq negotiation, the queue Connect
/// bound it to, and the write transfers waiting for H2CData.
pub struct Session {
    target: Arc<Target>,
    /// The address the host reached us at (the discovery log's entry).
    local: SocketAddr,
    /// Set by the ICReq.
    encoding: Option<Encoding>,
    queue: Option<Queue>,
    pending: BTreeMap<u16, PendingWrite>,
    next_ttag: u16,
    /// The largest transfer a command may ask for (the namespaces' MDTS).
    transfer_bytes_max: usize,
}

impl Session {
    /// A connection to `target` that the host reached at `local`.
    pub fn new(target: Arc<Target>, local: SocketAddr) -> Self {
        let transfer_bytes_max = target.namespaces.iter().map(|ns| lock(ns).geometry().io_bytes_max).max();
        let transfer_bytes_max = transfer_bytes_max.expect("a namespace") as usize;
        Session {
            target,
            local,
            encoding: None,
            queue: None,
            pending: BTreeMap::new(),
            next_ttag: 0,
            transfer_bytes_max,
        }
    }

    /// The controller and queue id, once connected.
    pub fn binding(&self) -> Option<(Arc<Controller>, u16)> {
        self.queue.as_ref().map(|q| (Arc::clone(&q.controller), q.qid))
    }

    fn digests(&self) -> Digests {
        self.encoding.map(|e| e.digests).unwrap_or_default()
    }

    /// The largest PDU the next read may take.
    fn plen_max(&self) -> usize {
        match self.encoding {
            None => IC_BYTES,
            Some(_) => H2C_DATA_BYTES_MAX.max(IN_CAPSULE_BYTES_MAX) + 256,
        }
    }

    /// Reads and handles one PDU. `Ok(false)`: the host ended the connection
    /// (H2CTermReq). A fatal error queues the C2HTermReq before returning it.
    pub fn step<R: Read>(&mut self, r: &mut R, out: &mut Vec<Output>) -> Result<bool, ReadError> {
        let pdu = read_pdu(r, self.digests(), self.plen_max()).map_err(|e| self.fatal_read(e, out))?;
        match self.on_pdu(pdu, out) {
            Ok(open) => Ok(open),
            Err(e) => {
                self.send_term_req(&e, out);
                Err(ReadError::Fatal(e))
            }
        }
    }

    fn fatal_read(&self, e: ReadError, out: &mut Vec<Output>) -> ReadError {
        if let ReadError::Fatal(fatal) = &e {
            self.send_term_req(fatal, out);
        }
        e
    }

    fn send_term_req(&self, e: &PduError, out: &mut Vec<Output>) {
        let encoding = self.encoding.unwrap_or_default();
        out.push(Output { due_ns: 0, bytes: encoding.encode(&term_req(e)) });
    }

    fn send(&self, due_ns: Nanos, pdus: &[Pdu], out: &mut Vec<Output>) {
        let encoding = self.encoding.expect("connection initialized");
        let bytes = pdus.iter().flat_map(|p| encoding.encode(p)).collect();
        out.push(Output { due_ns, bytes });
    }

    /// Handles one PDU, queueing what to send in `out`. `Ok(false)`: the host
    /// ended the connection; `Err`: a fatal transport error to report and close on.
    pub fn on_pdu(&mut self, pdu: Pdu, out: &mut Vec<Output>) -> Result<bool, PduError> {
        let header = || Encoding::default().encode(&pdu);
        match pdu {
            Pdu::IcReq { pfv, hpda, digests, .. } => {
                if self.encoding.is_some() {
                    return Err(PduError::new(Fes::SequenceError, 0, &header(), "a second ICReq"));
                }
                if pfv != 0 {
                    return Err(PduError::new(Fes::UnsupportedParameter, 8, &header(), "PDU format version"));
                }
                if hpda > 31 {
                    return Err(PduError::new(Fes::UnsupportedParameter, 10, &header(), "HPDA above 31"));
                }
                self.encoding = Some(Encoding { digests, pda: hpda });
                let maxh2cdata = H2C_DATA_BYTES_MAX as u32;
                let resp = Pdu::IcResp { pfv: 0, cpda: 0, digests, maxh2cdata };
                out.push(Output { due_ns: 0, bytes: Encoding::default().encode(&resp) });
                Ok(true)
            }
            _ if self.encoding.is_none() => Err(PduError::new(Fes::SequenceError, 0, &header(), "PDU before ICReq")),
            Pdu::H2CTermReq { fes, fei, .. } => {
                eprintln!("zonelab: the host ended the connection (fatal error status {fes}, information {fei})");
                Ok(false)
            }
            Pdu::CapsuleCmd { sqe, data, data_ok } => {
                self.on_capsule(&sqe, data, data_ok, out);
                Ok(true)
            }
            Pdu::H2CData { cccid, ttag, datao, ref data, last, data_ok } => {
                let hdr = header();
                self.on_data(cccid, ttag, datao, data, last, data_ok, &hdr, out)?;
                Ok(true)
            }
            _ => Err(PduError::new(Fes::InvalidHeaderField, 0, &header(), "a PDU type hosts do not send")),
        }
    }

    fn on_capsule(&mut self, raw: &[u8; SQE_BYTES], data: Vec<u8>, data_ok: bool, out: &mut Vec<Output>) {
        let sqe = Sqe(raw);
        if !data_ok {
            return self.respond(raw, Reply::status(sc::TRANSIENT_TRANSPORT_ERROR), out);
        }
        // Fabrics carry SGLs only (PSDT 01b or 10b).
        if sqe.psdt() == 0 || sqe.psdt() == 3 {
            return self.respond(raw, Reply::status(sc::INVALID_FIELD), out);
        }
        let direction = Direction::of(&sqe);
        let length = sqe.sgl_length() as usize;
        let reply = match (sqe.sgl_id(), direction) {
            (_, Direction::Bidirectional) => Some(Reply::status(sc::INVALID_OPCODE)),
            (SGL_IN_CAPSULE, Direction::HostToController) if sqe.sgl_address() != 0 => {
                Some(Reply::status(0x016)) // SGL Offset Invalid
            }
            (SGL_IN_CAPSULE, Direction::HostToController) if length != data.len() => {
                Some(Reply::status(sc::SGL_LENGTH_INVALID))
            }
            (SGL_IN_CAPSULE, Direction::HostToController) => self.execute(raw, &data),
            (_, _) if !data.is_empty() => Some(Reply::status(sc::SGL_LENGTH_INVALID)),
            (SGL_TRANSPORT, Direction::HostToController) if length > 0 => {
                return self.request_data(raw, length, out);
            }
            (SGL_TRANSPORT, _) | (_, Direction::None) => self.execute(raw, &[]),
            _ => Some(Reply::status(sc::SGL_TYPE_INVALID)),
        };
        if let Some(reply) = reply {
            self.respond(raw, reply, out);
        }
    }

    /// Asks for a command's data with one R2T covering all of it.
    fn request_data(&mut self, raw: &[u8; SQE_BYTES], length: usize, out: &mut Vec<Output>) {
        if length > self.transfer_bytes_max.max(IN_CAPSULE_BYTES_MAX) {
            // Beyond MDTS: the status the model gives a transfer that large.
            return self.respond(raw, Reply::status(sc::INVALID_FIELD), out);
        }
        if self.pending.len() >= usize::from(QUEUE_ENTRIES_MAX) {
            return self.respond(raw, Reply::status(sc::COMMAND_SEQUENCE_ERROR), out);
        }
        let ttag = (0..=u16::MAX)
            .map(|i| self.next_ttag.wrapping_add(i))
            .find(|t| !self.pending.contains_key(t))
            .expect("fewer pending transfers than tags");
        self.next_ttag = ttag.wrapping_add(1);
        let pending =
            PendingWrite { sqe: *raw, expected_bytes: length, data: Vec::with_capacity(length), data_ok: true };
        self.pending.insert(ttag, pending);
        let r2t = Pdu::R2T { cccid: Sqe(raw).cid(), ttag, r2to: 0, r2tl: length as u32 };
        self.send(0, &[r2t], out);
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
    ) -> Result<(), PduError> {
        let Some(pending) = self.pending.get_mut(&ttag) else {
            return Err(PduError::new(Fes::InvalidHeaderField, 10, header, "H2CData for no R2T"));
        };
        if Sqe(&pending.sqe).cid() != cccid {
            return Err(PduError::new(Fes::InvalidHeaderField, 8, header, "H2CData for another command"));
        }
        if datao as usize != pending.data.len() {
            return Err(PduError::new(Fes::DataOutOfRange, 12, header, "H2CData out of order"));
        }
        if pending.data.len() + data.len() > pending.expected_bytes {
            return Err(PduError::new(Fes::DataOutOfRange, 16, header, "H2CData beyond the R2T"));
        }
        pending.data.extend_from_slice(data);
        pending.data_ok &= data_ok;
        let complete = pending.data.len() == pending.expected_bytes;
        if last != complete {
            return Err(PduError::new(Fes::SequenceError, 1, header, "last-PDU flag does not end the transfer"));
        }
        if complete {
            let pending = self.pending.remove(&ttag).expect("the pending transfer");
            let reply = if pending.data_ok {
                self.execute(&pending.sqe, &pending.data)
            } else {
                Some(Reply::status(sc::TRANSIENT_TRANSPORT_ERROR))
            };
            if let Some(reply) = reply {
                self.respond(&pending.sqe, reply, out);
            }
        }
        Ok(())
    }

    /// Sends the data (if any) and the response.
    fn respond(&mut self, raw: &[u8; SQE_BYTES], reply: Reply, out: &mut Vec<Output>) {
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
        let bytes = reply.data.len().min(host_bytes);
        let mut pdus = Vec::with_capacity(2);
        if reply.status == sc::SUCCESS && bytes > 0 {
            let data = reply.data[..bytes].to_vec();
            pdus.push(Pdu::C2HData { cccid: sqe.cid(), datao: 0, data, last: true, success: false });
        }
        pdus.push(Pdu::CapsuleResp { cqe });
        self.send(reply.due_ns, &pdus, out);
    }

    /// Runs a command; `None` for a held Asynchronous Event Request.
    fn execute(&mut self, raw: &[u8; SQE_BYTES], data: &[u8]) -> Option<Reply> {
        let sqe = Sqe(raw);
        if sqe.opcode() == OPC_FABRICS {
            return Some(self.fabrics(&sqe, data));
        }
        let Some(queue) = &self.queue else { return Some(Reply::status(sc::COMMAND_SEQUENCE_ERROR)) };
        let controller = Arc::clone(&queue.controller);
        if !controller.enabled() {
            return Some(Reply::status(sc::COMMAND_SEQUENCE_ERROR));
        }
        if queue.qid == 0 {
            if controller.discovery && sqe.opcode() == OPC_GET_LOG_PAGE && sqe.cdw(10) & 0xff == 0x70 {
                return Some(admin::discovery_log(&self.target, &self.local, &sqe));
            }
            return admin::admin_command(&self.target, &controller, &sqe);
        }
        let wall_ns = self.target.wall_ns();
        if sqe.opcode() == OPC_FLUSH && sqe.nsid() == 0xFFFF_FFFF {
            let mut reply = Reply::ok();
            for ns in &self.target.namespaces {
                let reply_ns = io::io_command(&mut lock(ns), wall_ns, &sqe, data);
                if reply_ns.status != sc::SUCCESS || reply.status == sc::SUCCESS {
                    reply = Reply { due_ns: reply.due_ns.max(reply_ns.due_ns), ..reply_ns };
                }
            }
            return Some(reply);
        }
        let Some(ns) = self.target.namespace(sqe.nsid()) else { return Some(Reply::status(sc::INVALID_NAMESPACE)) };
        Some(io::io_command(&mut lock(ns), wall_ns, &sqe, data))
    }

    fn fabrics(&mut self, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
        match (sqe.fctype(), &self.queue) {
            (FCTYPE_CONNECT, None) => match admin::connect(&self.target, sqe, data) {
                Ok(connected) => {
                    let cntlid = connected.controller.cntlid;
                    let (controller, qid, sqsize) = (connected.controller, connected.qid, connected.sqsize);
                    self.queue = Some(Queue { controller, qid, sqsize, sqhd: 0 });
                    Reply::result(u64::from(cntlid))
                }
                Err(reply) => reply,
            },
            (FCTYPE_CONNECT, Some(_)) => Reply::status(sc::COMMAND_SEQUENCE_ERROR),
            (FCTYPE_PROPERTY_GET, Some(q)) if q.qid == 0 => admin::property_get(&q.controller, sqe),
            (FCTYPE_PROPERTY_SET, Some(q)) if q.qid == 0 => admin::property_set(&self.target, &q.controller, sqe),
            (FCTYPE_PROPERTY_GET | FCTYPE_PROPERTY_SET, None) => Reply::status(sc::COMMAND_SEQUENCE_ERROR),
            _ => Reply::status(sc::INVALID_FIELD),
        }
    }
}
