//! `--cmdhelp[=OPTION]`, laid out as fio prints it: without a value (or
//! `all`) one line per option, with an option its description block. The
//! descriptions say what zonelab does with the option, which is what a user
//! of the simulator needs: modelled, accepted without effect, or refused.

use super::options::{self, Class, OptionInfo};
use std::fmt::Write;

/// What each modelled option does in zonelab (the rest are described by class).
const MODELLED_HELP: &[(&str, &str)] = &[
    ("name", "Name of this job; starts a new job on the command line"),
    (
        "filename",
        "Device to use: /dev/nvme0nN or /dev/ng0nN picks NSID N on a device with several namespaces (any name on one)",
    ),
    ("rw", "IO direction: read, write, trim, randread, randwrite, rw, randrw"),
    ("rwmixread", "Percentage of a mixed workload that is reads"),
    ("rwmixwrite", "Percentage of a mixed workload that is writes"),
    ("bs", "Block size unit (per direction: read,write,trim)"),
    ("bsrange", "Block size range: a random size between min and max"),
    ("bs_unaligned", "Block sizes in bsrange need not be a multiple of the minimum"),
    ("iodepth", "Number of IO buffers to keep in flight"),
    ("numjobs", "Duplicate this job this many times"),
    ("size", "Total size of device IO for this job"),
    ("io_size", "Total IO to do (defaults to size)"),
    ("offset", "Start IO from this offset"),
    ("offset_increment", "Added to offset for each clone of the job"),
    ("number_ios", "Force job completion after this number of IOs"),
    ("zonemode", "Mode for zonesize, zonerange and zoneskip: none, strided or zbd"),
    ("zonesize", "Amount of data to read per zone (must match the device with zbd)"),
    ("zonecapacity", "Zone capacity for strided mode"),
    ("zoneskip", "Space between the zones IO is done to"),
    ("max_open_zones", "Limit on the number of simultaneously opened sequential write zones"),
    ("job_max_open_zones", "Limit on the number of zones one job writes at a time"),
    ("zone_reset_threshold", "Share of written zones above which zones are reset"),
    ("zone_reset_frequency", "Zone reset frequency once the threshold is reached"),
    ("read_beyond_wp", "Allow reads beyond the zone write pointer"),
    ("runtime", "Stop workload when this amount of (simulated) time has passed"),
    ("time_based", "Keep running until runtime is met"),
    ("ramp_time", "Ramp up time before measuring performance"),
    ("startdelay", "Only start the job this long after the run starts"),
    ("rate", "Set bandwidth rate (per direction)"),
    ("rate_iops", "Limit IO used to this number of IO operations per second"),
    ("rate_process", "How the rate is held: linear or poisson"),
    ("read_iolog", "Replay this fio iolog (version 2 or 3) instead of generating IO"),
    ("replay_no_stall", "Replay the iolog as fast as iodepth allows, without its delays and waits"),
    ("replay_time_scale", "Scale the iolog's delays by 100 / this (percent)"),
    ("replay_skip", "Skip these directions of the iolog: read, write, trim, sync (comma-separated)"),
    ("thinktime", "Idle time between IO buffers"),
    ("percentile_list", "Latency percentiles to report (colon-separated)"),
    ("clat_percentiles", "Report completion latency percentiles (default on)"),
    ("lat_percentiles", "Report total latency percentiles"),
    ("slat_percentiles", "Report submission latency percentiles"),
    ("significant_figures", "Significant figures of sizes and rates in the normal report (1-10)"),
    ("unit_base", "Rates in the normal report in bytes (0 or 8) or bits (1)"),
    ("description", "Text description of the job, printed in the reports"),
    ("thread", "Run the job as threads (the normal report's \"Starting\" line)"),
    ("disk_util", "Report the disk's statistics (default on)"),
    ("group_reporting", "Report the jobs of a group as one (rates summed as fio does)"),
    ("stonewall", "Wait for the preceding jobs to finish before starting this one"),
    ("new_group", "Mark the start of a new reporting group"),
    ("randrepeat", "Use a repeatable random IO pattern"),
    ("randseed", "Seed of the job's random generator"),
    ("random_distribution", "Random offset distribution: random, zipf:θ, pareto:h, normal:σ"),
    ("direct", "Use O_DIRECT IO (required for writes with zonemode=zbd)"),
    ("buffered", "Use buffered IO (the opposite of direct)"),
    ("ioengine", "IO engine: psync, libaio, io_uring, io_uring_cmd, ..."),
    ("ioscheduler", "IO scheduler of the job: none, mq-deadline or zinc"),
    ("scheduler", "IO scheduler of the job (ConfZNS++ spelling of ioscheduler)"),
    ("verify", "Verify the data read back: md5, crc32c, pattern, ..."),
    ("do_verify", "Read back what was written once the job is done (needs verify; default on)"),
    ("verify_fatal", "Stop a read back at its first bad block"),
    ("exitall", "Terminate all jobs when one exits (see exit_what)"),
    ("exit_what", "Jobs exitall stops: group, stonewall or all"),
    ("exitall_on_error", "Terminate all jobs when one exits in error (see exit_what)"),
    ("write_iolog", "Write the job's I/Os as a fio version 3 iolog FILE (created; one per thread)"),
    ("write_lat_log", "Write latency logs: PREFIX_lat.N.log, _slat, _clat (simulated ms since the job's start)"),
    ("write_bw_log", "Write a bandwidth log: PREFIX_bw.N.log"),
    ("write_iops_log", "Write an IOPS log: PREFIX_iops.N.log"),
    ("log_avg_msec", "Average log entries over this many ms (0: a line per I/O)"),
    ("log_max_value", "Log a window's largest value instead of its mean"),
    ("log_offset", "Log the offset of each I/O"),
    ("per_job_logs", "A log file per thread (1, the only value zonelab writes)"),
    ("bwavgtime", "Bandwidth sampling window (ms)"),
    ("iopsavgtime", "IOPS sampling window (ms)"),
    ("disable_lat", "No total latency statistics"),
    ("disable_clat", "No completion latency statistics"),
    ("disable_slat", "No submission latency statistics"),
    ("disable_bw_measurement", "No per-I/O bandwidth samples"),
    ("gtod_reduce", "No latency statistics (disable_lat, _clat, _slat, _bw_measurement)"),
    ("log_prio", "Log I/O priorities (0 only: simulated I/Os have none)"),
    ("log_store_compressed", "Store logs compressed (0 only)"),
    ("log_unix_epoch", "Log times since the Unix epoch (0 only: times are simulated)"),
    ("log_alternate_epoch", "Log times since another epoch (0 only: times are simulated)"),
    ("iodepth_batch", "Requests submitted at once (1 only: one call per request)"),
    ("iodepth_batch_complete_min", "Completions waited for at once (1 only)"),
    ("io_submit_mode", "How requests are submitted (inline only)"),
    ("verify_dump", "Dump bad blocks to files (0 only)"),
    ("verify_state_load", "Load a saved verify state (0 only)"),
    ("end_fsync", "Issue a Flush when the job is done writing; its run time includes it"),
    ("zone_append", "Write with Zone Append instead of Write"),
    ("finish", "Finish each zone once it has been written (ConfZNS++)"),
    ("softfinish", "Finish zones by writing dummy data in chunks (ZINC softFinish)"),
    ("softfinish_chunk", "Size of one softFinish dummy write"),
    ("softfinish_pause", "Pause between softFinish dummy writes"),
    ("sqthread_poll", "io_uring: a kernel thread polls the submission queue (it sleeps after 1 s idle)"),
    ("kb_base", "Unit base of sizes: 1024 or 1000"),
    ("fdp", "Flexible Data Placement: writes name a placement identifier (dataplacement=fdp)"),
    ("dataplacement", "Data placement directive on writes: none or fdp (streams is not modelled)"),
    ("plids", "Indexes into the namespace's placement identifier list (Reclaim Unit Handle Status): 0,2-4"),
    ("plid_select", "Which placement identifier a write names next: roundrobin, random or scheme (dp_scheme)"),
    ("dp_scheme", "File of 'start,end,pid' lines: the placement identifier of writes in [start, end)"),
];

