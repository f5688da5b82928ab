//! Zone Random Write Area (NVMe TP 4076) on a zoned namespace: the window a
//! write may land in, implicit and explicit commits with their statuses,
//! ZRWA resources, and what the window costs (docs/command-semantics.md,
//! "Zone Random Write Area (TP 4076)"; docs/device-model.md, "Zone Random Write Area").

use zonelab_device::*;

/// 8 zones of 256 LBAs (4 KiB), capacity 192; a ZRWA of 16 LBAs committed
/// 4 at a time; 2 ZRWAs; 2 open and 3 active zones.
const ZSZE: u64 = 256;
const ZCAP: u64 = 192;
const ZRWAS: u64 = 16;
const ZRWAFG: u64 = 4;

fn opts(data: bool) -> DeviceOptions {
    let set = |k: &str, v: &str| (k.to_string(), v.to_string());
    DeviceOptions {
        zones: Some(8),
        zone_size_bytes: Some(1 << 20),
        zone_capacity_bytes: Some(768 << 10),
        max_open_zones: Some(2),
        max_active_zones: Some(3),
        data,
        sets: vec![
            set("namespace.zrwa.size_bytes", "64k"),
            set("namespace.zrwa.flush_granularity_bytes", "16k"),
            set("namespace.zrwa.resources", "2"),
        ],
        ..Default::default()
    }
}

fn zslba(zone: u32) -> u64 {
    u64::from(zone) * ZSZE
}

/// A device driven at queue depth 1.
struct H {
    dev: Device,
    now: u64,
}

impl H {
    fn new() -> Self {
        Self::with(opts(true))
    }

    fn with(opts: DeviceOptions) -> Self {
        Self { dev: Device::new(opts.apply(preset("zn540").unwrap()).unwrap()).unwrap(), now: 0 }
    }

    fn run(&mut self, cmd: &Command<'_>) -> Completion {
        let c = self.dev.submit(self.now, cmd, None);
        self.now = c.complete_ns;
        c
    }

    fn write(&mut self, slba: u64, nlb: u32, pattern: u8) -> Status {
        self.run(&Command::Write { slba, nlb, payload: Payload::Pattern(pattern), fua: false, placement: None }).status
    }

    fn mgmt(&mut self, action: ZoneAction, slba: u64) -> Status {
        self.run(&Command::ZoneMgmtSend { action, slba, select_all: false }).status
    }

    fn open_zrwa(&mut self, zone: u32) -> Status {
        self.mgmt(ZoneAction::OpenZrwa, zslba(zone))
    }

    /// Flush Explicit ZRWA Range up to and including `elba`.
    fn commit(&mut self, elba: u64) -> Status {
        self.mgmt(ZoneAction::FlushZrwa, elba)
    }

    fn read(&mut self, slba: u64, nlb: u32) -> CmdResult {
        let c = self.run(&Command::Read { slba, nlb });
        assert_eq!(c.status, Status::Success);
        c.result
    }

    fn wp(&self, zone: u32) -> u64 {
        self.dev.zones().wp(zone)
    }

    fn state(&self, zone: u32) -> ZoneState {
        self.dev.zones().state(zone)
    }
}

#[test]
fn writes_land_anywhere_in_the_window_without_moving_the_write_pointer() {
    let mut h = H::new();
    assert_eq!(h.open_zrwa(0), Status::Success);
    assert_eq!(h.state(0), ZoneState::ExplicitlyOpened);
    assert_eq!(h.write(5, 3, 1), Status::Success, "not at the write pointer");
    assert_eq!(h.write(0, 8, 2), Status::Success, "over uncommitted data");
    assert_eq!(h.write(12, 4, 3), Status::Success, "up to the ZRWA's end");
    assert_eq!(h.wp(0), 0, "inside the ZRWA nothing commits");
    assert_eq!(h.write(2 * ZRWAS - 1, 2, 4), Status::ZoneInvalidWrite, "past 2 x ZRWAS");
    assert_eq!(h.wp(0), 0, "a refused write commits nothing");
}

#[test]
fn a_write_past_the_zrwa_commits_implicitly_in_flush_granules() {
    let mut h = H::new();
    h.open_zrwa(0);
    assert_eq!(h.write(ZRWAS - 2, 3, 1), Status::Success);
    assert_eq!(h.wp(0), ZRWAFG, "1 LBA past the ZRWA commits one granule");
    assert_eq!(h.write(ZRWAFG, 2 * ZRWAS as u32, 1), Status::Success, "the implicit commit range's end");
    assert_eq!(h.wp(0), ZRWAFG + ZRWAS);
    assert_eq!(h.write(ZRWAFG, 1, 1), Status::ZoneInvalidWrite, "below the write pointer");
    assert_eq!(h.state(0), ZoneState::ExplicitlyOpened);
}

