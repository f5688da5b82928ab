//! Flexible Data Placement as JSON, one layout for every output that shows
//! it: a trace's `ruh_status` and `fdp_logs` results (docs/trace-format.md)
//! and the `zonelab` key of `zonelab run`'s JSON report (docs/fio.md).

use serde_json::{json, Value};
use zonelab_device::{FdpEvent, FdpLogs, FdpStats, RuhStatus};

/// Reclaim Unit Handle Status entries: `pid`, `ruhid`, `earutr_s`, `ruamw` (LBAs).
pub fn handles_json(list: &[RuhStatus]) -> Value {
    let handles: Vec<Value> = list
        .iter()
        .map(|r| json!({"pid": r.pid, "ruhid": r.ruhid, "earutr_s": r.earutr_s, "ruamw": r.ruamw_lbas}))
        .collect();
    handles.into()
}

/// The FDP Statistics log, with media bytes over host bytes as
/// `write_amplification` (6 decimals; `null` before any host write).
pub fn stats_json(stats: &FdpStats) -> Value {
    let ratio = (stats.host_bytes > 0).then(|| {
        let waf = stats.media_bytes as f64 / stats.host_bytes as f64;
        (waf * 1e6).round() / 1e6
    });
    json!({
        "host_bytes": stats.host_bytes,
        "media_bytes": stats.media_bytes,
        "media_erased_bytes": stats.media_erased_bytes,
        "write_amplification": ratio,
    })
}

/// One FDP event: its kind, time, and what it names (absent fields are not printed).
pub fn event_json(event: &FdpEvent) -> Value {
    let mut map = serde_json::Map::new();
    map.insert("kind".into(), event.kind.name().into());
    map.insert("at_ns".into(), event.at_ns.into());
    if let Some(pid) = event.pid {
        map.insert("pid".into(), pid.into());
    }
    map.insert("group".into(), event.group.into());
    if let Some(ruhid) = event.ruhid {
        map.insert("ruhid".into(), ruhid.into());
    }
    if event.lbas_moved > 0 {
        map.insert("lbas_moved".into(), event.lbas_moved.into());
    }
    map.into()
}

/// Every FDP log: the configuration, statistics, each handle's usage and
/// enabled events, and the host and controller events, oldest first.
pub fn logs_json(logs: &FdpLogs) -> Value {
    let d = &logs.descriptor;
    let usage: Vec<Value> = logs
        .usage
        .iter()
        .zip(&logs.enabled_events)
        .enumerate()
        .map(|(ruhid, (usage, enabled))| {
            let kinds: Vec<&str> = enabled.iter().map(|k| k.name()).collect();
            json!({"ruhid": ruhid, "attributes": usage_name(*usage), "events": kinds})
        })
        .collect();
    json!({
        "config": {
            "reclaim_groups": d.reclaim_groups,
            "handles": d.handles,
            "handle_type": handle_type_name(d.handle_type),
            "rgif": d.rgif,
            "reclaim_unit_bytes": d.reclaim_unit_bytes,
        },
        "stats": stats_json(&logs.stats),
        "usage": usage,
        "host_events": logs.host_events.iter().map(event_json).collect::<Vec<_>>(),
        "controller_events": logs.controller_events.iter().map(event_json).collect::<Vec<_>>(),
    })
}

fn usage_name(usage: zonelab_device::fdp::RuhAttributes) -> &'static str {
    use zonelab_device::fdp::RuhAttributes;
    match usage {
        RuhAttributes::Unused => "unused",
        RuhAttributes::HostSpecified => "host_specified",
        RuhAttributes::ControllerSpecified => "controller_specified",
    }
}

fn handle_type_name(kind: zonelab_device::HandleType) -> &'static str {
    match kind {
        zonelab_device::HandleType::InitiallyIsolated => "initially_isolated",
        zonelab_device::HandleType::PersistentlyIsolated => "persistently_isolated",
    }
}
