//! The error body every failure answers with, and its stable codes.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use strum::{IntoStaticStr, VariantArray};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{IntoResponses, ToSchema};

/// A failure's stable, machine-readable code. Clients branch on this, never
/// on `message`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema, IntoStaticStr, VariantArray,
)]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
// Not `non_exhaustive`: the server's mapping from code to status is a
// match the compiler checks names every code.
pub enum ErrorCode {
    /// A field is missing or invalid; `details.field` names it.
    ValidationError,
    /// The request cannot be carried out as sent (an expired or executed
    /// quote, a hold that is no longer pending, an unknown version date).
    BadRequest,
    /// No credentials, or credentials the node does not accept.
    Unauthorized,
    /// The credentials are valid but may not do this (a missing scope, an
    /// API key where a team member's session is required).
    Forbidden,
    NotFound,
    MethodNotAllowed,
    /// The resource changed concurrently; read it again and retry.
    Conflict,
    /// An `externalReference` already used with a different request.
    Duplicate,
    /// The resource is not in a state that allows this.
    InvalidState,
    InsufficientFunds,
    /// A live key's spend cap would be exceeded.
    SpendCapExceeded,
    /// The organization must set its representative first.
    RepresentativeRequired,
    OrganizationSuspended,
    /// The payment method is down.
    MethodUnavailable,
    /// The node has no current rate for a currency pair (`details.pair`):
    /// none is configured, or the rate feed is older than its `max_age`.
    RatesUnavailable,
    PayloadTooLarge,
    UnsupportedMediaType,
    /// Too many requests; wait for `Retry-After`.
    RateLimited,
    InternalError,
    /// The node is shutting down or cannot write; retry shortly.
    Unavailable,
    /// The node's disk refuses writes (it is full); nothing was done.
    /// Writing resumes by itself once there is room; retry later.
    StorageUnavailable,
}

impl ErrorCode {
    /// The code as it is written on the wire.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// Every code, in declaration order.
    pub fn all() -> &'static [ErrorCode] {
        Self::VARIANTS
    }
}

impl std::str::FromStr for ErrorCode {
    type Err = String;

    /// Reads a code as it is written on the wire.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        serde_json::from_value(serde_json::Value::from(text))
            .map_err(|_| format!("unknown error code '{text}'"))
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What every failed request answers with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(example = json!({
    "error": "validation_error",
    "message": "to.accountNumber: is required for mtn_gh",
    "details": { "field": "to.accountNumber", "reason": "is required for mtn_gh" },
    "requestId": "req_0VbowfAbCdEf"
}))]
pub struct ErrorBody {
    pub error: ErrorCode,
    /// A sentence for a developer; it may change between releases.
    pub message: String,
    /// More about the failure: `field` names the offending field of a
    /// validation error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Map<String, serde_json::Value>>,
    /// The request's id, as in the `x-request-id` header.
    pub request_id: String,
}

/// Why one item of a bulk request was refused: the error body of a single
/// request for that item, without a request id (the bulk request's own is
/// in its `x-request-id` header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ItemError {
    pub error: ErrorCode,
    pub message: String,
    /// `field` names the offending field, with the item's place in the
    /// request (`items[3].name`).
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Map<String, serde_json::Value>>,
}

/// The refusals every operation behind an API key can answer, documented
/// once: list it in an operation's `responses` after its own statuses.
#[derive(utoipa::IntoResponses)]
pub enum Refusals {
    /// No valid API key (`unauthorized`)
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// The key lacks the scope the operation's security names, or the
    /// caller's address is not among the key's allowed addresses (`forbidden`)
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// Too many requests (`rate_limited`); retry after `Retry-After` seconds
    #[response(status = 429)]
    RateLimited(ErrorBody),
    /// The node cannot serve this now: it is draining (`unavailable`) or
    /// cannot write (`storage_unavailable`: a storage error, or on the
    /// sandbox free disk below the operator's reserve), it has no current rate for a pair the operation
    /// needs (`rates_unavailable`, `details.pair`), the payment method is
    /// down (`method_unavailable`), or a pool of receiving details the
    /// operator configured is used up (`unavailable`). Retry later.
    #[response(status = 503)]
    Unavailable(ErrorBody),
}

/// The refusals of an operation that needs an owner's or admin's session
/// (`sess_…`) rather than an API key, documented once.
#[derive(utoipa::IntoResponses)]
pub enum SessionRefusals {
    /// No valid credentials (`unauthorized`)
    #[response(status = 401)]
    Unauthorized(ErrorBody),
    /// Not an owner's or admin's session (`forbidden`)
    #[response(status = 403)]
    Forbidden(ErrorBody),
    /// Too many requests (`rate_limited`); retry after `Retry-After` seconds
    #[response(status = 429)]
    RateLimited(ErrorBody),
}

/// The responses of `A`, then those of `B` (which win where both document
/// a status): a set of refusals built from smaller ones, so each status is
/// described once.
pub struct With<A, B>(PhantomData<(A, B)>);

impl<A: IntoResponses, B: IntoResponses> IntoResponses for With<A, B> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let mut responses = A::responses();
        responses.extend(B::responses());
        responses
    }
}

