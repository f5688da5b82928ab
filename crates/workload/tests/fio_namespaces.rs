//! fio jobs on the namespaces of one drive: `filename=/dev/nvme0nN` picks
//! the namespace, the namespaces share the drive (a writer on one slows a
//! reader on the other), an NVM namespace is a plain block device (random
//! writes anywhere, its FTL's write amplification), and a filename that
//! names no namespace is refused where it was written.

use zonelab_device::{preset, CommandSet, DeviceConfig, DeviceOptions, NamespaceEntry, Namespaces, ZonedDevice};
use zonelab_workload::fio::job::{JobError, JobSet, DDIR_READ, DDIR_WRITE};
use zonelab_workload::fio::parse::parse_job_file;
use zonelab_workload::fio::run::{Engine, RunOptions, RunResult};

const MIB: u64 = 1 << 20;

/// The zn540's flash cut down: NSID 1 zoned (4 zones of the zn540's), NSID 2
/// an NVM namespace of 1 GiB on the drive's FTL, over as few blocks per
/// plane as hold both, so that the NVM namespace's garbage collection runs.
fn drive_config() -> DeviceConfig {
    let opts = DeviceOptions { zones: Some(4), ..Default::default() };
    let mut config = opts.apply(preset("zn540").expect("zn540")).expect("4 zones");
    config.namespaces = vec![
        NamespaceEntry { zones: Some(4), ..Default::default() },
        NamespaceEntry {
            command_set: Some(CommandSet::Nvm),
            zones: Some(4),
            zone_size_bytes: Some(256 * MIB),
            zone_capacity_bytes: Some(256 * MIB),
            max_open_zones: Some(0),
            max_active_zones: Some(0),
            ..Default::default()
        },
    ];
    let fits = (8..256).find(|&blocks| {
        config.flash.blocks_per_plane = blocks;
        config.validate().is_ok()
    });
    assert!(fits.is_some(), "the two namespaces fit some flash");
    config
}

fn jobs(text: &str) -> JobSet {
    parse_job_file("jobs.fio", text).unwrap_or_else(|e| panic!("{e}"))
}

fn run_on(drive: &mut Namespaces, text: &str) -> Result<RunResult, JobError> {
    let set = jobs(text);
    let engine = Engine::on_namespaces(drive, &set, &RunOptions::default(), 1)?;
    engine.run(&mut |_| {})
}

fn run(text: &str) -> (Namespaces, RunResult) {
    let mut drive = Namespaces::new(drive_config()).expect("drive");
    let result = run_on(&mut drive, text).unwrap_or_else(|e| panic!("{e}"));
    (drive, result)
}

fn error(text: &str) -> String {
    let mut drive = Namespaces::new(drive_config()).expect("drive");
    run_on(&mut drive, text).err().expect("a refused job").to_string()
}

/// Fills 64 MiB of NSID 1's first zone, then (stonewall) reads it at random,
/// QD 1, for 20 ms; `beside` runs next to the reader.
fn reader_after_fill(beside: &str) -> String {
    format!(
        "[global]\nioengine=libaio\ndirect=1\n\n\
         [fill]\nfilename=/dev/nvme0n1\nzonemode=zbd\nrw=write\nbs=128k\nsize=1z\nio_size=64m\niodepth=4\n\n\
         [reader]\nstonewall\nfilename=/dev/nvme0n1\nzonemode=zbd\nrw=randread\nbs=4k\nsize=1z\n\
         time_based\nruntime=20ms\n{beside}"
    )
}

const NVM_WRITER: &str =
    "\n[writer]\nfilename=/dev/nvme0n2\nrw=randwrite\nbs=128k\niodepth=8\ntime_based\nruntime=20ms\n";

fn mean_read_ns(result: &RunResult, spec: usize) -> f64 {
    let thread = result.threads.iter().find(|t| t.spec == spec).expect("the job's thread");
    let dir = &thread.stats.dirs[DDIR_READ];
    assert!(dir.total_ios > 0, "the reader read");
    dir.clat.mean()
}

