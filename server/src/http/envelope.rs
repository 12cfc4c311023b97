//! The outermost layer of every listener: request id, API version, body
//! size limit and timeout, the error body (with `requestId`), and the
//! request log.
//!
//! The body is not read here: it is handed on as a `Guarded` body that
//! counts it against `BODY_BYTES_MAX`, fails it once it has taken longer
//! than the body timeout from its first read, and keeps a copy for the
//! request log. So authentication, scopes and roles are decided from the
//! headers before a byte of the body is read, and an anonymous client
//! holding a body open pins no memory (1,500 such connections took the node
//! from 45 MiB to 1,590 MiB when every body was read first).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::domain::error::ApiError;
use crate::domain::principal::Caller;
use crate::domain::stack::Stack;
use crate::http::extract::{BODY_BYTES_MAX, too_large};
use crate::store::request_log::{RequestLogEntry, redact_body};
use http_body::Frame;

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
    let request_id = sika_engine::ids::new_ordered_id("req");
    let requested_version =
        request.headers().get(VERSION_HEADER).map(|v| v.to_str().unwrap_or("").to_string());
    let version = known_version(requested_version.as_deref());
    let (parts, body) = request.into_parts();
    let (method, path) = (parts.method.to_string(), parts.uri.path().to_string());
    let client = client_address(stack.as_deref(), &parts);
    let body_timeout = stack.as_ref().map_or(BODY_TIMEOUT_ADMIN, |s| s.config.connections.body_timeout);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let response = match version {
        Err(e) => e.into_response(),
        Ok(_) => {
            let guarded = Guarded::new(body, seen.clone(), body_timeout);
            next.run(Request::from_parts(parts, Body::new(guarded))).await
        }
    };
    let request_bytes = {
        let chunks = std::mem::take(&mut *seen.lock().unwrap_or_else(|e| e.into_inner()));
        chunks.concat()
    };
    let (mut parts, body) = response.into_parts();
    let (body_bytes, error, streamed) = answer_body(&mut parts, body, &method, &path, &request_id).await;
    let error_code = error.as_ref().map(|e| e.code);
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
        client,
        error: error_code,
        cause: error.as_ref().and_then(|e| e.cause.as_ref()),
    });
    // A refused flood (429) is counted by the metrics, not stored: one
    // tenant's flood must not push everyone's entries out of the log.
    let refused = parts.status == StatusCode::TOO_MANY_REQUESTS;
    if let (Some(stack), true, false) = (&stack, parts.status.as_u16() >= 400, refused) {
        remember_failure(stack, &parts, &request_id, &method, client, error_code);
    }
    if let (Some(stack), Some(caller), false) = (stack, parts.extensions.get::<Caller>(), refused) {
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
    match streamed {
        Some(body) => Response::from_parts(parts, body),
        None => Response::from_parts(parts, Body::from(body_bytes)),
    }
}

/// Marks a response whose body is streamed (an export): the envelope
/// neither reads it nor keeps it for the request log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Streamed;

/// The answer's body: for an error, the spec's error object with the
/// request's id (and the status its code answers with), and the error; a
/// streamed answer (an export) is handed back unread, as the third item:
/// buffering it here would hold the whole file in memory.
async fn answer_body(
    parts: &mut axum::http::response::Parts,
    body: Body,
    method: &str,
    path: &str,
    request_id: &str,
) -> (Bytes, Option<ApiError>, Option<Body>) {
    if let Some(Streamed) = parts.extensions.remove::<Streamed>() {
        return (Bytes::new(), None, Some(body));
    }
    let (bytes, error) = match parts.extensions.remove::<ApiError>() {
        Some(error) => {
            parts.status = crate::http::error::status_of(&error);
            (error_bytes(parts, &error, request_id), Some(error))
        }
        // The hosted checkout's HTML error pages (an unknown link) stay HTML.
        None if parts.status.as_u16() >= 400 && !is_json(parts) && !is_html(parts) => {
            // The framework's own status stands (a 408 stays a 408); the
            // body says what it means.
            let error = generic_error(parts.status, method, path);
            if error.code != sika_api::ErrorCode::BadRequest {
                parts.status = crate::http::error::status(error.code);
            }
            (error_bytes(parts, &error, request_id), Some(error))
        }
        None => (to_bytes(body, usize::MAX).await.unwrap_or_default(), None),
    };
    (bytes, error, None)
}