/// `--cmdhelp=NAME` for an option fio does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--cmdhelp={name}: no such option{}; --cmdhelp lists them all", suggestion.map(|s| format!(" (did you mean '{s}'?)")).unwrap_or_default())]
pub struct UnknownOption {
    /// The name asked for.
    pub name: String,
    /// The known option closest to it, if one is within two edits.
    pub suggestion: Option<&'static str>,
}

/// fio's `--cmdhelp`: `None` or `all` lists every option; an option name
/// describes it. Err: the unknown name with the closest known one.
pub fn cmdhelp(query: Option<&str>) -> Result<String, UnknownOption> {
    let mut out = String::new();
    match query.filter(|q| !q.is_empty() && *q != "all") {
        None => {
            let mut seen: Vec<&str> = Vec::new();
            for info in options::all() {
                if seen.contains(&info.name) {
                    continue;
                }
                seen.push(info.name);
                let _ = writeln!(out, "{:<24}: {}", info.name, description(&info));
            }
        }
        Some(name) => {
            let Some(info) = options::lookup(name) else {
                return Err(UnknownOption { name: name.to_string(), suggestion: options::suggest(name) });
            };
            describe(&mut out, &info);
        }
    }
    Ok(out)
}

fn description(info: &OptionInfo) -> &'static str {
    match info.class {
        Class::Modelled(_) => MODELLED_HELP.iter().find(|(n, _)| *n == info.name).map_or("Modelled", |(_, h)| h),
        Class::Ignored => "Accepted: host tuning with no counterpart in a simulation (the reports are unchanged)",
        Class::Unmodelled => "Refused: changes the result and zonelab does not model it",
    }
}

