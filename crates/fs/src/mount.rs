//! Mount after a clean stop or a power failure: the newest whole checkpoint
//! pack, its NAT and SIT, the node tree, then roll-forward of the nodes that
//! fsync wrote after it (F2FS's recovery), and a new checkpoint.

use crate::cache::PageKey;
use crate::checkpoint::{checkpoint, load_nat_block, load_sit_block, meta_end};
use crate::config::FsConfig;
use crate::layout::*;
use crate::log::{take_free_segment, tl_open};
use crate::pack::{decode_pack, CpPack};
use crate::sit::LogType;
use crate::state::{Dir, FsError, FsState, Log, Owner};
use crate::victim::tl_candidate;
use zonelab_device::{CmdResult, Command, ReportFilter, ZoneAction, ZoneDescriptor, ZonedDevice};
use zonelab_sim::Nanos;

fn corrupt<T>(msg: impl Into<String>) -> Result<T, FsError> {
    Err(FsError::Corrupt(msg.into()))
}

/// Mounts the file system on `dev` (data mode), from `now_ns` on.
pub(crate) fn mount<D: ZonedDevice>(dev: D, cfg: FsConfig, now_ns: Nanos) -> Result<(FsState<D>, Nanos), FsError> {
    if dev.config().mode != zonelab_device::Mode::Data {
        return Err(FsError::Device("mount needs a device in data mode".into()));
    }
    let mut state = FsState::blank(dev, cfg, now_ns)?;
    let fs = &mut state;
    let mut t = fs.io.last_submit_ns();
    let zones = report_and_close(fs, t)?;
    let (pack, meta_zone, meta_next, meta_bytes, t1) = find_checkpoint(fs, t, &zones)?;
    t = t1;
    fs.cp.version = pack.version;
    fs.cp.meta_zone = meta_zone;
    fs.cp.meta_next = meta_next;
    load_tables(fs, &pack, &meta_bytes)?;
    for (s, z) in zones.iter().skip(META_ZONES as usize).enumerate() {
        fs.sit.segs[s].zone_written = z.wp > z.zslba;
    }
    t = load_nodes(fs, t)?;
    t = load_dirs(fs, t)?;
    t = roll_forward(fs, t, &pack)?;
    t = load_file_tags(fs, t)?;
    rebuild_owners(fs)?;
    fs.free_nids = (2..fs.nat.len() as u32).filter(|&n| fs.nat[n as usize] == NULL_ADDR).rev().collect();
    resume_logs(fs, t, &pack, &zones)?;
    let t = checkpoint(fs, t);
    Ok((state, t))
}

/// Zone states; open zones are closed (a TL_opened zone's LogFBG takes over).
fn report_and_close<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Result<Vec<ZoneDescriptor>, FsError> {
    let zones = fs.device().layout().zones;
    let cmd = Command::ReportZones { slba: 0, filter: ReportFilter::All, max_zones: zones, partial: false };
    let CmdResult::Report(report) = fs.io.submit(now_ns, &cmd, None).result else {
        return corrupt("report zones gave no report");
    };
    let open: Vec<u64> = report.zones.iter().filter(|z| z.state.is_open()).map(|z| z.zslba).collect();
    if open.is_empty() {
        return Ok(report.zones);
    }
    for slba in open {
        let close = Command::ZoneMgmtSend { action: ZoneAction::Close, slba, select_all: false };
        fs.io.submit(now_ns, &close, None);
    }
    // Closing plugs TL_opened zones: their write pointers moved.
    report_and_close(fs, now_ns)
}

/// Reads both checkpoint zones; the newest whole pack, its zone, the next free block there.
#[allow(clippy::type_complexity)]
fn find_checkpoint<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    zones: &[ZoneDescriptor],
) -> Result<(CpPack, u32, u32, Vec<Vec<u8>>, Nanos), FsError> {
    let mut best: Option<(CpPack, u32)> = None;
    let mut all = Vec::new();
    let mut t = now_ns;
    for z in 0..META_ZONES {
        let written = (zones[z as usize].wp - zones[z as usize].zslba) as u32;
        let (bytes, done) = fs.io.read_blocks(t, z * fs.zone_blocks, written);
        t = done;
        let mut at = 0;
        while at < written as usize {
            match decode_pack(&bytes, at) {
                Some((pack, n)) => {
                    if best.as_ref().is_none_or(|(b, _)| pack.version > b.version) {
                        best = Some((pack, z));
                    }
                    at += n;
                }
                None => at += 1,
            }
        }
        all.push(bytes);
    }
    let Some((pack, zone)) = best else {
        return corrupt("no whole checkpoint pack");
    };
    let next = (zones[zone as usize].wp - zones[zone as usize].zslba) as u32;
    Ok((pack, zone, next, all, t))
}

