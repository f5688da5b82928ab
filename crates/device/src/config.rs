//! Device configuration: every parameter of a simulated device, as TOML.
//!
//! Sections follow the layers: `namespace` (what the host sees), `mapping`
//! (how zones land on flash), `flash` and `flash_timing` (the medium),
//! `link` (PCIe), `controller` (firmware cost per command), `write_buffer`,
//! `management` (zone management cost).

pub mod fdp;
pub mod namespaces;
pub mod zrwa;

use serde::{Deserialize, Serialize};
pub use zonelab_flash::Suspend;
use zonelab_flash::{Geometry, Timing};
use zonelab_sim::Nanos;

/// What the device keeps of the data written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Keep only zone metadata: reads return zeros, memory stays small.
    Metadata,
    /// Keep written data so that reads return it.
    Data,
}

/// Every parameter of a simulated device (see the module comment for the sections).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// The device's name as reports print it (a preset's, or the one the file gives).
    pub name: String,
    /// Metadata only, or data too.
    pub mode: Mode,
    /// What the host sees: zones, sizes, limits.
    pub namespace: NamespaceConfig,
    /// How zones are striped over the dies.
    pub mapping: MappingConfig,
    /// Organisation of the flash.
    pub flash: Geometry,
    /// NAND operation latencies and channel speed.
    pub flash_timing: Timing,
    /// The PCIe link between host and controller.
    pub link: LinkConfig,
    /// Firmware and host-interface costs per command.
    pub controller: ControllerConfig,
    /// The controller's write buffer and its power-loss behaviour.
    pub write_buffer: WriteBufferConfig,
    /// Costs and designs of zone management.
    pub management: ManagementConfig,
    /// ZNS+ extensions (seed 002); absent from older files, so defaulted.
    #[serde(default)]
    pub znsplus: ZnsPlusConfig,
    /// A conventional SSD: page-level mapping and garbage collection over a
    /// namespace of conventional zones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conventional: Option<ConventionalConfig>,
    /// The page-mapped FTL an NVM (conventional) namespace made on this
    /// zoned drive runs: a `[[namespaces]]` entry with `command_set = "nvm"`
    /// and no `conventional` of its own, or one Namespace Management
    /// creates (seed 001's conventional namespace beside the zoned one).
    /// Absent: such namespaces need their own `conventional`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nvm_ftl: Option<ConventionalConfig>,
    /// Flexible Data Placement on the page-mapped namespace(s): reclaim
    /// groups and handles ([`fdp::FdpConfig`]). Zoned namespaces ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fdp: Option<fdp::FdpConfig>,
    /// Several namespaces on this one device, NSID 1, 2, ... in order: each
    /// `[[namespaces]]` entry sets its own zone geometry and takes the rest
    /// from `[namespace]`; they share the flash, controller and link, so they
    /// interfere. Empty (the default): the one namespace `[namespace]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<namespaces::NamespaceEntry>,
    /// The device's own randomness (service order among queued commands);
    /// absent from older files, so defaulted.
    #[serde(default)]
    pub spread: SpreadConfig,
}

/// The device's own randomness. Where a drive's behaviour is not fixed by
/// what the host sent (the order its firmware takes queued commands), the
/// model draws from random streams of this seed: the same seed gives the
/// same run, byte for byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpreadConfig {
    /// Seed of the device's random streams.
    #[serde(default)]
    pub seed: u64,
    /// false: deterministic: queues serve in arrival order wherever a design
    /// would draw an order (`management.order = "rounds"` keeps its rounds).
    #[serde(default = "default_true")]
    pub on: bool,
}

impl Default for SpreadConfig {
    fn default() -> Self {
        Self { seed: 0, on: true }
    }
}

/// The most waiting writes a conventional FTL core chooses among
/// (`conventional.write_order_window`).
pub const WRITE_ORDER_WINDOW_MAX: u32 = 1024;

/// Garbage collection of a conventional SSD, per die.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConventionalConfig {
    /// Foreground collection: when a die needs a block for host data and
    /// has at most this many free, the host write waits while garbage
    /// collection frees blocks.
    pub gc_free_blocks_min: u32,
    /// Foreground collection frees blocks until a die has this many.
    pub gc_free_blocks_target: u32,
    /// Background collection starts on a die once it has fewer free blocks
    /// than this, and runs alongside host writes (see
    /// `gc_units_per_host_unit_max`). 0 (the default, for older files):
    /// only foreground collection. Otherwise above `gc_free_blocks_min`.
    #[serde(default)]
    pub gc_free_blocks_start: u32,
    /// Background collection's pace: before each host program unit on a die
    /// below `gc_free_blocks_start`, garbage collection moves (reads and
    /// programs) up to this many program units of the victim's valid data,
    /// as many as free a block as fast as host writes use one
    /// (ceil(valid / invalid units of the victim)). 0 with
    /// `gc_free_blocks_start = 0`; otherwise 1 to 64.
    #[serde(default)]
    pub gc_units_per_host_unit_max: u32,
    /// Which full block a die collects: `greedy` (the default: fewest valid
    /// LBAs) or `cost_benefit` (Rosenblum and Ousterhout's LFS cleaner: most
    /// free space per unit of copying, weighted by the block's age).
    #[serde(default)]
    pub gc_victim: VictimPolicy,
    /// Which waiting host write the FTL core takes next. 0 (the default):
    /// the one that came first. N (2 to 1024): one of the N that came
    /// first, each as likely (drawn from `[spread]`; arrival order with
    /// `spread.on = false`), as a controller that holds N commands and
    /// serves them in no particular order. A write waits only while the core
    /// is busy, so below its limit the order changes nothing; at it, the
    /// latencies spread (seed 001's conventional namespace: random 4 KiB
    /// writes at QD 16 have a p95 5.3 times their median). See
    /// docs/device-model.md, "Writes waiting for the FTL core".
    #[serde(default)]
    pub write_order_window: u32,
}

/// How garbage collection picks its victim among a die's full blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VictimPolicy {
    /// The block with the fewest valid LBAs: least copying now.
    #[default]
    Greedy,
    /// The block with the highest (1 − u) · age / (1 + u), u its valid share
    /// and age the units programmed on the FTL since it was last written:
    /// a cold block is collected at a higher u than a hot one, whose
    /// remaining data is about to be invalidated anyway.
    CostBenefit,
}

/// How a TL_opened zone's skipped valid blocks reach its LogFBG (seed 002 §3.2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plugging {
    /// At the write pointer: right after each write, the valid blocks that follow.
    Lba,
    /// Fully valid chunks ahead of the write pointer whenever their die is
    /// idle, in page order within each flash block.
    Ppa,
}

/// ZNS+ commands: zone_compaction, Simple Copy, TL_open, identify_mapping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZnsPlusConfig {
    /// Copybacks a page's data may go through in a row (K): copyback skips the
    /// controller's ECC check, so bit errors accumulate; after K the copy goes
    /// through the controller. 0 disables copyback.
    pub copyback_chain_max: u32,
    /// How a TL_opened zone's skipped valid blocks are copied.
    pub plugging: Plugging,
    /// Most blocks one zone_compaction or Simple Copy may move.
    pub copy_blocks_max: u32,
    /// Most source ranges of one Simple Copy (MSRC + 1).
    pub copy_ranges_max: u32,
    /// Firmware cost of a copy command, and per block it copies.
    pub copy_ns: Nanos,
    /// Firmware cost per block a copy command moves.
    pub copy_per_block_ns: Nanos,
    /// Firmware cost of TL_open.
    pub tl_open_ns: Nanos,
}

impl Default for ZnsPlusConfig {
    fn default() -> Self {
        Self {
            copyback_chain_max: 4,
            plugging: Plugging::Ppa,
            copy_blocks_max: 16384,
            copy_ranges_max: 256,
            copy_ns: 5_000,
            copy_per_block_ns: 100,
            tl_open_ns: 10_000,
        }
    }
}

/// Largest `znsplus.copy_blocks_max`: data mode keeps a copy's source blocks
/// while it runs (256 MiB of 4 KiB blocks).
pub const COPY_BLOCKS_MAX: u32 = 1 << 16;

/// The namespace as the host sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamespaceConfig {
    /// Logical block size: 512 or 4096.
    pub lba_bytes: u32,
    /// Zones in the namespace, conventional ones included.
    pub zones: u32,
    /// Conventional (randomly writable) zones at the start of the namespace.
    pub conventional_zones: u32,
    /// Zone size in bytes (ZSZE): a power of two of logical blocks.
    pub zone_size_bytes: u64,
    /// Zone capacity in bytes (ZCAP): the writable part of a zone, at most its size.
    pub zone_capacity_bytes: u64,
    /// Max open zones; 0 = unlimited.
    pub max_open_zones: u32,
    /// Max active zones; 0 = unlimited.
    pub max_active_zones: u32,
    /// Largest Zone Append; 0 = MDTS.
    pub zasl_bytes: u64,
    /// Maximum data transfer size of one command.
    pub mdts_bytes: u64,
    /// Whether a read may cross a zone boundary.
    pub cross_zone_read: bool,
    /// Zone Random Write Area capabilities (`[namespace.zrwa]`); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zrwa: Option<zrwa::ZrwaConfig>,
}

