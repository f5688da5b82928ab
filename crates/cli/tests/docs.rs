//! The documentation cannot drift: every fenced block of `README.md` and `docs/*.md` is run or is data, and every
//! link between the repository's markdown files resolves. The convention (docs/README.md, "Examples are tested"):
//!
//! - ```` ```sh ```` / ```` ```bash ````: commands, run with `bash -e -o pipefail` and `zonelab` (this build) on
//!   PATH, in a scratch directory that holds links to the repository's `examples/` and `data/`.
//! - ```` ```console ````: a transcript. `$ ` starts a command (continued by a trailing `\` or a here-document);
//!   the lines up to the next `$ ` are what it prints, stdout and stderr as a terminal shows them, compared line
//!   by line. `...` in an expected line stands for any text, and a line of only `...` for any lines.
//! - `<!-- doc-test: skip (REASON) -->` on the line before a block: not run here, for the reason given.
//!   `<!-- doc-test: measured -->`: a console block whose numbers vary from run to run (wall time, speed): its
//!   numbers are compared as "some number", the rest exactly. `<!-- doc-test: python -->`: run by
//!   scripts/python-test (python/tests/test_docs.py), which has the Python package.
//! - ```` ```python ```` blocks are run by scripts/python-test too; `text`, `toml`, `json`, `jsonl` blocks are data
//!   and synopses, never commands.
//!
//! Numbers written into prose by a command are kept there by `scripts/readme-numbers`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The documents whose blocks run: the README and docs/*.md.
fn documents() -> Vec<PathBuf> {
    let root = repository_root();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root.join("README.md"));
    docs
}

/// Every markdown file of the repository (outside build output and hidden directories), for the link check.
fn all_markdown() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with('.') || name == "target" || name == "node_modules" {
                continue;
            }
            if path.is_dir() {
                walk(&path, out);
            } else if name.ends_with(".md") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(&repository_root(), &mut out);
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repository_root()).unwrap_or(path).display().to_string()
}

#[derive(Debug, Clone, PartialEq)]
enum Marker {
    None,
    Skip(String),
    Measured,
    Python,
}

#[derive(Debug)]
struct Block {
    /// "FILE:LINE" of the opening fence.
    place: String,
    /// The fence's line number (1-based).
    line: usize,
    info: String,
    body: Vec<String>,
    marker: Marker,
}

const RUN: &[&str] = &["sh", "bash", "console"];
const DATA: &[&str] = &["text", "toml", "json", "jsonl", "python"];

/// The `<!-- doc-test: ... -->` marker of a line, if it is one.
fn parse_marker(line: &str, place: &str) -> Option<Result<Marker, String>> {
    let inner = line.trim().strip_prefix("<!-- doc-test:")?;
    let Some(words) = inner.strip_suffix("-->").map(str::trim) else {
        return Some(Err(format!("{place}: a doc-test marker ends with -->")));
    };
    Some(match words {
        "measured" => Ok(Marker::Measured),
        "python" => Ok(Marker::Python),
        _ => match words.strip_prefix("skip (").and_then(|r| r.strip_suffix(')')) {
            Some(reason) if !reason.trim().is_empty() => Ok(Marker::Skip(reason.trim().to_string())),
            _ => {
                Err(format!("{place}: unknown doc-test marker {words:?}: use `skip (REASON)`, `measured` or `python`"))
            }
        },
    })
}

