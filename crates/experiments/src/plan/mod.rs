//! Plan → run → render. A reproduction or a sweep is a plan: a list of
//! serializable run specifications ([`RunSpec`]: what device, what workload,
//! what seed). The runner executes any subset of it (a shard, `--shard i/n`),
//! skipping runs the result store already holds; the renderer builds tables
//! and figures from stored results alone. The same plan runs serially, as a
//! Slurm job array (one shard per task) or on a distributed engine (the
//! Python package's `zonelab.sweep`), and every way yields the same bytes.
//! A run may take other runs' results as input ([`RunSpec::needs`]): the
//! runner runs those first, in waves, and stores them like the others.

pub mod characterization;
pub mod design;
mod device;
pub mod store;
pub mod znsplus;

pub use device::DeviceSpec;
pub use store::{Store, Stored};

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One run of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RunSpec {
    /// One experiment of `reproduce characterization` (its seeds are the experiment's own).
    Characterization {
        /// The experiment's name.
        experiment: String,
        /// Shorter runs and fewer sweep points.
        quick: bool,
    },
    /// One point of the management design-space study.
    Design(Box<design::DesignRun>),
    /// One run of `zonelab calibrate`: a simulated job (or a standalone
    /// job's rate that a throttled one needs) on one device configuration.
    Calibrate(Box<crate::calibrate::execute::CalibrateRun>),
    /// One file-system run of `reproduce znsplus`.
    Znsplus(Box<crate::znsplus::RunSpec>),
    /// One run of the placement study (conventional, FDP, ZNS on one flash).
    Placement(Box<crate::placement::PlacementRun>),
}

impl RunSpec {
    /// A stable key: the SHA-256 of the specification's JSON, 16 hex digits.
    pub fn key(&self) -> String {
        let json = serde_json::to_string(self).expect("run specs serialize");
        let digest = Sha256::digest(json.as_bytes());
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A short name for progress lines.
    pub fn label(&self) -> String {
        match self {
            RunSpec::Characterization { experiment, .. } => experiment.clone(),
            RunSpec::Design(d) => d.label(),
            RunSpec::Calibrate(c) => c.label(),
            RunSpec::Znsplus(z) => znsplus::label(z),
            RunSpec::Placement(p) => p.label(),
        }
    }

    /// The runs whose results this one takes as input (in this order), e.g.
    /// the standalone rate of a calibration job throttled to a share of it.
    pub fn needs(&self) -> Vec<RunSpec> {
        match self {
            RunSpec::Calibrate(c) => c.needs().into_iter().map(|n| RunSpec::Calibrate(Box::new(n))).collect(),
            _ => Vec::new(),
        }
    }
}

/// Runs one specification given the results of [`RunSpec::needs`] (same order): its result as JSON.
pub fn run_with(spec: &RunSpec, needed: &[Value]) -> Result<Value> {
    assert_eq!(needed.len(), spec.needs().len(), "a run gets one result per run it needs");
    match spec {
        RunSpec::Characterization { experiment, quick } => {
            let scale = crate::characterization::Scale { quick: *quick };
            let outcome = crate::characterization::run_one(experiment, scale)?;
            let record = crate::characterization::Record::from(&outcome);
            Ok(serde_json::to_value(record).expect("records serialize"))
        }
        RunSpec::Design(d) => design::run(d),
        RunSpec::Calibrate(c) => c.run(needed),
        RunSpec::Znsplus(z) => znsplus::run(z),
        RunSpec::Placement(p) => Ok(serde_json::to_value(p.run()?).expect("results serialize")),
    }
}

/// Runs one specification, and first the runs it needs: its result as JSON.
pub fn run(spec: &RunSpec) -> Result<Value> {
    let needed: Vec<Value> = spec.needs().iter().map(run).collect::<Result<_, _>>()?;
    run_with(spec, &needed)
}

/// Runs one specification into the line the store keeps.
pub fn run_stored(spec: &RunSpec) -> Result<Stored> {
    Ok(Stored { key: spec.key(), spec: spec.clone(), result: run(spec)? })
}

/// [`run_with`] into the line the store keeps.
pub fn run_stored_with(spec: &RunSpec, needed: &[Value]) -> Result<Stored> {
    Ok(Stored { key: spec.key(), spec: spec.clone(), result: run_with(spec, needed)? })
}

/// Shard `index` of `count` (`--shard index/count`, index from 0, as a Slurm
/// array's `SLURM_ARRAY_TASK_ID`): the runs at positions `index`, `index + count`, ...
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// This shard, from 0.
    pub index: u32,
    /// Shards in all.
    pub count: u32,
}

