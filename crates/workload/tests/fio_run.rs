//! The fio engine against fio's documented behaviour, option by option, on a
//! small zn540-like device (16 zones of 64 MiB with 48 MiB capacity).

use serde_json::Value;
use zonelab_device::{preset, Command, Device, DeviceOptions, Payload, ZoneAction, ZoneState};
use zonelab_sim::MS;
use zonelab_workload::fio::job::{JobError, JobSet, Scheduler, DDIR_READ, DDIR_TRIM, DDIR_WRITE};
use zonelab_workload::fio::parse::{parse_job_file, parse_run};
use zonelab_workload::fio::report::{entries, json_report, normal_report, terse_report, TERSE_V3_FIELDS};
use zonelab_workload::fio::run::{Engine, RunOptions, RunResult};
use zonelab_workload::fio::stats::JobStats;

const MIB: u64 = 1 << 20;
const ZONE_BYTES: u64 = 64 * MIB;
const CAP_BYTES: u64 = 48 * MIB;
const LBA: u64 = 4096;
const ZONE_LBAS: u64 = ZONE_BYTES / LBA;
const CAP_LBAS: u64 = CAP_BYTES / LBA;
const ZONES: u32 = 16;

fn device_with(extra: DeviceOptions) -> Device {
    let options = DeviceOptions {
        zones: Some(ZONES),
        zone_size_bytes: Some(ZONE_BYTES),
        zone_capacity_bytes: Some(CAP_BYTES),
        ..extra
    };
    let config = options.apply(preset("zn540").expect("zn540 preset")).expect("small zn540");
    Device::new(config).expect("device")
}

fn device() -> Device {
    device_with(DeviceOptions::default())
}

/// A device whose first `n` zones are conventional.
fn conventional_device(n: u32) -> Device {
    device_with(DeviceOptions { conventional_zones: Some(n), ..Default::default() })
}

fn job_set(line: &str) -> JobSet {
    let args: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    parse_run(&args, &[]).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn file_set(text: &str) -> JobSet {
    parse_job_file("t.fio", text).unwrap_or_else(|e| panic!("{e}"))
}

fn run_seeded(device: &mut Device, set: &JobSet, seed: u64, scheduler: Scheduler) -> RunResult {
    let options = RunOptions { seed, scheduler, ..RunOptions::default() };
    let engine = Engine::new(device, set, &options).unwrap_or_else(|e| panic!("{e}"));
    engine.run(&mut |_| {}).unwrap_or_else(|e| panic!("{e}"))
}

fn run(device: &mut Device, set: &JobSet) -> RunResult {
    run_seeded(device, set, 0, Scheduler::None)
}

/// Runs a command line on a fresh small device.
fn run_line(line: &str) -> (Device, JobSet, RunResult) {
    let mut dev = device();
    let set = job_set(line);
    let result = run(&mut dev, &set);
    (dev, set, result)
}

fn engine_error(device: &mut Device, set: &JobSet) -> JobError {
    match Engine::new(device, set, &RunOptions::default()) {
        Ok(_) => panic!("expected a JobError"),
        Err(e) => e,
    }
}

fn only(result: &RunResult) -> &JobStats {
    assert_eq!(result.threads.len(), 1);
    &result.threads[0].stats
}

fn no_errors(result: &RunResult) {
    for t in &result.threads {
        assert_eq!(t.stats.error, None, "thread {} clone {}", t.spec, t.clone);
    }
}

/// LBAs written in a zone, from the device's write pointer.
fn written(device: &Device, zone: u32) -> u64 {
    let zones = device.zones();
    match zones.state(zone) {
        ZoneState::Full => CAP_LBAS,
        _ => zones.wp(zone) - zones.zslba(zone),
    }
}

/// Writes `nlb` LBAs at the zone's write pointer from outside the engine, in MDTS-sized commands.
fn prewrite(device: &mut Device, zone: u32, nlb: u64) {
    let mdts = device.layout().mdts_lbas;
    let mut done = 0;
    while done < nlb {
        let n = (nlb - done).min(mdts) as u32;
        let slba = device.zones().wp(zone);
        // At time 0: the engine's clock starts at 0 and the device takes commands in time order.
        let c = device.submit(
            0,
            &Command::Write { slba, nlb: n, payload: Payload::None, fua: false, placement: None },
            None,
        );
        assert!(c.status.is_success(), "{:?}", c.status);
        done += u64::from(n);
    }
}

fn zslba(zone: u32) -> u64 {
    u64::from(zone) * ZONE_LBAS
}

fn within(value: f64, expected: f64, tolerance: f64) -> bool {
    (value - expected).abs() <= tolerance * expected
}

fn json(set: &JobSet, result: &RunResult, plus: bool) -> Value {
    json_report(set, result, plus)
}

fn keys(value: &Value) -> Vec<String> {
    value.as_object().expect("an object").keys().cloned().collect()
}

const ZBD: &str = "--zonemode=zbd --direct=1 --ioengine=spdk";

// ---- 1. offset_increment -------------------------------------------------

#[test]
fn offset_increment_gives_each_clone_its_own_zones() {
    // fio: clone i starts at offset + i * offset_increment.
    let (dev, _, result) = run_line(&format!(
        "--name=w --rw=write --bs=4k {ZBD} --numjobs=3 --offset=1z --offset_increment=2z --size=1z --io_size=1m"
    ));
    no_errors(&result);
    assert_eq!(result.threads.len(), 3);
    for zone in 0..ZONES {
        let expected = if [1, 3, 5].contains(&zone) { 256 } else { 0 };
        assert_eq!(written(&dev, zone), expected, "zone {zone}");
    }
    for t in &result.threads {
        assert_eq!(t.stats.dirs[DDIR_WRITE].io_bytes, MIB);
    }
}

// ---- 2. group_reporting, new_group, stonewall ----------------------------

#[test]
fn group_reporting_sums_the_threads() {
    let line = format!("--name=w --rw=write --bs=4k {ZBD} --numjobs=3 --offset_increment=1z --size=1z --io_size=1m");
    let (_, set, result) = run_line(&line);
    no_errors(&result);
    let per_thread = entries(&set, &result);
    assert_eq!(per_thread.len(), 3, "without group_reporting one entry per thread");
    let (_, grouped_set, grouped) = run_line(&format!("{line} --group_reporting"));
    let all = entries(&grouped_set, &grouped);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].threads, 3);
    let sum_ios: u64 = grouped.threads.iter().map(|t| t.stats.dirs[DDIR_WRITE].total_ios).sum();
    let sum_bytes: u64 = grouped.threads.iter().map(|t| t.stats.dirs[DDIR_WRITE].io_bytes).sum();
    assert_eq!(sum_ios, 3 * 256);
    assert_eq!(all[0].stats.dirs[DDIR_WRITE].total_ios, sum_ios);
    assert_eq!(all[0].stats.dirs[DDIR_WRITE].io_bytes, sum_bytes);
    let report = json(&grouped_set, &grouped, false);
    assert_eq!(report["jobs"].as_array().unwrap().len(), 1);
    assert_eq!(report["jobs"][0]["write"]["total_ios"], 768);
    assert_eq!(report["jobs"][0]["write"]["io_kbytes"], 3 * 1024);
}

#[test]
fn new_group_and_stonewall_make_groups_and_stonewall_orders_jobs() {
    let text = "[global]\nrw=write\nbs=4k\nzonemode=zbd\ndirect=1\nioengine=spdk\ntime_based\nruntime=20ms\n\
                [a]\noffset=0z\nsize=1z\n[b]\nnew_group\noffset=2z\nsize=1z\n[c]\nstonewall\noffset=4z\nsize=1z\n";
    let set = file_set(text);
    let mut dev = device();
    let result = run(&mut dev, &set);
    no_errors(&result);
    let groups: Vec<u32> = result.threads.iter().map(|t| t.groupid).collect();
    assert_eq!(groups, [0, 1, 2]);
    // a and b run together for 20 ms, then c for 20 ms.
    assert!((40 * MS..41 * MS).contains(&result.end_ns), "end {}", result.end_ns);
    let without = file_set(&text.replace("stonewall\n", ""));
    let mut dev = device();
    let result = run(&mut dev, &without);
    assert_eq!(result.threads.iter().map(|t| t.groupid).collect::<Vec<_>>(), [0, 1, 1]);
    assert!((20 * MS..21 * MS).contains(&result.end_ns), "end {}", result.end_ns);
}

// ---- 3. ramp_time --------------------------------------------------------

#[test]
fn ramp_time_is_run_but_not_counted() {
    let base = format!("--name=w --rw=write --bs=4k {ZBD} --size=4z --time_based --runtime=50ms");
    let (dev, _, plain) = run_line(&base);
    let (ramp_dev, _, ramped) = run_line(&format!("{base} --ramp_time=20ms"));
    no_errors(&plain);
    no_errors(&ramped);
    let (p, r) = (&only(&plain).dirs[DDIR_WRITE], &only(&ramped).dirs[DDIR_WRITE]);
    // The statistics window is the runtime, after the ramp.
    assert!((50 * MS..51 * MS).contains(&r.runtime_ns), "runtime {}", r.runtime_ns);
    assert!((50 * MS..51 * MS).contains(&p.runtime_ns), "runtime {}", p.runtime_ns);
    // Same rate at QD1, so the same count in the same window.
    assert!(within(r.total_ios as f64, p.total_ios as f64, 0.02), "{} vs {}", r.total_ios, p.total_ios);
    assert_eq!(dev.counters().host_write_bytes, p.io_bytes);
    // The device saw the ramp's writes too: counted / all = 50 / 70.
    let device_ios = ramp_dev.counters().host_write_bytes / 4096;
    let share = r.total_ios as f64 / device_ios as f64;
    assert!(within(share, 50.0 / 70.0, 0.02), "share {share}");
    assert!((70 * MS..71 * MS).contains(&ramped.end_ns));
}

// ---- 4. rate limits ------------------------------------------------------

