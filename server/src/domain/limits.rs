//! The most characters each free-text request field takes, by its JSON
//! name, the same on every resource (a `name` is at most 255 characters
//! whether it names a key, a recipient or a file). Every JSON body is
//! checked against this table before its fields are read, so an oversized
//! value is `400 validation_error` naming the field's path, and the
//! OpenAPI document states the same numbers (`maxLength`, checked against
//! this table by a test).

use serde_json::Value;

use crate::domain::error::{ApiError, ApiResult};

/// Field name → the most characters (Unicode scalar values) it takes.
pub(crate) const TEXT_CHARS_MAX: &[(&str, usize)] = &[
    ("accentColor", 7),
    ("accountName", 255),
    ("accountNumber", 64),
    ("address", 128),
    ("bankCode", 64),
    ("base", 10),
    ("body", 5000),
    ("businessName", 255),
    ("chain", 64),
    ("code", 64),
    ("collectionId", 64),
    ("contentType", 255),
    ("country", 2),
    ("currency", 10),
    ("customerReference", 255),
    ("description", 2000),
    ("email", 254),
    ("expiresAt", 64),
    ("externalReference", 255),
    ("fileId", 64),
    ("fullName", 120),
    ("idNumber", 64),
    ("idType", 32),
    ("invitation", 128),
    ("kind", 32),
    ("label", 255),
    ("logoUrl", 2048),
    ("message", 500),
    ("method", 32),
    ("name", 255),
    ("narration", 500),
    ("network", 32),
    ("outcome", 32),
    ("password", 128),
    ("paymentLinkId", 64),
    ("phone", 16),
    ("quoteId", 64),
    ("reason", 500),
    ("recipientId", 64),
    ("recoveryCode", 32),
    ("redirectUrl", 2048),
    ("reset", 128),
    ("role", 32),
    ("routingNumber", 64),
    ("sessionId", 64),
    ("status", 32),
    ("tag", 64),
    ("title", 255),
    ("type", 32),
    ("url", 2048),
];

/// The limit of a field, if it has one.
pub(crate) fn text_chars_max(name: &str) -> Option<usize> {
    TEXT_CHARS_MAX.iter().find(|(field, _)| *field == name).map(|(_, max)| *max)
}

/// Whether a character is refused in a URL or reference field: C0 and C1
/// control characters and DEL (`char::is_control`: U+0000–U+001F,
/// U+007F–U+009F), and the invisible format characters: zero-width spaces,
/// joiners and direction marks (U+200B–U+200F), line and paragraph
/// separators and direction embeddings (U+2028–U+202E), the word joiner
/// and invisible operators (U+2060–U+2064), and the byte order mark
/// (U+FEFF). Each either ends a string where a reader stops (a NUL written
/// into a page) or makes two references or URLs look the same while
/// differing (CONTRACT.md, "Precisions to the surfaces above").
pub(crate) fn is_hidden(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}')
}

/// The one check of every URL and reference field, wherever it comes from
/// (a JSON body, a dashboard form): `400 validation_error` naming `field`
/// and the first hidden character's code point.
pub(crate) fn check_visible(field: &str, value: &str) -> ApiResult<()> {
    match value.chars().find(|c| is_hidden(*c)) {
        None => Ok(()),
        Some(c) => Err(ApiError::validation(
            field,
            format!("must not contain control or invisible characters (found U+{:04X})", u32::from(c)),
        )),
    }
}

/// The most characters a URL field takes.
pub(crate) const URL_CHARS_MAX: usize = 2048;

/// What every URL field takes: at most 2048 characters, nothing hidden
/// (`check_visible`), an absolute `http` or `https` URL naming a host,
/// and no port 0 (nothing listens there: a URL naming it can never be
/// reached, and is a probe rather than an address).
pub(crate) fn web_url(field: &str, value: &str) -> ApiResult<reqwest::Url> {
    if value.chars().count() > URL_CHARS_MAX {
        return Err(ApiError::validation(field, format!("must be at most {URL_CHARS_MAX} characters")));
    }
    check_visible(field, value)?;
    let url = reqwest::Url::parse(value)
        .map_err(|_| ApiError::validation(field, "must be an absolute http or https URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ApiError::validation(field, "must use http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ApiError::validation(field, "must name a host"));
    }
    if url.port() == Some(0) {
        return Err(ApiError::validation(field, "must not name port 0"));
    }
    Ok(url)
}

/// Whether a JSON field of this name holds a URL or a reference (`url`,
/// `redirectUrl`, `logoUrl`, `externalReference`, `customerReference`,
/// `reference`…): `check_text` holds each to `check_visible` on every body,
/// so a field added later is covered by its name.
pub(crate) fn is_url_or_reference(name: &str) -> bool {
    matches!(name, "url" | "reference") || name.ends_with("Url") || name.ends_with("Reference")
}

