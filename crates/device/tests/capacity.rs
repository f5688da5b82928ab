//! `--capacity`: the sn640 shrunk to the smallest capacity that keeps its
//! over-provisioning reaches steady-state garbage collection after a few
//! capacities of random writes, in seconds.

use zonelab_device::*;
use zonelab_sim::{Nanos, SimRng};

/// 128 KiB (MDTS) random writes, queue depth 1, over `capacities` times the
/// namespace; the FTL's counters after each capacity written.
fn random_writes(dev: &mut Device, capacities: u64, seed: u64) -> (Vec<FtlCounters>, Nanos) {
    let nlb = 32u32; // 128 KiB of 4 KiB LBAs
    let pieces = dev.nsze() / u64::from(nlb);
    let mut rng = SimRng::new(seed);
    let (mut t, mut after) = (0, Vec::new());
    for _ in 0..capacities {
        for _ in 0..pieces {
            let slba = rng.below(pieces) * u64::from(nlb);
            let done =
                dev.submit(t, &Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None }, None);
            assert!(done.status.is_success(), "{:?}", done.status);
            t = done.complete_ns;
        }
        after.push(dev.ftl_counters().expect("a conventional device"));
    }
    (after, t)
}

/// Write amplification between two readings of the counters.
fn window_wa(before: &FtlCounters, after: &FtlCounters) -> f64 {
    let host = after.host_units - before.host_units;
    (host + after.gc_units - before.gc_units) as f64 / host as f64
}

#[test]
fn a_small_sn640_reaches_steady_state_garbage_collection_in_seconds() {
    let sn640 = preset("sn640").unwrap();
    let capacity_bytes = smallest_capacity_bytes(&sn640).unwrap();
    let config = DeviceOptions { capacity_bytes: Some(capacity_bytes), ..Default::default() }.apply(sn640).unwrap();
    let mut dev = Device::with_tracking(config, Tracking::NONE).unwrap();
    let wall = std::time::Instant::now();
    let (after, end_ns) = random_writes(&mut dev, 3, 11);
    let wall_s = wall.elapsed().as_secs_f64();
    dev.check_ftl();
    let zero = FtlCounters::default();
    let windows: Vec<f64> =
        (0..after.len()).map(|i| window_wa(if i == 0 { &zero } else { &after[i - 1] }, &after[i])).collect();
    eprintln!(
        "sn640 at {capacity_bytes} bytes, 3 capacities of 128 KiB random writes at QD 1: write amplification per \
         capacity written {windows:.3?}, {} victims, {} GC units in the foreground; {:.1} s simulated, {wall_s:.1} s wall",
        after[2].victims,
        after[2].gc_foreground_units,
        end_ns as f64 / 1e9
    );
    // The first capacity fits the erased flash; then garbage collection moves more and more valid data.
    assert!(windows[0] < 1.01 && windows[1] > 1.2 && windows[2] > windows[1], "{windows:?}");
    // Steady state: in the last capacity, GC freed as many blocks as host and GC writes filled.
    let g = &dev.config().flash;
    let units_per_block = u64::from(g.pages_per_block / g.oneshot_pages);
    let (last, before) = (&after[2], &after[1]);
    let filled_blocks = (last.host_units + last.gc_units - before.host_units - before.gc_units) / units_per_block;
    let freed = last.victims - before.victims;
    assert!(freed * 10 >= filled_blocks * 9, "{freed} victims freed for {filled_blocks} blocks filled");
    assert!(last.write_amplification > 1.0);
}
