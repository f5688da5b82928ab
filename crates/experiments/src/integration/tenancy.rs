//! Seed 001 §4.1.3 and §4.2 at the block level: a tenant's I/O on NSID 1
//! (zoned) beside heavy writes on NSID 2 of the same drive, alone and
//! beside, with NSID 2 filled to the paper's low utilization and to the 50%
//! and 80% that Western Digital named (with writes above 30% of the drive's
//! bandwidth) as where interference should appear.
//!
//! The paper's second namespace ran f2fs on zoned storage; zonelab's drive
//! collects garbage only in an NVM namespace (a zoned namespace's space is
//! the host's to clean), so the writer here is the drive's own FTL: an NVM
//! namespace written at random. Preconditioning as §5: cold data fills the
//! namespace up to the utilization, the writer's own data is then written
//! over at random until its garbage collection is in steady state, and the
//! tenant's zone is written before it is read.

use super::{panel_pair, Finding, Record, Scale};
use crate::characterization::TOLERANCE;
use crate::error::{Error, Result};
use crate::plot::{Axis, Figure, Marker, Plot, Series};
use std::fmt::Write as _;
use zonelab_device::{preset, CommandSet, DeviceConfig, DeviceOptions, NamespaceEntry, Namespaces};
use zonelab_host::HostConfig;
use zonelab_workload::fio::job::{Scheduler, DDIR_READ, DDIR_WRITE};
use zonelab_workload::fio::parse::parse_job_file;
use zonelab_workload::fio::report::entries;
use zonelab_workload::fio::run::{Engine, RunOptions};
use zonelab_workload::fio::stats::JobStats;

pub const NAME: &str = "s001-multi-tenancy";

const MIB: u64 = 1 << 20;
/// NSID 2: 1 GiB of the NVM command set in four 256 MiB units of mapping.
const NVM_ZONE_BYTES: u64 = 256 * MIB;
const NVM_ZONES: u32 = 4;
const NVM_BYTES: u64 = NVM_ZONE_BYTES * NVM_ZONES as u64;
/// NSID 1: four of the zn540's zones.
const TENANT_ZONES: u32 = 4;
/// The writer's own data: the paper's low utilization. Its namespaces held
/// 50 M keys of 100 B keys and values compressed to 400 B, about 25 GB of
/// 100 GiB.
const LOW: f64 = 0.25;
/// Above 30% of the drive's write bandwidth (1 GiB/s, Fig 4b).
const WRITER_BYTES_PER_S: u64 = (0.35 * 1024.0 * MIB as f64) as u64;
/// Preconditioning writes the namespace over this many times ("writing the
/// entire space numerous times", §5).
const STEADY_PASSES: u64 = 2;

/// A tenant's workload on NSID 1: random reads of written data (a store's
/// gets) or sequential writes into zones (its flushes and compactions).
#[derive(Clone, Copy)]
struct Tenant {
    name: &'static str,
    section: &'static str,
    dir: usize,
}

const TENANTS: [Tenant; 2] = [
    Tenant { name: "randread", section: "rw=randread\nbs=4k\niodepth=16\noffset=0\nsize=1z\n", dir: DDIR_READ },
    Tenant { name: "write", section: "rw=write\nbs=128k\niodepth=1\noffset=1z\nsize=3z\n", dir: DDIR_WRITE },
];

/// The drive: the zn540's flash cut down to what holds both namespaces, so
/// that NSID 2's spare space is its FTL's own reserve (on a drive whose free
/// space cold data has taken, it is no more).
fn drive() -> Result<DeviceConfig> {
    let opts = DeviceOptions { zones: Some(TENANT_ZONES), ..Default::default() };
    let mut config = opts.apply(preset("zn540").expect("the zn540 preset"))?;
    config.name = "zn540-two-tenants".into();
    config.namespaces = vec![
        NamespaceEntry { zones: Some(TENANT_ZONES), lba_bytes: Some(512), ..Default::default() },
        NamespaceEntry {
            command_set: Some(CommandSet::Nvm),
            lba_bytes: Some(512),
            zones: Some(NVM_ZONES),
            zone_size_bytes: Some(NVM_ZONE_BYTES),
            zone_capacity_bytes: Some(NVM_ZONE_BYTES),
            max_open_zones: Some(0),
            max_active_zones: Some(0),
            ..Default::default()
        },
    ];
    let most = config.flash.blocks_per_plane;
    let fits = (1..=most).find(|&blocks| {
        config.flash.blocks_per_plane = blocks;
        config.validate().is_ok()
    });
    fits.ok_or_else(|| Error::Failed("the two namespaces fit no flash".into()))?;
    Ok(config)
}

