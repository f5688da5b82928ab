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
    /// Program time differs between word lines (process variation, position
    /// in the block): each word line's tPROG lies within `program_ns` ±
    /// `program_spread_ns`, fixed per word line. Without it every die keeps
    /// the phase it started with, so the dies of a stripe finish together and
    /// a full write buffer frees in bursts a real drive does not show.
    #[serde(default)]
    pub program_spread_ns: Nanos,
    /// The pages of a word line sense with different numbers of reference
    /// voltages (TLC: lower 1, middle 2, upper 4), so tR grows by
    /// `read_step_ns` from one page type to the next, around `read_ns`
    /// (TLC: `read_ns` − step, `read_ns`, `read_ns` + step).
    #[serde(default)]
    pub read_step_ns: Nanos,
    /// The bytes of a page row (one page on every plane of a die) lie on
    /// its planes in slices of this size, in turn, so a multi-plane program
    /// takes them in order (0: each chunk lies whole on its plane). A read
    /// senses only the planes its slices are on, all of them in one
    /// multi-plane sense: with 4 KiB slices over 4 planes, an aligned 8 KiB
    /// read holds two planes for tR, a 4 KiB one one, a whole 16 KiB chunk
    /// all four. The row then stays in those planes' page registers, so the
    /// rest of the row costs no second sense until the planes do something
    /// else. ConfZNS++ C2 (8 KiB random reads, QD 1-128): throughput rises as
    /// over 32 units of one tR each, not 64 planes; ZNS-Study's 4 KiB ones
    /// (13 psync jobs: 130 K/s) as over about 64.
    #[serde(default)]
    pub plane_interleave_bytes: u32,
    /// What the controller takes read data in at, all channels together
    /// (ECC decode and the move into controller memory): every read's bytes
    /// pass it after their channel, one read after another. 0: no limit.
    #[serde(default)]
    pub read_decode_bytes_per_s: u64,
    /// The first part of every sense, which a die runs for one sense at a
    /// time (its state machine sets up the read voltages for one plane or
    /// multi-plane group after another), while the rest of tR runs on the
    /// planes alone: a die starts a sense at most every `die_sense_ns`, so
    /// randomly placed reads queue on their dies near the device's limit and
    /// their latencies spread (0: planes sense independently). CLUSTER'23
    /// Fig 4a (4 KiB random reads, QD 1-256): the drive saturates near 430
    /// K/s with a p95 2-2.5 times the mean from QD 64 on, as reads placed at
    /// random on 16 servers of about 36 µs do; a FIFO limit leaves the p95
    /// near the mean.
    #[serde(default)]
    pub die_sense_ns: Nanos,
}

/// Program and erase suspend: a read that finds its die programming or
/// erasing, with nothing queued behind that operation, suspends it, is
/// sensed, and the operation resumes, finishing later by the suspend, the
/// read and the resume. An operation is suspended at most `per_op_max` times,
/// so a stream of reads cannot starve it. A program or erase runs as a
/// series of pulse-and-verify loops of `step_ns` each and stops only at the
/// end of a loop, so a read waits out the rest of the loop it arrives in:
/// between nothing and `step_ns`, by its arrival's phase. After a resume the
/// loops go on from the resume: the next read waits for at least the first.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Suspend {
    /// From the suspend command until the die can sense (tPSL/tESL).
    pub suspend_ns: Nanos,
    /// Extra time the operation takes for resuming after the read.
    pub resume_ns: Nanos,
    /// Suspensions one program or erase allows; 0 turns suspend off.
    pub per_op_max: u32,
    /// One pulse-and-verify loop of a program or erase: a suspend takes
    /// effect at the end of the loop it is asked in (0: at once).
    #[serde(default)]
    pub step_ns: Nanos,
    /// Reads go ahead of the programs and erases queued on their die, not
    /// only of the one running (a flash scheduler that prefers reads): a read
    /// then waits for a suspend, or for the running operation's end once it
    /// allows no more suspensions, never for the queue behind it. On its
    /// channel a read likewise goes before program transfers booked to cross
    /// later; without it a channel is one queue in booking order.
    #[serde(default)]
    pub read_priority: bool,
    /// Reads that reach a die while it is suspended for earlier reads are
    /// sensed in the same suspension, each on its plane after the reads
    /// before it there, instead of each asking for a suspension of its own:
    /// the firmware drains the die's read queue, for up to one loop
    /// (`step_ns`), before it resumes.
    #[serde(default)]
    pub batch_reads: bool,
}

