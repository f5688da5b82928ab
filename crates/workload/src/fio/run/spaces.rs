//! The namespaces a run drives. On Linux each namespace of a drive is a
//! block device of its own (`/dev/nvme0n1`, `/dev/nvme0n2`, ..., and the
//! generic char devices `/dev/ng0nN` that io_uring_cmd takes), with its own
//! request queue and I/O scheduler; a job's `filename=` picks one. The engine
//! keeps what fio and the kernel keep per device in a [`Space`] (zone state
//! as the jobs plan it, block layers, disk time) and drives every namespace
//! on one [`Namespaces`], so that the jobs share the drive's dies, channels,
//! firmware cores and link, and one virtual clock.

use super::host_path::DiskBusy;
use super::*;
use zonelab_device::{DeviceConfig, Layout, Namespaces};

/// What the engine keeps for one namespace it drives.
pub(super) struct Space {
    pub(super) nsid: u32,
    pub(super) zones: ZoneView,
    pub(super) layers: BlockLayers,
    pub(super) mq_deadline_lock: Timeline,
    /// Whether an Epoch event of this space's ZINC layer is scheduled.
    pub(super) epoch_armed: bool,
    pub(super) zone_generation: Vec<u32>,
    /// When the last write or zone operation on each zone was submitted: fio
    /// holds a zone's lock until its write is queued, so writes of several
    /// threads reach a zone in write-pointer order.
    pub(super) zone_submit_ns: Vec<Nanos>,
    /// The thread that opened each zone, for job_max_open_zones (counted per thread, as fio does).
    pub(super) zone_opener: Vec<u32>,
    pub(super) lba_bytes: u64,
    pub(super) busy: DiskBusy,
    /// The namespace's layout and configuration (its share of the drive),
    /// for set-up and the work estimate: boxed, out of the hot fields' way.
    pub(super) shape: Box<(Layout, DeviceConfig)>,
    /// fio's own zones over a namespace that has none (zonemode=zbd on an
    /// NVM namespace, fio's `init_zone_info`): resets only move fio's write
    /// pointers, and the kernel locks no zone.
    pub(super) emulated: bool,
}

/// fio's zones over a non-zoned namespace: `zonesize` and `zonecapacity`, in LBAs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Emulated {
    zone_lbas: u64,
    zcap_lbas: u64,
    /// Whole zones in the namespace (fio's range is rounded to them).
    zones: u32,
}

/// Most zones fio's emulation may lay over a namespace here (each costs the
/// engine a few words).
const EMULATED_ZONES_MAX: u64 = 1 << 22;

impl Space {
    /// The space of namespace `nsid` (as `device` shows it) for `jobs`.
    pub(super) fn new<N: ZonedDevice + ?Sized>(
        nsid: u32,
        device: &N,
        jobs: &[&JobSpec],
        options: &RunOptions,
        emulated: Option<Emulated>,
    ) -> Self {
        let layout = device.layout().clone();
        let identify = device.identify();
        let mdts_lbas = layout.mdts_lbas.max(1);
        let merge_lbas = match options.host.merge_bytes_max {
            0 => mdts_lbas,
            bytes => (bytes / layout.lba_bytes).clamp(1, mdts_lbas),
        };
        let device_open = match emulated {
            // fio's emulated zones have no device limit.
            Some(_) => u32::MAX,
            None => identify.mor.min(identify.mar).saturating_add(1).max(1),
        };
        let open_limit = jobs
            .iter()
            .filter(|j| j.max_open_zones > 0)
            .map(|j| j.max_open_zones)
            .min()
            .map_or(device_open, |limit| limit.min(device_open));
        let zones = match emulated {
            Some(e) => ZoneView::emulated(e.zone_lbas, e.zcap_lbas, e.zones, open_limit),
            None => ZoneView::new(device, open_limit),
        };
        let count = zones.zones as usize;
        Space {
            nsid,
            zones,
            layers: BlockLayers::new(merge_lbas, options.host.zinc, layout.lba_bytes),
            mq_deadline_lock: Timeline::new(),
            epoch_armed: false,
            zone_generation: vec![0; count],
            zone_submit_ns: vec![0; count],
            zone_opener: vec![u32::MAX; count],
            lba_bytes: layout.lba_bytes,
            busy: DiskBusy::default(),
            shape: Box::new((layout, device.config().clone())),
            emulated: emulated.is_some(),
        }
    }
}