#[test]
fn explicit_commits_check_granularity_bounds_and_the_zrwa() {
    let mut h = H::new();
    assert_eq!(h.commit(3), Status::InvalidField, "zone 0 holds no ZRWA");
    h.open_zrwa(0);
    assert_eq!(h.commit(2), Status::InvalidField, "3 LBAs: not a granule");
    assert_eq!(h.commit(ZRWAS), Status::ZoneBoundaryError, "past the ZRWA");
    assert_eq!(h.commit(8 * ZSZE), Status::LbaOutOfRange);
    let all = h.run(&Command::ZoneMgmtSend { action: ZoneAction::FlushZrwa, slba: 7, select_all: true });
    assert_eq!(all.status, Status::InvalidField, "no Select All");
    assert_eq!(h.commit(7), Status::Success);
    assert_eq!(h.wp(0), 8);
    assert_eq!(h.commit(7), Status::ZoneBoundaryError, "below the write pointer now");
    assert_eq!(h.mgmt(ZoneAction::Close, 0), Status::Success);
    assert!(h.dev.zones().has_zrwa(0), "a closed zone keeps its ZRWA");
    assert_eq!(h.commit(11), Status::Success);
    assert_eq!((h.state(0), h.wp(0)), (ZoneState::ImplicitlyOpened, 12), "a commit opens a closed zone");
}

#[test]
fn zone_append_is_refused_on_a_zone_with_a_zrwa() {
    let mut h = H::new();
    h.open_zrwa(0);
    let c = h.run(&Command::Append { zslba: 0, nlb: 1, payload: Payload::None, fua: false });
    assert_eq!(c.status, Status::InvalidZoneOperation);
    let c = h.run(&Command::Append { zslba: zslba(1), nlb: 1, payload: Payload::None, fua: false });
    assert_eq!(c.status, Status::Success, "other zones append as before");
}

#[test]
fn zrwa_resources_are_allocated_by_open_and_released_by_finish_and_reset() {
    let mut h = H::new();
    assert_eq!(h.open_zrwa(0), Status::Success);
    assert_eq!(h.open_zrwa(1), Status::Success);
    assert_eq!(h.mgmt(ZoneAction::Close, zslba(1)), Status::Success);
    assert_eq!(h.open_zrwa(2), Status::ZrwaResourcesUnavailable, "both ZRWAs are held");
    assert_eq!(h.state(2), ZoneState::Empty, "a refused open changes nothing");
    assert_eq!(h.mgmt(ZoneAction::Finish, zslba(0)), Status::Success);
    assert_eq!(h.open_zrwa(2), Status::Success, "finish released zone 0's ZRWA");
    assert_eq!(h.mgmt(ZoneAction::Reset, zslba(1)), Status::Success);
    assert_eq!(h.dev.zones().zrwa_held(), 1);
    assert_eq!(h.write(zslba(3), 1, 0), Status::Success, "a plain write opens zone 3 without a ZRWA");
    assert_eq!(h.write(zslba(3) + 2, 1, 0), Status::ZoneInvalidWrite);
    assert_eq!(h.open_zrwa(3), Status::ZrwaResourcesUnavailable, "write pointer 1: not on a granule");
}

#[test]
fn identify_and_report_zones_show_the_zrwa() {
    let mut h = H::new();
    let CmdResult::Identify(id) = h.run(&Command::Identify).result else { panic!("identify") };
    let want = config::zrwa::ZrwaLimits { lbas: ZRWAS, flush_lbas: ZRWAFG, resources: 2, explicit_commit: true };
    assert_eq!(id.zrwa, Some(want));
    h.open_zrwa(1);
    let report = h.run(&Command::ReportZones { slba: 0, filter: ReportFilter::All, max_zones: 3, partial: false });
    let CmdResult::Report(r) = report.result else { panic!("report") };
    let zrwav: Vec<bool> = r.zones.iter().map(|z| z.zrwa).collect();
    assert_eq!(zrwav, [false, true, false]);
    let mut plain = H::with(DeviceOptions { sets: vec![], ..opts(false) });
    let CmdResult::Identify(id) = plain.run(&Command::Identify).result else { panic!("identify") };
    assert_eq!(id.zrwa, None);
    assert_eq!(plain.open_zrwa(0), Status::InvalidZoneOperation, "no ZRWA support");
    assert_eq!(plain.commit(0), Status::InvalidZoneOperation);
}

