//! NVMe/TCP PDUs (NVMe TCP Transport Specification 1.0, §3.6): the common
//! header, each PDU type's header, optional CRC32C header and data digests,
//! and the header checks whose failure is a fatal transport error (§3.6.2.2:
//! the controller answers a C2HTermReq with the Fatal Error Status and closes
//! the connection).

use std::io::Read;

/// PDU type: Initialize Connection Request (host to controller).
pub const TYPE_IC_REQ: u8 = 0x00;
/// PDU type: Initialize Connection Response.
pub const TYPE_IC_RESP: u8 = 0x01;
/// PDU type: host-to-controller termination request.
pub const TYPE_H2C_TERM_REQ: u8 = 0x02;
/// PDU type: controller-to-host termination request.
pub const TYPE_C2H_TERM_REQ: u8 = 0x03;
/// PDU type: command capsule (an SQE, maybe with in-capsule data).
pub const TYPE_CAPSULE_CMD: u8 = 0x04;
/// PDU type: response capsule (a CQE).
pub const TYPE_CAPSULE_RESP: u8 = 0x05;
/// PDU type: host-to-controller data (write data after an R2T).
pub const TYPE_H2C_DATA: u8 = 0x06;
/// PDU type: controller-to-host data (read data).
pub const TYPE_C2H_DATA: u8 = 0x07;
/// PDU type: Ready to Transfer (the controller asks for write data).
pub const TYPE_R2T: u8 = 0x09;

/// Common header flag: a header digest follows the PDU header.
pub const FLAG_HDGST: u8 = 0x01;
/// Common header flag: a data digest follows the PDU data.
pub const FLAG_DDGST: u8 = 0x02;
/// Last data PDU of a transfer (H2CData, C2HData).
pub const FLAG_LAST_PDU: u8 = 0x04;
/// C2HData: the command succeeded, no CapsuleResp follows.
pub const FLAG_SUCCESS: u8 = 0x08;

/// Common header: type, flags, HLEN, PDO, PLEN.
pub const COMMON_HEADER_BYTES: usize = 8;
/// A header or data digest (CRC32C).
pub const DIGEST_BYTES: usize = 4;
/// ICReq and ICResp, which are fixed-size.
pub const IC_BYTES: usize = 128;
/// An NVMe submission queue entry.
pub const SQE_BYTES: usize = 64;
/// An NVMe completion queue entry.
pub const CQE_BYTES: usize = 16;
/// CapsuleCmd header: common header and SQE.
pub const CAPSULE_CMD_HEADER_BYTES: usize = COMMON_HEADER_BYTES + SQE_BYTES;
/// CapsuleResp header: common header and CQE.
pub const CAPSULE_RESP_HEADER_BYTES: usize = COMMON_HEADER_BYTES + CQE_BYTES;
/// H2CData, C2HData and R2T headers.
pub const DATA_HEADER_BYTES: usize = 24;
/// H2CTermReq and C2HTermReq headers.
pub const TERM_REQ_HEADER_BYTES: usize = 24;
/// A C2HTermReq carries at most this much of the offending PDU header.
pub const TERM_REQ_DATA_BYTES_MAX: usize = 152;

/// In-capsule data a command may carry (IOCCSZ announces it).
pub const IN_CAPSULE_BYTES_MAX: usize = 8192;
/// Most data one H2CData PDU may carry (MAXH2CDATA in the ICResp).
pub const H2C_DATA_BYTES_MAX: usize = 128 << 10;

/// Fatal Error Status of a termination request (§3.6.2.3, Figure 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fes {
    /// A header field is invalid; FEI gives its byte offset.
    InvalidHeaderField = 0x01,
    /// A PDU arrived when the protocol does not allow it.
    SequenceError = 0x02,
    /// The header digest did not match.
    HeaderDigestError = 0x03,
    /// Data outside the transfer the command or R2T set up.
    DataOutOfRange = 0x04,
    /// More data than negotiated (MAXH2CDATA, in-capsule size).
    DataLimitExceeded = 0x05,
    /// A parameter the controller does not support (PFV, digest, alignment).
    UnsupportedParameter = 0x06,
}

