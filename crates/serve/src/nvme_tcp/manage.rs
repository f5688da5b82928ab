//! Namespace Management (create, delete) and Namespace Attachment (attach,
//! detach) over the subsystem's drive, and the Identify data about them:
//! allocated NSID lists, controller lists. See docs/nvme-tcp.md,
//! "Namespace Management".
//!
//! Attachment is the subsystem's: an attached namespace is active for every
//! controller, those connected later included. Under the dynamic controller
//! model a host that reconnects gets a new controller (a new id), and its
//! namespaces must still be there, so zonelab does not keep attachment per
//! controller; the controller list of an Attachment must still name live
//! controllers of the subsystem.

use crate::backend::Backend;
use crate::nvme_tcp::command::{put_u16, put_u32, sc, Reply, Sqe};
use crate::nvme_tcp::persist;
use crate::nvme_tcp::target::{lock, NsSlot, Target};
use std::sync::Arc;
use zonelab_device::config::namespaces::{CommandSet, NamespaceRequest};
use zonelab_device::namespaces::{AdminError, AdminStatus};
use zonelab_device::NAMESPACES_MAX;

/// Admin opcode: Namespace Management.
pub const OPC_NS_MANAGEMENT: u8 = 0x0D;
/// Admin opcode: Namespace Attachment.
pub const OPC_NS_ATTACHMENT: u8 = 0x15;

/// The LBA formats the controller offers, by FLBAS index: 512 and 4096 bytes.
pub const LBA_FORMATS: [u32; 2] = [512, 4096];
/// Entries of a controller list (NVMe Base 2.0, Figure 137).
const CONTROLLER_LIST_MAX: usize = 2047;
const PAGE_BYTES: usize = 4096;
const CSI_NVM: u8 = 0;
const CSI_ZNS: u8 = 2;

fn reply_of(e: &AdminError) -> Reply {
    Reply::status(e.status.code())
}

/// Namespace Management: SEL 0 creates a namespace from the host's data
/// (its NSID in dword 0), SEL 1 deletes the namespace NSID names.
pub fn namespace_management(target: &Target, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    if target.drive.is_none() {
        return Reply::status(sc::INVALID_OPCODE);
    }
    let result = match sqe.cdw(10) & 0xf {
        0 => parse_create(sqe, data).and_then(|request| target.create_namespace(&request)).map(u64::from),
        1 => target.delete_namespace(sqe.nsid()).map(|()| 0),
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    match result {
        Ok(nsid) => Reply::result(nsid),
        Err(e) => {
            target.log(format_args!("namespace management refused: {e}"));
            reply_of(&e)
        }
    }
}

/// The host's create data: NSZE, NCAP, FLBAS (no metadata, no protection)
/// and the command set in CDW11.
fn parse_create(sqe: &Sqe<'_>, data: &[u8]) -> Result<NamespaceRequest, AdminError> {
    let invalid = |detail: &str| AdminError::new(AdminStatus::InvalidField, detail);
    if data.len() < 384 {
        return Err(invalid("the host data structure is shorter than 384 bytes"));
    }
    let u64_at = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().expect("8 bytes"));
    let flbas = data[26];
    if flbas & 0x10 != 0 || data[29] != 0 {
        return Err(invalid("FLBAS bit 4 or DPS set: no metadata or protection information"));
    }
    let format = usize::from(flbas & 0xf | (flbas >> 5 & 3) << 4);
    let Some(&lba_bytes) = LBA_FORMATS.get(format) else {
        let detail = format!("FLBAS format {format}: the formats are 0 (512 bytes) and 1 (4096 bytes)");
        return Err(AdminError::new(AdminStatus::InvalidFormat, detail));
    };
    let command_set = match (sqe.cdw(11) >> 24) as u8 {
        CSI_NVM => CommandSet::Nvm,
        CSI_ZNS => CommandSet::Zoned,
        csi => {
            let detail = format!("CSI {csi}: 0 (NVM) and 2 (zoned) are supported");
            return Err(AdminError::new(AdminStatus::IoCommandSetNotSupported, detail));
        }
    };
    Ok(NamespaceRequest { nsze: u64_at(0), ncap: u64_at(8), lba_bytes, command_set })
}