fn load_tables<D: ZonedDevice>(fs: &mut FsState<D>, pack: &CpPack, meta: &[Vec<u8>]) -> Result<(), FsError> {
    fs.nat = vec![NULL_ADDR; pack.nat_entries as usize];
    fs.cp.nat_loc = pack.nat_loc.clone();
    fs.cp.sit_loc = pack.sit_loc.clone();
    let zb = fs.zone_blocks;
    let block = |addr: u32| {
        let (z, o) = ((addr / zb) as usize, (addr % zb) as usize);
        meta.get(z).and_then(|b| b.get(o * BLOCK_BYTES..(o + 1) * BLOCK_BYTES))
    };
    for (b, &addr) in pack.nat_loc.iter().enumerate() {
        let ok = block(addr).and_then(|buf| load_nat_block(fs, b as u32, buf));
        ok.ok_or_else(|| FsError::Corrupt(format!("NAT block {b} at {addr} unreadable")))?;
    }
    for (b, &addr) in pack.sit_loc.iter().enumerate() {
        let ok = block(addr).and_then(|buf| load_sit_block(fs, b as u32, buf));
        ok.ok_or_else(|| FsError::Corrupt(format!("SIT block {b} at {addr} unreadable")))?;
    }
    Ok(())
}

fn load_nodes<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Result<Nanos, FsError> {
    let mut t = now_ns;
    for nid in 1..fs.nat.len() as u32 {
        let addr = fs.nat[nid as usize];
        if addr == NULL_ADDR {
            continue;
        }
        if addr < meta_end(fs) || addr as usize >= meta_end(fs) as usize + fs.owner.len() {
            return corrupt(format!("node {nid} at {addr}, outside the main area"));
        }
        let (bytes, done) = fs.io.read_blocks(now_ns, addr, 1);
        t = t.max(done);
        match decode_node(&bytes) {
            Some((node, _)) if node.nid == nid => {
                fs.nodes.insert(nid, node);
            }
            _ => return corrupt(format!("node {nid} at {addr} unreadable")),
        }
    }
    match fs.inode(ROOT_INO) {
        Some(i) if i.kind == FileKind::Dir => Ok(t),
        _ => corrupt("no root directory"),
    }
}

fn load_dirs<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Result<Nanos, FsError> {
    let mut t = now_ns;
    let mut dirs: Vec<u32> =
        fs.nodes.values().filter(|n| n.inode().is_some_and(|i| i.kind == FileKind::Dir)).map(|n| n.nid).collect();
    // In nid order: the map's order is arbitrary and the reads' order moves the device's timing.
    dirs.sort_unstable();
    for ino in dirs {
        let mut dir = Dir::default();
        for blk in 0..fs.size_blocks(ino).unwrap_or(0) {
            let addr = fs.data_addr(ino, blk);
            let mut slots = vec![None; DENTRIES_PER_BLOCK];
            if addr != NULL_ADDR {
                let (bytes, done) = fs.io.read_blocks(now_ns, addr, 1);
                t = t.max(done);
                slots =
                    decode_dentries(&bytes).ok_or_else(|| FsError::Corrupt(format!("dentry block {blk} of {ino}")))?;
            }
            dir.slots.extend(slots);
        }
        for (i, s) in dir.slots.iter().enumerate() {
            match s {
                Some((name, _)) => {
                    dir.index.insert(name.clone(), i);
                }
                None => dir.free_slots.push(i),
            }
        }
        dir.free_slots.reverse();
        fs.dirs.insert(ino, dir);
    }
    Ok(t)
}

/// Follows each node log from its checkpointed position; applies fsynced nodes.
fn roll_forward<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos, pack: &CpPack) -> Result<Nanos, FsError> {
    let mut t = now_ns;
    let main = meta_end(fs)..meta_end(fs) + fs.owner.len() as u32;
    for lt in [LogType::HotNode, LogType::WarmNode, LogType::ColdNode] {
        let mut addr = pack.cursors[lt.index()];
        for _ in 0..fs.owner.len() {
            if !main.contains(&addr) {
                break;
            }
            let (bytes, done) = fs.io.read_blocks(t, addr, 1);
            t = done;
            let Some((node, footer)) = decode_node(&bytes) else { break };
            if footer.cp_version != pack.version {
                break;
            }
            if footer.fsync {
                recover_node(fs, node, addr)?;
            }
            addr = footer.next_addr;
        }
    }
    Ok(t)
}

