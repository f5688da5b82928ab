//! The conventional SSD (sn640 and small twins): page mapping, greedy GC,
//! write amplification, and GC's interference with reads.

use proptest::prelude::*;
use std::collections::HashMap;
use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::{Nanos, MS};

/// 2 dies × 16 blocks of 768 KiB (192 LBAs): 24 MiB of flash under `zones` MiB of namespace.
fn small(zones: u32, data: bool) -> Device {
    small_with(zones, data, &[])
}

/// `small` with further `--set` overrides.
fn small_with(zones: u32, data: bool, set: &[(&str, &str)]) -> Device {
    let mut c = preset("sn640").unwrap();
    for (path, value) in [
        ("flash.channels", "2"),
        ("flash.chips_per_channel", "1"),
        ("flash.planes_per_die", "1"),
        ("flash.blocks_per_plane", "16"),
        ("flash.pages_per_block", "48"),
        ("mapping.d_zone", "2"),
        ("namespace.zone_size_bytes", "1m"),
        ("namespace.zone_capacity_bytes", "1m"),
        ("write_buffer.zone_buffer_bytes", "1m"),
        // Background GC from 3 of a die's 16 blocks free (sn640: 12 of 916).
        ("conventional.gc_free_blocks_start", "3"),
        ("mode", if data { "data" } else { "metadata" }),
    ] {
        c = set_parameter(&c, path, value).unwrap();
    }
    for (path, value) in set {
        c = set_parameter(&c, path, value).unwrap();
    }
    c.namespace.zones = zones;
    c.namespace.conventional_zones = zones;
    Device::new(c).unwrap()
}

fn write(dev: &mut Device, t: Nanos, slba: u64, nlb: u32, pattern: u8) -> Nanos {
    let c = dev.submit(
        t,
        &Command::Write { slba, nlb, payload: Payload::Pattern(pattern), fua: false, placement: None },
        None,
    );
    assert!(c.status.is_success(), "{:?}", c.status);
    c.complete_ns
}

#[test]
fn sn640_is_a_valid_conventional_twin_of_the_zn540() {
    let c = preset("sn640").unwrap();
    let zn = preset("zn540").unwrap();
    assert_eq!(c.flash, zn.flash);
    assert_eq!(c.flash_timing, zn.flash_timing);
    let dev = Device::new(c).unwrap();
    assert!(dev.zones().zone_type(0) == ZoneType::Conventional);
    assert_eq!(dev.ftl_counters().unwrap().host_units, 0);
}

#[test]
fn conventional_configs_are_checked() {
    let mut c = preset("sn640").unwrap();
    c.namespace.conventional_zones = 10;
    assert!(c.validate().unwrap_err().0.contains("conventional_zones"));
    let mut c = preset("sn640").unwrap();
    c.namespace.zones = 520;
    c.namespace.conventional_zones = 520;
    assert!(c.validate().unwrap_err().0.contains("does not fit"));
    let gc = |start: u32, units: u32| {
        let mut c = preset("sn640").unwrap();
        let conventional = c.conventional.as_mut().unwrap();
        conventional.gc_free_blocks_start = start;
        conventional.gc_units_per_host_unit_max = units;
        c.validate().map_err(|e| e.0)
    };
    assert!(gc(0, 0).is_ok() && gc(3, 1).is_ok() && gc(12, 64).is_ok());
    assert!(gc(12, 0).unwrap_err().contains("set both"));
    assert!(gc(0, 8).unwrap_err().contains("set both"));
    assert!(gc(2, 8).unwrap_err().contains("must be above conventional.gc_free_blocks_min"));
    assert!(gc(12, 65).unwrap_err().contains("at most 64"));
}

/// Random overwrites of the first `used` LBAs; returns the write amplification.
fn write_amplification(used_fraction: f64) -> f64 {
    let mut dev = small(16, false);
    assert!((0.0..=1.0).contains(&used_fraction));
    // At most nsze, rounded down (`as` truncates toward zero).
    #[allow(clippy::cast_possible_truncation)]
    let lbas = (dev.nsze() as f64 * used_fraction) as u64;
    let mut rng = zonelab_sim::SimRng::new(7);
    let mut t = 0;
    for lba in 0..lbas {
        t = write(&mut dev, t, lba, 1, 0);
    }
    for _ in 0..lbas * 6 {
        t = write(&mut dev, t, rng.below(lbas), 1, 0);
    }
    dev.check_ftl();
    dev.ftl_counters().unwrap().write_amplification
}

