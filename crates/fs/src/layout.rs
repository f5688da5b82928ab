//! On-disk structures: node blocks (inodes, direct and indirect nodes) with
//! their footers, data and dentry blocks, and how a file block index maps onto
//! the node tree. Blocks are 4 KiB; block addresses are device LBAs (u32),
//! 0 meaning "none" (LBA 0 is in the checkpoint area, never a node or data block).

/// Bytes of a block: the file system's unit and the device's LBA size.
pub const BLOCK_BYTES: usize = 4096;
/// The address that means none (LBA 0 is in the checkpoint area).
pub const NULL_ADDR: u32 = 0;
/// Data addresses held by an inode itself.
pub const INODE_ADDRS: usize = 900;
/// Data addresses of a direct node.
pub const NODE_ADDRS: usize = 1000;
/// Direct-node ids of an indirect node.
pub const NODE_NIDS: usize = 1000;
/// Indirect nodes an inode points to.
pub const INODE_INDIRECT: usize = 4;
/// Longest file name.
pub const NAME_BYTES_MAX: usize = 120;
/// Dentry slots of a dentry block (128 bytes each).
pub const DENTRIES_PER_BLOCK: usize = BLOCK_BYTES / 128;
/// Inode number of the root directory.
pub const ROOT_INO: u32 = 1;
/// Zones of the checkpoint area: two, used in turn (the two checkpoint packs).
pub const META_ZONES: u32 = 2;

const MAGIC_NODE: u32 = 0x4e4f_4445;
const MAGIC_DATA: u32 = 0x4441_5441;
const MAGIC_DENT: u32 = 0x4445_4e54;

/// What an inode is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file: its blocks hold data.
    File,
    /// A directory: its blocks hold dentries.
    Dir,
}

/// An inode: its file's kind, size, place in the tree and where its blocks
/// are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inode {
    /// Regular file or directory.
    pub kind: FileKind,
    /// File size in 4 KiB blocks.
    pub size_blocks: u64,
    /// Parent directory and name (for roll-forward of a new fsynced file).
    pub parent: u32,
    /// Its name in the parent directory.
    pub name: String,
    /// Addresses of the file's first [`INODE_ADDRS`] blocks ([`NULL_ADDR`]:
    /// none).
    pub addrs: Vec<u32>,
    /// Node ids of its indirect nodes (0: none).
    pub indirect: [u32; INODE_INDIRECT],
}

/// What a node block holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeBody {
    /// An inode; its node id is its inode number.
    Inode(Box<Inode>),
    /// Data addresses.
    Direct(Vec<u32>),
    /// Direct-node ids.
    Indirect(Vec<u32>),
}

/// A node block of file `ino`: its inode, a direct or an indirect node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    /// Node id (the NAT's index).
    pub nid: u32,
    /// Inode number of the file it belongs to.
    pub ino: u32,
    /// The inode or the addresses it holds.
    pub body: NodeBody,
}

/// Written with every node block: how roll-forward finds the blocks written
/// after the last checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footer {
    /// Version of the checkpoint it was written after: roll-forward takes only
    /// the newest checkpoint's.
    pub cp_version: u64,
    /// Written by fsync: roll-forward recovers it.
    pub fsync: bool,
    /// Where the same log writes next.
    pub next_addr: u32,
}

/// Where the address of file block `idx` lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Entry `idx` of the inode's own addresses.
    Inode(usize),
    /// Indirect node number `indirect` of the inode, its `direct`-th direct node, entry `off`.
    Direct {
        /// Which of the inode's indirect nodes.
        indirect: usize,
        /// Which direct node of that indirect node.
        direct: usize,
        /// Entry in that direct node.
        off: usize,
    },
}

/// Largest file, in blocks.
pub const FILE_BLOCKS_MAX: u64 = (INODE_ADDRS + INODE_INDIRECT * NODE_NIDS * NODE_ADDRS) as u64;

