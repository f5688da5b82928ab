//! `zonelab-fuzz [TARGET|all] --seconds N --seed S [--limit-ms L] [--out DIR]`
//! and `zonelab-fuzz TARGET --replay FILE`. Exit status 0: nothing found;
//! 1: a crash or a hang (the input is written to DIR); 2: bad arguments.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use zonelab_fuzz::{fuzz, install_quiet_panic_hook, run_one, target, Budget, Finding, Target, TARGETS};

const USAGE: &str =
    "usage: zonelab-fuzz [trace|fio|iolog|recording|config|ublk|nvme-tcp|nvme-tcp-fdp|znsplus|nsmgmt|zrwa|nslist|all] [--seconds N (per target, default 10)] \
                     [--seed S (default 1)] [--limit-ms L (a slower input is a hang, default 2000)] \
                     [--out DIR (default fuzz-findings)] | zonelab-fuzz TARGET --replay FILE";

struct Args {
    targets: Vec<Target>,
    seconds: u64,
    seed: u64,
    limit: Duration,
    out: PathBuf,
    replay: Option<PathBuf>,
}

/// A command line that does not parse, or a request for help.
#[derive(Debug, thiserror::Error)]
enum ArgError {
    #[error("{0} needs a value")]
    MissingValue(String),
    #[error("{name} must be a non-negative integer, got '{got}'")]
    NotANumber { name: String, got: String },
    #[error("unknown target '{0}'")]
    UnknownTarget(String),
    /// `-h` or `--help`: print the usage, successfully.
    #[error("help asked for")]
    Help,
}

fn parse_args() -> Result<Args, ArgError> {
    let mut args = Args {
        targets: TARGETS.to_vec(),
        seconds: 10,
        seed: 1,
        limit: Duration::from_secs(2),
        out: "fuzz-findings".into(),
        replay: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().ok_or_else(|| ArgError::MissingValue(name.into()));
        let number =
            |name: &str, v: String| v.parse::<u64>().map_err(|_| ArgError::NotANumber { name: name.into(), got: v });
        match arg.as_str() {
            "--seconds" => args.seconds = number("--seconds", value("--seconds")?)?,
            "--seed" => args.seed = number("--seed", value("--seed")?)?,
            "--limit-ms" => args.limit = Duration::from_millis(number("--limit-ms", value("--limit-ms")?)?.max(1)),
            "--out" => args.out = value("--out")?.into(),
            "--replay" => args.replay = Some(value("--replay")?.into()),
            "-h" | "--help" => return Err(ArgError::Help),
            "all" => args.targets = TARGETS.to_vec(),
            name => args.targets = vec![target(name).ok_or_else(|| ArgError::UnknownTarget(name.into()))?],
        }
    }
    Ok(args)
}

/// Writes the input of a finding and says how to reproduce it, on stdout:
/// stderr carries what the targets' code prints (the ublk backend logs its
/// refusals), which a long run may want to discard.
fn report_finding(args: &Args, name: &str, index: u64, input: &str, finding: &Finding) {
    let dir = args.out.join(name);
    let path = dir.join(format!("seed{}-input{index}.txt", args.seed));
    let saved = std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&path, input));
    let what = match finding {
        Finding::Crash(m) => format!("crash: {m}"),
        Finding::Hang(d) => format!("hang: {:.1} s (limit {:.1} s)", d.as_secs_f64(), args.limit.as_secs_f64()),
    };
    println!("zonelab-fuzz: target {name}, seed {}, input {index}: {what}", args.seed);
    let shown: String = input.chars().take(2000).collect();
    println!(
        "input ({} bytes{}):\n{shown}",
        input.len(),
        if shown.len() < input.len() { ", first 2000 chars" } else { "" }
    );
    match saved {
        Ok(()) => println!("saved to {}; replay: zonelab-fuzz {name} --replay {}", path.display(), path.display()),
        Err(e) => println!("could not save it to {}: {e}", path.display()),
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(ArgError::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("zonelab-fuzz: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    install_quiet_panic_hook();
    if let Some(file) = &args.replay {
        let [t] = args.targets[..] else {
            eprintln!("zonelab-fuzz: --replay needs one target");
            return ExitCode::from(2);
        };
        let input = String::from_utf8_lossy(&std::fs::read(file).unwrap_or_default()).into_owned();
        return match run_one(t, &input, args.limit) {
            Ok(took) => {
                println!("{}: {} ok in {:.3} s", t.name, file.display(), took.as_secs_f64());
                ExitCode::SUCCESS
            }
            Err(finding) => {
                report_finding(&args, t.name, 0, &input, &finding);
                ExitCode::from(1)
            }
        };
    }
    for &t in &args.targets {
        let report = fuzz(t, args.seed, Budget::Seconds(args.seconds), args.limit);
        let rate = report.inputs as f64 / report.elapsed.as_secs_f64().max(1e-9);
        println!("{}: {} inputs in {:.1} s ({rate:.0}/s)", report.target, report.inputs, report.elapsed.as_secs_f64());
        if let Some((index, input, finding)) = &report.finding {
            report_finding(&args, t.name, *index, input, finding);
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}
