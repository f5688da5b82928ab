//! `zonelab calibrate` end to end on the shipped measurements file.

use zonelab_device::preset;
use zonelab_experiments::calibrate::{self as cal, fit, report, rows, Settings};

fn shipped() -> Vec<cal::Row> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/measurements/zn540.csv");
    cal::read_file(&path).expect("the shipped file parses")
}

#[test]
fn every_shipped_row_maps_to_a_run_or_says_why_not() {
    let rows = shipped();
    assert_eq!(rows.len(), 3226);
    let (runs, planned) = cal::plan_rows(&rows);
    let mut mapped = 0;
    for (row, p) in rows.iter().zip(&planned) {
        match p {
            Ok(_) => mapped += 1,
            Err(reason) => {
                assert!(reason.to_string().len() > 10, "{}: a reason that says something: '{reason}'", row.id)
            }
        }
    }
    // The application benchmark, the conventional namespace, overwrites and sleeping
    // softFinish are what v1 skips: the rest must run.
    assert!(mapped >= 3000, "only {mapped} of {} rows map to a run", rows.len());
    assert!(runs.len() < mapped, "rows of one run share it ({} runs for {mapped} rows)", runs.len());
    // T0017 and T0020: mean latency and KIOPS of the same SPDK 4 KiB QD-1 write job.
    let at = |id: &str| rows.iter().position(|r| r.id == id).unwrap();
    let run = |id: &str| planned[at(id)].as_ref().unwrap().0;
    assert_eq!(run("T0017"), run("T0020"));
    assert_ne!(run("T0017"), run("T0023"), "append is another run");
    let rocksdb = rows.iter().position(|r| r.op == rows::Op::RocksdbZenfs).unwrap();
    assert!(planned[rocksdb].as_ref().unwrap_err().to_string().contains("application"));
}

fn small_selection() -> Vec<cal::Row> {
    // I/O rows, a management job at an intensity (needs its standalone run), and Fig 5 command sequences.
    let rows = shipped();
    let mut picked = cal::select(&rows, "CLUSTER23,Fig 4b");
    picked.extend(cal::select(&rows, "C2 Fig 3a reset side,T14"));
    picked.extend(cal::select(&rows, "Fig 5,T074"));
    picked
}

#[test]
fn reports_are_the_same_on_one_and_two_threads() {
    let rows = small_selection();
    assert!(rows.len() >= 30, "{}", rows.len());
    let config = preset("zn540").unwrap();
    let one = cal::evaluate(&config, &rows, Settings { runtime_ms: 100, threads: 1, window_ms_min: 0 }, &|_, _| {});
    let two = cal::evaluate(&config, &rows, Settings { runtime_ms: 100, threads: 2, window_ms_min: 0 }, &|_, _| {});
    assert_eq!(report::rows_csv(&one).unwrap(), report::rows_csv(&two).unwrap());
    let compared = one.iter().filter(|r| r.predicted.is_some()).count();
    assert!(compared * 10 >= rows.len() * 9, "{compared} of {} rows ran: {:?}", rows.len(), one);
}

/// Rows whose values are the model's own predictions with `path` set to `value`.
fn generated(path: &str, value: &str, settings: Settings) -> Vec<cal::Row> {
    let changed = zonelab_device::DeviceOptions { sets: vec![(path.into(), value.into())], ..Default::default() }
        .apply(preset("zn540").unwrap())
        .unwrap();
    let template = "G1,gen,g,4096,spdk,write,4096,1,1,1,,lat_mean_us,1,\n\
                    G2,gen,g,4096,spdk,write,4096,1,1,1,,kiops,1,\n\
                    G3,gen,g,4096,spdk,append,8192,2,1,1,,lat_p95_us,1,\n\
                    G4,gen,g,4096,io_uring_cmd,write,8192,1,1,1,,kiops,1,\n\
                    G5,gen,g,4096,spdk,append,4096,1,1,1,,lat_mean_us,1,\n";
    let text = format!("{}\n{}\n{template}", rows::VERSION_LINE, rows::COLUMNS.join(","));
    let mut rows = rows::parse("generated.csv", &text).unwrap();
    let results = cal::evaluate(&changed, &rows, settings, &|_, _| {});
    for (row, result) in rows.iter_mut().zip(results) {
        row.value = result.predicted.unwrap();
    }
    rows
}

