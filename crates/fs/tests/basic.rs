//! The file system end to end on small devices: remount, compaction,
//! threaded logging, fsync across a crash, and the host-cost mechanisms
//! (per-block reads of a host copy, CPUs, the GC walk).

use zonelab_device::Device;
use zonelab_fs::testing::tiny_device;
use zonelab_fs::{FileKind, Fs, FsConfig, Recycling, ROOT_INO};

fn small_fs(recycling: Recycling) -> Fs {
    let mut cfg = FsConfig::new(recycling);
    cfg.cache_pages = 64;
    cfg.fg_free_segments = 4;
    cfg.preinvalid_blocks_max = 64;
    Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg).unwrap()
}

#[test]
fn files_survive_a_clean_remount() {
    let mut fs = small_fs(Recycling::Zns);
    let (a, t) = fs.create(10, ROOT_INO, "a", FileKind::File).unwrap();
    let (d, t) = fs.create(t, ROOT_INO, "dir", FileKind::Dir).unwrap();
    let (b, t) = fs.create(t, d, "b", FileKind::File).unwrap();
    let t = fs.write(t, a, 0, 10, 7).unwrap();
    let t = fs.write(t, b, 0, 3, 8).unwrap();
    let t = fs.sync(t);
    fs.fsck(t).unwrap();
    let cfg = fs.config().clone();
    let t = fs.last_submit_ns().max(fs.crash_at_ns().unwrap_or(0));
    let (mut fs, t) = Fs::mount(fs.into_device(), cfg, t).unwrap();
    assert_eq!(fs.lookup(ROOT_INO, "a"), Some(a));
    assert_eq!(fs.lookup(d, "b"), Some(b));
    assert_eq!(fs.file_tags(a).unwrap(), &[7; 10]);
    assert_eq!(fs.file_tags(b).unwrap(), &[8; 3]);
    let r = fs.fsck(t).unwrap();
    assert_eq!((r.files, r.dirs), (2, 2));
}

/// Fills `files` files of `blocks` blocks, then overwrites every other block
/// of every file `rounds` times (fragmenting segments).
fn churn(fs: &mut Fs, files: u32, blocks: u64, rounds: u64) -> u64 {
    let mut t = 100;
    let mut inos = Vec::new();
    for f in 0..files {
        let (ino, done) = fs.create(t, ROOT_INO, &format!("f{f}"), FileKind::File).unwrap();
        t = fs.write(done, ino, 0, blocks, 1).unwrap();
        inos.push(ino);
    }
    t = fs.sync(t);
    for r in 0..rounds {
        for &ino in &inos {
            for b in (r % 2..blocks).step_by(2) {
                t = fs.write(t, ino, b, 1, 10 + r).unwrap();
            }
        }
        t = fs.sync(t);
    }
    t
}

fn remount(fs: Fs) -> (Fs, u64) {
    let cfg = fs.config().clone();
    let t = fs.last_submit_ns().max(fs.crash_at_ns().unwrap_or(0));
    Fs::mount(fs.into_device(), cfg, t).unwrap()
}

#[test]
fn compaction_frees_segments_and_keeps_every_block() {
    for recycling in [Recycling::Zns, Recycling::IzcH, Recycling::IzcD] {
        let mut fs = small_fs(recycling);
        let t = churn(&mut fs, 8, 96, 6);
        assert!(!fs.stats.compactions.is_empty(), "{}: overwrites must compact", recycling.name());
        assert_eq!(fs.stats.tl_segments, 0, "only ZNS+ uses threaded logging");
        if recycling.in_storage_copy() {
            assert!(fs.traffic().device_copied_blocks > 0, "{}: copies go to the device", recycling.name());
        } else {
            assert_eq!(fs.traffic().device_copied_blocks, 0);
            assert!(fs.traffic().relocated_blocks > 0);
        }
        fs.fsck(t).unwrap();
        let (mut fs, t) = remount(fs);
        for f in 0..8 {
            let ino = fs.lookup(ROOT_INO, &format!("f{f}")).unwrap();
            assert_eq!(fs.file_tags(ino).unwrap()[1], 15, "{}: the last round wrote the odd blocks", recycling.name());
        }
        fs.fsck(t).unwrap();
    }
}