#[test]
fn rate_limits_bandwidth_and_iops() {
    let (_, _, result) =
        run_line(&format!("--name=w --rw=write --bs=4k {ZBD} --size=4z --time_based --runtime=100ms --rate=10m"));
    no_errors(&result);
    let bw = only(&result).dirs[DDIR_WRITE].bw_bytes_per_s() as f64;
    assert!(within(bw, 10.0 * MIB as f64, 0.02), "bw {bw}");

    let (_, _, result) =
        run_line(&format!("--name=w --rw=write --bs=4k {ZBD} --size=4z --time_based --runtime=100ms --rate_iops=1000"));
    let iops = only(&result).dirs[DDIR_WRITE].iops_value();
    assert!(within(iops, 1000.0, 0.02), "iops {iops}");

    // Rates in the JSON are what the limit allows.
    let (_, set, result) = run_line(&format!(
        "--name=w --rw=write --bs=4k {ZBD} --size=4z --time_based --runtime=100ms --rate=10m --rate_iops=500"
    ));
    let report = json(&set, &result, false);
    let iops = report["jobs"][0]["write"]["iops"].as_f64().unwrap();
    assert!(within(iops, 500.0, 0.02), "the lower of the two limits wins: {iops}");
}

#[test]
fn poisson_rate_averages_to_the_rate() {
    let (_, _, result) = run_line(&format!(
        "--name=w --rw=write --bs=4k {ZBD} --size=4z --time_based --runtime=1s --rate_iops=2000 --rate_process=poisson"
    ));
    no_errors(&result);
    let dir = &only(&result).dirs[DDIR_WRITE];
    assert!(within(dir.iops_value(), 2000.0, 0.05), "iops {}", dir.iops_value());
    // Poisson arrivals: gaps vary, so the 500 ms windows see different counts.
    let (_, _, linear) =
        run_line(&format!("--name=w --rw=write --bs=4k {ZBD} --size=4z --time_based --runtime=1s --rate_iops=2000"));
    assert_eq!(only(&linear).dirs[DDIR_WRITE].total_ios, 2000);
    assert_ne!(dir.total_ios, 2000);
}

// ---- 5. max_open_zones ---------------------------------------------------

/// Zones written but not full: with no resets in the run, every zone ever
/// opened is still one of these at the end.
fn partly_written(device: &Device) -> Vec<u32> {
    (0..ZONES).filter(|&z| (1..CAP_LBAS).contains(&written(device, z))).collect()
}

#[test]
fn max_open_zones_is_never_exceeded() {
    let (dev, _, result) = run_line(&format!(
        "--name=w --rw=randwrite --bs=4k {ZBD} --iodepth=4 --numjobs=2 --max_open_zones=3 --time_based --runtime=20ms"
    ));
    no_errors(&result);
    assert!(result.threads.iter().all(|t| t.stats.dirs[DDIR_WRITE].total_ios > 100));
    assert_eq!(partly_written(&dev).len(), 3, "{:?}", partly_written(&dev));
    assert!(dev.zones().open_count() <= 3);
    assert_eq!(dev.counters().errors, 0);
}

#[test]
fn job_max_open_zones_limits_each_job() {
    // fio counts job_max_open_zones per thread: two threads of one job may
    // have one zone open each.
    let (dev, _, result) = run_line(&format!(
        "--name=w --rw=randwrite --bs=4k {ZBD} --iodepth=4 --numjobs=2 --job_max_open_zones=1 --time_based --runtime=20ms"
    ));
    no_errors(&result);
    assert_eq!(partly_written(&dev).len(), 2, "{:?}", partly_written(&dev));
    // In disjoint ranges each thread keeps to one zone of its own.
    let (dev, _, result) = run_line(&format!(
        "--name=w --rw=randwrite --bs=4k {ZBD} --numjobs=2 --size=4z --offset_increment=4z --job_max_open_zones=1 \
         --time_based --runtime=20ms"
    ));
    no_errors(&result);
    let open = partly_written(&dev);
    assert_eq!(open.len(), 2, "{open:?}");
    assert!(open[0] < 4 && (4..8).contains(&open[1]), "{open:?}");
}

// ---- 6. trim in zonemode=zbd ---------------------------------------------

#[test]
fn trim_resets_zones_in_zbd_mode() {
    let text = "[global]\nzonemode=zbd\ndirect=1\nioengine=spdk\nsize=4z\n\
                [fill]\nrw=write\nbs=128k\nio_size=192m\n\
                [trim]\nstonewall\nrw=trim\nbs=64m\n";
    let set = file_set(text);
    let mut dev = device();
    let result = run(&mut dev, &set);
    no_errors(&result);
    assert_eq!(result.threads[0].stats.dirs[DDIR_WRITE].io_bytes, 4 * CAP_BYTES);
    let trim = &result.threads[1].stats;
    assert_eq!(trim.dirs[DDIR_TRIM].total_ios, 4);
    assert_eq!(trim.zone_resets, 4);
    assert_eq!(result.threads[0].stats.zone_resets, 0);
    for zone in 0..ZONES {
        assert_eq!(dev.zones().state(zone), ZoneState::Empty, "zone {zone}");
    }
    assert_eq!(dev.counters().resets, 4);
    let report = json(&set, &result, false);
    assert_eq!(report["jobs"][1]["zone_resets"], 4);
    assert_eq!(report["jobs"][1]["trim"]["total_ios"], 4);
}

#[test]
fn trim_without_zbd_is_a_job_error() {
    let set = job_set("--name=t --rw=trim --bs=4k --size=1z");
    let error = engine_error(&mut device(), &set);
    assert_eq!(error.option.as_deref(), Some("rw"), "{error}");
}

// ---- 7. writes at the write pointer --------------------------------------

#[test]
fn zbd_writes_continue_at_the_write_pointer() {
    let mut dev = device();
    prewrite(&mut dev, 2, 100);
    let set = job_set(&format!("--name=w --rw=write --bs=4k {ZBD} --offset=2z --size=1z --io_size=1m"));
    let result = run(&mut dev, &set);
    no_errors(&result);
    assert_eq!(dev.zones().wp(2), zslba(2) + 100 + 256);
    assert_eq!(only(&result).zone_resets, 0);
    assert_eq!(dev.counters().errors, 0);
}

#[test]
fn threads_sharing_a_zone_write_it_in_order() {
    // fio holds a zone's lock until the write is queued, so two threads
    // appending to one zone through a kernel engine never overtake each other.
    for scheduler in [Scheduler::None, Scheduler::MqDeadline] {
        let mut dev = device();
        let set = job_set("--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine=libaio --iodepth=8 --numjobs=2 --size=1z --io_size=1m");
        let result = run_seeded(&mut dev, &set, 0, scheduler);
        no_errors(&result);
        assert_eq!(dev.zones().wp(0), 512, "{scheduler:?}");
        assert_eq!(dev.counters().errors, 0);
    }
}

#[test]
fn zbd_resets_a_full_zone_before_rewriting_it() {
    let mut dev = device();
    let action = Command::ZoneMgmtSend { action: ZoneAction::Finish, slba: zslba(3), select_all: false };
    assert!(dev.submit(0, &action, None).status.is_success());
    assert_eq!(dev.zones().state(3), ZoneState::Full);
    let set = job_set(&format!("--name=w --rw=write --bs=4k {ZBD} --offset=3z --size=1z --io_size=1m"));
    let result = run(&mut dev, &set);
    no_errors(&result);
    assert_eq!(only(&result).zone_resets, 1);
    assert_eq!(dev.zones().wp(3), zslba(3) + 256);
    assert_eq!(dev.counters().resets, 1);
}

#[test]
fn time_based_wraps_over_a_one_zone_range_with_resets() {
    let (dev, _, result) = run_line(&format!(
        "--name=w --rw=write --bs=128k --iodepth=4 {ZBD} --offset=1z --size=1z --time_based --runtime=100ms"
    ));
    no_errors(&result);
    let stats = only(&result);
    let bytes = stats.dirs[DDIR_WRITE].io_bytes;
    assert!(bytes > CAP_BYTES, "the run writes more than one zone: {bytes}");
    let laps = bytes / CAP_BYTES;
    assert_eq!(stats.zone_resets, laps, "one reset per refill of the full zone");
    assert_eq!(written(&dev, 1), (bytes - laps * CAP_BYTES) / LBA);
    assert_eq!(dev.counters().errors, 0);
}

// ---- 8. reads below the write pointer ------------------------------------

#[test]
fn reads_of_empty_zones_do_no_io_unless_read_beyond_wp() {
    let line = format!("--name=r --rw=read --bs=4k {ZBD} --size=2z --io_size=1m");
    let (_, _, result) = run_line(&line);
    no_errors(&result);
    assert_eq!(only(&result).dirs[DDIR_READ].total_ios, 0);
    let (dev, _, result) = run_line(&format!("{line} --read_beyond_wp=1"));
    no_errors(&result);
    assert_eq!(only(&result).dirs[DDIR_READ].total_ios, 256);
    assert_eq!(dev.counters().host_read_bytes, MIB);
    // Random reads too, and after a write they stay below the write pointer.
    let (_, _, result) = run_line(&format!("--name=r --rw=randread --bs=4k {ZBD} --size=2z --io_size=1m"));
    assert_eq!(only(&result).dirs[DDIR_READ].total_ios, 0);
    let mut dev = device();
    prewrite(&mut dev, 0, 64);
    let set = job_set(&format!("--name=r --rw=randread --bs=4k {ZBD} --size=2z --io_size=1m"));
    let result = run(&mut dev, &set);
    no_errors(&result);
    assert_eq!(only(&result).dirs[DDIR_READ].total_ios, 256);
    assert_eq!(dev.counters().errors, 0);
}

// ---- 9. zone_append ------------------------------------------------------

