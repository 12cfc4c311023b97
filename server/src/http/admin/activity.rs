//! Payouts, collections, refunds, orders and disputes across organizations,
//! filtered by status and by any part of any field (`q`, matched as the
//! node-wide search matches: case-insensitive, anywhere but the timeline).

use sika_engine::{CollectionId, OrderId, PayoutId};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::admin::{
    ActivityQuery, OrderFunds, Owned, OwnedCollectionEnvelope, OwnedDisputeEnvelope, OwnedOrderEnvelope,
    OwnedPayoutEnvelope, OwnedRefundEnvelope, SearchRefusals, StackPath, StackRefusals,
};
use sika_api::admin::{StackId, StackItemRefusals};
use sika_api::collections::Collection;
use sika_api::collections::CollectionEnvelope;
use sika_api::disputes::DisputeEnvelope;
use sika_api::disputes::{Dispute, ResolveDispute};
use sika_api::files::FileContents;
use sika_api::orders::Order;
use sika_api::orders::OrderEnvelope;
use sika_api::payouts::Payout;
use sika_api::payouts::PayoutEnvelope;
use sika_api::refunds::{Refund, RefundEnvelope};
use sika_api::{ErrorBody, ListPage};

use super::AdminState;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::movements::{self, owned_view};
use crate::domain::search;
use crate::http::extract::ApiQuery;
use crate::http::routes::movements::deps;

/// Search every organization's payouts on a stack
#[utoipa::path(get, path = "/admin/v1/{stack}/payouts", operation_id = "searchPayouts",
    security(("operator" = [])), params(StackPath, ActivityQuery),
    responses((status = 200, description = "Matching payouts, newest first", body = ListPage<Owned<Payout>>),
        SearchRefusals),
)]
pub(super) async fn payouts(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<ListPage<Owned<Payout>>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(movements::activity(stack.into(), &state.identity, &query)?))
}

/// One payout, with its timeline's webhook entries
#[utoipa::path(get, path = "/admin/v1/{stack}/payouts/{id}", operation_id = "getStackPayout",
    security(("operator" = [])), params(StackId<PayoutEnvelope>),
    responses((status = 200, description = "The payout and its organization", body = OwnedPayoutEnvelope),
        StackItemRefusals<PayoutEnvelope>),
)]
pub(super) async fn payout(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, PayoutId)>,
) -> ApiResult<Json<OwnedPayoutEnvelope>> {
    let payout = owned_view(&state.stack(&stack)?.engine, &id)?;
    Ok(Json(OwnedPayoutEnvelope { payout }))
}

/// Search every organization's collections on a stack
#[utoipa::path(get, path = "/admin/v1/{stack}/collections", operation_id = "searchCollections",
    security(("operator" = [])), params(StackPath, ActivityQuery),
    responses(
        (status = 200, description = "Matching collections, newest first", body = ListPage<Owned<Collection>>),
        SearchRefusals),
)]
pub(super) async fn collections(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<ListPage<Owned<Collection>>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(movements::activity(stack.into(), &state.identity, &query)?))
}

/// One collection, with its timeline's webhook entries
#[utoipa::path(get, path = "/admin/v1/{stack}/collections/{id}", operation_id = "getStackCollection",
    security(("operator" = [])), params(StackId<CollectionEnvelope>),
    responses(
        (status = 200, description = "The collection and its organization", body = OwnedCollectionEnvelope),
        StackItemRefusals<CollectionEnvelope>),
)]
pub(super) async fn collection(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, CollectionId)>,
) -> ApiResult<Json<OwnedCollectionEnvelope>> {
    let collection = owned_view(&state.stack(&stack)?.engine, &id)?;
    Ok(Json(OwnedCollectionEnvelope { collection }))
}

/// Search every organization's refunds on a stack
#[utoipa::path(get, path = "/admin/v1/{stack}/refunds", operation_id = "searchRefunds",
    security(("operator" = [])), params(StackPath, ActivityQuery),
    responses((status = 200, description = "Matching refunds, newest first", body = ListPage<Owned<Refund>>),
        SearchRefusals),
)]
pub(super) async fn refunds(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<ListPage<Owned<Refund>>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(movements::activity(stack.into(), &state.identity, &query)?))
}

