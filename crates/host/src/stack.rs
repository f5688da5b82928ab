//! Software cost of an I/O path on the host, per request.

use zonelab_sim::Nanos;

/// How an application reaches the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StackKind {
    /// SPDK: polled from user space, no kernel on the I/O path.
    Passthrough,
    /// io_uring NVMe passthrough (`/dev/ngXnY`): no block layer or scheduler,
    /// but io_uring and the NVMe driver's interrupt-driven completion.
    UringPassthrough,
    /// The kernel block layer (io_uring, libaio, psync) with its scheduler.
    Kernel,
}

/// CPU time one request costs on the submitting thread and on the
/// completion path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackCost {
    /// CPU time on the submitting thread before the request reaches the device.
    pub submit_ns: Nanos,
    /// CPU time between the device's completion and the thread seeing it,
    /// on the thread's CPU: completions queue for it one at a time.
    pub complete_ns: Nanos,
}

/// Host-model parameters, calibrated to seed 000 Obs 2 on the zn540: a 4 KiB
/// write at QD 1 takes 11.36 µs with SPDK, 12.62 µs through the kernel with
/// no scheduler and 14.47 µs with mq-deadline. The device model owns the
/// 11.36 µs; the kernel path adds 1.26 µs (split between submission and
/// completion) and mq-deadline 1.85 µs per dispatched request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostConfig {
    /// Cost of the SPDK path.
    pub passthrough: StackCost,
    /// Cost of io_uring NVMe passthrough. Seed 003's hardware runs: an 8 KiB
    /// write at QD 1 takes about 16 µs against SPDK's 11.3 µs on seed 000's
    /// host, and one job at QD 128 tops out near 290 K random reads/s (about
    /// 3.5 µs of the job's CPU per request).
    pub uring_passthrough: StackCost,
    /// Cost of the kernel block layer path, before any scheduler cost.
    pub kernel: StackCost,
    /// Insert and dispatch under mq-deadline's per-queue lock, serialised across threads.
    pub mq_deadline_dispatch_ns: Nanos,
    /// CPU of the submitting thread for its request's insert into
    /// mq-deadline (in its submission, outside the completion latency):
    /// one job's reads top out lower under mq-deadline than under none.
    pub mq_deadline_submit_ns: Nanos,
    /// Largest request the block layer builds by merging (max_sectors_kb); 0 = the device's MDTS.
    pub merge_bytes_max: u64,
    /// Parameters of the `zinc` scheduler.
    pub zinc: crate::zinc::ZincConfig,
    /// CPU a job's thread spends per I/O outside the latency it measures.
    pub engine_per_io: EnginePerIo,
    /// io_uring's submission-queue polling thread (fio's `sqthread_poll`).
    pub sq_poll: SqPoll,
    /// What a request costs the job's thread on top of its stack's cost when
    /// an io_uring job issues it beside its ring as a synchronous call (fio's
    /// zone resets and finishes, ConfZNS++'s softFinish fills): the system
    /// call, mapping the buffer, sleeping until the interrupt and switching
    /// back. Seed 003's machine: softFinish fills alone take 31.6 µs per 8 KiB
    /// chunk (0.23 zones/s) and 35.4 µs per 16 KiB one (0.41/s), about
    /// 15.5 µs more than the same writes through the ring.
    pub sync_call_ns: Nanos,
}

