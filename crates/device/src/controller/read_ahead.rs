//! The controller's read buffer and read-ahead.
//!
//! A drive serves sequential 4 KiB reads several times faster than random
//! ones (ZNS-Study: about 10 µs against 85 µs at queue depth 1) because its
//! controller notices a sequential stream and reads whole pages ahead of it
//! into controller memory. Here a read that starts where a recent read ended
//! continues a stream. The controller reads ahead of at most
//! `controller.read_ahead_streams` streams at once, each in a context of its
//! own: a read that continues a context's stream finds its pages (chunks) in
//! the buffer, and the device then reads the chunks of the next
//! `controller.read_ahead_bytes` that are in flash into it, in the background
//! on their dies and channels; a later read of the stream waits only for its
//! chunk's read, not for a flash read of its own. A read that continues a
//! stream no context follows takes the context used least recently: what that
//! context had buffered is no longer its, and the read's own chunks are read
//! whole into the buffer, nothing beyond them until the stream continues in
//! the context. So streams that take turns on too few contexts each read
//! their pages whole, again and again (ZNS-Study: two QD-1 readers of their
//! own zones on the ZN540 read no 4 KiB block in under 26 µs, while one
//! reader alone reads 98% of them in 10-20 µs). The buffer holds
//! `controller.read_buffer_bytes`, oldest chunks leaving first; a reset drops
//! the zone's chunks (their blocks are rewritten).

use std::collections::{BTreeMap, VecDeque};
use zonelab_sim::Nanos;

/// The most contexts `controller.read_ahead_streams` may ask for.
pub const READ_AHEAD_STREAMS_MAX: u32 = 32;

/// Recent stream ends remembered for detecting sequential reads: as many as
/// the contexts there may be.
const STREAMS_MAX: usize = READ_AHEAD_STREAMS_MAX as usize;

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

/// What a read is to the read-ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StreamRead {
    /// It continues no recent read: flash serves it as it asks.
    Random,
    /// It continues a stream no context followed: context `0` now does; the
    /// read's chunks are read whole into its buffer.
    Starts(u8),
    /// It continues the stream context `0` follows: its chunks are looked
    /// for in the buffer, and the context reads ahead.
    Continues(u8),
}

/// A read-ahead context: the stream it follows.
#[derive(Debug, Clone, Copy)]
struct Context {
    /// Where the stream's latest read ended (`u64::MAX`: no stream yet).
    end: u64,
    /// Bumped when the context takes another stream: the chunks buffered
    /// under an older generation are no longer its.
    generation: u32,
    /// When the context was last used (a count of stream reads), for
    /// taking the least recently used.
    used: u64,
}

/// A buffered chunk: when its data is in, and the context (and its
/// generation) that read it.
#[derive(Debug, Clone, Copy)]
struct Buffered {
    ready_ns: Nanos,
    context: u8,
    generation: u32,
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
    /// The streams read ahead of (`controller.read_ahead_streams`).
    contexts: Vec<Context>,
    /// Stream reads so far: the clock of `Context::used`.
    stream_reads: u64,
    /// Buffered chunks, keyed by (zone, chunk of the zone). Ordered, not
    /// hashed: every stream read looks here.
    chunks: BTreeMap<(u32, u64), Buffered>,
    /// Buffered chunks, oldest first: the eviction order.
    order: VecDeque<(u32, u64)>,
}

impl ReadAhead {
    /// Read-ahead of `window_chunks` for up to `streams` streams at once,
    /// into a buffer of `capacity_chunks`.
    pub(crate) fn new(window_chunks: u64, capacity_chunks: u64, streams: u32) -> Self {
        assert!(window_chunks <= capacity_chunks, "the window must fit the buffer");
        assert!((1..=READ_AHEAD_STREAMS_MAX).contains(&streams), "1 to {READ_AHEAD_STREAMS_MAX} read-ahead streams");
        let capacity_chunks = usize::try_from(capacity_chunks).expect("the buffer's chunks fit memory");
        let free = Context { end: u64::MAX, generation: 0, used: 0 };
        Self {
            window_chunks,
            capacity_chunks,
            stream_ends: [0; STREAMS_MAX],
            ends_head: 0,
            ends_len: 0,
            end_counts: Box::new([0; END_BUCKETS]),
            contexts: vec![free; streams as usize],
            stream_reads: 0,
            chunks: BTreeMap::new(),
            order: VecDeque::new(),
        }
    }

