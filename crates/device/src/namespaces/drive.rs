//! Namespace Management on one drive: which blocks of every plane each
//! namespace holds, what is free, and the statuses a controller answers
//! Namespace Management and Attachment with.
//!
//! The drive's NVM capacity is its flash: `flash.blocks_per_plane` blocks of
//! every plane (TNVMCAP is that many rows of every die's planes). A namespace
//! holds a contiguous range of them; a created one takes the first free range
//! that fits what it needs, by the rules `[[namespaces]]` uses
//! ([`namespace_config`]): a zoned namespace a block group per zone, an NVM
//! one its data plus its FTL's garbage-collection reserve. Deleting one frees
//! its range: the blocks it had written are erased on their dies then (die
//! time that later commands wait for, as a drive's background erase would
//! take), the Delete itself completes at once.

use super::Namespace;
use crate::config::namespaces::{namespace_config, CommandSet, NamespaceRequest};
use crate::config::DeviceConfig;
use crate::device::Fronts;
use crate::ssd::{Partition, Ssd};
pub use crate::status::{AdminError, AdminStatus};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use zonelab_flash::BlockAddr;
use zonelab_sim::Nanos;

/// One drive's flash as Namespace Management sees it: the shared hardware
/// and the range of every plane's blocks each of its namespaces holds.
pub struct Drive {
    config: DeviceConfig,
    pub(super) ssd: Arc<Mutex<Ssd>>,
    /// First block → blocks, one entry per allocated namespace (disjoint).
    allocated: BTreeMap<u32, u32>,
}

impl Drive {
    pub(super) fn new(config: DeviceConfig, ssd: Arc<Mutex<Ssd>>) -> Self {
        Self { config, ssd, allocated: BTreeMap::new() }
    }

    /// Marks `partition` allocated (a namespace of the configuration).
    pub(super) fn hold(&mut self, partition: Partition) {
        let (first, blocks) = partition.range();
        self.allocated.insert(first, blocks);
    }

    /// The drive's configuration (its `[[namespaces]]` as it started).
    pub fn config(&self) -> &DeviceConfig {
        &self.config
    }

    /// Bytes of one block of every plane of every die: the unit capacity is
    /// allocated in.
    pub fn row_bytes(&self) -> u64 {
        let g = &self.config.flash;
        u64::from(g.dies_total()) * u64::from(g.planes_per_die) * g.block_bytes()
    }

    /// Blocks per plane no namespace holds.
    pub fn free_blocks_per_plane(&self) -> u32 {
        self.config.flash.blocks_per_plane - self.allocated.values().sum::<u32>()
    }

    /// Total NVM capacity (TNVMCAP) in bytes: the whole flash.
    pub fn capacity_bytes(&self) -> u64 {
        u64::from(self.config.flash.blocks_per_plane) * self.row_bytes()
    }

    /// Unallocated NVM capacity (UNVMCAP) in bytes.
    pub fn unallocated_bytes(&self) -> u64 {
        u64::from(self.free_blocks_per_plane()) * self.row_bytes()
    }

    /// Whether `ns` is one of this drive's namespaces.
    pub fn owns(&self, ns: &Namespace) -> bool {
        Arc::ptr_eq(&self.ssd, &ns.ssd)
    }

    /// The first free range of `blocks` blocks per plane.
    fn first_fit(&self, blocks: u32) -> Option<u32> {
        let mut next = 0u32;
        for (&first, &len) in &self.allocated {
            if first - next >= blocks {
                return Some(next);
            }
            next = first + len;
        }
        (self.config.flash.blocks_per_plane - next >= blocks).then_some(next)
    }

    /// Checks what `request` asks for against the controller's formats and
    /// command sets (before any geometry).
    fn check(&self, request: &NamespaceRequest) -> Result<(), AdminError> {
        use AdminStatus as S;
        if request.nsze == 0 || request.ncap > request.nsze {
            let detail =
                format!("NSZE {} and NCAP {}: NSZE must be positive, NCAP at most NSZE", request.nsze, request.ncap);
            return Err(AdminError::new(S::InvalidField, detail));
        }
        if request.ncap < request.nsze {
            return Err(AdminError::new(S::ThinProvisioningNotSupported, "NCAP must equal NSZE"));
        }
        if request.lba_bytes != 512 && request.lba_bytes != 4096 {
            let detail = format!("{}-byte LBAs: the formats are 512 and 4096 bytes", request.lba_bytes);
            return Err(AdminError::new(S::InvalidFormat, detail));
        }
        let supported = match request.command_set {
            CommandSet::Nvm => self.config.nvm_namespace_ftl().is_some(),
            CommandSet::Zoned => self.config.conventional.is_none(),
        };
        if !supported {
            let detail = format!("this drive has no {:?} namespaces (an NVM one needs `nvm_ftl`)", request.command_set);
            return Err(AdminError::new(S::IoCommandSetNotSupported, detail));
        }
        Ok(())
    }

    /// Creates namespace `nsid` as `request` asks, on the first free range
    /// of blocks that holds it.
    pub fn create(&mut self, nsid: u32, request: &NamespaceRequest) -> Result<Namespace, AdminError> {
        self.check(request)?;
        let invalid = |detail: String| AdminError::new(AdminStatus::InvalidField, detail);
        let entry = request.entry(&self.config).map_err(invalid)?;
        let (mut config, need) = namespace_config(&self.config, &entry).map_err(|e| invalid(e.0))?;
        let free = self.free_blocks_per_plane();
        let fit = u32::try_from(need).ok().and_then(|blocks| Some((blocks, self.first_fit(blocks)?)));
        let Some((blocks, first)) = fit else {
            let bytes = need.saturating_mul(self.row_bytes());
            let detail = match u64::from(free) >= need {
                true => {
                    format!("it needs {need} blocks per plane ({bytes} bytes); {free} are free, but not in one range")
                }
                false => format!("it needs {need} blocks per plane ({bytes} bytes); only {free} are free"),
            };
            return Err(AdminError::new(AdminStatus::InsufficientCapacity, detail));
        };
        config.flash.blocks_per_plane = blocks;
        let layout = config.validate_with(true).map_err(|e| invalid(e.0))?;
        let partition = Partition::new(first, blocks);
        self.hold(partition);
        let front = Fronts::new(config, layout, crate::Tracking::ALL, partition);
        Ok(Namespace { nsid, front, ssd: Arc::clone(&self.ssd) })
    }

    /// Frees the blocks of `ns` (one of this drive's) at `at_ns`: those it
    /// wrote are erased on their dies from then on. Returns the erases.
    pub fn delete(&mut self, ns: &Namespace, at_ns: Nanos) -> u64 {
        assert!(self.owns(ns), "a namespace of this drive");
        let (first, blocks) = ns.front.core().partition.range();
        let held = self.allocated.remove(&first);
        assert_eq!(held, Some(blocks), "the drive holds the namespace's blocks");
        let mut ssd = self.ssd.lock().unwrap_or_else(PoisonError::into_inner);
        let at_ns = ssd.enter_in_order(at_ns);
        let g = ssd.flash().geometry().clone();
        let mut erases = 0;
        for die in 0..g.dies_total() {
            for block in first..first + blocks {
                if (0..g.planes_per_die).any(|plane| ssd.flash().pages_written(die, plane, block) > 0) {
                    ssd.flash_mut().erase(at_ns, BlockAddr { die, block });
                    erases += 1;
                }
            }
        }
        erases
    }
}
