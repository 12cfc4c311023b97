//! No import cycle among the engine's modules: each module uses only
//! modules below it, so any one can be read, tested and changed knowing
//! only what is under it.
//!
//! `import_cycles` is generic over a source folder and the module path it
//! holds (`src/` is `crate`, `src/routes/` is `crate::routes`), so the same
//! check runs over the engine, the server's layers, and the modules of the
//! server's domain, folder by folder.

#[path = "support/source.rs"]
mod source;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use source::without_tests;

/// One use of a module by another: where it is, for the message.
#[derive(Debug, Clone)]
struct Use {
    file: PathBuf,
    line: usize,
}

/// The engine crate's folder in the checkout being tested: the one cargo
/// names when it runs the test (a test binary reused from a build of another
/// checkout would otherwise read that checkout's sources), else the one it
/// was built from.
fn engine_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

/// Which module uses which: `graph[a][b]` is the first place `a` uses `b`.
type Graph = BTreeMap<String, BTreeMap<String, Use>>;

/// The modules that `folder` (the module `base`, e.g. `crate` or
/// `crate::routes`) holds directly, each with its source files: `x.rs`,
/// and everything under `x/`. The folder's own `lib.rs`, `main.rs` or
/// `mod.rs` is the parent module, which declares and re-exports its
/// children, and is not one of them.
fn modules(folder: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    fn all_sources(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                all_sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut modules: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            all_sources(&path, modules.entry(name).or_default());
        } else if path.extension().is_some_and(|e| e == "rs")
            && !["lib", "main", "mod"].contains(&name.as_str())
        {
            modules.entry(name).or_default().push(path);
        }
    }
    modules
}

/// The identifiers a path names right after `prefix::`: one for
/// `prefix::a::…`, several for `prefix::{a::…, b, c::{…}}`.
fn named_after(text: &str) -> Vec<&str> {
    fn identifier(s: &str) -> &str {
        let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
        &s[..end]
    }
    let Some(group) = text.strip_prefix('{') else { return vec![identifier(text)] };
    let mut names = Vec::new();
    let mut depth = 0;
    let mut start = 0;
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                names.push(identifier(group[start..i].trim()));
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                names.push(identifier(group[start..i].trim()));
                start = i + 1;
            }
            _ => {}
        }
    }
    names
}

/// The import graph among the modules `folder` holds, as module `base`.
/// A module uses another where its code names `base::other` (in a `use` or
/// inline), or `super::other` in a file directly below the folder. Line
/// comments and `#[cfg(test)]` modules are skipped; a `use` group split
/// over lines is read whole.
fn import_graph(folder: &Path, base: &str) -> Graph {
    let modules = modules(folder);
    let mut graph: Graph = modules.keys().map(|name| (name.clone(), BTreeMap::new())).collect();
    for (name, files) in &modules {
        for file in files {
            let parent_is_base = file.parent() == Some(folder)
                || (file.file_name().is_some_and(|f| f == "mod.rs")
                    && file.parent().and_then(Path::parent) == Some(folder));
            let mut prefixes = vec![format!("{base}::")];
            if parent_is_base {
                prefixes.push("super::".to_string());
            }
            // A test module may use what its module does not (`super::*`
            // names the module itself there): only the module's own code counts.
            let joined = without_tests(&std::fs::read_to_string(file).unwrap());
            for prefix in &prefixes {
                for (at, _) in joined.match_indices(prefix.as_str()) {
                    let before = joined[..at].chars().next_back();
                    if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == ':') {
                        continue; // `$crate::`, `my_crate::`, `a::crate::`: not this path
                    }
                    let line = joined[..at].matches('\n').count() + 1;
                    for used in named_after(&joined[at + prefix.len()..]) {
                        if used != name && modules.contains_key(used) {
                            graph
                                .get_mut(name)
                                .unwrap()
                                .entry(used.to_string())
                                .or_insert_with(|| Use { file: file.clone(), line });
                        }
                    }
                }
            }
        }
    }
    graph
}

/// Every cycle of the graph, one per strongly connected component of more
/// than one module, each as a path `a -> b -> … -> a` with where each
/// module uses the next.
fn import_cycles(folder: &Path, base: &str) -> Vec<String> {
    cycles_of(&import_graph(folder, base))
}

