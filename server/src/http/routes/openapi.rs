use std::sync::Arc;

use axum::routing::get;
use axum::{Json, Router};
use serde_json::Value;

use crate::domain::stack::Stack;

pub(crate) fn router() -> Router<Arc<Stack>> {
    Router::new().route("/v1/openapi.json", get(document))
}

async fn document() -> Json<Value> {
    Json(crate::http::openapi::document())
}