/// Node blocks a file of `blocks` data blocks holds: its inode, a direct
/// node per `NODE_ADDRS` blocks past the inode's own addresses, and an
/// indirect node per `NODE_NIDS` direct nodes. F2FS counts them as used
/// blocks, so `df` (and a benchmark sized to a utilization) does too.
pub fn file_node_blocks(blocks: u64) -> u64 {
    assert!(blocks <= FILE_BLOCKS_MAX, "a file holds at most FILE_BLOCKS_MAX blocks");
    let direct = blocks.saturating_sub(INODE_ADDRS as u64).div_ceil(NODE_ADDRS as u64);
    1 + direct + direct.div_ceil(NODE_NIDS as u64)
}

/// Where the address of file block `idx` lives; panics past
/// [`FILE_BLOCKS_MAX`].
pub fn slot_of(idx: u64) -> Slot {
    assert!(idx < FILE_BLOCKS_MAX, "block {idx} beyond the largest file");
    let idx = idx as usize;
    if idx < INODE_ADDRS {
        return Slot::Inode(idx);
    }
    let j = idx - INODE_ADDRS;
    Slot::Direct { indirect: j / (NODE_NIDS * NODE_ADDRS), direct: (j / NODE_ADDRS) % NODE_NIDS, off: j % NODE_ADDRS }
}

impl Node {
    /// A new, empty inode node for `ino` (also its node id), named `name` in
    /// directory `parent`.
    pub fn new_inode(ino: u32, kind: FileKind, parent: u32, name: &str) -> Self {
        let inode = Inode {
            kind,
            size_blocks: 0,
            parent,
            name: name.to_string(),
            addrs: vec![NULL_ADDR; INODE_ADDRS],
            indirect: [0; INODE_INDIRECT],
        };
        Node { nid: ino, ino, body: NodeBody::Inode(Box::new(inode)) }
    }

    /// The inode, if this node is one.
    pub fn inode(&self) -> Option<&Inode> {
        match &self.body {
            NodeBody::Inode(i) => Some(i),
            _ => None,
        }
    }

    /// The inode, to change, if this node is one.
    pub fn inode_mut(&mut self) -> Option<&mut Inode> {
        match &mut self.body {
            NodeBody::Inode(i) => Some(i),
            _ => None,
        }
    }

    /// Data addresses this node holds (inode or direct node).
    pub fn data_addrs(&self) -> &[u32] {
        match &self.body {
            NodeBody::Inode(i) => &i.addrs,
            NodeBody::Direct(a) => a,
            NodeBody::Indirect(_) => &[],
        }
    }

    /// Node ids this node points to.
    pub fn child_nids(&self) -> Vec<u32> {
        match &self.body {
            NodeBody::Inode(i) => i.indirect.iter().copied().filter(|&n| n != 0).collect(),
            NodeBody::Direct(_) => Vec::new(),
            NodeBody::Indirect(n) => n.iter().copied().filter(|&n| n != 0).collect(),
        }
    }
}

struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    fn u8(&mut self, v: u8) {
        self.buf[self.at] = v;
        self.at += 1;
    }
    fn u32(&mut self, v: u32) {
        self.buf[self.at..self.at + 4].copy_from_slice(&v.to_le_bytes());
        self.at += 4;
    }
    fn u64(&mut self, v: u64) {
        self.buf[self.at..self.at + 8].copy_from_slice(&v.to_le_bytes());
        self.at += 8;
    }
    fn bytes(&mut self, v: &[u8]) {
        self.buf[self.at..self.at + v.len()].copy_from_slice(v);
        self.at += v.len();
    }
}

/// Reads little-endian fields; `None` past the end.
pub struct Reader<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from its start.
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, at: 0 }
    }
    /// The next byte.
    pub fn u8(&mut self) -> Option<u8> {
        let v = *self.buf.get(self.at)?;
        self.at += 1;
        Some(v)
    }
    /// The next little-endian u32.
    pub fn u32(&mut self) -> Option<u32> {
        let v = self.buf.get(self.at..self.at + 4)?;
        self.at += 4;
        Some(u32::from_le_bytes(v.try_into().ok()?))
    }
    /// The next little-endian u64.
    pub fn u64(&mut self) -> Option<u64> {
        let v = self.buf.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(u64::from_le_bytes(v.try_into().ok()?))
    }
    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let v = self.buf.get(self.at..self.at + n)?;
        self.at += n;
        Some(v)
    }
}