/// Every cycle of `graph`, as `import_cycles` names them.
fn cycles_of(graph: &Graph) -> Vec<String> {
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(at) = stack.pop() {
            if at == to {
                return true;
            }
            if seen.insert(at.clone()) {
                stack.extend(graph[&at].keys().cloned());
            }
        }
        false
    };
    let mut placed = BTreeSet::new();
    let mut cycles = Vec::new();
    for start in graph.keys() {
        if placed.contains(start) {
            continue;
        }
        // The component of `start`: the modules it reaches that reach it.
        let component: BTreeSet<&String> =
            graph.keys().filter(|other| reaches(start, other) && reaches(other, start)).collect();
        placed.extend(component.iter().map(|m| m.to_string()));
        if component.len() < 2 {
            continue;
        }
        // One cycle through `start`, by a shortest way back within the component.
        let mut previous: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut back = None;
        while let Some(at) = queue.pop_front() {
            for next in graph[at].keys().filter(|n| component.contains(n)) {
                if next == start {
                    back = Some(at);
                    break;
                }
                if !previous.contains_key(next) {
                    previous.insert(next, at);
                    queue.push_back(next);
                }
            }
            if back.is_some() {
                break;
            }
        }
        let mut path = vec![start];
        let mut at = back.expect("a component of two or more modules has a cycle through each");
        while at != start {
            path.push(at);
            at = previous[at];
        }
        path[1..].reverse();
        path.push(start);
        let steps: Vec<String> = path
            .windows(2)
            .map(|pair| {
                let Use { file, line } = &graph[pair[0]][pair[1]];
                format!("  {} uses {} at {}:{line}", pair[0], pair[1], file.display())
            })
            .collect();
        let names: Vec<&str> = path.iter().map(|m| m.as_str()).collect();
        let others: Vec<&str> = component.iter().map(|m| m.as_str()).collect();
        cycles.push(format!(
            "{} (modules in the cycle: {})\n{}",
            names.join(" -> "),
            others.join(", "),
            steps.join("\n")
        ));
    }
    cycles
}

#[test]
fn the_engines_modules_import_no_cycle() {
    let src = engine_dir().join("src");
    let cycles = import_cycles(&src, "crate");
    assert!(cycles.is_empty(), "import cycles among the engine's modules:\n{}", cycles.join("\n"));
    // The check did read the engine: the writer uses the commands.
    assert!(import_graph(&src, "crate")["writer"].contains_key("commands"));
}

#[test]
fn a_cycle_is_found_and_named_with_where_each_module_uses_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let write = |path: &str, text: &str| {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "lib.rs",
        "pub mod a;\npub mod b;\npub mod c;\npub mod d;\nuse crate::a::A; // the root: not a module\n",
    );
    write("a.rs", "// crate::d in a comment is no use\nuse crate::{\n    b::B,\n    money,\n};\n");
    write("b.rs", "fn f() { crate::c::g(); }\nmacro_rules! m { () => { $crate::a::A } }\n");
    write("c/mod.rs", "mod inner;\n");
    write("c/inner.rs", "use crate::a::A;\n");
    write("d.rs", "use crate::c;\n");
    let cycles = import_cycles(dir.path(), "crate");
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("a -> b -> c -> a (modules in the cycle: a, b, c)"), "{}", cycles[0]);
    assert!(cycles[0].contains("c uses a at ") && cycles[0].contains("inner.rs:1"), "{}", cycles[0]);

    // The same check over a folder of a crate, e.g. `src/routes/`.
    write("routes/mod.rs", "pub mod x;\npub mod y;\n");
    write("routes/x.rs", "use super::y::Y;\n");
    write("routes/y.rs", "use crate::routes::x::X;\nuse crate::a::A;\n");
    let cycles = import_cycles(&dir.path().join("routes"), "crate::routes");
    assert_eq!(cycles.len(), 1, "{cycles:?}");
    assert!(cycles[0].starts_with("x -> y -> x"), "{}", cycles[0]);
}

/// The server's layers, as its folders show them: `http` (handlers,
/// extractors, middleware, hosted pages, documents) over `domain` (the
/// business rules) over `store` (stored documents, the request log), with
/// `adapters` (the clients of providers and webhook endpoints, behind the
/// domain's traits) beside `http`, `runtime` (node, scheduler) wiring them
/// and `config` a leaf. A layer uses
/// only the layers below it, so no cycle can form between them.
#[test]
fn the_servers_layers_import_no_cycle_and_only_downwards() {
    let src = engine_dir().join("../server/src");
    let cycles = import_cycles(&src, "crate");
    assert!(cycles.is_empty(), "import cycles among the server's layers:\n{}", cycles.join("\n"));
    let graph = import_graph(&src, "crate");
    let below: BTreeMap<&str, &[&str]> = BTreeMap::from([
        ("runtime", &["http", "adapters", "domain", "store", "config"][..]),
        ("http", &["domain", "store", "config"][..]),
        ("adapters", &["domain", "store", "config"][..]),
        ("domain", &["store", "config"][..]),
        ("store", &[][..]),
        ("config", &[][..]),
    ]);
    assert_eq!(
        graph.keys().map(String::as_str).collect::<Vec<_>>(),
        below.keys().copied().collect::<Vec<_>>()
    );
    for (layer, uses) in &graph {
        for (used, at) in uses {
            assert!(
                below[layer.as_str()].contains(&used.as_str()),
                "{layer} may not use {used} ({}:{})",
                at.file.display(),
                at.line
            );
        }
    }
    // The check did read the server: handlers call the domain.
    assert!(graph["http"].contains_key("domain"));
}

