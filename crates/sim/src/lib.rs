//! `sim`: the ground every other zonelab layer stands on.
//!
//! Virtual time in integer nanoseconds, resource timelines, a deterministic
//! discrete-event queue, seeded randomness and metrics. Nothing here knows
//! about flash or zones.

// Every narrowing `as` is checked or says why it may drop bits (issue 40).
#![deny(clippy::cast_possible_truncation)]

pub mod event;
pub mod input;
pub mod metrics;
pub mod rng;
pub mod time;

pub use event::EventQueue;
pub use metrics::{Counter, LatencyHistogram, TimeSeries};
pub use rng::SimRng;
pub use time::{transfer_ns, Bandwidth, Nanos, ServerPool, SlotTimeline, Timeline, MS, SEC, TIME_NS_MAX, US};
