//! The append path: an append's write-pointer and mapping update is a second
//! stage on the FTL core, so page-sized appends to one zone reach the flash's
//! limit, while an append that covers part of a mapping unit leaves a merge
//! behind that limits small appends device-wide (seed 000 Fig 8: 4 KiB
//! appends stop at 132 K/s, 8 KiB ones at the flash's 146 K/s).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::Nanos;

fn device(sets: &[(&str, &str)]) -> Device {
    let mut config = preset("zn540").unwrap();
    for (path, value) in sets {
        config = set_parameter(&config, path, value).unwrap();
    }
    Device::new(config).unwrap()
}

/// Appends per second of `count` appends of `nlb` LBAs, `qd` in flight to
/// each of `zones` zones, each resubmitted when one completes.
fn append_rate(dev: &mut Device, zones: u64, nlb: u32, qd: usize, count: usize) -> f64 {
    appends(dev, zones, nlb, qd, count).0
}

/// Appends per second and the latency of each append (ns), as `append_rate`.
fn appends(dev: &mut Device, zones: u64, nlb: u32, qd: usize, count: usize) -> (f64, Vec<Nanos>) {
    let zone_lbas = dev.layout().zone_lbas;
    let mut latencies_ns = Vec::with_capacity(count);
    let mut in_flight: BinaryHeap<Reverse<(Nanos, u64)>> = BinaryHeap::new();
    for zone in 0..zones {
        in_flight.extend((0..qd).map(|_| Reverse((0, zone))));
    }
    let mut last_ns = 0;
    for _ in 0..count {
        let Reverse((t, zone)) = in_flight.pop().expect("commands in flight");
        let c =
            dev.submit(t, &Command::Append { zslba: zone * zone_lbas, nlb, payload: Payload::None, fua: false }, None);
        assert!(c.status.is_success(), "{:?}", c.status);
        last_ns = last_ns.max(c.complete_ns);
        latencies_ns.push(c.complete_ns - t);
        in_flight.push(Reverse((c.complete_ns, zone)));
    }
    (count as f64 / (last_ns as f64 / 1e9), latencies_ns)
}

/// The `q`-quantile of `latencies_ns`.
fn quantile_ns(latencies_ns: &mut [Nanos], q: f64) -> Nanos {
    latencies_ns.sort_unstable();
    assert!((0.0..=1.0).contains(&q));
    // At most len - 1, rounded down (`as` truncates toward zero).
    #[allow(clippy::cast_possible_truncation)]
    let rank = ((latencies_ns.len() - 1) as f64 * q) as usize;
    latencies_ns[rank]
}

/// Mean latency (ns) of QD-1 appends of `nlb` LBAs to zone 0.
fn qd1_append_ns(dev: &mut Device, nlb: u32, count: u64) -> Nanos {
    let mut t = 0;
    for _ in 0..count {
        let c = dev.submit(t, &Command::Append { zslba: 0, nlb, payload: Payload::None, fua: false }, None);
        t = c.complete_ns;
    }
    t / count
}

#[test]
fn a_two_stage_append_path_lets_page_sized_appends_pass_the_firmware_core() {
    let append_ns = preset("zn540").unwrap().controller.append_ns;
    let core_bound = 1e9 / append_ns as f64;
    let staged = append_rate(&mut device(&[]), 1, 2, 8, 20_000);
    let serial = append_rate(&mut device(&[("controller.append_ftl_ns", "0ns")]), 1, 2, 8, 20_000);
    assert!(serial <= 1.01 * core_bound, "one stage: {serial:.0}/s, core bound {core_bound:.0}/s");
    assert!(staged > 1.05 * core_bound, "two stages: {staged:.0}/s, core bound {core_bound:.0}/s");
    // The stages run one after the other, so a lone append takes as long either way.
    let lone = |sets: &[(&str, &str)]| qd1_append_ns(&mut device(sets), 2, 100);
    assert_eq!(lone(&[]), lone(&[("controller.append_ftl_ns", "0ns")]));
}

