//! The device crate's module graph, read from its sources (ARCHITECTURE.md,
//! "Invariants of the code"):
//!
//! - the top-level modules import each other without a cycle;
//! - the layers (`front`, `zone`, `controller`, `translation`, `scheduler`
//!   and `backend`, which assembles them) import none of the clients above
//!   them (`device`, `management`, `znsplus`, `conventional`, `power`,
//!   `namespaces`, `ideal`, `zoned`);
//! - the layers' state is not public: no field of a layer's struct is plain
//!   `pub` (but for the few listed below), and the `pub(crate)` ones, which
//!   the clients reach into today, only get fewer.
//!
//! The graph follows the rules of `scripts/module-cycles` (run by
//! `tests/module_cycles.rs`; a test here checks both see the same edges): a
//! module is a top-level file or folder of `src/`; it depends on another
//! when its code names `crate::other` (a `use`, a path in code, or a name
//! `lib.rs` re-exports from it), and when it holds an inherent `impl T`
//! block of a type `T` defined in the other (code calling `T`'s methods then
//! calls into it). Comments and `#[cfg(test)]` modules do not count.
//!
//! Every check takes the source folder as an argument, so the tests at the
//! end run it on small module trees written to a scratch folder and on a
//! copy of this crate's sources with a violation added: each check fails
//! on a real violation.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Each module and the modules it depends on.
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The layers: below the clients, beside each other.
const LAYERS: [&str; 7] = ["front", "zone", "controller", "translation", "scheduler", "ssd", "backend"];
/// The clients over the layers, and the front ends over those.
const CLIENTS: [&str; 8] = ["device", "management", "znsplus", "conventional", "power", "namespaces", "ideal", "zoned"];
/// Folders whose structs are the layers' state (`front` holds command
/// types, not state).
const STATE_MODULES: [&str; 6] = ["backend", "zone", "controller", "translation", "scheduler", "ssd"];
/// Fields of the layers' structs that may be plain `pub`: the conventional
/// FTL's counters, fields of a public type (`translation::ftl::Ftl`) that
/// `conventional::ftl_counters` copies out.
const PUB_FIELDS_ALLOWED: [&str; 4] = ["Ftl::host_units", "Ftl::gc_units", "Ftl::gc_lbas", "Ftl::victims"];
/// `pub(crate)` fields of the layers' structs: 35 on 2026-11-28 (`Backend` 12
/// of its 13, `Management` 7, `Task` 6, `TlZone` 4, `Translation` 2,
/// `Scheduler` 1, `Accepted` 2, `ZoneDurability` 1; the conventional FTL's
/// state is its data path's, in the `conventional` client). A ratchet: the
/// test fails above it, and below it until this number is lowered to the count.
const CRATE_FIELDS: usize = 35;

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The `.rs` files under `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The top-level module `path` belongs to (`zone` for `src/zone/mod.rs`).
fn module_of(src: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(src).expect("under src");
    let first = rel.components().next().expect("a component").as_os_str().to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

/// The code of a file without its comments (line and doc comments) and its
/// unit tests (a `#[cfg(test)]` module closes each file).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The identifier `s` starts with ("" if none).
fn ident(s: &str) -> &str {
    let s = s.trim_start();
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        return "";
    }
    &s[..s.find(|c: char| !is_ident_char(c)).unwrap_or(s.len())]
}

/// Where `word` stands as a whole word in `code`.
fn word_at(code: &str, word: &str) -> Vec<usize> {
    code.match_indices(word)
        .map(|(at, _)| at)
        .filter(|&at| !code[..at].ends_with(is_ident_char) && !code[at + word.len()..].starts_with(is_ident_char))
        .collect()
}

