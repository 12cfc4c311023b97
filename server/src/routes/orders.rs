use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use sika_engine::{Command, Outcome, Snapshot};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, from_value};
use crate::movements::{fingerprint, new_order};
use crate::pagination::{PageQuery, page_of};
use crate::render;
use crate::stack::Stack;
use crate::webhooks::timeline_entries;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/orders", post(create).get(list)).route("/v1/orders/{id}", get(read))
}

async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("orders:write")?;
    let print = fingerprint(&raw);
    let new = new_order(&stack, &principal, from_value(raw)?, print)?;
    let applied = stack.engine.execute(Command::CreateOrder(new)).await?;
    let Outcome::Order(order) = applied.outcome else { return Err(ApiError::internal()) };
    if let Ok(webhooks) = stack.webhooks() {
        webhooks.wake();
    }
    let (status, body) = if applied.replayed {
        // The order may have moved on since: show it with its payout leg, as GET does.
        let full = render_full(&stack.engine.read()?, principal.organization(), &order.id)?;
        (StatusCode::OK, full.unwrap_or_else(|| render::order(&order, None, &[])))
    } else {
        (StatusCode::CREATED, render::order(&order, None, &[]))
    };
    Ok((status, Json(json!({ "order": body }))))
}

/// The order with both legs' timelines and webhook deliveries merged.
pub fn render_full(snapshot: &Snapshot, organization: &str, id: &str) -> ApiResult<Option<Value>> {
    let Some(order) = snapshot.order(id)?.filter(|o| o.organization == organization) else { return Ok(None) };
    let payout = match &order.payout_id {
        Some(payout_id) => snapshot.payout(payout_id)?,
        None => None,
    };
    let mut deliveries = timeline_entries(snapshot, organization, id)?;
    if let Some(p) = &payout {
        deliveries.extend(timeline_entries(snapshot, organization, &p.id)?);
    }
    Ok(Some(render::order(&order, payout.as_ref(), &deliveries)))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("orders:read")?;
    let order = render_full(&stack.engine.read()?, principal.organization(), &id)?
        .ok_or_else(|| ApiError::not_found(format!("order '{id}' not found")))?;
    Ok(Json(json!({ "order": order })))
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("orders:read")?;
    let organization = principal.organization().to_string();
    let body = page_of(&stack, &organization, "orders", &query, |snapshot, id| {
        render_full(snapshot, &organization, id)
    })?;
    Ok(Json(body))
}
