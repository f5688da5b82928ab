//! The reference model of the `zrwa` target: zone states, resources, write
//! pointers, ZRWAs and one byte per block, from the rules of
//! docs/command-semantics.md ("Zone Random Write Area (TP 4076)" and the sections it
//! builds on), independent of the device's code.

use super::{Setup, ZONES, ZONE_LBAS};
use zonelab_device::{Status, ZoneAction, ZoneState};
use zonelab_sim::SimRng;

/// Largest transfer of the device (zn540: 128 KiB).
const MDTS_LBAS: u32 = 32;

/// An operation as the text names it: zones and offsets from the write pointer.
// The fields are the text's words, named as the module docs of `zrwa` describe them.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Write (`zeroes`: Write Zeroes) at the write pointer plus `delta`.
    Write { zone: u32, delta: i64, nlb: u32, byte: u8, zeroes: bool },
    /// Zone Append.
    Append { zone: u32, nlb: u32, byte: u8 },
    /// Read at `offset` into the zone.
    Read { zone: u32, offset: u64, nlb: u32 },
    /// A Zone Management Send action on the zone's start.
    Mgmt { zone: u32, action: ZoneAction },
    /// Flush Explicit ZRWA Range up to the write pointer plus `delta`.
    Flush { zone: u32, delta: i64 },
}

/// An operation resolved to LBAs.
// The fields are those of `zonelab_device::Command`.
#[allow(missing_docs)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmd {
    /// Write.
    Write { slba: u64, nlb: u32, byte: u8 },
    /// Write Zeroes.
    Zeroes { slba: u64, nlb: u32 },
    /// Zone Append.
    Append { zslba: u64, nlb: u32, byte: u8 },
    /// Read.
    Read { slba: u64, nlb: u32 },
    /// Zone Management Send.
    Mgmt { action: ZoneAction, slba: u64 },
}

/// What the model expects: a status and an append's LBA or a read's
/// pattern (`byte | 1 << 32` uniform, `u64::MAX` mixed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// Status.
    pub status: Status,
    /// Append LBA or read pattern.
    pub value: Option<u64>,
}

/// One zone as the model keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Zone {
    /// State.
    pub state: ZoneState,
    /// Write pointer (absolute).
    pub wp: u64,
    /// Holds a ZRWA.
    pub zrwa: bool,
}

/// Parses one operation line; None for a line it does not understand.
pub fn parse_op(line: &str) -> Option<(Op, Option<u64>)> {
    let (body, gap) = match line.split_once('@') {
        Some((b, g)) => (b, g.trim().parse::<u64>().ok().map(|g| g % 1_000_000)),
        None => (line, None),
    };
    let mut w = body.split_whitespace();
    let kind = w.next()?;
    let mut n = || w.next().and_then(|s| s.parse::<i64>().ok());
    let zone = (n()?.unsigned_abs() % u64::from(ZONES)) as u32;
    let nlb = |v: i64| (v.unsigned_abs() % 48) as u32;
    let mgmt = |action| Some(Op::Mgmt { zone, action });
    let op = match kind {
        "w" | "z" => {
            let (delta, count) = (n()? % 128, nlb(n()?));
            Op::Write { zone, delta, nlb: count, byte: (n().unwrap_or(0) & 0xff) as u8, zeroes: kind == "z" }
        }
        "a" => Op::Append { zone, nlb: nlb(n()?), byte: (n().unwrap_or(0) & 0xff) as u8 },
        "r" => Op::Read { zone, offset: n()?.unsigned_abs() % ZONE_LBAS, nlb: nlb(n()?) },
        "o" => mgmt(ZoneAction::Open)?,
        "O" => mgmt(ZoneAction::OpenZrwa)?,
        "c" => mgmt(ZoneAction::Close)?,
        "f" => mgmt(ZoneAction::Finish)?,
        "x" => mgmt(ZoneAction::Reset)?,
        "F" => Op::Flush { zone, delta: n()? % 128 },
        _ => return None,
    };
    Some((op, gap))
}

