//! The sandbox's simulations: its deterministic behaviours, and the calls
//! that play a counterparty's part (a deposit to a balance or a virtual
//! account, funds arriving for an order). Every one is refused on live as
//! if it were not there. `http::routes::simulations` only translates their
//! input and output.

use sika_api::orders::Order;
use sika_api::simulations::{
    Deposit, SimulateDeposit, SimulateOrderFunds, SimulateVirtualAccountDeposit, Simulation,
};
use sika_api::{AmountInput, ListPage, ListQuery};
use sika_engine::{Command, Currency, Engine, OrderId, Outcome};

use crate::domain::error::{ApiError, ApiResult, money_error, unexpected};
use crate::domain::instructions::{Deps, validate_reference};
use crate::domain::movements::{Created, Movement};
use crate::domain::orders;
use crate::domain::pagination::page_of_items;
use crate::domain::principal::Principal;
use crate::domain::render;
use crate::domain::simulator::{self, sandbox_only};
use crate::domain::stack_kind::StackKind;
use crate::domain::virtual_accounts::{self, VirtualAccount};

/// One page of the sandbox's behaviours, its cursors signed with `secret`.
pub(crate) fn list(stack: StackKind, secret: &[u8], query: &ListQuery) -> ApiResult<ListPage<Simulation>> {
    sandbox_only(stack)?;
    let data = simulator::SIMULATIONS.iter().map(simulator::render).collect();
    let scope = format!("{}/simulations", stack.name());
    page_of_items(data, query, secret, &scope)
}

/// Credits a sandbox balance with the deposit `request` describes; a
/// retry under the same `externalReference` answers the earlier deposit,
/// `replayed`.
pub(crate) async fn deposit(
    deps: &Deps<'_>,
    principal: &Principal,
    request: SimulateDeposit,
) -> ApiResult<Created<Deposit>> {
    sandbox_only(deps.stack)?;
    let currency = Currency::find(&request.currency.to_ascii_uppercase())
        .map_err(|e| ApiError::validation("currency", e.to_string()))?;
    credit(deps.ledger, principal.organization(), currency, &request.amount, request.external_reference).await
}

/// A customer pays into the caller's virtual account `id`: the amount, in
/// the account's currency, lands on the balance, and the deposit names the
/// account.
pub(crate) async fn virtual_account_deposit(
    deps: &Deps<'_>,
    principal: &Principal,
    id: &str,
    request: SimulateVirtualAccountDeposit,
) -> ApiResult<Created<Deposit>> {
    sandbox_only(deps.stack)?;
    let account: VirtualAccount = virtual_accounts::load(&deps.ledger.read()?, id)?
        .filter(|account| account.organization == principal.organization())
        .ok_or_else(|| ApiError::not_found(format!("virtual account '{id}' not found")))?;
    let currency = Currency::find(&account.currency).map_err(|e| ApiError::internal_from(e))?;
    let organization = principal.organization();
    let created =
        credit(deps.ledger, organization, currency, &request.amount, request.external_reference).await?;
    let view = Deposit { virtual_account_id: Some(account.id), ..created.view };
    Ok(Created { view, replayed: created.replayed })
}

/// Credits `amount` of `currency` to the organization's balance: the new
/// deposit, or the one an earlier request made under the same
/// `external_reference`, `replayed`.
async fn credit(
    ledger: &Engine,
    organization: &str,
    currency: Currency,
    amount: &AmountInput,
    external_reference: Option<String>,
) -> ApiResult<Created<Deposit>> {
    let amount = currency.parse(amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    if let Some(reference) = &external_reference {
        validate_reference(reference)?;
    }
    let applied = ledger
        .execute(Command::Deposit {
            organization: organization.to_string(),
            currency: currency.code.to_string(),
            amount,
            external_reference,
        })
        .await?;
    let Outcome::Deposit(deposit) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    Ok(Created { view: render::deposit(&deposit), replayed: applied.replayed })
}

/// Funds arrive for the caller's order `id`, as `request` describes; the
/// order as its GET shows it afterwards.
pub(crate) async fn order_funds(
    deps: &Deps<'_>,
    principal: &Principal,
    id: &OrderId,
    request: SimulateOrderFunds,
) -> ApiResult<Order> {
    sandbox_only(deps.stack)?;
    let organization = principal.organization();
    let order = deps
        .ledger
        .read()?
        .order(id)?
        .filter(|order| order.organization == organization)
        .ok_or_else(|| ApiError::not_found(format!("order '{id}' not found")))?;
    orders::receive_funds(deps, principal, &order, &request.amount, request.confirmations).await?;
    Order::find(&deps.ledger.read()?, organization, id)?
        .ok_or_else(|| ApiError::internal_from(format!("order '{id}' vanished after its funds")))
}
