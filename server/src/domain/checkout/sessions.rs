//! The payer's side of hosted checkout: start an attempt on a page or link
//! (a checkout session), follow it, and read a crypto session's deposit
//! address. Anyone holding the link may call these, so each attempt is
//! throttled per caller address.

use std::time::Instant;

use serde_json::{Value, json};
use sika_engine::Snapshot;

use super::pay::{self, PayRequest};
use super::{
    Deps, PaymentLink, PaymentPage, link_session, link_state, load_link, load_page, render_public_link,
    render_session,
};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::ratelimit::{RateLimiter, WindowedCounter};
use crate::domain::render::to_json;

/// What a hosted address (`/pay/{id}`) shows.
pub(crate) enum Hosted {
    Page(PaymentPage),
    Link(PaymentLink),
    /// No page or link has that id: the page says so.
    Missing,
}

/// The page or link `id` names, as of the returned read (the hosted page
/// renders the rest from the same read).
pub(crate) fn hosted(deps: &Deps<'_>, id: &str) -> ApiResult<(Snapshot, Hosted)> {
    let snapshot = deps.engine.read()?;
    let page = if id.starts_with("pp_") { load_page(&snapshot, id)? } else { None };
    let link = if id.starts_with("pl_") { load_link(&snapshot, id)? } else { None };
    let hosted = match (page, link) {
        (Some(page), _) => Hosted::Page(page),
        (_, Some(link)) => Hosted::Link(link),
        _ => Hosted::Missing,
    };
    Ok((snapshot, hosted))
}

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
