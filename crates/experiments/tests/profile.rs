//! `zonelab profile` and `zonelab calibrate DIR`, the whole loop on a drive
//! whose parameters are hidden: the zn540 with some of them moved stands in
//! for the drive and real fio ([`standin`]), and a fit from the unmoved
//! zn540 must predict the jobs it did not see.

use std::path::{Path, PathBuf};
use zonelab_device::{preset, DeviceConfig, DeviceOptions};
use zonelab_experiments::calibrate::{self as cal, fio_results, fit, identify, profile, standin, Settings};

/// The plan's measured window (calibrate runs with the same).
const RUNTIME_MS: u64 = 200;

/// The hidden drive: the zn540 with six parameters the plan sees moved by 20-30%.
const HIDDEN: [(&str, &str); 6] = [
    ("controller.write_ns", "7020ns"),      // 5400 × 1.3
    ("controller.read_ns", "3120ns"),       // 2400 × 1.3
    ("flash_timing.read_ns", "52500ns"),    // 70 µs × 0.75
    ("flash_timing.program_ns", "3125us"),  // 2.5 ms × 1.25
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
    let candidates: Vec<String> = profile::FIT_CANDIDATES.iter().map(|s| s.to_string()).collect();
    let id = identify::analyse(&base, &train, &candidates, settings).unwrap();
    eprintln!("{}", identify::markdown(&id));
    let request = fit::Request::new(id.identifiable(), 0, 150);
    eprintln!("identified ({:.1} s)", started.elapsed().as_secs_f64());
    let out = fit::fit(&base, &train, &request, settings, &|_| {}, &|_, _| {}).unwrap();
    eprintln!("fitted, {} evaluations ({:.1} s)", out.summary.evaluations, started.elapsed().as_secs_f64());
    for p in &out.summary.params {
        eprintln!("{}: {} -> {:.1}", p.path, p.start, p.fitted);
    }
    let after = median_abs_error(&cal::evaluate(&out.config, &test, settings, &|_, _| {}));
    eprintln!("after: median |error| {:.2}% ({:.1} s)", after * 100.0, started.elapsed().as_secs_f64());
    assert!(before > 0.10, "the hidden drive must differ from the zn540 on the held-out jobs: {before}");
    assert!(after <= 0.05, "held-out median |error| {after} after the fit (before: {before})");
    std::fs::remove_dir_all(&dir).ok();
}