/// One generated operation line, mostly around the write pointer and within the ZRWA.
pub fn generate_op(rng: &mut SimRng) -> String {
    // Most operations on zone 0, so that its ZRWA sees long sequences.
    let zone = if rng.chance(0.6) { 0 } else { rng.below(u64::from(ZONES)) };
    // Mostly within a ZRWA of any drawn size, sometimes anywhere near it.
    let delta = match rng.below(4) {
        0 => 0,
        1 => rng.below(80) as i64 - 8,
        _ => rng.below(16) as i64,
    };
    let nlb = if rng.chance(0.8) { rng.below(8) + 1 } else { rng.below(40) };
    // Up to a multiple of 4 LBAs past the write pointer: on every drawn granularity.
    let flush = if rng.chance(0.7) { 4 * (rng.below(4) as i64 + 1) - 1 } else { rng.below(40) as i64 - 4 };
    let line = match rng.below(20) {
        0..=7 => format!("w {zone} {delta} {nlb} {}", rng.below(256)),
        8 => format!("z {zone} {delta} {nlb}"),
        9 => format!("a {zone} {nlb} {}", rng.below(256)),
        10..=11 => format!("r {zone} {} {nlb}", rng.below(ZONE_LBAS)),
        12 => format!("o {zone}"),
        13..=14 => format!("O {zone}"),
        15 => format!("c {zone}"),
        16 => format!("f {zone}"),
        17 => format!("x {zone}"),
        _ => format!("F {zone} {flush}"),
    };
    if rng.chance(0.3) {
        format!("{line} @{}", rng.below(20_000))
    } else {
        line
    }
}

/// The reference model.
#[derive(Debug, Clone)]
pub struct Model {
    s: Setup,
    zones: Vec<Zone>,
    data: Vec<u8>,
    open: u32,
    active: u32,
    held: u32,
    /// Implicitly opened zones, the one opened longest ago first.
    implicit: Vec<u32>,
}

impl Model {
    /// Every zone empty.
    pub fn new(s: Setup) -> Self {
        let zones = (0..u64::from(ZONES)).map(|z| Zone { state: ZoneState::Empty, wp: z * ZONE_LBAS, zrwa: false });
        let data = vec![0; (ZONE_LBAS * u64::from(ZONES)) as usize];
        Self { s, zones: zones.collect(), data, open: 0, active: 0, held: 0, implicit: Vec::new() }
    }

    /// Zone `zone`.
    pub fn zone(&self, zone: u32) -> Zone {
        self.zones[zone as usize]
    }

    fn zslba(zone: u32) -> u64 {
        u64::from(zone) * ZONE_LBAS
    }

    /// The command `op` names now.
    pub fn resolve(&self, op: Op) -> Cmd {
        let from_wp = |zone: u32, delta: i64| self.zone(zone).wp.saturating_add_signed(delta);
        match op {
            Op::Write { zone, delta, nlb, byte, zeroes: false } => Cmd::Write { slba: from_wp(zone, delta), nlb, byte },
            Op::Write { zone, delta, nlb, .. } => Cmd::Zeroes { slba: from_wp(zone, delta), nlb },
            Op::Append { zone, nlb, byte } => Cmd::Append { zslba: Self::zslba(zone), nlb, byte },
            Op::Read { zone, offset, nlb } => Cmd::Read { slba: Self::zslba(zone) + offset, nlb },
            Op::Mgmt { zone, action } => Cmd::Mgmt { action, slba: Self::zslba(zone) },
            Op::Flush { zone, delta } => Cmd::Mgmt { action: ZoneAction::FlushZrwa, slba: from_wp(zone, delta) },
        }
    }

    /// Applies `cmd`; what the device must answer.
    pub fn apply(&mut self, cmd: &Cmd) -> Answer {
        let r = match *cmd {
            Cmd::Write { slba, nlb, byte } => self.write(slba, nlb, byte, true).map(|_| None),
            Cmd::Zeroes { slba, nlb } => self.write(slba, nlb, 0, false).map(|_| None),
            Cmd::Append { zslba, nlb, byte } => self.append(zslba, nlb, byte).map(Some),
            Cmd::Read { slba, nlb } => self.read(slba, nlb).map(Some),
            Cmd::Mgmt { action: ZoneAction::FlushZrwa, slba } => self.flush(slba).map(|_| None),
            Cmd::Mgmt { action, slba } => self.mgmt(action, (slba / ZONE_LBAS) as u32).map(|_| None),
        };
        match r {
            Ok(value) => Answer { status: Status::Success, value },
            Err(status) => Answer { status, value: None },
        }
    }

