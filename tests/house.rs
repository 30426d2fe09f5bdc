//! The house's rules that a reader of the code relies on, checked over the sources:
//!
//! - No function outside tests runs past 80 lines (split it where its steps are).
//! - No import cycle in `src/` or `app/src/`: no two files name each other, directly or round a loop. A file
//!   *names* another when a `use` (grouped `{…}` included) or an inline `crate::`, `super::` or
//!   `self::` path before its `#[cfg(test)]` module resolves to it: to the deepest module file
//!   the path reaches. A `mod.rs` re-exporting a child names the child, and a path through that
//!   re-export names the `mod.rs`; so a child imports the leaf file that defines an item, never
//!   its parent's re-export. A lower module never names a higher one: shared types move down.
//!   A cycle is a strongly connected component (Tarjan) of that graph, reported with the
//!   edges that close it and the paths behind them. None is allowed. An inline module
//!   (`mod ssr { … }`) is a module of its own: `super::` inside it is its file's module.
//! - No adapter (the API, the pages, the CLI, the front end) names a storage type: the records
//!   a use case answers with are the domain's or the service's, so a column renamed in storage
//!   never changes what agents or people are shown.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// Longest a function may be, from its `fn` line to its closing brace.
const MAX_FN_LINES: usize = 80;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The name of the function a line starts, with the line's indentation.
fn fn_start(line: &str) -> Option<(usize, &str)> {
    let indent = line.len() - line.trim_start().len();
    let mut rest = line.trim_start();
    for word in [
        "pub(crate) ",
        "pub(super) ",
        "pub ",
        "const ",
        "async ",
        "unsafe ",
    ] {
        rest = rest.strip_prefix(word).unwrap_or(rest);
    }
    let rest = rest.strip_prefix("fn ")?;
    let name = rest
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()?;
    Some((indent, name))
}

/// Functions longer than [`MAX_FN_LINES`] in `text`, before its `#[cfg(test)]` module.
fn long_functions(text: &str) -> Vec<(String, usize)> {
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| l.trim() != "#[cfg(test)]")
        .collect();
    let mut long = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((indent, name)) = fn_start(lines[i]) else {
            i += 1;
            continue;
        };
        let Some(open) = (i..lines.len()).find(|&j| {
            let l = lines[j].trim_end();
            l.ends_with('{') || l.ends_with(';')
        }) else {
            break;
        };
        if lines[open].trim_end().ends_with(';') {
            i = open + 1;
            continue;
        }
        let close = format!("{}}}", " ".repeat(indent));
        let end = (open + 1..lines.len())
            .find(|&k| lines[k].trim_end() == close)
            .unwrap_or(lines.len() - 1);
        let length = end - i + 1;
        if length > MAX_FN_LINES {
            long.push((format!("{name} (line {})", i + 1), length));
        }
        i += 1;
    }
    long
}

#[test]
fn no_function_outside_tests_is_over_80_lines() {
    let mut files = Vec::new();
    rust_files(Path::new("src"), &mut files);
    rust_files(Path::new("app/src"), &mut files);
    let mut long = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read");
        for (name, length) in long_functions(&text) {
            long.push(format!("{}: {name}: {length} lines", file.display()));
        }
    }
    assert!(long.is_empty(), "split these:\n{}", long.join("\n"));
}

#[test]
fn the_length_check_sees_a_long_function() {
    let body = "    let x = 1;\n".repeat(MAX_FN_LINES);
    let long = format!("pub async fn big() {{\n{body}}}\nfn small() {{\n}}\n");
    assert_eq!(
        long_functions(&long),
        [("big (line 1)".to_owned(), MAX_FN_LINES + 2)]
    );
    let tested = format!("#[cfg(test)]\nmod tests {{\n{long}}}\n");
    assert!(long_functions(&tested).is_empty());
}

// ----- No import cycle -------------------------------------------------------------------

/// One source file: its path under the crate's `src/` (`service/queue.rs`) and its text.
struct Source {
    path: String,
    text: String,
}

