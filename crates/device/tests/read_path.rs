//! The controller's read path: read-ahead serves sequential reads from the
//! read buffer (ZNS-Study: sequential 4 KiB reads at QD 1 several times
//! faster than random ones), and turning it off makes them equal; random
//! reads near the limit queue on their dies (CLUSTER'23 Fig 4a).

use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::{Nanos, MS};

fn device(sets: &[(&str, &str)]) -> Device {
    let mut config = preset("zn540").unwrap();
    for (path, value) in sets {
        config = set_parameter(&config, path, value).unwrap();
    }
    Device::new(config).unwrap()
}

/// Fills zone 0 with 128 KiB writes and lets the buffers drain to flash.
fn fill_zone(dev: &mut Device) -> Nanos {
    let zcap = dev.layout().zcap_lbas;
    let (mut t, mut lba) = (0, 0);
    while lba < zcap {
        let nlb = (zcap - lba).min(32) as u32;
        let c = dev.submit(
            t,
            &Command::Write { slba: lba, nlb, payload: Payload::None, fua: false, placement: None },
            None,
        );
        assert!(c.status.is_success(), "{:?}", c.status);
        (t, lba) = (c.complete_ns, lba + u64::from(nlb));
    }
    t + 1_000 * MS
}

/// Mean latency (µs) of `count` QD-1 4 KiB reads at the LBAs `lba_of(i)`.
fn mean_read_us(dev: &mut Device, mut t: Nanos, count: u64, lba_of: impl Fn(u64) -> u64) -> f64 {
    let mut total_ns = 0;
    for i in 0..count {
        let c = dev.submit(t, &Command::Read { slba: lba_of(i), nlb: 1 }, None);
        assert!(c.status.is_success(), "{:?}", c.status);
        total_ns += c.complete_ns - c.submit_ns;
        t = c.complete_ns;
    }
    total_ns as f64 / count as f64 / 1e3
}

fn sequential_and_random_us(sets: &[(&str, &str)]) -> (f64, f64) {
    let mut dev = device(sets);
    let t = fill_zone(&mut dev);
    let zcap = dev.layout().zcap_lbas;
    let sequential = mean_read_us(&mut dev, t, 2048, |i| 4096 + i);
    // A multiplicative walk over the zone: no read continues the one before.
    let random = mean_read_us(&mut dev, t + 1_000 * MS, 2048, |i| (i * 7919 + 100_003) % zcap);
    (sequential, random)
}

#[test]
fn read_ahead_makes_sequential_reads_several_times_faster_than_random_ones() {
    let (sequential, random) = sequential_and_random_us(&[]);
    assert!(sequential * 3.0 < random, "sequential {sequential:.1} µs vs random {random:.1} µs");
}

#[test]
fn without_read_ahead_sequential_reads_cost_a_flash_read_each_page() {
    // Chunks whole on their planes: no page register holds the next read's data.
    let sets = [("controller.read_ahead_bytes", "0"), ("flash_timing.plane_interleave_bytes", "0")];
    let (sequential, random) = sequential_and_random_us(&sets);
    // Without read-ahead each sequential read waits for a flash read of its own.
    assert!(sequential * 2.0 > random, "sequential {sequential:.1} µs vs random {random:.1} µs");
}

/// Mean latency (µs) of QD-1 4 KiB random reads of zone 0 while zone 1,
/// holding one page, is finished (padded) in the background; and the
/// suspensions the reads made.
fn reads_under_finish_us(sets: &[(&str, &str)]) -> (f64, u64) {
    let mut dev = device(sets);
    let t = fill_zone(&mut dev);
    let zl = dev.layout().zone_lbas;
    let zcap = dev.layout().zcap_lbas;
    let c =
        dev.submit(t, &Command::Write { slba: zl, nlb: 1, payload: Payload::None, fua: false, placement: None }, None);
    let finish = Command::ZoneMgmtSend { action: ZoneAction::Finish, slba: zl, select_all: false };
    let Started::Pending(_) = dev.start(c.complete_ns, &finish, None) else { panic!("a finish pads later") };
    let start_ns = c.complete_ns + 10 * MS;
    let mean_us = mean_read_us(&mut dev, start_ns, 2000, |i| (i * 7919 + 100_003) % zcap);
    (mean_us, dev.flash().suspensions())
}