#[test]
fn reads_return_the_last_write_inside_the_window_and_finish_keeps_it() {
    let mut h = H::new();
    h.open_zrwa(0);
    h.write(0, 8, 1);
    h.write(4, 4, 2);
    assert_eq!(h.read(0, 4), CmdResult::Read(ReadPattern::Uniform(1)));
    assert_eq!(h.read(4, 4), CmdResult::Read(ReadPattern::Uniform(2)), "the rewrite");
    h.write(12, 2, 3);
    assert_eq!(h.commit(7), Status::Success);
    assert_eq!(h.read(4, 4), CmdResult::Read(ReadPattern::Uniform(2)), "committed as last written");
    assert_eq!(h.read(8, 4), CmdResult::Read(ReadPattern::Uniform(0)), "never written");
    assert_eq!(h.mgmt(ZoneAction::Finish, 0), Status::Success);
    assert_eq!((h.state(0), h.wp(0)), (ZoneState::Full, ZCAP));
    assert_eq!(h.read(12, 2), CmdResult::Read(ReadPattern::Uniform(3)), "finish commits the window first");
    assert_eq!(h.mgmt(ZoneAction::Reset, 0), Status::Success);
    assert_eq!(h.read(12, 2), CmdResult::Read(ReadPattern::Uniform(0)));
}

#[test]
fn rewriting_inside_the_window_programs_no_flash() {
    let mut h = H::with(opts(false));
    h.open_zrwa(0);
    for _ in 0..20 {
        assert_eq!(h.write(0, ZRWAS as u32, 0), Status::Success);
    }
    h.dev.drain();
    assert_eq!(h.dev.flash_counters().programs, 0, "the window stays in the controller");
    assert_eq!(h.dev.counters().host_write_bytes, 20 * ZRWAS * 4096);
    // Committing the whole capacity programs each unit of it once.
    let mut wp = 0;
    while wp < ZCAP {
        assert_eq!(h.commit(wp + ZRWAS - 1), Status::Success);
        wp += ZRWAS;
    }
    assert_eq!(h.state(0), ZoneState::Full);
    h.dev.drain();
    let unit_lbas = 4 * 3 * 16384 / 4096;
    assert_eq!(h.dev.flash_counters().programs, ZCAP / unit_lbas, "one program per unit");
    assert_eq!(h.dev.counters().pad_bytes, 0);
}

#[test]
fn committed_data_is_read_from_flash_and_window_data_from_the_controller() {
    let mut h = H::with(opts(false));
    h.open_zrwa(0);
    let unit_lbas = 48;
    for lba in (0..unit_lbas).step_by(ZRWAS as usize) {
        h.write(lba, ZRWAS as u32, 0);
        h.commit(lba + ZRWAS - 1);
    }
    h.write(unit_lbas, 4, 0);
    h.now += 100_000_000; // long after the unit's program
    let reads = h.dev.flash_counters().page_reads;
    h.read(unit_lbas, 4);
    assert_eq!(h.dev.flash_counters().page_reads, reads, "the window is in controller memory");
    h.read(0, 4);
    assert_eq!(h.dev.flash_counters().page_reads, reads + 1, "committed and programmed: on flash");
}

