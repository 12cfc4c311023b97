use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::credentials::require_owner_or_admin;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::representative::{self, RepresentativeRequest};
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/organization/representative", get(read).put(replace))
}

async fn read(State(stack): State<Arc<Stack>>, principal: Principal) -> ApiResult<Json<Value>> {
    principal.require("collections:read")?;
    let record = representative::load(&stack, principal.organization())?
        .ok_or_else(|| ApiError::not_found("this organization has no representative yet"))?;
    Ok(Json(json!({ "representative": record.render() })))
}

/// Owners and admins only, through a session; API keys get 403.
async fn replace(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<RepresentativeRequest>,
) -> ApiResult<Json<Value>> {
    require_owner_or_admin(principal.member())?;
    let record = representative::replace(&stack, principal.organization(), body).await?;
    Ok(Json(json!({ "representative": record.render() })))
}
