//! Where errors become HTTP: each `ErrorCode` answers with one status, and
//! an `ApiError` returned by a handler becomes a response the envelope
//! middleware fills in.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use sika_api::ErrorCode;

use crate::domain::error::ApiError;

/// The HTTP status each error code answers with: one per code.
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
        // `ErrorCode` is non-exhaustive: a code added later is the node's failure until mapped.
        _ => StatusCode::INTERNAL_SERVER_ERROR,
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
    fn into_response(self) -> Response {
        let mut response = status_of(&self).into_response();
        response.extensions_mut().insert(self);
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_its_status() {
        assert_eq!(status(ErrorCode::ValidationError), StatusCode::BAD_REQUEST);
        assert_eq!(status(ErrorCode::InvalidState), StatusCode::CONFLICT);
        assert_eq!(status(ErrorCode::SpendCapExceeded), StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(status(ErrorCode::RateLimited), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(status(ErrorCode::InternalError), StatusCode::INTERNAL_SERVER_ERROR);
    }
}
