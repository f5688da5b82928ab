//! The structure-aware `znsplus` target: sequences of ZNS+ commands
//! (zone_compaction, Simple Copy, TL_open, identify_mapping) mixed with
//! writes, appends, reads, opens, closes, finishes and resets, some of them
//! submitted before the one before them completed, on small data-mode
//! devices of every preset with varied management designs and timings.
//! Each command's status, an append's LBA, every block read, and after
//! each command every zone's state, write pointer and TL_opened flag must
//! agree with the reference model ([`reference`](mod@reference)); a panic, a hang or a
//! disagreement is a finding.

pub mod reference;
pub mod sequence;

use crate::targets::Failure;
use reference::{Geometry, Model};
use sequence::{Gap, Op, Sequence, Setup, ZONES};
use zonelab_device::{
    preset, CmdResult, Command, Completion, Device, DeviceOptions, Payload, SourceRange, Status, ZnsPlusCounters,
    ZoneState,
};
use zonelab_sim::{Nanos, SimRng};

/// The target: parse (a text without a device line runs nothing), build the
/// device, run the sequence against the model.
pub fn run_text(input: &str) -> Result<(), Failure> {
    let Some(seq) = sequence::parse(input) else { return Ok(()) };
    run(&seq).map(|_| ())
}

/// Input `index` of a run with seed `seed`: a generated sequence, as text.
pub fn generate(rng: &mut SimRng) -> String {
    sequence::generate(rng).to_string()
}

/// The device of `setup`; `None` when the preset refuses its settings (a
/// setting a preset cannot take is not what this target looks for).
pub fn device(setup: &Setup) -> Option<Device> {
    let mut sets = vec![("znsplus.plugging".to_string(), if setup.lba_ordered { "lba" } else { "ppa" }.to_string())];
    sets.extend(setup.sets.iter().cloned());
    let opts = DeviceOptions {
        zones: Some(ZONES),
        conventional_zones: Some(0),
        zone_size_bytes: Some(setup.zone_kib << 10),
        zone_capacity_bytes: Some(setup.zcap_kib << 10),
        max_open_zones: Some(setup.max_open),
        max_active_zones: Some(setup.max_active),
        lba_bytes: Some(4096),
        data: true,
        sets,
        capacity_bytes: None,
    };
    let config = opts.apply(preset(&setup.preset)?).ok()?;
    config.validate().ok()?;
    Device::new(config).ok()
}

/// The geometry and limits of `device`, for the model.
pub fn geometry(device: &Device) -> Geometry {
    let l = device.layout();
    let c = device.config();
    Geometry {
        zones: l.zones,
        zone_lbas: l.zone_lbas,
        zcap_lbas: l.zcap_lbas,
        chunk_lbas: l.lbas_per_chunk,
        max_open: c.namespace.max_open_zones,
        max_active: c.namespace.max_active_zones,
    }
}

/// A disagreement between the device and the model.
fn mismatch(i: usize, op: &Op, what: String) -> Failure {
    Failure::Mismatch(format!("op {i} ({op:?}): {what}"))
}

/// What a run reached: operations accepted, by kind, for checking that
/// generated sequences get past the devices' checks.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Reached {
    /// Whether the device could be built.
    pub built: bool,
    /// Accepted operations, by [`Op::kind`].
    pub accepted: std::collections::BTreeMap<&'static str, u64>,
    /// Refused ones, by kind.
    pub refused: std::collections::BTreeMap<&'static str, u64>,
    /// What the ZNS+ commands did (copybacks, plugs) by the end.
    pub counters: ZnsPlusCounters,
}

/// Runs `seq` on its device and the model; the first disagreement is the
/// error.
pub fn run(seq: &Sequence) -> Result<Reached, Failure> {
    let Some(dev) = device(&seq.setup) else { return Ok(Reached::default()) };
    let model = Model::new(geometry(&dev), seq.setup.lba_ordered);
    run_on(dev, model, &seq.ops)
}

/// Runs `ops` on `dev` and `model`, which start alike (for tests, they
/// need not).
pub fn run_on(mut dev: Device, mut model: Model, ops: &[(Op, Gap)]) -> Result<Reached, Failure> {
    let mut reached = Reached { built: true, ..Default::default() };
    let mut now: Nanos = 0;
    let mut last_done: Nanos = 0;
    for (i, (op, gap)) in ops.iter().enumerate() {
        now = match gap {
            Gap::Ns(ns) => now.saturating_add(*ns),
            Gap::Done => now.max(last_done),
        };
        let c = step(&mut dev, &mut model, now, op).map_err(|what| mismatch(i, op, what))?;
        if c.complete_ns < c.submit_ns || c.submit_ns < now {
            return Err(mismatch(i, op, format!("completion {c:?} before its submission at {now}")));
        }
        last_done = c.complete_ns;
        zones_agree(&dev, &model).map_err(|what| mismatch(i, op, what))?;
        let tally = if c.status == Status::Success { &mut reached.accepted } else { &mut reached.refused };
        *tally.entry(op.kind()).or_default() += 1;
    }
    every_block_agrees(&mut dev, &model, last_done.max(now))?;
    reached.counters = dev.znsplus_counters();
    Ok(reached)
}

