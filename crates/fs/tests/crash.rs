//! Power failure at instants of simulated time, then mount, fsck, and no
//! fsynced data lost.
//!
//! Each variant (recycling scheme × write-cache mode) runs several seeded,
//! generated workloads that compact, checkpoint and (ZNS+) use threaded
//! logging; each workload's reach is counted and asserted. Crash instants
//! are the distinct command boundaries (submissions and completions) and
//! instants inside commands (a quarter, half and three quarters of the way),
//! taken evenly across the workloads; a crash cuts the device at that
//! instant ([`zonelab_device::power`]: commands in flight torn, a volatile
//! cache loses what was not durable). A file fsynced (or synced) before the
//! instant must come back with its blocks as new or newer.
//! `ZONELAB_CRASH_LONG=1` runs 8 workloads per variant and 2,500 instants
//! of each (20,000 per variant); `ZONELAB_CRASH_LONG=all` every instant of
//! the 8 (about 70,000 per variant: hours).

use std::collections::{BTreeSet, HashMap};
use zonelab_device::{Device, WriteCache};
use zonelab_fs::testing::tiny_device;
use zonelab_fs::{FileKind, Fs, FsConfig, FsError, FsckError, Recycling, ROOT_INO};
use zonelab_sim::SimRng;

/// Crash instants per variant in the default run.
const INSTANTS_MIN: usize = 1000;
/// Crash instants per workload in the long run (`ZONELAB_CRASH_LONG=1`),
/// evenly spread over all of its instants.
const LONG_INSTANTS_PER_WORKLOAD: usize = 2500;

fn long_run() -> bool {
    std::env::var("ZONELAB_CRASH_LONG").is_ok_and(|v| v == "1" || v == "all")
}

/// `ZONELAB_CRASH_LONG=all`: every instant of every workload.
fn every_instant() -> bool {
    std::env::var("ZONELAB_CRASH_LONG").is_ok_and(|v| v == "all")
}

#[derive(Debug, Clone, Copy)]
struct Variant {
    recycling: Recycling,
    cache: WriteCache,
    broken_ordering: bool,
}

impl Variant {
    fn name(&self) -> String {
        let cache = if self.cache == WriteCache::Plp { "plp" } else { "volatile" };
        let broken = if self.broken_ordering { " broken-ordering" } else { "" };
        format!("{} {cache}{broken}", self.recycling.name())
    }

    fn config(&self) -> FsConfig {
        let mut cfg = FsConfig::new(self.recycling);
        cfg.cache_pages = 48;
        cfg.fg_free_segments = 4;
        cfg.bg_free_segments = 6;
        cfg.preinvalid_blocks_max = 96;
        cfg.request_blocks_max = 16;
        cfg.broken_ordering = self.broken_ordering;
        cfg
    }

    fn fresh(&self) -> Fs {
        let mut dev = tiny_device(24);
        dev.write_buffer.cache = self.cache;
        Fs::mkfs(Device::new(dev).unwrap(), self.config()).unwrap()
    }
}

/// The shape of one generated workload, drawn from its seed.
#[derive(Debug, Clone, Copy)]
struct Shape {
    files: u64,
    ops: usize,
    /// Blocks a write covers at most.
    write_blocks_max: u64,
    /// Highest block a write starts at.
    file_blocks_max: u64,
    /// Chance per operation of an fsync, and of a sync or idle period.
    fsync_chance: f64,
    sync_chance: f64,
}

impl Shape {
    fn of(seed: u64) -> Self {
        let mut rng = SimRng::new(seed ^ 0x5eed);
        Shape {
            files: 8 + rng.below(6),
            ops: 600 + rng.below(250) as usize,
            write_blocks_max: 12 + rng.below(8),
            file_blocks_max: 48 + rng.below(24),
            fsync_chance: 0.1 + 0.1 * rng.unit(),
            sync_chance: 0.03 + 0.04 * rng.unit(),
        }
    }
}

/// When a file's contents became durable: (completion time, key, tags);
/// `None` tags mean the file was removed for good.
type Durable = Vec<(u64, String, Option<Vec<u64>>)>;

