//! The page cache: which node and data pages the host holds, clean or dirty,
//! in least-recently-used order. Contents live in the file system's model;
//! the cache decides what must be read from or written to the device.

use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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
}

#[derive(Debug, Clone, Copy)]
struct Page {
    /// Last use (LRU order).
    stamp: u64,
    /// When it became dirty (write-back order); 0 while clean (stamps start at 1).
    dirtied: u64,
}

impl Page {
    fn is_dirty(&self) -> bool {
        self.dirtied != 0
    }
}

/// The page cache: held pages, clean ones in LRU order for eviction, dirty
/// ones in the order they were dirtied for write-back.
///
/// The LRU order is a queue with lazy deletion: a page that is used again,
/// dirtied or dropped leaves its old entry behind, and an entry counts only
/// while it still matches its page's stamp. At paper scale the cache holds half a
/// million pages and ordered maps with a removal per use dominated the run time.
pub struct PageCache {
    capacity_pages: usize,
    pages: FxHashMap<u64, Page>,
    /// Clean pages by last use, oldest first (stamps rise along the queue).
    lru: VecDeque<(u64, u64)>,
    /// Pages cleaned by write-back rejoin the LRU order at their last use,
    /// which is older than the clock: they wait here, by stamp.
    lru_cleaned: BTreeMap<u64, u64>,
    /// Dirty pages by the time they became dirty (write-back takes the
    /// oldest first, so removals are near the front).
    dirty_order: BTreeMap<u64, PageKey>,
    /// Dirty pages by key (a file's dirty pages are one range).
    dirty_keys: BTreeSet<PageKey>,
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
        Self {
            capacity_pages,
            pages: FxHashMap::default(),
            lru: VecDeque::new(),
            lru_cleaned: BTreeMap::new(),
            dirty_order: BTreeMap::new(),
            dirty_keys: BTreeSet::new(),
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
        self.pages.len()
    }
    /// No page is held.
    pub fn is_empty(&self) -> bool {
        self.pages.is_empty()
    }
    /// Dirty pages, not yet written back.
    pub fn dirty_pages(&self) -> usize {
        self.dirty_order.len()
    }
    /// Whether `key`'s page is held.
    pub fn contains(&self, key: PageKey) -> bool {
        self.pages.contains_key(&key.word())
    }
    /// Whether `key`'s page is held and dirty.
    pub fn is_dirty(&self, key: PageKey) -> bool {
        self.pages.get(&key.word()).is_some_and(Page::is_dirty)
    }

    /// Uses a page: true on a hit. A miss is not inserted (see [`Self::insert`]).
    pub fn touch(&mut self, key: PageKey) -> bool {
        self.clock += 1;
        let Some(p) = self.pages.get_mut(&key.word()) else {
            self.misses += 1;
            return false;
        };
        self.hits += 1;
        p.stamp = self.clock;
        if !p.is_dirty() {
            self.lru.push_back((self.clock, key.word()));
            self.compact_lru();
        }
        true
    }

    /// Adds a clean page, or marks a page dirty. The caller keeps the cache
    /// within capacity with [`Self::evict_clean`].
    pub fn insert(&mut self, key: PageKey, dirty: bool) {
        self.clock += 1;
        let stamp = self.clock;
        let page = self.pages.entry(key.word()).or_insert(Page { stamp, dirtied: 0 });
        page.stamp = stamp;
        if dirty && !page.is_dirty() {
            page.dirtied = stamp;
            self.dirty_order.insert(stamp, key);
            self.dirty_keys.insert(key);
        }
        if !page.is_dirty() {
            self.lru.push_back((stamp, key.word()));
            self.compact_lru();
        }
    }

    /// The page was written back: it stays cached, clean.
    pub fn mark_clean(&mut self, key: PageKey) {
        if let Some(p) = self.pages.get_mut(&key.word()) {
            if p.is_dirty() {
                self.dirty_order.remove(&p.dirtied);
                p.dirtied = 0;
                self.lru_cleaned.insert(p.stamp, key.word());
                self.dirty_keys.remove(&key);
                self.compact_lru();
            }
        }
    }

    /// Drops `key`'s page, dirty or not: its block was freed with its file.
    pub fn remove(&mut self, key: PageKey) {
        if let Some(p) = self.pages.remove(&key.word()) {
            if p.is_dirty() {
                self.dirty_order.remove(&p.dirtied);
                self.dirty_keys.remove(&key);
            }
        }
    }

    /// Drops least recently used clean pages until `room` more pages fit;
    /// false if dirty pages stand in the way.
    pub fn evict_clean(&mut self, room: usize) -> bool {
        while self.pages.len() + room > self.capacity_pages {
            let clock_first = self.lru.front().map(|&(stamp, _)| stamp);
            let cleaned_first = self.lru_cleaned.first_key_value().map(|(&stamp, _)| stamp);
            let (stamp, key) = match (clock_first, cleaned_first) {
                (None, None) => return false,
                (Some(a), Some(b)) if b < a => self.lru_cleaned.pop_first().expect("a first entry"),
                (None, Some(_)) => self.lru_cleaned.pop_first().expect("a first entry"),
                _ => self.lru.pop_front().expect("a front entry"),
            };
            if is_clean_at(&self.pages, key, stamp) {
                self.pages.remove(&key);
            }
        }
        debug_assert!(self.dirty_order.len() <= self.pages.len());
        true
    }

    /// Dirty pages, oldest first, up to `n`.
    pub fn oldest_dirty(&self, n: usize) -> Vec<PageKey> {
        self.dirty_order.values().take(n).copied().collect()
    }

    /// The dirty data pages of `ino`, by block.
    pub fn dirty_data_of(&self, ino: u32) -> Vec<PageKey> {
        let range = PageKey::Data { ino, idx: 0 }..=PageKey::Data { ino, idx: u64::MAX };
        self.dirty_keys.range(range).copied().collect()
    }

    /// Every dirty page matching `pred`.
    pub fn dirty_matching(&self, pred: impl Fn(&PageKey) -> bool) -> Vec<PageKey> {
        self.dirty_order.values().filter(|k| pred(k)).copied().collect()
    }

    /// Drops the stale LRU entries once they outnumber the clean pages (the
    /// queues' order is kept, so eviction is unchanged).
    fn compact_lru(&mut self) {
        let clean = self.pages.len() - self.dirty_order.len();
        if self.lru.len() + self.lru_cleaned.len() <= 2 * clean + 64 {
            return;
        }
        let pages = &self.pages;
        self.lru.retain(|&(stamp, key)| is_clean_at(pages, key, stamp));
        self.lru_cleaned.retain(|&stamp, &mut key| is_clean_at(pages, key, stamp));
        debug_assert_eq!(self.lru.len() + self.lru_cleaned.len(), clean);
    }
}

/// Whether the LRU entry (`stamp`, `key`) is current.
fn is_clean_at(pages: &FxHashMap<u64, Page>, key: u64, stamp: u64) -> bool {
    pages.get(&key).is_some_and(|p| !p.is_dirty() && p.stamp == stamp)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            }
        }
    }
}
