//! Orders: collect on one rail, pay out on another. The order waits for
//! funds (and on-chain confirmations for crypto), credits what actually
//! arrived to the balance, then pays out on actuals through a payout. If the
//! payout fails the funds stay on the balance; if nothing arrives before the
//! deadline the order expires (an inflow seen before it, still confirming,
//! keeps the order waiting past it).

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::events::EventKind;
use crate::ledger::{Books, TransferSpec};
use crate::movements::{NewPayout, create_payout, schedule};
use crate::outcome::{Applied, Outcome};
use crate::records::*;
use crate::resource_id::{OrderId, PayoutId};
use crate::timeline::{Fact, OrderFailure};
// Stored with the other records; named here too, where callers look.
pub use crate::records::{OrderRecord, OrderStatus};
use crate::storage::keys;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewOrder {
    pub organization: String,
    pub from_method: String,
    pub from_currency: String,
    pub from_amount: i128,
    pub from_chain: Option<String>,
    pub to: Destination,
    pub to_currency: String,
    pub deposit_instructions: String,
    pub required_confirmations: u32,
    pub external_reference: String,
    pub metadata: String,
    pub expires_at: TimestampMs,
    pub request_fingerprint: [u8; 32],
}

/// What arrived for an order: the amount, whether it has enough
/// confirmations, and the payout to make on actuals (built by the API).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderFunds {
    pub order_id: String,
    pub amount: i128,
    pub confirmations: u32,
    pub payout: Option<NewPayout>,
    /// Why no payout could be built (e.g. the actual amount is below the method's minimum).
    pub payout_refusal: Option<String>,
}

fn entry(at: TimestampMs, fact: Fact) -> TimelineEntry {
    TimelineEntry::new(at, fact)
}

fn key(id: &str) -> Vec<u8> {
    keys::order(id)
}

pub(crate) fn load(books: &Books, id: &str) -> Result<OrderRecord, EngineError> {
    books.store.get(&key(id))?.ok_or_else(|| EngineError::NotFound { resource: "order", id: id.to_string() })
}

fn save_and_emit(books: &mut Books, order: &OrderRecord, kinds: &[EventKind]) -> Result<(), EngineError> {
    books.store.put(key(&order.id), order);
    let payout = match &order.payout_id {
        Some(id) => Some(crate::movements::load_payout(books, id)?),
        None => None,
    };
    for kind in kinds {
        let payload = match &payout {
            Some(p) => EventPayload::OrderWithPayout(order.clone(), p.clone()),
            None => EventPayload::Order(order.clone()),
        };
        books.emit(&order.organization, *kind, payload)?;
    }
    Ok(())
}

pub(crate) fn create(books: &mut Books, new: &NewOrder) -> Result<Applied, EngineError> {
    let now = books.now;
    let id = books.new_id("ord");
    let order = OrderRecord {
        id: id.clone(),
        organization: new.organization.clone(),
        status: OrderStatus::AwaitingFunds,
        from_method: new.from_method.clone(),
        from_currency: new.from_currency.clone(),
        from_amount: new.from_amount,
        from_chain: new.from_chain.clone(),
        to: new.to.clone(),
        to_currency: new.to_currency.clone(),
        deposit_instructions: new.deposit_instructions.clone(),
        required_confirmations: new.required_confirmations,
        received_amount: 0,
        payout_id: None,
        external_reference: new.external_reference.clone(),
        metadata: new.metadata.clone(),
        status_message: "Waiting for funds".into(),
        timeline: vec![
            entry(
                now,
                Fact::OrderCreated {
                    amount: new.from_amount,
                    currency: new.from_currency.clone(),
                    method: new.from_method.clone(),
                },
            ),
            entry(now, Fact::DepositInstructionsIssued),
        ],
        expires_at: new.expires_at,
        created_at: now,
        updated_at: now,
    };
    save_and_emit(books, &order, &[EventKind::OrderAwaitingFunds])?;
    books.index(&new.organization, "orders", &id)?;
    schedule(books, new.expires_at, JobKind::ExpireOrder { order_id: OrderId::named(id) });
    Ok(Applied { outcome: Outcome::Order(Box::new(order)), replayed: false })
}

