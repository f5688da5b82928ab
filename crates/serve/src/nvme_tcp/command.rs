//! What the dispatchers share: the submission queue entry's fields, the
//! completion a command gets, and the NVMe status codes the transport and
//! the admin commands use besides the device model's [`Status`].

use crate::nvme_tcp::pdu::{CQE_BYTES, SQE_BYTES};
use zonelab_device::Status;
use zonelab_sim::Nanos;

/// Status codes as `SCT << 8 | SC` (NVMe Base 2.0, Figures 100-102).
pub mod sc {
    /// Successful Completion.
    pub const SUCCESS: u16 = 0x000;
    /// Invalid Command Opcode.
    pub const INVALID_OPCODE: u16 = 0x001;
    /// Invalid Field in Command.
    pub const INVALID_FIELD: u16 = 0x002;
    /// Data Transfer Error.
    pub const DATA_TRANSFER_ERROR: u16 = 0x004;
    /// Internal Error (the model failed or the image could not be written).
    pub const INTERNAL_ERROR: u16 = 0x006;
    /// Invalid Namespace or Format.
    pub const INVALID_NAMESPACE: u16 = 0x00B;
    /// Command Sequence Error (e.g. an I/O command before Connect).
    pub const COMMAND_SEQUENCE_ERROR: u16 = 0x00C;
    /// Data SGL Length Invalid.
    pub const SGL_LENGTH_INVALID: u16 = 0x00F;
    /// SGL Descriptor Type Invalid.
    pub const SGL_TYPE_INVALID: u16 = 0x011;
    /// Namespace Not Ready (a namespace taken offline by a model fault).
    pub const NAMESPACE_NOT_READY: u16 = 0x082;
    /// Transient Transport Error: the host may retry.
    pub const TRANSIENT_TRANSPORT_ERROR: u16 = 0x022;
    /// Unrecovered Read Error (media and data integrity): a block of the
    /// `--backing` image failed its checksum.
    pub const UNRECOVERED_READ_ERROR: u16 = 0x281;
    /// Asynchronous Event Request Limit Exceeded (command specific).
    pub const AER_LIMIT_EXCEEDED: u16 = 0x105;
    /// Invalid Log Page (command specific).
    pub const INVALID_LOG_PAGE: u16 = 0x109;
    /// Connect: Incompatible Format (command specific).
    pub const CONNECT_INCOMPATIBLE_FORMAT: u16 = 0x180;
    /// Connect: Controller Busy (command specific).
    pub const CONNECT_CONTROLLER_BUSY: u16 = 0x181;
    /// Connect: Invalid Parameters (command specific).
    pub const CONNECT_INVALID_PARAMETERS: u16 = 0x182;
    /// Connect: Invalid Host (command specific).
    pub const CONNECT_INVALID_HOST: u16 = 0x184;
}

/// A submission queue entry (64 bytes, little endian).
#[derive(Clone, Copy)]
pub struct Sqe<'a>(pub &'a [u8; SQE_BYTES]);

impl Sqe<'_> {
    /// Command opcode (byte 0).
    pub fn opcode(&self) -> u8 {
        self.0[0]
    }

    /// PRP or SGL (fabrics need SGLs: 01b or 10b).
    pub fn psdt(&self) -> u8 {
        self.0[1] >> 6
    }

    /// Command identifier, echoed in the completion.
    pub fn cid(&self) -> u16 {
        u16::from_le_bytes([self.0[2], self.0[3]])
    }

    /// Namespace identifier.
    pub fn nsid(&self) -> u32 {
        self.u32_at(4)
    }

    /// Command Dword `n` (10..=15).
    pub fn cdw(&self, n: usize) -> u32 {
        assert!((10..=15).contains(&n));
        self.u32_at(40 + (n - 10) * 4)
    }

    /// Dwords 10 and 11 as one 64-bit value (SLBA and the like).
    pub fn cdw10_11(&self) -> u64 {
        u64::from(self.cdw(10)) | u64::from(self.cdw(11)) << 32
    }

    /// SGL descriptor type and subtype (byte 15 of DPTR).
    pub fn sgl_id(&self) -> u8 {
        self.0[39]
    }

    /// SGL descriptor address (an offset for in-capsule data).
    pub fn sgl_address(&self) -> u64 {
        u64::from_le_bytes(self.0[24..32].try_into().expect("8 bytes"))
    }

    /// SGL descriptor length: the command's data bytes.
    pub fn sgl_length(&self) -> u32 {
        self.u32_at(32)
    }

    /// Fabrics command type (opcode 0x7F).
    pub fn fctype(&self) -> u8 {
        self.0[4]
    }

    /// The little-endian dword at byte `i`.
    pub fn u32_at(&self, i: usize) -> u32 {
        u32::from_le_bytes(self.0[i..i + 4].try_into().expect("4 bytes"))
    }

    /// The little-endian word at byte `i`.
    pub fn u16_at(&self, i: usize) -> u16 {
        u16::from_le_bytes([self.0[i], self.0[i + 1]])
    }
}

