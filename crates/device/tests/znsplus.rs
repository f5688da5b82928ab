//! ZNS+ commands: when copyback is chosen, PPA-ordered plugging, read routing
//! during threaded logging, and the NVMe statuses of bad input.

use zonelab_device::*;

/// The `mlc` preset (16 one-plane dies, 16 KiB pages = 4 LBAs per chunk)
/// with D_zone = 4, so zones `z` and `z + 4` share a flash chip group, and
/// 64-chunk zones.
fn device(chain_max: u32, plugging: &str, data: bool) -> Device {
    let opts = DeviceOptions {
        zones: Some(16),
        zone_size_bytes: Some(1 << 20),
        data,
        sets: vec![
            ("mapping.d_zone".into(), "4".into()),
            ("znsplus.copyback_chain_max".into(), chain_max.to_string()),
            ("znsplus.plugging".into(), plugging.into()),
            ("namespace.max_open_zones".into(), "0".into()),
            ("namespace.max_active_zones".into(), "0".into()),
        ],
        ..Default::default()
    };
    Device::new(opts.apply(preset("mlc").unwrap()).unwrap()).unwrap()
}

const ZSZE: u64 = 256;
/// LBAs of a chunk, as an NLB.
const CHUNK_NLB: u32 = 4;
const CHUNK: u64 = CHUNK_NLB as u64;

struct Run {
    dev: Device,
    now: u64,
}

impl Run {
    fn new(dev: Device) -> Self {
        Self { dev, now: 0 }
    }
    fn cmd(&mut self, cmd: &Command<'_>) -> Completion {
        let c = self.dev.submit(self.now, cmd, None);
        self.now = c.complete_ns;
        c
    }
    fn ok(&mut self, cmd: &Command<'_>) -> Completion {
        let c = self.cmd(cmd);
        assert_eq!(c.status, Status::Success, "{cmd:?}");
        c
    }
    fn write(&mut self, slba: u64, nlb: u32, pattern: u8) -> Completion {
        self.ok(&Command::Write { slba, nlb, payload: Payload::Pattern(pattern), fua: false, placement: None })
    }
    fn mgmt(&mut self, action: ZoneAction, slba: u64) -> Completion {
        self.ok(&Command::ZoneMgmtSend { action, slba, select_all: false })
    }
    fn compact(&mut self, src: &[u64], dst: &[u64]) -> Completion {
        self.ok(&Command::ZoneCompaction { src, dst })
    }
    /// Lets every flash operation finish (an Identify marks the moment).
    fn settle(&mut self) {
        self.now += 100_000_000;
        self.ok(&Command::Identify);
    }
    fn read_pattern(&mut self, slba: u64, nlb: u32) -> ReadPattern {
        match self.ok(&Command::Read { slba, nlb }).result {
            CmdResult::Read(p) => p,
            other => panic!("{other:?}"),
        }
    }
}

fn counters(r: &Run) -> (u64, u64) {
    let z = r.dev.znsplus_counters();
    (z.copyback_blocks, z.read_program_blocks)
}

