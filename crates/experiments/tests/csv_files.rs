//! Every CSV `reproduce characterization --quick` writes parses as CSV, with
//! as many fields in each record as in its header, and the same run gives
//! byte-identical files.

use std::path::{Path, PathBuf};
use zonelab_experiments::characterization::{self, Outcome, Scale};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-csv-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

fn write(dir: &Path, outcomes: &[Outcome]) {
    characterization::write(dir, outcomes, &mut |w| panic!("{w}")).unwrap();
}

#[test]
fn every_characterization_csv_parses_with_a_column_per_header_field() {
    let outcomes = characterization::run(Scale { quick: true }, "", &mut |_| {}).unwrap();
    let dir = temp_dir("all");
    write(&dir, &outcomes);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    assert_eq!(files.len(), outcomes.len(), "a CSV per experiment: {files:?}");
    for o in &outcomes {
        let path = dir.join(format!("{}.csv", o.name));
        // Flexible, so that a record of the wrong length is seen here rather than as a reader error.
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_path(&path).unwrap();
        let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
        assert_eq!(header, o.columns, "{}: header", o.name);
        let records: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
        assert_eq!(records.len(), o.rows.len(), "{}: a record per row", o.name);
        for (record, row) in records.iter().zip(&o.rows) {
            assert_eq!(record.len(), header.len(), "{}: {record:?} has a field per column {header:?}", o.name);
            assert_eq!(record.iter().collect::<Vec<_>>(), *row, "{}: fields as the experiment gave them", o.name);
        }
    }
    // The summary's promise: every finding that is not reproduced names what the model lacks (or was not measured).
    for o in &outcomes {
        for f in o.findings.iter().filter(|f| !f.passed() && !f.verdict.starts_with("not measured")) {
            assert!(
                f.mechanism.is_some(),
                "{}: '{}' is {} and names no missing mechanism",
                o.name,
                f.quantity,
                f.verdict
            );
        }
    }
    // Fields with commas (obs11's writers) are quoted, not split.
    let gc = std::fs::read_to_string(dir.join("obs11-gc-interference.csv")).unwrap();
    assert!(gc.contains("\"4 x 1 MiB appends, QD 32\""), "{gc}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn the_same_experiments_write_the_same_bytes() {
    let outcomes = characterization::run(Scale { quick: true }, "obs1", &mut |_| {}).unwrap();
    let (a, b) = (temp_dir("same-a"), temp_dir("same-b"));
    write(&a, &outcomes);
    write(&b, &characterization::run(Scale { quick: true }, "obs1", &mut |_| {}).unwrap());
    for o in &outcomes {
        for ext in ["csv", "svg", "png"] {
            let file = format!("{}.{ext}", o.name);
            let (x, y) = (std::fs::read(a.join(&file)).unwrap(), std::fs::read(b.join(&file)).unwrap());
            assert!(x.len() > 100, "{file} is written");
            assert!(x == y, "{file} differs between two runs");
        }
    }
    std::fs::remove_dir_all(&a).ok();
    std::fs::remove_dir_all(&b).ok();
}
