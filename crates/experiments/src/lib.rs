//! `experiments`: reruns of the seed papers' experiments (`zonelab
//! reproduce`), each printing paper-vs-model tables and plots.
//!
//! [`copy_offload`]: ZNS+ in-storage copy against a host read-then-write
//! (seed 002, issue 5). The characterization reproduction (seeds 000 and 003)
//! arrives with issue 4, the full ZNS+ one (seed 002) with issue 6.

pub mod copy_offload;
pub mod svg;
pub mod znsplus;
