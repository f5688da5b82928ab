//! Built-in device presets.
//!
//! `zn540`: Western Digital Ultrastar DC ZN540 1 TB (seed 000 Tab. II). The
//! flash organisation is not published; this one is chosen so that the known
//! numbers follow from it: 16 dies of BiCS4-like TLC (4 planes, 16 KiB pages,
//! 1152 pages = 96 layers × 4 strings × 3 bits per block). A zone's block group
//! is one block per plane on all 16 dies, 1152 MiB, of which the 1077 MiB zone
//! capacity is exactly 359 super word lines of 3 MiB (the rest holds the
//! die-level parity and metadata real drives keep). Timings are a first cut
//! from the QD-1 latencies of seed 000 Obs 2-4 and 9.
//!
//! `tlc`, `mlc`, `znand`: the ZNS+ emulated SSD of seed 002 Table 2: 8
//! channels × 2 ways, one die and one plane per chip, 16 KiB pages, 128 pages
//! per block, D_zone = 16 (32 MiB zones), PCIe Gen2 × 2. Their channel
//! bandwidth is set so that one 16 KiB page crosses in Table 2's DMA time
//! (24 µs for TLC and MLC: 682.7 MB/s; 3.4 µs for ZNAND: 4.82 GB/s); then
//! copyback (read + program) against read + 2 transfers + program gives the
//! normalized copyback latencies 0.94 / 0.90 / 0.94 without further tuning.

use crate::config::namespaces::{CommandSet, NamespaceEntry};
use crate::config::*;
use zonelab_flash::{Geometry, Timing};
use zonelab_sim::{MS, US};

/// The built-in devices, by the name `--device` takes.
pub const PRESET_NAMES: [&str; 7] = ["zn540", "zn540-seed001", "sn640", "zn540-fdp", "tlc", "mlc", "znand"];

/// What built-in device `name` is, in one line (`zonelab device list`).
pub fn preset_description(name: &str) -> Option<&'static str> {
    Some(match name {
        "zn540" => "Western Digital Ultrastar DC ZN540 1 TB: a ZNS SSD, 904 zones of 1077 MiB (seed 000)",
        "zn540-seed001" => {
            "the ZN540 as seed 001 set it up: a 100 GiB zoned namespace (NSID 1) and a 4 GiB conventional one (NSID 2)"
        }
        "sn640" => "the ZN540's flash as a conventional SSD (page-mapped FTL, garbage collection), like the SN640",
        "zn540-fdp" => {
            "sn640 with Flexible Data Placement: 8 initially isolated reclaim unit handles, one reclaim group, 1152 MiB reclaim units"
        }
        "tlc" => "the ZNS+ paper's emulated TLC SSD: 16 dies, 32 MiB zones, PCIe Gen2 x2 (seed 002 Table 2)",
        "mlc" => "the ZNS+ paper's emulated MLC SSD: tlc's organisation with MLC timings (seed 002 Table 2)",
        "znand" => "the ZNS+ paper's emulated Z-NAND SSD: fast reads and programs, a faster channel (seed 002 Table 2)",
        _ => return None,
    })
}

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;
const GIB: u64 = 1024 * MIB;

