//! `/v1/members/me/totp`: the calling member's two-factor sign-in
//! (`domain::totp`). Any member's own session; an API key gets 403.

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use sika_api::members::{TotpCode, TotpEnrolment, TotpRecoveryCodes, TotpStatus};
use sika_api::{BadBody, ErrorBody, SessionRefusals, VersionRefusals, With};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Member;
use crate::domain::stack::Stack;
use crate::domain::totp;
use crate::http::auth::Call;
use crate::http::extract::ApiJson;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(enrol, disable)).routes(routes!(confirm))
}

fn member(call: &Call) -> ApiResult<&Member> {
    call.principal.member().ok_or_else(|| {
        ApiError::forbidden("two-factor sign-in belongs to a member's session, not an API key")
    })
}

/// Start two-factor sign-in
///
/// A new authenticator secret for the calling member, not yet in force
/// (a pending one is replaced): add it to an authenticator app (the
/// `otpauthUrl` is what a QR code holds), then confirm a code with
/// `POST /v1/members/me/totp/confirm`. `409 invalid_state` when it is
/// already on.
#[utoipa::path(post, path = "/v1/members/me/totp", operation_id = "enrolTotp",
    security(("bearer" = ["session"])),
    responses((status = 201, description = "The secret, pending", body = TotpEnrolment),
        (status = 409, description = "Two-factor sign-in is already on (`invalid_state`)", body = ErrorBody),
        VersionRefusals<SessionRefusals>),
)]
async fn enrol(call: Call) -> ApiResult<(StatusCode, Json<TotpEnrolment>)> {
    let enrolment = totp::enrol(&call.stack.identity, member(&call)?, call.stack.now_ms())?;
    Ok((StatusCode::CREATED, Json(enrolment)))
}

/// Turn two-factor sign-in on
///
/// With a current code of the pending secret, two-factor sign-in is in
/// force: from now on `POST /v1/sessions` needs `code` (or `recoveryCode`)
/// after the password. The answer holds ten recovery codes, shown this
/// once; each works once in place of a code.
#[utoipa::path(post, path = "/v1/members/me/totp/confirm", operation_id = "confirmTotp",
    request_body = TotpCode, security(("bearer" = ["session"])),
    responses((status = 200, description = "On, with the recovery codes", body = TotpRecoveryCodes),
        (status = 409, description = "Nothing is being enrolled, or it is already on (`invalid_state`)", body = ErrorBody),
        With<BadBody, VersionRefusals<SessionRefusals>>),
)]
async fn confirm(call: Call, ApiJson(body): ApiJson<TotpCode>) -> ApiResult<Json<TotpRecoveryCodes>> {
    Ok(Json(totp::confirm(&call.stack.identity, member(&call)?, &body.code, call.stack.now_ms())?))
}

/// Turn two-factor sign-in off
///
/// With a current code (or an unused recovery code).
#[utoipa::path(delete, path = "/v1/members/me/totp", operation_id = "disableTotp",
    request_body = TotpCode, security(("bearer" = ["session"])),
    responses((status = 200, description = "Off", body = TotpStatus),
        (status = 409, description = "Two-factor sign-in is not on (`invalid_state`)", body = ErrorBody),
        With<BadBody, VersionRefusals<SessionRefusals>>),
)]
async fn disable(call: Call, ApiJson(body): ApiJson<TotpCode>) -> ApiResult<Json<TotpStatus>> {
    Ok(Json(totp::disable(&call.stack.identity, member(&call)?, &body.code, call.stack.now_ms())?))
}