/// Refuses the first string longer than its field's limit, or a URL or
/// reference field holding a hidden character (`check_visible`), naming
/// its path (`to.accountNumber`, `items[3].code`). `metadata` has its own
/// rules (`instructions::check_metadata`) and is not walked.
pub(crate) fn check_text(body: &Value) -> ApiResult<()> {
    walk(body, "")
}

fn walk(value: &Value, path: &str) -> ApiResult<()> {
    match value {
        Value::Object(fields) => {
            for (name, field) in fields {
                if name == "metadata" {
                    continue;
                }
                let here = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
                if let (Value::String(text), Some(max)) = (field, text_chars_max(name))
                    && text.chars().count() > max
                {
                    return Err(ApiError::validation(&here, format!("must be at most {max} characters")));
                }
                if let Value::String(text) = field
                    && is_url_or_reference(name)
                {
                    check_visible(&here, text)?;
                }
                walk(field, &here)?;
            }
            Ok(())
        }
        Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{index}]"))?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn names_the_path_of_an_oversized_field() {
        let field = |body: Value| check_text(&body).unwrap_err().details.unwrap()["field"].clone();
        assert_eq!(field(json!({ "narration": "x".repeat(501) })), "narration");
        assert_eq!(field(json!({ "to": { "accountNumber": "1".repeat(65) } })), "to.accountNumber");
        assert_eq!(field(json!({ "items": [{ "code": "a" }, { "code": "c".repeat(65) }] })), "items[1].code");
        assert!(
            check_text(&json!({ "narration": "é".repeat(500), "metadata": { "name": "x".repeat(999) } }))
                .is_ok()
        );
        assert!(check_text(&json!({ "data": "x".repeat(100_000) })).is_ok(), "a field without a limit");
    }

    /// Issue 29.4: every hidden character the contract names is refused
    /// in a URL or reference field at any depth, and nothing visible is.
    #[test]
    fn url_and_reference_fields_refuse_hidden_characters() {
        let hidden = ['\u{0}', '\u{1b}', '\u{7f}', '\u{80}', '\u{9f}', '\u{200b}', '\u{200f}', '\u{2028}'];
        let more = ['\u{202e}', '\u{2060}', '\u{2064}', '\u{feff}', '\n', '\t'];
        for c in hidden.into_iter().chain(more) {
            assert!(is_hidden(c), "U+{:04X}", u32::from(c));
            let field = |body: Value| check_text(&body).unwrap_err().details.unwrap()["field"].clone();
            let url = format!("https://example.com/{c}x");
            assert_eq!(field(json!({ "redirectUrl": url })), "redirectUrl");
            assert_eq!(field(json!({ "branding": { "logoUrl": url } })), "branding.logoUrl");
            assert_eq!(field(json!({ "url": url })), "url");
            assert_eq!(field(json!({ "externalReference": format!("ref{c}") })), "externalReference");
            assert_eq!(
                field(json!({ "items": [{ "customerReference": format!("{c}") }] })),
                "items[0].customerReference"
            );
        }
        for c in ['a', 'é', '€', ' ', '\u{a0}', '\u{200a}', '\u{2065}', '\u{fefe}', '日'] {
            assert!(!is_hidden(c), "U+{:04X}", u32::from(c));
        }
        assert!(check_text(&json!({ "externalReference": "order 42 / é", "name": "a\u{0}b" })).is_ok());
        assert!(check_text(&json!({ "metadata": { "url": "\u{0}" } })).is_ok(), "metadata is the merchant's");
    }

    #[test]
    fn urls_are_absolute_web_urls_on_a_real_port() {
        let field = |url: &str| web_url("url", url).unwrap_err().details.unwrap()["reason"].clone();
        assert_eq!(field("https://example.com:0/"), "must not name port 0");
        assert_eq!(field("http://example.com:0"), "must not name port 0");
        assert_eq!(field("ftp://example.com/"), "must use http or https");
        assert_eq!(field("/relative"), "must be an absolute http or https URL");
        assert!(field("https://example.com/\u{feff}").as_str().unwrap().contains("U+FEFF"));
        assert!(web_url("url", &format!("https://example.com/{}", "a".repeat(2048))).is_err());
        assert_eq!(web_url("url", "https://example.com:8443/a?b=c").unwrap().port(), Some(8443));
        assert!(web_url("url", "http://example.com:65535/").is_ok());
    }

    #[test]
    fn the_table_is_sorted_and_unique() {
        assert!(TEXT_CHARS_MAX.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
