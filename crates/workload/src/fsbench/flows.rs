//! The data sets and flow operations of each workload.

use super::pool::BufferPool;
use super::{FsBenchConfig, FsWorkload, Thread};
use crate::fio::distribution::OffsetGenerator;
use crate::fio::job::Distribution;
use zonelab_fs::{file_node_blocks, FileKind, Fs, FsError, FILE_BLOCKS_MAX, ROOT_INO};
use zonelab_sim::{Nanos, SimRng};

/// What one step of a thread did.
pub(super) struct Op {
    pub done_ns: Nanos,
    pub read_blocks: u64,
    pub write_blocks: u64,
    pub fsync: bool,
    /// The operation (an OLTP transaction) has more steps to run.
    pub more: bool,
}

impl Op {
    fn new(done_ns: Nanos) -> Self {
        Op { done_ns, read_blocks: 0, write_blocks: 0, fsync: false, more: false }
    }
}

/// An OLTP transaction in progress: its page accesses run one per step, so
/// the other connections' I/O interleaves with them as it would on a real
/// host, then the commit.
pub(super) struct Txn {
    /// (page, update) in order: the reads, then the updates.
    accesses: Vec<(u64, bool)>,
    next: usize,
}

/// Blocks of a 16 KiB database page.
const PAGE_BLOCKS: u64 = 4;
/// Blocks of the circular database log.
const LOG_BLOCKS: u64 = 2048;
/// Mean of the appends of 1 to 8 blocks (filebench's 16 KiB mean append).
const MEAN_APPEND_BLOCKS: u64 = 4;
/// Commits between fsyncs of the database file (InnoDB's page flushing).
const COMMITS_PER_DB_FLUSH: u64 = 256;
/// Database pages per buffer-pool page (seed 002 Table 3: 12 GB over 1 GB).
const DB_PAGES_PER_POOL_PAGE: u64 = 12;
/// YCSB's 1 KB records in a 16 KiB page.
const RECORDS_PER_PAGE: u64 = 16;
/// YCSB's request distribution: zipfian with its default constant, over
/// records hashed across the key space (`insertorder=hashed`).
const YCSB_ZIPF_THETA: f64 = 0.99;

pub(super) struct FileSet {
    workload: FsWorkload,
    /// File slots: the inode there, if the file exists.
    files: Vec<Option<u32>>,
    existing: u64,
    file_blocks: u64,
    dirs: Vec<u32>,
    dir_width: u64,
    db: u32,
    log: u32,
    db_pages: u64,
    log_pos: u64,
    commits: u64,
    tag: u64,
    pool: Option<BufferPool>,
    /// YCSB: which record a request touches.
    records: Option<OffsetGenerator>,
    /// Where the next pick of an existing file starts looking.
    exist_rotor: u64,
    /// Where the next pick of a missing file starts looking.
    missing_rotor: u64,
}

impl FileSet {
    pub fn new(fs: &Fs, cfg: &FsBenchConfig, rng: &mut SimRng) -> Self {
        let data = (fs.user_blocks() as f64 * cfg.utilization) as u64;
        let (file_blocks, dir_width) = match cfg.workload {
            FsWorkload::Fileserver => (32, 20),
            FsWorkload::Varmail => (7, u64::MAX),
            _ => (0, 1),
        };
        // Appends grow files until they are deleted: at steady state a file
        // holds about one mean append more than it was created with. The
        // utilization is F2FS's `df` figure, which counts node blocks as used:
        // varmail's one inode per 11 data blocks is 8% of its data set.
        let steady_blocks = file_blocks + MEAN_APPEND_BLOCKS;
        let file_used = steady_blocks + file_node_blocks(steady_blocks);
        let slots = if file_blocks == 0 { 0 } else { (data / file_used) * 10 / 9 };
        let db_avail = data.saturating_sub(LOG_BLOCKS + file_node_blocks(LOG_BLOCKS)).min(FILE_BLOCKS_MAX);
        let db_pages = db_avail.saturating_sub(file_node_blocks(db_avail)) / PAGE_BLOCKS;
        let pool = cfg.workload.is_oltp().then(|| BufferPool::new((db_pages / DB_PAGES_PER_POOL_PAGE).max(1) as usize));
        let ycsb = matches!(cfg.workload, FsWorkload::YcsbA | FsWorkload::YcsbF);
        let records = ycsb.then(|| {
            OffsetGenerator::new(Distribution::Zipf(YCSB_ZIPF_THETA), (db_pages * RECORDS_PER_PAGE).max(1), rng)
        });
        Self {
            workload: cfg.workload,
            files: vec![None; slots as usize],
            existing: 0,
            file_blocks,
            dirs: Vec::new(),
            dir_width,
            db: 0,
            log: 0,
            db_pages,
            log_pos: 0,
            commits: 0,
            tag: 0,
            pool,
            records,
            exist_rotor: 0,
            missing_rotor: 0,
        }
    }