impl Shard {
    /// One shard holding every run.
    pub const ALL: Shard = Shard { index: 0, count: 1 };
    const COUNT_MAX: u32 = 1_000_000;

    /// Reads `INDEX/COUNT`; an error says what is valid.
    pub fn parse(text: &str) -> Result<Shard> {
        let usage = || Error::Invalid(format!("shard '{text}': use INDEX/COUNT with 0 <= INDEX < COUNT, e.g. 0/4"));
        let (i, n) = text.split_once('/').ok_or_else(usage)?;
        let index: u32 = i.trim().parse().map_err(|_| usage())?;
        let count: u32 = n.trim().parse().map_err(|_| usage())?;
        if count == 0 || index >= count || count > Self::COUNT_MAX {
            return Err(usage());
        }
        Ok(Shard { index, count })
    }

    /// Whether the run at plan position `position` is this shard's.
    pub fn holds(&self, position: usize) -> bool {
        position % self.count as usize == self.index as usize
    }

    /// The store file this shard appends to.
    pub fn file_name(&self) -> String {
        if *self == Shard::ALL {
            "results.jsonl".into()
        } else {
            format!("shard-{}-of-{}.jsonl", self.index, self.count)
        }
    }
}

/// What [`execute`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Executed {
    /// Runs executed, including runs of other shards that this shard's runs need.
    pub ran: usize,
    /// Runs of the shard the store already held.
    pub skipped: usize,
}

/// Reports each run as it starts: (label, runs started before it, runs to run).
pub type Progress<'a> = &'a (dyn Fn(&str, usize, usize) + Sync);

/// Runs the shard's runs that `store` lacks on `threads` threads, storing
/// each as it finishes. A run starts once the runs it needs are stored;
/// those the store lacks run here too, whatever their shard (so a shard
/// never waits for another; the same spec gives the same result anywhere).
pub fn execute(
    plan: &[RunSpec],
    shard: Shard,
    store: &mut Store,
    threads: usize,
    progress: Progress<'_>,
) -> Result<Executed> {
    let mut executed = Executed::default();
    let mut todo: Vec<RunSpec> = Vec::new();
    let mut queued = std::collections::BTreeSet::new();
    for spec in plan.iter().enumerate().filter(|(p, _)| shard.holds(*p)).map(|(_, s)| s) {
        if store.get(&spec.key()).is_some() {
            executed.skipped += 1;
        } else if queued.insert(spec.key()) {
            todo.push(spec.clone());
        }
    }
    // What the runs need and the store lacks, transitively (bounded by the plan's depth).
    let mut frontier = todo.clone();
    for _ in 0..DEPTH_MAX {
        let mut next = Vec::new();
        for need in frontier.iter().flat_map(RunSpec::needs) {
            if store.get(&need.key()).is_none() && queued.insert(need.key()) {
                next.push(need);
            }
        }
        todo.extend(next.iter().cloned());
        frontier = next;
    }
    assert!(frontier.is_empty(), "run specs need runs at most {DEPTH_MAX} deep");
    let total = todo.len();
    // Waves: each runs what the store now holds every input of.
    while !todo.is_empty() {
        let (ready, waiting): (Vec<RunSpec>, Vec<RunSpec>) =
            todo.into_iter().partition(|s| s.needs().iter().all(|n| store.get(&n.key()).is_some()));
        assert!(!ready.is_empty(), "a plan's runs cannot need each other in a cycle");
        run_wave(&ready, store, threads, executed.ran, total, progress)?;
        executed.ran += ready.len();
        todo = waiting;
    }
    Ok(executed)
}

/// How deep runs may need runs that need runs.
const DEPTH_MAX: usize = 4;

