//! The structure-aware `zrwa` target: sequences of writes, Write Zeroes,
//! appends, reads, opens (with and without ZRWA Allocate), closes,
//! finishes, resets and Flush Explicit ZRWA Range on a small data-mode zn540
//! whose namespace has a Zone Random Write Area (TP 4076) of a drawn size,
//! flush granularity and number of resources. Every status, append LBA and
//! block read, and after each command every zone's state, write pointer and
//! ZRWAV attribute must agree with the reference model below, written from
//! docs/command-semantics.md; a write pointer that moves backwards (but by a
//! reset) or past the zone capacity is a finding too.
//!
//! The text, one operation a line: a `device` line, then `w ZONE DELTA NLB
//! BYTE` (write at the write pointer plus DELTA, which may be negative),
//! `z ZONE DELTA NLB` (Write Zeroes), `a ZONE NLB BYTE` (append), `r ZONE
//! OFFSET NLB` (read), `o ZONE` and `O ZONE` (open, with ZRWA Allocate),
//! `c`, `f`, `x ZONE` (close, finish, reset), `F ZONE DELTA` (flush up to
//! the write pointer plus DELTA). Each may end with `@N`: submitted N ns
//! after the one before it, else when that one completed. Lines it does not
//! understand are skipped; numbers are taken modulo their range.

use crate::targets::Failure;
use model::{Model, Op};
use zonelab_device::{preset, CmdResult, Command, Completion, Device, DeviceOptions, Payload, ReadPattern, ZoneAction};
use zonelab_sim::SimRng;

pub mod model;

/// Zones of the device, of 256 LBAs (1 MiB) each.
pub const ZONES: u32 = 6;
/// LBAs per zone.
pub const ZONE_LBAS: u64 = 256;

/// The device a sequence runs on, in LBAs of 4 KiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    /// ZRWAS.
    pub zrwa: u64,
    /// ZRWAFG.
    pub fg: u64,
    /// NUMZRWA.
    pub resources: u32,
    /// Zone capacity.
    pub zcap: u64,
    /// Maximum open and active zones.
    pub open: u32,
    /// Maximum active zones.
    pub active: u32,
    /// Explicit commits allowed.
    pub explicit: bool,
}

/// Operations, each with its gap (None: when the one before completed).
pub type Ops = Vec<(Op, Option<u64>)>;

/// The sequence's device line and operations.
pub fn parse(input: &str) -> Option<(Setup, Ops)> {
    let mut lines = input.lines();
    let setup = parse_setup(lines.next()?)?;
    let ops = lines.filter_map(model::parse_op).collect();
    Some((setup, ops))
}

fn parse_setup(line: &str) -> Option<Setup> {
    let mut words = line.split_whitespace();
    if words.next()? != "device" {
        return None;
    }
    let mut n = || words.next().and_then(|w| w.parse::<u64>().ok());
    let zrwa = [4, 8, 16, 32][(n()? % 4) as usize];
    let fg = [1, 2, 4][(n()? % 3) as usize];
    let zcap = [48, 96, 128][(n()? % 3) as usize];
    let active = (n()? % 4 + 2) as u32;
    let open = (n()? % u64::from(active) + 1) as u32;
    let resources = (n()? % u64::from(active) + 1) as u32;
    let explicit = n()? % 4 != 0;
    Some(Setup { zrwa, fg: fg.min(zrwa), resources, zcap, open, active, explicit })
}

/// A generated sequence, as text.
pub fn generate(rng: &mut SimRng) -> String {
    let mut text = String::from("device");
    for _ in 0..7 {
        text.push_str(&format!(" {}", rng.below(12)));
    }
    text.push('\n');
    for _ in 0..rng.below(120) + 10 {
        text.push_str(&model::generate_op(rng));
        text.push('\n');
    }
    text
}

/// The target: parse (a text without a device line runs nothing), run the
/// sequence against the model.
pub fn run_text(input: &str) -> Result<(), Failure> {
    let Some((setup, ops)) = parse(input) else { return Ok(()) };
    run(setup, &ops)
}

/// The device of `setup`.
pub fn device(s: Setup) -> Device {
    let kib = |lbas: u64| format!("{}k", lbas * 4);
    let sets = vec![
        ("namespace.zrwa.size_bytes".to_string(), kib(s.zrwa)),
        ("namespace.zrwa.flush_granularity_bytes".to_string(), kib(s.fg)),
        ("namespace.zrwa.resources".to_string(), s.resources.to_string()),
        ("namespace.zrwa.explicit_commit".to_string(), s.explicit.to_string()),
    ];
    let opts = DeviceOptions {
        zones: Some(ZONES),
        zone_size_bytes: Some(ZONE_LBAS * 4096),
        zone_capacity_bytes: Some(s.zcap * 4096),
        max_open_zones: Some(s.open),
        max_active_zones: Some(s.active),
        data: true,
        sets,
        ..Default::default()
    };
    let config = opts.apply(preset("zn540").expect("zn540")).expect("a small zn540 with a ZRWA");
    Device::new(config).expect("every drawn setup is valid")
}

