//! The controller's program data path (`controller.program_path_bytes_per_s`)
//! and its mapping journal (`controller.journal_units`, `journal_ns`): host
//! data reaches flash no faster than the path, a finish's padding does not
//! cross it, and the journal stops it for `journal_ns` every so many units
//! (every `checkpoint_journals`-th time for `checkpoint_ns`); with
//! `controller.in_order`, a read waits behind the writes that wait for room.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::Nanos;

/// The zn540 with `sets` applied.
fn device(sets: &[(&str, &str)]) -> Device {
    let mut config = preset("zn540").unwrap();
    for (path, value) in sets {
        config = set_parameter(&config, path, value).unwrap();
    }
    Device::new(config).unwrap()
}

/// Bytes per second of `count` appends of 128 KiB to zone 0, 32 in flight,
/// each resubmitted when one completes.
fn deep_append_bytes_per_s(dev: &mut Device, count: usize) -> f64 {
    const NLB: u32 = 32;
    let mut in_flight: BinaryHeap<Reverse<Nanos>> = (0..32).map(|_| Reverse(0)).collect();
    let mut last_ns = 0;
    for _ in 0..count {
        let Reverse(t) = in_flight.pop().expect("commands in flight");
        let c = dev.submit(t, &Command::Append { zslba: 0, nlb: NLB, payload: Payload::None, fua: false }, None);
        assert!(c.status.is_success(), "{:?}", c.status);
        last_ns = last_ns.max(c.complete_ns);
        in_flight.push(Reverse(c.complete_ns));
    }
    let bytes = count as f64 * f64::from(NLB) * dev.layout().lba_bytes as f64;
    bytes / (last_ns as f64 / 1e9)
}

/// Without a path or journal (`0`), the flash's rate; with the path, no more than it.
const UNLIMITED: [(&str, &str); 2] = [("controller.program_path_bytes_per_s", "0"), ("controller.journal_units", "0")];

#[test]
fn host_data_reaches_flash_no_faster_than_the_program_path() {
    // 256 MiB: the 6 MiB write buffer lets the first writes in free, a few percent of the run.
    let count = 2048;
    let free = deep_append_bytes_per_s(&mut device(&UNLIMITED), count);
    assert!(free > 1.0e9, "the flash's rate without a path: {free}");
    let path_bytes_per_s = 400_000_000.0;
    let mut dev = device(&[("controller.program_path_bytes_per_s", "400000000"), ("controller.journal_units", "0")]);
    let paced = deep_append_bytes_per_s(&mut dev, count);
    assert!(paced <= path_bytes_per_s * 1.03, "{paced} over the path's {path_bytes_per_s}");
    assert!(paced >= path_bytes_per_s * 0.95, "{paced}: the path, not something else, sets the rate");
}

#[test]
fn a_finishs_padding_does_not_cross_the_program_path() {
    let finish_ns = |sets: &[(&str, &str)]| {
        let mut dev = device(sets);
        let w = dev.submit(
            0,
            &Command::Write { slba: 0, nlb: 1, payload: Payload::None, fua: false, placement: None },
            None,
        );
        let f = dev.submit(
            w.complete_ns,
            &Command::ZoneMgmtSend { action: ZoneAction::Finish, slba: 0, select_all: false },
            None,
        );
        assert!(f.status.is_success(), "{:?}", f.status);
        f.latency_ns()
    };
    let free_ns = finish_ns(&UNLIMITED);
    // At 100 MB/s the 1077 MiB of padding would take over 11 s; the one
    // unit holding the written LBA crosses (2 ms).
    let slow = [("controller.program_path_bytes_per_s", "100000000"), ("controller.journal_units", "0")];
    let slow_ns = finish_ns(&slow);
    assert!(slow_ns <= free_ns + 2_000_000, "padding crossed the path: {slow_ns} ns against {free_ns} ns");
}