/// One refund, with its timeline's webhook entries
#[utoipa::path(get, path = "/admin/v1/{stack}/refunds/{id}", operation_id = "getStackRefund",
    security(("operator" = [])), params(StackId<RefundEnvelope>),
    responses((status = 200, description = "The refund and its organization", body = OwnedRefundEnvelope),
        StackItemRefusals<RefundEnvelope>),
)]
pub(super) async fn refund(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, sika_engine::RefundId)>,
) -> ApiResult<Json<OwnedRefundEnvelope>> {
    let refund = owned_view(&state.stack(&stack)?.engine, &id)?;
    Ok(Json(OwnedRefundEnvelope { refund }))
}

/// Search every organization's orders on a stack
#[utoipa::path(get, path = "/admin/v1/{stack}/orders", operation_id = "searchOrders",
    security(("operator" = [])), params(StackPath, ActivityQuery),
    responses((status = 200, description = "Matching orders, newest first", body = ListPage<Owned<Order>>),
        SearchRefusals),
)]
pub(super) async fn orders(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<ListPage<Owned<Order>>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(movements::activity(stack.into(), &state.identity, &query)?))
}

/// One order, with its payout
#[utoipa::path(get, path = "/admin/v1/{stack}/orders/{id}", operation_id = "getStackOrder",
    security(("operator" = [])), params(StackId<OrderEnvelope>),
    responses((status = 200, description = "The order and its organization", body = OwnedOrderEnvelope),
        StackItemRefusals<OrderEnvelope>),
)]
pub(super) async fn order(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, OrderId)>,
) -> ApiResult<Json<OwnedOrderEnvelope>> {
    let order = owned_view(&state.stack(&stack)?.engine, &id)?;
    Ok(Json(OwnedOrderEnvelope { order }))
}

/// Every organization's disputes on one stack, each with its thread (the
/// console shows them without another request); `status` filters like the
/// public list (`resolved` matches accepted and declined).
#[utoipa::path(get, path = "/admin/v1/{stack}/disputes", operation_id = "searchDisputes",
    security(("operator" = [])), params(StackPath, ActivityQuery),
    responses(
        (status = 200, description = "Matching disputes, newest first", body = ListPage<Owned<Dispute>>),
        (status = 400, description = "A bad `limit`, `cursor` or `status`, or a query parameter the operation does not take (`validation_error` naming it)", body = ErrorBody),
        StackRefusals),
)]
pub(super) async fn disputes(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<ActivityQuery>,
) -> ApiResult<Json<ListPage<Owned<Dispute>>>> {
    let stack = state.stack(&stack)?;
    crate::domain::disputes::check_status_filter(query.status.as_deref())?;
    // The status filter is applied here (it knows `resolved`), not by `search`.
    let status = query.status.clone();
    let query = ActivityQuery { status: None, ..query };
    let lists = stack.into();
    Ok(Json(search::activity(
        lists,
        &state.identity,
        crate::domain::disputes::COLLECTION,
        &query,
        |s, id| {
            let Some((dispute, _)) = crate::domain::disputes::load(s, id)? else { return Ok(None) };
            if !crate::domain::disputes::status_matches(&dispute, status.as_deref()) {
                return Ok(None);
            }
            crate::domain::disputes::render(s, &dispute).map(Some)
        },
    )?))
}

fn admin_dispute(organization: &str, item: Dispute) -> Json<OwnedDisputeEnvelope> {
    Json(OwnedDisputeEnvelope { dispute: Owned { organization_id: organization.to_string(), item } })
}

