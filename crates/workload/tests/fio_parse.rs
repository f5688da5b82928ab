//! fio job file and command-line parsing, checked against fio 3.33's behaviour.

use proptest::prelude::*;
use zonelab_workload::fio::job::{
    BlockSize, Distribution, IoEngine, JobError, JobSet, JobSpec, RateProcess, RwKind, Scheduler, Size, Verify,
    ZoneMode, DDIR_READ, DDIR_TRIM, DDIR_WRITE,
};
use zonelab_workload::fio::parse::{parse_job_file, parse_run};

fn args(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

fn cli(line: &str) -> Result<JobSet, JobError> {
    parse_run(&args(line), &[])
}

/// The single job of `--name=j OPTIONS`.
fn cli_job(options: &str) -> JobSpec {
    let set = cli(&format!("--name=j {options}")).unwrap_or_else(|e| panic!("{options}: {e}"));
    assert_eq!(set.jobs.len(), 1);
    set.jobs[0].clone()
}

fn cli_err(options: &str) -> JobError {
    cli(&format!("--name=j {options}")).expect_err(options)
}

fn file_jobs(text: &str) -> Vec<JobSpec> {
    parse_job_file("t.fio", text).unwrap_or_else(|e| panic!("{e}")).jobs
}

fn file_err(text: &str) -> JobError {
    parse_job_file("t.fio", text).expect_err(text)
}

fn bs(min_bytes: u64, max_bytes: u64) -> BlockSize {
    BlockSize { min_bytes, max_bytes }
}

fn opts(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

// ---- job file syntax -----------------------------------------------------

#[test]
fn sections_globals_and_comments() {
    let text = "; comment\n# another\n\n[global]\nrw=write\nbs=8k  # trailing\nsize=1m\n\n[a]\nbs=16k\n\
                [global]\nrw=read ; trailing semicolon\n[b]\nname=bee\n";
    let set = parse_job_file("g.fio", text).unwrap();
    let (a, b) = (&set.jobs[0], &set.jobs[1]);
    assert_eq!((a.name.as_str(), a.rw, a.bs[DDIR_WRITE]), ("a", RwKind::Write, bs(16384, 16384)));
    // A later [global] changes only the jobs after it; name= overrides the section name.
    assert_eq!((b.name.as_str(), b.rw, b.bs[DDIR_READ]), ("bee", RwKind::Read, bs(8192, 8192)));
    assert_eq!(a.size, Some(Size::Bytes(1 << 20)));
    assert_eq!(a.origin, "g.fio:9");
    // fio lists a job's own options only, and the globals separately.
    assert_eq!(a.options, opts(&[("bs", "16k")]));
    assert_eq!(b.options, opts(&[("name", "bee")]));
    assert_eq!(set.global_options, opts(&[("rw", "read"), ("bs", "8k"), ("size", "1m")]));
}

#[test]
fn spaces_around_equals_and_bare_flags() {
    let job = &file_jobs("[j]\nbs = 8k\ntime_based\nruntime = 2\n")[0];
    assert_eq!(job.bs[DDIR_READ], bs(8192, 8192));
    assert!(job.time_based);
    assert_eq!(job.runtime_ns, Some(2_000_000_000));
    // Options written without a value are not listed (fio's "job options").
    assert_eq!(job.options, opts(&[("bs", "8k"), ("runtime", "2")]));
}

#[test]
fn repeated_option_keeps_first_position_with_last_value() {
    let job = &file_jobs("[d]\nbs=8k\niodepth=2\nrw=write\nbs=16k\n")[0];
    assert_eq!(job.options, opts(&[("bs", "16k"), ("iodepth", "2"), ("rw", "write")]));
    assert_eq!(job.bs[DDIR_WRITE], bs(16384, 16384));
}

#[test]
fn section_options_sorted_like_fio() {
    // fio's sort_options: kb_base first (so sizes see it), filename last.
    let job = &file_jobs("[e]\nfilename=/dev/x\nsize=4KiB\nrw=write\nkb_base=1000\n")[0];
    assert_eq!(job.size, Some(Size::Bytes(4096)));
    assert_eq!(job.options, opts(&[("kb_base", "1000"), ("size", "4KiB"), ("rw", "write"), ("filename", "/dev/x")]));
}

#[test]
fn aliases_are_recorded_under_canonical_names() {
    let job = cli_job("--blocksize=8k --readwrite=randwrite --timeout=5 --fileoffset=1m");
    assert_eq!(job.bs[DDIR_WRITE], bs(8192, 8192));
    assert_eq!(job.rw, RwKind::RandWrite);
    assert_eq!(job.runtime_ns, Some(5_000_000_000));
    assert_eq!(job.offset, Size::Bytes(1 << 20));
    let names: Vec<&str> = job.options.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["name", "bs", "rw", "runtime", "offset"]);
}

#[test]
fn malformed_section_header_is_located() {
    let err = file_err("[ok]\nbs=4k\n[broken\nrw=read\n");
    assert_eq!(err.location, "t.fio:3");
    assert!(err.message.contains("malformed section header"), "{err}");
    assert_eq!(file_err("[]\n").location, "t.fio:1");
}

#[test]
fn option_outside_a_section_is_an_error() {
    let err = file_err("bs=4k\n[e]\n");
    assert_eq!((err.location.as_str(), err.option.as_deref()), ("t.fio:1", Some("bs")));
}

#[test]
fn missing_value_is_an_error_for_value_options() {
    // fio: "Option bs requires an argument"; also for booleans like direct.
    for text in ["[e]\nbs\n", "[e]\ndirect\n", "[e]\nrw=\n"] {
        let err = file_err(text);
        assert_eq!(err.location, "t.fio:2", "{text}");
        assert!(err.message.contains("requires a value"), "{err}");
    }
}

#[test]
fn unknown_option_names_line_and_suggests() {
    let err = file_err("[e]\nrw=write\n\nbsize=4k\n");
    assert_eq!((err.location.as_str(), err.option.as_deref()), ("t.fio:4", Some("bsize")));
    assert!(err.message.starts_with("unknown option 'bsize'"), "{err}");
    assert!(cli_err("--nosuchthing=1").message.contains("unknown option 'nosuchthing'"));
}

/// Found by zonelab-fuzz: the suggestion for an unknown option computed an
/// edit distance to every option, a 1 MiB name took minutes.
#[test]
fn a_huge_unknown_option_is_refused_at_once() {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || tx.send(file_err(&format!("[e]\n{}=1\n", "A".repeat(1 << 20)))));
    let err = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("refused in bounded time");
    assert!(err.message.starts_with("unknown option 'AAAA") && !err.message.contains("did you mean"));
    assert!(file_err("[e]\nioengin=sync\n").message.contains("did you mean 'ioengine'"));
}

