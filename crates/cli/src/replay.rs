//! `zonelab replay FILE`: a recording replayed on a device in virtual time.
//! It is `zonelab run` with one job that reads the recording (fio's
//! `read_iolog`), so the report is fio's own (JSON unless asked otherwise)
//! and every option of `run` (device, seed, output) applies.

use crate::UserError;
use std::process::ExitCode;

// `replay` as clap shows it (help, completions, man page); `run_args` reads it
// (`run`'s options and fio's pass through, which clap cannot know).
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Every option of `zonelab run` (--device, --zones, --output-format, --seed, ...) and fio's job \
                        options (--thinktime=...) may follow. Exit status: 0, 1 when an I/O failed (a write off \
                        its zone's write pointer names its line), 2 for a usage error or a bad recording."
)]
pub(crate) struct ReplayCommand {
    /// The recording: a `zonelab serve --record` recording, a fio iolog, version 2 or 3 (what fio's write_iolog
    /// writes), or a blktrace capture.
    file: String,
    /// open: the log's timestamps and waits pace it (fio's replay_no_stall=0); closed: each I/O as soon as
    /// --iodepth and the I/Os it depends on allow (replay_no_stall=1). A recording's closed loop issues each command
    /// once the completion it waited for is in, after its think time.
    #[arg(long = "loop", value_name = "open|closed", default_value = "open")]
    loop_mode: String,
    /// I/Os in flight at most.
    #[arg(long, default_value_t = 1)]
    iodepth: u32,
    /// fio engine whose host stack the replay pays: libaio, io_uring, io_uring_cmd, spdk, psync.
    #[arg(long, default_value = "libaio")]
    ioengine: String,
    /// Percent: the log's delays are scaled by 100 / this (fio's replay_time_scale).
    #[arg(long = "time-scale", default_value_t = 100)]
    time_scale: u32,
    /// Recordings only, open loop: issue at the model's submission times (device) or at the arrivals on the
    /// server's wall clock (wall).
    #[arg(long, value_name = "device|wall", default_value = "device")]
    clock: String,
    /// Recordings only: report the live run as recorded, without replaying it.
    #[arg(long)]
    recorded: bool,
    /// Recordings only: write the replay's command stream to FILE (created), in the recording's format.
    #[arg(long, value_name = "FILE")]
    record: Option<String>,
}

/// Options of recordings only.
const RECORDING_ONLY: [&str; 3] = ["clock", "recorded", "record"];

/// `replay`'s own options, which take a value.
const OWN: [&str; 4] = ["loop", "iodepth", "ioengine", "time-scale"];

/// Runs `zonelab replay` with `args` (after the subcommand).
pub fn run(args: &[String]) -> Result<ExitCode, UserError> {
    if args.iter().any(|a| a == "--help" || a == "-h") {
        let mut cli = <crate::Cli as clap::CommandFactory>::command();
        cli.build();
        let help = cli.find_subcommand_mut("replay").map(|c| c.render_long_help().to_string()).unwrap_or_default();
        crate::run::write_stdout(&help)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.iter().any(|a| !a.starts_with('-') && crate::replay_recording::is_recording(a)) {
        return crate::replay_recording::run(args);
    }
    let own = |a: &String| {
        RECORDING_ONLY.iter().any(|o| a.strip_prefix("--").is_some_and(|b| b.split('=').next() == Some(o)))
    };
    if let Some(arg) = args.iter().find(|a| own(a)) {
        return Err(UserError(format!("{arg}: only a zonelab recording (serve --record) takes it")));
    }
    crate::run::run(&run_args(args)?)
}

/// `zonelab run`'s arguments for a replay: what is not `replay`'s own passes
/// through, then the job that reads the recording.
fn run_args(args: &[String]) -> Result<Vec<String>, UserError> {
    let mut own = std::collections::BTreeMap::from([
        ("loop", "open".to_string()),
        ("iodepth", "1".to_string()),
        ("ioengine", "libaio".to_string()),
        ("time-scale", "100".to_string()),
    ]);
    let (mut file, mut rest) = (None, Vec::new());
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let body = arg.strip_prefix("--").unwrap_or_default();
        let (name, inline) = body.split_once('=').map_or((body, None), |(n, v)| (n, Some(v.to_string())));
        if let Some(&key) = OWN.iter().find(|&&k| k == name) {
            let value = inline.or_else(|| iter.next().cloned());
            own.insert(key, value.ok_or_else(|| UserError(format!("--{key} needs a value")))?);
        } else if !arg.starts_with('-') && file.is_none() && rest_takes_no_value(&rest) {
            file = Some(arg.clone());
        } else {
            rest.push(arg.clone());
        }
    }
    let file = file.ok_or_else(|| UserError("replay: give the recording, e.g. zonelab replay trace.iolog".into()))?;
    let no_stall = match own["loop"].as_str() {
        "open" => "0",
        "closed" => "1",
        other => return Err(UserError(format!("--loop '{other}': use open or closed"))),
    };
    if !rest.iter().any(|a| a.starts_with("--output-format") || a == "--minimal") {
        rest.push("--output-format=json".into());
    }
    rest.extend([
        "--name=replay".to_string(),
        format!("--read_iolog={file}"),
        format!("--replay_no_stall={no_stall}"),
        format!("--replay_time_scale={}", own["time-scale"]),
        format!("--ioengine={}", own["ioengine"]),
        format!("--iodepth={}", own["iodepth"]),
        "--direct=1".to_string(),
    ]);
    Ok(rest)
}

/// Whether the last argument passed through is not an option waiting for
/// its value (`--device zn540`): the next bare word is then the recording.
fn rest_takes_no_value(rest: &[String]) -> bool {
    let Some(last) = rest.last() else { return true };
    let Some(name) = last.strip_prefix("--").filter(|n| !n.contains('=')) else { return true };
    !crate::run::takes_value(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_recording_becomes_a_read_iolog_job() {
        let args = run_args(&strings(&["--device", "zn540", "t.log", "--loop", "closed", "--iodepth=4"]));
        let args = args.unwrap_or_else(|e| panic!("{}", e.0));
        assert_eq!(
            args,
            strings(&[
                "--device",
                "zn540",
                "--output-format=json",
                "--name=replay",
                "--read_iolog=t.log",
                "--replay_no_stall=1",
                "--replay_time_scale=100",
                "--ioengine=libaio",
                "--iodepth=4",
                "--direct=1"
            ])
        );
        assert!(run_args(&strings(&["--loop=sideways", "t.log"])).is_err());
        assert!(run_args(&strings(&["--device", "zn540"])).is_err());
    }
}