/// The fenced blocks of a markdown file, with the marker on the line before each; problems (an unknown info
/// string, a marker before no block, an unclosed fence) are returned as errors.
fn blocks(path: &Path) -> (Vec<Block>, Vec<String>) {
    let name = relative(path);
    let text = std::fs::read_to_string(path).unwrap();
    let mut blocks = Vec::new();
    let mut errors = Vec::new();
    let mut pending: Option<(usize, Marker)> = None;
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let number = index + 1;
        let place = format!("{name}:{number}");
        let trimmed = line.trim_start();
        if let Some(marker) = parse_marker(line, &place) {
            match marker {
                Ok(m) => pending = Some((number, m)),
                Err(e) => errors.push(e),
            }
            continue;
        }
        if let Some(info) = trimmed.strip_prefix("```") {
            let indent = line.len() - trimmed.len();
            let info = info.trim().to_string();
            let mut body = Vec::new();
            let mut closed = false;
            for (_, inner) in lines.by_ref() {
                if inner.trim() == "```" {
                    closed = true;
                    break;
                }
                let strip = inner.len() - inner.trim_start().len();
                body.push(inner[strip.min(indent)..].to_string());
            }
            if !closed {
                errors.push(format!("{place}: this ``` block is never closed"));
            }
            if !RUN.contains(&info.as_str()) && !DATA.contains(&info.as_str()) {
                errors.push(format!(
                    "{place}: block type {info:?}: say what the block is (commands: sh, bash, console; \
                     data: text, toml, json, jsonl, python)"
                ));
            }
            let marker = pending.take().map(|(_, m)| m).unwrap_or(Marker::None);
            match (&marker, info.as_str()) {
                (Marker::None, _) | (Marker::Skip(_) | Marker::Python, "sh" | "bash" | "console") => {}
                (Marker::Measured, "console") | (Marker::Skip(_), "python") => {}
                (Marker::Measured, _) => errors.push(format!("{place}: `measured` applies to console blocks")),
                _ => errors.push(format!("{place}: a {info} block is never run, so it takes no doc-test marker")),
            }
            blocks.push(Block { place, line: number, info, body, marker });
            continue;
        }
        if let Some((marker_line, _)) = &pending {
            if !line.trim().is_empty() {
                errors.push(format!("{name}:{marker_line}: a doc-test marker must stand right before a ``` block"));
                pending = None;
            }
        }
    }
    if let Some((marker_line, _)) = pending {
        errors.push(format!("{name}:{marker_line}: a doc-test marker must stand right before a ``` block"));
    }
    (blocks, errors)
}

/// One command of a console transcript and what it prints.
struct Step {
    line: usize,
    command: String,
    expected: Vec<String>,
    /// The line number of the first expected line.
    output_line: usize,
}

/// A console block's commands and expected output; a block that does not start with `$ ` is an error.
fn transcript(block: &Block) -> Result<Vec<Step>, String> {
    let mut steps: Vec<Step> = Vec::new();
    let mut lines = block.body.iter().enumerate().peekable();
    while let Some((index, line)) = lines.next() {
        let number = block.line + 1 + index;
        let Some(first) = line.strip_prefix("$ ") else {
            match steps.last_mut() {
                Some(step) => {
                    if step.expected.is_empty() {
                        step.output_line = number;
                    }
                    step.expected.push(line.trim_end().to_string())
                }
                None => return Err(format!("{}: a console block starts with a `$ ` command", block.place)),
            }
            continue;
        };
        let mut command = first.to_string();
        while command.ends_with('\\') {
            let Some((_, next)) = lines.next() else { break };
            command.push('\n');
            command.push_str(next);
        }
        // A here-document runs to its delimiter line.
        if let Some(delimiter) = heredoc_delimiter(&command) {
            loop {
                let Some((_, next)) = lines.next() else {
                    return Err(format!("{}:{number}: the here-document never ends ({delimiter})", block.place));
                };
                command.push('\n');
                command.push_str(next);
                if next.trim() == delimiter {
                    break;
                }
            }
        }
        steps.push(Step { line: number, command, expected: Vec::new(), output_line: number + 1 });
    }
    Ok(steps)
}

/// The delimiter of a `<<'EOF'` or `<<EOF` here-document in a command.
fn heredoc_delimiter(command: &str) -> Option<String> {
    let rest = &command[command.find("<<")? + 2..];
    let rest = rest.trim_start_matches('-').trim_start();
    let word: String = rest.trim_start_matches(['\'', '"']).chars().take_while(|c| c.is_alphanumeric()).collect();
    (!word.is_empty()).then_some(word)
}

/// Numbers in a line replaced by `#` and runs of spaces by one (columns padded to a number's width move), for
/// measured output.
fn without_numbers(line: &str) -> String {
    numbers_as_hash(line).split_whitespace().collect::<Vec<_>>().join(" ")
}

