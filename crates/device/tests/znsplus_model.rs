//! Data-mode property test of the ZNS+ commands: writes, appends, TL_open
//! overwrites, zone_compaction, Simple Copy, finishes, closes and resets
//! against a reference model written from the rules in `znsplus/`. Every
//! status, every block read, and every zone's state and write pointer agree,
//! so no valid block is ever lost or corrupted.

use proptest::prelude::*;
use zonelab_device::*;

/// Blocks per chunk (16 KiB pages of 4 KiB LBAs) and per zone.
const CHUNK: u64 = 4;
const ZSZE: u64 = 64;
const NZONES: u32 = 8;
const NSZE: u64 = ZSZE * NZONES as u64;
const MOR: u32 = 3;
const MAR: u32 = 4;

// ---------------------------------------------------------------------------
// Reference model: one byte per block (every write fills a block with one value).
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct MZone {
    state: ZoneState,
    wp: u64,
    /// Valid bitmap while TL_opened.
    tl: Option<Vec<bool>>,
}

struct Model {
    lba_ordered: bool,
    zones: Vec<MZone>,
    implicit_order: Vec<u32>,
    data: Vec<u8>,
}

fn zslba(zone: u32) -> u64 {
    u64::from(zone) * ZSZE
}

fn zone_of(lba: u64) -> u32 {
    (lba / ZSZE) as u32
}

fn is_open(s: ZoneState) -> bool {
    matches!(s, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened)
}

fn is_active(s: ZoneState) -> bool {
    is_open(s) || s == ZoneState::Closed
}

impl Model {
    fn new(lba_ordered: bool) -> Self {
        let zones = (0..NZONES).map(|z| MZone { state: ZoneState::Empty, wp: zslba(z), tl: None }).collect();
        Self { lba_ordered, zones, implicit_order: Vec::new(), data: vec![0; NSZE as usize] }
    }

    fn z(&self, zone: u32) -> &MZone {
        &self.zones[zone as usize]
    }

    fn set_state(&mut self, zone: u32, state: ZoneState) {
        self.implicit_order.retain(|&z| z != zone);
        if state == ZoneState::ImplicitlyOpened {
            self.implicit_order.push(zone);
        }
        self.zones[zone as usize].state = state;
    }

    fn take_resources(&mut self, zone: u32) -> Result<(), Status> {
        let open = self.zones.iter().filter(|z| is_open(z.state)).count() as u32;
        let active = self.zones.iter().filter(|z| is_active(z.state)).count() as u32;
        if self.z(zone).state != ZoneState::Closed && active >= MAR {
            return Err(Status::TooManyActiveZones);
        }
        if open < MOR {
            return Ok(());
        }
        match self.implicit_order.first() {
            Some(&oldest) => {
                self.set_state(oldest, ZoneState::Closed);
                Ok(())
            }
            None => Err(Status::TooManyOpenZones),
        }
    }

    fn writable(&self, zone: u32) -> Result<(), Status> {
        match self.z(zone).state {
            ZoneState::Full => Err(Status::ZoneIsFull),
            ZoneState::ReadOnly => Err(Status::ZoneIsReadOnly),
            ZoneState::Offline => Err(Status::ZoneIsOffline),
            _ => Ok(()),
        }
    }

    fn valid(&self, lba: u64) -> bool {
        let z = self.z(zone_of(lba));
        z.tl.as_ref().is_some_and(|v| v[(lba % ZSZE) as usize])
    }

    fn admit(&mut self, zone: u32) -> Result<(), Status> {
        if matches!(self.z(zone).state, ZoneState::Empty | ZoneState::Closed) {
            self.take_resources(zone)?;
            self.set_state(zone, ZoneState::ImplicitlyOpened);
        }
        Ok(())
    }

    /// The write pointer moves to `to`: skipped blocks of a TL_opened zone
    /// keep their data if valid and read as zeros if not.
    fn move_wp(&mut self, zone: u32, to: u64) {
        let wp = self.z(zone).wp;
        for lba in wp..to {
            if !self.valid(lba) {
                self.data[lba as usize] = 0;
            }
        }
        self.zones[zone as usize].wp = to.max(wp);
    }

