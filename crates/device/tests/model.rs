//! Model-based property test: random command sequences against a tiny device
//! and against an independent reference model written from the semantics
//! the device follows (`docs/command-semantics.md`). Every status, appended LBA, read datum,
//! report, and after every command the state and write pointer of every zone
//! must agree.

use proptest::prelude::*;
use zonelab_device::*;

const LBA: usize = 4096;
/// Zone size and capacity in LBAs.
const ZSZE: u64 = 64;
const ZCAP_NLB: u32 = 48;
const ZCAP: u64 = ZCAP_NLB as u64;
const NZONES: u32 = 6;
const NSZE: u64 = ZSZE * NZONES as u64;
/// MDTS of the zn540 preset (128 KiB) and the ZASL set below (32 KiB), in LBAs.
const MDTS: u64 = 32;
const ZASL: u64 = 8;

// ---------------------------------------------------------------------------
// Reference model
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, Copy)]
struct Limits {
    /// 0 = unlimited, as in the configuration.
    mor: u32,
    mar: u32,
    conventional: u32,
    cross_zone_read: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MZone {
    state: ZoneState,
    wp: u64,
}

struct Model {
    lim: Limits,
    zones: Vec<MZone>,
    /// Implicitly opened zones, the one opened longest ago first.
    implicit_order: Vec<u32>,
    /// Every byte of the namespace.
    data: Vec<u8>,
}

fn zslba(zone: u32) -> u64 {
    u64::from(zone) * ZSZE
}

fn zone_of(lba: u64) -> u32 {
    u32::try_from(lba / ZSZE).expect("an LBA below NSZE")
}

/// Bytes of `lbas` LBAs: the byte offset of LBA `lbas` in the model's data.
fn bytes_of(lbas: u64) -> usize {
    usize::try_from(lbas).expect("at most NSZE LBAs") * LBA
}

fn is_open(s: ZoneState) -> bool {
    matches!(s, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened)
}

fn is_active(s: ZoneState) -> bool {
    is_open(s) || s == ZoneState::Closed
}

/// What one write-like command carries, byte by byte.
#[derive(Debug, Clone, Copy)]
enum Fill {
    Zeros,
    Pattern(u8),
    /// Every byte differs: `seed + lba_index * 31 + byte_index` (mod 256).
    Bytes(u8),
}

impl Fill {
    // The bytes take the low bits of the block and offset on purpose.
    #[allow(clippy::cast_possible_truncation)]
    fn bytes(self, nlb: u32) -> Vec<u8> {
        let n = nlb as usize * LBA;
        match self {
            Fill::Zeros => vec![0; n],
            Fill::Pattern(p) => vec![p; n],
            Fill::Bytes(seed) => {
                (0..n).map(|i| seed.wrapping_add((i / LBA * 31) as u8).wrapping_add((i % LBA) as u8)).collect()
            }
        }
    }
}

impl Model {
    fn new(lim: Limits) -> Self {
        let zones = (0..NZONES)
            .map(|z| MZone {
                state: if z < lim.conventional { ZoneState::NotWritePointer } else { ZoneState::Empty },
                wp: zslba(z),
            })
            .collect();
        Self { lim, zones, implicit_order: Vec::new(), data: vec![0; bytes_of(NSZE)] }
    }

    fn conventional(&self, zone: u32) -> bool {
        zone < self.lim.conventional
    }

    fn state(&self, zone: u32) -> ZoneState {
        self.zones[zone as usize].state
    }

    fn open(&self) -> u32 {
        u32::try_from(self.zones.iter().filter(|z| is_open(z.state)).count()).expect("NZONES zones")
    }

    fn active(&self) -> u32 {
        u32::try_from(self.zones.iter().filter(|z| is_active(z.state)).count()).expect("NZONES zones")
    }

    fn set_state(&mut self, zone: u32, state: ZoneState) {
        self.implicit_order.retain(|&z| z != zone);
        if state == ZoneState::ImplicitlyOpened {
            self.implicit_order.push(zone);
        }
        self.zones[zone as usize].state = state;
    }

