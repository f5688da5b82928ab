//! Namespace Management and Attachment over the wire: a host creates,
//! attaches, uses, detaches and deletes namespaces on the drive.

use super::command::{put_u16, put_u64, sc};
use super::target::{NamespaceBackend as Backend, Target};
use super::tests::{identify, sqe, u64_at, Completion, Host, NQN};
use crate::backend::Pace;
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use zonelab_device::{preset, DeviceOptions, Namespaces};

/// A zn540 of 24 blocks per plane (rows of 1152 MiB), zones of 64 MiB (48
/// MiB capacity), its one namespace of 4 zones holding them all, served
/// with Namespace Management.
fn start_managed() -> (SocketAddr, Arc<Target>) {
    let (drive, namespaces) = Namespaces::new(managed_config()).unwrap().into_parts();
    let backends: Vec<Backend> = namespaces.into_iter().map(|ns| Backend::new(ns, Pace::Asap).unwrap()).collect();
    let target = Arc::new(Target::new(NQN.into(), backends).with_drive(drive));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let t = Arc::clone(&target);
    std::thread::spawn(move || super::accept_loop(&listener, &t));
    (addr, target)
}

/// The drive [`start_managed`] serves.
fn managed_config() -> zonelab_device::DeviceConfig {
    let opts = DeviceOptions {
        zones: Some(4),
        zone_size_bytes: Some(64 << 20),
        zone_capacity_bytes: Some(48 << 20),
        data: true,
        ..Default::default()
    };
    let mut config = opts.apply(preset("zn540").unwrap()).unwrap();
    config.flash.blocks_per_plane = 24;
    config
}

const ROW: u64 = 1152 << 20;

/// Namespace Management create: NSZE = NCAP = `nsze`, LBA format `flbas`, command set `csi`.
fn create(admin: &mut Host, nsze: u64, flbas: u8, csi: u32, in_capsule: bool) -> Completion {
    let mut data = vec![0u8; 4096];
    put_u64(&mut data, 0, nsze);
    put_u64(&mut data, 8, nsze);
    data[26] = flbas;
    admin.command(sqe(0x0D, 0, &[(10, 0), (11, csi << 24)]), &data, in_capsule, 0)
}

fn delete(admin: &mut Host, nsid: u32) -> u16 {
    admin.admin(sqe(0x0D, nsid, &[(10, 1)]), 0).status
}

/// Namespace Attachment (`sel` 0 attach, 1 detach) for the controllers `ids`.
fn attachment(admin: &mut Host, nsid: u32, sel: u32, ids: &[u16]) -> u16 {
    let mut list = vec![0u8; 4096];
    put_u16(&mut list, 0, ids.len() as u16);
    for (i, id) in ids.iter().enumerate() {
        put_u16(&mut list, 2 + 2 * i, *id);
    }
    admin.command(sqe(0x15, nsid, &[(10, sel)]), &list, false, 0).status
}

fn u128_at(b: &[u8], i: usize) -> u128 {
    u128::from_le_bytes(b[i..i + 16].try_into().unwrap())
}

fn ids32(c: &Completion) -> Vec<u32> {
    c.data.chunks_exact(4).map(|w| u32::from_le_bytes(w.try_into().unwrap())).take_while(|&id| id != 0).collect()
}

fn ids16(c: &Completion) -> Vec<u16> {
    let count = usize::from(u16::from_le_bytes([c.data[0], c.data[1]]));
    c.data[2..2 + 2 * count].chunks_exact(2).map(|w| u16::from_le_bytes([w[0], w[1]])).collect()
}

/// Blocks of 512 bytes written (`byte`) or read on namespace `nsid`.
fn io512(host: &mut Host, opcode: u8, nsid: u32, slba: u64, blocks: usize, byte: u8) -> Completion {
    let cdws = [(10, slba as u32), (11, (slba >> 32) as u32), (12, blocks as u32 - 1)];
    let out = if opcode == 0x02 { Vec::new() } else { vec![byte; blocks * 512] };
    let in_bytes = if opcode == 0x02 { blocks * 512 } else { 0 };
    host.command(sqe(opcode, nsid, &cdws), &out, false, in_bytes)
}

