//! A ZNS+ command sequence as text: a `device` line (preset, zone size and
//! capacity, resource limits, plugging), `set PATH=VALUE` lines, then one
//! operation a line, each with the simulated time to wait before it
//! (`gap=NS`, or `gap=done`: when the command before it completed).
//! Operations name zones and offsets, not LBAs, and are resolved against
//! the reference model when they run, so that most of them are accepted
//! and reach deep states (TL_opened zones, copybacks, plugs). The parser is
//! lenient: a line it does not understand is skipped, and numbers are
//! taken modulo their range, so mutated text still runs.

use zonelab_device::ZoneAction;
use zonelab_sim::SimRng;

/// The presets a sequence may run on: the zoned ones (sn640 is a
/// conventional drive).
pub const PRESETS: [&str; 4] = ["mlc", "tlc", "zn540", "znand"];
/// Zone sizes, KiB.
const ZONE_KIB: [u64; 3] = [256, 1024, 4096];
/// Settings a sequence may change, each with the values it may take: the
/// management designs and timings, plugging and copyback limits.
const SETS: [(&str, &[&str]); 10] = [
    ("management.finish_ns", &["0ns", "5us", "400us"]),
    ("management.reset_ns", &["0ns", "1550us"]),
    ("management.host_priority", &["true", "false"]),
    ("management.finish.design", &["metadata"]),
    ("management.finish.pause_ns", &["0ns", "100us"]),
    ("management.finish.preempt", &["true", "false"]),
    ("management.finish.pad_turns", &["true", "false"]),
    ("management.reset.erase_at", &["sync", "async", "deferred"]),
    ("znsplus.copyback_chain_max", &["0", "1", "2", "4"]),
    ("write_buffer.cache", &["plp", "volatile"]),
];

/// The device a sequence runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setup {
    /// One of [`PRESETS`].
    pub preset: String,
    /// Zone size, KiB.
    pub zone_kib: u64,
    /// Zone capacity, KiB (at most the size).
    pub zcap_kib: u64,
    /// Maximum open zones.
    pub max_open: u32,
    /// Maximum active zones (at least the open ones).
    pub max_active: u32,
    /// LBA-ordered plugging (else PPA-ordered).
    pub lba_ordered: bool,
    /// Further `PATH=VALUE` settings.
    pub sets: Vec<(String, String)>,
}

/// When an operation is submitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gap {
    /// This long after the one before it was submitted.
    Ns(u64),
    /// When the one before it completed.
    Done,
}

/// One operation, resolved against the model when it runs. The fields are
/// the keys of its line; zones are indices, offsets are LBAs into a zone.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Op {
    /// At the write pointer plus `skip` (TL zones: moved on to the next invalid block).
    Write { zone: u32, skip: u64, nlb: u32, p: u8 },
    /// Zone Append.
    Append { zone: u32, nlb: u32, p: u8 },
    /// A read within one zone (`offset` into it).
    Read { zone: u32, offset: u64, nlb: u32 },
    /// Blocks of `src_zone` (offsets `src`) to `dst_zone` from its write pointer, `gaps` apart.
    Compact { src_zone: u32, src: Vec<u64>, dst_zone: u32, gaps: Vec<u64> },
    /// Whole chunks, so that copyback can happen.
    CompactChunks { src_zone: u32, chunks: Vec<u64>, dst_zone: u32 },
    /// Simple Copy of (zone, offset, blocks) ranges to `dst_zone`'s write pointer plus `skip`.
    SimpleCopy { ranges: Vec<(u32, u64, u32)>, dst_zone: u32, skip: u64 },
    /// TL_open with a valid bitmap drawn from `seed` at `density` (0-3; 3: whole chunks).
    TlOpen { zone: u32, seed: u64, density: u8 },
    /// Zone Management Send.
    Mgmt { action: ZoneAction, zone: u32, all: bool },
    /// The vendor command that reports the zone-to-block mapping.
    IdentifyMapping,
}

/// A whole sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sequence {
    /// The device.
    pub setup: Setup,
    /// The operations and when each is submitted.
    pub ops: Vec<(Op, Gap)>,
}

/// Operations a generated sequence holds at most.
pub const OPS_MAX: usize = 160;
/// Zones of every sequence's device.
pub const ZONES: u32 = 8;
/// Blocks a read, write or append takes at most: within every preset's
/// MDTS (128 KiB of 4 KiB blocks at least), which the model does not check.
const NLB_MAX: u64 = 32;

