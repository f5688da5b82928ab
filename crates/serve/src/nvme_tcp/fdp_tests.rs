//! Flexible Data Placement over the wire: placement by the write's
//! directive, Reclaim Unit Handle Status and Update, the FDP logs and
//! features, their statuses, and hostile lengths.

use super::command::sc;
use super::target::NamespaceBackend as Backend;
use super::tests::{alone, backend, identify, sqe, start_with, u64_at, Completion, Host, NQN};
use crate::backend::Pace;
use std::net::SocketAddr;

/// The zn540-fdp's scale model (as the device's own FDP tests), data kept.
fn fdp_backend() -> Backend {
    let mut c = zonelab_device::fdp_scale_model();
    c.mode = zonelab_device::Mode::Data;
    Backend::new(alone(c), Pace::Asap).unwrap()
}

/// LBAs of a reclaim unit: a 768 KiB block on each of 4 dies.
const RU_LBAS: u64 = 4 * 192;

/// NSID 1 with FDP, NSID 2 the zoned namespace of the other tests; an
/// admin queue and an I/O queue.
fn fdp_target() -> (SocketAddr, Host, Host) {
    let (addr, _target) = start_with(vec![fdp_backend(), backend()]);
    let (admin, cntlid) = Host::attach(addr, NQN);
    let io = Host::io_queue(addr, cntlid, 1);
    (addr, admin, io)
}

/// A write of `blocks` 4 KiB blocks at `slba` of NSID 1, with the data
/// placement directive naming `pid` if given.
fn write_placed(io: &mut Host, slba: u64, blocks: usize, pid: Option<u16>) -> u16 {
    let dtype = if pid.is_some() { 2 << 20 } else { 0 };
    let cdws = [(10, slba as u32), (11, 0), (12, (blocks as u32 - 1) | dtype), (13, u32::from(pid.unwrap_or(0)) << 16)];
    io.command(sqe(0x01, 1, &cdws), &vec![0x5A; blocks * 4096], false, 0).status
}

/// Reclaim Unit Handle Status of `nsid` into `bytes`: the completion.
fn ruh_status(io: &mut Host, nsid: u32, bytes: usize) -> Completion {
    io.admin(sqe(0x12, nsid, &[(10, 1), (11, (bytes / 4 - 1) as u32)]), bytes)
}

/// (PID, RUHID, RUAMW) of each descriptor of a Reclaim Unit Handle Status.
fn handles(c: &Completion) -> Vec<(u16, u16, u64)> {
    assert_eq!(c.status, sc::SUCCESS);
    let count = usize::from(u16::from_le_bytes([c.data[14], c.data[15]]));
    let descriptors = c.data[16..].chunks_exact(32).take(count);
    descriptors.map(|d| (u16::from_le_bytes([d[0], d[1]]), u16::from_le_bytes([d[2], d[3]]), u64_at(d, 8))).collect()
}

/// Reclaim Unit Handle Update of `pids` (NPID from the list) on NSID 1.
fn ruh_update(io: &mut Host, pids: &[u16]) -> u16 {
    let data: Vec<u8> = pids.iter().flat_map(|p| p.to_le_bytes()).collect();
    let cdw10 = 1 | (pids.len() as u32 - 1) << 16;
    io.command(sqe(0x1D, 1, &[(10, cdw10)]), &data, true, 0).status
}

/// Get Log Page `lid` of endurance group `lsi` (LSP `lsp`), `bytes` from `offset`.
fn fdp_log(admin: &mut Host, lid: u32, lsi: u32, lsp: u32, offset: u32, bytes: usize) -> Completion {
    let cdw10 = lid | lsp << 8 | ((bytes / 4 - 1) as u32) << 16;
    admin.admin(sqe(0x02, 0, &[(10, cdw10), (11, lsi << 16), (12, offset)]), bytes)
}

/// Set Features FDP Events as nvme-cli sends it: 255 bytes, the first NOET the types.
fn set_events(admin: &mut Host, nsid: u32, handle: u16, types: &[u8], enable: bool) -> u16 {
    let mut data = vec![0u8; 255];
    data[..types.len()].copy_from_slice(types);
    let cdw11 = u32::from(handle) | (types.len() as u32) << 16;
    admin.command(sqe(0x09, nsid, &[(10, 0x1E), (11, cdw11), (12, u32::from(enable))]), &data, true, 0).status
}

fn u16_at(b: &[u8], i: usize) -> u16 {
    u16::from_le_bytes([b[i], b[i + 1]])
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
}

