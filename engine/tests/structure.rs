//! The shape of the workspace's sources, read as text: what the domain-layer
//! issue (31) set as goals, kept by CI so they cannot slip back.
//!
//! - the server's HTTP layer builds no engine command (use cases in
//!   `server/src/domain` do), and its handlers stay short: parse, call one
//!   use case, render;
//! - the engine spells no wire event name (`EventKind` derives them);
//! - errors are typed: at most a handful of `Result<_, String>` outside tests.
//!
//! The import cycles are `module_cycles.rs`.

use std::path::{Path, PathBuf};

#[path = "support/source.rs"]
mod source;

use source::without_tests;

/// The workspace root of the checkout being tested.
fn root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("..")
}

/// Every `.rs` file under `dir`, tests and fixtures folders left out.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() {
                if !["target", "tests", "fixtures"].contains(&name.as_str()) {
                    folders.push(path);
                }
            } else if name.ends_with(".rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Each line of code of a file outside its tests, without line comments,
/// with its number.
fn code_lines(path: &Path) -> Vec<(usize, String)> {
    let text = without_tests(&std::fs::read_to_string(path).unwrap());
    text.lines()
        .enumerate()
        .map(|(n, line)| (n + 1, line.split("//").next().unwrap_or("").to_string()))
        .collect()
}

/// Where `text` names `Command::` followed by a capital (a variant).
fn names_a_command(text: &str) -> bool {
    text.match_indices("Command::").any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + "Command::".len()..].chars().next();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
            && after.is_some_and(|c| c.is_ascii_uppercase())
    })
}