/// Funds arrived (or were seen on-chain without enough confirmations).
pub(crate) fn funds(books: &mut Books, funds: &OrderFunds) -> Result<Applied, EngineError> {
    let mut order = load(books, &funds.order_id)?;
    if !order.status.is_waiting() {
        return Err(EngineError::InvalidState(format!(
            "order {} is {} and takes no more funds",
            order.id,
            order.status.name()
        )));
    }
    let now = books.now;
    order.updated_at = now;
    if funds.confirmations < order.required_confirmations {
        let first_sighting = order.status == OrderStatus::AwaitingFunds;
        order.status = OrderStatus::AwaitingConfirmations;
        order.status_message =
            format!("{} of {} confirmations", funds.confirmations, order.required_confirmations);
        order.timeline.push(entry(
            now,
            Fact::FundsSeen {
                amount: funds.amount,
                currency: order.from_currency.clone(),
                confirmations: funds.confirmations,
                required: order.required_confirmations,
            },
        ));
        let kinds: &[EventKind] = if first_sighting { &[EventKind::OrderAwaitingConfirmations] } else { &[] };
        save_and_emit(books, &order, kinds)?;
        return Ok(Applied { outcome: Outcome::Order(Box::new(order)), replayed: false });
    }
    let transfer = books.transfer(&TransferSpec::Posted {
        debit: AccountRef::System(SystemAccount::World),
        credit: AccountRef::Organization(order.organization.clone()),
        currency: order.from_currency.clone(),
        amount: funds.amount,
        memo: crate::records::MemoShape::OrderFunds.memo(&order.id),
    })?;
    order.received_amount = funds.amount;
    order.status = OrderStatus::FundsReceived;
    order.timeline.push(entry(
        now,
        Fact::FundsReceived {
            amount: funds.amount,
            currency: order.from_currency.clone(),
            account: transfer.credit_account.clone(),
        },
    ));
    let mut kinds = vec![EventKind::OrderFundsReceived];
    let mismatch = match funds.amount.cmp(&order.from_amount) {
        std::cmp::Ordering::Greater => Some((EventKind::OrderOverpaid, true)),
        std::cmp::Ordering::Less => Some((EventKind::OrderUnderpaid, false)),
        std::cmp::Ordering::Equal => None,
    };
    if let Some((kind, over)) = mismatch {
        kinds.push(kind);
        let (expected, currency) = (order.from_amount, order.from_currency.clone());
        order.timeline.push(entry(now, Fact::AmountMismatch { over, expected, currency }));
    }
    let account = books.account(&transfer.credit_account)?;
    books.emit(
        &order.organization,
        EventKind::AccountCredited,
        EventPayload::AccountCredited { account, amount: funds.amount, source: order.id.clone() },
    )?;
    // The payout starts in this same command, so no read ever sees the
    // order at `funds_received`: its events carry the state it is left in
    // (`processing_payout` or `failed`), the state it really held.
    start_payout(books, order, funds, &kinds)
}

/// Starts the order's payout leg and emits `earlier` (the events of the
/// step that got here) then its own, each with the order as it is left.
fn start_payout(
    books: &mut Books,
    mut order: OrderRecord,
    funds: &OrderFunds,
    earlier: &[EventKind],
) -> Result<Applied, EngineError> {
    let with = |last: EventKind| -> Vec<EventKind> { earlier.iter().copied().chain([last]).collect() };
    let now = books.now;
    let refused = |order: &mut OrderRecord, reason: String| {
        order.status = OrderStatus::Failed;
        order.status_message = reason.clone();
        order.timeline.push(entry(now, Fact::PayoutNotPossible { reason }));
        order.timeline.push(entry(now, Fact::OrderFailed { cause: OrderFailure::NoPayout }));
    };
    match &funds.payout {
        None => refused(
            &mut order,
            funds.payout_refusal.clone().unwrap_or_else(|| "no payout could be made".into()),
        ),
        Some(new) => {
            let mut new = new.clone();
            new.order_id = Some(order.id.clone());
            match create_payout(books, &new) {
                Ok(applied) => {
                    let Outcome::Payout(payout) = applied.outcome else {
                        unreachable!("create_payout returns a payout")
                    };
                    let open = payout.status == crate::movements::MovementStatus::Pending;
                    books.touched(crate::committed::MovementKind::Payout, &payout.id, &payout.rail, open);
                    order.payout_id = Some(payout.id.clone());
                    order.status = OrderStatus::ProcessingPayout;
                    order.status_message = "Paying out".into();
                    if payout.from_currency != payout.to_currency {
                        order.timeline.push(entry(
                            now,
                            Fact::FundsConverted {
                                from_amount: payout.from_amount,
                                from_currency: payout.from_currency.clone(),
                                to_amount: payout.to_amount,
                                to_currency: payout.to_currency.clone(),
                                rate: payout.rate.clone(),
                            },
                        ));
                    }
                    order.timeline.push(entry(
                        now,
                        Fact::PayoutStarted {
                            payout_id: payout.id.clone(),
                            amount: payout.to_amount,
                            currency: payout.to_currency.clone(),
                        },
                    ));
                    save_and_emit(books, &order, &with(EventKind::OrderProcessingPayout))?;
                    return Ok(Applied { outcome: Outcome::Order(Box::new(order)), replayed: false });
                }
                Err(EngineError::InsufficientFunds { .. }) => {
                    refused(&mut order, "the funds received do not cover the payout and its fee".into())
                }
                Err(e) => return Err(e),
            }
        }
    }
    save_and_emit(books, &order, &with(EventKind::OrderFailed))?;
    Ok(Applied { outcome: Outcome::Order(Box::new(order)), replayed: false })
}