/// The configuration of built-in device `name` (one of [`PRESET_NAMES`]).
pub fn preset(name: &str) -> Option<DeviceConfig> {
    match name {
        "zn540" => Some(zn540()),
        "zn540-seed001" => {
            let mut c = with_seed001_namespaces(zn540()).expect("the zn540 holds seed 001's namespaces");
            c.name = "zn540-seed001".into();
            Some(c)
        }
        "sn640" => Some(sn640()),
        "zn540-fdp" => Some(zn540_fdp()),
        "tlc" => Some(znsplus(
            "tlc",
            Timing {
                read_ns: 60 * US,
                program_ns: 700 * US,
                erase_ns: 3_500 * US,
                channel_bytes_per_s: 682_666_667,
                suspend: Suspend::OFF,
                program_spread_ns: 0,
                read_step_ns: 0,
                plane_interleave_bytes: 0,
                read_decode_bytes_per_s: 0,
                die_sense_ns: 0,
            },
        )),
        "mlc" => Some(znsplus(
            "mlc",
            Timing {
                read_ns: 35 * US,
                program_ns: 390 * US,
                erase_ns: 3 * MS,
                channel_bytes_per_s: 682_666_667,
                suspend: Suspend::OFF,
                program_spread_ns: 0,
                read_step_ns: 0,
                plane_interleave_bytes: 0,
                read_decode_bytes_per_s: 0,
                die_sense_ns: 0,
            },
        )),
        "znand" => Some(znsplus(
            "znand",
            Timing {
                read_ns: 3 * US,
                program_ns: 100 * US,
                erase_ns: MS,
                channel_bytes_per_s: 4_818_823_530,
                suspend: Suspend::OFF,
                program_spread_ns: 0,
                read_step_ns: 0,
                plane_interleave_bytes: 0,
                read_decode_bytes_per_s: 0,
                die_sense_ns: 0,
            },
        )),
        _ => None,
    }
}

