//! Flexible Data Placement of a job's writes, as fio's `dataplacement.c`
//! does it: at set-up the job asks the namespace for its placement
//! identifiers (I/O Management Receive, Reclaim Unit Handle Status), keeps
//! the entries `plids` selects, and each write names one of them, round
//! robin, at random, or by its offset (`dp_scheme`).

use super::*;
use zonelab_device::{CmdResult, Command};

/// fio's `DP_MAX_SCHEME_ENTRIES`: lines of a `dp_scheme` file it applies.
pub(super) const SCHEME_ENTRIES_MAX: usize = 32;
/// Largest `dp_scheme` file read: 32 lines take far less.
const SCHEME_BYTES_MAX: u64 = 1 << 20;

/// One line of a `dp_scheme` file: writes at offsets in [start, end) name `pid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct SchemeEntry {
    start_bytes: u64,
    end_bytes: u64,
    pid: u16,
}

/// What a job's threads share: the identifiers it writes with and the scheme.
#[derive(Debug, Clone)]
pub(super) struct JobPlacement {
    pids: Vec<u16>,
    select: PlidSelect,
    scheme: Vec<SchemeEntry>,
}

/// A thread's choice of placement identifier (fio keeps its round-robin
/// cursor and random state per thread).
#[derive(Debug, Clone)]
pub(super) struct Placement {
    job: std::sync::Arc<JobPlacement>,
    next: usize,
    rng: SimRng,
}

impl Placement {
    /// The thread's chooser over `job`, drawing from `rng` (a stream of its own).
    pub(super) fn new(job: std::sync::Arc<JobPlacement>, rng: SimRng) -> Self {
        Placement { job, next: 0, rng }
    }

    /// The placement identifier of a write at `offset_bytes` (fio's `dp_fill_dspec_data`).
    pub(super) fn pick(&mut self, offset_bytes: u64) -> u16 {
        let pids = &self.job.pids;
        match self.job.select {
            PlidSelect::RoundRobin => {
                if self.next >= pids.len() {
                    self.next = 0;
                }
                self.next += 1;
                pids[self.next - 1]
            }
            PlidSelect::Random => pids[self.rng.below(pids.len() as u64) as usize],
            // An offset no entry covers goes to placement identifier 0, the default handle.
            PlidSelect::Scheme => self
                .job
                .scheme
                .iter()
                .find(|e| (e.start_bytes..e.end_bytes).contains(&offset_bytes))
                .map_or(0, |e| e.pid),
        }
    }
}

impl<D: ZonedDevice + ?Sized, const MULTI: bool> Engine<'_, D, MULTI> {
    /// The placement of `job`'s writes on space `k`, if it asks for FDP:
    /// checks the options, the engine and the namespace, as fio's set-up
    /// (`dp_init`) does, and reads its `dp_scheme`.
    pub(super) fn job_placement(&mut self, job: &JobSpec, k: usize) -> Result<Option<JobPlacement>, JobError> {
        let option = placement_option(job);
        let error = |option: &str, message: String| JobError {
            location: job.location_of(option).to_string(),
            option: Some(option.to_string()),
            message,
        };
        if !job.placement.enabled().map_err(|m| error(option, m.into()))? {
            return Ok(None);
        }
        if !job.ioengine.is_passthrough() {
            let message = format!(
                "needs ioengine=io_uring_cmd or spdk: the {} engine has no way to ask the namespace for its \
                 placement identifiers nor to tag writes (fio: 'engine ({}) lacks fetch ruhs')",
                job.ioengine.name(),
                job.ioengine.name()
            );
            return Err(error(option, message));
        }
        let reported = self.fetch_placement_ids(k).map_err(|m| error(option, m))?;
        let pids = select_pids(&job.placement.plids, &reported).map_err(|m| error(plids_option(job), m))?;
        let scheme = match (&job.placement.scheme, job.placement.select) {
            (Some(path), _) => read_scheme(path).map_err(|m| error("dp_scheme", m))?,
            (None, PlidSelect::Scheme) => {
                return Err(error("plid_select", "scheme needs dp_scheme=FILE (its 'start,end,pid' lines)".into()))
            }
            (None, _) => Vec::new(),
        };
        Ok(Some(JobPlacement { pids, select: job.placement.select, scheme }))
    }

    /// Reclaim Unit Handle Status of space `k`'s namespace, at time 0: its
    /// placement identifiers, in the order the namespace reports them.
    fn fetch_placement_ids(&mut self, k: usize) -> Result<Vec<u16>, String> {
        let nsid = self.spaces.get(k).nsid;
        let command = Command::ReclaimUnitHandleStatus;
        let completion =
            if MULTI { self.device.submit_in(nsid, 0, &command, None) } else { self.device.submit(0, &command, None) };
        match completion.result {
            CmdResult::ReclaimUnitHandles(list) if completion.status.is_success() => {
                Ok(list.iter().map(|r| r.pid).collect())
            }
            _ => Err(format!(
                "namespace {nsid} has no Flexible Data Placement: Reclaim Unit Handle Status answers {} (fio: \
                 'fdp fetch ruhs failed'); run on a page-mapped device with [fdp], such as --device zn540-fdp",
                completion.status.name()
            )),
        }
    }
}

