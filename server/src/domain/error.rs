//! Every failure the node answers with is an `ApiError`: a stable code
//! (`sika_api::ErrorCode`), a message, and optional details. It knows
//! nothing of HTTP: `crate::http::error` maps each code to its one status,
//! and the envelope middleware writes the body with its `requestId`.

use serde_json::{Map, Value, json};
use sika_api::ErrorCode;
use sika_engine::{EngineError, MoneyError};

#[derive(Debug, Clone)]
pub(crate) struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Map<String, Value>>,
    /// A `validation_error` for what the organization already keeps rather
    /// than the request's own shape: a quota the request would pass. The
    /// code stays `validation_error` (CONTRACT.md pins it) and the answer
    /// is 413, which `http::error` reads from here.
    pub over_quota: bool,
}

impl ApiError {
    pub(crate) fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError { code, message: message.into(), details: None, over_quota: false }
    }

    /// `413 validation_error`: storing this would pass a quota of `limit`
    /// bytes, of which `used` are taken; `details.field` names what was
    /// sent.
    pub(crate) fn over_quota(field: &str, message: impl Into<String>, limit: u64, used: u64) -> Self {
        let mut error =
            ApiError::validation(field, message).with_detail("limit", limit).with_detail("used", used);
        error.over_quota = true;
        error
    }

    pub(crate) fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.get_or_insert_with(Map::new).insert(key.to_string(), value.into());
        self
    }

    /// `400 validation_error` naming the offending field.
    pub(crate) fn validation(field: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        ApiError::new(ErrorCode::ValidationError, format!("{field}: {message}"))
            .with_detail("field", field)
            .with_detail("reason", message)
    }

    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::BadRequest, message)
    }

    pub(crate) fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Unauthorized, message)
    }

    pub(crate) fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Forbidden, message)
    }

    pub(crate) fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::NotFound, message)
    }

    pub(crate) fn internal() -> Self {
        ApiError::new(ErrorCode::InternalError, "the node could not complete the request")
    }

    pub(crate) fn unavailable() -> Self {
        ApiError::new(ErrorCode::Unavailable, "the node is shutting down; retry shortly")
    }

    /// `503 unavailable` for a reason the operator must fix (an exhausted
    /// address or account pool).
    pub(crate) fn unavailable_because(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::Unavailable, message)
    }

    /// No current rate between two currencies: none is configured, or the
    /// feed is older than its `max_age`.
    pub(crate) fn rates_unavailable(from: &str, to: &str) -> Self {
        ApiError::new(
            ErrorCode::RatesUnavailable,
            format!("no current rate from {from} to {to}: the operator has configured none, or the rate feed is stale"),
        )
        .with_detail("pair", format!("{from}/{to}"))
    }

    /// The error as one item's result in a bulk answer.
    pub(crate) fn item_error(&self) -> sika_api::ItemError {
        sika_api::ItemError { error: self.code, message: self.message.clone(), details: self.details.clone() }
    }

    /// The JSON body, with the request id filled in.
    pub(crate) fn body(&self, request_id: &str) -> Value {
        let mut body = json!({
            "error": self.code.as_str(),
            "message": self.message,
            "requestId": request_id,
        });
        if let Some(details) = &self.details {
            body["details"] = Value::Object(details.clone());
        }
        body
    }
}

/// Maps a money error on `field` to a validation error naming it.
pub(crate) fn money_error(field: &str, error: MoneyError) -> ApiError {
    ApiError::validation(field, error.to_string())
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Money(e) => ApiError::validation("amount", e.to_string()),
            EngineError::Invalid { field, message } => ApiError::validation(&field, message),
            EngineError::InsufficientFunds { available, required, currency } => ApiError::new(
                ErrorCode::InsufficientFunds,
                format!(
                    "insufficient funds: {available} {currency} available, {required} {currency} required"
                ),
            )
            .with_detail("available", available)
            .with_detail("required", required)
            .with_detail("currency", currency),
            EngineError::Duplicate { reference } => ApiError::new(
                ErrorCode::Duplicate,
                format!("externalReference '{reference}' was already used with a different request body"),
            )
            .with_detail("field", "externalReference"),
            EngineError::NotFound { resource, id } => {
                ApiError::not_found(format!("{resource} '{id}' not found"))
            }
            e @ (EngineError::QuoteExpired(_) | EngineError::QuoteExecuted(_)) => {
                ApiError::bad_request(e.to_string())
            }
            e @ EngineError::NotPending(_) => ApiError::bad_request(e.to_string()),
            EngineError::NoRate { from, to } => ApiError::rates_unavailable(&from, &to),
            EngineError::SpendCapExceeded { cap, limit_usd, attempted_usd } => ApiError::new(
                ErrorCode::SpendCapExceeded,
                format!(
                    "this payout of {attempted_usd} USD would exceed the key's {cap} cap of {limit_usd} USD"
                ),
            )
            .with_detail("cap", cap)
            .with_detail("limitUsd", limit_usd)
            .with_detail("attemptedUsd", attempted_usd),
            EngineError::InvalidState(message) => ApiError::new(ErrorCode::InvalidState, message),
            e @ EngineError::Conflict(_) => ApiError::new(ErrorCode::Conflict, e.to_string()),
            EngineError::Unavailable => ApiError::unavailable(),
            EngineError::Standby(reason) => {
                ApiError::unavailable_because(format!("this node is a standby: {reason}"))
            }
            // Counted by the engine and logged once per interval by the
            // node (`runtime::node`), not once per refused request.
            EngineError::Storage(message) => ApiError::new(ErrorCode::StorageUnavailable, message),
            // A ledger total or counter out of range is the node's failure
            // (a request's own amount too large arrives as `Money` above).
            e @ EngineError::Overflow(_) => {
                tracing::error!(error = %e, "ledger arithmetic overflow");
                ApiError::internal()
            }
            other => {
                tracing::error!(error = %other, "engine failure");
                ApiError::internal()
            }
        }
    }
}

pub(crate) type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overflow_is_the_callers_only_when_their_amount_is_too_large() {
        let request = ApiError::from(EngineError::Money(MoneyError::Overflow));
        assert_eq!(request.code, ErrorCode::ValidationError);
        let ledger = ApiError::from(EngineError::Overflow("credits posted"));
        assert_eq!(ledger.code, ErrorCode::InternalError);
    }
}