fn zn540() -> DeviceConfig {
    DeviceConfig {
        name: "zn540".into(),
        mode: Mode::Metadata,
        namespace: NamespaceConfig {
            lba_bytes: 4096,
            zones: 904,
            conventional_zones: 0,
            zone_size_bytes: 2 * GIB,
            zone_capacity_bytes: 1077 * MIB,
            max_open_zones: 14,
            max_active_zones: 14,
            zasl_bytes: 0,
            mdts_bytes: 128 * KIB,
            cross_zone_read: false,
            zrwa: None,
        },
        // Each die takes a whole program unit of a zone in turn, and zones
        // written together start on dies far apart, so at the flash's limit
        // room in the shared write buffer comes back one unit at a time
        // (ConfZNS++ C2/C4: 4-7 QD-1 writers have a p95 twice their mean).
        mapping: MappingConfig {
            d_zone: 16,
            stripe_chunks: 12,
            zone_mapping: ZoneMapping::Static,
            start_die: StartDie::Rotate,
            chunk_order: ChunkOrder::PagesFirst,
        },
        flash: Geometry {
            channels: 8,
            chips_per_channel: 2,
            dies_per_chip: 1,
            planes_per_die: 4,
            blocks_per_plane: 916,
            pages_per_block: 1152,
            page_bytes: 16384,
            oneshot_pages: 3,
        },
        // 16 dies × 192 KiB per 2.3 ms one-shot program = 1.37 GB/s: the
        // dies keep up with the program data path (controller, below),
        // which sets the device's write limit (seed 000 Obs 8).
        flash_timing: Timing {
            read_ns: 70 * US,
            program_ns: 2_300 * US,
            erase_ns: 3_500 * US,
            channel_bytes_per_s: 1_200_000_000,
            // Reads suspend programs and erases (seed 003: reads under a
            // finish's padding lose far less than a program's worth), at the
            // end of the current 200 µs pulse-and-verify loop (ConfZNS++ C3:
            // 8 KiB reads at QD 1-4 beside unthrottled finishes, whose padding
            // keeps every die programming, have a p95 of 346-379 µs against
            // 98 µs alone; beside appends at 10-50% intensity 198-232 µs).
            // Reads also go ahead of programs queued behind (a die always has
            // some under a unit-wide stripe at the flash's limit). Up to 16
            // suspensions per program (reads at QD 16-64 beside appends keep
            // a p95 under 1.3 ms, not a whole program's wait).
            suspend: Suspend {
                suspend_ns: 25 * US,
                resume_ns: 25 * US,
                per_op_max: 16,
                step_ns: 200 * US,
                read_priority: true,
                batch_reads: true,
            },
            // Each word line's tPROG within ±80 µs (a fixed function of die,
            // block and page): `zonelab calibrate` keeps more tail rows
            // within ±25% at ±70-90 µs than at ±60 (+7, +9, +7 of 1111) and
            // loses 24 at ±40 (docs/calibrate.md, session 51).
            program_spread_ns: 80 * US,
            read_step_ns: 6 * US,
            // 8 KiB random reads saturate as over 32 servers of one tR, 4 KiB
            // ones as over about 64 (ConfZNS++ C2, ZNS-Study): 4 KiB slices
            // over 4 planes, so an 8 KiB read holds two.
            plane_interleave_bytes: 4 * 1024,
            // The controller takes read data in at 4 GB/s, about what the
            // link carries: ZNS-Study's 2-14 QD-1 readers, which each move a
            // whole 16 KiB page per 4 KiB read, lose 2.1 µs per read for
            // each reader added (mean 44.4 µs with two, 69.9 with fourteen).
            read_decode_bytes_per_s: 4_000_000_000,
            // A die starts a sense at most every 32 µs (of tR's 70): near
            // the firmware core's limit (416 K/s) reads queue on the die they
            // land on, and their latencies spread (CLUSTER'23 Fig 4a, 4 KiB
            // random reads at QD 64, 128, 256: p95 387, 766, 1204 µs against
            // means of 175, 301, 585). The most the rate allows: past half
            // the shortest tR (32 µs) the rate steps down to 384 K/s, and
            // seed 000 Obs 7's 424 K/s at QD 128 is lost (docs/device-model.md).
            // Reads inside a program's suspension keep its own order (`suspend`).
            die_sense_ns: 32 * US,
        },
        link: LinkConfig { lanes: 4, lane_bytes_per_s: 985_000_000 },
        controller: ControllerConfig {
            firmware_cores: 1,
            submit_ns: 2_400,
            complete_ns: 2_520,
            read_ns: 2_400,
            write_ns: 5_400,
            append_ns: 7_000,
            write_zeroes_ns: 5_400,
            implicit_open_write_ns: 2_020,
            implicit_open_append_ns: 2_830,
            identify_ns: 20 * US,
            report_ns: 10 * US,
            report_per_zone_ns: 100,
            error_ns: 1_000,
            write_ftl_ns: 3_500,
            // The firmware core lets a write go once its FTL stage starts,
            // so a write holds the firmware core 1.9 µs and the FTL core
            // 3.5 µs: 8 KiB writers at the flash's limit (147-150 K/s) wait
            // for buffer room, not for a core (ConfZNS++ C2: five to nine
            // QD-1 writers have a p10 of 17-22 µs, near one writer's 15).
            write_ftl_pipelined: true,
            // A 4 KiB write fills half an 8 KiB mapping unit, which the FTL
            // merges after it (as it does a 4 KiB append's, below): 4 KiB
            // writes to several zones stop at 180-186 K/s (seed 000 Obs 7,
            // CLUSTER'23 Fig 4b), each taking 1.6 µs more of the FTL core
            // than an 8 KiB one.
            write_partial_unit_ns: 1_600,
            read_ahead_bytes: 256 * KIB,
            read_buffer_bytes: 8 * MIB,
            // One stream at a time: ZNS-Study's 2-14 QD-1 readers of their own
            // zones read no 4 KiB block in under 26 µs (one reader: 98% in 10-20 µs).
            read_ahead_streams: 1,
            small_lba_map_unit_bytes: 8 * KIB,
            // The merge of a partly filled unit takes in what the write
            // brought and what the unit held before: 27 µs after a 4 KiB
            // write into an empty unit (ZNS-Study: 4 KiB writes in the 512 B
            // format at 39-50 K/s), 12.9-31.1 µs after a 512 B one as the
            // unit fills, 22 on average (CLUSTER'23 Fig 2: 512 B-2 KiB
            // writes at QD 1 run at 40-42 K/s; the SPDK run's 512 B writes
            // spread from 13 to 29 µs between their p10 and p80).
            partial_unit_ns: 10_900,
            partial_unit_bytes_per_s: 254_000_000,
            partial_unit_held_bytes_per_s: 394_000_000,
            // Every 4 KiB append merges its half of a unit: 4 KiB appends stop
            // at 132-138 K/s in one zone or eight, 8 KiB ones at the flash's
            // limit with bursts a few µs apart (seed 000 Fig 8, ConfZNS++ C2:
            // p50 0.8 of the mean, p95 twice it).
            append_partial_unit_ns: 5_300,
            // Of that merge, an append waits 1.6 µs before it completes: 4
            // KiB appends at QD 1 take 14.66 µs against 14.02 for 8 KiB ones,
            // every one alike (CLUSTER'23's per-append logs: odd and even
            // appends 14.64 and 14.67 µs on average; seed 000 Obs 3: 66 K/s).
            append_partial_unit_held_ns: 1_600,
            append_ftl_ns: 2_000,
            // Committing each finished 192 KiB unit holds the FTL core 12 µs:
            // at the flash's limit (a unit ends every 160 µs) one write in ten
            // or so waits for a commit (ConfZNS++ C2: three QD-1 writers or
            // QD-3 appends have a p95 of 30-33 µs against 19 µs at QD 1). One
            // due while commands are in the drive runs after the command that
            // finds it due, so a lone QD-1 stream waits only for its rest
            // (CLUSTER'23's SPDK writes: p99 13.5-17 µs against a p50 of
            // 10.6-14.1).
            unit_commit_ns: 12 * US,
            // A write waiting for buffer room holds up the commands behind
            // it: reads sent behind 128 MiB of queued appends take 95 ms
            // (seed 000 Obs 11, the study's fio output).
            in_order: true,
            // Programs start one 192 KiB crossing (140 µs) apart, every 30
            // units the mapping journal holds the path 600 µs, and every 25th
            // journal write is a checkpoint of the whole table that holds it
            // 2.5 ms (every 141 MiB): 1.21 GB/s (measured 1146-1147 MiB/s,
            // seed 000 Fig 8). Room in the buffer comes back at that even
            // pace, so 4-9 QD-1 writers at the limit each wait a little,
            // often (ConfZNS++ C2: p95 2.1-2.4 times the mean); one zone's
            // appends at QD 16-128 see the journal's pause (seed 000 Fig 8:
            // p95 1.5-2.3 times the mean), and with 2-16 MiB queued, the
            // checkpoint's (p99 1.7-2.9 ms above the median).
            program_path_bytes_per_s: 1_400_000_000,
            // One write's data starts coming in 3 µs after the controller
            // takes the command, while its firmware runs, at 2.35 GB/s: the
            // ZN540's SPDK writes at QD 1 have a median of 15.2, 21.9, 36.6
            // and 64.3 µs at 16, 32, 64 and 128 KiB (CLUSTER'23's artifact),
            // about 8 µs plus their bytes at that pace (here 3 µs before the
            // data, 5 µs of completion after it). From 32 KiB on a QD-1
            // stream comes faster than the flash takes it and waits for room
            // now and then, as the drive's does (p95 34, 125 and 268 µs).
            write_dma_bytes_per_s: 2_350_000_000,
            write_dma_start_ns: 3 * US,
            // An append's data waits for its firmware (7 µs): its QD-1
            // medians of 19.1, 26.2, 40.7 and 69.1 µs at 16-128 KiB are the
            // writes' plus about 4 µs (CLUSTER'23's artifact), and at 32 KiB
            // it stays within the flash's limit (p99 33 µs against the
            // writes' 84.5).
            append_data_after_firmware: true,
            journal_units: 30,
            journal_ns: 600 * US,
            checkpoint_journals: 25,
            checkpoint_ns: 2_500 * US,
            // After a second idle, 2.3-2.9% of closes and writes take 3-14 µs
            // longer, evenly over that range, and commands sent back to back
            // never do (CLUSTER'23's open/close benchmark, run 2): a 14 µs
            // task every 410 µs once the drive has been idle for 10 ms (the
            // threshold is a choice: the data put it between the µs between
            // back-to-back commands and the benchmark's second).
            housekeeping_ns: 14 * US,
            housekeeping_period_ns: 410 * US,
            housekeeping_idle_ns: 10 * MS,
        },
        // 6 MiB per zone, drawn from 6 MiB the zones share. A program
        // unit's data (192 KiB) leaves the shared pool once it has crossed
        // to its die, and the zones waiting for room take it in no
        // particular order: N QD-1 8 KiB writers at the flash's limit wait
        // like a floor plus an exponential (ConfZNS++ C2, N = 6: p10 17.8,
        // p50 25.5, p95 84.5 µs), not each the mean; room coming back a
        // unit at a time gives the drive's step from N = 3 to 4 (p95 30 to
        // 63 µs), which a page at a time smooths out (28 to 49).
        write_buffer: WriteBufferConfig {
            device_buffer_bytes: 6 * MIB,
            room_order: RoomOrder::Random,
            pool_release: PoolRelease::UnitCrossed,
            ..WriteBufferConfig::plp(6 * MIB)
        },
        // Finish pads the rest of the zone one program unit (192 KiB) at a
        // time, each once its die is idle or when its turn among the zones
        // being programmed comes (beside N writers at the flash's limit it
        // gets 1/(N+1) of it, ConfZNS++ C2 Fig 4a): 890 ms for a zone
        // holding one page (measured: 907.51), 3.1 ms (the last unit's
        // program plus the 600 µs mapping update) for one holding all but
        // one (seed 000 Obs 10: 3.07); a zone opened with nothing written only
        // changes state (14 µs). Reset unmaps 53 ns per written LBA after
        // a 1.55 ms base (CLUSTER'23 Fig 5: finished zones reset in 1.59 ms
        // empty to 15.3 ms at all but one LBA, a full one in 16.19 ms), plus
        // 3 ms to tear down an unfinished zone's open blocks once it has any
        // (Obs 10: a finished half-full zone resets 3.08 ms faster); an empty zone's
        // reset is free. Erases wait for the next program; host commands slow
        // resets down by taking the FTL core (Obs 13), management taking its
        // idle time in 1 µs slices (a QD-1 writer keeps its rate beside
        // resets, ConfZNS++ C3). While a reset's firmware works (base,
        // unmapping, teardown: 16.2 ms of work for a full zone), the write
        // path starts no program: writers lose the flash's rate in few long
        // stalls once the buffer is full. Three to seven 8 KiB writers beside
        // back-to-back resets (22.5 ms each) run at 74 K/s (ConfZNS++ C3): the
        // 6.3 ms left of each plus the 6 MiB the buffer takes in; a hold of
        // the unmapping alone (14.6 ms) would leave them 87 K/s.
        management: ManagementConfig {
            open_ns: 4_640,
            close_ns: 6_090,
            close_written_ns: 4_100,
            finish_ns: 600 * US,
            reset_ns: 1_550 * US,
            offline_ns: 10 * US,
            host_priority: true,
            slice_ns: 1_000,
            turn_ns: 0,
            // k reset jobs kept queued: p95 2.0, 4.0, 7.9 and 13.7 services
            // at k = 2, 3, 5 and 9 (ConfZNS++ C3), what rounds in a random
            // order give (2, 4, 8, 14); arrival order would give k.
            order: ServiceOrder::Rounds,
            finish: FinishConfig {
                design: FinishDesign::Pad,
                pad_bytes: 192 * KIB,
                pause_ns: 0,
                preempt: true,
                pad_empty: false,
                pad_turns: true,
                map_per_lba_ns: 0,
            },
            reset: ResetConfig {
                erase: EraseScope::Data,
                erase_at: EraseAt::Deferred,
                unmap_per_lba_ns: 53,
                active_ns: 3_000 * US,
                unmap_holds_programs: true,
                hold_span: HoldSpan::Work,
                erase_preempt: true,
            },
        },
        znsplus: ZnsPlusConfig::default(),
        conventional: None,
        // NVM namespaces made beside the zoned one (seed 001) run the FTL of
        // the drive's conventional twin (`sn640`).
        nvm_ftl: Some(sn640_ftl()),
        fdp: None,
        namespaces: Vec::new(),
        spread: SpreadConfig::default(),
    }
}

