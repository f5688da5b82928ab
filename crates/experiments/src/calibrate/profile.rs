//! `zonelab profile`: a measurement plan for a user's own drive.
//!
//! The plan is a list of measured jobs, each written as the rows of the
//! measurements format it yields (`docs/measurements.md`). Each fio job
//! file is the one `zonelab calibrate` simulates for those rows
//! (`fio_job::job_file` with the same frame), so the drive runs
//! exactly what the model is later asked to predict. Finish and reset at
//! several occupancies cannot be fio jobs (fio issues no Zone Finish): the
//! script times them with nvme-cli ([`TimedPoint`], `docs/profile.md`).
//!
//! [`write()`] puts `jobs/*.fio`, `plan.json` (the [`Manifest`]) and `run.sh`
//! in a directory; [`super::fio_results`] reads the results back as rows.

use super::execute::{self, Settings};
use super::fio_job::job_file;
use super::plan::{self as rowplan, Run};
use super::rows::{Metric, Op, Row, Stack};
use crate::error::{io, json, Error, Result};
use serde::{Deserialize, Serialize};
use std::path::Path;
use zonelab_device::DeviceConfig;

/// The manifest's format version.
pub const MANIFEST_VERSION: u32 = 1;
/// The `source` of every row a profile yields.
pub const SOURCE: &str = "profile";
/// The phrase in a row's notes that marks a command timed by `run.sh`
/// (nvme-cli), which calibrate replays as a command sequence on the device.
pub const TIMED_NOTE: &str = "timed command";
/// Samples of each timed management point (as calibrate's command sequences take).
pub const TIMED_SAMPLES: u32 = 6;
/// The script's writes that fill a zone before a timed command.
const FILL_BYTES: u64 = 128 * 1024;
/// Timings of a cheap command (Report Zones of one zone) that measure what
/// starting nvme-cli costs; their median is taken off every timed command.
pub const BASELINE_SAMPLES: u32 = 15;

/// What `zonelab profile` is asked for.
#[derive(Debug, Clone)]
pub struct Options {
    /// The device the script runs against (`/dev/nvme0n2` or `/dev/ng0n2`).
    pub device_path: String,
    /// The smaller plan (a few minutes on a drive).
    pub quick: bool,
    /// Measured window of an I/O job, ms (calibrate's `--runtime-ms`).
    pub runtime_ms: u64,
    /// The drive's geometry (zone size, capacity, LBA format) and the model to start from.
    pub device: DeviceConfig,
}

/// One measured row of a job: everything of a measurements row but its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RowTemplate {
    /// The row's id (unique in the plan).
    pub id: String,
    /// The measured operation.
    pub op: Op,
    /// Request size in bytes (I/O rows).
    pub bs: Option<u64>,
    /// Queue depth per job.
    pub qd: Option<u32>,
    /// fio jobs running `op`.
    pub jobs: Option<u32>,
    /// What ran beside it (`docs/measurements.md`'s phrases).
    pub background: String,
    /// What is measured.
    pub metric: Metric,
    /// Notes (occupancy of a timed command).
    pub notes: String,
}

/// One fio job of the plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanJob {
    /// Its name: `jobs/NAME.fio`, `results/NAME.json`.
    pub name: String,
    /// The fio report's job (group) the rows are read from.
    pub measured: String,
    /// The direction the rows are read from: `read`, `write` or `trim`.
    pub dir: String,
    /// A fio option upstream fio lacks that the job needs (`zone_append`), if any.
    pub needs: Option<String>,
    /// The rows it yields.
    pub rows: Vec<RowTemplate>,
}

/// One management command timed at one occupancy by `run.sh`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimedPoint {
    /// `finish` or `reset`.
    pub op: Op,
    /// LBAs written into the zone first.
    pub lbas: u64,
    /// The row it yields (median latency of the samples, nvme-cli's start taken off).
    pub row: RowTemplate,
}