/// How zones land on the flash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingConfig {
    /// Zone interleaving degree D_zone: dies a zone's chunks are striped over.
    /// Must divide the number of dies; dies / D_zone flash chip groups result.
    pub d_zone: u32,
    /// Consecutive chunks (flash pages) of a zone on one die before the next
    /// die: 1 stripes page by page (ZNS+'s Fig 1); planes × oneshot_pages
    /// keeps each program unit on one die, so a sequential writer fills, and
    /// programs, one die after another. Must divide planes × oneshot_pages.
    #[serde(default = "default_stripe_chunks")]
    pub stripe_chunks: u32,
    /// Whether a reset keeps the zone's block group or takes another.
    #[serde(default)]
    pub zone_mapping: ZoneMapping,
    /// The die of its chip group a zone's first chunk lands on.
    #[serde(default)]
    pub start_die: StartDie,
    /// How a die's chunks fill a program unit's pages and planes.
    #[serde(default)]
    pub chunk_order: ChunkOrder,
}

fn default_stripe_chunks() -> u32 {
    1
}

/// Which die of its chip group a zone's stripe starts on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StartDie {
    /// Always the group's first die (ZNS+'s Fig 1: the host can compute
    /// the die of any chunk).
    #[default]
    First,
    /// Each zone that takes its first write starts one die after the zone
    /// that did so before it, so zones written together program different
    /// dies at any moment instead of queueing on the same one.
    Rotate,
}

/// How a die's consecutive chunks of a zone fill a program unit (planes ×
/// one-shot pages): across the planes first, or down a plane's one-shot
/// pages first. Programs take the whole unit either way; reads differ. (A
/// page-mapped namespace's FTL fills its units planes first whatever this
/// says: its read-ahead reads pages, not page rows.) With
/// `flash_timing.plane_interleave_bytes`, a sensed page row stays in the
/// planes' registers for every chunk in that row: planes first puts
/// consecutive chunks in one row, pages first puts them in different rows,
/// so that a sequential reader without read-ahead senses once per chunk
/// (ZNS-Study's ZN540: readers sharing its one read-ahead context take a
/// quarter of their 4 KiB reads at a sense's cost, one per 16 KiB page).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkOrder {
    /// Chunk i of a unit on plane i mod planes, page i / planes.
    #[default]
    PlanesFirst,
    /// Chunk i of a unit on page i mod one-shot pages, plane i / one-shot pages.
    PagesFirst,
}

/// How zones get flash block groups (seed 003).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ZoneMapping {
    /// Zone z always owns block group z / N_FCG of its chip group.
    #[default]
    Static,
    /// A reset returns the zone's block group to its chip group's free list
    /// (to be erased) and takes the longest-free one.
    Dynamic,
}

/// The PCIe link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Lanes (x1, x2, x4...).
    pub lanes: u32,
    /// Payload bandwidth of one lane in one direction.
    pub lane_bytes_per_s: u64,
}

impl LinkConfig {
    /// Payload bandwidth of the link in one direction.
    pub fn bytes_per_s(&self) -> u64 {
        u64::from(self.lanes).saturating_mul(self.lane_bytes_per_s)
    }
}

