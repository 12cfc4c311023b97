//! Fuzz targets, run as property tests (cargo-fuzz needs a nightly
//! compiler; CI has stable): request decoding (the JSON body extractor's
//! `parse_json` into the `sika_api` request types, amounts included, and a
//! list's query string through `ApiQueries`) and
//! cursor decoding (`Paging::page`). Each is fed arbitrary input and
//! near-valid input (a valid request or cursor with a few edits), and checks
//! that nothing panics, that a valid input reads back as what was written,
//! and that an edited cursor is refused.
//!
//! `SIKA_FUZZ_CASES` sets the cases per round (default 256, a short run in
//! every `cargo test`); `SIKA_FUZZ_SECONDS` keeps running rounds until that
//! many seconds have passed. Each target prints how many inputs it ran:
//!
//! ```text
//! SIKA_FUZZ_SECONDS=600 SIKA_FUZZ_CASES=10000 cargo test -p sika-server --lib http::fuzz::request -- --nocapture
//! ```

#[path = "../../../engine/tests/support/fuzz_runner.rs"]
mod fuzz_runner;

use fuzz_runner::fuzz;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use sika_api::ErrorCode;
use sika_engine::money::{AMOUNT_MINOR_MAX, CURRENCIES};

use crate::domain::error::ApiError;
use crate::domain::pagination::{PAGE_SIZE_MAX, PageQuery, Paging, encode_cursor, page_of_items};
use crate::http::extract::parse_json;

// ---------------------------------------------------------------------------
// Request decoding.

/// The request types the fuzzer writes, by index.
const KINDS: [&str; 5] = ["payout", "collection", "order", "quote", "conversion"];

/// Short text of any characters, within every field's stated maximum.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![3 => "[a-zA-Z0-9_+ -]{0,10}", 1 => "\\PC{0,10}"]
}

/// An amount as a request writes it: a decimal string, or a JSON number,
/// maybe with an exponent. Returns the JSON value and the minor units of
/// `CURRENCIES[currency]` it stands for.
fn amount() -> impl Strategy<Value = (Value, usize, i128)> {
    let minor = prop_oneof![4 => 1i128..=1_000_000, 1 => 1i128..=AMOUNT_MINOR_MAX];
    (0..CURRENCIES.len(), minor, 0u8..3).prop_map(|(currency, minor, form)| {
        let c = CURRENCIES[currency];
        let text = c.format(minor);
        let value = match form {
            0 => Value::String(text),
            1 => Value::Number(text.parse().expect("a JSON number")),
            // The same number as digits times a power of ten: 1050 at scale
            // 2 is 1050e-2. Not 105000e-4: digits written past the
            // currency's are refused, zeros too (issue 29.4).
            _ => {
                let exponent = -i64::from(c.scale);
                Value::Number(format!("{minor}e{exponent}").parse().expect("a JSON number"))
            }
        };
        (value, currency, minor)
    })
}

fn metadata() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        prop::collection::btree_map(
            "[a-z]{1,8}",
            prop_oneof![
                text().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                any::<bool>().prop_map(Value::from)
            ],
            0..3
        )
        .prop_map(|map| Value::Object(map.into_iter().collect())),
    ]
}

fn target() -> impl Strategy<Value = Value> {
    (prop::option::of(text()), prop::option::of(text()), prop::option::of(text()), prop::option::of(text()))
        .prop_map(|(code, account_number, currency, recipient_id)| {
            json!({ "code": code, "accountNumber": account_number, "currency": currency, "recipientId": recipient_id })
        })
}

/// A valid request of kind `KINDS[kind]`, and its amount's currency and
/// minor units (when it has one).
fn request() -> impl Strategy<Value = (usize, Value, Option<(usize, i128)>)> {
    (0..KINDS.len(), amount(), text(), text(), text(), target(), metadata()).prop_map(
        |(kind, (amount, currency, minor), a, b, reference, to, metadata)| {
            let code = CURRENCIES[currency].code;
            let (body, amount) = match KINDS[kind] {
                "payout" => (
                    json!({ "from": { "currency": code, "amount": amount }, "to": to, "externalReference": reference, "narration": a, "metadata": metadata }),
                    Some((currency, minor)),
                ),
                "collection" => (
                    json!({ "amount": amount, "currency": code, "code": a, "accountNumber": b, "externalReference": reference, "metadata": metadata }),
                    Some((currency, minor)),
                ),
                "order" => (
                    json!({ "from": { "method": a, "currency": code, "amount": amount, "chain": b }, "to": to, "externalReference": reference, "metadata": metadata }),
                    Some((currency, minor)),
                ),
                "quote" => (
                    json!({ "from": { "currency": code, "amount": amount }, "to": { "currency": a } }),
                    Some((currency, minor)),
                ),
                _ => (json!({ "quoteId": a, "externalReference": reference }), None),
            };
            (kind, body, amount)
        },
    )
}