    fn next_tag(&mut self) -> u64 {
        self.tag += 1;
        self.tag
    }

    /// Creates the directories and files (90% of the file slots), or the database and its log.
    pub fn populate(&mut self, fs: &mut Fs) -> Result<Nanos, FsError> {
        let mut t = 0;
        if self.workload.is_oltp() {
            let (db, t1) = fs.create(t, ROOT_INO, "db", FileKind::File)?;
            let (log, t2) = fs.create(t1, ROOT_INO, "log", FileKind::File)?;
            (self.db, self.log, t) = (db, log, t2);
            for (ino, blocks) in [(db, self.db_pages * PAGE_BLOCKS), (log, LOG_BLOCKS)] {
                for start in (0..blocks).step_by(256) {
                    let tag = self.next_tag();
                    t = fs.write(t, ino, start, 256.min(blocks - start), tag)?;
                }
            }
            return Ok(t);
        }
        let ndirs = (self.files.len() as u64).div_ceil(self.dir_width.min(self.files.len() as u64).max(1));
        for d in 0..ndirs {
            let (ino, done) = fs.create(t, ROOT_INO, &format!("d{d}"), FileKind::Dir)?;
            self.dirs.push(ino);
            t = done;
        }
        for slot in 0..self.files.len() as u64 {
            if slot % 10 != 9 {
                t = self.create_file(fs, t, slot)?.done_ns;
                let ino = self.files[slot as usize].expect("just created");
                let tag = self.next_tag();
                t = fs.write(t, ino, self.file_blocks, MEAN_APPEND_BLOCKS, tag)?;
            }
        }
        Ok(t)
    }

    fn dir_and_name(&self, slot: u64) -> (u32, String) {
        let d = if self.dir_width == u64::MAX { 0 } else { slot / self.dir_width };
        (self.dirs[d as usize], format!("f{slot}"))
    }

    /// Creates the file of `slot` and writes it whole.
    fn create_file(&mut self, fs: &mut Fs, now_ns: Nanos, slot: u64) -> Result<Op, FsError> {
        let (dir, name) = self.dir_and_name(slot);
        let (ino, t) = fs.create(now_ns, dir, &name, FileKind::File)?;
        self.files[slot as usize] = Some(ino);
        self.existing += 1;
        let tag = self.next_tag();
        let blocks = self.file_blocks;
        let mut op = Op::new(fs.write(t, ino, 0, blocks, tag)?);
        op.write_blocks = blocks;
        Ok(op)
    }

    /// The next slot holding a file (`want` true) or not, as filebench's
    /// `fileset_pick` finds it: in rotation, from just past the slot the
    /// same rotor picked last (one rotor for existing files, which delete,
    /// append and read share, another for missing ones, which create takes),
    /// wrapping at the end. Files die on the existing rotor's passes, not in
    /// uniform random order, which ages the segments differently.
    fn pick(&mut self, want: bool) -> Option<u64> {
        let n = self.files.len() as u64;
        let rotor = if want { &mut self.exist_rotor } else { &mut self.missing_rotor };
        let start = *rotor % n.max(1);
        let slot = (0..n).map(|k| (start + k) % n).find(|&s| self.files[s as usize].is_some() == want)?;
        *rotor = slot + 1;
        Some(slot)
    }

