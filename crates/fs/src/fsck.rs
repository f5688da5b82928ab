//! A checker in the spirit of fsck: every file reachable and readable, node
//! and data blocks owned once and by the right owner, the segment table
//! agreeing with what the tree references, and no leaked node.

use crate::cache::PageKey;
use crate::layout::*;
use crate::state::{FsState, Owner};
use std::collections::{HashMap, VecDeque};
use zonelab_device::ZonedDevice;
use zonelab_sim::Nanos;

/// What fsck walked when it found nothing wrong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FsckReport {
    /// Regular files reachable from the root.
    pub files: u64,
    /// Directories reachable from the root, the root included.
    pub dirs: u64,
    /// Node blocks (inodes, direct and indirect nodes) of those files and
    /// directories.
    pub nodes: u64,
    /// Data blocks (file data and dentries) with an address.
    pub data_blocks: u64,
    /// Blocks read back from the device and decoded (data mode).
    pub blocks_read: u64,
}

/// An inconsistency fsck found, described: which block, node, inode or
/// segment disagrees with what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FsckError(pub String);

/// Checks the file system; reads every block back in data mode.
pub(crate) fn fsck<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Result<FsckReport, FsckError> {
    let mut report = FsckReport::default();
    let mut owners: HashMap<u32, Owner> = HashMap::new();
    let mut claim = |addr: u32, o: Owner| -> Result<(), FsckError> {
        match owners.insert(addr, o) {
            Some(prev) => Err(FsckError(format!("block {addr} owned by {prev:?} and {o:?}"))),
            None => Ok(()),
        }
    };
    let mut queue = VecDeque::from([ROOT_INO]);
    let mut seen = std::collections::HashSet::new();
    while let Some(ino) = queue.pop_front() {
        if !seen.insert(ino) {
            return Err(FsckError(format!("inode {ino} reached twice")));
        }
        let inode = fs.inode(ino).ok_or_else(|| FsckError(format!("entry to missing inode {ino}")))?.clone();
        for nid in fs.nids_of(ino) {
            let addr = fs.nat[nid as usize];
            if addr == NULL_ADDR {
                return Err(FsckError(format!("node {nid} of {ino} has no address")));
            }
            claim(addr, Owner::Node { nid })?;
            report.nodes += 1;
        }
        for idx in 0..inode.size_blocks {
            let addr = fs.data_addr(ino, idx);
            if addr != NULL_ADDR {
                claim(addr, Owner::Data { ino, idx })?;
                report.data_blocks += 1;
            }
        }
        match inode.kind {
            FileKind::Dir => {
                report.dirs += 1;
                for (name, child) in fs.list(ino) {
                    let parent = fs.inode(child).map(|i| i.parent);
                    if parent != Some(ino) {
                        return Err(FsckError(format!("{name} in {ino} points to {child} whose parent is {parent:?}")));
                    }
                    queue.push_back(child);
                }
            }
            FileKind::File => report.files += 1,
        }
    }
    let leaked = (1..fs.nat.len() as u32)
        .find(|&n| fs.nat[n as usize] != NULL_ADDR && !owners.values().any(|o| *o == Owner::Node { nid: n }));
    if let Some(n) = leaked {
        return Err(FsckError(format!("node {n} has an address but no file")));
    }
    check_segments(fs, &owners)?;
    if fs.io.data_mode() {
        report.blocks_read = check_contents(fs, now_ns, &owners)?;
    }
    Ok(report)
}

/// SIT bitmaps and counts against the blocks the tree references.
fn check_segments<D: ZonedDevice>(fs: &FsState<D>, owners: &HashMap<u32, Owner>) -> Result<(), FsckError> {
    for (s, e) in fs.sit.segs.iter().enumerate() {
        if e.valid.count() != e.valid_blocks {
            return Err(FsckError(format!("segment {s}: {} valid bits, count {}", e.valid.count(), e.valid_blocks)));
        }
        for off in 0..fs.zone_blocks {
            let addr = fs.addr_of(s as u32, off);
            let referenced = owners.get(&addr);
            if e.valid.get(off as usize) != referenced.is_some() {
                return Err(FsckError(format!(
                    "block {addr}: valid bit {} but referenced {referenced:?}",
                    e.valid.get(off as usize)
                )));
            }
            if let Some(o) = referenced {
                if fs.owner[fs.main_index(addr)] != *o {
                    return Err(FsckError(format!(
                        "block {addr}: owner map says {:?}, tree {o:?}",
                        fs.owner[fs.main_index(addr)]
                    )));
                }
            }
        }
    }
    let free = (0..fs.segments()).filter(|&s| fs.sit.segs[s as usize].valid_blocks == 0).count() as u32;
    if free < fs.sit.free_segs() {
        return Err(FsckError("free segments counted with valid blocks".into()));
    }
    Ok(())
}

fn page_of(owner: Owner) -> PageKey {
    match owner {
        Owner::Node { nid } => PageKey::Node { nid },
        Owner::Data { ino, idx } => PageKey::Data { ino, idx },
        Owner::Free => unreachable!("only owners are listed"),
    }
}

/// Reads every referenced block and checks it holds what its owner expects.
fn check_contents<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    owners: &HashMap<u32, Owner>,
) -> Result<u64, FsckError> {
    let mut addrs: Vec<(u32, Owner)> = owners.iter().map(|(&a, &o)| (a, o)).collect();
    addrs.sort_unstable_by_key(|&(a, _)| a);
    // Dirty pages are newer in memory than on the device.
    addrs.retain(|&(_, o)| !fs.cache.is_dirty(page_of(o)));
    for &(addr, owner) in &addrs {
        let (bytes, _) = fs.io.read_blocks(now_ns, addr, 1);
        match owner {
            Owner::Node { nid } => match decode_node(&bytes) {
                Some((n, _)) if n.nid == nid && fs.nodes.get(&nid) == Some(&n) => {}
                _ => return Err(FsckError(format!("node {nid} at {addr} differs from the tree"))),
            },
            Owner::Data { ino, idx } if fs.dirs.contains_key(&ino) => {
                decode_dentries(&bytes)
                    .ok_or_else(|| FsckError(format!("dentry block {idx} of {ino} at {addr} unreadable")))?;
            }
            Owner::Data { ino, idx } => {
                let want = fs.tags.get(&ino).and_then(|t| t.get(idx as usize)).copied();
                match decode_data(&bytes) {
                    Some((i, x, tag)) if i == ino && x == idx && Some(tag) == want => {}
                    other => {
                        return Err(FsckError(format!(
                            "file {ino} block {idx} at {addr}: found {other:?}, want tag {want:?}"
                        )))
                    }
                }
            }
            Owner::Free => unreachable!("only owners are listed"),
        }
    }
    Ok(addrs.len() as u64)
}