/// The first identifier after each `crate::`, one per branch of a
/// `crate::{a, b::c}` group.
fn crate_paths(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (at, _) in code.match_indices("crate::") {
        if code[..at].ends_with(is_ident_char) {
            continue;
        }
        let rest = &code[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            names.push(ident(rest).to_string());
            continue;
        };
        // Nested groups open after `::`; each top-level branch starts after a comma.
        let (mut depth, mut start) = (0, 0);
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    names.push(ident(&group[start..i]).to_string());
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    names.push(ident(&group[start..i]).to_string());
                    start = i + 1;
                }
                _ => {}
            }
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The module each name the crate root re-exports comes from
/// (`pub use front::command;` makes `crate::command` name `front`).
fn reexports(lib_code: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut map = BTreeMap::new();
    for stmt in lib_code.replace('\n', " ").split(';') {
        let Some(path) = stmt.trim().strip_prefix("pub use ") else { continue };
        let Some((module, rest)) = path.split_once("::") else { continue };
        if !modules.contains(module) {
            continue;
        }
        for name in rest.trim_matches(|c: char| c == '{' || c == '}' || c == ' ').split(',') {
            let name = name.rsplit("::").next().unwrap_or("").trim_matches(|c: char| c == '{' || c == '}' || c == ' ');
            if !name.is_empty() {
                map.insert(name.to_string(), module.to_string());
            }
        }
    }
    map
}

/// The types (struct, enum, union, trait) `code` defines.
fn type_definitions(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for keyword in ["struct", "enum", "union", "trait"] {
        for at in word_at(code, keyword) {
            let rest = &code[at + keyword.len()..];
            if rest.starts_with(char::is_whitespace) && !ident(rest).is_empty() {
                names.push((at, ident(rest).to_string()));
            }
        }
    }
    names.sort();
    names.into_iter().map(|(_, name)| name).collect()
}

/// `s` after a leading `<...>` (nested brackets included), if it has one.
fn skip_generics(s: &str) -> &str {
    let s = s.trim_start();
    if !s.starts_with('<') {
        return s;
    }
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if !s[..i].ends_with('-') => {
                depth -= 1;
                if depth == 0 {
                    return s[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    ""
}

/// The last segment of the type of each inherent `impl T { ... }` block in
/// `code` (not `impl Trait for T`).
fn inherent_impls(code: &str) -> Vec<String> {
    let mut names = Vec::new();
    for at in word_at(code, "impl") {
        let rest = skip_generics(&code[at + "impl".len()..]);
        let len = rest.find(|c: char| !(is_ident_char(c) || c == ':')).unwrap_or(rest.len());
        let path = &rest[..len];
        if path.is_empty() || !skip_generics(&rest[len..]).starts_with('{') {
            continue;
        }
        names.push(path.rsplit("::").next().unwrap_or(path).to_string());
    }
    names
}

/// The import graph of the top-level modules of the crate whose sources are in `src`.
fn graph(src: &Path) -> Graph {
    let files = rust_files(src);
    let codes: Vec<(String, String)> = files
        .iter()
        .map(|f| (module_of(src, f), code(&fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())))))
        .collect();
    let modules: BTreeSet<String> = codes.iter().map(|(m, _)| m.clone()).filter(|m| m != "lib").collect();
    let lib = codes.iter().find(|(m, _)| m == "lib").map_or("", |(_, c)| c.as_str());
    let roots = reexports(lib, &modules);
    // Each type name and the first module (in path order) that defines it.
    let mut defined: BTreeMap<String, String> = BTreeMap::new();
    for (module, code) in codes.iter().filter(|(m, _)| m != "lib") {
        for name in type_definitions(code) {
            defined.entry(name).or_insert_with(|| module.clone());
        }
    }
    let mut graph: Graph = modules.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (here, code) in codes.iter().filter(|(m, _)| m != "lib") {
        for name in crate_paths(code) {
            let to = if modules.contains(&name) { Some(&name) } else { roots.get(&name) };
            if let Some(to) = to.filter(|to| *to != here) {
                graph.get_mut(here).expect("a module").insert(to.clone());
            }
        }
        // An inherent impl of another module's type: that module calls into this one.
        for name in inherent_impls(code) {
            if let Some(owner) = defined.get(&name).filter(|owner| *owner != here) {
                graph.get_mut(owner).expect("a module").insert(here.clone());
            }
        }
    }
    graph
}

/// Every elementary cycle, each once, from its smallest module.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    fn walk(graph: &Graph, start: &str, node: &str, path: &mut Vec<String>, found: &mut Vec<Vec<String>>) {
        for next in &graph[node] {
            if next == start {
                found.push(path.iter().cloned().chain([start.to_string()]).collect());
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(graph, start, next, path, found);
                path.pop();
            }
        }
    }
    let mut found = Vec::new();
    for start in graph.keys() {
        walk(graph, start, start, &mut vec![start.clone()], &mut found);
    }
    found
}

