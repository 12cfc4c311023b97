//! The operator onboards organizations: creates one with its first owner,
//! renames it, lists its members and re-issues a member's invitation
//! (account recovery). Suspension is in `admin::mod`.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use sika_api::admin::{
    AdminRefusals, CreateOrganization, CreatedOrganization, OrganizationEnvelope, ReissuedInvitation,
    RenameOrganization,
};
use sika_api::admin::{OrganizationPath, OrganizationRefusals};
use sika_api::{ErrorBody, ListPage};

use super::audit::AuditTarget;
use super::{AdminState, render_organization};
use crate::domain::error::ApiResult;
use crate::domain::members;

/// Create an organization and invite its first owner
///
/// The organization exists on both stacks at once, under one id. The
/// answer holds the owner's invitation token (`inv_…`, shown once); the
/// owner sets a password with it at `POST /v1/sessions` on either stack.
#[utoipa::path(post, path = "/admin/v1/organizations", operation_id = "createOrganization",
    security(("operator" = [])), request_body = CreateOrganization,
    responses(
        (status = 201, description = "The organization and the owner's invitation", body = CreatedOrganization),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`)", body = ErrorBody),
        AdminRefusals),
)]
pub(super) async fn create(
    State(state): State<Arc<AdminState>>,
    body: axum::body::Bytes,
) -> ApiResult<Response> {
    let body: CreateOrganization = crate::http::extract::parse_json(&body)?;
    let (organization, invitation) = members::create_organization(
        &state.identity,
        &body,
        state.live.now_ms(),
        state.live.mailer().as_ref(),
    )?;
    let target = AuditTarget(organization.id.clone());
    let created = CreatedOrganization { organization: render_organization(&organization), invitation };
    let mut response = (StatusCode::CREATED, Json(created)).into_response();
    response.extensions_mut().insert(target);
    Ok(response)
}

/// Rename an organization
#[utoipa::path(patch, path = "/admin/v1/organizations/{id}", operation_id = "renameOrganization",
    security(("operator" = [])), params(OrganizationPath), request_body = RenameOrganization,
    responses((status = 200, description = "The organization, renamed", body = OrganizationEnvelope),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`)", body = ErrorBody),
        OrganizationRefusals),
)]
pub(super) async fn rename(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<OrganizationEnvelope>> {
    let body: RenameOrganization = crate::http::extract::parse_json(&body)?;
    let organization = members::rename_organization(&state.identity, &id, &body)?;
    Ok(Json(OrganizationEnvelope { organization: render_organization(&organization) }))
}

/// An organization's team members
#[utoipa::path(get, path = "/admin/v1/organizations/{id}/members", operation_id = "listOrganizationMembers",
    security(("operator" = [])), params(OrganizationPath),
    responses(
        (status = 200, description = "Every member, oldest first, in one page", body = ListPage<sika_api::members::Member>),
        OrganizationRefusals),
)]
pub(super) async fn list_members(
    State(state): State<Arc<AdminState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<ListPage<sika_api::members::Member>>> {
    Ok(Json(ListPage::whole(members::members_of_organization(&state.identity, &id)?)))
}

/// Issue a member a fresh invitation (account recovery)
///
/// Earlier invitations of the member stop working. Accepting it sets a new
/// password and ends the member's sessions.
#[utoipa::path(
    post, path = "/admin/v1/organizations/{id}/members/{memberId}/invitations",
    operation_id = "reissueInvitation",
    security(("operator" = [])),
    params(OrganizationPath, ("memberId" = String, Path, description = "The member's id (`mem_…`)")),
    responses((status = 201, description = "The member and the new invitation", body = ReissuedInvitation),
        (status = 404, description = "No such organization or member", body = ErrorBody),
        AdminRefusals),
)]
pub(super) async fn reissue_invitation(
    State(state): State<Arc<AdminState>>,
    Path((id, member_id)): Path<(String, String)>,
) -> ApiResult<(StatusCode, Json<ReissuedInvitation>)> {
    let (member, invitation) = members::reissue_invitation(
        &state.identity,
        &id,
        &member_id,
        state.live.now_ms(),
        state.live.mailer().as_ref(),
    )?;
    Ok((
        StatusCode::CREATED,
        Json(ReissuedInvitation { member: members::render_member(&member), invitation }),
    ))
}
