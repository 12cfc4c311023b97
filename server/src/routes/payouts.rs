use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};
use sika_engine::{Command, Outcome};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, from_value};
use crate::movements::{fingerprint, new_payout};
use crate::pagination::{PageQuery, page_of};
use crate::render;
use crate::stack::Stack;
use crate::webhooks::timeline_entries;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/payouts", post(create).get(list)).route("/v1/payouts/{id}", get(read))
}

/// Holds `from.amount` plus the fee and hands the payout to the rail.
async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("payouts:write")?;
    let print = fingerprint(&raw);
    let new = new_payout(&stack, &principal, from_value(raw)?, print)?;
    let applied = stack.engine.execute(Command::CreatePayout(new)).await?;
    let Outcome::Payout(payout) = applied.outcome else { return Err(ApiError::internal()) };
    let status = if applied.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(json!({ "payout": render::payout(&payout, &[]) }))))
}

pub fn render_full(
    stack: &Stack,
    snapshot: &sika_engine::Snapshot,
    id: &str,
    organization: &str,
) -> ApiResult<Option<Value>> {
    let Some(payout) = snapshot.payout(id)?.filter(|p| p.organization == organization) else {
        return Ok(None);
    };
    let _ = stack;
    let deliveries = timeline_entries(snapshot, organization, id)?;
    Ok(Some(render::payout(&payout, &deliveries)))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("payouts:read")?;
    let snapshot = stack.engine.read()?;
    let payout = render_full(&stack, &snapshot, &id, principal.organization())?
        .ok_or_else(|| ApiError::not_found(format!("payout '{id}' not found")))?;
    Ok(Json(json!({ "payout": payout })))
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("payouts:read")?;
    let organization = principal.organization();
    let body = page_of(&stack, organization, "payouts", &query, |snapshot, id| {
        Ok(snapshot.payout(id)?.map(|p| render::payout(&p, &[])))
    })?;
    Ok(Json(body))
}