/// Namespace Attachment: SEL 0 attaches, SEL 1 detaches the namespace NSID
/// names, for the controllers of the list the host sends.
pub fn namespace_attachment(target: &Target, sqe: &Sqe<'_>, data: &[u8]) -> Reply {
    if target.drive.is_none() {
        return Reply::status(sc::INVALID_OPCODE);
    }
    let attach = match sqe.cdw(10) & 0xf {
        0 => true,
        1 => false,
        _ => return Reply::status(sc::INVALID_FIELD),
    };
    let result = check_controller_list(target, data).and_then(|()| target.set_attached(sqe.nsid(), attach));
    match result {
        Ok(()) => Reply::ok(),
        Err(e) => {
            target.log(format_args!("namespace attachment refused: {e}"));
            reply_of(&e)
        }
    }
}

/// A controller list: a count (1 to 2047) and as many distinct ids of
/// live controllers of this subsystem.
fn check_controller_list(target: &Target, data: &[u8]) -> Result<(), AdminError> {
    let invalid = |detail: String| AdminError::new(AdminStatus::ControllerListInvalid, detail);
    let count = match data {
        [lo, hi, ..] => usize::from(u16::from_le_bytes([*lo, *hi])),
        _ => return Err(invalid("no controller list".into())),
    };
    if count == 0 || count > CONTROLLER_LIST_MAX || data.len() < 2 + 2 * count {
        return Err(invalid(format!("{count} controllers in a list of {} bytes", data.len())));
    }
    let live = target.controller_ids(0);
    let ids: Vec<u16> = data[2..2 + 2 * count].chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
    for (i, id) in ids.iter().enumerate() {
        if !live.contains(id) || ids[..i].contains(id) {
            return Err(invalid(format!("controller {id} is not a live controller of this subsystem, or is repeated")));
        }
    }
    Ok(())
}

/// Namespace Management on the target's namespaces.
impl Target {
    /// Creates a namespace on the drive, detached, with the lowest free NSID.
    pub fn create_namespace(&self, request: &NamespaceRequest) -> Result<u32, AdminError> {
        self.create_at(None, request)
    }

    /// Creates a namespace on the drive, detached: with the lowest free NSID
    /// and, with `--backing`, a new, empty image (an image left there by a
    /// namespace deleted before is removed), the namespace list saved; or at
    /// `restore`'s NSID (free) with the image a namespace created before a
    /// restart left ([`Target::restore_namespaces`] saves the list).
    fn create_at(&self, restore: Option<u32>, request: &NamespaceRequest) -> Result<u32, AdminError> {
        let Some(drive) = &self.drive else {
            return Err(AdminError::new(AdminStatus::InvalidField, "no Namespace Management on this target"));
        };
        // The drive's lock orders every change of the namespaces (and the saves of their list).
        let mut drive = lock(drive);
        if drive.config().mode != zonelab_device::Mode::Data {
            return Err(drive_error("the drive keeps no data (metadata mode): a server needs data mode".into()));
        }
        let mut slots = self.slots_mut();
        let index = match restore {
            Some(nsid) => nsid as usize - 1,
            None => slots.iter().position(Option::is_none).ok_or_else(|| {
                AdminError::new(AdminStatus::IdUnavailable, format!("all {NAMESPACES_MAX} NSIDs are allocated"))
            })?,
        };
        if slots[index].is_some() {
            return Err(AdminError::new(AdminStatus::IdUnavailable, format!("NSID {} is allocated", index + 1)));
        }
        let nsid = u32::try_from(index + 1).expect("at most NAMESPACES_MAX");
        let namespace = drive.create(nsid, request)?;
        let mut backend = Backend::new(namespace, self.pace())
            .map_err(|e| drive_error(format!("the new namespace cannot be served: {e}")))?;
        if let Some(base) = &self.backing {
            let image = persist::image_path(base, nsid);
            let kept = if restore.is_some() { Ok(()) } else { persist::remove_image(base, nsid) };
            if let Err(e) = kept.and_then(|()| backend.attach_image(&image)) {
                // Nothing was made: the drive takes its blocks back.
                drive.delete(backend.device(), backend.device_time_ns(self.wall_ns()));
                return Err(drive_error(format!("its image {}: {e}", image.display())));
            }
        }
        if let Some(recorder) = self.recorder() {
            backend.record_to(Arc::clone(recorder), nsid);
        }
        let generation = self.created.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        slots[index] = Some(NsSlot::new(backend, false, generation, Some(*request)));
        drop(slots);
        if restore.is_none() {
            self.persist_namespaces();
        }
        Ok(nsid)
    }

