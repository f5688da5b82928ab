//! The `zrwa` target's reach: generated sequences get ZRWAs allocated,
//! writes off the write pointer accepted, implicit and explicit commits
//! made and zones filled through them, and the reference model agrees with
//! the device on all of it; a device that disagreed would be found.

use std::collections::BTreeMap;
use zonelab_device::{Status, ZoneAction};
use zonelab_fuzz::zrwa::model::{Cmd, Model, Op};
use zonelab_fuzz::zrwa::{generate, parse, run};
use zonelab_sim::SimRng;

/// Status counts per kind of operation over `inputs` generated sequences, from the model.
fn reach(inputs: u64) -> BTreeMap<(&'static str, &'static str), u64> {
    let mut counts = BTreeMap::new();
    for i in 0..inputs {
        let (setup, ops) = parse(&generate(&mut SimRng::fork(7, i))).unwrap();
        let mut model = Model::new(setup);
        for &(op, _) in &ops {
            let before = op;
            let cmd = model.resolve(op);
            let kind = match (before, cmd) {
                (Op::Write { delta: 0, .. }, _) => "write at wp",
                (Op::Write { .. }, _) => "write off wp",
                (_, Cmd::Mgmt { action: ZoneAction::FlushZrwa, .. }) => "flush",
                (_, Cmd::Mgmt { action: ZoneAction::OpenZrwa, .. }) => "open zrwa",
                _ => "other",
            };
            *counts.entry((kind, model.apply(&cmd).status.name())).or_insert(0) += 1;
        }
    }
    counts
}

#[test]
fn generated_sequences_reach_the_zrwa_rules() {
    let counts = reach(200);
    for key in [
        ("write off wp", Status::Success),
        ("write off wp", Status::ZoneInvalidWrite),
        ("write off wp", Status::ZoneBoundaryError),
        ("flush", Status::Success),
        ("flush", Status::InvalidField),
        ("flush", Status::ZoneBoundaryError),
        ("open zrwa", Status::Success),
        ("open zrwa", Status::ZrwaResourcesUnavailable),
    ] {
        let key = (key.0, key.1.name());
        assert!(counts.get(&key).copied().unwrap_or(0) >= 5, "{key:?}: {counts:?}");
    }
}

#[test]
fn the_device_agrees_with_the_model_on_generated_sequences() {
    for i in 0..100 {
        let (setup, ops) = parse(&generate(&mut SimRng::fork(11, i))).unwrap();
        run(setup, &ops).unwrap_or_else(|f| panic!("sequence {i}: {f}"));
    }
}

#[test]
fn the_model_takes_writes_off_the_write_pointer_only_into_a_zrwa() {
    let text = "device 2 2 1 3 1 1 1\nO 0\nw 0 5 3 17\n";
    let (setup, ops) = parse(text).unwrap();
    run(setup, &ops).unwrap();
    let mut model = Model::new(setup);
    let (op, _) = ops[1];
    let cmd = model.resolve(op);
    assert_eq!(model.apply(&cmd).status, Status::ZoneInvalidWrite, "no ZRWA in this model yet");
    let (op, _) = ops[0];
    assert_eq!(model.apply(&model.resolve(op)).status, Status::Success);
    assert_eq!(model.apply(&cmd).status, Status::Success, "now in the window");
    assert_eq!(model.zone(0).wp, 0);
}
