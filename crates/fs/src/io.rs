//! The file system's path to the device: submission in time order, traffic
//! counters by block kind, and power-failure injection.

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
    /// Blocks rewritten by the host for segment compaction.
    Relocated,
}

/// Blocks written and read, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Traffic {
    pub data_blocks: u64,
    pub node_blocks: u64,
    pub meta_blocks: u64,
    pub relocated_blocks: u64,
    pub read_blocks: u64,
    pub read_requests: u64,
    /// Blocks copied by zone_compaction.
    pub device_copied_blocks: u64,
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

/// Device access with an optional power failure after a number of commands:
/// every later command is lost (the device keeps the prefix before it).
pub struct Io<D: ZonedDevice = Device> {
    dev: D,
    last_submit_ns: Nanos,
    commands: u64,
    crash_after_commands: Option<u64>,
    pub traffic: Traffic,
}

impl<D: ZonedDevice> Io<D> {
    pub fn new(dev: D) -> Self {
        Self { dev, last_submit_ns: 0, commands: 0, crash_after_commands: None, traffic: Traffic::default() }
    }

    pub fn device(&self) -> &D {
        &self.dev
    }

    pub fn into_device(self) -> D {
        self.dev
    }

    pub fn data_mode(&self) -> bool {
        self.dev.config().mode == Mode::Data
    }

    /// Power fails once `commands` more commands have been submitted.
    pub fn crash_after(&mut self, commands: u64) {
        self.crash_after_commands = Some(self.commands + commands);
    }

    pub fn crashed(&self) -> bool {
        self.crash_after_commands.is_some_and(|c| self.commands >= c)
    }

    /// Commands the device has taken.
    pub fn commands(&self) -> u64 {
        self.commands
    }

    pub fn last_submit_ns(&self) -> Nanos {
        self.last_submit_ns
    }

    /// Submits at `at_ns` or, if the device has taken a later command, then.
    /// After a power failure nothing reaches the device.
    pub fn submit(&mut self, at_ns: Nanos, cmd: &Command<'_>, out: Option<&mut [u8]>) -> Completion {
        let at_ns = at_ns.max(self.last_submit_ns);
        if self.crashed() {
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
        c
    }

    /// Writes `nlb` blocks at `slba`; `bytes` in data mode.
    pub fn write(&mut self, at_ns: Nanos, slba: u64, nlb: u32, bytes: Option<&[u8]>, kind: BlockKind) -> Nanos {
        let payload = bytes.map_or(Payload::None, Payload::Bytes);
        let n = u64::from(nlb);
        match kind {
            BlockKind::Data => self.traffic.data_blocks += n,
            BlockKind::Node => self.traffic.node_blocks += n,
            BlockKind::Meta => self.traffic.meta_blocks += n,
            BlockKind::Relocated => self.traffic.relocated_blocks += n,
        }
        self.submit(at_ns, &Command::Write { slba, nlb, payload }, None).complete_ns
    }

    /// Reads `nlb` blocks at `slba`; in data mode into `out`.
    pub fn read(&mut self, at_ns: Nanos, slba: u64, nlb: u32, out: Option<&mut [u8]>) -> Nanos {
        self.traffic.read_blocks += u64::from(nlb);
        self.traffic.read_requests += 1;
        self.submit(at_ns, &Command::Read { slba, nlb }, out).complete_ns
    }
}