/// io_uring with `IORING_SETUP_SQPOLL`: a kernel thread polls the ring's
/// submission queue, so a submission costs no system call while the thread
/// is awake. After `idle_ns` without a new submission it sleeps, and the next
/// submission waits for it to be woken and scheduled. fio sets no idle time,
/// so the kernel's default of one second (HZ) holds.
///
/// Calibrated on seed 003's machine (ConfZNS++ finish jobs over io_uring
/// passthrough, whose finishes and softFinish fills are synchronous calls
/// that leave the ring idle): the 4 KiB write that opens the next zone takes
/// 24-45 µs after a finish shorter than a second (alone, or beside random
/// reads at QD 1-4: 0.93-0.99 s), and 119-202 µs once the finish or fill took
/// longer (beside reads at QD 8 and deeper: 1.09 s and more; softFinish fills
/// of 2.4-16 s), a jump of about 125 µs.
///
/// A ring idle for a shorter long while (`cold_after_ns` up to `idle_ns`)
/// still has its polling thread, but the job's thread slept all that time
/// (in the synchronous finish) and so did its CPU: the idle governor, seeing
/// a long idle, puts the CPU in a deep state for the wait on the next I/O,
/// which pays the way out (`cold_ns`). Those 4 KiB writes after a finish
/// shorter than a second take 24-36 µs on average (p95 28-41 µs over runs of
/// 14-65 finishes), where the same write after a busy ring takes 17.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqPoll {
    /// Time without a submission after which the polling thread sleeps.
    pub idle_ns: Nanos,
    /// Extra latency of the first submission after it slept.
    pub wakeup_ns: Nanos,
    /// Time without a submission after which the next one finds the job's CPU
    /// in a deep idle state (at most `idle_ns`; above it the wake-up is paid).
    pub cold_after_ns: Nanos,
    /// Extra latency of the first submission after `cold_after_ns` of idle.
    pub cold_ns: Nanos,
}

impl SqPoll {
    /// The extra latency of a submission at `now_ns` to a ring whose last
    /// submission was at `last_ns`: the polling thread's wake-up after
    /// `idle_ns`, the CPU's way out of a deep idle state after `cold_after_ns`.
    pub fn idle_cost_ns(&self, last_ns: Nanos, now_ns: Nanos) -> Nanos {
        debug_assert!(last_ns <= now_ns, "a ring's last submission is in the past");
        debug_assert!(self.cold_after_ns <= self.idle_ns, "the CPU sleeps no later than the polling thread");
        let idle_ns = now_ns.saturating_sub(last_ns);
        if idle_ns > self.idle_ns {
            self.wakeup_ns
        } else if idle_ns >= self.cold_after_ns {
            self.cold_ns
        } else {
            0
        }
    }
}

impl Default for SqPoll {
    /// Seed 003's machine. The CPU's threshold is only bounded by the data:
    /// below the shortest finish (0.93 s), above the gaps of the paced jobs
    /// whose latencies show no such cost; 100 ms is a choice in between.
    fn default() -> Self {
        SqPoll { idle_ns: 1_000_000_000, wakeup_ns: 125_000, cold_after_ns: 100_000_000, cold_ns: 14_000 }
    }
}

/// CPU time a fio job's thread spends on each I/O after it sees the
/// completion and before it can issue again: the engine's system calls to reap
/// and fio's own accounting. It is outside the I/O's measured latency, so at
/// QD 1 it shows as fewer IOPS than 1 / latency, and at high QD it caps one
/// job's rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EnginePerIo {
    /// libaio (`io_getevents`, then `io_submit` for the next I/O).
    pub libaio_ns: Nanos,
    /// libaio, for a completion that was waiting while the thread was busy:
    /// the next `io_getevents` returns it with the others waiting, so it
    /// pays no system call of its own.
    pub libaio_batched_ns: Nanos,
    /// psync and its kin (one system call per I/O).
    pub psync_ns: Nanos,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            passthrough: StackCost { submit_ns: 0, complete_ns: 0 },
            uring_passthrough: StackCost { submit_ns: 1_700, complete_ns: 1_800 },
            kernel: StackCost { submit_ns: 760, complete_ns: 500 },
            mq_deadline_dispatch_ns: 1_850,
            mq_deadline_submit_ns: 0,
            merge_bytes_max: 0,
            zinc: crate::zinc::ZincConfig::default(),
            engine_per_io: EnginePerIo::default(),
            sq_poll: SqPoll::default(),
            sync_call_ns: 15_500,
        }
    }
}

