//! `/v1/requests/{id}`: the request log, served through a utoipa-axum
//! router (`sika_api::requests`).

use std::sync::Arc;

use axum::Json;
use sika_api::requests::LoggedRequestEnvelope;
use sika_api::{ErrorBody, Id, VersionRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::http::found::Loaded;
use crate::store::request_log::RequestLogEntry;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(find))
}

/// A logged request of this organization on this stack
///
/// Any request id from an `x-request-id` header or an error body's
/// `requestId`; another organization's requests are 404. Only the newest
/// requests are kept.
#[utoipa::path(get, path = "/v1/requests/{id}", operation_id = "getRequest",
    params(Id<LoggedRequestEnvelope>), security(("bearer" = ["requests:read"])),
    responses(
        (status = 200, description = "The request with its redacted bodies", body = LoggedRequestEnvelope),
        (status = 404, description = "No such request in this organization's log on this stack", body = ErrorBody),
        VersionRefusals),
)]
async fn find(Loaded { record, .. }: Loaded<RequestLogEntry>) -> ApiResult<Json<LoggedRequestEnvelope>> {
    Ok(Json(LoggedRequestEnvelope { request: crate::domain::render::logged_request(&record) }))
}
