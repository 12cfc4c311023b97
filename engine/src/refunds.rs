//! Refunds: money given back to the payer of a completed collection. A
//! refund holds its amount on the organization's balance of the payment's
//! currency when it is made, exactly as a payout holds (a pending transfer
//! to rail clearing), posts it and sends it out to the world when it
//! completes, and releases it when it fails. The payment's fee (none is
//! charged on collections today) is not returned.
//!
//! What a payment may still give back is its [`RefundTally`], changed in
//! the same command as each refund: the check and the hold happen in one
//! writer command, so two refunds racing for the same money cannot both
//! pass.

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::events::EventKind;
use crate::ledger::{Books, TransferSpec};
use crate::movements::{ScheduledStep, actor_of, close, due_after, entry, noted, open, schedule};
use crate::outcome::{Applied, Outcome};
use crate::records::*;
use crate::storage::{MovementKind, keys};
use crate::timeline::{Fact, Handover, Movement};

/// A refund to make, as the API layer checked it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewRefund {
    pub organization: String,
    /// The completed collection whose payer gets the money back.
    pub collection_id: String,
    /// The checkout session the payment came through, if any.
    pub session_id: Option<String>,
    /// In minor units of the payment's currency; `None`: all that is
    /// still refundable.
    pub amount: Option<i128>,
    pub reason: Option<String>,
    pub metadata: String,
    pub external_reference: String,
    pub rail: String,
    /// The note the rail adds when the refund is handed to it.
    pub rail_note: String,
    /// The simulated rail's steps, for an amount the engine chooses too:
    /// the caller gives them per outcome through `schedule_for`.
    pub schedule: RefundSchedule,
    pub request_fingerprint: [u8; 32],
}

/// The steps a rail will report for a refund, chosen by its amount's last
/// two digits of minor units at the currency's cents (the sandbox's
/// trigger), once the engine knows the amount (a refund of "what is left"
/// learns it only in the writer).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefundSchedule {
    /// Minor units per cent of the currency (`10^(scale-2)`, or 1 for a
    /// currency with fewer than two digits): what the amount is divided by
    /// before its last two digits are read.
    pub minor_per_cent: i128,
    /// (two digits, steps): the steps for an amount whose cents end so.
    pub by_digits: Vec<(u8, Vec<ScheduledStep>)>,
    /// The steps for any other amount (none on a rail that is not simulated).
    pub otherwise: Vec<ScheduledStep>,
}

impl RefundSchedule {
    /// The steps for a refund of `amount_minor`.
    pub fn steps(&self, amount_minor: i128) -> &[ScheduledStep] {
        let cents = amount_minor.checked_div(self.minor_per_cent.max(1)).unwrap_or(0);
        let digits = u8::try_from(cents.rem_euclid(100)).unwrap_or(0);
        self.by_digits
            .iter()
            .find(|(d, _)| *d == digits)
            .map_or(self.otherwise.as_slice(), |(_, steps)| steps.as_slice())
    }
}

pub(crate) fn load_refund(books: &Books, id: &str) -> Result<RefundRecord, EngineError> {
    books
        .store
        .get(&keys::refund(id))?
        .ok_or_else(|| EngineError::NotFound { resource: "refund", id: id.to_string() })
}

/// The completed collection `new` refunds, the organization's own, and
/// its refund tally (an empty one before its first refund). A collection
/// that is not completed has nothing refundable.
fn payment(books: &Books, new: &NewRefund) -> Result<(CollectionRecord, RefundTally), EngineError> {
    let collection: CollectionRecord = books
        .store
        .get::<CollectionRecord>(&keys::collection(&new.collection_id))?
        .filter(|c| c.organization == new.organization)
        .ok_or_else(|| EngineError::NotFound { resource: "collection", id: new.collection_id.clone() })?;
    if collection.status != MovementStatus::Completed {
        return Err(EngineError::NotRefundable {
            payment_completed: false,
            refundable: 0,
            currency: collection.currency.clone(),
        });
    }
    let tally = match books.store.get::<RefundTally>(&keys::refund_tally(&collection.id))? {
        Some(tally) => tally,
        None => RefundTally::empty(&collection),
    };
    assert_eq!(
        (tally.organization.as_str(), tally.currency.as_str(), tally.collected_minor),
        (collection.organization.as_str(), collection.currency.as_str(), collection.amount),
        "the refund tally of payment {} is for another payment",
        collection.id
    );
    Ok((collection, tally))
}

