//! The device model behind the block device: takes translated requests with
//! their data, runs them on the [`Device`] at the right simulated time and
//! says what to answer and when. No ublk here, so it is tested on any host.

use crate::image::Image;
use crate::recording::{Arrival, Recorder};
use crate::report::encode_report;
use crate::request::{errno, errno_of, translate, Action, BlockRequest, Geometry, IO_BYTES_MAX};
use crate::stats::Stats;
use crate::ServeError;
use std::sync::Arc;
use zonelab_device::{CmdResult, Command, Completion, Device, Mode, Payload, ReportFilter, ZonedDevice};
use zonelab_sim::Nanos;

/// Refused requests described on stderr (then only counted).
const REFUSALS_LOGGED_MAX: u64 = 20;

/// How simulated time relates to the wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// Requests enter at their wall-clock arrival time and complete when the
    /// wall clock reaches their simulated completion time.
    Realtime,
    /// Requests complete as soon as the model has computed them; each enters
    /// at the latest simulated completion answered so far.
    Asap,
}

/// The answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// Bytes transferred (or 0) on success, a negative errno on failure.
    pub result: i32,
    /// The sector a zone append wrote to.
    pub append_sector: Option<u64>,
    /// Simulated time at which the request completes.
    pub complete_ns: Nanos,
}

/// Why [`Backend::submit`] gives no completion from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The model failed (now or before) or the image could not be written:
    /// the transport answers Internal Error.
    Failed,
    /// The command reads a block of the image that failed its checksum at
    /// load (and was not rewritten since): the transport answers
    /// Unrecovered Read Error. The command did not run.
    UnrecoveredRead {
        /// The first such block.
        lba: u64,
    },
}

/// The model side of a server: one namespace of a device model in data
/// mode, paced to wall time or run as fast as possible, with statistics and
/// an optional device image every answer is written to first.
pub struct Backend<D: ZonedDevice = Device> {
    device: D,
    geometry: Geometry,
    pace: Pace,
    /// Simulated time of the latest submission (submissions never go back).
    last_submit_ns: Nanos,
    /// Asap pacing: the latest simulated completion answered so far.
    asap_now_ns: Nanos,
    stats: Stats,
    /// The model panicked once: its state can no longer be trusted, so
    /// every later request fails with EIO until the server stops.
    failed: bool,
    /// `--backing`: the image every answer is written to first.
    image: Option<Image>,
    /// Device time at which serving began (after an image's replay): wall
    /// time 0 of the server is this simulated time.
    offset_ns: Nanos,
    /// `serve --record`: the recording, and this namespace's NSID in it.
    recording: Option<(Arc<Recorder>, u32)>,
    /// The command being run, as the transport saw it arrive.
    arrival: Arrival,
    /// SEQ of the last command recorded since [`Backend::set_arrival`].
    recorded: Option<u64>,
}

impl<D: ZonedDevice> Backend<D> {
    /// A backend over `device`, which must keep data (data mode).
    pub fn new(device: D, pace: Pace) -> Result<Self, ServeError> {
        if device.config().mode != Mode::Data {
            return Err(ServeError::NeedsDataMode);
        }
        let layout = device.layout();
        let geometry = Geometry {
            lba_bytes: layout.lba_bytes,
            nsze_lbas: device.identify().nsze,
            zone_lbas: layout.zone_lbas,
            io_bytes_max: IO_BYTES_MAX.min(device.identify().mdts_bytes),
        };
        Ok(Self {
            device,
            geometry,
            pace,
            last_submit_ns: 0,
            asap_now_ns: 0,
            stats: Stats::default(),
            failed: false,
            image: None,
            offset_ns: 0,
            recording: None,
            arrival: Arrival::default(),
            recorded: None,
        })
    }

    /// Records every command the model runs into `recorder`, as namespace `nsid`.
    pub fn record_to(&mut self, recorder: Arc<Recorder>, nsid: u32) {
        self.recording = Some((recorder, nsid));
    }

    /// Whether commands are recorded (the transport then tells their arrival).
    pub fn recording(&self) -> bool {
        self.recording.is_some()
    }

    /// The transport's view of the commands run next: queue, arrival,
    /// dependency.
    pub fn set_arrival(&mut self, arrival: Arrival) {
        self.arrival = arrival;
        self.recorded = None;
    }

    /// SEQ of the last command recorded since [`Backend::set_arrival`].
    pub fn take_recorded(&mut self) -> Option<u64> {
        self.recorded.take()
    }

    /// Hands the recording's buffered lines to its file.
    pub fn flush_recording(&self) {
        if let Some((recorder, _)) = &self.recording {
            recorder.flush();
        }
    }

    /// Records `cmd`, answered with `completion` in device time.
    fn note(&mut self, cmd: &Command<'_>, completion: &Completion) {
        let Some((recorder, nsid)) = &self.recording else { return };
        let server = Completion {
            submit_ns: completion.submit_ns.saturating_sub(self.offset_ns),
            complete_ns: completion.complete_ns.saturating_sub(self.offset_ns),
            status: completion.status,
            result: match completion.result {
                CmdResult::Lba(lba) => CmdResult::Lba(lba),
                _ => CmdResult::None,
            },
        };
        self.recorded = Some(recorder.record(&self.arrival, *nsid, cmd, &server));
    }

    /// The model runs `cmd` (device time), recorded when recording.
    fn device_submit(&mut self, submit_ns: Nanos, cmd: &Command<'_>, read_out: Option<&mut [u8]>) -> Completion {
        let completion = self.device.submit(submit_ns, cmd, read_out);
        if self.recording.is_some() {
            self.note(cmd, &completion);
        }
        completion
    }

