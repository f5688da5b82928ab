//! `host`: the host side of the NVMe interface. A host stack charges the
//! software cost of an I/O path (SPDK or io_uring passthrough, or the kernel
//! block layer), and the block layer's I/O scheduler decides when a request
//! reaches the device: `none` passes requests through, `mq-deadline` locks
//! each sequential zone to one write in flight and merges the writes queued
//! behind it; `zinc` (seed 003) is mq-deadline that holds zone resets and
//! finishes back while writes are busy. softFinish, the host filling a zone
//! instead of finishing it, is a job option of the fio front end.

pub mod layers;
pub mod scheduler;
pub mod stack;
pub mod zinc;

pub use layers::{BlockLayers, HostPath};
pub use scheduler::{BlockLayer, Dispatch, HostRequest, RequestOp, SchedulerCounters, SchedulerKind};
pub use stack::{EnginePerIo, HostConfig, SqPoll, StackCost, StackKind, HOST_MACHINES};
pub use zinc::{Held, ZincConfig, ZincGate};
