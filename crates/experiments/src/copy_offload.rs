//! In-storage copy (ZNS+ zone_compaction) against a host read-then-write of
//! the same blocks over the link, on the TLC, MLC and ZNAND devices of seed
//! 002 Table 2.
//!
//! The victim is zone 0, fully written; its valid blocks follow a fixed
//! pattern: four of every five chunks fully valid, the fifth with two valid
//! blocks. The first `blocks` valid blocks are copied to zone 1 at the same
//! zone offsets (copyback-aware allocation, §3.3.1: a fully valid chunk
//! lands on the same die, so it can be copied back; the half-valid chunks go
//! through the controller). The host baseline reads the same blocks (runs of
//! consecutive blocks, up to MDTS, all queued at once), then, once every
//! read is back, writes them densely to zone 1 the same way, as F2FS does.
//! Times run from the first command to the last completion.

use crate::error::{Error, Result};
use zonelab_device::{preset, Command, Device, DeviceOptions, Payload, ZoneAction};
use zonelab_sim::{Nanos, SEC};

/// One medium's result.
#[derive(Debug, Clone, PartialEq)]
pub struct CopyOffloadRow {
    /// The flash medium (a preset).
    pub medium: &'static str,
    /// Valid blocks copied.
    pub blocks: u64,
    /// zone_compaction, copyback allowed.
    pub in_storage_ns: Nanos,
    /// zone_compaction with copyback disabled (read + program in the device).
    pub in_storage_no_copyback_ns: Nanos,
    /// Host reads, then host writes, over the link.
    pub host_ns: Nanos,
    /// Share of the copied blocks moved by copyback.
    pub copyback_ratio: f64,
}

/// The media the study compares, as preset names.
pub const MEDIA: [&str; 3] = ["tlc", "mlc", "znand"];

/// Blocks of one chunk in the presets (16 KiB pages of 4 KiB blocks).
const CHUNK: u64 = 4;

/// Runs the comparison for `blocks` blocks (1 ..= 80% of a zone) on every medium.
pub fn copy_offload(blocks: u64) -> Result<Vec<CopyOffloadRow>> {
    MEDIA.iter().map(|m| copy_offload_on(m, blocks)).collect()
}

/// The comparison on one preset.
pub fn copy_offload_on(medium: &'static str, blocks: u64) -> Result<CopyOffloadRow> {
    let (copy_ns, copyback_ratio) = in_storage(medium, blocks, true)?;
    let (no_copyback_ns, _) = in_storage(medium, blocks, false)?;
    let host_ns = host_copy(medium, blocks)?;
    Ok(CopyOffloadRow {
        medium,
        blocks,
        in_storage_ns: copy_ns,
        in_storage_no_copyback_ns: no_copyback_ns,
        host_ns,
        copyback_ratio,
    })
}

fn device(medium: &str, copyback: bool) -> Result<Device> {
    let config = preset(medium).ok_or_else(|| Error::Invalid(format!("unknown medium '{medium}'")))?;
    let chain = if copyback { "4" } else { "0" };
    let opts = DeviceOptions {
        zones: Some(16),
        sets: vec![("znsplus.copyback_chain_max".into(), chain.into())],
        ..Default::default()
    };
    let config = opts.apply(config)?;
    Ok(Device::with_tracking(config, zonelab_device::Tracking::NONE)?)
}

/// Writes zone 0 in full; returns when the device is idle again.
fn fill_victim(dev: &mut Device) -> Nanos {
    let zcap = dev.layout().zcap_lbas;
    let nlb = dev.layout().mdts_lbas.min(zcap);
    let mut t = 0;
    let mut lba = 0;
    while lba < zcap {
        let n = nlb.min(zcap - lba) as u32;
        t = dev
            .submit(
                t,
                &Command::Write { slba: lba, nlb: n, payload: Payload::Pattern(1), fua: false, placement: None },
                None,
            )
            .complete_ns;
        lba += u64::from(n);
    }
    t + SEC
}

/// The first `blocks` valid block offsets of the victim.
fn valid_offsets(zcap: u64, blocks: u64) -> Result<Vec<u64>> {
    let offsets: Vec<u64> = (0..zcap)
        .filter(|o| {
            let (chunk, block) = (o / CHUNK, o % CHUNK);
            chunk % 5 != 4 || block < 2
        })
        .take(blocks as usize)
        .collect();
    if blocks == 0 || (offsets.len() as u64) < blocks {
        let valid = offsets.len();
        return Err(Error::Invalid(format!(
            "blocks = {blocks} must be between 1 and {valid} (the victim's valid blocks)"
        )));
    }
    Ok(offsets)
}

