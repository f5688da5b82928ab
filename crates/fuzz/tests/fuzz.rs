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

/// The nvme-tcp seeds reach the commands they name (a seed that died at its
/// first PDU would leave the dispatch unfuzzed): every command of `admin.hex`
/// (but the held AER), `io.hex` and `digests.hex` completes with success.
#[test]
fn nvme_tcp_seeds_complete_their_commands() {
    use zonelab_serve::nvme_tcp::pdu::{read_pdu, Digests, Pdu};
    for (seed, commands, digests) in [("admin.hex", 12, false), ("io.hex", 15, false), ("digests.hex", 3, true)] {
        let input = std::fs::read_to_string(crate_dir().join("corpus/nvme-tcp").join(seed)).unwrap();
        let replies = zonelab_fuzz::targets::nvme_tcp_replies(&input);
        let digests = Digests { header: digests, data: digests };
        let mut stream = replies.as_slice();
        let mut statuses = Vec::new();
        while !stream.is_empty() {
            if let Pdu::CapsuleResp { cqe } = read_pdu(&mut stream, digests, 1 << 20).unwrap() {
                statuses.push(u16::from_le_bytes([cqe[14], cqe[15]]) >> 1);
            }
        }
        assert_eq!(statuses, vec![0; commands], "{seed}");
    }
}

/// The nvme-tcp-fdp seeds reach Flexible Data Placement: placed writes,
/// Reclaim Unit Handle Status with the device's 4 handles, the FDP logs.
#[test]
fn nvme_tcp_fdp_seeds_reach_placement() {
    use zonelab_serve::nvme_tcp::pdu::{read_pdu, Digests, Pdu};
    for (seed, successes_min) in [("io.hex", 6), ("admin.hex", 12)] {
        let input = std::fs::read_to_string(crate_dir().join("corpus/nvme-tcp-fdp").join(seed)).unwrap();
        let replies = zonelab_fuzz::targets::nvme_tcp_fdp_replies(&input);
        let (mut stream, mut successes, mut handles) = (replies.as_slice(), 0, 0);
        while !stream.is_empty() {
            match read_pdu(&mut stream, Digests::default(), 1 << 20).unwrap() {
                Pdu::CapsuleResp { cqe } => successes += usize::from(u16::from_le_bytes([cqe[14], cqe[15]]) >> 1 == 0),
                // Reclaim Unit Handle Status: 4 descriptors.
                Pdu::C2HData { data, .. }
                    if data.len() >= 16 && data[14] == 4 && data[..14].iter().all(|&b| b == 0) =>
                {
                    handles += 1
                }
                _ => {}
            }
        }
        assert!(successes >= successes_min, "{seed}: {successes} commands succeeded");
        assert!(seed != "io.hex" || handles > 0, "{seed}: a handle status came back");
    }
}
