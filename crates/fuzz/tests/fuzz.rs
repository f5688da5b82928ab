//! The fuzz harness as tests: every regression input (a crash or hang once
//! found, kept in `regressions/TARGET/`) runs clean and fast, every corpus
//! input too, and each target survives a few hundred mutated inputs.

use std::time::Duration;
use zonelab_fuzz::{crate_dir, fuzz, install_quiet_panic_hook, read_dir_texts, run_one, Budget, TARGETS};

/// Generous for a debug build; the regressions took minutes (or forever) before their fixes.
const LIMIT: Duration = Duration::from_secs(20);

#[test]
fn regressions_and_corpus_run_clean_and_in_time() {
    install_quiet_panic_hook();
    let mut replayed = 0;
    for t in TARGETS {
        for dir in ["regressions", "corpus"] {
            for (path, input) in read_dir_texts(&crate_dir().join(dir).join(t.name)) {
                if let Err(finding) = run_one(t, &input, LIMIT) {
                    panic!("{}: {}: {finding:?}", t.name, path.display());
                }
                replayed += 1;
            }
        }
    }
    assert!(replayed >= 20, "{replayed} inputs replayed");
}

#[test]
fn each_target_survives_mutated_inputs() {
    install_quiet_panic_hook();
    for t in TARGETS {
        let report = fuzz(t, 42, Budget::Inputs(40), LIMIT);
        if let Some((index, input, finding)) = report.finding {
            let shown: String = input.chars().take(500).collect();
            panic!("{}: input {index} ({shown}): {finding:?}", t.name);
        }
        assert_eq!(report.inputs, 40, "{}", t.name);
    }
}
