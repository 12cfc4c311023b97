//! The hosted checkout, served on the stack's own listener without a key:
//! the HTML page of a payment page or link, and the two JSON calls its
//! script makes (start an attempt, follow it).

use std::sync::Arc;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::Value;

use crate::domain::checkout::Deps;
use crate::domain::checkout::pay::PayRequest;
use crate::domain::checkout::sessions::{self, Throttle};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::stack::Stack;
use crate::http::extract::ApiJson;
use crate::http::pages as html;

pub(super) fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/pay/{id}", get(page))
        .route("/pay/{id}/sessions", post(start))
        .route("/pay/{id}/sessions/{session}", get(follow))
        .route("/pay/{id}/sessions/{session}/qr.svg", get(qr_code))
}

/// What checkout's use cases take of `stack`.
pub(crate) fn deps(stack: &Stack) -> Deps<'_> {
    Deps {
        engine: &stack.engine,
        kind: stack.kind,
        identity: &stack.identity,
        config: &stack.config,
        catalog: &stack.catalog,
        receiving: &stack.receiving,
    }
}

async fn page(State(stack): State<Arc<Stack>>, Path(id): Path<String>) -> ApiResult<Response> {
    let deps = deps(&stack);
    let (snapshot, hosted) = sessions::hosted(&deps, &id)?;
    let rendered = html::render(&deps, &snapshot, &hosted)?;
    let status = StatusCode::from_u16(rendered.status).unwrap_or(StatusCode::OK);
    let policy = header::HeaderValue::from_str(&rendered.content_security_policy)
        .map_err(|e| ApiError::internal_from(e))?;
    Ok((
        status,
        [
            (header::CONTENT_TYPE, header::HeaderValue::from_static("text/html; charset=utf-8")),
            (header::CACHE_CONTROL, header::HeaderValue::from_static("no-store")),
            (header::X_FRAME_OPTIONS, header::HeaderValue::from_static("DENY")),
            (header::CONTENT_SECURITY_POLICY, policy),
            (header::X_CONTENT_TYPE_OPTIONS, header::HeaderValue::from_static("nosniff")),
            // A link's address is what lets anyone pay it: never send it on.
            (header::REFERRER_POLICY, header::HeaderValue::from_static("no-referrer")),
        ],
        rendered.html,
    )
        .into_response())
}

async fn start(
    State(stack): State<Arc<Stack>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<PayRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    // Anyone holding a link may pay, so attempts are limited per caller
    // address instead of per key.
    let caller = crate::http::auth::caller_ip(&stack, Some(peer), &headers)
        .map(|ip| ip.to_string())
        .unwrap_or_default();
    let throttle = Throttle { per_second: &stack.rate_limiter, per_hour: &stack.checkout_attempts };
    let view = sessions::start(&deps(&stack), throttle, &caller, &id, body).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

async fn follow(
    State(stack): State<Arc<Stack>>,
    Path((id, session)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    Ok(Json(sessions::follow(&deps(&stack), &id, &session)?))
}

/// The QR code of a crypto session's deposit address, as an SVG image the
/// page loads from its own origin.
async fn qr_code(
    State(stack): State<Arc<Stack>>,
    Path((id, session)): Path<(String, String)>,
) -> ApiResult<Response> {
    let address = sessions::deposit_address(&deps(&stack), &id, &session)?;
    let svg = html::qr_svg(&address)
        .ok_or_else(|| ApiError::internal_from("the address does not fit a QR code"))?;
    Ok((
        [
            (header::CONTENT_TYPE, header::HeaderValue::from_static("image/svg+xml")),
            (header::CACHE_CONTROL, header::HeaderValue::from_static("no-store")),
            (header::X_CONTENT_TYPE_OPTIONS, header::HeaderValue::from_static("nosniff")),
            // Opened on its own, the image runs and loads nothing.
            (header::CONTENT_SECURITY_POLICY, header::HeaderValue::from_static("default-src 'none'")),
            (header::REFERRER_POLICY, header::HeaderValue::from_static("no-referrer")),
        ],
        svg,
    )
        .into_response())
}
