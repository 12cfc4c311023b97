//! Disputes, their threads, and the sandbox simulations that open and
//! resolve them, served through a utoipa-axum router
//! (`sika_api::disputes`). The rules live in `crate::domain::disputes`.

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::disputes::{
    CreateDisputeMessage, Dispute, DisputeEnvelope, DisputeFilter, DisputeMessage, DisputeMessageEnvelope,
    ResolveDispute, SimulateDispute,
};
use sika_api::{
    BodyRefusals, ErrorBody, Id, ListPage, ListQuery, NoSuch, PageRefusals, ReadRefusals, Refusals,
};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::disputes;
use crate::domain::error::ApiResult;
use crate::domain::simulator::sandbox_only;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries, ApiQuery};
use crate::http::found::Loaded;

/// What the disputes' use cases take of `stack`.
pub(crate) fn deps(stack: &Stack) -> disputes::Deps<'_> {
    disputes::Deps {
        engine: &stack.engine,
        kind: stack.kind,
        identity: &stack.identity,
        files: crate::http::routes::files::store(stack),
    }
}

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(read))
        .routes(routes!(post_message, messages))
        .routes(routes!(accept))
        .routes(routes!(simulate))
        .routes(routes!(simulate_resolve))
}

/// Disputes, newest first, without their threads
#[utoipa::path(get, path = "/v1/disputes", operation_id = "listDisputes",
    params(ListQuery, DisputeFilter), security(("bearer" = ["disputes:read"])),
    responses((status = 200, description = "One page of disputes", body = ListPage<Dispute>),
        (status = 400, description = "A bad `limit`, `cursor` or `status`, or a query parameter the operation does not take (`validation_error` naming it)", body = ErrorBody),
        Refusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, DisputeFilter>,
) -> ApiResult<Json<ListPage<Dispute>>> {
    Ok(Json(disputes::page(&deps(&stack), principal.organization(), &query, filter.status.as_deref())?))
}

/// One dispute with its message thread, oldest first
#[utoipa::path(get, path = "/v1/disputes/{id}", operation_id = "getDispute",
    params(Id<DisputeEnvelope>), security(("bearer" = ["disputes:read"])),
    responses((status = 200, description = "The dispute", body = DisputeEnvelope),
        ReadRefusals<DisputeEnvelope>),
)]
async fn read(
    Loaded { record, snapshot, .. }: Loaded<disputes::Dispute>,
) -> ApiResult<Json<DisputeEnvelope>> {
    Ok(Json(DisputeEnvelope { dispute: disputes::render(&snapshot, &record)? }))
}