/// The 409 of a create whose `externalReference` was already used.
#[derive(utoipa::IntoResponses)]
pub enum Duplicate {
    /// The externalReference was used with a body of another meaning
    /// (`duplicate`); amounts are compared by value, so `"10"`, `10.0` and
    /// `"10.00"` are one amount
    #[response(status = 409)]
    Duplicate(ErrorBody),
}

/// The answers a create that takes an `externalReference` adds to its own:
/// `200` with `T`, the earlier request's answer, when the same reference
/// comes again with the same body, and [`Duplicate`] when it comes with
/// another.
pub struct Replays<T>(PhantomData<T>);

impl<T: ToSchema> IntoResponses for Replays<T> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        let content =
            ContentBuilder::new().schema(Some(RefOr::Ref(Ref::from_schema_name(T::name())))).build();
        let replay = ResponseBuilder::new()
            .description(
                "A replay of an earlier request with the same externalReference and body \
                 (compared by meaning: key order, spacing, an amount's trailing zeros or \
                 number-or-string form, a currency's case and null fields do not matter)",
            )
            .content("application/json", content)
            .build();
        let mut responses = Duplicate::responses();
        responses.insert("200".to_string(), RefOr::T(replay));
        responses
    }
}

/// The 400 of an operation whose only bad request is an unknown version.
#[derive(utoipa::IntoResponses)]
pub enum UnknownVersion {
    /// An unknown `sika-version` header (`bad_request`)
    #[response(status = 400)]
    BadRequest(ErrorBody),
}

/// The refusals of an operation whose only bad request is an unknown
/// `sika-version` header: that 400, then `R` ([`Refusals`] unless named).
pub type VersionRefusals<R = Refusals> = With<UnknownVersion, R>;

/// The 400 of a list whose only query is its paging.
#[derive(utoipa::IntoResponses)]
pub enum BadPage {
    /// A bad `limit` or `cursor`, or a query parameter the operation does
    /// not take (`validation_error`, `details.field` naming it), or an unknown
    /// `sika-version` header
    #[response(status = 400)]
    BadRequest(ErrorBody),
}

/// The refusals of a list whose only query is its paging.
pub type PageRefusals = With<BadPage, Refusals>;

/// What a JSON body can get wrong before its fields are read.
#[derive(utoipa::IntoResponses)]
pub enum BadBody {
    /// The body is larger than 1 MiB (`payload_too_large`)
    #[response(status = 413)]
    PayloadTooLarge(ErrorBody),
    /// The body is not JSON (`unsupported_media_type`)
    #[response(status = 415)]
    UnsupportedMediaType(ErrorBody),
}

/// The refusals of an operation that reads a JSON body: the body too large
/// (413) or not JSON (415), then `R` ([`Refusals`] unless named). Its 400
/// for a field the body gets wrong is the operation's own.
pub type BodyRefusals<R = Refusals> = With<BadBody, R>;

/// A resource an operation names by id: what the documents call it and
/// how its ids begin. The envelope a read of the resource answers with
/// implements it (the table in `resources.rs`), so one type names the
/// operation's body, its `{id}` and its 404.
pub trait Resource {
    /// The resource in a sentence: "No such payout in this organization".
    const NAME: &'static str;
    /// How its ids begin (`pl_`), for the `{id}` parameter's description.
    const ID_PREFIX: &'static str;
}

/// The 404 of an operation on one `T` of the caller's organization.
pub struct NoSuch<T>(PhantomData<T>);

impl<T: Resource> IntoResponses for NoSuch<T> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        refusal("404", format!("No such {} in this organization", T::NAME))
    }
}

/// The refusals of an operation on one `T` whose only bad request is an
/// unknown `sika-version` header: [`NoSuch`], then [`VersionRefusals`]
/// with `R` ([`Refusals`] unless named).
pub type ReadRefusals<T, R = Refusals> = With<NoSuch<T>, VersionRefusals<R>>;

/// The 400 of an operation whose JSON body's fields are checked.
#[derive(utoipa::IntoResponses)]
pub enum BadField {
    /// A field is missing or invalid (`validation_error`, with
    /// `details.field`), or the `sika-version` header is unknown
    #[response(status = 400)]
    BadRequest(ErrorBody),
}

/// The refusals of an operation whose only bad request is a field of its
/// JSON body or an unknown version: [`BadField`], then [`BodyRefusals`]
/// with `R` ([`Refusals`] unless named).
pub type FieldRefusals<R = Refusals> = With<BadField, BodyRefusals<R>>;

/// One status answered with an [`ErrorBody`], as a derived
/// `IntoResponses` writes it, for descriptions built from a [`Resource`].
pub(crate) fn refusal(status: &str, description: String) -> BTreeMap<String, RefOr<Response>> {
    let content =
        ContentBuilder::new().schema(Some(RefOr::Ref(Ref::from_schema_name(ErrorBody::name())))).build();
    let response = ResponseBuilder::new().description(description).content("application/json", content);
    BTreeMap::from([(status.to_string(), RefOr::T(response.build()))])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_written_and_read_as_serde_does() {
        for &code in ErrorCode::VARIANTS {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
            assert_eq!(code.as_str().parse::<ErrorCode>(), Ok(code));
        }
    }
}
