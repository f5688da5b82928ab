//! The NVM subsystem the target exposes: its namespaces (one [`Backend`]
//! each), the controllers hosts created with Connect, and the discovery
//! subsystem's view of the port.

use crate::backend::Backend;
use crate::nvme_tcp::command::{sc, Reply, Sqe};
use crate::nvme_tcp::connection::{Connection, Phase};
use crate::nvme_tcp::limits::{ConnMemory, Limits, Memory, Use, CONNECTION_FIXED_BYTES, STEP_RESERVE};
use crate::recording::Recorder;
use std::collections::{BTreeMap, BTreeSet};
use std::net::TcpStream;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};
use zonelab_device::config::namespaces::NamespaceRequest;
use zonelab_device::namespaces::Drive;
use zonelab_device::{Namespace, ZonedDevice, NAMESPACES_MAX};
use zonelab_sim::Nanos;

/// NQN of the discovery subsystem (well-known, NVMe Base §4.7).
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";
/// The subsystem NQN served unless `--nqn` names another.
pub const DEFAULT_NQN: &str = "nqn.2026-11.io.zonelab:zns";
/// I/O queues one controller may create (Set Features Number of Queues).
pub const IO_QUEUES_MAX: u16 = 64;
/// Entries of each submission queue (CAP.MQES + 1).
pub const QUEUE_ENTRIES_MAX: u16 = 128;
/// A namespace of the subsystem: one namespace of a device model (several
/// namespaces of one device share its flash and controller), paced and
/// persisted by its own backend.
pub type NamespaceBackend = Backend<Namespace>;

/// Asynchronous Event Requests a controller holds (AERL + 1).
pub const AERS_MAX: u32 = 4;

/// A lock that outlives a panic in another thread (the backend guards its
/// own consistency; see [`Backend::submit`]).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A read lock that outlives a panic in another thread.
fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Controller registers and features a host sets.
#[derive(Debug, Default)]
pub struct ControllerState {
    /// Controller Configuration register (CC); bit 0 is EN.
    pub cc: u32,
    /// Controller Status register (CSTS); bit 0 is RDY.
    pub csts: u32,
    /// Keep Alive Timeout from Connect or Set Features, in milliseconds.
    pub kato_ms: u32,
    /// Asynchronous Event Configuration feature, as set.
    pub async_event_config: u32,
    /// Volatile Write Cache feature: WCE as the host set it.
    pub volatile_write_cache: bool,
    /// I/O queues granted by Set Features Number of Queues (0: not asked).
    pub io_queues: u16,
    /// Asynchronous Event Requests held and the notices due.
    pub events: crate::nvme_tcp::events::Events,
    /// The connection of its admin queue, which event completions go to.
    pub admin_connection: Option<std::sync::Weak<Connection>>,
    /// The connections of its queues (admin and I/O), closed with it.
    pub queues: BTreeSet<u64>,
}

/// A controller a host created with an admin-queue Connect.
#[derive(Debug)]
pub struct Controller {
    /// Controller id (1..=0xFFEF).
    pub cntlid: u16,
    /// A discovery controller (it serves the discovery log only).
    pub discovery: bool,
    /// NQN of the host that connected.
    pub hostnqn: String,
    /// Host identifier from the Connect data.
    pub hostid: [u8; 16],
    /// Registers and features, shared by the controller's queues.
    pub state: Mutex<ControllerState>,
    /// Server wall time its host last sent anything on any of its queues
    /// (the keep-alive timer restarts on any traffic, as Linux's target does).
    last_active_ns: AtomicU64,
}

impl Controller {
    /// Its host sent something at `now_ns`.
    pub fn touch(&self, now_ns: Nanos) {
        self.last_active_ns.fetch_max(now_ns, Ordering::Relaxed);
    }

    /// When its host last sent something.
    pub fn last_active_ns(&self) -> Nanos {
        self.last_active_ns.load(Ordering::Relaxed)
    }

    /// Whether CSTS.RDY is set: the host enabled the controller.
    pub fn enabled(&self) -> bool {
        lock(&self.state).csts & 1 != 0
    }
}

/// Connections being closed that may still hold their threads: beyond
/// the cap, new connections wait for them to go (threads stay bounded).
const CLOSING_CONNECTIONS_MAX: usize = 64;
/// Error log entries kept (the oldest go first).
pub const ERROR_LOG_ENTRIES_MAX: usize = 64;
/// Server messages about clients printed per second; the rest are counted.
const LOG_LINES_PER_SECOND: u32 = 20;

