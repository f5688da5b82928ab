//! Block requests as the ublk driver hands them over (operation, start
//! sector, sector count) and their translation into device commands. Pure:
//! no ublk, no I/O, so it is tested on any host.

use zonelab_device::{Status, ZoneAction};

/// Linux's errno values (include/uapi/asm-generic/errno-base.h and errno.h).
/// The answers go to a Linux kernel whatever the build host, so they are the
/// Linux numbers, not the host C library's (macOS has no `EREMOTEIO`).
pub mod errno {
    /// I/O error: zone state errors and other failed commands (BLK_STS_IOERR).
    pub const EIO: i32 = 5;
    /// Invalid argument: a request that is not whole logical blocks, or a report the driver should not send.
    pub const EINVAL: i32 = 22;
    /// Value too large: Linux's answer to Too Many Active Zones.
    pub const EOVERFLOW: i32 = 75;
    /// Operation not supported: Invalid Field, Invalid Namespace, and the operations not served.
    pub const EOPNOTSUPP: i32 = 95;
    /// Too many references: Linux's answer to Too Many Open Zones.
    pub const ETOOMANYREFS: i32 = 109;
    /// Remote I/O error: Linux's answer to LBA Out of Range.
    pub const EREMOTEIO: i32 = 121;
}

/// Bytes of a block-layer sector: ublk speaks in 512-byte sectors whatever
/// the logical block size.
pub const SECTOR_BYTES: u64 = 512;

/// A ublk operation (`UBLK_IO_OP_*` in the kernel's `ublk_cmd.h`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockOp {
    /// Read sectors.
    Read,
    /// Write sectors at the write pointer (sequential zones) or anywhere (conventional).
    Write,
    /// Flush the volatile cache.
    Flush,
    /// Discard (trim) sectors; refused (EOPNOTSUPP).
    Discard,
    /// Write zeroes; refused (EOPNOTSUPP).
    WriteZeroes,
    /// Open a zone explicitly.
    ZoneOpen,
    /// Close a zone.
    ZoneClose,
    /// Finish a zone: move its write pointer to the end.
    ZoneFinish,
    /// Zone Append: write at the write pointer, answered with the sector written.
    ZoneAppend,
    /// Reset every zone.
    ZoneResetAll,
    /// Reset a zone: empty it and rewind its write pointer.
    ZoneReset,
    /// Report zones into the request's buffer.
    ReportZones,
    /// An operation code this server does not know.
    Unknown(u8),
}

impl BlockOp {
    /// Decodes the low byte of `op_flags`.
    pub fn from_code(code: u8) -> Self {
        match code {
            0 => BlockOp::Read,
            1 => BlockOp::Write,
            2 => BlockOp::Flush,
            3 => BlockOp::Discard,
            5 => BlockOp::WriteZeroes,
            10 => BlockOp::ZoneOpen,
            11 => BlockOp::ZoneClose,
            12 => BlockOp::ZoneFinish,
            13 => BlockOp::ZoneAppend,
            14 => BlockOp::ZoneResetAll,
            15 => BlockOp::ZoneReset,
            18 => BlockOp::ReportZones,
            other => BlockOp::Unknown(other),
        }
    }
}

/// One request from the driver: `count` is sectors, or zones for a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockRequest {
    /// The operation.
    pub op: BlockOp,
    /// First 512-byte sector.
    pub start_sector: u64,
    /// Sectors, or zones for a report.
    pub count: u32,
}

/// What the namespace looks like in the units translation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Logical block size in bytes.
    pub lba_bytes: u64,
    /// Namespace size in logical blocks.
    pub nsze_lbas: u64,
    /// Zone size in logical blocks.
    pub zone_lbas: u64,
    /// Largest transfer of one request: the queue's `max_sectors` as the
    /// server announces it. A larger one is refused before any buffer is sized.
    pub io_bytes_max: u64,
}