/// Seed 001's layout of a zoned drive: a 100 GiB zoned namespace (NSID 1)
/// and a 4 GiB conventional one of 512 B LBAs beside it (NSID 2, the NVM
/// command set over the drive's FTL, `nvm_ftl`), both of `config`'s zone
/// size; the rest of the flash is theirs to share as spare blocks.
pub fn with_seed001_namespaces(mut config: DeviceConfig) -> Result<DeviceConfig, ConfigError> {
    let zone = config.namespace.zone_size_bytes.max(1);
    config.namespaces = vec![
        NamespaceEntry {
            zones: Some(u32::try_from((100 * GIB).div_ceil(zone)).unwrap_or(u32::MAX)),
            ..Default::default()
        },
        NamespaceEntry {
            zones: Some(u32::try_from((4 * GIB).div_ceil(zone)).unwrap_or(u32::MAX)),
            lba_bytes: Some(512),
            command_set: Some(CommandSet::Nvm),
            ..Default::default()
        },
    ];
    config.validate()?;
    Ok(config)
}

/// `sn640`: the conventional twin of the ZN540 (Western Digital's Ultrastar
/// SN640 shares its hardware): the same flash, link and firmware costs,
/// a block interface over 894 GiB (447 conventional 2 GiB zones) with the
/// rest of the flash as over-provisioning (13%), a 32 MiB write buffer and
/// greedy garbage collection per die, in the background of host writes
/// (docs/device-model.md).
/// Background GC of the sn640 starts with 12 of a die's 916 blocks free
/// (a tenth of its ~119 blocks of over-provisioning), early enough that
/// the host rarely waits for a whole victim.
const GC_FREE_BLOCKS_START: u32 = 12;
/// Up to 8 units moved per host unit: enough to keep pace with victims
/// 8/9 valid; fuller victims (random writes over a nearly full drive) stall
/// the host on foreground collection.
const GC_UNITS_PER_HOST_UNIT_MAX: u32 = 8;