/// An Error Information log entry (NVMe Base 2.0, Figure 205): a command
/// that failed inside the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorEntry {
    /// Error count: 1 for the first error since the server started.
    pub count: u64,
    /// Submission queue id of the command.
    pub sqid: u16,
    /// Its command id.
    pub cid: u16,
    /// The status it got (`SCT << 8 | SC`).
    pub status: u16,
    /// The namespace it went to.
    pub nsid: u32,
}

/// One allocated namespace of the subsystem: its backend and its state.
pub struct NsSlot {
    /// The namespace's model, paced and persisted.
    pub backend: Mutex<NamespaceBackend>,
    /// Taken offline after a model fault (fault policy).
    offline: AtomicBool,
    /// Attached to the subsystem's controllers (active): I/O reaches it.
    attached: AtomicBool,
    /// Deleted (set under the backend's lock): nothing runs on it again.
    deleted: AtomicBool,
    /// 0 for the namespaces the target started with; the target's count of
    /// creates for a created one, so that its UUID is new (a namespace's
    /// identifiers are never reused, NVMe Base 2.0, §4.7.1).
    pub generation: u64,
    /// What Namespace Management was asked for, for a created one (kept in
    /// the `--backing` namespace list); `None` for the configuration's.
    pub request: Option<NamespaceRequest>,
}

impl NsSlot {
    pub(crate) fn new(
        backend: NamespaceBackend,
        attached: bool,
        generation: u64,
        request: Option<NamespaceRequest>,
    ) -> Arc<Self> {
        Arc::new(NsSlot {
            request,
            backend: Mutex::new(backend),
            offline: AtomicBool::new(false),
            attached: AtomicBool::new(attached),
            deleted: AtomicBool::new(false),
            generation,
        })
    }

    /// Whether it is attached (an active NSID).
    pub fn attached(&self) -> bool {
        self.attached.load(Ordering::Relaxed)
    }

    pub(crate) fn set_attached(&self, attached: bool) -> bool {
        self.attached.swap(attached, Ordering::Relaxed)
    }

    pub(crate) fn set_deleted(&self) {
        self.deleted.store(true, Ordering::Relaxed);
    }
}

/// The fault policy's state: the errors the Error Information log reports
/// (which namespaces went offline is each [`NsSlot`]'s).
#[derive(Default)]
struct Faults {
    errors: Mutex<(u64, std::collections::VecDeque<ErrorEntry>)>,
    /// Tests only: the next command with this (NSID, opcode) makes the model panic.
    #[cfg(test)]
    inject: Mutex<Option<(u32, u8)>>,
}

/// Rate-limits what hostile clients can make the server print.
struct LogLimiter {
    window: Mutex<(Instant, u32, u64)>,
}

/// The NVM subsystem served over NVMe/TCP.
pub struct Target {
    /// The subsystem's NQN, which hosts connect to.
    pub subnqn: String,
    /// NSID `i + 1`, if allocated ([`NAMESPACES_MAX`] slots).
    namespaces: RwLock<Vec<Option<Arc<NsSlot>>>>,
    /// The drive whose namespaces Namespace Management creates and deletes
    /// (`None`: no Namespace Management).
    pub(crate) drive: Option<Mutex<Drive>>,
    /// Namespaces created so far (their generations).
    pub(crate) created: AtomicU64,
    /// How the namespaces' simulated time follows the wall clock.
    pace: crate::Pace,
    /// MDTS and the zone append limit in bytes, fixed when the target is
    /// built (every namespace created later shares the controller's).
    transfer_bytes_max: u64,
    zasl_bytes: u64,
    /// When the target started: wall time 0 of the server.
    pub started: Instant,
    limits: Limits,
    memory: Arc<Memory>,
    controllers: Mutex<BTreeMap<u16, Arc<Controller>>>,
    next_cntlid: Mutex<u16>,
    /// Every open connection (including those being closed).
    connections: Mutex<BTreeMap<u64, Arc<Connection>>>,
    next_connection: AtomicU64,
    faults: Faults,
    log: LogLimiter,
    stopping: AtomicBool,
    /// `serve --record`: the recording every namespace writes to.
    recorder: Option<Arc<Recorder>>,
    /// `--backing FILE`: namespaces created later keep their images beside
    /// FILE, and the namespace list lasts ([`super::persist`]).
    pub(crate) backing: Option<std::path::PathBuf>,
}

