//! The Zone Random Write Area (TP 4076) over NVMe/TCP: Identify's ZRWA
//! fields, Open with ZRWA Allocate, Flush Explicit ZRWA Range (action 0x11)
//! and the ZRWAV zone attribute, as `nvme zns open-zone --zrwaa` and
//! `nvme zns zrwa-flush-zone` send them.

use super::command::sc;
use super::target::NamespaceBackend as Backend;
use super::tests::{alone, config, identify, read, report, sqe, start_with, u64_at, write, Host, NQN, ZONE_LBAS};
use crate::backend::Pace;
use zonelab_device::{options::set_parameter, Status};

/// The tests' device with a ZRWA of 16 LBAs, flushed 4 at a time, 2 of them.
fn zrwa_backend() -> Backend {
    let mut c = config(true);
    for (path, value) in [
        ("namespace.zrwa.size_bytes", "64k"),
        ("namespace.zrwa.flush_granularity_bytes", "16k"),
        ("namespace.zrwa.resources", "2"),
    ] {
        c = set_parameter(&c, path, value).unwrap();
    }
    Backend::new(alone(c), Pace::Asap).unwrap()
}

/// Zone Management Send of `zsa` at `slba`, with ZRWA Allocate if `zrwaa`.
fn send(host: &mut Host, slba: u64, zsa: u32, zrwaa: bool) -> u16 {
    let cdw13 = zsa | u32::from(zrwaa) << 9;
    host.admin(sqe(0x79, 1, &[(10, slba as u32), (11, (slba >> 32) as u32), (13, cdw13)]), 0).status
}

/// The Zone Attributes byte of the first zone a report from `slba` returns.
fn attributes(host: &mut Host, slba: u64) -> u8 {
    let c = host.admin(sqe(0x7A, 1, &[(10, slba as u32), (12, (128 / 4 - 1) as u32)]), 128);
    assert_eq!(c.status, sc::SUCCESS);
    c.data[64 + 2]
}

#[test]
fn identify_reports_the_zrwa_and_only_when_there_is_one() {
    let (addr, _target) = start_with(vec![zrwa_backend()]);
    let (mut host, _) = Host::attach(addr, NQN);
    let zns = identify(&mut host, 5, 2, 1);
    assert_eq!(u16::from_le_bytes([zns.data[2], zns.data[3]]) & 2, 2, "OZCS ZRWASUP");
    assert_eq!(u32::from_le_bytes(zns.data[44..48].try_into().unwrap()), 1, "NUMZRWA: 2, 0-based");
    assert_eq!(u16::from_le_bytes([zns.data[48], zns.data[49]]), 4, "ZRWAFG");
    assert_eq!(u16::from_le_bytes([zns.data[50], zns.data[51]]), 16, "ZRWAS");
    assert_eq!(zns.data[52], 1, "ZRWACAP EXPFLUSHSUP");
    let (addr, _target) = start_with(vec![Backend::new(alone(config(true)), Pace::Asap).unwrap()]);
    let (mut admin, cntlid) = Host::attach(addr, NQN);
    let zns = identify(&mut admin, 5, 2, 1);
    assert!(zns.data[2..4].iter().chain(&zns.data[44..53]).all(|&b| b == 0), "no ZRWA: zeros");
    let mut plain = Host::io_queue(addr, cntlid, 1);
    assert_eq!(send(&mut plain, 0, 0x03, true), Status::InvalidZoneOperation.code());
    assert_eq!(send(&mut plain, 0, 0x11, false), Status::InvalidZoneOperation.code());
}

#[test]
fn open_with_zrwa_write_in_the_window_and_flush_explicitly() {
    let (addr, _target) = start_with(vec![zrwa_backend()]);
    let (_admin, cntlid) = Host::attach(addr, NQN);
    let mut io = Host::io_queue(addr, cntlid, 1);
    assert_eq!(send(&mut io, 0, 0x03, true), sc::SUCCESS, "open-zone --zrwaa");
    assert_eq!(attributes(&mut io, 0) & 1 << 3, 1 << 3, "ZRWAV");
    assert_eq!(attributes(&mut io, ZONE_LBAS), 0);
    assert_eq!(write(&mut io, 0x01, 8, 4, 0xB2, false).status, sc::SUCCESS, "off the write pointer, in the ZRWA");
    assert_eq!(write(&mut io, 0x01, 0, 8, 0xA1, false).status, sc::SUCCESS);
    assert_eq!(report(&mut io, 0, 1, 0, false).1, [(0x3, 0)], "explicitly opened, nothing committed");
    assert_eq!(send(&mut io, 6, 0x11, false), Status::InvalidField.code(), "7 LBAs: not a granule");
    assert_eq!(send(&mut io, 16, 0x11, false), Status::ZoneBoundaryError.code(), "past the ZRWA");
    assert_eq!(send(&mut io, 7, 0x11, false), sc::SUCCESS, "zrwa-flush-zone --lba 7");
    assert_eq!(report(&mut io, 0, 1, 0, false).1, [(0x3, 8)]);
    let back = read(&mut io, 0, 12);
    assert!(back.data[..8 * 4096].iter().all(|&b| b == 0xA1) && back.data[8 * 4096..].iter().all(|&b| b == 0xB2));
    let append = write(&mut io, 0x7D, 0, 1, 0, true);
    assert_eq!(append.status, Status::InvalidZoneOperation.code(), "no Zone Append with a ZRWA");
    assert_eq!(write(&mut io, 0x01, 30, 4, 0x77, false).status, sc::SUCCESS, "into the implicit commit range");
    assert_eq!(report(&mut io, 0, 1, 0, false).1, [(0x3, 20)], "committed in granules up to the ZRWA");
    assert_eq!(send(&mut io, ZONE_LBAS, 0x03, true), sc::SUCCESS);
    assert_eq!(send(&mut io, 2 * ZONE_LBAS, 0x03, true), Status::ZrwaResourcesUnavailable.code());
    assert_eq!(send(&mut io, 0, 0x02, false), sc::SUCCESS, "finish releases the ZRWA");
    assert_eq!(attributes(&mut io, 0), 0);
    assert_eq!(read(&mut io, 30, 1).data[0], 0x77, "finish keeps what the window held");
    assert_eq!(u64_at(&read(&mut io, 24, 1).data, 0), 0, "never written");
}