/// The graph as `scripts/module-cycles -v` prints it.
fn describe(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(m, deps)| format!("  {m} -> {}\n", deps.iter().cloned().collect::<Vec<_>>().join(", ")))
        .collect()
}

/// No import cycle among the modules of `src`; the error prints each cycle and the graph.
fn check_acyclic(src: &Path) -> Result<(), String> {
    let graph = graph(src);
    let found = cycles(&graph);
    if found.is_empty() {
        return Ok(());
    }
    let lines: Vec<String> = found.iter().map(|c| format!("cycle: {}", c.join(" -> "))).collect();
    Err(format!(
        "{}\n{} cycles among the modules of {}:\n{}",
        lines.join("\n"),
        found.len(),
        src.display(),
        describe(&graph)
    ))
}

/// No layer of `src` imports a client.
fn check_layers(src: &Path) -> Result<(), String> {
    let graph = graph(src);
    let mut wrong = Vec::new();
    for layer in LAYERS.iter().filter(|l| graph.contains_key(**l)) {
        for client in CLIENTS.iter().filter(|c| graph[*layer].contains(**c)) {
            wrong.push(format!("layer {layer} imports client {client}"));
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(format!("{}\ngraph:\n{}", wrong.join("\n"), describe(&graph)))
}

/// A struct field's visibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Vis {
    Private,
    /// `pub(crate)`, `pub(super)` or `pub(in ...)`.
    Crate,
    Pub,
}

/// `field` without the attributes before it (`#[allow(...)]`).
fn without_attributes(field: &str) -> &str {
    let mut field = field.trim();
    while field.starts_with("#[") {
        let mut depth = 0;
        let end = field.char_indices().find_map(|(i, c)| {
            depth += i32::from(c == '[') - i32::from(c == ']');
            (c == ']' && depth == 0).then_some(i)
        });
        field = end.map_or("", |i| field[i + 1..].trim());
    }
    field
}

/// The fields (`Struct::field`, or `Struct::0` in a tuple struct) of the
/// structs `code` defines, with their visibility; structs that derive `Copy`
/// are values, not state, and left out.
fn struct_fields(code: &str) -> Vec<(String, Vis)> {
    let mut out = Vec::new();
    for at in word_at(code, "struct") {
        let name = ident(&code[at + "struct".len()..]);
        // The attributes before the struct: back to the end of the previous item.
        let item_start = code[..at].rfind([';', '}']).map_or(0, |i| i + 1);
        let attrs = &code[item_start..at];
        let value = attrs.contains("derive(") && !word_at(attrs, "Copy").is_empty();
        if name.is_empty() || value {
            continue;
        }
        let rest = skip_generics(&code[at + "struct".len()..].trim_start()[name.len()..]);
        let rest = rest.split_once(['{', '(', ';']).map_or("", |(head, _)| &rest[head.len()..]);
        let (open, close) = match rest.chars().next() {
            Some('{') => ('{', '}'),
            Some('(') => ('(', ')'),
            _ => continue, // a unit struct
        };
        // The body up to the matching bracket, cut at the commas between fields.
        let (mut depth, mut start, mut index) = (0i32, 1, 0);
        for (i, c) in rest.char_indices() {
            let field_end = match c {
                '{' | '(' | '[' | '<' => {
                    depth += 1;
                    false
                }
                '>' if rest[..i].ends_with('-') => false,
                '}' | ')' | ']' | '>' => {
                    depth -= 1;
                    depth == 0 && c == close
                }
                ',' => depth == 1,
                _ => false,
            };
            if !field_end {
                continue;
            }
            let field = without_attributes(&rest[start..i]);
            start = i + 1;
            if !field.is_empty() {
                let (vis, decl) = if let Some(d) = field.strip_prefix("pub(") {
                    (Vis::Crate, d.split_once(')').map_or("", |(_, d)| d))
                } else if let Some(d) = field.strip_prefix("pub ") {
                    (Vis::Pub, d)
                } else {
                    (Vis::Private, field)
                };
                let field_name = if open == '{' { ident(decl).to_string() } else { index.to_string() };
                out.push((format!("{name}::{field_name}"), vis));
                index += 1;
            }
            if c == close {
                break;
            }
        }
    }
    out
}

/// The fields of the structs of the state modules of `src`.
fn state_fields(src: &Path) -> Vec<(String, Vis)> {
    let mut out = Vec::new();
    for file in rust_files(src) {
        if STATE_MODULES.contains(&module_of(src, &file).as_str()) {
            out.extend(struct_fields(&code(&fs::read_to_string(&file).expect("a source file"))));
        }
    }
    out
}

/// No field of a layer's struct in `src` is plain `pub` beyond
/// [`PUB_FIELDS_ALLOWED`], and exactly `crate_fields` are `pub(crate)`.
fn check_fields(src: &Path, crate_fields: usize) -> Result<(), String> {
    let fields = state_fields(src);
    let named = |vis: Vis| fields.iter().filter(|(_, v)| *v == vis).map(|(f, _)| f.as_str()).collect::<Vec<_>>();
    let public: Vec<&str> = named(Vis::Pub).into_iter().filter(|f| !PUB_FIELDS_ALLOWED.contains(f)).collect();
    let crate_visible = named(Vis::Crate);
    let mut wrong = Vec::new();
    if !public.is_empty() {
        wrong.push(format!("plain `pub` fields in the layers' state: {}", public.join(", ")));
    }
    if crate_visible.len() > crate_fields {
        wrong.push(format!(
            "{} `pub(crate)` fields in the layers' state, more than the {crate_fields} allowed: make the new ones \
             private behind methods",
            crate_visible.len()
        ));
    } else if crate_visible.len() < crate_fields {
        wrong.push(format!(
            "{} `pub(crate)` fields in the layers' state, fewer than the {crate_fields} recorded: lower CRATE_FIELDS \
             in tests/module_graph.rs to {0}",
            crate_visible.len()
        ));
    }
    if wrong.is_empty() {
        return Ok(());
    }
    Err(format!("{}\n`pub(crate)` fields: {}", wrong.join("\n"), crate_visible.join(", ")))
}

#[test]
fn the_module_graph_has_no_cycle() {
    check_acyclic(&src_dir()).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn the_layers_import_no_client() {
    check_layers(&src_dir()).unwrap_or_else(|e| panic!("{e}"));
    // The checker sees imports: every layer is used, by a client or by the
    // layers assembled in `backend` (the clients reach the controller through
    // `Backend` without naming it).
    let graph = graph(&src_dir());
    let used: BTreeSet<&String> = CLIENTS.iter().chain(&["backend"]).flat_map(|c| &graph[*c]).collect();
    for layer in LAYERS {
        assert!(layer == "backend" || used.iter().any(|u| *u == layer), "nothing uses {layer}: {used:?}");
        assert!(graph[layer].iter().all(|m| !CLIENTS.contains(&m.as_str())), "{layer} imports a client");
    }
}

#[test]
fn the_layers_state_is_not_public() {
    check_fields(&src_dir(), CRATE_FIELDS).unwrap_or_else(|e| panic!("{e}"));
    let fields = state_fields(&src_dir());
    assert!(fields.iter().any(|(f, v)| f == "Backend::controller" && *v == Vis::Crate), "the reader finds Backend");
    for allowed in PUB_FIELDS_ALLOWED {
        assert!(fields.iter().any(|(f, v)| f == allowed && *v == Vis::Pub), "{allowed} is no longer `pub`: drop it");
    }
}

/// The graph here is the one `scripts/module-cycles` finds, edge for edge.
#[test]
fn the_graph_is_the_one_the_script_finds() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/module-cycles");
    let out = std::process::Command::new("python3")
        .arg(&script)
        .arg("-v")
        .arg(src_dir())
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 {}: {e}", script.display()));
    let printed = String::from_utf8_lossy(&out.stdout);
    let edges: String =
        printed.lines().filter(|l| l.starts_with("  ")).map(|l| format!("{}\n", l.trim_end())).collect();
    let ours: String = describe(&graph(&src_dir())).lines().map(|l| format!("{}\n", l.trim_end())).collect();
    assert_eq!(ours, edges, "scripts/module-cycles printed:\n{printed}");
}

// ---------------------------------------------------------------------------
// The checker on module trees written for the purpose
// ---------------------------------------------------------------------------

/// A scratch folder for `name`, empty.
fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("module_graph").join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// A source tree of `files` (path under src, text) in a scratch folder; returns its src.
fn tree(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let src = scratch(name).join("src");
    for (path, text) in files {
        let path = src.join(path);
        fs::create_dir_all(path.parent().expect("a parent")).expect("a folder");
        fs::write(&path, text).expect("a file");
    }
    src
}

/// Copies the folder `from` into `to`.
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("a folder");
    for entry in fs::read_dir(from).expect("a folder") {
        let path = entry.expect("an entry").path();
        let target = to.join(path.file_name().expect("a name"));
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            fs::copy(&path, &target).expect("a copy");
        }
    }
}