#[test]
fn zone_append_lands_at_the_write_pointer_with_many_in_flight() {
    let (dev, set, result) =
        run_line(&format!("--name=a --rw=write --bs=4k {ZBD} --iodepth=8 --zone_append=1 --size=1z --io_size=1m"));
    no_errors(&result);
    assert_eq!(dev.zones().wp(0), 256);
    assert_eq!(dev.counters().host_write_bytes, MIB);
    assert_eq!(dev.counters().errors, 0);
    let report = json(&set, &result, false);
    let depth8 = report["jobs"][0]["iodepth_level"]["8"].as_f64().unwrap();
    assert!(depth8 > 90.0, "appends are not serialised: depth 8 share {depth8}");
}

// ---- 10. finish and softfinish -------------------------------------------

#[test]
fn finish_operations_finish_zones() {
    let (dev, _, result) = run_line(&format!("--name=f --rw=write --bs=4k {ZBD} --finish=1 --size=4z --number_ios=4"));
    no_errors(&result);
    let stats = only(&result);
    for zone in 0..ZONES {
        let expected = if zone < 4 { ZoneState::Full } else { ZoneState::Empty };
        assert_eq!(dev.zones().state(zone), expected, "zone {zone}");
    }
    assert_eq!(stats.dirs[DDIR_TRIM].total_ios, 4);
    assert_eq!(dev.counters().finishes, 4);
    assert_eq!(dev.counters().host_write_bytes, 4 * 4096);
}

/// Found by zonelab-fuzz: with iodepth > 1 a second operation's first block
/// replaced the first's chain, and a fill then found none ("a fill belongs
/// to a chain" panic).
#[test]
fn finish_and_softfinish_need_iodepth_1() {
    for op in ["--finish=1", "--softfinish=1 --softfinish_chunk=128k"] {
        let set = job_set(&format!("--name=f --rw=write --bs=4k {ZBD} {op} --size=4z --iodepth=4"));
        let e = engine_error(&mut device(), &set);
        assert_eq!(e.option.as_deref(), Some("iodepth"), "{op}: {e}");
        assert!(e.message.contains("iodepth must be 1"), "{op}: {e}");
    }
}

#[test]
fn softfinish_fills_zones_from_the_host() {
    let (dev, _, result) = run_line(&format!(
        "--name=f --rw=write --bs=4k {ZBD} --softfinish=1 --softfinish_chunk=1m --size=4z --number_ios=2"
    ));
    no_errors(&result);
    let stats = only(&result);
    for zone in 0..ZONES {
        let expected = if zone < 2 { ZoneState::Full } else { ZoneState::Empty };
        assert_eq!(dev.zones().state(zone), expected, "zone {zone}");
    }
    assert_eq!(stats.dirs[DDIR_TRIM].total_ios, 2);
    assert_eq!(dev.counters().host_write_bytes, 2 * CAP_BYTES);
    assert_eq!(dev.counters().finishes, 0);
}

#[test]
fn an_io_uring_jobs_softfinish_fills_are_synchronous_calls_beside_its_ring() {
    let host = zonelab_host::HostConfig::default();
    let fill_ms = |engine: &str| {
        let line = format!(
            "--name=f --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine={engine} --softfinish=1 \
             --softfinish_chunk=16k --size=1z --number_ios=1"
        );
        let (_, _, result) = run_line(&line);
        no_errors(&result);
        only(&result).dirs[DDIR_TRIM].clat.mean() / MS as f64
    };
    // 16 KiB chunks at QD 1 cross the host one at a time: each pays the call on top of the ring's costs.
    let chunks = (CAP_LBAS - 1).div_ceil(4) as f64;
    let ring = host.uring_passthrough;
    let per_chunk_ns = (host.sync_call_ns + ring.submit_ns + ring.complete_ns) as f64;
    let extra_ms = fill_ms("io_uring_cmd") - fill_ms("spdk");
    assert!(within(extra_ms, chunks * per_chunk_ns / 1e6, 0.05), "{extra_ms:.2} ms more than SPDK's fill");
}

#[test]
fn softfinish_pause_spaces_the_chunks() {
    let line = |pause: &str| {
        format!(
            "--name=f --rw=write --bs=4k {ZBD} --softfinish=1 --softfinish_chunk=128k {pause} --size=1z --number_ios=1"
        )
    };
    let clat = |result: &RunResult| only(result).dirs[DDIR_TRIM].clat.mean();
    let (_, _, plain) = run_line(&line(""));
    let (_, _, paused) = run_line(&line("--softfinish_pause=100us"));
    no_errors(&paused);
    // The zone's capacity less the opening block, in 128 KiB chunks, each followed by a
    // pause: at least that long, and longer than without pauses (the flash programs in
    // the background meanwhile, so the pauses do not simply add up).
    let chunks = (CAP_LBAS - 1).div_ceil(32) as f64;
    let (plain_ms, paused_ms) = (clat(&plain) / MS as f64, clat(&paused) / MS as f64);
    assert!(paused_ms >= chunks * 0.1 && paused_ms > plain_ms, "{paused_ms:.2} ms vs {plain_ms:.2} ms");
}

// ---- 11. iodepth, engines, schedulers, latencies ---------------------------

fn depth_share(report: &Value, bucket: &str) -> f64 {
    report["jobs"][0]["iodepth_level"][bucket].as_f64().unwrap()
}

#[test]
fn psync_keeps_one_io_in_flight_whatever_iodepth() {
    let (_, set, result) = run_line(
        "--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine=psync --iodepth=8 --size=1z --io_size=1m",
    );
    no_errors(&result);
    let report = json(&set, &result, false);
    assert_eq!(depth_share(&report, "1"), 100.0);
    let (_, set, result) = run_line(
        "--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine=libaio --iodepth=8 --size=1z --io_size=1m",
    );
    no_errors(&result);
    let report = json(&set, &result, false);
    assert!(depth_share(&report, "8") > 90.0, "{}", report["jobs"][0]["iodepth_level"]);
}

#[test]
fn mq_deadline_merges_sequential_writes_to_one_zone() {
    let line =
        "--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine=libaio --iodepth=16 --size=1z --io_size=8m";
    let mut dev = device();
    let set = job_set(line);
    let result = run_seeded(&mut dev, &set, 0, Scheduler::MqDeadline);
    no_errors(&result);
    let ios = only(&result).dirs[DDIR_WRITE].total_ios;
    assert_eq!(ios, 2048);
    let merges = result.disk.write_merges;
    assert!(merges as f64 > 0.8 * ios as f64, "{merges} merges of {ios}");
    assert_eq!(result.disk.write_ios + merges, ios);
    assert_eq!(dev.zones().wp(0), 2048);
    let report = json(&set, &result, false);
    assert_eq!(report["disk_util"][0]["write_merges"], merges);
    let (_, _, result) = run_line(line);
    no_errors(&result);
    assert_eq!(result.disk.write_merges, 0);
    assert_eq!(result.disk.write_ios, 2048);
}

#[test]
fn disk_stats_count_the_block_layer_whichever_scheduler_runs_it() {
    let line =
        "--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine=libaio --iodepth=4 --size=1z --io_size=1m";
    for scheduler in [Scheduler::None, Scheduler::MqDeadline, Scheduler::Zinc] {
        let mut dev = device();
        let set = job_set(line);
        let result = run_seeded(&mut dev, &set, 0, scheduler);
        no_errors(&result);
        let disk = result.disk;
        assert_eq!(disk.write_ios + disk.write_merges, 256, "{scheduler:?}: {disk:?}");
        let text = normal_report(&set, &result);
        let expected = format!("ios=0/{}, merge=0/{}", disk.write_ios, disk.write_merges);
        assert!(text.contains(&expected), "{scheduler:?}: {text}");
    }
}

fn qd1_write_lat(line: &str, scheduler: Scheduler) -> (f64, f64) {
    let mut dev = device();
    let set = job_set(&format!("--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --size=1z --io_size=4m {line}"));
    let result = run_seeded(&mut dev, &set, 0, scheduler);
    no_errors(&result);
    let dir = &only(&result).dirs[DDIR_WRITE];
    assert_eq!(dir.total_ios, 1024);
    (dir.clat.mean(), dir.lat.mean())
}

#[test]
fn qd1_write_latencies_match_seed_000_obs_2() {
    // Within 2%: one write in 48 also waits for a unit's commit (about 1% on the mean).
    let (clat, lat) = qd1_write_lat("--ioengine=spdk", Scheduler::None);
    assert!(within(clat, 11_360.0, 0.02), "passthrough clat {clat}");
    assert!(lat >= clat);
    let (_, lat) = qd1_write_lat("--ioengine=io_uring", Scheduler::None);
    assert!(within(lat, 12_620.0, 0.02), "io_uring none lat {lat}");
    let (_, lat) = qd1_write_lat("--ioengine=io_uring", Scheduler::MqDeadline);
    assert!(within(lat, 14_470.0, 0.02), "io_uring mq-deadline lat {lat}");
    // A job's scheduler= wins over the run's default.
    let (_, lat) = qd1_write_lat("--ioengine=io_uring --scheduler=mq-deadline", Scheduler::None);
    assert!(within(lat, 14_470.0, 0.01), "scheduler=mq-deadline lat {lat}");
}

// ---- 12. block sizes, rwmix, number_ios, size, io_size -------------------

/// Size of the one I/O of a `number_ios=1` job, for several seeds.
fn single_io_sizes(device_lba: Option<u32>, options: &str) -> Vec<u64> {
    (0..40)
        .map(|seed| {
            let mut dev =
                device_with(DeviceOptions { conventional_zones: Some(4), lba_bytes: device_lba, ..Default::default() });
            let set = job_set(&format!("--name=w --rw=randwrite --size=4z --number_ios=1 {options}"));
            let result = run_seeded(&mut dev, &set, seed, Scheduler::None);
            no_errors(&result);
            let dir = &only(&result).dirs[DDIR_WRITE];
            assert_eq!(dir.total_ios, 1);
            dir.io_bytes
        })
        .collect()
}

