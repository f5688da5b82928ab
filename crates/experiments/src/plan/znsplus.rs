//! `reproduce znsplus` as a plan: one run per file-system run of
//! [`crate::znsplus::plan`]; the renderer draws the figures and tables from
//! the stored results.
//!
//! The run specification ([`crate::znsplus::RunSpec`]) and the result
//! ([`FsBenchResult`]) go to JSON through mirrors here, which name every
//! field: a field added to either fails to compile until it is stored too.
//! (A derive cannot do it: `medium` is a `&'static str`, which serde would
//! borrow from the input, and the result's types live in other crates.)

use super::RunSpec as PlanSpec;
use crate::error::{json, Error, Result};
use crate::znsplus::{self, Output, RunSpec, Scale};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use zonelab_device::{Plugging, ZnsPlusCounters};
use zonelab_fs::{CompactionRecord, Recycling, Traffic};
use zonelab_sim::metrics::LatencyHistogram;
use zonelab_workload::fsbench::{FsBenchResult, FsWorkload};

/// The media the seed-002 presets model.
const MEDIA: [&str; 3] = ["tlc", "mlc", "znand"];

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    medium: String,
    recycling: String,
    copyback: bool,
    copyback_aware: bool,
    plugging: Plugging,
    workload: String,
    utilization: f64,
    chips: u32,
    lanes: u32,
    fs_bytes: u64,
    write_bytes: u64,
    threads: Option<u32>,
    seed: u64,
}

impl Serialize for RunSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let RunSpec {
            medium,
            recycling,
            copyback,
            copyback_aware,
            plugging,
            workload,
            utilization,
            chips,
            lanes,
            fs_bytes,
            write_bytes,
            threads,
            seed,
        } = self.clone();
        let spec = Spec {
            medium: medium.into(),
            recycling: recycling.name().into(),
            copyback,
            copyback_aware,
            plugging,
            workload: workload.name().into(),
            utilization,
            chips,
            lanes,
            fs_bytes,
            write_bytes,
            threads,
            seed,
        };
        spec.serialize(s)
    }
}

impl<'de> Deserialize<'de> for RunSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let s = Spec::deserialize(d)?;
        let medium = MEDIA
            .into_iter()
            .find(|m| *m == s.medium)
            .ok_or_else(|| D::Error::custom(format!("medium '{}': use {}", s.medium, MEDIA.join(", "))))?;
        let recycling = Recycling::parse(&s.recycling).ok_or_else(|| {
            D::Error::custom(format!(
                "recycling '{}': use {}",
                s.recycling,
                Recycling::ALL.map(Recycling::name).join(", ")
            ))
        })?;
        let workload = FsWorkload::parse(&s.workload).ok_or_else(|| {
            D::Error::custom(format!(
                "workload '{}': use {}",
                s.workload,
                FsWorkload::ALL.map(FsWorkload::name).join(", ")
            ))
        })?;
        Ok(RunSpec {
            medium,
            recycling,
            copyback: s.copyback,
            copyback_aware: s.copyback_aware,
            plugging: s.plugging,
            workload,
            utilization: s.utilization,
            chips: s.chips,
            lanes: s.lanes,
            fs_bytes: s.fs_bytes,
            write_bytes: s.write_bytes,
            threads: s.threads,
            seed: s.seed,
        })
    }
}

/// A latency histogram as its non-empty buckets (highest equivalent value,
/// count): recording each value count times rebuilds the same buckets, so
/// every count, mean and percentile reads back the same.
#[derive(Serialize, Deserialize)]
struct Histogram(Vec<(u64, u64)>);

impl Histogram {
    fn of(h: &LatencyHistogram) -> Self {
        Histogram(h.buckets())
    }

    fn rebuild(&self) -> LatencyHistogram {
        let mut h = LatencyHistogram::new();
        for &(value_ns, count) in &self.0 {
            for _ in 0..count {
                h.record(value_ns);
            }
        }
        h
    }
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Compaction {
    valid_blocks: u64,
    init_ns: u64,
    read_ns: u64,
    /// Absent from results stored before it was counted.
    #[serde(default)]
    read_requests: u64,
    write_ns: u64,
    checkpoint_ns: u64,
    background: bool,
    first_command: u64,
    end_command: u64,
}

/// [`FsBenchResult`] in JSON.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Result_ {
    workload: String,
    recycling: String,
    threads: u32,
    ops: u64,
    read_bytes: u64,
    write_bytes: u64,
    elapsed_ns: u64,
    latency: Histogram,
    fsync_latency: Histogram,
    /// data, node, meta, relocated, read blocks, read requests, device-copied blocks, requests.
    traffic: [u64; 8],
    compactions: Vec<Compaction>,
    tl_segments: u64,
    tl_other_type_segments: u64,
    sc_segments: u64,
    sc_chosen_by_cost: u64,
    checkpoints: u64,
    checkpoint_ns: u64,
    /// compactions, simple copies, TL opens, copyback, read-program, plugged foreground, background.
    znsplus: [u64; 7],
    #[serde(with = "crate::serde_float::plain")]
    chip_utilization: f64,
    chip_utilization_times_ns: Vec<u64>,
    #[serde(with = "crate::serde_float::vec")]
    chip_utilization_series: Vec<f64>,
}

