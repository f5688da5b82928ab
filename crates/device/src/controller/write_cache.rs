//! Durability of each sequential zone's data: which LBAs are in the
//! controller, which are on flash (or saved by a Flush or FUA write), and
//! when each got there.
//!
//! Everything is kept as zone offsets. A zone's data reaches the controller
//! piece by piece (`pieces`) and becomes durable range by range (`durable`:
//! program units as their programs end, everything below the fill point at a
//! Flush). Both are known when the command is accepted, with times that may
//! lie in the future; a power cut at `at_ns` keeps the longest prefix whose
//! ranges were durable (or, with power-loss protection, in the controller)
//! by then. Entries whose time has passed the latest submission are merged
//! into a settled prefix: a power cut never happens before a command that
//! was already submitted, so they can no longer be undone.

use std::collections::VecDeque;
use zonelab_sim::Nanos;

/// Entries one zone keeps before it is settled; beyond it the oldest are
/// merged early (they end long before any power cut that can still happen,
/// since a zone's buffer holds only a few program units).
const ZONE_ENTRIES_MAX: usize = 4096;

/// A range of zone offsets `[start, end)` and the time it reached a place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u64,
    end: u64,
    at_ns: Nanos,
}

/// A write not completed yet, for power cuts that lose such writes whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pending {
    start: u64,
    complete_ns: Nanos,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct ZoneDurability {
    /// Offsets below this are in the controller for good.
    taken_lbas: u64,
    /// Offsets below this are durable for good.
    durable_lbas: u64,
    /// Highest offset taken in (the fill point).
    filled_lbas: u64,
    pieces: VecDeque<Span>,
    durable: VecDeque<Span>,
    writes: VecDeque<Pending>,
    /// After a power cut: offsets below this lie in units issued to flash
    /// before it, which are not programmed again.
    pub(crate) reissued_end_lbas: u64,
    /// Waiting spans that trigger the next full merge pass.
    pieces_pass_len: usize,
    durable_pass_len: usize,
}

/// Extends `prefix` over the spans that start at or below it and were in
/// place by `at_ns`. Spans may overlap and come in any order; they mostly
/// come in offset order, so one pass extends the prefix and a second finds
/// nothing more.
fn prefix_at(mut prefix: u64, spans: &VecDeque<Span>, at_ns: Nanos) -> u64 {
    // Bound: each pass but the last moves the prefix past one more span.
    for _ in 0..=spans.len() {
        let before = prefix;
        for s in spans {
            if s.at_ns <= at_ns && s.start <= prefix && s.end > prefix {
                prefix = s.end;
            }
        }
        if prefix == before {
            break;
        }
    }
    prefix
}

/// Spans a zone keeps before a full merge pass (spans that arrived out of
/// offset order wait behind the oldest until then).
const ZONE_ENTRIES_QUICK: usize = 32;

/// Merges into `prefix` what is final by `now_ns` and drops the spans below
/// it: the oldest first (the usual order, cheap), all of them once more
/// than `pass_len` wait (then twice as many before the next full pass, so
/// spans waiting for a time far ahead cost amortized constant time).
fn settle(prefix: &mut u64, spans: &mut VecDeque<Span>, pass_len: &mut usize, now_ns: Nanos) {
    while let Some(s) = spans.front().filter(|s| s.at_ns <= now_ns && s.start <= *prefix) {
        *prefix = (*prefix).max(s.end);
        spans.pop_front();
    }
    if spans.len() > (*pass_len).max(ZONE_ENTRIES_QUICK) {
        *prefix = prefix_at(*prefix, spans, now_ns);
        let p = *prefix;
        spans.retain(|s| s.end > p);
        *pass_len = (spans.len() * 2).min(ZONE_ENTRIES_MAX / 2);
    }
    while spans.len() > ZONE_ENTRIES_MAX {
        let oldest = spans.pop_front().expect("over the bound");
        *prefix = (*prefix).max(oldest.end);
    }
}

impl ZoneDurability {
    /// `lbas` LBAs from offset `start` are in the controller at `at_ns`.
    pub(crate) fn fill(&mut self, start: u64, lbas: u64, at_ns: Nanos, now_ns: Nanos) {
        self.pieces.push_back(Span { start, end: start + lbas, at_ns });
        self.filled_lbas = self.filled_lbas.max(start + lbas);
        settle(&mut self.taken_lbas, &mut self.pieces, &mut self.pieces_pass_len, now_ns);
    }

    /// `[start, end)` is durable from `at_ns` on (a program ended, a Flush).
    pub(crate) fn durable(&mut self, start: u64, end: u64, at_ns: Nanos, now_ns: Nanos) {
        if end > start {
            self.durable.push_back(Span { start, end, at_ns });
        }
        settle(&mut self.durable_lbas, &mut self.durable, &mut self.durable_pass_len, now_ns);
    }