const ACTIONS: [(ZoneAction, &str); 4] = [
    (ZoneAction::Open, "open"),
    (ZoneAction::Close, "close"),
    (ZoneAction::Finish, "finish"),
    (ZoneAction::Reset, "reset"),
];

fn pick<'a, T>(rng: &mut SimRng, items: &'a [T]) -> &'a T {
    &items[rng.below(items.len() as u64) as usize]
}

/// A sequence drawn from `rng`: a device, then up to [`OPS_MAX`] operations.
pub fn generate(rng: &mut SimRng) -> Sequence {
    let zone_kib = *pick(rng, &ZONE_KIB);
    let max_open = 1 + rng.below(4) as u32;
    let mut sets = Vec::new();
    for (path, values) in SETS {
        if rng.chance(0.25) {
            sets.push((path.to_string(), pick(rng, values).to_string()));
        }
    }
    let setup = Setup {
        preset: pick(rng, &PRESETS).to_string(),
        zone_kib,
        zcap_kib: if rng.chance(0.5) { zone_kib } else { zone_kib / 2 },
        max_open,
        max_active: max_open + rng.below(3) as u32,
        lba_ordered: rng.chance(0.5),
        sets,
    };
    let zone_lbas = zone_kib / 4;
    let n = 1 + rng.below(OPS_MAX as u64) as usize;
    let ops = (0..n).map(|_| (generate_op(rng, zone_lbas), generate_gap(rng))).collect();
    Sequence { setup, ops }
}

fn generate_gap(rng: &mut SimRng) -> Gap {
    match rng.below(8) {
        0..=2 => Gap::Ns(0),
        3 => Gap::Ns(rng.below(20_000)),
        4 | 5 => Gap::Ns(rng.below(3_000_000)),
        6 => Gap::Ns(rng.below(200_000_000)),
        _ => Gap::Done,
    }
}

fn generate_op(rng: &mut SimRng, zone_lbas: u64) -> Op {
    let zone = rng.below(u64::from(ZONES)) as u32;
    let small = |rng: &mut SimRng| if rng.chance(0.8) { 0 } else { rng.below(6) };
    match rng.below(100) {
        0..=24 => Op::Write { zone, skip: small(rng), nlb: 1 + rng.below(16) as u32, p: 1 + rng.below(255) as u8 },
        25..=31 => Op::Append { zone, nlb: 1 + rng.below(8) as u32, p: 1 + rng.below(255) as u8 },
        32..=44 => Op::Read { zone, offset: rng.below(zone_lbas), nlb: 1 + rng.below(16) as u32 },
        45..=55 => {
            let src = (0..1 + rng.below(12)).map(|_| rng.below(zone_lbas)).collect();
            let gaps = (0..12).map(|_| if rng.chance(0.8) { 0 } else { 1 + rng.below(2) }).collect();
            Op::Compact { src_zone: rng.below(u64::from(ZONES)) as u32, src, dst_zone: zone, gaps }
        }
        56..=62 => {
            let chunks = (0..1 + rng.below(4)).map(|_| rng.below(zone_lbas / 4)).collect();
            Op::CompactChunks { src_zone: rng.below(u64::from(ZONES)) as u32, chunks, dst_zone: zone }
        }
        63..=67 => {
            let ranges = (0..1 + rng.below(3))
                .map(|_| (rng.below(u64::from(ZONES)) as u32, rng.below(zone_lbas), 1 + rng.below(6) as u32))
                .collect();
            Op::SimpleCopy { ranges, dst_zone: zone, skip: if rng.chance(0.8) { 0 } else { 1 } }
        }
        68..=75 => Op::TlOpen { zone, seed: rng.next_u64(), density: rng.below(4) as u8 },
        76..=97 => Op::Mgmt { action: pick(rng, &ACTIONS).0, zone, all: rng.chance(0.15) },
        _ => Op::IdentifyMapping,
    }
}

impl Op {
    /// The operation's name, the first word of its line.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Write { .. } => "write",
            Op::Append { .. } => "append",
            Op::Read { .. } => "read",
            Op::Compact { .. } => "compact",
            Op::CompactChunks { .. } => "compact_chunks",
            Op::SimpleCopy { .. } => "simple_copy",
            Op::TlOpen { .. } => "tl_open",
            Op::Mgmt { .. } => "mgmt",
            Op::IdentifyMapping => "identify_mapping",
        }
    }
}