/// Which files each file names, and by which paths (`from → to → paths`).
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// Every `.rs` file under `root`, with its path relative to `root` (`/`-separated).
fn sources(root: &Path) -> Vec<Source> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files
        .into_iter()
        .map(|file| {
            let relative = file.strip_prefix(root).expect("under the root");
            let parts: Vec<_> = relative.iter().map(|p| p.to_string_lossy()).collect();
            Source {
                path: parts.join("/"),
                text: std::fs::read_to_string(&file).expect("read"),
            }
        })
        .collect()
}

/// The module a file is: `service/queue.rs` is `service::queue`, `service/mod.rs` is `service`,
/// `lib.rs` the crate root.
fn module_of(path: &str) -> Vec<String> {
    let mut segments: Vec<String> = path
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if segments
        .last()
        .is_some_and(|s| matches!(s.as_str(), "mod" | "lib" | "main"))
    {
        segments.pop();
    }
    segments
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The text the check reads: before the `#[cfg(test)]` module, each line cut at its `//`.
fn code_of(text: &str) -> String {
    let text = text.find("#[cfg(test)]").map_or(text, |i| &text[..i]);
    text.lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether `keyword` starts a word at `i` (nothing word-like just before it).
fn word_at(code: &[u8], i: usize, keyword: &str) -> bool {
    code[i..].starts_with(keyword.as_bytes()) && (i == 0 || !is_word(code[i - 1]))
}

/// What each `use` statement says: the text between `use` and its `;` (`pub use` included).
fn use_bodies(code: &str) -> Vec<&str> {
    let bytes = code.as_bytes();
    let mut bodies = Vec::new();
    let mut i = 0;
    while i + 3 < bytes.len() {
        if word_at(bytes, i, "use") && bytes[i + 3].is_ascii_whitespace() {
            let start = i + 3;
            match code[start..].find(';') {
                Some(len) if !code[start..start + len].trim().is_empty() => {
                    bodies.push(&code[start..start + len]);
                    i = start + len + 1;
                    continue;
                }
                _ => {}
            }
        }
        i += 1;
    }
    bodies
}

/// The parts of a group's inside, split at its own commas (not those of nested groups).
fn group_items(inner: &str) -> Vec<&str> {
    let (mut items, mut depth, mut from) = (Vec::new(), 0usize, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&inner[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[from..]);
    items
}

/// Every path a `use` body names, groups expanded: `a::{b, c::{d as e}}` is `a::b`, `a::c::d`.
fn expand(prefix: &[String], body: &str, out: &mut Vec<Vec<String>>) {
    let body = body.trim();
    if let Some(inner) = body.strip_prefix('{').and_then(|b| b.strip_suffix('}')) {
        for item in group_items(inner) {
            if !item.trim().is_empty() {
                expand(prefix, item, out);
            }
        }
    } else if let Some(i) = body.find("::{") {
        let mut longer = prefix.to_vec();
        longer.extend(body[..i].split("::").map(str::to_owned));
        expand(&longer, &body[i + 2..], out);
    } else {
        let path = body.split(" as ").next().unwrap_or(body);
        let mut segments = prefix.to_vec();
        segments.extend(
            path.split("::")
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        );
        out.push(segments);
    }
}

/// Paths written inline from `crate::`, `super::` or `self::` (`super::queue::drift(…)`),
/// each with where it starts.
fn inline_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let bytes = code.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let Some(keyword) = ["crate", "super", "self"]
            .into_iter()
            .find(|k| word_at(bytes, i, k))
        else {
            i += 1;
            continue;
        };
        let mut segments = vec![keyword.to_owned()];
        let mut j = i + keyword.len();
        while bytes[j..].starts_with(b"::") && bytes.get(j + 2).copied().is_some_and(is_word) {
            let start = j + 2;
            let len = bytes[start..].iter().take_while(|&&b| is_word(b)).count();
            segments.push(code[start..start + len].to_owned());
            j = start + len;
        }
        if segments.len() > 1 {
            paths.push((i, segments));
            i = j;
        } else {
            i += 1;
        }
    }
    paths
}

/// Where a path written in module `here` starts, and the rest of it; `None` for a path that
/// leaves the crate (`std::…`, another crate) or names an item, not a module.
fn anchor(
    here: &[String],
    path: &[String],
    modules: &HashMap<Vec<String>, String>,
) -> Option<(Vec<String>, Vec<String>)> {
    let (first, rest) = path.split_first()?;
    match first.as_str() {
        "crate" => Some((Vec::new(), rest.to_vec())),
        "self" => Some((here.to_vec(), rest.to_vec())),
        "super" => {
            let mut base = here[..here.len().saturating_sub(1)].to_vec();
            let ups = rest.iter().take_while(|s| *s == "super").count();
            base.truncate(base.len().saturating_sub(ups));
            Some((base, rest[ups..].to_vec()))
        }
        _ => {
            let mut child = here.to_vec();
            child.push(first.clone());
            modules
                .contains_key(&child)
                .then(|| (here.to_vec(), path.to_vec()))
        }
    }
}

/// The inline modules of `code` (`mod ssr { … }`): each one's name and the bytes between its
/// braces, outer ones first.
fn inline_modules(code: &str) -> Vec<(String, std::ops::Range<usize>)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    for (i, _) in code.match_indices("mod ") {
        if !word_at(bytes, i, "mod") {
            continue;
        }
        let rest = &code[i + 4..];
        let name_len = rest.bytes().take_while(|&b| is_word(b)).count();
        let after = &rest[name_len..];
        if name_len == 0 || !after.trim_start().starts_with('{') {
            continue;
        }
        let open = i + 4 + name_len + (after.len() - after.trim_start().len());
        let mut depth = 0usize;
        let close = (open..bytes.len()).find(|&j| {
            match bytes[j] {
                b'{' => depth += 1,
                b'}' => depth -= 1,
                _ => {}
            }
            depth == 0
        });
        found.push((
            rest[..name_len].to_owned(),
            open..close.unwrap_or(bytes.len()),
        ));
    }
    found
}

