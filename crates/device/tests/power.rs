//! Write cache, Flush, FUA and power cuts (see `zonelab_device::power`).

use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::Nanos;

/// The zn540 shrunk to 4 zones of 64 MiB, data kept; one program unit is
/// 192 KiB (48 LBAs) on each of 16 dies.
fn device(sets: &[(&str, &str)]) -> Device {
    let opts = DeviceOptions { zones: Some(4), zone_size_bytes: Some(64 << 20), ..Default::default() };
    let mut config = opts.apply(preset("zn540").unwrap()).unwrap();
    config.mode = Mode::Data;
    for (path, value) in sets {
        config = set_parameter(&config, path, value).unwrap();
    }
    Device::new(config).unwrap()
}

fn write(dev: &mut Device, t: Nanos, slba: u64, nlb: u32, byte: u8, fua: bool) -> Completion {
    let c = dev.submit(t, &Command::Write { slba, nlb, payload: Payload::Pattern(byte), fua, placement: None }, None);
    assert!(c.status.is_success(), "{:?}", c.status);
    c
}

fn wp(dev: &Device, zone: u32) -> u64 {
    dev.descriptor(zone).wp - dev.descriptor(zone).zslba
}

fn read_byte(dev: &mut Device, t: Nanos, lba: u64) -> u8 {
    let mut buf = vec![0u8; 4096];
    let c = dev.submit(t, &Command::Read { slba: lba, nlb: 1 }, Some(&mut buf));
    assert!(c.status.is_success());
    buf[0]
}

#[test]
fn a_power_loss_protected_buffer_keeps_every_completed_write() {
    let mut dev = device(&[]);
    let c = write(&mut dev, 0, 0, 8, 7, false);
    let r = dev.power_cut(c.complete_ns);
    assert_eq!(r, PowerCutReport::default());
    assert_eq!(wp(&dev, 0), 8);
    assert_eq!(read_byte(&mut dev, c.complete_ns, 5), 7);
}

#[test]
fn a_volatile_cache_loses_what_was_neither_programmed_nor_flushed() {
    let mut dev = device(&[("write_buffer.cache", "volatile")]);
    let c = write(&mut dev, 0, 0, 8, 7, false);
    let r = dev.power_cut(c.complete_ns);
    assert_eq!((r.zones_rolled_back, r.lost_blocks), (1, 8));
    assert_eq!(wp(&dev, 0), 0);
    assert_eq!(dev.descriptor(0).state, ZoneState::Empty);
    assert_eq!(read_byte(&mut dev, c.complete_ns, 5), 0, "lost data reads as zeros");
    // The zone takes writes at its recovered write pointer again.
    let c2 = write(&mut dev, c.complete_ns, 0, 8, 9, false);
    assert_eq!(read_byte(&mut dev, c2.complete_ns, 5), 9);
}

#[test]
fn flush_makes_completed_writes_durable_and_costs_a_partial_unit_save() {
    let mut dev = device(&[("write_buffer.cache", "volatile"), ("write_buffer.partial_unit_flush_ns", "300us")]);
    let c = write(&mut dev, 0, 0, 8, 7, false);
    let f = dev.submit(c.complete_ns, &Command::Flush, None);
    assert!(f.status.is_success());
    assert!(f.latency_ns() >= 300_000, "one zone's partial unit is saved: {} ns", f.latency_ns());
    let c2 = write(&mut dev, f.complete_ns, 8, 8, 8, false);
    dev.power_cut(c2.complete_ns);
    assert_eq!(wp(&dev, 0), 8, "flushed data survives, the later write does not");
    assert_eq!(read_byte(&mut dev, c2.complete_ns, 7), 7);
    assert_eq!(dev.counters().flushes, 1);
    assert_eq!(dev.counters().flush_saves, 1);
}