impl Target {
    /// A subsystem named `subnqn` whose `namespaces` (1 to
    /// [`NAMESPACES_MAX`]) are NSIDs 1, 2, ..., attached, with the default
    /// [`Limits`] and no Namespace Management (see [`Target::with_drive`]).
    pub fn new(subnqn: String, namespaces: Vec<NamespaceBackend>) -> Self {
        assert!(!namespaces.is_empty(), "a subsystem has a namespace");
        assert!(namespaces.len() <= NAMESPACES_MAX as usize, "at most NAMESPACES_MAX namespaces");
        let limits = Limits::default();
        let pace = namespaces[0].pace();
        let transfer_bytes_max = namespaces.iter().map(|ns| ns.geometry().io_bytes_max).min().unwrap_or(0);
        let zasl_bytes = namespaces.iter().map(|ns| ns.device().identify().zasl_bytes).min().unwrap_or(0);
        let mut slots: Vec<Option<Arc<NsSlot>>> =
            namespaces.into_iter().map(|b| Some(NsSlot::new(b, true, 0, None))).collect();
        slots.resize(NAMESPACES_MAX as usize, None);
        Target {
            subnqn,
            namespaces: RwLock::new(slots),
            drive: None,
            created: AtomicU64::new(0),
            pace,
            transfer_bytes_max,
            zasl_bytes,
            started: Instant::now(),
            memory: Memory::new(limits.total_memory),
            limits,
            controllers: Mutex::new(BTreeMap::new()),
            next_cntlid: Mutex::new(1),
            connections: Mutex::new(BTreeMap::new()),
            next_connection: AtomicU64::new(0),
            log: LogLimiter { window: Mutex::new((Instant::now(), 0, 0)) },
            stopping: AtomicBool::new(false),
            recorder: None,
            faults: Faults::default(),
            backing: None,
        }
    }

    /// The same target recording every I/O command its namespaces run
    /// (call before serving).
    pub fn with_recorder(mut self, recorder: Arc<Recorder>) -> Self {
        for (nsid, slot) in self.slots() {
            lock(&slot.backend).record_to(Arc::clone(&recorder), nsid);
        }
        self.recorder = Some(recorder);
        self
    }

    /// The recording, if any (a created namespace records to it too).
    pub(crate) fn recorder(&self) -> Option<&Arc<Recorder>> {
        self.recorder.as_ref()
    }

    /// How simulated time follows the wall clock.
    pub fn pace(&self) -> crate::Pace {
        self.pace
    }

    /// MDTS in bytes, as the namespaces were when the target was built.
    pub fn transfer_bytes_max(&self) -> u64 {
        self.transfer_bytes_max
    }

    /// The smallest Zone Append Size Limit of the namespaces, in bytes.
    pub fn zasl_bytes(&self) -> u64 {
        self.zasl_bytes
    }

    /// Whether commands are recorded.
    pub fn recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Hands the recording's buffered lines to its file.
    pub fn flush_recording(&self) {
        if let Some(recorder) = &self.recorder {
            recorder.flush();
        }
    }

    /// The same target with Namespace Management over `drive`, the drive of
    /// its first namespaces (call before serving): Namespace Management
    /// creates namespaces on its free blocks and deletes them.
    pub fn with_drive(mut self, drive: Drive) -> Self {
        self.drive = Some(Mutex::new(drive));
        self
    }

    /// The same target keeping what Namespace Management does in `--backing`
    /// `base`'s namespace list and images (call before serving; see
    /// [`Target::restore_namespaces`]).
    pub fn with_backing(mut self, base: std::path::PathBuf) -> Self {
        self.backing = Some(base);
        self
    }

    /// The same target with other limits (call before serving).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.memory = Memory::new(limits.total_memory);
        self.limits = limits;
        self
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The server-wide memory budget (its use and peak).
    pub fn memory(&self) -> &Arc<Memory> {
        &self.memory
    }

    /// Server wall time: nanoseconds since the target started.
    pub fn wall_ns(&self) -> Nanos {
        Nanos::try_from(self.started.elapsed().as_nanos()).unwrap_or(Nanos::MAX)
    }