fn in_storage(medium: &str, blocks: u64, copyback: bool) -> Result<(Nanos, f64)> {
    let mut dev = device(medium, copyback)?;
    let start = fill_victim(&mut dev);
    let zone_lbas = dev.layout().zone_lbas;
    let src = valid_offsets(dev.layout().zcap_lbas, blocks)?;
    let dst: Vec<u64> = src.iter().map(|o| zone_lbas + o).collect();
    let c = dev.submit(start, &Command::ZoneCompaction { src: &src, dst: &dst }, None);
    if !c.status.is_success() {
        return Err(Error::Failed(format!("{medium}: zone_compaction failed: {}", c.status)));
    }
    Ok((c.complete_ns - start, dev.znsplus_counters().copyback_ratio()))
}

/// Runs of consecutive offsets, each at most `max` long.
fn runs(offsets: &[u64], max: u64) -> Vec<(u64, u32)> {
    let mut out: Vec<(u64, u32)> = Vec::new();
    for &o in offsets {
        match out.last_mut() {
            Some((s, n)) if *s + u64::from(*n) == o && u64::from(*n) < max => *n += 1,
            _ => out.push((o, 1)),
        }
    }
    out
}

fn host_copy(medium: &str, blocks: u64) -> Result<Nanos> {
    let mut dev = device(medium, true)?;
    let start = fill_victim(&mut dev);
    let mdts = dev.layout().mdts_lbas;
    let zone_lbas = dev.layout().zone_lbas;
    let src = valid_offsets(dev.layout().zcap_lbas, blocks)?;
    let mut reads_done = start;
    for (slba, nlb) in runs(&src, mdts) {
        let c = dev.submit(start, &Command::Read { slba, nlb }, None);
        reads_done = reads_done.max(c.complete_ns);
    }
    let dense: Vec<u64> = (zone_lbas..zone_lbas + blocks).collect();
    let mut done = reads_done;
    for (slba, nlb) in runs(&dense, mdts) {
        let c = dev.submit(
            reads_done,
            &Command::Write { slba, nlb, payload: Payload::None, fua: false, placement: None },
            None,
        );
        if !c.status.is_success() {
            return Err(Error::Failed(format!("{medium}: host write failed: {}", c.status)));
        }
        done = done.max(c.complete_ns);
    }
    // The host's copy is done when its data is durable, as the in-storage copy's is.
    let f = dev.submit(
        done,
        &Command::ZoneMgmtSend { action: ZoneAction::Finish, slba: zone_lbas, select_all: false },
        None,
    );
    Ok(f.complete_ns.max(dev.flash().die_free_at_ns(0)) - start)
}

/// The rows as a table.
pub fn render(rows: &[CopyOffloadRow]) -> String {
    let mut s =
        String::from("medium  blocks  in-storage ms  (no copyback)  host read+write ms  saving  copyback ratio\n");
    for r in rows {
        let ms = |ns: Nanos| ns as f64 / 1e6;
        s.push_str(&format!(
            "{:<6}  {:>6}  {:>13.2}  {:>13.2}  {:>18.2}  {:>5.1}%  {:>14.2}\n",
            r.medium,
            r.blocks,
            ms(r.in_storage_ns),
            ms(r.in_storage_no_copyback_ns),
            ms(r.host_ns),
            100.0 * (1.0 - r.in_storage_ns as f64 / r.host_ns as f64),
            r.copyback_ratio
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_storage_copy_beats_the_host_and_copyback_helps() {
        let rows = copy_offload(2048).unwrap();
        eprintln!("{}", render(&rows));
        for r in &rows {
            assert!(r.in_storage_ns < r.host_ns, "{r:?}");
            assert!(r.in_storage_ns < r.in_storage_no_copyback_ns, "{r:?}");
            // 4 of every 5 chunks fully valid: 16 of every 18 blocks.
            assert!((r.copyback_ratio - 16.0 / 18.0).abs() < 0.01, "{r:?}");
        }
        assert_eq!(copy_offload(2048).unwrap(), rows, "deterministic");
        assert!(copy_offload(0).is_err());
    }
}
