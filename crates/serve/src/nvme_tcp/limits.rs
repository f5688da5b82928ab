//! What a client may make the server hold, and the accounting that enforces
//! it: [`Limits`] (the `--max-connections`, `--connection-memory`, ...
//! settings), the server-wide [`Memory`] budget, each connection's share of
//! it ([`ConnMemory`]) and the [`Charge`] that holds bytes of both until
//! dropped. Every buffer a client can make the server fill (a PDU being
//! read, an R2T's data, a reply waiting to be sent) is charged before it is
//! allocated: anyone who can reach the port is a client, and a misbehaving
//! one must cost only its own bounded share.

use crate::request::IO_BYTES_MAX;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// One mebibyte.
pub const MIB: usize = 1 << 20;
/// The most a single PDU may take to read: the largest H2CData (MAXH2CDATA)
/// with its header, digests and the largest data offset a header can give.
pub const PDU_BYTES_MAX: usize = crate::nvme_tcp::pdu::H2C_DATA_BYTES_MAX + 512;
/// What running one command may need at once for its answer: the model's
/// data (at most MDTS, which is at most [`IO_BYTES_MAX`]), its encoded copy
/// and the PDU headers.
pub const REPLY_BYTES_MAX: usize = 2 * IO_BYTES_MAX as usize + 1024;
/// What one PDU's handling may charge (its buffer and its answer, charged
/// together so that a step never waits while holding memory). R2T grants
/// and connection fixed charges leave this much of a budget free, so that a
/// step can always go once the answers queued are sent: reading and
/// answering never wait for data the host has not been asked for yet.
pub const STEP_RESERVE: usize = PDU_BYTES_MAX + REPLY_BYTES_MAX;
/// Charged for every open connection: its read buffer and bookkeeping.
pub const CONNECTION_FIXED_BYTES: usize = 64 << 10;
/// The smallest `--connection-memory`: one step and one largest R2T.
pub const CONNECTION_MEMORY_MIN: usize = CONNECTION_FIXED_BYTES + STEP_RESERVE + IO_BYTES_MAX as usize;
/// How long a blocked charge sleeps before looking again (closing flags).
const WAIT_SLICE: Duration = Duration::from_millis(50);

/// The limits of `zonelab serve --nvme-tcp` (docs/nvme-tcp.md, "Limits").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Connections (queues of all controllers) open at once.
    pub max_connections: usize,
    /// Controllers (admin queues) alive at once.
    pub max_controllers: usize,
    /// Bytes one connection may make the server hold.
    pub connection_memory: usize,
    /// Bytes all connections together may make the server hold.
    pub total_memory: usize,
    /// A connection must send its ICReq this soon after it is accepted.
    pub icreq_timeout: Duration,
    /// A connection must be connected (Connect) this soon after its ICResp.
    pub connect_timeout: Duration,
    /// A controller without keep-alive (KATO 0) silent this long may be
    /// reclaimed when the controller or connection cap is reached.
    pub idle_reclaim: Duration,
    /// A connection that holds memory and makes no progress this long (its
    /// host reads nothing, or sends no data for its R2Ts) is closed when the
    /// total budget runs out.
    pub stall_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 256,
            max_controllers: 64,
            connection_memory: 16 * MIB,
            total_memory: 512 * MIB,
            icreq_timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(10),
            idle_reclaim: Duration::from_secs(10),
            stall_timeout: Duration::from_secs(5),
        }
    }
}

impl Limits {
    /// Whether the limits can serve anyone; the reason if not.
    pub fn check(&self) -> Result<(), String> {
        if self.max_connections == 0 || self.max_connections > 16384 {
            return Err(format!("--max-connections {}: 1 to 16384", self.max_connections));
        }
        if self.max_controllers == 0 || self.max_controllers > 0xFFEF {
            return Err(format!("--max-controllers {}: 1 to 65519", self.max_controllers));
        }
        if self.connection_memory < CONNECTION_MEMORY_MIN {
            let (has, min) = (self.connection_memory, CONNECTION_MEMORY_MIN);
            return Err(format!("--connection-memory {has}: at least {min} bytes (one transfer of each kind)"));
        }
        if self.total_memory < self.connection_memory {
            return Err(format!("--total-memory {}: at least --connection-memory", self.total_memory));
        }
        let timeouts = [self.icreq_timeout, self.connect_timeout, self.idle_reclaim, self.stall_timeout];
        if timeouts.iter().any(|t| t.is_zero()) {
            return Err("timeouts must be above zero".into());
        }
        Ok(())
    }
}