    /// The allocated namespace `nsid` names (attached or not).
    pub fn namespace(&self, nsid: u32) -> Option<Arc<NsSlot>> {
        let index = usize::try_from(nsid).ok()?.checked_sub(1)?;
        read(&self.namespaces).get(index)?.clone()
    }

    /// The namespace `nsid` names if it is active (attached).
    pub fn active(&self, nsid: u32) -> Option<Arc<NsSlot>> {
        self.namespace(nsid).filter(|slot| slot.attached())
    }

    /// Every allocated namespace with its NSID, lowest first.
    pub fn slots(&self) -> Vec<(u32, Arc<NsSlot>)> {
        let slots = read(&self.namespaces);
        (1..).zip(slots.iter()).filter_map(|(nsid, s)| Some((nsid, Arc::clone(s.as_ref()?)))).collect()
    }

    /// The NSIDs of the allocated namespaces (`active`: the attached ones).
    pub fn nsids(&self, active: bool) -> Vec<u32> {
        self.slots().into_iter().filter(|(_, s)| !active || s.attached()).map(|(nsid, _)| nsid).collect()
    }

    /// Number of Namespaces (NN): with Namespace Management every NSID
    /// there may be, else the namespaces served.
    pub fn nn(&self) -> u32 {
        if self.drive.is_some() {
            NAMESPACES_MAX
        } else {
            self.namespace_count()
        }
    }

    /// Allocated namespaces.
    pub fn namespace_count(&self) -> u32 {
        self.slots().len() as u32
    }

    /// The slots, to change (Namespace Management).
    pub(crate) fn slots_mut(&self) -> std::sync::RwLockWriteGuard<'_, Vec<Option<Arc<NsSlot>>>> {
        self.namespaces.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Prints a message a client caused, at most 20 (`LOG_LINES_PER_SECOND`) a
    /// second (hostile clients must not flood the server's log).
    pub fn log(&self, message: std::fmt::Arguments<'_>) {
        let mut window = lock(&self.log.window);
        if window.0.elapsed() >= Duration::from_secs(1) {
            if window.2 > 0 {
                eprintln!("zonelab: ({} more messages about clients not shown)", window.2);
            }
            *window = (Instant::now(), 0, 0);
        }
        if window.1 < LOG_LINES_PER_SECOND {
            window.1 += 1;
            eprintln!("zonelab: {message}");
        } else {
            window.2 += 1;
        }
    }
}

/// Controllers: created by admin Connects, torn down with their admin queue,
/// on keep-alive expiry, or reclaimed when the cap is reached.
impl Target {
    /// A new controller (dynamic controller model), or `None` when the cap
    /// is reached and no controller without keep-alive has been silent for
    /// `--idle-reclaim` (the oldest such one is torn down to make room).
    pub fn create_controller(&self, discovery: bool, hostnqn: String, hostid: [u8; 16]) -> Option<Arc<Controller>> {
        if lock(&self.controllers).len() >= self.limits.max_controllers {
            let victim = self.idle_controller()?;
            self.log(format_args!("controller cap reached: reclaiming idle controller {victim} (keep-alive 0)"));
            self.remove_controller(victim);
        }
        let mut controllers = lock(&self.controllers);
        if controllers.len() >= self.limits.max_controllers {
            return None;
        }
        let mut next = lock(&self.next_cntlid);
        // Controller ids 1..=0xFFEF; skip ids still in use after a wrap.
        let cntlid = (0..controllers.len() + 1)
            .map(|i| ((usize::from(*next) - 1 + i) % 0xFFEF + 1) as u16)
            .find(|id| !controllers.contains_key(id))?;
        *next = cntlid % 0xFFEF + 1;
        let controller = Arc::new(Controller {
            cntlid,
            discovery,
            hostnqn,
            hostid,
            state: Mutex::new(ControllerState::default()),
            last_active_ns: AtomicU64::new(self.wall_ns()),
        });
        controllers.insert(cntlid, Arc::clone(&controller));
        Some(controller)
    }

    /// The controller without keep-alive (KATO 0) silent the longest, if
    /// for at least `--idle-reclaim`: controllers with a keep-alive timeout
    /// go by themselves when silent.
    fn idle_controller(&self) -> Option<u16> {
        let idle_before = self.wall_ns().checked_sub(duration_ns(self.limits.idle_reclaim))?;
        let controllers = lock(&self.controllers);
        let idle = controllers.values().filter(|c| lock(&c.state).kato_ms == 0 && c.last_active_ns() <= idle_before);
        idle.min_by_key(|c| c.last_active_ns()).map(|c| c.cntlid)
    }

