//! `experiments`: reruns of the seed papers' experiments (`zonelab
//! reproduce`), each printing paper-vs-model tables and plots.
//!
//! Empty for now: the characterization reproduction (seeds 000 and 003)
//! arrives with issue 4, the ZNS+ one (seed 002) with issue 6.
