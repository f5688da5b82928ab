use super::*;

const GOOD: &str = "zonelab recording 1
# served by a test
1 100 100 200 1.1 1 - 0 success - write 0 8 fua
2 300 300 400 1.1 1 1 0 success 8 append 0 1
3 300 300 450 1.2 1 - 1 zone_invalid_write - write 5 1
4 500 500 600 1.1 1 2 0 success - zone reset 0 all
5 600 600 700 1.1 2 4 0 success - report 0 8 implicitly_opened partial
6 700 700 800 1.1 1 5 0 success - copy 256 0:2 8:1
7 800 800 900 1.1 1 6 0 success - compaction 0:512 1:513
8 900 900 950 1.1 1 7 0 success - tl_open 0 00000000000000ff
9 950 950 960 1.1 1 8 0 success - flush
";

#[test]
fn every_line_parses_and_prints_back_the_same() {
    let records = parse("r", GOOD).unwrap();
    assert_eq!(records.len(), 9);
    assert_eq!(records[0].op, Op::Write { slba: 0, nlb: 8, fua: true, placement: None });
    assert_eq!(records[1].result_lba, Some(8));
    assert_eq!(records[2].queue, QueueId { controller: 1, qid: 2 });
    assert_eq!(records[2].status, Status::ZoneInvalidWrite);
    assert_eq!(
        records[5].op,
        Op::Copy { sdlba: 256, ranges: vec![SourceRange { slba: 0, nlb: 2 }, SourceRange { slba: 8, nlb: 1 }] }
    );
    let lines: Vec<&str> = GOOD.lines().skip(2).collect();
    for (record, line) in records.iter().zip(lines) {
        assert_eq!(record.to_line(), line);
    }
}

fn error_of(line: &str) -> RecordingError {
    parse("rec.txt", &format!("{HEADER}\n1 100 100 200 1.1 1 - 0 success - write 0 8\n{line}\n")).unwrap_err()
}

#[test]
fn a_bad_line_names_its_line_and_field() {
    let cases = [
        ("2 1 1 2 1.1 1 - 0 success - write 0", "nlb", "missing"),
        ("2 1 1 2 1.1 1 - 0 success - write 0 0", "nlb", "0: a command"),
        ("2 1 1 2 1.1 1 - 0 success - write x 1", "slba", "'x' is not a number"),
        ("2 1 1 2 1.1 1 - 0 fine - write 0 1", "status", "'fine' is not a status"),
        ("2 1 1 2 11 1 - 0 success - write 0 1", "queue", "is not CNTLID.QID"),
        ("1 1 1 2 1.1 1 - 0 success - write 0 1", "seq", "does not follow"),
        ("2 1 5 2 1.1 1 - 0 success - write 0 1", "vc_ns", "earlier than vt_ns"),
        ("2 1 1 2 1.2 1 1 0 success - write 0 1", "dep", "no earlier command of queue 1.2"),
        ("2 1 1 2 1.1 1 7 0 success - write 0 1", "dep", "no earlier command"),
        ("2 1 1 2 1.1 1 - 0 success - scribble 0 1", "op", "'scribble' is not a command"),
        ("2 1 1 2 1.1 1 - 0 success - zone shut 0", "action", "'shut'"),
        ("2 1 1 2 1.1 1 - 0 success - write 0 1 fua now", "pid", "'now': a write's last word is fua or pid=N"),
        ("2 1 1 2 1.1 1 - 0 success - write 0 1 pid=3 now", "args", "'now' after"),
        ("2 1 1 2 1.1 1 - 0 success - write 0 1 pid=x", "pid", "'x' is not a number"),
        ("2 1 1 2 1.1 1 - 0 success - copy 5", "range", "1 to"),
        ("2 1 1 2 1.1 1 - 0 success - tl_open 0 zz", "bitmap", "'zz' is no hex word"),
        ("2 1 1 2 1.1 1 - 0 success - report 0 8 sideways", "filter", "'sideways'"),
    ];
    for (line, field, message) in cases {
        let e = error_of(line);
        assert_eq!((e.line, e.field), (3, field), "{line}: {e}");
        assert!(e.to_string().starts_with(&format!("rec.txt:3: field '{field}': ")), "{e}");
        assert!(e.message.contains(message), "{line}: {e}");
    }
    let e = parse("rec.txt", "fio version 3 iolog\n").unwrap_err();
    assert_eq!(e.to_string(), format!("rec.txt:1: the first line is 'fio version 3 iolog', expected '{HEADER}'"));
}

