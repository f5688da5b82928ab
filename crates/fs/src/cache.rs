//! The page cache: which node and data pages the host holds, clean or dirty,
//! in least-recently-used order. Contents live in the file system's model;
//! the cache decides what must be read from or written to the device.

use rustc_hash::FxHashMap;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A page the cache can hold: a block of a file or directory, or a node block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PageKey {
    /// Block `idx` of inode `ino` (file data or dentries).
    Data {
        /// Inode number.
        ino: u32,
        /// Block index in the file (4 KiB blocks).
        idx: u64,
    },
    /// Node block `nid`: an inode or a direct or indirect node.
    Node {
        /// Node id (the NAT's index).
        nid: u32,
    },
}

impl PageKey {
    /// The key as one word, for a compact page table: inode numbers and node
    /// ids stay below 2^31 and file blocks below 2^32 (16 TiB files).
    fn word(self) -> u64 {
        match self {
            PageKey::Data { ino, idx } => {
                assert!(ino < 1 << 31 && idx < 1 << 32, "a page key within the table's range");
                u64::from(ino) << 32 | idx
            }
            PageKey::Node { nid } => 1 << 63 | u64::from(nid),
        }
    }

    /// The key [`Self::word`] made `word`.
    fn from_word(word: u64) -> Self {
        if word >> 63 == 1 {
            PageKey::Node { nid: word as u32 }
        } else {
            PageKey::Data { ino: (word >> 32) as u32, idx: word & u64::from(u32::MAX) }
        }
    }
}

/// A slot of the page table: a held page, or a free slot (both stamps 0).
#[derive(Debug, Clone, Copy)]
struct Page {
    /// The page's key as a word.
    word: u64,
    /// Last use (LRU order); 0 while the slot is free (stamps start at 1).
    stamp: u64,
    /// When it became dirty (write-back order); 0 while clean.
    dirtied: u64,
    /// A dirty data page: its place in its inode's list of dirty pages.
    in_inode: u32,
}

impl Page {
    fn is_dirty(&self) -> bool {
        self.dirtied != 0
    }
}

/// Runs of rising stamps the cleaned pages queue in before the heap.
const CLEANED_RUNS: usize = 16;

/// A page-table slot.
type Slot = u32;

/// The page cache: held pages, clean ones in LRU order for eviction, dirty
/// ones in the order they were dirtied for write-back.
///
/// Pages live in a slab of slots, found by key through one hash map; the
/// orders are queues of (stamp, slot) with lazy deletion: a page that is used
/// again, dirtied, cleaned or dropped leaves its old entry behind, and an
/// entry counts only while it still matches its slot's stamp (a freed slot's
/// stamps are 0 and a reused one's are newer, so old entries never match).
/// At paper scale the cache holds half a million pages and ordered maps with a
/// removal per use dominated the run time.
pub struct PageCache {
    capacity_pages: usize,
    slot_of: FxHashMap<u64, Slot>,
    slots: Vec<Page>,
    free_slots: Vec<Slot>,
    /// Clean pages by last use, oldest first (stamps rise along the queue).
    lru: VecDeque<(u64, Slot)>,
    /// Pages cleaned by write-back rejoin the LRU order at their last use,
    /// which is older than the clock. Write-back cleans them in nearly that
    /// order (data, then nodes): they queue in a few runs of rising stamps,
    /// and a page that fits behind no run waits in a heap, least stamp on top.
    cleaned_runs: Vec<VecDeque<(u64, Slot)>>,
    cleaned_late: BinaryHeap<Reverse<(u64, Slot)>>,
    /// Dirty pages by the time they became dirty (stamps rise along the
    /// queue; write-back takes the oldest first, so stale entries are mostly
    /// at the front and leave at once).
    dirty_order: VecDeque<(u64, Slot)>,
    dirty_count: usize,
    /// Each inode's dirty data pages, unordered (fsync writes a file's).
    dirty_data: FxHashMap<u32, Vec<Slot>>,
    clock: u64,
    /// Touches that found the page held.
    pub hits: u64,
    /// Touches that did not (the page must be read from the device).
    pub misses: u64,
}