    /// The live controller with id `cntlid`.
    pub fn controller(&self, cntlid: u16) -> Option<Arc<Controller>> {
        lock(&self.controllers).get(&cntlid).cloned()
    }

    /// Removes a controller (its admin queue went away, its keep-alive
    /// expired, or it was reclaimed) and closes all its queues.
    pub fn remove_controller(&self, cntlid: u16) {
        let Some(controller) = lock(&self.controllers).remove(&cntlid) else { return };
        let queues = std::mem::take(&mut lock(&controller.state).queues);
        let connections = lock(&self.connections);
        for id in queues {
            if let Some(connection) = connections.get(&id) {
                connection.close();
            }
        }
    }

    /// Removes `controller` if it is still the live one with its id (not a
    /// later controller that reused the id of a reaped one).
    pub fn remove_controller_of(&self, controller: &Arc<Controller>) {
        let live = lock(&self.controllers).get(&controller.cntlid).is_some_and(|c| Arc::ptr_eq(c, controller));
        if live {
            self.remove_controller(controller.cntlid);
        }
    }

    /// The ids of the NVM subsystem's live controllers (not the discovery
    /// ones), from `first` up, at most 2047 (a controller list's).
    pub fn controller_ids(&self, first: u16) -> Vec<u16> {
        let controllers = lock(&self.controllers);
        controllers.values().filter(|c| !c.discovery && c.cntlid >= first).map(|c| c.cntlid).take(2047).collect()
    }

    /// The NVM subsystem's live controllers (not the discovery ones).
    pub fn io_controllers(&self) -> Vec<Arc<Controller>> {
        lock(&self.controllers).values().filter(|c| !c.discovery).cloned().collect()
    }

    /// Controllers alive.
    pub fn controller_count(&self) -> usize {
        lock(&self.controllers).len()
    }
}

fn duration_ns(d: Duration) -> Nanos {
    Nanos::try_from(d.as_nanos()).unwrap_or(Nanos::MAX)
}

/// Connections: admitted within the cap (reclaiming the oldest idle one
/// when it is reached), timed out when their setup stalls.
impl Target {
    /// Registers a connection accepted on `stream`, or gives the stream back
    /// when the cap (or the memory budget) leaves no room even after
    /// reclaiming an idle connection: then the caller closes it.
    pub fn admit(&self, stream: TcpStream) -> Result<Arc<Connection>, TcpStream> {
        if self.stopping.load(Ordering::Relaxed) {
            return Err(stream);
        }
        let mut stream = stream;
        for attempt in 0..2 {
            match self.try_admit(stream) {
                Ok(connection) => return Ok(connection),
                Err(refused) => stream = refused,
            }
            if attempt == 0 && !self.reclaim_connection() {
                break;
            }
        }
        self.log(format_args!("connection cap or memory budget reached: a new connection is refused"));
        Err(stream)
    }

    fn try_admit(&self, stream: TcpStream) -> Result<Arc<Connection>, TcpStream> {
        let mut connections = lock(&self.connections);
        let live = connections.values().filter(|c| !c.closing()).count();
        let registered = connections.len();
        if live >= self.limits.max_connections || registered >= self.limits.max_connections + CLOSING_CONNECTIONS_MAX {
            return Err(stream);
        }
        let memory = ConnMemory::new(self.limits.connection_memory, Arc::clone(&self.memory));
        // Like R2Ts, connections leave one step's memory free (limits.rs, STEP_RESERVE).
        let Some(fixed) = memory.try_charge(Use::Fixed, CONNECTION_FIXED_BYTES, STEP_RESERVE) else {
            return Err(stream);
        };
        let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
        let connection = Connection::new(id, memory, Some(stream), Some(fixed), self.wall_ns());
        connections.insert(id, Arc::clone(&connection));
        Ok(connection)
    }

    /// Closes one connection to make room: the oldest that has not finished
    /// its setup, else the controller without keep-alive idle the longest.
    /// False when there is none.
    fn reclaim_connection(&self) -> bool {
        let unbound = {
            let connections = lock(&self.connections);
            let setting_up = connections.values().filter(|c| !c.closing() && c.phase() < Phase::Connected);
            setting_up.min_by_key(|c| c.accepted_ns).cloned()
        };
        if let Some(connection) = unbound {
            self.log(format_args!("connection cap reached: closing connection {} (not connected)", connection.id));
            connection.close();
            return true;
        }
        let Some(cntlid) = self.idle_controller() else { return false };
        self.log(format_args!("connection cap reached: reclaiming idle controller {cntlid} (keep-alive 0)"));
        self.remove_controller(cntlid);
        true
    }