/// The spaces of a run: the first (the only one without `MULTI`) and the others.
pub(super) struct Spaces<const MULTI: bool> {
    first: Space,
    rest: Vec<Space>,
}

impl<const MULTI: bool> Spaces<MULTI> {
    pub(super) fn new(mut all: Vec<Space>) -> Self {
        assert!(!all.is_empty() && (MULTI || all.len() == 1), "one space, or several with MULTI");
        let rest = all.split_off(1);
        Spaces { first: all.pop().expect("a space"), rest }
    }

    /// Space `k`; without `MULTI` the one space, with no lookup.
    #[inline(always)]
    pub(super) fn get(&self, k: usize) -> &Space {
        if MULTI && k > 0 {
            &self.rest[k - 1]
        } else {
            &self.first
        }
    }

    #[inline(always)]
    pub(super) fn get_mut(&mut self, k: usize) -> &mut Space {
        if MULTI && k > 0 {
            &mut self.rest[k - 1]
        } else {
            &mut self.first
        }
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &Space> {
        std::iter::once(&self.first).chain(self.rest.iter())
    }
}

/// One namespace of a run on several: what the kernel counted for its
/// block device (fio's `disk_util` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceRun {
    /// Its NSID.
    pub nsid: u32,
    /// Its block device's name as fio prints it (`nvme0n2`).
    pub name: String,
    /// Requests as its block layer counted them (passthrough is not counted).
    pub disk: SchedulerCounters,
    /// Time it had at least one request at the device.
    pub busy_ns: Nanos,
    /// Some job on it passes the kernel's block layer and keeps `disk_util`:
    /// fio reports its disk.
    pub shows_disk: bool,
}

/// A namespace named by a job's `filename=`, as Linux names its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NamespaceFile {
    /// The controller's number (`nvme0`); `None` for SPDK's `ns=N`.
    pub controller: Option<u32>,
    /// The NSID.
    pub nsid: u32,
    /// The NVMe generic char device (`/dev/ngXnY`), which only passthrough engines take.
    pub char_device: bool,
}

/// The namespace `filename` names: `/dev/nvme<c>n<N>` (block device),
/// `/dev/ng<c>n<N>` (generic char device, io_uring_cmd) or SPDK's
/// `... ns=N`; `None` for anything else (a partition, a file).
pub fn namespace_of_filename(filename: &str) -> Option<NamespaceFile> {
    let number = |s: &str| (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse::<u32>().ok())?;
    if let Some(ns) = filename.split_whitespace().find_map(|w| w.strip_prefix("ns=")) {
        let nsid = number(ns).filter(|&n| n > 0)?;
        return Some(NamespaceFile { controller: None, nsid, char_device: false });
    }
    let (rest, char_device) = match filename.strip_prefix("/dev/nvme") {
        Some(rest) => (rest, false),
        None => (filename.strip_prefix("/dev/ng")?, true),
    };
    let (controller, nsid) = rest.split_once('n')?;
    let nsid = number(nsid).filter(|&n| n > 0)?;
    Some(NamespaceFile { controller: Some(number(controller)?), nsid, char_device })
}