/// Runs `wave` (whose inputs are stored) on `threads` threads; the first
/// failure in wave order is the error, and stops the threads taking more.
fn run_wave(
    wave: &[RunSpec],
    store: &mut Store,
    threads: usize,
    started_before: usize,
    total: usize,
    progress: Progress<'_>,
) -> Result<()> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let inputs: Vec<Vec<Value>> = wave
        .iter()
        .map(|s| s.needs().iter().map(|n| store.get(&n.key()).expect("inputs are stored").result.clone()).collect())
        .collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let errors: std::sync::Mutex<Vec<(usize, Error)>> = std::sync::Mutex::new(Vec::new());
    let store = std::sync::Mutex::new(store);
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, wave.len().max(1)) {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(spec) = wave.get(i) else { break };
                    progress(&spec.label(), started_before + i, total);
                    let outcome = run_stored_with(spec, &inputs[i])
                        .and_then(|stored| store.lock().expect("no thread panics holding the store").insert(stored));
                    if let Err(e) = outcome {
                        failed.store(true, Ordering::Relaxed);
                        errors.lock().expect("no thread panics holding the errors").push((i, e));
                    }
                }
            });
        }
    });
    let mut errors = errors.into_inner().expect("no thread panicked");
    errors.sort_by_key(|(i, _)| *i);
    match errors.into_iter().next() {
        Some((i, e)) => Err(e.within(format!("run {}", wave[i].label()))),
        None => Ok(()),
    }
}

/// The plan's results in plan order, or how many runs the store lacks.
pub fn collect(plan: &[RunSpec], store: &Store) -> Result<Vec<Value>, usize> {
    let results: Vec<Value> = plan.iter().filter_map(|s| store.get(&s.key()).map(|r| r.result.clone())).collect();
    if results.len() == plan.len() {
        Ok(results)
    } else {
        Err(plan.len() - results.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition() {
        assert_eq!(Shard::parse("1/3").unwrap(), Shard { index: 1, count: 3 });
        for bad in ["3/3", "1", "a/2", "0/0", "-1/2"] {
            assert!(Shard::parse(bad).unwrap_err().to_string().contains("INDEX/COUNT"), "{bad}");
        }
        let shards = [Shard { index: 0, count: 2 }, Shard { index: 1, count: 2 }];
        for p in 0..7 {
            assert_eq!(shards.iter().filter(|s| s.holds(p)).count(), 1);
        }
    }

    fn design_plan(n: u64) -> Vec<RunSpec> {
        (0..n)
            .map(|seed| {
                RunSpec::Design(Box::new(design::DesignRun {
                    design: "default".into(),
                    device: DeviceSpec {
                        zones: Some(64),
                        zone_size: Some("32m".into()),
                        zone_capacity: Some("24m".into()),
                        ..DeviceSpec::default()
                    },
                    workload: design::Workload::Writers,
                    management: design::Management::Finish,
                    think: "1ms".into(),
                    concurrency: 2,
                    runtime: "2ms".into(),
                    seed,
                }))
            })
            .collect()
    }

    fn lines(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            out.extend(std::fs::read_to_string(entry.unwrap().path()).unwrap().lines().map(String::from));
        }
        out.sort();
        out
    }

    #[test]
    fn two_shards_store_what_the_serial_run_does_and_a_rerun_runs_nothing() {
        let root = std::env::temp_dir().join(format!("zonelab-plan-store-{}", std::process::id()));
        std::fs::remove_dir_all(&root).ok();
        let plan = design_plan(5);
        let mut serial = Store::open(&root.join("serial"), &Shard::ALL.file_name()).unwrap();
        assert_eq!(execute(&plan, Shard::ALL, &mut serial, 2, &|_, _, _| {}).unwrap(), Executed { ran: 5, skipped: 0 });
        for index in 0..2 {
            let shard = Shard { index, count: 2 };
            let mut store = Store::open(&root.join("sharded"), &shard.file_name()).unwrap();
            execute(&plan, shard, &mut store, 1, &|_, _, _| {}).unwrap();
        }
        assert_eq!(lines(&root.join("sharded")), lines(&root.join("serial")), "byte for byte");
        let mut again = Store::open(&root.join("sharded"), "again.jsonl").unwrap();
        let rerun = execute(&plan, Shard::ALL, &mut again, 2, &|label, _, _| panic!("{label} ran again")).unwrap();
        assert_eq!(rerun, Executed { ran: 0, skipped: 5 });
        assert_eq!(collect(&plan, &again).unwrap(), collect(&plan, &serial).unwrap());
        assert_eq!(collect(&design_plan(6), &again), Err(1), "the run the store lacks is counted");
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn keys_are_stable_and_tell_specs_apart() {
        let a = RunSpec::Characterization { experiment: "obs09-open-close".into(), quick: true };
        let b = RunSpec::Characterization { experiment: "obs09-open-close".into(), quick: false };
        assert_eq!(a.key(), a.clone().key());
        assert_ne!(a.key(), b.key());
        assert_eq!(a.key().len(), 16);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, r#"{"kind":"characterization","experiment":"obs09-open-close","quick":true}"#);
    }
}