/// SGL identifiers NVMe/TCP uses: data in the capsule, or moved by the
/// transport (R2T/H2CData or C2HData).
pub const SGL_IN_CAPSULE: u8 = 0x01;
/// Transport SGL data block: the data moves by R2T/H2CData or C2HData.
pub const SGL_TRANSPORT: u8 = 0x5A;

/// The fabrics opcode; its `fctype` selects the command.
pub const OPC_FABRICS: u8 = 0x7F;

/// Which way a command's data goes (the opcode's, or fctype's, low bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// No data.
    None,
    /// The host sends data (writes).
    HostToController,
    /// The controller sends data (reads, Identify).
    ControllerToHost,
    /// Both ways; not used by the commands served.
    Bidirectional,
}

impl Direction {
    /// The direction the command's opcode (or fctype for fabrics) encodes.
    pub fn of(sqe: &Sqe<'_>) -> Self {
        let code = if sqe.opcode() == OPC_FABRICS { sqe.fctype() } else { sqe.opcode() };
        match code & 3 {
            0 => Direction::None,
            1 => Direction::HostToController,
            2 => Direction::ControllerToHost,
            _ => Direction::Bidirectional,
        }
    }
}

/// The answer to one command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// `SCT << 8 | SC`.
    pub status: u16,
    /// Dwords 0 and 1 of the completion (Zone Append's LBA, a property).
    pub result: u64,
    /// Data for the host (controller-to-host commands).
    pub data: Vec<u8>,
    /// When to answer (server wall time; 0: at once).
    pub due_ns: Nanos,
}

impl Reply {
    /// A completion with `status` and nothing else.
    pub fn status(status: u16) -> Self {
        Reply { status, result: 0, data: Vec::new(), due_ns: 0 }
    }

    /// A successful completion.
    pub fn ok() -> Self {
        Self::status(sc::SUCCESS)
    }

    /// A successful completion carrying `data` to the host.
    pub fn data(data: Vec<u8>) -> Self {
        Reply { data, ..Self::ok() }
    }

    /// A successful completion with `result` in dwords 0 and 1.
    pub fn result(result: u64) -> Self {
        Reply { result, ..Self::ok() }
    }

    /// The device model's status, as its SCT and SC.
    pub fn model(status: Status) -> Self {
        Self::status(status.code())
    }

    /// The completion queue entry: result, SQ head, SQ id, command id, status.
    pub fn cqe(&self, sqhd: u16, sqid: u16, cid: u16) -> [u8; CQE_BYTES] {
        let mut cqe = [0u8; CQE_BYTES];
        cqe[..8].copy_from_slice(&self.result.to_le_bytes());
        cqe[8..10].copy_from_slice(&sqhd.to_le_bytes());
        cqe[10..12].copy_from_slice(&sqid.to_le_bytes());
        cqe[12..14].copy_from_slice(&cid.to_le_bytes());
        let sct = self.status >> 8 & 0x7;
        let code = self.status & 0xff;
        // Every error is final: the model's statuses carry Do Not Retry.
        let dnr = u16::from(self.status != sc::SUCCESS && self.status != sc::TRANSIENT_TRANSPORT_ERROR);
        let word = code << 1 | sct << 9 | dnr << 15;
        cqe[14..16].copy_from_slice(&word.to_le_bytes());
        cqe
    }
}

/// Writes `s` into `buf[at..at + len]`, padded with spaces (NVMe ASCII fields).
pub fn put_ascii(buf: &mut [u8], at: usize, len: usize, s: &str) {
    let field = &mut buf[at..at + len];
    field.fill(b' ');
    let n = s.len().min(len);
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Writes `s` into `buf[at..at + len]`, padded with NULs (NQN fields).
pub fn put_nul_padded(buf: &mut [u8], at: usize, len: usize, s: &str) {
    let field = &mut buf[at..at + len];
    field.fill(0);
    let n = s.len().min(len - 1);
    field[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Writes `v` little endian at byte `at`.
pub fn put_u16(buf: &mut [u8], at: usize, v: u16) {
    buf[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` little endian at byte `at`.
pub fn put_u32(buf: &mut [u8], at: usize, v: u32) {
    buf[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes `v` little endian at byte `at`.
pub fn put_u64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A NUL-terminated string field (an NQN in the Connect data).
pub fn nul_terminated(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_statuses_keep_their_type_and_code() {
        let cqe = Reply::model(Status::ZoneIsFull).cqe(3, 1, 0x42);
        let word = u16::from_le_bytes([cqe[14], cqe[15]]);
        assert_eq!(word >> 1 & 0xff, 0xB9);
        assert_eq!(word >> 9 & 7, 1);
        assert_eq!(word >> 15, 1, "do not retry");
        assert_eq!(u16::from_le_bytes([cqe[12], cqe[13]]), 0x42);
        assert_eq!(u16::from_le_bytes([cqe[8], cqe[9]]), 3);
        let ok = Reply::result(0x1_0000_0002).cqe(0, 0, 0);
        assert_eq!(&ok[..8], &[2, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(&ok[14..], &[0, 0]);
    }
}
