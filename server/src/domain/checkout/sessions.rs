//! The payer's side of hosted checkout: start an attempt on a page or link
//! (a checkout session), follow it, and read a crypto session's deposit
//! address. Anyone holding the link may call these, so each attempt is
//! throttled per caller address.

use std::time::Instant;

use serde_json::{Value, json};

use super::pay::{self, PayRequest};
use super::{Deps, link_session, link_state, load_link, render_public_link, render_session};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ratelimit::{RateLimiter, WindowedCounter};
use crate::domain::render::to_json;

/// The bounds on anonymous attempts: the API keys' per-second rate per
/// caller address, and `checkout_attempts_per_address` an hour per address
/// on one page or link.
#[derive(Clone, Copy)]
pub(crate) struct Throttle<'a> {
    pub per_second: &'a RateLimiter,
    pub per_hour: &'a WindowedCounter,
}

/// Starts an attempt on page or link `target` for the payer calling from
/// `caller` (an address, or empty when unknown); answers what `follow` does.
pub(crate) async fn start(
    deps: &Deps<'_>,
    throttle: Throttle<'_>,
    caller: &str,
    target: &str,
    request: PayRequest,
) -> ApiResult<Value> {
    if let Err(retry_after) = throttle.per_second.check(&format!("pay:{caller}"), Instant::now()) {
        return Err(ApiError::new(
            sika_api::ErrorCode::RateLimited,
            "too many payment attempts from this address; wait a moment",
        )
        .with_detail("retryAfter", retry_after));
    }
    if let Err(retry_after) = throttle.per_hour.take(&format!("{target}:{caller}"), Instant::now()) {
        let limit = deps.config.checkout_attempts_per_address;
        return Err(ApiError::new(
            sika_api::ErrorCode::RateLimited,
            format!("this address has made {limit} payment attempts here in the last hour; try again later"),
        )
        .with_detail("limit", limit)
        .with_detail("retryAfter", retry_after));
    }
    let (link_id, session_id) = pay::start(deps, target, request).await?;
    follow(deps, &link_id, &session_id)
}

/// Session `session_id` of link `link_id` as the payer's page follows it:
/// the session, the link without its merchant's metadata, and what to tell
/// the payer.
pub(crate) fn follow(deps: &Deps<'_>, link_id: &str, session_id: &str) -> ApiResult<Value> {
    let snapshot = deps.engine.read()?;
    let missing = || ApiError::not_found(format!("checkout session '{session_id}' not found"));
    let link = load_link(&snapshot, link_id)?.ok_or_else(missing)?;
    let state = link_state(&snapshot, &link, deps.now_ms())?;
    let session = link_session(&snapshot, link_id, session_id, &state)?.ok_or_else(missing)?;
    let payer_message = session.payer_message();
    let session = to_json(&render_session(&session)?);
    Ok(json!({
        "session": session,
        "paymentLink": render_public_link(&link, &state),
        "payerMessage": payer_message,
    }))
}

/// The address a crypto session of link `link_id` gives its payer (what
/// the page's QR code holds); `404` for any other session.
pub(crate) fn deposit_address(deps: &Deps<'_>, link_id: &str, session_id: &str) -> ApiResult<String> {
    super::deposit_address(&deps.engine.read()?, link_id, session_id)
}