/// What a charge pays for (kept apart to find who holds what).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    /// A connection's read buffer and bookkeeping.
    Fixed = 0,
    /// A PDU being read and handled.
    Pdu = 1,
    /// An answer waiting to be sent (or being computed).
    Reply = 2,
    /// Data an R2T asked for.
    R2t = 3,
}

struct Totals {
    used: usize,
    peak: usize,
    /// Threads blocked on the total budget (not on their own).
    starving: usize,
    /// Last time a charge found the total budget exhausted.
    starved_at: Option<Instant>,
}

/// The server-wide budget: one lock and one condition for all charges, so a
/// release anywhere wakes whoever waits for it.
pub struct Memory {
    limit: usize,
    totals: Mutex<Totals>,
    freed: Condvar,
}

impl Memory {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        let totals = Totals { used: 0, peak: 0, starving: 0, starved_at: None };
        Arc::new(Memory { limit, totals: Mutex::new(totals), freed: Condvar::new() })
    }

    fn totals(&self) -> std::sync::MutexGuard<'_, Totals> {
        self.totals.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Bytes charged now.
    pub fn used(&self) -> usize {
        self.totals().used
    }

    /// The most bytes ever charged at once.
    pub fn peak(&self) -> usize {
        self.totals().peak
    }

    /// The budget.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Whether someone has waited for the total budget within `recent`.
    pub fn starved(&self, recent: Duration) -> bool {
        let totals = self.totals();
        totals.starving > 0 || totals.starved_at.is_some_and(|at| at.elapsed() < recent)
    }
}

/// One connection's share: its own limit, and the total it draws from.
pub struct ConnMemory {
    limit: usize,
    by_use: [AtomicUsize; 4],
    total: Arc<Memory>,
}

impl ConnMemory {
    /// A share of at most `limit` bytes of `total`.
    pub fn new(limit: usize, total: Arc<Memory>) -> Arc<Self> {
        Arc::new(ConnMemory { limit, by_use: Default::default(), total })
    }

    /// A share that never waits (a session without a server: tests, fuzzing).
    pub fn unlimited() -> Arc<Self> {
        Self::new(usize::MAX, Memory::new(usize::MAX))
    }

    /// Bytes this connection holds.
    pub fn used(&self) -> usize {
        self.by_use.iter().map(|u| u.load(Ordering::Relaxed)).sum()
    }

    /// Bytes this connection holds for `what`.
    pub fn held(&self, what: Use) -> usize {
        self.by_use[what as usize].load(Ordering::Relaxed)
    }

    /// Charges `bytes` if both budgets keep `keep_free` bytes free after it;
    /// never waits. A refusal by the total budget counts as starvation.
    pub fn try_charge(self: &Arc<Self>, what: Use, bytes: usize, keep_free: usize) -> Option<Charge> {
        let mut totals = self.total.totals();
        let fits_own = self.used().saturating_add(bytes).saturating_add(keep_free) <= self.limit;
        let fits_total = totals.used.saturating_add(bytes).saturating_add(keep_free) <= self.total.limit;
        if fits_own && !fits_total {
            totals.starved_at = Some(Instant::now());
        }
        (fits_own && fits_total).then(|| self.take(&mut totals, what, bytes))
    }

    /// Charges `bytes`, waiting while either budget lacks them; `None` once
    /// `closing` says the connection is going away.
    pub fn charge(self: &Arc<Self>, what: Use, bytes: usize, closing: &dyn Fn() -> bool) -> Option<Charge> {
        let mut totals = self.total.totals();
        let mut starving = false;
        let charge = loop {
            if closing() {
                break None;
            }
            let fits_own = self.used().saturating_add(bytes) <= self.limit;
            let fits_total = totals.used.saturating_add(bytes) <= self.total.limit;
            if fits_own && fits_total {
                break Some(self.take(&mut totals, what, bytes));
            }
            // Only a wait on the total budget is starvation: a connection over
            // its own share waits for its own host (backpressure).
            if fits_own != starving {
                starving = fits_own;
                totals.starving = if starving { totals.starving + 1 } else { totals.starving - 1 };
            }
            if starving {
                totals.starved_at = Some(Instant::now());
            }
            totals = self.total.freed.wait_timeout(totals, WAIT_SLICE).unwrap_or_else(|e| e.into_inner()).0;
        };
        if starving {
            totals.starving -= 1;
        }
        charge
    }

