//! Extractors whose rejections are the spec's error object, so even a
//! malformed request gets a structured, field-naming answer.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::domain::error::ApiError;

/// The largest request body the node reads.
pub(crate) const BODY_BYTES_MAX: usize = 1024 * 1024;

/// A JSON body. Wrong content type → 415; unreadable JSON → 400
/// `bad_request`; a field of the wrong type, missing or unknown → 400
/// `validation_error` naming the field.
pub(crate) struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let is_json = content_type
            .split(';')
            .next()
            .map(|t| t.trim() == "application/json" || t.trim().ends_with("+json"))
            .unwrap_or(false);
        if !is_json {
            return Err(ApiError::new(
                sika_api::ErrorCode::UnsupportedMediaType,
                "the body must be JSON with Content-Type: application/json",
            )
            .with_detail("field", "Content-Type"));
        }
        let _ = state;
        let bytes = read_body(request).await?;
        parse_json(&bytes).map(ApiJson)
    }
}

/// Reads a request's whole body: 413 past the limit, 400 naming `body`
/// when it does not arrive within the body timeout or the connection fails.
pub(crate) async fn read_body(request: Request) -> Result<Bytes, ApiError> {
    axum::body::to_bytes(request.into_body(), usize::MAX).await.map_err(|e| {
        match crate::http::envelope::BodyRefusal::of(&e) {
            Some(crate::http::envelope::BodyRefusal::TooLarge) => too_large(),
            Some(refusal) => ApiError::bad_request(refusal.to_string()).with_detail("field", "body"),
            None => ApiError::bad_request("the request body could not be read").with_detail("field", "body"),
        }
    })
}

pub(crate) fn too_large() -> ApiError {
    ApiError::new(sika_api::ErrorCode::PayloadTooLarge, "the request body is larger than 1 MiB")
        .with_detail("limit", BODY_BYTES_MAX as u64)
}

/// Parses JSON, naming the path of the field that failed.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty; a JSON object is required")
            .with_detail("field", "body"));
    }
    // Syntax first, so "not JSON" and "JSON of the wrong shape" are told apart.
    if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        return Err(ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
            .with_detail("field", "body")
            .with_detail("line", e.line())
            .with_detail("column", e.column()));
    }
    // Every body is an object; serde would otherwise read an array positionally.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::validation("body", "must be a JSON object"));
    }
    let deserializer = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = strip_position(&inner.to_string());
        let field = field_name(&path, &message);
        ApiError::validation(&field, message)
    })
}

/// Reads a typed request out of an already-parsed JSON value, naming the
/// failing field like `parse_json` does.
pub(crate) fn from_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let message = strip_position(&e.into_inner().to_string());
        let field = field_name(&path, &message);
        ApiError::validation(&field, message)
    })
}

/// Query parameters, with the same error shape as bodies.
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        let deserializer = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
        serde_path_to_error::deserialize(deserializer).map(ApiQuery).map_err(|e| {
            let path = e.path().to_string();
            let message = e.into_inner().to_string();
            let field = field_name(&path, &message);
            ApiError::validation(&field, message)
        })
    }
}

/// The field a serde error is about: its path, or for a missing field (whose
/// path is its parent's) the parent's path plus the name quoted in the
/// message. An unknown field's path already ends with its name.
fn field_name(path: &str, message: &str) -> String {
    let quoted = message.split('`').nth(1).map(str::to_string);
    let missing = message.starts_with("missing field");
    let is_field_message = missing || message.starts_with("unknown field");
    match (path, quoted) {
        (".", Some(name)) if is_field_message => name,
        (".", _) => "body".to_string(),
        (path, Some(name)) if missing => format!("{path}.{name}"),
        (path, _) => path.to_string(),
    }
}

fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Body {
        quote_id: String,
        inner: Option<Inner>,
    }
    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Inner {
        currency: String,
    }

    fn field(bytes: &str) -> String {
        let error = parse_json::<Body>(bytes.as_bytes()).unwrap_err();
        error.details.unwrap()["field"].as_str().unwrap().to_string()
    }

    #[test]
    fn names_the_failing_field() {
        assert_eq!(field(r#"{}"#), "quoteId");
        assert_eq!(field(r#"{"quoteId": 5}"#), "quoteId");
        assert_eq!(field(r#"{"quoteId": "q", "extra": 1}"#), "extra");
        assert_eq!(field(r#"{"quoteId": "q", "inner": {"currency": 1}}"#), "inner.currency");
        assert_eq!(field(r#"{"quoteId": "q", "inner": {}}"#), "inner.currency");
        assert_eq!(field(r#"{"quoteId": "#), "body");
        assert_eq!(field(r#"[1]"#), "body");
        assert_eq!(field(r#"["q", null]"#), "body");
    }
}