/// One edit of a body's bytes.
#[derive(Debug, Clone)]
enum ByteEdit {
    Flip(usize, u8),
    Insert(usize, u8),
    Remove(usize),
    Truncate(usize),
}

/// One edit of a body's JSON value.
#[derive(Debug, Clone)]
enum ValueEdit {
    /// Drop the field at this index of the top-level object.
    Drop(usize),
    /// Add a field no request takes.
    Unknown,
    /// Put another value in place of the field at this index.
    Replace(usize, Value),
    /// Bury the body under many levels of arrays.
    Nest(usize),
}

#[derive(Debug, Clone)]
enum Body {
    Bytes(Vec<u8>),
    Jsonish(String),
    Valid {
        kind: usize,
        body: Value,
        amount: Option<(usize, i128)>,
    },
    EditedBytes {
        kind: usize,
        body: Value,
        edits: Vec<ByteEdit>,
    },
    EditedValue {
        kind: usize,
        body: Value,
        edit: ValueEdit,
    },
    /// A list's query string: (name, value) pairs, encoded.
    Query(Vec<(String, String)>),
    /// Any query string text.
    QueryText(String),
}

fn other_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        "-?[0-9]{1,30}(\\.[0-9]{0,30})?(e-?[0-9]{1,4})?"
            .prop_map(|n| n.parse::<serde_json::Number>().map_or(Value::Null, Value::Number)),
        text().prop_map(Value::from),
        Just(json!([])),
        Just(json!({})),
        "\\PC{300,600}".prop_map(Value::from),
    ]
}

fn body() -> impl Strategy<Value = Body> {
    let byte_edit = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| ByteEdit::Flip(i, b)),
        (any::<usize>(), prop::sample::select(b"{}[]\",:0.-e\\ ".to_vec()))
            .prop_map(|(i, b)| ByteEdit::Insert(i, b)),
        any::<usize>().prop_map(ByteEdit::Remove),
        any::<usize>().prop_map(ByteEdit::Truncate),
    ];
    let value_edit = prop_oneof![
        any::<usize>().prop_map(ValueEdit::Drop),
        Just(ValueEdit::Unknown),
        (any::<usize>(), other_value()).prop_map(|(i, v)| ValueEdit::Replace(i, v)),
        (100usize..300).prop_map(ValueEdit::Nest),
    ];
    prop_oneof![
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Body::Bytes),
        1 => "[{}\\[\\]\",:0-9a-zA-Z.e -]{0,100}".prop_map(Body::Jsonish),
        2 => request().prop_map(|(kind, body, amount)| Body::Valid { kind, body, amount }),
        2 => (request(), prop::collection::vec(byte_edit, 1..4))
            .prop_map(|((kind, body, _), edits)| Body::EditedBytes { kind, body, edits }),
        2 => (request(), value_edit)
            .prop_map(|((kind, body, _), edit)| Body::EditedValue { kind, body, edit }),
        1 => prop::collection::vec((query_name(), "\\PC{0,12}"), 0..5).prop_map(Body::Query),
        1 => "[a-zA-Z0-9=&%+._ -]{0,60}".prop_map(Body::QueryText),
    ]
}

fn query_name() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(QUERY_NAMES.to_vec()).prop_map(String::from),
        1 => "\\PC{0,8}",
    ]
}

/// The parameters a movement list takes (`ListQuery` and `MovementFilter`).
const QUERY_NAMES: [&str; 4] = ["limit", "cursor", "status", "externalReference"];

