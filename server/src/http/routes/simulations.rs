//! `/v1/simulations`: the sandbox's deterministic behaviours and the calls
//! that play a counterparty's part, served through a utoipa-axum router
//! (`sika_api::simulations`). The live stack answers 404 to every one.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use sika_api::orders::OrderEnvelope;
use sika_api::simulations::{
    Deposit, DepositEnvelope, SimulateDeposit, SimulateOrderFunds, SimulateVirtualAccountDeposit, Simulation,
};
use sika_api::virtual_accounts::VirtualAccountEnvelope;
use sika_api::{AmountInput, BodyRefusals, ErrorBody, Id, ListPage, ListQuery, PageRefusals, Replays};
use sika_engine::{Command, Currency, Outcome};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult, money_error, unexpected};
use crate::domain::instructions::validate_reference;
use crate::domain::pagination::page_of_items;
use crate::domain::principal::Principal;
use crate::domain::render;
use crate::domain::simulator::{self, sandbox_only};
use crate::domain::stack::Stack;
use crate::domain::virtual_accounts::VirtualAccount;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::found::owned;
use sika_engine::records::OrderRecord;

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
    sandbox_only(&stack)?;
    let data = simulator::SIMULATIONS.iter().map(simulator::render).collect();
    let scope = format!("{}/simulations", stack.kind.name());
    Ok(Json(page_of_items(data, &query, &stack.identity.secret(), &scope)?))
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
    sandbox_only(&stack)?;
    let currency = Currency::find(&body.currency.to_ascii_uppercase())
        .map_err(|e| ApiError::validation("currency", e.to_string()))?;
    let (status, deposit) =
        credit(&stack, principal.organization(), currency, &body.amount, body.external_reference).await?;
    Ok((status, Json(DepositEnvelope { deposit })))
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
    sandbox_only(&stack)?;
    let account: VirtualAccount = owned(&stack, &stack.engine.read()?, &principal, &id)?;
    let currency = Currency::find(&account.currency).map_err(|e| ApiError::internal_from(e))?;
    let (status, deposit) =
        credit(&stack, principal.organization(), currency, &body.amount, body.external_reference).await?;
    let deposit = Deposit { virtual_account_id: Some(account.id), ..deposit };
    Ok((status, Json(DepositEnvelope { deposit })))
}

/// Credits `amount` of `currency` to the organization's balance: 201 with
/// the new deposit, or 200 with the one an earlier request made under the
/// same `external_reference`.
async fn credit(
    stack: &Stack,
    organization: &str,
    currency: Currency,
    amount: &AmountInput,
    external_reference: Option<String>,
) -> ApiResult<(StatusCode, Deposit)> {
    let amount = currency.parse(amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    if let Some(reference) = &external_reference {
        validate_reference(reference)?;
    }
    let applied = stack
        .engine
        .execute(Command::Deposit {
            organization: organization.to_string(),
            currency: currency.code.to_string(),
            amount,
            external_reference,
        })
        .await?;
    let Outcome::Deposit(deposit) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let status = if applied.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, render::deposit(&deposit)))
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
    Path(id): Path<String>,
    ApiJson(body): ApiJson<SimulateOrderFunds>,
) -> ApiResult<Json<OrderEnvelope>> {
    sandbox_only(&stack)?;
    let order: OrderRecord = owned(&stack, &stack.engine.read()?, &principal, &id)?;
    let currency = Currency::find(&order.from_currency).map_err(|e| ApiError::internal_from(e))?;
    let amount = currency.parse(body.amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    let confirmations = body.confirmations.unwrap_or(order.required_confirmations);
    let funds = crate::domain::instructions::order_funds(&stack, &principal, &order, amount, confirmations)?;
    stack.engine.execute(Command::OrderFunds(funds)).await?;
    let order = crate::domain::views::find_order(&stack.engine.read()?, principal.organization(), &id)?
        .ok_or_else(|| ApiError::internal_from(format!("order '{id}' vanished after its funds")))?;
    Ok(Json(OrderEnvelope { order }))
}