fn list(values: impl IntoIterator<Item = String>) -> String {
    values.into_iter().collect::<Vec<_>>().join(",")
}

impl std::fmt::Display for Sequence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = &self.setup;
        writeln!(f, "# zonelab-fuzz znsplus: a device line, set lines, then one operation a line")?;
        let plugging = if s.lba_ordered { "lba" } else { "ppa" };
        writeln!(
            f,
            "device {} zone_kib={} zcap_kib={} max_open={} max_active={} plugging={plugging}",
            s.preset, s.zone_kib, s.zcap_kib, s.max_open, s.max_active
        )?;
        for (path, value) in &s.sets {
            writeln!(f, "set {path}={value}")?;
        }
        for (op, gap) in &self.ops {
            let gap = match gap {
                Gap::Ns(ns) => ns.to_string(),
                Gap::Done => "done".into(),
            };
            writeln!(f, "{} gap={gap}", op_text(op))?;
        }
        Ok(())
    }
}

fn op_text(op: &Op) -> String {
    let nums = |v: &[u64]| list(v.iter().map(u64::to_string));
    match op {
        Op::Write { zone, skip, nlb, p } => format!("write zone={zone} skip={skip} nlb={nlb} p={p}"),
        Op::Append { zone, nlb, p } => format!("append zone={zone} nlb={nlb} p={p}"),
        Op::Read { zone, offset, nlb } => format!("read zone={zone} offset={offset} nlb={nlb}"),
        Op::Compact { src_zone, src, dst_zone, gaps } => {
            format!("compact src_zone={src_zone} src={} dst_zone={dst_zone} gaps={}", nums(src), nums(gaps))
        }
        Op::CompactChunks { src_zone, chunks, dst_zone } => {
            format!("compact_chunks src_zone={src_zone} chunks={} dst_zone={dst_zone}", nums(chunks))
        }
        Op::SimpleCopy { ranges, dst_zone, skip } => format!(
            "simple_copy ranges={} dst_zone={dst_zone} skip={skip}",
            list(ranges.iter().map(|(z, o, n)| format!("{z}:{o}:{n}")))
        ),
        Op::TlOpen { zone, seed, density } => format!("tl_open zone={zone} seed={seed} density={density}"),
        Op::Mgmt { action, zone, all } => {
            let name = ACTIONS.iter().find(|(a, _)| a == action).map_or("open", |(_, n)| n);
            format!("mgmt action={name} zone={zone} all={all}")
        }
        Op::IdentifyMapping => "identify_mapping".into(),
    }
}

/// The `key=value` words of a line.
struct Words<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Words<'a> {
    fn of(rest: impl Iterator<Item = &'a str>) -> Self {
        Words(rest.filter_map(|w| w.split_once('=')).collect())
    }

    fn text(&self, key: &str) -> &'a str {
        self.0.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| v)
    }

    /// A number modulo `bound` (0 if missing or not a number).
    fn num(&self, key: &str, bound: u64) -> u64 {
        number(self.text(key)) % bound.max(1)
    }

    /// A count in 1..=`max` (a number taken modulo `max`, where 0 is `max`).
    fn count(&self, key: &str, max: u64) -> u64 {
        number(self.text(key)).wrapping_sub(1) % max.max(1) + 1
    }

    /// A list of numbers, each modulo `bound`, at most `max` of them.
    fn nums(&self, key: &str, bound: u64, max: usize) -> Vec<u64> {
        self.text(key).split(',').take(max).map(|w| number(w) % bound.max(1)).collect()
    }
}

fn number(word: &str) -> u64 {
    word.parse::<u64>().or_else(|_| word.parse::<i128>().map(|n| n as u64)).unwrap_or(0)
}

/// Parses a sequence (see the module comment); `None` without a device line.
pub fn parse(text: &str) -> Option<Sequence> {
    let mut setup = None;
    let mut sets = Vec::new();
    let mut ops = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        let Some(head) = words.next() else { continue };
        match head {
            "device" => setup = Some(parse_setup(words.next().unwrap_or(""), &Words::of(words))),
            "set" => {
                if let Some((path, value)) = line["set".len()..].trim().split_once('=') {
                    sets.push((path.trim().to_string(), value.trim().to_string()));
                }
            }
            _ if ops.len() < 4 * OPS_MAX => {
                let w = Words::of(words);
                let zone_lbas = setup.as_ref().map_or(64, |s: &Setup| s.zone_kib / 4);
                if let Some(op) = parse_op(head, &w, zone_lbas) {
                    let gap = if w.text("gap") == "done" { Gap::Done } else { Gap::Ns(w.num("gap", 1 << 40)) };
                    ops.push((op, gap));
                }
            }
            _ => {}
        }
    }
    let mut setup = setup?;
    setup.sets = sets;
    Some(Sequence { setup, ops })
}

