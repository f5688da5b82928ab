//! `zonelab profile` and `zonelab calibrate DIR`, the whole loop on a drive
//! whose parameters are hidden: the zn540 with some of them moved stands in
//! for the drive and real fio ([`standin`]), and a fit from the unmoved
//! zn540 must predict the jobs it did not see.

use std::path::{Path, PathBuf};
use zonelab_device::{preset, DeviceConfig, DeviceOptions};
use zonelab_experiments::calibrate::{self as cal, fio_results, fit, identify, profile, standin, Settings};

/// The plan's measured window (calibrate runs with the same).
const RUNTIME_MS: u64 = 100;

/// The hidden drive: the zn540 with six parameters the plan sees moved by 20-36%.
const HIDDEN: [(&str, &str); 6] = [
    ("controller.write_ns", "7020ns"),   // 5400 × 1.3
    ("controller.read_ns", "3120ns"),    // 2400 × 1.3
    ("flash_timing.read_ns", "52500ns"), // 70 µs × 0.75
    // 2.3 ms × 1.36: the dies (1.0 GB/s) set the write limit, below the program path's 1.21 GB/s.
    ("flash_timing.program_ns", "3125us"),
    ("link.lane_bytes_per_s", "788000000"), // 985 MB/s × 0.8
    ("management.reset_ns", "2015us"),      // 1.55 ms × 1.3
];

fn hidden_drive() -> DeviceConfig {
    let sets = HIDDEN.iter().map(|(p, v)| (p.to_string(), v.to_string())).collect();
    DeviceOptions { sets, ..Default::default() }.apply(preset("zn540").unwrap()).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-profile-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

/// Writes the quick plan into `dir` and runs it on `drive` as run.sh would with real fio.
fn measure(dir: &Path, drive: &DeviceConfig) -> profile::Manifest {
    let options = profile::Options {
        device_path: "/dev/ng0n2".into(),
        quick: true,
        runtime_ms: RUNTIME_MS,
        device: preset("zn540").unwrap(),
    };
    let manifest = profile::write(dir, &options, false).unwrap();
    let results = dir.join("results");
    std::fs::create_dir_all(&results).unwrap();
    for job in &manifest.jobs {
        let text = std::fs::read_to_string(dir.join("jobs").join(format!("{}.fio", job.name))).unwrap();
        let json = standin::fio_json(drive, &job.name, &text, 1).unwrap();
        std::fs::write(results.join(format!("{}.json", job.name)), json).unwrap();
    }
    let csv = standin::timed_csv(drive, &manifest, 1_500_000).unwrap();
    std::fs::write(results.join("timed.csv"), csv).unwrap();
    manifest
}

fn median_abs_error(results: &[cal::RowResult]) -> f64 {
    let mut e: Vec<f64> = results.iter().filter_map(|r| r.error.map(f64::abs)).collect();
    assert!(!e.is_empty(), "no row compared");
    e.sort_by(f64::total_cmp);
    e[e.len() / 2]
}

#[test]
fn a_fit_from_the_profile_recovers_a_hidden_drive_on_jobs_it_did_not_see() {
    let started = std::time::Instant::now();
    let dir = scratch("hidden");
    measure(&dir, &hidden_drive());
    eprintln!("measured in {:.1} s", started.elapsed().as_secs_f64());
    let converted = fio_results::read_dir(&dir).unwrap();
    assert!(converted.missing.is_empty(), "{:?}", converted.missing);
    // Held out: every third job (by figure, its job's name), and every third timed point.
    let mut figures: Vec<String> = converted.rows.iter().map(|r| r.figure.clone()).collect();
    figures.dedup();
    let held = |r: &cal::Row| {
        let k = if r.figure == "timed" {
            converted.rows.iter().filter(|x| x.figure == "timed").position(|x| x.id == r.id).unwrap()
        } else {
            figures.iter().position(|f| *f == r.figure).unwrap()
        };
        k % 3 == 2
    };
    let (test, train): (Vec<cal::Row>, Vec<cal::Row>) = converted.rows.iter().cloned().partition(|r| held(r));
    eprintln!("{} rows to fit, {} held out", train.len(), test.len());
    let settings = Settings { runtime_ms: RUNTIME_MS, threads: 2, window_ms_min: 0 };
    let base = preset("zn540").unwrap();
    let before = median_abs_error(&cal::evaluate(&base, &test, settings, &|_, _| {}));
    eprintln!("before: median |error| {:.2}% ({:.1} s)", before * 100.0, started.elapsed().as_secs_f64());
    // As `zonelab calibrate DIR` does: analyse the candidates, fit those the rows constrain.
    let request = fit::Request::new(Vec::new(), 0, 150);
    let out = identify::fit_identifiable(&base, &train, &request, settings, &|_| {}, &|_, _| {}).unwrap();
    eprintln!("fitted, {} evaluations ({:.1} s)", out.summary.evaluations, started.elapsed().as_secs_f64());
    let id = out.summary.identifiability.as_ref().unwrap();
    eprintln!("{}", identify::markdown(id));
    let unseen: Vec<&str> = id.params.iter().filter(|p| !p.identifiable).map(|p| p.path.as_str()).collect();
    assert_eq!(unseen, ["management.finish_ns"], "the quick plan's rows see every candidate but the finish's cost");
    for p in &out.summary.params {
        eprintln!("{}: {} -> {:.1}", p.path, p.start, p.fitted);
    }
    let after = median_abs_error(&cal::evaluate(&out.config, &test, settings, &|_, _| {}));
    eprintln!("after: median |error| {:.2}% ({:.1} s)", after * 100.0, started.elapsed().as_secs_f64());
    assert!(before > 0.10, "the hidden drive must differ from the zn540 on the held-out jobs: {before}");
    assert!(after <= 0.05, "held-out median |error| {after} after the fit (before: {before})");
    // What calibrate writes as fitted.toml loads back as the fitted device.
    let preset = dir.join("fitted.toml");
    std::fs::write(&preset, out.config.to_toml()).unwrap();
    assert_eq!(zonelab_device::load_device(preset.to_str().unwrap()).unwrap(), out.config);
    std::fs::remove_dir_all(&dir).ok();
}

/// The fitted preset is a whole device file: loaded with `--device`, it is the configuration the fit found.
#[test]
fn the_fitted_preset_is_a_complete_device_file() {
    let dir = scratch("preset");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fitted.toml");
    std::fs::write(&path, hidden_drive().to_toml()).unwrap();
    let loaded = zonelab_device::load_device(path.to_str().unwrap()).unwrap();
    assert_eq!(loaded, hidden_drive());
    std::fs::remove_dir_all(&dir).ok();
}

/// A measured job's section as fio 3.33 writes it (only the fields read, plus some it does not).
fn fio_output(main: &str) -> String {
    format!(
        r#"{{"fio version": "fio-3.33", "timestamp": 1700000000, "jobs": [
  {{"jobname": "prefill-reads", "groupid": 0, "error": 0, "read": {{"total_ios": 0}}}},
  {{"jobname": "main", "groupid": 1, "error": 0, {main}}}]}}"#
    )
}

