//! Inputs whose size asks for unbounded work: refused or announced before anything runs.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn zonelab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_zonelab")).args(args).output().expect("binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs `args`, which must exit 2 at once saying each of `needles`.
fn refused_at_once(args: &[&str], needles: &[&str]) {
    let started = Instant::now();
    let out = zonelab(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{args:?} ran");
    for needle in needles {
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// `io_size=1p` and `ramp_time=86400` ran for hours of CPU without a word: over the work cap they are refused
/// naming the option, where it was set and the cap; `--allow-long-runs` is zonelab's flag for lifting it.
#[test]
fn fio_jobs_over_the_work_cap_exit_2_naming_option_place_and_cap() {
    let zbd = ["run", "--name=a", "--rw=write", "--zonemode=zbd", "--direct=1", "--io_size=1p"];
    refused_at_once(&zbd, &["command line: option 'io_size': io_size=1p: up to 2.75e11 I/Os", "the cap is 1.80e10"]);
    let dir = std::env::temp_dir().join(format!("zonelab-bounds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("day.fio");
    let text_of_job =
        "[global]\nramp_time=86400\n\n[r]\nrw=randread\nioengine=io_uring\niodepth=32\ntime_based\nruntime=1\n";
    std::fs::write(&job, text_of_job).unwrap();
    refused_at_once(&["run", job.to_str().unwrap()], &["day.fio:2: option 'ramp_time': ramp_time=86400", "h of CPU"]);
    let small =
        zonelab(&["run", "--allow-long-runs", "--name=w", "--rw=write", "--zonemode=zbd", "--direct=1", "--size=1z"]);
    assert!(small.status.success(), "{}", text(&small.stderr));
    assert!(!text(&small.stderr).contains("of CPU"), "a small job gets no word: {}", text(&small.stderr));
    std::fs::remove_dir_all(dir).unwrap();
}

/// The report: `--set flash.pages_per_block=4294967295` took 12.6 s for 7 commands, an erase visiting every page
/// of its block for copyback chains. The same trace (a compaction's copyback, then resets) now takes milliseconds;
/// geometries whose cost still grows with a product of parameters are refused saying what to change.
#[test]
fn the_largest_block_erases_at_once_and_costly_geometries_exit_2() {
    let trace = concat!(
        "{\"op\":\"write\",\"slba\":0,\"nlb\":8}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":0}\n",
        "{\"op\":\"zone_compaction\",\"src\":[0,1,2,3],\"dst\":[524288,524289,524290,524291]}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":524288}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"reset\",\"slba\":524288}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"reset\",\"slba\":0}\n",
        "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
    );
    let path = std::env::temp_dir().join(format!("zonelab-bounds-erase-{}.jsonl", std::process::id()));
    std::fs::write(&path, trace).unwrap();
    let started = Instant::now();
    let out =
        zonelab(&["exec", "--device", "tlc", "--set", "flash.pages_per_block=4294967295", path.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches("\"status\":\"success\"").count(), 7, "{}", text(&out.stdout));
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
    std::fs::remove_file(path).unwrap();
    let sn640 = ["exec", "--device", "sn640", "--set", "write_buffer.zone_buffer_bytes=65536"];
    refused_at_once(&sn640, &["write_buffer.zone_buffer_bytes = 65536 cannot hold one program unit"]);
    let oneshot = [
        "exec",
        "--device",
        "tlc",
        "--set",
        "flash.oneshot_pages=3221225472",
        "--set",
        "flash.pages_per_block=3221225472",
    ];
    refused_at_once(&oneshot, &["lower flash.oneshot_pages"]);
}