/// A fatal transport error: what the C2HTermReq reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PduError {
    /// Fatal Error Status to report.
    pub fes: Fes,
    /// Fatal Error Information: the byte offset of the bad header field.
    pub fei: u32,
    /// The header of the PDU in error (as much as a C2HTermReq carries).
    pub header: Vec<u8>,
    /// For the server's log.
    pub reason: &'static str,
}

impl PduError {
    /// An error at header byte `fei` of `header` (truncated to what a
    /// C2HTermReq carries); `reason` is for the log.
    pub fn new(fes: Fes, fei: usize, header: &[u8], reason: &'static str) -> Self {
        let len = header.len().min(TERM_REQ_DATA_BYTES_MAX);
        PduError { fes, fei: fei as u32, header: header[..len].to_vec(), reason }
    }
}

/// Why no PDU could be read.
#[derive(Debug)]
pub enum ReadError {
    /// The peer closed the connection or the socket failed.
    Closed(std::io::Error),
    /// The PDU broke the protocol: answer a C2HTermReq and close.
    Fatal(PduError),
}

/// Which digests the connection carries (negotiated by ICReq/ICResp).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digests {
    /// HDGST: a CRC32C follows each PDU header.
    pub header: bool,
    /// DDGST: a CRC32C follows each PDU's data.
    pub data: bool,
}

impl Digests {
    fn from_byte(b: u8) -> Self {
        Digests { header: b & 1 != 0, data: b & 2 != 0 }
    }

    fn to_byte(self) -> u8 {
        u8::from(self.header) | u8::from(self.data) << 1
    }
}

/// One NVMe/TCP PDU, decoded; fields keep the specification's names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pdu {
    /// Initialize Connection Request.
    IcReq {
        /// PDU format version (0 for 1.0).
        pfv: u16,
        /// Host PDU data alignment, in dwords minus one.
        hpda: u8,
        /// Digests the host asks for.
        digests: Digests,
        /// Most outstanding R2Ts per command the host accepts, minus one.
        maxr2t: u32,
    },
    /// Initialize Connection Response.
    IcResp {
        /// PDU format version (0 for 1.0).
        pfv: u16,
        /// Controller PDU data alignment, in dwords minus one.
        cpda: u8,
        /// Digests the connection will carry.
        digests: Digests,
        /// Most data one H2CData PDU may carry, in bytes.
        maxh2cdata: u32,
    },
    /// The host ends the connection on a fatal error.
    H2CTermReq {
        /// Fatal Error Status.
        fes: u16,
        /// Fatal Error Information (a byte offset or a limit).
        fei: u32,
        /// The offending PDU header, as much as fits.
        data: Vec<u8>,
    },
    /// The controller ends the connection on a fatal error.
    C2HTermReq {
        /// Fatal Error Status.
        fes: u16,
        /// Fatal Error Information (a byte offset or a limit).
        fei: u32,
        /// The offending PDU header, as much as fits.
        data: Vec<u8>,
    },
    /// `data_ok`: false when the data digest did not match.
    CapsuleCmd {
        /// The submission queue entry.
        sqe: [u8; SQE_BYTES],
        /// In-capsule data, empty when the data comes by R2T.
        data: Vec<u8>,
        /// False when the data digest did not match.
        data_ok: bool,
    },
    /// A command's completion.
    CapsuleResp {
        /// The completion queue entry.
        cqe: [u8; CQE_BYTES],
    },
    /// Write data the host sends after an R2T.
    H2CData {
        /// Command capsule CID the data belongs to.
        cccid: u16,
        /// Transfer tag from the R2T.
        ttag: u16,
        /// Offset of this data in the command's transfer, in bytes.
        datao: u32,
        /// The data.
        data: Vec<u8>,
        /// Last data PDU of the R2T's transfer.
        last: bool,
        /// False when the data digest did not match.
        data_ok: bool,
    },
    /// Read data the controller sends.
    C2HData {
        /// Command capsule CID the data belongs to.
        cccid: u16,
        /// Offset of this data in the command's transfer, in bytes.
        datao: u32,
        /// The data.
        data: Vec<u8>,
        /// Last data PDU of the transfer.
        last: bool,
        /// The command succeeded and no CapsuleResp follows (SUCCESS flag).
        success: bool,
    },
    /// The controller asks for part of a command's write data.
    R2T {
        /// Command capsule CID.
        cccid: u16,
        /// Transfer tag the H2CData PDUs must carry.
        ttag: u16,
        /// Offset of the requested data in the command's transfer, in bytes.
        r2to: u32,
        /// Bytes requested.
        r2tl: u32,
    },
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

