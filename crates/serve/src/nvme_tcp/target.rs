//! The NVM subsystem the target exposes: its namespaces (one [`Backend`]
//! each), the controllers hosts created with Connect, and the discovery
//! subsystem's view of the port.

use crate::backend::Backend;
use std::collections::BTreeMap;
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;
use zonelab_device::Namespace;
use zonelab_sim::Nanos;

/// NQN of the discovery subsystem (well-known, NVMe Base §4.7).
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";
/// The subsystem NQN served unless `--nqn` names another.
pub const DEFAULT_NQN: &str = "nqn.2026-11.io.zonelab:zns";
/// Controllers alive at once (each is an admin connection).
pub const CONTROLLERS_MAX: usize = 64;
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
    /// Asynchronous Event Requests outstanding.
    pub aers_held: u32,
    /// The I/O queues' connections by connection id, shut down with the controller.
    pub io_streams: BTreeMap<u64, TcpStream>,
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
}

impl Controller {
    /// Whether CSTS.RDY is set: the host enabled the controller.
    pub fn enabled(&self) -> bool {
        lock(&self.state).csts & 1 != 0
    }
}

/// The NVM subsystem served over NVMe/TCP.
pub struct Target {
    /// The subsystem's NQN, which hosts connect to.
    pub subnqn: String,
    /// Namespace `i + 1`.
    pub namespaces: Vec<Mutex<NamespaceBackend>>,
    /// When the target started: wall time 0 of the server.
    pub started: Instant,
    controllers: Mutex<BTreeMap<u16, Arc<Controller>>>,
    next_cntlid: Mutex<u16>,
    /// Every open connection, shut down on a stop.
    connections: Mutex<BTreeMap<u64, TcpStream>>,
}

impl Target {
    /// A subsystem named `subnqn` whose `namespaces` (at least one) are NSIDs 1, 2, ...
    pub fn new(subnqn: String, namespaces: Vec<NamespaceBackend>) -> Self {
        assert!(!namespaces.is_empty(), "a subsystem has a namespace");
        Target {
            subnqn,
            namespaces: namespaces.into_iter().map(Mutex::new).collect(),
            started: Instant::now(),
            controllers: Mutex::new(BTreeMap::new()),
            next_cntlid: Mutex::new(1),
            connections: Mutex::new(BTreeMap::new()),
        }
    }

    /// Server wall time: nanoseconds since the target started.
    pub fn wall_ns(&self) -> Nanos {
        Nanos::try_from(self.started.elapsed().as_nanos()).unwrap_or(Nanos::MAX)
    }

    /// The namespace `nsid` names, if active.
    pub fn namespace(&self, nsid: u32) -> Option<&Mutex<NamespaceBackend>> {
        let index = usize::try_from(nsid).ok()?.checked_sub(1)?;
        self.namespaces.get(index)
    }

    /// Active namespaces (the highest NSID).
    pub fn namespace_count(&self) -> u32 {
        self.namespaces.len() as u32
    }

    /// A new controller (dynamic controller model), or `None` when too many are alive.
    pub fn create_controller(&self, discovery: bool, hostnqn: String, hostid: [u8; 16]) -> Option<Arc<Controller>> {
        let mut controllers = lock(&self.controllers);
        if controllers.len() >= CONTROLLERS_MAX {
            return None;
        }
        let mut next = lock(&self.next_cntlid);
        // Controller ids 1..=0xFFEF; skip ids still in use after a wrap.
        let cntlid = (0..CONTROLLERS_MAX + 1)
            .map(|i| ((usize::from(*next) - 1 + i) % 0xFFEF + 1) as u16)
            .find(|id| !controllers.contains_key(id))
            .expect("a free id among more candidates than controllers");
        *next = cntlid % 0xFFEF + 1;
        let controller =
            Arc::new(Controller { cntlid, discovery, hostnqn, hostid, state: Mutex::new(ControllerState::default()) });
        controllers.insert(cntlid, Arc::clone(&controller));
        Some(controller)
    }

    /// The live controller with id `cntlid`.
    pub fn controller(&self, cntlid: u16) -> Option<Arc<Controller>> {
        lock(&self.controllers).get(&cntlid).cloned()
    }

    /// Removes a controller whose admin queue went away, and its I/O queues.
    pub fn remove_controller(&self, cntlid: u16) {
        let Some(controller) = lock(&self.controllers).remove(&cntlid) else { return };
        let streams = std::mem::take(&mut lock(&controller.state).io_streams);
        for stream in streams.values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Registers an open connection, so a stop can close it.
    pub fn add_connection(&self, id: u64, stream: TcpStream) {
        lock(&self.connections).insert(id, stream);
    }

    /// Connections open now.
    pub fn connection_count(&self) -> usize {
        lock(&self.connections).len()
    }

    /// Forgets a closed connection.
    pub fn remove_connection(&self, id: u64) {
        lock(&self.connections).remove(&id);
    }

    /// Closes every connection (a stop): hosts see the controller go away.
    pub fn close_connections(&self) {
        for stream in lock(&self.connections).values() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Every namespace's statistics.
    pub fn stats_report(&self) -> String {
        let mut out = String::new();
        for (i, ns) in self.namespaces.iter().enumerate() {
            if self.namespaces.len() > 1 {
                out.push_str(&format!("namespace {}:\n", i + 1));
            }
            out.push_str(&lock(ns).stats_report());
        }
        out
    }

    /// Makes every image durable (clean stop, shutdown notification).
    pub fn sync_images(&self) -> Result<(), crate::ServeError> {
        self.namespaces.iter().try_for_each(|ns| lock(ns).sync_image())
    }

    /// Whether some namespace's model failed (see [`Backend::failed`]).
    pub fn failed(&self) -> bool {
        self.namespaces.iter().any(|ns| lock(ns).failed())
    }
}
