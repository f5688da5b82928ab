//! A deterministic discrete-event queue.
//!
//! Events at the same time pop in the order they were scheduled, so a run
//! never depends on heap internals.

use crate::time::Nanos;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug)]
struct Entry<E> {
    at_ns: Nanos,
    seq: u64,
    event: E,
}

impl<E> Entry<E> {
    /// Time, then scheduling sequence, as one integer: the heap compares
    /// once, without branches. Built when compared, not stored: a stored
    /// u128 would align every entry to 16 bytes.
    #[inline]
    fn key(&self) -> u128 {
        u128::from(self.at_ns) << 64 | u128::from(self.seq)
    }
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// Error returned when a bounded queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueFull {
    /// Length the queue was created with, which the model tried to exceed.
    pub limit: usize,
}

impl std::fmt::Display for QueueFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "event queue full ({} events)", self.limit)
    }
}
impl std::error::Error for QueueFull {}

/// Min-queue of timed events with FIFO order among equal times and a hard
/// limit on its length, so that a runaway model fails loudly.
///
/// The earliest event is kept out of the heap when it was scheduled as the
/// earliest: a model that schedules one event ahead at a time (a thread at
/// queue depth 1 going from submission to completion to reaping) then never
/// touches the heap, whose pushes and pops cost more than the event itself.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// The next event to pop, when known: never later than any in `heap`.
    soonest: Option<Entry<E>>,
    heap: BinaryHeap<Reverse<Entry<E>>>,
    seq_next: u64,
    now_ns: Nanos,
    len_max: usize,
}

impl<E> EventQueue<E> {
    /// An empty queue at time 0 that refuses more than `len_max` pending events.
    pub fn new(len_max: usize) -> Self {
        assert!(len_max > 0);
        Self { soonest: None, heap: BinaryHeap::new(), seq_next: 0, now_ns: 0, len_max }
    }

    /// Time of the last popped event: the simulation clock.
    pub fn now_ns(&self) -> Nanos {
        self.now_ns
    }

    /// Number of events scheduled and not yet popped.
    pub fn len(&self) -> usize {
        self.heap.len() + usize::from(self.soonest.is_some())
    }

    /// True when no event is pending: the simulation has nothing left to do.
    pub fn is_empty(&self) -> bool {
        self.soonest.is_none() && self.heap.is_empty()
    }

    /// Schedules `event` at `at_ns`; scheduling into the past is a model bug.
    /// Inlined: scheduling into an empty queue is a few stores, the rest is
    /// out of line.
    #[inline(always)]
    pub fn schedule(&mut self, at_ns: Nanos, event: E) -> Result<(), QueueFull> {
        assert!(at_ns >= self.now_ns, "event scheduled in the past: {at_ns} < {}", self.now_ns);
        let entry = Entry { at_ns, seq: self.seq_next, event };
        self.seq_next += 1;
        if self.soonest.is_none() && self.heap.is_empty() {
            // `len_max` is at least 1: the one event fits.
            self.soonest = Some(entry);
            return Ok(());
        }
        self.schedule_behind(entry)
    }

    /// Schedules `entry` into a queue that holds events already.
    #[inline(never)]
    fn schedule_behind(&mut self, entry: Entry<E>) -> Result<(), QueueFull> {
        if self.len() >= self.len_max {
            return Err(QueueFull { limit: self.len_max });
        }
        // The new entry has the highest sequence number: it goes first only
        // if it is strictly earlier than the earliest pending one.
        match &self.soonest {
            Some(soonest) if entry.at_ns < soonest.at_ns => {
                let later = self.soonest.replace(entry).expect("matched Some");
                self.heap.push(Reverse(later));
            }
            Some(_) => self.heap.push(Reverse(entry)),
            None if self.heap.peek().is_none_or(|e| entry.at_ns < e.0.at_ns) => self.soonest = Some(entry),
            None => self.heap.push(Reverse(entry)),
        }
        Ok(())
    }

    /// Time of the next event, if any.
    pub fn peek_ns(&self) -> Option<Nanos> {
        match &self.soonest {
            Some(soonest) => Some(soonest.at_ns),
            None => self.heap.peek().map(|e| e.0.at_ns),
        }
    }

    /// Pops the next event and advances the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(Nanos, E)> {
        let entry = match self.soonest.take() {
            Some(soonest) => {
                debug_assert!(self.heap.peek().is_none_or(|e| soonest < e.0), "the kept event is the earliest");
                soonest
            }
            None => self.heap.pop()?.0,
        };
        let at_ns = entry.at_ns;
        debug_assert!(at_ns >= self.now_ns);
        self.now_ns = at_ns;
        Some((at_ns, entry.event))
    }

    /// Pops the next event only if it is due at or before `until_ns`.
    pub fn pop_until(&mut self, until_ns: Nanos) -> Option<(Nanos, E)> {
        match self.peek_ns() {
            Some(t) if t <= until_ns => self.pop(),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_times_pop_in_schedule_order() {
        let mut q = EventQueue::new(16);
        q.schedule(10, 'b').unwrap();
        q.schedule(5, 'a').unwrap();
        q.schedule(10, 'c').unwrap();
        q.schedule(10, 'd').unwrap();
        let order: String = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, "abcd");
        assert_eq!(q.now_ns(), 10);
    }

    /// Against a plain sorted list: interleaved schedules and pops (often one
    /// event ahead, sometimes several at one time) pop in (time, order) order.
    #[test]
    fn pops_in_time_then_schedule_order() {
        let mut q = EventQueue::new(1 << 12);
        let mut reference: Vec<(Nanos, u64)> = Vec::new();
        let (mut state, mut id) = (0x2545_f491_4f6c_dd1du64, 0u64);
        for _ in 0..20_000 {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            let roll = state >> 33;
            if roll % 2 == 0 && !reference.is_empty() {
                let expected = reference.remove(0);
                assert_eq!(q.peek_ns(), Some(expected.0));
                assert_eq!(q.pop(), Some(expected));
                continue;
            }
            let at_ns = q.now_ns() + (roll >> 4) % 4 * 10;
            q.schedule(at_ns, id).unwrap();
            let place = reference.partition_point(|&(t, _)| t <= at_ns);
            reference.insert(place, (at_ns, id));
            id += 1;
            assert_eq!(q.len(), reference.len());
        }
        let rest: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(rest, reference);
        assert!(q.is_empty());
    }

    #[test]
    fn bounded() {
        let mut q = EventQueue::new(1);
        q.schedule(1, ()).unwrap();
        assert_eq!(q.schedule(2, ()), Err(QueueFull { limit: 1 }));
    }

    #[test]
    fn pop_until_respects_horizon() {
        let mut q = EventQueue::new(4);
        q.schedule(10, 1).unwrap();
        assert!(q.pop_until(9).is_none());
        assert_eq!(q.pop_until(10), Some((10, 1)));
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn past_is_a_bug() {
        let mut q = EventQueue::new(4);
        q.schedule(10, 1).unwrap();
        q.pop();
        let _ = q.schedule(5, 2);
    }
}