/// Writes little-endian words into `buf` from the start.
pub fn put_words(buf: &mut [u8], words: &[u64]) {
    let mut w = Writer { buf, at: 0 };
    words.iter().for_each(|&v| w.u64(v));
}

/// Encodes `node` and its footer into the block `buf` (zeroed first).
pub fn encode_node(node: &Node, footer: Footer, buf: &mut [u8]) {
    buf.fill(0);
    let mut w = Writer { buf, at: 0 };
    w.u32(MAGIC_NODE);
    w.u32(node.nid);
    w.u32(node.ino);
    w.u64(footer.cp_version);
    w.u8(u8::from(footer.fsync));
    w.u32(footer.next_addr);
    match &node.body {
        NodeBody::Inode(i) => {
            w.u8(0);
            w.u8(match i.kind {
                FileKind::File => 0,
                FileKind::Dir => 1,
            });
            w.u64(i.size_blocks);
            w.u32(i.parent);
            w.u8(i.name.len() as u8);
            w.bytes(i.name.as_bytes());
            i.indirect.iter().for_each(|&n| w.u32(n));
            i.addrs.iter().for_each(|&a| w.u32(a));
        }
        NodeBody::Direct(a) => {
            w.u8(1);
            a.iter().for_each(|&a| w.u32(a));
        }
        NodeBody::Indirect(n) => {
            w.u8(2);
            n.iter().for_each(|&n| w.u32(n));
        }
    }
}

/// The node and footer a node block holds; `None` if `buf` is not one.
pub fn decode_node(buf: &[u8]) -> Option<(Node, Footer)> {
    let mut r = Reader::new(buf);
    if r.u32()? != MAGIC_NODE {
        return None;
    }
    let (nid, ino) = (r.u32()?, r.u32()?);
    let footer = Footer { cp_version: r.u64()?, fsync: r.u8()? == 1, next_addr: r.u32()? };
    let words = |r: &mut Reader, n: usize| (0..n).map(|_| r.u32()).collect::<Option<Vec<u32>>>();
    let body = match r.u8()? {
        0 => {
            let kind = if r.u8()? == 1 { FileKind::Dir } else { FileKind::File };
            let size_blocks = r.u64()?;
            let parent = r.u32()?;
            let len = usize::from(r.u8()?);
            let name = String::from_utf8(r.bytes(len)?.to_vec()).ok()?;
            let ind = words(&mut r, INODE_INDIRECT)?;
            let addrs = words(&mut r, INODE_ADDRS)?;
            let indirect = ind.try_into().ok()?;
            NodeBody::Inode(Box::new(Inode { kind, size_blocks, parent, name, addrs, indirect }))
        }
        1 => NodeBody::Direct(words(&mut r, NODE_ADDRS)?),
        2 => NodeBody::Indirect(words(&mut r, NODE_NIDS)?),
        _ => return None,
    };
    Some((Node { nid, ino, body }, footer))
}

/// A file data block: the owner and the version stamp the writer gave it.
pub fn encode_data(ino: u32, idx: u64, tag: u64, buf: &mut [u8]) {
    buf.fill(0);
    let mut w = Writer { buf, at: 0 };
    w.u32(MAGIC_DATA);
    w.u32(ino);
    w.u64(idx);
    w.u64(tag);
}

/// (ino, idx, tag) of a data block.
pub fn decode_data(buf: &[u8]) -> Option<(u32, u64, u64)> {
    let mut r = Reader::new(buf);
    (r.u32()? == MAGIC_DATA).then_some(())?;
    Some((r.u32()?, r.u64()?, r.u64()?))
}

