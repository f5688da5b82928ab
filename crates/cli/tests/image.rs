//! `--backing` through the binary: `exec` and `serve --nvme-tcp` refuse what
//! is not their image (exit 2, the file untouched, nothing created), `exec`
//! refuses a damaged image, and `zonelab image check` exits 0 when clean, 1
//! on damage (listing the LBAs) and 2 when there is no image to check.

mod common;
use common::zonelab;

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Output;

const GEOMETRY: [&str; 8] =
    ["--zones", "4", "--zone-size", "1m", "--zone-capacity", "512k", "--conventional-zones", "1"];

fn exec(img: &Path, trace: &str) -> Output {
    let mut args = vec!["exec", "--backing", img.to_str().unwrap()];
    args.extend(GEOMETRY);
    zonelab(&args, trace)
}

fn image_check(img: &Path) -> Output {
    zonelab(&["image", "check", img.to_str().unwrap()], "")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-cli-image-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn zones_of(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.zones", path.display()))
}

fn assert_exit(out: &Output, code: i32, needle: &str) {
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stderr}");
    assert!(stderr.contains(needle), "wanted {needle:?} in: {stderr}");
}

#[test]
fn exec_and_serve_refuse_a_foreign_file_and_leave_it_as_it_was() {
    let dir = scratch("foreign");
    let file = dir.join("photos.tar");
    let bytes: Vec<u8> = (0..5_000_000u32).map(|i| (i.wrapping_mul(31) >> 3) as u8).collect();
    std::fs::write(&file, &bytes).unwrap();
    assert_exit(&exec(&file, ""), 2, "photos.tar.zones does not");
    let serve = zonelab(&["serve", "--nvme-tcp", "--listen", "127.0.0.1:0", "--backing", file.to_str().unwrap()], "");
    assert_exit(&serve, 2, "--backing ");
    assert!(text(&serve.stderr).contains("photos.tar.zones does not"), "{}", text(&serve.stderr));
    assert_exit(&image_check(&file), 2, "photos.tar.zones does not");
    assert_eq!(std::fs::read(&file).unwrap(), bytes, "not one byte changed");
    assert!(!zones_of(&file).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn exec_refuses_a_symlink_and_devices_creating_nothing() {
    let dir = scratch("symlink");
    let target = dir.join("target.txt");
    std::fs::write(&target, "precious").unwrap();
    let link = dir.join("link.img");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    assert_exit(&exec(&link, ""), 2, "link.img: is a symbolic link");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
    assert!(!zones_of(&link).exists());
    let zero_zones = Path::new("/dev/zero.zones");
    let existed = zero_zones.exists();
    let out = exec(Path::new("/dev/zero"), "");
    if !existed && zero_zones.exists() {
        let _ = std::fs::remove_file(zero_zones);
        panic!("/dev/zero.zones was created");
    }
    assert_exit(&out, 2, "/dev/zero: is a character device");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_deleted_zone_file_is_an_error_not_an_empty_device() {
    let dir = scratch("deleted");
    let img = dir.join("dev.img");
    assert!(exec(&img, "{\"op\":\"write\",\"slba\":0,\"nlb\":1,\"pattern\":7}\n").status.success());
    std::fs::remove_file(zones_of(&img)).unwrap();
    let out = exec(&img, "{\"op\":\"read\",\"slba\":0,\"nlb\":1}\n");
    assert_exit(&out, 2, "dev.img.zones does not");
    assert!(out.stdout.is_empty(), "no read was answered: {}", text(&out.stdout));
    assert!(!zones_of(&img).exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_flipped_byte_is_found_by_image_check_and_refused_by_exec() {
    let dir = scratch("flip");
    let img = dir.join("dev.img");
    let write = "{\"op\":\"write\",\"slba\":256,\"nlb\":4,\"pattern\":9}\n";
    assert!(exec(&img, write).status.success());
    let clean = image_check(&img);
    assert_eq!(clean.status.code(), Some(0), "{}", text(&clean.stdout));
    assert!(text(&clean.stdout).contains("dev.img: clean"), "{}", text(&clean.stdout));
    let file = std::fs::OpenOptions::new().write(true).open(&img).unwrap();
    file.write_all_at(b"X", 258 * 4096 + 1000).unwrap();
    let damaged = image_check(&img);
    assert_eq!(damaged.status.code(), Some(1), "{}", text(&damaged.stderr));
    let report = text(&damaged.stdout);
    assert!(report.contains("LBA 258 (zone 1): data does not match its checksum"), "{report}");
    assert!(report.contains("1 problem found"), "{report}");
    let out = exec(&img, "{\"op\":\"read\",\"slba\":258,\"nlb\":1}\n");
    assert_exit(&out, 2, "blocks failing their checksums: 1 (the first at LBA 258)");
    assert!(out.stdout.is_empty(), "the damaged block was not served");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_round_trip_through_exec_reads_back_and_checks_clean() {
    let dir = scratch("roundtrip");
    let img = dir.join("dev.img");
    let first = exec(
        &img,
        concat!(
            "{\"op\":\"write\",\"slba\":5,\"nlb\":3,\"pattern\":4}\n",
            "{\"op\":\"write\",\"slba\":256,\"nlb\":8,\"pattern\":6}\n",
            "{\"op\":\"write_zeroes\",\"slba\":6,\"nlb\":1}\n",
            "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":256}\n",
        ),
    );
    assert!(first.status.success(), "{}", text(&first.stderr));
    assert_eq!(image_check(&img).status.code(), Some(0), "{}", text(&image_check(&img).stdout));
    let second = exec(&img, "{\"op\":\"read\",\"slba\":5,\"nlb\":1}\n{\"op\":\"read\",\"slba\":256,\"nlb\":8}\n");
    assert!(second.status.success(), "{}", text(&second.stderr));
    let lines: Vec<serde_json::Value> =
        text(&second.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!((lines[0]["pattern"].as_u64(), lines[1]["pattern"].as_u64()), (Some(4), Some(6)));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn image_check_usage_errors_exit_2() {
    let dir = scratch("usage");
    assert_exit(&image_check(&dir.join("absent.img")), 2, "no such image");
    let not_image = dir.join("junk.img");
    std::fs::write(&not_image, b"junk").unwrap();
    std::fs::write(zones_of(&not_image), b"not a header").unwrap();
    assert_exit(&image_check(&not_image), 2, "not a zonelab device image");
    assert_exit(&zonelab(&["image", "check"], ""), 2, "FILE");
    std::fs::remove_dir_all(&dir).unwrap();
}
