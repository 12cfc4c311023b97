use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/requests/{id}", get(find))
}

/// One logged request of the caller's workspace; others' are 404.
async fn find(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("requests:read")?;
    let entry = stack
        .request_log
        .find(&id)
        .filter(|e| e.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("request '{id}' not found")))?;
    Ok(Json(json!({ "request": entry.render() })))
}
