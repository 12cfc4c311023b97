use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::ApiResult;
use crate::render;
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/accounts", get(list))
}

/// One balance account per currency; not paginated.
async fn list(State(stack): State<Arc<Stack>>, principal: Principal) -> ApiResult<Json<Value>> {
    principal.require("accounts:read")?;
    let accounts = stack.engine.read()?.organization_accounts(principal.organization())?;
    let data: Vec<Value> = accounts
        .iter()
        .map(|a| render::account(a, stack.engine.mid_rate(&a.currency, "USD")))
        .collect::<ApiResult<_>>()?;
    Ok(Json(json!({ "data": data, "hasMore": false, "nextCursor": null })))
}