const READ: &str = r#""read": {"io_bytes": 409600, "bw_bytes": 409600000, "iops": 100000.5, "total_ios": 100,
  "clat_ns": {"min": 1, "mean": 9000.0, "percentile": {"1.000000": 7000, "50.000000": 8960, "95.000000": 12032,
  "99.000000": 15104}}, "lat_ns": {"mean": 10000.0}}"#;

fn read_job() -> profile::PlanJob {
    profile::plan_jobs(true).into_iter().find(|j| j.name == "read-4k-qd1-j1").unwrap()
}

#[test]
fn fio_json_becomes_the_rows_of_its_job() {
    let values = fio_results::job_values("r.json", &fio_output(READ), &read_job()).unwrap();
    let got: Vec<(String, f64)> = values.into_iter().map(|(id, v)| (id, (v * 1e3).round() / 1e3)).collect();
    let want = [
        ("read-4k-qd1-j1:kiops", 100.001),
        ("read-4k-qd1-j1:lat_mean_us", 10.0),
        ("read-4k-qd1-j1:lat_p50_us", 8.96),
        ("read-4k-qd1-j1:lat_p95_us", 12.032),
        ("read-4k-qd1-j1:lat_p99_us", 15.104),
    ];
    assert_eq!(got, want.map(|(id, v)| (id.to_string(), v)));
}

#[test]
fn bad_fio_json_is_an_error_naming_the_file_and_what_is_wrong() {
    let job = read_job();
    let cases = [
        ("{\"jobs\": [", "r.json: line 1 column 10: not fio's JSON output"),
        ("{\"fio version\": \"fio-3.33\"}", "r.json: no 'jobs' array"),
        (
            &fio_output(READ).replace("\"main\"", "\"other\"") as &str,
            "no job 'main' in 'jobs' (found: prefill-reads, other)",
        ),
        (
            &fio_output(READ).replace("\"error\": 0, \"read\"", "\"error\": 5, \"read\""),
            "job 'main' ended with error 5",
        ),
        (&fio_output(READ).replace("\"95.000000\": 12032,", ""), "job 'main': no 'read.clat_ns.percentile.95.000000'"),
        (
            &fio_output(READ).replace("\"iops\": 100000.5", "\"iops\": \"fast\""),
            "'read.iops' is \"fast\", not a number",
        ),
        (&fio_output(READ).replace("\"total_ios\": 100", "\"total_ios\": 0"), "job 'main': no 'read' I/O completed"),
        (&fio_output(&READ.replace("\"read\"", "\"write\"")), "job 'main': no 'read' section"),
    ];
    for (text, needle) in cases {
        let err = fio_results::job_values("r.json", text, &job).unwrap_err().to_string();
        assert!(err.starts_with("r.json: ") && err.contains(needle), "{needle}: {err}");
    }
}

