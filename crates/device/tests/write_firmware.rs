//! How a write uses the controller's cores: its FTL stage on the FTL core
//! alone (`controller.write_ftl_pipelined`), and the merge of a mapping unit
//! it ends inside (`controller.write_partial_unit_ns`).

use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::Nanos;

fn device(settings: &[(&str, &str)]) -> Device {
    let mut config = preset("zn540").unwrap();
    for (path, value) in settings {
        config = set_parameter(&config, path, value).unwrap();
    }
    Device::new(config).unwrap()
}

fn write(slba: u64, nlb: u32) -> Command<'static> {
    Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None }
}

/// Completion times of writes of `nlb` LBAs to `zones` different zones, all
/// sent at once after a first write opened each zone and everything settled.
fn burst(dev: &mut Device, zones: u64, nlb: u32) -> Vec<Nanos> {
    let zone_lbas = dev.layout().zone_lbas;
    let mut t = 0;
    for z in 0..zones {
        t = dev.submit(t, &write(z * zone_lbas, 2), None).complete_ns;
    }
    let at = t + 50_000_000;
    (0..zones).map(|z| dev.submit(at, &write(z * zone_lbas + 2, nlb), None).complete_ns - at).collect()
}

#[test]
fn a_pipelined_ftl_stage_lets_the_next_write_onto_the_firmware_core_sooner() {
    let settings = |on| [("controller.write_ftl_pipelined", on), ("controller.write_partial_unit_ns", "0ns")];
    let held = burst(&mut device(&settings("false")), 8, 2);
    let pipelined = burst(&mut device(&settings("true")), 8, 2);
    // Alone, a write takes as long either way: the stages follow each other.
    assert_eq!(held[0], pipelined[0]);
    // Queued behind each other, writes held the firmware core for the whole
    // 5.4 µs; pipelined, the FTL core's 3.5 µs sets the pace.
    let step = |v: &[Nanos]| (v[7] - v[3]) / 4;
    assert!(step(&held).abs_diff(5_400) < 300, "held: {} ns per write", step(&held));
    assert!(step(&pipelined).abs_diff(3_500) < 300, "pipelined: {} ns per write", step(&pipelined));
}

#[test]
fn a_write_ending_inside_a_mapping_unit_merges_it_on_the_ftl_core_after_it_completes() {
    let settings = |merge| [("controller.write_ftl_pipelined", "true"), ("controller.write_partial_unit_ns", merge)];
    // 4 KiB writes cover half an 8 KiB unit; 8 KiB ones at an even LBA fill theirs.
    let (plain_4k, merged_4k) =
        (burst(&mut device(&settings("0ns")), 8, 1), burst(&mut device(&settings("1600ns")), 8, 1));
    assert_eq!(plain_4k[0], merged_4k[0], "the merge comes after the write's completion");
    let step = |v: &[Nanos]| (v[7] - v[3]) / 4;
    assert!(step(&merged_4k).abs_diff(3_500 + 1_600) < 300, "merged: {} ns per 4 KiB write", step(&merged_4k));
    let (plain_8k, merged_8k) =
        (burst(&mut device(&settings("0ns")), 8, 2), burst(&mut device(&settings("1600ns")), 8, 2));
    assert_eq!(plain_8k, merged_8k, "8 KiB writes fill their units: nothing to merge");
}
