//! The `nsmgmt` target's inputs get past the refusals: namespaces are
//! created and deleted, written and read back, and every answer agrees with
//! the reference model.

use zonelab_fuzz::nsmgmt::{generate, run_counting, Counts};
use zonelab_fuzz::{crate_dir, read_dir_texts};
use zonelab_sim::SimRng;

#[test]
fn generated_sequences_create_write_read_and_delete() {
    let mut all = Counts::default();
    for i in 0..40 {
        let input = generate(&mut SimRng::fork(5, i));
        let c = run_counting(&input).unwrap_or_else(|e| panic!("input {i}: {e}\n{input}"));
        (all.creates, all.deletes) = (all.creates + c.creates, all.deletes + c.deletes);
        (all.writes, all.blocks_checked) = (all.writes + c.writes, all.blocks_checked + c.blocks_checked);
        all.notices += c.notices;
    }
    eprintln!("40 generated inputs: {all:?}");
    assert!(all.creates >= 40 && all.deletes >= 20, "{all:?}");
    assert!(all.writes >= 15 && all.blocks_checked >= 50 && all.notices >= 10, "{all:?}");
}

#[test]
fn the_seeds_reach_what_they_name() {
    let seeds = read_dir_texts(&crate_dir().join("corpus/nsmgmt"));
    assert_eq!(seeds.len(), 4);
    for (path, input) in seeds {
        let c = run_counting(&input).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(c.creates >= 1 && c.deletes >= 1, "{}: {c:?}", path.display());
        if path.ends_with("notices.txt") {
            assert_eq!(c.notices, 4, "delete 1, attach 1, detach 1 and attach 1: one notice each");
        }
    }
}
