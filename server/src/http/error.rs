//! Where errors become HTTP: each `ErrorCode` answers with one status, and
//! an `ApiError` returned by a handler becomes a response the envelope
//! middleware fills in.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sika_api::ErrorCode;

use crate::domain::error::ApiError;

/// The HTTP status each error code answers with: one per code. The match
/// names every code, so a code added to `ErrorCode` does not compile until
/// it has its status.
pub(crate) fn status(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::ValidationError | ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
        ErrorCode::Unauthorized => StatusCode::UNAUTHORIZED,
        ErrorCode::Forbidden | ErrorCode::OrganizationSuspended => StatusCode::FORBIDDEN,
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::MethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
        ErrorCode::Conflict | ErrorCode::Duplicate | ErrorCode::InvalidState => StatusCode::CONFLICT,
        ErrorCode::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorCode::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ErrorCode::InsufficientFunds | ErrorCode::SpendCapExceeded | ErrorCode::RepresentativeRequired => {
            StatusCode::UNPROCESSABLE_ENTITY
        }
        ErrorCode::RateLimited => StatusCode::TOO_MANY_REQUESTS,
        ErrorCode::MethodUnavailable
        | ErrorCode::RatesUnavailable
        | ErrorCode::Unavailable
        | ErrorCode::StorageUnavailable => StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::InternalError => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The status an error answers with: its code's, except that a quota
/// refusal keeps its `validation_error` code and answers 413 (CONTRACT.md,
/// "413 validation_error with details.limit and details.used").
pub(crate) fn status_of(error: &ApiError) -> StatusCode {
    if error.over_quota { StatusCode::PAYLOAD_TOO_LARGE } else { status(error.code) }
}

impl IntoResponse for ApiError {
    /// The body is written by the envelope middleware, which knows the
    /// request id; this only carries the error there.
    /// A `rate_limited` error's `details.retryAfter` is also its
    /// `Retry-After` header.
    fn into_response(self) -> Response {
        let mut response = status_of(&self).into_response();
        let retry_after = self.details.as_ref().and_then(|d| d.get("retryAfter")).and_then(|v| v.as_u64());
        if let (ErrorCode::RateLimited, Some(seconds)) = (self.code, retry_after) {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response.extensions_mut().insert(self);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code's status, written out from the spec's table of errors
    /// (`payments-api.md`, "Errors") and CONTRACT.md where the spec is
    /// silent, by wire name: a code missing here fails the test.
    const STATUSES: &[(&str, u16)] = &[
        ("validation_error", 400),
        ("bad_request", 400),
        ("unauthorized", 401),
        ("forbidden", 403),
        ("organization_suspended", 403),
        ("not_found", 404),
        ("method_not_allowed", 405),
        ("conflict", 409),
        ("duplicate", 409),
        ("invalid_state", 409),
        ("payload_too_large", 413),
        ("unsupported_media_type", 415),
        ("insufficient_funds", 422),
        ("spend_cap_exceeded", 422),
        ("representative_required", 422),
        ("rate_limited", 429),
        ("internal_error", 500),
        ("unavailable", 503),
        ("method_unavailable", 503),
        ("rates_unavailable", 503),
        ("storage_unavailable", 503),
    ];

    #[test]
    fn every_code_has_its_status() {
        for &code in ErrorCode::all() {
            let expected = STATUSES
                .iter()
                .find(|(name, _)| *name == code.as_str())
                .unwrap_or_else(|| panic!("{code} has no expected status in this test"));
            assert_eq!(status(code).as_u16(), expected.1, "{code}");
        }
        assert_eq!(STATUSES.len(), ErrorCode::all().len(), "a name in the table is no code");
    }

    #[test]
    fn a_rate_limited_error_says_when_to_retry_in_its_header() {
        let error = ApiError::new(ErrorCode::RateLimited, "slow down").with_detail("retryAfter", 7);
        assert_eq!(error.into_response().headers()[header::RETRY_AFTER], "7");
        let other = ApiError::new(ErrorCode::Conflict, "again").with_detail("retryAfter", 7);
        assert!(other.into_response().headers().get(header::RETRY_AFTER).is_none());
    }
}
