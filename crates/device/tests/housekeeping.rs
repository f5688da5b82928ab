//! Housekeeping while idle (`controller.housekeeping_*`): a command that
//! finds the drive idle long enough may meet a short firmware task and wait
//! for the rest of it; commands sent back to back never do (CLUSTER'23's
//! open/close benchmark: 2.3-2.9% of the closes sent after a second's sleep
//! take 3-14 µs longer).

use zonelab_device::options::set_parameter;
use zonelab_device::*;
use zonelab_sim::{Nanos, MS, US};

fn device(sets: &[(&str, &str)]) -> Device {
    let mut config = preset("zn540").unwrap();
    for (path, value) in sets {
        config = set_parameter(&config, path, value).unwrap();
    }
    Device::new(config).unwrap()
}

fn mgmt(action: ZoneAction, slba: u64) -> Command<'static> {
    Command::ZoneMgmtSend { action, slba, select_all: false }
}

/// Latencies (ns) of `count` explicit opens, each followed at once by a
/// close of the same zone, the open sent `gap_ns` after the close before it
/// completed: (opens, closes).
fn open_close(dev: &mut Device, count: u64, gap_ns: Nanos) -> (Vec<Nanos>, Vec<Nanos>) {
    let zl = dev.layout().zone_lbas;
    let (mut opens, mut closes, mut t) = (Vec::new(), Vec::new(), 0);
    for i in 0..count {
        let slba = (i % 8) * zl;
        let open = dev.submit(t + gap_ns, &mgmt(ZoneAction::Open, slba), None);
        let close = dev.submit(open.complete_ns, &mgmt(ZoneAction::Close, slba), None);
        assert!(open.status.is_success() && close.status.is_success());
        opens.push(open.complete_ns - open.submit_ns);
        closes.push(close.complete_ns - close.submit_ns);
        t = close.complete_ns;
    }
    (opens, closes)
}

#[test]
fn a_command_after_a_long_idle_meets_the_task_in_its_share_of_the_period() {
    let mut dev = device(&[]);
    let c = preset("zn540").unwrap().controller;
    let (task_ns, period_ns) = (c.housekeeping_ns, c.housekeeping_period_ns);
    assert!(task_ns > 0 && period_ns >= task_ns, "the zn540 has housekeeping");
    let (opens, closes) = open_close(&mut dev, 20_000, c.housekeeping_idle_ns + MS);
    let base_ns = *opens.iter().min().unwrap();
    let extra: Vec<Nanos> = opens.iter().map(|&l| l - base_ns).collect();
    let met = extra.iter().filter(|&&e| e > 0).count() as f64 / extra.len() as f64;
    let share = task_ns as f64 / period_ns as f64;
    assert!((met - share).abs() < 0.006, "{met} of the idle opens met the task, its share is {share}");
    // Each waits for the rest of the task: never more, and evenly over it.
    assert!(extra.iter().all(|&e| e <= task_ns), "max {}", extra.iter().max().unwrap());
    let waited: Vec<Nanos> = extra.iter().copied().filter(|&e| e > 0).collect();
    let long = waited.iter().filter(|&&e| e > task_ns / 2).count() as f64 / waited.len() as f64;
    assert!((long - 0.5).abs() < 0.1, "{long} of the waits are over half the task");
    // The close right after its open finds the drive busy: no wait.
    assert!(closes.iter().all(|&l| l == closes[0]), "closes sent back to back all take the same time");
}

#[test]
fn commands_sent_back_to_back_or_after_a_short_idle_never_meet_it() {
    let idle_ns = preset("zn540").unwrap().controller.housekeeping_idle_ns;
    for gap_ns in [0, 10 * US, idle_ns / 2] {
        let (opens, _) = open_close(&mut device(&[]), 2_000, gap_ns);
        assert!(opens.iter().all(|&l| l == opens[0]), "gap {gap_ns} ns: {:?}", opens.iter().max());
    }
}

#[test]
fn without_spread_or_without_a_task_no_command_waits() {
    let idle_ns = preset("zn540").unwrap().controller.housekeeping_idle_ns;
    for sets in [&[("spread.on", "false")][..], &[("controller.housekeeping_ns", "0ns")][..]] {
        let mut dev = device(sets);
        let (opens, _) = open_close(&mut dev, 2_000, idle_ns + MS);
        assert!(opens.iter().all(|&l| l == opens[0]), "{sets:?}");
    }
}

#[test]
fn the_seed_fixes_which_commands_wait() {
    let idle_ns = preset("zn540").unwrap().controller.housekeeping_idle_ns;
    let run = |seed: &str| open_close(&mut device(&[("spread.seed", seed)]), 2_000, idle_ns + MS).0;
    assert_eq!(run("3"), run("3"), "the same seed, the same waits");
    assert_ne!(run("3"), run("4"), "another seed, other waits");
}

#[test]
fn a_task_longer_than_its_period_is_refused() {
    let config = preset("zn540").unwrap();
    let config = set_parameter(&config, "controller.housekeeping_ns", "500us").unwrap();
    let e = Device::new(config).err().expect("refused").to_string();
    assert!(e.contains("controller.housekeeping_ns") && e.contains("controller.housekeeping_period_ns"), "{e}");
}