/// Keeps a request the stack answered with an error for the operator's
/// list of recent failures.
fn remember_failure(
    stack: &Stack,
    parts: &axum::http::response::Parts,
    request_id: &str,
    method: &str,
    client: Option<std::net::IpAddr>,
    error: Option<sika_api::ErrorCode>,
) {
    stack.attention.remember_failure(sika_api::admin::FailedRequest {
        id: request_id.to_string(),
        method: method.to_string(),
        route: crate::http::access_log::route(parts).to_string(),
        status: parts.status.as_u16(),
        error: error.map(|code| code.as_str().to_string()),
        organization_id: parts.extensions.get::<Caller>().map(|c| c.organization.clone()),
        client_address: client.map(|ip| ip.to_string()),
        created_at: crate::domain::render::timestamp(stack.now_ms()),
    });
}

/// The caller's address: on a stack's listener as its authentication sees
/// it (the socket peer, or the forwarded address a trusted proxy names), on
/// the admin listener the socket peer.
fn client_address(stack: Option<&Stack>, parts: &axum::http::request::Parts) -> Option<std::net::IpAddr> {
    let peer = parts.extensions.get::<ConnectInfo<std::net::SocketAddr>>().map(|c| c.0);
    match stack {
        Some(stack) => crate::http::auth::caller_ip(stack, peer, &parts.headers),
        None => peer.map(|p| p.ip()),
    }
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

/// The admin listener's body timeout (its bodies are small and its callers
/// the operator's own tools).
const BODY_TIMEOUT_ADMIN: Duration = Duration::from_secs(30);

/// Why a request body was cut off while it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyRefusal {
    TooLarge,
    TimedOut(Duration),
}

impl std::fmt::Display for BodyRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyRefusal::TooLarge => write!(f, "the request body is larger than {BODY_BYTES_MAX} bytes"),
            BodyRefusal::TimedOut(after) => {
                write!(f, "the request body did not arrive within {} s", after.as_secs_f64())
            }
        }
    }
}

impl std::error::Error for BodyRefusal {}

impl BodyRefusal {
    /// The refusal behind a body error, if it was one.
    pub(crate) fn of(error: &(dyn std::error::Error + 'static)) -> Option<BodyRefusal> {
        let mut current = Some(error);
        while let Some(error) = current {
            if let Some(refusal) = error.downcast_ref::<BodyRefusal>() {
                return Some(*refusal);
            }
            current = error.source();
        }
        None
    }
}

/// A request body read no further than `BODY_BYTES_MAX` and no longer than
/// its timeout from the first read, copied (by reference) for the log.
struct Guarded {
    inner: Body,
    seen: Arc<Mutex<Vec<Bytes>>>,
    read_bytes: usize,
    timeout: Duration,
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
}

/// A body over the limit but no larger than this is read to its end and
/// thrown away (nothing kept) before it is refused, within the body
/// timeout: a client still writing it then reads the `413` instead of a
/// broken pipe when the connection closes under it. A larger one is refused
/// at once.
const DRAINED_BYTES_MAX: usize = 4 * BODY_BYTES_MAX;

impl Guarded {
    fn new(inner: Body, seen: Arc<Mutex<Vec<Bytes>>>, timeout: Duration) -> Guarded {
        Guarded { inner, seen, read_bytes: 0, timeout, deadline: None }
    }

    /// Discards the rest of a body that is too large, then refuses it.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, axum::BoxError>>> {
        while self.read_bytes <= DRAINED_BYTES_MAX {
            match http_body::Body::poll_frame(Pin::new(&mut self.inner), cx) {
                Poll::Ready(Some(Ok(frame))) => {
                    let len = frame.data_ref().map_or(0, Bytes::len);
                    self.read_bytes = self.read_bytes.saturating_add(len);
                }
                Poll::Ready(_) => break,
                Poll::Pending => match self.deadline.as_mut().map(|d| d.as_mut().poll(cx)) {
                    Some(Poll::Ready(())) => break,
                    _ => return Poll::Pending,
                },
            }
        }
        Poll::Ready(Some(Err(BodyRefusal::TooLarge.into())))
    }
}