    /// Deletes namespace `nsid` (0xFFFFFFFF: every one): its commands that
    /// arrive later find no namespace, its blocks go back to the drive.
    pub fn delete_namespace(&self, nsid: u32) -> Result<(), AdminError> {
        self.delete_at(nsid, false)
    }

    /// [`Target::delete_namespace`]; `restoring`: the namespace list and the
    /// images are left alone ([`Target::restore_namespaces`] saves the list
    /// once at its end, and the NSID's image may be a created namespace's).
    fn delete_at(&self, nsid: u32, restoring: bool) -> Result<(), AdminError> {
        let Some(drive) = &self.drive else {
            return Err(AdminError::new(AdminStatus::InvalidField, "no Namespace Management on this target"));
        };
        let mut drive = lock(drive);
        let removed: Vec<(u32, Arc<NsSlot>)> = {
            let mut slots = self.slots_mut();
            let indexes: Vec<usize> = match nsid {
                0xFFFF_FFFF => (0..slots.len()).filter(|&i| slots[i].is_some()).collect(),
                _ => vec![allocated_index(&slots, nsid)?],
            };
            let taken = indexes.into_iter().filter_map(|i| Some((u32::try_from(i + 1).ok()?, slots[i].take()?)));
            taken.collect()
        };
        let wall_ns = self.wall_ns();
        let nsids: Vec<u32> = removed.iter().map(|(nsid, _)| *nsid).collect();
        for (nsid, slot) in removed {
            {
                // The backend's lock waits for a command running on it to end.
                let backend = lock(&slot.backend);
                slot.set_deleted();
                let namespace = backend.device();
                // A namespace of a `--namespace` device holds no blocks of the drive.
                if drive.owns(namespace) {
                    drive.delete(namespace, backend.device_time_ns(wall_ns));
                }
            }
            // Deleting an attached namespace detaches it.
            if slot.attached() {
                self.namespace_changed(nsid);
            }
        }
        if restoring {
            return Ok(());
        }
        self.persist_namespaces();
        drop(drive);
        // The list no longer names them: their images go (never before, so
        // that a crash between the two cannot lose a namespace the list keeps).
        if let Some(base) = &self.backing {
            for nsid in nsids {
                if let Err(e) = persist::remove_image(base, nsid) {
                    self.log(format_args!("deleted namespace {nsid}: {e}"));
                }
            }
        }
        Ok(())
    }

    /// Attaches (or detaches) namespace `nsid`.
    pub fn set_attached(&self, nsid: u32, attach: bool) -> Result<(), AdminError> {
        // The drive's lock orders it with creates and deletes (and the list's saves).
        let _drive = self.drive.as_ref().map(lock);
        let slot = {
            let slots = self.slots_mut();
            let index = allocated_index(&slots, nsid)?;
            Arc::clone(slots[index].as_ref().expect("allocated"))
        };
        {
            // Under the backend's lock: no command runs on it meanwhile.
            let _backend = lock(&slot.backend);
            match (slot.attached(), attach) {
                (true, true) => return Err(AdminError::new(AdminStatus::AlreadyAttached, format!("NSID {nsid}"))),
                (false, false) => return Err(AdminError::new(AdminStatus::NotAttached, format!("NSID {nsid}"))),
                _ => slot.set_attached(attach),
            };
        }
        self.namespace_changed(nsid);
        self.persist_namespaces();
        Ok(())
    }

    /// With `--backing`: the namespace list as it is now (the caller holds
    /// the drive's lock, so saves follow the changes in order). A failure is
    /// logged, not answered: the change it records has been made.
    fn persist_namespaces(&self) {
        let Some(base) = &self.backing else { return };
        let entries: Vec<persist::Entry> = self
            .slots()
            .into_iter()
            .map(|(nsid, slot)| persist::Entry { nsid, attached: slot.attached(), created: slot.request })
            .collect();
        if let Err(e) = persist::save(base, &entries) {
            self.log(format_args!("the namespace list: {e}"));
        }
    }