impl PageCache {
    /// An empty cache that holds at most `capacity_pages` pages (at least 16).
    pub fn new(capacity_pages: usize) -> Self {
        assert!(capacity_pages >= 16, "a page cache of at least 16 pages");
        assert!(capacity_pages < Slot::MAX as usize, "a page cache whose slots a u32 numbers");
        Self {
            capacity_pages,
            slot_of: FxHashMap::default(),
            slots: Vec::new(),
            free_slots: Vec::new(),
            lru: VecDeque::new(),
            cleaned_runs: Vec::new(),
            cleaned_late: BinaryHeap::new(),
            dirty_order: VecDeque::new(),
            dirty_count: 0,
            dirty_data: FxHashMap::default(),
            clock: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// Pages held at most; writers write back past a share of it (`dirty_ratio`).
    pub fn capacity_pages(&self) -> usize {
        self.capacity_pages
    }
    /// Pages held, clean and dirty.
    pub fn len(&self) -> usize {
        self.slot_of.len()
    }
    /// No page is held.
    pub fn is_empty(&self) -> bool {
        self.slot_of.is_empty()
    }
    /// Dirty pages, not yet written back.
    pub fn dirty_pages(&self) -> usize {
        self.dirty_count
    }
    /// Whether `key`'s page is held.
    pub fn contains(&self, key: PageKey) -> bool {
        self.slot_of.contains_key(&key.word())
    }
    /// Whether `key`'s page is held and dirty.
    pub fn is_dirty(&self, key: PageKey) -> bool {
        self.slot_of.get(&key.word()).is_some_and(|&s| self.slots[s as usize].is_dirty())
    }

    /// Uses a page: true on a hit. A miss is not inserted (see [`Self::insert`]).
    pub fn touch(&mut self, key: PageKey) -> bool {
        self.clock += 1;
        let Some(&slot) = self.slot_of.get(&key.word()) else {
            self.misses += 1;
            return false;
        };
        self.hits += 1;
        let p = &mut self.slots[slot as usize];
        p.stamp = self.clock;
        if !p.is_dirty() {
            self.lru.push_back((self.clock, slot));
            self.compact_lru();
        }
        true
    }

    /// Adds a clean page, or marks a page dirty. The caller keeps the cache
    /// within capacity with [`Self::evict_clean`].
    pub fn insert(&mut self, key: PageKey, dirty: bool) {
        self.clock += 1;
        let stamp = self.clock;
        let word = key.word();
        let (slots, free_slots) = (&mut self.slots, &mut self.free_slots);
        let slot = *self.slot_of.entry(word).or_insert_with(|| {
            let free = Page { word, stamp, dirtied: 0, in_inode: 0 };
            match free_slots.pop() {
                Some(s) => {
                    slots[s as usize] = free;
                    s
                }
                None => {
                    slots.push(free);
                    (slots.len() - 1) as Slot
                }
            }
        });
        let page = &mut self.slots[slot as usize];
        page.stamp = stamp;
        if dirty && !page.is_dirty() {
            page.dirtied = stamp;
            self.dirty_order.push_back((stamp, slot));
            self.dirty_count += 1;
            if let PageKey::Data { ino, .. } = key {
                let list = self.dirty_data.entry(ino).or_default();
                page.in_inode = list.len() as u32;
                list.push(slot);
            }
            self.compact_dirty();
        } else if !page.is_dirty() {
            self.lru.push_back((stamp, slot));
            self.compact_lru();
        }
    }

    /// The page was written back: it stays cached, clean.
    pub fn mark_clean(&mut self, key: PageKey) {
        let Some(&slot) = self.slot_of.get(&key.word()) else { return };
        if self.slots[slot as usize].is_dirty() {
            self.undirty(slot);
            let entry = (self.slots[slot as usize].stamp, slot);
            let fits = |run: &VecDeque<(u64, Slot)>| run.back().is_none_or(|&(last, _)| last < entry.0);
            match self.cleaned_runs.iter().position(fits) {
                Some(i) => self.cleaned_runs[i].push_back(entry),
                None if self.cleaned_runs.len() < CLEANED_RUNS => self.cleaned_runs.push(VecDeque::from([entry])),
                None => self.cleaned_late.push(Reverse(entry)),
            }
            self.compact_lru();
        }
    }

    /// Drops `key`'s page, dirty or not: its block was freed with its file.
    pub fn remove(&mut self, key: PageKey) {
        if let Some(slot) = self.slot_of.remove(&key.word()) {
            if self.slots[slot as usize].is_dirty() {
                self.undirty(slot);
            }
            self.free(slot);
        }
    }

    /// Drops least recently used clean pages until `room` more pages fit;
    /// false if dirty pages stand in the way.
    pub fn evict_clean(&mut self, room: usize) -> bool {
        while self.slot_of.len() + room > self.capacity_pages {
            let Some((stamp, slot)) = self.pop_least_recent() else { return false };
            let p = self.slots[slot as usize];
            if !p.is_dirty() && p.stamp == stamp {
                self.slot_of.remove(&p.word);
                self.free(slot);
            }
        }
        debug_assert!(self.dirty_count <= self.slot_of.len());
        true
    }

    /// The LRU entry of least stamp, of the clock's queue and the cleaned
    /// pages' (each stamp is given once, so no two entries tie).
    fn pop_least_recent(&mut self) -> Option<(u64, Slot)> {
        let front = |q: &VecDeque<(u64, Slot)>| q.front().map(|&(stamp, _)| stamp);
        let runs = self.cleaned_runs.iter().filter_map(front);
        let late = self.cleaned_late.peek().map(|&Reverse((stamp, _))| stamp);
        let least = front(&self.lru).into_iter().chain(runs).chain(late).min()?;
        if front(&self.lru) == Some(least) {
            return self.lru.pop_front();
        }
        match self.cleaned_runs.iter_mut().find(|r| front(r) == Some(least)) {
            Some(run) => run.pop_front(),
            None => self.cleaned_late.pop().map(|Reverse(entry)| entry),
        }
    }

    /// Dirty pages, oldest first, up to `n`.
    pub fn oldest_dirty(&self, n: usize) -> Vec<PageKey> {
        self.dirty_in_order().take(n).collect()
    }

    /// The dirty data pages of `ino`, by block.
    pub fn dirty_data_of(&self, ino: u32) -> Vec<PageKey> {
        let Some(list) = self.dirty_data.get(&ino) else { return Vec::new() };
        let mut keys: Vec<PageKey> = list.iter().map(|&s| PageKey::from_word(self.slots[s as usize].word)).collect();
        keys.sort_unstable();
        keys
    }

    /// Every dirty page matching `pred`, oldest first.
    pub fn dirty_matching(&self, pred: impl Fn(&PageKey) -> bool) -> Vec<PageKey> {
        self.dirty_in_order().filter(|k| pred(k)).collect()
    }

    /// The dirty pages, oldest first (the queue's current entries).
    fn dirty_in_order(&self) -> impl Iterator<Item = PageKey> + '_ {
        let slots = &self.slots;
        self.dirty_order
            .iter()
            .filter(move |&&(dirtied, s)| slots[s as usize].dirtied == dirtied)
            .map(move |&(_, s)| PageKey::from_word(slots[s as usize].word))
    }

    /// The page in `slot` is no longer dirty: out of the dirty count and its
    /// inode's list (its write-back entry goes stale).
    fn undirty(&mut self, slot: Slot) {
        let p = self.slots[slot as usize];
        self.slots[slot as usize].dirtied = 0;
        self.dirty_count -= 1;
        if let PageKey::Data { ino, .. } = PageKey::from_word(p.word) {
            let list = self.dirty_data.get_mut(&ino).expect("a dirty data page is in its inode's list");
            let pos = p.in_inode as usize;
            debug_assert_eq!(list[pos], slot);
            list.swap_remove(pos);
            if let Some(&moved) = list.get(pos) {
                self.slots[moved as usize].in_inode = pos as u32;
            }
            if list.is_empty() {
                self.dirty_data.remove(&ino);
            }
        }
        // Write-back cleans the oldest first: drop the stale front entries.
        while let Some(&(dirtied, s)) = self.dirty_order.front() {
            if self.slots[s as usize].dirtied == dirtied {
                break;
            }
            self.dirty_order.pop_front();
        }
    }

    /// Frees `slot`, already out of the key map; its queue entries go stale.
    fn free(&mut self, slot: Slot) {
        self.slots[slot as usize] = Page { word: 0, stamp: 0, dirtied: 0, in_inode: 0 };
        self.free_slots.push(slot);
    }

    /// Drops the stale LRU entries once they outnumber the clean pages (the
    /// queues' order is kept, so eviction is unchanged).
    fn compact_lru(&mut self) {
        let clean = self.slot_of.len() - self.dirty_count;
        let cleaned = self.cleaned_runs.iter().map(VecDeque::len).sum::<usize>() + self.cleaned_late.len();
        if self.lru.len() + cleaned <= 2 * clean + 64 {
            return;
        }
        let slots = &self.slots;
        let current = |stamp: u64, s: Slot| {
            let p = &slots[s as usize];
            !p.is_dirty() && p.stamp == stamp
        };
        self.lru.retain(|&(stamp, s)| current(stamp, s));
        for run in &mut self.cleaned_runs {
            run.retain(|&(stamp, s)| current(stamp, s));
        }
        self.cleaned_late.retain(|&Reverse((stamp, s))| current(stamp, s));
    }

    /// Drops the stale write-back entries once they outnumber the dirty pages.
    fn compact_dirty(&mut self) {
        if self.dirty_order.len() <= 2 * self.dirty_count + 64 {
            return;
        }
        let slots = &self.slots;
        self.dirty_order.retain(|&(dirtied, s)| slots[s as usize].dirtied == dirtied);
        debug_assert_eq!(self.dirty_order.len(), self.dirty_count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn evicts_clean_lru_pages_only() {
        let mut c = PageCache::new(16);
        for nid in 0..16 {
            c.insert(PageKey::Node { nid }, nid < 2);
        }
        assert!(c.touch(PageKey::Node { nid: 2 }));
        assert!(c.evict_clean(2));
        assert_eq!(c.len(), 14);
        assert!(c.contains(PageKey::Node { nid: 0 }) && c.contains(PageKey::Node { nid: 2 }));
        assert!(!c.contains(PageKey::Node { nid: 3 }), "least recently used clean page goes first");
        assert_eq!(c.oldest_dirty(8), vec![PageKey::Node { nid: 0 }, PageKey::Node { nid: 1 }]);
        c.mark_clean(PageKey::Node { nid: 0 });
        assert_eq!(c.dirty_pages(), 1);
        assert!(!c.touch(PageKey::Node { nid: 99 }));
    }

    /// The cache as ordered maps, with no lazy entries: the reference the
    /// queues must agree with.
    #[derive(Default)]
    struct Model {
        /// key -> (dirty, last use, dirtied)
        pages: BTreeMap<PageKey, (bool, u64, u64)>,
        clock: u64,
    }

    impl Model {
        fn touch(&mut self, key: PageKey) -> bool {
            self.clock += 1;
            self.pages.get_mut(&key).map(|p| p.1 = self.clock).is_some()
        }
        fn insert(&mut self, key: PageKey, dirty: bool) {
            self.clock += 1;
            let p = self.pages.entry(key).or_insert((false, 0, 0));
            p.1 = self.clock;
            if dirty && !p.0 {
                *p = (true, self.clock, self.clock);
            }
        }
        fn evict_clean(&mut self, capacity: usize, room: usize) -> bool {
            while self.pages.len() + room > capacity {
                let oldest = self.pages.iter().filter(|(_, p)| !p.0).min_by_key(|(_, p)| p.1).map(|(k, _)| *k);
                let Some(key) = oldest else { return false };
                self.pages.remove(&key);
            }
            true
        }
        fn dirty_in_order(&self) -> Vec<PageKey> {
            let mut dirty: Vec<_> = self.pages.iter().filter(|(_, p)| p.0).map(|(k, p)| (p.2, *k)).collect();
            dirty.sort();
            dirty.into_iter().map(|(_, k)| k).collect()
        }
    }

    fn key_of(k: u8) -> PageKey {
        if k < 24 {
            PageKey::Node { nid: u32::from(k) }
        } else {
            PageKey::Data { ino: u32::from(k % 3), idx: u64::from(k) }
        }
    }

    proptest::proptest! {
        #[test]
        fn lazy_queues_evict_and_write_back_as_ordered_maps_do(
            ops in proptest::collection::vec((0u8..6, 0u8..48, 0usize..4), 1..3000)
        ) {
            const CAPACITY: usize = 24;
            let (mut cache, mut model) = (PageCache::new(CAPACITY), Model::default());
            for (op, k, room) in ops {
                let key = key_of(k);
                match op {
                    0 => proptest::prop_assert_eq!(cache.touch(key), model.touch(key)),
                    1 | 2 => {
                        cache.insert(key, op == 2);
                        model.insert(key, op == 2);
                    }
                    3 => {
                        cache.mark_clean(key);
                        if let Some(p) = model.pages.get_mut(&key) {
                            p.0 = false;
                        }
                    }
                    4 => {
                        cache.remove(key);
                        model.pages.remove(&key);
                    }
                    _ => proptest::prop_assert_eq!(cache.evict_clean(room), model.evict_clean(CAPACITY, room)),
                }
                proptest::prop_assert_eq!(cache.len(), model.pages.len());
                proptest::prop_assert_eq!(cache.oldest_dirty(usize::MAX), model.dirty_in_order());
                for k in 0..48 {
                    proptest::prop_assert_eq!(cache.contains(key_of(k)), model.pages.contains_key(&key_of(k)));
                }
                for ino in 0..3 {
                    let dirty: Vec<PageKey> = model.pages.range(PageKey::Data { ino, idx: 0 }..=PageKey::Data { ino, idx: u64::MAX })
                        .filter(|(_, p)| p.0).map(|(k, _)| *k).collect();
                    proptest::prop_assert_eq!(cache.dirty_data_of(ino), dirty);
                }
            }
        }
    }
}
