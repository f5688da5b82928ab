//! The page cache: which node and data pages the host holds, clean or dirty,
//! in least-recently-used order. Contents live in the file system's model;
//! the cache decides what must be read from or written to the device.

use std::collections::{BTreeMap, HashMap};

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

#[derive(Debug, Clone, Copy)]
struct Page {
    dirty: bool,
    /// Last use (LRU order).
    stamp: u64,
    /// When it became dirty (write-back order).
    dirtied: u64,
}

/// The page cache: held pages, clean ones in LRU order for eviction, dirty
/// ones in the order they were dirtied for write-back.
pub struct PageCache {
    capacity_pages: usize,
    pages: HashMap<PageKey, Page>,
    /// Clean pages by last use.
    lru: BTreeMap<u64, PageKey>,
    dirty_order: BTreeMap<u64, PageKey>,
    /// Dirty pages by key (a file's dirty pages are one range).
    dirty_keys: std::collections::BTreeSet<PageKey>,
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
            pages: HashMap::new(),
            lru: BTreeMap::new(),
            dirty_order: BTreeMap::new(),
            dirty_keys: Default::default(),
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
        self.pages.contains_key(&key)
    }
    /// Whether `key`'s page is held and dirty.
    pub fn is_dirty(&self, key: PageKey) -> bool {
        self.pages.get(&key).is_some_and(|p| p.dirty)
    }

    /// Uses a page: true on a hit. A miss is not inserted (see [`Self::insert`]).
    pub fn touch(&mut self, key: PageKey) -> bool {
        self.clock += 1;
        let Some(p) = self.pages.get_mut(&key) else {
            self.misses += 1;
            return false;
        };
        self.hits += 1;
        if !p.dirty {
            self.lru.remove(&p.stamp);
            self.lru.insert(self.clock, key);
        }
        p.stamp = self.clock;
        true
    }

    /// Adds a clean page, or marks a page dirty. The caller keeps the cache
    /// within capacity with [`Self::evict_clean`].
    pub fn insert(&mut self, key: PageKey, dirty: bool) {
        self.clock += 1;
        let stamp = self.clock;
        let page = self.pages.entry(key).or_insert(Page { dirty: false, stamp, dirtied: 0 });
        self.lru.remove(&page.stamp);
        page.stamp = stamp;
        if dirty && !page.dirty {
            page.dirty = true;
            page.dirtied = stamp;
            self.dirty_order.insert(stamp, key);
            self.dirty_keys.insert(key);
        }
        if !page.dirty {
            self.lru.insert(stamp, key);
        }
    }

    /// The page was written back: it stays cached, clean.
    pub fn mark_clean(&mut self, key: PageKey) {
        if let Some(p) = self.pages.get_mut(&key) {
            if p.dirty {
                p.dirty = false;
                self.dirty_order.remove(&p.dirtied);
                self.dirty_keys.remove(&key);
                self.lru.insert(p.stamp, key);
            }
        }
    }

    /// Drops `key`'s page, dirty or not: its block was freed with its file.
    pub fn remove(&mut self, key: PageKey) {
        if let Some(p) = self.pages.remove(&key) {
            if p.dirty {
                self.dirty_order.remove(&p.dirtied);
                self.dirty_keys.remove(&key);
            } else {
                self.lru.remove(&p.stamp);
            }
        }
    }

    /// Drops least recently used clean pages until `room` more pages fit;
    /// false if dirty pages stand in the way.
    pub fn evict_clean(&mut self, room: usize) -> bool {
        while self.pages.len() + room > self.capacity_pages {
            let Some((_, key)) = self.lru.pop_first() else {
                return false;
            };
            self.pages.remove(&key);
        }
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
}
