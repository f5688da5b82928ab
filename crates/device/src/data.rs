//! Data mode: what the host wrote, kept sparsely.
//!
//! A sequential zone is written only at its write pointer, so its data is one
//! contiguous vector from the zone start. Conventional zones are random
//! access and keep written blocks in a map.

use crate::front::command::{Payload, ReadPattern};
use std::collections::HashMap;

/// The namespace's data in data mode: written bytes per sequential zone up
/// to its write pointer, conventional blocks sparsely, and what TL_opened
/// zones held before they were opened.
#[derive(Debug, Clone)]
pub struct DataStore {
    lba_bytes: usize,
    zone_lbas_log2: u32,
    seq: Vec<Vec<u8>>,
    conventional: HashMap<u64, Box<[u8]>>,
    conventional_zones: u32,
    /// What TL_opened zones held when they were opened (their original block
    /// group): read at and above the write pointer, plugged below it.
    original: HashMap<u32, Vec<u8>>,
}

fn fill(dst: &mut [u8], payload: Payload<'_>, offset: usize) {
    match payload {
        Payload::None => dst.fill(0),
        Payload::Pattern(b) => dst.fill(b),
        Payload::Bytes(src) => dst.copy_from_slice(&src[offset..offset + dst.len()]),
    }
}

impl DataStore {
    /// An empty store for a namespace with `layout`.
    pub fn of(layout: &crate::config::Layout) -> Self {
        Self::new(layout.zones, layout.conventional_zones, layout.zone_lbas_log2, layout.lba_bytes)
    }

    /// An empty store for `zones` zones of 2^`zone_lbas_log2` LBAs of
    /// `lba_bytes`, the first `conventional_zones` of them conventional.
    pub fn new(zones: u32, conventional_zones: u32, zone_lbas_log2: u32, lba_bytes: u64) -> Self {
        Self {
            lba_bytes: usize::try_from(lba_bytes).expect("an LBA size, a u32 in the configuration"),
            zone_lbas_log2,
            seq: vec![Vec::new(); zones as usize],
            conventional: HashMap::new(),
            conventional_zones,
            original: HashMap::new(),
        }
    }

    /// TL_open: the zone's data becomes its original; new data starts over at the zone start.
    pub fn tl_open(&mut self, zone: u32) {
        assert!(zone >= self.conventional_zones && !self.original.contains_key(&zone));
        let data = std::mem::take(&mut self.seq[zone as usize]);
        self.original.insert(zone, data);
    }

    /// The LogFBG replaced the original block group.
    pub fn tl_close(&mut self, zone: u32) {
        self.original.remove(&zone);
    }

    /// Appends block `lba` of a TL_opened zone as the device plugs it: the
    /// original data if `valid`, zeros otherwise.
    pub fn plug(&mut self, lba: u64, valid: bool) {
        let block = if valid { self.block(lba).map(<[u8]>::to_vec) } else { None };
        match block {
            Some(b) => self.write(lba, 1, Payload::Bytes(&b)),
            None => self.write(lba, 1, Payload::Pattern(0)),
        }
    }

    /// A copy of block `lba` (zeros if never written).
    pub fn block_copy(&self, lba: u64) -> Vec<u8> {
        self.block(lba).map_or_else(|| vec![0; self.lba_bytes], <[u8]>::to_vec)
    }

    fn zone_of(&self, lba: u64) -> u32 {
        u32::try_from(lba >> self.zone_lbas_log2).expect("an LBA of the namespace: its zone is below its zones, a u32")
    }

    /// Byte offset of `lba` in the data of `zone`, which holds it.
    fn offset_in_zone(&self, lba: u64, zone: u32) -> usize {
        let lbas = lba - (u64::from(zone) << self.zone_lbas_log2);
        usize::try_from(lbas).expect("an offset in a zone whose data is in memory") * self.lba_bytes
    }

