//! The ublk side: creates `/dev/ublkbN` with the device's zoned geometry,
//! moves data between the driver and the [`Backend`] (user-copy mode, which
//! ublk requires for zoned devices), completes requests now or at their
//! simulated completion time, and handles signals.

use crate::backend::{Backend, Outcome, Pace};
use crate::recording::{Arrival, QueueId};
use crate::request::{BlockOp, BlockRequest, SECTOR_BYTES};
use crate::stats_file::{write_stats, StatsFile};
use crate::ServeError;
use io_uring::{opcode, types::Timespec};
use libublk::ctrl::{UblkCtrl, UblkCtrlBuilder};
use libublk::io::{BufDescList, UblkDev, UblkIOCtx, UblkQueue};
use libublk::{sys, BufDesc, UblkError, UblkFlags, UblkIORes};
use signal_hook::consts::{SIGINT, SIGTERM, SIGUSR1};
use std::collections::{BTreeMap, HashMap};
use std::io::Write as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};
use zonelab_sim::Nanos;

/// Requests in flight per queue.
const QUEUE_DEPTH: u16 = 64;
/// `user_data` operation byte of the pacing timers (not a ublk command).
const TIMER_OP: u32 = 0xfe;
/// Timer ids travel in the `tgt_data` field of libublk's `user_data`, of
/// which 8 bits survive (`build_user_data` shifts a u32 left by 24).
const TIMER_ID_MAX: u32 = 0xff;

/// Settings of `zonelab serve --ublk`.
#[derive(Debug, Clone, Default)]
pub struct ServeOptions {
    /// Where to write statistics (on SIGUSR1 and on exit); stderr when absent.
    pub stats_path: Option<PathBuf>,
}

/// Serves `backend` as a ublk zoned block device until SIGINT or SIGTERM,
/// then removes the device. Errors are one-line messages for the user.
pub fn serve(backend: Backend, options: ServeOptions) -> Result<(), ServeError> {
    check_ublk_available()?;
    let stats_file = options.stats_path.as_deref().map(StatsFile::create).transpose()?;
    // Every file the server uses is open by now.
    keep_only_device_control();
    let geometry = backend.geometry();
    let identify = backend.device().identify();
    let io_bytes = geometry.io_bytes_max;
    let ctrl = UblkCtrlBuilder::default()
        .name("zonelab")
        .nr_queues(1)
        .depth(QUEUE_DEPTH)
        .io_buf_bytes(u32::try_from(io_bytes).expect("io size below 4 GiB"))
        .ctrl_flags(u64::from(sys::UBLK_F_USER_COPY | sys::UBLK_F_ZONED))
        .dev_flags(UblkFlags::UBLK_DEV_F_ADD_DEV)
        .build()
        .map_err(|e| ServeError::UblkCreate { reason: describe(&e) })?;
    let params = ZonedParams {
        dev_bytes: geometry.nsze_lbas * geometry.lba_bytes,
        lba_bytes: geometry.lba_bytes,
        zone_bytes: geometry.zone_lbas * geometry.lba_bytes,
        io_bytes,
        append_bytes: identify.zasl_bytes.min(io_bytes),
        max_open: limit(identify.mor),
        max_active: limit(identify.mar),
    };
    let backend = Arc::new(Mutex::new(backend));
    let queue_backend = Arc::clone(&backend);
    let started = Instant::now();
    let q_fn = move |qid: u16, dev: &UblkDev| run_queue(qid, dev, &queue_backend, started);
    let stats_file = Arc::new(Mutex::new(stats_file));
    let signal_stats = Arc::clone(&stats_file);
    let signal_backend = Arc::clone(&backend);
    let device_fn = move |ctrl: &UblkCtrl| wait_for_signals(ctrl, &signal_backend, &signal_stats);
    ctrl.run_target(|dev: &mut UblkDev| params.apply(dev), q_fn, device_fn)
        .map_err(|e| ServeError::UblkFailed { reason: describe(&e) })?;
    drop(ctrl);
    let backend = lock(&backend);
    write_stats(&stats_file, &backend.stats_report());
    backend.sync_image()
}

