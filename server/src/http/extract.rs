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
    // Syntax first, so "not JSON" and "JSON of the wrong shape" are told
    // apart; the same pass refuses a key an object names twice, which
    // serde would otherwise read as the last one given.
    let mut duplicate = None;
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let walked = serde::de::DeserializeSeed::deserialize(
        UniqueKeys { path: &mut String::new(), duplicate: &mut duplicate },
        &mut deserializer,
    )
    .and_then(|()| deserializer.end());
    if let Some(path) = duplicate {
        return Err(ApiError::validation(&path, "is given more than once; each key may appear once"));
    }
    // The walk reads every string and nests as deep as the body does, so
    // it also stops at what the typed read below names better (invalid
    // UTF-8 in a field, nesting past serde_json's limit); only what
    // `IgnoredAny` refuses too is not JSON at all.
    if walked.is_err()
        && let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes)
    {
        return Err(ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
            .with_detail("field", "body")
            .with_detail("line", e.line())
            .with_detail("column", e.column()));
    }
    // Every body is an object; serde would otherwise read an array positionally.
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::validation("body", "must be a JSON object"));
    }
    // Every free-text field's stated maximum, before any field is read. A
    // body nested too deep to hold as a value fails the typed read below.
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(bytes) {
        crate::domain::limits::check_text(&value)?;
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

/// A pass over a JSON document, as serde_json reads it, that keeps nothing
/// but each object's keys while that object is read, and stops at the
/// first key an object names twice, with its path (`to.amount`,
/// `items[2].name`) in `duplicate`. It replaces the syntax check's
/// `IgnoredAny` pass, so a body is still read once before its fields.
struct UniqueKeys<'a> {
    path: &'a mut String,
    duplicate: &'a mut Option<String>,
}

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        let depth = self.path.len();
        let mut index = 0usize;
        loop {
            use std::fmt::Write as _;
            let _ = write!(self.path, "[{index}]");
            let item = UniqueKeys { path: &mut *self.path, duplicate: &mut *self.duplicate };
            let more = items.next_element_seed(item)?;
            self.path.truncate(depth);
            if more.is_none() {
                return Ok(());
            }
            index += 1;
        }
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut fields: A) -> Result<(), A::Error> {
        let depth = self.path.len();
        let mut seen = std::collections::HashSet::new();
        while let Some(key) = fields.next_key_seed(Key)? {
            if depth > 0 {
                self.path.push('.');
            }
            self.path.push_str(&key);
            if !seen.insert(key) {
                *self.duplicate = Some(self.path.clone());
                return Err(serde::de::Error::custom("a key is given more than once"));
            }
            fields.next_value_seed(UniqueKeys { path: &mut *self.path, duplicate: &mut *self.duplicate })?;
            self.path.truncate(depth);
        }
        Ok(())
    }
}

/// An object's key, borrowed from the body when it has no escapes.
struct Key;

impl<'de> serde::de::DeserializeSeed<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Key {
    type Value = std::borrow::Cow<'de, str>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, key: &'de str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Borrowed(key))
    }

    fn visit_str<E>(self, key: &str) -> Result<Self::Value, E> {
        Ok(std::borrow::Cow::Owned(key.to_string()))
    }
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

/// Query parameters, with the same error shape as bodies. A parameter the
/// operation does not take is `400 validation_error` naming it, so a typo
/// (`?staus=failed`) never silently lists everything.
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        refuse_unknown(query, &[query_fields::<T>()])?;
        parse_query(query).map(ApiQuery)
    }
}

/// Two sets of query parameters read from one query string (a list's paging
/// and its filters): a parameter neither takes is refused, naming it.
pub(crate) struct ApiQueries<A, B>(pub A, pub B);

impl<S: Send + Sync, A: DeserializeOwned, B: DeserializeOwned> FromRequestParts<S> for ApiQueries<A, B> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        let query = parts.uri.query().unwrap_or("");
        refuse_unknown(query, &[query_fields::<A>(), query_fields::<B>()])?;
        Ok(ApiQueries(parse_query(query)?, parse_query(query)?))
    }
}

