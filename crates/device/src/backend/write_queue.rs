//! Host writes waiting for a page-mapped namespace's FTL core
//! (`conventional.write_order_window`).
//!
//! A write's mapping work holds the FTL core; at the core's limit writes
//! wait for it. With a window of N the core takes the next write from among
//! the N that came first, each as likely, as a controller that holds N
//! commands and serves them in no particular order; the others wait on.
//! Seed 001's conventional namespace shows that order: random 4 KiB writes
//! at QD 16 have a median of 181 µs and a p95 of 963 µs around a mean of 284
//! (a queue served in arrival order would give every write about the mean).
//!
//! A write that finds the core free and no write waiting is served at once,
//! as in arrival order, so below the core's limit nothing changes. One that
//! waits is a pending command: the device takes its next step when the core
//! frees ([`crate::Device::next_event_ns`]) and delivers its completion with
//! the management commands' ([`crate::Device::take_completed`]).

use super::Arrival;
use crate::front::command::Tag;
use std::collections::VecDeque;
use zonelab_sim::{Nanos, SimRng};

/// Writes waiting at most: beyond them a write is served in arrival order
/// (a host keeps far fewer in flight; the bound keeps a misbehaving one to
/// linear work).
const WAITING_MAX: usize = 1 << 16;

/// An accepted write waiting for the FTL core, with what its service needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct QueuedWrite {
    pub(crate) tag: Tag,
    pub(crate) submit_ns: Nanos,
    /// When the command reached the controller (its data may start coming).
    pub(crate) arrived_ns: Nanos,
    /// When its firmware-core stage ends: it may take the FTL core from then.
    pub(crate) ready_ns: Nanos,
    pub(crate) slba: u64,
    pub(crate) nlb: u32,
    /// Its stage on the FTL core (the command waits for it).
    pub(crate) ftl_ns: Nanos,
    /// The FTL core's work after it (merging a partly covered mapping unit).
    pub(crate) after_ns: Nanos,
    pub(crate) arrival: Arrival,
    pub(crate) fua: bool,
}

/// The writes waiting for the FTL core, in arrival order, and the order the
/// core takes them in.
#[derive(Debug, Clone)]
pub(crate) struct WriteQueue {
    /// How many of the first waiting writes the core chooses among (1:
    /// arrival order, as with `spread.on = false`).
    window: usize,
    rng: SimRng,
    waiting: VecDeque<QueuedWrite>,
}

impl WriteQueue {
    /// A queue whose core takes one of the first `window` (at least 2)
    /// waiting writes at random, drawn from `seed`; in arrival order when
    /// `spread` is off.
    pub(crate) fn new(window: u32, seed: u64, spread: bool) -> Self {
        assert!(window >= 2, "validation: a window of 2 or more");
        let window = if spread { window as usize } else { 1 };
        Self { window, rng: SimRng::new(seed ^ 0x5752_4954_455f_5143), waiting: VecDeque::new() }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.waiting.is_empty()
    }

    pub(crate) fn len(&self) -> usize {
        self.waiting.len()
    }

    /// Whether a write may wait (the bound not reached).
    pub(crate) fn has_room(&self) -> bool {
        self.waiting.len() < WAITING_MAX
    }

    pub(crate) fn holds(&self, tag: Tag) -> bool {
        self.waiting.iter().any(|w| w.tag == tag)
    }

    pub(crate) fn push(&mut self, write: QueuedWrite) {
        assert!(self.has_room(), "the caller checks the bound");
        // Firmware stages end in arrival order, so the first waiting write is the first ready.
        debug_assert!(self.waiting.back().is_none_or(|w| w.ready_ns <= write.ready_ns));
        self.waiting.push_back(write);
    }

    /// When the core, free from `core_free_ns`, takes its next write; `None`
    /// with none waiting.
    pub(crate) fn next_start_ns(&self, core_free_ns: Nanos) -> Option<Nanos> {
        self.waiting.front().map(|w| w.ready_ns.max(core_free_ns))
    }

    /// The write the core takes at `start_ns` (from [`Self::next_start_ns`]):
    /// one of the first `window` that are ready by then, each as likely.
    pub(crate) fn take(&mut self, start_ns: Nanos) -> QueuedWrite {
        let ready = self.waiting.iter().take(self.window).take_while(|w| w.ready_ns <= start_ns).count();
        assert!(ready > 0, "the first waiting write is ready when the core takes one");
        let pick = if ready > 1 { usize::try_from(self.rng.below(ready as u64)).expect("below the window") } else { 0 };
        let write = self.waiting.remove(pick).expect("a ready write");
        // Postcondition: the core never takes a write before it is ready.
        debug_assert!(write.ready_ns <= start_ns);
        write
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(tag: Tag, ready_ns: Nanos) -> QueuedWrite {
        QueuedWrite {
            tag,
            submit_ns: ready_ns,
            arrived_ns: ready_ns,
            ready_ns,
            slba: tag * 8,
            nlb: 8,
            ftl_ns: 1_000,
            after_ns: 0,
            arrival: Arrival { link: true, placement: None },
            fua: false,
        }
    }

    fn served_order(window: u32, spread: bool, n: u64) -> Vec<Tag> {
        let mut q = WriteQueue::new(window, 7, spread);
        for tag in 0..n {
            q.push(write(tag, 0));
        }
        (0..n).map(|_| q.take(0).tag).collect()
    }

    #[test]
    fn the_core_takes_one_of_the_first_window_writes_each_as_likely() {
        // Over many draws from 8 waiting with a window of 4, the first
        // taken is one of the first 4, each about a quarter of the time.
        let mut counts = [0u32; 8];
        for seed in 0..4000u64 {
            let mut q = WriteQueue::new(4, seed, true);
            for tag in 0..8 {
                q.push(write(tag, 0));
            }
            counts[usize::try_from(q.take(0).tag).expect("a small tag")] += 1;
        }
        assert!(counts[4..].iter().all(|&c| c == 0), "{counts:?}");
        assert!(counts[..4].iter().all(|&c| (850..1150).contains(&c)), "{counts:?}");
    }

    #[test]
    fn without_spread_the_core_takes_writes_in_arrival_order() {
        assert_eq!(served_order(32, false, 6), vec![0, 1, 2, 3, 4, 5]);
        let shuffled = served_order(32, true, 6);
        assert_ne!(shuffled, vec![0, 1, 2, 3, 4, 5], "a window of 32 reorders six waiting writes");
        let mut sorted = shuffled.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![0, 1, 2, 3, 4, 5], "every write is served once");
    }

    #[test]
    fn a_write_not_ready_when_the_core_frees_is_not_taken() {
        let mut q = WriteQueue::new(8, 1, true);
        q.push(write(0, 100));
        q.push(write(1, 500));
        assert_eq!(q.next_start_ns(50), Some(100));
        // At 100 only the first is ready: it is taken whatever the draw.
        assert_eq!(q.take(100).tag, 0);
        assert_eq!(q.next_start_ns(200), Some(500));
        assert_eq!(q.take(500).tag, 1);
        assert!(q.is_empty());
    }
}