#[test]
fn a_host_shrinks_the_zoned_namespace_and_creates_an_nvm_one_beside_it() {
    let (addr, _target) = start_managed();
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    let ctrl = identify(&mut admin, 1, 0, 0);
    assert_ne!(u16::from_le_bytes([ctrl.data[256], ctrl.data[257]]) & 1 << 3, 0, "OACS: namespace management");
    assert_eq!(u32::from_le_bytes(ctrl.data[516..520].try_into().unwrap()), 16, "NN");
    assert_eq!((u128_at(&ctrl.data, 280), u128_at(&ctrl.data, 296)), (u128::from(24 * ROW), 0), "TNVMCAP, UNVMCAP");
    let first_uuid = identify(&mut admin, 3, 0, 1).data[4..20].to_vec();
    // The shipped namespace holds the flash: no room until it goes.
    assert_eq!(create(&mut admin, 2 * 16384, 1, 2, true).status, 0x115, "Namespace Insufficient Capacity");
    assert_eq!(delete(&mut admin, 1), sc::SUCCESS);
    assert_eq!(u128_at(&identify(&mut admin, 1, 0, 0).data, 296), u128::from(24 * ROW), "UNVMCAP");
    assert!(ids32(&identify(&mut admin, 2, 0, 0)).is_empty(), "no active namespace");
    // nvme-cli finds the LBA formats in the common Identify Namespace.
    let common = identify(&mut admin, 0, 0, 0xFFFF_FFFF);
    assert_eq!((common.data[25], common.data[130], common.data[134]), (1, 9, 12), "NLBAF, LBAF0, LBAF1");
    let zns = identify(&mut admin, 5, 2, 0xFFFF_FFFF);
    assert_eq!((u64_at(&zns.data, 2816), u64_at(&zns.data, 2832)), (131_072, 16_384), "zone size per format");
    // 4 GiB of 512-byte blocks (NVM, the data sent by R2T), then 2 zones of 4 KiB blocks (in the capsule).
    let nvm = create(&mut admin, 8 << 20, 0, 0, false);
    assert_eq!((nvm.status, nvm.result), (sc::SUCCESS, 1), "NSID 1 again");
    let zoned = create(&mut admin, 2 * 16384, 1, 2, true);
    assert_eq!((zoned.status, zoned.result), (sc::SUCCESS, 2));
    let unallocated = u128_at(&identify(&mut admin, 1, 0, 0).data, 296);
    assert_eq!(unallocated, u128::from((24 - 9 - 2) * ROW), "4 rows, the GC reserve and one; a row per zone");
    assert_eq!(ids32(&identify(&mut admin, 0x10, 0, 0)), [1, 2], "allocated NSIDs");
    assert_eq!(ids32(&identify(&mut admin, 0x1A, 2, 0)), [2], "allocated zoned NSIDs");
    assert!(ids32(&identify(&mut admin, 2, 0, 0)).is_empty(), "not attached yet");
    assert_eq!(u64_at(&identify(&mut admin, 0x11, 0, 1).data, 0), 8 << 20, "NSZE of an allocated NSID");
    assert_eq!(u64_at(&identify(&mut admin, 0, 0, 1).data, 0), 0, "an inactive NSID's Identify is zeros");
    assert!(ids16(&identify(&mut admin, 0x12, 0, 1)).is_empty(), "attached to no controller");
    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(io512(&mut io, 0x01, 1, 0, 8, 1).status, sc::INVALID_FIELD, "an inactive NSID");

    for nsid in [1, 2] {
        assert_eq!(attachment(&mut admin, nsid, 0, &[cntlid]), sc::SUCCESS);
    }
    assert_eq!(attachment(&mut admin, 1, 0, &[cntlid]), 0x118, "Namespace Already Attached");
    assert_eq!(ids32(&identify(&mut admin, 2, 0, 0)), [1, 2]);
    assert_eq!(ids16(&identify(&mut admin, 0x12, 0, 2)), [cntlid]);
    assert_eq!(ids16(&identify(&mut admin, 0x13, 0, 0)), [cntlid]);
    assert_eq!(identify(&mut admin, 3, 0, 1).data[24], 0, "NSID 1 is NVM");
    assert_ne!(identify(&mut admin, 3, 0, 1).data[4..20], first_uuid[..], "a new namespace has a new UUID");
    assert_eq!(identify(&mut admin, 3, 0, 2).data[24], 2, "NSID 2 is zoned");
    // Both take writes and read them back: random LBAs on NVM, sequential in the zone.
    for (slba, byte) in [(5_000_000u64, 0xA1), (8, 0xA2), ((8 << 20) - 8, 0xA3)] {
        assert_eq!(io512(&mut io, 0x01, 1, slba, 8, byte).status, sc::SUCCESS, "NVM write at {slba}");
    }
    assert_eq!(super::tests::io_on(&mut io, 0x01, 2, 0, 4, 0xB1).status, sc::SUCCESS);
    for (slba, byte) in [(5_000_000u64, 0xA1), (8, 0xA2), ((8 << 20) - 8, 0xA3)] {
        let back = io512(&mut io, 0x02, 1, slba, 8, 0);
        assert!(back.status == sc::SUCCESS && back.data.iter().all(|&b| b == byte), "NVM read at {slba}");
    }
    let back = super::tests::io_on(&mut io, 0x02, 2, 0, 4, 0);
    assert!(back.status == sc::SUCCESS && back.data.iter().all(|&b| b == 0xB1));
    assert_eq!(super::tests::io_on(&mut io, 0x7D, 1, 0, 1, 0).status, sc::INVALID_OPCODE, "no append on NVM");

    assert_eq!(attachment(&mut admin, 2, 1, &[cntlid]), sc::SUCCESS);
    assert_eq!(attachment(&mut admin, 2, 1, &[cntlid]), 0x11A, "Namespace Not Attached");
    assert_eq!(super::tests::io_on(&mut io, 0x02, 2, 0, 1, 0).status, sc::INVALID_FIELD, "detached: inactive");
    assert_eq!(delete(&mut admin, 2), sc::SUCCESS);
    assert_eq!(delete(&mut admin, 1), sc::SUCCESS, "an attached namespace is detached and deleted");
    assert_eq!(io512(&mut io, 0x02, 1, 0, 1, 0).status, sc::INVALID_NAMESPACE, "deleted");
    assert_eq!(u128_at(&identify(&mut admin, 1, 0, 0).data, 296), u128::from(24 * ROW), "all capacity back");
}