    /// After a write pointer move: LBA-ordered plugging, then full handling.
    fn after_move(&mut self, zone: u32) {
        if self.lba_ordered && self.z(zone).tl.is_some() && is_open(self.z(zone).state) {
            let mut to = self.z(zone).wp;
            while to < zslba(zone) + ZSZE && self.valid(to) {
                to += 1;
            }
            self.move_wp(zone, to);
        }
        if self.z(zone).wp == zslba(zone) + ZSZE {
            self.set_state(zone, ZoneState::Full);
            self.finalize(zone);
        }
    }

    /// The LogFBG replaces the original: nothing is left above the write pointer.
    fn finalize(&mut self, zone: u32) {
        if self.zones[zone as usize].tl.take().is_some() {
            let wp = self.z(zone).wp;
            self.data[wp as usize..(zslba(zone) + ZSZE) as usize].fill(0);
        }
    }

    fn valid_end(&self, zone: u32) -> u64 {
        (zslba(zone)..zslba(zone) + ZSZE).rev().find(|&l| self.valid(l)).map_or(zslba(zone), |l| l + 1)
    }

    fn write(&mut self, slba: u64, nlb: u32, p: u8) -> Result<(), Status> {
        if slba + u64::from(nlb) > NSZE {
            return Err(Status::LbaOutOfRange);
        }
        self.write_checked(slba, nlb, p)
    }

    /// Write after the range check (Zone Append checks its range at the zone start).
    fn write_checked(&mut self, slba: u64, nlb: u32, p: u8) -> Result<(), Status> {
        let end = slba + u64::from(nlb);
        let zone = zone_of(slba);
        self.writable(zone)?;
        let bad = match self.z(zone).tl {
            Some(_) => slba < self.z(zone).wp || (slba..end.min(zslba(zone) + ZSZE)).any(|l| self.valid(l)),
            None => slba != self.z(zone).wp,
        };
        if bad {
            return Err(Status::ZoneInvalidWrite);
        }
        if end > zslba(zone) + ZSZE {
            return Err(Status::ZoneBoundaryError);
        }
        self.admit(zone)?;
        self.move_wp(zone, slba);
        self.data[slba as usize..end as usize].fill(p);
        self.zones[zone as usize].wp = end;
        self.after_move(zone);
        Ok(())
    }

    fn append(&mut self, zone: u32, nlb: u32, p: u8) -> Result<u64, Status> {
        if self.z(zone).tl.is_some() {
            return Err(Status::InvalidZoneOperation);
        }
        self.writable(zone)?;
        let lba = self.z(zone).wp;
        self.write_checked(lba, nlb, p)?;
        Ok(lba)
    }

    fn copy(&mut self, src: &[u64], dst: &[u64], simple: bool) -> Result<(), Status> {
        if src.len() != dst.len() || src.is_empty() {
            return Err(Status::InvalidField);
        }
        if src.iter().chain(dst).any(|&l| l >= NSZE) {
            return Err(Status::LbaOutOfRange);
        }
        let zone = zone_of(dst[0]);
        if dst.iter().any(|&l| zone_of(l) != zone) {
            return Err(Status::ZoneBoundaryError);
        }
        self.writable(zone)?;
        let wp = self.z(zone).wp;
        let increasing = dst.windows(2).all(|w| w[0] < w[1]);
        let bad = match self.z(zone).tl {
            Some(_) => dst.iter().any(|&l| self.valid(l)),
            None => simple && dst[0] != wp,
        };
        if !increasing || dst[0] < wp || bad {
            return Err(Status::ZoneInvalidWrite);
        }
        self.admit(zone)?;
        let blocks: Vec<u8> = src.iter().map(|&l| self.data[l as usize]).collect();
        for (&d, b) in dst.iter().zip(blocks) {
            self.move_wp(zone, d);
            self.data[d as usize] = b;
            self.zones[zone as usize].wp = d + 1;
        }
        self.after_move(zone);
        Ok(())
    }