    /// Runs the thread's next step at `now_ns`.
    pub fn step(&mut self, fs: &mut Fs, th: &mut Thread, now_ns: Nanos) -> Result<Op, FsError> {
        let op = match self.workload {
            FsWorkload::Fileserver => self.fileserver(fs, th, now_ns),
            FsWorkload::Varmail => self.varmail(fs, th, now_ns),
            _ => self.transaction(fs, th, now_ns),
        }?;
        th.step += 1;
        Ok(op)
    }

    /// filebench fileserver: create and write whole, append, read whole, delete.
    fn fileserver(&mut self, fs: &mut Fs, th: &mut Thread, now_ns: Nanos) -> Result<Op, FsError> {
        match th.step % 4 {
            0 => match self.pick(false) {
                Some(slot) => self.create_file(fs, now_ns, slot),
                None => Ok(Op::new(now_ns + 1_000)),
            },
            1 => {
                let n = 1 + th.rng.below(2 * MEAN_APPEND_BLOCKS);
                let slot = self.pick(true);
                self.append(fs, now_ns, slot, n, false)
            }
            2 => {
                let slot = self.pick(true);
                self.read_whole(fs, now_ns, slot)
            }
            _ => {
                let op = self.delete(fs, now_ns)?;
                // statfile: one more turn of the rotor.
                self.pick(true);
                Ok(op)
            }
        }
    }

    /// filebench varmail: delete; create, append, fsync; open, read, append,
    /// fsync; open, read.
    fn varmail(&mut self, fs: &mut Fs, th: &mut Thread, now_ns: Nanos) -> Result<Op, FsError> {
        match th.step % 5 {
            0 => self.delete(fs, now_ns),
            1 => {
                let Some(slot) = self.pick(false) else {
                    return Ok(Op::new(now_ns + 1_000));
                };
                let mut op = self.create_file(fs, now_ns, slot)?;
                let ino = self.files[slot as usize].expect("just created");
                op.done_ns = fs.fsync(op.done_ns, ino)?;
                op.fsync = true;
                Ok(op)
            }
            // openfile3 picks the file that readwholefile3 reads and
            // appendfilerand3 then appends to.
            2 => {
                th.open_slot = self.pick(true);
                self.read_whole(fs, now_ns, th.open_slot)
            }
            3 => {
                let n = 1 + th.rng.below(2 * MEAN_APPEND_BLOCKS);
                let opened = th.open_slot.take().filter(|&s| self.files[s as usize].is_some());
                let slot = opened.or_else(|| self.pick(true));
                self.append(fs, now_ns, slot, n, true)
            }
            _ => {
                let slot = self.pick(true);
                self.read_whole(fs, now_ns, slot)
            }
        }
    }

    fn append(&mut self, fs: &mut Fs, now_ns: Nanos, slot: Option<u64>, n: u64, fsync: bool) -> Result<Op, FsError> {
        let Some(slot) = slot else {
            return Ok(Op::new(now_ns + 1_000));
        };
        let ino = self.files[slot as usize].expect("picked a file");
        let size = fs.size_blocks(ino).ok_or(FsError::NotFound)?;
        let tag = self.next_tag();
        let mut t = fs.write(now_ns, ino, size, n, tag)?;
        if fsync {
            t = fs.fsync(t, ino)?;
        }
        Ok(Op { done_ns: t, read_blocks: 0, write_blocks: n, fsync, more: false })
    }

    fn read_whole(&mut self, fs: &mut Fs, now_ns: Nanos, slot: Option<u64>) -> Result<Op, FsError> {
        let Some(slot) = slot else {
            return Ok(Op::new(now_ns + 1_000));
        };
        let ino = self.files[slot as usize].expect("picked a file");
        let size = fs.size_blocks(ino).ok_or(FsError::NotFound)?;
        let mut op = Op::new(fs.read(now_ns, ino, 0, size)?);
        op.read_blocks = size;
        Ok(op)
    }