/// `plan.json`: what each job and timed point yields, and the drive it assumes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// [`MANIFEST_VERSION`].
    pub version: u32,
    /// The device the script is written for.
    pub device_path: String,
    /// The I/O path every job takes.
    pub stack: Stack,
    /// LBA format, bytes.
    pub lba_bytes: u32,
    /// Zone size, bytes.
    pub zone_bytes: u64,
    /// Zone capacity, bytes.
    pub zcap_bytes: u64,
    /// Zones the jobs reach (the device must have at least these).
    pub zones_needed: u64,
    /// Measured window of an I/O job, ms.
    pub runtime_ms: u64,
    /// The configuration the plan's geometry came from.
    pub device: String,
    /// The fio jobs.
    pub jobs: Vec<PlanJob>,
    /// The timed management commands.
    pub timed: Vec<TimedPoint>,
}

impl Manifest {
    /// Every row template with the value `value` gives it (None: no number, the row is left out).
    pub fn rows(&self, mut value: impl FnMut(&RowTemplate) -> Option<f64>) -> Vec<Row> {
        let templates = self.jobs.iter().flat_map(|j| j.rows.iter().map(move |r| (j.name.as_str(), r)));
        let timed = self.timed.iter().map(|t| ("timed", &t.row));
        templates
            .chain(timed)
            .filter_map(|(figure, t)| {
                let v = value(t)?;
                Some(self.row(figure, t, v))
            })
            .collect()
    }

    /// The measurements row of `t` with value `value`.
    pub fn row(&self, figure: &str, t: &RowTemplate, value: f64) -> Row {
        Row {
            id: t.id.clone(),
            source: SOURCE.into(),
            figure: figure.into(),
            lba_bytes: self.lba_bytes,
            stack: if t.notes.contains(TIMED_NOTE) { Stack::Spdk } else { self.stack },
            op: t.op,
            bs: t.bs,
            qd: t.qd,
            jobs: t.jobs,
            zones: None,
            background: t.background.clone(),
            metric: t.metric,
            value,
            notes: t.notes.clone(),
            line: 0,
        }
    }
}

/// The stack a device path takes: NVMe passthrough on a generic char
/// device (`/dev/ngXnY`); libaio without a scheduler on a block device
/// (fio's zoned-device tests run libaio; its io_uring engine has had no
/// zone hooks of its own for block devices, axboe/fio#2035).
pub fn stack_of(device_path: &str) -> Stack {
    let name = device_path.rsplit('/').next().unwrap_or("");
    if name.starts_with("ng") {
        Stack::IoUringCmd
    } else {
        Stack::LibaioNone
    }
}

