//! Money that crosses the node's edge: payouts (out through a rail) and
//! collections (in through a rail), their state machines, their timelines,
//! and the scheduled steps a rail reports later.
//!
//! A payout holds `amount + fee` on the organization's balance (two pending
//! transfers, to rail clearing and to fee revenue). Completion posts both and
//! moves the amount from rail clearing to the outside world; failure voids
//! both, which returns the money. A collection is a pending credit from the
//! outside world (it shows in `pendingBalance`) that is posted on
//! completion or voided on failure.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Field, Problem, SpendCap};
use crate::events::{EventKind, encode_payout_event};
use crate::ledger::{Books, TransferSpec};
use crate::money::MoneyError;
use crate::outcome::{Applied, Outcome};
use crate::records::*;
use crate::resource_id::{CollectionId, PayoutId};
// Stored with the other records; named here too, where callers look.
pub use crate::records::{CollectionRecord, Destination, MovementStatus, PayoutRecord, Step, TimelineEntry};
use crate::storage::{MovementKind, keys};
use crate::stored_payout;
use crate::timeline::{Actor, Fact, Handover, Movement};

/// The rail of a live movement no provider connector takes: the operator
/// pays it (or sees the payment arrive) and settles it by hand.
pub const RAIL_MANUAL: &str = crate::rail::Rail::ManualSettlement.name();

/// Who took a movement's step, for its timeline: a payout the operator
/// settled by hand must not read as a provider's report.
pub(crate) fn actor_of(step: &Step) -> Actor {
    match step {
        Step::Operator { .. } => Actor::Operator,
        Step::Note { .. } | Step::Sent { .. } | Step::Settle { .. } | Step::Reverse { .. } => Actor::Rail,
    }
}

/// The timeline line a note or a hand-over to a provider adds.
pub(crate) fn noted(step: &Step) -> Option<Fact> {
    match step {
        Step::Note { kind, title, detail } => {
            Some(Fact::Note { kind: kind.clone(), title: title.clone(), detail: detail.clone() })
        }
        Step::Sent { provider, detail } => {
            Some(Fact::Sent { provider: provider.clone(), detail: detail.clone() })
        }
        Step::Settle { .. } | Step::Operator { .. } | Step::Reverse { .. } => None,
    }
}

/// A spend cap check for a live key, in US cents; the writer checks and
/// counts it in the same transaction as the payout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapCheck {
    pub key_id: String,
    pub amount_usd_cents: i128,
    pub per_transaction_usd_cents: Option<i128>,
    pub daily_usd_cents: Option<i128>,
    pub monthly_usd_cents: Option<i128>,
    /// `2026-11-22` and `2026-11`: the windows this payout counts in.
    pub day: String,
    pub month: String,
}