#[test]
fn write_amplification_grows_with_utilization() {
    let waf: Vec<f64> = [0.3, 0.6, 0.9].iter().map(|&u| write_amplification(u)).collect();
    assert!(waf[0] < waf[1] && waf[1] < waf[2], "{waf:?}");
    assert!(waf[0] >= 1.0 && waf[2] > 1.5, "{waf:?}");
    eprintln!("write amplification at 30/60/90% utilization: {waf:?}");
}

#[test]
fn gc_slows_reads_of_a_busy_drive() {
    // Reads alone, then reads between overwrites that keep GC busy.
    let mut dev = small(16, false);
    let n = dev.nsze();
    let mut t = 0;
    for lba in (0..n).step_by(32) {
        t = write(&mut dev, t, lba, 32, 0);
    }
    let read = |dev: &mut Device, t: Nanos, lba: u64| {
        let c = dev.submit(t, &Command::Read { slba: lba, nlb: 1 }, None);
        (c.complete_ns - c.submit_ns, c.complete_ns)
    };
    let mut rng = zonelab_sim::SimRng::new(3);
    let (mut alone, mut busy) = (0, 0);
    for _ in 0..200 {
        let (l, done) = read(&mut dev, t + MS, rng.below(n));
        alone = alone.max(l);
        t = done;
    }
    let victims = dev.ftl_counters().unwrap().victims;
    for _ in 0..2000 {
        let w = write(&mut dev, t, rng.below(n / 32) * 32, 32, 1);
        let (l, _) = read(&mut dev, t, rng.below(n));
        busy = busy.max(l);
        t = w;
    }
    assert!(dev.ftl_counters().unwrap().victims > victims, "overwrites made GC run");
    assert!(busy > 4 * alone, "worst read with GC {busy} ns vs alone {alone} ns");
}

/// Writes the first `used_fraction` of `dev` in 32-LBA pieces; returns
/// the pieces and when the last write completed.
fn fill(dev: &mut Device, used_fraction: f64) -> (u64, Nanos) {
    assert!((0.0..=1.0).contains(&used_fraction));
    // At most nsze, rounded down (`as` truncates toward zero).
    #[allow(clippy::cast_possible_truncation)]
    let pieces = (dev.nsze() as f64 * used_fraction) as u64 / 32;
    let mut t = 0;
    for piece in 0..pieces {
        t = write(dev, t, piece * 32, 32, 0);
    }
    (pieces, t)
}

/// Overwrites `writes` of the `pieces` at random from `t`, one every 10 ms
/// (12.5 MiB/s: the two dies program 38 MiB/s, so they keep up with write
/// amplification up to 3), a 4 KiB read at random alongside each. Returns the reads' latencies and the end time.
fn overwrite(dev: &mut Device, pieces: u64, writes: u64, mut t: Nanos, seed: u64) -> (Vec<Nanos>, Nanos) {
    let mut rng = zonelab_sim::SimRng::new(seed);
    let mut reads = Vec::new();
    for _ in 0..writes {
        write(dev, t, rng.below(pieces) * 32, 32, 1);
        let c = dev.submit(t, &Command::Read { slba: rng.below(pieces * 32), nlb: 1 }, None);
        assert!(c.status.is_success());
        reads.push(c.complete_ns - c.submit_ns);
        t += 10 * MS;
    }
    dev.check_ftl();
    (reads, t)
}

fn percentile(mut v: Vec<Nanos>, p: f64) -> Nanos {
    v.sort_unstable();
    assert!((0.0..=1.0).contains(&p));
    // At most len - 1, rounded down (`as` truncates toward zero).
    #[allow(clippy::cast_possible_truncation)]
    let rank = ((v.len() - 1) as f64 * p) as usize;
    v[rank]
}

/// The defining property of background collection: once a die runs short
/// of free blocks, garbage collection moves a few units before each host
/// unit instead of whole victims at once, so at steady state no host unit
/// waits for a victim (no foreground collection) and none is preceded by
/// more than the configured maximum of GC units. With background collection
/// off, the same writes make host units wait for whole victims.
#[test]
fn background_gc_spreads_relocation_over_host_writes() {
    let mut dev = small(16, false);
    let (pieces, t) = fill(&mut dev, 0.6);
    let (_, t) = overwrite(&mut dev, pieces, 3000, t, 11);
    let warm = dev.ftl_counters().unwrap();
    overwrite(&mut dev, pieces, 3000, t, 12);
    let steady = dev.ftl_counters().unwrap();
    assert!(steady.victims > warm.victims + 20, "GC ran at steady state: {warm:?} -> {steady:?}");
    assert_eq!(steady.gc_foreground_units, warm.gc_foreground_units, "no host unit waited for a victim");
    assert!(steady.gc_units_before_host_unit_max <= 8, "{steady:?}");

    let off_settings = [("conventional.gc_free_blocks_start", "0"), ("conventional.gc_units_per_host_unit_max", "0")];
    let mut off = small_with(16, false, &off_settings);
    let (pieces, t) = fill(&mut off, 0.6);
    overwrite(&mut off, pieces, 6000, t, 11);
    let off = off.ftl_counters().unwrap();
    assert!(off.gc_foreground_units == off.gc_units && off.gc_units > 0, "{off:?}");
    assert!(off.gc_units_before_host_unit_max > 8, "a whole victim at once: {off:?}");
}

