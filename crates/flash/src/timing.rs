//! Flash operation latencies and channel speed.

use serde::{Deserialize, Serialize};
use zonelab_sim::Nanos;

/// Latencies of the NAND array operations and the speed of the channels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Timing {
    /// Array read of one page into the plane's page register (tR).
    pub read_ns: Nanos,
    /// One multi-plane one-shot program (tPROG).
    pub program_ns: Nanos,
    /// Multi-plane block erase (tBERS).
    pub erase_ns: Nanos,
    /// Channel (bus) bandwidth between controller and dies.
    pub channel_bytes_per_s: u64,
    /// Program and erase suspend for reads; off unless set.
    #[serde(default)]
    pub suspend: Suspend,
}

/// Program and erase suspend: a read that finds its die programming or
/// erasing, with nothing queued behind that operation, suspends it, is
/// sensed, and the operation resumes, finishing later by the suspend, the
/// read and the resume. An operation is suspended at most `per_op_max` times,
/// so a stream of reads cannot starve it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suspend {
    /// From the suspend command until the die can sense (tPSL/tESL).
    pub suspend_ns: Nanos,
    /// Extra time the operation takes for resuming after the read.
    pub resume_ns: Nanos,
    /// Suspensions one program or erase allows; 0 turns suspend off.
    pub per_op_max: u32,
}

impl Suspend {
    /// Suspend disabled: programs and erases always run to completion.
    pub const OFF: Suspend = Suspend { suspend_ns: 0, resume_ns: 0, per_op_max: 0 };
}

impl Timing {
    /// Checks that every latency and the channel bandwidth are positive; the
    /// error names the `flash.timing` field.
    pub fn validate(&self) -> Result<(), String> {
        if self.channel_bytes_per_s == 0 {
            return Err("flash.timing.channel_bytes_per_s must be positive".into());
        }
        if self.program_ns == 0 || self.read_ns == 0 || self.erase_ns == 0 {
            return Err("flash.timing read_ns, program_ns and erase_ns must be positive".into());
        }
        Ok(())
    }
}
