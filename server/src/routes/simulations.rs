use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use sika_api::orders::OrderEnvelope;
use sika_engine::{Command, Currency, Outcome};

use crate::auth::Principal;
use crate::error::{ApiError, ApiResult, money_error};
use crate::extract::ApiJson;
use crate::render::{self, AmountInput};
use crate::routes::conversions::validate_reference;
use crate::simulator;
use crate::stack::{Stack, StackKind};

pub fn router() -> Router<Arc<Stack>> {
    Router::new()
        .route("/v1/simulations", get(index))
        .route("/v1/simulations/deposits", post(deposit))
        .route("/v1/simulations/virtual-accounts/{id}/deposits", post(virtual_account_deposit))
        .route("/v1/simulations/orders/{id}/funds", post(order_funds))
}

fn sandbox_only(stack: &Stack) -> ApiResult<()> {
    match stack.kind {
        StackKind::Sandbox => Ok(()),
        StackKind::Live => Err(ApiError::not_found("simulations exist only on the sandbox stack")),
    }
}

async fn index(State(stack): State<Arc<Stack>>, _principal: Principal) -> ApiResult<Json<Value>> {
    sandbox_only(&stack)?;
    let data: Vec<Value> = simulator::SIMULATIONS.iter().map(simulator::render).collect();
    Ok(Json(json!({ "data": data, "hasMore": false, "nextCursor": null })))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DepositRequest {
    currency: String,
    amount: AmountInput,
    external_reference: Option<String>,
}

async fn deposit(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    ApiJson(body): ApiJson<DepositRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    sandbox_only(&stack)?;
    principal.require("accounts:write")?;
    let currency = Currency::find(&body.currency.to_ascii_uppercase())
        .map_err(|e| ApiError::validation("currency", e.to_string()))?;
    let amount = currency.parse(body.amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    if let Some(reference) = &body.external_reference {
        validate_reference(reference)?;
    }
    let applied = stack
        .engine
        .execute(Command::Deposit {
            organization: principal.organization().to_string(),
            currency: currency.code.to_string(),
            amount,
            external_reference: body.external_reference,
        })
        .await?;
    let Outcome::Deposit(deposit) = applied.outcome else { return Err(ApiError::internal()) };
    let status = if applied.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(json!({ "deposit": render::deposit(&deposit) }))))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct VirtualAccountDepositRequest {
    amount: AmountInput,
    external_reference: Option<String>,
}

/// A customer paid into a virtual account: the money lands on the balance.
async fn virtual_account_deposit(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    axum::extract::Path(id): axum::extract::Path<String>,
    ApiJson(body): ApiJson<VirtualAccountDepositRequest>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    sandbox_only(&stack)?;
    principal.require("virtual-accounts:write")?;
    let account = crate::virtual_accounts::load(&stack.engine.read()?, &id)?
        .filter(|a| a.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("virtual account '{id}' not found")))?;
    let currency = Currency::find(&account.currency).map_err(|_| ApiError::internal())?;
    let amount = currency.parse(body.amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    if let Some(reference) = &body.external_reference {
        validate_reference(reference)?;
    }
    let applied = stack
        .engine
        .execute(Command::Deposit {
            organization: principal.organization().to_string(),
            currency: currency.code.to_string(),
            amount,
            external_reference: body.external_reference,
        })
        .await?;
    let Outcome::Deposit(deposit) = applied.outcome else { return Err(ApiError::internal()) };
    let mut rendered = render::deposit(&deposit);
    rendered["virtualAccountId"] = Value::String(account.id);
    let status = if applied.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(json!({ "deposit": rendered }))))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OrderFundsRequest {
    amount: AmountInput,
    confirmations: Option<u32>,
}

/// Money arrives for an order: exact, over or under, and for crypto with a
/// number of confirmations (default: enough).
async fn order_funds(
    State(stack): State<Arc<Stack>>,
    principal: Principal,
    axum::extract::Path(id): axum::extract::Path<String>,
    ApiJson(body): ApiJson<OrderFundsRequest>,
) -> ApiResult<Json<OrderEnvelope>> {
    sandbox_only(&stack)?;
    principal.require("orders:write")?;
    let order = stack
        .engine
        .read()?
        .order(&id)?
        .filter(|o| o.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("order '{id}' not found")))?;
    let currency = Currency::find(&order.from_currency).map_err(|_| ApiError::internal())?;
    let amount = currency.parse(body.amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    let confirmations = body.confirmations.unwrap_or(order.required_confirmations);
    let funds = crate::movements::order_funds(&stack, &principal, &order, amount, confirmations)?;
    stack.engine.execute(Command::OrderFunds(funds)).await?;
    if let Ok(webhooks) = stack.webhooks() {
        webhooks.wake();
    }
    let order = crate::routes::orders::render_full(&stack.engine.read()?, principal.organization(), &id)?
        .ok_or_else(ApiError::internal)?;
    Ok(Json(OrderEnvelope { order }))
}