/// Puts `line` at the top of `file` (the checks read text, not compiled code).
fn prepend(file: &Path, line: &str) {
    let text = fs::read_to_string(file).expect("a source file");
    fs::write(file, format!("{line}\n{text}")).expect("written");
}

#[test]
fn crate_paths_reads_groups_and_plain_paths() {
    let names =
        crate_paths("use crate::{front::{self, x}, zone::Y};\nlet a = crate::data::DataStore::of(l); $crate::x;");
    assert_eq!(names, ["front", "zone", "data", "x"]);
    assert!(crate_paths("let notcrate::x = 1;").is_empty());
}

#[test]
fn a_cycle_of_uses_is_found_and_printed() {
    let src = tree(
        "uses",
        &[
            ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
            ("a.rs", "use crate::b::B;\n"),
            ("b/mod.rs", "use crate::{c::{self, C}, a};\n"),
            ("c.rs", "// use crate::a; is a comment\npub struct C;\n#[cfg(test)]\nmod tests { use crate::a; }\n"),
        ],
    );
    let e = check_acyclic(&src).unwrap_err();
    assert!(e.starts_with("cycle: a -> b -> a\n1 cycles"), "{e}");
    fs::write(src.join("b/mod.rs"), "use crate::c::C;\n").unwrap();
    assert_eq!(check_acyclic(&src), Ok(()), "comments and unit tests do not count");
    assert_eq!(describe(&graph(&src)), "  a -> b\n  b -> c\n  c -> \n");
}

