//! Orders: money collected on one rail and paid out on another. Each
//! operation is one function here; `http::routes::orders`, the sandbox's
//! simulations and the operator's console only translate their input and
//! output.

use sika_api::admin::{OrderFunds, Owned};
use sika_api::orders::{CreateOrder, Order};
use sika_api::{AmountInput, ListPage, ListQuery, MovementFilter};
use sika_engine::orders::OrderRecord;
use sika_engine::{Command, Currency, OrderId, Outcome};

use crate::domain::error::{ApiError, ApiResult, money_error, unexpected};
use crate::domain::identity::{Identity, Role};
use crate::domain::instructions::{self, Deps};
use crate::domain::movements::{self, Created, created_or_replayed, owned_view};
use crate::domain::pagination::Lists;
use crate::domain::principal::Principal;
use crate::domain::render;

/// Opens the order `request` asks for (its body's `fingerprint` tells a
/// retry from a different request under the same reference), with the
/// deposit instructions its payer follows. A retry of a created order
/// answers it as it is now, `replayed`, its payout leg shown as GET does.
pub(crate) async fn create(
    deps: &Deps<'_>,
    principal: &Principal,
    request: CreateOrder,
    fingerprint: [u8; 32],
) -> ApiResult<Created<Order>> {
    let new = instructions::new_order(deps, principal, request, fingerprint).await?;
    let applied = deps.ledger.execute(Command::CreateOrder(Box::new(new))).await?;
    let Outcome::Order(order) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let created = render::order(&order, None, &[]);
    created_or_replayed(
        deps.ledger,
        principal.organization(),
        applied.replayed,
        &OrderId::named(&order.id),
        created,
    )
}

/// One page of the caller's orders, newest first.
pub(crate) fn list(
    lists: Lists<'_>,
    principal: &Principal,
    query: ListQuery,
    filter: MovementFilter,
) -> ApiResult<ListPage<Order>> {
    movements::page(lists, principal, query, filter)
}

/// Funds of `amount` (in the order's `from.currency`) arrive for `order`
/// with `confirmations` (default: as many as it needs), acting for
/// `principal`: the payout on actuals is built now, at the current rate
/// and fee; if it cannot be, the order fails and the funds stay.
pub(crate) async fn receive_funds(
    deps: &Deps<'_>,
    principal: &Principal,
    order: &OrderRecord,
    amount: &AmountInput,
    confirmations: Option<u32>,
) -> ApiResult<()> {
    let currency = Currency::find(&order.from_currency).map_err(|e| ApiError::internal_from(e))?;
    let amount = currency.parse(amount.as_str(), false).map_err(|e| money_error("amount", e))?;
    let confirmations = confirmations.unwrap_or(order.required_confirmations);
    let funds = instructions::order_funds(deps, principal, order, amount, confirmations)?;
    deps.ledger.execute(Command::OrderFunds(Box::new(funds))).await?;
    Ok(())
}

/// The operator records the funds that arrived for the order `id`,
/// whoever owns it (the manual rail on live): its payout is made as its
/// organization's owner would make it. Returns the order after the funds,
/// with its owner.
pub(crate) async fn record_funds(
    deps: &Deps<'_>,
    identity: &Identity,
    id: &OrderId,
    request: OrderFunds,
) -> ApiResult<Owned<Order>> {
    let order = deps
        .ledger
        .read()?
        .order(id)?
        .ok_or_else(|| ApiError::not_found(format!("order '{id}' not found")))?;
    let owner =
        identity.members_of(&order.organization).into_iter().find(|m| m.role == Role::Owner).ok_or_else(
            || ApiError::internal_from(format!("organization '{}' has no owner", order.organization)),
        )?;
    let principal = Principal::Session(owner);
    receive_funds(deps, &principal, &order, &request.amount, request.confirmations).await?;
    owned_view(deps.ledger, id)
}
