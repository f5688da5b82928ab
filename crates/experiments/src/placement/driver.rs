//! Sends a workload's steps to a device through a host queue of fixed
//! depth, and measures the application's writes: per window of bytes
//! written, the write amplification (media bytes programmed over the
//! application's bytes), the throughput and the p99 write latency.

use super::host_zns::HostZns;
use super::workload::{Generator, Step};
use super::{Interface, Window};
use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use zonelab_device::{Command, Completion, Device, Payload};
use zonelab_sim::Nanos;

/// A host queue of fixed depth: a command goes out when a slot is free
/// (and not before the previous one: the device takes commands in time order).
pub(crate) struct Queue {
    slots: BinaryHeap<Reverse<Nanos>>,
    last_submit_ns: Nanos,
    /// Latencies of the application's writes in the current window.
    latencies_ns: Vec<Nanos>,
}

impl Queue {
    pub(crate) fn new(depth: u32) -> Self {
        Queue { slots: (0..depth.max(1)).map(|_| Reverse(0)).collect(), last_submit_ns: 0, latencies_ns: Vec::new() }
    }

    /// When the last command went out.
    pub(crate) fn now_ns(&self) -> Nanos {
        self.last_submit_ns
    }

    /// Sends `cmd` once a slot is free and not before `ready_ns`.
    pub(crate) fn command(&mut self, dev: &mut Device, cmd: &Command<'_>, ready_ns: Nanos) -> Result<Completion> {
        let Reverse(free_ns) = self.slots.pop().expect("a queue has slots");
        let t = free_ns.max(self.last_submit_ns).max(ready_ns);
        self.last_submit_ns = t;
        let c = dev.submit(t, cmd, None);
        self.slots.push(Reverse(c.complete_ns));
        if !c.status.is_success() {
            return Err(Error::Failed(format!("{} failed: {}", cmd.name(), c.status)));
        }
        Ok(c)
    }

    /// When the next command could go out: an application write arriving
    /// now is issued then at the earliest.
    pub(crate) fn next_free_ns(&self) -> Nanos {
        let Reverse(free_ns) = *self.slots.peek().expect("a queue has slots");
        free_ns.max(self.last_submit_ns)
    }

    /// A write of `nlb` blocks at `slba`; returns when it completes.
    pub(crate) fn write(
        &mut self,
        dev: &mut Device,
        slba: u64,
        nlb: u32,
        placement: Option<u16>,
        ready_ns: Nanos,
    ) -> Result<Nanos> {
        let cmd = Command::Write { slba, nlb, payload: Payload::None, fua: false, placement };
        Ok(self.command(dev, &cmd, ready_ns)?.complete_ns)
    }

    /// An application write that arrived at `arrived_ns` completed at `done_ns`.
    fn measured(&mut self, arrived_ns: Nanos, done_ns: Nanos) {
        self.latencies_ns.push(done_ns - arrived_ns);
    }
}

/// Where an interface sends the application's steps.
pub(crate) enum Target {
    /// Logical blocks are LBAs; writes name a placement identifier (FDP) or none.
    Block { handles: u16 },
    /// The host's own layer over zones.
    Zns(Box<HostZns>),
}

impl Target {
    pub(crate) fn new(interface: Interface, dev: &Device, space_blocks: u64, classes: u8) -> Result<Self> {
        Ok(match interface {
            Interface::Conventional => Target::Block { handles: 0 },
            Interface::Fdp(handles) => Target::Block { handles },
            Interface::Zns => Target::Zns(Box::new(HostZns::new(dev, space_blocks, classes)?)),
        })
    }