/// The job file of one run: preconditioning, then the tenant (and the writer).
fn job_file(tenant: Tenant, utilization: f64, beside: bool, scale: Scale) -> String {
    let hot = (NVM_BYTES as f64 * LOW) as u64 / MIB;
    let cold = (NVM_BYTES as f64 * (utilization - LOW)).max(0.0) as u64 / MIB;
    let (runtime, ramp) = if scale.quick { (100, 20) } else { (500, 100) };
    let mut t = String::from("[global]\nioengine=libaio\nscheduler=none\ndirect=1\n");
    if cold > 0 {
        let _ =
            write!(t, "\n[cold]\nfilename=/dev/nvme0n2\nrw=write\nbs=128k\niodepth=8\noffset={hot}m\nsize={cold}m\n");
    }
    let _ = write!(t, "\n[own]\nfilename=/dev/nvme0n2\nrw=write\nbs=128k\niodepth=8\nsize={hot}m\n");
    t.push_str("\n[tenant-fill]\nfilename=/dev/nvme0n1\nzonemode=zbd\nrw=write\nbs=128k\niodepth=8\nsize=1z\n");
    let steady = STEADY_PASSES * NVM_BYTES / MIB;
    let _ = write!(
        t,
        "\n[steady]\nstonewall\nfilename=/dev/nvme0n2\nrw=randwrite\nbs=128k\niodepth=8\nsize={hot}m\nio_size={steady}m\n"
    );
    let window = format!("time_based\nruntime={runtime}ms\nramp_time={ramp}ms\n");
    let _ = write!(t, "\n[tenant]\nstonewall\nfilename=/dev/nvme0n1\nzonemode=zbd\n{}{window}", tenant.section);
    if beside {
        let _ = write!(
            t,
            "\n[writer]\nfilename=/dev/nvme0n2\nrw=randwrite\nbs=128k\niodepth=8\nsize={hot}m\nrate=,{WRITER_BYTES_PER_S}\n{window}"
        );
    }
    t
}

/// What one run measured.
struct Measured {
    tenant: JobStats,
    writer_mib_s: f64,
    write_amplification: f64,
    job_file: String,
}

fn run_one(tenant: Tenant, utilization: f64, beside: bool, scale: Scale) -> Result<Measured> {
    let text = job_file(tenant, utilization, beside, scale);
    let set = parse_job_file("tenancy.fio", &text)?;
    let mut drive = Namespaces::new(drive()?)?;
    let host = HostConfig::machine("zns-study").expect("the zns-study machine");
    let options = RunOptions { seed: 1, scheduler: Scheduler::None, host, ..RunOptions::default() };
    let result = Engine::on_namespaces(&mut drive, &set, &options, 1)?.run(&mut |_| {})?;
    let entries = entries(&set, &result);
    let find = |name: &str| entries.iter().find(|e| e.spec.name == name).map(|e| e.stats.clone());
    let stats = find("tenant").ok_or_else(|| Error::Failed("no tenant job".into()))?;
    if let Some(e) = entries.iter().find(|e| e.stats.error.is_some()) {
        return Err(Error::Failed(format!("job {} failed: {:?}", e.spec.name, e.stats.error)));
    }
    let writer_mib_s = find("writer").map_or(0.0, |s| s.dirs[DDIR_WRITE].bw_bytes_per_s() as f64 / MIB as f64);
    let ftl = drive.namespace(2).and_then(|n| n.ftl_counters());
    let write_amplification = ftl.map_or(f64::NAN, |c| c.write_amplification);
    Ok(Measured { tenant: stats, writer_mib_s, write_amplification, job_file: text })
}

/// The tenant's throughput: KIOPS for reads, MiB/s for writes (as a store
/// sees its gets and its flushes).
fn throughput(tenant: Tenant, s: &JobStats) -> f64 {
    let d = &s.dirs[tenant.dir];
    if tenant.dir == DDIR_READ {
        d.iops_value() / 1e3
    } else {
        d.bw_bytes_per_s() as f64 / MIB as f64
    }
}

fn p95_us(tenant: Tenant, s: &JobStats) -> f64 {
    s.dirs[tenant.dir].clat.percentiles(&[95.0]).first().map_or(0.0, |&(_, v)| v as f64 / 1e3)
}

/// One tenant at one utilization: alone and beside the writer.
struct Pair {
    tenant: Tenant,
    utilization: f64,
    alone: Measured,
    beside: Measured,
}

impl Pair {
    /// The tenant's throughput lost to the writer, in percent.
    fn loss_pct(&self) -> f64 {
        (1.0 - throughput(self.tenant, &self.beside.tenant) / throughput(self.tenant, &self.alone.tenant)) * 100.0
    }
}

/// Runs the experiment: each tenant at each utilization, alone and beside.
pub fn run(scale: Scale, threads: usize, progress: &(dyn Fn(usize, usize) + Sync)) -> Result<Record> {
    let utilizations = [LOW, 0.5, 0.8];
    let cases: Vec<(Tenant, f64, bool)> =
        TENANTS.iter().flat_map(|&t| utilizations.iter().flat_map(move |&u| [(t, u, false), (t, u, true)])).collect();
    let done = std::sync::atomic::AtomicUsize::new(0);
    let tick = || progress(done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1, cases.len());
    let runs = crate::calibrate::execute::par_map(&cases, threads, &|&(t, u, b)| run_one(t, u, b, scale), &tick);
    let mut runs = runs.into_iter();
    let mut pairs = Vec::new();
    for chunk in cases.chunks(2) {
        let (tenant, utilization, _) = chunk[0];
        let alone = runs.next().expect("a run per case")?;
        let beside = runs.next().expect("a run per case")?;
        pairs.push(Pair { tenant, utilization, alone, beside });
    }
    Ok(record(&pairs))
}