impl<'a> Engine<'a, Namespaces, true> {
    /// An engine for `set` on the namespaces of one drive: each job runs on
    /// the namespace its `filename=` names (`/dev/nvme0n2`, `/dev/ng0n2`),
    /// a job without one on `default_nsid`. A zoned namespace takes
    /// zonemode=zbd as a zoned drive does; an NVM namespace is a plain block
    /// device, on which zonemode=zbd runs over fio's own zones (`zonesize`).
    pub fn on_namespaces(
        device: &'a mut Namespaces,
        set: &'a JobSet,
        options: &RunOptions,
        default_nsid: u32,
    ) -> Result<Self, JobError> {
        let count = device.namespace_count();
        if default_nsid == 0 || default_nsid > count {
            let message = format!("--nsid {default_nsid}: the device has NSIDs 1 to {count}");
            return Err(JobError { location: "command line".into(), option: None, message });
        }
        let nsids = job_nsids(set, count, default_nsid)?;
        let used: std::collections::BTreeSet<u32> = nsids.iter().copied().collect();
        let mut spaces = Vec::new();
        let mut job_spaces = vec![0u8; set.jobs.len()];
        for (k, &nsid) in used.iter().enumerate() {
            let namespace = device.namespace(nsid).expect("job_nsids checks the NSID");
            let jobs: Vec<&JobSpec> = set.jobs.iter().zip(&nsids).filter(|(_, &n)| n == nsid).map(|(j, _)| j).collect();
            let emulated = emulation(namespace, &jobs)?;
            spaces.push(Space::new(nsid, namespace, &jobs, options, emulated));
            for (slot, _) in job_spaces.iter_mut().zip(&nsids).filter(|(_, &n)| n == nsid) {
                *slot = u8::try_from(k).expect("at most NAMESPACES_MAX namespaces");
            }
        }
        let zone_table: for<'d> fn(&'d Namespaces, u32) -> &'d ZoneTable =
            |d, nsid| d.namespace(nsid).expect("a namespace of the run").zones();
        Self::build(device, set, options, Spaces::new(spaces), zone_table, &job_spaces)
    }
}

/// Each job's NSID: its `filename=`'s, else `default_nsid`; a file that
/// names no namespace of the drive is an error naming what would do.
fn job_nsids(set: &JobSet, count: u32, default_nsid: u32) -> Result<Vec<u32>, JobError> {
    let mut controller: Option<(u32, &JobSpec)> = None;
    let mut out = Vec::with_capacity(set.jobs.len());
    for job in &set.jobs {
        let Some(filename) = job.filename.as_deref() else {
            out.push(default_nsid);
            continue;
        };
        let c = controller.map_or(0, |(c, _)| c);
        let valid = format!(
            "the device's namespaces are /dev/nvme{c}n1 to /dev/nvme{c}n{count} (block devices), /dev/ng{c}n1 to \
             /dev/ng{c}n{count} (io_uring_cmd)"
        );
        let error = |message: String| Err(job_error(job, "filename", message));
        if filename.contains(':') {
            return error(format!("'{filename}': zonelab runs a job on one namespace, not several files; {valid}"));
        }
        let Some(file) = namespace_of_filename(filename) else {
            return error(format!("'{filename}' names no namespace; {valid}"));
        };
        if file.nsid > count {
            return error(format!("'{filename}' is NSID {}, which the device does not have; {valid}", file.nsid));
        }
        if file.char_device && !job.ioengine.is_passthrough() {
            return error(format!(
                "'{filename}' is a namespace's NVMe generic char device, which only ioengine=io_uring_cmd reaches; \
                 use /dev/nvme{}n{} with this engine",
                file.controller.unwrap_or(c),
                file.nsid
            ));
        }
        match (controller, file.controller) {
            (Some((first, other)), Some(this)) if first != this => {
                return error(format!(
                    "'{filename}' is on controller nvme{this}, job '{}' ({}) on nvme{first}: the jobs of a run share \
                     one drive",
                    other.name,
                    other.location_of("filename")
                ));
            }
            (None, Some(this)) => controller = Some((this, job)),
            _ => {}
        }
        out.push(file.nsid);
    }
    Ok(out)
}

/// How errors name a namespace without zones.
const NVM: &str = "an NVM namespace (not zoned)";