#[test]
fn block_size_ranges_stay_in_range_and_aligned() {
    let sizes = single_io_sizes(None, "--bsrange=4k-64k");
    assert!(sizes.iter().all(|&s| (4096..=65536).contains(&s) && s % 4096 == 0), "{sizes:?}");
    let distinct: std::collections::BTreeSet<u64> = sizes.iter().copied().collect();
    assert!(distinct.len() >= 8, "sizes spread over the range: {distinct:?}");
    // Aligned: multiples of the minimum.
    let sizes = single_io_sizes(Some(512), "--bs=1k-3k");
    assert!(sizes.iter().all(|&s| [1024, 2048, 3072].contains(&s)), "{sizes:?}");
    // Unaligned: multiples of the LBA size only.
    let sizes = single_io_sizes(Some(512), "--bs=1k-3k --blocksize_unaligned");
    assert!(sizes.iter().all(|&s| (1024..=3072).contains(&s) && s % 512 == 0), "{sizes:?}");
    assert!(sizes.iter().any(|&s| s % 1024 != 0), "{sizes:?}");
}

#[test]
fn rwmixread_sets_the_read_share() {
    let mut dev = conventional_device(4);
    let set = job_set("--name=m --rw=randrw --rwmixread=70 --bs=4k --size=4z --number_ios=2000");
    let result = run(&mut dev, &set);
    no_errors(&result);
    let d = &only(&result).dirs;
    assert_eq!(d[DDIR_READ].total_ios + d[DDIR_WRITE].total_ios, 2000);
    let share = d[DDIR_READ].total_ios as f64 / 2000.0;
    assert!((0.65..=0.75).contains(&share), "read share {share}");
}

#[test]
fn number_ios_size_and_io_size_stop_the_job() {
    let mut dev = conventional_device(4);
    let result = run(&mut dev, &job_set("--name=w --rw=randwrite --bs=4k --size=4z --number_ios=123"));
    assert_eq!(only(&result).dirs[DDIR_WRITE].total_ios, 123);
    let mut dev = conventional_device(4);
    let result = run(&mut dev, &job_set("--name=w --rw=write --bs=4k --size=1m"));
    assert_eq!(only(&result).dirs[DDIR_WRITE].io_bytes, MIB);
    assert_eq!(dev.counters().host_write_bytes, MIB);
    let mut dev = conventional_device(4);
    let result = run(&mut dev, &job_set("--name=w --rw=write --bs=4k --size=4m --io_size=512k"));
    assert_eq!(only(&result).dirs[DDIR_WRITE].io_bytes, 512 * 1024);
    // io_size larger than size: fio loops over the range.
    let mut dev = conventional_device(4);
    let result = run(&mut dev, &job_set("--name=w --rw=write --bs=4k --size=1m --io_size=3m"));
    assert_eq!(only(&result).dirs[DDIR_WRITE].io_bytes, 3 * MIB);
    no_errors(&result);
}

// ---- 13. seeds -------------------------------------------------------------

fn json_text(line: &str, seed: u64) -> String {
    let mut dev = conventional_device(4);
    let set = job_set(line);
    let result = run_seeded(&mut dev, &set, seed, Scheduler::None);
    serde_json::to_string(&json_report(&set, &result, true)).unwrap()
}

#[test]
fn run_seed_changes_random_jobs_unless_randseed_is_set() {
    let line = "--name=m --rw=randrw --bs=4k --size=4z --number_ios=500";
    assert_eq!(json_text(line, 1), json_text(line, 1));
    assert_ne!(json_text(line, 1), json_text(line, 2));
    let fixed = format!("{line} --randseed=42");
    assert_eq!(json_text(&fixed, 1), json_text(&fixed, 2));
}

// ---- 14. thinktime ---------------------------------------------------------

#[test]
fn thinktime_spaces_ios_at_qd1() {
    let (_, _, result) =
        run_line(&format!("--name=w --rw=write --bs=4k {ZBD} --size=1z --time_based --runtime=50ms --thinktime=100"));
    no_errors(&result);
    let dir = &only(&result).dirs[DDIR_WRITE];
    let expected = 1e9 / (dir.lat.mean() + 100_000.0);
    assert!(within(dir.iops_value(), expected, 0.02), "iops {} expected {expected}", dir.iops_value());
}