/// What a PDU type's header looks like: its length and whether it may
/// carry digests and data.
struct Shape {
    hlen: usize,
    digests: bool,
    data: bool,
}

fn shape(pdu_type: u8) -> Option<Shape> {
    let (hlen, digests, data) = match pdu_type {
        TYPE_IC_REQ | TYPE_IC_RESP => (IC_BYTES, false, false),
        TYPE_H2C_TERM_REQ | TYPE_C2H_TERM_REQ => (TERM_REQ_HEADER_BYTES, false, true),
        TYPE_CAPSULE_CMD => (CAPSULE_CMD_HEADER_BYTES, true, true),
        TYPE_CAPSULE_RESP => (CAPSULE_RESP_HEADER_BYTES, true, false),
        TYPE_H2C_DATA | TYPE_C2H_DATA => (DATA_HEADER_BYTES, true, true),
        TYPE_R2T => (DATA_HEADER_BYTES, true, false),
        _ => return None,
    };
    Some(Shape { hlen, digests, data })
}

/// The checked layout of a PDU whose common header has been read.
#[derive(Debug, Clone, Copy)]
struct Layout {
    pdu_type: u8,
    flags: u8,
    hlen: usize,
    plen: usize,
    /// Where the data starts (0: no data), after any header digest and padding.
    pdo: usize,
    data_bytes: usize,
    hdgst: bool,
    ddgst: bool,
}

/// Checks the common header against the PDU type and the negotiated
/// digests; `plen_max` bounds what the reader will buffer.
fn check_common_header(ch: &[u8; COMMON_HEADER_BYTES], digests: Digests, plen_max: usize) -> Result<Layout, PduError> {
    let (pdu_type, flags, hlen, pdo) = (ch[0], ch[1], usize::from(ch[2]), usize::from(ch[3]));
    let plen = u32_at(ch, 4) as usize;
    let Some(shape) = shape(pdu_type) else {
        return Err(PduError::new(Fes::InvalidHeaderField, 0, ch, "unknown PDU type"));
    };
    if hlen != shape.hlen {
        return Err(PduError::new(Fes::InvalidHeaderField, 2, ch, "header length does not match the PDU type"));
    }
    let hdgst = flags & FLAG_HDGST != 0;
    let ddgst = flags & FLAG_DDGST != 0;
    if shape.digests && hdgst != digests.header || !shape.digests && (hdgst || ddgst) {
        return Err(PduError::new(
            Fes::InvalidHeaderField,
            1,
            ch,
            "header digest flag differs from the negotiated one",
        ));
    }
    let header_end = hlen + if hdgst { DIGEST_BYTES } else { 0 };
    if plen < header_end || plen > plen_max {
        let fes = if plen > plen_max { Fes::DataLimitExceeded } else { Fes::InvalidHeaderField };
        return Err(PduError::new(fes, 4, ch, "PDU length out of range"));
    }
    let has_data = plen > header_end;
    if has_data && !shape.data {
        return Err(PduError::new(Fes::InvalidHeaderField, 4, ch, "this PDU type carries no data"));
    }
    if !has_data {
        if ddgst || (shape.digests && pdo != 0) {
            return Err(PduError::new(Fes::InvalidHeaderField, 3, ch, "data offset or digest without data"));
        }
        return Ok(Layout { pdu_type, flags, hlen, plen, pdo: 0, data_bytes: 0, hdgst, ddgst: false });
    }
    if shape.digests && ddgst != digests.data {
        return Err(PduError::new(Fes::InvalidHeaderField, 1, ch, "data digest flag differs from the negotiated one"));
    }
    // Term requests carry their data right after the header (no PDO).
    let pdo = if shape.digests { pdo } else { header_end };
    let data_end = plen - if ddgst { DIGEST_BYTES } else { 0 };
    if pdo < header_end || pdo >= data_end {
        return Err(PduError::new(Fes::InvalidHeaderField, 3, ch, "data offset outside the PDU"));
    }
    Ok(Layout { pdu_type, flags, hlen, plen, pdo, data_bytes: data_end - pdo, hdgst, ddgst })
}