    /// The namespace in the units request translation needs.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The device model served.
    pub fn device(&self) -> &D {
        &self.device
    }

    /// Set Features FDP Events on the model (see
    /// [`ZonedDevice::set_fdp_events`]): no simulated time, nothing persisted.
    pub fn set_fdp_events(
        &mut self,
        pid: u16,
        kinds: &[zonelab_device::fdp::FdpEventKind],
        enable: bool,
    ) -> Result<(), zonelab_device::Status> {
        self.device.set_fdp_events(pid, kinds, enable)
    }

    /// How simulated time follows wall time.
    pub fn pace(&self) -> Pace {
        self.pace
    }

    /// The statistics report (per operation class, then the device's counters).
    pub fn stats_report(&self) -> String {
        self.stats.render(&self.device)
    }

    /// When a request arriving at `wall_ns` (since the server started)
    /// enters the simulated device.
    fn submit_time_ns(&self, wall_ns: Nanos) -> Nanos {
        let now = match self.pace {
            Pace::Realtime => wall_ns,
            Pace::Asap => self.asap_now_ns,
        };
        now.max(self.last_submit_ns)
    }

    /// The device's simulated time for something that happens at server
    /// wall time `wall_ns` (a Namespace Management command): when a request
    /// arriving then would enter the device.
    pub fn device_time_ns(&self, wall_ns: Nanos) -> Nanos {
        self.submit_time_ns(wall_ns.saturating_add(self.offset_ns))
    }

    /// Keeps the device in the image at `path`: replays it first if it
    /// exists, creates it otherwise. Call before the first request.
    /// Blocks that fail their checksums are said on stderr, and reads of
    /// them fail (Unrecovered Read Error, EIO) until they are rewritten.
    pub fn with_image(mut self, path: &std::path::Path) -> Result<Self, ServeError> {
        self.attach_image(path)?;
        Ok(self)
    }

    /// [`Backend::with_image`] in place: on an error the backend is as it was.
    pub fn attach_image(&mut self, path: &std::path::Path) -> Result<(), ServeError> {
        assert!(self.image.is_none() && self.stats.refused == 0, "an image is attached before serving");
        let (image, end_ns) = Image::open(path, &mut self.device)?;
        if let Some(first) = image.damaged().first() {
            eprintln!(
                "zonelab: --backing {}: blocks failing their checksums: {} (the first at LBA {first}); reads of them \
                 fail with Unrecovered Read Error (EIO) until they are rewritten; `zonelab image check {}` lists them",
                path.display(),
                image.damaged().len(),
                path.display()
            );
        }
        self.image = Some(image);
        self.offset_ns = end_ns;
        self.last_submit_ns = end_ns;
        self.asap_now_ns = end_ns;
        Ok(())
    }

    /// Makes the image durable (on a clean stop); nothing without one.
    pub fn sync_image(&self) -> Result<(), ServeError> {
        match &self.image {
            Some(image) => image.sync().map_err(ServeError::ImageSync),
            None => Ok(()),
        }
    }

