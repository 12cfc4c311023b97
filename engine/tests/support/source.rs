//! Reading Rust sources as text, for the tests that hold the workspace's
//! shape (`module_cycles.rs`, `structure.rs`).

/// The code of a file without its line comments and its `#[cfg(test)] mod
/// … { … }` blocks (where `super::` names the file itself), with every
/// line kept, so what is found later is named at its own line.
pub fn without_tests(source: &str) -> String {
    let code: String =
        source.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
    let mut out = String::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        let after = &rest[at..];
        let open = after.find('{');
        let is_module = open.is_some_and(|o| {
            let head = after["#[cfg(test)]".len()..o].trim();
            head.starts_with("mod ") && !head.contains(';')
        });
        out.push_str(&rest[..at]);
        let Some(open) = open.filter(|_| is_module) else {
            out.push_str("#[cfg(test)]");
            rest = &after["#[cfg(test)]".len()..];
            continue;
        };
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push_str(&"\n".repeat(after[..end].matches('\n').count()));
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}
