//! `/v1/orders`: operations generated from the handlers and the wire types
//! (`sika_api::orders`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use serde_json::Value;
use sika_api::orders::{CreateOrder, Order, OrderEnvelope};
use sika_api::{FieldRefusals, Id, ListPage, ListQuery, MovementFilter, PageRefusals, ReadRefusals, Replays};
use sika_engine::{Command, Outcome};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiResult, unexpected};
use crate::domain::instructions::{fingerprint, new_order};
use crate::domain::render;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries, from_value};
use crate::http::found::Loaded;
use crate::http::routes::movements::{self, created_or_replayed};

pub(crate) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(read))
}

/// Collect on one rail and pay out on another
///
/// Answers with the deposit instructions the payer follows; once the funds
/// arrive (and, for crypto, are confirmed) the node pays out what arrived
/// less the fee. The same `externalReference` with the same body answers
/// the original order (200), as it is now, instead of opening another.
#[utoipa::path(post, path = "/v1/orders", operation_id = "createOrder",
    request_body = CreateOrder, security(("bearer" = ["orders:write"])),
    responses((status = 201, description = "The order, awaiting funds", body = OrderEnvelope),
        Replays<OrderEnvelope>, FieldRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<OrderEnvelope>)> {
    let print = fingerprint(&raw);
    let request: CreateOrder = from_value(raw)?;
    let new = new_order(&stack, &principal, request, print).await?;
    let applied = stack.engine.execute(Command::CreateOrder(new)).await?;
    let Outcome::Order(order) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    // A replayed order shows its payout leg, as GET does.
    let created = render::order(&order, None, &[]);
    let (status, order) = created_or_replayed(&stack, &principal, applied.replayed, &order.id, created)?;
    Ok((status, Json(OrderEnvelope { order })))
}

/// One order with its merged timeline
#[utoipa::path(get, path = "/v1/orders/{id}", operation_id = "getOrder",
    params(Id<OrderEnvelope>), security(("bearer" = ["orders:read"])),
    responses((status = 200, description = "The order", body = OrderEnvelope), ReadRefusals<OrderEnvelope>),
)]
async fn read(Loaded { record: order, .. }: Loaded<Order>) -> ApiResult<Json<OrderEnvelope>> {
    Ok(Json(OrderEnvelope { order }))
}

/// Orders, newest first
#[utoipa::path(get, path = "/v1/orders", operation_id = "listOrders",
    params(ListQuery, MovementFilter), security(("bearer" = ["orders:read"])),
    responses((status = 200, description = "One page of orders", body = ListPage<Order>), PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, MovementFilter>,
) -> ApiResult<Json<ListPage<Order>>> {
    movements::page(&stack, &principal, query, filter)
}
