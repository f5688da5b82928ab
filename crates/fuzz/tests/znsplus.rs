//! The structure-aware ZNS+ target: generated sequences get past the
//! devices' checks (every command kind is accepted often, on every preset),
//! and a device that strays from the reference model is caught.

use std::collections::BTreeMap;
use zonelab_fuzz::znsplus::reference::Model;
use zonelab_fuzz::znsplus::sequence::{generate, parse, PRESETS};
use zonelab_fuzz::znsplus::{device, geometry, run, run_on};
use zonelab_sim::SimRng;

#[test]
fn generated_sequences_reach_every_command_on_every_preset() {
    let mut built: BTreeMap<String, u64> = BTreeMap::new();
    let mut accepted: BTreeMap<&str, u64> = BTreeMap::new();
    let mut refused: BTreeMap<&str, u64> = BTreeMap::new();
    for i in 0..60 {
        let seq = generate(&mut SimRng::fork(3, i));
        let reached = run(&seq).unwrap_or_else(|f| panic!("{f}\n{seq}"));
        *built.entry(seq.setup.preset.clone()).or_default() += u64::from(reached.built);
        for (k, n) in reached.accepted {
            *accepted.entry(k).or_default() += n;
        }
        for (k, n) in reached.refused {
            *refused.entry(k).or_default() += n;
        }
    }
    eprintln!("built {built:?}\naccepted {accepted:?}\nrefused {refused:?}");
    for preset in PRESETS {
        assert!(built.get(preset).is_some_and(|&n| n >= 8), "{preset}: {built:?}");
    }
    for kind in ["write", "append", "read", "compact", "compact_chunks", "simple_copy", "tl_open", "mgmt"] {
        let (a, r) = (accepted.get(kind).copied().unwrap_or(0), refused.get(kind).copied().unwrap_or(0));
        assert!(a >= 20 && a * 5 >= r, "{kind}: {a} accepted, {r} refused");
    }
}

/// The check can fail: a model that takes the zones' size for their
/// capacity disagrees with the device on the write that crosses it.
#[test]
fn a_device_that_strays_from_the_model_is_a_finding() {
    let text = "device zn540 zone_kib=256 zcap_kib=128 max_open=2 max_active=3 plugging=ppa\n\
                write zone=1 skip=0 nlb=16 p=7 gap=0\nwrite zone=1 skip=0 nlb=24 p=8 gap=done\n\
                read zone=1 offset=0 nlb=31 gap=0\n";
    let seq = parse(text).unwrap();
    assert!(run(&seq).unwrap().built);
    let dev = device(&seq.setup).unwrap();
    let mut wrong = geometry(&dev);
    wrong.zcap_lbas = wrong.zone_lbas;
    let found = run_on(dev, Model::new(wrong, false), &seq.ops).unwrap_err().to_string();
    assert!(found.contains("op 1") && found.contains("ZoneBoundaryError"), "{found}");
}
