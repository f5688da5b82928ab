//! Choosing what to recycle: the compaction victim (greedy or
//! cost-benefit), and at a log switch, hybrid segment recycling's choice
//! between threaded logging into a dirty segment and compaction, by the
//! costs of [`crate::hsr::Hsr`] (seed 002 §3.3.2, §4.3).

use crate::config::VictimPolicy;
use crate::hsr::PROFILE_WEIGHT;
use crate::sit::{Bitmap, LogType};
use crate::state::FsState;
use zonelab_device::ZonedDevice;
use zonelab_sim::Nanos;

/// Threaded logging needs at least 1/this of a segment free.
const TL_FREE_SHARE_MIN: u32 = 32;

pub(crate) fn needs_foreground_compaction<D: ZonedDevice>(fs: &FsState<D>) -> bool {
    let free = fs.sit.free_segs();
    let fg = fs.cfg.fg_free_segments;
    if fs.cfg.threaded_logging() {
        free < fg.div_ceil(2).max(2) || (fs.hsr.sc_requested && free < fg)
    } else {
        free < fg
    }
}

/// N_cold of `seg`: blocks unchanged across its last two
/// threaded-logging opens and still valid (compaction would move them).
/// Zero until the segment was TL_opened twice.
fn cold_blocks<D: ZonedDevice>(fs: &FsState<D>, seg: u32) -> u32 {
    let e = &fs.sit.segs[seg as usize];
    e.tl_cold.as_ref().map_or(0, |c| c.count_and(&e.valid))
}

/// Hybrid segment recycling at a log switch (seed 002 §4.3): the
/// threaded-logging candidate with the lowest C_TL against compaction's
/// best victim, C_SC. Candidates are dirty segments of the log's own type
/// and, as F2FS's SSR does when its own type has none cheap enough
/// (`FsConfig::tl_other_types`), of the other temperatures of the same
/// kind (data or node), so node and data never mix. `left`, the segment
/// the log is leaving, is one too (no log writes to it any more; its
/// TL_open waits for the log's last writes to it).
pub(crate) fn pick_threaded_segment<D: ZonedDevice>(
    fs: &mut FsState<D>,
    lt: LogType,
    left: Option<u32>,
) -> Option<(u32, Bitmap)> {
    if !fs.cfg.threaded_logging() {
        return None;
    }
    let free = fs.sit.free_segs();
    if free >= fs.cfg.fg_free_segments {
        return None;
    }
    let own = tl_candidate(fs, left, |t| t == Some(lt));
    let other = if fs.cfg.tl_other_types {
        tl_candidate(fs, left, |t| t != Some(lt) && t.is_some_and(|t| t.is_node() == lt.is_node()))
    } else {
        None
    };
    // Another type's segment only when it is cheaper to reclaim than the own type's best.
    let (seg, kept) = match (own, other) {
        (Some(o), Some(x)) if x.1.count() < o.1.count() => x,
        (Some(o), _) => o,
        (None, Some(x)) => x,
        (None, None) => return None,
    };
    let c_tl = fs.hsr.cost_threaded(kept.count());
    let c_sc = select_victim(fs, VictimPolicy::Greedy, 0)
        .map_or(f64::INFINITY, |v| fs.hsr.cost_compaction(fs.sit.segs[v as usize].valid_blocks, cold_blocks(fs, v)));
    if c_tl <= c_sc || free <= 1 {
        if fs.sit.segs[seg as usize].log_type != Some(lt) {
            fs.stats.tl_other_type_segments += 1;
        }
        return Some((seg, kept));
    }
    fs.stats.sc_chosen_by_cost += 1;
    fs.hsr.sc_requested = true;
    None
}

/// The dirty segment with the fewest blocks to keep among those whose
/// log type passes `accept`, and the blocks a TL_open would keep.
pub(crate) fn tl_candidate<D: ZonedDevice>(
    fs: &FsState<D>,
    left: Option<u32>,
    accept: impl Fn(Option<LogType>) -> bool,
) -> Option<(u32, Bitmap)> {
    (0..fs.segments())
        .filter(|&s| {
            let e = &fs.sit.segs[s as usize];
            accept(e.log_type)
                && !e.current
                && e.zone_written
                && !fs.sit.is_free_seg(s)
                && (left == Some(s) || !fs.left_segs.contains(&s))
                && fs.compacting != Some(s)
        })
        .map(|s| (s, kept_with_unplaced(fs, s)))
        // A segment with little free space is not worth a TL_open.
        .filter(|(_, k)| k.count() + fs.zone_blocks / TL_FREE_SHARE_MIN < fs.zone_blocks)
        .min_by_key(|(s, k)| (k.count(), *s))
}

/// The blocks a TL_open of `seg` keeps: [`Sit::kept_blocks`] and those
/// a log allocated there whose block is not placed yet (the segment a
/// log is leaving, as F2FS's SSR may pick any segment no log writes to).
fn kept_with_unplaced<D: ZonedDevice>(fs: &FsState<D>, seg: u32) -> Bitmap {
    let mut kept = fs.sit.kept_blocks(seg);
    let first = fs.addr_of(seg, 0);
    // Setting bits commutes: the set's order does not matter.
    for &a in fs.unplaced.iter().filter(|&&a| a >= first && a < first + fs.zone_blocks) {
        kept.set((a - first) as usize, true);
    }
    kept
}