fn numbers_as_hash(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            while let Some(&n) = chars.peek() {
                let separator = matches!(n, '.' | ',');
                if n.is_ascii_digit() || (separator && out_next_is_digit(&chars)) {
                    chars.next();
                } else {
                    break;
                }
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

fn out_next_is_digit(chars: &std::iter::Peekable<std::str::Chars>) -> bool {
    let mut ahead = chars.clone();
    ahead.next();
    ahead.next().is_some_and(|c| c.is_ascii_digit())
}

/// Whether `actual` matches `expected`, in which `...` stands for any text.
fn line_matches(expected: &str, actual: &str) -> bool {
    let pieces: Vec<&str> = expected.split("...").collect();
    if pieces.len() == 1 {
        return expected == actual;
    }
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if !actual.starts_with(first) || actual.len() < first.len() + last.len() || !actual.ends_with(last) {
        return false;
    }
    let mut rest = &actual[first.len()..actual.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// Whether the lines match, a line of only `...` standing for any number of lines.
fn lines_match(expected: &[String], actual: &[String]) -> bool {
    match expected.split_first() {
        None => actual.is_empty(),
        Some((e, rest)) if e == "..." => (0..=actual.len()).any(|skip| lines_match(rest, &actual[skip..])),
        Some((e, rest)) => actual.split_first().is_some_and(|(a, tail)| line_matches(e, a) && lines_match(rest, tail)),
    }
}

fn trimmed_lines(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(|l| l.trim_end().to_string()).collect();
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

/// A fresh scratch directory with the repository's `examples/` and `data/` linked in.
fn scratch(label: &str) -> PathBuf {
    let root = repository_root();
    let dir = std::env::temp_dir().join(format!("zonelab-docs-{}-{label}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for shipped in ["examples", "data"] {
        std::os::unix::fs::symlink(root.join(shipped), dir.join(shipped)).unwrap();
    }
    dir
}

/// Longest any one doc command may take (the longest, `reproduce znsplus --quick`, takes about 30 s).
const TIMEOUT: Duration = Duration::from_secs(600);

/// Runs `script` with bash in `dir`, stdout and stderr into one file (as a terminal interleaves them); its exit
/// status (None when killed at the timeout) and output. The script's process group is ended afterwards, so that
/// nothing it left in the background outlives it.
fn run_bash(script: &str, dir: &Path, errexit: bool) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_zonelab")).parent().unwrap().to_path_buf();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let output_path = dir.with_extension("out");
    let output = File::create(&output_path).unwrap();
    let mut args = vec!["-o", "pipefail", "-c", script];
    if errexit {
        args.insert(0, "-e");
    }
    let mut child = Command::new("bash")
        .args(&args)
        .current_dir(dir)
        .env("PATH", &path)
        .stdin(Stdio::null())
        .stdout(output.try_clone().unwrap())
        .stderr(output)
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > TIMEOUT {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).stderr(Stdio::null()).status();
    let _ = child.wait();
    let text = String::from_utf8_lossy(&std::fs::read(&output_path).unwrap()).into_owned();
    std::fs::remove_file(&output_path).unwrap();
    (status, text)
}

/// Runs one block; a description of what went wrong, if anything did.
fn run_block(block: &Block, label: &str) -> Option<String> {
    let dir = scratch(label);
    let failure = if block.info == "console" {
        match transcript(block) {
            Err(e) => Some(e),
            Ok(steps) => steps.iter().find_map(|step| {
                let (status, output) = run_bash(&step.command, &dir, false);
                let file = block.place.split(':').next().unwrap();
                let place = format!("{file}:{}", step.line);
                let actual = trimmed_lines(&output);
                let mut expected = step.expected.clone();
                while expected.last().is_some_and(|l| l.is_empty()) {
                    expected.pop();
                }
                let (e, a): (Vec<String>, Vec<String>) = if block.marker == Marker::Measured {
                    (
                        expected.iter().map(|l| without_numbers(l)).collect(),
                        actual.iter().map(|l| without_numbers(l)).collect(),
                    )
                } else {
                    (expected.clone(), actual.clone())
                };
                if status != Some(0) {
                    Some(format!(
                        "{place}: `{}` exited with {status:?} (show a failure's status with `|| echo \"exit \
                         status: $?\"`); it printed:\n{output}",
                        step.command
                    ))
                } else if !lines_match(&e, &a) {
                    // Where the first difference is, when no `...` line comes before it.
                    let first = (0..e.len().max(a.len())).find(|&i| {
                        e.get(i).is_none_or(|l| l == "...") || !a.get(i).is_some_and(|l| line_matches(&e[i], l))
                    });
                    let at = match first {
                        Some(i) if e.get(i).is_none_or(|l| l != "...") => {
                            format!(" (first at {file}:{})", step.output_line + i.min(e.len()))
                        }
                        _ => String::new(),
                    };
                    Some(format!(
                        "{place}: the output of `{}` differs from the document's{at}\n--- document\n{}\n--- now\n{}",
                        step.command,
                        expected.join("\n"),
                        actual.join("\n")
                    ))
                } else {
                    None
                }
            }),
        }
    } else {
        let script = block.body.join("\n");
        let (status, output) = run_bash(&script, &dir, true);
        (status != Some(0)).then(|| {
            format!(
                "{}: this {} block exited with {status:?}:\n{script}\n--- it printed\n{output}",
                block.place, block.info
            )
        })
    };
    std::fs::remove_dir_all(&dir).unwrap();
    failure
}

#[test]
fn every_block_of_the_documents_is_marked_and_well_formed() {
    let mut errors = Vec::new();
    let mut runnable = 0;
    for doc in documents() {
        let (found, problems) = blocks(&doc);
        errors.extend(problems);
        for block in &found {
            if block.info == "console" {
                if let Err(e) = transcript(block) {
                    errors.push(e);
                }
            }
            if let Marker::Skip(reason) = &block.marker {
                assert!(reason.len() >= 10, "{}: say why the block is skipped", block.place);
            }
        }
        runnable += found.iter().filter(|b| RUN.contains(&b.info.as_str()) && b.marker == Marker::None).count();
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(runnable >= 20, "only {runnable} blocks run: the documents' examples went missing");
}

#[test]
fn every_command_block_of_the_documents_runs_and_prints_what_it_shows() {
    let started = Instant::now();
    let mut work = Vec::new();
    for doc in documents() {
        for (index, block) in blocks(&doc).0.into_iter().enumerate() {
            if RUN.contains(&block.info.as_str()) && matches!(block.marker, Marker::None | Marker::Measured) {
                work.push((format!("{}-{index}", doc.file_stem().unwrap().to_string_lossy()), block));
            }
        }
    }
    // Two at a time: the blocks are independent, each in its own scratch directory.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some((label, block)) = work.get(i) else { break };
                let block_started = Instant::now();
                let failure = run_block(block, label);
                eprintln!("{}: {:.1} s", block.place, block_started.elapsed().as_secs_f64());
                results.lock().unwrap().push((i, failure));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    let failures: Vec<String> = results.into_iter().filter_map(|(_, f)| f).collect();
    eprintln!("{} blocks in {:.1} s", work.len(), started.elapsed().as_secs_f64());
    assert!(work.len() >= 20, "only {} blocks ran: the documents' examples went missing", work.len());
    assert!(
        failures.is_empty(),
        "{} of {} document blocks failed:\n\n{}",
        failures.len(),
        work.len(),
        failures.join("\n\n")
    );
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The headings of a markdown file (outside code blocks), as written.
fn headings(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut in_code = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_string());
        }
    }
    out
}

/// The anchors of a file's headings, with GitHub's -1, -2 suffixes for repeated ones.
fn anchors(path: &Path) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for heading in headings(path) {
        let base = slug(&heading);
        let count = seen.iter().filter(|s| **s == base || s.strip_prefix(&format!("{base}-")).is_some()).count();
        seen.push(if count == 0 { base } else { format!("{base}-{count}") });
    }
    seen
}

/// The lines of a markdown file outside fenced blocks, with inline code spans blanked out.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut in_code = false;
    let mut out = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let mut kept = String::new();
        for (i, part) in line.split('`').enumerate() {
            kept.push_str(if i % 2 == 0 { part } else { "" });
        }
        out.push((index + 1, kept));
    }
    out
}

#[test]
fn every_link_between_the_markdown_files_resolves() {
    let mut errors = Vec::new();
    let mut checked = 0;
    for file in all_markdown() {
        let text = std::fs::read_to_string(&file).unwrap();
        for (number, line) in prose_lines(&text) {
            let mut rest = line.as_str();
            while let Some(at) = rest.find("](") {
                let after = &rest[at + 2..];
                let Some(end) = after.find(')') else { break };
                let target = after[..end].split_whitespace().next().unwrap_or("");
                rest = &after[end..];
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
                let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
                let place = format!("{}:{number}", relative(&file));
                if !resolved.exists() {
                    errors.push(format!("{place}: the link to {target} names no file"));
                } else if !anchor.is_empty() && !anchors(&resolved).iter().any(|a| a == anchor) {
                    errors.push(format!(
                        "{place}: the link to {target}: {} has no heading with the anchor #{anchor}",
                        relative(&resolved)
                    ));
                }
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(checked >= 50, "only {checked} links found: the link scan is broken");
}

/// The sections a document's prose may name: its headings, the part of a heading before its colon, and the bold
/// lead of a paragraph (`**Limits.** ...`, which docs/nvme-tcp.md uses under one heading).
fn sections(path: &Path) -> Vec<String> {
    let mut out = headings(path);
    out.extend(out.clone().iter().filter_map(|h| h.split_once(':').map(|(lead, _)| lead.to_string())));
    for (_, line) in prose_lines(&std::fs::read_to_string(path).unwrap_or_default()) {
        if let Some(lead) = line.strip_prefix("**").and_then(|rest| rest.split_once("**")).map(|(lead, _)| lead) {
            out.push(lead.trim_end_matches('.').to_string());
        }
    }
    out
}

/// Prose that names a section of a document as docs/nvme-tcp.md, "Limits" or znsplus.md ("ZNS+ commands (seed
/// 002)") do (a path ending in .md, then the title in quotes), in the markdown files and in the sources' comments:
/// the document must have that section.
#[test]
fn every_section_named_in_prose_or_comments_exists() {
    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs" || e == "py") {
                out.push(path);
            }
        }
    }
    let root = repository_root();
    let mut files = all_markdown();
    sources(&root.join("crates"), &mut files);
    sources(&root.join("python"), &mut files);
    let mut errors = Vec::new();
    let mut checked = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (index, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find(".md") {
                let before = &rest[..at];
                let after = rest[at + 3..].trim_start_matches('`');
                rest = &rest[at + 3..];
                let title = [", \"", " (\""].iter().find_map(|p| after.strip_prefix(p)).and_then(|t| t.split_once('"'));
                let Some((title, _)) = title else { continue };
                let start = before
                    .rfind(|c: char| !(c.is_alphanumeric() || matches!(c, '/' | '.' | '_' | '-')))
                    .map_or(0, |i| i + 1);
                let name = format!("{}.md", &before[start..]);
                let candidates = [file.parent().unwrap().join(&name), root.join(&name), root.join("docs").join(&name)];
                let place = format!("{}:{}", relative(&file), index + 1);
                checked += 1;
                match candidates.iter().find(|p| p.is_file()) {
                    None => errors.push(format!("{place}: {name} (named with the section {title:?}) does not exist")),
                    Some(doc) => {
                        let plain = |h: &str| h.replace('`', "").to_lowercase();
                        if !sections(doc).iter().any(|h| plain(h) == plain(title)) {
                            errors.push(format!("{place}: {} has no section {title:?}", relative(doc)));
                        }
                    }
                }
            }
        }
    }
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    assert!(checked >= 5, "only {checked} section references found: the scan is broken");
}

