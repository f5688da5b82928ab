//! A bounded-time fuzz harness for zonelab's input surfaces: structured
//! mutations of seed corpora (`corpus/TARGET/`), each input run under
//! `catch_unwind` on a worker thread and timed; a panic or an input slower
//! than the limit is a finding. Deterministic: input `i` of a run with seed
//! `s` is mutated from `SimRng::fork(s, i)` alone.

pub mod fdp_commands;
pub mod mutate;
pub mod nsmgmt;
pub mod nvme_commands;
pub mod targets;
pub mod znsplus;
pub mod zrwa;

use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};
use zonelab_sim::SimRng;

/// One fuzz target: a name (its corpus and regression directories) and
/// what it does with an input.
#[derive(Clone, Copy)]
pub struct Target {
    /// The command-line name, also the directory under `corpus/`,
    /// `regressions/` and the findings directory.
    pub name: &'static str,
    /// Runs one input; an `Err` is a finding even without a panic (e.g. a
    /// backend that caught a model panic and reports it).
    pub run: fn(&str) -> Result<(), targets::Failure>,
    /// Draws a fresh structured input, for targets whose inputs are
    /// sequences a mutation of text rarely makes valid; `None`: every input
    /// after the corpus is a mutation of it.
    pub generate: Option<fn(&mut SimRng) -> String>,
}

/// Every target, in the order `all` fuzzes them.
pub const TARGETS: [Target; 12] = [
    Target { name: "trace", run: targets::trace, generate: None },
    Target { name: "fio", run: targets::fio, generate: None },
    Target { name: "iolog", run: targets::iolog, generate: None },
    Target { name: "recording", run: targets::recording, generate: None },
    Target { name: "config", run: targets::config, generate: None },
    Target { name: "ublk", run: targets::ublk, generate: None },
    Target { name: "nvme-tcp", run: targets::nvme_tcp, generate: Some(nvme_commands::generate) },
    Target { name: "nvme-tcp-fdp", run: targets::nvme_tcp_fdp, generate: Some(fdp_commands::generate) },
    Target { name: "znsplus", run: znsplus::run_text, generate: Some(znsplus::generate) },
    Target { name: "nsmgmt", run: nsmgmt::run_text, generate: Some(nsmgmt::generate) },
    Target { name: "zrwa", run: zrwa::run_text, generate: Some(zrwa::generate) },
    Target { name: "nslist", run: targets::nslist, generate: None },
];

/// The target called `name`, if there is one.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.into_iter().find(|t| t.name == name)
}

/// This crate's directory (corpus, regressions).
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files of `dir` but dotfiles (sorted, so runs are repeatable), as
/// lossy text.
pub fn read_dir_texts(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| Some(e.ok()?.path()))
            .filter(|p| p.is_file() && !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.')))
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    paths
        .into_iter()
        .map(|p| (p.clone(), String::from_utf8_lossy(&std::fs::read(&p).unwrap_or_default()).into()))
        .collect()
}

/// What running one input found.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// A panic (or a target's `Err`), with its message.
    Crash(String),
    /// Slower than the limit; how long it ran before it finished or was
    /// abandoned.
    Hang(Duration),
}

/// The message of the latest panic on any thread (the hook stays quiet: a
/// fuzzer provokes panics by the thousand, findings are reported once).
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Quiet for the workers' panics (threads named `fuzz-*`), which are kept
/// for the report; the default hook for any other thread's.
pub fn install_quiet_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !std::thread::current().name().is_some_and(|n| n.starts_with("fuzz-")) {
            return default(info);
        }
        *LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()) = Some(info.to_string());
    }));
}

fn last_panic() -> String {
    LAST_PANIC.lock().unwrap_or_else(|p| p.into_inner()).take().unwrap_or_else(|| "a panic".into())
}

/// Runs `input` on a worker thread under `catch_unwind`; slower than
/// `limit` is a hang. A worker that never returns is abandoned after twice
/// the limit (the process is expected to exit on a finding).
pub fn run_one(target: Target, input: &str, limit: Duration) -> Result<Duration, Finding> {
    let (tx, rx) = mpsc::channel();
    let text = input.to_string();
    let start = Instant::now();
    let worker = std::thread::Builder::new()
        .name(format!("fuzz-{}", target.name))
        .stack_size(64 << 20)
        .spawn(move || {
            let r = std::panic::catch_unwind(|| (target.run)(&text));
            let _ = tx.send(r);
        })
        .expect("a worker thread starts");
    let outcome = rx.recv_timeout(limit * 2);
    let took = start.elapsed();
    // Join a worker that answered; never detach one. Dropping the handle
    // detaches the thread, and glibc's detach can read the thread's
    // descriptor after the exiting thread unmapped its stack (64 MiB is
    // over glibc's stack cache): a segmentation fault in libc under load
    // (CI, 2026-11-29, in what looks like `pthread_detach`). A hung worker
    // is left running until the process exits, which it does on the finding.
    if outcome.is_ok() {
        let _ = worker.join();
    } else {
        std::mem::forget(worker);
    }
    match outcome {
        Err(_) => Err(Finding::Hang(took)),
        Ok(Err(_)) => Err(Finding::Crash(last_panic())),
        Ok(Ok(Err(message))) => Err(Finding::Crash(format!("{message}: {}", last_panic()))),
        Ok(Ok(Ok(()))) if took > limit => Err(Finding::Hang(took)),
        Ok(Ok(Ok(()))) => Ok(took),
    }
}

/// How long a fuzzing run goes on.
#[derive(Debug, Clone, Copy)]
pub enum Budget {
    /// Wall-clock seconds: for interactive and CI runs.
    Seconds(u64),
    /// A number of inputs: the same inputs on any machine, for tests.
    Inputs(u64),
}

/// What a fuzzing run of one target did.
#[derive(Debug)]
pub struct Report {
    /// The target's name.
    pub target: &'static str,
    /// Inputs run, the finding's included.
    pub inputs: u64,
    /// Wall-clock time the run took.
    pub elapsed: Duration,
    /// Input index, the input and what it found; the run stops at the first.
    pub finding: Option<(u64, String, Finding)>,
}

/// Fuzzes `target` from seed `seed` within `budget`: first the corpus as it
/// is, then mutations. Stops at the first finding.
pub fn fuzz(target: Target, seed: u64, budget: Budget, limit: Duration) -> Report {
    let corpus: Vec<String> =
        read_dir_texts(&crate_dir().join("corpus").join(target.name)).into_iter().map(|(_, t)| t).collect();
    assert!(!corpus.is_empty(), "corpus/{} holds seed inputs", target.name);
    let dict = mutate::dictionary(&corpus);
    let start = Instant::now();
    let mut index = 0u64;
    loop {
        let done = match budget {
            Budget::Seconds(s) => start.elapsed() >= Duration::from_secs(s),
            Budget::Inputs(n) => index >= n,
        };
        if done {
            break;
        }
        let mut rng = SimRng::fork(seed, index);
        let input = match (corpus.get(index as usize), target.generate) {
            (Some(seed_input), _) => seed_input.clone(),
            // Three in four generated, the rest mutations of the corpus.
            (None, Some(generate)) if !index.is_multiple_of(4) => generate(&mut rng),
            (None, _) => mutate::mutate(&mut rng, &corpus, &dict),
        };
        if let Err(finding) = run_one(target, &input, limit) {
            return Report {
                target: target.name,
                inputs: index + 1,
                elapsed: start.elapsed(),
                finding: Some((index, input, finding)),
            };
        }
        index += 1;
    }
    Report { target: target.name, inputs: index, elapsed: start.elapsed(), finding: None }
}