#[test]
fn bad_namespace_management_gets_a_controllers_statuses() {
    let (addr, target) = start_managed();
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    assert_eq!(delete(&mut admin, 1), sc::SUCCESS);
    assert_eq!(delete(&mut admin, 1), sc::INVALID_FIELD, "unallocated");
    for nsid in [0, 17] {
        assert_eq!(delete(&mut admin, nsid), sc::INVALID_NAMESPACE, "NSID {nsid}");
    }
    assert_eq!(create(&mut admin, 16384, 2, 2, true).status, 0x10A, "Invalid Format: FLBAS 2");
    assert_eq!(create(&mut admin, 16384, 1, 1, true).status, 0x029, "I/O Command Set Not Supported: CSI 1");
    assert_eq!(create(&mut admin, 0, 1, 2, true).status, sc::INVALID_FIELD, "NSZE 0");
    let mut thin = vec![0u8; 4096];
    put_u64(&mut thin, 0, 16384);
    put_u64(&mut thin, 8, 8192);
    thin[26] = 1;
    let c = admin.command(sqe(0x0D, 0, &[(10, 0), (11, 2 << 24)]), &thin, true, 0);
    assert_eq!(c.status, 0x11B, "Thin Provisioning Not Supported");
    assert_eq!(admin.command(sqe(0x0D, 0, &[(10, 0)]), &thin[..64], true, 0).status, sc::INVALID_FIELD, "short data");
    assert_eq!(admin.admin(sqe(0x0D, 0, &[(10, 7)]), 0).status, sc::INVALID_FIELD, "SEL 7");
    // Every NSID allocated: the seventeenth create has none left.
    for nsid in 1..=16 {
        let c = create(&mut admin, 16384, 1, 2, true);
        assert_eq!((c.status, c.result), (sc::SUCCESS, nsid));
    }
    assert_eq!(create(&mut admin, 16384, 1, 2, true).status, 0x116, "Namespace Identifier Unavailable");
    assert_eq!(attachment(&mut admin, 3, 0, &[]), 0x11C, "an empty controller list");
    assert_eq!(attachment(&mut admin, 3, 0, &[cntlid + 1]), 0x11C, "no such controller");
    assert_eq!(attachment(&mut admin, 3, 0, &[cntlid, cntlid]), 0x11C, "twice");
    assert_eq!(attachment(&mut admin, 3, 2, &[cntlid]), sc::INVALID_FIELD, "SEL 2");
    assert_eq!(attachment(&mut admin, 3, 0, &[cntlid]), sc::SUCCESS);
    // Deleting all at once gives the whole drive back.
    assert_eq!(delete(&mut admin, 0xFFFF_FFFF), sc::SUCCESS);
    assert_eq!(target.namespace_count(), 0);
    assert_eq!(u128_at(&identify(&mut admin, 1, 0, 0).data, 296), u128::from(24 * ROW));
}