/// Firmware and host-interface costs. `submit_ns` and `complete_ns` overlap
/// between commands (doorbell, fetch, completion post and interrupt); the
/// `*_ns` firmware costs run on `firmware_cores` cores and so bound IOPS.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ControllerConfig {
    /// Firmware cores the per-command costs run on.
    pub firmware_cores: u32,
    /// Host-interface time before a command reaches the firmware (doorbell, fetch).
    pub submit_ns: Nanos,
    /// Host-interface time after the firmware (completion post, interrupt).
    pub complete_ns: Nanos,
    /// Firmware time of a read.
    pub read_ns: Nanos,
    /// Firmware time of a write.
    pub write_ns: Nanos,
    /// Firmware time of a Zone Append.
    pub append_ns: Nanos,
    /// Firmware time of a Write Zeroes.
    pub write_zeroes_ns: Nanos,
    /// Extra firmware work when a write or append implicitly opens a zone.
    pub implicit_open_write_ns: Nanos,
    /// Extra firmware work when an append implicitly opens a zone.
    pub implicit_open_append_ns: Nanos,
    /// Firmware time of Identify.
    pub identify_ns: Nanos,
    /// Firmware time of Report Zones, fixed part.
    pub report_ns: Nanos,
    /// Firmware time of Report Zones per zone descriptor returned.
    pub report_per_zone_ns: Nanos,
    /// Firmware cost of a command that fails its checks.
    pub error_ns: Nanos,
    /// The last part of a write's, append's or write zeroes' firmware time
    /// (the mapping and write-pointer update), which also needs the write
    /// path's FTL core (it never limits writes alone, the firmware core does).
    /// Management firmware work runs on the same core, and while it has work
    /// the core takes turns: each write waits for one management slice
    /// (`management.slice_ns`), so resets and finishes cost writers
    /// throughput but not readers (seed 003).
    #[serde(default)]
    pub write_ftl_ns: Nanos,
    /// A write's FTL stage (`write_ftl_ns`) holds only the FTL core: the
    /// firmware core lets the write go after the rest of `write_ns`, as it
    /// does an append after the rest of `append_ns`. false (the default):
    /// the firmware core is held for the whole `write_ns`.
    #[serde(default)]
    pub write_ftl_pipelined: bool,
    /// FTL-core time after a write (4 KiB LBAs and larger) that ends inside
    /// a mapping unit (`small_lba_map_unit_bytes`): the controller merges
    /// the unit's pieces after the write completes, as it does an append's
    /// (`append_partial_unit_ns`). 0 (the default): no merge.
    #[serde(default)]
    pub write_partial_unit_ns: Nanos,
    /// How far ahead of a sequential read stream the controller reads whole
    /// pages into its read buffer; 0 turns read-ahead off.
    #[serde(default)]
    pub read_ahead_bytes: u64,
    /// Controller memory for read-ahead data (at least `read_ahead_bytes`).
    #[serde(default)]
    pub read_buffer_bytes: u64,
    /// Sequential streams the controller reads ahead of at once (1 to 32):
    /// a read of another stream takes the context of the one read least
    /// recently, whose buffered pages it no longer finds, and reads its own
    /// pages whole before the context reads ahead of it (docs/device-model.md,
    /// "The read buffer and read-ahead").
    #[serde(default = "default_read_ahead_streams")]
    pub read_ahead_streams: u32,
    /// With LBAs smaller than 4 KiB (the 512 B format) the FTL still maps
    /// data in units of `small_lba_map_unit_bytes`. A write that ends inside
    /// a unit leaves it partly filled, and the controller merges the unit's
    /// pieces on the write path's FTL core (`partial_unit_ns`) after the write
    /// completes: the next command that needs the core waits for it, so
    /// writes smaller than a unit are limited device-wide, however many zones
    /// they go to, and a QD-1 stream of them runs at the merge's pace, not at
    /// the merge plus the write's own latency. 0 turns this off.
    #[serde(default)]
    pub small_lba_map_unit_bytes: u64,
    /// FTL-core time of merging a partly filled mapping unit (see
    /// `small_lba_map_unit_bytes`), before copying the write's bytes in.
    #[serde(default)]
    pub partial_unit_ns: Nanos,
    /// The rate at which that merge copies the bytes the write brought into
    /// the partly filled unit, so that a 512 B write's merge costs less than
    /// a 4 KiB one's. 0 (the default): the merge costs `partial_unit_ns`
    /// whatever the write brought.
    #[serde(default)]
    pub partial_unit_bytes_per_s: u64,
    /// The rate at which the merge takes in the bytes the unit held before
    /// the write (its earlier pieces), so that a small write's merge costs
    /// more the fuller its unit. 0 (the default): they cost nothing.
    #[serde(default)]
    pub partial_unit_held_bytes_per_s: u64,
    /// FTL-core time of merging a mapping unit (`small_lba_map_unit_bytes`)
    /// that a Zone Append with 4 KiB LBAs covers only part of (it starts or
    /// ends inside the unit): the controller merges the unit's pieces after
    /// the append completes (but for `append_partial_unit_held_ns`), so it
    /// delays later commands that need the FTL core more than the append.
    /// Appends smaller than a unit are then limited device-wide (the ZN540
    /// takes 4 KiB appends at 132-138 K/s in one zone or eight, 8 KiB ones at
    /// the flash's limit). 0 turns this off.
    #[serde(default)]
    pub append_partial_unit_ns: Nanos,
    /// The part of `append_partial_unit_ns` the append itself waits for,
    /// before it completes: the FTL records the partly filled unit (which
    /// LBAs of it hold data) before the append's LBA goes back to the host,
    /// and merges the pieces afterwards. The FTL core's work per append is
    /// the same, so the device-wide limit stays; a lone append that covers
    /// part of a unit takes this much longer (the ZN540's 4 KiB appends at
    /// QD 1 take 14.66 µs against 14.02 for 8 KiB ones, where its 4 KiB
    /// writes are faster than its 8 KiB ones). At most
    /// `append_partial_unit_ns`; 0 (the default): all of it afterwards.
    #[serde(default)]
    pub append_partial_unit_held_ns: Nanos,
    /// With this nonzero, an append's last `append_ftl_ns` of firmware time
    /// (its write-pointer and mapping update) runs after the rest, on the FTL
    /// core alone, so the firmware core takes the next command meanwhile:
    /// appends pass through two stages, while writes hold both cores for
    /// their FTL part (`write_ftl_ns`). 0: appends are timed as writes.
    #[serde(default)]
    pub append_ftl_ns: Nanos,
    /// FTL-core time of committing a program unit of host data once its
    /// program ends (the unit's mapping entry, the zone's durable write
    /// pointer, giving its buffer back). It runs when the program ends,
    /// whatever the host is doing, so the writes whose FTL part falls in it
    /// wait: at the flash's limit room comes back one unit at a time and
    /// the few writes queued then wait for the commit too. 0 turns this off.
    #[serde(default)]
    pub unit_commit_ns: Nanos,
    /// The controller takes commands in the order they arrive: a write that
    /// waits for room in the write buffer holds up the commands taken after
    /// it, so a read sent behind writes at the flash's limit waits until the
    /// writes ahead of it have their room (seed 000 Obs 11: with 128 MiB of
    /// appends queued, 4 KiB reads at QD 1 take 95 ms). Writes wait for
    /// room in turn either way; management commands are not held. Off:
    /// reads pass writes that wait for room.
    #[serde(default)]
    pub in_order: bool,
    /// The program data path from buffer memory to the flash channels
    /// (through the encoder), in bytes per second: programs of buffered data
    /// cross it one after another, in the order they are dispatched, before
    /// their channel transfer. A finish's padding does not cross it. 0 (the
    /// default): unlimited, a program starts as soon as its channel and die
    /// allow. See docs/device-model.md, "The program data path and the
    /// mapping journal".
    #[serde(default)]
    pub program_path_bytes_per_s: u64,
    /// The fastest one write's data comes in from the host, in bytes per
    /// second: the controller starts reading it over the link when it takes
    /// the command, while its firmware runs, and one command's reads come
    /// back no faster than this (their round trips, not the link, set the
    /// pace). A write's data is in no sooner than its bytes at this rate
    /// after its start (`write_dma_start_ns` past the command's arrival),
    /// however early its firmware and buffer room are ready; small writes'
    /// data is in before their firmware is done. 0 (the default): only the
    /// link limits it. See docs/device-model.md, "A write's data transfer".
    #[serde(default)]
    pub write_dma_bytes_per_s: u64,
    /// How long after the controller takes a write its data starts coming
    /// in at `write_dma_bytes_per_s` (the command's data pointers read and
    /// the transfer set up); only with a pace.
    #[serde(default)]
    pub write_dma_start_ns: Nanos,
    /// An append's data starts coming in (at `write_dma_bytes_per_s`) only
    /// once its firmware is done, not `write_dma_start_ns` after the
    /// controller takes it: the firmware reads and moves the zone's write
    /// pointer, which says where the data goes, before it starts the
    /// transfer; a write names its LBA, so its transfer starts at once. The
    /// ZN540's appends take about 4 µs more than its writes at every size
    /// from 16 KiB on (CLUSTER'23's SPDK runs). Only with a pace.
    #[serde(default)]
    pub append_data_after_firmware: bool,
    /// After every this many programs over the program data path, the
    /// controller writes out its mapping journal, holding the path for
    /// `journal_ns`. 0 (the default): no journal.
    #[serde(default)]
    pub journal_units: u32,
    /// How long each journal write holds the program data path.
    #[serde(default)]
    pub journal_ns: Nanos,
    /// Every this many journal writes, the controller checkpoints its whole
    /// mapping table instead, holding the path `checkpoint_ns`. 0 (the
    /// default): no checkpoint; without a journal (`journal_units = 0`)
    /// there is none either.
    #[serde(default)]
    pub checkpoint_journals: u32,
    /// How long each checkpoint holds the program data path.
    #[serde(default)]
    pub checkpoint_ns: Nanos,
    /// Idle-time housekeeping on the firmware cores (log pages, media and
    /// temperature checks): once no command has been in the drive for
    /// `housekeeping_idle_ns` (and no management work is queued, no firmware
    /// core busy), a task of `housekeeping_ns` runs every
    /// `housekeeping_period_ns`, and a command that arrives during one waits
    /// for it to end (a core takes it whole). Its phase has nothing to do
    /// with the host's timing, so it is drawn from `[spread]` for each idle
    /// command; with `spread.on = false` no command meets it. 0 (the
    /// default): no housekeeping. See docs/device-model.md, "Housekeeping
    /// while idle".
    #[serde(default)]
    pub housekeeping_ns: Nanos,
    /// The housekeeping task's period while the firmware is idle: at least
    /// `housekeeping_ns`.
    #[serde(default)]
    pub housekeeping_period_ns: Nanos,
    /// How long the drive must have been idle before housekeeping runs.
    #[serde(default)]
    pub housekeeping_idle_ns: Nanos,
}

/// The controller's write buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteBufferConfig {
    /// Controller memory holding each open zone's data until it is programmed;
    /// writes wait for space (back-pressure) once it is full.
    pub zone_buffer_bytes: u64,
    /// Controller memory all zones' buffers share: a write also waits for
    /// room here, which any zone's finished program gives back, so writers
    /// of different zones wait for the same program completions. 0 (the
    /// default) sets no device-wide limit. Must let every active zone
    /// hold the data its first program unit needs.
    #[serde(default)]
    pub device_buffer_bytes: u64,
    /// What a power cut does to the buffer: `plp` (power-loss protection, the
    /// default: capacitors flush it) or `volatile` (data not yet programmed,
    /// or saved by a Flush or a FUA write, is lost). See docs/device-model.md.
    #[serde(default)]
    pub cache: WriteCache,
    /// Firmware cost of a Flush command (and of the flush a FUA write implies).
    #[serde(default = "default_flush_ns")]
    pub flush_ns: Nanos,
    /// Saving one zone's partly filled program unit to power-safe flash on a
    /// Flush or FUA write (volatile cache only): a padded SLC-mode program.
    #[serde(default = "default_partial_unit_flush_ns")]
    pub partial_unit_flush_ns: Nanos,
    /// Commands in flight at a power cut: `torn` (the pieces already in the
    /// device are kept, as far as the cache mode keeps them) or `lost`
    /// (nothing of a write that had not completed survives).
    #[serde(default)]
    pub power_cut_in_flight: InFlight,
    /// Which waiting write the pool's released room serves: `arrival` (the
    /// default: the one that has waited longest) or `random` (one of the
    /// zones waiting, each as likely, drawn from `[spread]`; a zone's own
    /// writes keep their order). Without a pool (`device_buffer_bytes` 0)
    /// there is no shared room and this does nothing.
    #[serde(default)]
    pub room_order: RoomOrder,
    /// When a program unit's data leaves the pool: `programmed` (the
    /// default: when its program ends), `crossed` (a page of each of the
    /// die's planes at a time, as it crosses the program path to the die,
    /// whose page registers hold it from then on) or `unit_crossed` (the
    /// whole unit once its last page has crossed). Nothing without a pool.
    #[serde(default)]
    pub pool_release: PoolRelease,
}

/// Which waiting write released room in the device pool serves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoomOrder {
    /// First come, first served: a write waits until the writes that waited
    /// before it have their room.
    #[default]
    Arrival,
    /// Each piece of released room goes to one of the zones waiting, each as
    /// likely (arrival order with `spread.on = false`): a write that comes
    /// later can have its room before one that waits already. In a closed
    /// loop at the pool's limit, waits spread like a floor plus an
    /// exponential instead of each being the mean.
    Random,
}