#[test]
fn the_output_comparison_catches_what_it_should() {
    assert!(line_matches("{\"op\":\"identify\",...}", "{\"op\":\"identify\",\"status\":\"success\"}"));
    assert!(!line_matches("{\"op\":\"identify\",...}", "{\"op\":\"write\",\"status\":\"success\"}"));
    assert!(!line_matches("a...b...c", "a b"));
    assert!(line_matches("...done", "all done"));
    let lines = |s: &str| s.lines().map(String::from).collect::<Vec<_>>();
    assert!(lines_match(&lines("a\n...\nd"), &lines("a\nb\nc\nd")));
    assert!(lines_match(&lines("a\n...\nd"), &lines("a\nd")));
    assert!(!lines_match(&lines("a\n...\nd"), &lines("a\nb")));
    assert!(!lines_match(&lines("a\nb"), &lines("a\nb\nc")), "extra output is a difference");
    assert_eq!(without_numbers("4 KiB writes 15.6–17.6 million, 1,529 per I/O"), "# KiB writes #–# million, # per I/O");
    assert_eq!(without_numbers("write   5000000      0.127"), without_numbers("write   5000000     10.127"));
    assert_eq!(without_numbers("done."), "done.");
    assert_eq!(slug("ZNS+ commands (seed 002)"), "zns-commands-seed-002");
    assert_eq!(
        slug("Plans: run specifications, shards and the result store"),
        "plans-run-specifications-shards-and-the-result-store"
    );
    assert_eq!(heredoc_delimiter("zonelab exec <<'EOF'").as_deref(), Some("EOF"));
    assert_eq!(heredoc_delimiter("zonelab exec"), None);
}
