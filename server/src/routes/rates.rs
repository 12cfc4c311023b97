use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};
use sika_engine::Currency;

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::render::timestamp;
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/rates/{origin}/{destination}", get(rate))
}

pub fn currency_param(field: &str, code: &str) -> ApiResult<Currency> {
    Currency::find(&code.to_ascii_uppercase()).map_err(|e| ApiError::validation(field, e.to_string()))
}

/// The all-in rate a quote would lock now.
async fn rate(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path((origin, destination)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    principal.require("rates:read")?;
    let from = currency_param("origin", &origin)?;
    let to = currency_param("destination", &destination)?;
    if from == to {
        return Err(ApiError::validation("destination", "must differ from origin"));
    }
    let rate = stack.engine.rate(from.code, to.code)?;
    let mid = stack.engine.mid_rate(from.code, to.code).unwrap_or_default();
    Ok(Json(json!({
        "rate": {
            "origin": from.code,
            "destination": to.code,
            "rate": rate.normalize().to_string(),
            "midRate": mid.normalize().to_string(),
            "spreadBps": stack.engine.spread_bps(),
            "quoteTtlSeconds": stack.config.quote_ttl.as_secs(),
            "timestamp": timestamp(stack.now_ms()),
        }
    })))
}