    fn tl_open(&mut self, zone: u32, valid: &[bool]) -> Result<(), Status> {
        let written = self.z(zone).wp - zslba(zone);
        if valid.iter().enumerate().any(|(o, &v)| v && o as u64 >= written) {
            return Err(Status::InvalidField);
        }
        let state = self.z(zone).state;
        if self.z(zone).tl.is_some() || matches!(state, ZoneState::ReadOnly | ZoneState::Offline) {
            return Err(Status::ZoneInvalidStateTransition);
        }
        if matches!(state, ZoneState::Empty | ZoneState::Closed | ZoneState::Full) {
            self.take_resources(zone)?;
        }
        self.set_state(zone, ZoneState::ExplicitlyOpened);
        let z = &mut self.zones[zone as usize];
        z.wp = zslba(zone);
        z.tl = Some(valid.to_vec());
        self.after_move(zone);
        Ok(())
    }

    fn mgmt(&mut self, action: ZoneAction, zone: u32) -> Result<(), Status> {
        use ZoneState::*;
        let state = self.z(zone).state;
        let bad = Err(Status::ZoneInvalidStateTransition);
        match action {
            ZoneAction::Open => match state {
                Empty | Closed => {
                    self.take_resources(zone)?;
                    self.set_state(zone, ExplicitlyOpened);
                }
                ImplicitlyOpened | ExplicitlyOpened => self.set_state(zone, ExplicitlyOpened),
                _ => return bad,
            },
            ZoneAction::Close if self.z(zone).tl.is_some() => {
                let end = self.valid_end(zone);
                self.move_wp(zone, end);
                if self.z(zone).wp == zslba(zone) + ZSZE {
                    self.set_state(zone, Full);
                } else {
                    self.set_state(zone, Closed);
                }
                self.finalize(zone);
            }
            ZoneAction::Close => match state {
                ImplicitlyOpened | ExplicitlyOpened | Closed => self.set_state(zone, Closed),
                _ => return bad,
            },
            ZoneAction::Finish => match state {
                ReadOnly | Offline => return bad,
                _ => {
                    if self.z(zone).tl.is_some() {
                        let end = self.valid_end(zone);
                        self.move_wp(zone, end);
                        self.finalize(zone);
                    }
                    self.set_state(zone, Full);
                    self.zones[zone as usize].wp = zslba(zone) + ZSZE;
                }
            },
            ZoneAction::Reset => match state {
                ReadOnly | Offline => return bad,
                _ => {
                    self.set_state(zone, Empty);
                    let z = &mut self.zones[zone as usize];
                    z.wp = zslba(zone);
                    z.tl = None;
                    self.data[zslba(zone) as usize..(zslba(zone) + ZSZE) as usize].fill(0);
                }
            },
            ZoneAction::Offline => return bad,
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// Operations, resolved against the model when they run.
// ---------------------------------------------------------------------------

#[derive(Debug, Clone)]
enum Op {
    /// At the write pointer plus `skip` (TL zones: moved to the next invalid block).
    Write {
        zone: u32,
        skip: u64,
        nlb: u32,
        p: u8,
    },
    Append {
        zone: u32,
        nlb: u32,
        p: u8,
    },
    Read {
        lba: u64,
        nlb: u32,
    },
    /// Blocks from `src_zone` (offsets `src`) to `dst_zone` from its write pointer, with gaps.
    Compact {
        src_zone: u32,
        src: Vec<u64>,
        dst_zone: u32,
        gaps: Vec<u64>,
    },
    /// Whole chunks, so that copyback can happen.
    CompactChunks {
        src_zone: u32,
        chunks: Vec<u64>,
        dst_zone: u32,
    },
    SimpleCopy {
        ranges: Vec<(u64, u32)>,
        dst_zone: u32,
        skip: u64,
    },
    TlOpen {
        zone: u32,
        valid_seed: u64,
        density: u8,
    },
    Mgmt {
        action: ZoneAction,
        zone: u32,
    },
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let zone = || 0..NZONES;
    prop_oneof![
        20 => (zone(), prop_oneof![6 => Just(0u64), 1 => 0u64..6], 1u32..=12, 1u8..=255)
            .prop_map(|(zone, skip, nlb, p)| Op::Write { zone, skip, nlb, p }),
        5 => (zone(), 1u32..=8, 1u8..=255).prop_map(|(zone, nlb, p)| Op::Append { zone, nlb, p }),
        10 => (0..NSZE, 1u32..=16).prop_map(|(lba, nlb)| Op::Read { lba, nlb }),
        8 => (zone(), prop::collection::vec(0..ZSZE, 1..12), zone(), prop::collection::vec(prop_oneof![4 => Just(0u64), 1 => 1u64..3], 12))
            .prop_map(|(src_zone, src, dst_zone, gaps)| Op::Compact { src_zone, src, dst_zone, gaps }),
        6 => (zone(), prop::collection::vec(0..ZSZE / CHUNK, 1..5), zone())
            .prop_map(|(src_zone, chunks, dst_zone)| Op::CompactChunks { src_zone, chunks, dst_zone }),
        4 => (prop::collection::vec((0..NSZE, 1u32..6), 1..3), zone(), prop_oneof![5 => Just(0u64), 1 => Just(1u64)])
            .prop_map(|(ranges, dst_zone, skip)| Op::SimpleCopy { ranges, dst_zone, skip }),
        6 => (zone(), any::<u64>(), 0u8..=3).prop_map(|(zone, valid_seed, density)| Op::TlOpen { zone, valid_seed, density }),
        8 => (prop::sample::select(vec![ZoneAction::Open, ZoneAction::Close, ZoneAction::Finish, ZoneAction::Reset]), zone())
            .prop_map(|(action, zone)| Op::Mgmt { action, zone }),
    ]
}

fn device(plugging: &str) -> Device {
    let opts = DeviceOptions {
        zones: Some(NZONES),
        zone_size_bytes: Some(ZSZE * 4096),
        max_open_zones: Some(MOR),
        max_active_zones: Some(MAR),
        data: true,
        sets: vec![
            ("mapping.d_zone".into(), "4".into()),
            ("znsplus.plugging".into(), plugging.into()),
            ("znsplus.copyback_chain_max".into(), "2".into()),
        ],
        ..Default::default()
    };
    Device::new(opts.apply(preset("mlc").unwrap()).unwrap()).unwrap()
}

/// A valid bitmap over the blocks the zone holds: bits from a seed, thinned by density.
fn bitmap(model: &Model, zone: u32, seed: u64, density: u8) -> Vec<bool> {
    let written = model.z(zone).wp - zslba(zone);
    (0..ZSZE)
        .map(|o| {
            let chunk_bit = (seed >> ((o / CHUNK) % 64)) & 1 == 1;
            let block_bit = (seed.rotate_left(o as u32 * 7) & 3) < u64::from(density);
            o < written && (if density == 3 { chunk_bit } else { chunk_bit && block_bit })
        })
        .collect()
}

fn words(valid: &[bool]) -> Vec<u64> {
    valid.chunks(64).map(|c| c.iter().enumerate().fold(0u64, |w, (i, &v)| w | u64::from(v) << i)).collect()
}

fn status<T>(r: &Result<T, Status>) -> Status {
    r.as_ref().err().copied().unwrap_or(Status::Success)
}

/// Destination of a write-like op: the write pointer plus `skip`, moved
/// forward in a TL_opened zone to the next block the host may write.
fn target(model: &Model, zone: u32, skip: u64) -> u64 {
    let mut lba = model.z(zone).wp + skip;
    while lba < zslba(zone) + ZSZE - 1 && model.valid(lba) {
        lba += 1;
    }
    lba
}

fn run(plugging: &str, ops: &[(Op, u64)]) -> Result<ZnsPlusCounters, TestCaseError> {
    let mut dev = device(plugging);
    let mut model = Model::new(plugging == "lba");
    let mut now = 0u64;
    let mut buf = vec![0u8; 16 * 4096];
    for (i, (op, gap_ns)) in ops.iter().enumerate() {
        let ctx = format!("op {i}: {op:?}");
        now += gap_ns;
        let (got, want) = match op {
            Op::Write { zone, skip, nlb, p } => {
                let slba = target(&model, *zone, *skip);
                let c = dev.submit(
                    now,
                    &Command::Write { slba, nlb: *nlb, payload: Payload::Pattern(*p), fua: false },
                    None,
                );
                (c, status(&model.write(slba, *nlb, *p)))
            }
            Op::Append { zone, nlb, p } => {
                let c = dev.submit(
                    now,
                    &Command::Append { zslba: zslba(*zone), nlb: *nlb, payload: Payload::Pattern(*p), fua: false },
                    None,
                );
                let want = model.append(*zone, *nlb, *p);
                if let Ok(lba) = want {
                    prop_assert_eq!(&c.result, &CmdResult::Lba(lba), "{}", ctx);
                }
                (c, status(&want))
            }
            Op::Read { lba, nlb } => {
                let nlb = (*nlb).min((NSZE - lba) as u32).min((ZSZE - lba % ZSZE) as u32);
                let out = &mut buf[..nlb as usize * 4096];
                let c = dev.submit(now, &Command::Read { slba: *lba, nlb }, Some(&mut *out));
                for b in 0..nlb as usize {
                    let want = model.data[*lba as usize + b];
                    prop_assert!(
                        out[b * 4096..(b + 1) * 4096].iter().all(|&x| x == want),
                        "{}: block {} of the read, model {}",
                        ctx,
                        b,
                        want
                    );
                }
                (c, Status::Success)
            }
            Op::Compact { src_zone, src, dst_zone, gaps } => {
                let src: Vec<u64> = src.iter().map(|o| zslba(*src_zone) + o).collect();
                let mut dst = Vec::new();
                let mut next = target(&model, *dst_zone, gaps[0]);
                for g in gaps.iter().take(src.len()) {
                    next = target(&model, *dst_zone, next + g - model.z(*dst_zone).wp);
                    dst.push(next);
                    next += 1;
                }
                let c = dev.submit(now, &Command::ZoneCompaction { src: &src, dst: &dst }, None);
                (c, status(&model.copy(&src, &dst, false)))
            }
            Op::CompactChunks { src_zone, chunks, dst_zone } => {
                let src: Vec<u64> =
                    chunks.iter().flat_map(|c| (0..CHUNK).map(move |b| zslba(*src_zone) + c * CHUNK + b)).collect();
                let first = model.z(*dst_zone).wp.next_multiple_of(CHUNK);
                let dst: Vec<u64> = (first..first + src.len() as u64).collect();
                let c = dev.submit(now, &Command::ZoneCompaction { src: &src, dst: &dst }, None);
                (c, status(&model.copy(&src, &dst, false)))
            }
            Op::SimpleCopy { ranges, dst_zone, skip } => {
                let ranges: Vec<SourceRange> = ranges.iter().map(|&(slba, nlb)| SourceRange { slba, nlb }).collect();
                let src: Vec<u64> = ranges.iter().flat_map(|r| r.slba..r.slba + u64::from(r.nlb)).collect();
                let sdlba = target(&model, *dst_zone, *skip);
                let c = dev.submit(now, &Command::SimpleCopy { ranges: &ranges, sdlba }, None);
                let want = if src.iter().any(|&l| l >= NSZE) || sdlba + src.len() as u64 > NSZE {
                    Err(Status::LbaOutOfRange)
                } else {
                    let dst: Vec<u64> = (sdlba..sdlba + src.len() as u64).collect();
                    model.copy(&src, &dst, true)
                };
                (c, status(&want))
            }
            Op::TlOpen { zone, valid_seed, density } => {
                let valid = bitmap(&model, *zone, *valid_seed, *density);
                let c = dev.submit(now, &Command::TlOpen { zslba: zslba(*zone), valid: &words(&valid) }, None);
                (c, status(&model.tl_open(*zone, &valid)))
            }
            Op::Mgmt { action, zone } => {
                let c = dev.submit(
                    now,
                    &Command::ZoneMgmtSend { action: *action, slba: zslba(*zone), select_all: false },
                    None,
                );
                (c, status(&model.mgmt(*action, *zone)))
            }
        };
        prop_assert_eq!(got.status, want, "{}", ctx);
        prop_assert!(got.complete_ns > got.submit_ns);
        for zone in 0..NZONES {
            let m = model.z(zone);
            prop_assert_eq!(dev.zones().state(zone), m.state, "{}: state of zone {}", ctx, zone);
            prop_assert_eq!(dev.zones().wp(zone), m.wp, "{}: write pointer of zone {}", ctx, zone);
            prop_assert_eq!(dev.is_tl_opened(zone), m.tl.is_some(), "{}: zone {} TL_opened", ctx, zone);
        }
    }
    // Every block, at the end.
    for zone in 0..NZONES {
        let out = &mut buf[..ZSZE as usize * 4096 / 4];
        for part in 0..4u64 {
            let slba = zslba(zone) + part * 16;
            let c = dev.submit(now, &Command::Read { slba, nlb: 16 }, Some(&mut *out));
            prop_assert_eq!(c.status, Status::Success);
            for b in 0..16usize {
                let want = model.data[slba as usize + b];
                prop_assert!(
                    out[b * 4096..(b + 1) * 4096].iter().all(|&x| x == want),
                    "final: LBA {}",
                    slba + b as u64
                );
            }
        }
    }
    Ok(dev.znsplus_counters())
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(192) })]