#[test]
fn flush_is_cheap_with_nothing_to_save() {
    let mut plp = device(&[]);
    let c = write(&mut plp, 0, 0, 8, 7, false);
    let f = plp.submit(c.complete_ns, &Command::Flush, None);
    assert!(f.latency_ns() < 50_000, "plp: {} ns", f.latency_ns());
    let mut vol = device(&[("write_buffer.cache", "volatile")]);
    let f = vol.submit(0, &Command::Flush, None);
    assert!(f.latency_ns() < 50_000, "empty volatile cache: {} ns", f.latency_ns());
}

#[test]
fn a_fua_write_completes_once_durable() {
    let mut dev = device(&[("write_buffer.cache", "volatile")]);
    let plain = write(&mut dev, 0, 0, 8, 7, false);
    let fua = write(&mut dev, plain.complete_ns, 8, 8, 8, true);
    assert!(fua.latency_ns() > plain.latency_ns() + 200_000, "{} vs {}", fua.latency_ns(), plain.latency_ns());
    dev.power_cut(fua.complete_ns);
    assert_eq!(wp(&dev, 0), 16, "the FUA write and what precedes it survive");
    // With power-loss protection FUA costs nothing extra.
    let mut plp = device(&[]);
    let a = write(&mut plp, 0, 0, 8, 7, false);
    let b = write(&mut plp, a.complete_ns, 8, 8, 8, false);
    let c = write(&mut plp, b.complete_ns, 16, 8, 8, true);
    assert_eq!(b.latency_ns(), c.latency_ns());
}

#[test]
fn programmed_units_survive_a_volatile_cache() {
    let mut dev = device(&[("write_buffer.cache", "volatile")]);
    // 3 MiB = one super word line: every die's unit fills and is programmed.
    let mut t = 0;
    for i in 0..24u64 {
        t = write(&mut dev, t, i * 32, 32, 1, false).complete_ns;
    }
    let tail = write(&mut dev, t, 768, 8, 2, false);
    // Right after the writes the programs are still running: nothing is on flash.
    let mut early = device(&[("write_buffer.cache", "volatile")]);
    let mut t2 = 0;
    for i in 0..24u64 {
        t2 = write(&mut early, t2, i * 32, 32, 1, false).complete_ns;
    }
    early.power_cut(t2);
    assert_eq!(wp(&early, 0), 0, "programs in flight at the cut are torn");
    // Long after, the programmed super word line is durable, the tail is not.
    dev.power_cut(tail.complete_ns + 100_000_000);
    assert_eq!(wp(&dev, 0), 768);
}

#[test]
fn writes_in_flight_are_torn_or_lost_as_configured() {
    for (mode, want) in [("torn", true), ("lost", false)] {
        let mut dev = device(&[("write_buffer.power_cut_in_flight", mode)]);
        // 128 KiB crosses the link in pieces; cut halfway through.
        let c = write(&mut dev, 0, 0, 32, 3, false);
        let mid = c.submit_ns + c.latency_ns() / 2;
        dev.power_cut(mid);
        let kept = wp(&dev, 0);
        if want {
            assert!(kept > 0 && kept < 32, "torn: {kept} of 32 blocks kept");
        } else {
            assert_eq!(kept, 0, "lost: nothing of the write kept");
        }
    }
}

#[test]
fn old_configurations_load_with_power_loss_protection() {
    let config = preset("zn540").unwrap();
    let text = toml::to_string(&config).unwrap();
    let old: String = text
        .lines()
        .filter(|l| {
            !["cache", "flush_ns", "partial_unit_flush_ns", "power_cut_in_flight"].iter().any(|k| l.starts_with(k))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    let loaded: DeviceConfig = toml::from_str(&old).unwrap();
    assert_eq!(loaded.write_buffer.cache, WriteCache::Plp);
    assert_eq!(loaded, config);
    let bad = text.replace("cache = \"plp\"", "cache = \"writeback\"");
    assert!(toml::from_str::<DeviceConfig>(&bad).is_err());
}
