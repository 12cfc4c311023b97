use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, from_value};
use crate::pagination::{PageQuery, page_of};
use crate::recipients::{self, BULK_ITEMS_MAX, RecipientRequest};
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/recipients", post(create).get(list))
        .route("/v1/recipients/bulk", post(bulk))
        .route("/v1/recipients/{id}", get(read))
}

async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<RecipientRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("recipients:write")?;
    let recipient = recipients::build(body, principal.organization(), stack.now_ms(), "")?;
    recipients::save_all(&stack, std::slice::from_ref(&recipient)).await?;
    Ok((StatusCode::CREATED, Json(json!({ "recipient": recipient.render() }))))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BulkRequest {
    items: Vec<Value>,
}

/// Up to 100 recipients; each item gets its own result, in order. Valid
/// items are created even when others fail.
async fn bulk(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<Json<Value>> {
    principal.require("recipients:write")?;
    if body.items.is_empty() || body.items.len() > BULK_ITEMS_MAX {
        return Err(ApiError::validation("items", format!("must hold 1 to {BULK_ITEMS_MAX} items")));
    }
    let now = stack.now_ms();
    let mut created = Vec::new();
    let mut results = Vec::new();
    for (index, item) in body.items.into_iter().enumerate() {
        let prefix = format!("items[{index}].");
        let built = from_value::<RecipientRequest>(item)
            .map_err(|e| {
                let field =
                    e.details.as_ref().and_then(|d| d["field"].as_str()).unwrap_or("item").to_string();
                ApiError::validation(&format!("{prefix}{field}"), e.message.clone())
            })
            .and_then(|request| recipients::build(request, principal.organization(), now, &prefix));
        match built {
            Ok(recipient) => {
                results.push(json!({ "index": index, "status": "created", "recipient": recipient.render() }));
                created.push(recipient);
            }
            Err(error) => results.push(json!({
                "index": index,
                "status": "failed",
                "error": { "error": error.code, "message": error.message, "details": error.details },
            })),
        }
    }
    recipients::save_all(&stack, &created).await?;
    Ok(Json(json!({ "results": results })))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("recipients:read")?;
    let recipient = recipients::load(&stack.engine.read()?, &id)?
        .filter(|r| r.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("recipient '{id}' not found")))?;
    Ok(Json(json!({ "recipient": recipient.render() })))
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("recipients:read")?;
    let body = page_of(&stack, principal.organization(), recipients::COLLECTION, &query, |snapshot, id| {
        Ok(recipients::load(snapshot, id)?.map(|r| r.render()))
    })?;
    Ok(Json(body))
}
