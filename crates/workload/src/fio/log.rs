//! fio's log files (`write_lat_log`, `write_bw_log`, `write_iops_log`), line
//! for line as fio 3.33 writes them: `time, value, ddir, bs, prio`, or
//! `time, value, ddir, bs, offset, prio` with `log_offset`. Time is simulated
//! milliseconds since the job's statistics started (its start, or the end of
//! its ramp time, where fio resets its epoch); latencies are in nanoseconds.
//!
//! A file is created when the run is set up and only if it does not exist:
//! zonelab never overwrites a file (fio does). Lines are kept in memory up
//! to [`BUFFER_BYTES`] per file, then appended, so that a long run's logs
//! cost no memory.

use super::iolog_write::IologWriter;
use super::job::{JobSpec, DDIRS};
use super::stats::Sampled;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::PathBuf;
use zonelab_sim::Nanos;

/// Bytes of lines a log keeps before appending them to its file.
pub const BUFFER_BYTES: usize = 16 << 10;

/// fio's default `bwavgtime` and `iopsavgtime`.
const AVG_TIME_MS: u64 = 500;

/// One log file: its lines not yet written, and the first write error.
#[derive(Debug)]
pub(super) struct LogFile {
    path: PathBuf,
    /// The option that asked for it, where errors point.
    option: &'static str,
    /// `log_offset`: lines carry the I/O's offset.
    offsets: bool,
    buffer: Vec<u8>,
    error: Option<String>,
}

impl LogFile {
    /// Creates `path`, which must not exist.
    pub(super) fn create(path: PathBuf, option: &'static str, offsets: bool) -> Result<Self, String> {
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => Ok(LogFile { path, option, offsets, buffer: Vec::new(), error: None }),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(format!(
                "log file '{}' exists: zonelab never overwrites a file (fio would); remove it or choose another {}",
                path.display(),
                if option == "write_iolog" { "file" } else { "prefix" }
            )),
            Err(e) => Err(format!("cannot create log file '{}': {e}", path.display())),
        }
    }

    /// Adds a line. fio's last field, the priority, is 0: simulated I/Os have none.
    fn line(&mut self, time_ms: u64, value: u64, ddir: usize, bs: u64, offset: u64) {
        let _ = if self.offsets {
            writeln!(self.buffer, "{time_ms}, {value}, {ddir}, {bs}, {offset}, 0")
        } else {
            writeln!(self.buffer, "{time_ms}, {value}, {ddir}, {bs}, 0")
        };
        if self.buffer.len() >= BUFFER_BYTES {
            self.flush();
        }
    }

    /// Adds text as it is (lines of another format: `write_iolog`).
    pub(super) fn text(&mut self, text: std::fmt::Arguments<'_>) {
        let _ = self.buffer.write_fmt(text);
        if self.buffer.len() >= BUFFER_BYTES {
            self.flush();
        }
    }

    /// Appends the buffered lines to the file, keeping the first error.
    fn flush(&mut self) {
        if !self.buffer.is_empty() && self.error.is_none() {
            let written = OpenOptions::new().append(true).open(&self.path).and_then(|mut f| f.write_all(&self.buffer));
            if let Err(e) = written {
                self.error = Some(format!("cannot write log file '{}': {e}", self.path.display()));
            }
        }
        self.buffer.clear();
    }
}

/// A direction's samples in the current averaging window, as fio's
/// `io_stat` keeps them (a running mean), and where the window started.
#[derive(Debug, Clone, Copy, Default)]
struct Window {
    samples: u64,
    mean: f64,
    max: u64,
    start_ms: u64,
}

/// A latency log (`_lat`, `_clat` or `_slat`) and its averaging windows.
#[derive(Debug)]
struct LatencyLog {
    file: LogFile,
    windows: [Window; DDIRS],
}