#[test]
fn background_compaction_runs_when_idle() {
    let mut cfg = FsConfig::new(Recycling::IzcH);
    cfg.cache_pages = 64;
    cfg.fg_free_segments = 2;
    cfg.bg_free_segments = 20;
    let mut fs = Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg).unwrap();
    let mut t = churn(&mut fs, 6, 64, 2);
    // Leave every data segment partly valid.
    for f in 0..6 {
        let ino = fs.lookup(ROOT_INO, &format!("f{f}")).unwrap();
        t = fs.write(t, ino, 0, 40, 99).unwrap();
    }
    let t = fs.sync(t);
    let before = fs.free_segments();
    let t = fs.idle(t, t + 10_000_000_000);
    assert!(
        fs.stats.compactions.iter().any(|c| c.background),
        "{before} free segments, {} compactions",
        fs.stats.compactions.len()
    );
    let t = fs.sync(t);
    assert!(fs.free_segments() > before, "{} free after, {before} before", fs.free_segments());
    fs.fsck(t).unwrap();
}

#[test]
fn threaded_logging_reuses_dirty_segments() {
    let mut fs = small_fs(Recycling::ZnsPlus);
    let t = churn(&mut fs, 8, 96, 6);
    assert!(fs.stats.tl_segments > 0, "ZNS+ must reclaim by threaded logging");
    assert!(fs.device().znsplus_counters().tl_opens >= fs.stats.tl_segments);
    fs.fsck(t).unwrap();
    let (mut fs, t) = remount(fs);
    fs.fsck(t).unwrap();
}

#[test]
fn fsync_survives_a_crash_and_unsynced_writes_roll_back() {
    let mut fs = small_fs(Recycling::ZnsPlus);
    let (a, t) = fs.create(10, ROOT_INO, "a", FileKind::File).unwrap();
    let (b, t) = fs.create(t, ROOT_INO, "b", FileKind::File).unwrap();
    let t = fs.write(t, a, 0, 4, 1).unwrap();
    let t = fs.write(t, b, 0, 4, 1).unwrap();
    let t = fs.sync(t);
    let t = fs.write(t, a, 0, 2, 2).unwrap();
    let t = fs.fsync(t, a).unwrap();
    let (c, t) = fs.create(t, ROOT_INO, "c", FileKind::File).unwrap();
    let t = fs.write(t, c, 0, 3, 3).unwrap();
    let t = fs.fsync(t, c).unwrap();
    let t = fs.write(t, b, 0, 4, 9).unwrap();
    fs.crash_at(t);
    let (mut fs, t) = remount(fs);
    assert_eq!(fs.file_tags(a).unwrap(), &[2, 2, 1, 1], "fsynced blocks roll forward");
    let c = fs.lookup(ROOT_INO, "c").expect("an fsynced new file is relinked");
    assert_eq!(fs.file_tags(c).unwrap(), &[3; 3]);
    assert_eq!(fs.file_tags(b).unwrap(), &[1; 4], "unsynced writes are lost");
    fs.fsck(t).unwrap();
}

