//! Disputes, their threads, and the sandbox simulations that open and
//! resolve them. The rules live in `crate::disputes`.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::disputes::{self, MessageRequest, OpenRequest, ResolveRequest};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::PageQuery;
use crate::stack::{Stack, StackKind};

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/disputes", get(list))
        .route("/v1/disputes/{id}", get(read))
        .route("/v1/disputes/{id}/messages", post(post_message).get(messages))
        .route("/v1/simulations/disputes", post(simulate))
        .route("/v1/simulations/disputes/{id}/resolve", post(simulate_resolve))
}

/// Simulations answer `404` on the live stack, like `/v1/simulations`.
fn sandbox_only(stack: &Stack) -> ApiResult<()> {
    match stack.kind {
        StackKind::Sandbox => Ok(()),
        StackKind::Live => Err(ApiError::not_found("simulations exist only on the sandbox stack")),
    }
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<String>,
    cursor: Option<String>,
    status: Option<String>,
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("disputes:read")?;
    let page = PageQuery { limit: query.limit, cursor: query.cursor };
    Ok(Json(disputes::page(&stack, principal.organization(), &page, query.status.as_deref())?))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("disputes:read")?;
    let snapshot = stack.engine.read()?;
    let (dispute, _) = disputes::load_for(&snapshot, Some(principal.organization()), &id)?;
    Ok(Json(json!({ "dispute": disputes::render(&snapshot, &dispute)? })))
}

async fn post_message(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<MessageRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("disputes:write")?;
    let message = disputes::post_message(&stack, principal.organization(), &id, body).await?;
    Ok((StatusCode::CREATED, Json(json!({ "message": message }))))
}

async fn messages(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("disputes:read")?;
    Ok(Json(disputes::message_page(&stack, principal.organization(), &id, &query)?))
}

async fn simulate(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<OpenRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    sandbox_only(&stack)?;
    principal.require("disputes:write")?;
    let dispute = disputes::open(&stack, principal.organization(), body).await?;
    Ok((StatusCode::CREATED, Json(json!({ "dispute": dispute }))))
}

async fn simulate_resolve(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ResolveRequest>,
) -> ApiResult<Json<Value>> {
    sandbox_only(&stack)?;
    principal.require("disputes:write")?;
    let dispute = disputes::resolve(&stack, Some(principal.organization()), &id, &body.outcome).await?;
    Ok(Json(json!({ "dispute": dispute })))
}
