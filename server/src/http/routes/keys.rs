//! `/v1/keys`: API key management, served through a utoipa-axum router
//! (`sika_api::keys`). Only an owner's or admin's session may manage keys,
//! on the stack of the listener it calls.

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::keys::{ApiKey, ApiKeyEnvelope, CreateApiKey, CreatedApiKeyEnvelope};
use sika_api::{
    BadPage, ErrorBody, FieldRefusals, Id, ListPage, ListQuery, ReadRefusals, SessionRefusals, With,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::credentials;
use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(revoke))
}

/// Create an API key
///
/// Needs an owner's or admin's session (`sess_…`); an API key gets 403. The
/// full key is in `apiKey.secret`, shown this once. An organization holds
/// at most 100 keys that are not revoked on each stack.
#[utoipa::path(post, path = "/v1/keys", operation_id = "createKey",
    request_body = CreateApiKey, security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses((status = 201, description = "The key, with its secret", body = CreatedApiKeyEnvelope),
        (status = 409, description = "The organization already has 100 active keys (`invalid_state`, `details.limit`)", body = ErrorBody),
        FieldRefusals<SessionRefusals>),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateApiKey>,
) -> ApiResult<(StatusCode, Json<CreatedApiKeyEnvelope>)> {
    let created =
        credentials::create(&stack.engine, stack.keys(), stack.kind, principal.member(), body).await?;
    Ok((StatusCode::CREATED, Json(CreatedApiKeyEnvelope { api_key: created })))
}

/// API keys
///
/// Every key of the organization on this stack, revoked ones included,
/// oldest first, paged by `limit` and `cursor`. Needs an owner's or admin's
/// session.
#[utoipa::path(get, path = "/v1/keys", operation_id = "listKeys",
    params(ListQuery), security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses(
        (status = 200, description = "One page of keys, without their secrets", body = ListPage<ApiKey>),
        With<BadPage, SessionRefusals>),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<ApiKey>>> {
    Ok(Json(credentials::list(stack.keys(), &stack.identity, stack.kind, principal.member(), &query)?))
}

/// Revoke an API key
///
/// The key stops working at once; revoking it again changes nothing. Needs
/// an owner's or admin's session.
#[utoipa::path(delete, path = "/v1/keys/{id}", operation_id = "revokeKey",
    params(Id<ApiKeyEnvelope>), security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses((status = 200, description = "The revoked key", body = ApiKeyEnvelope),
        ReadRefusals<ApiKeyEnvelope, SessionRefusals>),
)]
async fn revoke(Call { stack, principal }: Call, Path(id): Path<String>) -> ApiResult<Json<ApiKeyEnvelope>> {
    let api_key = credentials::revoke(&stack.engine, stack.keys(), principal.member(), &id).await?;
    Ok(Json(ApiKeyEnvelope { api_key }))
}