    fn take(self: &Arc<Self>, totals: &mut Totals, what: Use, bytes: usize) -> Charge {
        totals.used += bytes;
        totals.peak = totals.peak.max(totals.used);
        self.by_use[what as usize].fetch_add(bytes, Ordering::Relaxed);
        Charge { bytes, what, owner: Arc::clone(self) }
    }
}

/// Bytes held of a connection's share and of the total, given back when
/// dropped.
pub struct Charge {
    bytes: usize,
    what: Use,
    owner: Arc<ConnMemory>,
}

impl Charge {
    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Moves up to `bytes` of this charge into a new one for `what`, which
    /// then lives on its own (no wait: the bytes are already held).
    pub fn split(&mut self, what: Use, bytes: usize) -> Charge {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.owner.by_use[self.what as usize].fetch_sub(bytes, Ordering::Relaxed);
        self.owner.by_use[what as usize].fetch_add(bytes, Ordering::Relaxed);
        Charge { bytes, what, owner: Arc::clone(&self.owner) }
    }

    /// Gives back all but `bytes` (once the real size is known).
    pub fn shrink(&mut self, bytes: usize) {
        if bytes < self.bytes {
            self.release(self.bytes - bytes);
            self.bytes = bytes;
        }
    }

    fn release(&self, bytes: usize) {
        let mut totals = self.owner.total.totals();
        totals.used -= bytes;
        self.owner.by_use[self.what as usize].fetch_sub(bytes, Ordering::Relaxed);
        drop(totals);
        self.owner.total.freed.notify_all();
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.release(self.bytes);
        }
    }
}

impl std::fmt::Debug for Charge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Charge({} bytes for {:?})", self.bytes, self.what)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charges_count_against_both_budgets_until_dropped() {
        let total = Memory::new(1000);
        let a = ConnMemory::new(600, Arc::clone(&total));
        let b = ConnMemory::new(600, Arc::clone(&total));
        let first = a.try_charge(Use::Reply, 500, 0).unwrap();
        assert!(a.try_charge(Use::Reply, 200, 0).is_none(), "over its own share");
        let mut second = b.try_charge(Use::R2t, 450, 0).unwrap();
        assert!(b.try_charge(Use::R2t, 100, 0).is_none(), "over the total");
        assert!(total.starved(Duration::from_secs(1)));
        assert_eq!((total.used(), a.held(Use::Reply), b.held(Use::R2t)), (950, 500, 450));
        second.shrink(100);
        assert_eq!(total.used(), 600);
        let part = second.split(Use::Reply, 60);
        assert_eq!((b.held(Use::R2t), b.held(Use::Reply), total.used()), (40, 60, 600));
        drop((part, second));
        assert!(a.try_charge(Use::Pdu, 50, 50).is_some(), "keeps 50 free");
        drop(first);
        assert_eq!((total.used(), total.peak()), (0, 950));
    }

    #[test]
    fn a_blocked_charge_waits_for_a_release_or_gives_up_when_closing() {
        let total = Memory::new(100);
        let conn = ConnMemory::new(100, Arc::clone(&total));
        let held = conn.try_charge(Use::Reply, 100, 0).unwrap();
        let waiter = {
            let conn = Arc::clone(&conn);
            std::thread::spawn(move || conn.charge(Use::Pdu, 60, &|| false).map(|c| c.bytes()))
        };
        std::thread::sleep(Duration::from_millis(100));
        drop(held);
        assert_eq!(waiter.join().unwrap(), Some(60));
        let _held = conn.try_charge(Use::Reply, 100, 0).unwrap();
        assert!(conn.charge(Use::Pdu, 1, &|| true).is_none());
    }
}