/// Gives up root's powers except `CAP_SYS_ADMIN`, which the kernel checks on
/// the control commands that add, start, stop and delete the device, and
/// forbids gaining new ones (no setuid or file capabilities on exec). Threads
/// created later inherit this. Where the kernel refuses (no `CAP_SETPCAP` for
/// the bounding set, say), the server goes on with what it has and says so.
fn keep_only_device_control() {
    use caps::{CapSet, Capability};
    let keep: caps::CapsHashSet = [Capability::CAP_SYS_ADMIN].into_iter().collect();
    let bounding =
        caps::all().into_iter().filter(|c| !keep.contains(c)).try_for_each(|c| caps::drop(None, CapSet::Bounding, c));
    let sets = [CapSet::Inheritable, CapSet::Effective, CapSet::Permitted]
        .into_iter()
        .try_for_each(|set| caps::set(None, set, &keep));
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS takes integer arguments only and changes only this process.
    let no_new_privs = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if let Err(e) = bounding.and(sets) {
        eprintln!("zonelab: keeping root's capabilities: {e}");
    }
    if no_new_privs != 0 {
        eprintln!("zonelab: cannot set no_new_privs: {}", std::io::Error::last_os_error());
    }
}

/// Clears every capability of the calling thread (capabilities are per thread).
fn drop_thread_capabilities() {
    use caps::CapSet;
    let none = caps::CapsHashSet::new();
    let cleared = [CapSet::Inheritable, CapSet::Effective, CapSet::Permitted]
        .into_iter()
        .try_for_each(|set| caps::set(None, set, &none));
    if let Err(e) = cleared {
        eprintln!("zonelab: a ublk queue keeps its capabilities: {e}");
    }
}

/// A lock that outlives a panic in another thread: the backend guards its
/// own consistency (a model panic marks it failed), so the statistics and
/// the shutdown path must still get through.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A 0-based NVMe resource limit as the block layer wants it (0 = none).
fn limit(zero_based: u32) -> u32 {
    if zero_based == u32::MAX {
        0
    } else {
        zero_based + 1
    }
}

/// The user-facing reason ublk cannot be used here, if any.
fn check_ublk_available() -> Result<(), ServeError> {
    let unavailable = |reason: String| Err(ServeError::UblkUnavailable { reason });
    if !std::path::Path::new("/dev/ublk-control").exists() {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let release = release.trim();
        if kernel_older_than(release, 6, 6) {
            return unavailable(format!("ublk zoned devices need Linux 6.6 or later; this kernel is {release}"));
        }
        return unavailable("/dev/ublk-control is missing: load the ublk driver (modprobe ublk_drv)".into());
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return unavailable("serving a ublk device needs root (run zonelab serve --ublk as root)".into());
    }
    match UblkCtrl::get_features() {
        Some(f) if f & u64::from(sys::UBLK_F_ZONED) != 0 && f & u64::from(sys::UBLK_F_USER_COPY) != 0 => Ok(()),
        Some(_) => unavailable(
            "this kernel's ublk driver has no zoned support (Linux 6.6 or later, CONFIG_BLK_DEV_ZONED)".into(),
        ),
        None => unavailable("cannot query the ublk driver's features (/dev/ublk-control)".into()),
    }
}

/// Whether `release` ("6.1.0-18-amd64") is older than `major.minor`.
pub fn kernel_older_than(release: &str, major: u32, minor: u32) -> bool {
    let mut parts = release.split(|c: char| !c.is_ascii_digit()).filter_map(|p| p.parse::<u32>().ok());
    match (parts.next(), parts.next()) {
        (Some(a), Some(b)) => (a, b) < (major, minor),
        _ => false,
    }
}

fn describe(e: &UblkError) -> String {
    match e {
        UblkError::OtherError(errno) | UblkError::UringIOError(errno) => {
            std::io::Error::from_raw_os_error(-errno).to_string()
        }
        UblkError::IOError(io) => io.to_string(),
        other => format!("{other} ({other:?})"),
    }
}

/// The queue limits and zoned parameters of the device.
#[derive(Debug, Clone, Copy)]
struct ZonedParams {
    dev_bytes: u64,
    lba_bytes: u64,
    zone_bytes: u64,
    io_bytes: u64,
    append_bytes: u64,
    max_open: u32,
    max_active: u32,
}