/// An I/O job of the plan: op, bs, qd, jobs, background.
type IoPoint = (Op, u64, u32, u32, &'static str);

const KI: u64 = 1024;
const IO_METRICS: [Metric; 5] =
    [Metric::Kiops, Metric::LatMeanUs, Metric::LatP50Us, Metric::LatP95Us, Metric::LatP99Us];
const RESET_METRICS: [Metric; 3] = [Metric::PerS, Metric::MsMean, Metric::MsP95];

/// The plan's I/O points: QD and size sweeps of writes (one zone per job,
/// QD 1: the block layer keeps one write per zone), appends and reads, then
/// I/O beside resets.
fn io_points(quick: bool) -> Vec<IoPoint> {
    let mut v: Vec<IoPoint> = Vec::new();
    let (write_bs, write_jobs): (&[u64], &[u32]) =
        if quick { (&[4 * KI, 64 * KI], &[1, 2]) } else { (&[4 * KI, 8 * KI, 16 * KI, 64 * KI, 128 * KI], &[1, 2, 4]) };
    for &bs in write_bs {
        for &jobs in write_jobs {
            v.push((Op::Write, bs, 1, jobs, ""));
        }
    }
    let (append_bs, append_qd): (&[u64], &[u32]) =
        if quick { (&[4 * KI, 16 * KI], &[1, 8]) } else { (&[4 * KI, 8 * KI, 16 * KI, 64 * KI], &[1, 2, 4, 8, 16]) };
    for &bs in append_bs {
        for &qd in append_qd {
            v.push((Op::Append, bs, qd, 1, ""));
        }
    }
    let (read_bs, read_qd): (&[u64], &[u32]) =
        if quick { (&[4 * KI, 128 * KI], &[1, 16]) } else { (&[4 * KI, 16 * KI, 128 * KI], &[1, 4, 16, 64]) };
    for &bs in read_bs {
        for &qd in read_qd {
            v.push((Op::Read, bs, qd, 1, ""));
            v.push((Op::Randread, bs, qd, 1, ""));
        }
    }
    v.push((Op::Write, 8 * KI, 1, 1, "reset full zones unthrottled"));
    if !quick {
        v.push((Op::Randread, 8 * KI, 16, 1, "reset full zones unthrottled"));
        v.push((Op::Write, 8 * KI, 1, 3, "reset full zones unthrottled"));
    }
    v
}

/// Reset jobs: alone, and beside I/O.
fn reset_points(quick: bool) -> Vec<(u32, &'static str)> {
    let mut v = vec![(1, ""), (1, "write 8KiB QD1 x1 jobs")];
    if !quick {
        v.extend([(2, ""), (1, "randread 8KiB QD16"), (1, "write 8KiB QD1 x3 jobs")]);
    }
    v
}

/// Occupancies of the timed finishes and resets, in hundredths of a percent
/// of the zone capacity (10,000: full; a finish is never timed on a full zone).
fn occupancies(quick: bool, op: Op) -> Vec<u32> {
    let v: &[u32] = match (quick, op) {
        (true, Op::Finish) => &[1250, 5000, 9900],
        (true, _) => &[1250, 5000, 10_000],
        (false, Op::Finish) => &[100, 1250, 2500, 5000, 7500, 9900],
        (false, _) => &[100, 1250, 2500, 5000, 7500, 10_000],
    };
    v.to_vec()
}

fn short_size(bytes: u64) -> String {
    if bytes.is_multiple_of(KI) {
        format!("{}k", bytes / KI)
    } else {
        bytes.to_string()
    }
}

fn templates(
    name: &str,
    op: Op,
    bs: Option<u64>,
    qd: u32,
    jobs: u32,
    bg: &str,
    metrics: &[Metric],
) -> Vec<RowTemplate> {
    metrics
        .iter()
        .map(|&metric| RowTemplate {
            id: format!("{name}:{}", metric.name()),
            op,
            bs,
            qd: Some(qd),
            jobs: Some(jobs),
            background: bg.into(),
            metric,
            notes: String::new(),
        })
        .collect()
}

/// The fio jobs of the plan, each with its rows.
pub fn plan_jobs(quick: bool) -> Vec<PlanJob> {
    let mut out = Vec::new();
    for (op, bs, qd, jobs, bg) in io_points(quick) {
        let opname = format!("{op:?}").to_lowercase();
        let beside = if bg.is_empty() { String::new() } else { "-beside-resets".into() };
        let name = format!("{opname}-{}-qd{qd}-j{jobs}{beside}", short_size(bs));
        let dir = if matches!(op, Op::Read | Op::Randread) { "read" } else { "write" };
        let needs = (op == Op::Append).then(|| "zone_append".to_string());
        let rows = templates(&name, op, Some(bs), qd, jobs, bg, &IO_METRICS);
        out.push(PlanJob { name, measured: "main".into(), dir: dir.into(), needs, rows });
    }
    for (jobs, bg) in reset_points(quick) {
        let beside = match bg {
            "" => String::new(),
            b => format!("-beside-{}", b.split_whitespace().take(1).collect::<String>()),
        };
        let x = if bg.contains("x3") { "-x3" } else { "" };
        let name = format!("reset-j{jobs}{beside}{x}");
        let rows = templates(&name, Op::Reset, None, 1, jobs, bg, &RESET_METRICS);
        out.push(PlanJob { name, measured: "main".into(), dir: "trim".into(), needs: None, rows });
    }
    out
}

/// The timed finishes and resets at occupancies of a zone of `zcap_lbas`,
/// each a whole number of the script's 128 KiB fill writes (or the whole zone).
pub fn timed_points(quick: bool, zcap_lbas: u64, lba_bytes: u64) -> Vec<TimedPoint> {
    let step = (FILL_BYTES / lba_bytes).max(1);
    let mut out = Vec::new();
    for op in [Op::Finish, Op::Reset] {
        for c in occupancies(quick, op) {
            let lbas = if c >= 10_000 { zcap_lbas } else { zcap_lbas * u64::from(c) / 10_000 / step * step };
            let opname = format!("{op:?}").to_lowercase();
            let pct = f64::from(c) / 100.0;
            let row = RowTemplate {
                id: format!("{opname}-at-{pct}pct:lat_p50_us"),
                op,
                bs: None,
                qd: Some(1),
                jobs: Some(1),
                background: String::new(),
                metric: Metric::LatP50Us,
                notes: format!("occupancy {lbas} LBAs ({pct}%); {TIMED_NOTE} (run.sh, nvme-cli)"),
            };
            out.push(TimedPoint { op, lbas, row });
        }
    }
    out
}

/// The manifest and the job files (name, text) of a plan.
pub fn build(options: &Options) -> Result<(Manifest, Vec<(String, String)>)> {
    let layout = options.device.validate()?;
    let stack = stack_of(&options.device_path);
    let lba_bytes = u32::try_from(layout.lba_bytes).map_err(|_| Error::Invalid("an LBA format over 4 GiB".into()))?;
    let mut manifest = Manifest {
        version: MANIFEST_VERSION,
        device_path: options.device_path.clone(),
        stack,
        lba_bytes,
        zone_bytes: layout.zone_lbas * layout.lba_bytes,
        zcap_bytes: layout.zcap_lbas * layout.lba_bytes,
        zones_needed: 0,
        runtime_ms: options.runtime_ms,
        device: options.device.name.clone(),
        jobs: plan_jobs(options.quick),
        timed: timed_points(options.quick, layout.zcap_lbas, layout.lba_bytes),
    };
    let settings = Settings { runtime_ms: options.runtime_ms, threads: 1, window_ms_min: 0 };
    let mut files = Vec::new();
    for job in &manifest.jobs {
        let row = manifest.row(&job.name, &job.rows[0], 1.0);
        let Run::Fio(run) = rowplan::plan(&row)?.run else {
            return Err(Error::Failed(format!("plan job {}: not a fio run", job.name)));
        };
        let frame = execute::frame([manifest.zone_bytes, manifest.zcap_bytes], &run, [None, None], settings);
        let text = for_real_fio(&job.name, &job_file(&run, [None, None], &frame), stack, lba_bytes);
        manifest.zones_needed = manifest.zones_needed.max(zones_reached(&text));
        files.push((job.name.clone(), text));
    }
    // The script's timed points use the zones after the jobs' last one.
    manifest.zones_needed += u64::from(TIMED_SAMPLES);
    if manifest.zones_needed > u64::from(options.device.namespace.zones) {
        return Err(Error::Invalid(format!(
            "the plan reaches {} zones and the device has {}: profile a device with more zones",
            manifest.zones_needed, options.device.namespace.zones
        )));
    }
    Ok((manifest, files))
}

/// The job file as calibrate writes it, made for real fio: its own header,
/// and the block layer's scheduler as fio's `ioscheduler` (none on a
/// passthrough device, which has no block layer).
fn for_real_fio(name: &str, text: &str, stack: Stack, lba_bytes: u32) -> String {
    let mut out = format!(
        "; zonelab profile: job {name}. Real fio: run.sh runs it with --filename=DEVICE.\n\
         ; Simulated: zonelab run --device DEVICE --lba-bytes {lba_bytes} --output-format=json {name}.fio\n"
    );
    for line in text.lines().filter(|l| !l.starts_with(';')) {
        match line.strip_prefix("scheduler=") {
            Some(_) if stack == Stack::IoUringCmd || stack == Stack::Spdk => {}
            Some(s) => out.push_str(&format!("ioscheduler={s}\n")),
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The first zone past every `offset=` + `size=` ... of a job file (an upper bound: each section's
/// offset, size and offset increments over its jobs).
fn zones_reached(text: &str) -> u64 {
    let mut reach = 0;
    for section in text.split("\n[") {
        let get = |key: &str| {
            section.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim_end_matches('z').parse::<u64>().ok())
        };
        let (offset, size) = (get("offset=").unwrap_or(0), get("size=").unwrap_or(0));
        let jobs = get("numjobs=").unwrap_or(1);
        let step = get("offset_increment=").unwrap_or(0);
        reach = reach.max(offset + size + step * jobs.saturating_sub(1));
    }
    reach
}

/// Writes the plan into `out` (claimed as every zonelab output directory).
pub fn write(out: &Path, options: &Options, force: bool) -> Result<Manifest> {
    let (manifest, files) = build(options)?;
    crate::out_dir::claim(out, force)?;
    let jobs = out.join("jobs");
    std::fs::create_dir_all(&jobs).map_err(io(&jobs))?;
    for (name, text) in &files {
        let path = jobs.join(format!("{name}.fio"));
        std::fs::write(&path, text).map_err(io(&path))?;
    }
    let path = out.join("plan.json");
    let text = serde_json::to_string_pretty(&manifest).map_err(json("the plan"))? + "\n";
    std::fs::write(&path, text).map_err(io(&path))?;
    let script = out.join("run.sh");
    std::fs::write(&script, super::script::run_sh(&manifest)).map_err(io(&script))?;
    set_executable(&script)?;
    Ok(manifest)
}

#[cfg(unix)]
fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(io(path))
}

#[cfg(not(unix))]
fn set_executable(_: &Path) -> Result<()> {
    Ok(())
}

/// Reads `plan.json` of a profile directory.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join("plan.json");
    let text = zonelab_sim::input::read_text(&path, zonelab_sim::input::TEXT_BYTES_MAX)
        .map_err(|e| Error::Input(e).within("profile plan"))?;
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
        Error::Invalid(format!("{}:{}:{}: not a zonelab profile plan: {e}", path.display(), e.line(), e.column()))
    })?;
    if manifest.version != MANIFEST_VERSION {
        return Err(Error::Invalid(format!(
            "{}: plan version {}; this zonelab reads version {MANIFEST_VERSION}",
            path.display(),
            manifest.version
        )));
    }
    Ok(manifest)
}

