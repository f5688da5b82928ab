//! End-to-end tests of the `zonelab` binary.

mod common;
use common::zonelab;

use std::io::Write;
use std::process::{Command, Stdio};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Each command line exits with status 2 and says the paired words on stderr.
fn assert_each_exits_2_saying(cases: &[(&[&str], &str)]) {
    for (args, needle) in cases {
        let out = zonelab(args, "");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains(needle), "{args:?}: {}", text(&out.stderr));
    }
}

const TRACE: &str = concat!(
    "{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"pattern\":9}\n",
    "{\"op\":\"append\",\"zslba\":0,\"nlb\":4,\"async\":true}\n",
    "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
    "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":0}\n",
    "{\"op\":\"report_zones\",\"slba\":0,\"filter\":\"full\",\"max\":2,\"partial\":false}\n",
    "{\"op\":\"zone_mgmt\",\"action\":\"reset\",\"select_all\":true}\n",
    "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
);

#[test]
fn exec_runs_a_trace_with_the_device_options() {
    let out = zonelab(
        &["exec", "--zones", "8", "--zone-size", "1m", "--zone-capacity", "512k", "--max-open", "2", "--data", "-"],
        TRACE,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<serde_json::Value> = text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 7);
    assert_eq!(lines[1]["lba"], 8);
    assert_eq!(lines[2]["pattern"], 9);
    assert_eq!(lines[4]["nr_zones"], 1);
    assert_eq!(lines[4]["zones"][0]["wp"], 128, "512 KiB capacity = 128 LBAs");
    assert_eq!(lines[6]["pattern"], 0, "reset zones read as zeros");
}

#[test]
fn same_trace_gives_byte_identical_output() {
    for preset in ["zn540", "tlc", "mlc", "znand"] {
        let a = zonelab(&["exec", "--device", preset], TRACE);
        let b = zonelab(&["exec", "--device", preset], TRACE);
        assert!(a.status.success(), "{preset}: {}", text(&a.stderr));
        assert_eq!(a.stdout, b.stdout, "{preset}");
    }
}

#[test]
fn malformed_trace_is_located_and_exits_2() {
    let trace = "{\"op\":\"identify\"}\n{\"op\":\"write\",\"slba\":0,\"nlb\":\"eight\"}\n{\"op\":\"identify\"}\n";
    let out = zonelab(&["exec"], trace);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout).lines().count(), 1, "results of the lines before the bad one");
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "one message per error: {err}");
    assert!(err.starts_with("zonelab: stdin: line 2: ") && err.contains("\"nlb\""), "{err}");
}