impl ZonedParams {
    fn apply(&self, dev: &mut UblkDev) -> Result<(), UblkError> {
        dev.set_default_params(self.dev_bytes);
        let sectors = |bytes: u64| u32::try_from(bytes / SECTOR_BYTES).expect("sizes below 2 TiB");
        let p = &mut dev.tgt.params;
        p.types |= sys::UBLK_PARAM_TYPE_ZONED;
        p.types &= !sys::UBLK_PARAM_TYPE_DISCARD;
        p.basic.logical_bs_shift = self.lba_bytes.trailing_zeros() as u8;
        p.basic.physical_bs_shift = self.lba_bytes.trailing_zeros() as u8;
        p.basic.io_min_shift = self.lba_bytes.trailing_zeros() as u8;
        p.basic.io_opt_shift = self.lba_bytes.trailing_zeros() as u8;
        p.basic.max_sectors = sectors(self.io_bytes);
        p.basic.chunk_sectors = sectors(self.zone_bytes);
        p.basic.dev_sectors = self.dev_bytes / SECTOR_BYTES;
        p.zoned = sys::ublk_param_zoned {
            max_open_zones: self.max_open,
            max_active_zones: self.max_active,
            max_zone_append_sectors: sectors(self.append_bytes),
            ..Default::default()
        };
        // Room for the pacing timers beside the requests; io_uring wants CQ >= SQ.
        dev.tgt.sq_depth = QUEUE_DEPTH * 2;
        dev.tgt.cq_depth = QUEUE_DEPTH * 2;
        Ok(())
    }
}

/// A request whose answer waits for the wall clock (realtime pacing).
#[derive(Debug, Clone, Copy)]
struct Pending {
    tag: u16,
    outcome: Outcome,
    /// `serve --record`: the request's SEQ (0: not recorded).
    seq: u64,
}

/// State of one queue's thread.
struct QueueState {
    backend: Arc<Mutex<Backend>>,
    started: Instant,
    cdev_fd: i32,
    /// The largest transfer announced: a longer request is refused before `data` grows.
    io_bytes_max: usize,
    data: Vec<u8>,
    /// Realtime pacing: answers by simulated completion time, then arrival.
    pending: BTreeMap<(Nanos, u64), Pending>,
    arrivals: u64,
    /// Armed timers by id: their timespec must live until they fire.
    timers: HashMap<u32, (Box<Timespec>, Nanos)>,
    next_timer_id: u32,
    /// `serve --record`: the queue, and the last recorded request answered.
    qid: u16,
    last_sent: Option<u64>,
}

fn run_queue(qid: u16, dev: &UblkDev, backend: &Arc<Mutex<Backend>>, started: Instant) {
    let queue = match UblkQueue::new(qid, dev).and_then(|q| q.submit_fetch_commands_unified(BufDescList::Slices(None)))
    {
        Ok(q) => q,
        Err(e) => {
            // The driver waits for every queue before the device starts: without
            // this queue it never would, so give up on the whole server.
            eprintln!("zonelab: ublk queue {qid} failed to start: {}", describe(&e));
            std::process::exit(2);
        }
    };
    // The queue is set up: the thread that handles the requests needs no privilege at all.
    drop_thread_capabilities();
    let io_bytes_max = lock(backend).geometry().io_bytes_max as usize;
    let mut state = QueueState {
        backend: Arc::clone(backend),
        started,
        cdev_fd: dev.tgt.fds[0],
        io_bytes_max,
        data: Vec::with_capacity(io_bytes_max),
        pending: BTreeMap::new(),
        arrivals: 0,
        timers: HashMap::new(),
        next_timer_id: 1,
        qid,
        last_sent: None,
    };
    queue.wait_and_handle_io(|q, tag, ctx| state.on_event(q, tag, ctx));
}

impl QueueState {
    fn wall_ns(&self) -> Nanos {
        Nanos::try_from(self.started.elapsed().as_nanos()).unwrap_or(Nanos::MAX)
    }

    fn on_event(&mut self, q: &UblkQueue, tag: u16, ctx: &UblkIOCtx) {
        if ctx.is_tgt_io() {
            self.timers.remove(&timer_id_of(ctx.user_data()));
        } else {
            let iod = q.get_iod(tag);
            let req = BlockRequest {
                op: BlockOp::from_code((iod.op_flags & 0xff) as u8),
                start_sector: iod.start_sector,
                count: iod.nr_sectors,
            };
            let (outcome, pace, seq) = self.serve_request(q, tag, &req);
            if pace == Pace::Asap {
                complete(q, tag, &outcome);
                self.note_sent(seq);
                return;
            }
            self.arrivals += 1;
            self.pending.insert((outcome.complete_ns, self.arrivals), Pending { tag, outcome, seq });
        }
        self.complete_due(q);
        self.arm_timer(q);
    }