    /// A write from offset `start` completes at `complete_ns`.
    pub(crate) fn write_issued(&mut self, start: u64, complete_ns: Nanos, now_ns: Nanos) {
        while self.writes.front().is_some_and(|w| w.complete_ns <= now_ns) {
            self.writes.pop_front();
        }
        self.writes.push_back(Pending { start, complete_ns });
        while self.writes.len() > ZONE_ENTRIES_MAX {
            self.writes.pop_front();
        }
    }

    pub(crate) fn filled_lbas(&self) -> u64 {
        self.filled_lbas
    }

    /// Offsets in the controller at `at_ns`, as one prefix.
    pub(crate) fn taken_prefix(&self, at_ns: Nanos) -> u64 {
        prefix_at(self.taken_lbas, &self.pieces, at_ns)
    }

    /// Offsets durable at `at_ns`, as one prefix.
    pub(crate) fn durable_prefix(&self, at_ns: Nanos) -> u64 {
        prefix_at(self.durable_lbas, &self.durable, at_ns).min(self.taken_prefix(at_ns))
    }

    /// Where the first write not complete at `at_ns` started, if any.
    pub(crate) fn first_incomplete(&self, at_ns: Nanos) -> Option<u64> {
        self.writes.iter().filter(|w| w.complete_ns > at_ns).map(|w| w.start).min()
    }

    /// After a power cut: the zone holds `[0, lbas)`, all of it durable.
    pub(crate) fn recovered(&mut self, lbas: u64) {
        *self = ZoneDurability { taken_lbas: lbas, durable_lbas: lbas, filled_lbas: lbas, ..Default::default() };
    }
}

/// Durability of every zone's data.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteCache {
    zones: Vec<ZoneDurability>,
}

impl WriteCache {
    pub(crate) fn new(zones: u32) -> Self {
        Self { zones: vec![ZoneDurability::default(); zones as usize] }
    }

    /// Durability of `zone`'s data.
    #[inline]
    pub(crate) fn zone(&self, zone: u32) -> &ZoneDurability {
        &self.zones[zone as usize]
    }

    /// Durability of `zone`'s data, to note what happens to it.
    #[inline]
    pub(crate) fn zone_mut(&mut self, zone: u32) -> &mut ZoneDurability {
        &mut self.zones[zone as usize]
    }

    /// The zone was reset, went offline or was TL_opened: nothing of it is
    /// in the buffer any more.
    pub(crate) fn discard(&mut self, zone: u32) {
        self.zones[zone as usize] = ZoneDurability::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_follows_spans_in_any_order_and_stops_at_a_hole() {
        let mut z = ZoneDurability::default();
        z.fill(0, 8, 100, 0);
        z.fill(8, 8, 200, 0);
        z.fill(16, 8, 300, 0);
        z.durable(8, 16, 1_000, 0);
        z.durable(0, 8, 2_000, 0);
        assert_eq!(z.taken_prefix(250), 16);
        assert_eq!(z.durable_prefix(1_500), 0, "the first range is not durable yet");
        assert_eq!(z.durable_prefix(2_000), 16);
        assert_eq!(z.durable_prefix(u64::MAX), 16, "never durable past what was taken in");
    }

    #[test]
    fn settled_entries_are_dropped() {
        let mut z = ZoneDurability::default();
        z.fill(0, 8, 100, 0);
        z.durable(0, 8, 500, 0);
        z.fill(8, 8, 600, 1_000);
        z.durable(8, 16, 700, 1_000);
        assert_eq!((z.taken_lbas, z.durable_lbas), (16, 16));
        assert!(z.pieces.is_empty() && z.durable.is_empty());
    }

    #[test]
    fn spans_out_of_order_settle_once_many_wait() {
        let mut z = ZoneDurability::default();
        // Reverse order: the oldest span never starts at the prefix.
        for i in (0..=ZONE_ENTRIES_QUICK as u64).rev() {
            z.durable(i * 8, i * 8 + 8, 10, 100);
        }
        z.fill(0, (ZONE_ENTRIES_QUICK as u64 + 1) * 8, 10, 100);
        assert_eq!(z.durable_lbas, (ZONE_ENTRIES_QUICK as u64 + 1) * 8);
        assert!(z.durable.is_empty());
    }

    #[test]
    fn incomplete_writes_are_found_by_completion_time() {
        let mut z = ZoneDurability::default();
        z.write_issued(0, 100, 0);
        z.write_issued(8, 300, 0);
        assert_eq!(z.first_incomplete(50), Some(0));
        assert_eq!(z.first_incomplete(200), Some(8));
        assert_eq!(z.first_incomplete(300), None);
    }
}