/// The option that turned placement on, for errors: `fdp` or `dataplacement`.
fn placement_option(job: &JobSpec) -> &'static str {
    if job.placement.fdp {
        "fdp"
    } else {
        "dataplacement"
    }
}

/// `plids` as the job wrote it (`fdp_pli` is the same option).
fn plids_option(job: &JobSpec) -> &'static str {
    if job.source("plids").is_some() {
        "plids"
    } else {
        placement_option(job)
    }
}

/// The entries of `reported` that `indexes` select (all, at most 128, when
/// it is empty), as fio's `init_ruh_info`.
fn select_pids(indexes: &[u16], reported: &[u16]) -> Result<Vec<u16>, String> {
    if reported.is_empty() {
        return Err("the namespace reports no placement identifier".into());
    }
    if indexes.is_empty() {
        return Ok(reported.iter().copied().take(crate::fio::options::PLIDS_MAX).collect());
    }
    let count = reported.len();
    match indexes.iter().find(|&&i| usize::from(i) >= count) {
        Some(i) => Err(format!(
            "index {i} must be smaller than {count}: the namespace reports {count} placement identifiers (Reclaim \
             Unit Handle Status), so valid indexes are 0-{}",
            count - 1
        )),
        None => Ok(indexes.iter().map(|&i| reported[usize::from(i)]).collect()),
    }
}

/// A `dp_scheme` file: up to [`SCHEME_ENTRIES_MAX`] lines of
/// `start,end,pid` (byte offsets and a placement identifier), blank lines
/// skipped, as fio's `fscanf("%llu,%llu,%hu\n")` reads them. fio stops at a
/// line that does not parse; zonelab refuses it.
fn read_scheme(path: &str) -> Result<Vec<SchemeEntry>, String> {
    let text = zonelab_sim::input::read_text(path.as_ref(), SCHEME_BYTES_MAX).map_err(|e| e.to_string())?;
    let mut entries = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if entries.len() == SCHEME_ENTRIES_MAX {
            eprintln!(
                "zonelab: {path}: more than {SCHEME_ENTRIES_MAX} scheme entries; only the first \
                 {SCHEME_ENTRIES_MAX} apply, as in fio"
            );
            break;
        }
        entries.push(scheme_entry(line).map_err(|m| format!("{path}:{}: {m}", index + 1))?);
    }
    if entries.is_empty() {
        return Err(format!("{path}: no scheme entry; each line is 'start,end,pid', e.g. 0,1073741824,1"));
    }
    Ok(entries)
}

/// One `start,end,pid` line.
fn scheme_entry(line: &str) -> Result<SchemeEntry, String> {
    let fields: Vec<&str> = line.split(',').map(str::trim).collect();
    let [start, end, pid] = fields[..] else {
        return Err(format!(
            "'{}' has {} fields; a line is 'start,end,pid', e.g. 0,1073741824,1",
            line.trim(),
            fields.len()
        ));
    };
    let number = |name: &str, text: &str| {
        text.parse::<u64>().map_err(|_| format!("{name} '{text}' is not a non-negative integer"))
    };
    let (start_bytes, end_bytes) = (number("start", start)?, number("end", end)?);
    let pid = u16::try_from(number("pid", pid)?).map_err(|_| format!("pid {pid} does not fit in 16 bits"))?;
    Ok(SchemeEntry { start_bytes, end_bytes, pid })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plids_select_entries_of_the_reported_list() {
        let reported = [10, 11, 12, 13];
        assert_eq!(select_pids(&[], &reported).unwrap(), reported);
        assert_eq!(select_pids(&[1, 3], &reported).unwrap(), [11, 13]);
        let e = select_pids(&[4], &reported).unwrap_err();
        assert!(e.contains("index 4 must be smaller than 4") && e.contains("0-3"), "{e}");
    }

    #[test]
    fn round_robin_random_and_scheme_pick_as_fio() {
        let job = |select, scheme| std::sync::Arc::new(JobPlacement { pids: vec![3, 5, 7], select, scheme });
        let mut rr = Placement::new(job(PlidSelect::RoundRobin, vec![]), SimRng::new(1));
        assert_eq!((0..4).map(|_| rr.pick(0)).collect::<Vec<_>>(), [3, 5, 7, 3]);
        let mut random = Placement::new(job(PlidSelect::Random, vec![]), SimRng::new(1));
        let drawn: Vec<u16> = (0..64).map(|_| random.pick(0)).collect();
        assert!([3, 5, 7].iter().all(|p| drawn.contains(p)) && drawn.iter().all(|p| [3, 5, 7].contains(p)));
        let scheme = vec![scheme_entry("0, 4096, 9").unwrap(), scheme_entry("0,8192,8").unwrap()];
        let mut by_offset = Placement::new(job(PlidSelect::Scheme, scheme), SimRng::new(1));
        assert_eq!([0, 4095, 4096, 8192].map(|o| by_offset.pick(o)), [9, 9, 8, 0], "first match, else 0");
    }

    #[test]
    fn bad_scheme_lines_say_what_a_line_is() {
        assert!(scheme_entry("0,1").unwrap_err().contains("2 fields"));
        assert!(scheme_entry("0,x,1").unwrap_err().contains("end 'x'"));
        assert!(scheme_entry("0,1,65536").unwrap_err().contains("16 bits"));
    }
}