/// How much each PDU may carry on a connection, checked on the common
/// header before the PDU's buffer is allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataLimits {
    /// The longest PDU (PLEN).
    pub plen_max: usize,
    /// In-capsule data of a command capsule (IOCCSZ).
    pub capsule_data_max: usize,
    /// Data of one H2CData PDU (MAXH2CDATA).
    pub h2c_data_max: usize,
}

impl DataLimits {
    /// Only a bound on PLEN.
    pub fn plen(plen_max: usize) -> Self {
        DataLimits { plen_max, capsule_data_max: usize::MAX, h2c_data_max: usize::MAX }
    }
}

/// A PDU whose common header has been read and checked: its length is known
/// (and may be charged) before its buffer is allocated.
#[derive(Debug, Clone, Copy)]
pub struct Header {
    ch: [u8; COMMON_HEADER_BYTES],
    layout: Layout,
    /// A command capsule's SQE, read ahead of the rest (see [`read_sqe`]).
    sqe: Option<[u8; SQE_BYTES]>,
}

impl Header {
    /// The PDU's total length (PLEN): the buffer reading it takes.
    pub fn plen(&self) -> usize {
        self.layout.plen
    }

    /// The PDU's type (`TYPE_...`).
    pub fn pdu_type(&self) -> u8 {
        self.layout.pdu_type
    }
}

/// Reads and checks a common header. More data than `limits` allow is a
/// fatal Data Transfer Limit Exceeded (NVMe/TCP 1.0, §3.6.2.3).
pub fn read_header<R: Read>(r: &mut R, digests: Digests, limits: &DataLimits) -> Result<Header, ReadError> {
    let mut ch = [0u8; COMMON_HEADER_BYTES];
    r.read_exact(&mut ch).map_err(ReadError::Closed)?;
    let layout = check_common_header(&ch, digests, limits.plen_max).map_err(ReadError::Fatal)?;
    let data_max = match layout.pdu_type {
        TYPE_CAPSULE_CMD => limits.capsule_data_max,
        TYPE_H2C_DATA => limits.h2c_data_max,
        _ => usize::MAX,
    };
    if layout.data_bytes > data_max {
        let reason = "more data than the connection's limit (IOCCSZ or MAXH2CDATA)";
        return Err(ReadError::Fatal(PduError::new(Fes::DataLimitExceeded, 4, &ch, reason)));
    }
    Ok(Header { ch, layout, sqe: None })
}

/// Reads the rest of the PDU `header` announced. Header digest errors are
/// fatal; a data digest error is reported in the PDU (the command fails,
/// the connection lives on). The PDU's one buffer becomes its data.
pub fn read_body<R: Read>(r: &mut R, header: Header) -> Result<Pdu, ReadError> {
    let layout = header.layout;
    let mut pdu = vec![0u8; layout.plen];
    pdu[..COMMON_HEADER_BYTES].copy_from_slice(&header.ch);
    let mut read_from = COMMON_HEADER_BYTES;
    if let Some(sqe) = &header.sqe {
        pdu[read_from..read_from + SQE_BYTES].copy_from_slice(sqe);
        read_from += SQE_BYTES;
    }
    r.read_exact(&mut pdu[read_from..]).map_err(ReadError::Closed)?;
    let head = pdu[..layout.hlen].to_vec();
    if layout.hdgst && crc32c::crc32c(&head) != u32_at(&pdu, layout.hlen) {
        return Err(ReadError::Fatal(PduError::new(Fes::HeaderDigestError, 0, &head, "header digest mismatch")));
    }
    let data_end = layout.pdo + layout.data_bytes;
    let data_ok = !layout.ddgst || crc32c::crc32c(&pdu[layout.pdo..data_end]) == u32_at(&pdu, data_end);
    // The data moves to the front of the buffer rather than into a copy.
    let data = if layout.data_bytes == 0 {
        Vec::new()
    } else {
        pdu.truncate(data_end);
        pdu.drain(..layout.pdo);
        pdu
    };
    decode(&layout, &head, data, data_ok).map_err(ReadError::Fatal)
}