#[test]
fn each_job_runs_on_the_namespace_its_filename_names() {
    let text = "[global]\nioengine=libaio\ndirect=1\nbs=64k\nsize=8m\n\n\
                [zoned]\nfilename=/dev/nvme0n1\nzonemode=zbd\nrw=write\nsize=1z\nio_size=8m\n\n\
                [nvm]\nfilename=/dev/nvme0n2\nrw=randwrite\n\n\
                [passthrough]\nfilename=/dev/ng0n2\nioengine=io_uring_cmd\nrw=read\n";
    let (drive, result) = run(text);
    let ns = |nsid| drive.namespace(nsid).expect("namespace").counters();
    assert_eq!(ns(1).host_write_bytes, 8 * MIB, "the zoned job wrote NSID 1");
    assert_eq!(ns(2).host_write_bytes, 8 * MIB, "the NVM job wrote NSID 2");
    assert_eq!(ns(2).host_read_bytes, 8 * MIB, "the char device is NSID 2's");
    assert!(result.threads.iter().all(|t| t.stats.error.is_none()));
    let names: Vec<(&str, bool)> = result.namespaces.iter().map(|n| (n.name.as_str(), n.shows_disk)).collect();
    assert_eq!(names, [("nvme0n1", true), ("nvme0n2", true)]);
    assert_eq!(result.namespaces[1].disk.write_ios, 128, "NSID 2's block layer took the NVM job's writes");
    assert_eq!(result.namespaces[1].disk.read_ios, 0, "passthrough is not counted");
    // A job without filename= runs on the default NSID.
    let mut drive = Namespaces::new(drive_config()).expect("drive");
    let set = jobs("[w]\nrw=randwrite\nbs=64k\nsize=1m\n");
    Engine::on_namespaces(&mut drive, &set, &RunOptions::default(), 2).unwrap().run(&mut |_| {}).unwrap();
    assert_eq!(drive.namespace(2).unwrap().counters().host_write_bytes, MIB);
    assert_eq!(drive.namespace(1).unwrap().counters().commands, 0);
}

#[test]
fn writes_on_another_namespace_slow_a_reader_down() {
    let (_, alone) = run(&reader_after_fill(""));
    let (_, shared) = run(&reader_after_fill(NVM_WRITER));
    let (alone_ns, shared_ns) = (mean_read_ns(&alone, 1), mean_read_ns(&shared, 1));
    eprintln!("NSID 1's mean read latency: alone {alone_ns:.0} ns, beside NSID 2's writes {shared_ns:.0} ns");
    assert!(shared_ns > 2.0 * alone_ns, "alone {alone_ns} ns, shared {shared_ns} ns");
    let writer = shared.threads.iter().find(|t| t.spec == 2).expect("writer");
    assert!(writer.stats.dirs[DDIR_WRITE].total_ios > 0);
    let (_, again) = run(&reader_after_fill(NVM_WRITER));
    assert_eq!(mean_read_ns(&again, 1), shared_ns, "deterministic");
}

#[test]
fn filenames_that_name_no_namespace_are_refused_where_they_were_written() {
    let at_line_3 = |filename: &str, engine: &str| error(&format!("[a]\nrw=read\nfilename={filename}\n{engine}"));
    let e = at_line_3("/dev/nvme0n3", "");
    assert!(e.starts_with("jobs.fio:3: option 'filename': '/dev/nvme0n3' is NSID 3"), "{e}");
    assert!(e.contains("/dev/nvme0n1 to /dev/nvme0n2"), "says what is valid: {e}");
    for bad in ["/dev/sda", "data", "/dev/nvme0n1p1", "/dev/nvme0n0"] {
        let e = at_line_3(bad, "");
        assert!(e.contains("names no namespace") && e.starts_with("jobs.fio:3"), "{bad}: {e}");
    }
    let e = at_line_3("/dev/nvme0n1:/dev/nvme0n2", "");
    assert!(e.contains("one namespace"), "{e}");
    let e = at_line_3("/dev/ng0n2", "ioengine=libaio\n");
    assert!(e.contains("io_uring_cmd") && e.contains("/dev/nvme0n2"), "{e}");
    let e = error("[a]\nrw=read\nfilename=/dev/nvme0n1\n[b]\nrw=read\nfilename=/dev/nvme1n2\n");
    assert!(e.starts_with("jobs.fio:6") && e.contains("nvme0"), "{e}");
    let e = error("[a]\nrw=write\ndirect=1\nzonemode=zbd\nfilename=/dev/nvme0n2\n");
    assert!(e.contains("zonesize"), "fio needs zonesize on a namespace without zones: {e}");
    let e = error("[a]\nrw=write\ndirect=1\nzonemode=zbd\nzonesize=64m\nzone_append=1\nfilename=/dev/nvme0n2\n");
    assert!(e.contains("zoned namespace"), "{e}");
    let mut drive = Namespaces::new(drive_config()).expect("drive");
    let set = jobs("[a]\nrw=read\n");
    let e = Engine::on_namespaces(&mut drive, &set, &RunOptions::default(), 3).err().expect("no NSID 3");
    assert!(e.to_string().contains("NSIDs 1 to 2"), "{e}");
}