#[test]
fn copyback_exactly_when_whole_chunk_same_die_and_chain_allows() {
    let mut r = Run::new(device(2, "lba", false));
    // Zone 0 holds 32 chunks (programmed); zone 4 shares its chip group, zone 1 does not.
    r.write(0, 128, 1);
    r.settle();
    let chunk = |zone: u64, c: u64| -> Vec<u64> { (0..CHUNK).map(|i| zone * ZSZE + c * CHUNK + i).collect() };
    // Whole chunk 0 -> chunk 0 of zone 4: same die (0 mod 4): copyback, no channel traffic.
    let channel_before = r.dev.flash_counters().channel_bytes;
    let link_before = r.dev.counters().host_read_bytes + r.dev.counters().host_write_bytes;
    r.compact(&chunk(0, 0), &chunk(4, 0));
    assert_eq!(counters(&r), (4, 0));
    assert_eq!(r.dev.flash_counters().channel_bytes, channel_before);
    assert_eq!(r.dev.flash_counters().copybacks, 1);
    // Chunk 5 (die 1) -> chunk 1 of zone 4 (die 1): copyback.
    r.compact(&chunk(0, 5), &chunk(4, 1));
    assert_eq!(counters(&r), (8, 0));
    // Chunk 2 (die 2) -> chunk 2 of zone 1: another chip group: read + program.
    r.compact(&chunk(0, 2), &chunk(1, 0));
    assert_eq!(counters(&r), (8, 4));
    // Chunk 3 (die 3) -> chunk 2 of zone 4 (die 2): other die.
    r.compact(&chunk(0, 3), &chunk(4, 2));
    assert_eq!(counters(&r), (8, 8));
    // Three blocks of a chunk: not the whole chunk.
    r.compact(&chunk(0, 7)[..3], &chunk(4, 3)[..3]);
    assert_eq!(counters(&r), (8, 11));
    // Whole chunk, same die, but the blocks in another order: the page cannot be copied as is.
    let mut shuffled = chunk(0, 8);
    shuffled.swap(0, 1);
    r.compact(&shuffled, &chunk(4, 4));
    assert_eq!(counters(&r), (8, 15));
    // Source not in flash yet (still in the write buffer): read from the controller.
    r.write(2 * ZSZE, 2, 9);
    r.compact(&[2 * ZSZE, 2 * ZSZE + 1, 0, 1], &chunk(4, 5));
    assert_eq!(counters(&r), (8, 19));
    // Chain limit 2: zone 4 chunk 0 (chain 1) -> zone 8 chunk 0 (chain 2) -> zone 12: through the controller.
    r.settle();
    r.compact(&chunk(4, 0), &chunk(8, 0));
    assert_eq!(counters(&r), (12, 19));
    r.settle();
    r.compact(&chunk(8, 0), &chunk(12, 0));
    assert_eq!(counters(&r), (12, 23), "chain limit reached: the controller re-checks the data");
    // The host link carried none of it.
    assert_eq!(r.dev.counters().host_read_bytes + r.dev.counters().host_write_bytes, link_before + 2 * 4096);
}

#[test]
fn copyback_disabled_and_copy_costs_follow_the_timing() {
    let mut with = Run::new(device(4, "lba", false));
    let mut without = Run::new(device(0, "lba", false));
    let src: Vec<u64> = (0..64).collect();
    let dst: Vec<u64> = (4 * ZSZE..4 * ZSZE + 64).collect();
    let mut times = Vec::new();
    for r in [&mut with, &mut without] {
        r.write(0, 64, 3);
        r.settle();
        let c = r.compact(&src, &dst);
        times.push(c.latency_ns());
    }
    assert_eq!(counters(&with), (64, 0));
    assert_eq!(counters(&without), (0, 64));
    // 16 chunks on 4 dies: 4 per die. Copyback: read + program; through the
    // controller adds two 24 µs transfers per chunk.
    assert!(times[0] < times[1], "{times:?}");
    assert!(times[0] >= 4 * (35_000 + 390_000), "{times:?}");
}

#[test]
fn reads_go_to_the_logfbg_below_the_write_pointer_and_the_original_above() {
    for plugging in ["lba", "ppa"] {
        let mut r = Run::new(device(4, plugging, true));
        for c in 0..16u8 {
            r.write(u64::from(c) * CHUNK, CHUNK_NLB, 10 + c);
        }
        r.mgmt(ZoneAction::Finish, 0);
        r.settle();
        let original_block = r.dev.flash_location(40).unwrap().block;
        // Valid: chunks 0 and 1, block 9; everything else may be overwritten.
        let valid = [0xFFu64 | 1 << 9];
        r.ok(&Command::TlOpen { zslba: 0, valid: &valid });
        let wp = r.dev.zones().wp(0);
        assert_eq!(wp, if plugging == "lba" { 8 } else { 0 }, "{plugging}");
        // Overwrite blocks 10..13, skipping invalid 8 and valid 9 (and in PPA mode valid 0..8).
        r.write(10, 3, 99);
        assert_eq!(r.dev.zones().wp(0), 13);
        assert_eq!(r.read_pattern(0, 4), ReadPattern::Uniform(10), "{plugging}: plugged valid chunk");
        assert_eq!(r.read_pattern(8, 1), ReadPattern::Uniform(0), "{plugging}: skipped invalid block");
        assert_eq!(r.read_pattern(9, 1), ReadPattern::Uniform(12), "{plugging}: plugged valid block");
        assert_eq!(r.read_pattern(10, 3), ReadPattern::Uniform(99));
        // Above the write pointer: the original block group, old data.
        assert_eq!(r.read_pattern(40, 4), ReadPattern::Uniform(20));
        r.settle();
        let below = r.dev.flash_location(0).unwrap();
        let above = r.dev.flash_location(40).unwrap();
        assert_eq!(above.block, original_block, "{plugging}");
        assert_ne!(below.block, original_block, "{plugging}: the LogFBG");
        // Close: the LogFBG replaces the original; what was above reads as zeros.
        r.mgmt(ZoneAction::Close, 0);
        assert!(!r.dev.is_tl_opened(0));
        assert_eq!(r.dev.zones().state(0), ZoneState::Closed);
        assert_eq!(r.read_pattern(40, 4), ReadPattern::Uniform(0));
        assert_eq!(r.read_pattern(9, 1), ReadPattern::Uniform(12));
        r.settle();
        assert_eq!(r.dev.flash_location(0).unwrap().block, below.block);
        let z = r.dev.znsplus_counters();
        assert_eq!(z.plugged_blocks_foreground + z.plugged_blocks_background, 9, "{plugging}: {z:?}");
    }
}

