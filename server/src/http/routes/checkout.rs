//! The hosted checkout, served on the stack's own listener without a key:
//! the HTML page of a payment page or link, and the two JSON calls its
//! script makes (start an attempt, follow it).

use std::sync::Arc;

use std::net::SocketAddr;
use std::time::Instant;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::domain::checkout::pay::{self, PayRequest};
use crate::domain::checkout::{
    deposit_address, link_session, link_state, load_link, load_page, render_public_link, render_session,
};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::to_json;
use crate::domain::stack::Stack;
use crate::http::extract::ApiJson;
use crate::http::pages::{self as html, Target};

pub(super) fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/pay/{id}", get(page))
        .route("/pay/{id}/sessions", post(start))
        .route("/pay/{id}/sessions/{session}", get(follow))
        .route("/pay/{id}/sessions/{session}/qr.svg", get(qr_code))
}

async fn page(State(stack): State<Arc<Stack>>, Path(id): Path<String>) -> ApiResult<Response> {
    let snapshot = stack.engine.read()?;
    let page = if id.starts_with("pp_") { load_page(&snapshot, &id)? } else { None };
    let link = if id.starts_with("pl_") { load_link(&snapshot, &id)? } else { None };
    let target = match (&page, &link) {
        (Some(p), _) => Target::Page(p),
        (_, Some(l)) => Target::Link(l),
        _ => Target::Missing,
    };
    let rendered = html::render(&stack, &snapshot, target)?;
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
    // address (the API keys' per-second rate) instead of per key.
    let ip = crate::http::auth::caller_ip(&stack, Some(peer), &headers)
        .map(|ip| ip.to_string())
        .unwrap_or_default();
    if let Err(retry_after) = stack.rate_limiter.check(&format!("pay:{ip}"), Instant::now()) {
        return Err(ApiError::new(
            sika_api::ErrorCode::RateLimited,
            "too many payment attempts from this address; wait a moment",
        )
        .with_detail("retryAfter", retry_after));
    }
    // And a payer address makes a bounded number of attempts on one page or
    // link (`checkout_attempts_per_address` an hour).
    if let Err(retry_after) = stack.checkout_attempts.take(&format!("{id}:{ip}"), Instant::now()) {
        let limit = stack.config.checkout_attempts_per_address;
        return Err(ApiError::new(
            sika_api::ErrorCode::RateLimited,
            format!("this address has made {limit} payment attempts here in the last hour; try again later"),
        )
        .with_detail("limit", limit)
        .with_detail("retryAfter", retry_after));
    }
    let (link_id, session_id) = pay::start(&stack, &id, body).await?;
    let Json(body) = view(&stack, &link_id, &session_id)?;
    Ok((StatusCode::CREATED, Json(body)))
}

async fn follow(
    State(stack): State<Arc<Stack>>,
    Path((id, session)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    view(&stack, &id, &session)
}

/// The QR code of a crypto session's deposit address, as an SVG image the
/// page loads from its own origin.
async fn qr_code(
    State(stack): State<Arc<Stack>>,
    Path((id, session)): Path<(String, String)>,
) -> ApiResult<Response> {
    let address = deposit_address(&stack.engine.read()?, &id, &session)?;
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

fn view(stack: &Stack, link_id: &str, session_id: &str) -> ApiResult<Json<Value>> {
    let snapshot = stack.engine.read()?;
    let missing = || ApiError::not_found(format!("checkout session '{session_id}' not found"));
    let link = load_link(&snapshot, link_id)?.ok_or_else(missing)?;
    let now = stack.now_ms();
    let state = link_state(&snapshot, &link, now)?;
    let session = link_session(&snapshot, link_id, session_id, &state)?.ok_or_else(missing)?;
    let payer_message = session.payer_message();
    let session = to_json(&render_session(&session)?);
    Ok(Json(json!({
        "session": session,
        "paymentLink": render_public_link(&link, &state),
        "payerMessage": payer_message,
    })))
}