/// One dispute with its thread
#[utoipa::path(get, path = "/admin/v1/{stack}/disputes/{id}", operation_id = "getStackDispute",
    security(("operator" = [])), params(StackId<DisputeEnvelope>),
    responses((status = 200, description = "The dispute and its organization", body = OwnedDisputeEnvelope),
        StackItemRefusals<DisputeEnvelope>),
)]
pub(super) async fn dispute(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<OwnedDisputeEnvelope>> {
    let stack = state.stack(&stack)?;
    let snapshot = stack.engine.read()?;
    let (dispute, _) = crate::domain::disputes::load_for(&snapshot, None, &id)?;
    Ok(admin_dispute(&dispute.organization, crate::domain::disputes::render(&snapshot, &dispute)?))
}

/// A file attached to a dispute's thread, as a download
///
/// The evidence a message of this dispute attaches (`attachments[].fileId`
/// in its thread), answered with the file's stored content type (shown
/// here as `application/octet-stream`), as an attachment, exactly the
/// bytes uploaded. Any other file is `404`.
#[utoipa::path(get, path = "/admin/v1/{stack}/disputes/{id}/files/{fileId}", operation_id = "getStackDisputeFile",
    security(("operator" = [])),
    params(StackId<DisputeEnvelope>, ("fileId" = String, Path, description = "The file's id (`file_…`), as the thread's attachments name it")),
    responses(
        (status = 200, description = "The file's bytes, with its content type", content_type = "application/octet-stream", body = FileContents),
        StackItemRefusals<DisputeEnvelope>),
)]
pub(super) async fn dispute_file(
    State(state): State<Arc<AdminState>>,
    Path((stack, id, file_id)): Path<(String, String, String)>,
) -> ApiResult<axum::response::Response> {
    let stack = state.stack(&stack)?;
    let snapshot = stack.engine.read()?;
    let (dispute, _) = crate::domain::disputes::load_for(&snapshot, None, &id)?;
    let file = crate::domain::disputes::attached_file(&snapshot, &dispute, &file_id)?.ok_or_else(|| {
        ApiError::not_found(format!("no message of dispute '{id}' attaches a file '{file_id}'"))
    })?;
    let bytes = crate::domain::files::contents(&snapshot, &file.id)?
        .ok_or_else(|| ApiError::internal_from(format!("file '{}' has no contents", file.id)))?;
    Ok(crate::http::routes::files::download(&file, bytes))
}

/// Resolve a dispute for the merchant or the payer
#[utoipa::path(post, path = "/admin/v1/{stack}/disputes/{id}/resolve", operation_id = "resolveStackDispute",
    security(("operator" = [])), params(StackId<DisputeEnvelope>), request_body = ResolveDispute,
    responses((status = 200, description = "The dispute, resolved", body = OwnedDisputeEnvelope),
        (status = 400, description = "A bad `outcome` (`validation_error`)", body = ErrorBody),
        (status = 409, description = "The dispute is already resolved (`invalid_state`)", body = ErrorBody),
        StackItemRefusals<DisputeEnvelope>),
)]
pub(super) async fn resolve_dispute(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
    body: axum::body::Bytes,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    let request: ResolveDispute = crate::http::extract::parse_json(&body)?;
    let stack = state.stack(&stack)?;
    let resolved = crate::domain::disputes::resolve(
        &crate::http::routes::disputes::deps(stack),
        None,
        &id,
        &request.outcome,
    )
    .await?;
    stack.attention.invalidate().await;
    let snapshot = stack.engine.read()?;
    let (dispute, _) = crate::domain::disputes::load_for(&snapshot, None, &id)?;
    let mut response = admin_dispute(&dispute.organization, resolved).into_response();
    // The audit log says which way the operator decided.
    response.extensions_mut().insert(super::audit::AuditDetail(format!("outcome: {}", request.outcome)));
    Ok(response)
}

/// Record the funds that arrived for an order (the manual rail)
///
/// On live there is no simulator: the operator records what arrived, and
/// the order proceeds on the actual amount.
#[utoipa::path(post, path = "/admin/v1/{stack}/orders/{id}/funds", operation_id = "recordOrderFunds",
    security(("operator" = [])), params(StackId<OrderEnvelope>), request_body = OrderFunds,
    responses((status = 200, description = "The order after the funds", body = OwnedOrderEnvelope),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`)", body = ErrorBody),
        (status = 409, description = "The order no longer awaits funds (`invalid_state`)", body = ErrorBody),
        StackItemRefusals<OrderEnvelope>),
)]
pub(super) async fn order_funds(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, OrderId)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<OwnedOrderEnvelope>> {
    let request: OrderFunds = crate::http::extract::parse_json(&body)?;
    let stack = state.stack(&stack)?;
    let order = crate::domain::orders::record_funds(&deps(stack), &state.identity, &id, request).await?;
    Ok(Json(OwnedOrderEnvelope { order }))
}
