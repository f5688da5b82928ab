//! `workload`: what drives a device: command traces (JSON Lines of NVMe
//! commands run one by one against a device, in the spirit of nvme-cli; the
//! format is in `docs/trace-format.md`), fio jobs (`fio`), file-system
//! workloads (`fsbench`) and the closed-loop drivers of `zonelab bench`
//! (`bench`).

pub mod bench;
pub mod fdp_json;
pub mod fio;
pub mod fsbench;
pub mod trace;

pub use trace::{run_trace, run_trace_from, LineError, TraceError, TraceSummary};
