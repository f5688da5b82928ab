//! The controller's read buffer and read-ahead.
//!
//! A drive serves sequential 4 KiB reads several times faster than random
//! ones (ZNS-Study: about 10 µs against 85 µs at queue depth 1) because its
//! controller notices a sequential stream and reads whole pages ahead of it
//! into controller memory. Here a read that starts where a recent read ended
//! continues a stream; the device then reads the pages (chunks) of the next
//! `controller.read_ahead_bytes` that are in flash into this buffer, in the
//! background on their dies and channels. A later read of the stream that
//! finds its chunk buffered waits only for that page read, not for a flash
//! read of its own. The
//! buffer holds `controller.read_buffer_bytes`, oldest chunks leaving first;
//! a reset drops the zone's chunks (their blocks are rewritten).

use std::collections::{BTreeMap, VecDeque};
use zonelab_sim::Nanos;

/// Recent stream ends remembered for detecting sequential reads: one per
/// concurrent sequential reader the controller can follow.
const STREAMS_MAX: usize = 32;

/// Buckets of the filter over the stream ends, a power of two: with 32 ends
/// in 4096 buckets a random read, the common case, finds its bucket empty
/// and skips the search but once in about 128 reads (once in 8 with 256).
const END_BUCKETS_LOG2: u32 = 12;
const END_BUCKETS: usize = 1 << END_BUCKETS_LOG2;

/// The filter bucket of stream end `lba` (Fibonacci hashing: the top bits
/// of a multiplication spread strided LBAs too).
#[inline]
fn end_bucket(lba: u64) -> usize {
    (lba.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - END_BUCKETS_LOG2)) as usize
}

#[derive(Debug, Clone)]
pub(crate) struct ReadAhead {
    /// Chunks to read ahead of a sequential stream; 0 turns read-ahead off.
    window_chunks: u64,
    capacity_chunks: usize,
    /// Where recent reads ended (LBA): a ring of `ends_len` from
    /// `ends_head` on, oldest first. A fixed array: every read adds one and,
    /// once there are `STREAMS_MAX`, drops the oldest.
    stream_ends: [u64; STREAMS_MAX],
    ends_head: usize,
    ends_len: usize,
    /// How many of `stream_ends` fall in each bucket (`end_bucket`): a read
    /// whose start has an empty bucket continues no stream. An array, so
    /// that a bucket needs no bounds check.
    end_counts: Box<[u8; END_BUCKETS]>,
    /// Buffered chunks, keyed by (zone, chunk of the zone): when their data
    /// is in. Ordered, not hashed: every read looks here.
    chunks: BTreeMap<(u32, u64), Nanos>,
    /// Buffered chunks, oldest first: the eviction order.
    order: VecDeque<(u32, u64)>,
}