    /// Brings back the namespaces `entries` lists (a `--backing` list; call
    /// before serving): the configuration's it does not name are deleted,
    /// the created ones made again at their NSIDs with their images, and
    /// each attached or not as listed. The error says which entry failed.
    pub fn restore_namespaces(&self, entries: &[persist::Entry]) -> Result<(), String> {
        let listed = |nsid: u32| entries.iter().find(|e| e.nsid == nsid);
        for (nsid, _) in self.slots() {
            if listed(nsid).is_none_or(|e| e.created.is_some()) {
                self.delete_at(nsid, true).map_err(|e| format!("NSID {nsid}: {e}"))?;
            }
        }
        let configured = self.slots();
        for e in entries {
            match (&e.created, configured.iter().any(|(nsid, _)| *nsid == e.nsid)) {
                (None, false) => {
                    return Err(format!("NSID {} is listed as the configuration's, which has none", e.nsid))
                }
                (Some(request), _) => {
                    self.create_at(Some(e.nsid), request).map_err(|x| format!("NSID {}: {x}", e.nsid))?;
                }
                (None, true) => {}
            }
        }
        let _drive = self.drive.as_ref().map(lock);
        for (nsid, slot) in self.slots() {
            slot.set_attached(listed(nsid).is_some_and(|e| e.attached));
        }
        self.persist_namespaces();
        Ok(())
    }

    /// TNVMCAP and UNVMCAP in bytes, with Namespace Management.
    pub fn capacity(&self) -> Option<(u64, u64)> {
        let drive = lock(self.drive.as_ref()?);
        Some((drive.capacity_bytes(), drive.unallocated_bytes()))
    }
}

fn drive_error(detail: String) -> AdminError {
    AdminError::new(AdminStatus::InvalidField, detail)
}

/// The slot index of allocated NSID `nsid`: Invalid Namespace or Format for
/// an invalid NSID, Invalid Field for an unallocated one.
fn allocated_index(slots: &[Option<Arc<NsSlot>>], nsid: u32) -> Result<usize, AdminError> {
    if nsid == 0 || nsid > NAMESPACES_MAX {
        let detail = format!("NSID {nsid}: valid NSIDs are 1 to {NAMESPACES_MAX}");
        return Err(AdminError::new(AdminStatus::InvalidNamespace, detail));
    }
    let index = nsid as usize - 1;
    match slots.get(index) {
        Some(Some(_)) => Ok(index),
        _ => Err(AdminError::new(AdminStatus::InvalidField, format!("NSID {nsid} is not allocated"))),
    }
}

/// A namespace list (CNS 02h, 07h, 10h, 1Ah): `nsids` above `after`.
pub fn nsid_list(nsids: &[u32], after: u32) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    for (i, id) in nsids.iter().filter(|&&id| id > after).take(PAGE_BYTES / 4).enumerate() {
        put_u32(&mut p, i * 4, *id);
    }
    p
}

/// A controller list (CNS 12h, 13h): a count, then the ids.
pub fn controller_list(ids: &[u16]) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    let ids = &ids[..ids.len().min(CONTROLLER_LIST_MAX)];
    put_u16(&mut p, 0, ids.len() as u16);
    for (i, id) in ids.iter().enumerate() {
        put_u16(&mut p, 2 + 2 * i, *id);
    }
    p
}

/// The ZNS-specific Identify Namespace for NSID FFFFFFFFh: the zone size a
/// created zoned namespace has in each LBA format (LBAFE ZSZE).
pub fn common_zns_page(zone_bytes: u64) -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    for (i, bytes) in LBA_FORMATS.iter().enumerate() {
        let at = 2816 + 16 * i;
        p[at..at + 8].copy_from_slice(&(zone_bytes / u64::from(*bytes)).to_le_bytes());
    }
    p
}

/// Identify Namespace for NSID FFFFFFFFh: what every namespace shares, and
/// the LBA formats a create may pick (NLBAF, LBAF0 512 bytes, LBAF1 4096).
pub fn common_namespace_page() -> Vec<u8> {
    let mut p = vec![0u8; PAGE_BYTES];
    p[25] = (LBA_FORMATS.len() - 1) as u8; // NLBAF, 0-based
    for (i, bytes) in LBA_FORMATS.iter().enumerate() {
        p[128 + 4 * i + 2] = bytes.trailing_zeros() as u8; // LBAF: LBADS
    }
    p
}
