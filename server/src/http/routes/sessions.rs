//! `/v1/sessions`: a team member accepts an invitation or logs in, and ends
//! their session. Log-in needs no credentials; ending one needs the session.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::{Extension, Json};
use sika_api::members::{
    CreateSession, EndedSessionEnvelope, PasswordResetAccepted, PasswordResetRequest, SessionEnvelope,
};
use sika_api::{BadBody, ErrorBody, SessionRefusals, VersionRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::members;
use crate::domain::principal::CurrentSession;
use crate::domain::stack::Stack;
use crate::http::auth::{Call, caller_ip};
use crate::http::extract::ApiJson;

/// The routes that need no credentials.
pub(super) fn open_router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create)).routes(routes!(password_reset))
}

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(end))
}

/// Open a session: accept an invitation or log in
///
/// `{invitation, password}` accepts an invitation and sets the member's
/// password (12 to 128 characters); `{email, password, organizationId?}`
/// logs in (an email in several organizations names the one with
/// `organizationId`). No credentials needed. Any wrong credential is the
/// same `401`. Attempts are counted before the password is checked: after
/// 10 failures from one address or for one email in 15 minutes, however
/// many arrive at once, attempts are refused with `429` until the window
/// ends. A node checks a few passwords at once; an attempt beyond them is
/// `429` at once (`retryAfter` 1) and does not count. The session works on
/// both stacks until `expiresAt`.
#[utoipa::path(post, path = "/v1/sessions", operation_id = "createSession",
    request_body = CreateSession, security(()),
    responses((status = 201, description = "The session, with its token", body = SessionEnvelope),
        (status = 400, description = "A field is missing or invalid (`validation_error`, with `details.field`), or the `sika-version` header is unknown", body = ErrorBody),
        (status = 401, description = "Wrong email, password or invitation (`unauthorized`)", body = ErrorBody),
        (status = 429, description = "Too many failed attempts, or the node is checking as many passwords as it can at once (`rate_limited`); retry after `Retry-After` seconds", body = ErrorBody),
        BadBody),
)]
async fn create(
    State(stack): State<Arc<Stack>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<CreateSession>,
) -> ApiResult<(StatusCode, Json<SessionEnvelope>)> {
    let ip = caller_ip(&stack, Some(peer), &headers);
    let ttl_ms = i64::try_from(stack.config.session_ttl.as_millis()).unwrap_or(i64::MAX);
    let session = members::create_session(stack.identity.clone(), ip, body, stack.now_ms(), ttl_ms).await?;
    Ok((StatusCode::CREATED, Json(SessionEnvelope { session })))
}

/// Email a link to set a new password
///
/// No credentials. Always answers `202`, in the same time, whether or not
/// the email is a member's: when it is, and the node sends email, each of
/// its memberships gets a link to `/dashboard/reset/{token}` with a reset
/// token (`rst_…`) that works once, for one hour (`--time-scale` applies).
/// `POST /v1/sessions` `{reset, password}` sets the new password with it.
#[utoipa::path(post, path = "/v1/sessions/password-reset", operation_id = "requestPasswordReset",
    request_body = PasswordResetRequest, security(()),
    responses((status = 202, description = "Accepted, whatever the email", body = PasswordResetAccepted),
        (status = 400, description = "`email` is not an email address (`validation_error`), or the `sika-version` header is unknown", body = ErrorBody),
        BadBody),
)]
async fn password_reset(
    State(stack): State<Arc<Stack>>,
    ApiJson(body): ApiJson<PasswordResetRequest>,
) -> ApiResult<(StatusCode, Json<PasswordResetAccepted>)> {
    let ttl_ms = members::reset_ttl_ms(stack.config.time_scale);
    let accepted = members::request_password_reset(
        &stack.identity,
        stack.mailer().as_ref(),
        &body,
        stack.now_ms(),
        ttl_ms,
    )?;
    Ok((StatusCode::ACCEPTED, Json(accepted)))
}

/// End the caller's session
///
/// The session's token stops working at once, on both stacks. Needs a
/// session (`sess_…`); an API key gets 403.
#[utoipa::path(delete, path = "/v1/sessions/current", operation_id = "deleteCurrentSession",
    security(("bearer" = ["session"])),
    responses((status = 200, description = "The session, ended", body = EndedSessionEnvelope),
        VersionRefusals<SessionRefusals>),
)]
async fn end(
    Call { stack, principal }: Call,
    current: Option<Extension<CurrentSession>>,
) -> ApiResult<Json<EndedSessionEnvelope>> {
    let (Some(Extension(CurrentSession(session))), Some(member)) = (current, principal.member()) else {
        return Err(ApiError::forbidden(
            "only a session can be ended; an API key is revoked with DELETE /v1/keys/{id}",
        ));
    };
    let ended = members::end_session(&stack.identity, member, &session, stack.now_ms())?;
    Ok(Json(EndedSessionEnvelope { session: ended }))
}
