use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use sika_api::checkout::CheckoutRequest;

use crate::checkout::requests::new_link;
use crate::checkout::{self, LINKS, PAGE_LINKS, link_state, load_link, load_page, render_link};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::pagination::{PageQuery, page_of};
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/payment-links", post(create).get(list))
        .route("/v1/payment-links/{id}", get(read))
        .route("/v1/payment-links/{id}/close", post(close))
}

async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<CheckoutRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("payment-pages:write")?;
    let link = new_link(body, principal.organization(), stack.now_ms())?;
    checkout::store_new(&stack, LINKS, &link.id, &link.organization, &link).await?;
    let snapshot = stack.engine.read()?;
    let state = link_state(&snapshot, &link, stack.now_ms())?;
    Ok((StatusCode::CREATED, Json(json!({ "paymentLink": render_link(&stack, &link, &state, true) }))))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("payment-pages:read")?;
    let snapshot = stack.engine.read()?;
    let link = load_link(&snapshot, &id)?
        .filter(|l| l.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("payment link '{id}' not found")))?;
    let state = link_state(&snapshot, &link, stack.now_ms())?;
    Ok(Json(json!({ "paymentLink": render_link(&stack, &link, &state, true) })))
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
#[serde(rename_all = "camelCase")]
struct ListQuery {
    limit: Option<String>,
    cursor: Option<String>,
    status: Option<String>,
    email: Option<String>,
    customer_reference: Option<String>,
    parent_type: Option<String>,
    parent_id: Option<String>,
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("payment-pages:read")?;
    if let Some(status) = &query.status
        && !["active", "paid", "expired", "closed"].contains(&status.as_str())
    {
        return Err(ApiError::validation("status", "must be one of active, paid, expired, closed"));
    }
    if let Some(kind) = &query.parent_type
        && kind != "payment_page"
    {
        return Err(ApiError::validation("parentType", "must be payment_page"));
    }
    let organization = principal.organization();
    // One page's payers are listed under the page; everything else under the organization.
    let (owner, kind) = match &query.parent_id {
        Some(page_id) => {
            let snapshot = stack.engine.read()?;
            if load_page(&snapshot, page_id)?.is_none_or(|p| p.organization != organization) {
                return Ok(Json(json!({ "data": [], "hasMore": false, "nextCursor": null })));
            }
            (page_id.as_str(), PAGE_LINKS)
        }
        None => (organization, LINKS),
    };
    let now = stack.now_ms();
    let page = PageQuery { limit: query.limit.clone(), cursor: query.cursor.clone() };
    let body = page_of(&stack, owner, kind, &page, |snapshot, id| {
        let Some(link) = load_link(snapshot, id)?.filter(|l| l.organization == organization) else {
            return Ok(None);
        };
        if query.parent_type.is_some() && link.page.is_none() {
            return Ok(None);
        }
        if query.email.as_ref().is_some_and(|e| link.email.as_ref() != Some(e)) {
            return Ok(None);
        }
        if query.customer_reference.as_ref().is_some_and(|r| link.customer_reference.as_ref() != Some(r)) {
            return Ok(None);
        }
        let state = link_state(snapshot, &link, now)?;
        if query.status.as_deref().is_some_and(|s| s != state.status) {
            return Ok(None);
        }
        Ok(Some(render_link(&stack, &link, &state, false)))
    })?;
    Ok(Json(body))
}
