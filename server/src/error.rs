//! The one place errors become HTTP. Every failure the node answers with is
//! an `ApiError`: a status, a stable code, a message, and optional details.
//! The envelope middleware adds `requestId` when it writes the body.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use sika_engine::{EngineError, MoneyError};

#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Option<Map<String, Value>>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), details: None }
    }

    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.get_or_insert_with(Map::new).insert(key.to_string(), value.into());
        self
    }

    /// `400 validation_error` naming the offending field.
    pub fn validation(field: &str, message: impl Into<String>) -> Self {
        let message = message.into();
        ApiError::new(StatusCode::BAD_REQUEST, "validation_error", format!("{field}: {message}"))
            .with_detail("field", field)
            .with_detail("reason", message)
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::FORBIDDEN, "forbidden", message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    pub fn internal() -> Self {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal_error",
            "the node could not complete the request",
        )
    }

    pub fn unavailable() -> Self {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the node is shutting down; retry shortly",
        )
    }

    /// The error as one item's result in a bulk answer.
    pub fn item_error(&self) -> sika_api::ItemError {
        sika_api::ItemError {
            // Every code the node writes is an `ErrorCode`; one that is not
            // would be a bug, reported as internal rather than lost.
            error: self.code.parse().unwrap_or(sika_api::ErrorCode::InternalError),
            message: self.message.clone(),
            details: self.details.clone(),
        }
    }

    /// The JSON body, with the request id filled in.
    pub fn body(&self, request_id: &str) -> Value {
        let mut body = json!({
            "error": self.code,
            "message": self.message,
            "requestId": request_id,
        });
        if let Some(details) = &self.details {
            body["details"] = Value::Object(details.clone());
        }
        body
    }
}

impl IntoResponse for ApiError {
    /// The body is written by the envelope middleware, which knows the
    /// request id; this only carries the error there.
    fn into_response(self) -> Response {
        let mut response = self.status.into_response();
        response.extensions_mut().insert(self);
        response
    }
}

/// Maps a money error on `field` to a validation error naming it.
pub fn money_error(field: &str, error: MoneyError) -> ApiError {
    ApiError::validation(field, error.to_string())
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> Self {
        match error {
            EngineError::Money(e) => ApiError::validation("amount", e.to_string()),
            EngineError::Invalid { field, message } => ApiError::validation(&field, message),
            EngineError::InsufficientFunds { available, required, currency } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "insufficient_funds",
                format!(
                    "insufficient funds: {available} {currency} available, {required} {currency} required"
                ),
            )
            .with_detail("available", available)
            .with_detail("required", required)
            .with_detail("currency", currency),
            EngineError::Duplicate { reference } => ApiError::new(
                StatusCode::CONFLICT,
                "duplicate",
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
            e @ EngineError::NoRate { .. } => ApiError::validation("currency", e.to_string()),
            EngineError::SpendCapExceeded { cap, limit_usd, attempted_usd } => ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "spend_cap_exceeded",
                format!(
                    "this payout of {attempted_usd} USD would exceed the key's {cap} cap of {limit_usd} USD"
                ),
            )
            .with_detail("cap", cap)
            .with_detail("limitUsd", limit_usd)
            .with_detail("attemptedUsd", attempted_usd),
            EngineError::InvalidState(message) => {
                ApiError::new(StatusCode::CONFLICT, "invalid_state", message)
            }
            e @ EngineError::Conflict(_) => ApiError::new(StatusCode::CONFLICT, "conflict", e.to_string()),
            EngineError::Unavailable => ApiError::unavailable(),
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

pub type ApiResult<T> = Result<T, ApiError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_overflow_is_the_callers_only_when_their_amount_is_too_large() {
        let request = ApiError::from(EngineError::Money(MoneyError::Overflow));
        assert_eq!((request.status, request.code), (StatusCode::BAD_REQUEST, "validation_error"));
        let ledger = ApiError::from(EngineError::Overflow("credits posted"));
        assert_eq!((ledger.status, ledger.code), (StatusCode::INTERNAL_SERVER_ERROR, "internal_error"));
    }
}
