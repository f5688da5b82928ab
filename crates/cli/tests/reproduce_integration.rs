//! `zonelab reproduce integration`: the quick run writes every figure's
//! files and a summary with a verdict for every finding, reruns byte for
//! byte on any number of threads, and bad arguments exit 2.

mod common;
use common::zonelab;
use std::path::{Path, PathBuf};

const EXPERIMENTS: [&str; 7] = [
    "fig4a-conventional-iops",
    "fig4b-conventional-bandwidth",
    "fig5a-zoned-seqread",
    "fig5b-zoned-randread",
    "fig6a-zoned-write-zones",
    "fig6b-zoned-write-depth",
    "s001-multi-tenancy",
];

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("zonelab-integration-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn quick(out: &Path, jobs: &str) {
    let o = zonelab(&["reproduce", "integration", "--quick", "--jobs", jobs, "--out", out.to_str().unwrap()], "");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Every file under `dir`, by path relative to it, with its bytes.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path);
            } else {
                out.push((path.strip_prefix(dir).unwrap().to_path_buf(), std::fs::read(&path).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_quick_run_judges_every_finding_and_reruns_byte_for_byte_on_any_thread_count() {
    let (a, b) = (scratch("a"), scratch("b"));
    quick(&a, "2");
    quick(&b, "1");
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.iter().map(|f| &f.0).collect::<Vec<_>>(), fb.iter().map(|f| &f.0).collect::<Vec<_>>());
    for ((name, x), (_, y)) in fa.iter().zip(&fb) {
        assert!(x == y, "{} differs between 2 threads and 1", name.display());
    }
    for e in EXPERIMENTS {
        for ext in ["csv", "png", "svg"] {
            assert!(a.join(format!("{e}.{ext}")).is_file(), "{e}.{ext}");
        }
    }
    assert!(std::fs::read_dir(a.join("jobs")).unwrap().count() > 100, "the job files that ran");
    let json: serde_json::Value = serde_json::from_slice(&std::fs::read(a.join("summary.json")).unwrap()).unwrap();
    let findings = json.as_array().expect("a list of findings");
    for e in EXPERIMENTS {
        assert!(findings.iter().any(|f| f["experiment"] == e), "{e} has findings");
    }
    let verdicts = ["reproduced", "off", "direction holds", "direction differs", "not reproduced", "not measured"];
    for f in findings {
        let verdict = f["finding"]["verdict"].as_str().unwrap_or("");
        assert!(verdicts.iter().any(|v| verdict.starts_with(v)), "{f}");
    }
    let summary = std::fs::read_to_string(a.join("summary.md")).unwrap();
    assert!(summary.contains(&format!("of {} findings reproduced", findings.len())), "{summary}");
    let _ = std::fs::remove_dir_all(&a);
    let _ = std::fs::remove_dir_all(&b);
}

#[test]
fn bad_arguments_exit_2_and_write_nothing() {
    let dir = scratch("bad");
    let out = dir.to_str().unwrap();
    for args in [
        vec!["reproduce", "integration", "--jobs", "0", "--out", out],
        vec!["reproduce", "integration", "--jobs", "many", "--out", out],
        vec!["reproduce", "integration", "--speed", "--out", out],
    ] {
        let o = zonelab(&args, "");
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(!dir.exists(), "{args:?} wrote {out}");
    }
    // A directory zonelab did not write is refused before any run, --force or not.
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    for force in [false, true] {
        let mut args = vec!["reproduce", "integration", "--quick", "--out", out];
        if force {
            args.push("--force");
        }
        let o = zonelab(&args, "");
        assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(std::fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
    let _ = std::fs::remove_dir_all(&dir);
}