/// fio's single-option block: right-aligned keys, then the values.
fn describe(out: &mut String, info: &OptionInfo) {
    let _ = writeln!(out, "{:>20}: {}", info.name, description(info));
    for alias in options::aliases_of(info.name) {
        let _ = writeln!(out, "{:>20}: {alias}", "alias");
    }
    let kind = if info.flag { "empty or boolean value ([0|1])" } else { "value required" };
    let _ = writeln!(out, "{:>20}: {kind}", "type");
    let class = match info.class {
        Class::Modelled(_) => "modelled",
        Class::Ignored => "ignored",
        Class::Unmodelled => "refused",
    };
    let _ = writeln!(out, "{:>20}: {class}", "zonelab");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_modelled_option_has_a_description_and_every_help_names_an_option() {
        for info in options::all() {
            if matches!(info.class, Class::Modelled(_)) {
                assert_ne!(description(&info), "Modelled", "{} lacks a description", info.name);
            }
        }
        for (name, _) in MODELLED_HELP {
            assert!(options::lookup(name).is_some_and(|i| i.name == *name), "{name} is not a canonical option");
        }
    }

    #[test]
    fn cmdhelp_lists_all_and_describes_one_like_fio() {
        let all = cmdhelp(None).unwrap();
        assert!(all.lines().any(|l| l.starts_with("bs                      : Block size unit")), "{all}");
        assert_eq!(cmdhelp(Some("all")).unwrap(), all);
        let bs = cmdhelp(Some("blocksize")).unwrap();
        assert!(bs.starts_with("                  bs: Block size unit"), "{bs}");
        assert!(bs.contains("               alias: blocksize\n"), "{bs}");
        assert!(cmdhelp(Some("time_based")).unwrap().contains("empty or boolean value"));
        let err = cmdhelp(Some("ioengin")).unwrap_err().to_string();
        assert!(err.contains("did you mean 'ioengine'"), "{err}");
    }
}
