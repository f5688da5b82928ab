//! `workload`: what drives a device. For now, command traces: JSON Lines of
//! NVMe commands run one by one against a device, in the spirit of nvme-cli
//! (`../shared/reference/command-trace.md`). fio jobs and file-system
//! workloads come next.

pub mod bench;
pub mod fio;
pub mod fsbench;
pub mod trace;

pub use trace::{run_trace, TraceError, TraceSummary};
