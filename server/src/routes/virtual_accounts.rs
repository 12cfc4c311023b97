use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::{PageQuery, page_of};
use crate::stack::Stack;
use crate::virtual_accounts::{self, VirtualAccountRequest};

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/virtual-accounts", post(create).get(list))
        .route("/v1/virtual-accounts/{id}", get(read))
}

async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<VirtualAccountRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("virtual-accounts:write")?;
    let account = virtual_accounts::create(&stack, principal.organization(), body).await?;
    Ok((StatusCode::CREATED, Json(json!({ "virtualAccount": account.render() }))))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("virtual-accounts:read")?;
    let account = virtual_accounts::load(&stack.engine.read()?, &id)?
        .filter(|a| a.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("virtual account '{id}' not found")))?;
    Ok(Json(json!({ "virtualAccount": account.render() })))
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("virtual-accounts:read")?;
    let body =
        page_of(&stack, principal.organization(), virtual_accounts::COLLECTION, &query, |snapshot, id| {
            Ok(virtual_accounts::load(snapshot, id)?.map(|a| a.render()))
        })?;
    Ok(Json(body))
}
