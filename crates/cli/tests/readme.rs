//! Every `sh` example of the README runs, as a newcomer would paste it: with
//! `zonelab` on PATH, in a fresh directory beside the repository's
//! `examples/` and `data/`. Blocks that cannot run here (installation, the test command
//! itself, synopses) are marked `console` or `text` instead of `sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The bodies of the fenced blocks whose info string is exactly `sh`.
fn sh_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```sh") => current = Some(String::new()),
            (Some(body), "```") => {
                blocks.push(std::mem::take(body));
                current = None;
            }
            (Some(body), text) => {
                body.push_str(text);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(current.is_none(), "README.md: a ```sh block is never closed");
    blocks
}

#[test]
fn the_readme_has_runnable_examples_and_no_unmarked_blocks() {
    let readme = std::fs::read_to_string(repository_root().join("README.md")).unwrap();
    assert!(sh_blocks(&readme).len() >= 4, "the tour's examples are sh blocks");
    for line in readme.lines().filter(|l| l.starts_with("```") && l.len() > 3) {
        let info = &line[3..];
        assert!(["sh", "console", "text", "toml", "json"].contains(&info), "README.md: unknown block type {line}");
    }
}

#[test]
fn every_sh_example_of_the_readme_runs() {
    let root = repository_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_zonelab")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for (index, block) in sh_blocks(&readme).iter().enumerate() {
        let dir = std::env::temp_dir().join(format!("zonelab-readme-{}-{index}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for shipped in ["examples", "data"] {
            std::os::unix::fs::symlink(root.join(shipped), dir.join(shipped)).unwrap();
        }
        let out = Command::new("bash")
            .args(["-e", "-o", "pipefail", "-c", block])
            .current_dir(&dir)
            .env("PATH", &path)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "README example {index} failed:\n{block}\nstdout:\n{stdout}\nstderr:\n{stderr}");
        assert!(!stdout.trim().is_empty() || dir.read_dir().unwrap().count() > 1, "example {index} printed nothing");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