    /// A connection with no socket and no limits (a session driven from
    /// bytes: tests, fuzzing).
    pub fn detached_connection(&self) -> Arc<Connection> {
        let id = self.next_connection.fetch_add(1, Ordering::Relaxed);
        Connection::new(id, ConnMemory::unlimited(), None, None, self.wall_ns())
    }

    /// Connections registered now (including those being closed).
    pub fn connection_count(&self) -> usize {
        lock(&self.connections).len()
    }

    /// Forgets a connection whose threads are done.
    pub fn remove_connection(&self, id: u64) {
        lock(&self.connections).remove(&id);
    }

    /// Closes every connection (a stop): hosts see the controller go away.
    pub fn close_connections(&self) {
        self.stopping.store(true, Ordering::Relaxed);
        for connection in lock(&self.connections).values() {
            connection.close();
        }
    }

    /// Whether the server is stopping.
    pub fn stopping(&self) -> bool {
        self.stopping.load(Ordering::Relaxed)
    }

    /// The periodic checks: setup timeouts, keep-alive expiry, and when the
    /// memory budget runs out, the stalled connection holding the most.
    pub fn reap(&self) {
        let now = self.wall_ns();
        self.reap_setup(now);
        self.reap_keep_alive(now);
        // Starved now or a moment ago (a deferred R2T retries every 20 ms):
        // one stalled connection per round, so no more close than needed.
        if self.memory.starved(Duration::from_millis(100)) {
            self.reap_stalled(now);
        }
    }

    fn reap_setup(&self, now: Nanos) {
        let (icreq, connect) = (duration_ns(self.limits.icreq_timeout), duration_ns(self.limits.connect_timeout));
        let connections: Vec<_> = lock(&self.connections).values().filter(|c| !c.closing()).cloned().collect();
        for c in connections {
            let waited = now.saturating_sub(c.phase_ns());
            let late = match c.phase() {
                Phase::AwaitIcReq => waited > icreq,
                Phase::AwaitConnect => waited > connect,
                Phase::Connected => false,
            };
            if late {
                self.log(format_args!("connection {}: no {:?} in time; closing", c.id, c.phase()));
                c.close();
            }
        }
    }

    /// A controller whose host sent nothing for twice its KATO is torn down
    /// (hosts send Keep Alive every KATO / 2 or KATO; the margin covers both).
    fn reap_keep_alive(&self, now: Nanos) {
        let expired: Vec<u16> = lock(&self.controllers)
            .values()
            .filter(|c| {
                let kato_ns = u64::from(lock(&c.state).kato_ms) * 1_000_000;
                kato_ns > 0 && now.saturating_sub(c.last_active_ns()) > 2 * kato_ns
            })
            .map(|c| c.cntlid)
            .collect();
        for cntlid in expired {
            self.log(format_args!("controller {cntlid}: keep alive timeout; closing its queues"));
            self.remove_controller(cntlid);
        }
    }

    fn reap_stalled(&self, now: Nanos) {
        let Some(stalled_before) = now.checked_sub(duration_ns(self.limits.stall_timeout)) else { return };
        let worst = {
            let connections = lock(&self.connections);
            let held = connections.values().filter(|c| !c.closing()).map(|c| (c.stalled_bytes(stalled_before), c));
            held.filter(|(bytes, _)| *bytes > 0).max_by_key(|(bytes, _)| *bytes).map(|(b, c)| (b, Arc::clone(c)))
        };
        if let Some((bytes, connection)) = worst {
            self.log(format_args!(
                "memory budget exhausted: closing connection {} (holds {bytes} bytes, no progress)",
                connection.id
            ));
            connection.close();
        }
    }
}