fn stored(r: &FsBenchResult) -> Result_ {
    let FsBenchResult {
        workload,
        recycling,
        threads,
        ops,
        read_bytes,
        write_bytes,
        elapsed_ns,
        latency,
        fsync_latency,
        traffic,
        compactions,
        tl_segments,
        tl_other_type_segments,
        sc_segments,
        sc_chosen_by_cost,
        checkpoints,
        checkpoint_ns,
        znsplus: z,
        chip_utilization,
        chip_utilization_series,
    } = r;
    let t = traffic;
    Result_ {
        workload: workload.to_string(),
        recycling: recycling.to_string(),
        threads: *threads,
        ops: *ops,
        read_bytes: *read_bytes,
        write_bytes: *write_bytes,
        elapsed_ns: *elapsed_ns,
        latency: Histogram::of(latency),
        fsync_latency: Histogram::of(fsync_latency),
        traffic: [
            t.data_blocks,
            t.node_blocks,
            t.meta_blocks,
            t.relocated_blocks,
            t.read_blocks,
            t.read_requests,
            t.device_copied_blocks,
            t.requests,
        ],
        compactions: compactions.iter().map(compaction).collect(),
        tl_segments: *tl_segments,
        tl_other_type_segments: *tl_other_type_segments,
        sc_segments: *sc_segments,
        sc_chosen_by_cost: *sc_chosen_by_cost,
        checkpoints: *checkpoints,
        checkpoint_ns: *checkpoint_ns,
        znsplus: [
            z.compactions,
            z.simple_copies,
            z.tl_opens,
            z.copyback_blocks,
            z.read_program_blocks,
            z.plugged_blocks_foreground,
            z.plugged_blocks_background,
        ],
        chip_utilization: *chip_utilization,
        chip_utilization_times_ns: chip_utilization_series.iter().map(|p| p.0).collect(),
        chip_utilization_series: chip_utilization_series.iter().map(|p| p.1).collect(),
    }
}

fn compaction(c: &CompactionRecord) -> Compaction {
    let CompactionRecord {
        valid_blocks,
        init_ns,
        read_ns,
        read_requests,
        write_ns,
        checkpoint_ns,
        background,
        first_command,
        end_command,
    } = *c;
    Compaction {
        valid_blocks,
        init_ns,
        read_ns,
        read_requests,
        write_ns,
        checkpoint_ns,
        background,
        first_command,
        end_command,
    }
}

fn restored(r: Result_) -> Result<FsBenchResult> {
    let workload =
        FsWorkload::parse(&r.workload).ok_or_else(|| Error::Invalid(format!("workload '{}' unknown", r.workload)))?;
    let recycling =
        Recycling::parse(&r.recycling).ok_or_else(|| Error::Invalid(format!("recycling '{}' unknown", r.recycling)))?;
    if r.chip_utilization_times_ns.len() != r.chip_utilization_series.len() {
        return Err(Error::Invalid("chip utilization: as many times as values are needed".into()));
    }
    let [data_blocks, node_blocks, meta_blocks, relocated_blocks, read_blocks, read_requests, device_copied_blocks, requests] =
        r.traffic;
    let [compactions, simple_copies, tl_opens, copyback_blocks, read_program_blocks, plugged_blocks_foreground, plugged_blocks_background] =
        r.znsplus;
    Ok(FsBenchResult {
        workload: workload.name(),
        recycling: recycling.name(),
        threads: r.threads,
        ops: r.ops,
        read_bytes: r.read_bytes,
        write_bytes: r.write_bytes,
        elapsed_ns: r.elapsed_ns,
        latency: r.latency.rebuild(),
        fsync_latency: r.fsync_latency.rebuild(),
        traffic: Traffic {
            data_blocks,
            node_blocks,
            meta_blocks,
            relocated_blocks,
            read_blocks,
            read_requests,
            device_copied_blocks,
            requests,
        },
        compactions: r
            .compactions
            .into_iter()
            .map(|c| CompactionRecord {
                valid_blocks: c.valid_blocks,
                init_ns: c.init_ns,
                read_ns: c.read_ns,
                read_requests: c.read_requests,
                write_ns: c.write_ns,
                checkpoint_ns: c.checkpoint_ns,
                background: c.background,
                first_command: c.first_command,
                end_command: c.end_command,
            })
            .collect(),
        tl_segments: r.tl_segments,
        tl_other_type_segments: r.tl_other_type_segments,
        sc_segments: r.sc_segments,
        sc_chosen_by_cost: r.sc_chosen_by_cost,
        checkpoints: r.checkpoints,
        checkpoint_ns: r.checkpoint_ns,
        znsplus: ZnsPlusCounters {
            compactions,
            simple_copies,
            tl_opens,
            copyback_blocks,
            read_program_blocks,
            plugged_blocks_foreground,
            plugged_blocks_background,
        },
        chip_utilization: r.chip_utilization,
        chip_utilization_series: r.chip_utilization_times_ns.into_iter().zip(r.chip_utilization_series).collect(),
    })
}

