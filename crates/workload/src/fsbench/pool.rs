//! The database's own page cache for the OLTP workloads: InnoDB's buffer
//! pool (seed 002 Table 3: 1 GB for a 12 GB database). Reads that hit it
//! never reach the file system; updates dirty the pooled page, and a dirty
//! page is written to the database file when it leaves the pool, so repeated
//! updates of a hot page cost one write.

use std::collections::{BTreeMap, HashMap};

/// What one access did to the pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Access {
    /// The page was in the pool (no read from the file).
    pub hit: bool,
    /// A dirty page that had to leave to make room: write it to the file.
    pub evicted_dirty: Option<u64>,
}

/// An LRU pool of `capacity` database pages.
pub(super) struct BufferPool {
    capacity: usize,
    /// Page -> (last use, dirty).
    pages: HashMap<u64, (u64, bool)>,
    /// Last use -> page: the least recently used page first.
    lru: BTreeMap<u64, u64>,
    clock: u64,
}

impl BufferPool {
    pub fn new(capacity: usize) -> Self {
        assert!(capacity > 0, "a buffer pool holds at least one page");
        Self { capacity, pages: HashMap::with_capacity(capacity + 1), lru: BTreeMap::new(), clock: 0 }
    }

    /// Uses `page`, dirtying it if `update`; a miss brings it in and may push
    /// the least recently used page out.
    pub fn access(&mut self, page: u64, update: bool) -> Access {
        self.clock += 1;
        let stamp = self.clock;
        if let Some((last, dirty)) = self.pages.get_mut(&page) {
            self.lru.remove(last);
            *last = stamp;
            *dirty |= update;
            self.lru.insert(stamp, page);
            return Access { hit: true, evicted_dirty: None };
        }
        let mut evicted_dirty = None;
        if self.pages.len() == self.capacity {
            let (_, victim) = self.lru.pop_first().expect("a full pool has pages");
            let (_, dirty) = self.pages.remove(&victim).expect("the LRU list and the map agree");
            evicted_dirty = dirty.then_some(victim);
        }
        self.pages.insert(page, (stamp, update));
        self.lru.insert(stamp, page);
        debug_assert_eq!(self.pages.len(), self.lru.len());
        assert!(self.pages.len() <= self.capacity);
        Access { hit: false, evicted_dirty }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hits_misses_and_dirty_evictions_follow_lru_order() {
        let mut p = BufferPool::new(2);
        assert_eq!(p.access(1, true), Access { hit: false, evicted_dirty: None });
        assert_eq!(p.access(2, false), Access { hit: false, evicted_dirty: None });
        assert!(p.access(1, false).hit, "page 1 stays dirty and becomes most recent");
        // Page 2 is least recent and clean: it leaves without a write.
        assert_eq!(p.access(3, false), Access { hit: false, evicted_dirty: None });
        // Page 1 is least recent now and dirty: it must be written.
        assert_eq!(p.access(4, false), Access { hit: false, evicted_dirty: Some(1) });
        assert!(p.access(3, true).hit);
    }

    #[test]
    fn repeated_updates_of_a_pooled_page_cost_one_write() {
        let mut p = BufferPool::new(4);
        for _ in 0..100 {
            p.access(7, true);
        }
        let writes = (10..14).filter_map(|q| p.access(q, false).evicted_dirty).count();
        assert_eq!(writes, 1);
    }
}