impl LatencyLog {
    /// fio's `add_log_sample`: a line per sample without averaging; else the
    /// sample joins its direction's window, which is written (sample
    /// included) once it spans `avg_ms`, and the next one starts at the last
    /// multiple of `avg_ms`.
    fn add(&mut self, avg_ms: u64, max_value: bool, io: &LoggedIo, value: u64) {
        if avg_ms == 0 {
            return self.file.line(io.time_ms, value, io.ddir, io.bytes, io.offset);
        }
        let window = &mut self.windows[io.ddir];
        let delta = value as f64 - window.mean;
        window.mean += delta / (window.samples + 1) as f64;
        window.max = window.max.max(value);
        window.samples += 1;
        if io.time_ms >= window.start_ms && io.time_ms - window.start_ms >= avg_ms {
            self.close(io.ddir, io.time_ms, max_value);
            self.windows[io.ddir].start_ms = io.time_ms - io.time_ms % avg_ms;
        }
    }

    /// Writes direction `ddir`'s window at `time_ms`, if it has samples, and empties it.
    fn close(&mut self, ddir: usize, time_ms: u64, max_value: bool) {
        let window = std::mem::take(&mut self.windows[ddir]);
        self.windows[ddir].start_ms = window.start_ms;
        if window.samples > 0 {
            // fio rounds the mean half up (`mean + 0.50` into an integer).
            let value = if max_value { window.max } else { (window.mean + 0.5) as u64 };
            self.file.line(time_ms, value, ddir, 0, 0);
        }
    }
}

/// One completed I/O as the logs see it.
#[derive(Debug, Clone, Copy)]
pub struct LoggedIo {
    /// ms since the thread's statistics started.
    pub time_ms: u64,
    /// 0 read, 1 write, 2 trim.
    pub ddir: usize,
    /// Bytes of the I/O.
    pub bytes: u64,
    /// Its offset in bytes.
    pub offset: u64,
}

/// The latencies of a completed I/O; `slat_ns` is `None` for synchronous engines.
#[derive(Debug, Clone, Copy)]
pub struct Latencies {
    /// Submission latency.
    pub slat_ns: Option<Nanos>,
    /// Completion latency.
    pub clat_ns: Nanos,
    /// Total latency.
    pub lat_ns: Nanos,
}

/// How often a job samples its bandwidth (or IOPS), as fio sets it up:
/// `bwavgtime` (500 ms by default); with a bandwidth log, `log_avg_msec`
/// unless `bwavgtime` is set; a sample per I/O when the log's averaging
/// (the smaller of the two) is 0 (fio's per-unit log).
pub fn sampling_ms(logged: bool, avgtime_ms: Option<u32>, log_avg_msec: u32) -> u64 {
    match (logged, avgtime_ms) {
        (false, time) => time.map_or(AVG_TIME_MS, u64::from),
        (true, None) => u64::from(log_avg_msec),
        (true, Some(time)) if log_avg_msec.min(time) == 0 => 0,
        (true, Some(time)) => u64::from(time),
    }
}

/// The log files of one thread.
#[derive(Debug)]
pub struct ThreadLogs {
    avg_ms: u64,
    max_value: bool,
    /// `_lat`, `_clat`, `_slat`, each unless its statistic is disabled.
    lat: [Option<LatencyLog>; 3],
    bw: Option<LogFile>,
    iops: Option<LogFile>,
    /// `write_iolog`.
    iolog: Option<super::iolog_write::IologWriter>,
}