/// Each 500 ms statistics window of idle time was closed one by one: a
/// thinktime of 28 hours stepped through 200,000 of them per I/O.
#[test]
fn long_thinktime_skips_idle_windows_at_once() {
    let set = job_set(&format!("--name=w --rw=write --bs=4k {ZBD} --size=1z --thinktime=99999999999"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(run(&mut device(), &set)));
    let result = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("ran in bounded wall time");
    let dir = &only(&result).dirs[DDIR_WRITE];
    let windows_per_think = 99_999_999_999_000 / (500 * MS);
    assert!(dir.total_ios > 1000, "runs until the engine's horizon: {}", dir.total_ios);
    assert!(dir.bw_kib.count >= (dir.total_ios - 1) * windows_per_think, "{}", dir.bw_kib.count);
    assert_eq!((dir.bw_kib.min, dir.iops.min, dir.iops.count), (0, 0, dir.bw_kib.count), "idle windows are zeros");
    assert!(dir.iops.mean() < 1e-3 && dir.iops.max >= 2, "{} {}", dir.iops.mean(), dir.iops.max);
}

/// A zn540 of 16 zones of 1 MiB (512 KiB capacity) that keeps its data, for verify.
fn small_data_device() -> Device {
    let small = DeviceOptions {
        zones: Some(16),
        zone_size_bytes: Some(MIB),
        zone_capacity_bytes: Some(MIB / 2),
        data: true,
        ..Default::default()
    };
    Device::new(small.apply(preset("zn540").unwrap()).unwrap()).unwrap()
}

/// Found by zonelab-fuzz: a verify read failing while others were in flight
/// ended the thread at once ("!thread.ended && thread.inflight == 0" panic).
/// Two clones writing the same zone make the verify fail.
#[test]
fn a_failed_verify_waits_for_the_reads_in_flight() {
    let mut dev = small_data_device();
    let line = format!(
        "--name=w --rw=write --bs=4k {ZBD} --size=4z --iodepth=4 --numjobs=2 --thinktime=10 --verify=crc32c --runtime=20ms"
    );
    let result = run(&mut dev, &job_set(&line));
    let errors: Vec<_> = result.threads.iter().filter_map(|t| t.stats.error.as_ref()).collect();
    assert!(!errors.is_empty(), "the clones overwrite each other's blocks");
}

// ---- 15. startdelay --------------------------------------------------------

#[test]
fn startdelay_delays_the_job() {
    let line = format!("--name=w --rw=write --bs=4k {ZBD} --size=1z --time_based --runtime=30ms");
    let (_, _, plain) = run_line(&line);
    let (_, _, delayed) = run_line(&format!("{line} --startdelay=20ms"));
    no_errors(&delayed);
    assert!((30 * MS..31 * MS).contains(&plain.end_ns), "{}", plain.end_ns);
    assert!((50 * MS..51 * MS).contains(&delayed.end_ns), "{}", delayed.end_ns);
    let (p, d) = (&only(&plain).dirs[DDIR_WRITE], &only(&delayed).dirs[DDIR_WRITE]);
    assert_eq!(p.runtime_ns, d.runtime_ns);
    assert_eq!(p.total_ios, d.total_ios);
}

// ---- 16. verify ------------------------------------------------------------

#[test]
fn verify_reads_back_what_was_written() {
    for verify in ["crc32c", "md5"] {
        let mut dev = device_with(DeviceOptions { data: true, ..Default::default() });
        let set = job_set(&format!(
            "--name=v --rw=write --bs=16k {ZBD} --iodepth=4 --size=1z --io_size=1m --verify={verify}"
        ));
        let result = run(&mut dev, &set);
        no_errors(&result);
        let d = &only(&result).dirs;
        assert_eq!(d[DDIR_WRITE].io_bytes, MIB, "{verify}");
        assert_eq!(d[DDIR_READ].io_bytes, MIB, "{verify}: everything written is read back");
        assert!(d[DDIR_READ].total_ios > 0);
        assert_eq!(dev.counters().host_read_bytes, MIB);
    }
    let set = job_set(&format!("--name=v --rw=write --bs=4k {ZBD} --size=1z --io_size=1m --verify=crc32c"));
    let error = engine_error(&mut device(), &set);
    assert_eq!(error.option.as_deref(), Some("verify"), "{error}");
}

#[test]
fn verify_after_a_wrap_reads_back_only_the_current_data() {
    // A time_based job that wraps over one zone resets it; what was written
    // before the reset is gone and is not verified.
    let mut dev = device_with(DeviceOptions { data: true, ..Default::default() });
    let set = job_set(&format!(
        "--name=v --rw=write --bs=128k {ZBD} --iodepth=4 --offset=1z --size=1z --time_based --runtime=60ms --verify=crc32c"
    ));
    let result = run(&mut dev, &set);
    no_errors(&result);
    let stats = only(&result);
    assert!(stats.zone_resets > 0, "the zone wrapped");
    // Only data written since the last reset is read back.
    assert_eq!(stats.dirs[DDIR_READ].io_bytes, written(&dev, 1) * LBA);
}

// ---- 17. determinism -------------------------------------------------------

#[test]
fn same_set_and_seed_give_identical_reports() {
    let text = "[global]\nzonemode=zbd\ndirect=1\nbs=4k\ntime_based\nruntime=20ms\n\
                [w]\nrw=randwrite\nioengine=libaio\niodepth=8\nnumjobs=2\nmax_open_zones=4\nscheduler=mq-deadline\n\
                [r]\nrw=randread\nioengine=spdk\niodepth=4\nread_beyond_wp=1\n";
    let set = file_set(text);
    let report = |seed| {
        let mut dev = device();
        let result = run_seeded(&mut dev, &set, seed, Scheduler::None);
        no_errors(&result);
        serde_json::to_string(&json_report(&set, &result, true)).unwrap()
    };
    let first = report(7);
    assert_eq!(first, report(7));
    assert_ne!(first, report(8));
}

// ---- 18. JSON structure ------------------------------------------------------

#[test]
fn json_keys_match_fio_3_33() {
    let (_, set, result) = run_line(&format!("--name=w --rw=write --bs=4k {ZBD} --size=1z --io_size=1m"));
    let report = json(&set, &result, false);
    assert_eq!(keys(&report), ["fio version", "timestamp", "timestamp_ms", "time", "jobs"]);
    let job = &report["jobs"][0];
    let mut expected_job = vec![
        "jobname",
        "groupid",
        "error",
        "eta",
        "elapsed",
        "job options",
        "read",
        "write",
        "trim",
        "sync",
        "job_runtime",
        "usr_cpu",
        "sys_cpu",
        "ctx",
        "majf",
        "minf",
        "iodepth_level",
        "iodepth_submit",
        "iodepth_complete",
        "latency_ns",
        "latency_us",
        "latency_ms",
        "latency_depth",
        "latency_target",
        "latency_percentile",
        "latency_window",
    ];
    expected_job.push("zone_resets");
    assert_eq!(keys(job), expected_job);
    let ddir = [
        "io_bytes",
        "io_kbytes",
        "bw_bytes",
        "bw",
        "iops",
        "runtime",
        "total_ios",
        "short_ios",
        "drop_ios",
        "slat_ns",
        "clat_ns",
        "lat_ns",
        "bw_min",
        "bw_max",
        "bw_agg",
        "bw_mean",
        "bw_dev",
        "bw_samples",
        "iops_min",
        "iops_max",
        "iops_mean",
        "iops_stddev",
        "iops_samples",
    ];
    for dir in ["read", "write", "trim"] {
        assert_eq!(keys(&job[dir]), ddir, "{dir}");
    }
    assert_eq!(keys(&job["write"]["clat_ns"]), ["min", "max", "mean", "stddev", "N", "percentile"]);
    assert_eq!(keys(&job["read"]["clat_ns"]), ["min", "max", "mean", "stddev", "N"]);
    assert_eq!(keys(&job["write"]["slat_ns"]), ["min", "max", "mean", "stddev", "N"]);
    let percentiles = keys(&job["write"]["clat_ns"]["percentile"]);
    assert_eq!(percentiles.len(), 17);
    assert_eq!(percentiles[0], "1.000000");
    assert_eq!(percentiles[6], "50.000000");
    assert_eq!(percentiles[16], "99.990000");
    assert_eq!(keys(&job["iodepth_level"]), ["1", "2", "4", "8", "16", "32", ">=64"]);
    assert_eq!(keys(&job["latency_us"]), ["2", "4", "10", "20", "50", "100", "250", "500", "750", "1000"]);
    assert_eq!(job["write"]["total_ios"], 256);
    assert_eq!(job["write"]["io_kbytes"], 1024);
    assert_eq!(job["job options"]["rw"], "write");

    // Not in zbd mode: no zone_resets; a kernel engine adds disk_util; a
    // [global] section adds "global options".
    let mut dev = conventional_device(4);
    let set = file_set("[global]\nbs=4k\n[w]\nrw=write\nioengine=libaio\nsize=1m\n");
    let result = run(&mut dev, &set);
    let report = json(&set, &result, true);
    assert_eq!(
        keys(&report),
        ["fio version", "timestamp", "timestamp_ms", "time", "global options", "jobs", "disk_util"]
    );
    expected_job.pop();
    assert_eq!(keys(&report["jobs"][0]), expected_job);
    assert_eq!(
        keys(&report["disk_util"][0]),
        [
            "name",
            "read_ios",
            "write_ios",
            "read_merges",
            "write_merges",
            "read_ticks",
            "write_ticks",
            "in_queue",
            "util"
        ]
    );
    // json+: bins whose counts sum to N.
    let clat = &report["jobs"][0]["write"]["clat_ns"];
    let n = clat["N"].as_u64().unwrap();
    assert_eq!(n, 256);
    let bins: u64 = clat["bins"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    assert_eq!(bins, n);
    assert!(clat["bins"].as_object().unwrap().keys().all(|k| k.parse::<u64>().is_ok()));
}

// ---- 19. errors --------------------------------------------------------------

#[test]
fn write_off_the_write_pointer_fails_the_job() {
    // zonemode=none does not know about write pointers: fio gets EIO.
    let (dev, set, result) = run_line("--name=w --rw=write --bs=4k --ioengine=spdk --offset=1m --size=1m");
    let stats = only(&result);
    let (errno, message) = stats.error.clone().expect("an error");
    assert_eq!(errno, 5, "{message}");
    assert!(message.contains("offset=1048576"), "{message}");
    assert_eq!(stats.dirs[DDIR_WRITE].total_ios, 0, "the failed write is not counted");
    assert_eq!(dev.counters().errors, 1, "the job stops at its first error");
    assert_eq!(json(&set, &result, false)["jobs"][0]["error"], 5);
}

#[test]
fn invalid_jobs_are_job_errors() {
    let set = job_set(&format!("--name=w --rw=write --bs=4k {ZBD} --size=1m"));
    let error = engine_error(&mut device(), &set);
    assert_eq!(error.option.as_deref(), Some("size"), "{error}");
    let set = job_set(&format!("--name=w --rw=write --bs=4k {ZBD} --size=1z --time_based"));
    let error = engine_error(&mut device(), &set);
    assert_eq!(error.option.as_deref(), Some("time_based"), "{error}");
    let error = parse_run(&["--name=w".into(), "--zonemode=zbd".into(), "--rw=write".into()], &[]).unwrap_err();
    assert_eq!(error.option.as_deref(), Some("direct"), "{error}");
}

/// A reset sent while two writers at `iodepth` keep the device busy: (reset
/// latency, writers' p99) in ns.
fn reset_under_writes(scheduler: Scheduler, iodepth: u32) -> (f64, u64) {
    let mut dev = device();
    prewrite(&mut dev, 8, CAP_LBAS);
    let set = file_set(&format!(
        "[global]\nioengine=io_uring\ndirect=1\nzonemode=zbd\n\
         [writers]\nrw=write\nbs=8k\niodepth={iodepth}\nnumjobs=2\noffset=0\nsize=1z\noffset_increment=1z\nruntime=300ms\ntime_based\n\
         [resetter]\nrw=trim\nbs=64m\noffset=8z\nsize=1z\nnumber_ios=1\nstartdelay=50ms\n"
    ));
    let result = run_seeded(&mut dev, &set, 0, scheduler);
    no_errors(&result);
    let trim = &result.threads.iter().find(|t| set.jobs[t.spec].name == "resetter").unwrap().stats.dirs[DDIR_TRIM];
    assert_eq!(trim.total_ios, 1);
    let writers = &result.threads[0].stats.dirs[DDIR_WRITE];
    (trim.clat.mean(), writers.clat.percentiles(&[99.0])[0].1)
}

#[test]
fn zinc_holds_a_reset_back_while_writes_are_busy() {
    let (deadline_ns, _) = reset_under_writes(Scheduler::MqDeadline, 16);
    let (zinc_ns, _) = reset_under_writes(Scheduler::Zinc, 16);
    // mq-deadline sends it at once; ZINC holds it until its next epoch (at 64 ms for a
    // reset sent at 50 ms), where the writes since the run began exceed the budget.
    assert!(deadline_ns < 10.0 * MS as f64, "mq-deadline reset {deadline_ns} ns");
    let held_ms = (zinc_ns - deadline_ns) / MS as f64;
    assert!((12.0..16.0).contains(&held_ms), "held {held_ms:.2} ms (zinc {zinc_ns} ns)");
}

#[test]
fn zinc_lets_a_reset_go_at_once_beside_two_qd1_writers() {
    // At most 2 write units in flight, under ZINC's threshold of 3: nothing to hold for.
    let (deadline_ns, _) = reset_under_writes(Scheduler::MqDeadline, 1);
    let (zinc_ns, _) = reset_under_writes(Scheduler::Zinc, 1);
    assert!(deadline_ns < 10.0 * MS as f64, "mq-deadline reset {deadline_ns} ns");
    assert!((zinc_ns - deadline_ns).abs() < 0.5 * MS as f64, "zinc {zinc_ns} ns, mq-deadline {deadline_ns} ns");
}

#[test]
fn end_fsync_flushes_a_volatile_cache_before_the_job_ends() {
    let line = "--name=w --rw=write --bs=16k --size=1m";
    let mut elapsed = Vec::new();
    for (cache, end_fsync) in [("plp", false), ("volatile", false), ("volatile", true)] {
        let options = DeviceOptions { zones: Some(ZONES), zone_size_bytes: Some(ZONE_BYTES), ..Default::default() };
        let mut config = options.apply(preset("zn540").unwrap()).unwrap();
        config = zonelab_device::options::set_parameter(&config, "write_buffer.cache", cache).unwrap();
        let mut dev = Device::new(config).unwrap();
        let set = job_set(&format!("{line} --end_fsync={}", u8::from(end_fsync)));
        let result = run(&mut dev, &set);
        no_errors(&result);
        assert_eq!(dev.counters().flushes, u64::from(end_fsync));
        elapsed.push(only(&result).elapsed_ns);
    }
    assert_eq!(elapsed[0], elapsed[1], "without a flush the cache mode does not change the timing");
    assert!(elapsed[2] > elapsed[1], "the flush saves the partly filled unit: {elapsed:?}");
}

// ---- host cost of io_uring passthrough -----------------------------------

#[test]
fn io_uring_passthrough_pays_its_host_cost_on_the_jobs_cpu() {
    let host = zonelab_host::HostConfig::default().uring_passthrough;
    let per_request_ns = (host.submit_ns + host.complete_ns) as f64;
    let mean_ns = |engine: &str| {
        let line =
            format!("--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine={engine} --size=1z --io_size=4m");
        let (_, _, result) = run_line(&line);
        no_errors(&result);
        only(&result).dirs[DDIR_WRITE].lat.mean()
    };
    // At QD 1 the device time is the same: the difference is the host's.
    let extra_ns = mean_ns("io_uring_cmd") - mean_ns("spdk");
    assert!(within(extra_ns, per_request_ns, 0.02), "extra {extra_ns} ns, host cost {per_request_ns} ns");
    // At a deep queue one job's CPU, not the device, bounds its request rate.
    let line = "--name=r --rw=randread --bs=4k --zonemode=zbd --direct=1 --ioengine=io_uring_cmd --iodepth=128 \
                --size=4z --read_beyond_wp=1 --time_based --runtime=20ms";
    let (_, _, result) = run_line(line);
    no_errors(&result);
    let ios_per_s = only(&result).dirs[DDIR_READ].total_ios as f64 / 0.020;
    assert!(ios_per_s > 1e9 / per_request_ns * 0.9, "{ios_per_s} reads/s: the CPU, not the device, should bound them");
    assert!(ios_per_s <= 1e9 / per_request_ns * 1.02, "{ios_per_s} reads/s beyond one CPU's {per_request_ns} ns each");
}

#[test]
fn a_polled_ring_left_idle_past_a_second_wakes_its_thread_first_and_a_shorter_long_idle_finds_the_cpu_cold() {
    let wakeup_ns = zonelab_host::HostConfig::default().sq_poll.wakeup_ns as f64;
    assert!(wakeup_ns > 0.0);
    // Four writes, `think` apart, as total latencies (min, max).
    let lats = |engine: &str, poll: &str, think: &str| {
        let line = format!(
            "--name=w --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine={engine} {poll} --thinktime={think} \
             --size=1z --number_ios=4"
        );
        let (_, _, result) = run_line(&line);
        no_errors(&result);
        let lat = &only(&result).dirs[DDIR_WRITE].lat;
        assert_eq!(lat.samples, 4, "{line}");
        (lat.min() as f64, lat.max_ns as f64)
    };
    // Two seconds apart: every write (the first too) wakes the sleeping thread.
    let (idle_min, _) = lats("io_uring_cmd", "--sqthread_poll=1", "2s");
    // A hundredth of a second apart: the thread polls on, only the first write wakes it.
    let (polled_min, polled_max) = lats("io_uring_cmd", "--sqthread_poll=1", "10ms");
    assert!(idle_min >= polled_min + wakeup_ns * 0.9, "{idle_min} ns idle against {polled_min} ns polled");
    assert!(within(polled_max - polled_min, wakeup_ns, 0.1), "only the first write wakes the thread");
    // Half a second apart: the thread still polls, but the job's CPU slept too
    // and every write after the first pays its way out of the deep state.
    let sq_poll = zonelab_host::HostConfig::default().sq_poll;
    assert!(sq_poll.cold_after_ns < 500_000_000 && sq_poll.cold_ns > 0);
    let (cold_min, cold_max) = lats("io_uring_cmd", "--sqthread_poll=1", "500ms");
    assert!(within(cold_min - polled_min, sq_poll.cold_ns as f64, 0.1), "{cold_min} ns cold against {polled_min} ns");
    assert!(within(cold_max, polled_max, 0.02), "the first write wakes the thread, and pays nothing more");
    // Without the option, or without a ring, there is no polling thread to wake.
    let (_, unpolled_max) = lats("io_uring_cmd", "", "2s");
    let (_, spdk_max) = lats("spdk", "--sqthread_poll=1", "2s");
    assert!(unpolled_max.max(spdk_max) < wakeup_ns, "{unpolled_max} ns, {spdk_max} ns");
}

#[test]
fn libaio_reaping_is_outside_the_latency_at_qd_1_and_inside_it_when_completions_queue() {
    let host = zonelab_host::HostConfig::machine("zns-study").unwrap();
    let reap_ns = host.engine_per_io.libaio_ns;
    assert!(reap_ns > 0);
    let on = |host: zonelab_host::HostConfig, qd: u32| {
        let line = format!(
            "--name=r --rw=randread --bs=4k --zonemode=zbd --direct=1 --ioengine=libaio --iodepth={qd} --size=4z --read_beyond_wp=1 \
             --time_based --runtime=20ms"
        );
        let mut dev = device();
        let options = RunOptions { host, ..RunOptions::default() };
        let result = Engine::new(&mut dev, &job_set(&line), &options).unwrap().run(&mut |_| {}).unwrap();
        no_errors(&result);
        let d = &only(&result).dirs[DDIR_READ];
        assert!(d.total_ios > 100, "qd {qd}: {} reads", d.total_ios);
        (d.total_ios as f64 / 0.020, d.lat.mean())
    };
    let base = zonelab_host::HostConfig::default();
    // QD 1: the same latency, but each I/O's cycle is longer by the reaping.
    let ((rate_0, lat_0), (rate_1, lat_1)) = (on(base, 1), on(host, 1));
    assert!(within(lat_1, lat_0, 0.01), "latency {lat_1} ns against {lat_0} ns without reaping");
    let cycle_ns = 1e9 / rate_1;
    assert!(within(cycle_ns, 1e9 / rate_0 + reap_ns as f64, 0.02), "{cycle_ns} ns per I/O");
    // QD 16: the job's CPU bounds its rate, and completions wait for it inside
    // their latency, so latency follows the queue (Little's law) again. A
    // completion that waited is reaped with the others waiting, by one
    // io_getevents: it costs the batched share, not a call of its own.
    let (rate_16, lat_16) = on(host, 16);
    let batched_ns = host.engine_per_io.libaio_batched_ns;
    assert!(batched_ns < reap_ns);
    let cpu_ns = (batched_ns + host.kernel.submit_ns + host.kernel.complete_ns) as f64;
    assert!(within(rate_16, 1e9 / cpu_ns, 0.03), "{rate_16} reads/s against {cpu_ns} ns of CPU each");
    let unbatched_ns = (reap_ns + host.kernel.submit_ns + host.kernel.complete_ns) as f64;
    assert!(rate_16 > 1e9 / unbatched_ns * 1.2, "{rate_16} reads/s: the batches save the call");
    assert!(
        within(lat_16 * rate_16 / 1e9, 16.0, 0.15),
        "{lat_16} ns at {rate_16}/s holds {} in flight",
        lat_16 * rate_16 / 1e9
    );
}

/// `io_size=1p` ran for hours of CPU without a word: a job estimated over the cap is refused before the run, at
/// the line that set the option, and names the cap; the cap can be lifted.
#[test]
fn a_job_over_the_work_cap_is_refused_at_the_option_that_asks_for_it() {
    let set = file_set("[global]\nrw=write\nzonemode=zbd\ndirect=1\nio_size=1p\n\n[big]\nbs=4k\n");
    let e = engine_error(&mut device(), &set);
    assert_eq!((e.location.as_str(), e.option.as_deref()), ("t.fio:5", Some("io_size")), "{e}");
    assert!(e.message.starts_with("io_size=1p: up to 2.75e11 I/Os of 4096 bytes"), "{e}");
    assert!(e.message.contains("the cap is 1.80e10 I/Os per job") && e.message.contains("--allow-long-runs"), "{e}");
    let lifted = RunOptions { work_cap_ios: f64::INFINITY, ..RunOptions::default() };
    assert!(Engine::new(&mut device(), &set, &lifted).is_ok(), "no cap, no refusal");
    // A day of ramp at QD 32 is over the cap; at QD 1 it is a warning (the latency bounds the rate).
    let day = "--name=r --rw=randread --ioengine=io_uring --time_based --runtime=1 --ramp_time=86400";
    let e = engine_error(&mut device(), &job_set(&format!("{day} --iodepth=32")));
    assert_eq!((e.location.as_str(), e.option.as_deref()), ("command line", Some("ramp_time")), "{e}");
    let mut dev = device();
    let qd1 = job_set(day);
    let engine = Engine::new(&mut dev, &qd1, &RunOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let warnings = engine.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("job 'r' (command line): ramp_time=86400: up to"), "{warnings:?}");
    assert!(warnings[0].contains("of CPU"), "{warnings:?}");
    // What a test or a paper runs is far below a minute: no word.
    let mut dev = device();
    let small = job_set("--name=w --rw=write --zonemode=zbd --direct=1 --size=2z --runtime=10 --time_based");
    assert!(Engine::new(&mut dev, &small, &RunOptions::default()).unwrap().warnings().is_empty());
}

// ---- percentiles and the normal report ----------------------------------

#[test]
fn percentile_options_choose_the_latencies_that_carry_percentiles() {
    // libaio: a submission cost, so that total latencies exceed completion latencies.
    let line = "--name=r --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine=libaio --size=1z --io_size=1m \
                --percentile_list=50:99.5";
    let report = |extra: &str| {
        let (_, set, result) = run_line(&format!("{line} {extra}"));
        json(&set, &result, true)["jobs"][0]["write"].clone()
    };
    let has = |dir: &Value, lat: &str| dir[lat].get("percentile").is_some();
    let default = report("");
    assert!(has(&default, "clat_ns") && !has(&default, "lat_ns") && !has(&default, "slat_ns"));
    assert_eq!(keys(&default["clat_ns"]["percentile"]), ["50.000000", "99.500000"]);
    assert!(default["clat_ns"].get("bins").is_some(), "json+ bins go with the percentiles");
    let all = report("--lat_percentiles=1 --slat_percentiles=1");
    assert!(has(&all, "clat_ns") && has(&all, "lat_ns") && has(&all, "slat_ns"));
    assert!(all["lat_ns"]["percentile"]["50.000000"].as_u64() > all["clat_ns"]["percentile"]["50.000000"].as_u64());
    let none = report("--clat_percentiles=0");
    assert!(!has(&none, "clat_ns") && none["clat_ns"].get("bins").is_none());
}

#[test]
fn the_normal_report_has_fio_3_33s_lines() {
    let (_, set, result) = run_line(&format!(
        "--name=w --rw=write --bs=128k {ZBD} --size=1z --time_based --runtime=1100ms --lat_percentiles=1 \
         --percentile_list=50:99.5 --description=fill"
    ));
    let text = normal_report(&set, &result);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[0],
        "w: (g=0): rw=write, bs=(R) 128KiB-128KiB, (W) 128KiB-128KiB, (T) 128KiB-128KiB, ioengine=spdk, iodepth=1"
    );
    assert_eq!(lines[3], "", "{text}");
    assert_eq!(lines[4], "w: (groupid=0, jobs=1): err= 0: pid=0: Thu Jan  1 00:00:00 1970");
    assert_eq!(lines[5], "  Description  : [fill]");
    assert!(lines[6].starts_with("  write: IOPS=") && lines[6].ends_with(" zone resets"), "{text}");
    let labels = [
        "    slat (",
        "    clat (",
        "     lat (",
        "    clat percentiles (",
        "     | 50.0th=[",
        "    lat percentiles (",
        "     | 50.0th=[",
        "   bw (",
        "   iops        : min=",
        "  lat (",
    ];
    for (line, label) in lines[7..].iter().zip(labels) {
        assert!(line.starts_with(label), "{label:?} expected:\n{text}");
    }
    // One job: its samples' mean over the group's bandwidth, as fio prints it
    // (capped at 100%; below it when the samples' mean falls short of the run's).
    let per = text.split(", per=").nth(1).and_then(|t| t.split("%, avg=").next()).expect("a per= field");
    let per: f64 = per.parse().unwrap_or_else(|e| panic!("per={per}: {e}\n{text}"));
    assert!((99.0..=100.0).contains(&per) && text.contains(&format!(", per={per:.2}%, avg=")), "{text}");
    for label in
        ["     submit    : 0=0.0%, 4=100.0%,", "     complete  : 0=0.0%, 4=100.0%,", "     issued rwts: total=0,"]
    {
        assert!(text.contains(label), "{label}:\n{text}");
    }
    assert!(text.contains("\nRun status group 0 (all jobs):\n  WRITE: bw="), "{text}");
    assert!(!text.contains("Disk stats"), "passthrough: no block layer to count");
}

// ---- terse -----------------------------------------------------------------

#[test]
fn terse_lines_have_fio_3_33s_fields_in_its_order() {
    let line = format!(
        "--name=rw --rw=randrw --bs=4k {ZBD} --size=2z --io_size=4m --read_beyond_wp=1 --percentile_list=50:99 \
         --lat_percentiles=1"
    );
    let (_, set, result) = run_line(&line);
    no_errors(&result);
    let terse = terse_report(&set, &result);
    let report = json(&set, &result, false);
    let job = &report["jobs"][0];
    let fields: Vec<&str> = terse.trim_end().split(';').collect();
    assert_eq!(fields.len(), TERSE_V3_FIELDS, "{terse}");
    assert_eq!(fields[..5], ["3", "fio-3.33 (zonelab 0.1.0)", "rw", "0", "0"]);
    // Each direction: KiB, KiB/s, IOPS, runtime, then slat, clat, 20 percentiles, lat, bw (41 fields).
    for (ddir, name) in [(0, "read"), (1, "write")] {
        let at = 5 + 41 * ddir;
        let dir = &job[name];
        assert_eq!(fields[at], dir["io_kbytes"].to_string(), "{name}");
        assert_eq!(fields[at + 1], dir["bw"].to_string(), "{name}");
        assert_eq!(fields[at + 3], dir["runtime"].to_string(), "{name}");
        let clat_min_us = dir["clat_ns"]["min"].as_u64().unwrap() / 1000;
        assert_eq!(fields[at + 8], clat_min_us.to_string(), "{name}: clat min in us");
        // lat_percentiles=1: the total latency's percentiles, in us.
        let p50 = dir["lat_ns"]["percentile"]["50.000000"].as_u64().unwrap() / 1000;
        assert_eq!(fields[at + 12], format!("50.000000%={p50}"), "{name}");
        assert!(fields[at + 13].starts_with("99.000000%="), "{name}");
        assert!(fields[at + 14..at + 32].iter().all(|f| *f == "0%=0"), "{name}: unused slots");
        assert_eq!(fields[at + 32], (dir["lat_ns"]["min"].as_u64().unwrap() / 1000).to_string());
        assert_eq!(fields[at + 36], dir["bw_min"].to_string(), "{name}");
        assert!(fields[at + 38].ends_with('%'), "{name}: bw share of the group");
    }
    assert_eq!(fields[87..92], ["0.000000%", "0.000000%", "0", "0", "0"], "cpu");
    assert!(fields[92..99].iter().all(|f| f.ends_with('%') && f.split('.').nth(1).unwrap().len() == 2), "depths");
    let buckets: f64 = fields[99..121].iter().map(|f| f.trim_end_matches('%').parse::<f64>().unwrap()).sum();
    assert!((buckets - 100.0).abs() < 0.1, "latency buckets sum to 100%: {buckets}");
    // A description is the last field; a job through the block layer adds the disk's nine.
    let (_, set, result) = run_line(
        "--name=d --rw=write --bs=4k --zonemode=zbd --direct=1 --ioengine=libaio --size=1z --io_size=1m --description=dd",
    );
    let terse = terse_report(&set, &result);
    let fields: Vec<&str> = terse.trim_end().split(';').collect();
    assert_eq!(fields.len(), TERSE_V3_FIELDS + 10, "{terse}");
    assert_eq!((fields[121], fields[130]), ("nvme0n1", "dd"));
}

// ---- do_verify, verify_fatal, exitall ---------------------------------------

#[test]
fn do_verify_0_writes_the_pattern_and_reads_nothing_back() {
    for (do_verify, read_bytes) in [("1", MIB), ("0", 0)] {
        let mut dev = device_with(DeviceOptions { data: true, ..Default::default() });
        let set = job_set(&format!(
            "--name=v --rw=write --bs=16k {ZBD} --size=1z --io_size=1m --verify=crc32c --do_verify={do_verify}"
        ));
        let result = run(&mut dev, &set);
        no_errors(&result);
        assert_eq!(only(&result).dirs[DDIR_READ].io_bytes, read_bytes, "do_verify={do_verify}");
        assert_eq!(dev.counters().host_read_bytes, read_bytes, "do_verify={do_verify}");
    }
}

#[test]
fn a_failed_read_back_logs_its_bad_block_whatever_verify_fatal_says() {
    // Two clones write the same small zones and reset them when full: the
    // first bad block found is stale or another's, a bad header, where fio's
    // verify stops with or without verify_fatal.
    for fatal in ["0", "1"] {
        let mut dev = small_data_device();
        let line = format!(
            "--name=w --rw=write --bs=4k {ZBD} --size=4z --iodepth=4 --numjobs=2 --thinktime=10 --verify=crc32c \
             --runtime=20ms --verify_fatal={fatal}"
        );
        let result = run(&mut dev, &job_set(&line));
        let failed: Vec<_> = result.threads.iter().filter(|t| t.stats.error.is_some()).collect();
        assert!(!failed.is_empty(), "verify_fatal={fatal}: the clones overwrite each other");
        for thread in failed {
            assert_eq!(thread.stats.error.as_ref().unwrap().0, 84, "EILSEQ, as fio");
            assert_eq!(thread.verify_log.len(), 1, "{:?}", thread.verify_log);
            let line = &thread.verify_log[0];
            assert!(line.starts_with("verify: ") && line.contains("requested block: offset="), "{line}");
        }
        assert!(result.threads.iter().filter(|t| t.stats.error.is_none()).all(|t| t.verify_log.is_empty()));
    }
}

/// A short job and a long one in one group (a third, stonewalled, in the next):
/// the end of the short one stops what `exit_what` names.
fn exitall_run(options: &str) -> Vec<JobStats> {
    let text = format!(
        "[global]\nzonemode=zbd\ndirect=1\nioengine=spdk\nbs=4k\n{options}\n\
         [short]\nrw=write\nsize=1z\nio_size=1m\n\
         [long]\nrw=write\noffset=2z\nsize=1z\ntime_based\nruntime=100ms\n\
         [next]\nstonewall\nrw=write\noffset=4z\nsize=1z\ntime_based\nruntime=20ms\n"
    );
    let mut dev = device();
    let result = run(&mut dev, &file_set(&text));
    no_errors(&result);
    result.threads.into_iter().map(|t| t.stats).collect()
}

#[test]
fn exitall_stops_the_jobs_exit_what_names() {
    let ms = |stats: &JobStats| stats.job_runtime_ns / MS;
    let alone = exitall_run("");
    let short_ms = ms(&alone[0]);
    assert!(short_ms < 20, "{short_ms}");
    assert_eq!((ms(&alone[1]), ms(&alone[2])), (100, 20));
    // Group (the default): the long job stops when the short one ends; the next group runs.
    let group = exitall_run("exitall");
    assert!(ms(&group[1]) <= short_ms + 1 && group[1].dirs[DDIR_WRITE].total_ios > 0, "{}", ms(&group[1]));
    assert_eq!(ms(&group[2]), 20);
    // Stonewall: the jobs running then stop; the stonewalled one starts afterwards.
    let stonewall = exitall_run("exitall\nexit_what=stonewall");
    assert!(ms(&stonewall[1]) <= short_ms + 1);
    assert_eq!(ms(&stonewall[2]), 20);
    // All: the next job never starts.
    let all = exitall_run("exitall\nexit_what=all");
    assert!(ms(&all[1]) <= short_ms + 1);
    assert_eq!((all[2].dirs[DDIR_WRITE].total_ios, all[2].elapsed_ns), (0, 0));
    // exitall_on_error: only a failed job stops the others.
    let quiet = exitall_run("exitall_on_error");
    assert_eq!((ms(&quiet[1]), ms(&quiet[2])), (100, 20));
}

#[test]
fn exitall_on_error_stops_the_group_when_a_job_fails() {
    // The first job writes past its zone's capacity without zonemode=zbd and fails.
    let text = "[global]\ndirect=1\nioengine=spdk\nbs=128k\n\
                [bad]\nrw=write\nsize=1z\nio_size=60m\n\
                [long]\nzonemode=zbd\nrw=write\noffset=2z\nsize=1z\ntime_based\nruntime=100ms\n";
    let plain = run(&mut device(), &file_set(text));
    assert!(plain.threads[0].stats.error.is_some());
    assert_eq!(plain.threads[1].stats.job_runtime_ns / MS, 100);
    let text = text.replace("[global]\n", "[global]\nexitall_on_error\n");
    let stopped = run(&mut device(), &file_set(&text));
    let failed_at = stopped.threads[0].stats.elapsed_ns;
    assert!(stopped.threads[1].stats.job_runtime_ns <= failed_at + MS, "{failed_at}");
    assert_eq!(stopped.threads[1].stats.error, None, "stopped, not failed");
}

// ---- log files -------------------------------------------------------------

/// A fresh directory for a test's files, under the target directory.
fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn log_lines(path: &std::path::Path) -> Vec<Vec<u64>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(|l| l.split(", ").map(|f| f.parse().unwrap_or_else(|_| panic!("{l}"))).collect()).collect()
}