/// Runs the workload of `seed` until it ends or the power fails; returns
/// what became durable when.
fn workload(fs: &mut Fs, seed: u64) -> Durable {
    let shape = Shape::of(seed);
    let mut rng = SimRng::new(seed);
    let mut durable = Durable::new();
    let mut t = fs.writes_done_ns().max(1_000);
    let mut tag = 1;
    let (_, t0) = fs.create(t, ROOT_INO, "d", FileKind::Dir).unwrap();
    t = fs.sync(t0);
    let dir = fs.lookup(ROOT_INO, "d").unwrap();
    let place = |i: u64| if i.is_multiple_of(2) { (ROOT_INO, format!("f{i}")) } else { (dir, format!("f{i}")) };
    for _ in 0..shape.ops {
        if fs.crashed() {
            break;
        }
        let (parent, name) = place(rng.below(shape.files));
        let key = format!("{parent}/{name}");
        let ino = match fs.lookup(parent, &name) {
            Some(ino) => ino,
            None => {
                let (ino, done) = fs.create(t, parent, &name, FileKind::File).unwrap();
                t = done;
                ino
            }
        };
        let roll = rng.unit();
        if roll < shape.fsync_chance {
            t = fs.fsync(t, ino).unwrap();
            durable.push((t, key, Some(fs.file_tags(ino).unwrap().to_vec())));
        } else if roll < shape.fsync_chance + shape.sync_chance {
            let sync = rng.chance(0.5);
            t = if sync { fs.sync(t) } else { fs.idle(t, t + 50_000_000) };
            if sync {
                for (p, n) in (0..shape.files).map(place) {
                    if let Some(i) = fs.lookup(p, &n) {
                        durable.push((t, format!("{p}/{n}"), Some(fs.file_tags(i).unwrap().to_vec())));
                    }
                }
            }
        } else if roll < shape.fsync_chance + shape.sync_chance + 0.06 {
            t = fs.unlink(t, parent, &name).unwrap();
            // Not durable until a checkpoint: the file may come back or not.
            durable.push((t, key, None));
        } else {
            let size = fs.size_blocks(ino).unwrap();
            let start = rng.below(size + 8).min(shape.file_blocks_max);
            let n = 1 + rng.below(shape.write_blocks_max);
            tag += 1;
            t = fs.write(t, ino, start, n, tag).unwrap();
        }
        t += 20_000;
    }
    durable
}

/// What must have survived a crash at `crash_ns`: per file, the tags as of
/// its last fsync or sync completed by then (an unlink since drops it).
fn model_at(durable: &Durable, crash_ns: u64) -> HashMap<String, Vec<u64>> {
    let mut model = HashMap::new();
    for (done, key, tags) in durable.iter().filter(|(done, _, _)| *done <= crash_ns) {
        let _ = done;
        match tags {
            Some(tags) => model.insert(key.clone(), tags.clone()),
            None => model.remove(key),
        };
    }
    model
}

/// What a crash left wrong: the file system does not mount or check, or an
/// fsynced file (`parent/name`) is not as fsync left it.
#[derive(Debug, thiserror::Error)]
enum CrashError {
    #[error("mount: {0}")]
    Mount(FsError),
    #[error("fsck: {0}")]
    Fsck(FsckError),
    #[error("{key} lost")]
    Lost { key: String },
    #[error("{key}: {got_blocks} blocks, {want_blocks} were fsynced")]
    Shorter { key: String, got_blocks: usize, want_blocks: usize },
    #[error("{key} block {block}: tag {got} older than fsynced {want}")]
    Older { key: String, block: usize, got: u64, want: u64 },
}

/// Every durable file exists with at least its durable blocks, each as new or newer.
fn check_durable(fs: &Fs, model: &HashMap<String, Vec<u64>>, dir: u32) -> Result<(), CrashError> {
    for (key, want) in model {
        let (p, name) = key.split_once('/').unwrap();
        let parent = if p.parse::<u32>().unwrap() == ROOT_INO { ROOT_INO } else { dir };
        let ino = fs.lookup(parent, name).ok_or_else(|| CrashError::Lost { key: key.clone() })?;
        let got = fs.file_tags(ino).unwrap();
        if got.len() < want.len() {
            return Err(CrashError::Shorter { key: key.clone(), got_blocks: got.len(), want_blocks: want.len() });
        }
        if let Some(i) = (0..want.len()).find(|&i| got[i] < want[i]) {
            return Err(CrashError::Older { key: key.clone(), block: i, got: got[i], want: want[i] });
        }
    }
    Ok(())
}

/// One workload run through without a crash: its instants and what it reached.
struct Reference {
    seed: u64,
    durable: Durable,
    instants: Vec<u64>,
}

fn reference(variant: Variant, seed: u64) -> Reference {
    let mut fs = variant.fresh();
    fs.record_commands();
    let durable = workload(&mut fs, seed);
    let end = fs.command_log().iter().map(|&(_, c)| c).max().unwrap_or(0);
    fs.fsck(end).unwrap_or_else(|e| panic!("{} seed {seed}: fsck without a crash: {e}", variant.name()));
    let stats = &fs.stats;
    eprintln!(
        "{} seed {seed}: {} commands, {} compactions, {} TL segments, {} checkpoints",
        variant.name(),
        fs.command_log().len(),
        stats.compactions.len(),
        stats.tl_segments,
        stats.checkpoints
    );
    assert!(stats.compactions.len() >= 10, "{} seed {seed}: the workload must compact", variant.name());
    assert!(stats.checkpoints >= 10, "{} seed {seed}: the workload must checkpoint", variant.name());
    if variant.recycling == Recycling::ZnsPlus {
        assert!(stats.tl_segments >= 2, "{} seed {seed}: the workload must use threaded logging", variant.name());
    }
    let mut instants = BTreeSet::new();
    // Only once mkfs is durable: before, there is no file system to mount.
    let start_ns = variant.fresh().writes_done_ns();
    for &(s, c) in fs.command_log().iter().filter(|&&(s, _)| s >= start_ns) {
        instants.insert(s);
        instants.insert(c);
        for k in 1..4 {
            instants.insert(s + (c - s) * k / 4);
        }
    }
    eprintln!("{} seed {seed}: {} distinct crash instants", variant.name(), instants.len());
    Reference { seed, durable, instants: instants.into_iter().collect() }
}

