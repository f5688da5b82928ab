//! The block layers of one device, one per host path: a thread's requests
//! take the path its I/O engine and scheduler choose, and /proc/diskstats
//! counts what passed the kernel's block layers, whichever scheduler each ran.

use crate::scheduler::{BlockLayer, SchedulerCounters, SchedulerKind};
use crate::zinc::ZincConfig;

/// How a thread's requests reach the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostPath {
    /// Passthrough engines (SPDK, io_uring NVMe passthrough): around the
    /// kernel's block layer, unscheduled and uncounted.
    Passthrough,
    /// Through the kernel's block layer and this scheduler.
    Kernel(SchedulerKind),
}

impl HostPath {
    /// Whether dispatches take mq-deadline's per-queue lock (mq-deadline and
    /// `zinc`, which is mq-deadline too).
    pub fn locks_dispatch(self) -> bool {
        matches!(self, HostPath::Kernel(SchedulerKind::MqDeadline | SchedulerKind::Zinc))
    }
}

/// One [`BlockLayer`] per [`HostPath`].
pub struct BlockLayers {
    passthrough: BlockLayer,
    none: BlockLayer,
    mq_deadline: BlockLayer,
    zinc: BlockLayer,
}

impl BlockLayers {
    /// The layers of a device whose merged writes stay within `merge_lbas_max`
    /// LBAs of `lba_bytes`; `zinc` sets the `zinc` scheduler.
    pub fn new(merge_lbas_max: u64, zinc: ZincConfig, lba_bytes: u64) -> Self {
        BlockLayers {
            passthrough: BlockLayer::new(SchedulerKind::None, merge_lbas_max),
            none: BlockLayer::new(SchedulerKind::None, merge_lbas_max),
            mq_deadline: BlockLayer::new(SchedulerKind::MqDeadline, merge_lbas_max),
            zinc: BlockLayer::with_zinc(SchedulerKind::Zinc, merge_lbas_max, zinc, lba_bytes),
        }
    }

    /// The layer of `path`.
    pub fn get(&self, path: HostPath) -> &BlockLayer {
        match path {
            HostPath::Passthrough => &self.passthrough,
            HostPath::Kernel(SchedulerKind::None) => &self.none,
            HostPath::Kernel(SchedulerKind::MqDeadline) => &self.mq_deadline,
            HostPath::Kernel(SchedulerKind::Zinc) => &self.zinc,
        }
    }

    /// The layer of `path`, to insert or complete requests.
    pub fn get_mut(&mut self, path: HostPath) -> &mut BlockLayer {
        match path {
            HostPath::Passthrough => &mut self.passthrough,
            HostPath::Kernel(SchedulerKind::None) => &mut self.none,
            HostPath::Kernel(SchedulerKind::MqDeadline) => &mut self.mq_deadline,
            HostPath::Kernel(SchedulerKind::Zinc) => &mut self.zinc,
        }
    }

    /// What /proc/diskstats counts: the kernel's block layers summed
    /// (passthrough requests bypass them).
    pub fn disk_counters(&self) -> SchedulerCounters {
        let mut sum = SchedulerCounters::default();
        for layer in [&self.none, &self.mq_deadline, &self.zinc] {
            sum += layer.counters();
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::{HostRequest, RequestOp};

    #[test]
    fn disk_counters_sum_every_kernel_layer_and_leave_passthrough_out() {
        let mut layers = BlockLayers::new(32, ZincConfig::default(), 4096);
        let mut out = Vec::new();
        let paths = [
            HostPath::Passthrough,
            HostPath::Kernel(SchedulerKind::None),
            HostPath::Kernel(SchedulerKind::MqDeadline),
            HostPath::Kernel(SchedulerKind::Zinc),
        ];
        for (tag, path) in paths.into_iter().enumerate() {
            let read = HostRequest { tag: tag as u64, op: RequestOp::Read, slba: 0, nlb: 1, locked_zone: None };
            layers.get_mut(path).insert(read, &mut out);
        }
        assert_eq!(out.len(), 4, "reads are never held");
        assert_eq!(layers.disk_counters().read_ios, 3);
        assert!(paths.iter().all(|p| p.locks_dispatch() == (*p == paths[2] || *p == paths[3])));
    }
}