    /// Runs one request: copies a write's data in, runs the model, copies a
    /// read's or a report's data out. A failed copy is answered at once.
    fn serve_request(&mut self, q: &UblkQueue, tag: u16, req: &BlockRequest) -> (Outcome, Pace, u64) {
        let pos = UblkIOCtx::ublk_user_copy_pos(q.get_qid(), tag, 0) as libc::off_t;
        if let Err(errno) = self.copy_in(req, pos) {
            return (Outcome { result: -errno, append_sector: None, complete_ns: 0 }, Pace::Asap, 0);
        }
        let wall_ns = self.wall_ns();
        // After a model failure the backend fails every request with EIO:
        // the device stays, offline as a drive whose firmware faulted, until
        // the operator stops the server (statistics and image are kept).
        let (mut outcome, pace, seq) = {
            let mut backend = lock(&self.backend);
            if backend.recording() {
                let outstanding = u32::try_from(self.pending.len()).unwrap_or(u32::MAX);
                let queue = QueueId { controller: 0, qid: self.qid };
                backend.set_arrival(Arrival { queue, at_ns: wall_ns, dep: self.last_sent, outstanding });
            }
            let outcome = backend.handle_guarded(wall_ns, req, &mut self.data);
            (outcome, backend.pace(), backend.take_recorded().unwrap_or(0))
        };
        if outcome.result > 0 && matches!(req.op, BlockOp::Read | BlockOp::ReportZones) {
            if let Err(errno) = self.copy_out(outcome.result as usize, pos) {
                outcome.result = -errno;
            }
        }
        (outcome, pace, seq)
    }

    /// `serve --record`: the answer of recorded request `seq` went to the driver.
    fn note_sent(&mut self, seq: u64) {
        if seq != 0 {
            self.last_sent = Some(seq);
        }
    }

    /// Reads a write's or an append's data from the driver into `data`.
    fn copy_in(&mut self, req: &BlockRequest, pos: libc::off_t) -> Result<(), i32> {
        self.data.clear();
        if !matches!(req.op, BlockOp::Write | BlockOp::ZoneAppend) {
            return Ok(());
        }
        let bytes = u64::from(req.count) * SECTOR_BYTES;
        if bytes > self.io_bytes_max as u64 {
            return Err(libc::EINVAL);
        }
        let bytes = bytes as usize;
        self.data.resize(bytes, 0);
        // SAFETY: `data` holds `bytes` writable bytes; the fd is the device's char device.
        let n = unsafe { libc::pread(self.cdev_fd, self.data.as_mut_ptr().cast(), bytes, pos) };
        if n == bytes as isize {
            Ok(())
        } else {
            Err(libc::EIO)
        }
    }

    /// Hands the first `len` bytes of `data` (a read's data, a report) to the driver.
    fn copy_out(&self, len: usize, pos: libc::off_t) -> Result<(), i32> {
        assert!(len <= self.data.len(), "answer larger than its data");
        // SAFETY: `data` holds at least `len` readable bytes.
        let n = unsafe { libc::pwrite(self.cdev_fd, self.data.as_ptr().cast(), len, pos) };
        if n == len as isize {
            Ok(())
        } else {
            Err(libc::EIO)
        }
    }

    /// Answers every pending request whose simulated completion time the
    /// wall clock has reached.
    fn complete_due(&mut self, q: &UblkQueue) {
        let now_ns = self.wall_ns();
        while let Some(entry) = self.pending.first_entry() {
            if entry.key().0 > now_ns {
                break;
            }
            let p = entry.remove();
            complete(q, p.tag, &p.outcome);
            self.note_sent(p.seq);
        }
    }

