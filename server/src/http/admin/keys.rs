//! The operator lists and revokes any organization's API keys on a stack
//! (a leaked key is stopped without the merchant).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::admin::StackRefusals;
use sika_api::admin::{OrganizationEnvelope, StackId};
use sika_api::keys::{ApiKey, ApiKeyEnvelope};
use sika_api::{ErrorBody, ListPage};

use super::AdminState;
use crate::domain::credentials;
use crate::domain::error::ApiResult;

/// An organization's API keys on a stack
///
/// Every key, revoked ones included, newest first, in one page; never a
/// key's secret.
#[utoipa::path(get, path = "/admin/v1/{stack}/organizations/{id}/keys", operation_id = "listOrganizationKeys",
    security(("operator" = [])), params(StackId<OrganizationEnvelope>),
    responses((status = 200, description = "The keys", body = ListPage<ApiKey>),
        (status = 404, description = "Unknown stack or organization", body = ErrorBody),
        StackRefusals),
)]
pub(super) async fn list(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<ListPage<ApiKey>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(ListPage::whole(credentials::list_of_organization(stack.keys(), &state.identity, &id)?)))
}

/// Revoke an organization's API key
///
/// The key stops working at once; revoking it again changes nothing.
#[utoipa::path(
    delete, path = "/admin/v1/{stack}/organizations/{id}/keys/{keyId}",
    operation_id = "revokeOrganizationKey",
    security(("operator" = [])),
    params(StackId<OrganizationEnvelope>, ("keyId" = String, Path, description = "The key's id (`key_…`)")),
    responses((status = 200, description = "The revoked key", body = ApiKeyEnvelope),
        (status = 404, description = "Unknown stack, or no such key in this organization", body = ErrorBody),
        StackRefusals),
)]
pub(super) async fn revoke(
    State(state): State<Arc<AdminState>>,
    Path((stack, id, key_id)): Path<(String, String, String)>,
) -> ApiResult<Json<ApiKeyEnvelope>> {
    let stack = state.stack(&stack)?;
    let api_key = credentials::revoke_of_organization(&stack.engine, stack.keys(), &id, &key_id).await?;
    Ok(Json(ApiKeyEnvelope { api_key }))
}
