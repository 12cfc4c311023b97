//! `/v1/refunds`: money given back to the payer of a completed collection
//! or a complete checkout session (`domain::refunds`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use serde_json::Value;
use sika_api::refunds::{CreateRefund, Refund, RefundEnvelope, RefundFilter};
use sika_api::{BodyRefusals, ErrorBody, Id, ListPage, ListQuery, PageRefusals, ReadRefusals, Replays};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::instructions::fingerprint;
use crate::domain::refunds;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries, from_value};
use crate::http::found::Loaded;
use crate::http::routes::movements::{deps, status};

pub(crate) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(read))
}

/// Give money back to a payer
///
/// Refunds a completed collection (`collectionId`) or a complete checkout
/// session (`sessionId`; exactly one of the two), in full or in part:
/// `amount` defaults to what is still refundable, the payment's amount
/// less every refund of it that has not failed. The amount is held on the
/// balance of the payment's currency at once, taken when the refund
/// completes and released when it fails; the payment's fee is not
/// returned. The same `externalReference` with the same body answers the
/// original refund (200).
#[utoipa::path(post, path = "/v1/refunds", operation_id = "createRefund",
    request_body = CreateRefund, security(("bearer" = ["refunds:write"])),
    responses((status = 201, description = "The refund, pending on its rail", body = RefundEnvelope),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`): more than is refundable names `amount` with `details.refundable`; a payment that is not completed names `collectionId` or `sessionId` with `details.refundable` `0.00`", body = ErrorBody),
        (status = 404, description = "No such collection or checkout session of yours (`not_found`)", body = ErrorBody),
        (status = 422, description = "`insufficient_funds`: the balance cannot hold the amount", body = ErrorBody),
        Replays<RefundEnvelope>, BodyRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<RefundEnvelope>)> {
    let print = fingerprint(&raw);
    let request: CreateRefund = from_value(raw)?;
    let created = refunds::create(&deps(&stack), &principal, request, print).await?;
    Ok((status(&created), Json(RefundEnvelope { refund: created.view })))
}

/// One refund with its full timeline
#[utoipa::path(get, path = "/v1/refunds/{id}", operation_id = "getRefund",
    params(Id<RefundEnvelope>), security(("bearer" = ["refunds:read"])),
    responses((status = 200, description = "The refund", body = RefundEnvelope),
        ReadRefusals<RefundEnvelope>),
)]
async fn read(Loaded { record: refund, .. }: Loaded<Refund>) -> ApiResult<Json<RefundEnvelope>> {
    Ok(Json(RefundEnvelope { refund }))
}

/// Refunds, newest first
#[utoipa::path(get, path = "/v1/refunds", operation_id = "listRefunds",
    params(ListQuery, RefundFilter), security(("bearer" = ["refunds:read"])),
    responses((status = 200, description = "One page of refunds", body = ListPage<Refund>), PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, RefundFilter>,
) -> ApiResult<Json<ListPage<Refund>>> {
    Ok(Json(refunds::list((&stack).into(), &principal, query, filter)?))
}
