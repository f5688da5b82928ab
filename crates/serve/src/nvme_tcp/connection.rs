//! What the server knows of one open connection besides its protocol state
//! ([`crate::nvme_tcp::session::Session`]): where it is in its setup (for
//! the ICReq and Connect timeouts), when its host last sent something, how
//! many commands it has outstanding (SQSIZE), whether its writer is stuck
//! on a host that reads nothing, and its memory share. The reader, the
//! writer and the reaper share it; closing it shuts its socket down, which
//! ends both of its threads.

use crate::nvme_tcp::command::Reply;
use crate::nvme_tcp::limits::{Charge, ConnMemory, Use};
use crate::nvme_tcp::pdu::Encoding;
use crate::nvme_tcp::session::Output;
use crate::nvme_tcp::target::lock;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use zonelab_sim::Nanos;

/// Where a connection is in its setup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    /// Accepted; no ICReq yet.
    AwaitIcReq = 0,
    /// ICResp sent; no successful Connect yet.
    AwaitConnect = 1,
    /// Bound to a controller's queue.
    Connected = 2,
}

/// One connection's shared state (see the module documentation).
pub struct Connection {
    /// The id the server gave it (controllers list their queues by it).
    pub id: u64,
    /// Its share of the memory budget.
    pub memory: Arc<ConnMemory>,
    /// Its socket (the one descriptor its reader and writer share); none for
    /// a session without one.
    stream: Option<TcpStream>,
    /// Server wall time it was accepted at.
    pub accepted_ns: Nanos,
    phase: AtomicU8,
    phase_ns: AtomicU64,
    last_rx_ns: AtomicU64,
    /// Commands received and not yet answered (sent or being sent).
    pub outstanding: AtomicUsize,
    /// `serve --record`: SEQ of the last completion handed to the socket (0: none yet).
    last_sent_seq: AtomicU64,
    /// When the writer started the write it is still in (0: not writing).
    writing_since_ns: AtomicU64,
    closing: AtomicBool,
    /// Its read buffer and bookkeeping, charged while it is open.
    _fixed: Option<Charge>,
    /// The encoding its ICReq negotiated (event completions are encoded so).
    encoding: Mutex<Encoding>,
    /// Its writer's queue, for completions that arise outside its reader
    /// (asynchronous events); none without a writer.
    sink: Mutex<Option<SyncSender<Output>>>,
    /// Such completions not handed to a writer yet: its session sends them
    /// at its next step (at most one per held event request, so bounded).
    pending: Mutex<Vec<Output>>,
}

impl Connection {
    /// A connection accepted at `now_ns` on `stream` (`None`: no socket),
    /// holding `fixed` while it lives.
    pub fn new(
        id: u64,
        memory: Arc<ConnMemory>,
        stream: Option<TcpStream>,
        fixed: Option<Charge>,
        now_ns: Nanos,
    ) -> Arc<Self> {
        Arc::new(Connection {
            id,
            memory,
            stream,
            accepted_ns: now_ns,
            phase: AtomicU8::new(Phase::AwaitIcReq as u8),
            phase_ns: AtomicU64::new(now_ns),
            last_rx_ns: AtomicU64::new(now_ns),
            outstanding: AtomicUsize::new(0),
            last_sent_seq: AtomicU64::new(0),
            writing_since_ns: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            _fixed: fixed,
            encoding: Mutex::new(Encoding::default()),
            sink: Mutex::new(None),
            pending: Mutex::new(Vec::new()),
        })
    }

    /// The encoding the ICReq negotiated.
    pub fn set_encoding(&self, encoding: Encoding) {
        *lock(&self.encoding) = encoding;
    }

    /// Where completions made outside the reader go (`None`: forget the
    /// writer's queue, so that it ends when the reader drops its own).
    pub fn set_sink(&self, sink: Option<SyncSender<Output>>) {
        *lock(&self.sink) = sink;
    }