/// Runs one operation on both; the device's completion, or what disagreed.
fn step(dev: &mut Device, model: &mut Model, now: Nanos, op: &Op) -> Result<Completion, String> {
    let g = model.geometry;
    let (c, want) = match op {
        Op::Write { zone, skip, nlb, p } => {
            let slba = target(model, *zone, *skip);
            let cmd = Command::Write { slba, nlb: *nlb, payload: Payload::Pattern(*p), fua: false, placement: None };
            (dev.submit(now, &cmd, None), status(&model.write(slba, *nlb, *p)))
        }
        Op::Append { zone, nlb, p } => {
            let cmd = Command::Append { zslba: g.zslba(*zone), nlb: *nlb, payload: Payload::Pattern(*p), fua: false };
            let c = dev.submit(now, &cmd, None);
            let want = model.append(*zone, *nlb, *p);
            if let Ok(lba) = want {
                if c.result != CmdResult::Lba(lba) {
                    return Err(format!("append went to {:?}, the model says LBA {lba}", c.result));
                }
            }
            (c, status(&want))
        }
        Op::Read { zone, offset, nlb } => return read(dev, model, now, g.zslba(*zone) + offset, *nlb),
        Op::Compact { src_zone, src, dst_zone, gaps } => {
            let src: Vec<u64> = src.iter().map(|o| g.zslba(*src_zone) + o).collect();
            let dst = compaction_targets(model, *dst_zone, gaps, src.len());
            (
                dev.submit(now, &Command::ZoneCompaction { src: &src, dst: &dst }, None),
                status(&model.copy(&src, &dst, false)),
            )
        }
        Op::CompactChunks { src_zone, chunks, dst_zone } => {
            let per = g.chunk_lbas;
            let src: Vec<u64> = chunks
                .iter()
                .map(|c| c % (g.zone_lbas / per).max(1))
                .flat_map(|c| (0..per).map(move |b| g.zslba(*src_zone) + c * per + b))
                .collect();
            let first = model.z(*dst_zone).wp.next_multiple_of(per);
            let dst: Vec<u64> = (first..first + src.len() as u64).collect();
            (
                dev.submit(now, &Command::ZoneCompaction { src: &src, dst: &dst }, None),
                status(&model.copy(&src, &dst, false)),
            )
        }
        Op::SimpleCopy { ranges, dst_zone, skip } => simple_copy(dev, model, now, ranges, *dst_zone, *skip),
        Op::TlOpen { zone, seed, density } => {
            let valid = bitmap(model, *zone, *seed, *density);
            let c = dev.submit(now, &Command::TlOpen { zslba: g.zslba(*zone), valid: &words(&valid) }, None);
            // The device may lack a free block group for the zone's log, a
            // resource the model does not track: then nothing changed.
            if c.status == Status::TooManyActiveZones && model.z(*zone).tl.is_none() {
                return Ok(c);
            }
            (c, status(&model.tl_open(*zone, &valid)))
        }
        Op::Mgmt { action, zone, all } => {
            let cmd = Command::ZoneMgmtSend { action: *action, slba: g.zslba(*zone), select_all: *all };
            (dev.submit(now, &cmd, None), status(&model.mgmt(*action, *zone, *all)))
        }
        Op::IdentifyMapping => (dev.submit(now, &Command::IdentifyMapping, None), Status::Success),
    };
    if c.status != want {
        return Err(format!("status {:?}, the model says {want:?}", c.status));
    }
    Ok(c)
}

fn simple_copy(
    dev: &mut Device,
    model: &mut Model,
    now: Nanos,
    ranges: &[(u32, u64, u32)],
    dst_zone: u32,
    skip: u64,
) -> (Completion, Status) {
    let g = model.geometry;
    let ranges: Vec<SourceRange> =
        ranges.iter().map(|&(z, o, nlb)| SourceRange { slba: g.zslba(z) + o, nlb }).collect();
    let src: Vec<u64> = ranges.iter().flat_map(|r| r.slba..r.slba + u64::from(r.nlb)).collect();
    let sdlba = target(model, dst_zone, skip);
    let c = dev.submit(now, &Command::SimpleCopy { ranges: &ranges, sdlba }, None);
    let want = if src.iter().any(|&l| l >= g.nsze()) || sdlba + src.len() as u64 > g.nsze() {
        Err(Status::LbaOutOfRange)
    } else {
        let dst: Vec<u64> = (sdlba..sdlba + src.len() as u64).collect();
        model.copy(&src, &dst, true)
    };
    (c, status(&want))
}

