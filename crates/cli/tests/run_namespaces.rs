//! `zonelab run` on a device with several namespaces: jobs pick theirs by
//! `filename=`, the JSON reports a disk per namespace and the drive's
//! counters under `zonelab`, and filenames or `--nsid` that name no
//! namespace exit 2 saying what would do.

mod common;
use common::zonelab;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The zn540 with a zoned NSID 1 of 4 zones and an NVM NSID 2 of 1 GiB, in
/// a scratch directory (removed when dropped).
struct Drive {
    dir: std::path::PathBuf,
}

impl Drive {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("zonelab-run-ns-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let shown = zonelab(&["device", "show", "zn540"], "");
        assert!(shown.status.success());
        let namespaces = "\n[[namespaces]]\nzones = 4\n\n[[namespaces]]\ncommand_set = \"nvm\"\nzones = 4\n\
                          zone_size_bytes = 268435456\nzone_capacity_bytes = 268435456\nmax_open_zones = 0\n\
                          max_active_zones = 0\n";
        std::fs::write(dir.join("dev.toml"), text(&shown.stdout) + namespaces).unwrap();
        Drive { dir }
    }

    fn file(&self, name: &str, contents: &str) -> String {
        let path = self.dir.join(name);
        std::fs::write(&path, contents).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn device(&self) -> String {
        self.dir.join("dev.toml").to_string_lossy().into_owned()
    }
}

impl Drop for Drive {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const JOBS: &str = "[global]\nioengine=libaio\ndirect=1\nbs=128k\n\n\
                    [zoned]\nfilename=/dev/nvme0n1\nzonemode=zbd\nrw=write\nsize=1z\nio_size=16m\n\n\
                    [nvm]\nfilename=/dev/nvme0n2\nrw=randwrite\nio_size=16m\n";

#[test]
fn jobs_on_two_namespaces_report_a_disk_each_and_the_drives_counters() {
    let drive = Drive::new("report");
    let jobs = drive.file("jobs.fio", JOBS);
    let args = ["run", "--device", &drive.device(), &jobs, "--output-format=json"];
    let out = zonelab(&args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let disks: Vec<(&str, u64)> = json["disk_util"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["name"].as_str().unwrap(), d["write_ios"].as_u64().unwrap()))
        .collect();
    assert_eq!(disks, [("nvme0n1", 128), ("nvme0n2", 128)]);
    let namespaces = json["zonelab"]["namespaces"].as_array().unwrap();
    assert_eq!(namespaces[0]["command_set"], "zoned");
    assert_eq!(namespaces[1]["command_set"], "nvm");
    for ns in namespaces {
        assert_eq!(ns["host_write_bytes"], 16 << 20, "{ns}");
    }
    assert_eq!(namespaces[1]["ftl"]["write_amplification"], 1.0, "nothing overwritten yet");
    assert_eq!(json["zonelab"]["flash"]["programs"].as_u64().map(|p| p > 0), Some(true));
    let again = zonelab(&args, "");
    assert_eq!(again.stdout, out.stdout, "byte-identical");
    // A device of one namespace: `filename=` ignored as before (both jobs on
    // the zoned namespace, where the random writes fail), no `zonelab` key.
    let one = zonelab(&["run", "--zones", "8", &jobs, "--output-format=json"], "");
    assert_eq!(one.status.code(), Some(1), "{}", text(&one.stderr));
    let json: serde_json::Value = serde_json::from_slice(&one.stdout).unwrap();
    assert!(json.get("zonelab").is_none() && json["disk_util"].as_array().unwrap().len() == 1);
}

#[test]
fn namespaces_split_from_the_command_line_run_their_jobs() {
    let args = [
        "run",
        "--namespaces",
        "2",
        "--zones",
        "8",
        "--name=a",
        "--filename=/dev/nvme0n1",
        "--rw=write",
        "--zonemode=zbd",
        "--direct=1",
        "--size=1z",
        "--io_size=8m",
        "--name=b",
        "--rw=write",
        "--zonemode=zbd",
        "--direct=1",
        "--size=1z",
        "--io_size=4m",
        "--nsid",
        "2",
        "--output-format=json",
    ];
    let out = zonelab(&args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let written: Vec<u64> = json["zonelab"]["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["host_write_bytes"].as_u64().unwrap())
        .collect();
    assert_eq!(written, [8 << 20, 4 << 20], "the job without filename= ran on --nsid 2");
}

#[test]
fn filenames_and_nsids_that_name_no_namespace_exit_2() {
    let drive = Drive::new("errors");
    let bad = drive.file("bad.fio", "[a]\nrw=read\nsize=1m\nfilename=/dev/nvme0n3\n");
    let out = zonelab(&["run", "--device", &drive.device(), &bad], "");
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("bad.fio:4: option 'filename': '/dev/nvme0n3' is NSID 3"), "{stderr}");
    assert!(stderr.contains("/dev/nvme0n1 to /dev/nvme0n2"), "{stderr}");
    let out = zonelab(&["run", "--device", &drive.device(), "--nsid", "3", "--name=a", "--rw=read", "--size=1m"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--nsid 3: the device has NSIDs 1 to 2"), "{}", text(&out.stderr));
    let out = zonelab(&["run", "--nsid", "2", "--name=a", "--rw=read", "--size=1m"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("one namespace"), "{}", text(&out.stderr));
    let out = zonelab(&["run", "--namespaces", "0", "--name=a", "--rw=read", "--size=1m"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--namespaces 0"), "{}", text(&out.stderr));
}