impl ThreadLogs {
    /// Creates the log files `job` asks for, numbered `number` (fio's thread
    /// number: 1 for the run's first thread, clones included). None: no logs.
    /// Err: (the option, the message); files created before the error are removed.
    /// `clone` is the thread's clone number in its job (the iolog's default file name).
    pub fn create(job: &JobSpec, number: usize, clone: u32) -> Result<Option<Self>, (&'static str, String)> {
        let logs = &job.logs;
        let no_iolog = job.write_iolog.is_none();
        if logs.lat_prefix.is_none() && logs.bw_prefix.is_none() && logs.iops_prefix.is_none() && no_iolog {
            return Ok(None);
        }
        let mut out = ThreadLogs {
            avg_ms: u64::from(logs.avg_msec),
            max_value: logs.max_value,
            lat: [None, None, None],
            bw: None,
            iops: None,
            iolog: None,
        };
        let file = |prefix: &str, kind: &str, option: &'static str| {
            let path = PathBuf::from(format!("{prefix}_{kind}.{number}.log"));
            LogFile::create(path, option, logs.offset).map_err(|e| (option, e))
        };
        let created = (|| {
            if let Some(prefix) = &logs.lat_prefix {
                let kinds = [
                    ("lat", job.report.disable_lat),
                    ("clat", job.report.disable_clat),
                    ("slat", job.report.disable_slat),
                ];
                for (slot, (kind, disabled)) in out.lat.iter_mut().zip(kinds) {
                    if !disabled {
                        let file = file(prefix, kind, "write_lat_log")?;
                        *slot = Some(LatencyLog { file, windows: [Window::default(); DDIRS] });
                    }
                }
            }
            if let Some(prefix) = &logs.bw_prefix {
                out.bw = Some(file(prefix, "bw", "write_bw_log")?);
            }
            if let Some(prefix) = &logs.iops_prefix {
                out.iops = Some(file(prefix, "iops", "write_iops_log")?);
            }
            if let Some(path) = &job.write_iolog {
                // fio's default file name: `$jobname.$jobnum.$filenum`.
                let name = job.filename.clone().unwrap_or_else(|| format!("{}.{clone}.0", job.name));
                out.iolog = Some(IologWriter::create(path, name).map_err(|e| ("write_iolog", e))?);
            }
            Ok(())
        })();
        match created {
            Ok(()) => Ok(Some(out)),
            Err(e) => {
                out.remove();
                Err(e)
            }
        }
    }

    /// Logs a completed I/O's latencies.
    pub fn latencies(&mut self, io: &LoggedIo, lat: &Latencies) {
        let (avg_ms, max_value) = (self.avg_ms, self.max_value);
        let values = [Some(lat.lat_ns), Some(lat.clat_ns), lat.slat_ns];
        for (log, value) in self.lat.iter_mut().zip(values) {
            if let (Some(log), Some(value)) = (log, value) {
                log.add(avg_ms, max_value, io, value);
            }
        }
    }

    /// A bandwidth sample of one I/O (per-unit log): its bytes per ms of completion latency.
    pub fn bw_of_io(&mut self, io: &LoggedIo, rate: u64) {
        if let Some(file) = &mut self.bw {
            file.line(io.time_ms, rate, io.ddir, io.bytes, io.offset);
        }
    }

    /// An IOPS sample of one I/O (per-unit log): 1.
    pub fn iops_of_io(&mut self, io: &LoggedIo) {
        if let Some(file) = &mut self.iops {
            file.line(io.time_ms, 1, io.ddir, io.bytes, io.offset);
        }
    }

    /// A direction's bandwidth (KiB/s) or IOPS over a window that ended at `time_ms`.
    pub fn window(&mut self, what: Sampled, time_ms: u64, ddir: usize, value: u64) {
        let file = match what {
            Sampled::Bandwidth => &mut self.bw,
            Sampled::Iops => &mut self.iops,
        };
        if let Some(file) = file {
            file.line(time_ms, value, ddir, 0, 0);
        }
    }

    /// The thread ended at `time_ms` (`end_us` after it started): the
    /// latency windows are written (fio's `finalize_logs`), the iolog's file
    /// closes, and every file gets its last lines. Returns the first write
    /// error, with the option of its file.
    pub fn finish(&mut self, time_ms: u64, end_us: u64) -> Option<(&'static str, String)> {
        if let Some(iolog) = &mut self.iolog {
            iolog.close(end_us);
        }
        let max_value = self.max_value;
        for log in self.lat.iter_mut().flatten() {
            for ddir in 0..DDIRS {
                log.close(ddir, time_ms, max_value);
            }
        }
        let mut error = None;
        for file in self.files_mut() {
            file.flush();
            error = error.or(file.error.take().map(|e| (file.option, e)));
        }
        error
    }

    fn files_mut(&mut self) -> impl Iterator<Item = &mut LogFile> {
        let lat = self.lat.iter_mut().flatten().map(|log| &mut log.file);
        let iolog = self.iolog.iter_mut().map(IologWriter::file_mut);
        lat.chain(self.bw.iter_mut()).chain(self.iops.iter_mut()).chain(iolog)
    }

    /// `write_iolog`: the thread queued an I/O, `time_us` after it started.
    pub fn issued(&mut self, time_us: u64, ddir: usize, offset: u64, len: u64) {
        if let Some(iolog) = &mut self.iolog {
            iolog.io(time_us, ddir, offset, len);
        }
    }

    /// Removes the files (the run was refused before it started).
    pub fn remove(mut self) {
        for file in self.files_mut() {
            let _ = std::fs::remove_file(&file.path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(offsets: bool) -> LogFile {
        LogFile { path: PathBuf::new(), option: "write_lat_log", offsets, buffer: Vec::new(), error: None }
    }

    fn io(time_ms: u64, ddir: usize) -> LoggedIo {
        LoggedIo { time_ms, ddir, bytes: 4096, offset: 8192 }
    }

    fn lines(file: &LogFile) -> Vec<String> {
        String::from_utf8(file.buffer.clone()).unwrap().lines().map(str::to_string).collect()
    }

    #[test]
    fn lines_have_fios_fields() {
        let mut plain = file(false);
        plain.line(12, 11360, 1, 4096, 8192);
        let mut offsets = file(true);
        offsets.line(12, 11360, 1, 4096, 8192);
        assert_eq!(lines(&plain), ["12, 11360, 1, 4096, 0"]);
        assert_eq!(lines(&offsets), ["12, 11360, 1, 4096, 8192, 0"]);
    }

    #[test]
    fn averaged_latencies_close_a_window_with_the_sample_that_ends_it() {
        let mut log = LatencyLog { file: file(false), windows: [Window::default(); DDIRS] };
        for (time_ms, ddir, value) in
            [(10, 0, 100), (400, 0, 201), (499, 1, 7), (500, 0, 300), (700, 0, 10), (1001, 0, 20)]
        {
            log.add(500, false, &io(time_ms, ddir), value);
        }
        // Reads: 100, 201 and 300 close at 500 (mean 200.33); 10 and 20 at 1001 (mean 15, rounded up).
        assert_eq!(lines(&log.file), ["500, 200, 0, 0, 0", "1001, 15, 0, 0, 0"]);
        // At the thread's end the windows still open are written, each direction in order.
        log.add(500, false, &io(1200, 0), 4);
        (0..DDIRS).for_each(|ddir| log.close(ddir, 1300, false));
        assert_eq!(lines(&log.file)[2..], ["1300, 4, 0, 0, 0", "1300, 7, 1, 0, 0"]);
        // log_max_value: the largest, not the mean.
        let mut max = LatencyLog { file: file(true), windows: [Window::default(); DDIRS] };
        [(1, 5), (2, 9), (3, 1)].into_iter().for_each(|(t, v)| max.add(2, true, &io(t, 0), v));
        assert_eq!(lines(&max.file), ["2, 9, 0, 0, 0, 0"]);
        // Without averaging, a line per I/O with its size and offset.
        let mut each = LatencyLog { file: file(true), windows: [Window::default(); DDIRS] };
        each.add(0, false, &io(3, 2), 55);
        assert_eq!(lines(&each.file), ["3, 55, 2, 4096, 8192, 0"]);
    }

    #[test]
    fn sampling_follows_fios_set_up_of_bandwidth_logs() {
        assert_eq!(sampling_ms(false, None, 0), 500, "bwavgtime's default");
        assert_eq!(sampling_ms(false, Some(200), 1000), 200);
        assert_eq!(sampling_ms(true, None, 0), 0, "a log without averaging: a sample per I/O");
        assert_eq!(sampling_ms(true, None, 1000), 1000, "bwavgtime follows log_avg_msec");
        assert_eq!(sampling_ms(true, Some(200), 1000), 200);
        assert_eq!(sampling_ms(true, Some(200), 0), 0);
    }

    #[test]
    fn a_log_file_is_never_overwritten() {
        let dir = std::env::temp_dir().join(format!("zonelab-log-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x_lat.1.log");
        std::fs::write(&path, "someone's data\n").unwrap();
        let err = LogFile::create(path.clone(), "write_lat_log", false).unwrap_err();
        assert!(err.contains("x_lat.1.log' exists") && err.contains("never overwrites"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone's data\n");
        std::fs::remove_file(&path).unwrap();
        let mut created = LogFile::create(path.clone(), "write_lat_log", false).unwrap();
        created.line(0, 1, 0, 4096, 0);
        created.flush();
        created.line(1, 2, 0, 4096, 0);
        created.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "0, 1, 0, 4096, 0\n1, 2, 0, 4096, 0\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