    /// Stores `nlb` blocks from `lba` on (`Payload::None` stores zeros).
    pub fn write(&mut self, lba: u64, nlb: u64, payload: Payload<'_>) {
        if let Payload::Bytes(b) = payload {
            assert_eq!(b.len() as u64, nlb * self.lba_bytes as u64, "write data length must match nlb");
        }
        let zone = self.zone_of(lba);
        if zone < self.conventional_zones {
            for (i, block_lba) in (lba..lba + nlb).enumerate() {
                let mut block = vec![0u8; self.lba_bytes].into_boxed_slice();
                fill(&mut block, payload, i * self.lba_bytes);
                self.conventional.insert(block_lba, block);
            }
            return;
        }
        let offset = self.offset_in_zone(lba, zone);
        let v = &mut self.seq[zone as usize];
        assert_eq!(v.len(), offset, "sequential zone data grows only at the write pointer");
        let len = usize::try_from(nlb).expect("blocks about to be held in memory") * self.lba_bytes;
        v.resize(offset + len, 0);
        fill(&mut v[offset..], payload, 0);
    }

    /// Stores `nlb` blocks from `lba` on in a sequential zone's ZRWA: anywhere
    /// at or above its write pointer, over earlier data; blocks skipped below
    /// `lba` read as zeros.
    pub fn write_window(&mut self, lba: u64, nlb: u64, payload: Payload<'_>) {
        let zone = self.zone_of(lba);
        assert!(zone >= self.conventional_zones, "a ZRWA is in a sequential zone");
        let offset = self.offset_in_zone(lba, zone);
        let len = usize::try_from(nlb).expect("blocks about to be held in memory") * self.lba_bytes;
        let v = &mut self.seq[zone as usize];
        if v.len() < offset + len {
            v.resize(offset + len, 0);
        }
        fill(&mut v[offset..offset + len], payload, 0);
    }

    /// Reads into `out` (if given) and summarises what was read.
    pub fn read(&self, lba: u64, nlb: u64, mut out: Option<&mut [u8]>) -> ReadPattern {
        let mut summary: Option<ReadPattern> = None;
        let note = |bytes: &[u8], summary: &mut Option<ReadPattern>| {
            for &b in bytes {
                *summary = match *summary {
                    None => Some(ReadPattern::Uniform(b)),
                    Some(ReadPattern::Uniform(u)) if u == b => Some(ReadPattern::Uniform(u)),
                    _ => Some(ReadPattern::Mixed),
                };
                if summary == &Some(ReadPattern::Mixed) {
                    return;
                }
            }
        };
        let zeros = vec![0u8; self.lba_bytes];
        for (i, block_lba) in (lba..lba + nlb).enumerate() {
            let block = self.block(block_lba).unwrap_or(&zeros);
            note(block, &mut summary);
            if let Some(out) = out.as_deref_mut() {
                let at = i * self.lba_bytes;
                out[at..at + self.lba_bytes].copy_from_slice(block);
            }
        }
        summary.unwrap_or(ReadPattern::Uniform(0))
    }

    fn block(&self, lba: u64) -> Option<&[u8]> {
        let zone = self.zone_of(lba);
        if zone < self.conventional_zones {
            return self.conventional.get(&lba).map(|b| &b[..]);
        }
        let offset = self.offset_in_zone(lba, zone);
        let seq = &self.seq[zone as usize];
        if offset < seq.len() {
            return seq.get(offset..offset + self.lba_bytes);
        }
        self.original.get(&zone).and_then(|o| o.get(offset..offset + self.lba_bytes))
    }

    /// Power cut: a sequential zone keeps its data below `lba` only.
    pub fn truncate(&mut self, lba: u64) {
        let zone = self.zone_of(lba);
        assert!(zone >= self.conventional_zones, "conventional zones are not truncated");
        let offset = self.offset_in_zone(lba, zone);
        self.seq[zone as usize].truncate(offset);
    }

    /// Reset (or offline): the zone reads as zeros again.
    pub fn reset(&mut self, zone: u32) {
        if zone < self.conventional_zones {
            let (start, end) = (u64::from(zone) << self.zone_lbas_log2, u64::from(zone + 1) << self.zone_lbas_log2);
            self.conventional.retain(|lba, _| !(start..end).contains(lba));
        }
        self.seq[zone as usize] = Vec::new();
        self.original.remove(&zone);
    }

    /// Bytes held, for memory accounting.
    pub fn bytes(&self) -> usize {
        self.seq.iter().map(Vec::capacity).sum::<usize>()
            + self.original.values().map(Vec::capacity).sum::<usize>()
            + self.conventional.len() * self.lba_bytes
    }
}