/// Hosts whose stack costs were measured, by name (`--host-machine`).
pub const HOST_MACHINES: [&str; 3] = ["seed000", "seed003", "zns-study"];

impl HostConfig {
    /// The stack costs of a measured host: `seed000` (the default, seed 000's
    /// machine) or `seed003` (the ConfZNS++ hardware runs, whose kernel path
    /// completes by interrupt: an 8 KiB write at QD 1 through io_uring and
    /// mq-deadline takes about 19.6 µs there against 15 µs on seed 000's) or
    /// `zns-study` (the ZNS-Study runs, whose libaio and psync jobs spend
    /// CPU per I/O outside its latency: [`EnginePerIo`]). None for an unknown name.
    pub fn machine(name: &str) -> Option<Self> {
        let default = Self::default();
        match name {
            "seed000" => Some(default),
            "seed003" => Some(HostConfig { kernel: StackCost { submit_ns: 2_460, complete_ns: 2_600 }, ..default }),
            // ZNS-Study's machine: one job's 4 KiB sequential reads at QD 1 take
            // 13.6 µs each (73.5 K/s) against a latency of 10.3 µs: 3.3 µs per
            // I/O outside it; psync writes at QD 1: 21.6 µs each against 20.4 µs
            // of latency. At depth, io_getevents returns completions in batches,
            // and mq-deadline's insert takes the submitting thread 0.58 µs: one
            // job's reads top out at 292-295 K/s under none (seed 001's
            // conventional namespace: 3.39 µs of its CPU per I/O) and 246-255 K/s
            // under mq-deadline (its zoned namespace). Fitting the batched cost
            // over all of ZNS-Study's rows instead (2.45 µs) would stand in for
            // what this host lacks (its one-zone mq-deadline writes at QD 4-13
            // and sequential reads at QD 256-1024 do not slow as the drive's
            // host's did), so it stays what the plateaus say (docs/calibrate.md).
            "zns-study" => Some(HostConfig {
                engine_per_io: EnginePerIo { libaio_ns: 3_300, libaio_batched_ns: 2_130, psync_ns: 1_200 },
                mq_deadline_submit_ns: 580,
                ..default
            }),
            _ => None,
        }
    }

    /// Per-request cost of the path `kind`.
    pub fn cost(&self, kind: StackKind) -> StackCost {
        match kind {
            StackKind::Passthrough => self.passthrough,
            StackKind::UringPassthrough => self.uring_passthrough,
            StackKind::Kernel => self.kernel,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_polling_thread_costs_a_wake_up_only_after_it_idled_past_its_limit() {
        let poll = SqPoll { idle_ns: 1_000, wakeup_ns: 50, cold_after_ns: 1_000, cold_ns: 0 };
        assert_eq!(poll.idle_cost_ns(0, 1_000), 0, "at the limit it still polls");
        assert_eq!(poll.idle_cost_ns(0, 1_001), 50);
        assert_eq!(poll.idle_cost_ns(5_000, 5_400), 0);
        assert_eq!(SqPoll::default().idle_ns, 1_000_000_000, "the kernel's default, HZ");
    }

    #[test]
    fn a_long_idle_short_of_the_threads_sleep_costs_the_cpus_way_out() {
        let poll = SqPoll { idle_ns: 1_000, wakeup_ns: 50, cold_after_ns: 100, cold_ns: 7 };
        assert_eq!(poll.idle_cost_ns(0, 99), 0, "a short gap finds the CPU awake");
        assert_eq!(poll.idle_cost_ns(0, 100), 7);
        assert_eq!(poll.idle_cost_ns(0, 1_000), 7, "the polling thread is still up");
        assert_eq!(poll.idle_cost_ns(0, 1_001), 50, "the wake-up, not both");
        let d = SqPoll::default();
        assert!(d.cold_after_ns <= d.idle_ns && d.cold_ns < d.wakeup_ns);
    }
}