/// Reads under heavy overwrites see garbage collection in their tail: the
/// same writes at the same pace cost reads more on a fuller drive, whose
/// victims hold more valid data to move.
#[test]
fn reads_under_writes_see_gc_in_their_tail() {
    let tail = |used_fraction: f64| {
        let mut dev = small(16, false);
        let (pieces, t) = fill(&mut dev, used_fraction);
        let (reads, _) = overwrite(&mut dev, pieces, 4000, t, 5);
        (percentile(reads[2000..].to_vec(), 0.99), dev.ftl_counters().unwrap())
    };
    let (light, light_gc) = tail(0.2);
    let (full, full_gc) = tail(0.9);
    eprintln!("read p99 {light} ns at 20% used ({light_gc:?}), {full} ns at 90% ({full_gc:?})");
    assert!(full_gc.write_amplification > 1.5, "the full drive collects garbage: {full_gc:?}");
    assert!(full > 2 * light, "read p99 {full} ns on a full drive vs {light} ns on a light one");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// GC moves data around but never loses or mixes it up.
    #[test]
    fn gc_keeps_data_intact(ops in prop::collection::vec((0u64..4096, 1u32..=32, any::<u8>()), 200..900)) {
        let mut dev = small(16, true);
        let mut reference: HashMap<u64, u8> = HashMap::new();
        let mut t = 0;
        for &(slba, nlb, pattern) in &ops {
            let nlb = u32::try_from(u64::from(nlb).min(dev.nsze() - slba)).expect("at most nlb");
            t = write(&mut dev, t, slba, nlb, pattern);
            for lba in slba..slba + u64::from(nlb) {
                reference.insert(lba, pattern);
            }
        }
        dev.check_ftl();
        let mut out = vec![0u8; 4096];
        for lba in 0..dev.nsze() {
            prop_assert_eq!(dev.ftl_holds(lba), reference.contains_key(&lba), "lba {}", lba);
            let c = dev.submit(t, &Command::Read { slba: lba, nlb: 1 }, Some(&mut out));
            prop_assert!(c.status.is_success());
            let want = reference.get(&lba).copied().unwrap_or(0);
            prop_assert!(out.iter().all(|&b| b == want), "lba {} holds the wrong data", lba);
        }
    }
}

fn read_us(dev: &mut Device, t: Nanos, slba: u64) -> (Nanos, f64) {
    let c = dev.submit(t, &Command::Read { slba, nlb: 1 }, None);
    assert!(c.status.is_success(), "{:?}", c.status);
    (c.complete_ns, (c.complete_ns - c.submit_ns) as f64 / 1e3)
}

/// A page-mapped namespace follows sequential streams and reads the pages
/// ahead of them (seed 001: sequential 4 KiB reads reach the host's limit at
/// QD 4, random ones need QD 64), and a chunk written again leaves the read
/// buffer: the stream's next read of it goes to flash.
#[test]
fn a_page_mapped_namespace_reads_streams_ahead_and_forgets_rewritten_chunks() {
    let mut dev = small(4, false);
    let mut t = 0;
    for slba in (0..1024).step_by(16) {
        t = write(&mut dev, t, slba, 16, 1);
    }
    t += 100 * MS;
    let mut rng = zonelab_sim::SimRng::new(3);
    let (mut random, mut stream) = (0.0, 0.0);
    for i in 0..64 {
        let (done, us) = read_us(&mut dev, t, rng.below(256) * 4);
        random += us;
        let (done, us) = read_us(&mut dev, done, 512 + i);
        stream += us;
        t = done;
    }
    assert!(stream < random / 3.0, "a stream's reads come from the buffer: {stream:.0} µs vs {random:.0} µs random");
    // The stream is at LBA 576 and the chunk after it (580..584) is read ahead:
    // alone, its next read is quick; written again and programmed, it is a flash read.
    let next_read_us = |rewrite: bool| {
        let mut dev = small(4, false);
        let mut t = 0;
        for slba in (0..1024).step_by(16) {
            t = write(&mut dev, t, slba, 16, 1);
        }
        t += 100 * MS;
        for lba in 560..580 {
            t = read_us(&mut dev, t, lba).0;
        }
        if rewrite {
            t = write(&mut dev, t, 580, 4, 2);
            // Enough more to program the unit that holds it, then time to program it.
            for slba in (800..1000).step_by(16) {
                t = write(&mut dev, t, slba, 16, 3);
            }
            t += 100 * MS;
        }
        read_us(&mut dev, t + MS, 580).1
    };
    let (kept, rewritten) = (next_read_us(false), next_read_us(true));
    assert!(rewritten > 2.0 * kept, "rewritten chunk {rewritten:.1} µs, buffered {kept:.1} µs");
}