#[test]
fn reads_under_a_finish_suspend_padding_programs_instead_of_waiting_them_out() {
    let (_, alone) = sequential_and_random_us(&[]);
    let (suspending, suspensions) = reads_under_finish_us(&[]);
    let (waiting, none) = reads_under_finish_us(&[("flash_timing.suspend.per_op_max", "0")]);
    assert_eq!(none, 0);
    assert!(suspensions > 1000, "{suspensions} suspensions");
    // A read waits out at most one loop (200 µs on the zn540) instead of the rest of a 2.5 ms program.
    assert!(suspending < waiting / 2.0, "with suspend {suspending:.1} µs, without {waiting:.1} µs");
    // A read waits at most the rest of a program loop and the suspend.
    let suspend = preset("zn540").unwrap().flash_timing.suspend;
    let wait_max_us = (suspend.step_ns + suspend.suspend_ns) as f64 / 1e3;
    assert!(
        suspend.step_ns > 0 && suspending < alone + wait_max_us,
        "with suspend {suspending:.1} µs, alone {alone:.1}"
    );
    // Suspending at once, reads lose less than half their speed.
    let (at_once, _) = reads_under_finish_us(&[("flash_timing.suspend.step_ns", "0us")]);
    assert!(at_once < alone * 2.0, "suspending at once {at_once:.1} µs, alone {alone:.1} µs");
    assert!(at_once < suspending, "at once {at_once:.1} µs, at the loop's end {suspending:.1} µs");
}

/// Reads of LBAs 0 and 16 (chunks 0 and 4: one die, one plane's slice)
/// queue on that plane; LBA 48 (chunk 12) is on the next die. Returns when
/// the second and the third complete.
fn two_on_one_plane_then_one_elsewhere() -> (Nanos, Nanos) {
    let mut dev = device(&[]);
    let t = fill_zone(&mut dev);
    let read = |slba| Command::Read { slba, nlb: 1 };
    dev.submit(t, &read(0), None);
    let queued = dev.submit(t, &read(16), None);
    let elsewhere = dev.submit(t + 1_000, &read(48), None);
    (queued.complete_ns, elsewhere.complete_ns)
}

#[test]
fn a_read_from_a_free_die_crosses_the_link_before_one_still_queued_on_its_plane() {
    let (queued_ns, elsewhere_ns) = two_on_one_plane_then_one_elsewhere();
    // The link sends what is ready: the later read's data is in first.
    assert!(elsewhere_ns + 50_000 < queued_ns, "queued {queued_ns} ns, elsewhere {elsewhere_ns} ns");
}

/// Two sequential QD-1 readers of zones 0 and 3, taking turns read by read
/// (as two psync jobs do), 4 KiB each: their latencies (µs), sorted.
fn two_streams_us(sets: &[(&str, &str)]) -> Vec<f64> {
    let mut dev = device(sets);
    let zl = dev.layout().zone_lbas;
    let zcap = dev.layout().zcap_lbas;
    let mut t = 0;
    for zone in [0, 3] {
        let mut lba = 0;
        while lba < 4096 {
            let write =
                Command::Write { slba: zone * zl + lba, nlb: 32, payload: Payload::None, fua: false, placement: None };
            t = dev.submit(t, &write, None).complete_ns;
            lba += 32;
        }
    }
    assert!(4096 < zcap);
    t += 1_000 * MS;
    let mut latencies = Vec::new();
    for i in 0..1024 {
        for zone in [0, 3] {
            let c = dev.submit(t, &Command::Read { slba: zone * zl + i, nlb: 1 }, None);
            assert!(c.status.is_success(), "{:?}", c.status);
            latencies.push((c.complete_ns - c.submit_ns) as f64 / 1e3);
            t = c.complete_ns;
        }
    }
    latencies.sort_by(f64::total_cmp);
    latencies
}

