//! The conventional SSD (sn640 and small twins): page mapping, greedy GC,
//! write amplification, and GC's interference with reads.

use proptest::prelude::*;
use std::collections::HashMap;
use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::{Nanos, MS};

/// 2 dies × 16 blocks of 768 KiB (192 LBAs): 24 MiB of flash under `zones` MiB of namespace.
fn small(zones: u32, data: bool) -> Device {
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
        ("mode", if data { "data" } else { "metadata" }),
    ] {
        c = set_parameter(&c, path, value).unwrap();
    }
    c.namespace.zones = zones;
    c.namespace.conventional_zones = zones;
    Device::new(c).unwrap()
}

fn write(dev: &mut Device, t: Nanos, slba: u64, nlb: u32, pattern: u8) -> Nanos {
    let c = dev.submit(t, &Command::Write { slba, nlb, payload: Payload::Pattern(pattern), fua: false }, None);
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
}

/// Random overwrites of the first `used` LBAs; returns the write amplification.
fn write_amplification(used_fraction: f64) -> f64 {
    let mut dev = small(16, false);
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// GC moves data around but never loses or mixes it up.
    #[test]
    fn gc_keeps_data_intact(ops in prop::collection::vec((0u64..4096, 1u32..=32, any::<u8>()), 200..900)) {
        let mut dev = small(16, true);
        let mut reference: HashMap<u64, u8> = HashMap::new();
        let mut t = 0;
        for &(slba, nlb, pattern) in &ops {
            let nlb = nlb.min((dev.nsze() - slba) as u32);
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