/// Reads a command capsule's SQE ahead of the rest of the PDU (into the
/// header, on the stack), so that what the command needs can be known
/// before its buffer is allocated; the SQE of a capsule header, or `None`.
pub fn read_sqe<R: Read>(r: &mut R, header: &mut Header) -> Result<Option<[u8; SQE_BYTES]>, ReadError> {
    if header.layout.pdu_type != TYPE_CAPSULE_CMD || header.sqe.is_some() {
        return Ok(header.sqe);
    }
    let mut sqe = [0u8; SQE_BYTES];
    r.read_exact(&mut sqe).map_err(ReadError::Closed)?;
    header.sqe = Some(sqe);
    Ok(Some(sqe))
}

/// Reads one PDU of at most `plen_max` bytes (see [`read_header`] and
/// [`read_body`]).
pub fn read_pdu<R: Read>(r: &mut R, digests: Digests, plen_max: usize) -> Result<Pdu, ReadError> {
    let header = read_header(r, digests, &DataLimits::plen(plen_max))?;
    read_body(r, header)
}

/// The PDU of a checked layout, from its header and data.
fn decode(layout: &Layout, h: &[u8], data: Vec<u8>, data_ok: bool) -> Result<Pdu, PduError> {
    let last = layout.flags & FLAG_LAST_PDU != 0;
    Ok(match layout.pdu_type {
        TYPE_IC_REQ => {
            Pdu::IcReq { pfv: u16_at(h, 8), hpda: h[10], digests: Digests::from_byte(h[11]), maxr2t: u32_at(h, 12) }
        }
        TYPE_IC_RESP => Pdu::IcResp {
            pfv: u16_at(h, 8),
            cpda: h[10],
            digests: Digests::from_byte(h[11]),
            maxh2cdata: u32_at(h, 12),
        },
        TYPE_H2C_TERM_REQ => Pdu::H2CTermReq { fes: u16_at(h, 8), fei: u32_at(h, 10), data },
        TYPE_C2H_TERM_REQ => Pdu::C2HTermReq { fes: u16_at(h, 8), fei: u32_at(h, 10), data },
        TYPE_CAPSULE_CMD => {
            let sqe = h[COMMON_HEADER_BYTES..].try_into().expect("64-byte SQE");
            Pdu::CapsuleCmd { sqe, data, data_ok }
        }
        TYPE_CAPSULE_RESP => Pdu::CapsuleResp { cqe: h[COMMON_HEADER_BYTES..].try_into().expect("16-byte CQE") },
        TYPE_H2C_DATA => {
            let datal = u32_at(h, 16) as usize;
            if datal != data.len() {
                return Err(PduError::new(Fes::InvalidHeaderField, 16, h, "data length differs from the PDU's data"));
            }
            Pdu::H2CData { cccid: u16_at(h, 8), ttag: u16_at(h, 10), datao: u32_at(h, 12), data, last, data_ok }
        }
        TYPE_C2H_DATA => {
            if u32_at(h, 16) as usize != data.len() {
                return Err(PduError::new(Fes::InvalidHeaderField, 16, h, "data length differs from the PDU's data"));
            }
            let success = layout.flags & FLAG_SUCCESS != 0;
            Pdu::C2HData { cccid: u16_at(h, 8), datao: u32_at(h, 12), data, last, success }
        }
        TYPE_R2T => Pdu::R2T { cccid: u16_at(h, 8), ttag: u16_at(h, 10), r2to: u32_at(h, 12), r2tl: u32_at(h, 16) },
        _ => unreachable!("check_common_header admits only known types"),
    })
}

/// How PDUs are written on a connection: the negotiated digests and the
/// data alignment the peer asked for (HPDA or CPDA, in dwords minus one).
#[derive(Debug, Clone, Copy, Default)]
pub struct Encoding {
    /// Digests negotiated for the connection.
    pub digests: Digests,
    /// Data alignment the peer asked for, in dwords minus one (0: none).
    pub pda: u8,
}