#[test]
fn appends_that_cover_part_of_a_mapping_unit_are_limited_device_wide() {
    let c = preset("zn540").unwrap().controller;
    // Every 4 KiB append covers half of an 8 KiB unit and leaves a merge on the FTL core.
    let ftl_bound = 1e9 / (c.append_ftl_ns as f64 + c.append_partial_unit_ns as f64);
    let (one_zone, four_zones) =
        (append_rate(&mut device(&[]), 1, 1, 8, 20_000), append_rate(&mut device(&[]), 4, 1, 8, 20_000));
    assert!(four_zones <= 1.01 * ftl_bound, "{four_zones:.0}/s, FTL bound {ftl_bound:.0}/s");
    assert!(four_zones < 1.05 * one_zone, "more zones do not help: {one_zone:.0} vs {four_zones:.0}/s");
    let no_merge = [("controller.append_partial_unit_held_ns", "0ns"), ("controller.append_partial_unit_ns", "0ns")];
    let unmerged = append_rate(&mut device(&no_merge), 4, 1, 8, 20_000);
    assert!(unmerged > 1.3 * four_zones, "without merges: {unmerged:.0} vs {four_zones:.0}/s");
    // With none of the merge held, it follows the append: a lone append does not wait for it.
    let all_after = [("controller.append_partial_unit_held_ns", "0ns")];
    let lone = |sets: &[(&str, &str)]| qd1_append_ns(&mut device(sets), 1, 100);
    assert_eq!(lone(&all_after), lone(&no_merge));
}

#[test]
fn an_append_that_covers_part_of_a_mapping_unit_waits_for_the_held_part_of_its_merge() {
    let c = preset("zn540").unwrap().controller;
    assert!(c.append_partial_unit_held_ns > 0 && c.append_partial_unit_held_ns < c.append_partial_unit_ns);
    let all_after = [("controller.append_partial_unit_held_ns", "0ns")];
    // Every 4 KiB append covers half of an 8 KiB unit and waits for the held part.
    let lone = |sets: &[(&str, &str)], nlb| qd1_append_ns(&mut device(sets), nlb, 100);
    assert_eq!(lone(&[], 1), lone(&all_after, 1) + c.append_partial_unit_held_ns);
    // Aligned 8 KiB appends fill whole units: nothing is held.
    assert_eq!(lone(&[], 2), lone(&all_after, 2));
    // The FTL core does the same work per append, so the device-wide limit stays.
    let (held, after) =
        (append_rate(&mut device(&[]), 4, 1, 8, 20_000), append_rate(&mut device(&all_after), 4, 1, 8, 20_000));
    assert!((held / after - 1.0).abs() < 0.02, "held part or not: {held:.0} vs {after:.0}/s");
    // The held part is part of the merge: more than the merge is refused.
    let too_much = set_parameter(&preset("zn540").unwrap(), "controller.append_partial_unit_held_ns", "11us")
        .and_then(|config| config.validate().map(|_| ()));
    let err = too_much.expect_err("a held part longer than the merge");
    assert!(err.to_string().contains("controller.append_partial_unit_held_ns"), "{err}");
}

#[test]
fn unit_commits_hold_the_ftl_core_so_appends_at_the_flashs_limit_spread() {
    // Die-bound, without the program data path's even pace (and its
    // journal's pauses), where commits are what spreads the tail.
    let no_path = [("controller.program_path_bytes_per_s", "0"), ("controller.journal_units", "0")];
    let commit = [no_path[0], no_path[1], ("controller.unit_commit_ns", "12us")];
    let no_commit = [no_path[0], no_path[1], ("controller.unit_commit_ns", "0ns")];
    // Three 8 KiB appends in flight to one zone keep the flash at its limit.
    let (rate, mut latencies_ns) = appends(&mut device(&commit), 1, 2, 3, 30_000);
    let (rate_free, mut latencies_free_ns) = appends(&mut device(&no_commit), 1, 2, 3, 30_000);
    assert!((rate / rate_free - 1.0).abs() < 0.03, "flash-bound either way: {rate:.0} vs {rate_free:.0}/s");
    let p50 = |l: &mut [Nanos]| quantile_ns(l, 0.5);
    let p95 = |l: &mut [Nanos]| quantile_ns(l, 0.95);
    let (p95_ns, p95_free_ns) = (p95(&mut latencies_ns), p95(&mut latencies_free_ns));
    assert!(p95_ns >= p95_free_ns + 5_000, "commits spread the tail: p95 {p95_ns} vs {p95_free_ns} ns");
    let (p50_ns, p50_free_ns) = (p50(&mut latencies_ns), p50(&mut latencies_free_ns));
    assert!(p50_ns.abs_diff(p50_free_ns) < 2_000, "most appends miss a commit: p50 {p50_ns} vs {p50_free_ns} ns");
    // A lone append stream meets a commit once a unit (24 appends), and only
    // when its FTL stage falls in it.
    let lone = |sets: &[(&str, &str)]| qd1_append_ns(&mut device(sets), 2, 2_400) as f64;
    let (lone_ns, lone_free_ns) = (lone(&commit), lone(&no_commit));
    assert!(lone_ns >= lone_free_ns && lone_ns < 1.05 * lone_free_ns, "QD 1: {lone_ns:.0} vs {lone_free_ns:.0} ns");
}

