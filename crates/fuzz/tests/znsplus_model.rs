//! Data-mode property test of the ZNS+ commands, with shrinking: writes,
//! appends, TL_open overwrites, zone_compaction, Simple Copy, finishes,
//! closes and resets on a small mlc device, against the reference model
//! (`zonelab_fuzz::znsplus::reference`). Every status, every block read,
//! and every zone's state and write pointer agree, so no valid block is
//! ever lost or corrupted. The `znsplus` fuzz target runs the same check on
//! every zoned preset and many settings.

use proptest::prelude::*;
use zonelab_device::ZoneAction;
use zonelab_fuzz::znsplus::run;
use zonelab_fuzz::znsplus::sequence::{Gap, Op, Sequence, Setup, ZONES};

/// Blocks per chunk (16 KiB pages of 4 KiB LBAs) and per zone.
const CHUNK: u64 = 4;
const ZSZE: u64 = 64;

fn op_strategy() -> impl Strategy<Value = Op> {
    let zone = || 0..ZONES;
    prop_oneof![
        20 => (zone(), prop_oneof![6 => Just(0u64), 1 => 0u64..6], 1u32..=12, 1u8..=255)
            .prop_map(|(zone, skip, nlb, p)| Op::Write { zone, skip, nlb, p }),
        5 => (zone(), 1u32..=8, 1u8..=255).prop_map(|(zone, nlb, p)| Op::Append { zone, nlb, p }),
        10 => (zone(), 0..ZSZE, 1u32..=16).prop_map(|(zone, offset, nlb)| Op::Read { zone, offset, nlb }),
        8 => (zone(), prop::collection::vec(0..ZSZE, 1..12), zone(), prop::collection::vec(prop_oneof![4 => Just(0u64), 1 => 1u64..3], 12))
            .prop_map(|(src_zone, src, dst_zone, gaps)| Op::Compact { src_zone, src, dst_zone, gaps }),
        6 => (zone(), prop::collection::vec(0..ZSZE / CHUNK, 1..5), zone())
            .prop_map(|(src_zone, chunks, dst_zone)| Op::CompactChunks { src_zone, chunks, dst_zone }),
        4 => (prop::collection::vec((zone(), 0..ZSZE, 1u32..6), 1..3), zone(), prop_oneof![5 => Just(0u64), 1 => Just(1u64)])
            .prop_map(|(ranges, dst_zone, skip)| Op::SimpleCopy { ranges, dst_zone, skip }),
        6 => (zone(), any::<u64>(), 0u8..=3).prop_map(|(zone, seed, density)| Op::TlOpen { zone, seed, density }),
        8 => (prop::sample::select(vec![ZoneAction::Open, ZoneAction::Close, ZoneAction::Finish, ZoneAction::Reset]), zone(), prop::bool::weighted(0.1))
            .prop_map(|(action, zone, all)| Op::Mgmt { action, zone, all }),
    ]
}

fn gap_strategy() -> impl Strategy<Value = Gap> {
    prop_oneof![3 => Just(Gap::Ns(0)), 2 => (0u64..2_000_000).prop_map(Gap::Ns), 1 => Just(Gap::Done)]
}

/// 8 zones of 64 blocks on mlc, 3 open and 4 active at most, 4 dies per zone.
fn sequence(lba_ordered: bool, ops: Vec<(Op, Gap)>) -> Sequence {
    let sets = [("mapping.d_zone", "4"), ("znsplus.copyback_chain_max", "2")];
    let setup = Setup {
        preset: "mlc".into(),
        zone_kib: ZSZE * 4,
        zcap_kib: ZSZE * 4,
        max_open: 3,
        max_active: 4,
        lba_ordered,
        sets: sets.iter().map(|(p, v)| (p.to_string(), v.to_string())).collect(),
    };
    Sequence { setup, ops }
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(192) })]

    #[test]
    fn znsplus_commands_never_lose_a_valid_block(
        lba_ordered in any::<bool>(),
        ops in prop::collection::vec((op_strategy(), gap_strategy()), 1..120),
    ) {
        let seq = sequence(lba_ordered, ops);
        let reached = run(&seq).map_err(|f| TestCaseError::fail(format!("{f}\n{seq}")))?;
        prop_assert!(reached.built);
    }
}

/// The harness reaches TL plugging, copyback and compaction into a
/// TL_opened zone, with known outcomes.
#[test]
fn fixed_sequence_reaches_every_command() {
    let full = ZSZE as u32;
    let ops = vec![
        (Op::Write { zone: 0, skip: 0, nlb: 12, p: 1 }, Gap::Ns(0)),
        (Op::Write { zone: 0, skip: 0, nlb: full - 12, p: 2 }, Gap::Ns(0)),
        (Op::CompactChunks { src_zone: 0, chunks: vec![0, 5], dst_zone: 4 }, Gap::Ns(5_000_000)),
        (Op::TlOpen { zone: 0, seed: 0x5555, density: 3 }, Gap::Ns(5_000_000)),
        (Op::Write { zone: 0, skip: 0, nlb: 3, p: 3 }, Gap::Ns(1_000_000)),
        (Op::Compact { src_zone: 4, src: vec![0, 1, 2], dst_zone: 0, gaps: vec![0; 12] }, Gap::Ns(0)),
        (Op::SimpleCopy { ranges: vec![(0, 0, 4)], dst_zone: 5, skip: 0 }, Gap::Ns(0)),
        (Op::Mgmt { action: ZoneAction::Close, zone: 0, all: false }, Gap::Ns(0)),
        (Op::Read { zone: 0, offset: 0, nlb: 16 }, Gap::Ns(0)),
        (Op::Mgmt { action: ZoneAction::Reset, zone: 4, all: false }, Gap::Ns(0)),
    ];
    for lba_ordered in [true, false] {
        let z = run(&sequence(lba_ordered, ops.clone())).unwrap().counters;
        assert_eq!((z.tl_opens, z.compactions, z.simple_copies), (1, 2, 1), "{lba_ordered}: {z:?}");
        assert!(z.plugged_blocks_foreground + z.plugged_blocks_background > 0, "{lba_ordered}: {z:?}");
        // Two whole chunks of a zone programmed 10 ms before go by copyback.
        let copyback = vec![
            ops[0].clone(),
            ops[1].clone(),
            (Op::CompactChunks { src_zone: 0, chunks: vec![0, 5], dst_zone: 4 }, Gap::Ns(10_000_000)),
        ];
        let z = run(&sequence(lba_ordered, copyback)).unwrap().counters;
        assert_eq!(z.copyback_blocks, 8, "{lba_ordered}: {z:?}");
    }
}