/// The module code at byte `at` is in: the file's, then every inline module around it.
fn module_at(
    file: &[String],
    spans: &[(String, std::ops::Range<usize>)],
    at: usize,
) -> Vec<String> {
    let mut here = file.to_vec();
    here.extend(
        (spans.iter())
            .filter(|(_, range)| range.contains(&at))
            .map(|(name, _)| name.clone()),
    );
    here
}

/// The file of the deepest module `path` reaches from `base`.
fn resolve<'m>(
    base: Vec<String>,
    rest: &[String],
    modules: &'m HashMap<Vec<String>, String>,
) -> Option<&'m String> {
    let mut full = base;
    full.extend(rest.iter().filter(|s| *s != "self").cloned());
    (0..=full.len()).rev().find_map(|n| modules.get(&full[..n]))
}

/// The import graph of a crate's files: which file names which, by which paths.
fn import_graph(files: &[Source]) -> Graph {
    let mut modules = HashMap::new();
    for file in files {
        let module = module_of(&file.path);
        // The library's root wins over the binary's: `crate::` in the library means lib.rs.
        if file.path != "main.rs" || !modules.contains_key(&module) {
            modules.insert(module, file.path.clone());
        }
    }
    let mut graph = Graph::new();
    for file in files {
        let code = code_of(&file.text);
        let spans = inline_modules(&code);
        let file_module = module_of(&file.path);
        let mut paths = Vec::new();
        for body in use_bodies(&code) {
            let at = body.as_ptr() as usize - code.as_ptr() as usize;
            let mut expanded = Vec::new();
            expand(&[], body, &mut expanded);
            paths.extend(expanded.into_iter().map(|path| (at, path)));
        }
        paths.extend(inline_paths(&code));
        let edges = graph.entry(file.path.clone()).or_default();
        for (at, path) in paths {
            let here = module_at(&file_module, &spans, at);
            let Some((base, rest)) = anchor(&here, &path, &modules) else {
                continue;
            };
            match resolve(base, &rest, &modules) {
                Some(target) if *target != file.path => {
                    let names = edges.entry(target.clone()).or_default();
                    names.insert(path.join("::"));
                }
                _ => {}
            }
        }
    }
    graph
}

