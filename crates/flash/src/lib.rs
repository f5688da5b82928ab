//! `flash`: NAND flash as a set of timed resources.
//!
//! Channels carry data between the controller and the dies; dies execute
//! array operations (read, program, erase, copyback) on their planes. Each is a
//! [`Timeline`](zonelab_sim::Timeline), so parallelism and contention between
//! operations come out of reservations, not out of per-workload formulas.
//! A read may suspend a program or erase on its die ([`Suspend`]).
//! The array also keeps erase and program counts per block and checks that
//! pages of a block are programmed in order after an erase.

// Every narrowing `as` is checked or says why it may drop bits (issue 40).
#![deny(clippy::cast_possible_truncation)]

pub mod array;
pub mod geometry;
pub mod timing;

pub use array::{
    BlockAddr, ChunkRead, CopybackDone, FlashArray, FlashCounters, FlashError, ProgramDone, UTILIZATION_INTERVAL_NS,
};
pub use geometry::{Geometry, GeometryError};
pub use timing::{Suspend, Timing, TimingError};