/// fio's zones over an NVM namespace when its jobs ask for zonemode=zbd
/// (`init_zone_info`: zones of `zonesize`, all sequential, empty); `None`
/// for a zoned namespace or plain jobs.
fn emulation(namespace: &dyn ZonedDevice, jobs: &[&JobSpec]) -> Result<Option<Emulated>, JobError> {
    let layout = namespace.layout();
    if layout.conventional_zones < layout.zones {
        return Ok(None);
    }
    let Some(first) = jobs.iter().find(|j| j.zonemode == ZoneMode::Zbd) else { return Ok(None) };
    if let Some(plain) = jobs.iter().find(|j| j.zonemode != ZoneMode::Zbd) {
        let message = format!(
            "job '{}' runs zonemode=zbd and this one zonemode=none on the same {NVM}: zonelab keeps one \
             view of a namespace's zones; give both the same zonemode",
            first.name
        );
        return Err(job_error(plain, "zonemode", message));
    }
    let total = layout.nsze_lbas * layout.lba_bytes;
    let mut emulated = None;
    for job in jobs {
        let zoned_only = [("zone_append", job.zone_append), ("finish", job.finish), ("softfinish", job.softfinish)];
        if let Some((option, _)) = zoned_only.iter().find(|(_, set)| *set) {
            return Err(job_error(job, option, format!("needs a zoned namespace; this job's is {NVM}")));
        }
        let Some(size) = job.zonesize else {
            let message = format!(
                "zonemode=zbd on {NVM} runs over fio's own zones, and fio needs their size: set zonesize \
                 (e.g. zonesize=256m)"
            );
            return Err(job_error(job, "zonemode", message));
        };
        let zone_bytes = size.resolve(total, total);
        let cap_bytes = job.zonecapacity.map_or(zone_bytes, |c| c.resolve(zone_bytes, zone_bytes));
        let this = check_emulated(job, zone_bytes, cap_bytes, layout)?;
        match emulated {
            Some(other) if other != this => {
                let message = "the jobs of one namespace differ in zonesize or zonecapacity; fio keeps one zone \
                               layout per device"
                    .to_string();
                return Err(job_error(job, "zonesize", message));
            }
            _ => emulated = Some(this),
        }
    }
    Ok(emulated)
}

/// fio's checks of emulated zones (`init_zone_info`), in LBAs of `layout`.
fn check_emulated(job: &JobSpec, zone_bytes: u64, cap_bytes: u64, layout: &Layout) -> Result<Emulated, JobError> {
    let (lba, total) = (layout.lba_bytes, layout.nsze_lbas * layout.lba_bytes);
    if zone_bytes == 0 || !zone_bytes.is_multiple_of(lba) || zone_bytes > total {
        let message =
            format!("{zone_bytes} B: fio's zones need a multiple of the {lba} B LBA, at most the {total} B namespace");
        return Err(job_error(job, "zonesize", message));
    }
    if cap_bytes == 0 || cap_bytes > zone_bytes || !cap_bytes.is_multiple_of(lba) {
        let message = format!("{cap_bytes} B: at most the zone size {zone_bytes} B, a multiple of the {lba} B LBA");
        return Err(job_error(job, "zonecapacity", message));
    }
    let zones = total / zone_bytes;
    if zones > EMULATED_ZONES_MAX {
        let message = format!("{zone_bytes} B makes {zones} zones of the {total} B namespace; zonelab emulates at most {EMULATED_ZONES_MAX}: use larger zones");
        return Err(job_error(job, "zonesize", message));
    }
    let zones = u32::try_from(zones).expect("at most EMULATED_ZONES_MAX");
    Ok(Emulated { zone_lbas: zone_bytes / lba, zcap_lbas: cap_bytes / lba, zones })
}

fn job_error(job: &JobSpec, option: &str, message: String) -> JobError {
    JobError { location: job.location_of(option).to_string(), option: Some(option.to_string()), message }
}