#[test]
fn host_copy_reads_go_one_request_per_block_unless_merged() {
    let mut reads = Vec::new();
    for merge in [false, true] {
        let mut cfg = FsConfig::new(Recycling::Zns);
        cfg.cache_pages = 64;
        cfg.fg_free_segments = 4;
        cfg.gc_read_merge = merge;
        let mut fs = Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg.clone()).unwrap();
        // Overwrite the first half of every file: the second halves stay valid in runs.
        let mut t = 100;
        let mut inos = Vec::new();
        for f in 0..8 {
            let (ino, done) = fs.create(t, ROOT_INO, &format!("f{f}"), FileKind::File).unwrap();
            t = fs.write(done, ino, 0, 96, 1).unwrap();
            inos.push(ino);
        }
        for r in 0..6 {
            for &ino in &inos {
                t = fs.write(t, ino, 0, 48, 2 + r).unwrap();
            }
            t = fs.sync(t);
        }
        let phases: Vec<_> = fs.stats.compactions.iter().filter(|c| c.read_ns > 0).collect();
        assert!(!phases.is_empty(), "a 64-page cache leaves victim blocks to read");
        // The compacting thread pays one request, a page and its walk per block it reads.
        let host = cfg.host.request_ns + cfg.host.page_ns + cfg.host.gc_block_ns;
        if !merge {
            assert!(phases.iter().all(|c| c.read_ns >= host), "{phases:?}");
        }
        let t = fs.traffic();
        reads.push((t.read_requests, t.read_blocks));
    }
    let ((one, blocks), (merged, merged_blocks)) = (reads[0], reads[1]);
    assert_eq!(blocks, merged_blocks, "the same blocks are read either way");
    assert!(one > merged * 2, "merged runs of neighbours cost fewer requests: {reads:?}");
}

#[test]
fn host_work_queues_on_the_configured_cpus() {
    let mut done = Vec::new();
    for cpus in [1, 2] {
        let mut cfg = FsConfig::new(Recycling::Zns);
        cfg.host.cpus = cpus;
        let mut fs = Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg).unwrap();
        let (ino, t) = fs.create(10, ROOT_INO, "a", FileKind::File).unwrap();
        let t = fs.write(t, ino, 0, 32, 1).unwrap() + 1_000_000;
        // Two processes read the cached file at the same moment.
        let first = fs.read(t, ino, 0, 32).unwrap();
        let second = fs.read(t, ino, 0, 32).unwrap();
        done.push((first - t, second - t));
    }
    let (one, two) = (done[0], done[1]);
    assert_eq!(one.0, two.0, "the first read finds idle cores either way");
    assert!(one.1 >= 2 * one.0, "one core: the second read waits for the first: {one:?}");
    assert!(two.1 < two.0 + FsConfig::new(Recycling::Zns).host.syscall_ns * 2, "two cores side by side: {two:?}");
}

#[test]
fn zero_cpus_is_refused() {
    let mut cfg = FsConfig::new(Recycling::Zns);
    cfg.host.cpus = 0;
    assert!(Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg).is_err());
}

/// A file system whose NAT (one node per block) and SIT could outgrow a
/// checkpoint zone: it used to be made, then panicked at the checkpoint that
/// needed a whole copy ("a full checkpoint must fit one zone").
#[test]
fn a_checkpoint_that_cannot_fit_its_zone_is_refused_at_mkfs() {
    let cfg = FsConfig::new(Recycling::Zns);
    let e = Fs::mkfs(Device::new(tiny_device(1200)).unwrap(), cfg.clone()).err().expect("refused");
    assert!(e.to_string().contains("1198 segments of 64 blocks are too many"), "{e}");
    assert!(e.to_string().contains("at most 921 segments (923 zones) fit"), "{e}");
    Fs::mkfs(Device::new(tiny_device(923)).unwrap(), cfg.clone()).expect("the largest that fits");
    assert!(Fs::mkfs(Device::new(tiny_device(924)).unwrap(), cfg).is_err());
}

/// Seed 002 Fig 7b: node blocks a host-copy compaction merely moves are
/// relocation, not node-write overhead, so every block a ZNS compaction moved
/// is counted as relocated (nodes included) and none as node writes.
#[test]
fn host_copied_nodes_count_as_relocation_not_node_writes() {
    let mut fs = small_fs(Recycling::Zns);
    let t = churn(&mut fs, 8, 96, 6);
    let moved: u64 = fs.stats.compactions.iter().map(|c| c.valid_blocks).sum();
    assert!(moved > 0, "overwrites must compact");
    assert_eq!(fs.traffic().relocated_blocks, moved, "ZNS moves every valid block through the host");
    fs.fsck(t).unwrap();
}