/// At a threaded-logging open of `seg`: profiles β (the share of the
/// last N_cold blocks still valid now, seed 002 §4.3) and takes the new
/// N_cold set (valid now and at the previous open) and snapshot.
pub(crate) fn note_tl_open<D: ZonedDevice>(fs: &mut FsState<D>, seg: u32) {
    let e = &mut fs.sit.segs[seg as usize];
    if let Some(cold) = &e.tl_cold {
        let before = cold.count();
        if before > 0 {
            let sample = f64::from(cold.count_and(&e.valid)) / f64::from(before);
            fs.hsr.beta += PROFILE_WEIGHT * (sample - fs.hsr.beta);
        }
    }
    e.tl_cold = e.tl_snapshot.as_ref().map(|snap| {
        let words = snap.words().iter().zip(e.valid.words()).map(|(a, b)| a & b).collect();
        Bitmap::from_words(words)
    });
    e.tl_snapshot = Some(e.valid.clone());
}

/// The compaction victim: any dirty segment no log writes to.
pub(crate) fn select_victim<D: ZonedDevice>(fs: &FsState<D>, policy: VictimPolicy, now_ns: Nanos) -> Option<u32> {
    let zb = f64::from(fs.zone_blocks);
    let candidates = (0..fs.segments()).filter(|&s| {
        let e = &fs.sit.segs[s as usize];
        !e.current && !fs.sit.is_free_seg(s) && e.valid_blocks < fs.zone_blocks && !fs.left_segs.contains(&s)
    });
    match policy {
        VictimPolicy::Greedy => candidates.min_by_key(|&s| (fs.sit.segs[s as usize].valid_blocks, s)),
        VictimPolicy::CostBenefit => candidates
            .map(|s| {
                let e = &fs.sit.segs[s as usize];
                let u = f64::from(e.valid_blocks) / zb;
                let age = now_ns.saturating_sub(e.mtime_ns) as f64 + 1.0;
                (s, (1.0 - u) / (1.0 + u) * age)
            })
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(s, _)| s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::tiny_device;
    use crate::Fs;
    use crate::{FsConfig, Recycling};
    use zonelab_device::Device;

    /// Two dirty segments: a warm-data one keeping 56 of 64 blocks and a
    /// hot-data one keeping 8, with free segments below the threshold.
    fn fs_with_two_dirty_segments(tl_other_types: bool) -> (Fs, u32, u32) {
        let mut cfg = FsConfig::new(Recycling::ZnsPlus);
        cfg.tl_other_types = tl_other_types;
        cfg.fg_free_segments = 1000;
        let mut fs = Fs::mkfs(Device::new(tiny_device(24)).unwrap(), cfg).unwrap();
        let (warm, hot) = (fs.segments() - 1, fs.segments() - 2);
        for (seg, lt, valid) in [(warm, LogType::WarmData, 56), (hot, LogType::HotData, 8)] {
            for off in 0..valid {
                fs.sit.validate(seg, off, 0);
            }
            fs.sit.segs[seg as usize].log_type = Some(lt);
        }
        (fs, warm, hot)
    }

    #[test]
    fn threaded_logging_takes_another_types_segment_when_it_costs_less() {
        let (mut fs, _, hot) = fs_with_two_dirty_segments(true);
        let (seg, kept) = pick_threaded_segment(&mut fs, LogType::WarmData, None).expect("threaded logging is cheaper");
        assert_eq!(seg, hot, "the hot-data segment keeps 8 blocks, the warm one 56");
        assert_eq!(kept.count(), 8);
        assert_eq!(fs.stats.tl_other_type_segments, 1);
        // Node logs never take data segments.
        assert!(pick_threaded_segment(&mut fs, LogType::WarmNode, None).is_none());
    }

    #[test]
    fn own_type_only_threaded_logging_loses_to_compaction_by_cost() {
        let (mut fs, _, _) = fs_with_two_dirty_segments(false);
        // Plugging 56 blocks costs more than compacting the 8-block segment.
        assert!(pick_threaded_segment(&mut fs, LogType::WarmData, None).is_none());
        assert_eq!(fs.stats.sc_chosen_by_cost, 1);
        assert!(fs.hsr.sc_requested);
    }

    #[test]
    fn cold_blocks_need_two_threaded_logging_opens() {
        let (mut fs, warm, _) = fs_with_two_dirty_segments(true);
        note_tl_open(&mut fs, warm);
        assert_eq!(cold_blocks(&fs, warm), 0, "one open: nothing known to be unchanged yet");
        fs.sit.invalidate(warm, 0);
        note_tl_open(&mut fs, warm);
        assert_eq!(cold_blocks(&fs, warm), 55, "valid at both opens");
        let beta = fs.hsr.beta;
        fs.sit.invalidate(warm, 1);
        note_tl_open(&mut fs, warm);
        // 54 of the 55 cold blocks are still valid: β moves towards 54/55.
        assert!(fs.hsr.beta > beta, "β {beta} -> {}", fs.hsr.beta);
    }

    /// The segment a log is leaving is a threaded-logging candidate (F2FS's
    /// SSR takes any segment no log writes to), keeping the blocks the log
    /// allocated there but has not placed yet; other left segments are not.
    #[test]
    fn the_segment_a_log_leaves_is_a_threaded_logging_candidate() {
        let (mut fs, warm, hot) = fs_with_two_dirty_segments(false);
        // The hot segment full: no compaction victim but the left one.
        for off in 8..64 {
            fs.sit.validate(hot, off, 0);
        }
        for seg in [warm, hot] {
            fs.sit.segs[seg as usize].zone_written = true;
        }
        fs.left_segs.push(warm);
        let last = fs.addr_of(warm, 60);
        fs.unplaced.insert(last);
        assert!(pick_threaded_segment(&mut fs, LogType::WarmData, None).is_none(), "a left segment is no candidate");
        let (seg, kept) = pick_threaded_segment(&mut fs, LogType::WarmData, Some(warm)).expect("the segment just left");
        assert_eq!(seg, warm);
        assert_eq!(kept.count(), 57, "56 valid and the block allocated but not placed");
        assert!(kept.get(60));
    }
}
