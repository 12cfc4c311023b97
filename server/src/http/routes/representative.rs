//! `/v1/organization/representative`: the person registered with the
//! partner bank, served through a utoipa-axum router
//! (`sika_api::representative`).

use std::sync::Arc;

use axum::Json;
use sika_api::representative::{RepresentativeEnvelope, SetRepresentative};
use sika_api::{ErrorBody, FieldRefusals, SessionRefusals, VersionRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::representative;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::ApiJson;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(read, replace))
}

/// The organization representative
///
/// On the sandbox, opening the first GHS virtual account without one fills
/// a `sandbox_default` record from the owner's name.
#[utoipa::path(get, path = "/v1/organization/representative", operation_id = "getRepresentative",
    security(("bearer" = ["collections:read"])),
    responses((status = 200, description = "The representative", body = RepresentativeEnvelope),
        (status = 404, description = "This organization has no representative on this stack yet", body = ErrorBody),
        VersionRefusals),
)]
async fn read(Call { stack, principal }: Call) -> ApiResult<Json<RepresentativeEnvelope>> {
    let representative = representative::get(&stack.engine, principal.organization())?;
    Ok(Json(RepresentativeEnvelope { representative }))
}

/// Create or replace the representative
///
/// Needs an owner's or admin's session (`sess_…`); an API key gets 403. The
/// first GHS virtual account registers this person with the partner bank;
/// changing `fullName` or `idNumber` later updates only the node's record.
#[utoipa::path(put, path = "/v1/organization/representative", operation_id = "putRepresentative",
    request_body = SetRepresentative,
    security(("bearer" = ["session:owner"]), ("bearer" = ["session:admin"])),
    responses((status = 200, description = "The representative as set", body = RepresentativeEnvelope),
        FieldRefusals<SessionRefusals>),
)]
async fn replace(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<SetRepresentative>,
) -> ApiResult<Json<RepresentativeEnvelope>> {
    let representative =
        representative::set(&stack.engine, principal.member(), principal.organization(), body).await?;
    Ok(Json(RepresentativeEnvelope { representative }))
}