/// Tarjan's strongly connected components, as the walk's state.
#[derive(Default)]
struct Tarjan<'g> {
    index: HashMap<&'g str, usize>,
    low: HashMap<&'g str, usize>,
    stack: Vec<&'g str>,
    on_stack: BTreeSet<&'g str>,
    components: Vec<Vec<String>>,
}

impl<'g> Tarjan<'g> {
    fn visit(&mut self, graph: &'g Graph, v: &'g str) {
        let n = self.index.len();
        self.index.insert(v, n);
        self.low.insert(v, n);
        self.stack.push(v);
        self.on_stack.insert(v);
        for w in graph.get(v).into_iter().flat_map(BTreeMap::keys) {
            let w = w.as_str();
            if !self.index.contains_key(w) {
                self.visit(graph, w);
                let low = self.low[v].min(self.low[w]);
                self.low.insert(v, low);
            } else if self.on_stack.contains(w) {
                let low = self.low[v].min(self.index[w]);
                self.low.insert(v, low);
            }
        }
        if self.low[v] == self.index[v] {
            let mut component = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack.remove(w);
                component.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                self.components.push(component);
            }
        }
    }
}

/// Every import cycle: the files of each strongly connected component of more than one file.
fn import_cycles(graph: &Graph) -> Vec<Vec<String>> {
    let mut tarjan = Tarjan::default();
    for v in graph.keys() {
        if !tarjan.index.contains_key(v.as_str()) {
            tarjan.visit(graph, v);
        }
    }
    let mut components = tarjan.components;
    components.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    components
}

/// A cycle as the check reports it: its files, then each edge inside it with its paths.
fn describe_cycle(graph: &Graph, component: &[String]) -> String {
    let mut text = format!("{} files: {}\n", component.len(), component.join(", "));
    for from in component {
        for (to, names) in &graph[from] {
            if component.contains(to) {
                let names: Vec<_> = names.iter().map(String::as_str).collect();
                text.push_str(&format!("    {from} -> {to}: {}\n", names.join(", ")));
            }
        }
    }
    text
}