/// The fault policy: a model that panics on a command leaves its namespace
/// in a state nobody can trust, so that namespace goes offline (its
/// commands get Namespace Not Ready, with Do Not Retry; the SMART log's
/// critical warning and the Error Information log say why), while the other
/// namespaces, controllers and hosts go on. The server never stops for it.
impl Target {
    /// Runs `run` on namespace `nsid` for the command `sqe` of queue `sqid`
    /// under the fault policy: Invalid Namespace for an NSID that names
    /// none, Namespace Not Ready once the namespace is offline, Internal
    /// Error for the command whose model fault takes it offline.
    pub fn run_io(
        &self,
        nsid: u32,
        sqid: u16,
        sqe: &Sqe<'_>,
        run: impl FnOnce(&mut NamespaceBackend) -> Reply,
    ) -> Reply {
        let Some(slot) = self.namespace(nsid) else {
            return Reply::status(sc::INVALID_NAMESPACE);
        };
        if slot.offline.load(Ordering::Relaxed) {
            return Reply::status(sc::NAMESPACE_NOT_READY);
        }
        let mut ns = lock(&slot.backend);
        // Checked under the backend's lock, which Delete and Attachment take.
        if slot.deleted.load(Ordering::Relaxed) {
            return Reply::status(sc::INVALID_NAMESPACE);
        }
        if !slot.attached() {
            // An allocated NSID that is not attached is inactive (NVMe Base 2.0, §3.2.1.5).
            return Reply::status(sc::INVALID_FIELD);
        }
        #[cfg(test)]
        let inject = lock(&self.faults.inject).take_if(|f| *f == (nsid, sqe.opcode())).is_some();
        // The backend catches the model's panics itself (and marks itself
        // failed); this guard catches the transport's own code around it.
        let result = catch_unwind(AssertUnwindSafe(|| {
            #[cfg(test)]
            if inject {
                panic!("injected model fault on namespace {nsid}");
            }
            run(&mut ns)
        }));
        let failed = ns.failed();
        drop(ns);
        match result {
            Ok(reply) if !failed => reply,
            _ => {
                self.take_offline(&slot, nsid, sqid, sqe.cid());
                Reply::status(sc::INTERNAL_ERROR)
            }
        }
    }

    fn take_offline(&self, slot: &NsSlot, nsid: u32, sqid: u16, cid: u16) {
        if slot.offline.swap(true, Ordering::Relaxed) {
            return;
        }
        eprintln!(
            "zonelab: the device model failed on namespace {nsid}: it is offline (Namespace Not Ready) until the \
             server restarts; other namespaces go on"
        );
        let mut errors = lock(&self.faults.errors);
        errors.0 += 1;
        let entry = ErrorEntry { count: errors.0, sqid, cid, status: sc::INTERNAL_ERROR, nsid };
        if errors.1.len() >= ERROR_LOG_ENTRIES_MAX {
            errors.1.pop_front();
        }
        errors.1.push_back(entry);
    }

    /// Whether namespace `nsid` went offline after a model fault.
    pub fn namespace_offline(&self, nsid: u32) -> bool {
        self.namespace(nsid).is_some_and(|slot| slot.offline.load(Ordering::Relaxed))
    }

    /// The Error Information log's entries, newest first.
    pub fn error_entries(&self) -> Vec<ErrorEntry> {
        lock(&self.faults.errors).1.iter().rev().copied().collect()
    }

    /// Tests only: the next command `opcode` to namespace `nsid` makes the model panic.
    #[cfg(test)]
    pub fn inject_fault(&self, nsid: u32, opcode: u8) {
        *lock(&self.faults.inject) = Some((nsid, opcode));
    }

    /// Every namespace's statistics (an offline one's as they stood).
    pub fn stats_report(&self) -> String {
        let mut out = String::new();
        let slots = self.slots();
        for (nsid, slot) in &slots {
            if slots.len() > 1 || *nsid != 1 {
                out.push_str(&format!("namespace {nsid}:\n"));
            }
            let report = catch_unwind(AssertUnwindSafe(|| lock(&slot.backend).stats_report()));
            out.push_str(&report.unwrap_or_else(|_| "(statistics unavailable: the model failed)\n".into()));
        }
        out
    }

    /// Makes every image durable (clean stop, shutdown notification).
    pub fn sync_images(&self) -> Result<(), crate::ServeError> {
        self.slots().iter().try_for_each(|(_, slot)| lock(&slot.backend).sync_image())
    }

    /// Whether some namespace's model failed (see [`Backend::failed`]).
    pub fn failed(&self) -> bool {
        self.slots().iter().any(|(_, s)| s.offline.load(Ordering::Relaxed) || lock(&s.backend).failed())
    }
}
