//! Physical organisation of the flash: channels × chips × dies × planes × blocks × pages.

use serde::{Deserialize, Serialize};

/// Shape of the flash behind the controller. Every count is at least 1
/// ([`Geometry::validate`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Geometry {
    /// Independent buses between the controller and the chips.
    pub channels: u32,
    /// Chips (packages) sharing each channel.
    pub chips_per_channel: u32,
    /// Dies per chip: the unit that executes array operations.
    pub dies_per_chip: u32,
    /// Planes per die; a multi-plane operation runs on all of them together.
    pub planes_per_die: u32,
    /// Erase blocks in each plane.
    pub blocks_per_plane: u32,
    /// Pages in an erase block.
    pub pages_per_block: u32,
    /// Data bytes of one page (spare area excluded).
    pub page_bytes: u32,
    /// Pages per plane programmed by one program operation (3 for TLC one-shot
    /// programming of a word line, 1 for page-at-a-time media).
    pub oneshot_pages: u32,
}

/// A geometry the model cannot run, with a message naming the `flash.` field
/// and what would be valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeometryError(pub String);

impl std::fmt::Display for GeometryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for GeometryError {}

impl Geometry {
    /// Dies are numbered so that consecutive dies sit on consecutive channels:
    /// a stripe over N dies uses min(N, channels) channels.
    pub fn dies_total(&self) -> u32 {
        // Saturates so that an absurd geometry fails validation instead of overflowing.
        let dies = u64::from(self.channels)
            .saturating_mul(u64::from(self.chips_per_channel))
            .saturating_mul(u64::from(self.dies_per_chip));
        u32::try_from(dies).unwrap_or(u32::MAX)
    }

    /// The channel die `die` sits on.
    #[inline]
    pub fn channel_of_die(&self, die: u32) -> u32 {
        die % self.channels
    }

    /// Erase blocks over all planes of all dies.
    pub fn blocks_total(&self) -> u64 {
        u64::from(self.dies_total())
            .saturating_mul(u64::from(self.planes_per_die))
            .saturating_mul(u64::from(self.blocks_per_plane))
    }

    /// Bytes of one erase block on one plane.
    pub fn block_bytes(&self) -> u64 {
        u64::from(self.pages_per_block) * u64::from(self.page_bytes)
    }

    /// Raw capacity of the flash: every page of every block, before
    /// overprovisioning. Saturates: 2^24 blocks of 2^32 pages of 2^31 bytes
    /// overflow 64 bits, and validation must be able to say so.
    pub fn raw_bytes(&self) -> u64 {
        self.blocks_total().saturating_mul(self.block_bytes())
    }

    /// Bytes one multi-plane one-shot program writes on a die.
    pub fn program_unit_bytes(&self) -> u64 {
        u64::from(self.planes_per_die)
            .saturating_mul(u64::from(self.oneshot_pages))
            .saturating_mul(u64::from(self.page_bytes))
    }

    /// Checks that every count is at least 1, pages are a power of two of at
    /// least 512 bytes, blocks hold whole program units and the per-block state
    /// stays bounded; the error names the `flash.` field to change.
    pub fn validate(&self) -> Result<(), GeometryError> {
        let fields = [
            ("channels", self.channels),
            ("chips_per_channel", self.chips_per_channel),
            ("dies_per_chip", self.dies_per_chip),
            ("planes_per_die", self.planes_per_die),
            ("blocks_per_plane", self.blocks_per_plane),
            ("pages_per_block", self.pages_per_block),
            ("page_bytes", self.page_bytes),
            ("oneshot_pages", self.oneshot_pages),
        ];
        for (name, value) in fields {
            if value == 0 {
                return Err(GeometryError(format!("flash.{name} must be at least 1")));
            }
        }
        if !self.page_bytes.is_power_of_two() || self.page_bytes < 512 {
            return Err(GeometryError(format!(
                "flash.page_bytes = {} must be a power of two of at least 512 (e.g. 4096, 16384)",
                self.page_bytes
            )));
        }
        if !self.pages_per_block.is_multiple_of(self.oneshot_pages) {
            return Err(GeometryError(format!(
                "flash.pages_per_block = {} is not a multiple of flash.oneshot_pages = {}: a block must hold whole program units",
                self.pages_per_block, self.oneshot_pages
            )));
        }
        // Per-block state is kept for every block: bound it (16 Mi blocks = 200 MB).
        if self.dies_total() > 1 << 16 || self.blocks_total() > 1 << 24 {
            return Err(GeometryError(format!(
                "flash has {} dies and {} blocks; at most 65536 dies and 16777216 blocks are supported",
                self.dies_total(),
                self.blocks_total()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> Geometry {
        Geometry {
            channels: 4,
            chips_per_channel: 2,
            dies_per_chip: 1,
            planes_per_die: 2,
            blocks_per_plane: 8,
            pages_per_block: 12,
            page_bytes: 16384,
            oneshot_pages: 3,
        }
    }

    #[test]
    fn derived_sizes() {
        let g = small();
        assert_eq!(g.dies_total(), 8);
        assert_eq!(g.blocks_total(), 128);
        assert_eq!(g.program_unit_bytes(), 2 * 3 * 16384);
        assert_eq!((0..8).map(|d| g.channel_of_die(d)).collect::<Vec<_>>(), [0, 1, 2, 3, 0, 1, 2, 3]);
        g.validate().unwrap();
    }

    #[test]
    fn rejects_partial_program_units() {
        let g = Geometry { pages_per_block: 10, ..small() };
        let e = g.validate().unwrap_err().0;
        assert!(e.contains("oneshot_pages"), "{e}");
        let g = Geometry { planes_per_die: 0, ..small() };
        assert!(g.validate().unwrap_err().0.contains("planes_per_die"));
        let g = Geometry { channels: u32::MAX, chips_per_channel: u32::MAX, ..small() };
        assert!(g.validate().unwrap_err().0.contains("at most 65536 dies"));
    }
}