pub(crate) fn create_refund(books: &mut Books, new: &NewRefund) -> Result<Applied, EngineError> {
    let (collection, tally) = payment(books, new)?;
    let refundable = tally.refundable_minor()?;
    let amount = new.amount.unwrap_or(refundable);
    if amount <= 0 || amount > refundable {
        return Err(EngineError::NotRefundable {
            payment_completed: true,
            refundable,
            currency: collection.currency.clone(),
        });
    }
    let id = books.new_id("rf");
    let organization = AccountRef::Organization(new.organization.clone());
    // Checks the balance as a payout's hold does: `InsufficientFunds`
    // when the organization's available balance does not cover it.
    let hold = books.transfer(&TransferSpec::Pending {
        debit: organization,
        credit: AccountRef::System(SystemAccount::RailClearing),
        currency: collection.currency.clone(),
        amount,
        memo: crate::records::MemoShape::Refund.memo(&id),
    })?;
    books.store.put(keys::refund_tally(&collection.id), &tally.refunded(amount)?);
    let now = books.now;
    let currency = collection.currency.clone();
    let handover =
        if new.rail == crate::movements::RAIL_MANUAL { Handover::Operator } else { Handover::Rail };
    let refund = RefundRecord {
        id: id.clone(),
        organization: new.organization.clone(),
        status: MovementStatus::Pending,
        collection_id: collection.id.clone(),
        session_id: new.session_id.clone(),
        account: hold.debit_account.clone(),
        currency: currency.clone(),
        amount,
        reason: new.reason.clone(),
        external_reference: new.external_reference.clone(),
        metadata: new.metadata.clone(),
        status_message: "Refund is being processed".into(),
        hold_id: hold.id,
        timeline: vec![
            entry(
                now,
                Fact::RefundCreated {
                    amount,
                    currency: currency.clone(),
                    collection_id: collection.id.clone(),
                },
            ),
            entry(now, Fact::FundsHeld { amount, currency, account: hold.debit_account.clone() }),
            entry(now, Fact::HandedOver { handover, note: new.rail_note.clone() }),
        ],
        rail: new.rail.clone(),
        created_at: now,
        updated_at: now,
        completed_at: None,
    };
    books.store.put(keys::refund(&id), &refund);
    open(books, &refund.rail, MovementKind::Refund, &id, now);
    books.index(&new.organization, "refunds", &id)?;
    books.emit(&new.organization, EventKind::RefundPending, EventPayload::Refund(refund.clone()))?;
    for step in new.schedule.steps(amount) {
        let kind = JobKind::AdvanceRefund {
            refund_id: crate::resource_id::RefundId::from(id.clone()),
            step: step.step.clone(),
        };
        schedule(books, due_after(now, step.after_ms)?, kind);
    }
    Ok(Applied { outcome: Outcome::Refund(Box::new(refund)), replayed: false })
}

/// Applies a rail's (or the operator's) report about a refund. A step for
/// a refund that is already final is ignored (replayed), so a hold settles
/// once however often it is reported.
pub(crate) fn advance_refund(books: &mut Books, id: &str, step: &Step) -> Result<Applied, EngineError> {
    let mut refund = load_refund(books, id)?;
    if refund.status != MovementStatus::Pending {
        return Ok(Applied { outcome: Outcome::Refund(Box::new(refund)), replayed: true });
    }
    let now = books.now;
    refund.updated_at = now;
    let Some((success, message)) = step.outcome() else {
        refund.timeline.extend(noted(step).map(|f| entry(now, f)));
        books.store.put(keys::refund(id), &refund);
        return Ok(Applied { outcome: Outcome::Refund(Box::new(refund)), replayed: false });
    };
    let hold = refund.hold_id;
    let (amount, currency) = (refund.amount, refund.currency.clone());
    refund.status_message = message.to_string();
    refund.timeline.push(entry(
        now,
        Fact::Settled {
            movement: Movement::Refund,
            actor: actor_of(step),
            success,
            message: message.to_string(),
        },
    ));
    if success {
        books.transfer(&TransferSpec::PostPending { pending_id: hold })?;
        books.transfer(&TransferSpec::Posted {
            debit: AccountRef::System(SystemAccount::RailClearing),
            credit: AccountRef::System(SystemAccount::World),
            currency: currency.clone(),
            amount,
            memo: crate::records::MemoShape::RefundDelivered.memo(id),
        })?;
        refund.status = MovementStatus::Completed;
        refund.completed_at = Some(now);
        refund.timeline.push(entry(now, Fact::RefundDebited { amount, currency }));
    } else {
        books.transfer(&TransferSpec::VoidPending { pending_id: hold })?;
        let key = keys::refund_tally(&refund.collection_id);
        let tally = books
            .store
            .get::<RefundTally>(&key)?
            .unwrap_or_else(|| panic!("refund {id} of payment {} has no refund tally", refund.collection_id));
        books.store.put(key, &tally.released(amount)?);
        refund.status = MovementStatus::Failed;
        refund.timeline.push(entry(now, Fact::BalanceRefunded { amount, currency }));
    }
    refund.timeline.push(entry(now, Fact::StatusChanged { movement: Movement::Refund, completed: success }));
    close(books, &refund.rail, MovementKind::Refund, id);
    let kind = if success { EventKind::RefundCompleted } else { EventKind::RefundFailed };
    books.emit(&refund.organization.clone(), kind, EventPayload::Refund(refund.clone()))?;
    books.store.put(keys::refund(id), &refund);
    Ok(Applied { outcome: Outcome::Refund(Box::new(refund)), replayed: false })
}
