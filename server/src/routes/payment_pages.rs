use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::checkout::requests::{CheckoutRequest, new_page};
use crate::checkout::{self, PAGES, load_page, page_status, render_page};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::{PageQuery, page_of};
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/payment-pages", post(create).get(list))
        .route("/v1/payment-pages/{id}", get(read))
        .route("/v1/payment-pages/{id}/close", post(close))
}

async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<CheckoutRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("payment-pages:write")?;
    let page = new_page(body, principal.organization(), stack.now_ms())?;
    checkout::store_new(&stack, PAGES, &page.id, &page.organization, &page).await?;
    let snapshot = stack.engine.read()?;
    let body = render_page(&stack, &snapshot, &page, stack.now_ms())?;
    Ok((StatusCode::CREATED, Json(json!({ "paymentPage": body }))))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("payment-pages:read")?;
    let snapshot = stack.engine.read()?;
    let page = load_page(&snapshot, &id)?
        .filter(|p| p.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("payment page '{id}' not found")))?;
    Ok(Json(json!({ "paymentPage": render_page(&stack, &snapshot, &page, stack.now_ms())? })))
}

async fn close(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("payment-pages:write")?;
    checkout::close(&stack, principal.organization(), &id).await?;
    read(State(stack), principal, Path(id)).await
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
    principal.require("payment-pages:read")?;
    if let Some(status) = &query.status
        && !["active", "closed"].contains(&status.as_str())
    {
        return Err(ApiError::validation("status", "must be active or closed"));
    }
    let now = stack.now_ms();
    let page = PageQuery { limit: query.limit, cursor: query.cursor };
    let body = page_of(&stack, principal.organization(), PAGES, &page, |snapshot, id| {
        let Some(p) = load_page(snapshot, id)? else { return Ok(None) };
        if query.status.as_deref().is_some_and(|s| s != page_status(&p, now)) {
            return Ok(None);
        }
        Ok(Some(render_page(&stack, snapshot, &p, now)?))
    })?;
    Ok(Json(body))
}