    /// Resource rule for Empty -> opened (active + open) and Closed -> opened
    /// (open): with no open resource, close the implicitly opened zone opened
    /// longest ago.
    fn take_resources(&mut self, zone: u32) -> Result<(), Status> {
        let state = self.state(zone);
        debug_assert!(matches!(state, ZoneState::Empty | ZoneState::Closed));
        if state == ZoneState::Empty && self.lim.mar != 0 && self.active() >= self.lim.mar {
            return Err(Status::TooManyActiveZones);
        }
        if self.lim.mor == 0 || self.open() < self.lim.mor {
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

    fn state_error(state: ZoneState) -> Result<(), Status> {
        match state {
            ZoneState::Full => Err(Status::ZoneIsFull),
            ZoneState::ReadOnly => Err(Status::ZoneIsReadOnly),
            ZoneState::Offline => Err(Status::ZoneIsOffline),
            _ => Ok(()),
        }
    }

    fn store(&mut self, slba: u64, bytes: &[u8]) {
        let at = bytes_of(slba);
        self.data[at..at + bytes.len()].copy_from_slice(bytes);
    }

    /// Shared tail of Write, Write Zeroes and Zone Append once the LBA is
    /// known: state, write pointer (not for append), capacity, resources.
    fn sequential_write(&mut self, zone: u32, slba: u64, nlb: u32, bytes: &[u8]) -> Result<(), Status> {
        let z = self.zones[zone as usize];
        Self::state_error(z.state)?;
        if slba != z.wp {
            return Err(Status::ZoneInvalidWrite);
        }
        if slba + u64::from(nlb) > zslba(zone) + ZCAP {
            return Err(Status::ZoneBoundaryError);
        }
        if matches!(z.state, ZoneState::Empty | ZoneState::Closed) {
            self.take_resources(zone)?;
            self.set_state(zone, ZoneState::ImplicitlyOpened);
        }
        self.store(slba, bytes);
        let zone_ref = &mut self.zones[zone as usize];
        zone_ref.wp += u64::from(nlb);
        if zone_ref.wp == zslba(zone) + ZCAP {
            self.set_state(zone, ZoneState::Full);
        }
        Ok(())
    }

    fn write(&mut self, slba: u64, nlb: u32, fill: Fill, zeroes: bool) -> Result<(), Status> {
        if nlb == 0 || (!zeroes && u64::from(nlb) > MDTS) {
            return Err(Status::InvalidField);
        }
        if slba + u64::from(nlb) > NSZE {
            return Err(Status::LbaOutOfRange);
        }
        let zone = zone_of(slba);
        let bytes = fill.bytes(nlb);
        if self.conventional(zone) {
            if slba + u64::from(nlb) > zslba(zone) + ZSZE {
                return Err(Status::ZoneBoundaryError);
            }
            self.store(slba, &bytes);
            return Ok(());
        }
        self.sequential_write(zone, slba, nlb, &bytes)
    }

    fn append(&mut self, slba: u64, nlb: u32, fill: Fill) -> Result<u64, Status> {
        if nlb == 0 || u64::from(nlb) > MDTS {
            return Err(Status::InvalidField);
        }
        if slba + u64::from(nlb) > NSZE {
            return Err(Status::LbaOutOfRange);
        }
        let zone = zone_of(slba);
        if slba != zslba(zone) {
            return Err(Status::InvalidField);
        }
        if self.conventional(zone) {
            return Err(Status::InvalidZoneOperation);
        }
        if u64::from(nlb) > ZASL {
            return Err(Status::InvalidField);
        }
        let lba = self.zones[zone as usize].wp;
        // The device picks the write pointer, so the write pointer check passes.
        self.sequential_write(zone, lba, nlb, &fill.bytes(nlb))?;
        Ok(lba)
    }

    fn read(&self, slba: u64, nlb: u32) -> Result<&[u8], Status> {
        if nlb == 0 || u64::from(nlb) > MDTS {
            return Err(Status::InvalidField);
        }
        let end = slba + u64::from(nlb);
        if end > NSZE {
            return Err(Status::LbaOutOfRange);
        }
        let (first, last) = (zone_of(slba), zone_of(end - 1));
        if self.state(first) == ZoneState::Offline {
            return Err(Status::ZoneIsOffline);
        }
        if first != last && !self.lim.cross_zone_read {
            return Err(Status::ZoneBoundaryError);
        }
        if (first..=last).any(|z| self.state(z) == ZoneState::Offline) {
            return Err(Status::ZoneIsOffline);
        }
        Ok(&self.data[bytes_of(slba)..bytes_of(end)])
    }

    /// One action on one sequential zone: the table of docs/command-semantics.md, "Zone Management Send".
    fn apply(&mut self, action: ZoneAction, zone: u32) -> Result<(), Status> {
        use ZoneState::*;
        let bad = Err(Status::ZoneInvalidStateTransition);
        let state = self.state(zone);
        match action {
            ZoneAction::Open => match state {
                Empty | Closed => {
                    self.take_resources(zone)?;
                    self.set_state(zone, ExplicitlyOpened);
                }
                ImplicitlyOpened | ExplicitlyOpened => self.set_state(zone, ExplicitlyOpened),
                _ => return bad,
            },
            ZoneAction::Close => match state {
                ImplicitlyOpened | ExplicitlyOpened | Closed => self.set_state(zone, Closed),
                _ => return bad,
            },
            ZoneAction::Finish => match state {
                ReadOnly | Offline => return bad,
                _ => {
                    self.set_state(zone, Full);
                    self.zones[zone as usize].wp = zslba(zone) + ZCAP;
                }
            },
            ZoneAction::Reset => match state {
                ReadOnly | Offline => return bad,
                _ => {
                    self.set_state(zone, Empty);
                    self.zones[zone as usize].wp = zslba(zone);
                    let at = bytes_of(zslba(zone));
                    self.data[at..at + bytes_of(ZSZE)].fill(0);
                }
            },
            ZoneAction::Offline => match state {
                ReadOnly | Offline => self.set_state(zone, Offline),
                _ => return bad,
            },
            // This model's namespace has no ZRWA (tests/zrwa.rs models one).
            ZoneAction::OpenZrwa | ZoneAction::FlushZrwa => return Err(Status::InvalidZoneOperation),
        }
        Ok(())
    }

    fn zone_mgmt(&mut self, action: ZoneAction, slba: u64, select_all: bool) -> Result<(), Status> {
        if select_all {
            // Zones in a state the action applies to (TP 4053), in order;
            // stop at the first error.
            for zone in self.lim.conventional..NZONES {
                let s = self.state(zone);
                let applies = match action {
                    ZoneAction::Open => s == ZoneState::Closed,
                    ZoneAction::Close => is_open(s),
                    ZoneAction::Finish => is_active(s),
                    ZoneAction::Reset => is_active(s) || s == ZoneState::Full,
                    ZoneAction::Offline => s == ZoneState::ReadOnly,
                    ZoneAction::OpenZrwa | ZoneAction::FlushZrwa => false,
                };
                if applies {
                    self.apply(action, zone)?;
                }
            }
            return Ok(());
        }
        if slba >= NSZE {
            return Err(Status::LbaOutOfRange);
        }
        let zone = zone_of(slba);
        if slba != zslba(zone) {
            return Err(Status::InvalidField);
        }
        if self.conventional(zone) {
            return Err(Status::InvalidZoneOperation);
        }
        self.apply(action, zone)
    }

    fn fault(&mut self, zone: u32, state: ZoneState) {
        self.set_state(zone, state);
    }

    fn descriptor(&self, zone: u32) -> ZoneDescriptor {
        if self.conventional(zone) {
            ZoneDescriptor {
                zone_type: ZoneType::Conventional,
                state: ZoneState::NotWritePointer,
                zcap: ZSZE,
                zsze: ZSZE,
                zslba: zslba(zone),
                wp: zslba(zone) + ZSZE,
                zrwa: false,
            }
        } else {
            let z = self.zones[zone as usize];
            ZoneDescriptor {
                zone_type: ZoneType::SeqWriteRequired,
                state: z.state,
                zcap: ZCAP,
                zsze: ZSZE,
                zslba: zslba(zone),
                wp: z.wp,
                zrwa: false,
            }
        }
    }

    fn report(&self, slba: u64, filter: ReportFilter, max_zones: u32, partial: bool) -> Result<ZoneReport, Status> {
        if slba >= NSZE {
            return Err(Status::LbaOutOfRange);
        }
        let matching: Vec<u32> = (zone_of(slba)..NZONES)
            .filter(|&z| match filter {
                ReportFilter::All => true,
                ReportFilter::State(s) => !self.conventional(z) && self.state(z) == s,
            })
            .collect();
        let zones: Vec<ZoneDescriptor> =
            matching.iter().take(max_zones as usize).map(|&z| self.descriptor(z)).collect();
        let nr_zones = if partial { zones.len() as u64 } else { matching.len() as u64 };
        Ok(ZoneReport { nr_zones, zones })
    }
}

// ---------------------------------------------------------------------------
// Generated operations
// ---------------------------------------------------------------------------

/// Where a command's SLBA goes, resolved against the model when it runs.
#[derive(Debug, Clone, Copy)]
enum At {
    /// The zone's write pointer (its start for conventional zones).
    Wp,
    /// Near the write pointer.
    Near(i64),
    /// An offset within the zone.
    Offset(u64),
    /// Any LBA, including a few beyond the namespace.
    Abs(u64),
}

#[derive(Debug, Clone)]
enum Op {
    Write { zone: u32, at: At, nlb: u32, fill: Fill },
    WriteZeroes { zone: u32, at: At, nlb: u32 },
    Append { zone: u32, exact: bool, nlb: u32, fill: Fill },
    Read { zone: u32, at: At, nlb: u32 },
    Mgmt { action: ZoneAction, zone: u32, exact: bool, select_all: bool },
    Report { zone: u32, offset: u64, filter: Option<ZoneState>, max_zones: u32, partial: bool },
    Fault { zone: u32, offline: bool },
}

fn at_strategy() -> impl Strategy<Value = At> {
    prop_oneof![
        12 => Just(At::Wp),
        2 => (-2i64..=2).prop_map(At::Near),
        2 => (0..ZSZE).prop_map(At::Offset),
        1 => (0..NSZE + 4).prop_map(At::Abs),
    ]
}

fn fill_strategy() -> impl Strategy<Value = Fill> {
    prop_oneof![3 => any::<u8>().prop_map(Fill::Pattern), 1 => any::<u8>().prop_map(Fill::Bytes)]
}

const ACTIONS: [ZoneAction; 5] =
    [ZoneAction::Open, ZoneAction::Close, ZoneAction::Finish, ZoneAction::Reset, ZoneAction::Offline];

const FILTER_STATES: [ZoneState; 7] = ZoneState::SEQUENTIAL;

fn op_strategy() -> impl Strategy<Value = Op> {
    let zone = || 0..NZONES;
    let nlb = || prop_oneof![9 => 1u32..=20, 1 => 1u32..=(ZCAP_NLB + 2)];
    prop_oneof![
        30 => (zone(), at_strategy(), nlb(), fill_strategy())
            .prop_map(|(zone, at, nlb, fill)| Op::Write { zone, at, nlb, fill }),
        6 => (zone(), at_strategy(), nlb()).prop_map(|(zone, at, nlb)| Op::WriteZeroes { zone, at, nlb }),
        15 => (zone(), prop::bool::weighted(0.9), 1u32..=12, fill_strategy())
            .prop_map(|(zone, exact, nlb, fill)| Op::Append { zone, exact, nlb, fill }),
        15 => (zone(), at_strategy(), 1u32..=20).prop_map(|(zone, at, nlb)| Op::Read { zone, at, nlb }),
        15 => (0..5usize, zone(), prop::bool::weighted(0.9), prop::bool::weighted(0.2))
            .prop_map(|(a, zone, exact, select_all)| Op::Mgmt { action: ACTIONS[a], zone, exact, select_all }),
        5 => (zone(), 0..ZSZE, prop::option::of(0..7usize), 0u32..8, any::<bool>()).prop_map(
            |(zone, offset, f, max_zones, partial)| Op::Report {
                zone,
                offset,
                filter: f.map(|i| FILTER_STATES[i]),
                max_zones,
                partial
            }
        ),
        1 => (zone(), any::<bool>()).prop_map(|(zone, offline)| Op::Fault { zone, offline }),
    ]
}

fn limits_strategy() -> impl Strategy<Value = Limits> {
    (prop_oneof![6 => Just((2u32, 3u32)), 1 => Just((1, 1)), 1 => Just((2, 2)), 1 => Just((3, 4)), 1 => Just((0, 0))], 0u32..=1, any::<bool>())
        .prop_map(|((mor, mar), conventional, cross_zone_read)| Limits { mor, mar, conventional, cross_zone_read })
}

fn config(lim: Limits) -> DeviceConfig {
    let opts = DeviceOptions {
        zones: Some(NZONES),
        zone_size_bytes: Some(ZSZE * LBA as u64),
        zone_capacity_bytes: Some(ZCAP * LBA as u64),
        max_open_zones: Some(lim.mor),
        max_active_zones: Some(lim.mar),
        conventional_zones: Some(lim.conventional),
        data: true,
        sets: vec![
            ("namespace.zasl_bytes".into(), format!("{}", ZASL * LBA as u64)),
            ("namespace.cross_zone_read".into(), lim.cross_zone_read.to_string()),
        ],
        ..Default::default()
    };
    opts.apply(preset("zn540").unwrap()).unwrap()
}

fn resolve(model: &Model, zone: u32, at: At) -> u64 {
    let wp = model.zones[zone as usize].wp;
    match at {
        At::Wp => wp,
        At::Near(d) => wp.saturating_add_signed(d),
        At::Offset(o) => zslba(zone) + o,
        At::Abs(lba) => lba,
    }
}

fn status_of<T>(r: &Result<T, Status>) -> Status {
    match r {
        Ok(_) => Status::Success,
        Err(s) => *s,
    }
}

fn summary(bytes: &[u8]) -> ReadPattern {
    match bytes.first() {
        Some(&b) if bytes.iter().all(|&x| x == b) => ReadPattern::Uniform(b),
        Some(_) => ReadPattern::Mixed,
        None => ReadPattern::Uniform(0),
    }
}

/// Runs `ops` on a fresh simulated device and model.
fn check(lim: Limits, ops: &[(Op, bool)]) -> Result<(), TestCaseError> {
    check_on(Device::new(config(lim)).unwrap(), true, lim, ops)
}

/// Runs `ops` on a fresh ideal (zero-latency) device and model.
fn check_ideal(lim: Limits, ops: &[(Op, bool)]) -> Result<(), TestCaseError> {
    check_on(ideal::IdealDevice::new(config(lim)).unwrap(), false, lim, ops)
}

/// Runs `ops` on `dev` and a fresh model; `same_time` submits a command at
/// the time of the previous one instead of after its completion; a `timed`
/// device completes every command after its submission. Writes to a
/// conventional zone are unbounded, so its log in flash wraps.
fn check_on<D: ZonedDevice>(mut dev: D, timed: bool, lim: Limits, ops: &[(Op, bool)]) -> Result<(), TestCaseError> {
    let mut model = Model::new(lim);
    let mut now = 0u64;
    let mut read_buf = vec![0u8; bytes_of(MDTS)];
    for (i, (op, same_time)) in ops.iter().enumerate() {
        let ctx = format!("op {i}: {op:?}");
        let mut submit = |dev: &mut D, cmd: &Command<'_>, out: Option<&mut [u8]>| {
            let c = dev.submit(now, cmd, out);
            assert!(if timed { c.complete_ns > c.submit_ns } else { c.complete_ns == c.submit_ns }, "{cmd:?}: {c:?}");
            if !same_time {
                now = c.complete_ns;
            }
            c
        };
        match *op {
            Op::Write { zone, at, nlb, fill } => {
                let slba = resolve(&model, zone, at);
                let bytes = fill.bytes(nlb);
                let payload = match fill {
                    Fill::Pattern(p) => Payload::Pattern(p),
                    Fill::Bytes(_) => Payload::Bytes(&bytes),
                    Fill::Zeros => unreachable!(),
                };
                let c = submit(&mut dev, &Command::Write { slba, nlb, payload, fua: false, placement: None }, None);
                let expect = model.write(slba, nlb, fill, false);
                prop_assert_eq!((c.status, c.result), (status_of(&expect), CmdResult::None), "{} slba {}", ctx, slba);
            }
            Op::WriteZeroes { zone, at, nlb } => {
                let slba = resolve(&model, zone, at);
                let c = submit(&mut dev, &Command::WriteZeroes { slba, nlb, placement: None }, None);
                let expect = model.write(slba, nlb, Fill::Zeros, true);
                prop_assert_eq!((c.status, c.result), (status_of(&expect), CmdResult::None), "{} slba {}", ctx, slba);
            }
            Op::Append { zone, exact, nlb, fill } => {
                let slba = if exact { zslba(zone) } else { zslba(zone) + 1 };
                let bytes = fill.bytes(nlb);
                let payload = match fill {
                    Fill::Pattern(p) => Payload::Pattern(p),
                    Fill::Bytes(_) => Payload::Bytes(&bytes),
                    Fill::Zeros => unreachable!(),
                };
                let c = submit(&mut dev, &Command::Append { zslba: slba, nlb, payload, fua: false }, None);
                let expect = match model.append(slba, nlb, fill) {
                    Ok(lba) => (Status::Success, CmdResult::Lba(lba)),
                    Err(s) => (s, CmdResult::None),
                };
                prop_assert_eq!((c.status, c.result), expect, "{}", ctx);
            }
            Op::Read { zone, at, nlb } => {
                let slba = resolve(&model, zone, at);
                let out = &mut read_buf[..nlb as usize * LBA];
                out.fill(0xA5);
                let c = submit(&mut dev, &Command::Read { slba, nlb }, Some(&mut *out));
                match model.read(slba, nlb) {
                    Ok(bytes) => {
                        prop_assert_eq!(
                            (c.status, c.result),
                            (Status::Success, CmdResult::Read(summary(bytes))),
                            "{} slba {}",
                            ctx,
                            slba
                        );
                        if let Some(at) = out.iter().zip(bytes).position(|(a, b)| a != b) {
                            prop_assert!(
                                false,
                                "{} slba {}: byte {} (LBA {}) read {:#x}, model {:#x}",
                                ctx,
                                slba,
                                at,
                                slba + (at / LBA) as u64,
                                out[at],
                                bytes[at]
                            );
                        }
                    }
                    Err(s) => prop_assert_eq!((c.status, c.result), (s, CmdResult::None), "{} slba {}", ctx, slba),
                }
            }
            Op::Mgmt { action, zone, exact, select_all } => {
                let slba = if exact { zslba(zone) } else { zslba(zone) + 1 + u64::from(zone) % 3 };
                let c = submit(&mut dev, &Command::ZoneMgmtSend { action, slba, select_all }, None);
                let expect = model.zone_mgmt(action, slba, select_all);
                prop_assert_eq!((c.status, c.result), (status_of(&expect), CmdResult::None), "{}", ctx);
            }
            Op::Report { zone, offset, filter, max_zones, partial } => {
                let slba = zslba(zone) + offset;
                let filter = filter.map_or(ReportFilter::All, ReportFilter::State);
                let c = submit(&mut dev, &Command::ReportZones { slba, filter, max_zones, partial }, None);
                let expect = match model.report(slba, filter, max_zones, partial) {
                    Ok(r) => (Status::Success, CmdResult::Report(Box::new(r))),
                    Err(s) => (s, CmdResult::None),
                };
                prop_assert_eq!((c.status, c.result), expect, "{}", ctx);
            }
            Op::Fault { zone, offline } => {
                // Faults hit sequential zones only (the reference model does not
                // cover failed conventional zones).
                let zone = zone.max(lim.conventional);
                let state = if offline { ZoneState::Offline } else { ZoneState::ReadOnly };
                if model.state(zone) == ZoneState::Offline && state == ZoneState::ReadOnly {
                    // Offline is terminal; the device accepts this injection but
                    // should not (see semantics.rs,
                    // `fault_injection_does_not_revive_an_offline_zone`).
                    continue;
                }
                prop_assert_eq!(dev.set_zone_state(zslba(zone), state), Ok(()), "{}", ctx);
                model.fault(zone, state);
            }
        }
        // Every zone's state and write pointer, and the resource counts.
        let table = dev.zones();
        for zone in 0..NZONES {
            let m = model.zones[zone as usize];
            prop_assert_eq!(table.state(zone), m.state, "{}: state of zone {}", ctx, zone);
            if !model.conventional(zone) {
                prop_assert_eq!(table.wp(zone), m.wp, "{}: write pointer of zone {}", ctx, zone);
            }
        }
        let counts = (table.open_count(), table.active_count());
        prop_assert_eq!(table.recount(), counts, "{}: resource counters drifted", ctx);
        prop_assert_eq!(counts, (model.open(), model.active()), "{}", ctx);
        prop_assert!(lim.mor == 0 || counts.0 <= lim.mor, "{}: {} open zones", ctx, counts.0);
        prop_assert!(lim.mar == 0 || counts.1 <= lim.mar, "{}: {} active zones", ctx, counts.1);
    }
    Ok(())
}

proptest! {
    // No regression files: the failing case is printed, shrunk, on failure.
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

    #[test]
    fn device_follows_the_reference_model(
        lim in limits_strategy(),
        ops in prop::collection::vec((op_strategy(), prop::bool::weighted(0.3)), 1..200),
    ) {
        check(lim, &ops)?;
    }

    /// The ideal device shares the front and the zone state machine: the same model holds.
    #[test]
    fn ideal_device_follows_the_reference_model(
        lim in limits_strategy(),
        ops in prop::collection::vec((op_strategy(), prop::bool::weighted(0.3)), 1..200),
    ) {
        check_ideal(lim, &ops)?;
    }
}

/// The model and the harness themselves: a fixed sequence that reaches every
/// zone state and every resource error, so a model that never fails cannot pass.
#[test]
fn fixed_sequence_covers_the_interesting_cases() {
    let lim = Limits { mor: 2, mar: 3, conventional: 1, cross_zone_read: false };
    let w = |zone, at, nlb, p| (Op::Write { zone, at, nlb, fill: Fill::Pattern(p) }, false);
    let mgmt = |action, zone| (Op::Mgmt { action, zone, exact: true, select_all: false }, false);
    let ops = vec![
        w(0, At::Offset(10), 4, 1),
        w(1, At::Wp, 4, 2),
        w(2, At::Wp, 4, 3),
        w(3, At::Wp, 4, 4), // auto-closes zone 1
        w(4, At::Wp, 4, 5), // too many active
        mgmt(ZoneAction::Open, 2),
        mgmt(ZoneAction::Open, 3),
        w(1, At::Wp, 4, 6),                                                           // too many open
        (Op::Append { zone: 2, exact: true, nlb: 9, fill: Fill::Pattern(7) }, false), // over ZASL
        (Op::Append { zone: 2, exact: true, nlb: 8, fill: Fill::Bytes(7) }, true),
        mgmt(ZoneAction::Finish, 2),
        w(4, At::Wp, 20, 8),
        w(4, At::Near(1), 1, 8),
        (Op::Fault { zone: 5, offline: false }, false),
        (Op::Read { zone: 4, at: At::Offset(62), nlb: 4 }, false),
        (Op::Mgmt { action: ZoneAction::Reset, zone: 0, exact: true, select_all: true }, false),
        (Op::Mgmt { action: ZoneAction::Offline, zone: 0, exact: true, select_all: true }, false),
        (Op::Report { zone: 0, offset: 3, filter: None, max_zones: 4, partial: false }, false),
        (Op::Read { zone: 0, at: At::Offset(8), nlb: 8 }, false),
    ];
    check(lim, &ops).unwrap();
    check_ideal(lim, &ops).unwrap();
    let mut model = Model::new(lim);
    let mut statuses = Vec::new();
    for (op, _) in &ops {
        let s = match *op {
            Op::Write { zone, at, nlb, fill } => status_of(&model.write(resolve(&model, zone, at), nlb, fill, false)),
            Op::Append { zone, nlb, fill, .. } => status_of(&model.append(zslba(zone), nlb, fill)),
            Op::Mgmt { action, zone, select_all, .. } => status_of(&model.zone_mgmt(action, zslba(zone), select_all)),
            Op::Fault { zone, .. } => {
                model.fault(zone, ZoneState::ReadOnly);
                Status::Success
            }
            _ => Status::Success,
        };
        statuses.push(s);
    }
    for s in [Status::TooManyActiveZones, Status::TooManyOpenZones, Status::InvalidField, Status::ZoneInvalidWrite] {
        assert!(statuses.contains(&s), "{s} never happened: {statuses:?}");
    }
    assert_eq!(model.state(5), ZoneState::Offline);
    assert_eq!(model.state(1), ZoneState::Empty);
}