#[test]
fn identify_announces_fdp_and_the_endurance_group() {
    let (_addr, mut admin, _io) = fdp_target();
    let ctrl = identify(&mut admin, 1, 0, 0);
    let ctratt = u32_at(&ctrl.data, 96);
    assert_eq!(ctratt & (1 << 19 | 1 << 4), 1 << 19 | 1 << 4, "FDPS and endurance groups");
    assert_eq!(u16_at(&ctrl.data, 340), 2, "ENDGIDMAX: the NSIDs there may be");
    assert_eq!(u16_at(&ctrl.data, 256) & 1 << 5, 1 << 5, "OACS: directives");
    assert_eq!(u16_at(&identify(&mut admin, 0, 0, 1).data, 102), 1, "ENDGID of the FDP namespace");
    assert_eq!(u16_at(&identify(&mut admin, 0, 0, 2).data, 102), 0, "the zoned namespace is in no FDP group");
    let params = admin.admin(sqe(0x1A, 1, &[(10, 1023), (11, 0x01)]), 4096);
    assert_eq!((params.status, params.data[0], params.data[32]), (sc::SUCCESS, 0b101, 0b101));
    assert_eq!(admin.admin(sqe(0x1A, 2, &[(10, 1023), (11, 0x01)]), 4096).data[32], 1, "no placement on NSID 2");
    assert_eq!(admin.admin(sqe(0x1A, 1, &[(10, 1023), (11, 0x0201)]), 4096).status, sc::INVALID_FIELD);
    let effects = admin.admin(sqe(0x02, 0, &[(10, 0x05 | 1023 << 16), (14, 0)]), 4096);
    assert_eq!((effects.data[1024 + 0x12 * 4], effects.data[1024 + 0x1D * 4]), (1, 1), "I/O Management supported");
    // A target without FDP says nothing of it.
    let (addr, _target) = start_with(vec![backend()]);
    let (mut plain, _) = Host::attach(addr, NQN);
    assert_eq!(u32_at(&identify(&mut plain, 1, 0, 0).data, 96), 0);
}

#[test]
fn the_placement_directive_reaches_the_handle_it_names() {
    let (_addr, _admin, mut io) = fdp_target();
    assert_eq!(handles(&ruh_status(&mut io, 1, 4096)), [(0, 0, RU_LBAS), (1, 1, RU_LBAS)]);
    // 64 LBAs through handle 1: 5 program units of 12 LBAs, 4 LBAs buffered.
    assert_eq!(write_placed(&mut io, 0, 32, Some(1)), sc::SUCCESS);
    assert_eq!(write_placed(&mut io, 32, 32, Some(1)), sc::SUCCESS);
    assert_eq!(handles(&ruh_status(&mut io, 1, 4096)), [(0, 0, RU_LBAS), (1, 1, RU_LBAS - 64)]);
    // No directive (and another directive type) is handle 0.
    assert_eq!(write_placed(&mut io, 64, 12, None), sc::SUCCESS);
    let cdws = [(10, 76), (12, 11 | 1 << 20), (13, 1 << 16)];
    assert_eq!(io.command(sqe(0x01, 1, &cdws), &[0u8; 12 * 4096], false, 0).status, sc::SUCCESS);
    assert_eq!(handles(&ruh_status(&mut io, 1, 4096)), [(0, 0, RU_LBAS - 24), (1, 1, RU_LBAS - 64)]);
    // A status cut to NUMD: the header and the first descriptor.
    let short = ruh_status(&mut io, 1, 48);
    assert_eq!((short.data.len(), u16_at(&short.data, 14), u16_at(&short.data, 16)), (48, 2, 0));
    // Write Zeroes with the directive: 12 LBAs on handle 1, none crossing the link.
    let zeroes = [(10, 100), (12, 11 | 2 << 20), (13, 1 << 16)];
    assert_eq!(io.admin(sqe(0x08, 1, &zeroes), 0).status, sc::SUCCESS);
    assert_eq!(handles(&ruh_status(&mut io, 1, 4096))[1], (1, 1, RU_LBAS - 76));
    let nothing = io.admin(sqe(0x12, 1, &[(10, 0), (11, 3)]), 16);
    assert_eq!((nothing.status, nothing.data.len()), (sc::SUCCESS, 0), "MO 0: no operation");
}

