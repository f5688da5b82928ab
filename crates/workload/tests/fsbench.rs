//! File-system workloads on a small seed-002 device: they run, they are
//! deterministic, OLTP connections overlap their I/O, bad settings are refused.

use zonelab_device::Device;
use zonelab_fs::{Fs, FsConfig, Recycling};
use zonelab_workload::fsbench::{run, FsBenchConfig, FsBenchResult, FsWorkload};

/// The mlc preset with 4-die zones of 8 MiB: 48 zones, 384 MiB.
fn small_fs(recycling: Recycling) -> Fs {
    let c = zonelab_fs::testing::small_device(48);
    let mut cfg = FsConfig::new(recycling);
    cfg.cache_pages = 4096;
    Fs::mkfs(Device::new(c).unwrap(), cfg).unwrap()
}

fn bench(workload: FsWorkload, recycling: Recycling, threads: u32) -> FsBenchResult {
    let mut cfg = FsBenchConfig::new(workload);
    cfg.utilization = 0.7;
    cfg.write_bytes = 24 << 20;
    cfg.threads = threads;
    run(&mut small_fs(recycling), &cfg).unwrap()
}

#[test]
fn every_workload_runs_and_repeats_exactly() {
    for w in FsWorkload::ALL {
        let a = bench(w, Recycling::ZnsPlus, w.default_threads());
        assert!(a.write_bytes >= 24 << 20, "{}: {}", w.name(), a.write_bytes);
        assert!(a.ops > 0 && a.elapsed_ns > 0);
        let b = bench(w, Recycling::ZnsPlus, w.default_threads());
        assert_eq!((a.ops, a.elapsed_ns, a.traffic), (b.ops, b.elapsed_ns, b.traffic), "{}", w.name());
    }
}

#[test]
fn oltp_connections_overlap_their_page_reads() {
    // A transaction's page accesses are separate steps, so while one
    // connection waits for a read the others issue theirs.
    let one = bench(FsWorkload::YcsbA, Recycling::Zns, 1);
    let eight = bench(FsWorkload::YcsbA, Recycling::Zns, 8);
    let rate = |r: &FsBenchResult| r.ops as f64 / r.elapsed_ns as f64;
    // Four dies and compaction bound the gain; serialized transactions would give none.
    assert!(rate(&eight) > 1.5 * rate(&one), "1: {:.3e}/ns, 8: {:.3e}/ns", rate(&one), rate(&eight));
}

#[test]
fn the_buffer_pool_keeps_hot_reads_off_the_file_system() {
    let r = bench(FsWorkload::YcsbA, Recycling::Zns, 8);
    // Every YCSB-a transaction uses one page: without the pool each would be read from the file.
    assert!(r.read_bytes / (16 << 10) < r.ops * 3 / 4, "{} page reads for {} transactions", r.read_bytes >> 14, r.ops);
}

#[test]
fn settings_out_of_range_are_refused() {
    let mut cfg = FsBenchConfig::new(FsWorkload::Varmail);
    cfg.utilization = 0.99;
    assert!(run(&mut small_fs(Recycling::Zns), &cfg).unwrap_err().to_string().contains("utilization"));
    cfg.utilization = 0.5;
    cfg.threads = 0;
    assert!(run(&mut small_fs(Recycling::Zns), &cfg).unwrap_err().to_string().contains("threads"));
}

/// `--write 16777215t` ran (nearly) forever; the bound is 16 times the file
/// system (46 segments of 8 MiB here).
#[test]
fn writing_more_than_sixteen_file_systems_is_refused() {
    let mut cfg = FsBenchConfig::new(FsWorkload::Varmail);
    cfg.write_bytes = 16_777_215 << 40;
    let e = run(&mut small_fs(Recycling::Zns), &cfg).unwrap_err().to_string();
    assert!(e.contains("more than 16 times the file system's 385875968 bytes"), "{e}");
    cfg.write_bytes = 16 * 385_875_968 + 1;
    assert!(run(&mut small_fs(Recycling::Zns), &cfg).unwrap_err().to_string().contains("16 times"));
}

#[test]
fn measurement_starts_once_segments_are_being_reclaimed() {
    // At 50% utilization the first 24 MiB written fit in free segments; the
    // warm-up runs past them, so the measured part reclaims from its start.
    let mut cfg = FsBenchConfig::new(FsWorkload::Fileserver);
    cfg.utilization = 0.5;
    cfg.write_bytes = 24 << 20;
    let r = run(&mut small_fs(Recycling::Zns), &cfg).unwrap();
    assert!(r.sc_segments > 0, "{} segments compacted", r.sc_segments);
    assert!(r.waf() > 1.0, "{}", r.waf());
}