    /// Sends `step`; an application write's latency runs from when the
    /// queue could first take it to when its last command completes, so the
    /// host layer's collection before it counts.
    fn step(&mut self, dev: &mut Device, q: &mut Queue, step: Step, classes: u8) -> Result<()> {
        let arrived_ns = q.next_free_ns();
        let done_ns = match (self, step) {
            (Target::Block { handles }, Step::Write { block, blocks, class }) => {
                // Classes fold onto the handles in order: class c of C on handle c * H / C.
                let placement = (*handles > 0).then(|| {
                    let h = u32::from(class) * u32::from(*handles) / u32::from(classes.max(1));
                    u16::try_from(h).expect("below the handles")
                });
                q.write(dev, block, blocks, placement, 0)?
            }
            // No discard: a block device learns of a deletion when the blocks are written again.
            (Target::Block { .. }, Step::Delete { .. }) => return Ok(()),
            (Target::Zns(host), Step::Write { block, blocks, class }) => {
                let stream = host.stream(class, classes);
                host.write(dev, q, block, blocks, stream)?
            }
            (Target::Zns(host), Step::Delete { block, blocks }) => {
                host.delete(block, blocks);
                return Ok(());
            }
        };
        q.measured(arrived_ns, done_ns);
        Ok(())
    }
}

/// What one window of the measured part measured.
struct Mark {
    app_bytes: u64,
    media_bytes: u64,
    at_ns: Nanos,
}

fn media_bytes(dev: &Device) -> u64 {
    dev.flash_counters().pages_programmed * u64::from(dev.config().flash.page_bytes)
}

/// Fills the space, then runs `overwrite_bytes` of the workload's steps
/// in `windows` windows; returns them.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    dev: &mut Device,
    target: &mut Target,
    gen: &mut Generator,
    space_blocks: u64,
    classes: u8,
    depth: u32,
    overwrite_bytes: u64,
    windows: u32,
) -> Result<Vec<Window>> {
    let mut q = Queue::new(depth);
    let fill: Vec<Step> = gen.fill(space_blocks).collect();
    for step in fill {
        target.step(dev, &mut q, step, classes)?;
    }
    q.latencies_ns.clear();
    let window_bytes = (overwrite_bytes / u64::from(windows.max(1))).max(1);
    let mut mark = Mark { app_bytes: 0, media_bytes: media_bytes(dev), at_ns: q.now_ns() };
    let mut app_bytes = 0;
    let mut out = Vec::with_capacity(windows as usize);
    // Bound: every step but a deletion writes; deletions are fewer than writes.
    let steps_max = 4 * overwrite_bytes / 4096 + 2;
    for _ in 0..steps_max {
        if out.len() == windows as usize {
            break;
        }
        let step = gen.next_step();
        if let Step::Write { blocks, .. } = step {
            app_bytes += u64::from(blocks) * 4096;
        }
        target.step(dev, &mut q, step, classes)?;
        if app_bytes - mark.app_bytes >= window_bytes {
            out.push(close_window(dev, &mut q, &mark, app_bytes));
            mark = Mark { app_bytes, media_bytes: media_bytes(dev), at_ns: q.now_ns() };
        }
    }
    Ok(out)
}

fn close_window(dev: &Device, q: &mut Queue, mark: &Mark, app_bytes: u64) -> Window {
    let app = app_bytes - mark.app_bytes;
    let media = media_bytes(dev) - mark.media_bytes;
    let elapsed_ns = (q.now_ns() - mark.at_ns).max(1);
    let p99_ns = percentile(&mut q.latencies_ns, 0.99);
    q.latencies_ns.clear();
    Window {
        written_gib: app_bytes as f64 / (1u64 << 30) as f64,
        write_amplification: media as f64 / app as f64,
        throughput_mib_s: app as f64 / (1u64 << 20) as f64 / (elapsed_ns as f64 / 1e9),
        p99_latency_us: p99_ns as f64 / 1e3,
    }
}

/// The `q` quantile of `samples` (nearest rank); 0 for none.
fn percentile(samples: &mut [Nanos], q: f64) -> Nanos {
    if samples.is_empty() {
        return 0;
    }
    let rank = ((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1;
    *samples.select_nth_unstable(rank).1
}
