//! fio's Flexible Data Placement options (`fdp`, `dataplacement`,
//! `plids`/`fdp_pli`, `plid_select`/`fdp_pli_select`, `dp_scheme`) on an
//! FDP namespace: each job's writes name the placement identifiers it
//! selected from the namespace's Reclaim Unit Handle Status, hot and cold
//! data kept apart lower the write amplification the FDP statistics log
//! reports, and what fio refuses is refused where it was written.

use zonelab_device::{preset, CmdResult, Command, Device, DeviceConfig};
use zonelab_workload::fio::device_report;
use zonelab_workload::fio::job::JobSet;
use zonelab_workload::fio::parse::{parse_job_file, parse_run};
use zonelab_workload::fio::run::{Engine, RunOptions, RunResult};

/// The device examples/fio/fdp-hot-cold.fio names: the zn540-fdp's scale
/// model, 144 MiB of flash under a 100 MiB namespace, 2 reclaim unit handles.
fn small_config() -> DeviceConfig {
    zonelab_device::fdp_scale_model()
}

fn example(name: &str) -> (String, String) {
    let path = format!("{}/../../examples/fio/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the example job file");
    (name.to_string(), text)
}

fn run_set(device: &mut Device, set: &JobSet) -> Result<RunResult, String> {
    let engine = Engine::new(device, set, &RunOptions::default()).map_err(|e| e.to_string())?;
    engine.run(&mut |_| {}).map_err(|e| e.to_string())
}

fn run_text(config: DeviceConfig, text: &str) -> Result<(Device, RunResult), String> {
    let set = parse_job_file("fdp.fio", text).map_err(|e| e.to_string())?;
    let mut device = Device::new(config).expect("a device");
    let result = run_set(&mut device, &set)?;
    Ok((device, result))
}

/// The `zonelab` key's FDP statistics after running example `name`.
fn example_stats(name: &str) -> serde_json::Value {
    let set = parse_run(&[], &[example(name)]).unwrap_or_else(|e| panic!("{e}"));
    let mut device = Device::new(small_config()).expect("a device");
    let result = run_set(&mut device, &set).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(result.threads.iter().all(|t| t.stats.error.is_none()), "{name}: no I/O error");
    let key = device_report::device_json(&mut device, result.end_ns).expect("an FDP namespace has the key");
    key["namespaces"][0]["fdp"]["stats"].clone()
}

#[test]
fn hot_and_cold_jobs_on_their_own_handles_write_less_to_the_media_than_on_one() {
    let apart = example_stats("fdp-hot-cold.fio");
    let mixed = example_stats("fdp-one-handle.fio");
    let waf = |s: &serde_json::Value| s["write_amplification"].as_f64().expect("a ratio");
    let ratio =
        |s: &serde_json::Value| s["media_bytes"].as_u64().unwrap() as f64 / s["host_bytes"].as_u64().unwrap() as f64;
    eprintln!("media bytes / host bytes: one handle per job {apart}, one handle {mixed}");
    // Both wrote the same: 100 MiB of fill and 300 MiB of random rewrites.
    assert_eq!(apart["host_bytes"], 400u64 << 20);
    assert_eq!(apart["host_bytes"], mixed["host_bytes"]);
    assert!((waf(&apart) - ratio(&apart)).abs() < 1e-6, "the printed ratio is media over host bytes");
    assert!(waf(&mixed) > 1.5, "one handle: garbage collection copies a lot: {mixed}");
    // 1.365 against 1.896 when written.
    assert!(waf(&apart) < 0.8 * waf(&mixed), "apart {apart} against mixed {mixed}");
    assert!(apart["media_erased_bytes"].as_u64() < mixed["media_erased_bytes"].as_u64());
}