/// The drive's FTL core takes a waiting host write from among the 32 that
/// came first, at random: seed 001's conventional namespace (4 KiB random
/// writes at QD 4-1024, 512 B LBAs) has medians below the mean and p95s of
/// 1.3-5 times the median (QD 16: 181 and 963 µs around a mean of 284),
/// which arrival order (p95 at the median) does not give and random order
/// among all waiting (QD 64: a p95 of 3.6 times the median, the drive 2.4)
/// overshoots; 32 is the window those rows fit best (16 leaves QD 64 at
/// 1.6 times). Its sequential writes are closer to arrival order than
/// that (QD 16: 261 and 569 µs): not modelled.
const WRITE_ORDER_WINDOW: u32 = 32;

fn sn640() -> DeviceConfig {
    let mut c = zn540();
    c.name = "sn640".into();
    c.namespace.zones = 447;
    c.namespace.conventional_zones = 447;
    c.namespace.zone_capacity_bytes = c.namespace.zone_size_bytes;
    c.namespace.max_open_zones = 0;
    c.namespace.max_active_zones = 0;
    c.write_buffer.zone_buffer_bytes = 32 * MIB;
    // One buffer and one stream of units over the dies: the FTL places data.
    c.write_buffer.device_buffer_bytes = 0;
    c.mapping.stripe_chunks = 1;
    c.mapping.start_die = StartDie::First;
    c.conventional = Some(sn640_ftl());
    c.nvm_ftl = None;
    c
}

