//! `fs`: a ZNS+-aware log-structured file system (F2FS-like) in simulated
//! time, with threaded logging, copyback-aware block allocation and hybrid
//! segment recycling.
//!
//! Empty for now: it arrives with issue 6, on top of ZNS+ in the device (issue 5).