/// A dentry block: up to [`DENTRIES_PER_BLOCK`] (ino, name) slots.
pub fn encode_dentries(slots: &[Option<(String, u32)>], buf: &mut [u8]) {
    assert!(slots.len() <= DENTRIES_PER_BLOCK);
    buf.fill(0);
    let mut w = Writer { buf, at: 0 };
    w.u32(MAGIC_DENT);
    for (i, slot) in slots.iter().enumerate() {
        w.at = 8 + i * 126;
        if let Some((name, ino)) = slot {
            w.u32(*ino);
            w.u8(name.len() as u8);
            w.bytes(name.as_bytes());
        }
    }
}

/// The slots of a dentry block, as [`encode_dentries`] wrote them; `None`
/// if `buf` is not one.
pub fn decode_dentries(buf: &[u8]) -> Option<Vec<Option<(String, u32)>>> {
    let mut r = Reader::new(buf);
    (r.u32()? == MAGIC_DENT).then_some(())?;
    let mut slots = Vec::with_capacity(DENTRIES_PER_BLOCK);
    for i in 0..DENTRIES_PER_BLOCK {
        r.at = 8 + i * 126;
        let ino = r.u32()?;
        let len = usize::from(r.u8()?);
        let name = String::from_utf8(r.bytes(len)?.to_vec()).ok()?;
        slots.push((ino != 0).then_some((name, ino)));
    }
    Some(slots)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_blocks_follow_the_address_tree() {
        assert_eq!(file_node_blocks(0), 1);
        assert_eq!(file_node_blocks(INODE_ADDRS as u64), 1);
        // One block past the inode needs a direct node and its indirect node.
        assert_eq!(file_node_blocks(INODE_ADDRS as u64 + 1), 3);
        assert_eq!(file_node_blocks((INODE_ADDRS + NODE_ADDRS) as u64 + 1), 4);
        let direct = (INODE_INDIRECT * NODE_NIDS) as u64;
        assert_eq!(file_node_blocks(FILE_BLOCKS_MAX), 1 + direct + INODE_INDIRECT as u64);
        // Every slot_of position up to the largest file is covered by those nodes.
        let Slot::Direct { indirect, direct, .. } = slot_of(FILE_BLOCKS_MAX - 1) else { panic!("past the inode") };
        assert_eq!((indirect + 1, direct + 1), (INODE_INDIRECT, NODE_NIDS));
    }

    #[test]
    fn nodes_round_trip() {
        let mut n = Node::new_inode(7, FileKind::File, ROOT_INO, "f7");
        n.inode_mut().unwrap().addrs[3] = 99;
        n.inode_mut().unwrap().indirect[1] = 12;
        let f = Footer { cp_version: 5, fsync: true, next_addr: 1234 };
        let mut buf = vec![0; BLOCK_BYTES];
        encode_node(&n, f, &mut buf);
        assert_eq!(decode_node(&buf), Some((n, f)));
        let d = Node { nid: 9, ino: 7, body: NodeBody::Direct((0..NODE_ADDRS as u32).collect()) };
        encode_node(&d, f, &mut buf);
        assert_eq!(decode_node(&buf).unwrap().0, d);
        assert!(decode_node(&[0; BLOCK_BYTES]).is_none());
    }

    #[test]
    fn slots_cover_the_tree() {
        assert_eq!(slot_of(0), Slot::Inode(0));
        assert_eq!(slot_of(INODE_ADDRS as u64), Slot::Direct { indirect: 0, direct: 0, off: 0 });
        let j = (NODE_NIDS * NODE_ADDRS + 2 * NODE_ADDRS + 5) as u64;
        assert_eq!(slot_of(INODE_ADDRS as u64 + j), Slot::Direct { indirect: 1, direct: 2, off: 5 });
    }

    #[test]
    fn dentries_round_trip() {
        let mut slots = vec![None; DENTRIES_PER_BLOCK];
        slots[0] = Some(("a".to_string(), 5));
        slots[31] = Some(("x".repeat(NAME_BYTES_MAX), 9));
        let mut buf = vec![0; BLOCK_BYTES];
        encode_dentries(&slots, &mut buf);
        assert_eq!(decode_dentries(&buf).unwrap(), slots);
        encode_data(3, 4, 5, &mut buf);
        assert_eq!(decode_data(&buf), Some((3, 4, 5)));
    }
}