/// A step the rail will report after a delay (the sandbox simulator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledStep {
    pub after_ms: i64,
    pub step: Step,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewPayout {
    pub organization: String,
    pub from_currency: String,
    pub from_amount: i128,
    pub to: Destination,
    pub to_currency: String,
    pub to_amount: i128,
    pub fee_amount: i128,
    pub rate: String,
    pub narration: String,
    pub metadata: String,
    pub external_reference: String,
    pub api_key_id: Option<String>,
    pub cap: Option<CapCheck>,
    pub rail: String,
    /// The note the rail adds when the payout is handed to it.
    pub rail_note: String,
    pub schedule: Vec<ScheduledStep>,
    /// SHA-256 of the client's request, for idempotency.
    pub request_fingerprint: [u8; 32],
    /// Set when an order makes this payout.
    pub order_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewCollection {
    pub organization: String,
    pub currency: String,
    pub amount: i128,
    pub code: String,
    pub account_number: String,
    pub metadata: String,
    pub external_reference: String,
    pub rail: String,
    pub rail_note: String,
    /// Who pays, as the timeline names them (`from …`): the payer's phone
    /// or account; `None` when the request does not say (a checkout's bank
    /// transfer or crypto, whose `account_number` is where the payer sends
    /// to, never from).
    pub payer: Option<String>,
    pub schedule: Vec<ScheduledStep>,
    pub request_fingerprint: [u8; 32],
    /// The id to give the collection; a new one when `None`.
    pub id: Option<String>,
    /// Documents stored in the same transaction (a checkout session that
    /// names this collection), so neither exists without the other.
    pub attach: Vec<Document>,
    /// The group whose tally counts this collection once it completes.
    pub group: Option<CollectionGroup>,
}

pub(crate) fn entry(at: TimestampMs, fact: Fact) -> TimelineEntry {
    TimelineEntry::new(at, fact)
}

/// Enters a new (pending) movement in the index of open movements, in the
/// command that creates it: readers of what is open at a rail read the
/// index, never every movement.
pub(crate) fn open(books: &mut Books, rail: &str, kind: MovementKind, id: &str, created_at: TimestampMs) {
    books.store.put(keys::open_movement(rail, kind, id), &created_at);
}

/// Takes a movement out of the index of open movements, in the command
/// that settles it (moves it out of pending).
pub(crate) fn close(books: &mut Books, rail: &str, kind: MovementKind, id: &str) {
    books.store.delete(keys::open_movement(rail, kind, id));
}

/// Stores a job to run at `due_at`, in the same transaction as the change
/// that scheduled it.
pub(crate) fn schedule(books: &mut Books, due_at: TimestampMs, kind: JobKind) {
    if let JobKind::AdvancePayout { step, .. }
    | JobKind::AdvanceCollection { step, .. }
    | JobKind::AdvanceRefund { step, .. } = &kind
    {
        assert!(!matches!(step, Step::Operator { .. }), "only the operator settles as the operator");
        assert!(!matches!(step, Step::Sent { .. }), "a hand-over to a provider is never scheduled");
    }
    if let JobKind::AdvanceCollection { step, .. } = &kind {
        assert!(!matches!(step, Step::Reverse { .. }), "only a payout is reversed");
    }
    let job = Job { id: books.new_id("job"), due_at, kind };
    books.store.put(keys::job(due_at, &job.id), &job);
    books.effects.job_scheduled(due_at);
}

/// When a step `after_ms` from now is due.
pub(crate) fn due_after(now: TimestampMs, after_ms: i64) -> Result<TimestampMs, EngineError> {
    now.checked_add(after_ms).ok_or(EngineError::Overflow("job due time"))
}

/// `a + b` of a request's amounts: a sum beyond an `i128` is an amount too
/// large, the caller's to fix.
fn request_sum(a: i128, b: i128) -> Result<i128, EngineError> {
    a.checked_add(b).ok_or(EngineError::Money(MoneyError::Overflow))
}

fn check_cap(books: &mut Books, cap: &CapCheck) -> Result<(), EngineError> {
    let refuse = |window: SpendCap, limit: i128| EngineError::SpendCapExceeded {
        cap: window,
        limit_usd_cents: limit,
        attempted_usd_cents: cap.amount_usd_cents,
    };
    if let Some(limit) = cap.per_transaction_usd_cents
        && cap.amount_usd_cents > limit
    {
        return Err(refuse(SpendCap::PerTransaction, limit));
    }
    let windows = [
        (&cap.day, cap.daily_usd_cents, SpendCap::Daily),
        (&cap.month, cap.monthly_usd_cents, SpendCap::Monthly),
    ];
    for (window, limit, name) in windows {
        let key = keys::cap_usage(&format!("{}/{}", cap.key_id, window));
        let used = books.store.get::<i128>(&key)?.unwrap_or(0);
        let used = request_sum(used, cap.amount_usd_cents)?;
        if let Some(limit) = limit
            && used > limit
        {
            return Err(refuse(name, limit));
        }
        books.store.put(key, &used);
    }
    Ok(())
}

#[expect(clippy::too_many_lines)]
pub(crate) fn create_payout(books: &mut Books, new: &NewPayout) -> Result<Applied, EngineError> {
    let organization = AccountRef::Organization(new.organization.clone());
    let account = books.resolve(&organization, &new.from_currency)?;
    let required = request_sum(new.from_amount, new.fee_amount)?;
    let available = account.balances()?.available;
    if available < required {
        return Err(EngineError::InsufficientFunds {
            available,
            required,
            currency: new.from_currency.clone(),
        });
    }
    if let Some(cap) = &new.cap {
        check_cap(books, cap)?;
    }
    let id = books.new_id(&format!("pay_{}", new.from_currency.to_ascii_lowercase()));
    let memo = crate::records::MemoShape::Payout.memo(&id);
    let mut hold_ids = vec![
        books
            .transfer(&TransferSpec::Pending {
                debit: organization.clone(),
                credit: AccountRef::System(SystemAccount::RailClearing),
                currency: new.from_currency.clone(),
                amount: new.from_amount,
                memo: memo.clone(),
            })?
            .id,
    ];
    if new.fee_amount > 0 {
        let fee = books.transfer(&TransferSpec::Pending {
            debit: organization,
            credit: AccountRef::System(SystemAccount::FeeRevenue),
            currency: new.from_currency.clone(),
            amount: new.fee_amount,
            memo: crate::records::MemoShape::PayoutFee.memo(&id),
        })?;
        hold_ids.push(fee.id);
    }
    let now = books.now;
    let currency = &new.from_currency;
    let handover = if new.rail == RAIL_MANUAL { Handover::Operator } else { Handover::Rail };
    let timeline = vec![
        entry(
            now,
            Fact::PayoutCreated {
                amount: new.from_amount,
                currency: currency.clone(),
                destination: new.to.code.clone(),
            },
        ),
        entry(
            now,
            Fact::FundsHeld {
                amount: new.from_amount,
                currency: currency.clone(),
                account: account.id.clone(),
            },
        ),
        entry(now, Fact::FeeHeld { amount: new.fee_amount, currency: currency.clone() }),
        entry(now, Fact::HandedOver { handover, note: new.rail_note.clone() }),
    ];
    let payout = PayoutRecord {
        id: id.clone(),
        organization: new.organization.clone(),
        status: MovementStatus::Pending,
        from_account: account.id,
        from_currency: new.from_currency.clone(),
        from_amount: new.from_amount,
        to: new.to.clone(),
        to_currency: new.to_currency.clone(),
        to_amount: new.to_amount,
        fee_amount: new.fee_amount,
        rate: new.rate.clone(),
        narration: new.narration.clone(),
        external_reference: new.external_reference.clone(),
        metadata: new.metadata.clone(),
        status_message: "Payout is being processed".into(),
        hold_ids,
        timeline,
        rail: new.rail.clone(),
        api_key_id: new.api_key_id.clone(),
        order_id: new.order_id.clone(),
        created_at: now,
        updated_at: now,
        completed_at: None,
    };
    store_payout(books, &payout);
    open(books, &payout.rail, MovementKind::Payout, &id, now);
    books.index(&new.organization, "payouts", &id)?;
    for step in &new.schedule {
        let kind = JobKind::AdvancePayout { payout_id: PayoutId::named(id.clone()), step: step.step.clone() };
        schedule(books, due_after(now, step.after_ms)?, kind);
    }
    Ok(Applied { outcome: Outcome::Payout(Box::new(payout)), replayed: false })
}

pub(crate) fn load_payout(books: &Books, id: &str) -> Result<PayoutRecord, EngineError> {
    find_payout(books, id)?.ok_or_else(|| EngineError::NotFound { resource: "payout", id: id.to_string() })
}

/// Payout `id` as stored (`stored_payout`), if there is one.
pub(crate) fn find_payout(books: &Books, id: &str) -> Result<Option<PayoutRecord>, EngineError> {
    let key = keys::payout(id);
    books.store.get_with(&key, |bytes| stored_payout::decode(&key, bytes))
}

/// Stores `payout` under its id, in the payout space's encoding.
fn store_payout(books: &mut Books, payout: &PayoutRecord) {
    books.store.put_raw(keys::payout(&payout.id), stored_payout::encode(payout));
}

/// Applies a rail's report. A step for a payout that is already final is
/// ignored (the rail reported twice), so scheduled jobs never fail. The
/// order a payout is a leg of moves on in `orders::advance_payout`.
pub(crate) fn advance_payout(books: &mut Books, id: &PayoutId, step: &Step) -> Result<Applied, EngineError> {
    let mut payout = load_payout(books, id.as_str())?;
    if let Step::Reverse { message } = step {
        return reverse_payout(books, payout, message);
    }
    if payout.status != MovementStatus::Pending {
        return Ok(Applied { outcome: Outcome::Payout(Box::new(payout)), replayed: true });
    }
    let now = books.now;
    payout.updated_at = now;
    let actor = actor_of(step);
    match step {
        Step::Note { .. } | Step::Sent { .. } => payout.timeline.extend(noted(step).map(|f| entry(now, f))),
        Step::Reverse { .. } => unreachable!("a reversal is applied by reverse_payout"),
        Step::Settle { success, message } | Step::Operator { success, message } => {
            for hold in payout.hold_ids.clone() {
                let spec = if *success {
                    TransferSpec::PostPending { pending_id: hold }
                } else {
                    TransferSpec::VoidPending { pending_id: hold }
                };
                books.transfer(&spec)?;
            }
            let total = payout
                .from_amount
                .checked_add(payout.fee_amount)
                .ok_or(EngineError::Overflow("payout total"))?;
            let currency = payout.from_currency.clone();
            let settled = Fact::Settled {
                movement: Movement::Payout,
                actor,
                success: *success,
                message: message.clone(),
            };
            if *success {
                books.transfer(&TransferSpec::Posted {
                    debit: AccountRef::System(SystemAccount::RailClearing),
                    credit: AccountRef::System(SystemAccount::World),
                    currency: payout.from_currency.clone(),
                    amount: payout.from_amount,
                    memo: crate::records::MemoShape::PayoutDelivered.memo(id.as_str()),
                })?;
                payout.status = MovementStatus::Completed;
                payout.completed_at = Some(now);
                payout.status_message = message.clone();
                payout.timeline.push(entry(now, settled));
                payout.timeline.push(entry(now, Fact::FundsDebited { amount: payout.from_amount, currency }));
                payout
                    .timeline
                    .push(entry(now, Fact::StatusChanged { movement: Movement::Payout, completed: true }));
            } else {
                payout.status = MovementStatus::Failed;
                payout.status_message = message.clone();
                payout.timeline.push(entry(now, settled));
                payout.timeline.push(entry(now, Fact::BalanceRefunded { amount: total, currency }));
                payout
                    .timeline
                    .push(entry(now, Fact::StatusChanged { movement: Movement::Payout, completed: false }));
            }
            close(books, &payout.rail, MovementKind::Payout, id.as_str());
            store_payout(books, &payout);
            let kind = if *success { EventKind::PayoutCompleted } else { EventKind::PayoutFailed };
            emit_payout(books, kind, &payout)?;
            return Ok(Applied { outcome: Outcome::Payout(Box::new(payout)), replayed: false });
        }
    }
    store_payout(books, &payout);
    Ok(Applied { outcome: Outcome::Payout(Box::new(payout)), replayed: false })
}

/// Records a payout's event, stored as a mark of the payout
/// (`events::encode_payout_event`) rather than a copy of it: the payout,
/// stored in `payout`'s state by the same command before this call, says
/// the rest.
fn emit_payout(books: &mut Books, kind: EventKind, payout: &PayoutRecord) -> Result<(), EngineError> {
    debug_assert_eq!(
        find_payout(books, &payout.id).ok().flatten().as_ref(),
        Some(payout),
        "payout {}'s event is recorded after the payout is stored",
        payout.id
    );
    let (seq, id) = books.new_event(&payout.organization, kind)?;
    let bytes = encode_payout_event(seq, &id, kind, payout, books.now);
    books.store.put_raw(keys::event(seq), bytes);
    Ok(())
}

/// The rail took a completed payout back: its amount comes back to the
/// balance it left, in one posted transfer from the outside world, and its
/// fee stays earned. A payout that is not completed has nothing to take
/// back: a second report of the same reversal (two notifications, or a
/// sandbox job after a live one) finds it `reversed` and changes nothing,
/// and one that is pending or failed ignores it, as a settled payout
/// ignores later steps, so a scheduled reversal never fails its job.
fn reverse_payout(
    books: &mut Books,
    mut payout: PayoutRecord,
    message: &str,
) -> Result<Applied, EngineError> {
    if payout.status != MovementStatus::Completed {
        return Ok(Applied { outcome: Outcome::Payout(Box::new(payout)), replayed: true });
    }
    mark_reversed(&mut payout, books.now, message);
    let credit = books.transfer(&TransferSpec::Posted {
        debit: AccountRef::System(SystemAccount::World),
        credit: AccountRef::Organization(payout.organization.clone()),
        currency: payout.from_currency.clone(),
        amount: payout.from_amount,
        memo: crate::records::MemoShape::PayoutReversed.memo(&payout.id),
    })?;
    assert_eq!(
        credit.credit_account, payout.from_account,
        "payout {}'s reversal credits the account it was paid from",
        payout.id
    );
    payout.timeline.push(entry(
        books.now,
        Fact::ReversalCredited {
            amount: payout.from_amount,
            fee: payout.fee_amount,
            currency: payout.from_currency.clone(),
            account: payout.from_account.clone(),
        },
    ));
    payout.timeline.push(entry(books.now, Fact::PayoutReversed));
    store_payout(books, &payout);
    emit_payout(books, EventKind::PayoutReversed, &payout)?;
    Ok(Applied { outcome: Outcome::Payout(Box::new(payout)), replayed: false })
}

/// Moves a payout from `completed` to `reversed`, where that is written:
/// only a completed payout is reversed, and only once (its timeline holds
/// no earlier reversal). `completed_at` stays: the payout did complete.
fn mark_reversed(payout: &mut PayoutRecord, now: TimestampMs, message: &str) {
    assert_eq!(
        payout.status,
        MovementStatus::Completed,
        "payout {} is reversed only once completed",
        payout.id
    );
    assert!(payout.completed_at.is_some(), "completed payout {} has its completion time", payout.id);
    assert!(
        !payout.timeline.iter().any(|e| matches!(e.fact, Fact::PayoutReversed)),
        "payout {} is reversed at most once",
        payout.id
    );
    payout.status = MovementStatus::Reversed;
    payout.status_message = message.to_string();
    payout.updated_at = now;
    payout.timeline.push(entry(now, Fact::Reversed { message: message.to_string() }));
}

/// The id a new collection gets, after checking what the caller chose: a
/// caller-chosen id must be new (a generated one is, without a read), and
/// a group's target positive.
fn new_collection_id(books: &Books, new: &NewCollection) -> Result<String, EngineError> {
    if let Some(group) = new.group.as_ref().filter(|g| g.target_minor.is_some_and(|target| target <= 0)) {
        return Err(EngineError::invalid(Field::Group, Problem::GroupTarget { group: group.id.clone() }));
    }
    match &new.id {
        None => Ok(books.new_id("col")),
        Some(id) if id.starts_with("col_") && books.store.get_raw(&keys::collection(id))?.is_none() => {
            Ok(id.clone())
        }
        Some(id) => Err(EngineError::invalid(Field::Id, Problem::NotNew { id: id.clone() })),
    }
}

pub(crate) fn create_collection(books: &mut Books, new: &NewCollection) -> Result<Applied, EngineError> {
    let id = new_collection_id(books, new)?;
    let hold = books.transfer(&TransferSpec::Pending {
        debit: AccountRef::System(SystemAccount::World),
        credit: AccountRef::Organization(new.organization.clone()),
        currency: new.currency.clone(),
        amount: new.amount,
        memo: crate::records::MemoShape::Collection.memo(&id),
    })?;
    let now = books.now;
    let handover = match (new.rail.as_str(), &new.payer) {
        (RAIL_MANUAL, _) => Handover::Operator,
        (_, Some(_)) => Handover::Prompt,
        (_, None) => Handover::Payment,
    };
    let collection = CollectionRecord {
        id: id.clone(),
        organization: new.organization.clone(),
        status: MovementStatus::Pending,
        account: hold.credit_account.clone(),
        currency: new.currency.clone(),
        amount: new.amount,
        code: new.code.clone(),
        account_number: new.account_number.clone(),
        external_reference: new.external_reference.clone(),
        metadata: new.metadata.clone(),
        status_message: "Waiting for the payer to approve".into(),
        hold_id: hold.id,
        timeline: vec![
            entry(
                now,
                Fact::CollectionCreated {
                    amount: new.amount,
                    currency: new.currency.clone(),
                    payer: new.payer.clone(),
                },
            ),
            entry(
                now,
                Fact::PendingCredit {
                    amount: new.amount,
                    currency: new.currency.clone(),
                    account: hold.credit_account.clone(),
                },
            ),
            entry(now, Fact::HandedOver { handover, note: new.rail_note.clone() }),
        ],
        rail: new.rail.clone(),
        created_at: now,
        updated_at: now,
        completed_at: None,
    };
    books.store.put(keys::collection(&id), &collection);
    open(books, &collection.rail, MovementKind::Collection, &id, now);
    books.index(&new.organization, "collections", &id)?;
    if let Some(group) = &new.group {
        books.store.put(keys::collection_group(&id), group);
    }
    for d in &new.attach {
        books.put_document(&d.collection, &d.id, &d.body, &d.list)?;
    }
    books.emit(
        &new.organization,
        EventKind::CollectionPending,
        EventPayload::Collection(collection.clone()),
    )?;
    for step in &new.schedule {
        let kind = JobKind::AdvanceCollection { collection_id: id.clone().into(), step: step.step.clone() };
        schedule(books, due_after(now, step.after_ms)?, kind);
    }
    Ok(Applied { outcome: Outcome::Collection(Box::new(collection)), replayed: false })
}

#[expect(clippy::too_many_lines)]
pub(crate) fn advance_collection(
    books: &mut Books,
    id: &CollectionId,
    step: &Step,
) -> Result<Applied, EngineError> {
    let key = keys::collection(id.as_str());
    let mut collection: CollectionRecord = books
        .store
        .get(&key)?
        .ok_or_else(|| EngineError::NotFound { resource: "collection", id: id.to_string() })?;
    if let Step::Reverse { .. } = step {
        return Err(EngineError::InvalidState(format!(
            "collection {id} is not a payout and is never reversed"
        )));
    }
    if collection.status != MovementStatus::Pending {
        return Ok(Applied { outcome: Outcome::Collection(Box::new(collection)), replayed: true });
    }
    let now = books.now;
    collection.updated_at = now;
    let actor = actor_of(step);
    match step {
        Step::Note { .. } | Step::Sent { .. } => {
            collection.timeline.extend(noted(step).map(|f| entry(now, f)));
        }
        Step::Reverse { .. } => unreachable!("refused above"),
        Step::Settle { success, message } | Step::Operator { success, message } => {
            let spec = if *success {
                TransferSpec::PostPending { pending_id: collection.hold_id }
            } else {
                TransferSpec::VoidPending { pending_id: collection.hold_id }
            };
            books.transfer(&spec)?;
            close(books, &collection.rail, MovementKind::Collection, id.as_str());
            collection.status_message = message.clone();
            let (amount, currency) = (collection.amount, collection.currency.clone());
            collection.timeline.push(entry(
                now,
                Fact::Settled {
                    movement: Movement::Collection,
                    actor,
                    success: *success,
                    message: message.clone(),
                },
            ));
            let organization = collection.organization.clone();
            if *success {
                collection.status = MovementStatus::Completed;
                collection.completed_at = Some(now);
                let account = collection.account.clone();
                collection.timeline.push(entry(now, Fact::BalanceCredited { amount, currency, account }));
                collection.timeline.push(entry(
                    now,
                    Fact::StatusChanged { movement: Movement::Collection, completed: true },
                ));
                count_in_group(books, &collection)?;
                books.emit(
                    &organization,
                    EventKind::CollectionCompleted,
                    EventPayload::Collection(collection.clone()),
                )?;
                let account = books.account(&collection.account)?;
                books.emit(
                    &organization,
                    EventKind::AccountCredited,
                    EventPayload::AccountCredited {
                        account,
                        amount: collection.amount,
                        source: id.to_string(),
                    },
                )?;
            } else {
                collection.status = MovementStatus::Failed;
                collection.timeline.push(entry(now, Fact::PendingCreditReleased { amount, currency }));
                collection.timeline.push(entry(
                    now,
                    Fact::StatusChanged { movement: Movement::Collection, completed: false },
                ));
                books.emit(
                    &organization,
                    EventKind::CollectionFailed,
                    EventPayload::Collection(collection.clone()),
                )?;
            }
        }
    }
    books.store.put(key, &collection);
    Ok(Applied { outcome: Outcome::Collection(Box::new(collection)), replayed: false })
}

/// Counts a collection that has just completed in its group's tally, in
/// the command that completes it, so the tally never lags the ledger.
fn count_in_group(books: &mut Books, collection: &CollectionRecord) -> Result<(), EngineError> {
    assert_eq!(collection.status, MovementStatus::Completed, "only a completed collection counts");
    let Some(group) = books.store.get::<CollectionGroup>(&keys::collection_group(&collection.id))? else {
        return Ok(());
    };
    let key = keys::collection_tally(&group.id);
    let tally = match books.store.get::<TallyRecord>(&key)? {
        Some(tally) => tally,
        None => TallyRecord::empty(&group, &collection.organization, &collection.currency),
    };
    assert_eq!(
        (tally.organization.as_str(), tally.currency.as_str(), tally.target_minor),
        (collection.organization.as_str(), collection.currency.as_str(), group.target_minor),
        "the collections of group {} share its organization, currency and target",
        group.id
    );
    let completed_at = collection.completed_at.expect("a completed collection has its time");
    let arrival =
        Arrival { collection_id: collection.id.clone(), amount_minor: collection.amount, completed_at };
    books.store.put(key, &tally.counted(arrival)?);
    Ok(())
}