#[test]
fn an_update_starts_a_new_reclaim_unit_and_logs_its_event() {
    let (_addr, mut admin, mut io) = fdp_target();
    assert_eq!(set_events(&mut admin, 1, 1, &[0x00], true), sc::SUCCESS);
    let listed = admin.admin(sqe(0x0A, 1, &[(10, 0x1E), (11, 1 | 3 << 16)]), 6);
    assert_eq!((listed.status, listed.result, listed.data), (sc::SUCCESS, 3, vec![0x00, 1, 0x03, 0, 0x80, 0]));
    assert_eq!(write_placed(&mut io, 0, 32, Some(1)), sc::SUCCESS);
    assert_eq!(write_placed(&mut io, 32, 32, Some(1)), sc::SUCCESS);
    assert_eq!(ruh_update(&mut io, &[1]), sc::SUCCESS);
    assert_eq!(
        handles(&ruh_status(&mut io, 1, 4096))[1],
        (1, 1, RU_LBAS),
        "a fresh unit: the 4 buffered LBAs went to the old one"
    );
    let events = fdp_log(&mut admin, 0x23, 1, 1, 0, 4096);
    assert_eq!((events.status, u32_at(&events.data, 0)), (sc::SUCCESS, 1));
    let e = &events.data[64..128];
    assert_eq!((e[0], e[1], u16_at(e, 2), u32_at(e, 12), e[34]), (0x00, 0b111, 1, 1, 1), "RU not fully written");
    let controller = fdp_log(&mut admin, 0x23, 1, 0, 0, 4096);
    assert_eq!(u32_at(&controller.data, 0), 0, "no controller event enabled");
    // Disabled again: the next update logs nothing.
    assert_eq!(set_events(&mut admin, 1, 1, &[0x00], false), sc::SUCCESS);
    assert_eq!(write_placed(&mut io, 64, 16, Some(1)), sc::SUCCESS);
    assert_eq!(ruh_update(&mut io, &[1, 0]), sc::SUCCESS);
    assert_eq!(u32_at(&fdp_log(&mut admin, 0x23, 1, 1, 0, 64).data, 0), 1);
}

#[test]
fn the_fdp_logs_describe_the_configuration_usage_and_statistics() {
    let (_addr, mut admin, mut io) = fdp_target();
    let configs = fdp_log(&mut admin, 0x20, 1, 0, 0, 4096);
    let size = u32_at(&configs.data, 4) as usize;
    assert_eq!((configs.status, u16_at(&configs.data, 0), size), (sc::SUCCESS, 0, 16 + 72));
    let c = &configs.data[16..size];
    assert_eq!((u16_at(c, 0), c[2] >> 7, c[2] & 0xf, u32_at(c, 4), u16_at(c, 8)), (72, 1, 0, 1, 2));
    assert_eq!((u16_at(c, 10), u64_at(c, 16), c[64], c[68]), (1, RU_LBAS * 4096, 1, 1), "initially isolated");
    let usage = fdp_log(&mut admin, 0x21, 1, 0, 0, 24);
    assert_eq!((u16_at(&usage.data, 0), usage.data[8], usage.data[16]), (2, 1, 1), "host specified");
    assert_eq!(write_placed(&mut io, 0, 32, Some(0)), sc::SUCCESS);
    let stats = fdp_log(&mut admin, 0x22, 1, 0, 0, 64);
    let counter = |at: usize| u128::from_le_bytes(stats.data[at..at + 16].try_into().unwrap());
    assert_eq!(counter(0), 32 * 4096, "HBMW");
    assert_eq!(counter(16), 2 * 12 * 4096, "MBMW: the two 48 KiB program units written");
    // Offsets: MBMW alone; past the end; not a dword.
    let mbmw = fdp_log(&mut admin, 0x22, 1, 0, 16, 16);
    assert_eq!(mbmw.data, stats.data[16..32]);
    assert_eq!(fdp_log(&mut admin, 0x22, 1, 0, 64, 16).status, sc::INVALID_FIELD);
    assert_eq!(fdp_log(&mut admin, 0x22, 1, 0, 2, 16).status, sc::INVALID_FIELD);
    let group = fdp_log(&mut admin, 0x09, 1, 0, 0, 512);
    assert_eq!((group.status, group.data[3], u64_at(&group.data, 64)), (sc::SUCCESS, 100, 1), "spare, 1 unit written");
    assert_eq!(u64_at(&group.data, 80), 1, "media units written: MBMW, 96 KiB");
    assert_eq!(fdp_log(&mut admin, 0x09, 2, 0, 0, 512).status, sc::INVALID_FIELD, "NSID 2 is no endurance group");
    // LSI: NSID 2 has no FDP, 3 names nothing.
    for lid in 0x20..=0x23 {
        assert_eq!(fdp_log(&mut admin, lid, 2, 0, 0, 64).status, 0x029, "FDP Disabled");
        assert_eq!(fdp_log(&mut admin, lid, 3, 0, 0, 64).status, sc::INVALID_FIELD);
    }
}