    fn delete(&mut self, fs: &mut Fs, now_ns: Nanos) -> Result<Op, FsError> {
        let Some(slot) = self.pick(true) else {
            return Ok(Op::new(now_ns + 1_000));
        };
        let (dir, name) = self.dir_and_name(slot);
        self.files[slot as usize] = None;
        self.existing -= 1;
        Ok(Op::new(fs.unlink(now_ns, dir, &name)?))
    }

    /// A database page: `hot_share` of accesses go to the first `hot_pages` share of pages.
    fn page(&self, rng: &mut SimRng, hot_share: f64, hot_pages: f64) -> u64 {
        let hot = ((self.db_pages as f64 * hot_pages) as u64).max(1);
        if rng.chance(hot_share) {
            rng.below(hot)
        } else {
            hot + rng.below((self.db_pages - hot).max(1))
        }
    }

    /// Reads or updates database page `p` through the buffer pool: a miss
    /// reads the page from the file, after writing out the dirty page it
    /// displaces.
    fn pool_access(&mut self, fs: &mut Fs, now_ns: Nanos, p: u64, update: bool, op: &mut Op) -> Result<Nanos, FsError> {
        let pool = self.pool.as_mut().expect("OLTP workloads have a buffer pool");
        let access = pool.access(p, update);
        let mut t = now_ns;
        if let Some(e) = access.evicted_dirty {
            let tag = self.next_tag();
            t = fs.write(t, self.db, e * PAGE_BLOCKS, PAGE_BLOCKS, tag)?;
            op.write_blocks += PAGE_BLOCKS;
        }
        if !access.hit {
            t = fs.read(t, self.db, p * PAGE_BLOCKS, PAGE_BLOCKS)?;
            op.read_blocks += PAGE_BLOCKS;
        }
        Ok(t)
    }

    /// One OLTP transaction: page reads, page updates, and a commit (log write + fsync).
    fn transaction(&mut self, fs: &mut Fs, th: &mut Thread, now_ns: Nanos) -> Result<Op, FsError> {
        let txn = match th.txn.take() {
            Some(txn) => txn,
            None => self.new_transaction(th),
        };
        let mut op = Op::new(now_ns);
        if let Some(&(p, update)) = txn.accesses.get(txn.next) {
            op.done_ns = self.pool_access(fs, now_ns, p, update, &mut op)?;
            op.more = txn.next + 1 < txn.accesses.len() || update;
            if op.more {
                th.txn = Some(Txn { next: txn.next + 1, ..txn });
            }
            return Ok(op);
        }
        op.done_ns = self.commit(fs, now_ns)?;
        op.write_blocks += 1;
        op.fsync = true;
        Ok(op)
    }

    /// The pages a new transaction reads and updates.
    fn new_transaction(&mut self, th: &mut Thread) -> Txn {
        let accesses = match (&mut self.records, self.workload) {
            (None, _) => {
                // tpcc: four page reads and two updates, 80% of them on 20% of the pages.
                (0..6).map(|k| (self.page(&mut th.rng, 0.8, 0.2), k >= 4)).collect()
            }
            (Some(records), w) => {
                let page = records.next(&mut th.rng) / RECORDS_PER_PAGE;
                match (w, th.rng.chance(0.5)) {
                    // YCSB-a: half reads, half updates.
                    (FsWorkload::YcsbA, update) => vec![(page, update)],
                    // YCSB-f: half reads, half read-modify-writes of the same record.
                    (_, true) => vec![(page, false), (page, true)],
                    (_, false) => vec![(page, false)],
                }
            }
        };
        Txn { accesses, next: 0 }
    }