/// Destinations of a compaction into `zone`: from its write pointer, each
/// `gaps[k]` on from the one before, over valid blocks of a TL_opened zone.
fn compaction_targets(model: &Model, zone: u32, gaps: &[u64], n: usize) -> Vec<u64> {
    let mut dst = Vec::with_capacity(n);
    let wp = model.z(zone).wp;
    let mut next = wp;
    for k in 0..n {
        next = target(model, zone, next + gaps.get(k).copied().unwrap_or(0) - wp);
        dst.push(next);
        next += 1;
    }
    dst
}

fn read(dev: &mut Device, model: &Model, now: Nanos, lba: u64, nlb: u32) -> Result<Completion, String> {
    let g = model.geometry;
    let zone_end = g.zslba(g.zone_of(lba)) + g.zone_lbas;
    let nlb = nlb.min((zone_end - lba) as u32);
    let mut out = vec![0u8; nlb as usize * 4096];
    let c = dev.submit(now, &Command::Read { slba: lba, nlb }, Some(&mut out));
    let zone = model.z(g.zone_of(lba));
    let want = if zone.state == ZoneState::Offline { Status::ZoneIsOffline } else { Status::Success };
    if c.status != want {
        return Err(format!("read status {:?}, the model says {want:?}", c.status));
    }
    if c.status == Status::Success {
        blocks_agree(model, lba, &out)?;
    }
    Ok(c)
}

/// Every 4 KiB block of `out` (read from `lba` on) holds the model's value.
fn blocks_agree(model: &Model, lba: u64, out: &[u8]) -> Result<(), String> {
    for (b, block) in out.chunks(4096).enumerate() {
        let want = model.data[lba as usize + b];
        if let Some(got) = block.iter().find(|&&x| x != want) {
            return Err(format!("LBA {} holds {got}, the model says {want}", lba + b as u64));
        }
    }
    Ok(())
}

fn zones_agree(dev: &Device, model: &Model) -> Result<(), String> {
    for zone in 0..model.geometry.zones {
        let m = model.z(zone);
        let (state, wp, tl) = (dev.zones().state(zone), dev.zones().wp(zone), dev.is_tl_opened(zone));
        if (state, wp, tl) != (m.state, m.wp, m.tl.is_some()) {
            return Err(format!(
                "zone {zone} is {state:?} at {wp} (TL_opened {tl}), the model says {:?} at {} (TL_opened {})",
                m.state,
                m.wp,
                m.tl.is_some()
            ));
        }
    }
    Ok(())
}

/// At the end, every block of every zone reads as the model says.
fn every_block_agrees(dev: &mut Device, model: &Model, now: Nanos) -> Result<(), Failure> {
    let g = model.geometry;
    for zone in 0..g.zones {
        let mut lba = g.zslba(zone);
        // Bound: each pass reads 16 blocks of the zone.
        while lba < g.zslba(zone) + g.zone_lbas {
            read(dev, model, now, lba, 16).map_err(|what| Failure::Mismatch(format!("final read: {what}")))?;
            lba += 16;
        }
    }
    Ok(())
}

fn status<T>(r: &Result<T, Status>) -> Status {
    r.as_ref().err().copied().unwrap_or(Status::Success)
}

/// Destination of a write-like op: the write pointer plus `skip`, moved
/// forward in a TL_opened zone to the next block the host may write.
fn target(model: &Model, zone: u32, skip: u64) -> u64 {
    let g = model.geometry;
    let last = g.zcap_end(zone).saturating_sub(1);
    let mut lba = model.z(zone).wp + skip;
    while lba < last && model.valid(lba) {
        lba += 1;
    }
    lba
}

/// A valid bitmap over the blocks the zone holds: bits from a seed,
/// thinned by density (3: whole chunks only).
fn bitmap(model: &Model, zone: u32, seed: u64, density: u8) -> Vec<bool> {
    let g = model.geometry;
    let written = model.z(zone).wp - g.zslba(zone);
    (0..g.zcap_lbas)
        .map(|o| {
            let chunk_bit = (seed >> ((o / g.chunk_lbas) % 64)) & 1 == 1;
            let block_bit = (seed.rotate_left((o % 64) as u32 * 7) & 3) < u64::from(density);
            o < written && (if density == 3 { chunk_bit } else { chunk_bit && block_bit })
        })
        .collect()
}

fn words(valid: &[bool]) -> Vec<u64> {
    valid.chunks(64).map(|c| c.iter().enumerate().fold(0u64, |w, (i, &v)| w | u64::from(v) << i)).collect()
}