/// Decodes a query string as a movement list's extractor does, or `None`
/// when it cannot be part of a request's URI at all.
fn decode_query(query: &str) -> Option<Result<(), ApiError>> {
    use axum::extract::FromRequestParts;
    use std::future::Future;
    let request = axum::http::Request::builder().uri(format!("/v1/payouts?{query}")).body(()).ok()?;
    let (mut parts, ()) = request.into_parts();
    let decoding =
        crate::http::extract::ApiQueries::<sika_api::ListQuery, sika_api::MovementFilter>::from_request_parts(
            &mut parts,
            &(),
        );
    // The extractor never waits: one poll finishes it.
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match std::pin::pin!(decoding).poll(&mut context) {
        std::task::Poll::Ready(result) => Some(result.map(|_| ())),
        std::task::Poll::Pending => panic!("the query extractor waited"),
    }
}

fn check_query(query: &str) -> Result<(), TestCaseError> {
    let Some(decoded) = decode_query(query) else { return Ok(()) };
    let unknown =
        form_urlencoded::parse(query.as_bytes()).find(|(name, _)| !QUERY_NAMES.contains(&name.as_ref()));
    match (decoded, unknown) {
        (Ok(()), None) => Ok(()),
        (Ok(()), Some((name, _))) => Err(TestCaseError::fail(format!("unknown parameter {name:?} accepted"))),
        (Err(e), unknown) => {
            check_refusal(&e)?;
            if let Some((name, _)) = unknown {
                let field = e.details.as_ref().and_then(|d| d.get("field")).and_then(Value::as_str);
                let expected = if name.is_empty() { "query" } else { name.as_ref() };
                prop_assert_eq!(field, Some(expected), "the refusal names the unknown parameter");
            }
            Ok(())
        }
    }
}

fn edit_bytes(mut bytes: Vec<u8>, edits: &[ByteEdit]) -> Vec<u8> {
    for edit in edits {
        let len = bytes.len();
        match *edit {
            ByteEdit::Flip(i, b) if len > 0 => bytes[i % len] ^= b,
            ByteEdit::Insert(i, b) => bytes.insert(i % (len + 1), b),
            ByteEdit::Remove(i) if len > 0 => {
                bytes.remove(i % len);
            }
            ByteEdit::Truncate(i) => bytes.truncate(i % (len + 1)),
            _ => {}
        }
    }
    bytes
}

fn edit_value(body: &Value, edit: &ValueEdit) -> Value {
    let mut body = body.clone();
    let Value::Object(fields) = &mut body else { return body };
    let names: Vec<String> = fields.keys().cloned().collect();
    match edit {
        ValueEdit::Drop(i) => {
            fields.remove(&names[i % names.len()]);
        }
        ValueEdit::Unknown => {
            fields.insert("notAField".into(), json!(1));
        }
        ValueEdit::Replace(i, value) => {
            fields.insert(names[i % names.len()].clone(), value.clone());
        }
        ValueEdit::Nest(depth) => {
            return (0..*depth).fold(body, |inner, _| json!([inner]));
        }
    }
    body
}

/// Decodes `bytes` as request kind `kind`, returning the decoded request
/// written back as JSON.
fn decode(kind: usize, bytes: &[u8]) -> Result<Value, ApiError> {
    fn typed<T: DeserializeOwned + Serialize>(bytes: &[u8]) -> Result<Value, ApiError> {
        parse_json::<T>(bytes).map(|request| serde_json::to_value(request).expect("a request serializes"))
    }
    match KINDS[kind] {
        "payout" => typed::<sika_api::payouts::CreatePayout>(bytes),
        "collection" => typed::<sika_api::collections::CreateCollection>(bytes),
        "order" => typed::<sika_api::orders::CreateOrder>(bytes),
        "quote" => typed::<sika_api::conversions::CreateQuote>(bytes),
        _ => typed::<sika_api::conversions::CreateConversion>(bytes),
    }
}

/// A refusal is a client error with a message, naming the field when it is
/// about one.
fn check_refusal(error: &ApiError) -> Result<(), TestCaseError> {
    prop_assert!(
        matches!(error.code, ErrorCode::BadRequest | ErrorCode::ValidationError),
        "refused with {:?}: {}",
        error.code,
        error.message
    );
    prop_assert!(!error.message.is_empty());
    if error.code == ErrorCode::ValidationError {
        let field = error.details.as_ref().and_then(|d| d.get("field")).and_then(Value::as_str);
        prop_assert!(field.is_some_and(|f| !f.is_empty()), "a validation error names its field: {:?}", error);
    }
    Ok(())
}