    pub(crate) fn window_chunks(&self) -> u64 {
        self.window_chunks
    }

    /// Notes a read of LBAs `slba..end`: whether it continues a stream, and
    /// which context reads for it. In line in the read (the search after a
    /// bucket hit is not): a random read costs a few instructions.
    #[inline(always)]
    pub(crate) fn note_read(&mut self, slba: u64, end: u64) -> StreamRead {
        if self.window_chunks == 0 {
            return StreamRead::Random;
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
        if continues {
            self.assign_context(slba, end)
        } else {
            StreamRead::Random
        }
    }

    /// The context for a stream read of `slba..end`: the one following its
    /// stream (or that has just read these blocks: readers of the same
    /// blocks, side by side, are one stream to it), else the least recently
    /// used, which takes the stream.
    #[inline(never)]
    fn assign_context(&mut self, slba: u64, end: u64) -> StreamRead {
        self.stream_reads += 1;
        let now = self.stream_reads;
        if let Some(k) = self.contexts.iter().position(|c| c.end == end) {
            self.contexts[k].used = now;
            return StreamRead::Continues(u8::try_from(k).expect("at most 32 contexts"));
        }
        if let Some(k) = self.contexts.iter().position(|c| c.end == slba) {
            let c = &mut self.contexts[k];
            (c.end, c.used) = (end, now);
            return StreamRead::Continues(u8::try_from(k).expect("at most 32 contexts"));
        }
        let k = (0..self.contexts.len()).min_by_key(|&k| self.contexts[k].used).expect("at least one context");
        let c = &mut self.contexts[k];
        (c.end, c.used, c.generation) = (end, now, c.generation.wrapping_add(1));
        StreamRead::Starts(u8::try_from(k).expect("at most 32 contexts"))
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

    /// When `chunk` of `zone` is in context `context`'s buffer, if it is
    /// there (a chunk another context read, or this one for an earlier
    /// stream, is not).
    pub(crate) fn lookup(&self, context: u8, zone: u32, chunk: u64) -> Option<Nanos> {
        if self.chunks.is_empty() {
            return None;
        }
        let b = self.chunks.get(&(zone, chunk))?;
        let generation = self.contexts[usize::from(context)].generation;
        (b.context == context && b.generation == generation).then_some(b.ready_ns)
    }

    /// Buffers `chunk` of `zone` for context `context`, in from `ready_ns`;
    /// evicts the oldest chunk when full. A chunk buffered before (by another
    /// context, or for this one's earlier stream) is taken over where it is
    /// in the eviction order.
    pub(crate) fn insert(&mut self, context: u8, zone: u32, chunk: u64, ready_ns: Nanos) {
        let generation = self.contexts[usize::from(context)].generation;
        let entry = Buffered { ready_ns, context, generation };
        if self.chunks.insert((zone, chunk), entry).is_some() {
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
        let mut ra = ReadAhead::new(4, 8, 1);
        for chunk in 0..6 {
            ra.insert(0, 1, chunk, 10);
        }
        ra.insert(0, 2, 3, 10);
        ra.drop_chunks(1, 2..4);
        assert_eq!(
            (ra.lookup(0, 1, 1), ra.lookup(0, 1, 2), ra.lookup(0, 1, 3), ra.lookup(0, 1, 4)),
            (Some(10), None, None, Some(10))
        );
        assert_eq!(ra.lookup(0, 2, 3), Some(10), "another zone's chunk stays");
        ra.drop_chunks(1, 2..4);
        assert_eq!(ra.order.len(), 5);
    }

    #[test]
    fn a_read_continuing_a_stream_is_sequential() {
        let mut ra = ReadAhead::new(4, 8, 32);
        assert_eq!(ra.note_read(0, 1), StreamRead::Random, "the first read starts no known stream");
        assert_eq!(ra.note_read(1, 2), StreamRead::Starts(0), "a stream takes a free context");
        assert_eq!(ra.note_read(100, 101), StreamRead::Random, "a jump is not sequential");
        assert_eq!(ra.note_read(2, 3), StreamRead::Continues(0), "the first stream is still followed");
        assert_eq!(ra.note_read(101, 102), StreamRead::Starts(1));
        assert_eq!(ra.note_read(3, 4), StreamRead::Continues(0));
        assert_eq!(ra.note_read(102, 103), StreamRead::Continues(1));
    }

    #[test]
    fn streams_taking_turns_on_one_context_each_start_again_and_lose_its_chunks() {
        let mut ra = ReadAhead::new(4, 8, 1);
        // Two streams (at 0 and 1000), each seen once, then read in turns.
        ra.note_read(0, 1);
        ra.note_read(1000, 1001);
        for k in 1..20 {
            assert_eq!(ra.note_read(k, k + 1), StreamRead::Starts(0), "read {k} of the first stream");
            ra.insert(0, 0, k, 5);
            assert_eq!(ra.lookup(0, 0, k), Some(5), "the context's own chunk");
            assert_eq!(ra.note_read(1000 + k, 1001 + k), StreamRead::Starts(0), "read {k} of the second stream");
            assert_eq!(ra.lookup(0, 0, k), None, "the chunk the context read for the other stream is no longer its");
        }
        // Alone, a stream keeps the context from its second read on.
        assert_eq!(ra.note_read(20, 21), StreamRead::Starts(0));
        assert_eq!(ra.note_read(21, 22), StreamRead::Continues(0));
        assert_eq!(ra.note_read(22, 23), StreamRead::Continues(0));
    }

    #[test]
    fn readers_of_the_same_blocks_side_by_side_share_their_context() {
        let mut ra = ReadAhead::new(4, 8, 1);
        for reader in 0..3 {
            assert_eq!(ra.note_read(0, 8), StreamRead::Random, "reader {reader} starts");
        }
        for k in 1..10 {
            let (slba, end) = (8 * k, 8 * k + 8);
            assert!(matches!(ra.note_read(slba, end), StreamRead::Starts(0) | StreamRead::Continues(0)));
            for reader in 1..3 {
                assert_eq!(ra.note_read(slba, end), StreamRead::Continues(0), "reader {reader} at {slba}");
            }
        }
    }

    #[test]
    fn the_least_recently_used_context_is_taken() {
        let mut ra = ReadAhead::new(4, 8, 2);
        for start in [0, 100, 200] {
            ra.note_read(start, start + 1);
        }
        assert_eq!(ra.note_read(1, 2), StreamRead::Starts(0));
        assert_eq!(ra.note_read(101, 102), StreamRead::Starts(1));
        assert_eq!(ra.note_read(2, 3), StreamRead::Continues(0), "context 0 used last now");
        assert_eq!(ra.note_read(201, 202), StreamRead::Starts(1), "the third stream takes context 1, used longer ago");
        assert_eq!(ra.note_read(102, 103), StreamRead::Starts(0));
        assert_eq!(ra.note_read(202, 203), StreamRead::Continues(1));
    }

    #[test]
    fn the_stream_filter_keeps_the_list_of_the_latest_ends() {
        // Reference: the list without the bucket filter (newest last, at most STREAMS_MAX).
        let mut ra = ReadAhead::new(4, 8, 32);
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
            assert_eq!(ra.note_read(slba, end) != StreamRead::Random, expected, "read at {slba}");
        }
    }

    #[test]
    fn read_ahead_off_finds_no_stream() {
        let mut ra = ReadAhead::new(0, 0, 1);
        ra.note_read(0, 1);
        assert_eq!(ra.note_read(1, 2), StreamRead::Random);
    }

    #[test]
    fn the_oldest_chunk_leaves_a_full_buffer_and_a_reset_drops_the_zone() {
        let mut ra = ReadAhead::new(2, 2, 1);
        ra.insert(0, 0, 0, 10);
        ra.insert(0, 0, 1, 20);
        ra.insert(0, 1, 0, 30);
        assert_eq!(ra.lookup(0, 0, 0), None, "evicted");
        assert_eq!(ra.lookup(0, 0, 1), Some(20));
        ra.drop_zone(1);
        assert_eq!(ra.lookup(0, 1, 0), None);
        assert_eq!(ra.lookup(0, 0, 1), Some(20));
    }
}
