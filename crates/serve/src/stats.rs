//! What `serve` reports on exit or SIGUSR1, all in simulated time.

use crate::request::Action;
use std::fmt::Write as _;
use zonelab_device::{Command, ZonedDevice};
use zonelab_sim::metrics::LatencyHistogram;
use zonelab_sim::Nanos;

/// The operation classes latencies are kept for, in report order.
const CLASSES: [&str; 7] = ["read", "write", "append", "zone_mgmt", "report_zones", "flush", "other"];

fn class_of(action: &Action) -> usize {
    match action {
        Action::Read { .. } => 0,
        Action::Write { .. } => 1,
        Action::Append { .. } => 2,
        Action::Zone { .. } => 3,
        Action::Report { .. } => 4,
        Action::Flush => 5,
    }
}

/// The class of an NVMe command (`serve --nvme-tcp`); copies, ZNS+ commands
/// and identify count as "other".
fn class_of_command(cmd: &Command<'_>) -> usize {
    match cmd {
        Command::Read { .. } => 0,
        Command::Write { .. } | Command::WriteZeroes { .. } => 1,
        Command::Append { .. } => 2,
        Command::ZoneMgmtSend { .. } => 3,
        Command::ReportZones { .. } => 4,
        _ => 6,
    }
}

#[derive(Debug, Default)]
struct ClassStats {
    latency: LatencyHistogram,
    bytes: u64,
    errors: u64,
}

/// Per-class latency and byte counts of the requests served.
#[derive(Debug, Default)]
pub struct Stats {
    classes: [ClassStats; CLASSES.len()],
    /// Requests refused before reaching the device (bad sector, unknown op).
    pub refused: u64,
    /// Latest simulated completion time.
    pub end_ns: Nanos,
}

impl Stats {
    /// Counts one block-layer request: its latency, and its bytes or an error.
    pub fn record(&mut self, action: &Action, latency_ns: Nanos, bytes: u64, ok: bool, complete_ns: Nanos) {
        self.record_class(class_of(action), latency_ns, bytes, ok, complete_ns);
    }

    /// Counts one NVMe command: its latency, and its bytes or an error.
    pub fn record_command(&mut self, cmd: &Command<'_>, latency_ns: Nanos, bytes: u64, ok: bool, complete_ns: Nanos) {
        self.record_class(class_of_command(cmd), latency_ns, bytes, ok, complete_ns);
    }

    fn record_class(&mut self, class: usize, latency_ns: Nanos, bytes: u64, ok: bool, complete_ns: Nanos) {
        let class = &mut self.classes[class];
        class.latency.record(latency_ns);
        if ok {
            class.bytes += bytes;
        } else {
            class.errors += 1;
        }
        self.end_ns = self.end_ns.max(complete_ns);
    }

    /// Requests recorded, all classes together.
    pub fn requests(&self) -> u64 {
        self.classes.iter().map(|c| c.latency.count()).sum()
    }

    /// The report: one line per operation class that saw requests, then the
    /// device's flash counters and write amplification.
    pub fn render<D: ZonedDevice + ?Sized>(&self, device: &D) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "zonelab serve: {} requests ({} refused) over {:.6} s of simulated time on {}",
            self.requests(),
            self.refused,
            self.end_ns as f64 / 1e9,
            device.config().name
        );
        let _ = writeln!(
            out,
            "{:<13} {:>9} {:>7} {:>14} {:>10} {:>10} {:>10} {:>10}",
            "op", "requests", "errors", "bytes", "mean_us", "p50_us", "p99_us", "max_us"
        );
        for (name, c) in CLASSES.iter().zip(&self.classes) {
            if c.latency.count() == 0 {
                continue;
            }
            let us = |ns: f64| ns / 1e3;
            let _ = writeln!(
                out,
                "{name:<13} {:>9} {:>7} {:>14} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
                c.latency.count(),
                c.errors,
                c.bytes,
                us(c.latency.mean_ns()),
                us(c.latency.percentile_ns(50.0) as f64),
                us(c.latency.percentile_ns(99.0) as f64),
                us(c.latency.max_ns() as f64)
            );
        }
        let _ = writeln!(out, "{}", device_line(device));
        out
    }
}

/// Erases, bytes programmed to flash and the write amplification they give.
fn device_line<D: ZonedDevice + ?Sized>(device: &D) -> String {
    let flash = device.flash_counters();
    let host_written_bytes = device.counters().host_write_bytes;
    let programmed_bytes = flash.pages_programmed * u64::from(device.config().flash.page_bytes);
    let wa = if host_written_bytes == 0 {
        "n/a".to_string()
    } else {
        format!("{:.3}", programmed_bytes as f64 / host_written_bytes as f64)
    };
    format!(
        "device: host_written_bytes={host_written_bytes} flash_programmed_bytes={programmed_bytes} erases={} write_amplification={wa}",
        flash.erases
    )
}
