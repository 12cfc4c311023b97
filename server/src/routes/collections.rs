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
use crate::movements::{fingerprint, new_collection};
use crate::pagination::{PageQuery, page_of};
use crate::render;
use crate::stack::Stack;
use crate::webhooks::timeline_entries;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/collections", post(create).get(list)).route("/v1/collections/{id}", get(read))
}

async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("collections:write")?;
    let print = fingerprint(&raw);
    let new = new_collection(&stack, &principal, from_value(raw)?, print)?;
    let applied = stack.engine.execute(Command::CreateCollection(new)).await?;
    let Outcome::Collection(collection) = applied.outcome else { return Err(ApiError::internal()) };
    if let Ok(webhooks) = stack.webhooks() {
        webhooks.wake();
    }
    let status = if applied.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(json!({ "collection": render::collection(&collection, &[]) }))))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("collections:read")?;
    let snapshot = stack.engine.read()?;
    let collection = snapshot
        .collection(&id)?
        .filter(|c| c.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("collection '{id}' not found")))?;
    let deliveries = timeline_entries(&snapshot, principal.organization(), &id)?;
    Ok(Json(json!({ "collection": render::collection(&collection, &deliveries) })))
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("collections:read")?;
    let body = page_of(&stack, principal.organization(), "collections", &query, |snapshot, id| {
        Ok(snapshot.collection(id)?.map(|c| render::collection(&c, &[])))
    })?;
    Ok(Json(body))
}
