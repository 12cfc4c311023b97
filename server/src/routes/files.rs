//! Files: upload (JSON with base64 contents), describe, list, download.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::files::{self, FileRequest};
use crate::pagination::{PageQuery, page_of};
use crate::stack::Stack;

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/files", post(upload).get(list))
        .route("/v1/files/{id}", get(read))
        .route("/v1/files/{id}/contents", get(contents))
}

async fn upload(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<FileRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    principal.require("disputes:write")?;
    let (file, bytes) = files::build(body, principal.organization(), stack.now_ms())?;
    files::save(&stack, &file, bytes).await?;
    Ok((StatusCode::CREATED, Json(json!({ "file": file.render() }))))
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("file '{id}' not found"))
}

async fn read(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    principal.require("disputes:read")?;
    let file = files::load_for(&stack.engine.read()?, principal.organization(), &id)?
        .ok_or_else(|| not_found(&id))?;
    Ok(Json(json!({ "file": file.render() })))
}

/// The raw bytes with the stored content type, as a download.
async fn contents(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    principal.require("disputes:read")?;
    let snapshot = stack.engine.read()?;
    let file = files::load_for(&snapshot, principal.organization(), &id)?.ok_or_else(|| not_found(&id))?;
    let bytes = files::contents(&snapshot, &id)?.ok_or_else(ApiError::internal)?;
    let content_type = HeaderValue::from_str(&file.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static(files::DEFAULT_CONTENT_TYPE));
    let disposition = HeaderValue::from_str(&files::content_disposition(&file.name))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_DISPOSITION, disposition),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::CACHE_CONTROL, HeaderValue::from_static("private, no-store")),
    ];
    Ok((headers, bytes).into_response())
}

async fn list(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<Value>> {
    principal.require("disputes:read")?;
    let body = page_of(&stack, principal.organization(), files::COLLECTION, &query, |snapshot, id| {
        Ok(files::load(snapshot, id)?.map(|f| f.render()))
    })?;
    Ok(Json(body))
}