#[test]
fn the_fit_recovers_a_parameter_from_data_the_model_made() {
    let settings = Settings { runtime_ms: 60, threads: 2, window_ms_min: 0 };
    let rows = generated("controller.write_ns", "9000ns", settings);
    let request = fit::Request::new(vec!["controller.write_ns".into()], 0, 40);
    let base = preset("zn540").unwrap();
    let out = fit::fit(&base, &rows, &request, settings, &|_| {}, &|_, _| {}).unwrap();
    let p = &out.summary.params[0];
    assert_eq!(p.start, 5400.0);
    assert!(
        (p.fitted / 9000.0 - 1.0).abs() < 0.05,
        "fitted {} (loss {} -> {})",
        p.fitted,
        out.summary.loss_start,
        out.summary.loss_fitted
    );
    assert!(out.summary.loss_fitted < out.summary.loss_start / 5.0);
    assert!(out.config.to_toml().contains("write_ns = "));
}

#[test]
fn cross_validation_scores_every_fold() {
    let settings = Settings { runtime_ms: 40, threads: 2, window_ms_min: 0 };
    let rows = generated("controller.write_ns", "7000ns", settings);
    let request = fit::Request::new(vec!["controller.write_ns".into()], 3, 12);
    let out = fit::fit(&preset("zn540").unwrap(), &rows, &request, settings, &|_| {}, &|_, _| {}).unwrap();
    assert_eq!(out.summary.fold_losses.len(), 3);
    assert!(out.summary.cv_loss.unwrap().is_finite());
    assert!(fit::markdown(&out).contains("3-fold cross-validation"));
}

#[test]
fn a_parameter_that_is_not_a_number_is_refused() {
    let rows = generated("controller.write_ns", "5400ns", Settings { runtime_ms: 20, threads: 1, window_ms_min: 0 });
    let request = fit::Request::new(vec!["controller.nope".into()], 0, 5);
    let err =
        fit::fit(&preset("zn540").unwrap(), &rows, &request, Settings::default(), &|_| {}, &|_, _| {}).err().unwrap();
    assert!(err.to_string().contains("controller.nope"), "{err}");
}

/// The zn540's predictions for measurement rows given as CSV lines, in short windows.
fn predicted(lines: &str) -> Vec<f64> {
    let text = format!("{}\n{}\n{lines}", rows::VERSION_LINE, rows::COLUMNS.join(","));
    let rows = rows::parse("p.csv", &text).unwrap();
    let settings = Settings { runtime_ms: 400, threads: 2, window_ms_min: 0 };
    cal::evaluate(&preset("zn540").unwrap(), &rows, settings, &|_, _| {}).iter().map(|r| r.predicted.unwrap()).collect()
}

#[test]
fn an_intensity_is_a_share_of_the_job_run_alone() {
    let results = predicted(
        "A,s,f,4096,io_uring_cmd,reset,,1,1,,,per_s,50,\n\
         B,s,f,4096,io_uring_cmd,reset,,1,1,,write 8KiB QD1 x1 jobs; reset job at 10% intensity,per_s,5,\n",
    );
    let (alone, tenth) = (results[0], results[1]);
    assert!(alone > 10.0, "resets alone: {alone}/s");
    assert!((tenth / (alone * 0.1) - 1.0).abs() < 0.25, "10% of {alone}/s gave {tenth}/s");
}