#[test]
fn random_overwrites_of_an_nvm_namespace_run_without_resets_and_amplify_writes() {
    // Three times the namespace's 1 GiB in random 128 KiB writes: every LBA
    // is written again and again, where a zoned namespace would need resets.
    let text = "[w]\nfilename=/dev/nvme0n2\nioengine=libaio\ndirect=1\nrw=randwrite\nbs=128k\niodepth=4\nio_size=3g\n";
    let (drive, result) = run(text);
    let stats = &result.threads[0].stats;
    assert!(stats.error.is_none(), "{:?}", stats.error);
    assert_eq!(stats.dirs[DDIR_WRITE].io_bytes, 3 << 30);
    assert_eq!(stats.zone_resets, 0);
    let nvm = drive.namespace(2).expect("NSID 2");
    assert_eq!((nvm.counters().resets, nvm.counters().errors), (0, 0));
    let ftl = nvm.ftl_counters().expect("NSID 2 is page-mapped");
    eprintln!("NVM namespace after 3 overwrites: {ftl:?}");
    assert!(ftl.victims > 0 && ftl.write_amplification > 1.05, "{ftl:?}");
    assert!(drive.namespace(1).unwrap().ftl_counters().is_none(), "NSID 1 is zoned");
}

#[test]
fn zonemode_zbd_on_an_nvm_namespace_runs_over_fios_own_zones() {
    // fio's init_zone_info: zones of zonesize; a full zone is reset before
    // it is written again, which moves only fio's write pointer.
    let text = "[w]\nfilename=/dev/nvme0n2\nioengine=libaio\ndirect=1\nzonemode=zbd\nzonesize=64m\nsize=128m\n\
                rw=write\nbs=128k\nio_size=320m\n";
    let (drive, result) = run(text);
    let stats = &result.threads[0].stats;
    assert!(stats.error.is_none(), "{:?}", stats.error);
    assert_eq!(stats.dirs[DDIR_WRITE].io_bytes, 320 * MIB);
    assert_eq!(stats.zone_resets, 3, "zone 0 was reset twice and zone 1 once");
    let nvm = drive.namespace(2).expect("NSID 2").counters();
    assert_eq!((nvm.resets, nvm.errors, nvm.host_write_bytes), (0, 0, 320 * MIB), "no reset reached the drive");
}

#[test]
fn a_zoned_namespace_of_its_own_geometry_takes_zbd_jobs_and_verify() {
    // NSID 2: 512-byte LBAs, zones of 32 MiB, 2 open at most; written, then
    // read back below its own write pointers and verified, in data mode.
    let mut config = drive_config();
    config.mode = zonelab_device::Mode::Data;
    config.namespaces[1] = NamespaceEntry {
        zones: Some(4),
        lba_bytes: Some(512),
        zone_size_bytes: Some(32 * MIB),
        zone_capacity_bytes: Some(32 * MIB),
        max_open_zones: Some(2),
        max_active_zones: Some(2),
        ..Default::default()
    };
    let fits = (8..256).find(|&blocks| {
        config.flash.blocks_per_plane = blocks;
        config.validate().is_ok()
    });
    assert!(fits.is_some());
    let text = "[global]\nfilename=/dev/nvme0n2\nioengine=io_uring\ndirect=1\nzonemode=zbd\n\n\
                [w]\nrw=write\nbs=64k\nsize=2z\nverify=crc32c\niodepth=4\n\n\
                [r]\nstonewall\nrw=read\nbs=4k\nsize=4z\n";
    let mut drive = Namespaces::new(config).expect("drive");
    let result = run_on(&mut drive, text).unwrap_or_else(|e| panic!("{e}"));
    for thread in &result.threads {
        assert!(thread.stats.error.is_none(), "{:?}", thread.stats.error);
    }
    let (w, r) = (&result.threads[0].stats, &result.threads[1].stats);
    assert_eq!(w.dirs[DDIR_WRITE].io_bytes, 64 * MIB, "two zones of 32 MiB");
    assert_eq!(w.dirs[DDIR_READ].io_bytes, 64 * MIB, "verify read them back");
    // The reader's 128 MiB come from the two written zones (twice over), as
    // NSID 2's own write pointers say; NSID 1's zone table would have none.
    assert_eq!(r.dirs[DDIR_READ].io_bytes, 128 * MIB);
    assert_eq!(drive.namespace(2).unwrap().counters().host_read_bytes, 64 * MIB + 128 * MIB);
    let ns2 = drive.namespace(2).unwrap().zones();
    assert_eq!((ns2.wp(0), ns2.wp(1), ns2.wp(2)), (65536, 2 * 65536, 2 * 65536), "512-byte LBAs");
    assert_eq!(drive.namespace(1).unwrap().counters().commands, 0, "NSID 1 untouched");
}