    /// Commit: the log record, made durable; now and then the database file too.
    fn commit(&mut self, fs: &mut Fs, now_ns: Nanos) -> Result<Nanos, FsError> {
        let tag = self.next_tag();
        let mut t = fs.write(now_ns, self.log, self.log_pos, 1, tag)?;
        self.log_pos = (self.log_pos + 1) % LOG_BLOCKS;
        t = fs.fsync(t, self.log)?;
        self.commits += 1;
        if self.commits.is_multiple_of(COMMITS_PER_DB_FLUSH) {
            t = fs.fsync(t, self.db)?;
        }
        Ok(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use zonelab_device::Device;
    use zonelab_fs::{FsConfig, Recycling};

    fn file_set(workload: FsWorkload) -> (Fs, FileSet, Thread) {
        let dev = Device::new(zonelab_fs::testing::small_device(48)).unwrap();
        let fs = Fs::mkfs(dev, FsConfig::new(Recycling::Zns)).unwrap();
        let cfg = FsBenchConfig::new(workload);
        let set = FileSet::new(&fs, &cfg, &mut SimRng::new(7));
        let th = Thread { ready_ns: 0, step: 0, rng: SimRng::new(8), op_start_ns: 0, txn: None, open_slot: None };
        (fs, set, th)
    }

    /// Share of page accesses that fall on the most used tenth of the pages.
    fn top_tenth_share(set: &mut FileSet, th: &mut Thread, transactions: usize) -> f64 {
        let mut counts = vec![0u64; set.db_pages as usize];
        for _ in 0..transactions {
            for (page, _) in set.new_transaction(th).accesses {
                counts[page as usize] += 1;
            }
        }
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top: u64 = counts[..counts.len() / 10].iter().sum();
        top as f64 / counts.iter().sum::<u64>() as f64
    }

    #[test]
    fn ycsb_hashes_zipfian_records_so_pages_are_less_skewed_than_records() {
        let (_fs, mut set, mut th) = file_set(FsWorkload::YcsbA);
        let share = top_tenth_share(&mut set, &mut th, 2_000_000);
        // The hottest tenth of the records gets H(n/10) / H(n) of a zipfian
        // (θ 0.99); 16 records share a page and hot ones are hashed across the
        // file, so the hottest tenth of the pages gets clearly less, yet far
        // more than the ~13% of uniform draws.
        let records = set.db_pages * RECORDS_PER_PAGE;
        let h = |n: u64| (1..=n).map(|i| (i as f64).powf(-YCSB_ZIPF_THETA)).sum::<f64>();
        let record_share = h(records / 10) / h(records);
        assert!(share < record_share - 0.1, "pages {share} vs records {record_share}");
        assert!(share > 0.3, "{share}");
    }

    #[test]
    fn ycsb_f_updates_the_record_it_read() {
        let (_fs, mut set, mut th) = file_set(FsWorkload::YcsbF);
        let mut rmw = 0;
        for _ in 0..1000 {
            let a = set.new_transaction(&mut th).accesses;
            assert!(!a.is_empty() && a.len() <= 2 && !a[0].1);
            if a.len() == 2 {
                assert_eq!((a[0].0, a[1]), (a[1].0, (a[0].0, true)));
                rmw += 1;
            }
        }
        assert!((400..600).contains(&rmw), "{rmw}");
    }

    /// filebench's `fileset_pick`: each rotor takes the next slot in the
    /// state it wants after the one it took last, and wraps.
    #[test]
    fn picks_rotate_over_the_slots_as_filebench_does() {
        let (_fs, mut set, _th) = file_set(FsWorkload::Varmail);
        set.files = vec![Some(1), None, Some(2), Some(3), None];
        let existing: Vec<_> = (0..4).map(|_| set.pick(true)).collect();
        assert_eq!(existing, [Some(0), Some(2), Some(3), Some(0)]);
        let missing: Vec<_> = (0..3).map(|_| set.pick(false)).collect();
        assert_eq!(missing, [Some(1), Some(4), Some(1)]);
        // A slot emptied behind the rotor is skipped until the rotor comes round.
        set.files[2] = None;
        assert_eq!(set.pick(true), Some(3));
        assert_eq!(set.pick(true), Some(0));
        set.files = vec![None; 3];
        assert_eq!(set.pick(true), None);
        set.files.clear();
        assert_eq!(set.pick(false), None);
    }
}
