//! The `zonelab` key of `zonelab run`'s JSON report: what the device did
//! beyond fio's view, per namespace (command counters, an NVM namespace's
//! FTL, its FDP statistics and reclaim unit handles) and for the flash the
//! namespaces share. A run on several namespaces always has it; a run on
//! one only when that namespace is page-mapped (its FTL's counters, and its
//! FDP logs if it has FDP), so that zoned devices' reports stay fio's.

use crate::fdp_json::{handles_json, stats_json};
use serde_json::{json, Value};
use zonelab_device::{CmdResult, Command, Device, DeviceCounters, FtlCounters, ZonedDevice};
use zonelab_sim::Nanos;

/// A namespace's command counters, and its FTL's for an NVM namespace.
pub fn namespace_json(nsid: u32, c: &DeviceCounters, ftl: Option<&FtlCounters>) -> Value {
    let mut entry = json!({
        "nsid": nsid,
        "command_set": if ftl.is_some() { "nvm" } else { "zoned" },
        "commands": c.commands,
        "errors": c.errors,
        "host_write_bytes": c.host_write_bytes,
        "host_read_bytes": c.host_read_bytes,
        "pad_bytes": c.pad_bytes,
        "auto_closes": c.auto_closes,
        "resets": c.resets,
        "finishes": c.finishes,
        "flushes": c.flushes,
    });
    if let Some(f) = ftl {
        entry["ftl"] = json!({
            "host_units": f.host_units,
            "gc_units": f.gc_units,
            "gc_lbas": f.gc_lbas,
            "victims": f.victims,
            "write_amplification": (f.write_amplification * 1e6).round() / 1e6,
            "gc_foreground_units": f.gc_foreground_units,
        });
    }
    entry
}

/// The operation counts of `device`'s flash (all its namespaces share it).
pub fn flash_json<D: ZonedDevice + ?Sized>(device: &D) -> Value {
    let f = device.flash_counters();
    json!({
        "page_reads": f.page_reads,
        "programs": f.programs,
        "pages_programmed": f.pages_programmed,
        "erases": f.erases,
        "channel_bytes": f.channel_bytes,
        "copybacks": f.copybacks,
    })
}

/// Namespace `nsid`'s FDP statistics log and its Reclaim Unit Handle
/// Status, asked for at `at_ns` (the run's end); `None` without FDP.
pub fn fdp_json<D: ZonedDevice + ?Sized>(device: &mut D, nsid: u32, at_ns: Nanos) -> Option<Value> {
    let logs = device.fdp_logs_in(nsid)?;
    let completion = device.submit_in(nsid, at_ns, &Command::ReclaimUnitHandleStatus, None);
    let handles = match &completion.result {
        CmdResult::ReclaimUnitHandles(list) => handles_json(list),
        _ => Value::Null,
    };
    Some(json!({ "stats": stats_json(&logs.stats), "handles": handles }))
}

/// The `zonelab` key of a run on `device`, a device of one namespace,
/// ended at `end_ns`: `Some` only when its FTL collects garbage (a
/// conventional device such as the sn640 at any `--capacity`, with its
/// FDP statistics if it has FDP); a zoned device's report stays fio's.
pub fn device_json(device: &mut Device, end_ns: Nanos) -> Option<Value> {
    let ftl = device.ftl_counters()?;
    let mut namespace = namespace_json(1, &device.counters(), Some(&ftl));
    let flash = flash_json(device);
    if let Some(fdp) = fdp_json(device, 1, end_ns) {
        namespace["fdp"] = fdp;
    }
    Some(json!({ "namespaces": [namespace], "flash": flash }))
}
