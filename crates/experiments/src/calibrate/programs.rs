//! Seed 000's custom SPDK programs as command sequences sent straight to
//! the device (no host stack, as SPDK). Each returns latency lists in µs.

use super::background::IoOp;
use super::plan::{DeviceRun, Occupancy};
use super::rows::Op;
use crate::characterization::device_runs::{fill, mgmt, reset_run_on, submit, us};
use crate::error::Result;
use zonelab_device::{Command, Device, DeviceConfig, Payload, ZoneAction};
use zonelab_sim::{SimRng, MS, SEC};

/// Samples per Fig 5 point (the paper times every zone of the drive; a few suffice in a deterministic model).
const OCCUPANCY_SAMPLES: u64 = 6;
/// QD-1 operations per steady-state run, of which the second half is kept.
const QD1_OPS: u64 = 2000;
const OPEN_CLOSE_SAMPLES: u64 = 100;
/// Closes per open/close run: enough for a p99 (the drive's run 2 has 1,806).
const CLOSE_SAMPLES: u64 = 1000;
/// The benchmark sleeps a second before each close it times (close_test.cpp).
const IDLE_BEFORE_CLOSE_NS: u64 = SEC;
/// Full zones reset back to back in a Fig 7 run.
const FIG7_RESETS: u64 = 12;

pub fn run(config: DeviceConfig, run: &DeviceRun, seed: u64) -> Result<Vec<Vec<f64>>> {
    let dev = Device::with_tracking(config, zonelab_device::Tracking::NONE)?;
    match run {
        DeviceRun::Occupancy { op, occupancy, opened } => occupancy_run(dev, *op, *occupancy, *opened).map(|l| vec![l]),
        DeviceRun::Qd1 { op, bs } => qd1(dev, *op, *bs, seed).map(|l| vec![l]),
        DeviceRun::OpenClose => open_close(dev),
        DeviceRun::CloseWritten { implicit } => close_written(dev, *implicit).map(|l| vec![l]),
        DeviceRun::FirstIo { op, bs } => first_io(dev, *op, *bs).map(|l| vec![l]),
        DeviceRun::ResetBeside { io } => {
            let (resets, ios) = reset_run_on(dev, io.0, FIG7_RESETS)?;
            Ok(vec![resets, ios])
        }
    }
}

fn occupancy_run(mut dev: Device, op: Op, occupancy: Occupancy, opened: bool) -> Result<Vec<f64>> {
    let (zl, zcap) = (dev.layout().zone_lbas, dev.layout().zcap_lbas);
    let lbas = match occupancy {
        Occupancy::Lbas(n) => n.min(zcap),
        Occupancy::CentiPct(c) => zcap * u64::from(c) / 10_000,
        Occupancy::AllButOne => zcap - 1,
    };
    let mut t = 0;
    let mut out = Vec::new();
    for i in 0..OCCUPANCY_SAMPLES {
        let zone = 10 + i;
        // The paper opens each zone explicitly before filling it; a full zone needs no open.
        if opened && lbas < zcap {
            t = submit(&mut dev, t, &mgmt(ZoneAction::Open, zone * zl))?.complete_ns;
        }
        t = fill(&mut dev, zone, lbas, t)? + SEC;
        let action = if op == Op::Finish { ZoneAction::Finish } else { ZoneAction::Reset };
        if op == Op::ResetAfterFinish && lbas < zcap {
            t = submit(&mut dev, t, &mgmt(ZoneAction::Finish, zone * zl))?.complete_ns + SEC;
        }
        let c = submit(&mut dev, t, &mgmt(action, zone * zl))?;
        out.push(us(&c));
        t = c.complete_ns;
    }
    Ok(out)
}

