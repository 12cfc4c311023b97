use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::catalog;
use crate::error::{ApiError, ApiResult};
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/capabilities/{country}", get(country))
        .route("/v1/capabilities/{country}/{method}", get(method))
}

async fn country(Path(country): Path<String>, principal: Principal) -> ApiResult<Json<Value>> {
    principal.require("capabilities:read")?;
    let methods = catalog::shipped().methods_for(&country).ok_or_else(|| {
        ApiError::not_found(format!("no payment methods are known for country '{country}'"))
    })?;
    Ok(Json(json!({ "data": methods, "hasMore": false, "nextCursor": null })))
}

async fn method(
    State(_stack): State<Arc<Stack>>,
    Path((country, code)): Path<(String, String)>,
    principal: Principal,
) -> ApiResult<Json<Value>> {
    principal.require("capabilities:read")?;
    let method = catalog::shipped()
        .method(&country, &code)
        .ok_or_else(|| ApiError::not_found(format!("method '{code}' is not available in '{country}'")))?;
    Ok(Json(json!({ "method": method })))
}