#[test]
fn readers_taking_turns_on_one_read_ahead_context_read_each_page_whole() {
    // The zn540 reads ahead of one stream: each reader's read takes the
    // context from the other, so every read brings its whole 16 KiB page in
    // (no read is served from the buffer alone) and the first of a page's
    // four reads senses it (ZNS-Study's two readers: none under 26 µs, a
    // quarter in 50-100 µs).
    let one = two_streams_us(&[]);
    let sensed = one.iter().filter(|&&us| us > 60.0).count() as f64 / one.len() as f64;
    assert!(one[0] > 20.0, "fastest read {:.1} µs", one[0]);
    assert!((0.2..0.3).contains(&sensed), "{:.0}% of reads sensed their page", sensed * 100.0);
    // With a context each, both streams are read ahead: most reads come from the buffer.
    let two = two_streams_us(&[("controller.read_ahead_streams", "2")]);
    assert!(two[two.len() / 2] < 15.0, "median {:.1} µs with two contexts", two[two.len() / 2]);
}

/// 4 KiB reads at random LBAs of a full zone, `qd` of them always in the
/// drive (each sent when one completes): (reads per second, mean µs, p95 µs).
fn random_reads_at_depth(sets: &[(&str, &str)], qd: usize) -> (f64, f64, f64) {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut dev = device(sets);
    let start_ns = fill_zone(&mut dev);
    let zcap = dev.layout().zcap_lbas;
    let mut in_flight: BinaryHeap<Reverse<Nanos>> = (0..qd).map(|_| Reverse(start_ns)).collect();
    let (reads, mut latencies_ns) = (20_000_u64, Vec::new());
    let mut end_ns = start_ns;
    // Seeded LBAs with no pattern a mapping could follow.
    let mut rng = zonelab_sim::SimRng::new(1);
    for _ in 0..reads {
        let Reverse(t) = in_flight.pop().expect("qd reads in flight");
        let slba = rng.below(zcap);
        let c = dev.submit(t, &Command::Read { slba, nlb: 1 }, None);
        assert!(c.status.is_success(), "{:?}", c.status);
        latencies_ns.push(c.complete_ns - c.submit_ns);
        end_ns = end_ns.max(c.complete_ns);
        in_flight.push(Reverse(c.complete_ns));
    }
    // The first reads all start together: leave them out.
    let steady = &mut latencies_ns[qd * 4..];
    steady.sort_unstable();
    let mean_us = steady.iter().sum::<Nanos>() as f64 / steady.len() as f64 / 1e3;
    let p95_us = steady[steady.len() * 95 / 100] as f64 / 1e3;
    (reads as f64 / ((end_ns - start_ns) as f64 / 1e9), mean_us, p95_us)
}

#[test]
fn random_reads_near_the_limit_queue_on_their_dies_and_spread() {
    // With the dies' serial part of a sense, reads at random LBAs near the
    // limit wait on whichever die they land on, and the p95 moves well off
    // the mean (the drive's: 2.5 times it, CLUSTER'23 Fig 4a at QD 128; the
    // zn540's 1.8). Without it the firmware core sets the limit, and its
    // queue serves in order (1.3).
    let (rate, mean_us, p95_us) = random_reads_at_depth(&[], 128);
    assert!(p95_us > 1.6 * mean_us, "p95 {p95_us:.0} µs, mean {mean_us:.0} µs at {rate:.0}/s");
    let (fifo_rate, fifo_mean_us, fifo_p95_us) = random_reads_at_depth(&[("flash_timing.die_sense_ns", "0us")], 128);
    assert!(fifo_p95_us < 1.45 * fifo_mean_us, "p95 {fifo_p95_us:.0} µs, mean {fifo_mean_us:.0} µs");
    assert!(rate > 0.9 * fifo_rate, "{rate:.0}/s with the serial part, {fifo_rate:.0}/s without");
    // At QD 1 the serial part is within the sense: nothing to wait for.
    let (_, qd1_us, _) = random_reads_at_depth(&[], 1);
    let (_, fifo_qd1_us, _) = random_reads_at_depth(&[("flash_timing.die_sense_ns", "0us")], 1);
    assert!((qd1_us - fifo_qd1_us).abs() < 0.5, "QD 1: {qd1_us:.1} µs, {fifo_qd1_us:.1} µs without");
}