#[test]
fn an_inherent_impl_of_another_modules_type_is_a_call_into_this_one() {
    let src = tree(
        "impls",
        &[
            ("lib.rs", "pub mod a;\npub mod b;\npub use a::Thing;\n"),
            ("a.rs", "pub struct Thing;\npub trait Act {}\n"),
            ("b.rs", "use crate::Thing;\nimpl crate::a::Act for Thing {}\nimpl<T: Into<u8>> Vec<T> {}\n"),
        ],
    );
    assert_eq!(describe(&graph(&src)), "  a -> \n  b -> a\n", "a trait impl and a foreign type's impl do not count");
    assert_eq!(check_acyclic(&src), Ok(()));
    fs::write(src.join("b.rs"), "use crate::Thing;\nimpl Thing {\n    fn act(&self) {}\n}\n").unwrap();
    let e = check_acyclic(&src).unwrap_err();
    assert!(e.starts_with("cycle: a -> b -> a\n"), "{e}");
}

#[test]
fn a_layer_importing_a_client_is_reported() {
    let src = tree(
        "layers",
        &[
            ("lib.rs", "pub mod zone;\npub mod management;\n"),
            ("zone/mod.rs", "use crate::management::Phase;\n"),
            ("management/mod.rs", "pub struct Phase;\n"),
        ],
    );
    assert_eq!(check_layers(&src).unwrap_err().lines().next(), Some("layer zone imports client management"));
}

