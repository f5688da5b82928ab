//! What a device counts: host commands and bytes, and what the ZNS+ commands
//! copied. Kept apart from the layers so every layer and client can count.

/// What the host asked of a device and what zone management it caused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Commands submitted.
    pub commands: u64,
    /// Commands that completed with an error status.
    pub errors: u64,
    /// Bytes the host wrote (writes, appends, write zeroes).
    pub host_write_bytes: u64,
    /// Bytes the host read.
    pub host_read_bytes: u64,
    /// Bytes programmed to complete partly filled program units.
    pub pad_bytes: u64,
    /// Implicitly opened zones the device closed to free an open resource.
    pub auto_closes: u64,
    /// Zone resets that emptied a zone (resetting an empty zone is not counted).
    pub resets: u64,
    /// Zone finishes that changed a zone (finishing a full zone is not counted).
    pub finishes: u64,
    /// Flush commands.
    pub flushes: u64,
    /// Zones whose partly filled unit a Flush or FUA write saved (volatile cache).
    pub flush_saves: u64,
    /// Power cuts simulated.
    pub power_cuts: u64,
}

/// What the ZNS+ commands did, in blocks (logical blocks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZnsPlusCounters {
    /// Zone compaction commands.
    pub compactions: u64,
    /// Simple Copy commands.
    pub simple_copies: u64,
    /// TL_open commands.
    pub tl_opens: u64,
    /// Blocks copied inside the device (compaction, Simple Copy, plugging) by copyback.
    pub copyback_blocks: u64,
    /// Blocks copied inside the device by a read into the controller and a program.
    pub read_program_blocks: u64,
    /// Valid blocks plugged into a LogFBG when the write pointer passed them.
    pub plugged_blocks_foreground: u64,
    /// Valid blocks plugged ahead of the write pointer while their die was idle.
    pub plugged_blocks_background: u64,
}

impl ZnsPlusCounters {
    /// What was counted after `before` was taken.
    pub fn since(self, before: ZnsPlusCounters) -> ZnsPlusCounters {
        ZnsPlusCounters {
            compactions: self.compactions - before.compactions,
            simple_copies: self.simple_copies - before.simple_copies,
            tl_opens: self.tl_opens - before.tl_opens,
            copyback_blocks: self.copyback_blocks - before.copyback_blocks,
            read_program_blocks: self.read_program_blocks - before.read_program_blocks,
            plugged_blocks_foreground: self.plugged_blocks_foreground - before.plugged_blocks_foreground,
            plugged_blocks_background: self.plugged_blocks_background - before.plugged_blocks_background,
        }
    }

    /// Share of internally copied blocks that went by copyback.
    pub fn copyback_ratio(&self) -> f64 {
        let total = self.copyback_blocks + self.read_program_blocks;
        if total == 0 {
            0.0
        } else {
            self.copyback_blocks as f64 / total as f64
        }
    }
}

/// What garbage collection did so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FtlCounters {
    /// Program units of host data written.
    pub host_units: u64,
    /// Program units garbage collection wrote.
    pub gc_units: u64,
    /// LBAs garbage collection relocated.
    pub gc_lbas: u64,
    /// Victim blocks emptied and released.
    pub victims: u64,
    /// (host + GC) programs per host program.
    pub write_amplification: f64,
    /// GC units moved while a host unit waited for a free block
    /// (foreground collection); the rest ran alongside host writes.
    pub gc_foreground_units: u64,
    /// The most GC units moved before one host unit.
    pub gc_units_before_host_unit_max: u64,
}