#[test]
fn fdp_features_and_commands_get_the_statuses_of_a_drive() {
    let (_addr, mut admin, mut io) = fdp_target();
    let get_fdp = |admin: &mut Host, group: u32| admin.admin(sqe(0x0A, 0, &[(10, 0x1D), (11, group)]), 0);
    assert_eq!((get_fdp(&mut admin, 1).status, get_fdp(&mut admin, 1).result), (sc::SUCCESS, 1), "enabled, config 0");
    assert_eq!((get_fdp(&mut admin, 2).status, get_fdp(&mut admin, 2).result), (sc::SUCCESS, 0));
    assert_eq!(get_fdp(&mut admin, 7).status, sc::INVALID_FIELD);
    let set_fdp = admin.admin(sqe(0x09, 0, &[(10, 0x1D), (11, 1)]), 0);
    assert_eq!(set_fdp.status, sc::COMMAND_SEQUENCE_ERROR, "FDP changes only without namespaces");
    assert_eq!(set_events(&mut admin, 1, 2, &[0x00], true), sc::INVALID_FIELD, "no placement handle 2");
    assert_eq!(set_events(&mut admin, 1, 0, &[0x01], true), sc::INVALID_FIELD, "an event type not raised");
    assert_eq!(set_events(&mut admin, 2, 0, &[0x00], true), 0x029);
    assert_eq!(set_events(&mut admin, 9, 0, &[0x00], true), sc::INVALID_NAMESPACE);
    assert_eq!(admin.admin(sqe(0x0A, 1, &[(10, 0x1E), (11, 0)]), 2).status, sc::INVALID_FIELD, "NOET 0");
    // I/O Management: an unknown operation, a namespace without FDP, a bad list.
    assert_eq!(io.admin(sqe(0x12, 1, &[(10, 2), (11, 3)]), 16).status, sc::INVALID_FIELD);
    assert_eq!(ruh_status(&mut io, 2, 64).status, 0x029);
    assert_eq!(io.command(sqe(0x1D, 2, &[(10, 1)]), &[0, 0], true, 0).status, 0x029);
    assert_eq!(ruh_update(&mut io, &[2]), sc::INVALID_FIELD, "a placement identifier the namespace lacks");
    assert_eq!(ruh_update(&mut io, &[0, 1, 0]), sc::INVALID_FIELD, "more than MAXPIDS + 1");
    assert_eq!(io.command(sqe(0x1D, 1, &[(10, 1 | 1 << 16)]), &[0, 0], true, 0).status, sc::SGL_LENGTH_INVALID);
    assert_eq!(io.command(sqe(0x1D, 1, &[(10, 7)]), &[0, 0], true, 0).status, sc::INVALID_FIELD, "MO 7");
}

#[test]
fn hostile_fdp_lengths_cost_only_their_command() {
    let (_addr, mut admin, mut io) = fdp_target();
    // NUMD of 16 GiB, NPID of 65536 with 2 bytes, NOET of 255 with 1 byte.
    assert_eq!(io.admin(sqe(0x12, 1, &[(10, 1), (11, u32::MAX)]), 64).status, sc::INVALID_FIELD);
    assert_eq!(io.command(sqe(0x1D, 1, &[(10, 1 | 0xFFFF << 16)]), &[0, 0], true, 0).status, sc::INVALID_FIELD);
    let cdws = [(10, 0x1E), (11, 0xFF << 16), (12, 1)];
    assert_eq!(admin.command(sqe(0x09, 1, &cdws), &[0], true, 0).status, sc::SGL_LENGTH_INVALID);
    let huge_log = sqe(0x02, 0, &[(10, 0x22 | 0xFFFF << 16), (11, 0xFFFF | 1 << 16)]);
    assert_eq!(admin.admin(huge_log, 64).status, sc::INVALID_FIELD, "a log longer than MDTS");
    // Both queues still work.
    assert_eq!(handles(&ruh_status(&mut io, 1, 4096)).len(), 2);
    assert_eq!(fdp_log(&mut admin, 0x22, 1, 0, 0, 64).status, sc::SUCCESS);
}
