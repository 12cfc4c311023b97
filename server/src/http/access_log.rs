//! One log line per API request, as CONTRACT.md pins it ("Logs"): the
//! request id, the stack, the method, the matched route template (never a
//! raw path, which may carry ids or a payer's link), the status, the
//! duration, the caller's address, the error code of an error answer, and
//! the organization once the caller is known; an internal error's line
//! (at error level) adds its `cause` and `causeAt`, the source line that
//! raised it. No body and no
//! header is logged, so no secret can reach a log line.

use axum::extract::{MatchedPath, Request};
use axum::middleware::Next;
use axum::response::Response;

use crate::domain::principal::Caller;

/// Copies the matched route template onto the response, where the envelope
/// (outside the router, so it never sees the match) finds it.
pub(crate) async fn remember_route(request: Request, next: Next) -> Response {
    let route = request.extensions().get::<MatchedPath>().cloned();
    let mut response = next.run(request).await;
    if let Some(route) = route {
        response.extensions_mut().insert(route);
    }
    response
}

/// What one request line says.
pub(crate) struct Line<'a> {
    pub request_id: &'a str,
    pub stack: &'a str,
    pub method: &'a str,
    pub response: &'a axum::http::response::Parts,
    pub duration: std::time::Duration,
    /// The caller's address, when known.
    pub client: Option<std::net::IpAddr>,
    /// The error object's code, on an error answer.
    pub error: Option<sika_api::ErrorCode>,
    /// An internal error's cause and the line that raised it, which the
    /// body never carries.
    pub cause: Option<&'a crate::domain::error::Cause>,
}

/// The matched route template of an answered request, or `unmatched`.
pub(crate) fn route(response: &axum::http::response::Parts) -> &str {
    response.extensions.get::<MatchedPath>().map_or("unmatched", MatchedPath::as_str)
}

pub(crate) fn log(line: &Line<'_>) {
    let route = route(line.response);
    let organization = line.response.extensions.get::<Caller>().map(|c| c.organization.as_str());
    let client = line.client.map(tracing::field::display);
    let error = line.error.map(sika_api::ErrorCode::as_str);
    let duration_ms = line.duration.as_secs_f64() * 1000.0;
    let status = line.response.status.as_u16();
    if let Some(cause) = line.cause {
        // The same line, at error level, with why and where.
        tracing::error!(
            requestId = line.request_id,
            stack = line.stack,
            method = line.method,
            route,
            status,
            durationMs = duration_ms,
            organizationId = organization,
            clientAddress = client,
            error,
            cause = %cause,
            causeAt = %cause.at,
            "request"
        );
        return;
    }
    // An absent organization leaves the field out of the line.
    tracing::info!(
        requestId = line.request_id,
        stack = line.stack,
        method = line.method,
        route,
        status,
        durationMs = duration_ms,
        organizationId = organization,
        clientAddress = client,
        error,
        "request"
    );
}