/// A run's name in progress lines and errors.
pub fn label(s: &RunSpec) -> String {
    format!(
        "{} {} on {} ({} chips, {} lanes, {:.0}% full)",
        s.workload.name(),
        s.recycling.name(),
        s.medium,
        s.chips,
        s.lanes,
        s.utilization * 100.0
    )
}

/// Formats, fills and measures: the result as JSON.
pub fn run(s: &RunSpec) -> Result<Value> {
    let result = znsplus::run(s)?;
    Ok(serde_json::to_value(stored(&result)).expect("results serialize"))
}

/// The runs of `reproduce znsplus` at `scale`, in the figures' order.
pub fn plan(scale: Scale) -> Vec<PlanSpec> {
    znsplus::plan(scale).into_iter().map(|s| PlanSpec::Znsplus(Box::new(s))).collect()
}

/// The figures and tables from the plan's stored results (plan order).
pub fn render(scale: Scale, results: &[Value]) -> Result<Vec<Output>> {
    let specs = znsplus::plan(scale);
    if results.len() != specs.len() {
        return Err(Error::Invalid(format!("{} stored results for a plan of {} runs", results.len(), specs.len())));
    }
    let results = results
        .iter()
        .map(|v| {
            let stored: Result_ = serde_json::from_value(v.clone()).map_err(json("a stored znsplus result"))?;
            restored(stored)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(znsplus::render(scale, &specs, results))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_round_trip_and_bad_names_are_errors() {
        for spec in znsplus::plan(Scale::QUICK) {
            let json = serde_json::to_string(&spec).unwrap();
            assert_eq!(serde_json::from_str::<RunSpec>(&json).unwrap(), spec, "{json}");
        }
        let mut v = serde_json::to_value(&znsplus::plan(Scale::QUICK)[0]).unwrap();
        v["medium"] = "slc".into();
        let e = serde_json::from_value::<RunSpec>(v).unwrap_err().to_string();
        assert!(e.contains("medium 'slc': use tlc, mlc, znand"), "{e}");
    }

    #[test]
    fn a_stored_result_reads_back_as_it_was() {
        let mut latency = LatencyHistogram::new();
        for ns in [1, 999, 1_234_567, 1_234_567, 77_000_000_000] {
            latency.record(ns);
        }
        let result = FsBenchResult {
            workload: "varmail",
            recycling: Recycling::IzcH.name(),
            latency,
            compactions: vec![CompactionRecord { valid_blocks: 3, init_ns: 9, ..CompactionRecord::default() }],
            chip_utilization: 0.3125,
            chip_utilization_series: vec![(0, 0.1), (100, f64::NAN)],
            ..FsBenchResult::default()
        };
        let json = serde_json::to_value(stored(&result)).unwrap();
        let back = restored(serde_json::from_value(json.clone()).unwrap()).unwrap();
        assert_eq!(serde_json::to_value(stored(&back)).unwrap(), json);
        assert_eq!(back.latency.percentile_ns(50.0), result.latency.percentile_ns(50.0));
        assert_eq!(back.latency.mean_ns(), result.latency.mean_ns());
        assert_eq!((back.latency.min_ns(), back.latency.max_ns()), (result.latency.min_ns(), result.latency.max_ns()));
        assert_eq!(format!("{:?}", back.compactions), format!("{:?}", result.compactions));
    }
}