#[test]
fn field_visibility_is_read_from_named_and_tuple_structs() {
    let code = code(
        "use x::y;\n\
         /// State.\n\
         #[derive(Debug, Clone)]\n\
         pub(crate) struct State<T: Ord> {\n\
             pub(crate) map: BTreeMap<(u32, u64), T>,\n\
             /// Doc, with a comma.\n\
             #[allow(dead_code)]\n\
             hidden: Vec<[u8; 4]>,\n\
             pub f: fn(u8) -> u8,\n\
             pub(super) last: u8\n\
         }\n\
         struct Ready(pub(crate) Vec<(u64, u64)>, u8);\n\
         #[derive(Clone, Copy)]\n\
         pub struct Value { pub x: u32 }\n\
         struct Unit;\n",
    );
    let fields = struct_fields(&code);
    let expect = [
        ("State::map", Vis::Crate),
        ("State::hidden", Vis::Private),
        ("State::f", Vis::Pub),
        ("State::last", Vis::Crate),
        ("Ready::0", Vis::Crate),
        ("Ready::1", Vis::Private),
    ];
    assert_eq!(fields, expect.map(|(f, v)| (f.to_string(), v)), "a `Copy` value and a unit struct are left out");
}

/// The checks on a copy of this crate's sources: they pass, then each fails
/// once the copy has a violation of its rule.
#[test]
fn each_check_fails_on_a_violation_in_a_copy_of_the_sources() {
    let src = scratch("copy").join("src");
    copy_dir(&src_dir(), &src);
    assert_eq!(check_acyclic(&src), Ok(()));
    assert_eq!(check_layers(&src), Ok(()));
    assert_eq!(check_fields(&src, CRATE_FIELDS), Ok(()));

    prepend(&src.join("zone/mod.rs"), "use crate::management;");
    let e = check_acyclic(&src).unwrap_err();
    assert!(e.lines().any(|l| l == "cycle: management -> zone -> management"), "{e}");
    assert!(check_layers(&src).unwrap_err().starts_with("layer zone imports client management\n"));

    prepend(&src.join("controller/mod.rs"), "pub(crate) struct Leak { pub bytes: u64 }");
    let e = check_fields(&src, CRATE_FIELDS).unwrap_err();
    assert!(e.starts_with("plain `pub` fields in the layers' state: Leak::bytes\n"), "{e}");

    let controller = fs::read_to_string(src.join("controller/mod.rs")).unwrap();
    fs::write(src.join("controller/mod.rs"), controller.replacen("pub bytes", "pub(crate) bytes", 1)).unwrap();
    let e = check_fields(&src, CRATE_FIELDS).unwrap_err();
    assert!(e.contains("more than the"), "{e}");
}
