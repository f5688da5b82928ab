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
    let t = fs.last_submit_ns();
    let (mut fs, t) = Fs::mount(fs.into_device(), cfg, t).unwrap();
    assert_eq!(fs.lookup(ROOT_INO, "a"), Some(a));
    assert_eq!(fs.lookup(d, "b"), Some(b));
    assert_eq!(fs.file_tags(a).unwrap(), &[7; 10]);
    assert_eq!(fs.file_tags(b).unwrap(), &[8; 3]);
    let r = fs.fsck(t).unwrap();
    assert_eq!((r.files, r.dirs), (2, 2));
}