#[test]
fn rewrites_inside_the_window_never_wait_for_flash_while_a_sequential_stream_does() {
    // 64 MiB zones, a ZRWA of 2 MiB; 64 writes of 128 KiB (8 MiB) submitted at once:
    // into one zone's window over and over, or sequentially into another zone.
    let zone_lbas = 16384;
    let big = |h: &mut H, zone: u32, lba: u64| {
        let slba = u64::from(zone) * zone_lbas + lba;
        h.dev.submit(
            h.now,
            &Command::Write { slba, nlb: 32, payload: Payload::None, fua: false, placement: None },
            None,
        )
    };
    let mut o = opts(false);
    o.zone_size_bytes = Some(64 << 20);
    o.zone_capacity_bytes = Some(48 << 20);
    o.sets[0].1 = "2m".into();
    let mut h = H::with(o);
    h.open_zrwa(0);
    h.now = 1_000_000;
    let window: Vec<Completion> = (0..64).map(|i| big(&mut h, 0, (i % 16) * 32)).collect();
    let stream: Vec<Completion> = (0..64).map(|i| big(&mut h, 1, i * 32)).collect();
    assert!(window.iter().all(|c| c.status == Status::Success) && stream.iter().all(|c| c.status == Status::Success));
    assert_eq!(h.wp(0), 0);
    let last_window_ns = window.iter().map(Completion::latency_ns).max().unwrap();
    let last_stream_ns = stream.iter().map(Completion::latency_ns).max().unwrap();
    // Link-bound (about 4 GB/s: 2 ms for 8 MiB) against programs of 2.5 ms each.
    assert!(last_window_ns < 2_500_000, "window rewrites: {last_window_ns} ns");
    assert!(last_stream_ns > last_window_ns + 2_500_000, "the stream waits for programs: {last_stream_ns} ns");
    h.dev.drain();
    let programs = h.dev.flash_counters().programs;
    assert!(programs > 0 && programs <= 8 * 1024 / 192, "only the stream's units: {programs}");
}

#[test]
fn configuration_errors_name_the_parameter() {
    let bad = |k: &str, v: &str| {
        let mut o = opts(false);
        o.sets.push((k.to_string(), v.to_string()));
        let e = o.apply(preset("zn540").unwrap()).and_then(|c| c.validate().map(|_| ())).unwrap_err();
        e.0
    };
    assert!(bad("namespace.zrwa.size_bytes", "24k").contains("namespace.zrwa.size_bytes"));
    assert!(bad("namespace.zrwa.flush_granularity_bytes", "100").contains("flush_granularity_bytes"));
    assert!(bad("namespace.zrwa.resources", "4").contains("namespace.zrwa.resources"));
    assert!(bad("namespace.zrwa.size_bytes", "4m").contains("zone capacity"));
    let e = bad("write_buffer.zone_buffer_bytes", "3m");
    assert!(e.contains("write_buffer.zone_buffer_bytes") && e.contains("ZRWA"), "{e}");
}

#[test]
fn a_power_cut_or_a_failure_discards_the_uncommitted_window() {
    let mut config = opts(true).apply(preset("zn540").unwrap()).unwrap();
    config.write_buffer.cache = WriteCache::Plp;
    let mut h = H { dev: Device::with_tracking(config, Tracking::ALL).unwrap(), now: 0 };
    h.open_zrwa(0);
    h.write(0, 8, 5);
    h.commit(3);
    h.write(4, 4, 6);
    let report = h.dev.power_cut(h.now);
    assert_eq!(report.lost_blocks, 4, "LBAs 4..8 were not committed");
    assert_eq!((h.state(0), h.wp(0), h.dev.zones().has_zrwa(0)), (ZoneState::ExplicitlyOpened, 4, true));
    assert_eq!(h.read(0, 4), CmdResult::Read(ReadPattern::Uniform(5)), "committed data survives");
    assert_eq!(h.read(4, 4), CmdResult::Read(ReadPattern::Uniform(0)));
    assert_eq!(h.write(4, 4, 7), Status::Success, "the window takes writes again");
    h.dev.set_zone_state(0, ZoneState::ReadOnly).unwrap();
    assert_eq!(h.read(4, 4), CmdResult::Read(ReadPattern::Uniform(0)), "a failure drops the window");
    assert_eq!(h.dev.zones().zrwa_held(), 0);
}

#[test]
fn fua_and_flush_with_a_volatile_cache_leave_the_window_to_its_commit() {
    let mut config = opts(true).apply(preset("zn540").unwrap()).unwrap();
    config.write_buffer.cache = WriteCache::Volatile;
    let mut h = H { dev: Device::with_tracking(config, Tracking::ALL).unwrap(), now: 0 };
    h.open_zrwa(0);
    let fua = h.run(&Command::Write { slba: 4, nlb: 4, payload: Payload::Pattern(3), fua: true, placement: None });
    assert_eq!(fua.status, Status::Success);
    assert_eq!(h.run(&Command::Flush).status, Status::Success);
    h.commit(3);
    let report = h.dev.power_cut(h.now);
    assert_eq!(report.lost_blocks, 4, "the window is not made durable before its commit");
    assert_eq!(h.wp(0), 4);
    assert_eq!(h.read(4, 4), CmdResult::Read(ReadPattern::Uniform(0)));
}