/// The server's domain is files each of which can be read knowing only
/// what it uses: no two use each other, however indirectly. Each file is
/// a module here (`domain/rails/mod.rs` is `rails`, `domain/rails/lookup.rs`
/// is `rails::lookup`), so a folder's files are held to it too; a use is a
/// path from the crate (`crate::domain::rails::Kind` uses `rails`, the
/// longest module the path names) or `super::x` (a sibling's file).
#[test]
fn the_servers_domain_files_import_no_cycle() {
    let domain = engine_dir().join("../server/src/domain");
    let graph = file_graph(&domain);
    let cycles = cycles_of(&graph);
    assert!(
        cycles.is_empty(),
        "import cycles among the files of the server's domain:\n{}",
        cycles.join("\n")
    );
    // The check did read the domain: more than twenty files, and the stack
    // uses the catalog, and a file in a folder uses its folder's module.
    assert!(graph.len() > 20, "read {} files", graph.len());
    assert!(graph["stack"].contains_key("catalog"), "{:?}", graph["stack"]);
    assert!(graph.iter().any(|(file, uses)| file.contains("::") && uses.keys().any(|u| !u.contains("::"))));
}

/// The import graph among the files under `domain` (module `crate::domain`),
/// each named by its module path below it.
fn file_graph(domain: &Path) -> Graph {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut all = Vec::new();
    files(domain, &mut all);
    let name_of = |file: &Path| -> Option<String> {
        let relative = file.strip_prefix(domain).ok()?.with_extension("");
        let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
        if parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        (!parts.is_empty()).then(|| parts.join("::"))
    };
    let modules: BTreeMap<String, PathBuf> =
        all.iter().filter_map(|f| Some((name_of(f)?, f.clone()))).collect();
    let mut graph: Graph = modules.keys().map(|m| (m.clone(), BTreeMap::new())).collect();
    for (name, file) in &modules {
        let code = without_tests(&std::fs::read_to_string(file).unwrap());
        // What `super::x` names: `x` beside this module (`a/b.rs` is
        // `a::b`, its `super::x` is `a::x`; `a/mod.rs` is `a`, its `super::x`
        // is `x`).
        let mut parent: Vec<&str> = name.split("::").collect();
        parent.pop();
        let mut uses = |target: String, at: usize| {
            if &target != name && modules.contains_key(&target) {
                let line = code[..at].matches('\n').count() + 1;
                graph
                    .get_mut(name)
                    .unwrap()
                    .entry(target)
                    .or_insert_with(|| Use { file: file.clone(), line });
            }
        };
        for (at, _) in code.match_indices("crate::domain::") {
            let rest = &code[at + "crate::domain::".len()..];
            let path: String =
                rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
            let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
            // The longest prefix that is a module file; a `{a, b}` group names each.
            let longest =
                (1..=parts.len()).rev().map(|k| parts[..k].join("::")).find(|m| modules.contains_key(m));
            match longest {
                Some(target) => uses(target, at),
                None if rest[path.len()..].starts_with('{') || path.ends_with("::") => {
                    let base = parts.join("::");
                    let group_at = at + "crate::domain::".len() + path.len();
                    for named in named_after(&code[group_at..]) {
                        let target =
                            if base.is_empty() { named.to_string() } else { format!("{base}::{named}") };
                        uses(target, at);
                    }
                }
                None => {}
            }
        }
        for (at, _) in code.match_indices("super::") {
            if code[..at].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            for named in named_after(&code[at + "super::".len()..]) {
                let mut target = parent.clone();
                target.push(named);
                uses(target.join("::"), at);
            }
        }
    }
    graph
}

/// The domain and the store know nothing of HTTP: no axum, no `http`.
#[test]
fn the_servers_domain_and_store_never_name_axum() {
    let src = engine_dir().join("../server/src");
    let mut files = Vec::new();
    for layer in ["domain", "store"] {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    walk(&path, out);
                } else {
                    out.push(path);
                }
            }
        }
        walk(&src.join(layer), &mut files);
    }
    assert!(files.len() > 20, "read {} files", files.len());
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        for (n, line) in source.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            assert!(!code.contains("axum"), "{}:{} names axum", file.display(), n + 1);
        }
    }
}