/// Puts a node written by fsync after the checkpoint in place.
fn recover_node<D: ZonedDevice>(fs: &mut FsState<D>, node: Node, addr: u32) -> Result<(), FsError> {
    let nid = node.nid;
    if nid as usize >= fs.nat.len() {
        fs.nat.resize(nid as usize + 1, NULL_ADDR);
    }
    let old_addr = fs.nat[nid as usize];
    if old_addr == addr {
        return Ok(());
    }
    let old: Vec<u32> = fs.nodes.get(&nid).map_or(Vec::new(), |n| n.data_addrs().to_vec());
    for (i, &a) in node.data_addrs().iter().enumerate() {
        let before = old.get(i).copied().unwrap_or(NULL_ADDR);
        if a != before {
            sit_flip(fs, before, false)?;
            sit_flip(fs, a, true)?;
        }
    }
    sit_flip(fs, old_addr, false)?;
    sit_flip(fs, addr, true)?;
    fs.set_nat(nid, addr);
    let relink = node.inode().filter(|_| old_addr == NULL_ADDR).map(|i| (i.parent, i.name.clone(), i.kind));
    fs.nodes.insert(nid, node);
    if let Some((parent, name, kind)) = relink {
        let parent = if fs.dirs.contains_key(&parent) { parent } else { ROOT_INO };
        let existing = fs.lookup(parent, &name);
        if existing.is_some_and(|old| old != nid && fs.inode(old).is_some_and(|i| i.kind == FileKind::File)) {
            // F2FS's recover_dentry: the fsynced file replaces an older one of the same name.
            drop_file(fs, existing.expect("checked"))?;
            let d = fs.dirs.get_mut(&parent).expect("a directory");
            let slot = d.index[&name];
            d.slots[slot] = Some((name.clone(), nid));
            let blk = (slot / DENTRIES_PER_BLOCK) as u64;
            fs.cache.insert(PageKey::Data { ino: parent, idx: blk }, true);
        } else if existing.is_none() {
            let d = fs.dirs.get_mut(&parent).expect("a directory");
            d.slots.push(Some((name.clone(), nid)));
            d.index.insert(name, d.slots.len() - 1);
            let blk = ((d.slots.len() - 1) / DENTRIES_PER_BLOCK) as u64;
            fs.cache.insert(PageKey::Data { ino: parent, idx: blk }, true);
            let inode = fs.inode_mut(parent);
            inode.size_blocks = inode.size_blocks.max(blk + 1);
            fs.cache.insert(PageKey::Node { nid: parent }, true);
        }
        if kind == FileKind::Dir {
            fs.dirs.entry(nid).or_default();
        }
    }
    Ok(())
}

/// Frees a file's nodes and blocks during recovery.
fn drop_file<D: ZonedDevice>(fs: &mut FsState<D>, ino: u32) -> Result<(), FsError> {
    for nid in fs.nids_of(ino) {
        let data: Vec<u32> = fs.nodes[&nid].data_addrs().to_vec();
        for a in data {
            sit_flip(fs, a, false)?;
        }
        let addr = fs.nat[nid as usize];
        sit_flip(fs, addr, false)?;
        fs.set_nat(nid, NULL_ADDR);
        fs.nodes.remove(&nid);
    }
    Ok(())
}