#[test]
fn no_import_cycle() {
    let mut cycles = Vec::new();
    for root in ["src", "app/src"] {
        let graph = import_graph(&sources(Path::new(root)));
        cycles.extend(
            (import_cycles(&graph).iter())
                .map(|c| format!("{root}/: {}", describe_cycle(&graph, c))),
        );
    }
    assert!(
        cycles.is_empty(),
        "import cycles (a lower module never names a higher one; move what both need down \
         into a leaf file):\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_cycle_check_sees_a_planted_cycle() {
    let source = |path: &str, text: &str| Source {
        path: path.into(),
        text: text.into(),
    };
    let files = [
        source("lib.rs", "pub mod a;\npub mod b;\npub mod c;\npub mod p;\n"),
        // a ↔ b through a grouped `use` and an inline `super::` path.
        source(
            "a.rs",
            "use crate::{b::{self, B as Bee}, p::R};\npub struct A;\n",
        ),
        source("b.rs", "pub struct B;\nfn f() -> super::a::A { todo!() }\n"),
        // c names a one way; its comment and its tests do not count.
        source(
            "c.rs",
            "use std::fmt;\nuse super::a::A;\n// use crate::b::B;\n\
             #[cfg(test)]\nmod tests { use crate::a::A; }\n",
        ),
        // A parent re-exporting its child, which names an item of the parent.
        source("p/mod.rs", "mod q;\npub use q::Q;\npub struct R;\n"),
        source("p/q.rs", "use super::R;\npub struct Q;\n"),
        // Inside an inline module, `super::` is its file's module: d names itself, not lib.rs.
        source(
            "d.rs",
            "mod inner {\n    pub fn f() -> super::D { todo!() }\n}\npub struct D;\n",
        ),
    ];
    let graph = import_graph(&files);
    assert_eq!(
        import_cycles(&graph),
        [vec!["a.rs", "b.rs"], vec!["p/mod.rs", "p/q.rs"]]
    );
    let named: Vec<_> = graph["a.rs"]["b.rs"].iter().map(String::as_str).collect();
    assert_eq!(named, ["crate::b::B", "crate::b::self"]);
    assert_eq!(
        describe_cycle(&graph, &["p/mod.rs".into(), "p/q.rs".into()]),
        "2 files: p/mod.rs, p/q.rs\n    p/mod.rs -> p/q.rs: q::Q\n    p/q.rs -> p/mod.rs: super::R\n"
    );
    assert!(
        !graph["c.rs"].contains_key("b.rs"),
        "a comment names nothing"
    );
    assert!(graph["c.rs"].contains_key("a.rs") && graph["a.rs"].contains_key("p/mod.rs"));
    assert!(
        graph["d.rs"].is_empty(),
        "an inline module's super:: is its own file: {:?}",
        graph["d.rs"]
    );
}

/// The adapters: what they name reaches agents and people (JSON, pages, the command line).
const ADAPTERS: [&str; 4] = ["src/api", "src/web", "src/cli", "app/src"];

/// Adapter files that may name storage, each with the one path they may name there and why:
/// composition roots that wire the database up rather than use cases that read it.
/// (`src/startup.rs` and `src/serve.rs`, the server's composition roots, are not adapters:
/// they open the store and hand it to the service.)
const STORAGE_WIRING: &[(&str, &str, &str)] = &[(
    "src/cli/mod.rs",
    "crate::storage::schema::",
    "`countersign migrate` administers the database itself (applies migrations, grants a \
     serving role what it needs); no use case does that, so the CLI wires it as startup does",
)];

/// The lines of `text` (the file at `path`) that name storage, but what [`STORAGE_WIRING`]
/// lets that file name; comments aside.
fn storage_mentions(path: &str, text: &str) -> Vec<String> {
    let allowed: Vec<&str> = (STORAGE_WIRING.iter())
        .filter(|(file, _, _)| *file == path)
        .map(|(_, prefix, _)| *prefix)
        .collect();
    let names_storage = |line: &str| {
        let mut rest = line.to_owned();
        for prefix in &allowed {
            rest = rest.replace(prefix, "");
        }
        rest.contains("storage::") || rest.contains("crate::storage")
    };
    (text.lines().enumerate())
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .filter(|(_, line)| names_storage(line))
        .map(|(i, line)| format!("{path}:{}: {}", i + 1, line.trim()))
        .collect()
}

#[test]
fn adapters_name_no_storage_type() {
    let mut files = Vec::new();
    for dir in ADAPTERS {
        rust_files(Path::new(dir), &mut files);
    }
    let mut named = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read");
        named.extend(storage_mentions(&file.display().to_string(), &text));
    }
    assert!(
        named.is_empty(),
        "adapters name the domain's or the service's types, never storage's (map rows into a \
         domain record in storage, or list a composition root in STORAGE_WIRING with why):\n{}",
        named.join("\n")
    );
    for (file, prefix, why) in STORAGE_WIRING {
        let text = std::fs::read_to_string(file).expect("a listed file");
        assert!(
            text.contains(prefix),
            "{file} no longer names {prefix}: drop it from STORAGE_WIRING ({why})"
        );
    }
}

#[test]
fn the_storage_check_sees_a_storage_type() {
    let text = "use crate::domain::record::ProposalRecord;\n\
                /// Not `crate::storage::proposals`: the domain's.\n\
                use crate::storage::proposals::ProposalRecord;\n\
                fn f(e: crate::storage::StorageError) {}\n";
    assert_eq!(
        storage_mentions("src/api/views.rs", text),
        [
            "src/api/views.rs:3: use crate::storage::proposals::ProposalRecord;",
            "src/api/views.rs:4: fn f(e: crate::storage::StorageError) {}",
        ]
    );
    let wiring = "use crate::storage::schema::{RoleName, grant_serving};\n";
    assert!(storage_mentions("src/cli/mod.rs", wiring).is_empty());
    assert_eq!(storage_mentions("src/cli/accounts.rs", wiring).len(), 1);
}