#[test]
fn unmodelled_options_are_refused() {
    for option in ["--loops=2", "--bssplit=4k/50:8k/50", "--unified_rw_reporting=1", "--fsync=1", "--rate_min=1m"] {
        let err = cli_err(option);
        assert!(err.message.contains("changes the result and zonelab does not model it"), "{option}: {err}");
    }
    let err = file_err("[e]\nverify_backlog=16\n");
    assert_eq!((err.location.as_str(), err.option.as_deref()), ("t.fio:2", Some("verify_backlog")));
}

#[test]
fn env_variables_expand_in_job_files() {
    std::env::set_var("ZONELAB_TEST_BS", "16k");
    assert_eq!(file_jobs("[e]\nbs=${ZONELAB_TEST_BS}\n")[0].bs[DDIR_READ], bs(16384, 16384));
    let err = file_err("[e]\nbs=${ZONELAB_SURELY_UNSET_VAR}\n");
    assert!(err.message.contains("ZONELAB_SURELY_UNSET_VAR"), "{err}");
}

#[test]
fn include_reads_relative_to_the_including_file() {
    let dir = std::env::temp_dir().join(format!("zonelab-fio-include-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("common.fio"), "[global]\nbs=32k\n").unwrap();
    let path = dir.join("main.fio").to_string_lossy().into_owned();
    let set = parse_job_file(&path, "include common.fio\n[j]\n").unwrap();
    assert_eq!(set.jobs[0].bs[DDIR_READ], bs(32768, 32768));
    assert!(parse_job_file(&path, "include missing.fio\n[j]\n").is_err());
    std::fs::remove_dir_all(dir).unwrap();
}

/// `include` of a file that is not a job file quoted its first line in the
/// error; a device node was read without end.
#[test]
fn include_of_a_non_job_file_echoes_nothing() {
    let dir = std::env::temp_dir().join(format!("zonelab-fio-include-secret-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("secret"), "root:s3cr3t-hash:19000:0:99999:7:::\n").unwrap();
    std::fs::write(dir.join("opts.fio"), "# shared\nbs=16k\n").unwrap();
    let path = dir.join("main.fio").to_string_lossy().into_owned();
    let e = parse_job_file(&path, "[j]\ninclude secret\n").unwrap_err();
    assert!(e.to_string().contains("is not a fio job file") && e.location.ends_with("main.fio:2"), "{e}");
    assert!(!e.to_string().contains("s3cr3t"), "{e}");
    let set = parse_job_file(&path, "[j]\ninclude opts.fio\n").unwrap();
    assert_eq!(set.jobs[0].bs[DDIR_READ], bs(16384, 16384), "an options-only include is a job file");
    #[cfg(unix)]
    assert!(parse_job_file(&path, "[j]\ninclude /dev/zero\n").unwrap_err().message.contains("device node"));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_file_without_jobs_is_an_error() {
    assert!(file_err("[global]\nbs=4k\n").message.contains("no jobs"));
    assert!(cli("--bs=4k").unwrap_err().message.contains("no jobs"));
}

// ---- command line and precedence -----------------------------------------

#[test]
fn command_line_globals_and_jobs() {
    let set = cli("--bs=8k --rw=write --name=a --iodepth=4 --name=b --bs=16k").unwrap();
    let (a, b) = (&set.jobs[0], &set.jobs[1]);
    assert_eq!((a.name.as_str(), a.bs[DDIR_WRITE], a.iodepth, a.rw), ("a", bs(8192, 8192), 4, RwKind::Write));
    assert_eq!((b.name.as_str(), b.bs[DDIR_WRITE], b.iodepth), ("b", bs(16384, 16384), 1));
    assert_eq!(a.options, opts(&[("name", "a"), ("iodepth", "4")]));
    assert_eq!(set.global_options, opts(&[("bs", "8k"), ("rw", "write")]));
    assert_eq!(a.origin, "command line");
}

#[test]
fn command_line_accepts_separate_values_and_single_dash() {
    let job = cli_job("--rw write --bs 8k -iodepth=2 --time_based --runtime 3");
    assert_eq!((job.rw, job.bs[DDIR_WRITE], job.iodepth), (RwKind::Write, bs(8192, 8192), 2));
    assert!(job.time_based);
    assert_eq!(job.runtime_ns, Some(3_000_000_000));
    assert!(cli_err("--bs").message.contains("requires a value"));
    assert!(cli_err("stray").message.contains("unexpected argument"));
}

#[test]
fn file_global_overrides_command_line_global() {
    // fio --bs=32k job.fio: the file's [global] bs wins for its jobs, a job section wins over both.
    let file = ("g.fio".to_string(), "[global]\nbs=8k\n[f1]\n[f2]\nbs=16k\n[f3]\n".to_string());
    let set = parse_run(&args("--bs=32k --iodepth=2"), &[file]).unwrap();
    let sizes: Vec<u64> = set.jobs.iter().map(|j| j.bs[DDIR_READ].min_bytes).collect();
    assert_eq!(sizes, [8192, 16384, 8192]);
    assert!(set.jobs.iter().all(|j| j.iodepth == 2));
    assert_eq!(set.global_options, opts(&[("bs", "8k"), ("iodepth", "2")]));
}

#[test]
fn command_line_jobs_come_first_and_later_files_start_from_fio_defaults() {
    let first = ("h.fio".to_string(), "[global]\nrw=write\n[f1]\n".to_string());
    let second = ("h2.fio".to_string(), "[g1]\n".to_string());
    let set = parse_run(&args("--bs=32k --name=c1 --rw=randread"), &[first, second]).unwrap();
    let names: Vec<&str> = set.jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(names, ["c1", "f1", "g1"]);
    assert_eq!(set.jobs[1].bs[DDIR_READ].min_bytes, 32768);
    assert_eq!(set.jobs[1].rw, RwKind::Write);
    // fio's fill_def_thread() before every file but the first drops command-line globals.
    assert_eq!(set.jobs[2].bs[DDIR_READ].min_bytes, 4096);
    assert!(set.global_options.is_empty());
}

#[test]
fn kb_base_on_command_line_applies_in_order() {
    assert_eq!(cli_job("--kb_base=1000 --bs=4KiB").bs[DDIR_READ].min_bytes, 4096);
    assert_eq!(cli_job("--bs=4KiB --kb_base=1000").bs[DDIR_READ].min_bytes, 4000);
}

// ---- values --------------------------------------------------------------

#[test]
fn size_suffixes_follow_kb_base() {
    for (value, bytes) in
        [("4k", 4096), ("4K", 4096), ("4KB", 4096), ("4kb", 4096), ("4Ki", 4096), ("4KiB", 4000), ("4kib", 4000)]
    {
        assert_eq!(cli_job(&format!("--size={value}")).size, Some(Size::Bytes(bytes)), "{value}");
    }
    for (value, bytes) in [("4KiB", 4096), ("4kB", 4000), ("4k", 4000), ("1m", 1_000_000), ("1MiB", 1 << 20)] {
        let job = cli_job(&format!("--kb_base=1000 --size={value}"));
        assert_eq!(job.size, Some(Size::Bytes(bytes)), "kb_base=1000 {value}");
    }
    assert_eq!(cli_job("--size=1g").size, Some(Size::Bytes(1 << 30)));
    assert_eq!(cli_job("--size=2t").size, Some(Size::Bytes(2 << 40)));
    assert_eq!(cli_job("--size=1p").size, Some(Size::Bytes(1 << 50)));
    assert_eq!(cli_job("--size=0x100000").size, Some(Size::Bytes(1 << 20)));
    assert_eq!(cli_job("--size=512").size, Some(Size::Bytes(512)));
    assert_eq!(cli_job("--iodepth=1k").iodepth, 1024);
    assert!(cli_err("--kb_base=512").message.contains("1024, 1000"));
}

#[test]
fn bad_sizes_are_refused() {
    for value in ["4q", "1.5g", "-5", "k", "99999999999999999999", "16384p", "0xzz"] {
        let err = cli_err(&format!("--size={value}"));
        assert_eq!(err.option.as_deref(), Some("size"), "{value}");
    }
}

#[test]
fn zone_and_percent_sizes() {
    let job = cli_job("--size=3z --offset_increment=3z --offset=10% --io_size=50% --zoneskip=1z");
    assert_eq!(job.size, Some(Size::Zones(3.0)));
    assert_eq!(job.offset_increment, Size::Zones(3.0));
    assert_eq!(job.offset, Size::Percent(10.0));
    assert_eq!(job.io_size, Some(Size::Percent(50.0)));
    assert_eq!(job.zoneskip, Size::Zones(1.0));
    assert_eq!(Size::Zones(3.0).resolve(1 << 30, 1 << 20), 3 << 20);
    for bad in ["--size=0%", "--size=101%", "--bs=1z", "--size=1.5z", "--zoneskip=5%"] {
        assert!(cli(&format!("--name=j {bad}")).is_err(), "{bad}");
    }
}

#[test]
fn per_direction_block_sizes() {
    let all = [bs(8192, 8192); 3];
    assert_eq!(cli_job("--bs=8k").bs, all);
    assert_eq!(cli_job("--bs=4k,8k").bs, [bs(4096, 4096), bs(8192, 8192), bs(8192, 8192)]);
    assert_eq!(cli_job("--bs=4k,8k,").bs, [bs(4096, 4096), bs(8192, 8192), bs(4096, 4096)]);
    assert_eq!(cli_job("--bs=,8k").bs, [bs(4096, 4096), bs(8192, 8192), bs(8192, 8192)]);
    assert_eq!(cli_job("--bs=1k,2k,3k").bs[DDIR_TRIM], bs(3072, 3072));
    // An empty part keeps the value inherited from the globals.
    assert_eq!(cli("--bs=16k --name=j --bs=,8k").unwrap().jobs[0].bs[DDIR_READ], bs(16384, 16384));
    assert!(cli_err("--bs=1k,2k,3k,4k").message.contains("more than 3"));
}

#[test]
fn block_size_ranges_and_validation() {
    assert_eq!(cli_job("--bs=4k-16k").bs[DDIR_READ], bs(4096, 16384));
    assert_eq!(cli_job("--bsrange=4k-16k,8k-8k").bs, [bs(4096, 16384), bs(8192, 8192), bs(8192, 8192)]);
    assert_eq!(cli_job("--bsrange=4k:8k").bs[DDIR_WRITE], bs(4096, 8192));
    assert!(cli_job("--blocksize_unaligned").blocksize_unaligned);
    assert!(cli_job("--bs_unaligned=1").blocksize_unaligned);
    assert!(cli_err("--bs=16k-4k").message.contains("larger than maximum"));
    assert!(cli_err("--bs=0").message.contains("greater than 0"));
}

#[test]
fn per_direction_rates() {
    let job = cli_job("--rate=,10m --rate_iops=100,200");
    assert_eq!(job.rate_bytes_per_s, [None, Some(10 << 20), Some(10 << 20)]);
    assert_eq!(job.rate_iops, [Some(100), Some(200), Some(200)]);
    assert_eq!(cli_job("--rate=1m,").rate_bytes_per_s, [Some(1 << 20), None, None]);
    assert_eq!(cli_job("--rate_process=poisson").rate_process, RateProcess::Poisson);
}

#[test]
fn time_units() {
    let s = 1_000_000_000;
    assert_eq!(cli_job("--runtime=30").runtime_ns, Some(30 * s));
    assert_eq!(cli_job("--runtime=2m").runtime_ns, Some(120 * s));
    assert_eq!(cli_job("--runtime=1h").runtime_ns, Some(3600 * s));
    assert_eq!(cli_job("--runtime=1d").runtime_ns, Some(86400 * s));
    assert_eq!(cli_job("--runtime=0").runtime_ns, None);
    assert_eq!(cli_job("--ramp_time=100ms").ramp_time_ns, 100_000_000);
    assert_eq!(cli_job("--ramp_time=5usec").ramp_time_ns, 5_000);
    assert_eq!(cli_job("--ramp_time=7MSEC").ramp_time_ns, 7_000_000);
    // thinktime's default unit is microseconds.
    assert_eq!(cli_job("--thinktime=5").thinktime_ns, 5_000);
    assert_eq!(cli_job("--thinktime=1ms").thinktime_ns, 1_000_000);
    assert_eq!(cli_job("--startdelay=1-3").startdelay_ns, (s, 3 * s));
    assert_eq!(cli_job("--startdelay=2").startdelay_ns, (2 * s, 2 * s));
    // fio reads "10sec" as 10 us and "1.5s" as 1 s; zonelab refuses both.
    assert!(cli_err("--runtime=10sec").message.contains("unknown time unit"));
    assert!(cli_err("--runtime=1.5s").message.contains("fraction"));
    assert!(cli_err("--startdelay=3-1").message.contains("ends before"));
    assert!(cli_err("--runtime=99999999999999d").message.contains("too long"));
}

/// Years of simulated time were accepted and ran (nearly) forever.
#[test]
fn simulated_times_beyond_a_day_are_refused_and_located() {
    assert_eq!(cli_job("--runtime=1d --ramp_time=24h --startdelay=0-86400").runtime_ns, Some(86_400_000_000_000));
    // softfinish_pause of u64::MAX ns wrapped the event time (found by zonelab-fuzz).
    for option in
        ["runtime=86401", "ramp_time=3650d", "startdelay=1-25h", "startdelay=2d", "softfinish_pause=18446744073709551"]
    {
        let e = cli_err(&format!("--{option}"));
        assert_eq!(e.option.as_deref(), Some(option.split('=').next().unwrap()), "{option}");
        assert!(e.message.contains("at most 24h"), "{option}: {e}");
    }
    let e = file_err("[j]\nrw=write\nramp_time=100000d\n");
    assert!(e.to_string().starts_with("t.fio:3:"), "{e}");
}

#[test]
fn boolean_forms() {
    assert!(cli_job("--time_based").time_based);
    assert!(cli_job("--time_based=1").time_based);
    assert!(!cli_job("--time_based=0").time_based);
    assert!(cli_job("--time_based=2").time_based);
    assert!(cli_job("--direct=1").direct);
    assert!(!cli_job("--direct=1 --buffered=1").direct);
    assert!(!cli_job("--randrepeat=0").randrepeat);
    assert!(cli_job("--group_reporting --stonewall --new_group").group_reporting);
    assert!(cli_err("--direct=true").message.contains("not a boolean"));
    assert!(cli_err("--direct=2").message.contains("not a boolean"));
    assert!(cli_err("--direct").message.contains("requires a value"));
}

#[test]
fn rw_values() {
    for (value, kind) in [
        ("read", RwKind::Read),
        ("write", RwKind::Write),
        ("trim", RwKind::Trim),
        ("randread", RwKind::RandRead),
        ("randwrite", RwKind::RandWrite),
        ("rw", RwKind::ReadWrite),
        ("readwrite", RwKind::ReadWrite),
        ("randrw", RwKind::RandRw),
    ] {
        assert_eq!(cli_job(&format!("--rw={value}")).rw, kind);
    }
    let err = cli_err("--rw=wirte");
    assert_eq!(err.message, "rw: 'wirte' is not one of read, write, randread, randwrite, rw, readwrite, randrw, trim");
    assert!(cli_err("--rw=randtrim").message.contains("not modelled"));
    assert!(cli_err("--rw=trimwrite").message.contains("not modelled"));
    assert!(cli_err("--rw=randread:8").message.contains("does not model"));
}

#[test]
fn rwmix_last_one_wins() {
    assert_eq!(cli_job("--rwmixread=30").rwmixread, 30);
    assert_eq!(cli_job("--rwmixwrite=30").rwmixread, 70);
    assert_eq!(cli_job("--rwmixread=30 --rwmixwrite=40").rwmixread, 60);
    assert_eq!(cli_job("--rwmixwrite=40 --rwmixread=30").rwmixread, 30);
    assert!(cli_err("--rwmixread=120").message.contains("out of range"));
}

#[test]
fn percentile_lists() {
    assert_eq!(cli_job("--percentile_list=50:95:99.9").percentile_list, [50.0, 95.0, 99.9]);
    assert_eq!(JobSpec::new("x", "y").percentile_list.len(), 17);
    let twenty: Vec<String> = (1..=20).map(|p| p.to_string()).collect();
    assert_eq!(cli_job(&format!("--percentile_list={}", twenty.join(":"))).percentile_list.len(), 20);
    let err = cli_err(&format!("--percentile_list={}:21", twenty.join(":")));
    assert!(err.message.contains("at most 20"), "{err}");
    assert!(cli_err("--percentile_list=0:50").message.contains("(0, 100]"));
    assert!(cli_err("--percentile_list=50:101").message.contains("(0, 100]"));
    assert!(cli_err("--percentile_list=50::90").message.contains("(0, 100]"));
}

#[test]
fn random_distributions() {
    assert_eq!(cli_job("--random_distribution=random").random_distribution, Distribution::Random);
    assert_eq!(cli_job("--random_distribution=zipf:1.2").random_distribution, Distribution::Zipf(1.2));
    assert_eq!(cli_job("--random_distribution=zipf").random_distribution, Distribution::Zipf(1.1));
    assert_eq!(cli_job("--random_distribution=pareto:0.3").random_distribution, Distribution::Pareto(0.3));
    assert_eq!(cli_job("--random_distribution=pareto").random_distribution, Distribution::Pareto(0.2));
    assert_eq!(cli_job("--random_distribution=normal:20").random_distribution, Distribution::Normal(20.0));
    for bad in ["zipf:1", "pareto:1.5", "normal:100", "gauss:20", "zoned:60/10:40/90", "zipf:1.2:0.25", "zipf:x"] {
        assert!(cli(&format!("--name=j --random_distribution={bad}")).is_err(), "{bad}");
    }
}

#[test]
fn engines_schedulers_verify_and_zone_options() {
    for (value, engine) in [
        ("spdk", IoEngine::Spdk),
        ("io_uring_cmd", IoEngine::IoUringCmd),
        ("io_uring", IoEngine::IoUring),
        ("libaio", IoEngine::Libaio),
        ("psync", IoEngine::Psync),
        ("sync", IoEngine::Psync),
        ("pvsync2", IoEngine::Psync),
    ] {
        assert_eq!(cli_job(&format!("--ioengine={value}")).ioengine, engine);
    }
    assert!(cli_err("--ioengine=posixaio").message.contains("is not one of"));
    assert_eq!(cli_job("--scheduler=mq-deadline").scheduler, Some(Scheduler::MqDeadline));
    assert_eq!(cli_job("--ioscheduler=none").scheduler, Some(Scheduler::None));
    assert_eq!(cli_job("--verify=crc32c").verify, Verify::Crc32c);
    assert_eq!(cli_job("--verify=md5").verify, Verify::Md5);
    assert_eq!(cli_job("--verify=0").verify, Verify::None);
    let job = cli_job(
        "--zonemode=zbd --direct=1 --zonesize=64m --zonecapacity=48m --max_open_zones=14 --job_max_open_zones=2 \
         --zone_reset_threshold=0.7 --zone_reset_frequency=0.5 --read_beyond_wp=1",
    );
    assert_eq!(
        (job.zonemode, job.zonesize, job.zonecapacity),
        (ZoneMode::Zbd, Some(Size::Bytes(64 << 20)), Some(Size::Bytes(48 << 20)))
    );
    assert_eq!((job.max_open_zones, job.job_max_open_zones), (14, 2));
    assert_eq!((job.zone_reset_threshold, job.zone_reset_frequency, job.read_beyond_wp), (0.7, 0.5, true));
    assert!(cli_err("--zone_reset_threshold=1.5").message.contains("between 0 and 1"));
    assert!(cli_err("--max_open_zones=5000").message.contains("out of range"));
    assert!(cli_err("--zonemode=strided").message.contains("not modelled"));
    assert!(cli_err("--zonemode=host-aware").message.contains("not modelled"));
}

#[test]
fn confzns_options() {
    let job = cli_job("--zone_append=1 --finish --softfinish --softfinish_chunk=64k");
    assert!(job.zone_append && job.finish && job.softfinish);
    assert_eq!(job.softfinish_chunk, Some(Size::Bytes(65536)));
}

#[test]
fn zbd_writes_need_direct_io() {
    let err = cli_err("--zonemode=zbd --rw=write");
    assert_eq!(err.option.as_deref(), Some("direct"));
    assert!(err.message.contains("direct I/O is mandatory"));
    let err = file_err("[global]\nzonemode=zbd\n[w]\nrw=randwrite\ndirect=0\n");
    assert_eq!(err.location, "t.fio:3");
    // Reads do not need it (fio only checks writers).
    assert_eq!(cli_job("--zonemode=zbd --rw=read").zonemode, ZoneMode::Zbd);
}

#[test]
fn counts_are_bounded() {
    assert!(cli_err("--iodepth=0").message.contains("out of range"));
    assert!(cli_err("--numjobs=0").message.contains("out of range"));
    assert!(cli_err("--numjobs=5000").message.contains("out of range"));
    assert_eq!(cli_job("--numjobs=14").numjobs, 14);
    assert_eq!(cli_job("--number_ios=1000").number_ios, Some(1000));
    assert_eq!(cli_job("--randseed=42").randseed, Some(42));
}

#[test]
fn host_and_output_options_are_ignored_and_listed() {
    let job = cli_job(
        "--numa_cpu_nodes=0 --cpus_allowed=0-3 --hipri --sqthread_poll=1 --fixedbufs --registerfiles \
         --gtod_reduce=1 --thread --norandommap --refill_buffers --log_avg_msec=1000 --write_lat_log=x \
         --iomem=malloc --nice=-5 --invalidate=0 --exitall --buffer_compress_percentage=50",
    );
    for name in ["numa_cpu_nodes", "cpus_allowed", "hipri", "norandommap"] {
        assert!(job.ignored.iter().any(|n| n == name), "{name} not in {:?}", job.ignored);
    }
    // A polled ring's thread sleeps when idle, which the latency shows: modelled, not ignored.
    assert!(job.sqthread_poll && !job.ignored.iter().any(|n| n == "sqthread_poll"));
    // Aliases are listed under fio's canonical name.
    assert!(job.ignored.iter().any(|n| n == "mem"));
    // Still part of the job options fio prints.
    assert!(job.options.iter().any(|(n, v)| n == "numa_cpu_nodes" && v == "0"));
}

#[test]
fn fio_output_switches_are_ignored_and_not_job_options() {
    let set = cli("--output=x.json --output-format=json --name=a --eta=never --minimal --rw=write").unwrap();
    let job = &set.jobs[0];
    assert_eq!(job.options, opts(&[("name", "a"), ("rw", "write")]));
    assert!(job.ignored.iter().any(|n| n == "output-format"));
    assert!(cli("--name=a --parse-only").unwrap_err().message.contains("does not model"));
    assert!(cli("--name=a --section=x").unwrap_err().message.contains("does not model"));
}

#[test]
fn defaults_match_fio() {
    let job = &file_jobs("[d]\n")[0];
    assert_eq!((job.rw, job.bs[DDIR_READ], job.iodepth, job.numjobs), (RwKind::Read, bs(4096, 4096), 1, 1));
    assert_eq!((job.ioengine, job.direct, job.randrepeat, job.kb_base), (IoEngine::Psync, false, true, 1024));
    assert_eq!((job.zone_reset_threshold, job.zone_reset_frequency), (0.0, 0.0));
    assert_eq!((job.rwmixread, job.zonemode, job.runtime_ns, job.size), (50, ZoneMode::None, None, None));
}

// ---- the seed papers' command lines --------------------------------------

#[test]
fn paper_command_line_queue_depth() {
    let line = "--name=nvme0n2_write_4Ki_queue-depth-4 --output=x.json --output-format=json --filename=/dev/nvme0n2 \
                --direct=1 --size=100G --ioengine=libaio --iodepth=4 --rw=write --bs=4Ki --runtime=30 \
                --numa_cpu_nodes=0 --ramp_time=10 --time_based --percentile_list=50:95";
    let set = cli(line).unwrap();
    let job = &set.jobs[0];
    assert_eq!(job.name, "nvme0n2_write_4Ki_queue-depth-4");
    assert_eq!(job.filename.as_deref(), Some("/dev/nvme0n2"));
    assert_eq!((job.direct, job.size, job.ioengine), (true, Some(Size::Bytes(100 << 30)), IoEngine::Libaio));
    assert_eq!((job.iodepth, job.rw, job.bs[DDIR_WRITE]), (4, RwKind::Write, bs(4096, 4096)));
    assert_eq!((job.runtime_ns, job.ramp_time_ns, job.time_based), (Some(30_000_000_000), 10_000_000_000, true));
    assert_eq!(job.percentile_list, [50.0, 95.0]);
    assert!(job.ignored.contains(&"numa_cpu_nodes".to_string()));
}

#[test]
fn paper_command_line_zbd_numjobs() {
    let line = "--name=a --output-format=json --filename=/dev/nvme2n2 --direct=1 --size=3z --offset_increment=3z \
                --ioengine=psync --zonemode=zbd --rw=write --bs=4Ki --runtime=30 --numa_cpu_nodes=0 --ramp_time=10 \
                --group_reporting --numjobs=14 --percentile_list=50:95";
    let job = &cli(line).unwrap().jobs[0];
    assert_eq!((job.size, job.offset_increment), (Some(Size::Zones(3.0)), Size::Zones(3.0)));
    assert_eq!((job.zonemode, job.numjobs, job.group_reporting), (ZoneMode::Zbd, 14, true));
    assert_eq!(job.ioengine, IoEngine::Psync);
}

#[test]
fn error_display_is_located() {
    let err = file_err("[e]\nrw=wirte\n");
    assert_eq!(
        err.to_string(),
        "t.fio:2: option 'rw': rw: 'wirte' is not one of read, write, randread, randwrite, rw, readwrite, randrw, trim"
    );
}

// ---- fuzz ----------------------------------------------------------------

fn garbled_line() -> impl Strategy<Value = String> {
    let names = prop::sample::select(vec![
        "bs",
        "size",
        "rw",
        "runtime",
        "percentile_list",
        "startdelay",
        "rate",
        "kb_base",
        "zonemode",
        "name",
        "random_distribution",
        "time_based",
        "offset",
        "include",
        "numjobs",
        "bsrange",
        "direct",
    ]);
    let values = "[0-9a-zA-Z%:,.\\-${}\\[\\]=#; ]{0,12}";
    prop_oneof![
        (names, values).prop_map(|(n, v)| format!("{n}={v}")),
        "\\PC{0,20}",
        "\\[[a-z\\]\\[ ]{0,6}\\]?",
        Just("[global]".to_string()),
        Just("[job]".to_string()),
    ]
}

proptest! {
    #[test]
    fn garbled_job_files_never_panic(lines in prop::collection::vec(garbled_line(), 0..12)) {
        let text = lines.join("\n");
        let _ = parse_job_file("fuzz.fio", &text);
        let _ = parse_run(&[], &[("fuzz.fio".to_string(), text)]);
    }

    #[test]
    fn garbled_args_never_panic(args in prop::collection::vec(prop_oneof![
        garbled_line().prop_map(|l| format!("--{l}")),
        "\\PC{0,12}",
        Just("--name=x".to_string()),
    ], 0..10)) {
        let _ = parse_run(&args, &[]);
    }
}

#[test]
fn percentile_options_and_their_precision() {
    let job = cli_job("");
    assert_eq!(
        (job.report.clat_percentiles, job.report.lat_percentiles, job.report.slat_percentiles),
        (true, false, false)
    );
    assert_eq!(job.percentile_precision, 2, "fio's default list has two decimals (99.95)");
    let job = cli_job("--percentile_list=50:99.5 --lat_percentiles=1 --clat_percentiles=0 --slat_percentiles=1");
    assert_eq!((job.percentile_list.clone(), job.percentile_precision), (vec![50.0, 99.5], 1));
    assert_eq!(
        (job.report.clat_percentiles, job.report.lat_percentiles, job.report.slat_percentiles),
        (false, true, true)
    );
    assert_eq!(cli_job("--percentile_list=50:95").percentile_precision, 0);
    assert_eq!(cli_job("--percentile_list=99.999:1").percentile_precision, 3);
    assert!(cli_err("--lat_percentiles=yes").message.contains("not a boolean"));
    assert!(cli_err("--percentile_list=0:50").message.contains("not a percentile"));
}

#[test]
fn report_options_are_applied() {
    let job = cli_job("--significant_figures=6 --unit_base=1 --description=hello --thread --disk_util=0");
    assert_eq!(
        (job.report.sig_figs, job.report.unit_bits, job.report.description.as_deref()),
        (6, true, Some("hello"))
    );
    assert!(job.report.thread && !job.report.disk_util);
    assert!(cli_err("--significant_figures=11").message.contains("out of range"));
    assert!(cli_err("--unit_base=2").message.contains("not one of 0, 8, 1"));
}

#[test]
fn options_that_change_fios_output_are_modelled_or_refused_never_ignored() {
    // Refused: they change what fio reports or writes, and zonelab does not model that.
    for option in [
        "--block_error_percentiles=1",
        "--write_hist_log=h",
        "--log_hist_msec=100",
        "--cmdprio_percentage=10",
        "--cmdprio_class=1",
    ] {
        let err = cli_err(option);
        assert!(err.message.contains("does not model it: remove it"), "{option}: {err}");
        assert_eq!(err.location, "command line", "{option}");
    }
    for switch in ["--status-interval=1", "--bandwidth-log"] {
        assert!(cli(&format!("--name=a {switch}")).unwrap_err().message.contains("does not model"), "{switch}");
    }
    // At fio's default only.
    for (option, fine) in [
        ("--log_unix_epoch=1", "--log_unix_epoch=0"),
        ("--log_prio=1", "--log_prio=0"),
        ("--iodepth_batch_submit=8", "--iodepth_batch=1"),
        ("--iodepth_batch_complete_min=4", "--iodepth_batch_complete_min=1"),
        ("--io_submit_mode=offload", "--io_submit_mode=inline"),
        ("--verify_dump=1", "--verify_dump=0"),
    ] {
        let err = cli_err(option);
        assert!(
            err.message.contains("is not modelled") && err.message.contains("(fio's default) is accepted"),
            "{err}"
        );
        cli_job(fine);
    }
    let err = file_err("[j]\nrw=read\nlog_store_compressed=1\n");
    assert_eq!((err.location.as_str(), err.option.as_deref()), ("t.fio:3", Some("log_store_compressed")));
    assert!(err.to_string().contains("only 0 (fio's default) is accepted"), "{err}");
    // Accepted host tuning: the reports are what fio's would be.
    let job = cli_job("--cpus_allowed=1 --iodepth_batch_complete_max=16 --verify_async=2 --log_compression=1m");
    assert_eq!(job.ignored.len(), 4, "{:?}", job.ignored);
}
