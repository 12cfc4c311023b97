//! `/v1/simulations`: the sandbox's deterministic behaviours and the calls
//! that play a counterparty's part, served through a utoipa-axum router
//! (`sika_api::simulations`). The live stack answers 404 to every one.

use sika_engine::OrderId;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use sika_api::orders::OrderEnvelope;
use sika_api::simulations::{
    DepositEnvelope, SimulateDeposit, SimulateOrderFunds, SimulateVirtualAccountDeposit, Simulation,
};
use sika_api::virtual_accounts::VirtualAccountEnvelope;
use sika_api::{BodyRefusals, ErrorBody, Id, ListPage, ListQuery, PageRefusals, Replays};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::principal::Principal;
use crate::domain::simulations;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::routes::movements::{deps, status};

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new()
        .routes(routes!(index))
        .routes(routes!(deposit))
        .routes(routes!(virtual_account_deposit))
        .routes(routes!(order_funds))
}

/// The sandbox's deterministic behaviours
///
/// The simulation calls and the triggers built into the normal API (the
/// cents of a collection's or payout's amount, an account number's suffix),
/// each with the outcomes it can have, paged by `limit` and `cursor`.
/// Any valid key or session may read it.
#[utoipa::path(get, path = "/v1/simulations", operation_id = "listSimulations",
    params(ListQuery), security(("bearer" = [])),
    responses(
        (status = 200, description = "One page of the sandbox's behaviours", body = ListPage<Simulation>),
        (status = 404, description = "On the live stack, which has no simulations", body = ErrorBody),
        PageRefusals),
)]
async fn index(
    State(stack): State<Arc<Stack>>,
    _principal: Principal,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<Simulation>>> {
    Ok(Json(simulations::list(stack.kind, &stack.identity.secret(), &query)?))
}

/// Credit a sandbox balance
///
/// The amount lands on the organization's balance in that currency at once,
/// and `account.credited` fires.
#[utoipa::path(post, path = "/v1/simulations/deposits", operation_id = "simulateDeposit",
    request_body = SimulateDeposit, security(("bearer" = ["accounts:write"])),
    responses((status = 201, description = "The deposit", body = DepositEnvelope),
        (status = 400, description = "An unknown currency, a bad amount or externalReference (`validation_error`, with `details.field`), or an unknown `sika-version`", body = ErrorBody),
        (status = 404, description = "On the live stack, which has no simulations", body = ErrorBody),
        Replays<DepositEnvelope>, BodyRefusals),
)]
async fn deposit(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<SimulateDeposit>,
) -> ApiResult<(StatusCode, Json<DepositEnvelope>)> {
    let created = simulations::deposit(&deps(&stack), &principal, body).await?;
    Ok((status(&created), Json(DepositEnvelope { deposit: created.view })))
}

/// A customer pays into a virtual account
///
/// The amount, in the account's currency, lands on the organization's
/// balance and `account.credited` fires.
#[utoipa::path(
    post, path = "/v1/simulations/virtual-accounts/{id}/deposits",
    operation_id = "simulateVirtualAccountDeposit",
    params(Id<VirtualAccountEnvelope>), request_body = SimulateVirtualAccountDeposit,
    security(("bearer" = ["virtual-accounts:write"])),
    responses((status = 201, description = "The deposit, naming the virtual account", body = DepositEnvelope),
        (status = 400, description = "A bad amount or externalReference (`validation_error`, with `details.field`), or an unknown `sika-version`", body = ErrorBody),
        (status = 404, description = "No such virtual account in this organization, or the live stack, which has no simulations", body = ErrorBody),
        Replays<DepositEnvelope>, BodyRefusals),
)]
async fn virtual_account_deposit(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SimulateVirtualAccountDeposit>,
) -> ApiResult<(StatusCode, Json<DepositEnvelope>)> {
    let created = simulations::virtual_account_deposit(&deps(&stack), &principal, &id, body).await?;
    Ok((status(&created), Json(DepositEnvelope { deposit: created.view })))
}

/// Funds arrive for an order
///
/// Exactly the amount, more or less, in the order's `from.currency`, and for
/// crypto with a number of confirmations (default: enough). Once the funds
/// are confirmed the node pays out what arrived less the fee.
#[utoipa::path(post, path = "/v1/simulations/orders/{id}/funds", operation_id = "simulateOrderFunds",
    params(Id<OrderEnvelope>), request_body = SimulateOrderFunds, security(("bearer" = ["orders:write"])),
    responses((status = 200, description = "The order, as its GET shows it now", body = OrderEnvelope),
        (status = 400, description = "A bad amount (`validation_error`, with `details.field`), or an unknown `sika-version`", body = ErrorBody),
        (status = 404, description = "No such order in this organization, or the live stack, which has no simulations", body = ErrorBody),
        (status = 409, description = "The order takes no more funds (`invalid_state`)", body = ErrorBody),
        BodyRefusals),
)]
async fn order_funds(
    Call { stack, principal }: Call,
    Path(id): Path<OrderId>,
    ApiJson(body): ApiJson<SimulateOrderFunds>,
) -> ApiResult<Json<OrderEnvelope>> {
    let order = simulations::order_funds(&deps(&stack), &principal, &id, body).await?;
    Ok(Json(OrderEnvelope { order }))
}