/// Runs `ops` on the device of `setup` and the model; the first disagreement is a finding.
pub fn run(setup: Setup, ops: &[(Op, Option<u64>)]) -> Result<(), Failure> {
    let mut dev = device(setup);
    let mut model = Model::new(setup);
    let (mut submit_ns, mut done_ns) = (0, 0);
    let mut wps: Vec<u64> = (0..ZONES).map(|z| dev.descriptor(z).wp).collect();
    for (i, &(op, gap)) in ops.iter().enumerate() {
        let cmd_op = model.resolve(op);
        submit_ns = match gap {
            Some(g) => submit_ns + g,
            None => done_ns,
        }
        .max(submit_ns);
        let cmd = command(&cmd_op);
        let c = dev.submit(submit_ns, &cmd, None);
        done_ns = c.complete_ns;
        let want = model.apply(&cmd_op);
        check(i, &cmd_op, &c, want)?;
        check_zones(i, &dev, &model)?;
        check_write_pointers(i, &dev, &cmd_op, setup.zcap, &mut wps)?;
    }
    Ok(())
}

/// Write pointers only move forwards (but by a reset) and never past the capacity.
fn check_write_pointers(i: usize, dev: &Device, op: &model::Cmd, zcap: u64, wps: &mut [u64]) -> Result<(), Failure> {
    let reset = match *op {
        model::Cmd::Mgmt { action: ZoneAction::Reset, slba } => Some(slba / ZONE_LBAS),
        _ => None,
    };
    for (zone, old) in (0..ZONES).zip(wps.iter_mut()) {
        let wp = dev.descriptor(zone).wp;
        let zslba = u64::from(zone) * ZONE_LBAS;
        if (wp < *old && reset != Some(u64::from(zone))) || wp > zslba + zcap {
            return Err(mismatch(
                i,
                format!("zone {zone}: write pointer {old} -> {wp} (capacity end {})", zslba + zcap),
            ));
        }
        *old = wp;
    }
    Ok(())
}

/// The device command of a resolved operation.
fn command(op: &model::Cmd) -> Command<'static> {
    use model::Cmd;
    let mgmt = |action, slba| Command::ZoneMgmtSend { action, slba, select_all: false };
    match *op {
        Cmd::Write { slba, nlb, byte } => {
            Command::Write { slba, nlb, payload: Payload::Pattern(byte), fua: false, placement: None }
        }
        Cmd::Zeroes { slba, nlb } => Command::WriteZeroes { slba, nlb, placement: None },
        Cmd::Append { zslba, nlb, byte } => Command::Append { zslba, nlb, payload: Payload::Pattern(byte), fua: false },
        Cmd::Read { slba, nlb } => Command::Read { slba, nlb },
        Cmd::Mgmt { action, slba } => mgmt(action, slba),
    }
}

fn mismatch(i: usize, what: String) -> Failure {
    Failure::Mismatch(format!("operation {i}: {what}"))
}

/// The completion against the model's answer.
fn check(i: usize, op: &model::Cmd, c: &Completion, want: model::Answer) -> Result<(), Failure> {
    if c.status != want.status {
        return Err(mismatch(i, format!("{op:?}: status {} (model {})", c.status, want.status)));
    }
    let got = match &c.result {
        CmdResult::Lba(lba) => Some(*lba),
        CmdResult::Read(ReadPattern::Uniform(b)) => Some(u64::from(*b) | 1 << 32),
        CmdResult::Read(ReadPattern::Mixed) => Some(u64::MAX),
        _ => None,
    };
    if got != want.value {
        return Err(mismatch(i, format!("{op:?}: result {got:?} (model {:?})", want.value)));
    }
    Ok(())
}

/// Every zone's state, write pointer and ZRWAV against the model's.
fn check_zones(i: usize, dev: &Device, model: &Model) -> Result<(), Failure> {
    for zone in 0..ZONES {
        let d = dev.descriptor(zone);
        let m = model.zone(zone);
        if (d.state, d.wp, d.zrwa) != (m.state, m.wp, m.zrwa) {
            let model = (m.state, m.wp, m.zrwa);
            return Err(mismatch(i, format!("zone {zone}: {:?} (model {model:?})", (d.state, d.wp, d.zrwa))));
        }
    }
    Ok(())
}