fn parse_setup(preset: &str, w: &Words) -> Setup {
    let zone_kib = ZONE_KIB.into_iter().find(|&k| k == w.num("zone_kib", u64::MAX)).unwrap_or(ZONE_KIB[0]);
    let max_open = w.count("max_open", u64::from(ZONES)) as u32;
    Setup {
        preset: if PRESETS.contains(&preset) { preset.to_string() } else { PRESETS[0].to_string() },
        zone_kib,
        zcap_kib: if w.num("zcap_kib", u64::MAX) == zone_kib / 2 { zone_kib / 2 } else { zone_kib },
        max_open: max_open.min(ZONES),
        max_active: (w.num("max_active", 9) as u32).clamp(max_open, ZONES),
        lba_ordered: w.text("plugging") == "lba",
        sets: Vec::new(),
    }
}

fn parse_op(head: &str, w: &Words, zone_lbas: u64) -> Option<Op> {
    let zones = u64::from(ZONES);
    let zone = w.num("zone", zones) as u32;
    let p = || w.count("p", 255) as u8;
    Some(match head {
        "write" => Op::Write { zone, skip: w.num("skip", 8), nlb: w.count("nlb", NLB_MAX) as u32, p: p() },
        "append" => Op::Append { zone, nlb: w.count("nlb", NLB_MAX) as u32, p: p() },
        "read" => Op::Read { zone, offset: w.num("offset", zone_lbas), nlb: w.count("nlb", NLB_MAX) as u32 },
        "compact" => Op::Compact {
            src_zone: w.num("src_zone", zones) as u32,
            src: w.nums("src", zone_lbas, 64),
            dst_zone: w.num("dst_zone", zones) as u32,
            gaps: w.nums("gaps", 4, 64),
        },
        "compact_chunks" => Op::CompactChunks {
            src_zone: w.num("src_zone", zones) as u32,
            chunks: w.nums("chunks", zone_lbas, 16),
            dst_zone: w.num("dst_zone", zones) as u32,
        },
        "simple_copy" => Op::SimpleCopy {
            ranges: w.text("ranges").split(',').take(8).map(|r| range(r, zone_lbas)).collect(),
            dst_zone: w.num("dst_zone", zones) as u32,
            skip: w.num("skip", 4),
        },
        "tl_open" => Op::TlOpen { zone, seed: number(w.text("seed")), density: w.num("density", 4) as u8 },
        "mgmt" => Op::Mgmt {
            action: ACTIONS.iter().find(|(_, n)| *n == w.text("action")).map_or(ZoneAction::Open, |(a, _)| *a),
            zone,
            all: w.text("all") == "true",
        },
        "identify_mapping" => Op::IdentifyMapping,
        _ => return None,
    })
}

fn range(text: &str, zone_lbas: u64) -> (u32, u64, u32) {
    let mut parts = text.split(':').map(number);
    let zone = parts.next().unwrap_or(0) % u64::from(ZONES);
    let offset = parts.next().unwrap_or(0) % zone_lbas;
    let nlb = parts.next().unwrap_or(0).wrapping_sub(1) % 16 + 1;
    (zone as u32, offset, nlb as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_sequence_reads_back_as_itself() {
        for i in 0..200 {
            let seq = generate(&mut SimRng::fork(7, i));
            let text = seq.to_string();
            assert_eq!(parse(&text).as_ref(), Some(&seq), "{text}");
        }
    }

    #[test]
    fn mangled_lines_are_skipped_or_wrapped() {
        let seq = parse("device nope zone_kib=-1\nwrite zone=99 nlb=x gap=done\nbogus\nmgmt action=? all=1").unwrap();
        assert_eq!(seq.setup.preset, "mlc");
        assert_eq!(seq.ops.len(), 2);
        assert_eq!(seq.ops[0], (Op::Write { zone: 99 % ZONES, skip: 0, nlb: NLB_MAX as u32, p: 1 }, Gap::Done));
    }
}