/// `zn540-fdp`: the `sn640` (the ZN540's flash behind a page-mapped FTL)
/// with Flexible Data Placement as shipping FDP drives offer it: one
/// reclaim group over all 16 dies, 8 initially isolated reclaim unit
/// handles, a reclaim unit of one block per die (1152 MiB).
fn zn540_fdp() -> DeviceConfig {
    let mut c = sn640();
    c.name = "zn540-fdp".into();
    c.fdp = Some(fdp::FdpConfig { reclaim_groups: 1, handles: 8, handle_type: fdp::HandleType::InitiallyIsolated });
    c
}

/// The `zn540-fdp` as a scale model: its FTL, firmware, link and flash
/// timing on 4 dies of one plane, 48 blocks of 48 pages (144 MiB of flash),
/// under a 100 MiB namespace of 1 MiB zones with 2 reclaim unit handles, so
/// that garbage collection reaches its steady state within a few hundred
/// MiB of writes: what the FDP tests, the fuzz targets and
/// examples/fio/fdp-hot-cold.fio run on. (`--capacity` keeps the zn540's 16
/// dies of 4 planes; this model is smaller and collects with more spare
/// flash, 44% of the namespace.)
pub fn fdp_scale_model() -> DeviceConfig {
    let mut c = zn540_fdp();
    c.name = "zn540-fdp-scale-model".into();
    (c.flash.channels, c.flash.chips_per_channel, c.flash.planes_per_die) = (4, 1, 1);
    (c.flash.blocks_per_plane, c.flash.pages_per_block) = (48, 48);
    c.mapping.d_zone = 4;
    (c.namespace.zones, c.namespace.conventional_zones) = (100, 100);
    (c.namespace.zone_size_bytes, c.namespace.zone_capacity_bytes) = (MIB, MIB);
    c.write_buffer.zone_buffer_bytes = MIB;
    c.conventional.as_mut().expect("the sn640's FTL").gc_free_blocks_start = 3;
    c.fdp.as_mut().expect("FDP").handles = 2;
    c
}