#[test]
fn the_http_layer_builds_no_engine_command() {
    let files = sources(&root().join("server/src/http"));
    assert!(files.len() > 20, "read {} files", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|file| {
            code_lines(file)
                .into_iter()
                .filter(|(_, line)| names_a_command(line))
                .map(move |(n, line)| format!("{}:{n}: {}", file.display(), line.trim()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "engine commands built in server/src/http (a use case builds them):\n{}",
        found.join("\n")
    );
    // The check can see one: the domain builds them.
    let domain = sources(&root().join("server/src/domain"));
    assert!(domain.iter().any(|f| code_lines(f).iter().any(|(_, l)| names_a_command(l))));
}

/// A handler parses, calls one use case and renders: 30 lines at most.
#[test]
fn handlers_are_short() {
    const LINES_MAX: usize = 30;
    let mut handlers = 0;
    let mut long = Vec::new();
    for file in sources(&root().join("server/src/http/routes")) {
        let lines = code_lines(&file);
        let mut i = 0;
        while i < lines.len() {
            let line = lines[i].1.trim_start();
            let line = line.strip_prefix("pub(crate) ").or_else(|| line.strip_prefix("pub ")).unwrap_or(line);
            if let Some(rest) = line.strip_prefix("async fn ") {
                let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
                let (mut depth, mut started, mut j) = (0i64, false, i);
                while j < lines.len() {
                    let l = &lines[j].1;
                    depth += l.matches('{').count() as i64 - l.matches('}').count() as i64;
                    started |= l.contains('{');
                    if started && depth <= 0 {
                        break;
                    }
                    j += 1;
                }
                handlers += 1;
                if j - i + 1 > LINES_MAX {
                    long.push(format!("{}:{} {name}: {} lines", file.display(), lines[i].0, j - i + 1));
                }
                i = j;
            }
            i += 1;
        }
    }
    assert!(handlers > 50, "read {handlers} handlers");
    assert!(long.is_empty(), "handlers over {LINES_MAX} lines:\n{}", long.join("\n"));
}

/// Wire event names live in `EventKind`'s derivation, not as strings in
/// the engine's code.
#[test]
fn the_engine_spells_no_wire_event_name() {
    let files = sources(&root().join("engine/src"));
    assert!(files.len() > 10, "read {} files", files.len());
    let prefixes =
        ["payout.", "collection.", "account.", "conversion.", "order.", "dispute.", "refund.", "webhook."];
    let mut found = Vec::new();
    for file in &files {
        for (n, line) in code_lines(file) {
            for (at, _) in line.match_indices('"') {
                let rest = &line[at + 1..];
                let Some(end) = rest.find('"') else { continue };
                let literal = &rest[..end];
                let wire_like = prefixes.iter().any(|p| literal.starts_with(p))
                    && literal.chars().all(|c| c.is_ascii_lowercase() || c == '.' || c == '_')
                    && literal.matches('.').count() == 1
                    && !literal.ends_with('.');
                if wire_like {
                    found.push(format!("{}:{n}: \"{literal}\"", file.display()));
                }
            }
        }
    }
    found.dedup();
    assert!(found.is_empty(), "wire event names spelled in engine/src:\n{}", found.join("\n"));
}

/// A `String` error loses what went wrong; the few left are messages for a
/// person at a command line.
#[test]
fn few_errors_are_strings() {
    const STRING_ERRORS_MAX: usize = 10;
    let mut found = Vec::new();
    for crate_dir in ["api", "engine", "server", "tui", "src"] {
        for file in sources(&root().join(crate_dir)) {
            let text = without_tests(&std::fs::read_to_string(&file).unwrap());
            for (n, line) in text.lines().enumerate() {
                let mut rest = line;
                while let Some(at) = rest.find("Result<") {
                    let tail = &rest[at + "Result<".len()..];
                    // The `, String>` closing this Result's own brackets.
                    let mut depth = 1;
                    let mut close = None;
                    for (i, c) in tail.char_indices() {
                        match c {
                            '<' => depth += 1,
                            '>' => {
                                depth -= 1;
                                if depth == 0 {
                                    close = Some(i);
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                    let Some(close) = close else { break };
                    if tail[..close].trim_end().ends_with(", String")
                        || tail[..close].trim_end().ends_with(",String")
                    {
                        found.push(format!("{}:{}", file.display(), n + 1));
                    }
                    rest = &tail[close..];
                }
            }
        }
    }
    assert!(
        found.len() <= STRING_ERRORS_MAX,
        "{} `Result<_, String>` outside tests:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// ARCHITECTURE.md names files and folders that exist: a reader who
/// follows it never looks for a file that was moved or never written.
#[test]
fn the_architecture_names_files_that_exist() {
    let root = root();
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    // Where a short path is read from: the crates' sources and the folders
    // a paragraph is about.
    let bases = [
        "",
        "server/src/",
        "server/src/domain/",
        "server/src/http/",
        "server/src/http/routes/",
        "server/src/runtime/",
        "server/src/store/",
        "engine/src/",
        "tui/src/",
        "tui/src/app/",
        "tui/src/view/",
        "tests/blackbox/",
        "engine/",
        "server/",
    ];
    let mut named = 0;
    let mut missing = Vec::new();
    for quoted in text.split('`').skip(1).step_by(2) {
        let path = quoted.trim_end_matches(':');
        let looks_like_path = path.contains('/') || path.ends_with(".rs");
        let plain = path.chars().all(|c| c.is_ascii_alphanumeric() || "_-./".contains(c));
        if !looks_like_path || !plain || path.starts_with('/') || path.contains("..") || path.contains('*') {
            continue;
        }
        // A route (`/v1/...`) starts with a slash; a file has an extension
        // or names a folder (`domain/checkout/`).
        if !(path.ends_with(".rs") || path.ends_with('/') || path.ends_with(".md") || path.ends_with(".toml"))
        {
            continue;
        }
        named += 1;
        if !bases.iter().any(|base| root.join(format!("{base}{path}")).exists()) {
            missing.push(path.to_string());
        }
    }
    assert!(named > 30, "read {named} paths");
    assert!(missing.is_empty(), "ARCHITECTURE.md names paths that do not exist: {missing:?}");
}