/// A program drives the device through a pipe: each answer arrives before
/// stdin closes (a timeout turns a hang into a failure).
#[test]
fn exec_answers_each_command_before_stdin_closes() {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_zonelab"))
        .arg("exec")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut stdin = child.stdin.take().unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if lines_tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let timeout = std::time::Duration::from_secs(20);
    for (command, expected) in [
        ("{\"op\":\"write\",\"slba\":0,\"nlb\":8,\"id\":1}\n", "\"id\":1"),
        ("{\"op\":\"identify\",\"id\":2}\n", "\"id\":2"),
    ] {
        stdin.write_all(command.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let answer = lines.recv_timeout(timeout);
        if answer.is_err() {
            let _ = child.kill();
        }
        let answer = answer.expect("an answer while stdin is still open");
        assert!(answer.contains(expected) && answer.contains("\"status\":\"success\""), "{answer}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn durations_need_a_unit_and_conflicting_device_choices_are_refused() {
    let cases: [(&[&str], &str); 4] = [
        (&["exec", "--set", "flash_timing.program_ns=2"], "flash_timing.program_ns=2: '2' has no time unit"),
        (&["exec", "--set", "flash_timing.program_ns=2"], "350us"),
        (&["device", "show", "zn540", "--device", "tlc"], "cannot be used with"),
        (&["exec", "--seed", "7"], "unexpected argument '--seed'"),
    ];
    assert_each_exits_2_saying(&cases);
    let out = zonelab(&["exec", "--set", "flash_timing.program_ns=1.5ms", "--zone-size", "64Mi"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // `device list` names every preset of the registry and says what it is.
    let listed = text(&zonelab(&["device", "list"], "").stdout);
    for name in zonelab_device::PRESET_NAMES {
        let line = listed.lines().find(|l| l.split_whitespace().next() == Some(name));
        let line = line.unwrap_or_else(|| panic!("`device list` lacks {name}:\n{listed}"));
        assert!(line.len() > name.len() + 20, "{name} has a description: {line:?}");
    }
    let help = text(&zonelab(&["run", "--help"], "").stdout);
    assert!(help.contains(&zonelab_device::PRESET_NAMES.join(", ")), "--help lists every preset:\n{help}");
    let shown = zonelab(&["device", "show", "--device", "tlc"], "");
    assert!(text(&shown.stdout).contains("name = \"tlc\""), "--device alone chooses the preset");
}

#[test]
fn bad_device_options_exit_2_with_what_to_change() {
    let cases: [(&[&str], &str); 8] = [
        (&["exec", "--device", "zn999"], "unknown device 'zn999'"),
        (&["exec", "--device", "missing.toml"], "no such device file 'missing.toml'"),
        (&["run", "--device", "no/such/dir/dev", "--name=w", "--rw=write"], "no such device file 'no/such/dir/dev'"),
        (&["exec", "--zone-size", "3m"], "power of two"),
        (&["exec", "--set", "flash.pages_per_blok=3"], "pages_per_block"),
        (&["exec", "--set", "namespace.max_open_zones"], "PATH=VALUE"),
        (&["exec", "--max-open", "20", "--max-active", "10"], "MOR must be <= MAR"),
        (&["exec", "--zone-capacity", "3g"], "capacity must be at most the zone size"),
    ];
    assert_each_exits_2_saying(&cases);
}

#[test]
fn bad_capacities_exit_2_naming_the_option_and_what_is_valid() {
    let cases: [(&[&str], &str); 6] = [
        (
            &["device", "show", "sn640", "--set", "conventional.gc_free_blocks_target=60", "--capacity", "2g"],
            "use at least 483183820800 bytes (450 GiB)",
        ),
        (&["exec", "--device", "sn640", "--capacity", "1m"], "sn640 holds at least one zone, 2147483648 bytes"),
        (&["exec", "--capacity", "0"], "--capacity 0 (0 bytes): zn540 holds at least one zone"),
        (&["exec", "--capacity", "16x"], "'16x' has an unknown size suffix"),
        (&["exec", "--capacity", "8g", "--zones", "4"], "both set the namespace's size"),
        (
            &[
                "run",
                "--device",
                "sn640",
                "--set",
                "conventional.gc_free_blocks_target=60",
                "--capacity",
                "2g",
                "--name=w",
                "--rw=randwrite",
            ],
            "would not keep its over-provisioning",
        ),
    ];
    assert_each_exits_2_saying(&cases);
}

/// `--capacity` on every command that takes a device, `run`'s job options included: the drive `exec` answers for
/// is the scaled one.
#[test]
fn capacity_shrinks_the_drive_every_command_sees() {
    let out = zonelab(&["exec", "--device", "sn640", "--capacity", "64g"], "{\"op\":\"identify\"}\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains(&format!("\"nsze\":{}", (64u64 << 30) / 4096)), "{}", text(&out.stdout));
    let args = ["run", "--device", "sn640", "--capacity", "64g", "--name=w", "--rw=randwrite", "--bs=128k"];
    let out = zonelab(&[&args[..], &["--size=1g", "--output-format=json"]].concat(), "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // A conventional device's report carries its FTL's counters: 8192 host writes of 128 KiB, no GC yet.
    let report: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let ftl = &report["zonelab"]["namespaces"][0]["ftl"];
    assert_eq!((ftl["write_amplification"].as_f64(), ftl["gc_units"].as_u64()), (Some(1.0), Some(0)), "{ftl}");
    let zoned = zonelab(&["run", "--name=w", "--rw=write", "--bs=128k", "--size=1m", "--output-format=json"], "");
    let report: serde_json::Value = serde_json::from_str(&text(&zoned.stdout)).unwrap();
    assert!(report.get("zonelab").is_none(), "a zoned device's report stays fio's");
    let help = text(&zonelab(&["exec", "--help"], "").stdout);
    assert!(help.contains("--capacity <SIZE>"), "{help}");
}

#[test]
fn device_show_prints_a_loadable_toml() {
    let out = zonelab(&["device", "show", "zn540", "--zones", "3688"], "");
    assert!(out.status.success());
    let toml_text = text(&out.stdout);
    assert!(toml_text.contains("zones = 3688"));
    let dir = std::env::temp_dir().join(format!("zonelab-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("dev.toml");
    std::fs::write(&path, &toml_text).unwrap();
    let out = zonelab(&["exec", "--device", path.to_str().unwrap()], "{\"op\":\"identify\"}\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"nr_zones\":3688"));
    std::fs::write(&path, toml_text.replace("page_bytes = 16384", "page_bytes = 16385")).unwrap();
    let out = zonelab(&["exec", "--device", path.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("dev.toml") && text(&out.stderr).contains("page_bytes"),
        "{}",
        text(&out.stderr)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn demo_runs() {
    let out = zonelab(&["demo"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("\"state\":\"full\""));
}

fn temp_path(name: &str) -> std::path::PathBuf {
    // This process's directory, emptied once: a test process that died
    // earlier with the same id may have left its files behind, and zonelab
    // refuses to write over a report it did not create.
    static DIR: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("zonelab-cli-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    });
    dir.join(name)
}

/// Seed 001's Listing 8 command line, as printed (with a shorter runtime).
const PAPER_ARGS: &[&str] = &[
    "run",
    "--name=nvme2n2_none_4Ki_numjobs-4",
    "--output-format=json",
    "--filename=/dev/nvme2n2",
    "--direct=1",
    "--size=3z",
    "--offset_increment=3z",
    "--ioengine=psync",
    "--zonemode=zbd",
    "--rw=write",
    "--bs=4Ki",
    "--runtime=20ms",
    "--numa_cpu_nodes=0",
    "--ramp_time=5ms",
    "--group_reporting",
    "--numjobs=4",
    "--percentile_list=50:95",
    "--zones",
    "16",
];

#[test]
fn run_takes_a_papers_fio_command_line_and_prints_fio_json() {
    let out = zonelab(PAPER_ARGS, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("fio json");
    let job = &report["jobs"][0];
    assert_eq!(job["jobname"], "nvme2n2_none_4Ki_numjobs-4");
    assert_eq!(job["job options"]["numa_cpu_nodes"], "0");
    let write = &job["write"];
    assert!(write["total_ios"].as_u64().unwrap() > 1000);
    assert!(write["clat_ns"]["percentile"]["95.000000"].as_u64().unwrap() > 0);
    assert_eq!(report["jobs"].as_array().unwrap().len(), 1, "group_reporting folds the four threads");
    let again = zonelab(PAPER_ARGS, "");
    assert_eq!(out.stdout, again.stdout, "the same job and seed print the same bytes");
}

#[test]
fn json_plus_loads_in_python_and_in_fios_clat2csv() {
    let report = temp_path("plus.json");
    let args = [
        "run",
        "--name=a",
        "--rw=randread",
        "--bs=4k",
        "--iodepth=8",
        "--ioengine=io_uring",
        "--zonemode=zbd",
        "--direct=1",
        "--read_beyond_wp=1",
        "--runtime=5ms",
        "--time_based",
        "--zones",
        "8",
        "--output-format=json+",
        "--output",
        report.to_str().unwrap(),
    ];
    let out = zonelab(&args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let python = Command::new("python3")
        .args(["-c", "import json,sys; d=json.load(open(sys.argv[1])); print(sum(d['jobs'][0]['read']['clat_ns']['bins'].values()))"])
        .arg(&report)
        .output();
    match python {
        Ok(p) if p.status.success() => assert!(text(&p.stdout).trim().parse::<u64>().unwrap() > 0),
        Ok(p) => panic!("python could not load the report: {}", text(&p.stderr)),
        Err(_) => eprintln!("python3 missing: skipped (scripts/test installs it)"),
    }
    let csv = temp_path("plus.csv");
    let clat2csv = Command::new("fio_jsonplus_clat2csv").arg(&report).arg(&csv).output();
    let Ok(converted) = clat2csv else {
        assert!(std::env::var_os("ZONELAB_REQUIRE_FIO").is_none(), "fio_jsonplus_clat2csv is required");
        eprintln!("fio_jsonplus_clat2csv missing: skipped (scripts/test installs Debian's fio)");
        return;
    };
    assert!(converted.status.success(), "{}", text(&converted.stderr));
    let validated = Command::new("fio_jsonplus_clat2csv").arg("--validate").arg(&report).arg(&csv).output().unwrap();
    assert!(validated.status.success() && text(&validated.stdout).contains("validated"), "{}", text(&validated.stdout));
}

#[test]
fn malformed_job_files_are_located_errors_with_status_2() {
    let job = temp_path("bad.fio");
    std::fs::write(&job, "[global]\nrw=write\n\n[a]\nbs=4k\niodepth=zz\n").unwrap();
    let out = zonelab(&["run", job.to_str().unwrap()], "");
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("bad.fio:6") && err.contains("iodepth"), "{err}");
    let unknown = zonelab(&["run", "--name=a", "--rw=write", "--frobnicate=1"], "");
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("frobnicate"), "{}", text(&unknown.stderr));
    let missing = zonelab(&["run", "/nonexistent/job.fio"], "");
    assert_eq!(missing.status.code(), Some(2));
    let format = zonelab(&["run", "--name=a", "--output-format=xml"], "");
    assert_eq!(format.status.code(), Some(2));
}

#[test]
fn every_example_job_file_runs() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/fio");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        // Shorter runs than the papers' 30 s; everything else as printed.
        let body = std::fs::read_to_string(&path).unwrap();
        let short = body.replace("runtime=30", "runtime=10ms").replace("ramp_time=10", "ramp_time=2ms");
        let short = short.replace("runtime=10\n", "runtime=10ms\n").replace("runtime=5\n", "runtime=10ms\n");
        let copy = temp_path(path.file_name().unwrap().to_str().unwrap());
        std::fs::write(&copy, short).unwrap();
        let mut args = vec!["run", copy.to_str().unwrap(), "--output-format=json"];
        args.extend(common::example_device_args(&body));
        let out = zonelab(&args, "");
        assert!(out.status.success(), "{}: {}", path.display(), text(&out.stderr));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for job in report["jobs"].as_array().unwrap() {
            assert_eq!(job["error"], 0, "{}: {}", path.display(), job["jobname"]);
        }
    }
}

#[test]
fn reproduce_characterization_quick_writes_data_plots_jobs_and_summary() {
    let dir = std::env::temp_dir().join(format!("zonelab-char-{}", std::process::id()));
    let out = zonelab(&["reproduce", "characterization", "--quick", "--out", dir.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("| obs10-reset-finish | Obs 10 | reset, full zone |"), "{table}");
    assert!(table.contains("findings reproduced"), "{table}");
    for name in ["obs01-04-qd1", "obs10-reset-finish", "s003-finish-interference"] {
        let csv = std::fs::read_to_string(dir.join(format!("{name}.csv"))).unwrap();
        assert!(csv.lines().count() > 2, "{name}: {csv}");
        let svg = std::fs::read_to_string(dir.join(format!("{name}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{name}");
        let png = std::fs::read(dir.join(format!("{name}.png"))).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{name}");
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert!(summary.as_array().unwrap().len() >= 40);
    assert!(dir.join("jobs/finish-interference.fio").exists());
    // The same --out again: refused, so that two runs' files never mix; --force replaces the first run's.
    let only_obs10 = ["reproduce", "characterization", "--quick", "--only", "obs10", "--out", dir.to_str().unwrap()];
    let refused = zonelab(&only_obs10, "");
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused.stderr).contains("--force"), "{}", text(&refused.stderr));
    assert!(dir.join("obs01-04-qd1.csv").exists(), "a refused run leaves the earlier results alone");
    let again = zonelab(&[&only_obs10[..], &["--force"]].concat(), "");
    assert!(again.status.success(), "{}", text(&again.stderr));
    assert!(dir.join("obs10-reset-finish.csv").exists());
    assert!(!dir.join("obs01-04-qd1.csv").exists(), "no file of the earlier run is left beside the new one");
    let bad = zonelab(&["reproduce", "characterization", "--only", "nope", "--out", dir.to_str().unwrap()], "");
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad.stderr));
    std::fs::remove_dir_all(&dir).ok();
}

/// These never reach ublk, so they behave the same on any machine.
#[test]
fn serve_refuses_bad_input_with_exit_2_before_touching_ublk() {
    let cases: [(&[&str], &str); 4] = [
        (&["serve"], "add --ublk"),
        (&["serve", "--ublk", "--pace", "fast"], "possible values: realtime, asap"),
        (&["serve", "--ublk", "--zone-size", "3m"], "power of two"),
        (&["serve", "--ublk", "--device", "zn999"], "unknown device 'zn999'"),
    ];
    assert_each_exits_2_saying(&cases);
}

/// Where the ublk driver is absent (this project's machines: no ublk_drv), serve says why and exits 2.
#[test]
fn serve_without_ublk_says_why() {
    if std::path::Path::new("/dev/ublk-control").exists() {
        return; // a machine with ublk would really serve: covered by the VM suite (scripts/vm-test)
    }
    let out = zonelab(&["serve", "--ublk", "--zones", "4", "--zone-size", "1m"], "");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("ublk"), "{}", text(&out.stderr));
}

#[test]
fn completions_and_man_page_come_from_the_parser() {
    for shell in ["bash", "zsh", "fish"] {
        let out = zonelab(&["completions", shell], "");
        assert!(out.status.success(), "{shell}: {}", text(&out.stderr));
        let script = text(&out.stdout);
        // Subcommands, and the closed value sets of `run` and `fs-bench`.
        for word in ["fs-bench", "output-format", "json+", "mq-deadline", "ycsb-a"] {
            assert!(script.contains(word), "{shell} completion lacks {word}");
        }
    }
    assert_eq!(zonelab(&["completions", "tcsh"], "").status.code(), Some(2));
    let man = zonelab(&["man"], "");
    assert!(man.status.success() && text(&man.stdout).contains(".TH zonelab 1"), "{}", text(&man.stderr));
    let dir = temp_path("man");
    let out = zonelab(&["man", "--out", dir.to_str().unwrap()], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let run_page = std::fs::read_to_string(dir.join("zonelab-run.1")).expect("a page per subcommand");
    assert!(run_page.contains("zinc\\-epoch"), "run's own options are in its page");
}

#[test]
fn closed_value_sets_are_listed_and_typos_get_a_suggestion() {
    let help = text(&zonelab(&["fs-bench", "--help"], "").stdout);
    assert!(help.contains("[possible values: fileserver, varmail, tpcc, ycsb-a, ycsb-f]"), "{help}");
    let cases: [(&[&str], &str); 3] = [
        (&["run", "--scheduler", "zync", "--name=a"], "a similar value exists: 'zinc'"),
        (&["run", "--output-format=jsno", "--name=a"], "a similar value exists: 'json'"),
        (&["exec", "--lba-bytes", "1024"], "[possible values: 512, 4096]"),
    ];
    assert_each_exits_2_saying(&cases);
}

/// Progress bars draw only on a terminal: a piped stderr gets plain step lines.
#[test]
fn progress_is_plain_lines_when_stderr_is_not_a_terminal() {
    let out = zonelab(&["fs-bench", "--fs-size", "768m", "--write", "4m", "--utilization", "0.8"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("zonelab: measured") && !err.contains("ETA") && !err.contains('\u{1b}'), "{err}");
}

/// A device node given as a file (`/dev/zero`: endless, a disk: huge) was
/// read whole; now every file input says what it is and exits 2 at once.
#[cfg(unix)]
#[test]
fn device_nodes_as_input_files_exit_2() {
    assert_each_exits_2_saying(&[
        (&["exec", "--device", "/dev/zero"], "/dev/zero is a device node, not a file"),
        (&["device", "show", "/dev/zero"], "/dev/zero is a device node, not a file"),
        (&["exec", "/dev/zero"], "/dev/zero is a device node, not a file"),
        (&["run", "/dev/zero"], "job file: /dev/zero is a device node, not a file"),
        (&["exec", "/"], "/ is a directory, not a file"),
    ]);
}

/// A configuration larger than 16 MiB is refused before it is parsed.
#[test]
fn oversized_device_file_exits_2() {
    let path = std::env::temp_dir().join(format!("zonelab-cli-big-{}.toml", std::process::id()));
    std::fs::write(&path, vec![b'#'; (16 << 20) + 1]).unwrap();
    assert_each_exits_2_saying(&[(&["exec", "--device", path.to_str().unwrap()], "is larger than 16777216 bytes")]);
    std::fs::remove_file(path).unwrap();
}

/// `exec --backing`: a second run sees the first run's data and zone states, the clock goes on from the load,
/// a trace that fails leaves the image as it was, and an image of another geometry is refused.
#[test]
fn exec_backing_keeps_data_and_zone_states_between_runs() {
    let dir = std::env::temp_dir().join(format!("zonelab-exec-backing-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let img = dir.join("dev.img");
    let img = img.to_str().unwrap();
    let geometry = ["--zones", "4", "--zone-size", "1m", "--zone-capacity", "512k", "--conventional-zones", "1"];
    let run = |trace: &str| {
        let mut args = vec!["exec", "--backing", img];
        args.extend(geometry);
        zonelab(&args, trace)
    };
    let first = run(concat!(
        "{\"op\":\"write\",\"slba\":3,\"nlb\":2,\"pattern\":5}\n",
        "{\"op\":\"write\",\"slba\":256,\"nlb\":8,\"pattern\":9}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"close\",\"slba\":256}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"open\",\"slba\":512}\n",
    ));
    assert!(first.status.success(), "{}", text(&first.stderr));
    let read_back = concat!(
        "{\"op\":\"read\",\"slba\":3,\"nlb\":2}\n",
        "{\"op\":\"read\",\"slba\":256,\"nlb\":8}\n",
        "{\"op\":\"report_zones\",\"slba\":256,\"max\":2}\n",
    );
    let second = run(read_back);
    assert!(second.status.success(), "{}", text(&second.stderr));
    let lines: Vec<serde_json::Value> =
        text(&second.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines[0]["pattern"], 5, "conventional data survives");
    assert_eq!(lines[1]["pattern"], 9, "zone data survives");
    assert!(lines[0]["submit_ns"].as_u64().unwrap() > 0, "the clock starts after the load's replay");
    let zones = &lines[2]["zones"];
    assert_eq!((zones[0]["state"].as_str(), zones[0]["wp"].as_u64()), (Some("closed"), Some(264)));
    assert_eq!(zones[1]["state"], "explicitly_opened");
    // A malformed line stops the trace before anything is saved: the reset never reaches the image.
    let failed = run("{\"op\":\"zone_mgmt\",\"action\":\"reset\",\"select_all\":true}\n{\"op\":\"nope\"}\n");
    assert_eq!(failed.status.code(), Some(2));
    let again = run(read_back);
    assert_eq!(text(&again.stdout), text(&second.stdout), "the failed trace changed nothing");
    let other = zonelab(&["exec", "--backing", img, "--zones", "8"], "");
    assert_eq!(other.status.code(), Some(2));
    assert!(text(&other.stderr).contains("another geometry"), "{}", text(&other.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Issue 19's report: `flash.pages_per_block=4294967295` (a multiple of the one-shot program unit, so valid) was
/// accepted and a run never finished. Blocks that large give zones of one block group each; a write, a finish that
/// pads the zone, a reset and a read must all complete.
#[test]
fn the_largest_block_finishes_a_write_finish_reset_read_trace() {
    let trace = concat!(
        "{\"op\":\"write\",\"slba\":0,\"nlb\":8}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"finish\",\"slba\":0}\n",
        "{\"op\":\"zone_mgmt\",\"action\":\"reset\",\"slba\":0}\n",
        "{\"op\":\"read\",\"slba\":0,\"nlb\":8}\n",
    );
    let out = zonelab(&["exec", "--set", "flash.pages_per_block=4294967295"], trace);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let statuses: Vec<String> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["success"; 4]);
}

/// A device file with two `[[namespaces]]`: exec routes each trace line by its `nsid`; commands that drive one
/// namespace refuse the device; bad namespace lists and `--namespaces` counts exit 2 saying what to change.
#[test]
fn namespaces_of_one_device_from_a_file_and_the_command_line() {
    let dir = std::env::temp_dir().join(format!("zonelab-ns-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let show = zonelab(&["device", "show", "zn540", "--zones", "8", "--zone-size", "64m"], "");
    assert!(show.status.success());
    let file = dir.join("two.toml");
    let entries = "\n[[namespaces]]\nzones = 4\n\n[[namespaces]]\nzones = 4\nzone_size_bytes = 33554432\nzone_capacity_bytes = 33554432\n";
    std::fs::write(&file, format!("{}{entries}", text(&show.stdout))).unwrap();
    let path = file.to_str().unwrap();
    let trace = concat!(
        "{\"op\":\"append\",\"zslba\":8192,\"nlb\":1,\"nsid\":2}\n",
        "{\"op\":\"append\",\"zslba\":8192,\"nlb\":1}\n",
        "{\"op\":\"identify\",\"nsid\":3}\n",
    );
    let out = zonelab(&["exec", "--device", path], trace);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let lines: Vec<String> = text(&out.stdout).lines().map(String::from).collect();
    assert!(lines[0].contains("\"status\":\"success\"") && lines[0].contains("\"lba\":8192"), "{}", lines[0]);
    assert!(lines[1].contains("\"invalid_field\""), "namespace 1's zones are 16384 blocks: {}", lines[1]);
    assert!(lines[2].contains("\"invalid_namespace\""), "{}", lines[2]);
    let bad = std::fs::read_to_string(&file).unwrap().replace("zones = 4\nzone_size", "zones = 100000\nzone_size");
    std::fs::write(dir.join("big.toml"), bad).unwrap();
    let big = dir.join("big.toml");
    let cases: [(&[&str], &str); 3] = [
        // `run` takes the namespaces (tests/run_namespaces.rs), and splits a device of one only.
        (&["run", "--device", path, "--namespaces", "2", "--name=w", "--rw=write", "--size=1m"], "--namespaces splits"),
        (&["exec", "--device", big.to_str().unwrap()], "blocks per plane"),
        (&["serve", "--nvme-tcp", "--namespaces", "9", "--zones", "8"], "--namespaces 9"),
    ];
    assert_each_exits_2_saying(&cases);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_unknown_host_machine_names_the_known_ones_and_exits_2() {
    let job = ["--name=w", "--rw=write", "--bs=4k", "--zonemode=zbd", "--direct=1", "--size=1z", "--io_size=64k"];
    let mut args = vec!["run", "--host-machine", "mars"];
    args.extend(job);
    assert_each_exits_2_saying(&[(&args, "--host-machine 'mars': use one of seed000, seed003, zns-study")]);
    let mut args = vec!["run", "--host-machine", "seed003"];
    args.extend(job);
    let out = zonelab(&args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// `--output FILE` writes a new file and never over an existing one (fio would), nor leaves a file behind when the run
/// fails; a device such as /dev/null is written to as it is.
#[test]
fn run_output_is_a_new_file_and_an_existing_one_is_refused() {
    let dir = std::env::temp_dir().join(format!("zonelab-output-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let report = dir.join("report.json");
    // A sequential writer over `size` of a device with 1 MiB zones.
    let job = |size: &str| -> Vec<String> {
        let args = ["run", "--zones", "8", "--zone-size", "1m", "--name=w", "--rw=write", "--bs=4k", "--zonemode=zbd"];
        let more = ["--direct=1", "--output-format=json"];
        args.iter().chain(&more).map(|a| a.to_string()).chain([format!("--size={size}")]).collect()
    };
    let run = |args: Vec<String>, output: &str| {
        let args: Vec<&str> = args.iter().map(String::as_str).chain([output]).collect();
        zonelab(&args, "")
    };
    let output = format!("--output={}", report.display());
    let out = run(job("1m"), &output);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&report).unwrap();
    assert!(written.contains("\"jobs\""), "{written}");
    assert!(out.stdout.is_empty(), "the report went to the file");
    // Again: the file exists now and is kept as it is.
    let out = run(job("1m"), &output);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("it exists"), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_to_string(&report).unwrap(), written);
    // A job that fails leaves no report file.
    let failed = dir.join("failed.json");
    // The device is known only once the job runs: half a zone is refused then, after the file was opened.
    let out = run(job("512k"), &format!("--output={}", failed.display()));
    assert_ne!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!failed.exists());
    #[cfg(unix)]
    {
        let out = run(job("1m"), "--output=/dev/null");
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