/// A rail's report about a payout, which also moves on the order the
/// payout is a leg of once it settles.
pub(crate) fn advance_payout(
    books: &mut Books,
    payout_id: &PayoutId,
    step: &Step,
) -> Result<Applied, EngineError> {
    let applied = crate::movements::advance_payout(books, payout_id, step)?;
    if let (false, Outcome::Payout(payout), Some((success, message))) =
        (applied.replayed, &applied.outcome, step.outcome())
        && let Some(order_id) = &payout.order_id
    {
        payout_settled(books, order_id, success, message)?;
    }
    if let (false, Outcome::Payout(payout), Step::Reverse { message }) =
        (applied.replayed, &applied.outcome, step)
        && let Some(order_id) = &payout.order_id
    {
        payout_reversed(books, order_id, message)?;
    }
    Ok(applied)
}

/// The order's payout, delivered, was taken back by the rail. The order
/// stays `completed` (its funds arrived and its payout completed; the
/// order's states say nothing of later reversals), and its GET shows the
/// leg `reversed` with the payout's timeline; its message says where the
/// money is. No order event: `payout.reversed` carries the payout, which
/// names the order.
fn payout_reversed(books: &mut Books, order_id: &str, message: &str) -> Result<(), EngineError> {
    let mut order = load(books, order_id)?;
    if order.status != OrderStatus::Completed {
        return Ok(());
    }
    order.updated_at = books.now;
    order.status_message =
        format!("The payout was reversed and its amount is back on the balance: {message}");
    books.store.put(key(&order.id), &order);
    Ok(())
}

/// The order's payout settled.
fn payout_settled(
    books: &mut Books,
    order_id: &str,
    success: bool,
    message: &str,
) -> Result<(), EngineError> {
    let mut order = load(books, order_id)?;
    if order.status != OrderStatus::ProcessingPayout {
        return Ok(());
    }
    let now = books.now;
    order.updated_at = now;
    order.status_message = message.to_string();
    let kind = if success {
        order.status = OrderStatus::Completed;
        order.timeline.push(entry(now, Fact::OrderCompleted));
        EventKind::OrderCompleted
    } else {
        order.status = OrderStatus::Failed;
        order.timeline.push(entry(now, Fact::OrderFailed { cause: OrderFailure::PayoutFailed }));
        EventKind::OrderFailed
    };
    save_and_emit(books, &order, &[kind])
}

/// The deadline passed: an order still waiting for funds expires. One
/// whose inflow was seen before it (crypto awaiting confirmations) does not:
/// the payer has paid, and the order completes when the inflow settles
/// (the spec's `order.expired` is "no inflow before the deadline").
pub(crate) fn expire(books: &mut Books, order_id: &OrderId) -> Result<Applied, EngineError> {
    let mut order = load(books, order_id.as_str())?;
    if order.status != OrderStatus::AwaitingFunds {
        return Ok(Applied { outcome: Outcome::Order(Box::new(order)), replayed: true });
    }
    let now = books.now;
    order.status = OrderStatus::Expired;
    order.updated_at = now;
    order.status_message = "No funds arrived before the deadline".into();
    order.timeline.push(entry(now, Fact::OrderExpired));
    save_and_emit(books, &order, &[EventKind::OrderExpired])?;
    Ok(Applied { outcome: Outcome::Order(Box::new(order)), replayed: false })
}
