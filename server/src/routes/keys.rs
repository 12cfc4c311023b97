use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::credentials::{CreateKeyRequest, new_key, require_owner_or_admin};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/keys", get(list).post(create)).route("/v1/keys/{id}", delete(revoke))
}

/// The full key is in `apiKey.secret`, shown this once.
async fn create(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<CreateKeyRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    require_owner_or_admin(principal.member())?;
    let (record, secret) = new_key(body, principal.organization(), stack.kind, stack.now_ms())?;
    stack.save_key(record.clone()).await?;
    Ok((StatusCode::CREATED, Json(json!({ "apiKey": record.render(Some(&secret)) }))))
}

async fn list(State(stack): State<Arc<Stack>>, principal: Principal) -> ApiResult<Json<Value>> {
    require_owner_or_admin(principal.member())?;
    let data: Vec<Value> = stack.keys_of(principal.organization()).iter().map(|k| k.render(None)).collect();
    Ok(Json(json!({ "data": data, "hasMore": false, "nextCursor": null })))
}

async fn revoke(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    require_owner_or_admin(principal.member())?;
    let mut key = stack
        .keys_of(principal.organization())
        .into_iter()
        .find(|k| k.id == id)
        .ok_or_else(|| ApiError::not_found(format!("API key '{id}' not found")))?;
    if key.revoked_at.is_none() {
        key.revoked_at = Some(stack.now_ms());
        stack.save_key(key.clone()).await?;
    }
    Ok(Json(json!({ "apiKey": key.render(None) })))
}