/// Each log goes on in its checkpointed segment after what the device
/// holds there (blocks written after the checkpoint stay unused), or in a
/// free segment if that one is full.
fn resume_logs<D: ZonedDevice>(
    fs: &mut FsState<D>,
    now_ns: Nanos,
    pack: &CpPack,
    zones: &[ZoneDescriptor],
) -> Result<(), FsError> {
    fs.logs.clear();
    for lt in LogType::ALL {
        let cursor = pack.cursors[lt.index()];
        if cursor < meta_end(fs) || cursor >= meta_end(fs) + fs.owner.len() as u32 {
            return corrupt(format!("log {lt:?} at {cursor}, outside the main area"));
        }
        let (seg, _) = fs.seg_of(cursor);
        let z = &zones[(seg + META_ZONES) as usize];
        let off = (z.wp - z.zslba) as u32;
        let taken = fs.logs.iter().any(|l| l.seg == seg);
        let seg_off = if off < fs.zone_blocks && !taken {
            let e = &mut fs.sit.segs[seg as usize];
            e.current = true;
            e.log_type = Some(lt);
            (seg, off)
        } else {
            let free = (0..fs.segments()).filter(|&s| fs.sit.is_free_seg(s)).count();
            let why = format!("no free segment for log {lt:?} (segment {seg} at {off}, taken {taken}, {free} free)");
            match take_free_segment(fs, lt, now_ns) {
                Some(s) => (s, 0),
                // No free segment: ZNS+ goes on by threaded logging in the
                // dirty segment of the same kind that keeps the fewest blocks.
                None if fs.cfg.threaded_logging() => {
                    let same_kind = |t: Option<LogType>| t.is_some_and(|t| t.is_node() == lt.is_node());
                    let (s, kept) = tl_candidate(fs, None, same_kind).ok_or(FsError::Corrupt(why))?;
                    fs.logs.push(Log { log_type: lt, seg: s, off: 0, tl_kept: None });
                    tl_open(fs, lt, s, kept, now_ns);
                    continue;
                }
                None => return Err(FsError::Corrupt(why)),
            }
        };
        if let Some(o) = (seg_off.1..fs.zone_blocks).find(|&o| !fs.sit.is_free_block(seg_off.0, o)) {
            let e = &fs.sit.segs[seg_off.0 as usize];
            return corrupt(format!(
                "log {lt:?} resumes in segment {} at {} (cursor {cursor}, zone {:?} wp {}) but block {o} is in use (valid {} ckpt {} epoch {})",
                seg_off.0, seg_off.1, z.state, z.wp - z.zslba, e.valid.get(o as usize), e.ckpt_valid.get(o as usize), e.epoch_written.get(o as usize)
            ));
        }
        fs.logs.push(Log { log_type: lt, seg: seg_off.0, off: seg_off.1, tl_kept: None });
    }
    Ok(())
}

/// Marks a main-area block valid or invalid during recovery.
fn sit_flip<D: ZonedDevice>(fs: &mut FsState<D>, addr: u32, valid: bool) -> Result<(), FsError> {
    if addr == NULL_ADDR {
        return Ok(());
    }
    let (seg, off) = fs.seg_of(addr);
    if fs.sit.segs[seg as usize].valid.get(off as usize) == valid {
        return corrupt(format!("roll-forward: block {addr} already {}", if valid { "valid" } else { "free" }));
    }
    if valid {
        fs.sit.validate(seg, off, 0);
    } else {
        fs.sit.invalidate(seg, off);
    }
    Ok(())
}

/// Reads every file block for its version stamp.
fn load_file_tags<D: ZonedDevice>(fs: &mut FsState<D>, now_ns: Nanos) -> Result<Nanos, FsError> {
    let mut t = now_ns;
    let files: Vec<(u32, u64)> = fs
        .nodes
        .values()
        .filter_map(|n| n.inode().filter(|i| i.kind == FileKind::File).map(|i| (n.nid, i.size_blocks)))
        .collect();
    for (ino, size) in files {
        let mut tags = vec![0; size as usize];
        for (idx, tag) in tags.iter_mut().enumerate() {
            let addr = fs.data_addr(ino, idx as u64);
            if addr == NULL_ADDR {
                continue;
            }
            let (bytes, done) = fs.io.read_blocks(now_ns, addr, 1);
            t = t.max(done);
            match decode_data(&bytes) {
                Some((i, x, v)) if i == ino && x == idx as u64 => *tag = v,
                _ => return corrupt(format!("file {ino} block {idx} at {addr} holds something else")),
            }
        }
        fs.tags.insert(ino, tags);
    }
    Ok(t)
}

/// The owner map from the node tree.
fn rebuild_owners<D: ZonedDevice>(fs: &mut FsState<D>) -> Result<(), FsError> {
    let mut nids: Vec<u32> = fs.nodes.keys().copied().collect();
    nids.sort_unstable();
    for nid in nids {
        let addr = fs.nat[nid as usize];
        own(fs, addr, Owner::Node { nid })?;
        let node = &fs.nodes[&nid];
        if node.inode().is_some() {
            let size = node.inode().map_or(0, |i| i.size_blocks);
            for idx in 0..size {
                let a = fs.data_addr(nid, idx);
                own(fs, a, Owner::Data { ino: nid, idx })?;
            }
        }
    }
    Ok(())
}

fn own<D: ZonedDevice>(fs: &mut FsState<D>, addr: u32, owner: Owner) -> Result<(), FsError> {
    if addr == NULL_ADDR {
        return Ok(());
    }
    let i = fs.main_index(addr);
    if fs.owner[i] != Owner::Free {
        return corrupt(format!("block {addr} owned by {:?} and {owner:?}", fs.owner[i]));
    }
    fs.owner[i] = owner;
    Ok(())
}
