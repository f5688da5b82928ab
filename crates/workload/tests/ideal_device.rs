//! The fio engine on the second implementation of `ZonedDevice`: an ideal
//! zero-latency device with the zone semantics of the simulated SSD. The same
//! jobs leave the same zones behind on both; only time differs.

use zonelab_device::command::{Completion, IdentifyData, Started, Tag, ZoneDescriptor};
use zonelab_device::config::{DeviceConfig, Layout};
use zonelab_device::counters::DeviceCounters;
use zonelab_device::ideal::IdealDevice;
use zonelab_device::power::PowerCutReport;
use zonelab_device::status::Status;
use zonelab_device::zone::ZoneTable;
use zonelab_device::{preset, Command, Device, DeviceOptions, ZoneState, ZonedDevice};
use zonelab_flash::FlashCounters;
use zonelab_sim::{Nanos, US};
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

/// The ideal device made to take a fixed time per command, logging when
/// each command reached it: the host's pacing, seen from the device.
struct FixedLatency {
    inner: IdealDevice,
    latency_ns: Nanos,
    submits_ns: Vec<Nanos>,
}

impl ZonedDevice for FixedLatency {
    fn start(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Started {
        Started::Done(self.submit(submit_ns, cmd, read_out))
    }
    fn submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        self.submits_ns.push(submit_ns);
        let done = self.inner.submit(submit_ns, cmd, read_out);
        Completion { complete_ns: submit_ns + self.latency_ns, ..done }
    }
    fn advance(&mut self, until_ns: Nanos) {
        self.inner.advance(until_ns)
    }
    fn next_event_ns(&self) -> Option<Nanos> {
        self.inner.next_event_ns()
    }
    fn take_completed(&mut self) -> Vec<(Tag, Completion)> {
        self.inner.take_completed()
    }
    fn pending_tasks(&self) -> usize {
        self.inner.pending_tasks()
    }
    fn identify(&self) -> IdentifyData {
        self.inner.identify()
    }
    fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        self.inner.descriptor(zone)
    }
    fn zones(&self) -> &ZoneTable {
        self.inner.zones()
    }
    fn layout(&self) -> &Layout {
        self.inner.layout()
    }
    fn config(&self) -> &DeviceConfig {
        self.inner.config()
    }
    fn counters(&self) -> DeviceCounters {
        self.inner.counters()
    }
    fn flash_counters(&self) -> FlashCounters {
        self.inner.flash_counters()
    }
    fn set_zone_state(&mut self, slba: u64, state: ZoneState) -> Result<(), Status> {
        self.inner.set_zone_state(slba, state)
    }
    fn power_cut(&mut self, at_ns: Nanos) -> PowerCutReport {
        self.inner.power_cut(at_ns)
    }
}

#[test]
fn a_rated_job_ahead_of_its_rate_waits_for_what_it_has_in_flight_then_sleeps() {
    // 20000 reads/s (one per 50 µs) that each take 85 µs, up to 8 at a time.
    // fio (rate_ddir, inline submission): a thread ahead of its rate first
    // waits for every I/O in flight, then sleeps what it was ahead by; so the
    // second read goes 85 + 50 µs after the first, not 50 µs, and the reads
    // go out in pairs that catch up, the rate still held.
    let mut dev = FixedLatency { inner: ideal(false), latency_ns: 85 * US, submits_ns: Vec::new() };
    let line = "--name=r --direct=1 --ioengine=spdk --rw=randread --bs=4k --iodepth=8 --size=16M \
                --rate_iops=20000 --time_based --runtime=100ms";
    let result = run(&mut dev, line);
    let s = &dev.submits_ns;
    let gaps: Vec<Nanos> = s.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(gaps[0] >= 135 * US && gaps[0] < 145 * US, "the first read's wait and the sleep: {:?}", &gaps[..8]);
    // After that the thread is behind when it wakes, and catches up at once.
    assert!(gaps[1] < 5 * US, "the second of a pair goes straight after the first: {:?}", &gaps[..8]);
    let in_flight_max = s.iter().map(|&t| s.iter().filter(|&&u| u <= t && u + 85 * US > t).count()).max();
    assert!(in_flight_max <= Some(3), "{in_flight_max:?}");
    let iops = result.threads[0].stats.dirs[DDIR_READ].iops_value();
    assert!((iops - 20_000.0).abs() < 400.0, "the rate holds: {iops}");
}
