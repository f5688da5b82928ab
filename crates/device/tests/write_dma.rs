//! A write's data transfer (`controller.write_dma_bytes_per_s`,
//! `write_dma_start_ns`): one command's data comes in no faster than this
//! pace, from a set time after the controller takes the command, so a large
//! write's data sets its latency while a small one's is in before its
//! firmware is done.

use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::Nanos;

/// The zn540 with one command's data pace set to `bytes_per_s` (0: the link
/// only), starting `start` after the command's arrival.
fn device(bytes_per_s: &str, start: &str) -> Device {
    let config = preset("zn540").unwrap();
    let config = set_parameter(&config, "controller.write_dma_bytes_per_s", bytes_per_s).unwrap();
    Device::new(set_parameter(&config, "controller.write_dma_start_ns", start).unwrap()).unwrap()
}

/// Latency (ns) of a write of `nlb` LBAs at the write pointer of zone 0 of an
/// idle device, after a first write opened the zone and a pause long enough
/// for every program and housekeeping task to be over.
fn idle_write_ns(bytes_per_s: &str, start: &str, nlb: u32) -> Nanos {
    let mut dev = device(bytes_per_s, start);
    let write = |slba, nlb| Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None };
    let first = dev.submit(0, &write(0, 1), None);
    assert!(first.status.is_success(), "{:?}", first.status);
    // 50 ms later: the zone is open, nothing is in flight.
    let t = first.complete_ns + 50_000_000;
    let c = dev.submit(t, &write(1, nlb), None);
    assert!(c.status.is_success(), "{:?}", c.status);
    c.complete_ns - t
}

#[test]
fn a_small_writes_data_is_in_before_its_firmware_is_done() {
    // 4 and 8 KiB at 2.35 GB/s from 3 µs on: in by 4.7 and 6.5 µs, before
    // the write's firmware is done (as the ZN540's: 10.7 and 10.4 µs at QD 1).
    for nlb in [1, 2] {
        assert_eq!(idle_write_ns("2350000000", "3us", nlb), idle_write_ns("0", "0ns", nlb), "{nlb} LBAs");
    }
}

#[test]
fn a_large_writes_data_comes_in_at_one_commands_pace() {
    // 128 KiB: 81.9 µs at 1.6 GB/s, more than the firmware and the link take.
    let bytes = 128 * 1024;
    let link_only = idle_write_ns("0", "0ns", 32);
    let fast = idle_write_ns("1600000000", "0ns", 32);
    let slow = idle_write_ns("400000000", "0ns", 32);
    assert!(fast > link_only, "the pace, not the link, sets it: {fast} vs {link_only} ns");
    assert!(fast >= bytes * 1_000_000_000 / 1_600_000_000, "no sooner than its bytes at the pace: {fast} ns");
    // From then on the latency follows the pace: 4 times slower, 3 times as
    // long again (245.8 µs), within the last piece's link crossing.
    let extra_ns = slow - fast;
    let expected_ns = bytes * 1_000_000_000 / 400_000_000 - bytes * 1_000_000_000 / 1_600_000_000;
    assert!(extra_ns.abs_diff(expected_ns) < 2_000, "{extra_ns} ns more, {expected_ns} expected");
    // A later start delays the data by as much.
    let late = idle_write_ns("1600000000", "10us", 32);
    assert!((late - fast).abs_diff(10_000) < 1_000, "a start 10 µs later: {} ns later", late - fast);
}

/// Latency (ns) of an append of `nlb` LBAs to zone 0 of an idle zn540 (after
/// a first append opened the zone and every program is over), with
/// `controller.append_data_after_firmware` set to `after_firmware`.
fn idle_append_ns(after_firmware: &str, nlb: u32) -> Nanos {
    let config = preset("zn540").unwrap();
    let config = set_parameter(&config, "controller.append_data_after_firmware", after_firmware).unwrap();
    let mut dev = Device::new(config).unwrap();
    let append = |nlb| Command::Append { zslba: 0, nlb, payload: Payload::None, fua: false };
    let first = dev.submit(0, &append(2), None);
    assert!(first.status.is_success(), "{:?}", first.status);
    let t = first.complete_ns + 50_000_000;
    let c = dev.submit(t, &append(nlb), None);
    assert!(c.status.is_success(), "{:?}", c.status);
    c.complete_ns - t
}

#[test]
fn an_appends_data_waits_for_its_firmware() {
    // 128 KiB (55.8 µs of data): the transfer sets the latency either way,
    // and starts when the append's 7 µs of firmware (its FTL stage included)
    // are done instead of 3 µs after the controller took it: 4 µs later.
    let config = preset("zn540").unwrap();
    let c = &config.controller;
    let expected_ns = c.append_ns - c.write_dma_start_ns;
    let (after, during) = (idle_append_ns("true", 32), idle_append_ns("false", 32));
    assert!(after.abs_diff(during + expected_ns) < 500, "{after} ns against {during} + {expected_ns}");
    // No sooner than the firmware and the data's bytes at the pace.
    let data_ns = 128 * 1024 * 1_000_000_000 / c.write_dma_bytes_per_s;
    assert!(after >= c.append_ns + data_ns, "{after} ns");
}