    fn range(slba: u64, nlb: u32, mdts: bool) -> Result<u32, Status> {
        if nlb == 0 || (mdts && nlb > MDTS_LBAS) {
            return Err(Status::InvalidField);
        }
        if slba + u64::from(nlb) > ZONE_LBAS * u64::from(ZONES) {
            return Err(Status::LbaOutOfRange);
        }
        Ok((slba / ZONE_LBAS) as u32)
    }

    fn cap_end(&self, zone: u32) -> u64 {
        Self::zslba(zone) + self.s.zcap
    }

    fn write(&mut self, slba: u64, nlb: u32, byte: u8, mdts: bool) -> Result<(), Status> {
        let zone = Self::range(slba, nlb, mdts)?;
        let z = self.zone(zone);
        let end = slba + u64::from(nlb);
        if z.state == ZoneState::Full {
            return Err(Status::ZoneIsFull);
        }
        let in_window = slba >= z.wp && end <= z.wp + 2 * self.s.zrwa;
        if (z.zrwa && !in_window) || (!z.zrwa && slba != z.wp) {
            return Err(Status::ZoneInvalidWrite);
        }
        if end > self.cap_end(zone) {
            return Err(Status::ZoneBoundaryError);
        }
        self.take_for_write(zone)?;
        let advance = match z.zrwa {
            true => end.saturating_sub(z.wp + self.s.zrwa).div_ceil(self.s.fg) * self.s.fg,
            false => u64::from(nlb),
        };
        self.advance(zone, advance);
        self.data[slba as usize..end as usize].fill(byte);
        Ok(())
    }

    fn append(&mut self, zslba: u64, nlb: u32, byte: u8) -> Result<u64, Status> {
        let zone = Self::range(zslba, nlb, true)?;
        let z = self.zone(zone);
        if z.zrwa {
            return Err(Status::InvalidZoneOperation);
        }
        if z.state == ZoneState::Full {
            return Err(Status::ZoneIsFull);
        }
        if z.wp + u64::from(nlb) > self.cap_end(zone) {
            return Err(Status::ZoneBoundaryError);
        }
        self.take_for_write(zone)?;
        self.advance(zone, u64::from(nlb));
        self.data[z.wp as usize..(z.wp + u64::from(nlb)) as usize].fill(byte);
        Ok(z.wp)
    }

    fn read(&self, slba: u64, nlb: u32) -> Result<u64, Status> {
        let zone = Self::range(slba, nlb, true)?;
        if slba + u64::from(nlb) > Self::zslba(zone) + ZONE_LBAS {
            return Err(Status::ZoneBoundaryError);
        }
        let blocks = &self.data[slba as usize..(slba + u64::from(nlb)) as usize];
        Ok(if blocks.iter().all(|&b| b == blocks[0]) { u64::from(blocks[0]) | 1 << 32 } else { u64::MAX })
    }

    /// A write's resources: an empty or closed zone opens implicitly.
    fn take_for_write(&mut self, zone: u32) -> Result<(), Status> {
        if matches!(self.zone(zone).state, ZoneState::Empty | ZoneState::Closed) {
            self.make_room(zone, false)?;
            self.set_state(zone, ZoneState::ImplicitlyOpened);
        }
        Ok(())
    }

    fn advance(&mut self, zone: u32, lbas: u64) {
        self.zones[zone as usize].wp += lbas;
        if self.zone(zone).wp == self.cap_end(zone) {
            self.set_state(zone, ZoneState::Full);
        }
    }

    fn make_room(&mut self, zone: u32, zrwa: bool) -> Result<(), Status> {
        let z = self.zone(zone);
        if z.state != ZoneState::Closed && self.active >= self.s.active {
            return Err(Status::TooManyActiveZones);
        }
        let open_full = self.open >= self.s.open;
        if open_full && self.implicit.is_empty() {
            return Err(Status::TooManyOpenZones);
        }
        if zrwa && !z.zrwa && self.held >= self.s.resources {
            return Err(Status::ZrwaResourcesUnavailable);
        }
        if open_full {
            let victim = self.implicit[0];
            self.set_state(victim, ZoneState::Closed);
        }
        Ok(())
    }

