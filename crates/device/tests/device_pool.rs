//! The device pool's service order (`write_buffer.room_order`): QD-1
//! writers of their own zones,
//! each sending its next write 0.5 µs after the last completes, at the
//! pool's limit.

use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::Nanos;

/// The zn540 with its pool's data leaving as it crosses the program path,
/// two firmware cores (so the pool, not the firmware, sets the pace, whatever
/// the preset's write firmware) and `settings`.
fn device(settings: &[(&str, &str)]) -> Device {
    let mut config = preset("zn540").unwrap();
    let base = [("write_buffer.pool_release", "crossed"), ("controller.firmware_cores", "2")];
    for (path, value) in base.iter().chain(settings) {
        config = set_parameter(&config, path, value).unwrap();
    }
    Device::new(config).unwrap()
}

/// Latencies (ns, sorted) of `writers` closed-loop QD-1 8 KiB writers over
/// `duration_ns`, the first 2 ms left out.
fn closed_loop(dev: &mut Device, writers: u64, duration_ns: Nanos) -> Vec<Nanos> {
    closed_loop_with_gap(dev, writers, duration_ns, 500)
}

/// [`closed_loop`] with each writer's next write `gap_ns` after the last completes.
fn closed_loop_with_gap(dev: &mut Device, writers: u64, duration_ns: Nanos, gap_ns: Nanos) -> Vec<Nanos> {
    let zone_lbas = dev.layout().zone_lbas;
    let mut next: Vec<(Nanos, u64)> = (0..writers).map(|w| (w * 1_000, w * zone_lbas)).collect();
    let mut latencies = Vec::new();
    // Bound: each pass submits one write and moves its writer on in time.
    loop {
        let (i, &(at_ns, lba)) = next.iter().enumerate().min_by_key(|(_, (t, _))| *t).unwrap();
        if at_ns > duration_ns {
            break;
        }
        let cmd = Command::Write { slba: lba, nlb: 2, payload: Payload::None, fua: false, placement: None };
        let c = dev.submit(at_ns, &cmd, None);
        assert!(c.status.is_success(), "{:?}", c.status);
        if at_ns > 2_000_000 {
            latencies.push(c.complete_ns - at_ns);
        }
        next[i] = (c.complete_ns + gap_ns, lba + 2);
    }
    latencies.sort_unstable();
    latencies
}

fn pct(sorted: &[Nanos], p: usize) -> Nanos {
    sorted[(sorted.len() - 1) * p / 100]
}

fn mean(v: &[Nanos]) -> f64 {
    v.iter().sum::<Nanos>() as f64 / v.len() as f64
}

#[test]
fn in_random_order_writers_at_the_pools_limit_wait_a_floor_plus_a_spread() {
    let duration_ns = 30_000_000;
    let arrival = closed_loop(&mut device(&[("write_buffer.room_order", "arrival")]), 6, duration_ns);
    let random = closed_loop(&mut device(&[("write_buffer.room_order", "random")]), 6, duration_ns);
    // The same room comes back at the same pace: the same number of writes.
    let (a, r) = (arrival.len() as f64, random.len() as f64);
    assert!((a - r).abs() < 0.02 * a, "{a} writes in arrival order, {r} in random order");
    // In arrival order the writes that wait all wait about as long
    // (lockstep: p50 to p95 alike; the preset's room comes back 64 KiB at a
    // time, so some find room at once).
    let (p50, p95) = (pct(&arrival, 50), pct(&arrival, 95));
    assert!(p95 < p50 * 11 / 10, "arrival: p50 {p50} p95 {p95}");
    // In random order most find room soon and a few are passed over again and again.
    let m = mean(&random);
    assert!((pct(&random, 50) as f64) < 0.75 * m, "random: p50 {} against a mean of {m}", pct(&random, 50));
    assert!((pct(&random, 95) as f64) > 1.5 * m, "random: p95 {} against a mean of {m}", pct(&random, 95));
}

#[test]
fn random_room_order_is_arrival_order_without_spread() {
    let off = [("write_buffer.room_order", "random"), ("spread.on", "false")];
    let duration_ns = 10_000_000;
    let arrival = [("write_buffer.room_order", "arrival")];
    assert_eq!(closed_loop(&mut device(&off), 6, duration_ns), closed_loop(&mut device(&arrival), 6, duration_ns));
}

/// The zn540 as shipped with its pool's release set to `release`.
fn zn540_releasing(release: &str) -> Device {
    let config = set_parameter(&preset("zn540").unwrap(), "write_buffer.pool_release", release).unwrap();
    Device::new(config).unwrap()
}

#[test]
fn room_that_comes_back_a_unit_at_a_time_makes_a_fourth_writer_double_the_tail() {
    // The drive's QD-1 8 KiB writers at the flash's limit: p95 26-30 µs at
    // N = 3, 62-63 at N = 4 (ConfZNS++ C2). Writers faster than the program
    // path use up a unit's room and wait for the next: a fourth writer
    // about doubles that wait (here 26.7 → 63.6 µs). Page by page the step
    // is smaller (24.4 → 46.9).
    let duration_ns = 40_000_000;
    // A host that sends each writer's next write 2 µs after the last completes.
    let gap_ns = 2_000;
    let p95_us = |release: &str, writers: u64| {
        pct(&closed_loop_with_gap(&mut zn540_releasing(release), writers, duration_ns, gap_ns), 95) as f64 / 1e3
    };
    let unit = [p95_us("unit_crossed", 3), p95_us("unit_crossed", 4)];
    let page = [p95_us("crossed", 3), p95_us("crossed", 4)];
    assert!(unit[1] > 1.8 * unit[0], "a unit at a time: {unit:?}");
    assert!(unit[1] / unit[0] > page[1] / page[0] + 0.2, "unit {unit:?}, page {page:?}");
}
