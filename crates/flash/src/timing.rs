//! Flash operation latencies and channel speed.

use serde::{Deserialize, Serialize};
use zonelab_sim::Nanos;

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
}

impl Timing {
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
