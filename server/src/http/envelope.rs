//! The outermost layer of every listener: request id, API version, body
//! size limit, the error body (with `requestId`), and the request log.

use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, to_bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::domain::error::ApiError;
use crate::domain::principal::Caller;
use crate::domain::stack::Stack;
use crate::http::extract::{BODY_BYTES_MAX, too_large};
use crate::store::request_log::{RequestLogEntry, redact_body};

pub(crate) const VERSION_HEADER: &str = "sika-version";
pub(crate) const VERSION_CURRENT: &str = "2026-02-20";
/// Every version the node still answers, newest first.
pub(crate) const VERSIONS: &[&str] = &[VERSION_CURRENT];
/// Responses larger than this are not copied into the request log.
const LOGGED_RESPONSE_BYTES_MAX: usize = 64 * 1024;

/// The stack whose request log records this listener's requests (none for
/// the admin listener).
pub(crate) type EnvelopeState = Option<Arc<Stack>>;

pub(crate) async fn envelope(State(stack): State<EnvelopeState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let request_id = sika_engine::ids::new_id("req");
    let requested_version =
        request.headers().get(VERSION_HEADER).map(|v| v.to_str().unwrap_or("").to_string());
    let version = known_version(requested_version.as_deref());
    let (parts, body) = request.into_parts();
    let (method, path) = (parts.method.to_string(), parts.uri.path().to_string());
    let request_bytes = to_bytes(body, BODY_BYTES_MAX).await;
    let (response, request_bytes) = match (version, request_bytes) {
        (Err(e), _) => (e.into_response(), Default::default()),
        (Ok(_), Err(_)) => (too_large().into_response(), Default::default()),
        (Ok(_), Ok(bytes)) => {
            let response = next.run(Request::from_parts(parts, Body::from(bytes.clone()))).await;
            (response, bytes)
        }
    };
    let (mut parts, body) = response.into_parts();
    let body_bytes = match parts.extensions.remove::<ApiError>() {
        Some(error) => {
            parts.status = crate::http::error::status(error.code);
            error_bytes(&mut parts, &error, &request_id)
        }
        // The hosted checkout's HTML error pages (an unknown link) stay HTML.
        None if parts.status.as_u16() >= 400 && !is_json(&parts) && !is_html(&parts) => {
            // The framework's own status stands (a 408 stays a 408); the
            // body says what it means.
            let error = generic_error(parts.status, &method, &path);
            if error.code != sika_api::ErrorCode::BadRequest {
                parts.status = crate::http::error::status(error.code);
            }
            error_bytes(&mut parts, &error, &request_id)
        }
        None => to_bytes(body, usize::MAX).await.unwrap_or_default(),
    };
    let headers = &mut parts.headers;
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        headers.insert("x-request-id", value);
    }
    let version_used =
        requested_version.as_deref().filter(|v| VERSIONS.contains(v)).unwrap_or(VERSION_CURRENT);
    headers.insert(VERSION_HEADER, HeaderValue::from_static(static_version(version_used)));
    crate::http::access_log::log(&crate::http::access_log::Line {
        request_id: &request_id,
        stack: stack.as_ref().map_or("admin", |s| s.kind.name()),
        method: &method,
        response: &parts,
        duration: started.elapsed(),
    });
    if let (Some(stack), Some(caller)) = (stack, parts.extensions.get::<Caller>()) {
        let logged_response =
            (body_bytes.len() <= LOGGED_RESPONSE_BYTES_MAX).then(|| redact_body(&body_bytes));
        stack.request_log.record(RequestLogEntry {
            id: request_id,
            organization: caller.organization.clone(),
            api_key_id: caller.api_key_id.clone(),
            method,
            path,
            status: parts.status.as_u16(),
            duration_us: started.elapsed().as_micros() as u64,
            request_body: redact_body(&request_bytes),
            response_body: logged_response.flatten(),
            created_at: stack.now_ms(),
        });
    }
    Response::from_parts(parts, Body::from(body_bytes))
}

/// The version a request asked for, if the node answers it.
fn known_version(requested: Option<&str>) -> Result<&'static str, ApiError> {
    match requested {
        None => Ok(VERSION_CURRENT),
        Some(v) => VERSIONS.iter().find(|known| **known == v).copied().ok_or_else(|| {
            ApiError::validation(
                VERSION_HEADER,
                format!("unknown version '{v}'; known versions: {}", VERSIONS.join(", ")),
            )
        }),
    }
}

fn static_version(version: &str) -> &'static str {
    VERSIONS.iter().find(|v| **v == version).copied().unwrap_or(VERSION_CURRENT)
}

fn is_html(parts: &axum::http::response::Parts) -> bool {
    parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"))
}

fn is_json(parts: &axum::http::response::Parts) -> bool {
    parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

fn error_bytes(
    parts: &mut axum::http::response::Parts,
    error: &ApiError,
    request_id: &str,
) -> axum::body::Bytes {
    parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    parts.headers.remove(header::CONTENT_LENGTH);
    serde_json::to_vec(&error.body(request_id)).unwrap_or_default().into()
}

/// Turns a bare status from the framework (unknown route, wrong method, a
/// caught panic) into the error object.
fn generic_error(status: StatusCode, method: &str, path: &str) -> ApiError {
    match status {
        StatusCode::NOT_FOUND => ApiError::not_found(format!("no route for {method} {path}")),
        StatusCode::METHOD_NOT_ALLOWED => {
            ApiError::new(sika_api::ErrorCode::MethodNotAllowed, format!("{method} is not allowed on {path}"))
        }
        StatusCode::PAYLOAD_TOO_LARGE => too_large(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::new(
            sika_api::ErrorCode::UnsupportedMediaType,
            "the body must be JSON with Content-Type: application/json",
        ),
        s if s.is_server_error() => {
            tracing::error!(%method, %path, status = s.as_u16(), "request failed inside the node");
            ApiError::internal()
        }
        s => ApiError::new(
            sika_api::ErrorCode::BadRequest,
            format!("the request could not be handled ({})", s.as_u16()),
        ),
    }
}