/// Largest request the server announces to the block layer (bytes); the
/// device's MDTS caps it further.
pub const IO_BYTES_MAX: u64 = 512 << 10;

impl Geometry {
    fn sectors_per_lba(&self) -> u64 {
        self.lba_bytes / SECTOR_BYTES
    }

    /// The 512-byte sector where `lba` starts.
    pub fn lba_to_sector(&self, lba: u64) -> u64 {
        lba * self.sectors_per_lba()
    }

    /// The LBA of `sector`, or EINVAL when it is not on an LBA boundary.
    pub fn sector_to_lba(&self, sector: u64) -> Result<u64, i32> {
        let per = self.sectors_per_lba();
        if !sector.is_multiple_of(per) {
            return Err(errno::EINVAL);
        }
        Ok(sector / per)
    }
}

/// The device work a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// An NVMe Read.
    Read {
        /// Starting LBA.
        slba: u64,
        /// Logical blocks (1-based).
        nlb: u32,
    },
    /// An NVMe Write.
    Write {
        /// Starting LBA.
        slba: u64,
        /// Logical blocks (1-based).
        nlb: u32,
    },
    /// A Zone Append.
    Append {
        /// Start LBA of the zone.
        zslba: u64,
        /// Logical blocks (1-based).
        nlb: u32,
    },
    /// A Zone Management Send.
    Zone {
        /// Open, close, finish or reset.
        action: ZoneAction,
        /// Start LBA of the zone.
        slba: u64,
        /// Apply to every zone the action can (reset all).
        select_all: bool,
    },
    /// A Zone Management Receive (report zones).
    Report {
        /// LBA to report from.
        slba: u64,
        /// Most zone descriptors to report.
        max_zones: u32,
    },
    /// The model's write buffer is power-loss protected: nothing to do.
    Flush,
}

impl Action {
    /// Bytes moved between host and device (0 for management commands).
    pub fn data_bytes(&self, geometry: &Geometry) -> u64 {
        match *self {
            Action::Read { nlb, .. } | Action::Write { nlb, .. } | Action::Append { nlb, .. } => {
                u64::from(nlb) * geometry.lba_bytes
            }
            _ => 0,
        }
    }
}

/// Translates a driver request, or gives the errno to fail it with.
pub fn translate(req: &BlockRequest, geometry: &Geometry) -> Result<Action, i32> {
    assert!(geometry.lba_bytes >= SECTOR_BYTES && geometry.lba_bytes.is_multiple_of(SECTOR_BYTES));
    // These carry no meaningful sector.
    match req.op {
        BlockOp::Flush => return Ok(Action::Flush),
        BlockOp::ZoneResetAll => return Ok(Action::Zone { action: ZoneAction::Reset, slba: 0, select_all: true }),
        _ => {}
    }
    let slba = geometry.sector_to_lba(req.start_sector)?;
    if slba >= geometry.nsze_lbas {
        return Err(errno_of(Status::LbaOutOfRange));
    }
    let zone_start = slba - slba % geometry.zone_lbas;
    // Linux's blkdev_zone_mgmt refuses a zone operation off a zone start
    // (EINVAL) and blk_check_zone_append an append off one (BLK_STS_IOERR);
    // a request that got past them anyway is refused the same way here.
    let zone = |action| {
        if slba != zone_start {
            return Err(errno::EINVAL);
        }
        Ok(Action::Zone { action, slba, select_all: false })
    };
    match req.op {
        BlockOp::Read => Ok(Action::Read { slba, nlb: block_count(req.count, geometry)? }),
        BlockOp::Write => Ok(Action::Write { slba, nlb: block_count(req.count, geometry)? }),
        BlockOp::ZoneAppend if slba != zone_start => Err(errno::EIO),
        BlockOp::ZoneAppend => Ok(Action::Append { zslba: zone_start, nlb: block_count(req.count, geometry)? }),
        BlockOp::ZoneOpen => zone(ZoneAction::Open),
        BlockOp::ZoneClose => zone(ZoneAction::Close),
        BlockOp::ZoneFinish => zone(ZoneAction::Finish),
        BlockOp::ZoneReset => zone(ZoneAction::Reset),
        BlockOp::ReportZones if req.count > 0 => Ok(Action::Report { slba: zone_start, max_zones: req.count }),
        BlockOp::ReportZones => Err(errno::EINVAL),
        BlockOp::Flush | BlockOp::ZoneResetAll => unreachable!("handled above"),
        BlockOp::Discard | BlockOp::WriteZeroes | BlockOp::Unknown(_) => Err(errno::EOPNOTSUPP),
    }
}