/// Post to a dispute's thread
///
/// Follow-up evidence, questions, context, with files uploaded through
/// `POST /v1/files` attached. An accepted or declined dispute's thread
/// takes no more messages, also when the resolution commits while the
/// message is in flight.
#[utoipa::path(post, path = "/v1/disputes/{id}/messages", operation_id = "createDisputeMessage",
    params(Id<DisputeEnvelope>), request_body = CreateDisputeMessage,
    security(("bearer" = ["disputes:write"])),
    responses((status = 201, description = "The message, in the thread", body = DisputeMessageEnvelope),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`), or the dispute is resolved or its thread full (`bad_request`)", body = ErrorBody),
        (status = 409, description = "The dispute kept changing under concurrent requests (`conflict`); retry", body = ErrorBody),
        NoSuch<DisputeEnvelope>, BodyRefusals),
)]
async fn post_message(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<CreateDisputeMessage>,
) -> ApiResult<(StatusCode, Json<DisputeMessageEnvelope>)> {
    let message = disputes::post_message(&deps(&stack), principal.organization(), &id, body).await?;
    Ok((StatusCode::CREATED, Json(DisputeMessageEnvelope { message })))
}

/// A dispute's messages, newest first
#[utoipa::path(get, path = "/v1/disputes/{id}/messages", operation_id = "listDisputeMessages",
    params(Id<DisputeEnvelope>, ListQuery), security(("bearer" = ["disputes:read"])),
    responses((status = 200, description = "One page of messages", body = ListPage<DisputeMessage>),
        NoSuch<DisputeEnvelope>, PageRefusals),
)]
async fn messages(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<DisputeMessage>>> {
    Ok(Json(disputes::message_page(&deps(&stack), principal.organization(), &id, &query)?))
}

/// Accept a dispute: the payer's claim stands
///
/// Resolves an open dispute `accepted` (`outcome` `lost`): its hold is
/// taken from the balance, and what the balance could not hold yet is
/// taken from the next inflows. Fires `dispute.updated` then
/// `dispute.closed`.
#[utoipa::path(post, path = "/v1/disputes/{id}/accept", operation_id = "acceptDispute",
    params(Id<DisputeEnvelope>), security(("bearer" = ["disputes:write"])),
    responses((status = 200, description = "The dispute, resolved `accepted`, with its final thread", body = DisputeEnvelope),
        (status = 409, description = "The dispute is already resolved (`invalid_state`), or kept changing under concurrent requests (`conflict`; retry)", body = ErrorBody),
        ReadRefusals<DisputeEnvelope>),
)]
async fn accept(Call { stack, principal }: Call, Path(id): Path<String>) -> ApiResult<Json<DisputeEnvelope>> {
    let dispute = disputes::accept(&deps(&stack), principal.organization(), &id).await?;
    Ok(Json(DisputeEnvelope { dispute }))
}

/// Sandbox: the payer disputes a completed payment
///
/// Opens a dispute on a completed collection, or on a payment link's newest
/// payment, and fires `dispute.created`. A payment has at most one open
/// dispute. Its amount is held on the balance of its currency; when less
/// is available, what is available is held (`heldAmount`) and the next
/// inflows hold the rest, each firing `dispute.updated`.
#[utoipa::path(post, path = "/v1/simulations/disputes", operation_id = "simulateDispute",
    request_body = SimulateDispute, security(("bearer" = ["disputes:write"])),
    responses(
        (status = 201, description = "The dispute, open, with its (empty) thread", body = DisputeEnvelope),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`), or the payment is not completed or already has an open dispute (`bad_request`)", body = ErrorBody),
        (status = 404, description = "No such collection or payment link in this organization, or the live stack (simulations are the sandbox's)", body = ErrorBody),
        BodyRefusals),
)]
async fn simulate(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<SimulateDispute>,
) -> ApiResult<(StatusCode, Json<DisputeEnvelope>)> {
    sandbox_only(stack.kind)?;
    let dispute = disputes::open(&deps(&stack), principal.organization(), body).await?;
    Ok((StatusCode::CREATED, Json(DisputeEnvelope { dispute })))
}

/// Sandbox: resolve an open dispute
///
/// Resolves it as `accepted` (the hold is taken, `outcome` `lost`) or
/// `declined` (the hold is released, `outcome` `won`) with its thread as it
/// stands, and fires `dispute.updated` then `dispute.closed`.
#[utoipa::path(
    post, path = "/v1/simulations/disputes/{id}/resolve", operation_id = "simulateDisputeResolution",
    params(Id<DisputeEnvelope>), request_body = ResolveDispute, security(("bearer" = ["disputes:write"])),
    responses(
        (status = 200, description = "The dispute, resolved, with its final thread", body = DisputeEnvelope),
        (status = 400, description = "A bad `outcome` (`validation_error`)", body = ErrorBody),
        (status = 404, description = "No such dispute in this organization, or the live stack (simulations are the sandbox's)", body = ErrorBody),
        (status = 409, description = "The dispute is already resolved (`invalid_state`), or kept changing under concurrent requests (`conflict`; retry)", body = ErrorBody),
        BodyRefusals),
)]
async fn simulate_resolve(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<ResolveDispute>,
) -> ApiResult<Json<DisputeEnvelope>> {
    sandbox_only(stack.kind)?;
    let dispute =
        disputes::resolve(&deps(&stack), Some(principal.organization()), &id, &body.outcome).await?;
    Ok(Json(DisputeEnvelope { dispute }))
}