#[test]
fn the_plan_runs_by_shard_into_a_store_renders_the_same_and_a_rerun_runs_nothing() {
    use zonelab_experiments::plan::{self, Executed, RunSpec, Shard, Store};
    let rows = small_selection();
    let config = preset("zn540").unwrap();
    let settings = Settings { runtime_ms: 50, threads: 2, window_ms_min: 0 };
    let p = cal::Plan::new(&config, &rows, settings);
    assert!(p.standalone >= 1 && p.specs.len() > p.standalone + 2, "{} specs", p.specs.len());
    for spec in &p.specs {
        let back: RunSpec = serde_json::from_str(&serde_json::to_string(spec).unwrap()).unwrap();
        assert_eq!(&back, spec);
        assert_eq!(format!("{back:?}"), format!("{spec:?}"), "Debug text is the seed: it must read back alike");
    }
    let (whole, jobs) = cal::evaluate_with_jobs(&config, &rows, settings, &|_, _| {});
    let dir = std::env::temp_dir().join(format!("zonelab-calibrate-plan-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let mut ran = 0;
    for index in 0..2 {
        let shard = Shard { index, count: 2 };
        let mut store = Store::open(&dir, &shard.file_name()).unwrap();
        let executed = plan::execute(&p.specs, shard, &mut store, 1, &|_, _, _| {}).unwrap();
        assert_eq!(executed.skipped, 0);
        ran += executed.ran;
    }
    // A shard also runs the standalone runs its throttled runs need that another shard holds.
    assert!(ran >= p.specs.len(), "{ran} of {}", p.specs.len());
    let mut again = Store::open(&dir, "again.jsonl").unwrap();
    let rerun = plan::execute(&p.specs, Shard::ALL, &mut again, 2, &|label, _, _| panic!("{label} ran again"));
    assert_eq!(rerun.unwrap(), Executed { ran: 0, skipped: p.specs.len() });
    let stored = plan::collect(&p.specs, &again).unwrap();
    let (sharded, sharded_jobs) = p.results(&rows, &stored).unwrap();
    assert_eq!(report::rows_csv(&sharded).unwrap(), report::rows_csv(&whole).unwrap());
    assert_eq!(sharded_jobs, jobs);
    assert!(!dir.join("again.jsonl").exists(), "a rerun appends nothing");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_throttled_finish_job_keeps_its_rate_below_one_per_window() {
    // 1% of a finish job's rate is one finish in about 90 s: a window of a few
    // seconds holds one, and its count would say 1/window.
    let results = predicted(
        "A,s,f,4096,io_uring_cmd,finish-job,,1,1,,,per_s,0.5,\n\
         B,s,f,4096,io_uring_cmd,finish-job,,1,1,,randread 8KiB QD1; finish job at 1% intensity,per_s,0.005,\n",
    );
    let (alone, hundredth) = (results[0], results[1]);
    assert!(alone > 0.2, "finishes alone: {alone}/s");
    assert!((hundredth / (alone * 0.01) - 1.0).abs() < 0.1, "1% of {alone}/s gave {hundredth}/s");
}

#[test]
fn a_softfinish_intensity_is_a_share_of_the_finish_jobs_rate() {
    // ConfZNS++ throttled softFinish to a share of the finish job's rate: 256 KiB
    // chunks fill a zone about as fast as a finish pads it, so at 50% they run at
    // half the finish's rate; 16 KiB chunks are slower than that and run free.
    let results = predicted(
        "A,s,f,4096,io_uring_cmd,finish-job,,1,1,,,per_s,1,\n\
         B,s,f,4096,io_uring_cmd,softfinish-job,,1,1,,; softfinish chunk=256KiB job at 50% intensity,per_s,0.5,\n\
         C,s,f,4096,io_uring_cmd,softfinish-job,,1,1,,,per_s,0.4,softfinish_chunk=32 (x512 B = 16 KiB)\n\
         D,s,f,4096,io_uring_cmd,softfinish-job,,1,1,,; softfinish chunk=16KiB job at 50% intensity,per_s,0.4,\n",
    );
    let (finish, big_half, small, small_half) = (results[0], results[1], results[2], results[3]);
    assert!((big_half / (finish * 0.5) - 1.0).abs() < 0.1, "50% of the finish's {finish}/s gave {big_half}/s");
    assert!(small < finish * 0.5, "16 KiB chunks alone: {small}/s");
    assert!((small_half / small - 1.0).abs() < 0.1, "{small_half}/s at 50% against {small}/s free");
}

#[test]
fn a_throttled_job_slower_than_its_rate_runs_at_what_its_latency_allows() {
    let t = cal::execute::Throttle { rate_per_s: 2.0, jobs: 3 };
    // 100 ms per operation allows 10/s per clone: each keeps its asked 2/s.
    assert_eq!(t.long_run_per_s(100e6), 6.0);
    // 1 s per operation: one per second per clone.
    assert_eq!(t.long_run_per_s(1e9), 3.0);
}

#[test]
fn reads_beside_a_rare_finish_keep_their_tail_over_a_long_run() {
    // One finish every 100 s is under way for about 1% of a run of minutes,
    // as the drive was measured: the reads' p95 is theirs alone. A window of a
    // few seconds starts with that finish, so taken alone it would give the
    // finish's share of the window (over 5%) and the p95 of reads beside it.
    let results = predicted(
        "A,s,f,4096,io_uring_cmd,randread,8192,1,1,,,lat_p95_us,98,\n\
         B,s,f,4096,io_uring_cmd,randread,8192,1,1,,finish 1% intensity (0.01 finishes/s),lat_p95_us,98,\n\
         C,s,f,4096,io_uring_cmd,randread,8192,1,1,,finish 50% intensity (0.55 finishes/s),lat_p95_us,272,\n\
         D,s,f,4096,io_uring_cmd,randread,8192,1,1,,finish 1% intensity (0.01 finishes/s),kiops,11,\n\
         E,s,f,4096,io_uring_cmd,randread,8192,1,1,,,kiops,11,\n",
    );
    let (alone, rare, half) = (results[0], results[1], results[2]);
    assert!((rare / alone - 1.0).abs() < 0.1, "p95 {rare} µs beside a finish per 100 s, {alone} µs alone");
    assert!(half > 1.5 * alone, "p95 {half} µs beside a finish every 2 s, {alone} µs alone");
    let (rare_kiops, alone_kiops) = (results[3], results[4]);
    assert!(rare_kiops < alone_kiops && rare_kiops > 0.97 * alone_kiops, "{rare_kiops} against {alone_kiops} kIOPS");
}