fn record(pairs: &[Pair]) -> Record {
    let mut rows = Vec::new();
    let mut jobs = Vec::new();
    for p in pairs {
        let pct = (p.utilization * 100.0).round();
        for (case, m) in [("alone", &p.alone), ("beside writes", &p.beside)] {
            rows.push(vec![
                p.tenant.name.into(),
                format!("{pct}"),
                case.into(),
                format!("{:.2}", throughput(p.tenant, &m.tenant)),
                format!("{:.1}", p95_us(p.tenant, &m.tenant)),
                format!("{:.1}", m.writer_mib_s),
                format!("{:.3}", m.write_amplification),
            ]);
            let file = format!(
                "tenancy-{}-u{pct}-{}.fio",
                p.tenant.name,
                if m.writer_mib_s > 0.0 { "beside" } else { "alone" }
            );
            jobs.push((file, m.job_file.clone()));
        }
    }
    Record {
        name: NAME.into(),
        title: "Multi-tenancy: a tenant on NSID 1 beside heavy writes on NSID 2 (seed 001 §4.1.3, §4.2)".into(),
        columns: [
            "tenant",
            "utilization_pct",
            "case",
            "tenant_throughput",
            "tenant_p95_us",
            "writer_mib_s",
            "nsid2_write_amplification",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        findings: findings(pairs),
        figure: figure(pairs),
        jobs,
    }
}

fn findings(pairs: &[Pair]) -> Vec<Finding> {
    let obs = "S001 §4.2";
    let at = |t: &str, u: f64| pairs.iter().find(|p| p.tenant.name == t && p.utilization == u).expect("every case ran");
    let mut out = Vec::new();
    for t in TENANTS {
        let (low, high) = (at(t.name, LOW), at(t.name, 0.8));
        let (low_loss, mid_loss, high_loss) = (low.loss_pct(), at(t.name, 0.5).loss_pct(), high.loss_pct());
        out.push(Finding::direction(
            obs,
            &format!("{}: at the paper's low utilization (25%) the other namespace's writes cost under 10% (\"very similar results\")", t.name),
            low_loss < TOLERANCE * 100.0,
            Some(low_loss),
        ).lacking("a tenant that does not contend with 358 MiB/s of writes on the shared dies"));
        let grows = mid_loss > low_loss && high_loss > mid_loss && high_loss >= TOLERANCE * 100.0;
        out.push(
            Finding::direction(
                obs,
                &format!(
                    "{}: the loss grows at 50% and 80% utilization and exceeds 10% at 80% (predicted, not measured)",
                    t.name
                ),
                grows,
                Some(high_loss),
            )
            .lacking("garbage collection in NSID 2 that takes the dies from NSID 1's I/O as its utilization grows"),
        );
    }
    let wa = |u: f64| at(TENANTS[0].name, u).beside.write_amplification;
    out.push(
        Finding::direction(
            obs,
            "NSID 2 collects more garbage as cold data fills it (write amplification at 80% above 25%)",
            wa(0.8) > wa(LOW),
            Some(wa(0.8)),
        )
        .lacking("an FTL whose over-provisioning the cold data takes"),
    );
    out
}

fn figure(pairs: &[Pair]) -> Figure {
    let xs: Vec<f64> =
        pairs.iter().filter(|p| p.tenant.name == TENANTS[0].name).map(|p| p.utilization * 100.0).collect();
    let line = |t: Tenant, f: &dyn Fn(&Pair) -> f64, key: &str, marker| {
        let points = pairs.iter().filter(|p| p.tenant.name == t.name).map(|p| (p.utilization * 100.0, f(p))).collect();
        Series::new(t.name, key, points).marker(marker)
    };
    let plot = |title: &str, y: &str, series| {
        Figure::Lines(Plot {
            title: title.into(),
            x: Axis::linear_at("NSID 2 space utilization (%)", &xs),
            y: Axis::linear(y),
            series,
        })
    };
    let loss = |p: &Pair| p.loss_pct();
    let wa = |p: &Pair| p.beside.write_amplification;
    panel_pair(
        "Two namespaces of one drive: NSID 1's tenant beside 358 MiB/s of random writes on NSID 2 (seed 001 §4.2)",
        plot(
            "(a) tenant throughput lost to the writes",
            "throughput lost (%)",
            vec![line(TENANTS[0], &loss, "randread", Marker::Circle), line(TENANTS[1], &loss, "write", Marker::Square)],
        ),
        plot(
            "(b) NSID 2's write amplification",
            "(host + GC) / host programs",
            vec![line(TENANTS[0], &wa, "reset", Marker::Triangle)],
        ),
    )
}