/// Latencies (ns) of `count` QD-1 writes of `nlb` LBAs to zone 0, each sent
/// `gap_ns` after the one before completes.
fn qd1_write_latencies_ns(dev: &mut Device, nlb: u32, count: u64, gap_ns: Nanos) -> Vec<Nanos> {
    let (mut t, mut slba) = (0, 0);
    let mut latencies_ns = Vec::new();
    for _ in 0..count {
        let c = dev.submit(t, &Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None }, None);
        assert!(c.status.is_success(), "{:?}", c.status);
        latencies_ns.push(c.complete_ns - t);
        (t, slba) = (c.complete_ns + gap_ns, slba + u64::from(nlb));
    }
    latencies_ns
}

#[test]
fn a_unit_commit_runs_after_the_command_that_finds_it_due() {
    // The firmware takes a commit up between commands: the write whose FTL
    // work finds one due passes it, and a QD-1 stream's next write waits
    // only for what is left of the commit when its FTL work starts.
    let commit_ns = 12_000;
    let commit = [("controller.unit_commit_ns", "12us")];
    let no_commit = [("controller.unit_commit_ns", "0ns")];
    // 4 KiB writes, each sent as the one before ends (a command is always in
    // the drive); 48 fill a unit. The first write opens the zone implicitly:
    // it is left out.
    let with = &qd1_write_latencies_ns(&mut device(&commit), 1, 4_801, 0)[1..];
    let free = &qd1_write_latencies_ns(&mut device(&no_commit), 1, 4_801, 0)[1..];
    let (base_ns, worst_ns) = (*free.iter().max().unwrap(), *with.iter().max().unwrap());
    assert_eq!(base_ns, *free.iter().min().unwrap(), "without commits every write alike");
    let waited = with.iter().filter(|&&l| l > base_ns).count();
    // Each unit's commit delays one write, by less than the whole commit: the
    // next write's FTL work starts some µs after the write before it ended.
    assert!((90..=110).contains(&waited), "one write in 48 waits: {waited} of 4800");
    assert!(worst_ns > base_ns + 1_000, "the commit shows: {worst_ns} vs {base_ns} ns");
    assert!(worst_ns < base_ns + commit_ns - 3_000, "never a whole commit: {worst_ns} vs {base_ns} ns");
    // With the drive idle when a commit comes due, the firmware takes it up
    // then: writes a while after its unit's program ends never wait for it
    // (deferred to the first of them, it would hold up the second).
    let after_idle = |sets: &[(&str, &str)]| {
        let mut dev = device(sets);
        // One unit: two writes of 96 KiB; 10 ms later, two of 4 KiB.
        qd1_write_latencies_ns(&mut dev, 24, 2, 0);
        let mut latencies_ns = Vec::new();
        let mut t = 10_000_000;
        for slba in [48, 49] {
            let write = Command::Write { slba, nlb: 1, payload: Payload::None, fua: false, placement: None };
            let c = dev.submit(t, &write, None);
            latencies_ns.push(c.complete_ns - t);
            t = c.complete_ns;
        }
        latencies_ns
    };
    assert_eq!(after_idle(&commit), after_idle(&no_commit), "with the drive idle, a commit costs no write anything");
}
