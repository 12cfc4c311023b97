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
    ("redirectUrl", 2048),
    ("role", 32),
    ("routingNumber", 64),
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

/// Refuses the first string longer than its field's limit, naming its path
/// (`to.accountNumber`, `items[3].code`). `metadata` has its own rules
/// (`instructions::check_metadata`) and is not walked.
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

    #[test]
    fn the_table_is_sorted_and_unique() {
        assert!(TEXT_CHARS_MAX.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