/// The amount a decoded request carries, read as the handlers read it.
fn amount_of(kind: usize, decoded: &Value) -> Option<&str> {
    let amount = match KINDS[kind] {
        "collection" => &decoded["amount"],
        _ => &decoded["from"]["amount"],
    };
    amount.as_str()
}

fn check_body(input: &Body) -> Result<(), TestCaseError> {
    match input {
        Body::Bytes(bytes) => (0..KINDS.len()).try_for_each(|kind| match decode(kind, bytes) {
            Ok(_) => Ok(()),
            Err(e) => check_refusal(&e),
        }),
        Body::Jsonish(text) => (0..KINDS.len()).try_for_each(|kind| match decode(kind, text.as_bytes()) {
            Ok(_) => Ok(()),
            Err(e) => check_refusal(&e),
        }),
        Body::Valid { kind, body, amount } => {
            let bytes = serde_json::to_vec(body).expect("a body serializes");
            let decoded = decode(*kind, &bytes)
                .map_err(|e| TestCaseError::fail(format!("a valid body was refused: {}", e.message)))?;
            // What was written is what was read (absent optional fields read as null).
            let mut expected = body.clone();
            strip_nulls(&mut expected);
            let mut actual = decoded.clone();
            strip_nulls(&mut actual);
            if let Some((currency, minor)) = amount {
                let text = amount_of(*kind, &decoded).expect("the amount is kept as text");
                let currency = CURRENCIES[*currency];
                prop_assert_eq!(currency.parse(text, false), Ok(*minor), "{} read as {:?}", body, text);
                // The amount's text may be rewritten (an exponent moved into the digits).
                for value in [&mut expected, &mut actual] {
                    let slot = if KINDS[*kind] == "collection" {
                        &mut value["amount"]
                    } else {
                        &mut value["from"]["amount"]
                    };
                    *slot = Value::Null;
                }
            }
            prop_assert_eq!(actual, expected);
            Ok(())
        }
        Body::EditedBytes { kind, body, edits } => {
            let bytes = edit_bytes(serde_json::to_vec(body).expect("a body serializes"), edits);
            match decode(*kind, &bytes) {
                Ok(_) => Ok(()),
                Err(e) => check_refusal(&e),
            }
        }
        Body::Query(pairs) => {
            let mut query = form_urlencoded::Serializer::new(String::new());
            for (name, value) in pairs {
                query.append_pair(name, value);
            }
            check_query(&query.finish())
        }
        Body::QueryText(text) => check_query(text),
        Body::EditedValue { kind, body, edit } => {
            let edited = edit_value(body, edit);
            let bytes = serde_json::to_vec(&edited).expect("a body serializes");
            match decode(*kind, &bytes) {
                Ok(_) => {
                    prop_assert!(
                        !matches!(edit, ValueEdit::Unknown | ValueEdit::Nest(_)),
                        "{} was accepted",
                        edited
                    );
                    Ok(())
                }
                Err(e) => check_refusal(&e),
            }
        }
    }
}