    fn set_state(&mut self, zone: u32, state: ZoneState) {
        let is_open = |s: ZoneState| matches!(s, ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened);
        let is_active = |s: ZoneState| is_open(s) || s == ZoneState::Closed;
        let old = self.zone(zone).state;
        self.open = self.open - u32::from(is_open(old)) + u32::from(is_open(state));
        self.active = self.active - u32::from(is_active(old)) + u32::from(is_active(state));
        self.implicit.retain(|&z| z != zone);
        if state == ZoneState::ImplicitlyOpened {
            self.implicit.push(zone);
        }
        let z = &mut self.zones[zone as usize];
        z.state = state;
        if z.zrwa && !is_active(state) {
            z.zrwa = false;
            self.held -= 1;
        }
    }

    fn mgmt(&mut self, action: ZoneAction, zone: u32) -> Result<(), Status> {
        use ZoneState::*;
        let z = self.zone(zone);
        let bad = Err(Status::ZoneInvalidStateTransition);
        match (action, z.state) {
            (ZoneAction::Open, Empty | Closed) => self.make_room(zone, false)?,
            (ZoneAction::Open, ImplicitlyOpened | ExplicitlyOpened) => {}
            (ZoneAction::OpenZrwa, _) => return self.open_zrwa(zone),
            (ZoneAction::Close, ImplicitlyOpened | ExplicitlyOpened) => {
                self.set_state(zone, Closed);
                return Ok(());
            }
            (ZoneAction::Close, Closed) => return Ok(()),
            (ZoneAction::Finish, Empty | ImplicitlyOpened | ExplicitlyOpened | Closed) => {
                self.set_state(zone, Full);
                self.zones[zone as usize].wp = self.cap_end(zone);
                return Ok(());
            }
            (ZoneAction::Finish, Full) => return Ok(()),
            (ZoneAction::Reset, _) => {
                self.set_state(zone, Empty);
                self.zones[zone as usize].wp = Self::zslba(zone);
                let at = Self::zslba(zone) as usize;
                self.data[at..at + ZONE_LBAS as usize].fill(0);
                return Ok(());
            }
            _ => return bad,
        }
        self.set_state(zone, ExplicitlyOpened);
        Ok(())
    }

    fn open_zrwa(&mut self, zone: u32) -> Result<(), Status> {
        let z = self.zone(zone);
        if !(z.wp - Self::zslba(zone)).is_multiple_of(self.s.fg) {
            return Err(Status::ZrwaResourcesUnavailable);
        }
        match z.state {
            ZoneState::Empty | ZoneState::Closed => self.make_room(zone, true)?,
            ZoneState::ImplicitlyOpened | ZoneState::ExplicitlyOpened => {
                if !z.zrwa && self.held >= self.s.resources {
                    return Err(Status::ZrwaResourcesUnavailable);
                }
            }
            _ => return Err(Status::ZoneInvalidStateTransition),
        }
        self.set_state(zone, ZoneState::ExplicitlyOpened);
        if !z.zrwa {
            self.zones[zone as usize].zrwa = true;
            self.held += 1;
        }
        Ok(())
    }

    fn flush(&mut self, elba: u64) -> Result<(), Status> {
        if elba >= ZONE_LBAS * u64::from(ZONES) {
            return Err(Status::LbaOutOfRange);
        }
        let zone = (elba / ZONE_LBAS) as u32;
        let z = self.zone(zone);
        if !self.s.explicit || !z.zrwa {
            return Err(Status::InvalidField);
        }
        if elba < z.wp || elba >= z.wp + self.s.zrwa || elba >= self.cap_end(zone) {
            return Err(Status::ZoneBoundaryError);
        }
        let lbas = elba + 1 - z.wp;
        if !lbas.is_multiple_of(self.s.fg) {
            return Err(Status::InvalidField);
        }
        self.take_for_write(zone)?;
        self.advance(zone, lbas);
        Ok(())
    }
}
