//! The file system's path to the device: submission in time order, traffic
//! counters by block kind, and power-failure injection.

use crate::layout::BLOCK_BYTES;
use zonelab_device::{CmdResult, Command, Completion, Device, Mode, Payload, Status, ZonedDevice};
use zonelab_sim::Nanos;

/// What a written block holds, for the traffic counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// File data and dentries written for the user.
    Data,
    /// Inodes, direct and indirect nodes.
    Node,
    /// NAT, SIT and checkpoint blocks.
    Meta,
    /// Data blocks rewritten by the host for segment compaction.
    Relocated,
    /// Node blocks rewritten by the host for segment compaction: a copy, not
    /// node-write overhead (seed 002 Fig 7b counts nodes the file system
    /// modifies, which is why ZNS and IZC show equal overhead there).
    RelocatedNode,
}

/// Blocks written and read, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    /// File data and dentry blocks written for the user.
    pub data_blocks: u64,
    /// Node blocks written because the file system changed them (file
    /// writes, fsync, checkpoints, nodes updated to point at moved data);
    /// nodes the host merely moves in a compaction are in `relocated_blocks`.
    pub node_blocks: u64,
    /// NAT, SIT and checkpoint-pack blocks written.
    pub meta_blocks: u64,
    /// Blocks (data and node) rewritten by the host to move them in a compaction.
    pub relocated_blocks: u64,
    /// Blocks read (any kind).
    pub read_blocks: u64,
    /// Read commands sent.
    pub read_requests: u64,
    /// Blocks copied by zone_compaction.
    pub device_copied_blocks: u64,
    /// Commands sent of any kind (writes, reads, copies, zone management,
    /// flushes).
    pub requests: u64,
}

impl Traffic {
    /// What was counted after `before` was taken.
    pub fn since(self, before: Traffic) -> Traffic {
        Traffic {
            data_blocks: self.data_blocks - before.data_blocks,
            node_blocks: self.node_blocks - before.node_blocks,
            meta_blocks: self.meta_blocks - before.meta_blocks,
            relocated_blocks: self.relocated_blocks - before.relocated_blocks,
            read_blocks: self.read_blocks - before.read_blocks,
            read_requests: self.read_requests - before.read_requests,
            device_copied_blocks: self.device_copied_blocks - before.device_copied_blocks,
            requests: self.requests - before.requests,
        }
    }
}

/// Device access with an optional power failure at an instant of simulated
/// time: the first command submitted at or after it finds the power gone,
/// the device is cut at that instant ([`ZonedDevice::power_cut`]: commands
/// in flight are torn or lost, a volatile cache loses what was not durable)
/// and nothing after it reaches the device.
pub struct Io<D: ZonedDevice = Device> {
    dev: D,
    last_submit_ns: Nanos,
    commands: u64,
    crash_at_ns: Option<Nanos>,
    /// The power cut has been applied to the device.
    cut: bool,
    /// Submission and completion of every command, when recording.
    command_log: Option<Vec<(Nanos, Nanos)>>,
    /// Blocks written and read so far, by kind.
    pub traffic: Traffic,
}

impl<D: ZonedDevice> Io<D> {
    /// Access to `dev` with no power failure set.
    pub fn new(dev: D) -> Self {
        Self {
            dev,
            last_submit_ns: 0,
            commands: 0,
            crash_at_ns: None,
            cut: false,
            command_log: None,
            traffic: Traffic::default(),
        }
    }

    /// The device, for its state and statistics.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// The device after the power cut, if one was set (cut now if no later
    /// command reached it).
    pub fn into_device(mut self) -> D {
        self.cut_power();
        self.dev
    }

    /// Whether the device keeps written bytes (blocks are encoded and read
    /// back).
    pub fn data_mode(&self) -> bool {
        self.dev.config().mode == Mode::Data
    }

    /// Power fails at `at_ns` (or at the next submission if that is later).
    pub fn crash_at(&mut self, at_ns: Nanos) {
        assert!(self.crash_at_ns.is_none(), "one power failure per run");
        self.crash_at_ns = Some(at_ns.max(self.last_submit_ns));
    }

    /// The instant the power fails, if it was set.
    pub fn crash_at_ns(&self) -> Option<Nanos> {
        self.crash_at_ns
    }

    /// Whether the power has failed: commands no longer reach the device.
    pub fn crashed(&self) -> bool {
        self.cut
    }