/// Logical blocks in `sectors`: EINVAL for none, a partial block or more
/// than the largest transfer announced.
fn block_count(sectors: u32, geometry: &Geometry) -> Result<u32, i32> {
    let nlb = geometry.sector_to_lba(u64::from(sectors))?;
    if nlb == 0 || u64::from(sectors) * SECTOR_BYTES > geometry.io_bytes_max {
        return Err(errno::EINVAL);
    }
    Ok(u32::try_from(nlb).expect("fewer blocks than sectors"))
}

/// The errno Linux's NVMe driver reports for a completion status
/// (`nvme_error_status` then `blk_status_to_errno`); 0 for success.
pub fn errno_of(status: Status) -> i32 {
    match status {
        Status::Success => 0,
        Status::InvalidField => errno::EOPNOTSUPP,
        Status::InvalidNamespace | Status::FdpDisabled => errno::EOPNOTSUPP,
        Status::LbaOutOfRange => errno::EREMOTEIO,
        Status::TooManyActiveZones => errno::EOVERFLOW,
        Status::TooManyOpenZones => errno::ETOOMANYREFS,
        // Linux's nvme_error_status has no case for 0x1B7: BLK_STS_IOERR.
        Status::InvalidZoneOperation
        | Status::ZrwaResourcesUnavailable
        | Status::ZoneBoundaryError
        | Status::ZoneIsFull
        | Status::ZoneIsReadOnly
        | Status::ZoneIsOffline
        | Status::ZoneInvalidWrite
        | Status::ZoneInvalidStateTransition
        | Status::InvalidPlacementHandleList => errno::EIO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const G4K: Geometry = Geometry { lba_bytes: 4096, nsze_lbas: 16 * 16384, zone_lbas: 16384, io_bytes_max: 1 << 20 };
    const G512: Geometry = Geometry { lba_bytes: 512, nsze_lbas: 8 * 1024, zone_lbas: 1024, io_bytes_max: 1 << 20 };

    fn req(op: BlockOp, start_sector: u64, count: u32) -> BlockRequest {
        BlockRequest { op, start_sector, count }
    }

    #[cfg(all(feature = "ublk", target_os = "linux"))]
    #[test]
    fn errno_values_are_linuxs() {
        let pairs = [
            (errno::EIO, libc::EIO),
            (errno::EINVAL, libc::EINVAL),
            (errno::EOVERFLOW, libc::EOVERFLOW),
            (errno::EOPNOTSUPP, libc::EOPNOTSUPP),
            (errno::ETOOMANYREFS, libc::ETOOMANYREFS),
            (errno::EREMOTEIO, libc::EREMOTEIO),
        ];
        for (ours, linux) in pairs {
            assert_eq!(ours, linux);
        }
    }

    #[cfg(feature = "ublk")]
    #[test]
    fn op_codes_follow_ublk_cmd_h() {
        use libublk::sys;
        let pairs = [
            (sys::UBLK_IO_OP_READ, BlockOp::Read),
            (sys::UBLK_IO_OP_WRITE, BlockOp::Write),
            (sys::UBLK_IO_OP_FLUSH, BlockOp::Flush),
            (sys::UBLK_IO_OP_DISCARD, BlockOp::Discard),
            (sys::UBLK_IO_OP_WRITE_ZEROES, BlockOp::WriteZeroes),
            (sys::UBLK_IO_OP_ZONE_OPEN, BlockOp::ZoneOpen),
            (sys::UBLK_IO_OP_ZONE_CLOSE, BlockOp::ZoneClose),
            (sys::UBLK_IO_OP_ZONE_FINISH, BlockOp::ZoneFinish),
            (sys::UBLK_IO_OP_ZONE_APPEND, BlockOp::ZoneAppend),
            (sys::UBLK_IO_OP_ZONE_RESET_ALL, BlockOp::ZoneResetAll),
            (sys::UBLK_IO_OP_ZONE_RESET, BlockOp::ZoneReset),
            (sys::UBLK_IO_OP_REPORT_ZONES, BlockOp::ReportZones),
        ];
        for (code, op) in pairs {
            assert_eq!(BlockOp::from_code(code as u8), op, "code {code}");
        }
        assert_eq!(BlockOp::from_code(4), BlockOp::Unknown(4));
    }

    #[test]
    fn reads_and_writes_convert_sectors_to_blocks() {
        assert_eq!(translate(&req(BlockOp::Read, 16, 8), &G4K), Ok(Action::Read { slba: 2, nlb: 1 }));
        assert_eq!(translate(&req(BlockOp::Write, 131072, 256), &G4K), Ok(Action::Write { slba: 16384, nlb: 32 }));
        assert_eq!(translate(&req(BlockOp::Write, 3, 5), &G512), Ok(Action::Write { slba: 3, nlb: 5 }));
    }

    #[test]
    fn zone_operations_off_a_zone_start_are_refused() {
        let inside = 131072 + 8;
        for op in [BlockOp::ZoneOpen, BlockOp::ZoneClose, BlockOp::ZoneFinish, BlockOp::ZoneReset] {
            assert_eq!(translate(&req(op, inside, 0), &G4K), Err(errno::EINVAL), "{op:?}");
            assert!(translate(&req(op, 131072, 0), &G4K).is_ok(), "{op:?} at the zone start");
        }
        assert_eq!(translate(&req(BlockOp::ZoneAppend, inside, 8), &G4K), Err(errno::EIO));
        // A report starts at the zone holding the sector, as blkdev_report_zones does.
        assert_eq!(
            translate(&req(BlockOp::ReportZones, inside, 2), &G4K),
            Ok(Action::Report { slba: 16384, max_zones: 2 })
        );
    }

    #[test]
    fn transfers_beyond_the_announced_maximum_are_refused() {
        let max_sectors = (G4K.io_bytes_max / SECTOR_BYTES) as u32;
        assert!(translate(&req(BlockOp::Write, 0, max_sectors), &G4K).is_ok());
        assert_eq!(translate(&req(BlockOp::Write, 0, max_sectors + 8), &G4K), Err(errno::EINVAL));
        assert_eq!(translate(&req(BlockOp::Read, 0, u32::MAX - 7), &G4K), Err(errno::EINVAL));
    }

    #[test]
    fn partial_blocks_and_empty_transfers_are_invalid() {
        assert_eq!(translate(&req(BlockOp::Read, 4, 8), &G4K), Err(errno::EINVAL));
        assert_eq!(translate(&req(BlockOp::Write, 8, 4), &G4K), Err(errno::EINVAL));
        assert_eq!(translate(&req(BlockOp::Write, 8, 0), &G4K), Err(errno::EINVAL));
        assert_eq!(translate(&req(BlockOp::ReportZones, 0, 0), &G4K), Err(errno::EINVAL));
    }

    #[test]
    fn requests_past_the_namespace_are_out_of_range() {
        let end_sector = G4K.lba_to_sector(G4K.nsze_lbas);
        assert_eq!(translate(&req(BlockOp::Read, end_sector, 8), &G4K), Err(errno::EREMOTEIO));
    }

    #[test]
    fn zone_operations_address_the_zone_start() {
        let zone_3 = G4K.lba_to_sector(3 * 16384);
        assert_eq!(
            translate(&req(BlockOp::ZoneAppend, zone_3, 16), &G4K),
            Ok(Action::Append { zslba: 3 * 16384, nlb: 2 })
        );
        let ops = [
            (BlockOp::ZoneOpen, ZoneAction::Open),
            (BlockOp::ZoneClose, ZoneAction::Close),
            (BlockOp::ZoneFinish, ZoneAction::Finish),
            (BlockOp::ZoneReset, ZoneAction::Reset),
        ];
        for (op, action) in ops {
            assert_eq!(
                translate(&req(op, zone_3, 0), &G4K),
                Ok(Action::Zone { action, slba: 3 * 16384, select_all: false })
            );
        }
        assert_eq!(
            translate(&req(BlockOp::ZoneResetAll, 0, 0), &G4K),
            Ok(Action::Zone { action: ZoneAction::Reset, slba: 0, select_all: true })
        );
        assert_eq!(
            translate(&req(BlockOp::ReportZones, G4K.lba_to_sector(16384), 7), &G4K),
            Ok(Action::Report { slba: 16384, max_zones: 7 })
        );
    }

    #[test]
    fn unsupported_operations_fail_with_eopnotsupp() {
        for op in [BlockOp::Discard, BlockOp::WriteZeroes, BlockOp::Unknown(42)] {
            assert_eq!(translate(&req(op, 0, 8), &G4K), Err(errno::EOPNOTSUPP));
        }
        assert_eq!(translate(&req(BlockOp::Flush, 0, 0), &G4K), Ok(Action::Flush));
    }

    #[test]
    fn flush_and_reset_all_ignore_the_sector() {
        for sector in [3, u64::MAX] {
            assert_eq!(translate(&req(BlockOp::Flush, sector, 0), &G4K), Ok(Action::Flush));
            assert_eq!(
                translate(&req(BlockOp::ZoneResetAll, sector, 0), &G4K),
                Ok(Action::Zone { action: ZoneAction::Reset, slba: 0, select_all: true })
            );
        }
    }

    #[test]
    fn data_bytes_count_only_transfers() {
        assert_eq!(Action::Write { slba: 0, nlb: 3 }.data_bytes(&G4K), 3 * 4096);
        assert_eq!(Action::Report { slba: 0, max_zones: 3 }.data_bytes(&G4K), 0);
    }

    #[test]
    fn errnos_match_linux_nvme() {
        let expected = [
            (Status::Success, 0),
            (Status::InvalidField, errno::EOPNOTSUPP),
            (Status::LbaOutOfRange, errno::EREMOTEIO),
            (Status::InvalidZoneOperation, errno::EIO),
            (Status::ZrwaResourcesUnavailable, errno::EIO),
            (Status::ZoneBoundaryError, errno::EIO),
            (Status::ZoneIsFull, errno::EIO),
            (Status::ZoneIsReadOnly, errno::EIO),
            (Status::ZoneIsOffline, errno::EIO),
            (Status::ZoneInvalidWrite, errno::EIO),
            (Status::TooManyActiveZones, errno::EOVERFLOW),
            (Status::TooManyOpenZones, errno::ETOOMANYREFS),
            (Status::ZoneInvalidStateTransition, errno::EIO),
            (Status::InvalidNamespace, errno::EOPNOTSUPP),
            (Status::FdpDisabled, errno::EOPNOTSUPP),
            (Status::InvalidPlacementHandleList, errno::EIO),
        ];
        assert_eq!(expected.len(), Status::ALL.len());
        for (status, errno) in expected {
            assert_eq!(errno_of(status), errno, "{status}");
        }
    }
}
