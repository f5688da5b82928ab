//! `host`: the host side of the NVMe interface: submission and completion
//! queues, the block layer's I/O schedulers (none, mq-deadline with zone write
//! locking and merging, ZINC) and softFinish.
//!
//! Empty for now: it arrives with the fio front end (issue 3) and the
//! management-aware scheduling work (issue 4). Until then workloads drive the
//! `device` crate directly.