    /// Makes sure a timer fires no later than the earliest pending answer.
    fn arm_timer(&mut self, q: &UblkQueue) {
        let Some((&(due_ns, _), _)) = self.pending.first_key_value() else { return };
        if self.timers.values().any(|&(_, at_ns)| at_ns <= due_ns) {
            return;
        }
        let wait = Duration::from_nanos(due_ns.saturating_sub(self.wall_ns()));
        let Some(id) = free_timer_id(self.next_timer_id, |id| self.timers.contains_key(&id)) else {
            return; // every id armed: the next one to fire arms again
        };
        self.next_timer_id = id % TIMER_ID_MAX + 1;
        let ts = Box::new(Timespec::from(wait));
        let user_data = UblkIOCtx::build_user_data(0, TIMER_OP, id, true);
        let sqe = opcode::Timeout::new(&*ts as *const Timespec).build().user_data(user_data);
        self.timers.insert(id, (ts, due_ns));
        if let Err(e) = q.ublk_submit_sqe_sync(sqe) {
            self.timers.remove(&id);
            eprintln!("zonelab: cannot arm the pacing timer: {}", describe(&e));
        }
    }
}

/// The first id from `start` on (1..=TIMER_ID_MAX, wrapping) that is not in use.
fn free_timer_id(start: u32, in_use: impl Fn(u32) -> bool) -> Option<u32> {
    assert!((1..=TIMER_ID_MAX).contains(&start));
    (0..TIMER_ID_MAX).map(|i| (start - 1 + i) % TIMER_ID_MAX + 1).find(|&id| !in_use(id))
}

/// The timer id a target `user_data` carries.
fn timer_id_of(user_data: u64) -> u32 {
    ((user_data >> 24) & u64::from(TIMER_ID_MAX)) as u32
}

/// Sends the answer for `tag` to the driver.
fn complete(q: &UblkQueue, tag: u16, outcome: &Outcome) {
    let buf = match outcome.append_sector {
        Some(sector) if outcome.result >= 0 => BufDesc::ZonedAppendLba(sector),
        _ => BufDesc::Slice(&[]),
    };
    if let Err(e) = q.complete_io_cmd_unified(tag, buf, Ok(UblkIORes::Result(outcome.result))) {
        eprintln!("zonelab: cannot complete request {tag}: {}", describe(&e));
    }
}

/// Runs in the main thread once the device is up: prints its path, then
/// prints statistics on SIGUSR1 and stops the device on SIGINT or SIGTERM.
fn wait_for_signals(ctrl: &UblkCtrl, backend: &Mutex<Backend>, stats: &Mutex<Option<StatsFile>>) {
    let mut signals = match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGUSR1]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("zonelab: cannot handle signals ({e}); stopping the device");
            let _ = ctrl.kill_dev();
            return;
        }
    };
    let pace = lock(backend).pace();
    println!(
        "zonelab: serving {} (pace {}); SIGUSR1 prints statistics, SIGINT or SIGTERM removes it",
        ctrl.get_bdev_path(),
        if pace == Pace::Realtime { "realtime" } else { "asap" }
    );
    let _ = std::io::stdout().flush();
    for signal in signals.forever() {
        if signal == SIGUSR1 {
            let report = lock(backend).stats_report();
            write_stats(stats, &report);
            lock(backend).flush_recording();
            continue;
        }
        if let Err(e) = ctrl.kill_dev() {
            eprintln!("zonelab: stopping the device failed: {}", describe(&e));
        }
        lock(backend).flush_recording();
        break;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_versions_compare_by_major_then_minor() {
        assert!(kernel_older_than("6.1.0-18-amd64", 6, 6));
        assert!(kernel_older_than("5.15.0", 6, 6));
        assert!(!kernel_older_than("6.6.0", 6, 6));
        assert!(!kernel_older_than("6.12.38+deb12-amd64", 6, 6));
        assert!(!kernel_older_than("garbage", 6, 6));
    }

    #[test]
    fn timer_ids_survive_the_trip_through_user_data() {
        for id in [1, 2, 200, TIMER_ID_MAX] {
            let user_data = UblkIOCtx::build_user_data(0, TIMER_OP, id, true);
            assert_eq!(timer_id_of(user_data), id);
        }
    }

    #[test]
    fn timer_ids_wrap_and_skip_the_armed_ones() {
        assert_eq!(free_timer_id(1, |_| false), Some(1));
        assert_eq!(free_timer_id(TIMER_ID_MAX, |id| id == TIMER_ID_MAX), Some(1));
        assert_eq!(free_timer_id(5, |id| id < 7), Some(7));
        assert_eq!(free_timer_id(3, |_| true), None);
    }

    #[test]
    fn resource_limits_become_one_based() {
        assert_eq!(limit(u32::MAX), 0);
        assert_eq!(limit(7), 8);
    }
}