#[test]
fn the_recorder_creates_its_file_exclusively() {
    let path = std::env::temp_dir().join(format!("zonelab-{}-recorder-exclusive", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let recorder = Recorder::create(&path, "first").unwrap();
    let completion =
        Completion { status: Status::Success, submit_ns: 10, complete_ns: 20, result: zonelab_device::CmdResult::None };
    let arrival = Arrival { queue: QueueId { controller: 1, qid: 1 }, at_ns: 5, dep: None, outstanding: 0 };
    assert_eq!(recorder.record(&arrival, 1, &Command::Read { slba: 3, nlb: 2 }, &completion), 1);
    assert_eq!(recorder.record(&arrival, 1, &Command::Flush, &completion), 2);
    drop(recorder);
    let again = Recorder::create(&path, "second").err().map(|e| e.to_string()).unwrap_or_default();
    assert!(again.contains("exists"), "{again}");
    let records = read(path.to_str().unwrap()).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        records.iter().map(Record::to_line).collect::<Vec<_>>(),
        ["1 5 10 20 1.1 1 - 0 success - read 3 2", "2 5 10 20 1.1 1 - 0 success - flush"]
    );
}

#[test]
fn a_recording_ends_at_its_size_limit_and_keeps_whole_lines() {
    let path = std::env::temp_dir().join(format!("zonelab-{}-recorder-limit", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let header_bytes =
        Recorder::create(&path, "limit").map(drop).map(|()| std::fs::metadata(&path).unwrap().len()).unwrap();
    std::fs::remove_file(&path).unwrap();
    // Room for the header and two lines of 39 bytes ("N 5 10 20 1.1 1 - 0 success - read 3 2\n"), not three.
    let recorder = Recorder::create(&path, "limit").unwrap().with_bytes_max(header_bytes + 80);
    let completion =
        Completion { status: Status::Success, submit_ns: 10, complete_ns: 20, result: zonelab_device::CmdResult::None };
    let arrival = Arrival { queue: QueueId { controller: 1, qid: 1 }, at_ns: 5, dep: None, outstanding: 0 };
    for seq in 1..=4 {
        assert_eq!(recorder.record(&arrival, 1, &Command::Read { slba: 3, nlb: 2 }, &completion), seq);
    }
    drop(recorder);
    let records = read(path.to_str().unwrap()).unwrap();
    let bytes = std::fs::metadata(&path).unwrap().len();
    std::fs::remove_file(&path).unwrap();
    assert_eq!(records.iter().map(|r| r.seq).collect::<Vec<_>>(), [1, 2], "the lines that fit, whole");
    assert_eq!(bytes, header_bytes + 2 * 39);
}

#[test]
fn placement_identifiers_and_handle_commands_print_and_parse_back() {
    let text = "zonelab recording 1
1 1 1 2 1.1 1 - 0 success - write 0 8 fua pid=3
2 1 2 3 1.1 1 - 0 success - write_zeroes 8 4 pid=1
3 1 3 4 1.1 1 - 0 success - write_zeroes 12 4
4 1 4 5 1.1 1 - 0 success - ruh_update 0 3
5 1 5 6 1.1 1 - 0 success - ruh_status
";
    let records = parse("r", text).unwrap();
    assert_eq!(records[1].op, Op::WriteZeroes { slba: 8, nlb: 4, placement: Some(1) });
    assert_eq!(records[2].op, Op::WriteZeroes { slba: 12, nlb: 4, placement: None });
    assert_eq!(records[3].op, Op::RuhUpdate { pids: vec![0, 3] });
    let printed: Vec<String> = records.iter().map(|r| r.to_line()).collect();
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(printed, lines);
    let bad = "zonelab recording 1\n1 1 1 2 1.1 1 - 0 success - write_zeroes 8 4 fua\n";
    let e = parse("r", bad).unwrap_err();
    assert_eq!(e.field, "pid");
    assert!(e.message.contains("write_zeroes's last word is pid=N"), "{e}");
}

#[test]
fn zrwa_commands_and_statuses_print_and_parse_back() {
    let text = "zonelab recording 1
1 100 100 200 1.1 1 - 0 success - zone open_zrwa 0
2 200 200 300 1.1 1 - 0 success - zone flush_zrwa 7
3 300 300 400 1.1 1 - 0 zrwa_resources_unavailable - zone open_zrwa 256
";
    let records = parse("r", text).unwrap();
    assert_eq!(records[0].op, Op::Zone { action: ZoneAction::OpenZrwa, slba: 0, all: false });
    assert_eq!(records[1].op, Op::Zone { action: ZoneAction::FlushZrwa, slba: 7, all: false });
    assert_eq!(records[2].status, Status::ZrwaResourcesUnavailable);
    for (record, line) in records.iter().zip(text.lines().skip(1)) {
        assert_eq!(record.to_line(), line);
    }
}