/// Sixteen 8 KiB writes (whole mapping units, so each costs the FTL core
/// the same) submitted together, 8 KiB apart in LBAs; returns each one's
/// completion time, in submission order, and whether each waited (was
/// pending).
fn sixteen_writes_at_once(set: &[(&str, &str)]) -> (Vec<Nanos>, Vec<bool>, Device) {
    let mut dev = small_with(16, true, set);
    let mut done: Vec<Option<Nanos>> = vec![None; 16];
    let mut waited = vec![false; 16];
    let mut tags = HashMap::new();
    for i in 0..16u64 {
        let cmd =
            Command::Write { slba: i * 2, nlb: 2, payload: Payload::Pattern(i as u8 + 1), fua: false, placement: None };
        match dev.start(0, &cmd, None) {
            Started::Done(c) => done[i as usize] = Some(c.complete_ns),
            Started::Pending(tag) => {
                waited[i as usize] = true;
                tags.insert(tag, i as usize);
            }
        }
    }
    // Bound: one step per waiting write.
    for _ in 0..=16 {
        for (tag, c) in dev.take_completed() {
            assert!(c.status.is_success());
            done[tags[&tag]] = Some(c.complete_ns);
        }
        match dev.next_event_ns() {
            Some(t) => dev.advance(t + 1),
            None => break,
        }
    }
    (done.into_iter().map(|d| d.expect("every write completes")).collect(), waited, dev)
}

#[test]
fn waiting_writes_are_taken_from_the_window_in_random_order_at_the_same_pace() {
    let (fifo, fifo_waited, _) = sixteen_writes_at_once(&[("conventional.write_order_window", "0")]);
    assert!(fifo_waited.iter().all(|w| !w), "arrival order: no write is pending");
    assert!(fifo.windows(2).all(|w| w[0] < w[1]), "arrival order: {fifo:?}");
    let (random, waited, mut dev) = sixteen_writes_at_once(&[("conventional.write_order_window", "32")]);
    // The first finds the core free; the others wait for it.
    assert!(!waited[0] && waited[1..].iter().all(|&w| w), "{waited:?}");
    assert_ne!(random, fifo, "the core takes waiting writes out of their order");
    assert!(random.windows(2).any(|w| w[0] > w[1]), "{random:?}");
    // Equal work in another order: the same completion times, handed out
    // differently (the core's pace does not change).
    let (mut a, mut b) = (fifo.clone(), random.clone());
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b);
    // Every write landed.
    let mut out = vec![0u8; 2 * 4096];
    for i in 0..16u64 {
        let c = dev.submit(b[15] + MS, &Command::Read { slba: i * 2, nlb: 2 }, Some(&mut out));
        assert!(c.status.is_success());
        assert!(out.iter().all(|&x| x == i as u8 + 1), "write {i}");
    }
    // Without spread the window keeps arrival order, time for time.
    let (ordered, _, _) = sixteen_writes_at_once(&[("conventional.write_order_window", "32"), ("spread.on", "false")]);
    assert_eq!(ordered, fifo);
    // A window of 4 takes only among the 4 first waiting: the last write
    // submitted cannot be served before 12 others.
    let (narrow, _, _) = sixteen_writes_at_once(&[("conventional.write_order_window", "4")]);
    let rank = narrow.iter().filter(|&&t| t < narrow[15]).count();
    assert!(rank >= 12, "rank {rank}: {narrow:?}");
}

#[test]
fn a_write_order_window_of_one_or_beyond_the_limit_is_refused() {
    let c = preset("sn640").unwrap();
    for bad in ["1", "1025"] {
        let err = set_parameter(&c, "conventional.write_order_window", bad).map(Device::new);
        let msg = match err {
            Err(e) => e.to_string(),
            Ok(Err(e)) => e.to_string(),
            Ok(Ok(_)) => panic!("window {bad} accepted"),
        };
        assert!(msg.contains("write_order_window"), "{msg}");
    }
}
