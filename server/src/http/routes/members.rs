//! `/v1/members`: an organization's team, managed by its owners and admins
//! (a session; an API key gets 403).

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::members::{CreateMember, InvitedMember, MemberEnvelope, UpdateMember};
use sika_api::{
    BadPage, ErrorBody, FieldRefusals, Id, ListPage, ListQuery, NoSuch, ReadRefusals, SessionRefusals, With,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::members;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(list, create)).routes(routes!(update, remove))
}

/// Team members
///
/// Every member of the organization, oldest first, paged by `limit` and
/// `cursor`. Needs an owner's or admin's session.
#[utoipa::path(get, path = "/v1/members", operation_id = "listMembers",
    params(ListQuery), security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses((status = 200, description = "One page of members", body = ListPage<sika_api::members::Member>),
        With<BadPage, SessionRefusals>),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<sika_api::members::Member>>> {
    Ok(Json(members::list_members(&stack.identity, principal.member(), &query)?))
}

/// Invite a member
///
/// Needs an owner's or admin's session; only an owner invites an owner. The
/// answer holds the invitation token (`inv_…`, shown once) the member
/// accepts with `POST /v1/sessions`.
#[utoipa::path(post, path = "/v1/members", operation_id = "createMember",
    request_body = CreateMember, security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses((status = 201, description = "The member and their invitation", body = InvitedMember),
        (status = 409, description = "A member already has this email (`conflict`), or the team is full (`invalid_state`)", body = ErrorBody),
        FieldRefusals<SessionRefusals>),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateMember>,
) -> ApiResult<(StatusCode, Json<InvitedMember>)> {
    let invited = members::add_member(
        &stack.identity,
        principal.member(),
        &body,
        stack.now_ms(),
        stack.mailer().as_ref(),
    )?;
    Ok((StatusCode::CREATED, Json(invited)))
}

/// Change a member's role
///
/// Needs an owner's or admin's session; only an owner makes or changes an
/// owner, and the last owner keeps the role (`409 invalid_state`).
#[utoipa::path(patch, path = "/v1/members/{id}", operation_id = "updateMember",
    params(Id<MemberEnvelope>), request_body = UpdateMember,
    security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses((status = 200, description = "The member", body = MemberEnvelope),
        (status = 409, description = "The organization would have no owner (`invalid_state`)", body = ErrorBody),
        NoSuch<MemberEnvelope>, FieldRefusals<SessionRefusals>),
)]
async fn update(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<UpdateMember>,
) -> ApiResult<Json<MemberEnvelope>> {
    let member = members::change_role(&stack.identity, principal.member(), &id, body.role)?;
    Ok(Json(MemberEnvelope { member }))
}

/// Remove a member
///
/// Their sessions and invitations end at once. Needs an owner's or admin's
/// session; only an owner removes an owner, and the last owner stays
/// (`409 invalid_state`).
#[utoipa::path(delete, path = "/v1/members/{id}", operation_id = "deleteMember",
    params(Id<MemberEnvelope>), security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses((status = 200, description = "The member as they were", body = MemberEnvelope),
        (status = 409, description = "The organization would have no owner (`invalid_state`)", body = ErrorBody),
        ReadRefusals<MemberEnvelope, SessionRefusals>),
)]
async fn remove(Call { stack, principal }: Call, Path(id): Path<String>) -> ApiResult<Json<MemberEnvelope>> {
    let member = members::remove_member(&stack.identity, principal.member(), &id)?;
    Ok(Json(MemberEnvelope { member }))
}
