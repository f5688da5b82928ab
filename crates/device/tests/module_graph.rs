//! The device crate's top-level modules import each other without a cycle,
//! so each layer (front, zone, controller, translation, scheduler) can be
//! read and changed on its own and clients (management, ZNS+, the
//! conventional FTL's policies) sit above them.
//!
//! A module depends on another when any of its files names `crate::other`
//! (a `use`, a path in code, or a name the crate root re-exports from it).
//! Comments and unit-test modules do not count.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src is readable") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its comments (line comments and doc comments)
/// and its unit tests (a `#[cfg(test)]` module closes each file).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// The first identifier of each path after `crate::`, including each branch of
/// a `crate::{a, b::c}` group.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    let ident = |s: &str| s.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect::<String>();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => {
                // Nested groups open after `::`; each top-level branch starts after a comma.
                let (mut depth, mut start, mut end) = (0, 0, group.len());
                for (i, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            end = i;
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            names.push(ident(group[start..i].trim()));
                            start = i + 1;
                        }
                        _ => {}
                    }
                }
                names.push(ident(group[start..end].trim()));
            }
            None => names.push(ident(rest)),
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The module each name the crate root re-exports comes from.
fn reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    let lib = code(lib).replace('\n', " ");
    for stmt in lib.split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else { continue };
        let Some((module, rest)) = path.split_once("::") else { continue };
        if !modules.contains(module) {
            continue;
        }
        let names = rest.trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                map.insert(name.to_string(), module.to_string());
            }
        }
    }
    map
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let module_of = |path: &Path| {
        let rel = path.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("a component").as_os_str().to_string_lossy().to_string();
        first.trim_end_matches(".rs").to_string()
    };
    let modules: BTreeSet<String> = files.iter().map(|f| module_of(f)).filter(|m| m != "lib").collect();
    let lib = fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let roots = reexports(&lib, &modules);
    let mut graph: BTreeMap<String, BTreeSet<String>> = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for file in &files {
        let from = module_of(file);
        if from == "lib" {
            continue;
        }
        let text = fs::read_to_string(file).expect("a source file");
        for name in crate_paths(&code(&text)) {
            let to = if modules.contains(&name) { Some(name) } else { roots.get(&name).cloned() };
            if let Some(to) = to.filter(|to| *to != from) {
                graph.get_mut(&from).expect("a module").insert(to);
            }
        }
    }
    graph
}

/// A cycle through `node`, if depth-first search from it finds one.
fn find_cycle(
    graph: &BTreeMap<String, BTreeSet<String>>,
    node: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|n| n == node) {
        let mut cycle = path[i..].to_vec();
        cycle.push(node.to_string());
        return Some(cycle);
    }
    if done.contains(node) {
        return None;
    }
    path.push(node.to_string());
    for next in &graph[node] {
        if let Some(cycle) = find_cycle(graph, next, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    done.insert(node.to_string());
    None
}

#[test]
fn the_module_graph_has_no_cycle() {
    let graph = graph();
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = find_cycle(&graph, node, &mut Vec::new(), &mut done) {
            panic!("import cycle: {}\ngraph: {graph:#?}", cycle.join(" -> "));
        }
    }
}

#[test]
fn the_layers_sit_below_the_device_and_its_clients() {
    let graph = graph();
    let layers = ["front", "zone", "controller", "translation", "scheduler"];
    for layer in layers {
        let deps = &graph[layer];
        for client in ["device", "management", "znsplus", "conventional", "ideal", "zoned"] {
            assert!(!deps.contains(client), "layer {layer} imports {client}: {deps:?}");
        }
    }
    // The checker itself sees imports: the device uses every layer.
    for layer in layers {
        assert!(graph["device"].contains(layer), "device does not use {layer}: {:?}", graph["device"]);
    }
}

#[test]
fn crate_paths_reads_groups_and_plain_paths() {
    let names = crate_paths("use crate::{front::{self, x}, zone::Y};\nlet a = crate::data::DataStore::of(l);");
    assert_eq!(names, ["front", "zone", "data"]);
}
