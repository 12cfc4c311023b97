//! Provider notifications, on the live listener only:
//! `POST /rails/flutterwave/webhook`. A notification is authenticated by the
//! `verif-hash` header (compared in constant time) and then only makes its
//! movement due: the reconciler re-reads the movement from the provider
//! before any money moves, so a duplicate, late or forged body changes
//! nothing by itself.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;

use crate::domain::rails::AsyncRail;
use crate::domain::stack::Stack;

pub(crate) const FLUTTERWAVE_WEBHOOK: &str = "/rails/flutterwave/webhook";

/// The routes, or none when no provider is configured.
pub(crate) fn router(stack: Arc<Stack>) -> Router {
    if stack.rails.flutterwave.is_none() {
        return Router::new();
    }
    Router::new().route(FLUTTERWAVE_WEBHOOK, post(flutterwave)).with_state(stack)
}

async fn flutterwave(State(stack): State<Arc<Stack>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let Some(rail) = stack.rails.flutterwave.as_ref() else { return StatusCode::NOT_FOUND };
    let hash = headers.get("verif-hash").and_then(|v| v.to_str().ok());
    if hash.is_none() {
        return StatusCode::UNAUTHORIZED;
    }
    match rail.notification(hash, &body) {
        // A refund's notification that names no refund of Sika's: every
        // refund open at the provider is re-read (the provider's word).
        Some((kind, id)) if id.is_empty() => {
            stack.rails.all_due_now(kind);
            StatusCode::OK
        }
        Some((kind, id)) => {
            stack.rails.due_now(kind, &id);
            StatusCode::OK
        }
        // A wrong hash and an event Sika does not act on look alike to
        // the sender, so a forger learns nothing from the answer.
        None => StatusCode::UNAUTHORIZED,
    }
}