fn strip_nulls(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.retain(|_, v| !v.is_null());
            fields.values_mut().for_each(strip_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

#[test]
fn request_decoding() {
    fuzz("request_decoding", body(), |input| check_body(&input));
}

/// Found by `request_decoding`: a parameter with no name was refused
/// naming the empty field.
#[test]
fn a_query_parameter_without_a_name_is_refused_naming_the_query() {
    for query in ["=5", "limit=5&=x", "&=&"] {
        let error = decode_query(query).expect("a valid URI").expect_err(query);
        let field = error.details.as_ref().and_then(|d| d.get("field")).and_then(Value::as_str);
        assert_eq!(field, Some("query"), "{query}: {}", error.message);
    }
    assert!(decode_query("limit=5&status=failed").expect("a valid URI").is_ok());
}

// ---------------------------------------------------------------------------
// Cursor decoding.

#[derive(Debug, Clone)]
enum CursorInput {
    /// Any cursor and limit text.
    Arbitrary { cursor: String, limit: String },
    /// A cursor the node signed, read back.
    Valid { secret: Vec<u8>, scope: String, position: u64 },
    /// A cursor the node signed, edited.
    Edited { secret: Vec<u8>, scope: String, position: u64, edits: Vec<(usize, char, u8)> },
}

fn cursor_input() -> impl Strategy<Value = CursorInput> {
    let secret = prop::collection::vec(any::<u8>(), 0..40);
    let scope = "\\PC{0,30}";
    let position = prop_oneof![0u64..1_000, any::<u64>()];
    let edit = (any::<usize>(), prop::sample::select("AZaz09-_=+/.".chars().collect::<Vec<_>>()), 0u8..3);
    prop_oneof![
        1 => ("\\PC{0,40}|[A-Za-z0-9_-]{20,34}", "\\PC{0,5}|[+-]?[0-9]{1,4}")
            .prop_map(|(cursor, limit)| CursorInput::Arbitrary { cursor, limit }),
        1 => (secret.clone(), scope, position.clone())
            .prop_map(|(secret, scope, position)| CursorInput::Valid { secret, scope, position }),
        2 => (secret, "[a-z/_]{0,30}", position, prop::collection::vec(edit, 1..3))
            .prop_map(|(secret, scope, position, edits)| CursorInput::Edited { secret, scope, position, edits }),
    ]
}

/// Applies (index, character, how): 0 replaces, 1 inserts, 2 removes.
fn edit_cursor(cursor: &str, edits: &[(usize, char, u8)]) -> String {
    let mut chars: Vec<char> = cursor.chars().collect();
    for &(i, c, how) in edits {
        let len = chars.len();
        match how {
            0 if len > 0 => chars[i % len] = c,
            1 => chars.insert(i % (len + 1), c),
            2 if len > 0 => {
                chars.remove(i % len);
            }
            _ => {}
        }
    }
    chars.into_iter().collect()
}

fn check_cursor(input: &CursorInput) -> Result<(), TestCaseError> {
    let query = |cursor: String, limit: Option<String>| PageQuery { limit, cursor: Some(cursor) };
    match input {
        CursorInput::Arbitrary { cursor, limit } => {
            let page = query(cursor.clone(), Some(limit.clone())).page(b"secret", "scope");
            let limit_ok = limit.parse::<usize>().is_ok_and(|n| (1..=PAGE_SIZE_MAX).contains(&n));
            match page {
                Ok(page) => {
                    prop_assert!(limit_ok, "limit {:?} was accepted", limit);
                    // An unsigned cursor is refused; an empty one is the first page.
                    prop_assert!(
                        cursor.is_empty() && page.before.is_none(),
                        "cursor {:?} was accepted",
                        cursor
                    );
                }
                Err(e) => {
                    prop_assert!(!limit_ok || !cursor.is_empty(), "refused: {}", e.message);
                    check_refusal(&e)?;
                }
            }
            // A list held in memory pages from whatever offset a cursor says.
            let items: Vec<u8> = (0..5).collect();
            let _ = page_of_items(items, &query(cursor.clone(), None), b"secret", "scope");
        }
        CursorInput::Valid { secret, scope, position } => {
            let cursor = encode_cursor(secret, scope, *position);
            let page = query(cursor.clone(), None).page(secret, scope);
            prop_assert_eq!(page.map(|p| p.before).ok(), Some(Some(*position)));
            prop_assert!(
                query(cursor.clone(), None).page(secret, &format!("{scope}x")).is_err(),
                "another list's cursor"
            );
            // (HMAC pads a short key with zeros, so the other secret ends in 1.)
            let mut other = secret.clone();
            other.push(1);
            prop_assert!(query(cursor.clone(), None).page(&other, scope).is_err(), "another node's cursor");
            let items: Vec<u8> = (0..5).collect();
            let listed = page_of_items(items, &query(cursor, None), secret, scope)
                .map_err(|e| TestCaseError::fail(e.message))?;
            prop_assert!(listed.data.len() <= 5);
        }
        CursorInput::Edited { secret, scope, position, edits } => {
            let cursor = encode_cursor(secret, scope, *position);
            let edited = edit_cursor(&cursor, edits);
            if edited != cursor && !edited.is_empty() {
                let page = query(edited.clone(), None).page(secret, scope);
                prop_assert!(
                    page.is_err(),
                    "the edited cursor {:?} (from {:?}) was accepted: {:?}",
                    edited,
                    cursor,
                    page
                );
                check_refusal(&page.unwrap_err())?;
            }
        }
    }
    Ok(())
}

#[test]
fn cursor_decoding() {
    fuzz("cursor_decoding", cursor_input(), |input| check_cursor(&input));
}