impl Encoding {
    /// Encodes `pdu` as it goes on the wire.
    pub fn encode(&self, pdu: &Pdu) -> Vec<u8> {
        let mut h = Vec::with_capacity(IC_BYTES);
        let (pdu_type, mut flags, data): (u8, u8, &[u8]) = match pdu {
            Pdu::IcReq { pfv, hpda, digests, maxr2t } => {
                ic_header(&mut h, *pfv, *hpda, *digests, *maxr2t);
                (TYPE_IC_REQ, 0, &[])
            }
            Pdu::IcResp { pfv, cpda, digests, maxh2cdata } => {
                ic_header(&mut h, *pfv, *cpda, *digests, *maxh2cdata);
                (TYPE_IC_RESP, 0, &[])
            }
            Pdu::H2CTermReq { fes, fei, data } | Pdu::C2HTermReq { fes, fei, data } => {
                h.extend_from_slice(&[0; COMMON_HEADER_BYTES]);
                h.extend_from_slice(&fes.to_le_bytes());
                h.extend_from_slice(&fei.to_le_bytes());
                h.resize(TERM_REQ_HEADER_BYTES, 0);
                let t = if matches!(pdu, Pdu::H2CTermReq { .. }) { TYPE_H2C_TERM_REQ } else { TYPE_C2H_TERM_REQ };
                (t, 0, data.as_slice())
            }
            Pdu::CapsuleCmd { sqe, data, .. } => {
                h.extend_from_slice(&[0; COMMON_HEADER_BYTES]);
                h.extend_from_slice(sqe);
                (TYPE_CAPSULE_CMD, 0, data.as_slice())
            }
            Pdu::CapsuleResp { cqe } => {
                h.extend_from_slice(&[0; COMMON_HEADER_BYTES]);
                h.extend_from_slice(cqe);
                (TYPE_CAPSULE_RESP, 0, &[])
            }
            Pdu::H2CData { cccid, ttag, datao, data, last, .. } => {
                data_header(&mut h, *cccid, *ttag, *datao, data.len() as u32);
                (TYPE_H2C_DATA, if *last { FLAG_LAST_PDU } else { 0 }, data.as_slice())
            }
            Pdu::C2HData { cccid, datao, data, last, success } => {
                data_header(&mut h, *cccid, 0, *datao, data.len() as u32);
                let flags = if *last { FLAG_LAST_PDU } else { 0 } | if *success { FLAG_SUCCESS } else { 0 };
                (TYPE_C2H_DATA, flags, data.as_slice())
            }
            Pdu::R2T { cccid, ttag, r2to, r2tl } => {
                data_header(&mut h, *cccid, *ttag, *r2to, *r2tl);
                (TYPE_R2T, 0, &[])
            }
        };
        let shape = shape(pdu_type).expect("a known type");
        assert_eq!(h.len(), shape.hlen, "header of PDU type {pdu_type}");
        self.finish(h, pdu_type, &mut flags, &shape, data)
    }

    /// Fills the common header, appends digests, padding and data.
    fn finish(&self, mut h: Vec<u8>, pdu_type: u8, flags: &mut u8, shape: &Shape, data: &[u8]) -> Vec<u8> {
        let hdgst = shape.digests && self.digests.header;
        let ddgst = shape.digests && self.digests.data && !data.is_empty();
        *flags |= if hdgst { FLAG_HDGST } else { 0 } | if ddgst { FLAG_DDGST } else { 0 };
        let header_end = shape.hlen + if hdgst { DIGEST_BYTES } else { 0 };
        let pdo = if data.is_empty() {
            0
        } else if shape.digests {
            let align = (usize::from(self.pda) + 1) * 4;
            header_end.div_ceil(align) * align
        } else {
            header_end
        };
        let plen = if data.is_empty() { header_end } else { pdo + data.len() + if ddgst { DIGEST_BYTES } else { 0 } };
        h[0] = pdu_type;
        h[1] = *flags;
        h[2] = shape.hlen as u8;
        h[3] = if shape.digests { pdo as u8 } else { 0 };
        h[4..8].copy_from_slice(&(plen as u32).to_le_bytes());
        if hdgst {
            let digest = crc32c::crc32c(&h);
            h.extend_from_slice(&digest.to_le_bytes());
        }
        if !data.is_empty() {
            // Exactly the PDU: what the buffer holds is what is charged for it.
            h.reserve_exact(plen - h.len());
            h.resize(pdo, 0);
            h.extend_from_slice(data);
            if ddgst {
                h.extend_from_slice(&crc32c::crc32c(data).to_le_bytes());
            }
        }
        assert_eq!(h.len(), plen);
        h
    }
}

fn ic_header(h: &mut Vec<u8>, pfv: u16, pda: u8, digests: Digests, max: u32) {
    h.extend_from_slice(&[0; COMMON_HEADER_BYTES]);
    h.extend_from_slice(&pfv.to_le_bytes());
    h.push(pda);
    h.push(digests.to_byte());
    h.extend_from_slice(&max.to_le_bytes());
    h.resize(IC_BYTES, 0);
}