#[test]
fn ppa_ordered_plugging_copies_ahead_in_page_order() {
    let mut r = Run::new(device(8, "ppa", true));
    r.write(0, 128, 5);
    r.write(128, 128, 6);
    r.settle();
    // Every other chunk fully valid: the invalid ones will be overwritten.
    let mut valid = [0u64; 4];
    for c in (0..64u64).step_by(2) {
        for b in c * CHUNK..(c + 1) * CHUNK {
            valid[(b / 64) as usize] |= 1 << (b % 64);
        }
    }
    r.ok(&Command::TlOpen { zslba: 0, valid: &valid });
    // The dies are idle: the next command lets them plug ahead.
    r.settle();
    let bg = r.dev.znsplus_counters().plugged_blocks_background;
    // Chunk c is on die c mod 4: dies 0 and 2 hold only valid chunks and plug
    // ahead while idle; dies 1 and 3 hold only chunks the host will overwrite.
    assert!(bg > 0, "background plugging ran");
    for c in (1..64u64).step_by(2) {
        r.write(c * CHUNK, CHUNK_NLB, 7);
        r.settle();
    }
    r.mgmt(ZoneAction::Finish, 0);
    let z = r.dev.znsplus_counters();
    assert_eq!(z.plugged_blocks_background + z.plugged_blocks_foreground, 128, "{z:?}");
    assert!(z.plugged_blocks_background > 64, "idle dies plug most chunks ahead: {z:?}");
    for c in 0..64u64 {
        let expect = if c % 2 == 0 {
            if c < 32 {
                5
            } else {
                6
            }
        } else {
            7
        };
        assert_eq!(r.read_pattern(c * CHUNK, CHUNK_NLB), ReadPattern::Uniform(expect), "chunk {c}");
    }
    // Every die's LogFBG block was programmed in page order, every page once.
    let block = r.dev.flash_location(0).unwrap().block;
    for die in 0..4 {
        assert_eq!(r.dev.flash().pages_written(die, 0, block), 16, "die {die}");
    }
}

/// A PPA-plugging device whose zone 0 was written, then TL_opened with the
/// chunks on dies 0 and 2 (even chunks) fully valid and those on dies 1 and 3
/// to be overwritten; returns when the TL_open completed.
fn tl_opened_with_even_chunks_valid() -> (Run, u64) {
    let mut r = Run::new(device(8, "ppa", false));
    r.write(0, 128, 5);
    r.write(128, 128, 5);
    r.settle();
    // Chunks on dies 0 and 2 (c mod 4 even) fully valid, dies 1 and 3 to be overwritten.
    let mut valid = [0u64; 4];
    for c in (0..64u64).filter(|c| c % 2 == 0) {
        for b in c * CHUNK..(c + 1) * CHUNK {
            valid[(b / 64) as usize] |= 1 << (b % 64);
        }
    }
    let opened = r.ok(&Command::TlOpen { zslba: 0, valid: &valid }).complete_ns;
    (r, opened)
}