    /// Whether the model panicked (see [`Backend::handle_guarded`]).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// [`Backend::handle`], but a panic of the model fails this request with
    /// EIO and marks the backend failed instead of unwinding into the
    /// server's queue loop; so do all requests after it.
    pub fn handle_guarded(&mut self, wall_ns: Nanos, req: &BlockRequest, data: &mut Vec<u8>) -> Outcome {
        if self.failed {
            return Outcome { result: -errno::EIO, append_sector: None, complete_ns: wall_ns };
        }
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.handle(wall_ns, req, data)));
        result.unwrap_or_else(|_| {
            self.failed = true;
            eprintln!("zonelab: the device model failed on {req:?}; failing every request from now on");
            Outcome { result: -errno::EIO, append_sector: None, complete_ns: wall_ns }
        })
    }

    /// Translates and runs `req`. `data` holds a write's bytes on entry and
    /// receives a read's or a report's bytes (to hand back to the driver).
    /// Times are the server's (wall time since it started).
    pub fn handle(&mut self, wall_ns: Nanos, req: &BlockRequest, data: &mut Vec<u8>) -> Outcome {
        let mut outcome = self.handle_in_device_time(wall_ns.saturating_add(self.offset_ns), req, data);
        outcome.complete_ns = outcome.complete_ns.saturating_sub(self.offset_ns);
        outcome
    }

    fn handle_in_device_time(&mut self, wall_ns: Nanos, req: &BlockRequest, data: &mut Vec<u8>) -> Outcome {
        let submit_ns = self.submit_time_ns(wall_ns);
        let action = match translate(req, &self.geometry) {
            Ok(action) => action,
            Err(errno) => {
                if self.stats.refused < REFUSALS_LOGGED_MAX {
                    eprintln!("zonelab: refused {req:?}: errno {errno}");
                }
                self.stats.refused += 1;
                return Outcome { result: -errno, append_sector: None, complete_ns: submit_ns };
            }
        };
        if let Some(lba) = self.unreadable(&action) {
            // Like a refusal: the device never sees it, so it takes no simulated time.
            self.log_unrecovered(lba);
            return Outcome { result: -errno::EIO, append_sector: None, complete_ns: submit_ns };
        }
        let mut outcome = self.run(submit_ns, &action, data);
        if outcome.result >= 0 {
            if let Err(e) = self.persist(&action, &outcome, data) {
                eprintln!("zonelab: {e}");
                outcome.result = -errno::EIO;
            }
        }
        self.last_submit_ns = submit_ns;
        if self.pace == Pace::Asap {
            self.asap_now_ns = self.asap_now_ns.max(outcome.complete_ns);
        }
        let bytes = action.data_bytes(&self.geometry);
        self.stats.record(&action, outcome.complete_ns - submit_ns, bytes, outcome.result >= 0, outcome.complete_ns);
        outcome
    }

    /// The first damaged block of the image a block request would read.
    fn unreadable(&self, action: &Action) -> Option<u64> {
        match (action, &self.image) {
            (Action::Read { slba, nlb }, Some(image)) => image.first_damaged(*slba, u64::from(*nlb)),
            _ => None,
        }
    }

    /// The first damaged block of the image an NVMe command would read
    /// (a read, or the sources of a copy).
    fn unreadable_command(&self, cmd: &Command<'_>) -> Option<u64> {
        let image = self.image.as_ref()?;
        match *cmd {
            Command::Read { slba, nlb } => image.first_damaged(slba, u64::from(nlb)),
            Command::SimpleCopy { ranges, .. } => {
                ranges.iter().find_map(|r| image.first_damaged(r.slba, u64::from(r.nlb)))
            }
            Command::ZoneCompaction { src, .. } => src.iter().find_map(|&lba| image.first_damaged(lba, 1)),
            _ => None,
        }
    }

    fn log_unrecovered(&mut self, lba: u64) {
        if self.stats.refused < REFUSALS_LOGGED_MAX {
            eprintln!("zonelab: LBA {lba} failed its checksum in the image: answering Unrecovered Read Error");
        }
        self.stats.refused += 1;
    }

    /// Runs one NVMe command as the NVMe/TCP transport asks for it: paced,
    /// persisted and counted like [`Backend::handle`]; times are the
    /// server's. A command reading a damaged block of the image does not run.
    pub fn submit(
        &mut self,
        wall_ns: Nanos,
        cmd: &Command<'_>,
        read_out: Option<&mut [u8]>,
    ) -> Result<Completion, Refusal> {
        if self.failed {
            return Err(Refusal::Failed);
        }
        if let Some(lba) = self.unreadable_command(cmd) {
            self.log_unrecovered(lba);
            return Err(Refusal::UnrecoveredRead { lba });
        }
        let device_ns = wall_ns.saturating_add(self.offset_ns);
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.submit_in_device_time(device_ns, cmd, read_out)
        }));
        let Ok(answer) = result else {
            self.failed = true;
            eprintln!("zonelab: the device model failed on {}; failing every command from now on", cmd.name());
            return Err(Refusal::Failed);
        };
        let mut completion = answer.ok_or(Refusal::Failed)?;
        completion.submit_ns = completion.submit_ns.saturating_sub(self.offset_ns);
        completion.complete_ns = completion.complete_ns.saturating_sub(self.offset_ns);
        Ok(completion)
    }

    fn submit_in_device_time(
        &mut self,
        wall_ns: Nanos,
        cmd: &Command<'_>,
        read_out: Option<&mut [u8]>,
    ) -> Option<Completion> {
        let submit_ns = self.submit_time_ns(wall_ns);
        let completion = self.device_submit(submit_ns, cmd, read_out);
        self.last_submit_ns = submit_ns;
        if self.pace == Pace::Asap {
            self.asap_now_ns = self.asap_now_ns.max(completion.complete_ns);
        }
        let ok = completion.status.is_success();
        let bytes = command_bytes(cmd, self.geometry.lba_bytes);
        self.stats.record_command(cmd, completion.latency_ns(), bytes, ok, completion.complete_ns);
        if ok {
            if let Err(e) = self.persist_command(cmd, &completion) {
                eprintln!("zonelab: {e}");
                return None;
            }
        }
        Some(completion)
    }

    /// An NVMe Flush: makes the image durable. Returns its completion time
    /// (the model's write buffer is power-loss protected: no device work).
    pub fn flush(&mut self, wall_ns: Nanos) -> Option<Nanos> {
        if self.failed {
            return None;
        }
        let submit_ns = self.submit_time_ns(wall_ns.saturating_add(self.offset_ns));
        self.last_submit_ns = submit_ns;
        let synced = self.sync_image();
        self.stats.record(&Action::Flush, 0, 0, synced.is_ok(), submit_ns);
        if let Err(e) = synced {
            eprintln!("zonelab: {e}");
            return None;
        }
        Some(submit_ns.saturating_sub(self.offset_ns))
    }

    /// What a successful NVMe command changed, to the image. Copies take
    /// their data from the image itself, which holds every answered write.
    fn persist_command(&mut self, cmd: &Command<'_>, completion: &Completion) -> Result<(), ServeError> {
        let Some(image) = &mut self.image else { return Ok(()) };
        match *cmd {
            Command::Read { .. }
            | Command::ReportZones { .. }
            | Command::Identify
            | Command::IdentifyMapping
            | Command::ReclaimUnitHandleStatus
            | Command::Flush => return Ok(()),
            Command::Write { slba, payload: Payload::Bytes(data), .. } => image.write_data(slba, data)?,
            Command::Append { payload: Payload::Bytes(data), .. } => {
                let CmdResult::Lba(lba) = completion.result else { panic!("a successful append answers its LBA") };
                image.write_data(lba, data)?;
            }
            Command::WriteZeroes { slba, nlb, .. } => image.write_zeros(slba, u64::from(nlb))?,
            Command::SimpleCopy { ranges, sdlba } => {
                let sources = ranges.iter().flat_map(|r| r.slba..r.slba + u64::from(r.nlb));
                image.copy_blocks(sources.zip(sdlba..))?;
            }
            Command::ZoneCompaction { src, dst } => image.copy_blocks(src.iter().copied().zip(dst.iter().copied()))?,
            // A handle update moves no data: the image keeps only data and zones.
            Command::Write { .. }
            | Command::Append { .. }
            | Command::ZoneMgmtSend { .. }
            | Command::TlOpen { .. }
            | Command::ReclaimUnitHandleUpdate { .. } => {}
        }
        image.update_zones(&self.device)
    }

    /// Writes what a successful command changed to the image, before it is answered.
    fn persist(&mut self, action: &Action, outcome: &Outcome, data: &[u8]) -> Result<(), ServeError> {
        let Some(image) = &mut self.image else { return Ok(()) };
        match *action {
            Action::Write { slba, .. } => image.write_data(slba, data)?,
            Action::Append { .. } => {
                let sector = outcome.append_sector.expect("a successful append answers its sector");
                image.write_data(self.geometry.sector_to_lba(sector).expect("an LBA's sector"), data)?;
            }
            Action::Flush => return image.sync().map_err(ServeError::ImageFlush),
            Action::Read { .. } | Action::Report { .. } => return Ok(()),
            Action::Zone { .. } => {}
        }
        image.update_zones(&self.device)
    }

    fn run(&mut self, submit_ns: Nanos, action: &Action, data: &mut Vec<u8>) -> Outcome {
        let bytes = action.data_bytes(&self.geometry) as usize;
        let completion = match *action {
            Action::Flush => {
                // The model's Flush: a volatile write cache makes what it holds durable, and that takes time.
                let c = self.device_submit(submit_ns, &Command::Flush, None);
                return Outcome { result: -errno_of(c.status), append_sector: None, complete_ns: c.complete_ns };
            }
            Action::Read { slba, nlb } => {
                data.clear();
                data.resize(bytes, 0);
                self.device_submit(submit_ns, &Command::Read { slba, nlb }, Some(data.as_mut_slice()))
            }
            Action::Write { slba, nlb } => {
                assert_eq!(data.len(), bytes, "a write carries its blocks");
                self.device_submit(
                    submit_ns,
                    &Command::Write { slba, nlb, payload: Payload::Bytes(data), fua: false, placement: None },
                    None,
                )
            }
            Action::Append { zslba, nlb } => {
                assert_eq!(data.len(), bytes, "an append carries its blocks");
                self.device_submit(
                    submit_ns,
                    &Command::Append { zslba, nlb, payload: Payload::Bytes(data), fua: false },
                    None,
                )
            }
            Action::Zone { action, slba, select_all } => {
                self.device_submit(submit_ns, &Command::ZoneMgmtSend { action, slba, select_all }, None)
            }
            Action::Report { slba, max_zones } => {
                let cmd = Command::ReportZones { slba, filter: ReportFilter::All, max_zones, partial: true };
                self.device_submit(submit_ns, &cmd, None)
            }
        };
        let errno = errno_of(completion.status);
        let mut outcome = Outcome { result: -errno, append_sector: None, complete_ns: completion.complete_ns };
        if errno != 0 {
            return outcome;
        }
        outcome.result = i32::try_from(bytes).expect("transfers are below 2 GiB");
        match (&completion.result, action) {
            (CmdResult::Lba(lba), Action::Append { .. }) => {
                outcome.append_sector = Some(self.geometry.lba_to_sector(*lba))
            }
            (CmdResult::Report(report), Action::Report { max_zones, .. }) => {
                *data = encode_report(&report.zones, *max_zones, &self.geometry);
                outcome.result = i32::try_from(data.len()).expect("reports are below 2 GiB");
            }
            _ => {}
        }
        outcome
    }
}