/// When a program unit's data leaves the device pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolRelease {
    /// When the unit's program ends: room comes back a unit at a time.
    #[default]
    Programmed,
    /// A multi-plane page at a time (`planes_per_die` × `page_bytes`), as
    /// the unit's data crosses the program path
    /// (`controller.program_path_bytes_per_s`): room comes back at the
    /// path's pace.
    Crossed,
    /// The whole unit once its last page has crossed the program path: the
    /// unit's data is one allocation of buffer memory, freed when its
    /// transfer to the die is done. Room comes back at the path's pace, a
    /// unit at a time.
    UnitCrossed,
}

impl WriteBufferConfig {
    /// A power-loss-protected buffer of `zone_buffer_bytes` per zone, default costs.
    pub fn plp(zone_buffer_bytes: u64) -> Self {
        Self {
            zone_buffer_bytes,
            device_buffer_bytes: 0,
            cache: WriteCache::Plp,
            flush_ns: default_flush_ns(),
            partial_unit_flush_ns: default_partial_unit_flush_ns(),
            power_cut_in_flight: InFlight::Torn,
            room_order: RoomOrder::Arrival,
            pool_release: PoolRelease::Programmed,
        }
    }
}

fn default_flush_ns() -> Nanos {
    5_000
}

fn default_partial_unit_flush_ns() -> Nanos {
    250_000
}

/// The write buffer's behaviour at a power cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteCache {
    /// Power-loss protected: everything taken into the buffer survives.
    #[default]
    Plp,
    /// Volatile: only data programmed to flash or made durable by a Flush or
    /// a FUA write survives.
    Volatile,
}

/// What a power cut does to commands in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InFlight {
    /// Torn: the part of a write already in the device is kept (if the cache
    /// mode keeps it), the rest is lost.
    #[default]
    Torn,
    /// Lost: a write that had not completed leaves nothing.
    Lost,
}

/// Zone management: fixed firmware costs, and the designs of seed 003
/// (ConfZNS++) for finish, reset and when erases happen. Management work
/// runs as steps on the write path's FTL core (see `controller.write_ftl_ns`)
/// and the dies; with `host_priority` host work goes first at the next step
/// boundary (seed 000 Obs 12-13, seed 003 Obs 1-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagementConfig {
    /// Firmware cost of Open Zone.
    pub open_ns: Nanos,
    /// Firmware cost of Close Zone.
    pub close_ns: Nanos,
    /// What a Close Zone costs on top of `close_ns` when the zone holds data:
    /// the firmware records where it stopped (CLUSTER'23: closing a zone after
    /// a write takes 14.9-15.2 µs, an empty opened one 11.0 µs).
    #[serde(default)]
    pub close_written_ns: Nanos,
    /// Fixed firmware cost of a finish (mapping and zone-descriptor update).
    pub finish_ns: Nanos,
    /// Fixed firmware cost of a reset.
    pub reset_ns: Nanos,
    /// Firmware cost of Offline Zone.
    pub offline_ns: Nanos,
    /// Host work takes the FTL core and the dies before queued management
    /// steps; false runs management work as soon as it is sent.
    #[serde(default = "default_true")]
    pub host_priority: bool,
    /// Piece of management firmware work on the FTL core between two
    /// writes: the turn a write waits for while management runs.
    #[serde(default = "default_slice_ns")]
    pub slice_ns: Nanos,
    /// Management's turn on the FTL core beside busy writers: its share
    /// stays one `slice_ns` per write, taken as `turn_ns` of work once every
    /// `turn_ns / slice_ns` writes, so that most writes pass untouched and a
    /// few wait the whole turn (CLUSTER'23 Fig 7: beside resets a QD-1
    /// writer's mean doubles while its median and p99 stay). 0: `slice_ns`,
    /// a slice before every write.
    #[serde(default)]
    pub turn_ns: Nanos,
    /// The order in which the management thread takes queued finish and
    /// reset commands.
    #[serde(default)]
    pub order: ServiceOrder,
    /// How a finish makes the rest of the zone unwritable.
    #[serde(default)]
    pub finish: FinishConfig,
    /// What a reset erases, and when.
    #[serde(default)]
    pub reset: ResetConfig,
}

fn default_true() -> bool {
    true
}
fn default_slice_ns() -> Nanos {
    5_000
}

fn default_read_ahead_streams() -> u32 {
    crate::controller::read_ahead::READ_AHEAD_STREAMS_MAX
}

/// The order in which a queue's waiting commands are served.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceOrder {
    /// First come, first served.
    #[default]
    Arrival,
    /// In rounds: once its round is done, the server takes every command
    /// waiting then as the next round, in an order unrelated to arrival
    /// (drawn from `[spread]`; arrival order with `spread.on = false`);
    /// commands that arrive during a round wait for the next one. With k
    /// commands kept queued, a command waits one to two rounds: a mean of k
    /// services but a p95 near 1.5 k (ConfZNS++ C3, concurrent resets).
    Rounds,
}

/// How a finish makes the rest of the zone's capacity unwritable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishDesign {
    /// Program padding into the rest of the zone capacity, in requests of
    /// `pad_bytes` with `pause_ns` between them.
    Pad,
    /// Only mark the unwritten capacity in the mapping: `map_per_lba_ns` of
    /// firmware time per unwritten LBA; the partly written program units are
    /// still padded.
    Metadata,
}

/// The finish design and its parameters (seed 003).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FinishConfig {
    /// Padding or metadata only.
    pub design: FinishDesign,
    /// Bytes of padding one internal request programs (rounded up to whole
    /// program units).
    pub pad_bytes: u64,
    /// Least time between the starts of two padding requests (a request
    /// also waits until the die of its first unit is about to be free).
    pub pause_ns: Nanos,
    /// Host I/O pre-empts padding between requests (with `host_priority`).
    pub preempt: bool,
    /// A zone opened with nothing written is padded (or marked) like any
    /// other; false: it holds no blocks and no mapping, so finishing it only
    /// changes its state (`management.close_ns`, CLUSTER'23 Fig 5: 14 µs).
    #[serde(default = "default_true")]
    pub pad_empty: bool,
    /// Padding takes turns with the zones whose data is being programmed:
    /// the flusher serves the zones with a unit ready in rounds, and a
    /// finishing zone always has one, so a request also goes before a zone's
    /// second unit of a round, queued on its die with host programs. Without
    /// it (and with `preempt`) padding only fills the time dies are idle,
    /// which writers at the flash's limit never leave.
    #[serde(default)]
    pub pad_turns: bool,
    /// With the metadata design: firmware time per unwritten LBA marked.
    pub map_per_lba_ns: Nanos,
}

impl Default for FinishConfig {
    fn default() -> Self {
        Self {
            design: FinishDesign::Metadata,
            pad_bytes: 0,
            pause_ns: 0,
            preempt: true,
            pad_empty: true,
            pad_turns: false,
            map_per_lba_ns: 0,
        }
    }
}

/// Which blocks of a reset zone's block group are erased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EraseScope {
    /// Every block of the group.
    All,
    /// Only blocks that hold data.
    Data,
}

/// When a reset zone's blocks are erased.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EraseAt {
    /// Inside the reset command, before it completes.
    Sync,
    /// After the reset completes, while the dies are idle.
    Async,
    /// When a block is next programmed.
    Deferred,
}

/// How long a reset holds the write path's programs
/// (`reset.unmap_holds_programs`), counted in firmware work from when the
/// reset's work starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldSpan {
    /// The unmapping's work: `unmap_per_lba_ns` per written LBA.
    #[default]
    Unmap,
    /// The reset's whole firmware work: its base (`management.reset_ns`),
    /// the unmapping and an unfinished zone's teardown (`active_ns`).
    Work,
}

/// The reset design and its parameters (seed 003).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetConfig {
    /// Which blocks are erased.
    pub erase: EraseScope,
    /// When they are erased.
    pub erase_at: EraseAt,
    /// Unmapping cost per written LBA (the metadata cost that grows with
    /// occupancy); an LBA format below 4 KiB is mapped in units of
    /// `controller.small_lba_map_unit_bytes`, each of which costs this.
    pub unmap_per_lba_ns: Nanos,
    /// Tearing down an open or closed zone's write state (open blocks,
    /// journal), which a finish or filling the zone already did. Only a zone
    /// with a program unit on flash has any: one opened with nothing written,
    /// or with less than a unit in the buffer, resets for the base cost
    /// (CLUSTER'23 Fig 5).
    pub active_ns: Nanos,
    /// The write path starts no program while the reset unmaps the zone
    /// (for as long as `hold_span` says: the unmapping's work,
    /// `unmap_per_lba_ns` per written LBA, or the reset's whole work, from
    /// when the reset's work starts): the flash-write pipeline
    /// waits for the mapping the reset rewrites. Programs already queued at
    /// the dies go on, reads are not held, and host data keeps coming into
    /// the write buffer, so writers stall only once it is full (ConfZNS++
    /// C2/C3: a QD-1 writer beside back-to-back resets keeps its rate and
    /// p95; two or more lose about 11 ms of the flash's write rate per reset,
    /// in few long stalls). The reset completes no earlier than the hold ends.
    #[serde(default)]
    pub unmap_holds_programs: bool,
    /// With `unmap_holds_programs`, how long the hold lasts: `unmap` (the
    /// default) or `work`, the reset's whole firmware work, while which the
    /// firmware's mapping of new programs waits as well.
    #[serde(default)]
    pub hold_span: HoldSpan,
    /// With `erase_at = "async"`: host I/O goes first (erases fill idle die
    /// time); false issues the erases when the reset is accepted, queued at
    /// the dies with host work.
    #[serde(default = "default_true")]
    pub erase_preempt: bool,
}