/// What is left of each handle's reclaim unit (RUAMW, LBAs), by handle.
fn ruamw(device: &mut Device, at_ns: u64) -> Vec<u64> {
    match device.submit(at_ns, &Command::ReclaimUnitHandleStatus, None).result {
        CmdResult::ReclaimUnitHandles(list) => list.iter().map(|r| r.ruamw_lbas).collect(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn each_job_writes_through_the_handles_its_plids_select() {
    // One reclaim unit: a 768 KiB block on each of 4 dies, 768 LBAs.
    let job = |plids: &str| {
        format!(
            "[global]\nioengine=io_uring_cmd\nbs=48k\nio_size=96k\nfdp=1\n[a]\nrw=write\nfdp_pli={plids}\n\
             [b]\nrw=write\noffset=50m\nplids=0\n"
        )
    };
    let (mut device, result) = run_text(small_config(), &job("1")).unwrap();
    assert_eq!(ruamw(&mut device, result.end_ns), [768 - 24, 768 - 24], "a through handle 1, b through 0");
    let (mut device, result) = run_text(small_config(), &job("0")).unwrap();
    assert_eq!(ruamw(&mut device, result.end_ns), [768 - 48, 768], "both through handle 0");
    // Without fdp=1 writes carry no directive: handle 0 takes them.
    let plain = "[a]\nioengine=io_uring_cmd\nrw=write\nbs=48k\nio_size=96k\nfdp_pli=1\n";
    let (mut device, result) = run_text(small_config(), plain).unwrap();
    assert_eq!(ruamw(&mut device, result.end_ns), [768 - 24, 768]);
}

#[test]
fn round_robin_random_and_scheme_spread_writes_as_fio_does() {
    let job = |select: &str| {
        format!("[a]\nioengine=io_uring_cmd\nrw=write\nbs=48k\nio_size=480k\ndataplacement=fdp\nplid_select={select}\n")
    };
    // Round robin (the default) alternates: 5 writes of 12 LBAs each.
    let (mut device, result) = run_text(small_config(), &job("roundrobin")).unwrap();
    assert_eq!(ruamw(&mut device, result.end_ns), [768 - 60, 768 - 60]);
    let (mut device, result) = run_text(small_config(), &job("random")).unwrap();
    let left = ruamw(&mut device, result.end_ns);
    assert_eq!(left.iter().map(|l| 768 - l).sum::<u64>(), 120, "every write went to one of the two: {left:?}");
    let (_, again) = run_text(small_config(), &job("random")).unwrap();
    assert_eq!(again.end_ns, result.end_ns, "the same seed draws the same handles");
    // A scheme: the first 96 KiB through handle 1, the rest through the default, 0.
    let scheme = std::env::temp_dir().join(format!("zonelab-fdp-scheme-{}", std::process::id()));
    std::fs::write(&scheme, "0, 98304, 1\n\n98304,1048576000,0\n").unwrap();
    let text = job("scheme") + &format!("dp_scheme={}\n", scheme.display());
    let (mut device, result) = run_text(small_config(), &text).unwrap();
    std::fs::remove_file(&scheme).unwrap();
    assert_eq!(ruamw(&mut device, result.end_ns), [768 - 96, 768 - 24]);
}

fn refused(config: DeviceConfig, text: &str) -> String {
    run_text(config, text).err().expect("a refused job")
}

#[test]
fn what_fio_refuses_is_refused_where_it_was_written() {
    let base = "[a]\nioengine=io_uring_cmd\nrw=write\nbs=48k\nio_size=96k\n";
    let no_fdp = preset("sn640").unwrap();
    let e = refused(no_fdp, &format!("{base}fdp=1\n"));
    assert!(e.starts_with("fdp.fio:6: option 'fdp': namespace 1 has no Flexible Data Placement"), "{e}");
    assert!(e.contains("fdp_disabled") && e.contains("--device zn540-fdp"), "{e}");
    let e = refused(small_config(), "[a]\nrw=write\nbs=48k\nio_size=96k\nfdp=1\n");
    assert!(e.contains("option 'fdp': needs ioengine=io_uring_cmd or spdk") && e.contains("psync"), "{e}");
    let e = refused(small_config(), &format!("{base}fdp=1\nfdp_pli=0,2\n"));
    assert!(e.starts_with("fdp.fio:7: option 'plids': index 2 must be smaller than 2"), "{e}");
    assert!(e.contains("valid indexes are 0-1"), "{e}");
    let e = refused(small_config(), &format!("{base}fdp=1\ndataplacement=none\n"));
    assert!(e.contains("fdp=1 is not compatible with dataplacement=none"), "{e}");
    let e = refused(small_config(), &format!("{base}fdp=1\nplid_select=scheme\n"));
    assert!(e.starts_with("fdp.fio:7: option 'plid_select': scheme needs dp_scheme=FILE"), "{e}");
    let e = refused(small_config(), &format!("{base}fdp=1\nplid_select=scheme\ndp_scheme=/nonexistent/scheme\n"));
    assert!(e.starts_with("fdp.fio:8: option 'dp_scheme':") && e.contains("/nonexistent/scheme"), "{e}");
}

#[test]
fn bad_values_name_the_option_and_what_is_valid() {
    let parse = |line: &str| parse_job_file("p.fio", &format!("[a]\nrw=write\n{line}\n")).unwrap_err().to_string();
    let e = parse("fdp_pli=0,x");
    assert!(e.starts_with("p.fio:3: option 'fdp_pli': '0,x': 'x' is not a number"), "{e}");
    assert!(e.contains("e.g. 0,2-4"), "{e}");
    assert!(parse("plids=4-2").contains("range '4-2' ends before it starts"));
    assert!(parse("plids=0x10000").contains("cannot exceed 0xFFFF"));
    assert!(parse("plids=0-200").contains("only 128 IDs"));
    assert!(parse("plids=1,,2").contains("an empty entry"));
    assert!(parse("fdp=yes").contains("option 'fdp': 'yes' is not a boolean"));
    assert!(parse("plid_select=first").contains("'first' is not one of random, roundrobin, scheme"));
    assert!(parse("fdp_pli_select=first").contains("option 'fdp_pli_select'"));
    assert!(parse("dataplacement=streams").contains("'streams' is not modelled: the device has no Streams directive"));
    assert!(parse("data_placement=zns").contains("'zns' is not one of none, fdp"));
    // fio's strtoull(.., 0): hex and octal, sorted.
    let set = parse_job_file("p.fio", "[a]\nplids=0x3,010,1-2\n").unwrap();
    assert_eq!(set.jobs[0].placement.plids, [1, 2, 3, 8]);
}

#[test]
fn on_a_drive_of_namespaces_each_job_places_writes_on_its_own_namespace() {
    use zonelab_device::{CommandSet, NamespaceEntry, Namespaces, ZonedDevice};
    let mut config = small_config();
    let nvm = NamespaceEntry { command_set: Some(CommandSet::Nvm), zones: Some(20), ..Default::default() };
    config.namespaces = vec![nvm.clone(), nvm];
    let mut drive = Namespaces::new(config).unwrap_or_else(|e| panic!("{e:?}"));
    let text = "[global]\nioengine=io_uring_cmd\nrw=write\nbs=48k\nio_size=96k\nfdp=1\n\
                [a]\nfilename=/dev/ng0n1\nfdp_pli=1\n[b]\nfilename=/dev/ng0n2\nfdp_pli=0\n";
    let set = parse_job_file("ns.fio", text).unwrap();
    let engine = Engine::on_namespaces(&mut drive, &set, &RunOptions::default(), 1).unwrap();
    let end_ns = engine.run(&mut |_| {}).unwrap().end_ns;
    let ruamw = |drive: &mut Namespaces, nsid| match drive
        .submit_in(nsid, end_ns, &Command::ReclaimUnitHandleStatus, None)
        .result
    {
        CmdResult::ReclaimUnitHandles(list) => list.iter().map(|r| r.ruamw_lbas).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(ruamw(&mut drive, 1), [768, 768 - 24], "a: namespace 1, handle 1");
    assert_eq!(ruamw(&mut drive, 2), [768 - 24, 768], "b: namespace 2, handle 0");
}

#[test]
fn replayed_writes_are_placed_as_generated_ones() {
    let log = std::env::temp_dir().join(format!("zonelab-fdp-replay-{}.log", std::process::id()));
    std::fs::write(&log, "fio version 3 iolog\n0 f write 0 49152\n10 f read 0 49152\n20 f write 49152 49152\n")
        .unwrap();
    let text = format!("[r]\nioengine=io_uring_cmd\nread_iolog={}\nfdp=1\nfdp_pli=1\n", log.display());
    let (mut device, result) = run_text(small_config(), &text).unwrap();
    std::fs::remove_file(&log).unwrap();
    assert_eq!(
        ruamw(&mut device, result.end_ns),
        [768, 768 - 24],
        "both writes through handle 1, the read through none"
    );
}