/// Parameters a profile's rows can constrain, the fit's default set: the
/// firmware's per-command costs, the flash's read and program times, the
/// link, and the costs of finish and reset. Which of them the rows at hand
/// do constrain is [`super::identify`]'s to say.
pub const FIT_CANDIDATES: [&str; 10] = [
    "controller.write_ns",
    "controller.read_ns",
    "controller.append_ns",
    "flash_timing.read_ns",
    "flash_timing.program_ns",
    "link.lane_bytes_per_s",
    "management.finish_ns",
    "management.reset_ns",
    "management.reset.unmap_per_lba_ns",
    "management.reset.active_ns",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_path_picks_the_stack() {
        assert_eq!(stack_of("/dev/ng0n2"), Stack::IoUringCmd);
        assert_eq!(stack_of("/dev/nvme0n2"), Stack::LibaioNone);
        assert_eq!(stack_of("ng1n1"), Stack::IoUringCmd);
    }

    #[test]
    fn a_job_file_for_real_fio_names_fios_scheduler_option_or_none() {
        let text =
            "; zonelab calibrate: x\n; rerun: y\n[global]\nioengine=io_uring\nscheduler=none\n\n[main]\nrw=read\n";
        let block = for_real_fio("j", text, Stack::LibaioNone, 4096);
        assert!(block.starts_with("; zonelab profile: job j.") && !block.contains("calibrate"), "{block}");
        assert!(block.contains("\nioscheduler=none\n") && !block.contains("\nscheduler="), "{block}");
        let passthrough = for_real_fio("j", text, Stack::IoUringCmd, 4096);
        assert!(!passthrough.contains("scheduler"), "{passthrough}");
    }

    #[test]
    fn the_zones_a_job_file_reaches_count_every_clone() {
        let text = "[global]\nzonemode=zbd\n\n[prefill]\noffset=200z\nsize=4z\n\n[main]\noffset=0z\nsize=4z\n\
                    offset_increment=4z\nnumjobs=3\n";
        assert_eq!(zones_reached(text), 204);
        assert_eq!(zones_reached("[main]\noffset=210z\nsize=6z\nnumjobs=60\noffset_increment=6z\n"), 210 + 6 * 60);
    }
}