impl Default for ResetConfig {
    fn default() -> Self {
        Self {
            erase: EraseScope::Data,
            erase_at: EraseAt::Async,
            unmap_per_lba_ns: 0,
            active_ns: 0,
            unmap_holds_programs: false,
            hold_span: HoldSpan::Unmap,
            erase_preempt: true,
        }
    }
}

/// Longest duration any one operation may take.
pub const DURATION_NS_MAX: Nanos = 3_600_000_000_000;
/// Firmware slices one finish or reset may take (each is a simulation
/// step): about ten seconds of wall-clock time at worst.
pub const MANAGEMENT_SLICES_MAX: u64 = 1 << 26;

/// Zones a namespace may have: per-zone state stays below ~100 MB.
pub const ZONES_MAX: u32 = 1 << 20;
/// Largest read buffer: read-ahead bookkeeping is per page.
pub const READ_BUFFER_BYTES_MAX: u64 = 1 << 30;
/// Chunks of one super word line (`mapping.d_zone` × `flash.planes_per_die` ×
/// `flash.oneshot_pages`). Programming, padding or copying a unit visits
/// each of its chunks, so a finish after a single 4 KiB write costs one step
/// per chunk of the super word line: about 2.5 ns each (release build; 4 Mi
/// chunks took 0.01 s), so 2^24 keep it within tens of milliseconds where
/// 3 × 2^30 took 17 s (debug build). A real one has a few hundred (the zn540 192).
pub const SUPER_ROW_CHUNKS_MAX: u64 = 1 << 24;
/// LBA slots of the page maps of one block per die on a conventional device.
/// Writes stripe over the dies and each die's open block gets its page map
/// (4 bytes a slot) whole when it opens: with 1.5 Mi pages per block, 48
/// writes of 128 KiB took 1.6 GB. 2^26 slots are 256 MiB, the scale of the
/// largest flash's per-block state (16 Mi blocks, ~200 MB); the sn640 has
/// 294,912.
pub const OPEN_BLOCK_SLOTS_MAX: u64 = 1 << 26;

/// A super word line of at most [`SUPER_ROW_CHUNKS_MAX`] chunks.
fn check_super_row_chunks(layout: &Layout) -> Result<(), ConfigError> {
    if layout.super_row_chunks <= SUPER_ROW_CHUNKS_MAX {
        return Ok(());
    }
    err(format!(
        "a super word line of {} chunks (mapping.d_zone × flash.planes_per_die × flash.oneshot_pages) is visited chunk by chunk whenever a zone's partly written unit is padded; at most {SUPER_ROW_CHUNKS_MAX}: lower flash.oneshot_pages, flash.planes_per_die or mapping.d_zone",
        layout.super_row_chunks
    ))
}

/// A configuration that cannot describe a device, with what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

fn err<T>(msg: impl Into<String>) -> Result<T, ConfigError> {
    Err(ConfigError(msg.into()))
}

/// How zones fit the flash: chip groups, blocks per plane of one block group,
/// and blocks per plane the namespace needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ZoneFit {
    pub fcgs: u32,
    pub fbg_blocks: u64,
    pub blocks_per_plane_needed: u64,
}

/// Quantities derived from a valid configuration, in the units the device uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Logical block size in bytes.
    pub lba_bytes: u64,
    /// Zone size in logical blocks.
    pub zone_lbas: u64,
    /// log2 of the zone size in logical blocks.
    pub zone_lbas_log2: u32,
    /// Zone capacity in logical blocks.
    pub zcap_lbas: u64,
    /// Zones in the namespace.
    pub zones: u32,
    /// Namespace size in logical blocks (NSZE): `zones` × `zone_lbas`, which
    /// every data command's range check compares with.
    pub nsze_lbas: u64,
    /// Conventional zones at its start.
    pub conventional_zones: u32,
    /// Logical blocks per chunk (one flash page of data).
    pub lbas_per_chunk: u64,
    /// Dies a zone is striped over (D_zone).
    pub d_zone: u32,
    /// Consecutive chunks of a zone on one die.
    pub stripe_chunks: u64,
    /// Which die a zone's stripe starts on.
    pub start_die: StartDie,
    /// How a die's chunks fill a program unit.
    pub chunk_order: ChunkOrder,
    /// Flash chip groups (dies / D_zone).
    pub fcgs: u32,
    /// Blocks per plane in one flash block group.
    pub fbg_blocks: u32,
    /// Flash block groups in each chip group.
    pub fbgs_per_fcg: u32,
    /// Chunks of one super word line: every plane and one-shot page of every die.
    pub super_row_chunks: u64,
    /// Write buffer per open zone, in bytes.
    pub zone_buffer_bytes: u64,
    /// Maximum data transfer size in logical blocks.
    pub mdts_lbas: u64,
    /// Zone Append size limit in logical blocks.
    pub zasl_lbas: u64,
}

impl Layout {
    /// The chunk that LBA offset `lbas` falls in. A chunk is a power of two
    /// of LBAs (a power-of-two page over a 512 or 4096-byte LBA): a shift,
    /// where a division costs the read path a dozen instructions.
    #[inline(always)]
    pub fn chunk_of(&self, lbas: u64) -> u64 {
        debug_assert!(self.lbas_per_chunk.is_power_of_two());
        lbas >> self.lbas_per_chunk.trailing_zeros()
    }

    /// How far LBA offset `lbas` is into its chunk (see [`Layout::chunk_of`]).
    #[inline(always)]
    pub fn offset_in_chunk(&self, lbas: u64) -> u64 {
        debug_assert!(self.lbas_per_chunk.is_power_of_two());
        lbas & (self.lbas_per_chunk - 1)
    }
}

/// Time `bytes` take at `bytes_per_s` (0 when the rate is 0, unlimited),
/// rounded up as `zonelab_sim::transfer_ns` does; saturates instead of
/// failing, so that validation can refuse a rate too slow.
fn crossing_ns(bytes: u64, bytes_per_s: u64) -> Nanos {
    match bytes_per_s {
        0 => 0,
        rate => Nanos::try_from((u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(rate))).unwrap_or(Nanos::MAX),
    }
}