fn data_header(h: &mut Vec<u8>, cccid: u16, ttag: u16, offset: u32, length: u32) {
    h.extend_from_slice(&[0; COMMON_HEADER_BYTES]);
    h.extend_from_slice(&cccid.to_le_bytes());
    h.extend_from_slice(&ttag.to_le_bytes());
    h.extend_from_slice(&offset.to_le_bytes());
    h.extend_from_slice(&length.to_le_bytes());
    h.resize(DATA_HEADER_BYTES, 0);
}

/// The C2HTermReq for a fatal error.
pub fn term_req(e: &PduError) -> Pdu {
    Pdu::C2HTermReq { fes: e.fes as u16, fei: e.fei, data: e.header.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLEN_MAX: usize = 1 << 20;

    fn read(bytes: &[u8], digests: Digests) -> Result<Pdu, ReadError> {
        read_pdu(&mut &bytes[..], digests, PLEN_MAX)
    }

    fn fatal(bytes: &[u8], digests: Digests) -> PduError {
        match read(bytes, digests) {
            Err(ReadError::Fatal(e)) => e,
            other => panic!("expected a fatal error, got {other:?}"),
        }
    }

    /// An ICReq as Linux sends it: PFV 0, HPDA 0, no digests, MAXR2T 0.
    fn icreq_bytes(dgst: u8) -> Vec<u8> {
        let mut b = vec![0u8; 128];
        b[..8].copy_from_slice(&[0x00, 0x00, 128, 0, 128, 0, 0, 0]);
        b[11] = dgst;
        b
    }

    #[test]
    fn icreq_decodes_from_hand_built_bytes() {
        let pdu = read(&icreq_bytes(0x03), Digests::default()).unwrap();
        let digests = Digests { header: true, data: true };
        assert_eq!(pdu, Pdu::IcReq { pfv: 0, hpda: 0, digests, maxr2t: 0 });
    }

    #[test]
    fn icresp_encodes_as_the_spec_lays_it_out() {
        let pdu = Pdu::IcResp { pfv: 0, cpda: 0, digests: Digests { header: true, data: false }, maxh2cdata: 0x20000 };
        let b = Encoding::default().encode(&pdu);
        assert_eq!(b.len(), 128);
        assert_eq!(&b[..12], &[0x01, 0, 128, 0, 128, 0, 0, 0, 0, 0, 0, 0x01]);
        assert_eq!(&b[12..16], &[0x00, 0x00, 0x02, 0x00]);
        assert!(b[16..].iter().all(|&x| x == 0));
    }

    #[test]
    fn capsule_with_in_capsule_data_decodes() {
        let mut b = vec![0x04, 0x00, 72, 72, 76, 0, 0, 0];
        let mut sqe = [0u8; 64];
        sqe[0] = 0x01; // write
        sqe[2] = 0x34;
        b.extend_from_slice(&sqe);
        b.extend_from_slice(&[1, 2, 3, 4]);
        let Pdu::CapsuleCmd { sqe: got, data, data_ok } = read(&b, Digests::default()).unwrap() else { panic!() };
        assert_eq!((got[0], got[2], data, data_ok), (0x01, 0x34, vec![1, 2, 3, 4], true));
    }

    #[test]
    fn digests_round_trip_and_a_bad_header_digest_is_fatal() {
        let enc = Encoding { digests: Digests { header: true, data: true }, pda: 0 };
        let pdu = Pdu::H2CData { cccid: 7, ttag: 3, datao: 0, data: vec![9; 100], last: true, data_ok: true };
        let mut bytes = enc.encode(&pdu);
        assert_eq!(bytes[1], FLAG_HDGST | FLAG_DDGST | FLAG_LAST_PDU);
        assert_eq!(bytes[3], 28, "data after the header and its digest");
        assert_eq!(bytes.len(), 24 + 4 + 100 + 4);
        // CRC32C of the header, checked against an independent reference value.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(read(&bytes, enc.digests).unwrap(), pdu);
        bytes[10] ^= 1;
        assert_eq!(fatal(&bytes, enc.digests).fes, Fes::HeaderDigestError);
    }

    #[test]
    fn a_bad_data_digest_is_reported_not_fatal() {
        let enc = Encoding { digests: Digests { header: false, data: true }, pda: 0 };
        let pdu = Pdu::H2CData { cccid: 1, ttag: 1, datao: 0, data: vec![5; 16], last: true, data_ok: true };
        let mut bytes = enc.encode(&pdu);
        let n = bytes.len();
        bytes[n - 1] ^= 0xff;
        let Pdu::H2CData { data_ok, .. } = read(&bytes, enc.digests).unwrap() else { panic!() };
        assert!(!data_ok);
    }

    #[test]
    fn header_errors_name_the_field() {
        let d = Digests::default();
        assert_eq!((fatal(&[0x42, 0, 24, 0, 24, 0, 0, 0], d).fei), 0, "unknown type");
        let e = fatal(&[0x04, 0, 24, 0, 24, 0, 0, 0], d);
        assert_eq!((e.fes, e.fei), (Fes::InvalidHeaderField, 2), "capsule with a 24-byte header");
        let e = fatal(&[0x04, 0, 72, 0, 10, 0, 0, 0], d);
        assert_eq!((e.fes, e.fei), (Fes::InvalidHeaderField, 4), "PLEN below HLEN");
        let e = fatal(&[0x04, 0, 72, 0, 0xff, 0xff, 0xff, 0x7f], d);
        assert_eq!((e.fes, e.fei), (Fes::DataLimitExceeded, 4), "PLEN beyond the limit");
        let e = fatal(&[0x04, 0x01, 72, 0, 76, 0, 0, 0], d);
        assert_eq!((e.fes, e.fei), (Fes::InvalidHeaderField, 1), "header digest not negotiated");
        let e = fatal(&[0x04, 0, 72, 200, 80, 0, 0, 0], d);
        assert_eq!((e.fes, e.fei), (Fes::InvalidHeaderField, 3), "PDO past the data");
        let e = fatal(&[0x04, 0, 72, 8, 72, 0, 0, 0], d);
        assert_eq!((e.fes, e.fei), (Fes::InvalidHeaderField, 3), "PDO without data");
        assert_eq!(e.header.len(), 8, "the term request carries the header read");
    }

    #[test]
    fn h2c_data_length_must_match_its_data() {
        let mut b = Encoding::default().encode(&Pdu::H2CData {
            cccid: 1,
            ttag: 1,
            datao: 0,
            data: vec![0; 8],
            last: true,
            data_ok: true,
        });
        b[16] = 9;
        let e = fatal(&b, Digests::default());
        assert_eq!((e.fes, e.fei), (Fes::InvalidHeaderField, 16));
    }

    #[test]
    fn a_truncated_pdu_is_a_closed_connection() {
        let b = icreq_bytes(0);
        assert!(matches!(read(&b[..60], Digests::default()), Err(ReadError::Closed(_))));
        assert!(matches!(read(&b[..3], Digests::default()), Err(ReadError::Closed(_))));
    }

    #[test]
    fn c2h_data_honours_the_host_alignment() {
        let enc = Encoding { digests: Digests::default(), pda: 7 };
        let pdu = Pdu::C2HData { cccid: 2, datao: 0, data: vec![1; 4], last: true, success: false };
        let b = enc.encode(&pdu);
        assert_eq!(b[3], 32, "PDO rounded up to 32 bytes");
        assert_eq!(read(&b, Digests::default()).unwrap(), pdu);
    }

    #[test]
    fn every_pdu_round_trips() {
        let enc = Encoding { digests: Digests { header: true, data: true }, pda: 0 };
        let pdus = [
            Pdu::R2T { cccid: 1, ttag: 2, r2to: 3, r2tl: 4 },
            Pdu::CapsuleResp { cqe: [7; 16] },
            Pdu::C2HTermReq { fes: 2, fei: 0, data: vec![1, 2, 3] },
            Pdu::H2CTermReq { fes: 1, fei: 4, data: vec![] },
            Pdu::CapsuleCmd { sqe: [3; 64], data: vec![8; 33], data_ok: true },
            Pdu::C2HData { cccid: 5, datao: 4096, data: vec![6; 4096], last: false, success: true },
        ];
        for pdu in pdus {
            assert_eq!(read(&enc.encode(&pdu), enc.digests).unwrap(), pdu);
        }
    }
}