#[test]
fn a_target_without_a_drive_has_no_namespace_management() {
    let (addr, _target) = super::tests::start();
    let (mut admin, _) = Host::attach(addr, NQN);
    let ctrl = identify(&mut admin, 1, 0, 0);
    assert_eq!(u16::from_le_bytes([ctrl.data[256], ctrl.data[257]]) & 1 << 3, 0, "OACS");
    assert_eq!(create(&mut admin, 16384, 1, 2, true).status, sc::INVALID_OPCODE);
    assert_eq!(delete(&mut admin, 1), sc::INVALID_OPCODE);
    assert_eq!(attachment(&mut admin, 1, 1, &[1]), sc::INVALID_OPCODE);
}

/// Sends a command without waiting for its answer.
fn send_only(host: &mut Host, mut s: [u8; super::pdu::SQE_BYTES], cid: u16) {
    put_u16(&mut s, 2, cid);
    s[39] = super::command::SGL_TRANSPORT;
    host.send(&super::pdu::Pdu::CapsuleCmd { sqe: s, data: Vec::new(), data_ok: true });
}

/// The next completions, by command id: (status, dword 0).
fn completions(host: &mut Host, count: usize) -> std::collections::BTreeMap<u16, (u16, u64)> {
    (0..count)
        .map(|_| match host.recv() {
            super::pdu::Pdu::CapsuleResp { cqe } => {
                let c = super::tests::completion(&cqe, u16::from_le_bytes([cqe[12], cqe[13]]), Vec::new());
                (u16::from_le_bytes([cqe[12], cqe[13]]), (c.status, c.result))
            }
            other => panic!("expected a completion, got {other:?}"),
        })
        .collect()
}

#[test]
fn attaching_and_detaching_raise_the_namespace_attribute_notice() {
    let (addr, _target) = start_managed();
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    let ctrl = identify(&mut admin, 1, 0, 0);
    assert_ne!(u32::from_le_bytes(ctrl.data[92..96].try_into().unwrap()) & 1 << 8, 0, "OAES: namespace attribute");
    assert_eq!(admin.admin(sqe(0x09, 0, &[(10, 0x0B), (11, 1 << 8)]), 0).status, sc::SUCCESS, "enable the notices");
    // A held request completes when the attached namespace 1 is deleted (it is detached with it).
    send_only(&mut admin, sqe(0x0C, 0, &[]), 900);
    send_only(&mut admin, sqe(0x0D, 1, &[(10, 1)]), 901);
    let done = completions(&mut admin, 2);
    assert_eq!(done[&900], (sc::SUCCESS, 0x04_0002), "notice, Namespace Attribute Changed, log page 04h");
    assert_eq!(done[&901].0, sc::SUCCESS);
    let log = |admin: &mut Host| admin.admin(sqe(0x02, 0xFFFF_FFFF, &[(10, 0x04 | 1023 << 16)]), 4096);
    assert_eq!(ids32(&log(&mut admin)), [1], "the Changed Namespace List");
    assert!(ids32(&log(&mut admin)).is_empty(), "read: cleared");
    // Creating is no notice; attaching is, to the next held request.
    send_only(&mut admin, sqe(0x0C, 0, &[]), 902);
    assert_eq!(create(&mut admin, 16384, 1, 2, true).status, sc::SUCCESS);
    send_only(&mut admin, sqe(0x15, 1, &[(10, 0)]), 903);
    let mut list = vec![0u8; 4096];
    put_u16(&mut list, 0, 1);
    put_u16(&mut list, 2, cntlid);
    // (The attachment's data goes in the capsule: send it so.)
    let mut s = sqe(0x15, 1, &[(10, 0)]);
    put_u16(&mut s, 2, 904);
    s[39] = super::command::SGL_IN_CAPSULE;
    super::command::put_u32(&mut s, 32, 4096);
    admin.send(&super::pdu::Pdu::CapsuleCmd { sqe: s, data: list, data_ok: true });
    let done = completions(&mut admin, 3);
    assert_eq!(done[&903].0, 0x11C, "an attachment without a controller list");
    assert_eq!(done[&904].0, sc::SUCCESS);
    assert_eq!(done[&902], (sc::SUCCESS, 0x04_0002));
    assert_eq!(ids32(&log(&mut admin)), [1]);
}