fn qd1(mut dev: Device, op: IoOp, bs: u64, seed: u64) -> Result<Vec<f64>> {
    let (zl, zcap, lba) = (dev.layout().zone_lbas, dev.layout().zcap_lbas, dev.layout().lba_bytes);
    let nlb = (bs / lba).max(1) as u32;
    let mut t = 0;
    if op == IoOp::RandRead || op == IoOp::Read {
        t = fill(&mut dev, 500, zcap, t)? + SEC;
    } else {
        t = submit(&mut dev, t, &mgmt(ZoneAction::Open, 600 * zl))?.complete_ns;
    }
    let mut rng = SimRng::new(seed);
    let mut out = Vec::new();
    for i in 0..QD1_OPS {
        let at = u64::from(nlb) * i % (zcap - u64::from(nlb));
        let cmd = match op {
            IoOp::RandRead => Command::Read { slba: 500 * zl + rng.below(zcap / u64::from(nlb)) * u64::from(nlb), nlb },
            IoOp::Read => Command::Read { slba: 500 * zl + at, nlb },
            IoOp::Write | IoOp::RandWrite => {
                Command::Write { slba: 600 * zl + at, nlb, payload: Payload::None, fua: false, placement: None }
            }
            IoOp::Append => Command::Append { zslba: 600 * zl, nlb, payload: Payload::None, fua: false },
        };
        let c = submit(&mut dev, t, &cmd)?;
        if i >= QD1_OPS / 2 {
            out.push(us(&c));
        }
        t = c.complete_ns;
    }
    Ok(out)
}

/// Closes of zones that hold a 4 KiB write, opened explicitly or by the write.
fn close_written(mut dev: Device, implicit: bool) -> Result<Vec<f64>> {
    let (zl, lba) = (dev.layout().zone_lbas, dev.layout().lba_bytes);
    let nlb = (4096 / lba).max(1) as u32;
    let (mut closes, mut t) = (Vec::new(), 0);
    for i in 0..CLOSE_SAMPLES {
        let zone = close_zone(&dev, i);
        if !implicit {
            t = submit(&mut dev, t, &mgmt(ZoneAction::Open, zone * zl))?.complete_ns;
        }
        let write = Command::Write { slba: zone * zl, nlb, payload: Payload::None, fua: false, placement: None };
        t = submit(&mut dev, t, &write)?.complete_ns;
        let close = submit(&mut dev, t + IDLE_BEFORE_CLOSE_NS, &mgmt(ZoneAction::Close, zone * zl))?;
        closes.push(us(&close));
        // A closed zone stays active: reset it, and let its work end before the next zone.
        t = submit(&mut dev, close.complete_ns, &mgmt(ZoneAction::Reset, zone * zl))?.complete_ns + MS;
    }
    Ok(closes)
}

/// The first write or append of `bs` into each of a series of empty zones.
fn first_io(mut dev: Device, op: IoOp, bs: u64) -> Result<Vec<f64>> {
    let (zl, lba) = (dev.layout().zone_lbas, dev.layout().lba_bytes);
    let nlb = (bs / lba).max(1) as u32;
    let (mut out, mut t) = (Vec::new(), 0);
    for zone in 100..100 + OPEN_CLOSE_SAMPLES {
        let cmd = match op {
            IoOp::Append => Command::Append { zslba: zone * zl, nlb, payload: Payload::None, fua: false },
            _ => Command::Write { slba: zone * zl, nlb, payload: Payload::None, fua: false, placement: None },
        };
        let c = submit(&mut dev, t, &cmd)?;
        out.push(us(&c));
        t = submit(&mut dev, c.complete_ns, &mgmt(ZoneAction::Reset, zone * zl))?.complete_ns + MS;
    }
    Ok(out)
}

/// The zone of the `i`-th close: from zone 100 on, as the other programs,
/// and round again (each is reset after its close) on a drive with fewer.
fn close_zone(dev: &Device, i: u64) -> u64 {
    let span = u64::from(dev.layout().zones).saturating_sub(100).max(1);
    100 + i % span
}

fn open_close(mut dev: Device) -> Result<Vec<Vec<f64>>> {
    let zl = dev.layout().zone_lbas;
    let (mut opens, mut closes) = (Vec::new(), Vec::new());
    let mut t = 0;
    for i in 0..CLOSE_SAMPLES {
        let zone = close_zone(&dev, i);
        let open = submit(&mut dev, t, &mgmt(ZoneAction::Open, zone * zl))?;
        let close = submit(&mut dev, open.complete_ns + IDLE_BEFORE_CLOSE_NS, &mgmt(ZoneAction::Close, zone * zl))?;
        opens.push(us(&open));
        closes.push(us(&close));
        // A closed zone stays active: reset it, or the device's active-zone limit stops the run.
        t = submit(&mut dev, close.complete_ns, &mgmt(ZoneAction::Reset, zone * zl))?.complete_ns;
    }
    Ok(vec![opens, closes])
}
