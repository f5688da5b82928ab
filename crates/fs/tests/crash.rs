//! Power failure at random points between device commands (in compactions,
//! threaded logging and checkpoints too), then mount, fsck, and no fsynced
//! data lost. ZONELAB_CRASH_POINTS sets the points per variant (default 1000).

use std::collections::HashMap;
use zonelab_device::Device;
use zonelab_fs::testing::tiny_device;
use zonelab_fs::{FileKind, Fs, FsConfig, Recycling, ROOT_INO};
use zonelab_sim::SimRng;

const FILES: u64 = 14;
const OPS: usize = 400;

fn config(recycling: Recycling) -> FsConfig {
    let mut cfg = FsConfig::new(recycling);
    cfg.cache_pages = 48;
    cfg.fg_free_segments = 4;
    cfg.bg_free_segments = 6;
    cfg.preinvalid_blocks_max = 96;
    cfg.request_blocks_max = 16;
    cfg
}

/// What must survive: per file name, the tags as of its last fsync or sync.
#[derive(Default)]
struct Model {
    durable: HashMap<String, Vec<u64>>,
}

/// Runs the seeded workload until it ends or the power fails; returns the
/// model of durable state and the time reached.
fn workload(fs: &mut Fs, seed: u64) -> (Model, u64) {
    let mut rng = SimRng::new(seed);
    let mut model = Model::default();
    let mut t = 1_000;
    let mut tag = 1;
    let (_, t0) = fs.create(t, ROOT_INO, "d", FileKind::Dir).unwrap();
    t = fs.sync(t0);
    let dir = fs.lookup(ROOT_INO, "d").unwrap();
    let place = |i: u64| if i.is_multiple_of(2) { (ROOT_INO, format!("f{i}")) } else { (dir, format!("f{i}")) };
    for _ in 0..OPS {
        if fs.crashed() {
            break;
        }
        let (parent, name) = place(rng.below(FILES));
        let key = format!("{parent}/{name}");
        let ino = match fs.lookup(parent, &name) {
            Some(ino) => ino,
            None => {
                let (ino, done) = fs.create(t, parent, &name, FileKind::File).unwrap();
                t = done;
                ino
            }
        };
        match rng.below(10) {
            0..=5 => {
                let size = fs.size_blocks(ino).unwrap();
                let start = rng.below(size + 8).min(72);
                let n = 1 + rng.below(16);
                tag += 1;
                t = fs.write(t, ino, start, n, tag).unwrap();
            }
            6 | 7 => {
                t = fs.fsync(t, ino).unwrap();
                if !fs.crashed() {
                    model.durable.insert(key, fs.file_tags(ino).unwrap().to_vec());
                }
            }
            8 => {
                t = fs.unlink(t, parent, &name).unwrap();
                model.durable.remove(&key);
            }
            _ => {
                let sync = rng.chance(0.5);
                t = if sync { fs.sync(t) } else { fs.idle(t, t + 50_000_000) };
                if sync && !fs.crashed() {
                    for (p, n) in (0..FILES).map(place) {
                        if let Some(i) = fs.lookup(p, &n) {
                            model.durable.insert(format!("{p}/{n}"), fs.file_tags(i).unwrap().to_vec());
                        }
                    }
                }
            }
        }
        t += 20_000;
    }
    (model, t)
}

fn fresh(recycling: Recycling) -> Fs {
    Fs::mkfs(Device::new(tiny_device(24)).unwrap(), config(recycling)).unwrap()
}

/// Every durable file exists with at least its durable blocks, each as new or newer.
fn check_durable(fs: &Fs, model: &Model, dir: u32) -> Result<(), String> {
    for (key, want) in &model.durable {
        let (p, name) = key.split_once('/').unwrap();
        let parent = if p.parse::<u32>().unwrap() == ROOT_INO { ROOT_INO } else { dir };
        let ino = fs.lookup(parent, name).ok_or(format!("{key} lost"))?;
        let got = fs.file_tags(ino).unwrap();
        if got.len() < want.len() {
            return Err(format!("{key}: {} blocks, {} were fsynced", got.len(), want.len()));
        }
        if let Some(i) = (0..want.len()).find(|&i| got[i] < want[i]) {
            return Err(format!("{key} block {i}: tag {} older than fsynced {}", got[i], want[i]));
        }
    }
    Ok(())
}

fn crash_points(recycling: Recycling) {
    let points: u64 = std::env::var("ZONELAB_CRASH_POINTS").ok().and_then(|v| v.parse().ok()).unwrap_or(1000);
    let seed = 6;
    let mut full = fresh(recycling);
    let start = full.device_commands();
    let (_, t) = workload(&mut full, seed);
    let total = full.device_commands() - start;
    full.fsck(t).unwrap();
    eprintln!(
        "{}: {} compactions, {} TL segments, {} checkpoints, utilization {:.2}",
        recycling.name(),
        full.stats.compactions.len(),
        full.stats.tl_segments,
        full.stats.checkpoints,
        full.utilization()
    );
    let spans: Vec<(u64, u64)> = full.stats.compactions.iter().map(|c| (c.first_command, c.end_command)).collect();
    assert!(!spans.is_empty(), "{}: the workload must compact", recycling.name());
    if recycling == Recycling::ZnsPlus {
        assert!(full.stats.tl_segments > 0, "the workload must use threaded logging");
    }
    let mut rng = SimRng::new(99);
    let (mut in_compaction, mut in_tl) = (0, 0);
    for _ in 0..points {
        let crash = 1 + rng.below(total);
        let mut fs = fresh(recycling);
        fs.crash_after(crash);
        let (model, _) = workload(&mut fs, seed);
        assert!(fs.crashed());
        let at = start + crash;
        in_compaction += u64::from(spans.iter().any(|&(a, b)| a < at && at < b));
        let zones = fs.device().layout().zones;
        in_tl += u64::from((0..zones).any(|z| fs.device().is_tl_opened(z)));
        let cfg = fs.config().clone();
        let now = fs.last_submit_ns();
        let (mut fs, t) = Fs::mount(fs.into_device(), cfg, now)
            .unwrap_or_else(|e| panic!("{} crash after {crash}: mount: {e}", recycling.name()));
        fs.fsck(t).unwrap_or_else(|e| panic!("{} crash after {crash}: fsck: {e}", recycling.name()));
        let dir = fs.lookup(ROOT_INO, "d").unwrap_or(0);
        check_durable(&fs, &model, dir).unwrap_or_else(|e| panic!("{} crash after {crash}: {e}", recycling.name()));
    }
    eprintln!(
        "{}: {points} crash points over {total} commands, {in_compaction} inside a compaction, {in_tl} with a TL_opened zone",
        recycling.name()
    );
    assert!(points < 100 || in_compaction > 0, "some crashes must hit a compaction");
}

#[test]
fn crash_points_zns() {
    crash_points(Recycling::Zns);
}
#[test]
fn crash_points_izc_h() {
    crash_points(Recycling::IzcH);
}
#[test]
fn crash_points_izc_d() {
    crash_points(Recycling::IzcD);
}
#[test]
fn crash_points_znsplus() {
    crash_points(Recycling::ZnsPlus);
}
