use std::sync::Arc;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::catalog;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::stack::{Stack, StackKind};

/// The most destinations one call validates.
pub const BULK_ITEMS_MAX: usize = 100;

pub fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/validate/bulk", post(bulk))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Item {
    code: String,
    account_number: Option<String>,
    address: Option<String>,
    #[allow(dead_code)]
    routing_number: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BulkRequest {
    items: Vec<Item>,
}

async fn bulk(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<BulkRequest>,
) -> ApiResult<Json<Value>> {
    if principal.require("validation:write").is_err() {
        principal.require("validation:read")?;
    }
    if body.items.is_empty() || body.items.len() > BULK_ITEMS_MAX {
        return Err(ApiError::validation("items", format!("must hold 1 to {BULK_ITEMS_MAX} items")));
    }
    let mut results = Vec::with_capacity(body.items.len());
    for (index, item) in body.items.iter().enumerate() {
        if item.code.trim().is_empty() {
            return Err(ApiError::validation(&format!("items[{index}].code"), "must not be empty"));
        }
        let mut result =
            catalog::sandbox_validate(&item.code, item.account_number.as_deref(), item.address.as_deref());
        if stack.kind == StackKind::Live && result.valid {
            // Without a provider lookup the live stack checks shape only.
            result.account_name = None;
        }
        results.push(json!({ "code": item.code, "result": result }));
    }
    Ok(Json(json!({ "results": results })))
}