/// Appends held by `sets` (the path unlimited otherwise) reach at most
/// `bound` bytes/s and at least 90% of it, well below the free rate; returns
/// the free rate.
fn assert_held_to(sets: &[(&str, &str)], bound: f64, what: &str) -> f64 {
    let count = 2048;
    let free = deep_append_bytes_per_s(&mut device(&UNLIMITED), count);
    let held = deep_append_bytes_per_s(&mut device(sets), count);
    assert!(held <= bound * 1.03, "{held} over the {what}'s bound {bound}");
    assert!(held >= bound * 0.9 && held < free * 0.75, "{held} against {free} without a {what}");
    free
}

#[test]
fn the_mapping_journal_holds_the_path_every_n_programs() {
    // Eight 192 KiB units, then 2 ms of journal: at most 786 MB/s.
    let journal = [
        ("controller.program_path_bytes_per_s", "0"),
        ("controller.journal_units", "8"),
        ("controller.journal_ns", "2ms"),
        ("controller.checkpoint_journals", "0"),
    ];
    assert_held_to(&journal, 8.0 * 196_608.0 / 2e-3, "journal");
}

#[test]
fn every_nth_journal_write_is_a_checkpoint_that_holds_the_path_longer() {
    // Journal writes that cost nothing after every 8 units, every other one a
    // 4 ms checkpoint: 16 units per 4 ms, at most 786 MB/s.
    let checkpoint = [
        ("controller.program_path_bytes_per_s", "0"),
        ("controller.journal_units", "8"),
        ("controller.journal_ns", "0"),
        ("controller.checkpoint_journals", "2"),
        ("controller.checkpoint_ns", "4ms"),
    ];
    let free = assert_held_to(&checkpoint, 16.0 * 196_608.0 / 4e-3, "checkpoint");
    // Without a journal there is no checkpoint either.
    let none = [UNLIMITED[0], UNLIMITED[1], checkpoint[3], checkpoint[4]];
    let free_again = deep_append_bytes_per_s(&mut device(&none), 2048);
    assert!((free_again - free).abs() <= free * 0.01, "{free_again} against {free}");
}

#[test]
fn a_path_too_slow_to_carry_a_unit_within_an_hour_is_refused() {
    let config = |rate: &str| set_parameter(&preset("zn540").unwrap(), "controller.program_path_bytes_per_s", rate);
    // 192 KiB at 50 B/s: 65 min for one unit.
    let e = Device::new(config("50").unwrap()).err().expect("refused").to_string();
    assert!(e.contains("controller.program_path_bytes_per_s") && e.contains("one hour"), "{e}");
    // At 100 B/s a unit crosses in 33 min: slow, but bounded.
    assert!(Device::new(config("100").unwrap()).is_ok());
}

/// Completion times of 256 appends of 128 KiB sent to zone 0 at once (32 MiB,
/// several times the zone's 6 MiB buffer) and of a 4 KiB read of zone 0 sent
/// just after them.
fn read_behind_queued_appends(in_order: &str) -> (Nanos, Nanos) {
    let mut dev = device(&[("controller.in_order", in_order)]);
    let last_append_ns = (0..256)
        .map(|_| {
            let c = dev.submit(0, &Command::Append { zslba: 0, nlb: 32, payload: Payload::None, fua: false }, None);
            assert!(c.status.is_success(), "{:?}", c.status);
            c.complete_ns
        })
        .max()
        .expect("appends");
    let read = dev.submit(1_000, &Command::Read { slba: 0, nlb: 1 }, None);
    assert!(read.status.is_success(), "{:?}", read.status);
    (last_append_ns, read.complete_ns)
}

#[test]
fn with_commands_taken_in_order_a_read_waits_for_the_writes_ahead_to_have_room() {
    let (last_append_ns, read_ns) = read_behind_queued_appends("true");
    // The last append has its room when all but the buffer's 6 MiB of the 32
    // MiB are programmed, tens of ms in; its data then crosses the link.
    assert!(last_append_ns > 15_000_000, "the appends wait for room: {last_append_ns} ns");
    assert!(read_ns >= last_append_ns - 200_000, "the read waits for the appends' room: {read_ns} ns");
    let (_, passing_ns) = read_behind_queued_appends("false");
    // Without, it waits at most for the program of the unit it reads.
    assert!(
        passing_ns < 3_000_000 && passing_ns * 5 < read_ns,
        "without, the read passes the appends: {passing_ns} ns"
    );
}
