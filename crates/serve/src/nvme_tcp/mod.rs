//! `serve --nvme-tcp`: a user-space NVMe/TCP target with the zoned command
//! set. Hosts attach it with the stock `nvme-tcp` driver (`nvme connect -t
//! tcp`) or any NVMe/TCP initiator; see docs/nvme-tcp.md.
//!
//! [`pdu`] is the PDU codec, [`session`] one connection's state machine
//! (no sockets: tested and fuzzed on bytes), [`admin`] and [`io`] the
//! command dispatch onto the namespaces' [`crate::Backend`]s, [`target`] the
//! subsystem and its controllers, [`server`] the TCP threads and signals.

pub mod admin;
pub mod command;
pub mod connection;
pub mod events;
pub mod fdp;
#[cfg(test)]
mod fdp_tests;
#[cfg(test)]
mod hostile_tests;
pub mod io;
pub mod limits;
pub mod manage;
#[cfg(test)]
mod manage_tests;
pub mod pdu;
pub mod persist;
#[cfg(test)]
mod record_tests;
pub mod server;
pub mod session;
pub mod target;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod zrwa_tests;

pub use limits::Limits;
pub use server::{accept_loop, serve_nvme_tcp, NvmeTcpOptions};
pub use target::{Target, DEFAULT_NQN, DISCOVERY_NQN};