impl Suspend {
    /// Suspend disabled: programs and erases always run to completion.
    pub const OFF: Suspend =
        Suspend { suspend_ns: 0, resume_ns: 0, per_op_max: 0, step_ns: 0, read_priority: false, batch_reads: false };

    /// How long an operation whose loops run from `loops_from_ns` (its start,
    /// or the end of its latest resume) runs on after a suspend asked at
    /// `asked_ns`: to the end of its current loop, and asked before its first
    /// loop from there has ended (or while it resumes), to the end of that one.
    #[inline]
    pub fn to_suspend_point_ns(&self, loops_from_ns: Nanos, asked_ns: Nanos) -> Nanos {
        let first_end_ns = loops_from_ns + self.step_ns;
        if asked_ns < first_end_ns {
            first_end_ns - asked_ns
        } else {
            self.to_step_end_ns(loops_from_ns, asked_ns)
        }
    }

    /// How long an operation that started at `start_ns` runs on after a
    /// suspend asked at `asked_ns`: to the end of its current loop.
    #[inline]
    pub fn to_step_end_ns(&self, start_ns: Nanos, asked_ns: Nanos) -> Nanos {
        debug_assert!(start_ns <= asked_ns);
        if self.step_ns == 0 {
            return 0;
        }
        let into_step_ns = (asked_ns - start_ns) % self.step_ns;
        (self.step_ns - into_step_ns) % self.step_ns
    }
}

impl Timing {
    /// tR of `page` in a block whose word lines hold `pages_per_wordline` pages.
    #[inline]
    pub fn read_ns_of(&self, page: u32, pages_per_wordline: u32) -> Nanos {
        if self.read_step_ns == 0 || pages_per_wordline < 2 {
            return self.read_ns;
        }
        // Offsets -(k-1)/2 ..= (k-1)/2 steps, in half steps to stay integral.
        let half_steps = 2 * Nanos::from(page % pages_per_wordline);
        let k_minus_1 = Nanos::from(pages_per_wordline - 1);
        (2 * self.read_ns + half_steps * self.read_step_ns - k_minus_1 * self.read_step_ns) / 2
    }

    /// tPROG of the word line at `first_page` of block `block` on die `die`.
    #[inline]
    pub fn program_ns_of(&self, die: u32, block: u32, first_page: u32) -> Nanos {
        if self.program_spread_ns == 0 {
            return self.program_ns;
        }
        let key = (u64::from(die) << 44) ^ (u64::from(block) << 22) ^ u64::from(first_page);
        let offset_ns = mix64(key) % (2 * self.program_spread_ns + 1);
        self.program_ns - self.program_spread_ns + offset_ns
    }

    /// Checks that every latency and the channel bandwidth are positive and
    /// that the spreads keep every tR and tPROG positive; the error names the
    /// `flash_timing` field.
    pub fn validate(&self) -> Result<(), TimingError> {
        if self.channel_bytes_per_s == 0 {
            return Err(TimingError::ZeroBandwidth);
        }
        if self.program_ns == 0 || self.read_ns == 0 || self.erase_ns == 0 {
            return Err(TimingError::ZeroLatency);
        }
        if self.program_spread_ns >= self.program_ns {
            return Err(TimingError::ProgramSpread { spread_ns: self.program_spread_ns, program_ns: self.program_ns });
        }
        // The upper page of a QLC word line sits 1.5 steps above read_ns, the lower one as far below.
        if self.read_step_ns.saturating_mul(3) >= self.read_ns.saturating_mul(2) {
            return Err(TimingError::ReadStep { step_ns: self.read_step_ns, read_ns: self.read_ns });
        }
        // Part of every sense, so no longer than the shortest tR (a QLC lower page's).
        let shortest_read_ns = self.read_ns - self.read_step_ns * 3 / 2;
        if self.die_sense_ns > shortest_read_ns {
            return Err(TimingError::DieSense { die_sense_ns: self.die_sense_ns, shortest_read_ns });
        }
        Ok(())
    }
}

