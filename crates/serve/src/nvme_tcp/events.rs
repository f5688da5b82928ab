//! Asynchronous events: the Namespace Attribute Changed notice (NVMe Base
//! 2.0, §5.2: event type 2, information 00h, log page 04h) that tells a
//! host's controller a namespace was attached to it or detached from it,
//! and the Changed Namespace List log it points to.
//!
//! A controller holds its host's Asynchronous Event Requests (at most
//! [`AERS_MAX`]); when a notice is due and enabled (Asynchronous Event
//! Configuration bit 8), the oldest request completes with it, on the
//! controller's admin queue: through its connection's writer if it has one,
//! else at the admin session's next step. Further notices of the kind wait
//! until the host reads the log (as the specification masks them).

use crate::nvme_tcp::command::{put_u32, Reply};
use crate::nvme_tcp::session::Output;
use crate::nvme_tcp::target::{lock, Controller, Target, AERS_MAX};
use std::collections::BTreeSet;
use zonelab_sim::Nanos;

/// Log page: Changed Namespace List.
pub const LID_CHANGED_NS_LIST: u8 = 0x04;
/// Asynchronous Event Configuration bit: Namespace Attribute Notices.
const AEC_NS_ATTRIBUTE: u32 = 1 << 8;
/// Completion dword 0 of the notice: type 2 (notice), information 00h
/// (Namespace Attribute Changed), log page 04h.
pub const NS_CHANGED_RESULT: u64 = 2 | (LID_CHANGED_NS_LIST as u64) << 16;
/// NSIDs a Changed Namespace List holds before it says "more" (FFFFFFFFh).
const CHANGED_LIST_MAX: usize = 1024;

/// A controller's asynchronous event state.
#[derive(Debug, Default)]
pub struct Events {
    /// Command ids of the Asynchronous Event Requests held, oldest first.
    pub held: Vec<u16>,
    /// NSIDs changed since the host last read the log.
    changed: BTreeSet<u32>,
    /// A notice is due (enabled when it arose) and not yet reported.
    due: bool,
    /// A notice was reported and its log not read yet: no other one until then.
    masked: bool,
}

impl Events {
    /// Holds a request (`cid`); false at the limit (AER Limit Exceeded).
    pub fn hold(&mut self, cid: u16) -> bool {
        if self.held.len() >= AERS_MAX as usize {
            return false;
        }
        self.held.push(cid);
        true
    }

    /// Drops every held request (a controller reset); returns how many.
    pub fn drop_held(&mut self) -> usize {
        std::mem::take(&mut self.held).len()
    }

    /// The request a due notice completes now, if any.
    fn take_due(&mut self) -> Option<u16> {
        if !self.due || self.masked || self.held.is_empty() {
            return None;
        }
        (self.due, self.masked) = (false, true);
        Some(self.held.remove(0))
    }
}

impl Target {
    /// Namespace `nsid` was attached or detached: every I/O controller of
    /// the subsystem (attachment is the subsystem's) gets the notice.
    pub fn namespace_changed(&self, nsid: u32) {
        for controller in self.io_controllers() {
            {
                let mut state = lock(&controller.state);
                let enabled = state.async_event_config & AEC_NS_ATTRIBUTE != 0;
                state.events.changed.insert(nsid);
                state.events.due |= enabled;
            }
            self.deliver(&controller);
        }
    }

    /// Completes a held request with a due notice, if both exist, on the
    /// controller's admin connection.
    pub fn deliver(&self, controller: &Controller) {
        let (cid, admin) = {
            let mut state = lock(&controller.state);
            let Some(admin) = state.admin_connection.as_ref().and_then(std::sync::Weak::upgrade) else { return };
            let Some(cid) = state.events.take_due() else { return };
            (cid, admin)
        };
        admin.push_async(cid, Reply::result(NS_CHANGED_RESULT));
    }

    /// The Changed Namespace List of `controller` (cleared unless `retain`,
    /// Retain Asynchronous Event): NSIDs in order, or FFFFFFFFh when more
    /// changed than it holds.
    pub fn changed_namespace_log(&self, controller: &Controller, retain: bool) -> Vec<u8> {
        let mut log = vec![0u8; 4096];
        let mut state = lock(&controller.state);
        let changed = &state.events.changed;
        if changed.len() > CHANGED_LIST_MAX {
            put_u32(&mut log, 0, 0xFFFF_FFFF);
        } else {
            for (i, nsid) in changed.iter().enumerate() {
                put_u32(&mut log, 4 * i, *nsid);
            }
        }
        if !retain {
            state.events.changed.clear();
            state.events.masked = false;
        }
        drop(state);
        if !retain {
            self.deliver(controller);
        }
        log
    }
}

/// An event's completion on the admin queue, encoded for its connection.
pub fn event_output(encoding: crate::nvme_tcp::pdu::Encoding, cid: u16, reply: &Reply) -> Output {
    let cqe = reply.cqe(0, 0, cid);
    let bytes = encoding.encode(&crate::nvme_tcp::pdu::Pdu::CapsuleResp { cqe });
    Output { due_ns: 0 as Nanos, bytes, completes: true, charge: None, closes: false, seq: 0 }
}