    /// Completes held command `cid` with `reply` from outside the reader:
    /// to the writer at once if there is room, else at the session's next step.
    pub fn push_async(&self, cid: u16, reply: Reply) {
        let output = crate::nvme_tcp::events::event_output(*lock(&self.encoding), cid, &reply);
        let unsent = match lock(&self.sink).as_ref() {
            Some(tx) => match tx.try_send(output) {
                Ok(()) => return,
                Err(TrySendError::Full(o) | TrySendError::Disconnected(o)) => o,
            },
            None => output,
        };
        lock(&self.pending).push(unsent);
    }

    /// The completions [`Connection::push_async`] could not hand over.
    pub fn take_pending(&self) -> Vec<Output> {
        std::mem::take(&mut *lock(&self.pending))
    }

    /// Its socket, if it has one.
    pub fn stream(&self) -> Option<&TcpStream> {
        self.stream.as_ref()
    }

    /// Whether a writer thread sends its outputs (and so answers leave the
    /// outstanding count when sent, not when made).
    pub fn has_writer(&self) -> bool {
        self.stream.is_some()
    }

    /// Where the connection is in its setup.
    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Relaxed) {
            0 => Phase::AwaitIcReq,
            1 => Phase::AwaitConnect,
            _ => Phase::Connected,
        }
    }

    /// Server wall time the current phase began.
    pub fn phase_ns(&self) -> Nanos {
        self.phase_ns.load(Ordering::Relaxed)
    }

    /// Moves to `phase` at `now_ns`.
    pub fn set_phase(&self, phase: Phase, now_ns: Nanos) {
        self.phase_ns.store(now_ns, Ordering::Relaxed);
        self.phase.store(phase as u8, Ordering::Relaxed);
    }

    /// The host sent something at `now_ns`.
    pub fn touch(&self, now_ns: Nanos) {
        self.last_rx_ns.store(now_ns, Ordering::Relaxed);
    }

    /// When the host last sent something.
    pub fn last_rx_ns(&self) -> Nanos {
        self.last_rx_ns.load(Ordering::Relaxed)
    }

    /// A response ends recorded command `seq` (0: none), as it is sent.
    pub fn note_sent(&self, seq: u64) {
        if seq != 0 {
            self.last_sent_seq.store(seq, Ordering::Relaxed);
        }
    }

    /// The last recorded command whose completion was sent to the host.
    pub fn last_sent(&self) -> Option<u64> {
        Some(self.last_sent_seq.load(Ordering::Relaxed)).filter(|&s| s != 0)
    }

    /// The writer starts (`Some(now)`) or ends (`None`) a write.
    pub fn set_writing(&self, since_ns: Option<Nanos>) {
        self.writing_since_ns.store(since_ns.map_or(0, |t| t.max(1)), Ordering::Relaxed);
    }

    /// Bytes this connection holds that only its host can free, if it has
    /// made no progress since `stalled_before_ns`: answers its host does
    /// not read, or R2T buffers it sends no data for. 0 otherwise.
    pub fn stalled_bytes(&self, stalled_before_ns: Nanos) -> usize {
        let writing = self.writing_since_ns.load(Ordering::Relaxed);
        let writer_stuck = writing != 0 && writing <= stalled_before_ns;
        let r2t = self.memory.held(Use::R2t);
        let data_late = r2t > 0 && self.last_rx_ns() <= stalled_before_ns;
        match (writer_stuck, data_late) {
            (false, false) => 0,
            (true, _) => self.memory.held(Use::Reply) + r2t,
            (false, true) => r2t,
        }
    }

    /// Whether the server is closing it.
    pub fn closing(&self) -> bool {
        self.closing.load(Ordering::Relaxed)
    }

    /// Closes it: both directions of the socket shut down, so its reader
    /// and writer end (a blocked charge sees [`Connection::closing`]).
    pub fn close(&self) {
        self.closing.store(true, Ordering::Relaxed);
        if let Some(stream) = &self.stream {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}
