//! Seed 002 §3.2.2: a PPA-ordered plug is bound only by page order on its
//! die, so a write that skips a fully valid chunk whose die is still busy
//! goes on while the chunk is copied; an LBA-ordered plug moves the write
//! pointer, so the same write waits for it.

use zonelab_device::*;

/// The `mlc` preset with D_zone = 4 (chunks 1 and 5 share a die) and 64-chunk zones.
fn device(plugging: &str) -> Device {
    let opts = DeviceOptions {
        zones: Some(16),
        zone_size_bytes: Some(1 << 20),
        sets: vec![
            ("mapping.d_zone".into(), "4".into()),
            ("znsplus.plugging".into(), plugging.into()),
            ("namespace.max_open_zones".into(), "0".into()),
            ("namespace.max_active_zones".into(), "0".into()),
        ],
        ..Default::default()
    };
    Device::new(opts.apply(preset("mlc").unwrap()).unwrap()).unwrap()
}

fn ok(dev: &mut Device, at_ns: u64, cmd: &Command<'_>) -> Completion {
    let c = dev.submit(at_ns, cmd, None);
    assert_eq!(c.status, Status::Success, "{cmd:?}");
    c
}

fn write(dev: &mut Device, at_ns: u64, slba: u64, nlb: u32) -> Completion {
    ok(dev, at_ns, &Command::Write { slba, nlb, payload: Payload::Pattern(3), fua: false, placement: None })
}

/// Latency of a write to chunk 6 right after a write to chunk 1 of a
/// TL_opened zone whose chunk 1 keeps blocks 4 and 5 and, if `chunk5_valid`,
/// chunk 5 (blocks 20-23, on chunk 1's die) is kept whole.
fn second_write_latency(plugging: &str, chunk5_valid: bool) -> u64 {
    let mut dev = device(plugging);
    let mut now = write(&mut dev, 0, 0, 128).complete_ns;
    now = write(&mut dev, now, 128, 128).complete_ns + 100_000_000;
    let valid = 0b11u64 << 4 | if chunk5_valid { 0xf << 20 } else { 0 };
    now = ok(&mut dev, now, &Command::TlOpen { zslba: 0, valid: &[valid, 0, 0, 0] }).complete_ns + 100_000_000;
    // Chunk 1's free blocks: its program keeps the die busy for tPROG.
    now = write(&mut dev, now, 6, 2).complete_ns;
    write(&mut dev, now, 24, 4).complete_ns - now
}

#[test]
fn a_ppa_ordered_write_does_not_wait_for_the_plug_it_skips_and_an_lba_ordered_one_does() {
    let program_ns = device("ppa").config().flash_timing.program_ns;
    let ppa_base = second_write_latency("ppa", false);
    let ppa = second_write_latency("ppa", true);
    assert!(ppa <= ppa_base, "PPA order: {ppa} ns with the plug, {ppa_base} without");
    let lba_base = second_write_latency("lba", false);
    let lba = second_write_latency("lba", true);
    // The copyback waits for chunk 1's program on the shared die, then senses.
    assert!(lba > lba_base + program_ns / 2, "LBA order: {lba} ns with the plug, {lba_base} without");
}