/// The page-mapped FTL of the `sn640` and of the zn540's NVM namespaces.
fn sn640_ftl() -> ConventionalConfig {
    ConventionalConfig {
        gc_free_blocks_min: 2,
        gc_free_blocks_target: 4,
        gc_free_blocks_start: GC_FREE_BLOCKS_START,
        gc_units_per_host_unit_max: GC_UNITS_PER_HOST_UNIT_MAX,
        gc_victim: VictimPolicy::Greedy,
        write_order_window: WRITE_ORDER_WINDOW,
    }
}

fn znsplus(name: &str, flash_timing: Timing) -> DeviceConfig {
    DeviceConfig {
        name: name.into(),
        mode: Mode::Metadata,
        namespace: NamespaceConfig {
            lba_bytes: 4096,
            zones: 512,
            conventional_zones: 0,
            zone_size_bytes: 32 * MIB,
            zone_capacity_bytes: 32 * MIB,
            max_open_zones: 14,
            max_active_zones: 14,
            zasl_bytes: 0,
            mdts_bytes: 512 * KIB,
            cross_zone_read: false,
            zrwa: None,
        },
        mapping: MappingConfig {
            d_zone: 16,
            stripe_chunks: 1,
            zone_mapping: ZoneMapping::Static,
            start_die: StartDie::First,
            chunk_order: ChunkOrder::PlanesFirst,
        },
        flash: Geometry {
            channels: 8,
            chips_per_channel: 2,
            dies_per_chip: 1,
            planes_per_die: 1,
            blocks_per_plane: 544,
            pages_per_block: 128,
            page_bytes: 16384,
            oneshot_pages: 1,
        },
        flash_timing,
        link: LinkConfig { lanes: 2, lane_bytes_per_s: 600_000_000 },
        controller: ControllerConfig {
            firmware_cores: 1,
            submit_ns: 2_000,
            complete_ns: 2_000,
            read_ns: 2_000,
            write_ns: 3_000,
            append_ns: 3_500,
            write_zeroes_ns: 3_000,
            implicit_open_write_ns: 1_000,
            implicit_open_append_ns: 1_000,
            identify_ns: 20 * US,
            report_ns: 10 * US,
            report_per_zone_ns: 100,
            error_ns: 1_000,
            write_ftl_ns: 0,
            write_ftl_pipelined: false,
            write_partial_unit_ns: 0,
            read_ahead_bytes: 0,
            read_buffer_bytes: 0,
            read_ahead_streams: 32,
            small_lba_map_unit_bytes: 0,
            partial_unit_ns: 0,
            partial_unit_bytes_per_s: 0,
            partial_unit_held_bytes_per_s: 0,
            append_partial_unit_ns: 0,
            append_partial_unit_held_ns: 0,
            append_ftl_ns: 0,
            unit_commit_ns: 0,
            in_order: false,
            program_path_bytes_per_s: 0,
            write_dma_bytes_per_s: 0,
            write_dma_start_ns: 0,
            append_data_after_firmware: false,
            journal_units: 0,
            journal_ns: 0,
            checkpoint_journals: 0,
            checkpoint_ns: 0,
            housekeeping_ns: 0,
            housekeeping_period_ns: 0,
            housekeeping_idle_ns: 0,
        },
        write_buffer: WriteBufferConfig::plp(512 * KIB),
        management: ManagementConfig {
            open_ns: 5 * US,
            close_ns: 5 * US,
            close_written_ns: 0,
            finish_ns: MS,
            reset_ns: 2 * MS,
            offline_ns: 10 * US,
            host_priority: true,
            slice_ns: 5 * US,
            turn_ns: 0,
            order: ServiceOrder::Arrival,
            finish: FinishConfig::default(),
            reset: ResetConfig::default(),
        },
        znsplus: ZnsPlusConfig::default(),
        conventional: None,
        nvm_ftl: None,
        fdp: None,
        namespaces: Vec::new(),
        spread: SpreadConfig::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fdp_scale_model_is_valid() {
        let c = fdp_scale_model();
        c.validate().unwrap();
        assert_eq!((c.flash.raw_bytes(), c.fdp.unwrap().handles), (144 * MIB, 2));
    }

    #[test]
    fn presets_are_valid_and_round_trip_through_toml() {
        for name in PRESET_NAMES {
            let config = preset(name).unwrap();
            let layout = config.validate().unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(layout.zones > 0);
            let text = config.to_toml();
            assert_eq!(DeviceConfig::from_toml(&text).unwrap(), config, "{name}");
        }
        assert!(preset("nope").is_none());
    }

    /// Found by zonelab-fuzz: a device file with an integer above i64::MAX
    /// loaded, then `--set` (or `device show`) panicked re-serialising it.
    #[test]
    fn integers_toml_cannot_hold_are_refused_on_load() {
        let text = preset("zn540")
            .unwrap()
            .to_toml()
            .replace("lane_bytes_per_s = 985000000", "lane_bytes_per_s = 16313256422187718051");
        let e = DeviceConfig::from_toml(&text).unwrap_err();
        assert!(e.0.contains("larger than 9223372036854775807, the largest integer a device file can hold"), "{e}");
    }

    /// Found by zonelab-fuzz: `--device sn640 --set mapping.d_zone=0` passed
    /// validation (a conventional device skipped the check) and panicked in
    /// `Device::new`.
    #[test]
    fn a_conventional_device_needs_a_valid_d_zone() {
        for d_zone in [0, 3] {
            let mut c = preset("sn640").unwrap();
            c.mapping.d_zone = d_zone;
            let e = c.validate().unwrap_err();
            assert!(e.0.contains(&format!("mapping.d_zone = {d_zone} must divide the 16 dies")), "{e}");
        }
    }

    #[test]
    fn zn540_zone_capacity_is_whole_super_word_lines() {
        let c = preset("zn540").unwrap();
        let l = c.validate().unwrap();
        assert_eq!(l.super_row_chunks * 16384, 3 * MIB);
        assert_eq!(c.namespace.zone_capacity_bytes % (3 * MIB), 0);
        assert_eq!(l.fbg_blocks, 1);
        assert_eq!(l.fcgs, 1);
    }

    /// Table 2: copyback / (read + 2 DMA + program) from the preset timings.
    #[test]
    fn znsplus_presets_give_table_2_copyback_ratios() {
        for (name, paper) in [("tlc", 0.94), ("mlc", 0.90), ("znand", 0.94)] {
            let c = preset(name).unwrap();
            let t = &c.flash_timing;
            let dma_ns = zonelab_sim::transfer_ns(u64::from(c.flash.page_bytes), t.channel_bytes_per_s);
            let ratio = (t.read_ns + t.program_ns) as f64 / (t.read_ns + 2 * dma_ns + t.program_ns) as f64;
            assert!((ratio - paper).abs() < 0.005, "{name}: {ratio:.4} vs {paper}");
        }
    }

    #[test]
    fn znsplus_zone_is_sixteen_blocks() {
        let c = preset("mlc").unwrap();
        let l = c.validate().unwrap();
        assert_eq!(c.namespace.zone_capacity_bytes, 16 * c.flash.block_bytes());
        assert_eq!((l.fcgs, l.fbg_blocks, l.lbas_per_chunk), (1, 1, 4));
    }
}