fn file_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

#[test]
fn logs_are_named_numbered_and_written_line_for_line_as_fio_does() {
    let dir = scratch("fio-logs");
    let p = dir.join("p").display().to_string();
    let q = dir.join("q").display().to_string();
    let line = format!(
        "--name=l --rw=write --bs=4k {ZBD} --size=1z --io_size=1m --numjobs=2 --offset_increment=2z \
         --write_lat_log={p} --write_bw_log={p} --write_iops_log={p} \
         --name=m --rw=write --bs=4k {ZBD} --offset=6z --size=1z --io_size=1m --write_iops_log={q} --log_offset=1"
    );
    let (_, set, result) = run_line(&line);
    no_errors(&result);
    let mut want: Vec<String> = ["bw", "clat", "iops", "lat", "slat"]
        .iter()
        .flat_map(|kind| [format!("p_{kind}.1.log"), format!("p_{kind}.2.log")])
        .collect();
    want.push("q_iops.3.log".into());
    want.sort();
    assert_eq!(file_names(&dir), want, "fio numbers threads over the run, clones included");
    let lat = log_lines(&dir.join("p_lat.1.log"));
    let clat = log_lines(&dir.join("p_clat.1.log"));
    assert_eq!((lat.len(), clat.len()), (256, 256), "a line per I/O without log_avg_msec");
    for (l, c) in lat.iter().zip(&clat) {
        // time (ms), latency (ns), ddir, block size, priority.
        assert_eq!((l.len(), l[2], l[3], l[4]), (5, 1, 4096, 0), "{l:?}");
        assert!(l[1] >= c[1] && l[0] == c[0]);
    }
    assert!(lat.windows(2).all(|w| w[0][0] <= w[1][0]), "times in completion order");
    // Per-unit bandwidth and IOPS logs: a sample per I/O, in the statistics too (fio's add_bw_sample).
    let bw = log_lines(&dir.join("p_bw.1.log"));
    assert!(bw.iter().zip(&clat).all(|(b, c)| b[1] == 4096 * 1_000_000 / c[1]), "bytes per ms of clat");
    assert!(log_lines(&dir.join("p_iops.2.log")).iter().all(|l| l[1] == 1));
    let write = &json(&set, &result, false)["jobs"][0]["write"];
    assert_eq!((write["bw_samples"].as_u64(), write["iops_samples"].as_u64()), (Some(256), Some(256)));
    assert_eq!((write["iops_min"].as_u64(), write["iops_max"].as_u64()), (Some(1), Some(1)));
    // log_offset: the I/O's offset before the priority.
    let iops = log_lines(&dir.join("q_iops.3.log"));
    assert_eq!(iops[1], [iops[1][0], 1, 1, 4096, 6 * ZONE_BYTES + 4096, 0]);
    // The same run writes the same bytes.
    let first = std::fs::read(dir.join("p_lat.2.log")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    run_line(&line);
    assert_eq!(std::fs::read(dir.join("p_lat.2.log")).unwrap(), first);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn averaged_logs_have_a_line_per_direction_and_window() {
    let dir = scratch("fio-logs-avg");
    let p = dir.join("a").display().to_string();
    let (_, set, result) = run_line(&format!(
        "--name=a --rw=write --bs=4k {ZBD} --size=1z --time_based --runtime=1200ms --ramp_time=100ms \
         --rate_iops=2000 --write_lat_log={p} --write_bw_log={p} --log_avg_msec=500"
    ));
    no_errors(&result);
    // Windows end at 500 and 1000 ms after the ramp; the lat log's last one at the job's end.
    let bw = log_lines(&dir.join("a_bw.1.log"));
    assert_eq!(bw, [vec![500, 8000, 1, 0, 0], vec![1000, 8000, 1, 0, 0]]);
    let lat = log_lines(&dir.join("a_lat.1.log"));
    assert_eq!(lat.iter().map(|l| (l[0], l[2], l[3])).collect::<Vec<_>>(), [(500, 1, 0), (1000, 1, 0), (1200, 1, 0)]);
    // bwavgtime follows log_avg_msec with a bandwidth log: 500 ms windows, two samples.
    assert_eq!(json(&set, &result, false)["jobs"][0]["write"]["bw_samples"], 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_existing_log_file_refuses_the_run_and_is_left_as_it_was() {
    let dir = scratch("fio-logs-exclusive");
    let p = dir.join("p").display().to_string();
    std::fs::write(dir.join("p_clat.2.log"), "not ours\n").unwrap();
    let set =
        job_set(&format!("--name=l --rw=write --bs=4k {ZBD} --size=1z --io_size=64k --numjobs=2 --write_lat_log={p}"));
    let error = engine_error(&mut device(), &set);
    assert_eq!(error.option.as_deref(), Some("write_lat_log"));
    assert!(error.message.contains("p_clat.2.log' exists"), "{error}");
    assert_eq!(std::fs::read_to_string(dir.join("p_clat.2.log")).unwrap(), "not ours\n");
    assert_eq!(file_names(&dir), ["p_clat.2.log"], "the files made before it are removed");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn gtod_reduce_and_the_disable_options_drop_their_statistics_and_logs() {
    let dir = scratch("fio-logs-gtod");
    let p = dir.join("g").display().to_string();
    let base = format!("--name=g --rw=write --bs=4k {ZBD} --size=1z --io_size=1m --write_lat_log={p}");
    let (_, set, result) = run_line(&format!("{base} --disable_slat=1"));
    let job = &json(&set, &result, false)["jobs"][0];
    assert_eq!((job["write"]["slat_ns"]["N"].as_u64(), job["write"]["clat_ns"]["N"].as_u64()), (Some(0), Some(256)));
    assert_eq!(file_names(&dir), ["g_clat.1.log", "g_lat.1.log"]);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let (_, set, result) = run_line(&format!("{base} --gtod_reduce=1"));
    let job = &json(&set, &result, false)["jobs"][0];
    for lat in ["slat_ns", "clat_ns", "lat_ns"] {
        assert_eq!(job["write"][lat]["N"], 0, "{lat}");
        assert!(job["write"][lat].get("percentile").is_none(), "{lat}");
    }
    assert!(job["latency_us"].as_object().unwrap().values().all(|v| v.as_f64() == Some(0.0)));
    assert_eq!(job["write"]["total_ios"], 256);
    assert!(file_names(&dir).is_empty(), "no latency statistics, no latency logs");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bwavgtime_and_iopsavgtime_set_the_sampling_windows() {
    let line = format!("--name=w --rw=write --bs=4k {ZBD} --size=1z --time_based --runtime=2s --rate_iops=1000");
    let samples = |extra: &str| {
        let (_, set, result) = run_line(&format!("{line} {extra}"));
        let write = json(&set, &result, false)["jobs"][0]["write"].clone();
        (write["bw_samples"].as_u64().unwrap(), write["iops_samples"].as_u64().unwrap())
    };
    // Windows that end before the job's last completion: 500, 1000 and 1500 ms (fio takes three too).
    assert_eq!(samples(""), (3, 3));
    assert_eq!(samples("--bwavgtime=1000 --iopsavgtime=250"), (1, 7));
}

// ---- empty zones -------------------------------------------------------------

#[test]
fn a_reader_of_empty_zones_is_warned_about() {
    let (_, _, result) =
        run_line(&format!("--name=r --rw=read --bs=4k {ZBD} --size=2z --numjobs=2 --offset_increment=2z"));
    no_errors(&result);
    assert!(result.threads.iter().all(|t| t.stats.dirs[DDIR_READ].total_ios == 0));
    assert_eq!(result.warnings.len(), 1, "{:?}", result.warnings);
    let warning = &result.warnings[0];
    assert!(warning.starts_with("job 'r' (command line): read nothing"), "{warning}");
    assert!(warning.contains("2 of its 2 threads did no I/O") && warning.contains("read_beyond_wp=1"), "{warning}");
    // Reading beyond the write pointer, or after a writer: I/O, no warning.
    let (_, _, beyond) =
        run_line(&format!("--name=r --rw=read --bs=4k {ZBD} --size=1z --io_size=1m --read_beyond_wp=1"));
    assert!(beyond.warnings.is_empty());
    let text = "[global]\nzonemode=zbd\ndirect=1\nioengine=spdk\nbs=4k\nsize=1z\n[w]\nrw=write\nio_size=1m\n\
                [r]\nstonewall\nrw=read\n";
    let written = run(&mut device(), &file_set(text));
    assert!(written.warnings.is_empty(), "{:?}", written.warnings);
    assert!(written.threads[1].stats.dirs[DDIR_READ].io_bytes > 0);
}