    #[test]
    fn znsplus_commands_never_lose_a_valid_block(
        lba_ordered in any::<bool>(),
        ops in prop::collection::vec((op_strategy(), prop_oneof![3 => Just(0u64), 2 => 0u64..2_000_000]), 1..120),
    ) {
        run(if lba_ordered { "lba" } else { "ppa" }, &ops)?;
    }
}

/// The harness can fail: a sequence reaching TL plugging, copyback and
/// compaction into a TL_opened zone, with known outcomes.
#[test]
fn fixed_sequence_reaches_every_command() {
    let full = ZSZE as u32;
    let ops = vec![
        (Op::Write { zone: 0, skip: 0, nlb: 12, p: 1 }, 0),
        (Op::Write { zone: 0, skip: 0, nlb: full - 12, p: 2 }, 0),
        (Op::CompactChunks { src_zone: 0, chunks: vec![0, 5], dst_zone: 4 }, 5_000_000),
        (Op::TlOpen { zone: 0, valid_seed: 0x5555, density: 3 }, 5_000_000),
        (Op::Write { zone: 0, skip: 0, nlb: 3, p: 3 }, 1_000_000),
        (Op::Compact { src_zone: 4, src: vec![0, 1, 2], dst_zone: 0, gaps: vec![0; 12] }, 0),
        (Op::SimpleCopy { ranges: vec![(0, 4)], dst_zone: 5, skip: 0 }, 0),
        (Op::Mgmt { action: ZoneAction::Close, zone: 0 }, 0),
        (Op::Read { lba: 0, nlb: 16 }, 0),
        (Op::Mgmt { action: ZoneAction::Reset, zone: 4 }, 0),
    ];
    for plugging in ["lba", "ppa"] {
        let z = run(plugging, &ops).unwrap();
        assert_eq!((z.tl_opens, z.compactions, z.simple_copies), (1, 2, 1), "{plugging}: {z:?}");
        assert!(z.plugged_blocks_foreground + z.plugged_blocks_background > 0, "{plugging}: {z:?}");
        let mut dev = device(plugging);
        let mut now = 0;
        for (op, _) in &ops[..4] {
            if let Op::Write { nlb, p, .. } = op {
                let wp = dev.zones().wp(0);
                now = dev
                    .submit(
                        now,
                        &Command::Write { slba: wp, nlb: *nlb, payload: Payload::Pattern(*p), fua: false },
                        None,
                    )
                    .complete_ns;
            }
        }
        now += 10_000_000;
        let src: Vec<u64> = (0..4).chain(20..24).collect();
        let dst: Vec<u64> = (4 * ZSZE..4 * ZSZE + 8).collect();
        assert_eq!(dev.submit(now, &Command::ZoneCompaction { src: &src, dst: &dst }, None).status, Status::Success);
        assert_eq!(dev.znsplus_counters().copyback_blocks, 8, "{plugging}");
    }
}