/// Background plugging is driven by the device's event loop: letting time
/// pass (`advance`) plugs ahead with no host command submitted, and a die
/// plugs while a host write programs another die.
#[test]
fn ppa_plugging_runs_in_idle_die_time_without_host_commands() {
    let (mut r, opened) = tl_opened_with_even_chunks_valid();
    let before = r.dev.znsplus_counters().plugged_blocks_background;
    r.dev.advance(opened + 50_000_000);
    let plugged = r.dev.znsplus_counters().plugged_blocks_background - before;
    // Two dies with 16 pages each: all 32 fully valid chunks, no command sent.
    assert_eq!(plugged, 32 * CHUNK, "plugged with no host command");
    assert!(r.dev.next_event_ns().is_none(), "nothing left to plug ahead");
    // A host write to die 1 now overlaps nothing queued on dies 0 and 2.
    let t = opened + 50_000_000;
    let c = r.dev.submit(
        t,
        &Command::Write { slba: CHUNK, nlb: CHUNK_NLB, payload: Payload::None, fua: false, placement: None },
        None,
    );
    assert_eq!(c.status, Status::Success);
    assert_eq!(r.dev.flash().die_free_at_ns(0), r.dev.flash().die_free_at_ns(2), "the plugs ran before");
    assert!(r.dev.flash().die_free_at_ns(0) <= t);
}

#[test]
fn ppa_plugging_overlaps_a_host_write_on_another_die() {
    let (mut r, opened) = tl_opened_with_even_chunks_valid();
    // The host writes chunk 1 (die 1) at once: dies 0 and 2 plug meanwhile.
    let c = r.dev.submit(
        opened,
        &Command::Write { slba: CHUNK, nlb: CHUNK_NLB, payload: Payload::None, fua: false, placement: None },
        None,
    );
    assert_eq!(c.status, Status::Success);
    r.dev.advance(c.complete_ns);
    let z = r.dev.znsplus_counters();
    assert!(z.plugged_blocks_background >= 2 * CHUNK, "dies 0 and 2 plugged during the write: {z:?}");
}

/// Zone 0 written, then TL_opened with only chunk 1 (on die 1) valid; once
/// the dies are idle the host writes chunk 0 and, as soon as that completes,
/// chunk 2. Returns how long each write took.
fn write_latencies_around_a_plugged_chunk(plugging: &str) -> (u64, u64) {
    let mut r = Run::new(device(8, plugging, false));
    r.write(0, 128, 5);
    r.write(128, 128, 5);
    r.settle();
    let valid = [0xf0u64, 0, 0, 0];
    r.ok(&Command::TlOpen { zslba: 0, valid: &valid });
    r.settle();
    let latency = |r: &mut Run, slba: u64| {
        let start = r.now;
        r.write(slba, CHUNK_NLB, 7).complete_ns - start
    };
    let first = latency(&mut r, 0);
    (first, latency(&mut r, 2 * CHUNK))
}

/// Seed 002 §3.2.2 and §4's Fig 9: in LBA order chunk 1 is plugged at the
/// write pointer after the write to chunk 0, so the write to chunk 2 waits
/// for the plug's read; in PPA order the idle die plugged it ahead and the write
/// to chunk 2 costs what the write to chunk 0 did.
#[test]
fn an_lba_ordered_plug_delays_the_next_write_and_a_ppa_ordered_one_does_not() {
    let read_ns = device(8, "lba", false).config().flash_timing.read_ns;
    let (lba_first, lba_second) = write_latencies_around_a_plugged_chunk("lba");
    let (ppa_first, ppa_second) = write_latencies_around_a_plugged_chunk("ppa");
    assert_eq!(lba_first, ppa_first, "nothing to plug before chunk 0");
    // The plug's copyback starts as chunk 0's data is in; the write waits
    // for its sensing (the data is in), not for its program.
    assert!(lba_second > lba_first, "LBA order: {lba_first} then {lba_second}");
    assert!(lba_second - lba_first <= read_ns, "LBA order: {lba_first} then {lba_second}");
    assert_eq!(ppa_second, ppa_first, "PPA order: plugged ahead in idle die time");
}