impl http_body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if this.deadline.is_none() {
            // A declared length far over the limit is refused before reading.
            if http_body::Body::size_hint(&this.inner).lower() > DRAINED_BYTES_MAX as u64 {
                return Poll::Ready(Some(Err(BodyRefusal::TooLarge.into())));
            }
            this.deadline = Some(Box::pin(tokio::time::sleep(this.timeout)));
        }
        if this.read_bytes > BODY_BYTES_MAX
            || http_body::Body::size_hint(&this.inner).lower() > BODY_BYTES_MAX as u64
        {
            return this.poll_drain(cx);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.read_bytes = this.read_bytes.saturating_add(data.len());
                    if this.read_bytes > BODY_BYTES_MAX {
                        return this.poll_drain(cx);
                    }
                    this.seen.lock().unwrap_or_else(|e| e.into_inner()).push(data.clone());
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(e.into()))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match this.deadline.as_mut().map(|d| d.as_mut().poll(cx)) {
                Some(Poll::Ready(())) => Poll::Ready(Some(Err(BodyRefusal::TimedOut(this.timeout).into()))),
                _ => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
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
        s if s.is_server_error() => ApiError::internal_from(format!(
            "{method} {path} answered {} without an error object",
            s.as_u16()
        )),
        s => ApiError::new(
            sika_api::ErrorCode::BadRequest,
            format!("the request could not be handled ({})", s.as_u16()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::{Arc, Mutex};

    use axum::Router;
    use axum::body::{Body, to_bytes};
    use axum::extract::Request;
    use axum::routing::get;
    use serde_json::Value;
    use tower_service::Service;

    use super::{EnvelopeState, envelope};
    use crate::domain::error::{ApiError, ApiResult};

    /// Everything the subscriber writes, one JSON object per line.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
        type Writer = Captured;

        fn make_writer(&'a self) -> Captured {
            self.clone()
        }
    }

    /// The line of `reads_a_missing_file` that raised its error.
    static RAISED_AT: AtomicU32 = AtomicU32::new(0);

    /// A handler whose storage fails under it, as a real one's would.
    async fn reads_a_missing_file() -> ApiResult<&'static str> {
        let (error, line) = match std::fs::read("/nonexistent/sika/ledger.redb") {
            Ok(_) => return Ok("read"),
            Err(e) => (ApiError::internal_from(e), line!()),
        };
        RAISED_AT.store(line, Ordering::Relaxed);
        Err(error)
    }

    #[tokio::test]
    async fn an_internal_errors_cause_is_on_its_log_line_and_never_in_its_body() {
        let logs = Captured::default();
        let subscriber = tracing_subscriber::fmt().json().with_writer(logs.clone()).finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let state: EnvelopeState = None;
        let mut app = Router::new()
            .route("/v1/things/{id}", get(reads_a_missing_file))
            .route_layer(axum::middleware::from_fn(crate::http::access_log::remember_route))
            .layer(axum::middleware::from_fn_with_state(state, envelope));

        let request = Request::get("/v1/things/thing_1").body(Body::empty()).unwrap();
        let response = app.call(request).await.unwrap();
        assert_eq!(response.status(), 500);
        let request_id = response.headers()["x-request-id"].to_str().unwrap().to_string();
        let body = to_bytes(response.into_body(), usize::MAX).await.unwrap();
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["error"], "internal_error");
        assert_eq!(body["message"], "the node could not complete the request");
        assert_eq!(body["requestId"], request_id.as_str());
        let text = body.to_string();
        for secret in ["ledger.redb", "No such file", "envelope.rs"] {
            assert!(!text.contains(secret), "the body says '{secret}': {text}");
        }

        let written = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<Value> = written.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        let fields = |line: &Value| line.get("fields").cloned().unwrap_or_else(|| line.clone());
        let ours: Vec<&Value> =
            lines.iter().filter(|l| fields(l)["requestId"] == request_id.as_str()).collect();
        assert_eq!(ours.len(), 1, "one line per request: {written}");
        let line = fields(ours[0]);
        assert_eq!(ours[0]["level"], "ERROR", "{written}");
        assert_eq!(line["message"], "request");
        assert_eq!(line["status"], 500);
        assert_eq!(line["error"], "internal_error");
        assert_eq!(line["route"], "/v1/things/{id}");
        let cause = line["cause"].as_str().unwrap();
        assert!(cause.contains("No such file or directory"), "{cause}");
        let at = line["causeAt"].as_str().unwrap();
        let raised = format!("{}:{}:", file!(), RAISED_AT.load(Ordering::Relaxed));
        assert!(at.starts_with(&raised), "raised at {at}, expected {raised}");
    }

    #[tokio::test]
    async fn a_refusal_logs_no_cause() {
        let logs = Captured::default();
        let subscriber = tracing_subscriber::fmt().json().with_writer(logs.clone()).finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let state: EnvelopeState = None;
        let mut app = Router::new()
            .route("/v1/things", get(|| async { ApiResult::<()>::Err(ApiError::not_found("no thing")) }))
            .layer(axum::middleware::from_fn_with_state(state, envelope));
        let response = app.call(Request::get("/v1/things").body(Body::empty()).unwrap()).await.unwrap();
        assert_eq!(response.status(), 404);
        let written = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
        let line: Value = serde_json::from_str(written.lines().last().unwrap()).unwrap();
        assert_eq!(line["level"], "INFO", "{written}");
        let fields = line.get("fields").unwrap_or(&line);
        assert_eq!(fields["error"], "not_found");
        assert!(fields.get("cause").is_none() && fields.get("causeAt").is_none(), "{written}");
    }
}
