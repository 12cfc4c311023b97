//! What every HTML page of the node shares (`templates/base.html`): the
//! document's head, the one style element the Content-Security-Policy names
//! by hash, and the test-mode banner of the sandbox.
//!
//! Templates escape every value they show. The only text placed raw is
//! built here from constants and checked values: the style (the stylesheet
//! and an accent colour parsed as `#rgb` or `#rrggbb`) and a script's JSON
//! data (`ScriptJson`, with `<`, `>` and `&` escaped as JSON escapes so it
//! cannot end its element). `templates_place_raw_only_what_is_safe_by_construction`
//! holds the templates to that.

use std::fmt;

/// The accent of pages that have no branding of their own (the 404).
pub(crate) const ACCENT_DEFAULT: &str = "#1a7f5a";

/// WCAG 2 AA: the contrast normal text needs against its background.
pub(crate) const CONTRAST_AA: f64 = 4.5;

/// The dark text the pages use (`body` in the stylesheets).
const INK: Rgb = Rgb(0x1a, 0x1f, 0x36);
const WHITE: Rgb = Rgb(0xff, 0xff, 0xff);
const BLACK: Rgb = Rgb(0, 0, 0);

/// The head, banner and style of one page.
pub(crate) struct Shell {
    pub title: String,
    /// Every sandbox page says so, so a payer never mistakes a test for a payment.
    pub sandbox: bool,
    pub style: InlineStyle,
}

impl Shell {
    pub(crate) fn new(title: &str, sandbox: bool, style: InlineStyle) -> Shell {
        Shell { title: title.to_string(), sandbox, style }
    }
}

/// A colour as `#rrggbb`'s three channels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rgb(u8, u8, u8);

impl Rgb {
    /// `#rgb` or `#rrggbb`; `None` for anything else.
    pub(crate) fn parse(text: &str) -> Option<Rgb> {
        let hex = text.strip_prefix('#')?;
        if !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let channel = |from: usize, len: usize| {
            let value = u8::from_str_radix(hex.get(from..from + len)?, 16).ok()?;
            Some(if len == 1 { value * 17 } else { value })
        };
        match hex.len() {
            3 => Some(Rgb(channel(0, 1)?, channel(1, 1)?, channel(2, 1)?)),
            6 => Some(Rgb(channel(0, 2)?, channel(2, 2)?, channel(4, 2)?)),
            _ => None,
        }
    }

    /// WCAG 2's relative luminance.
    fn luminance(self) -> f64 {
        let linear = |channel: u8| {
            let c = f64::from(channel) / 255.0;
            if c <= 0.039_28 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
        };
        0.2126 * linear(self.0) + 0.7152 * linear(self.1) + 0.0722 * linear(self.2)
    }

    /// WCAG 2's contrast ratio between two colours (1 to 21).
    pub(crate) fn contrast(self, other: Rgb) -> f64 {
        let (a, b) = (self.luminance(), other.luminance());
        (a.max(b) + 0.05) / (a.min(b) + 0.05)
    }

    /// The text colour that reads on this background: white when it meets
    /// AA, else the pages' dark ink, else black (one of white and black
    /// always does).
    pub(crate) fn text_on(self) -> Rgb {
        [WHITE, INK].into_iter().find(|text| text.contrast(self) >= CONTRAST_AA).unwrap_or(BLACK)
    }
}

impl fmt::Display for Rgb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
}

/// A page's style element: a stylesheet compiled into the binary, after
/// the accent colour and the text colour that reads on it.
pub(crate) struct InlineStyle(String);

impl InlineStyle {
    /// `accent` is a merchant's `#rgb` or `#rrggbb`; anything else falls
    /// back to the default accent.
    pub(crate) fn new(stylesheet: &'static str, accent: &str) -> InlineStyle {
        let accent =
            Rgb::parse(accent).or_else(|| Rgb::parse(ACCENT_DEFAULT)).unwrap_or(Rgb(0x1a, 0x7f, 0x5a));
        InlineStyle(format!(":root{{--accent:{accent};--on-accent:{}}}{stylesheet}", accent.text_on()))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InlineStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// JSON for a `<script type="application/json">` element: `<`, `>` and `&`
/// are written as JSON escapes, so the text can neither close the element
/// nor open a comment, and `JSON.parse` reads the same value.
pub(crate) struct ScriptJson(String);

impl ScriptJson {
    pub(crate) fn new(value: &serde_json::Value) -> ScriptJson {
        let text = value.to_string().replace('<', "\\u003c").replace('>', "\\u003e").replace('&', "\\u0026");
        ScriptJson(text)
    }
}

impl fmt::Display for ScriptJson {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Nothing runs or loads but what the page itself holds: its one script
/// and its one style element, each named by its SHA-256 (so no inline
/// script or style anyone manages to inject is run), images from its own
/// origin (the QR code) or the merchant's logo, requests to its own origin
/// only, and no framing.
pub(crate) fn content_security_policy(script: &str, style: &InlineStyle) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let hash =
        |text: &str| base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(text.as_bytes()));
    format!(
        "default-src 'none'; script-src 'sha256-{}'; style-src 'sha256-{}'; img-src 'self' https: http: data:; \
         connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
        hash(script),
        hash(style.as_str())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_parse_in_both_lengths_and_nothing_else() {
        assert_eq!(Rgb::parse("#ffff00"), Some(Rgb(255, 255, 0)));
        assert_eq!(Rgb::parse("#FF0"), Some(Rgb(255, 255, 0)));
        for bad in ["ffff00", "#ffff0", "#gggggg", "red", "#ff00001", "", "#é00"] {
            assert_eq!(Rgb::parse(bad), None, "{bad}");
        }
        assert_eq!(Rgb(10, 125, 79).to_string(), "#0a7d4f");
    }

    #[test]
    fn text_on_an_accent_meets_aa() {
        let yellow = Rgb::parse("#ffff00").unwrap();
        assert_ne!(yellow.text_on(), WHITE, "white on yellow is unreadable");
        assert!(yellow.text_on().contrast(yellow) >= CONTRAST_AA);
        assert_eq!(Rgb::parse("#0a7d4f").unwrap().text_on(), WHITE);
        // Every grey and every primary: the chosen text always meets AA.
        for level in (0..=255).step_by(5) {
            for accent in [Rgb(level, level, level), Rgb(level, 0, 0), Rgb(0, level, 0), Rgb(0, 0, level)] {
                let contrast = accent.text_on().contrast(accent);
                assert!(contrast >= CONTRAST_AA, "{accent}: {contrast}");
            }
        }
        assert!((WHITE.contrast(BLACK) - 21.0).abs() < 1e-9);
    }

    #[test]
    fn script_json_cannot_close_its_element() {
        let json = ScriptJson::new(&serde_json::json!({ "title": "</script><!-- & -->" })).to_string();
        assert!(!json.contains('<') && !json.contains('>') && !json.contains('&'), "{json}");
        let back: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(back["title"], "</script><!-- & -->");
    }

    #[test]
    fn a_bad_accent_falls_back_to_the_default() {
        let style = InlineStyle::new("", "red;}body{display:none");
        assert_eq!(style.as_str(), ":root{--accent:#1a7f5a;--on-accent:#ffffff}");
    }
}