/// Flash timings that cannot describe a chip; each message names the
/// `flash_timing` field and what it must be.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    /// The channel moves no data.
    #[error("flash.timing.channel_bytes_per_s must be positive")]
    ZeroBandwidth,
    /// A read, program or erase that takes no time.
    #[error("flash.timing read_ns, program_ns and erase_ns must be positive")]
    ZeroLatency,
    /// The program-time spread would make some tPROG zero or negative.
    #[error("flash_timing.program_spread_ns = {spread_ns} must be below program_ns = {program_ns}")]
    ProgramSpread {
        /// The spread given.
        spread_ns: u64,
        /// The mean program time.
        program_ns: u64,
    },
    /// The per-page read step would make a lower page's tR zero or negative.
    #[error("flash_timing.read_step_ns = {step_ns} must be below 2/3 of read_ns = {read_ns}")]
    ReadStep {
        /// The step given.
        step_ns: u64,
        /// The mean read time.
        read_ns: u64,
    },
    /// The die's serial part of a sense would outlast the sense.
    #[error(
        "flash_timing.die_sense_ns = {die_sense_ns} must be at most the shortest tR, read_ns - 1.5 read_step_ns = {shortest_read_ns}"
    )]
    DieSense {
        /// The serial part given.
        die_sense_ns: u64,
        /// The shortest page's tR.
        shortest_read_ns: u64,
    },
}

/// SplitMix64's finalizer: a fixed, well-mixed function of a word line's
/// address, so its program time is the same in every run.
fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing {
            read_ns: 70_000,
            program_ns: 2_000_000,
            erase_ns: 3_000_000,
            channel_bytes_per_s: 1_000_000_000,
            suspend: Suspend::OFF,
            program_spread_ns: 0,
            read_step_ns: 0,
            plane_interleave_bytes: 0,
            read_decode_bytes_per_s: 0,
            die_sense_ns: 0,
        }
    }

    #[test]
    fn page_types_sense_around_the_mean_read_time() {
        let t = Timing { read_step_ns: 12_000, ..timing() };
        let tlc: Vec<Nanos> = (0..3).map(|p| t.read_ns_of(p, 3)).collect();
        assert_eq!(tlc, [58_000, 70_000, 82_000]);
        assert_eq!(t.read_ns_of(4, 3), 70_000, "page 4 is a middle page");
        assert_eq!([t.read_ns_of(0, 2), t.read_ns_of(1, 2)], [64_000, 76_000]);
        assert_eq!(t.read_ns_of(5, 1), 70_000, "SLC has one page type");
        assert_eq!(timing().read_ns_of(2, 3), 70_000, "no step: one tR");
    }

    #[test]
    fn program_times_spread_evenly_and_stay_fixed_per_word_line() {
        let t = Timing { program_spread_ns: 200_000, ..timing() };
        let times: Vec<Nanos> = (0..64)
            .flat_map(|die| (0..64).map(move |wl| (die, wl * 3)))
            .map(|(d, p)| t.program_ns_of(d, 7, p))
            .collect();
        assert!(times.iter().all(|&ns| (1_800_000..=2_200_000).contains(&ns)));
        let mean = times.iter().sum::<Nanos>() / times.len() as Nanos;
        assert!(mean.abs_diff(2_000_000) < 20_000, "mean {mean} stays at program_ns");
        let below = times.iter().filter(|&&ns| ns < 1_900_000).count();
        assert!((900..1150).contains(&below), "a quarter below the lower quartile: {below}");
        assert_eq!(t.program_ns_of(3, 7, 9), t.program_ns_of(3, 7, 9));
        assert_eq!(timing().program_ns_of(3, 7, 9), 2_000_000);
    }

    #[test]
    fn spreads_that_would_reach_zero_are_refused() {
        assert!(Timing { program_spread_ns: 2_000_000, ..timing() }.validate().is_err());
        assert!(Timing { read_step_ns: 47_000, ..timing() }.validate().is_err());
        assert!(Timing { read_step_ns: 46_000, program_spread_ns: 1_999_999, ..timing() }.validate().is_ok());
        assert!(Timing { die_sense_ns: 70_000, ..timing() }.validate().is_ok(), "the whole tR at most");
        assert!(Timing { die_sense_ns: 70_001, ..timing() }.validate().is_err());
        assert!(Timing { die_sense_ns: 61_000, read_step_ns: 6_000, ..timing() }.validate().is_ok());
        assert!(
            Timing { die_sense_ns: 61_001, read_step_ns: 6_000, ..timing() }.validate().is_err(),
            "the lower page's"
        );
    }
}
