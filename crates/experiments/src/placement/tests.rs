//! The study's runs on a small flash (64 blocks of 48 pages per plane: 3 GiB).

use super::*;

fn small(interface: Interface, workload: Workload, utilization_pct: u32) -> PlacementRun {
    PlacementRun {
        interface,
        workload,
        utilization_pct,
        blocks_per_plane: 64,
        pages_per_block: 48,
        overwrites: 2,
        queue_depth: 8,
        windows: 4,
        seed: 1,
        gc_victim: VictimPolicy::Greedy,
    }
}

#[test]
fn fdp_with_one_handle_is_the_conventional_ftl() {
    let conventional = small(Interface::Conventional, Workload::Cache, 80).run().unwrap();
    let one = small(Interface::Fdp(1), Workload::Cache, 80).run().unwrap();
    assert_eq!(conventional, one, "every write on handle 0 is no placement at all");
    assert_eq!(conventional.windows.len(), 4);
    assert!(conventional.write_amplification > 1.3, "{conventional:?}");
}

#[test]
fn the_cache_engines_on_handles_of_their_own_need_almost_no_collection() {
    let conventional = small(Interface::Conventional, Workload::Cache, 80).run().unwrap();
    let two = small(Interface::Fdp(2), Workload::Cache, 80).run().unwrap();
    eprintln!(
        "cache write amplification: conventional {:.3}, fdp-2 {:.3}",
        conventional.write_amplification, two.write_amplification
    );
    // The log's blocks die whole: only the small-object region's are collected.
    assert!(two.write_amplification < 0.7 * conventional.write_amplification);
    assert!(two.throughput_mib_s > conventional.throughput_mib_s);
}

#[test]
fn zns_with_host_collection_runs_and_repeats_exactly() {
    let run = small(Interface::Zns, Workload::Skewed, 70);
    let (a, b) = (run.run().unwrap(), run.run().unwrap());
    assert_eq!(a, b, "the same spec gives the same result");
    assert!(a.write_amplification > 1.05, "collection copies: {a:?}");
    assert!(a.windows.iter().all(|w| w.throughput_mib_s > 0.0 && w.p99_latency_us > 0.0));
}

#[test]
fn the_lsm_tree_writes_every_class_and_deletes_its_inputs() {
    let space = small(Interface::Conventional, Workload::Lsm, 80).space_blocks().unwrap();
    let mut gen = workload::Generator::new(Workload::Lsm, space, 1);
    let (mut classes, mut deleted) = ([0u64; 4], 0);
    for _ in 0..200_000 {
        match gen.next_step() {
            workload::Step::Write { block, blocks, class } => {
                assert!(block + u64::from(blocks) <= space);
                classes[usize::from(class)] += u64::from(blocks);
            }
            workload::Step::Delete { blocks, .. } => deleted += blocks,
        }
    }
    assert!(classes.iter().all(|&c| c > 0), "log and levels 1-3 are written: {classes:?}");
    assert!(deleted > 0);
}

#[test]
fn specs_outside_the_study_are_refused() {
    let e = small(Interface::Conventional, Workload::Skewed, 40).run().unwrap_err();
    assert!(e.to_string().contains("50 to 95"), "{e}");
    let mut run = small(Interface::Fdp(2), Workload::Skewed, 60);
    run.queue_depth = 0;
    assert!(run.run().is_err());
    run.queue_depth = 8;
    run.blocks_per_plane = 8;
    assert!(run.run().unwrap_err().to_string().contains("does not fit"));
}

#[test]
fn the_collectors_victim_policy_reaches_the_device_ftl() {
    let cost_benefit =
        PlacementRun { gc_victim: VictimPolicy::CostBenefit, ..small(Interface::Fdp(2), Workload::Skewed, 80) };
    let ftl = cost_benefit.device().unwrap().conventional.unwrap();
    assert_eq!(ftl.gc_victim, VictimPolicy::CostBenefit);
    let greedy = small(Interface::Fdp(2), Workload::Skewed, 80).run().unwrap();
    let aged = cost_benefit.run().unwrap();
    assert_ne!(greedy.write_amplification, aged.write_amplification, "the policy changes which blocks are copied");
    assert!(cost_benefit.label().ends_with("cost-benefit"), "{}", cost_benefit.label());
}