impl DeviceConfig {
    /// Parses and validates a TOML device file; the error names the field.
    pub fn from_toml(text: &str) -> Result<Self, ConfigError> {
        let config: DeviceConfig = toml::from_str(text).map_err(|e| ConfigError(e.to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// The configuration as TOML, every field written out.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a device config always serialises")
    }

    /// The FTL of an NVM namespace made on this drive: the drive's own
    /// (`[conventional]`, a conventional device) or `nvm_ftl`.
    pub fn nvm_namespace_ftl(&self) -> Option<ConventionalConfig> {
        self.conventional.clone().or_else(|| self.nvm_ftl.clone())
    }

    /// Checks every parameter; returns the namespace's layout (with
    /// `[[namespaces]]`, namespace 1's).
    pub fn validate(&self) -> Result<Layout, ConfigError> {
        if !self.namespaces.is_empty() {
            return namespaces::validate(self).map(|mut layouts| layouts.swap_remove(0));
        }
        self.validate_with(false)
    }

    /// [`DeviceConfig::validate`] of one namespace; `nvm_ok`: a namespace of
    /// a shared device may have only conventional zones (an NVM namespace).
    pub(crate) fn validate_with(&self, nvm_ok: bool) -> Result<Layout, ConfigError> {
        // TOML integers are signed: a u64 above i64::MAX loads (the parser
        // takes it) but could not be shown or `--set` again.
        if let Err(e) = toml::Table::try_from(self) {
            return Err(ConfigError(format!(
                "a value is larger than {}, the largest integer a device file can hold ({e})",
                i64::MAX
            )));
        }
        self.flash.validate().map_err(|e| ConfigError(e.0))?;
        self.flash_timing.validate().map_err(|e| ConfigError(e.to_string()))?;
        let slice_bytes = self.flash_timing.plane_interleave_bytes;
        if slice_bytes != 0 && (slice_bytes < 512 || !self.flash.page_bytes.is_multiple_of(slice_bytes)) {
            return Err(ConfigError(format!(
                "flash_timing.plane_interleave_bytes = {slice_bytes} must be 0 or at least 512 and divide \
                 flash.page_bytes = {}",
                self.flash.page_bytes
            )));
        }
        self.validate_interfaces()?;
        let mut layout = self.validate_namespace(nvm_ok)?;
        check_super_row_chunks(&layout)?;
        self.validate_management_work(&layout)?;
        match &self.conventional {
            Some(c) => {
                self.check_d_zone()?;
                self.validate_conventional(c, &mut layout)?
            }
            None if self.fdp.is_some() => return err(
                "fdp: Flexible Data Placement needs a page-mapped namespace ([conventional] or command_set = \"nvm\")",
            ),
            None => self.validate_flash_fit(&mut layout)?,
        }
        if let Some(z) = &self.namespace.zrwa {
            if self.conventional.is_some() || layout.conventional_zones == layout.zones {
                return err("namespace.zrwa: a ZRWA needs sequential zones; remove [namespace.zrwa] from a conventional namespace");
            }
            z.limits(self, &layout)?;
        }
        Ok(layout)
    }

    /// Entries of the zone mapping `lbas` written LBAs take: one per LBA, or
    /// per `controller.small_lba_map_unit_bytes` below 4 KiB LBAs.
    pub(crate) fn map_units(&self, layout: &Layout, lbas: u64) -> u64 {
        let unit_bytes = self.controller.small_lba_map_unit_bytes;
        if layout.lba_bytes >= 4096 || unit_bytes <= layout.lba_bytes {
            return lbas;
        }
        (lbas * layout.lba_bytes).div_ceil(unit_bytes)
    }

    /// Time one program unit takes to cross the program data path (0 when
    /// unlimited), rounded up as `zonelab_sim::transfer_ns` does; saturates
    /// instead of failing, so that validation can refuse it.
    pub(crate) fn program_path_unit_ns(&self) -> Nanos {
        crossing_ns(self.flash.program_unit_bytes(), self.controller.program_path_bytes_per_s)
    }

    /// Time the merge of a partly filled mapping unit takes to copy a whole
    /// unit's bytes (0 without a copy rate), saturating as above.
    fn partial_unit_copy_ns_max(&self) -> Nanos {
        crossing_ns(self.controller.small_lba_map_unit_bytes, self.controller.partial_unit_bytes_per_s)
    }

    /// Every duration parameter, by TOML path.
    fn durations(&self) -> [(&'static str, Nanos); 31] {
        let (t, c, m) = (&self.flash_timing, &self.controller, &self.management);
        [
            ("flash_timing.read_ns", t.read_ns),
            ("flash_timing.program_ns", t.program_ns),
            ("flash_timing.erase_ns", t.erase_ns),
            ("controller.submit_ns", c.submit_ns),
            ("controller.complete_ns", c.complete_ns),
            ("controller.read_ns", c.read_ns),
            ("controller.write_ns", c.write_ns),
            ("controller.append_ns", c.append_ns),
            ("controller.write_zeroes_ns", c.write_zeroes_ns),
            ("controller.implicit_open_write_ns", c.implicit_open_write_ns),
            ("controller.implicit_open_append_ns", c.implicit_open_append_ns),
            ("controller.identify_ns", c.identify_ns),
            ("controller.report_ns", c.report_ns),
            ("controller.report_per_zone_ns", c.report_per_zone_ns),
            ("controller.error_ns", c.error_ns),
            ("controller.write_ftl_ns", c.write_ftl_ns),
            ("controller.write_partial_unit_ns", c.write_partial_unit_ns),
            ("controller.partial_unit_ns", c.partial_unit_ns),
            ("controller.append_partial_unit_ns", c.append_partial_unit_ns),
            ("controller.append_partial_unit_held_ns", c.append_partial_unit_held_ns),
            ("controller.append_ftl_ns", c.append_ftl_ns),
            ("controller.unit_commit_ns", c.unit_commit_ns),
            ("controller.journal_ns", c.journal_ns),
            ("controller.write_dma_start_ns", c.write_dma_start_ns),
            ("controller.checkpoint_ns", c.checkpoint_ns),
            ("controller.housekeeping_ns", c.housekeeping_ns),
            ("controller.housekeeping_period_ns", c.housekeeping_period_ns),
            ("controller.housekeeping_idle_ns", c.housekeeping_idle_ns),
            ("management.open_ns", m.open_ns),
            ("management.finish_ns", m.finish_ns),
            ("management.reset_ns", m.reset_ns),
        ]
    }

    /// The firmware work of one finish or reset runs in slices of
    /// `management.slice_ns`, one simulation step each; bounding the slices
    /// of the costliest task (a full zone) bounds the work of any command.
    fn validate_management_work(&self, layout: &Layout) -> Result<(), ConfigError> {
        let m = &self.management;
        let zcap_lbas = layout.zcap_lbas;
        let finish_ns = match m.finish.design {
            FinishDesign::Pad => m.finish_ns,
            FinishDesign::Metadata => m.finish_ns.saturating_add(m.finish.map_per_lba_ns.saturating_mul(zcap_lbas)),
        };
        let reset_ns = m
            .reset_ns
            .saturating_add(m.reset.unmap_per_lba_ns.saturating_mul(self.map_units(layout, zcap_lbas)))
            .saturating_add(m.reset.active_ns);
        for (what, work_ns) in [("finish", finish_ns), ("reset", reset_ns)] {
            let slices = work_ns.div_ceil(m.slice_ns);
            if slices > MANAGEMENT_SLICES_MAX {
                let slice_ns_min = work_ns.div_ceil(MANAGEMENT_SLICES_MAX);
                return err(format!(
                    "management.slice_ns = {} ns: the {what} of a full zone is {work_ns} ns of firmware work, \
                     {slices} slices; at most {MANAGEMENT_SLICES_MAX} are simulated per command \
                     (raise management.slice_ns to at least {slice_ns_min} ns or lower the {what} costs)",
                    m.slice_ns
                ));
            }
        }
        Ok(())
    }

    fn validate_interfaces(&self) -> Result<(), ConfigError> {
        // Bounded so that simulated time (u64 ns, 584 years) cannot overflow.
        let (m, z) = (&self.management, &self.znsplus);
        let extra = [
            ("management.close_ns", m.close_ns),
            ("management.close_written_ns", m.close_written_ns),
            ("management.offline_ns", m.offline_ns),
            ("management.slice_ns", m.slice_ns),
            ("management.finish.pause_ns", m.finish.pause_ns),
            ("management.finish.map_per_lba_ns", m.finish.map_per_lba_ns),
            ("management.reset.unmap_per_lba_ns", m.reset.unmap_per_lba_ns),
            ("management.reset.active_ns", m.reset.active_ns),
            ("znsplus.copy_ns", z.copy_ns),
            ("znsplus.copy_per_block_ns", z.copy_per_block_ns),
            ("znsplus.tl_open_ns", z.tl_open_ns),
            // A program unit's crossing of the program data path.
            ("controller.program_path_bytes_per_s (one program unit's crossing)", self.program_path_unit_ns()),
            // A partial-unit merge copies less than a unit's bytes.
            ("controller.partial_unit_bytes_per_s (one mapping unit's copy)", self.partial_unit_copy_ns_max()),
            (
                "controller.partial_unit_held_bytes_per_s (one mapping unit's earlier pieces)",
                crossing_ns(self.controller.small_lba_map_unit_bytes, self.controller.partial_unit_held_bytes_per_s),
            ),
            // The largest write's data at one command's DMA pace.
            (
                "controller.write_dma_bytes_per_s (one largest write's data)",
                crossing_ns(self.namespace.mdts_bytes, self.controller.write_dma_bytes_per_s),
            ),
        ];
        for (name, ns) in self.durations().into_iter().chain(extra) {
            if ns > DURATION_NS_MAX {
                return err(format!("{name} = {ns} ns is longer than one hour ({DURATION_NS_MAX} ns)"));
            }
        }
        if m.slice_ns == 0 {
            return err("management.slice_ns must be positive: management work advances in slices of it");
        }
        if m.finish.design == FinishDesign::Pad && m.finish.pad_bytes == 0 {
            return err("management.finish.pad_bytes must be positive with management.finish.design = \"pad\"");
        }
        if m.finish.pad_bytes > 1 << 30 {
            return err(format!("management.finish.pad_bytes = {} is larger than 1 GiB", m.finish.pad_bytes));
        }
        if self.link.lanes == 0 || self.link.lane_bytes_per_s == 0 {
            return err("link.lanes and link.lane_bytes_per_s must be positive");
        }
        if z.copy_blocks_max == 0 || z.copy_blocks_max > COPY_BLOCKS_MAX {
            return err(format!(
                "znsplus.copy_blocks_max = {} must be between 1 and {COPY_BLOCKS_MAX}",
                z.copy_blocks_max
            ));
        }
        if z.copy_ranges_max == 0 || z.copy_ranges_max > z.copy_blocks_max {
            return err(format!(
                "znsplus.copy_ranges_max = {} must be between 1 and znsplus.copy_blocks_max = {} (each range holds a block)",
                z.copy_ranges_max, z.copy_blocks_max
            ));
        }
        let c = &self.controller;
        if c.read_ahead_bytes > c.read_buffer_bytes || c.read_buffer_bytes > READ_BUFFER_BYTES_MAX {
            return err(format!(
                "controller.read_ahead_bytes = {} must be at most controller.read_buffer_bytes = {}, \
                 which must be at most {READ_BUFFER_BYTES_MAX} (1 GiB)",
                c.read_ahead_bytes, c.read_buffer_bytes
            ));
        }
        let streams_max = crate::controller::read_ahead::READ_AHEAD_STREAMS_MAX;
        if !(1..=streams_max).contains(&c.read_ahead_streams) {
            return err(format!(
                "controller.read_ahead_streams = {} must be from 1 to {streams_max}",
                c.read_ahead_streams
            ));
        }
        let unit = c.small_lba_map_unit_bytes;
        if unit != 0 && (!unit.is_power_of_two() || !(4096..=u64::from(self.flash.page_bytes)).contains(&unit)) {
            return err(format!(
                "controller.small_lba_map_unit_bytes = {unit} must be 0 (off) or a power of two from 4096 to the page size ({})",
                self.flash.page_bytes
            ));
        }
        if c.append_partial_unit_held_ns > c.append_partial_unit_ns {
            return err(format!(
                "controller.append_partial_unit_held_ns = {} must be at most controller.append_partial_unit_ns = {} \
                 (it is the part of that merge the append waits for)",
                c.append_partial_unit_held_ns, c.append_partial_unit_ns
            ));
        }
        if c.housekeeping_ns > c.housekeeping_period_ns {
            return err(format!(
                "controller.housekeeping_ns = {} must be at most controller.housekeeping_period_ns = {} \
                 (a task runs once per period; 0 turns housekeeping off)",
                c.housekeeping_ns, c.housekeeping_period_ns
            ));
        }
        if self.controller.firmware_cores == 0 || self.controller.firmware_cores > 64 {
            return err(format!(
                "controller.firmware_cores = {} must be between 1 and 64",
                self.controller.firmware_cores
            ));
        }
        Ok(())
    }

    fn validate_namespace(&self, nvm_ok: bool) -> Result<Layout, ConfigError> {
        let ns = &self.namespace;
        if ns.lba_bytes != 512 && ns.lba_bytes != 4096 {
            return err(format!("namespace.lba_bytes = {} is not an LBA format: use 512 or 4096", ns.lba_bytes));
        }
        let lba = u64::from(ns.lba_bytes);
        if ns.zones == 0 || ns.zones > ZONES_MAX {
            return err(format!("namespace.zones = {} must be between 1 and {ZONES_MAX}", ns.zones));
        }
        let all_conventional_allowed = (nvm_ok || self.conventional.is_some()) && ns.conventional_zones == ns.zones;
        if ns.conventional_zones >= ns.zones && !all_conventional_allowed {
            return err(format!(
                "namespace.conventional_zones = {} leaves no sequential zone of namespace.zones = {}: lower it below {}",
                ns.conventional_zones, ns.zones, ns.zones
            ));
        }
        if !ns.zone_size_bytes.is_multiple_of(lba) || !(ns.zone_size_bytes / lba).is_power_of_two() {
            return err(format!(
                "namespace.zone_size_bytes = {} is not a power of two number of {lba}-byte LBAs: use e.g. {}",
                ns.zone_size_bytes,
                (ns.zone_size_bytes.max(lba) / lba).next_power_of_two() * lba
            ));
        }
        if ns.zone_capacity_bytes == 0 || !ns.zone_capacity_bytes.is_multiple_of(lba) {
            return err(format!(
                "namespace.zone_capacity_bytes = {} must be a positive multiple of the LBA size {lba}",
                ns.zone_capacity_bytes
            ));
        }
        if ns.zone_capacity_bytes > ns.zone_size_bytes {
            return err(format!(
                "namespace.zone_capacity_bytes = {} exceeds namespace.zone_size_bytes = {}: capacity must be at most the zone size",
                ns.zone_capacity_bytes, ns.zone_size_bytes
            ));
        }
        if ns.max_open_zones > 0 && ns.max_active_zones > 0 && ns.max_open_zones > ns.max_active_zones {
            return err(format!(
                "namespace.max_open_zones = {} exceeds namespace.max_active_zones = {}: an open zone is also active, so MOR must be <= MAR",
                ns.max_open_zones, ns.max_active_zones
            ));
        }
        if ns.max_open_zones == 0 && ns.max_active_zones > 0 {
            return err("namespace.max_open_zones = 0 (unlimited) with a limited namespace.max_active_zones: MOR must be <= MAR, so limit max_open_zones too");
        }
        if ns.mdts_bytes < lba || !ns.mdts_bytes.is_multiple_of(lba) {
            return err(format!(
                "namespace.mdts_bytes = {} must be a positive multiple of the LBA size {lba}",
                ns.mdts_bytes
            ));
        }
        if !ns.zasl_bytes.is_multiple_of(lba) || ns.zasl_bytes > ns.mdts_bytes {
            return err(format!(
                "namespace.zasl_bytes = {} must be a multiple of the LBA size {lba} and at most namespace.mdts_bytes = {} (0 means MDTS)",
                ns.zasl_bytes, ns.mdts_bytes
            ));
        }
        let page = u64::from(self.flash.page_bytes);
        if page < lba {
            return err(format!("flash.page_bytes = {page} is smaller than namespace.lba_bytes = {lba}"));
        }
        let zone_lbas = ns.zone_size_bytes / lba;
        let Some(nsze_lbas) = zone_lbas.checked_mul(u64::from(ns.zones)).filter(|&t| t <= 1 << 48) else {
            return err("namespace.zones × zone size exceeds 2^48 LBAs");
        };
        let g = &self.flash;
        Ok(Layout {
            lba_bytes: lba,
            zone_lbas,
            zone_lbas_log2: zone_lbas.trailing_zeros(),
            zcap_lbas: ns.zone_capacity_bytes / lba,
            zones: ns.zones,
            nsze_lbas,
            conventional_zones: ns.conventional_zones,
            lbas_per_chunk: page / lba,
            d_zone: self.mapping.d_zone,
            stripe_chunks: u64::from(self.mapping.stripe_chunks),
            start_die: self.mapping.start_die,
            chunk_order: self.mapping.chunk_order,
            fcgs: 0,
            fbg_blocks: 0,
            fbgs_per_fcg: 0,
            super_row_chunks: u64::from(self.mapping.d_zone)
                .saturating_mul(u64::from(g.planes_per_die))
                .saturating_mul(u64::from(g.oneshot_pages)),
            zone_buffer_bytes: self.write_buffer.zone_buffer_bytes,
            mdts_lbas: ns.mdts_bytes / lba,
            zasl_lbas: if ns.zasl_bytes == 0 { ns.mdts_bytes / lba } else { ns.zasl_bytes / lba },
        })
    }

    /// Bytes a shared write buffer needs so that every active zone can hold
    /// the data that completes its first program unit: a unit-wide stripe
    /// completes one unit at a time, page striping only near the end of a
    /// super word line.
    fn device_pool_min_bytes(&self, layout: &Layout) -> u64 {
        let unit_chunks = u64::from(self.flash.planes_per_die) * u64::from(self.flash.oneshot_pages);
        let s = layout.stripe_chunks.max(1);
        let first_unit_chunks = (unit_chunks / s - 1) * s * u64::from(layout.d_zone) + s;
        let active = match self.namespace.max_active_zones {
            0 => self.namespace.zones,
            m => m,
        };
        first_unit_chunks.saturating_mul(u64::from(self.flash.page_bytes)).saturating_mul(u64::from(active))
    }

    /// How the namespace's zones fit the flash, or None when D_zone does not
    /// divide the dies or the geometry is degenerate (validation says which).
    pub(crate) fn zone_fit(&self) -> Option<ZoneFit> {
        let g = &self.flash;
        let (dies, d) = (g.dies_total(), self.mapping.d_zone);
        let row_bytes = u64::from(d).saturating_mul(u64::from(g.planes_per_die)).saturating_mul(g.block_bytes());
        if d == 0 || dies == 0 || !dies.is_multiple_of(d) || row_bytes == 0 {
            return None;
        }
        let fcgs = dies / d;
        // A block group is as many blocks per plane as the zone capacity needs.
        let fbg_blocks = self.namespace.zone_capacity_bytes.div_ceil(row_bytes).max(1);
        let zones_per_fcg = u64::from(self.namespace.zones).div_ceil(u64::from(fcgs));
        Some(ZoneFit { fcgs, fbg_blocks, blocks_per_plane_needed: zones_per_fcg.saturating_mul(fbg_blocks) })
    }

    /// A conventional device: every zone conventional, and flash left over
    /// (over-provisioning) beyond the namespace for garbage collection.
    fn validate_conventional(&self, c: &ConventionalConfig, layout: &mut Layout) -> Result<(), ConfigError> {
        let ns = &self.namespace;
        if ns.conventional_zones != ns.zones {
            return err(format!(
                "a [conventional] device has only conventional zones: set namespace.conventional_zones = namespace.zones = {}",
                ns.zones
            ));
        }
        if c.gc_free_blocks_min < 2 || c.gc_free_blocks_target <= c.gc_free_blocks_min {
            return err(format!(
                "conventional.gc_free_blocks_min = {} must be at least 2 (one block to collect into) and below conventional.gc_free_blocks_target = {}",
                c.gc_free_blocks_min, c.gc_free_blocks_target
            ));
        }
        Self::validate_background_gc(c)?;
        let g = &self.flash;
        // Before any sum of sizes: a flash of 2^32 LBAs or more could overflow them.
        if g.raw_bytes() / layout.lba_bytes >= u64::from(u32::MAX) {
            return err(
                "a conventional device's flash must hold fewer than 2^32 LBAs (page mapping uses 32-bit slots)",
            );
        }
        self.check_conventional_buffers(layout)?;
        // FDP: each handle and collection stream beyond the two every FTL
        // has (host, GC) holds another open block on every die.
        let open_blocks_extra = match &self.fdp {
            Some(f) => {
                f.validate(g, self.write_buffer.zone_buffer_bytes)?;
                f.open_blocks_per_die() - 2
            }
            None => 0,
        };
        let user_bytes = layout.zone_lbas * u64::from(ns.zones) * layout.lba_bytes;
        let reserve_bytes = u64::from(g.dies_total())
            .saturating_mul(u64::from(c.gc_free_blocks_target + open_blocks_extra))
            .saturating_mul(g.block_bytes())
            .saturating_mul(u64::from(g.planes_per_die));
        if user_bytes.saturating_add(reserve_bytes) >= g.raw_bytes() {
            return err(format!(
                "the namespace ({user_bytes} bytes) plus the GC reserve ({reserve_bytes} bytes) does not fit the {} bytes of flash: lower namespace.zones or add flash",
                g.raw_bytes()
            ));
        }
        layout.fcgs = 1;
        layout.fbg_blocks = 1;
        layout.fbgs_per_fcg = g.blocks_per_plane.max(ns.zones);
        Ok(())
    }

    /// A conventional device takes host data into a shared buffer a program
    /// unit at a time, and maps the LBA slots of a die's open block whole.
    fn check_conventional_buffers(&self, layout: &Layout) -> Result<(), ConfigError> {
        let g = &self.flash;
        let unit_bytes = g.program_unit_bytes();
        if self.write_buffer.zone_buffer_bytes < unit_bytes {
            return err(format!(
                "write_buffer.zone_buffer_bytes = {} cannot hold one program unit ({unit_bytes} bytes = planes × oneshot_pages × page_bytes), so no program could start: raise it to at least {unit_bytes}",
                self.write_buffer.zone_buffer_bytes
            ));
        }
        let slots_per_block = u64::from(g.planes_per_die) * g.block_bytes() / layout.lba_bytes;
        let slots = slots_per_block.saturating_mul(u64::from(g.dies_total()));
        if slots > OPEN_BLOCK_SLOTS_MAX {
            let pages_max = (OPEN_BLOCK_SLOTS_MAX / u64::from(g.dies_total()) * layout.lba_bytes
                / (u64::from(g.planes_per_die) * u64::from(g.page_bytes)))
                / u64::from(g.oneshot_pages)
                * u64::from(g.oneshot_pages);
            return err(format!(
                "flash.pages_per_block = {}: a block of every die holds {slots} LBA slots, whose page maps (4 bytes a slot) are allocated as writes open the blocks; at most {OPEN_BLOCK_SLOTS_MAX} (256 MiB): use at most {pages_max} pages per block, or fewer dies",
                g.pages_per_block
            ));
        }
        Ok(())
    }

    fn validate_background_gc(c: &ConventionalConfig) -> Result<(), ConfigError> {
        let (start, units) = (c.gc_free_blocks_start, c.gc_units_per_host_unit_max);
        if (start == 0) != (units == 0) {
            return err(format!(
                "conventional.gc_free_blocks_start = {start} and conventional.gc_units_per_host_unit_max = {units}: set both (background garbage collection) or neither"
            ));
        }
        if start != 0 && start <= c.gc_free_blocks_min {
            return err(format!(
                "conventional.gc_free_blocks_start = {start} must be above conventional.gc_free_blocks_min = {} (background collection starts before the host has to wait)",
                c.gc_free_blocks_min
            ));
        }
        if units > 64 {
            return err(format!("conventional.gc_units_per_host_unit_max = {units} must be at most 64"));
        }
        if c.write_order_window == 1 || c.write_order_window > WRITE_ORDER_WINDOW_MAX {
            return err(format!(
                "conventional.write_order_window = {}: 0 (arrival order) or 2 to {WRITE_ORDER_WINDOW_MAX} (one of that many oldest waiting writes at random)",
                c.write_order_window
            ));
        }
        Ok(())
    }

    /// D_zone splits the dies into equal flash chip groups; a conventional
    /// device keeps the zone mapping too (identify_mapping reports it).
    fn check_d_zone(&self) -> Result<(), ConfigError> {
        let (dies, d) = (self.flash.dies_total(), self.mapping.d_zone);
        if d == 0 || !dies.is_multiple_of(d) {
            return err(format!(
                "mapping.d_zone = {d} must divide the {dies} dies (flash.channels × chips_per_channel × dies_per_chip) into equal flash chip groups"
            ));
        }
        let (s, unit_chunks) = (self.mapping.stripe_chunks, self.flash.planes_per_die * self.flash.oneshot_pages);
        if s == 0 || unit_chunks == 0 || !unit_chunks.is_multiple_of(s) {
            return err(format!(
                "mapping.stripe_chunks = {s} must divide the {unit_chunks} chunks of a program unit (flash.planes_per_die × oneshot_pages): use 1 (page by page) up to {unit_chunks} (a whole unit per die)"
            ));
        }
        Ok(())
    }

    fn validate_flash_fit(&self, layout: &mut Layout) -> Result<(), ConfigError> {
        let g = &self.flash;
        self.check_d_zone()?;
        let Some(fit) = self.zone_fit() else {
            return err("the flash geometry leaves no room for a zone (a zero-sized plane row)");
        };
        let ZoneFit { fcgs, fbg_blocks, blocks_per_plane_needed: need } = fit;
        let fbgs_per_fcg = u64::from(g.blocks_per_plane) / fbg_blocks;
        if u64::from(g.blocks_per_plane) < need {
            return err(format!(
                "the flash holds {} flash block groups of {} block(s) per plane but the namespace has {} zones: raise flash.blocks_per_plane to at least {need} or lower namespace.zones",
                fbgs_per_fcg * u64::from(fcgs),
                fbg_blocks,
                self.namespace.zones
            ));
        }
        let super_row_bytes = layout.super_row_chunks.saturating_mul(u64::from(g.page_bytes));
        if self.write_buffer.zone_buffer_bytes < super_row_bytes {
            return err(format!(
                "write_buffer.zone_buffer_bytes = {} cannot hold one super word line ({super_row_bytes} bytes = d_zone × planes × oneshot_pages × page_bytes), so no program could start: raise it to at least {super_row_bytes}",
                self.write_buffer.zone_buffer_bytes
            ));
        }
        let pool_min_bytes = self.device_pool_min_bytes(layout);
        let pool_bytes = self.write_buffer.device_buffer_bytes;
        if pool_bytes != 0 && pool_bytes < pool_min_bytes {
            return err(format!(
                "write_buffer.device_buffer_bytes = {pool_bytes} cannot hold the first program unit of each of the {} active zones ({pool_min_bytes} bytes), so writers could wait for each other for ever: use 0 (no device-wide limit) or at least {pool_min_bytes}",
                self.namespace.max_active_zones.max(1)
            ));
        }
        layout.fcgs = fcgs;
        layout.fbg_blocks = u32::try_from(fbg_blocks).expect("fbg blocks fit the blocks per plane");
        layout.fbgs_per_fcg = u32::try_from(fbgs_per_fcg).expect("bounded by blocks per plane");
        Ok(())
    }
}