impl ReadAhead {
    pub(crate) fn new(window_chunks: u64, capacity_chunks: u64) -> Self {
        assert!(window_chunks <= capacity_chunks, "the window must fit the buffer");
        let capacity_chunks = usize::try_from(capacity_chunks).expect("the buffer's chunks fit memory");
        Self {
            window_chunks,
            capacity_chunks,
            stream_ends: [0; STREAMS_MAX],
            ends_head: 0,
            ends_len: 0,
            end_counts: Box::new([0; END_BUCKETS]),
            chunks: BTreeMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(crate) fn window_chunks(&self) -> u64 {
        self.window_chunks
    }

    /// Notes a read of LBAs `slba..end`; true when it continues a stream.
    /// In line in the read (the search after a bucket hit is not): it is a
    /// few instructions once the ring and the bucket counts are arrays.
    #[inline(always)]
    pub(crate) fn note_read(&mut self, slba: u64, end: u64) -> bool {
        if self.window_chunks == 0 {
            return false;
        }
        let continues = self.end_counts[end_bucket(slba)] > 0 && self.take_end(slba);
        if self.ends_len == STREAMS_MAX {
            // Full: the newest end takes the oldest's place, and the ring turns.
            // (The head is below STREAMS_MAX; the remainder says so without a bounds check.)
            let oldest = std::mem::replace(&mut self.stream_ends[self.ends_head % STREAMS_MAX], end);
            self.end_counts[end_bucket(oldest)] -= 1;
            self.ends_head = (self.ends_head + 1) % STREAMS_MAX;
        } else {
            self.stream_ends[(self.ends_head + self.ends_len) % STREAMS_MAX] = end;
            self.ends_len += 1;
        }
        self.end_counts[end_bucket(end)] += 1;
        debug_assert!(self.ends_len <= STREAMS_MAX);
        continues
    }

    /// Removes the newest stream end at `lba`, if there is one. Out of line:
    /// only a read whose bucket holds an end searches.
    #[inline(never)]
    fn take_end(&mut self, lba: u64) -> bool {
        let at = |ra: &Self, k: usize| (ra.ends_head + k) % STREAMS_MAX;
        // Newest first: a stream's last read is usually among the latest.
        let Some(k) = (0..self.ends_len).rev().find(|&k| self.stream_ends[at(self, k)] == lba) else { return false };
        // The newer ends move back over it, oldest first kept.
        for j in k..self.ends_len - 1 {
            self.stream_ends[at(self, j)] = self.stream_ends[at(self, j + 1)];
        }
        self.ends_len -= 1;
        self.end_counts[end_bucket(lba)] -= 1;
        true
    }

    /// When `chunk` of `zone` is in the buffer, if it is buffered.
    pub(crate) fn lookup(&self, zone: u32, chunk: u64) -> Option<Nanos> {
        if self.chunks.is_empty() {
            return None;
        }
        self.chunks.get(&(zone, chunk)).copied()
    }

    /// Buffers `chunk` of `zone`, in from `ready_ns`; evicts the oldest chunk when full.
    pub(crate) fn insert(&mut self, zone: u32, chunk: u64, ready_ns: Nanos) {
        if self.chunks.insert((zone, chunk), ready_ns).is_some() {
            return;
        }
        self.order.push_back((zone, chunk));
        while self.order.len() > self.capacity_chunks {
            let old = self.order.pop_front().expect("a full buffer has chunks");
            self.chunks.remove(&old);
        }
        debug_assert_eq!(self.chunks.len(), self.order.len());
    }

    /// Drops `zone`'s chunks `chunks` (their LBAs were written again). A
    /// write into nothing buffered costs one look at the map.
    pub(crate) fn drop_chunks(&mut self, zone: u32, chunks: std::ops::Range<u64>) {
        if self.chunks.range((zone, chunks.start)..(zone, chunks.end)).next().is_none() {
            return;
        }
        self.chunks.retain(|&(z, c), _| z != zone || !chunks.contains(&c));
        self.order.retain(|&(z, c)| z != zone || !chunks.contains(&c));
        debug_assert_eq!(self.chunks.len(), self.order.len());
    }

    /// Drops every chunk of `zone` (it was reset).
    pub(crate) fn drop_zone(&mut self, zone: u32) {
        if self.chunks.is_empty() {
            return;
        }
        self.order.retain(|&(z, _)| z != zone);
        self.chunks.retain(|&(z, _), _| z != zone);
        debug_assert_eq!(self.chunks.len(), self.order.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewritten_chunks_leave_the_buffer_and_the_others_stay() {
        let mut ra = ReadAhead::new(4, 8);
        for chunk in 0..6 {
            ra.insert(1, chunk, 10);
        }
        ra.insert(2, 3, 10);
        ra.drop_chunks(1, 2..4);
        assert_eq!(
            (ra.lookup(1, 1), ra.lookup(1, 2), ra.lookup(1, 3), ra.lookup(1, 4)),
            (Some(10), None, None, Some(10))
        );
        assert_eq!(ra.lookup(2, 3), Some(10), "another zone's chunk stays");
        ra.drop_chunks(1, 2..4);
        assert_eq!(ra.order.len(), 5);
    }

    #[test]
    fn a_read_continuing_a_stream_is_sequential() {
        let mut ra = ReadAhead::new(4, 8);
        assert!(!ra.note_read(0, 1), "the first read starts no known stream");
        assert!(ra.note_read(1, 2));
        assert!(!ra.note_read(100, 101), "a jump is not sequential");
        assert!(ra.note_read(2, 3), "the first stream is still followed");
        assert!(ra.note_read(101, 102));
    }

    #[test]
    fn the_stream_filter_keeps_the_list_of_the_latest_ends() {
        // Reference: the list without the bucket filter (newest last, at most STREAMS_MAX).
        let mut ra = ReadAhead::new(4, 8);
        let mut list: VecDeque<u64> = VecDeque::new();
        let mut rng = zonelab_sim::SimRng::new(7);
        for _ in 0..20_000 {
            // Few distinct LBAs, so that streams continue, repeat and fall out of the list.
            let slba = rng.below(48);
            let end = slba + 1 + rng.below(2);
            let expected = match list.iter().rposition(|&e| e == slba) {
                Some(i) => list.remove(i).is_some(),
                None => false,
            };
            if list.len() == STREAMS_MAX {
                list.pop_front();
            }
            list.push_back(end);
            assert_eq!(ra.note_read(slba, end), expected, "read at {slba}");
        }
    }

    #[test]
    fn read_ahead_off_finds_no_stream() {
        let mut ra = ReadAhead::new(0, 0);
        ra.note_read(0, 1);
        assert!(!ra.note_read(1, 2));
    }

    #[test]
    fn the_oldest_chunk_leaves_a_full_buffer_and_a_reset_drops_the_zone() {
        let mut ra = ReadAhead::new(2, 2);
        ra.insert(0, 0, 10);
        ra.insert(0, 1, 20);
        ra.insert(1, 0, 30);
        assert_eq!(ra.lookup(0, 0), None, "evicted");
        assert_eq!(ra.lookup(0, 1), Some(20));
        ra.drop_zone(1);
        assert_eq!(ra.lookup(1, 0), None);
        assert_eq!(ra.lookup(0, 1), Some(20));
    }
}