fn parse_query<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let deserializer = serde_urlencoded::Deserializer::new(form_urlencoded::parse(query.as_bytes()));
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        let message = e.into_inner().to_string();
        let field = field_name(&path, &message);
        ApiError::validation(&field, message)
    })
}

/// The first parameter of `query` that none of `known` names, refused.
fn refuse_unknown(query: &str, known: &[&'static [&'static str]]) -> Result<(), ApiError> {
    for (name, _) in form_urlencoded::parse(query.as_bytes()) {
        if !known.iter().any(|fields| fields.contains(&name.as_ref())) {
            let mut accepted: Vec<&str> = known.iter().flat_map(|f| f.iter().copied()).collect();
            accepted.sort_unstable();
            let accepted = if accepted.is_empty() { "none".to_string() } else { accepted.join(", ") };
            // A parameter with no name (`?=5`) would otherwise be refused
            // naming the empty field (the request fuzzer found it).
            let (field, what) = if name.is_empty() {
                ("query", "has a parameter with no name")
            } else {
                (name.as_ref(), "is not a query parameter of this operation")
            };
            return Err(ApiError::validation(field, format!("{what}; it takes: {accepted}")));
        }
    }
    Ok(())
}

/// The parameter names a query type's derived `Deserialize` reads (serde
/// passes them, renamed, to `deserialize_struct`): the extractor's list of
/// known parameters comes from the type itself, so it cannot drift.
fn query_fields<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldNames { fields: &mut fields });
    fields
}

/// A deserializer that only records the field names of the struct asked
/// of it and then stops.
struct FieldNames<'a> {
    fields: &'a mut &'static [&'static str],
}

impl<'de> serde::Deserializer<'de> for FieldNames<'_> {
    type Error = serde::de::value::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: serde::de::Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.fields = fields;
        Err(serde::de::Error::custom("field names recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
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

    /// Issue 29.4: `"amount":"1.00","amount":"900.00"` paid 900.00. A key
    /// given twice is refused wherever it is, naming its path.
    #[test]
    fn a_key_given_twice_is_refused_naming_it() {
        let refused = |body: &str| {
            let error = parse_json::<serde_json::Value>(body.as_bytes()).unwrap_err();
            assert_eq!(error.code, sika_api::ErrorCode::ValidationError, "{body}: {}", error.message);
            error.details.unwrap()["field"].as_str().unwrap().to_string()
        };
        assert_eq!(refused(r#"{"amount":"1.00","amount":"900.00"}"#), "amount");
        assert_eq!(refused(r#"{"from":{"currency":"GHS","amount":1,"amount":9}}"#), "from.amount");
        assert_eq!(refused(r#"{"items":[{"a":1},{"code":"x","code":"y"}]}"#), "items[1].code");
        assert_eq!(refused(r#"{"metadata":{"k":{"deep":[[{"z":1,"z":1}]]}}}"#), "metadata.k.deep[0][0].z");
        assert_eq!(refused(r#"{"a":1,"a":2}"#), "a", "an escaped spelling is the same key");
        // The same key in sibling objects, and numbers of any precision, are fine.
        let fine = r#"{"a":{"x":1},"b":{"x":1.000000000000000000001},"c":[{"x":1},{"x":2}]}"#;
        assert!(parse_json::<serde_json::Value>(fine.as_bytes()).is_ok());
        // Bad syntax is still `bad_request`, trailing text included.
        for body in [r#"{"a":1,"b""#, r#"{"a":1} x"#] {
            let error = parse_json::<serde_json::Value>(body.as_bytes()).unwrap_err();
            assert_eq!(error.code, sika_api::ErrorCode::BadRequest, "{body}");
        }
    }

    #[test]
    fn query_types_name_their_parameters() {
        assert_eq!(query_fields::<sika_api::ListQuery>(), &["limit", "cursor"]);
        assert_eq!(query_fields::<sika_api::MovementFilter>(), &["status", "externalReference"]);
        let known = [query_fields::<sika_api::ListQuery>(), query_fields::<sika_api::MovementFilter>()];
        assert!(refuse_unknown("limit=5&externalReference=x", &known).is_ok());
        let error = refuse_unknown("limit=5&staus=failed", &known).unwrap_err();
        assert_eq!(error.details.unwrap()["field"], "staus");
    }
}
