//! What a device keeps beyond what its timing needs, chosen when it is
//! built ([`crate::Device::with_tracking`]): a run pays only for what it
//! asks for.
//!
//! - `power_cuts`: each sequential zone's progress towards the controller
//!   and towards flash (`controller::write_cache`), which
//!   [`crate::Device::power_cut`] needs to know what survives. A volatile
//!   write cache keeps it whatever is asked, since Flush and FUA writes are
//!   timed by it; with power-loss protection only a power cut reads it.
//! - `chip_utilization`: the dies' busy time per 100 ms of simulated time
//!   ([`crate::Device::chip_utilization`]), a series that every flash
//!   operation adds to.

/// What a device tracks beyond what its timing needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tracking {
    /// Keep what a power cut needs (see the module).
    pub power_cuts: bool,
    /// Keep the chip utilization series.
    pub chip_utilization: bool,
}

impl Tracking {
    /// Everything: what [`crate::Device::new`] builds.
    pub const ALL: Tracking = Tracking { power_cuts: true, chip_utilization: true };
    /// Nothing beyond the timing: for runs that never cut the power or ask
    /// for utilization (fio jobs, benchmarks, calibration).
    pub const NONE: Tracking = Tracking { power_cuts: false, chip_utilization: false };
}