/// Crashes the workload of `r` at `crash_ns`; mount, fsck and durability.
fn crash_once(variant: Variant, r: &Reference, crash_ns: u64) -> Result<(), CrashError> {
    let mut fs = variant.fresh();
    fs.crash_at(crash_ns);
    workload(&mut fs, r.seed);
    let cfg = fs.config().clone();
    let now = fs.last_submit_ns().max(crash_ns);
    let (mut fs, t) = Fs::mount(fs.into_device(), cfg, now).map_err(CrashError::Mount)?;
    fs.fsck(t).map_err(CrashError::Fsck)?;
    let dir = fs.lookup(ROOT_INO, "d").unwrap_or(0);
    check_durable(&fs, &model_at(&r.durable, crash_ns), dir)
}

/// Evenly spaced picks of `n` of `items` (all of them if fewer).
fn spread(items: &[u64], n: usize) -> Vec<u64> {
    if items.len() <= n {
        return items.to_vec();
    }
    (0..n).map(|i| items[i * items.len() / n]).collect()
}

/// Runs the crash instants of every workload; returns the failures (at most a few).
fn crash_variant(variant: Variant) -> (usize, Vec<String>) {
    let seeds: Vec<u64> = if long_run() { (1..=8).collect() } else { (1..=3).collect() };
    let refs: Vec<Reference> = seeds.iter().map(|&s| reference(variant, s)).collect();
    let per_workload = if every_instant() {
        usize::MAX
    } else if long_run() {
        LONG_INSTANTS_PER_WORKLOAD
    } else {
        INSTANTS_MIN.div_ceil(refs.len())
    };
    let mut tried = 0;
    let mut failures = Vec::new();
    for r in &refs {
        let instants = spread(&r.instants, per_workload);
        for &crash_ns in &instants {
            tried += 1;
            if let Err(e) = crash_once(variant, r, crash_ns) {
                failures.push(format!("{} seed {} crash at {crash_ns} ns: {e}", variant.name(), r.seed));
                if variant.broken_ordering {
                    return (tried, failures);
                }
            }
        }
    }
    eprintln!("{}: {tried} distinct crash instants, {} failures", variant.name(), failures.len());
    (tried, failures)
}

fn crash_points(recycling: Recycling, cache: WriteCache) {
    let (tried, failures) = crash_variant(Variant { recycling, cache, broken_ordering: false });
    assert!(
        failures.is_empty(),
        "{} of {tried} crashes failed:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
    assert!(tried >= INSTANTS_MIN, "only {tried} crash instants");
}

#[test]
fn crash_points_zns_plp() {
    crash_points(Recycling::Zns, WriteCache::Plp);
}
#[test]
fn crash_points_zns_volatile() {
    crash_points(Recycling::Zns, WriteCache::Volatile);
}
#[test]
fn crash_points_izc_h_plp() {
    crash_points(Recycling::IzcH, WriteCache::Plp);
}
#[test]
fn crash_points_izc_h_volatile() {
    crash_points(Recycling::IzcH, WriteCache::Volatile);
}
#[test]
fn crash_points_izc_d_plp() {
    crash_points(Recycling::IzcD, WriteCache::Plp);
}
#[test]
fn crash_points_izc_d_volatile() {
    crash_points(Recycling::IzcD, WriteCache::Volatile);
}
#[test]
fn crash_points_znsplus_plp() {
    crash_points(Recycling::ZnsPlus, WriteCache::Plp);
}
#[test]
fn crash_points_znsplus_volatile() {
    crash_points(Recycling::ZnsPlus, WriteCache::Volatile);
}

/// fsync's nodes before its data and no flush at checkpoints: with a
/// volatile cache some crash loses fsynced data or corrupts the file system.
#[test]
fn broken_ordering_is_caught_with_a_volatile_cache() {
    for recycling in [Recycling::Zns, Recycling::ZnsPlus] {
        let (tried, failures) =
            crash_variant(Variant { recycling, cache: WriteCache::Volatile, broken_ordering: true });
        assert!(!failures.is_empty(), "{}: {tried} crashes and none caught the broken ordering", recycling.name());
        eprintln!("{}: broken ordering caught after {tried} crashes: {}", recycling.name(), failures[0]);
    }
}