/// A small file system with a 64-page cache and host costs set by `host`, after [`churn`].
fn churned(recycling: Recycling, host: impl FnOnce(&mut zonelab_fs::HostCosts)) -> Fs {
    let mut cfg = FsConfig::new(recycling);
    cfg.cache_pages = 64;
    cfg.fg_free_segments = 4;
    host(&mut cfg.host);
    let mut fs = Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg).unwrap();
    churn(&mut fs, 8, 96, 6);
    fs
}

/// The compaction path's host work per valid block (`HostCosts::gc_block_ns`)
/// runs on the compacting thread one block after another before the blocks
/// are copied, whatever copies them: every IZC-H compaction's walk (its init
/// phase; IZC-H reads nothing) takes its valid blocks × that work longer
/// than with no such work, and the victims are the same.
#[test]
fn compaction_pays_the_gc_walk_for_every_valid_block() {
    let gc_ns = 200_000;
    let mut runs = Vec::new();
    for walk_ns in [0, gc_ns] {
        let fs = churned(Recycling::IzcH, |h| h.gc_block_ns = walk_ns);
        runs.push(fs.stats.compactions.clone());
    }
    let (free, paid) = (&runs[0], &runs[1]);
    assert!(!free.is_empty() && free.len() == paid.len(), "{} vs {}", free.len(), paid.len());
    for (a, b) in free.iter().zip(paid) {
        assert_eq!(a.valid_blocks, b.valid_blocks, "the same victims");
        assert_eq!((a.read_ns, b.read_ns), (0, 0), "IZC-H reads no victim block");
        assert!(b.init_ns >= a.init_ns + a.valid_blocks * gc_ns, "{a:?} vs {b:?}");
    }
}

/// Seed 002 Fig 3a: a host-copy compaction's reads go one after another
/// from the compacting thread, each after the host work of the one before,
/// so when that work is dear (as in a virtual machine) the reads reach the
/// chips more slowly than they serve them: the read phase lasts at least
/// one request's host work per read, whatever the flash.
#[test]
fn host_copy_read_phase_is_paced_by_the_host() {
    let request_ns = 2_000_000;
    let fs = churned(Recycling::Zns, |h| h.request_ns = request_ns);
    let reading: Vec<_> = fs.stats.compactions.iter().filter(|c| c.read_requests > 1).collect();
    assert!(!reading.is_empty(), "a 64-page cache leaves victim blocks to read");
    for c in reading {
        assert!(c.read_ns >= c.read_requests * request_ns, "{c:?}");
        // The flash (an MLC read: well under a millisecond) adds little.
        assert!(c.read_ns < (c.read_requests + 1) * request_ns + 1_000_000, "{c:?}");
    }
}

/// Seed 002 §4.1: compaction submits the moved blocks and goes on to the
/// checkpoint, whose pack waits for them, so the wait for the copies is the
/// checkpoint phase's. With free host work the write phase is only the
/// submissions (no time) and every checkpoint outlasts its copies.
#[test]
fn the_checkpoint_phase_waits_for_the_copies() {
    for recycling in [Recycling::Zns, Recycling::IzcH] {
        let fs = churned(recycling, |h| (h.request_ns, h.page_ns, h.syscall_ns, h.gc_block_ns) = (0, 0, 0, 0));
        let moving: Vec<_> = fs.stats.compactions.iter().filter(|c| c.valid_blocks > 0).collect();
        assert!(!moving.is_empty(), "{}: overwrites must compact", recycling.name());
        for c in moving {
            assert_eq!(c.write_ns, 0, "{}: {c:?}", recycling.name());
            assert!(c.checkpoint_ns > 0, "{}: {c:?}", recycling.name());
        }
    }
}
