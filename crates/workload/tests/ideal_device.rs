//! The fio engine on the second implementation of `ZonedDevice`: an ideal
//! zero-latency device with the zone semantics of the simulated SSD. The same
//! jobs leave the same zones behind on both; only time differs.

use zonelab_device::ideal::IdealDevice;
use zonelab_device::{preset, Device, DeviceOptions, ZoneState, ZonedDevice};
use zonelab_workload::fio::job::{JobSet, DDIR_READ, DDIR_WRITE};
use zonelab_workload::fio::parse::parse_run;
use zonelab_workload::fio::run::{Engine, RunOptions, RunResult};

const MIB: u64 = 1 << 20;
const ZONES: u32 = 8;
const ZONE_BYTES: u64 = 64 * MIB;
const CAP_BYTES: u64 = 48 * MIB;

fn options(data: bool) -> DeviceOptions {
    DeviceOptions {
        zones: Some(ZONES),
        zone_size_bytes: Some(ZONE_BYTES),
        zone_capacity_bytes: Some(CAP_BYTES),
        data,
        ..Default::default()
    }
}

fn ideal(data: bool) -> IdealDevice {
    IdealDevice::new(options(data).apply(preset("zn540").unwrap()).unwrap()).unwrap()
}

fn simulated(data: bool) -> Device {
    Device::new(options(data).apply(preset("zn540").unwrap()).unwrap()).unwrap()
}

fn job_set(line: &str) -> JobSet {
    let args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    parse_run(&args, &[]).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn run<D: ZonedDevice>(device: &mut D, line: &str) -> RunResult {
    let set = job_set(line);
    let engine = Engine::new(device, &set, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let result = engine.run(&mut |_| {}).unwrap_or_else(|e| panic!("{e}"));
    for t in &result.threads {
        assert_eq!(t.stats.error, None, "{line}");
    }
    result
}

fn zone_states<D: ZonedDevice>(device: &D) -> Vec<(ZoneState, u64)> {
    (0..ZONES).map(|z| (device.zones().state(z), device.zones().wp(z))).collect()
}

const WRITE: &str = "--name=w --zonemode=zbd --direct=1 --ioengine=spdk --rw=write --bs=128k --iodepth=4 \
                     --size=160M --max_open_zones=2";

#[test]
fn a_sequential_write_job_lands_every_write_at_zero_latency() {
    let mut dev = ideal(false);
    let result = run(&mut dev, WRITE);
    let stats = &result.threads[0].stats;
    let w = &stats.dirs[DDIR_WRITE];
    // The range holds zones 0 and 1 (zone 2 is only partly in it): fio fills both to capacity (96 MiB),
    // then resets zone 0 and writes its last 32 MiB there.
    let written_bytes = 128 * MIB;
    assert_eq!(w.io_bytes, written_bytes);
    assert_eq!(w.total_ios, written_bytes / (128 << 10));
    assert_eq!((w.clat.min_ns, w.clat.max_ns), (0, 0));
    assert_eq!((stats.zone_resets, dev.counters().resets), (1, 1));
    assert_eq!(dev.counters().host_write_bytes, written_bytes);
    assert_eq!(dev.counters().errors, 0);
    let states = zone_states(&dev);
    assert_eq!(states[0], (ZoneState::ImplicitlyOpened, 32 * MIB / 4096));
    assert_eq!(states[1], (ZoneState::Full, (ZONE_BYTES + CAP_BYTES) / 4096));
    assert!(states[2..].iter().all(|&(s, _)| s == ZoneState::Empty));
    assert_eq!(dev.zones().open_count(), 1);
}

#[test]
fn the_same_job_leaves_the_same_zones_on_the_ideal_and_the_simulated_device() {
    let line = "--name=w --zonemode=zbd --direct=1 --ioengine=spdk --rw=randwrite --bs=64k --iodepth=8 \
                --size=256M --max_open_zones=3 --randseed=7";
    let (mut a, mut b) = (ideal(false), simulated(false));
    let (ra, rb) = (run(&mut a, line), run(&mut b, line));
    assert_eq!(zone_states(&a), zone_states(&b));
    let (wa, wb) = (&ra.threads[0].stats.dirs[DDIR_WRITE], &rb.threads[0].stats.dirs[DDIR_WRITE]);
    assert_eq!((wa.io_bytes, wa.total_ios), (wb.io_bytes, wb.total_ios));
    assert_eq!(wa.clat.max_ns, 0);
    assert!(wb.clat.min_ns > 0, "the simulated device takes time");
}

#[test]
fn written_data_reads_back_verified_and_resets_empty_the_zones() {
    let mut dev = ideal(true);
    let write = format!("{WRITE} --verify=crc32c");
    let result = run(&mut dev, &write);
    assert!(result.threads[0].stats.dirs[DDIR_READ].io_bytes > 0, "the verify pass read the data back");
    // The write job reset zone 0 once; trimming zones 0-2 resets the two written ones (an empty zone's
    // reset is not counted) and leaves all three empty with the write pointer at the zone start.
    let reset = "--name=r --zonemode=zbd --direct=1 --ioengine=spdk --rw=trim --bs=48M --size=144M";
    run(&mut dev, reset);
    for zone in 0..3u32 {
        assert_eq!(zone_states(&dev)[zone as usize], (ZoneState::Empty, u64::from(zone) * ZONE_BYTES / 4096));
    }
    assert_eq!(dev.counters().resets, 3);
}