#[test]
fn timed_commands_are_medians_less_the_median_process_start_and_bad_lines_are_located() {
    let options = profile::Options {
        device_path: "/dev/nvme0n2".into(),
        quick: true,
        runtime_ms: 100,
        device: preset("zn540").unwrap(),
    };
    let (m, _) = profile::build(&options).unwrap();
    let lbas = m.timed[0].lbas;
    let text = format!(
        "kind,op,lbas,zone,ns\nbaseline,report,0,9,1000000\nbaseline,report,0,9,5000000\nbaseline,report,0,9,1100000\n\
         sample,finish,{lbas},9,301000000\nsample,finish,{lbas},10,303000000\n"
    );
    let values = fio_results::timed_values("t.csv", &text, &m).unwrap();
    // The median of 301 and 303 ms less the median start of 1.1 ms.
    assert_eq!(values, [(m.timed[0].row.id.clone(), 300_900.0)]);
    let cases = [
        ("kind,op\n", "t.csv:1: the header"),
        ("kind,op,lbas,zone,ns\nbaseline,report,0,9\n", "t.csv:2: 5 fields expected"),
        ("kind,op,lbas,zone,ns\nbaseline,report,0,9,1.5ms\n", "t.csv:2: 'ns' is not a whole number"),
        ("kind,op,lbas,zone,ns\nsample,open,0,9,100\n", "t.csv:2: kind must be"),
        ("kind,op,lbas,zone,ns\nsample,finish,0,9,100\n", "t.csv: no baseline lines"),
    ];
    for (text, needle) in cases {
        let err = fio_results::timed_values("t.csv", text, &m).unwrap_err().to_string();
        assert!(err.contains(needle), "{needle}: {err}");
    }
}

#[test]
fn a_profile_directory_without_results_or_with_a_bad_plan_says_so() {
    let dir = scratch("empty");
    let options = profile::Options {
        device_path: "/dev/ng1n1".into(),
        quick: true,
        runtime_ms: 100,
        device: preset("zn540").unwrap(),
    };
    profile::write(&dir, &options, false).unwrap();
    let err = fio_results::read_dir(&dir).err().unwrap().to_string();
    assert!(err.contains("no results yet"), "{err}");
    // One job's result: its rows, and the rest listed as missing.
    let job = &profile::plan_jobs(true)[0];
    let text = std::fs::read_to_string(dir.join("jobs").join(format!("{}.fio", job.name))).unwrap();
    std::fs::create_dir_all(dir.join("results")).unwrap();
    let json = standin::fio_json(&preset("zn540").unwrap(), &job.name, &text, 0).unwrap();
    std::fs::write(dir.join("results").join(format!("{}.json", job.name)), json).unwrap();
    let got = fio_results::read_dir(&dir).unwrap();
    assert_eq!(got.rows.len(), job.rows.len());
    assert_eq!(got.missing.len(), 18 + 1, "{:?}", got.missing);
    // One timed point of six: its row, and the other five listed.
    let point = &got.manifest.timed[2];
    let csv = format!("kind,op,lbas,zone,ns\nbaseline,report,0,1,2000\nsample,finish,{},1,9000\n", point.lbas);
    std::fs::write(dir.join("results/timed.csv"), csv).unwrap();
    let got = fio_results::read_dir(&dir).unwrap();
    assert_eq!(got.rows.len(), job.rows.len() + 1);
    assert_eq!(got.rows.last().unwrap().value, 7.0, "9 µs less the 2 µs start");
    assert_eq!(got.missing.len(), 18 + 5, "{:?}", got.missing);
    std::fs::write(dir.join("plan.json"), "{\"version\": 1,\n \"jobs\": 3}").unwrap();
    let err = fio_results::read_dir(&dir).err().unwrap().to_string();
    assert!(err.contains("plan.json:2:") && err.contains("not a zonelab profile plan"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_plan_is_the_same_every_time_and_every_row_maps_to_a_calibrate_run() {
    let options = profile::Options {
        device_path: "/dev/ng0n2".into(),
        quick: false,
        runtime_ms: 5000,
        device: preset("zn540").unwrap(),
    };
    let (a, files_a) = profile::build(&options).unwrap();
    let (b, files_b) = profile::build(&options).unwrap();
    assert_eq!((&a, &files_a), (&b, &files_b));
    assert_eq!(a.jobs.len(), 67);
    // Every row of the plan maps to a run of calibrate's (none is skipped).
    let rows = a.rows(|_| Some(1.0));
    let (_, planned) = cal::plan_rows(&rows);
    for (row, p) in rows.iter().zip(&planned) {
        assert!(p.is_ok(), "{}: {:?}", row.id, p.as_ref().err());
    }
    let ids: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), rows.len(), "row ids are unique");
}

#[test]
fn a_plan_that_needs_more_zones_than_the_drive_has_is_refused() {
    let small = DeviceOptions { zones: Some(100), ..Default::default() }.apply(preset("zn540").unwrap()).unwrap();
    let options = profile::Options { device_path: "/dev/ng0n2".into(), quick: true, runtime_ms: 100, device: small };
    let err = profile::build(&options).err().unwrap().to_string();
    assert!(err.contains("reaches 222 zones and the device has 100"), "{err}");
}