    fn cut_power(&mut self) {
        if let (Some(at_ns), false) = (self.crash_at_ns, self.cut) {
            self.cut = true;
            // Time goes on from the cut: a remount submits after it.
            self.last_submit_ns = at_ns.max(self.last_submit_ns);
            self.dev.power_cut(self.last_submit_ns);
        }
    }

    /// Records when each later command is submitted and completes.
    pub fn record_commands(&mut self) {
        self.command_log.get_or_insert_with(Vec::new);
    }

    /// Submission and completion times of the commands recorded.
    pub fn command_log(&self) -> &[(Nanos, Nanos)] {
        self.command_log.as_deref().unwrap_or(&[])
    }

    /// Commands the device has taken.
    pub fn commands(&self) -> u64 {
        self.commands
    }

    /// When the latest command was submitted: later ones are not submitted
    /// before it.
    pub fn last_submit_ns(&self) -> Nanos {
        self.last_submit_ns
    }

    /// Submits at `at_ns` or, if the device has taken a later command, then.
    /// From the power failure on nothing reaches the device.
    pub fn submit(&mut self, at_ns: Nanos, cmd: &Command<'_>, out: Option<&mut [u8]>) -> Completion {
        let at_ns = at_ns.max(self.last_submit_ns);
        if self.cut || self.crash_at_ns.is_some_and(|c| at_ns >= c) {
            self.cut_power();
            // Later submissions keep the order they would have had.
            self.last_submit_ns = at_ns;
            return Completion {
                status: Status::Success,
                submit_ns: at_ns,
                complete_ns: at_ns + 1,
                result: CmdResult::None,
            };
        }
        self.last_submit_ns = at_ns;
        self.commands += 1;
        self.traffic.requests += 1;
        let c = self.dev.submit(at_ns, cmd, out);
        assert!(c.status.is_success(), "{} failed with {}: {cmd:?}", cmd.name(), c.status.name());
        if let Some(log) = self.command_log.as_mut() {
            log.push((c.submit_ns, c.complete_ns));
        }
        c
    }

    /// NVMe Flush: returns when every completed write is durable.
    pub fn flush(&mut self, at_ns: Nanos) -> Nanos {
        self.submit(at_ns, &Command::Flush, None).complete_ns
    }

    /// Writes `nlb` blocks at `slba`; `bytes` in data mode. With `fua` it
    /// completes once the blocks are durable.
    pub fn write(
        &mut self,
        at_ns: Nanos,
        slba: u64,
        nlb: u32,
        bytes: Option<&[u8]>,
        kind: BlockKind,
        fua: bool,
    ) -> Nanos {
        let payload = bytes.map_or(Payload::None, Payload::Bytes);
        let n = u64::from(nlb);
        match kind {
            BlockKind::Data => self.traffic.data_blocks += n,
            BlockKind::Node => self.traffic.node_blocks += n,
            BlockKind::Meta => self.traffic.meta_blocks += n,
            BlockKind::Relocated | BlockKind::RelocatedNode => self.traffic.relocated_blocks += n,
        }
        self.submit(at_ns, &Command::Write { slba, nlb, payload, fua, placement: None }, None).complete_ns
    }

    /// Reads `nlb` blocks at `slba`; in data mode into `out`.
    pub fn read(&mut self, at_ns: Nanos, slba: u64, nlb: u32, out: Option<&mut [u8]>) -> Nanos {
        self.traffic.read_blocks += u64::from(nlb);
        self.traffic.read_requests += 1;
        self.submit(at_ns, &Command::Read { slba, nlb }, out).complete_ns
    }

    /// Reads `n` blocks from `addr` into a buffer (in requests of at most
    /// MDTS); returns them and when the last request completes.
    pub fn read_blocks(&mut self, at_ns: Nanos, addr: u32, n: u32) -> (Vec<u8>, Nanos) {
        let mut bytes = vec![0u8; n as usize * BLOCK_BYTES];
        let step = (self.device().layout().mdts_lbas as u32).max(1);
        let mut done = at_ns;
        for k in (0..n).step_by(step as usize) {
            let nlb = step.min(n - k);
            let out = &mut bytes[k as usize * BLOCK_BYTES..(k + nlb) as usize * BLOCK_BYTES];
            done = done.max(self.read(at_ns, u64::from(addr + k), nlb, Some(out)));
        }
        (bytes, done)
    }
}