/// Bytes an NVMe command moves between host and device, for the statistics.
fn command_bytes(cmd: &Command<'_>, lba_bytes: u64) -> u64 {
    match *cmd {
        Command::Read { nlb, .. } | Command::Write { nlb, .. } | Command::Append { nlb, .. } => {
            u64::from(nlb) * lba_bytes
        }
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::BLK_ZONE_BYTES;
    use crate::request::BlockOp;
    use zonelab_device::{preset, DeviceOptions};

    const ZONE_SECTORS: u64 = (64 << 20) / 512;

    /// 1 GiB: 16 zones of 64 MiB with 48 MiB capacity, 2 conventional, max open 8, max active 12.
    pub(super) fn backend(pace: Pace) -> Backend {
        let opts = DeviceOptions {
            zones: Some(16),
            zone_size_bytes: Some(64 << 20),
            zone_capacity_bytes: Some(48 << 20),
            conventional_zones: Some(2),
            max_open_zones: Some(8),
            max_active_zones: Some(12),
            data: true,
            ..Default::default()
        };
        let device = Device::new(opts.apply(preset("zn540").unwrap()).unwrap()).unwrap();
        Backend::new(device, pace).unwrap()
    }

    pub(super) fn req(op: BlockOp, start_sector: u64, count: u32) -> BlockRequest {
        BlockRequest { op, start_sector, count }
    }

    pub(super) fn zone_sector(zone: u64) -> u64 {
        zone * ZONE_SECTORS
    }

    #[test]
    fn metadata_mode_is_refused() {
        let device = Device::new(preset("zn540").unwrap()).unwrap();
        assert!(Backend::new(device, Pace::Asap).is_err());
    }

    #[test]
    fn written_data_reads_back() {
        let mut b = backend(Pace::Asap);
        let mut data: Vec<u8> = (0..8192).map(|i| (i % 251) as u8).collect();
        let written = data.clone();
        let out = b.handle(0, &req(BlockOp::Write, zone_sector(3), 16), &mut data);
        assert_eq!(out.result, 8192);
        let out = b.handle(0, &req(BlockOp::Read, zone_sector(3), 16), &mut data);
        assert_eq!(out.result, 8192);
        assert_eq!(data, written);
    }

    /// A ublk flush is the model's Flush: the device counts it, and with a
    /// volatile write cache it waits for the cached write to be programmed.
    #[test]
    fn a_flush_reaches_the_device_model() {
        let opts = DeviceOptions { zones: Some(8), data: true, ..Default::default() };
        let config = opts.apply(preset("zn540").unwrap()).unwrap();
        let config = zonelab_device::options::set_parameter(&config, "write_buffer.cache", "volatile").unwrap();
        let mut b = Backend::new(Device::new(config).unwrap(), Pace::Asap).unwrap();
        let mut data = vec![7u8; 4096];
        let written = b.handle(0, &req(BlockOp::Write, 0, 8), &mut data);
        assert_eq!(written.result, 4096);
        let flushed = b.handle(0, &req(BlockOp::Flush, 0, 0), &mut data);
        assert_eq!(flushed.result, 0);
        assert_eq!(zonelab_device::ZonedDevice::counters(&b.device).flushes, 1, "the device saw the flush");
        assert!(flushed.complete_ns > written.complete_ns, "{flushed:?} after {written:?}: the program takes time");
    }

    #[test]
    fn append_returns_the_sector_written() {
        let mut b = backend(Pace::Asap);
        let mut data = vec![7u8; 4096];
        let first = b.handle(0, &req(BlockOp::ZoneAppend, zone_sector(4), 8), &mut data);
        let second = b.handle(0, &req(BlockOp::ZoneAppend, zone_sector(4), 8), &mut data);
        assert_eq!(first.append_sector, Some(zone_sector(4)));
        assert_eq!(second.append_sector, Some(zone_sector(4) + 8));
        assert_eq!(second.result, 4096);
    }

    #[test]
    fn a_model_panic_fails_the_request_and_every_later_one() {
        let mut b = backend(Pace::Asap);
        let mut short = vec![0u8; 100];
        // A write whose buffer does not hold its blocks trips the model's own assertion.
        let out = b.handle_guarded(0, &req(BlockOp::Write, zone_sector(3), 8), &mut short);
        assert_eq!(out.result, -errno::EIO);
        assert!(b.failed());
        let mut data = vec![0u8; 4096];
        assert_eq!(b.handle_guarded(0, &req(BlockOp::Read, 0, 8), &mut data).result, -errno::EIO);
        assert!(b.stats_report().contains("write"), "statistics still render after the failure");
    }

    #[test]
    fn a_healthy_model_answers_through_the_guard() {
        let mut b = backend(Pace::Asap);
        let mut data = vec![7u8; 4096];
        assert_eq!(b.handle_guarded(0, &req(BlockOp::Write, zone_sector(3), 8), &mut data).result, 4096);
        assert!(!b.failed());
    }

    #[test]
    fn zone_errors_map_to_errnos() {
        let mut b = backend(Pace::Asap);
        let mut data = vec![0u8; 4096];
        let out = b.handle(0, &req(BlockOp::Write, zone_sector(3) + 8, 8), &mut data);
        assert_eq!(out.result, -errno::EIO, "a write off the write pointer");
        for zone in 2..10 {
            assert_eq!(b.handle(0, &req(BlockOp::ZoneOpen, zone_sector(zone), 0), &mut data).result, 0);
        }
        let out = b.handle(0, &req(BlockOp::ZoneOpen, zone_sector(10), 0), &mut data);
        assert_eq!(out.result, -errno::ETOOMANYREFS, "a ninth open zone");
        for zone in 2..6 {
            assert_eq!(b.handle(0, &req(BlockOp::ZoneClose, zone_sector(zone), 0), &mut data).result, 0);
        }
        for zone in 10..14 {
            assert_eq!(b.handle(0, &req(BlockOp::ZoneOpen, zone_sector(zone), 0), &mut data).result, 0);
        }
        let out = b.handle(0, &req(BlockOp::ZoneOpen, zone_sector(14), 0), &mut data);
        assert_eq!(out.result, -errno::EOVERFLOW, "a thirteenth active zone");
    }

    #[test]
    fn report_describes_the_zones_asked_for() {
        let mut b = backend(Pace::Asap);
        let mut data = vec![1u8; 4096];
        b.handle(0, &req(BlockOp::Write, zone_sector(2), 8), &mut data);
        let out = b.handle(0, &req(BlockOp::ReportZones, zone_sector(1), 2), &mut data);
        assert_eq!(out.result as usize, 2 * BLK_ZONE_BYTES);
        assert_eq!(data[24], 1, "zone 1 is conventional");
        assert_eq!(data[BLK_ZONE_BYTES + 24..BLK_ZONE_BYTES + 26], [2, 2], "zone 2: sequential, implicitly open");
        let wp = u64::from_ne_bytes(data[BLK_ZONE_BYTES + 16..BLK_ZONE_BYTES + 24].try_into().unwrap());
        assert_eq!(wp, zone_sector(2) + 8);
        let out = b.handle(0, &req(BlockOp::ReportZones, zone_sector(15), 4), &mut data);
        assert_eq!(out.result as usize, 2 * BLK_ZONE_BYTES, "one zone and the end marker");
    }

    #[test]
    fn reset_all_empties_every_zone() {
        let mut b = backend(Pace::Asap);
        let mut data = vec![1u8; 4096];
        b.handle(0, &req(BlockOp::Write, zone_sector(5), 8), &mut data);
        assert_eq!(b.handle(0, &req(BlockOp::ZoneResetAll, 0, 0), &mut data).result, 0);
        b.handle(0, &req(BlockOp::ReportZones, zone_sector(5), 1), &mut data);
        assert_eq!(data[25], 1, "empty");
    }

    #[test]
    fn bad_requests_are_refused_not_run() {
        let mut b = backend(Pace::Asap);
        let mut data = Vec::new();
        assert_eq!(b.handle(0, &req(BlockOp::Discard, 0, 8), &mut data).result, -errno::EOPNOTSUPP);
        assert_eq!(b.handle(0, &req(BlockOp::Read, 3, 8), &mut data).result, -errno::EINVAL);
        assert_eq!(b.device().counters().commands, 0);
        assert!(b.stats_report().contains("0 requests (2 refused)"));
    }

    #[test]
    fn asap_requests_enter_at_the_last_completion() {
        let mut b = backend(Pace::Asap);
        let mut data = vec![0u8; 4096];
        let first = b.handle(5_000_000_000, &req(BlockOp::Write, zone_sector(0), 8), &mut data);
        let second = b.handle(0, &req(BlockOp::Write, zone_sector(0) + 8, 8), &mut data);
        assert!(first.complete_ns < 1_000_000_000, "asap ignores the wall clock");
        assert!(second.complete_ns > first.complete_ns);
    }

    #[test]
    fn realtime_requests_enter_at_their_wall_clock_time() {
        let mut b = backend(Pace::Realtime);
        let mut data = vec![0u8; 4096];
        let out = b.handle(2_000_000, &req(BlockOp::Write, zone_sector(0), 8), &mut data);
        assert!(out.complete_ns > 2_000_000);
        let early = b.handle(1_000_000, &req(BlockOp::Read, zone_sector(0), 8), &mut data);
        assert!(early.complete_ns > 2_000_000, "submissions never go back in time");
        let report = b.stats_report();
        assert!(report.contains("\nwrite ") && report.contains("\nread "), "{report}");
    }
}

/// `--backing`: what the server answered survives its restart.
#[cfg(test)]
mod image_tests {
    use super::tests::{backend, req, zone_sector};
    use super::*;
    use crate::request::BlockOp;
    use zonelab_device::{preset, DeviceOptions};

    fn scratch(name: &str) -> std::path::PathBuf {
        crate::scratch_dir(&format!("image-{name}")).join("device.img")
    }

    fn report(b: &mut Backend) -> Vec<u8> {
        let mut data = Vec::new();
        assert!(b.handle(0, &req(BlockOp::ReportZones, 0, 16), &mut data).result > 0);
        data
    }

    fn read(b: &mut Backend, sector: u64, count: u32) -> Vec<u8> {
        let mut data = Vec::new();
        assert_eq!(b.handle(0, &req(BlockOp::Read, sector, count), &mut data).result, count as i32 * 512);
        data
    }

    /// Writes, appends and zone commands that leave zones in every state a host can reach.
    fn workload(b: &mut Backend) {
        let ok = |b: &mut Backend, r: BlockRequest, byte: u8| {
            let mut data = vec![byte; r.count as usize * 512];
            if !matches!(r.op, BlockOp::Write | BlockOp::ZoneAppend) {
                data.clear();
            }
            assert!(b.handle(0, &r, &mut data).result >= 0, "{r:?}");
        };
        ok(b, req(BlockOp::Write, 8 * 8, 16), 1); // conventional zone 0
        ok(b, req(BlockOp::Write, zone_sector(2), 64), 2); // implicitly opened
        ok(b, req(BlockOp::ZoneAppend, zone_sector(3), 32), 3);
        ok(b, req(BlockOp::ZoneClose, zone_sector(3), 0), 0); // closed
        ok(b, req(BlockOp::Write, zone_sector(4), 8), 4);
        ok(b, req(BlockOp::ZoneFinish, zone_sector(4), 0), 0); // full
        ok(b, req(BlockOp::ZoneOpen, zone_sector(5), 0), 0); // explicitly opened, empty
        ok(b, req(BlockOp::Write, zone_sector(6), 8), 6);
        ok(b, req(BlockOp::ZoneReset, zone_sector(6), 0), 0); // empty again
    }

    #[test]
    fn a_restarted_server_has_every_answered_write_and_zone_state() {
        let path = scratch("restart");
        let mut first = backend(Pace::Asap).with_image(&path).unwrap();
        workload(&mut first);
        let (zones, conventional, seq) =
            (report(&mut first), read(&mut first, 64, 16), read(&mut first, zone_sector(3), 32));
        drop(first); // no flush, no clean stop: as after kill -9
        let mut second = backend(Pace::Asap).with_image(&path).unwrap();
        assert_eq!(report(&mut second), zones, "zone states and write pointers");
        assert_eq!(read(&mut second, 64, 16), conventional);
        assert_eq!(read(&mut second, zone_sector(3), 32), seq);
        assert!(seq.iter().all(|&b| b == 3) && conventional.iter().all(|&b| b == 1));
        assert!(read(&mut second, zone_sector(6), 8).iter().all(|&b| b == 0), "a reset zone reads zeros");
        // Appends continue where the first server stopped.
        let mut data = vec![9u8; 4096];
        let out = second.handle(0, &req(BlockOp::ZoneAppend, zone_sector(2), 8), &mut data);
        assert_eq!(out.append_sector, Some(zone_sector(2) + 64));
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_restored_server_starts_its_clock_at_zero() {
        let path = scratch("clock");
        let mut first = backend(Pace::Realtime).with_image(&path).unwrap();
        workload(&mut first);
        drop(first);
        let mut second = backend(Pace::Realtime).with_image(&path).unwrap();
        let mut data = Vec::new();
        let out = second.handle(1_000, &req(BlockOp::Read, zone_sector(2), 8), &mut data);
        assert!(out.complete_ns > 1_000 && out.complete_ns < 1_000_000, "{}", out.complete_ns);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_image_of_another_geometry_or_no_image_is_refused() {
        let path = scratch("geometry");
        drop(backend(Pace::Asap).with_image(&path).unwrap());
        let opts = DeviceOptions { zones: Some(8), data: true, ..Default::default() };
        let other = Device::new(opts.apply(preset("zn540").unwrap()).unwrap()).unwrap();
        let err = Backend::new(other, Pace::Asap).unwrap().with_image(&path).err().unwrap().to_string();
        assert!(err.contains("another geometry"), "{err}");
        let mut zones = path.clone().into_os_string();
        zones.push(".zones");
        std::fs::write(&zones, vec![0u8; 4096]).unwrap();
        let err = backend(Pace::Asap).with_image(&path).err().unwrap().to_string();
        assert!(err.contains("not a zonelab device image"), "{err}");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}

/// `--backing` through [`Backend::submit`] (the NVMe/TCP path): writes,
/// appends, copies and write zeroes survive a restart.
#[cfg(test)]
mod submit_image_tests {
    use super::tests::{backend, zone_sector};
    use super::*;
    use zonelab_device::{SourceRange, Status, ZoneAction, ZoneState};

    #[test]
    fn nvme_commands_survive_a_restart() {
        let dir = crate::scratch_dir("image-submit");
        let path = dir.join("device.img");
        let lba = |zone: u64| zone_sector(zone) / 8;
        let data: Vec<u8> = (0..4 * 4096).map(|i| (i % 253) as u8).collect();
        let mut first = backend(Pace::Asap).with_image(&path).unwrap();
        let ok = |c: Result<Completion, Refusal>| assert_eq!(c.unwrap().status, Status::Success);
        ok(first.submit(
            0,
            &Command::Write { slba: lba(3), nlb: 4, payload: Payload::Bytes(&data), fua: false, placement: None },
            None,
        ));
        ok(first.submit(
            0,
            &Command::Append { zslba: lba(4), nlb: 4, payload: Payload::Bytes(&data), fua: false },
            None,
        ));
        let ranges = [SourceRange { slba: lba(3) + 1, nlb: 2 }];
        ok(first.submit(0, &Command::SimpleCopy { ranges: &ranges, sdlba: lba(5) }, None));
        ok(first.submit(0, &Command::WriteZeroes { slba: lba(3) + 4, nlb: 2, placement: None }, None));
        assert!(first.flush(0).is_some());
        drop(first);
        let mut second = backend(Pace::Asap).with_image(&path).unwrap();
        let mut read = |slba: u64, nlb: u32| {
            let mut out = vec![0xEEu8; nlb as usize * 4096];
            ok(second.submit(0, &Command::Read { slba, nlb }, Some(&mut out)));
            out
        };
        assert_eq!(read(lba(3), 4), data);
        assert_eq!(read(lba(4), 4), data);
        assert_eq!(read(lba(5), 2), data[4096..3 * 4096]);
        assert!(read(lba(3) + 4, 2).iter().all(|&b| b == 0));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The suite's device with a Zone Random Write Area of 16 LBAs committed
    /// 4 at a time (explicitly too), on every zone that may be active.
    fn zrwa_backend() -> Backend {
        let mut config = backend(Pace::Asap).device().config().clone();
        config.namespace.zrwa = Some(zonelab_device::config::zrwa::ZrwaConfig {
            size_bytes: 16 * 4096,
            flush_granularity_bytes: 4 * 4096,
            ..Default::default()
        });
        Backend::new(Device::new(config).unwrap(), Pace::Asap).unwrap()
    }

    #[test]
    fn a_zones_random_write_area_survives_a_restart() {
        let dir = crate::scratch_dir("image-zrwa");
        let path = dir.join("device.img");
        let (z3, z4) = (zone_sector(3) / 8, zone_sector(4) / 8);
        let block = |byte: u8| vec![byte; 4096];
        let ok = |c: Result<Completion, Refusal>| assert_eq!(c.unwrap().status, Status::Success);
        let write = |b: &mut Backend, slba: u64, byte: u8| {
            let data = block(byte);
            let cmd = Command::Write { slba, nlb: 1, payload: Payload::Bytes(&data), fua: false, placement: None };
            ok(b.submit(0, &cmd, None));
        };
        let zone = |b: &mut Backend, action, slba| {
            ok(b.submit(0, &Command::ZoneMgmtSend { action, slba, select_all: false }, None));
        };
        let mut first = zrwa_backend().with_image(&path).unwrap();
        // Zone 3: written, reset, written again with a ZRWA: only the new window counts.
        for lba in 0..12 {
            write(&mut first, z3 + lba, 1);
        }
        zone(&mut first, ZoneAction::Reset, z3);
        zone(&mut first, ZoneAction::OpenZrwa, z3);
        write(&mut first, z3 + 1, 2);
        write(&mut first, z3 + 9, 3);
        // A commit of 4 LBAs over the first write, then a write at the new pointer.
        zone(&mut first, ZoneAction::FlushZrwa, z3 + 3);
        write(&mut first, z3 + 4, 4);
        // Zone 4: a window write, then closed (it keeps its ZRWA).
        zone(&mut first, ZoneAction::OpenZrwa, z4);
        write(&mut first, z4 + 2, 5);
        zone(&mut first, ZoneAction::Close, z4);
        drop(first); // as after kill -9
                     // `zonelab image check` verifies the windows' written blocks too.
        let report = crate::image::check::check(&path).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        // The 2 conventional zones' capacity, zone 3's 4 committed blocks and 2 in its window, 1 in zone 4's.
        assert_eq!(report.blocks_checked, 2 * 12288 + 4 + 2 + 1);
        let mut second = zrwa_backend().with_image(&path).unwrap();
        let read = |b: &mut Backend, slba: u64| {
            let mut out = vec![0xEEu8; 4096];
            ok(b.submit(0, &Command::Read { slba, nlb: 1 }, Some(&mut out)));
            out[0]
        };
        let z3_blocks: Vec<u8> = (0..12).map(|lba| read(&mut second, z3 + lba)).collect();
        assert_eq!(z3_blocks, [0, 2, 0, 0, 4, 0, 0, 0, 0, 3, 0, 0], "committed, window and never written blocks");
        assert_eq!(read(&mut second, z4 + 2), 5);
        let zones = second.device().zones();
        assert_eq!((zones.wp(3), zones.has_zrwa(3), zones.state(3)), (z3 + 4, true, ZoneState::ExplicitlyOpened));
        assert_eq!((zones.wp(4), zones.has_zrwa(4), zones.state(4)), (z4, true, ZoneState::Closed));
        // The host goes on where it stopped: a random write in the window, then a commit past it.
        write(&mut second, z3 + 7, 6);
        zone(&mut second, ZoneAction::FlushZrwa, z3 + 11);
        drop(second);
        let mut third = zrwa_backend().with_image(&path).unwrap();
        let z3_blocks: Vec<u8> = (4..12).map(|lba| read(&mut third, z3 + lba)).collect();
        assert_eq!(z3_blocks, [4, 0, 0, 6, 0, 3, 0, 0]);
        assert_eq!(third.device().zones().wp(3), z3 + 12);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `serve --record` on the block-request path (ublk's): the commands the
/// requests become are recorded with the arrival the queue gave.
#[cfg(test)]
mod record_tests {
    use super::tests::{backend, req, zone_sector};
    use super::*;
    use crate::recording::{self, Op, QueueId};
    use crate::request::BlockOp;

    #[test]
    fn block_requests_are_recorded_as_the_commands_they_become() {
        let path = std::env::temp_dir().join(format!("zonelab-{}-ublk-record", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let recorder = Arc::new(Recorder::create(&path, "ublk test").unwrap());
        let mut b = backend(Pace::Realtime);
        b.record_to(recorder, 1);
        let queue = QueueId { controller: 0, qid: 0 };
        let mut data = vec![7u8; 8192];
        let requests = [
            (req(BlockOp::Write, zone_sector(2), 16), None),
            (req(BlockOp::ZoneAppend, zone_sector(2), 8), Some(1)),
            (req(BlockOp::Read, zone_sector(2), 16), Some(2)),
            (req(BlockOp::ZoneFinish, zone_sector(2), 0), Some(3)),
            (req(BlockOp::Flush, 0, 0), Some(4)),
        ];
        let mut seqs = Vec::new();
        for (at, (request, dep)) in requests.iter().enumerate() {
            if matches!(request.op, BlockOp::Write | BlockOp::ZoneAppend) {
                data = vec![7u8; request.count as usize * 512];
            }
            b.set_arrival(Arrival { queue, at_ns: at as u64 * 1000, dep: *dep, outstanding: 0 });
            assert!(b.handle(at as u64 * 1000, request, &mut data).result >= 0, "{request:?}");
            seqs.push(b.take_recorded());
        }
        assert_eq!(seqs, [Some(1), Some(2), Some(3), Some(4), Some(5)]);
        b.flush_recording();
        let records = recording::read(path.to_str().unwrap()).unwrap();
        std::fs::remove_file(&path).unwrap();
        let lba = zone_sector(2) / 8;
        let ops: Vec<&Op> = records.iter().map(|r| &r.op).collect();
        assert_eq!(ops[0], &Op::Write { slba: lba, nlb: 2, fua: false, placement: None });
        assert_eq!(ops[1], &Op::Append { zslba: lba, nlb: 1, fua: false });
        assert_eq!(ops[2], &Op::Read { slba: lba, nlb: 2 });
        assert!(matches!(ops[3], Op::Zone { action: zonelab_device::ZoneAction::Finish, .. }));
        assert_eq!(ops[4], &Op::Flush);
        assert_eq!(records[1].result_lba, Some(lba + 2));
        assert!(records.iter().all(|r| r.queue == queue && r.vt_ns == r.at_ns), "realtime: arrival is submission");
    }
}
