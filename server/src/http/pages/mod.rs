//! The node's HTML pages, rendered from askama templates in
//! `server/templates/` that escape every value they show: `base.html`
//! holds what every page shares (head, style, test-mode banner), and each
//! page extends it. The hosted checkout (`pay/`) is the first; the
//! merchant's dashboard and emails take the same base.

mod checkout;
mod qr;
pub(crate) mod shell;
mod text;

pub(crate) use checkout::render;
pub(crate) use qr::qr_svg;

#[cfg(test)]
mod tests {
    /// What a template may place unescaped: each is safe by construction
    /// (`shell::InlineStyle`, `shell::ScriptJson`, a script compiled in).
    /// Anything else a page shows goes through askama's escaping.
    const RAW_ALLOWED: [&str; 3] = ["shell.style|safe", "form.data|safe", "form.script|safe"];

    fn templates(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                templates(&path, out);
            } else if path.extension().is_some_and(|e| e == "html") {
                out.push((path.display().to_string(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }

    #[test]
    fn templates_place_raw_only_what_is_safe_by_construction() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
        let mut found = Vec::new();
        templates(&root, &mut found);
        assert!(found.len() >= 5, "the templates are found: {found:?}");
        let unescaped = regex_lite::Regex::new(r"\{\{-?\s*([^}]*?)\s*-?\}\}").unwrap();
        for (path, text) in &found {
            for expression in unescaped.captures_iter(text) {
                let expression = expression[1].replace(' ', "");
                let raw = expression.contains("|safe") || expression.contains("|escape(\"none\")");
                assert!(
                    !raw || RAW_ALLOWED.contains(&expression.as_str()),
                    "{path}: {expression} is placed unescaped"
                );
            }
            assert!(!text.contains("{% autoescape"), "{path}: escaping is never turned off");
        }
    }
}