#[test]
fn bad_input_gets_nvme_statuses() {
    let mut r = Run::new(device(4, "lba", false));
    r.write(0, 8, 1);
    let cases: Vec<(Command<'_>, Status)> = vec![
        (Command::ZoneCompaction { src: &[0, 1], dst: &[ZSZE] }, Status::InvalidField),
        (Command::ZoneCompaction { src: &[], dst: &[] }, Status::InvalidField),
        (Command::ZoneCompaction { src: &[0], dst: &[16 * ZSZE] }, Status::LbaOutOfRange),
        (Command::ZoneCompaction { src: &[0, 1], dst: &[ZSZE, 2 * ZSZE] }, Status::ZoneBoundaryError),
        (Command::ZoneCompaction { src: &[0, 1], dst: &[ZSZE + 1, ZSZE] }, Status::ZoneInvalidWrite),
        (Command::ZoneCompaction { src: &[0], dst: &[3] }, Status::ZoneInvalidWrite),
        (Command::SimpleCopy { ranges: &[SourceRange { slba: 0, nlb: 2 }], sdlba: ZSZE + 1 }, Status::ZoneInvalidWrite),
        (Command::SimpleCopy { ranges: &[SourceRange { slba: 0, nlb: 0 }], sdlba: ZSZE }, Status::InvalidField),
        (
            Command::SimpleCopy { ranges: &[SourceRange { slba: 0, nlb: 4 }], sdlba: 2 * ZSZE - 2 },
            Status::ZoneBoundaryError,
        ),
        (Command::TlOpen { zslba: 1, valid: &[] }, Status::InvalidField),
        (Command::TlOpen { zslba: 0, valid: &[1 << 8] }, Status::InvalidField),
        (Command::TlOpen { zslba: 0, valid: &[0; 5] }, Status::InvalidField),
        (Command::TlOpen { zslba: 16 * ZSZE, valid: &[] }, Status::LbaOutOfRange),
    ];
    for (cmd, status) in cases {
        assert_eq!(r.cmd(&cmd).status, status, "{cmd:?}");
    }
    // A TL_opened zone: no append, writes only to invalid blocks at or past the write pointer.
    r.ok(&Command::TlOpen { zslba: 0, valid: &[0b1100] });
    assert_eq!(r.dev.zones().wp(0), 0);
    assert_eq!(
        r.cmd(&Command::Append { zslba: 0, nlb: 1, payload: Payload::None, fua: false }).status,
        Status::InvalidZoneOperation
    );
    assert_eq!(
        r.cmd(&Command::Write { slba: 2, nlb: 2, payload: Payload::None, fua: false, placement: None }).status,
        Status::ZoneInvalidWrite
    );
    assert_eq!(r.cmd(&Command::TlOpen { zslba: 0, valid: &[] }).status, Status::ZoneInvalidStateTransition);
    r.write(4, 1, 2);
    assert_eq!(r.dev.zones().wp(0), 5, "write pointer past the plugged blocks 2, 3");
    assert_eq!(
        r.cmd(&Command::Write { slba: 1, nlb: 1, payload: Payload::None, fua: false, placement: None }).status,
        Status::ZoneInvalidWrite
    );
    assert_eq!(r.cmd(&Command::ZoneCompaction { src: &[0], dst: &[3] }).status, Status::ZoneInvalidWrite);
    r.ok(&Command::ZoneCompaction { src: &[0], dst: &[7] });
    assert_eq!(r.dev.zones().wp(0), 8);
}

#[test]
fn copies_through_the_controller_run_at_the_program_rate_of_the_dies() {
    // No copyback: every chunk is read into the controller and programmed.
    let mut r = Run::new(device(0, "lba", false));
    r.write(0, 128, 3);
    r.write(128, 128, 3);
    r.settle();
    // Three chunks of every four, into zone 4 on the same four dies.
    let src: Vec<u64> = (0..ZSZE).filter(|l| (l / CHUNK) % 4 != 3).collect();
    let dst: Vec<u64> = (4 * ZSZE..4 * ZSZE + src.len() as u64).collect();
    let c = r.compact(&src, &dst);
    assert_eq!(counters(&r), (0, src.len() as u64));
    // 48 chunks over 4 dies: each die reads 12 and programs 12 (35 + 390 µs)
    // and its channel carries 24 transfers of 24 µs. The reads of a buffer's
    // worth of copies go first, so no read waits behind a program it does
    // not depend on.
    let per_die_ns = 12 * (35_000 + 390_000 + 2 * 24_000);
    assert!(c.latency_ns() >= 12 * 390_000, "{}", c.latency_ns());
    assert!(c.latency_ns() < per_die_ns * 5 / 4, "{} vs {per_die_ns}", c.latency_ns());
}