/// The managed zn540 of [`start_managed`] as a target keeping `--backing base`
/// (not served: the test drives it directly), its namespace list restored.
fn backed_target(base: &std::path::Path) -> Target {
    let listed = super::persist::load(base).unwrap();
    let (drive, namespaces) = Namespaces::new(managed_config()).unwrap().into_parts();
    let kept = listed.as_ref().is_none_or(|l| l.iter().any(|e| e.nsid == 1 && e.created.is_none()));
    let backends: Vec<Backend> = namespaces
        .into_iter()
        .map(|ns| {
            let backend = Backend::new(ns, Pace::Asap).unwrap();
            if kept {
                backend.with_image(&super::persist::image_path(base, 1)).unwrap()
            } else {
                backend
            }
        })
        .collect();
    let target = Target::new(NQN.into(), backends).with_drive(drive).with_backing(base.to_path_buf());
    if let Some(entries) = listed {
        target.restore_namespaces(&entries).unwrap();
    }
    target
}

#[test]
fn created_namespaces_their_data_and_attachment_survive_a_restart() {
    use zonelab_device::config::namespaces::{CommandSet, NamespaceRequest};
    use zonelab_device::{Command, Payload, Status};
    let dir = crate::scratch_dir("nsmgmt-backing");
    let base = dir.join("drive.img");
    let nvm = NamespaceRequest { nsze: 16384, ncap: 16384, lba_bytes: 512, command_set: CommandSet::Nvm };
    let data: Vec<u8> = (0..8 * 512).map(|i| (i % 251) as u8).collect();
    let slot = |t: &Target, nsid: u32| t.slots().into_iter().find(|(n, _)| *n == nsid).map(|(_, s)| s);
    {
        let first = backed_target(&base);
        // NSID 1 (the configuration's, on every block) written, then deleted.
        let write = Command::Write { slba: 100, nlb: 8, payload: Payload::Bytes(&data), fua: false, placement: None };
        let s = slot(&first, 1).unwrap();
        let zoned = Command::Write { slba: 0, nlb: 1, payload: Payload::Bytes(&data), fua: false, placement: None };
        assert_eq!(s.backend.lock().unwrap().submit(0, &zoned, None).unwrap().status, Status::Success);
        first.delete_namespace(1).unwrap();
        // Two created: NSID 1 again (detached), and 2, attached and written.
        assert_eq!(first.create_namespace(&nvm).unwrap(), 1);
        assert_eq!(first.create_namespace(&nvm).unwrap(), 2);
        first.set_attached(2, true).unwrap();
        let s = slot(&first, 2).unwrap();
        assert_eq!(s.backend.lock().unwrap().submit(0, &write, None).unwrap().status, Status::Success);
    } // as after kill -9: nothing more is written
    let listed = std::fs::read_to_string(dir.join("drive.img.namespaces")).unwrap();
    assert_eq!(
        listed,
        "zonelab-namespaces 1\n1 created detached nvm 512 16384 16384\n2 created attached nvm 512 16384 16384\n"
    );
    let second = backed_target(&base);
    assert_eq!(second.nsids(false), [1, 2]);
    assert_eq!(second.nsids(true), [2], "attachment as it was");
    let mut out = vec![0u8; 8 * 512];
    let read = Command::Read { slba: 0, nlb: 8 };
    let s = slot(&second, 1).unwrap();
    assert_eq!(s.backend.lock().unwrap().submit(0, &read, Some(&mut out)).unwrap().status, Status::Success);
    assert!(out.iter().all(|&b| b == 0), "NSID 1 is the new, empty namespace, not the deleted one");
    let read = Command::Read { slba: 100, nlb: 8 };
    let s = slot(&second, 2).unwrap();
    assert_eq!(s.backend.lock().unwrap().submit(0, &read, Some(&mut out)).unwrap().status, Status::Success);
    assert_eq!(out, data, "the created namespace's data");
    // A deleted namespace's image goes; its NSID stays free after a restart.
    second.delete_namespace(2).unwrap();
    assert!(!dir.join("drive.img.ns2").exists() && !dir.join("drive.img.ns2.zones").exists());
    drop(second);
    let third = backed_target(&base);
    assert_eq!(third.nsids(false), [1]);
    drop(third);
    std::fs::remove_dir_all(&dir).unwrap();
}
