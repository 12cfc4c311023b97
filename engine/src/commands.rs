//! Commands: what callers ask the writer to do, and how each one is applied
//! to the books. Every command runs inside the writer against its own
//! overlay layer; returning an error drops that layer, so a refused command
//! leaves no trace.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::committed::MovementKind;
use crate::error::{EngineError, Field, Problem};
use crate::events::EventKind;
use crate::ledger::{Books, TransferSpec};
use crate::money::Currency;
use crate::movements::*;
use crate::orders::{NewOrder, OrderFunds};
pub use crate::outcome::{Applied, Outcome};
use crate::rates::{Pricing, convert_down, convert_up};
pub use crate::records::Document;
use crate::records::*;
use crate::resource_id::{CollectionId, OrderId, PayoutId, RefundId};
use crate::storage::{NameNumber, encode, keys};

/// The organization scope used for idempotency of bare ledger transfers.
const LEDGER_SCOPE: &str = "_ledger";

/// Which side of a quote the caller fixed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum QuoteAmount {
    /// The caller sells exactly this many minor units of `from`.
    From(i128),
    /// The caller buys exactly this many minor units of `to`.
    To(i128),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
// The large variants are boxed: every command is moved into the writer's
// queue, out of it and into its batch, and at a kilobyte each those copies
// were ~6 % of the applier's time (see the size check below).
pub enum Command {
    /// A linked group of transfers: all apply or none do.
    Transfers {
        transfers: Vec<TransferSpec>,
        external_reference: Option<String>,
    },
    /// Money arriving from outside onto an organization's balance.
    Deposit {
        organization: String,
        currency: String,
        amount: i128,
        external_reference: Option<String>,
    },
    CreateQuote {
        organization: String,
        from_currency: String,
        to_currency: String,
        amount: QuoteAmount,
    },
    ExecuteQuote {
        organization: String,
        quote_id: String,
        external_reference: Option<String>,
    },
    /// Stores a record the API layer owns (an API key, a representative),
    /// durably and in order with everything else. `list` also adds it to an
    /// organization's list of that kind when it is new.
    PutDocument {
        collection: String,
        id: String,
        body: Vec<u8>,
        list: Option<(String, String)>,
    },
    /// Several documents in one command: all are stored or none.
    PutDocuments {
        documents: Vec<Document>,
    },
    CreatePayout(Box<NewPayout>),
    AdvancePayout {
        payout_id: PayoutId,
        step: Step,
    },
    CreateCollection(Box<NewCollection>),
    AdvanceCollection {
        collection_id: CollectionId,
        step: Step,
    },
    CreateOrder(Box<NewOrder>),
    OrderFunds(Box<OrderFunds>),
    ExpireOrder {
        order_id: OrderId,
    },
    /// Runs a scheduled job (and removes it) in one transaction.
    RunJob {
        key: Vec<u8>,
    },
    /// Stores documents and records their events in one transaction, but
    /// only when every `expect`ed document still holds what the caller read
    /// (optimistic concurrency); otherwise nothing is written and the
    /// command fails with `EngineError::Conflict`.
    Save {
        expect: Vec<Expected>,
        documents: Vec<Document>,
        events: Vec<NewEvent>,
    },
    /// Records an event that has no ledger change of its own (`webhook.test`).
    RecordEvent {
        organization: String,
        kind: EventKind,
        payload: Box<EventPayload>,
    },
    /// Gives money back to the payer of a completed collection, holding it
    /// on the balance first.
    CreateRefund(Box<crate::refunds::NewRefund>),
    /// A rail's or the operator's report about a refund.
    AdvanceRefund {
        refund_id: RefundId,
        step: Step,
    },
    /// Opens a dispute: its documents (as `Save` stores them, under the
    /// same `expect`ations) and its hold on the balance, in one
    /// transaction; fires `dispute.created`.
    OpenDispute {
        dispute: Box<crate::disputes::NewDispute>,
        expect: Vec<Expected>,
        documents: Vec<Document>,
    },
    /// Resolves an open dispute: its documents and the hold taken
    /// (`accepted`) or released, in one transaction; fires
    /// `dispute.updated` and `dispute.closed`.
    ResolveDispute {
        dispute_id: String,
        accepted: bool,
        expect: Vec<Expected>,
        documents: Vec<Document>,
    },
}

// A command stays small enough to move cheaply through the writer's queue.
const _: () = assert!(std::mem::size_of::<Command>() <= 128);

/// An event for `Command::Save`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewEvent {
    pub organization: String,
    pub kind: EventKind,
    pub payload: EventPayload,
}

/// A precondition of `Command::Save`: the document's body has this sha256
/// digest, or (`digest: None`) the document does not exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expected {
    pub collection: String,
    pub id: String,
    pub digest: Option<[u8; 32]>,
}

impl Expected {
    /// Expects `body` (as read) to be the document's current body.
    pub fn unchanged(collection: &str, id: &str, body: &[u8]) -> Expected {
        Expected { collection: collection.into(), id: id.into(), digest: Some(digest(body)) }
    }
}

/// The digest `Expected` compares.
pub fn digest(body: &[u8]) -> [u8; 32] {
    crate::digest::sha256(&[body])
}

/// What the writer knows while applying one batch.
pub(crate) struct BatchContext<'a> {
    /// The epoch this batch will have once committed.
    pub epoch: u64,
    pub pricing: &'a Pricing,
    pub quote_ttl_ms: i64,
}

impl Command {
    /// The idempotency scope of the command, if it carries a reference:
    /// (organization, operation, reference).
    fn idempotency_key(&self) -> Option<(&str, &'static str, &str)> {
        match self {
            Command::Transfers { external_reference: Some(r), .. } => Some((LEDGER_SCOPE, "transfers", r)),
            Command::Deposit { organization, external_reference: Some(r), .. } => {
                Some((organization, "deposit", r))
            }
            Command::ExecuteQuote { organization, external_reference: Some(r), .. } => {
                Some((organization, "conversion", r))
            }
            Command::CreatePayout(p) => Some((&p.organization, "payout", &p.external_reference)),
            Command::CreateCollection(c) => Some((&c.organization, "collection", &c.external_reference)),
            Command::CreateOrder(o) => Some((&o.organization, "order", &o.external_reference)),
            Command::CreateRefund(r) => Some((&r.organization, "refund", &r.external_reference)),
            _ => None,
        }
    }

    /// A digest of everything the caller asked for: equal requests have
    /// equal fingerprints.
    pub fn fingerprint(&self) -> [u8; 32] {
        match self {
            Command::CreatePayout(p) => p.request_fingerprint,
            Command::CreateCollection(c) => c.request_fingerprint,
            Command::CreateOrder(o) => o.request_fingerprint,
            Command::CreateRefund(r) => r.request_fingerprint,
            _ => crate::digest::sha256(&[&encode(self)]),
        }
    }
}

#[expect(clippy::too_many_lines)]
pub(crate) fn apply(
    books: &mut Books,
    ctx: &BatchContext,
    command: &Command,
    received_epoch: u64,
) -> Result<Applied, EngineError> {
    let idempotency = command.idempotency_key();
    books.listed = None;
    // The entry's key, once both names have numbers: a digest
    // (`keys::idempotency`), made once for the lookup and the write.
    let mut entry_key = None;
    if let Some((scope_name, operation_name, reference)) = idempotency
        && let (Some(scope), Some(operation)) =
            (books.store.name_number(scope_name)?, books.store.name_number(operation_name)?)
    {
        let key = entry_key.insert(keys::idempotency(scope, operation, reference));
        if let Some(existing) = books.store.get_with(key, IdempotencyRecord::decode)? {
            if existing.fingerprint != IdempotencyRecord::kept(&command.fingerprint()) {
                return Err(EngineError::Duplicate { reference: reference.to_string() });
            }
            let outcome = load(books, (scope, operation_name), &existing.resource)?;
            return Ok(Applied { outcome, replayed: true });
        }
    }
    let applied = match command {
        Command::Transfers { transfers, .. } => apply_transfers(books, transfers)?,
        Command::Deposit { organization, currency, amount, external_reference } => {
            deposit(books, organization, currency, *amount, external_reference)?
        }
        Command::CreateQuote { organization, from_currency, to_currency, amount } => {
            create_quote(books, ctx, organization, from_currency, to_currency, *amount)?
        }
        Command::ExecuteQuote { organization, quote_id, external_reference } => {
            execute_quote(books, ctx, organization, quote_id, external_reference, received_epoch)?
        }
        Command::PutDocument { collection, id, body, list } => {
            books.put_document(collection, id, body, list)?;
            document_outcome(collection, id)
        }
        Command::PutDocuments { documents } => {
            let last = documents.last().ok_or(EngineError::invalid(Field::Documents, Problem::Empty))?;
            for d in documents {
                books.put_document(&d.collection, &d.id, &d.body, &d.list)?;
            }
            document_outcome(&last.collection, &last.id)
        }
        Command::CreatePayout(new) => create_payout(books, new)?,
        Command::AdvancePayout { payout_id, step } => crate::orders::advance_payout(books, payout_id, step)?,
        Command::CreateCollection(new) => create_collection(books, new)?,
        Command::AdvanceCollection { collection_id, step } => advance_collection(books, collection_id, step)?,
        Command::RunJob { key } => run_job(books, ctx, key, received_epoch)?,
        Command::CreateOrder(new) => crate::orders::create(books, new)?,
        Command::OrderFunds(funds) => crate::orders::funds(books, funds)?,
        Command::ExpireOrder { order_id } => crate::orders::expire(books, order_id)?,
        Command::Save { expect, documents, events } => {
            save_documents(books, expect, documents)?;
            for e in events {
                books.emit(&e.organization, e.kind, e.payload.clone())?;
            }
            Applied {
                outcome: Outcome::Document { collection: "save".into(), id: String::new() },
                replayed: false,
            }
        }
        Command::RecordEvent { organization, kind, payload } => {
            books.emit(organization, *kind, (**payload).clone())?;
            Applied {
                outcome: Outcome::Document { collection: "events".into(), id: kind.name().to_string() },
                replayed: false,
            }
        }
        Command::CreateRefund(new) => crate::refunds::create_refund(books, new)?,
        Command::AdvanceRefund { refund_id, step } => {
            crate::refunds::advance_refund(books, refund_id.as_str(), step)?
        }
        Command::OpenDispute { dispute, expect, documents } => {
            save_documents(books, expect, documents)?;
            let record = crate::disputes::open(books, dispute)?;
            Applied { outcome: Outcome::Dispute(Box::new(record)), replayed: false }
        }
        Command::ResolveDispute { dispute_id, accepted, expect, documents } => {
            save_documents(books, expect, documents)?;
            let record = crate::disputes::resolve(books, dispute_id, *accepted)?;
            Applied { outcome: Outcome::Dispute(Box::new(record)), replayed: false }
        }
    };
    if !applied.replayed {
        match &applied.outcome {
            Outcome::Payout(p) => {
                books.touched(MovementKind::Payout, &p.id, &p.rail, p.status == MovementStatus::Pending)
            }
            Outcome::Collection(c) => {
                books.touched(MovementKind::Collection, &c.id, &c.rail, c.status == MovementStatus::Pending)
            }
            Outcome::Refund(r) => {
                books.touched(MovementKind::Refund, &r.id, &r.rail, r.status == MovementStatus::Pending)
            }
            _ => {}
        }
    }
    // Also when `applied.replayed`: an execute that raced with the one that
    // executed its quote got that conversion, and a retry under its own
    // reference must get it again rather than `QuoteExecuted`.
    if let Some((scope, operation, reference)) = idempotency {
        // A resource the command listed is named by its position (format
        // 29), a few bytes where its id took 28.
        let resource = match (resource_of(&applied.outcome), books.listed.take()) {
            (resource, Some(listed))
                if resource.id() == Some(listed.id.as_str())
                    && ResourceRef::list_of(operation) == Some(listed.kind.as_str()) =>
            {
                ResourceRef::Listed(listed.seq)
            }
            (resource, _) => resource,
        };
        let record =
            IdempotencyRecord { fingerprint: IdempotencyRecord::kept(&command.fingerprint()), resource };
        let key = match entry_key {
            Some(key) => key,
            None => {
                let scope = books.store.name_number_or_new(scope)?;
                let operation = books.store.name_number_or_new(operation)?;
                keys::idempotency(scope, operation, reference)
            }
        };
        books.store.put(key, &record);
    }
    Ok(applied)
}

/// Stores documents the API layer owns, but only when every `expect`ed
/// document still holds what the caller read; otherwise `Conflict`.
fn save_documents(books: &mut Books, expect: &[Expected], documents: &[Document]) -> Result<(), EngineError> {
    for e in expect {
        if crate::storage::is_engine_owned(&e.collection) {
            return Err(EngineError::EngineOwned { collection: e.collection.clone() });
        }
        let current = books.store.get_raw(&keys::document(&e.collection, &e.id))?;
        if current.as_deref().map(digest) != e.digest {
            return Err(EngineError::Conflict(format!("{} '{}'", e.collection, e.id)));
        }
    }
    for d in documents {
        books.put_document(&d.collection, &d.id, &d.body, &d.list)?;
    }
    Ok(())
}

fn resource_of(outcome: &Outcome) -> ResourceRef {
    match outcome {
        Outcome::Transfers(t) => ResourceRef::Transfers(t.iter().map(|t| t.id).collect()),
        Outcome::Deposit(d) => ResourceRef::Deposit(d.id.clone()),
        Outcome::Conversion(c) => ResourceRef::Conversion(c.id.clone()),
        Outcome::Quote(q) => ResourceRef::Conversion(q.id.clone()),
        Outcome::Document { id, .. } => ResourceRef::Conversion(id.clone()),
        Outcome::Dispute(dispute) => ResourceRef::Conversion(dispute.id.clone()),
        Outcome::Payout(p) => ResourceRef::Payout(p.id.clone()),
        Outcome::Collection(c) => ResourceRef::Collection(c.id.clone()),
        Outcome::Order(o) => ResourceRef::Order(o.id.clone()),
        Outcome::Refund(r) => ResourceRef::Refund(r.id.clone()),
    }
}

/// What an idempotency entry of `(organization, operation)` names.
fn load(
    books: &mut Books,
    scope: (NameNumber, &str),
    resource: &ResourceRef,
) -> Result<Outcome, EngineError> {
    let missing = |what: &str| EngineError::Corrupt(format!("idempotency entry points at a missing {what}"));
    Ok(match resource {
        ResourceRef::Listed(position) => {
            let (organization, operation) = scope;
            let kind = ResourceRef::list_of(operation).ok_or_else(|| missing("list"))?;
            let kind_number = books.store.name_number(kind)?.ok_or_else(|| missing("list"))?;
            let entry = books
                .store
                .get_raw(&keys::list_entry(organization, kind_number, *position))?
                .ok_or_else(|| missing(&format!("{kind} entry at position {position}")))?;
            let resource = match crate::records::Listed::decode(&entry)? {
                crate::records::Listed::Id(id) => ResourceRef::in_list(kind, id),
                crate::records::Listed::Event(_) => None,
            };
            return load(books, scope, &resource.ok_or_else(|| missing(&format!("{kind} entry")))?);
        }
        ResourceRef::Conversion(id) => {
            Outcome::Conversion(books.store.get(&keys::conversion(id))?.ok_or_else(|| missing("conversion"))?)
        }
        ResourceRef::Deposit(id) => {
            Outcome::Deposit(books.store.get(&keys::deposit(id))?.ok_or_else(|| missing("deposit"))?)
        }
        ResourceRef::Payout(id) => Outcome::Payout(Box::new(
            crate::movements::find_payout(books, id)?.ok_or_else(|| missing("payout"))?,
        )),
        ResourceRef::Collection(id) => {
            Outcome::Collection(books.store.get(&keys::collection(id))?.ok_or_else(|| missing("collection"))?)
        }
        ResourceRef::Order(id) => {
            Outcome::Order(books.store.get(&keys::order(id))?.ok_or_else(|| missing("order"))?)
        }
        ResourceRef::Refund(id) => {
            Outcome::Refund(books.store.get(&keys::refund(id))?.ok_or_else(|| missing("refund"))?)
        }
        ResourceRef::Transfers(ids) => {
            let mut transfers = Vec::with_capacity(ids.len());
            for id in ids {
                transfers.push(books.stored_transfer(*id)?.ok_or_else(|| missing("transfer"))?);
            }
            Outcome::Transfers(transfers)
        }
    })
}

fn apply_transfers(books: &mut Books, specs: &[TransferSpec]) -> Result<Applied, EngineError> {
    if specs.is_empty() || specs.len() > crate::TRANSFERS_PER_COMMAND_MAX {
        return Err(EngineError::invalid(
            Field::Transfers,
            Problem::GroupSize { max: crate::TRANSFERS_PER_COMMAND_MAX },
        ));
    }
    let mut records = Vec::with_capacity(specs.len());
    for spec in specs {
        records.push(books.transfer(spec)?);
    }
    Ok(Applied { outcome: Outcome::Transfers(records), replayed: false })
}

fn deposit(
    books: &mut Books,
    organization: &str,
    currency: &str,
    amount: i128,
    external_reference: &Option<String>,
) -> Result<Applied, EngineError> {
    let id = books.new_id("dep");
    let transfer = books.transfer(&TransferSpec::Posted {
        debit: AccountRef::System(SystemAccount::World),
        credit: AccountRef::Organization(organization.to_string()),
        currency: currency.to_string(),
        amount,
        memo: crate::records::MemoShape::Deposit.memo(&id),
    })?;
    let account = books.account(&transfer.credit_account)?;
    let record = DepositRecord {
        id,
        organization: organization.to_string(),
        account: account.id.clone(),
        currency: currency.to_string(),
        amount,
        external_reference: external_reference.clone(),
        transfer_id: transfer.id,
        created_at: books.now,
    };
    books.store.put(keys::deposit(&record.id), &record);
    books.index(organization, "deposits", &record.id)?;
    books.emit(
        organization,
        EventKind::AccountCredited,
        EventPayload::AccountCredited { account, amount, source: record.id.clone() },
    )?;
    Ok(Applied { outcome: Outcome::Deposit(Box::new(record)), replayed: false })
}

fn create_quote(
    books: &mut Books,
    ctx: &BatchContext,
    organization: &str,
    from_currency: &str,
    to_currency: &str,
    amount: QuoteAmount,
) -> Result<Applied, EngineError> {
    let from = Currency::find(from_currency)
        .map_err(|e| EngineError::invalid(Field::FromCurrency, Problem::Money(e)))?;
    let to = Currency::find(to_currency)
        .map_err(|e| EngineError::invalid(Field::ToCurrency, Problem::Money(e)))?;
    if from == to {
        return Err(EngineError::invalid(Field::ToCurrency, Problem::SameCurrency));
    }
    let rate = ctx.pricing.all_in_rate(from.code, to.code)?;
    // The fixed side is not parsed by `Currency`, so bound it here: beyond
    // the maximum it would make an unexecutable quote (or panic in Decimal).
    let (QuoteAmount::From(requested) | QuoteAmount::To(requested)) = amount;
    if requested < 0 {
        return Err(EngineError::Money(crate::money::MoneyError::Negative));
    }
    if requested > crate::money::AMOUNT_MINOR_MAX {
        return Err(overflow());
    }
    let (from_amount, to_amount) = match amount {
        QuoteAmount::From(minor) => {
            let to_major = convert_down(from.to_decimal(minor)?, rate, to.scale).ok_or_else(overflow)?;
            (minor, to.from_decimal(to_major, true)?)
        }
        QuoteAmount::To(minor) => {
            let from_major = convert_up(to.to_decimal(minor)?, rate, from.scale).ok_or_else(overflow)?;
            (from.from_decimal(from_major, true)?, minor)
        }
    };
    if from_amount <= 0 || to_amount <= 0 {
        let field = if matches!(amount, QuoteAmount::From(_)) { Field::FromAmount } else { Field::ToAmount };
        return Err(EngineError::invalid(field, Problem::TooSmallToConvert));
    }
    let quote = QuoteRecord {
        id: books.new_id("qte"),
        organization: organization.to_string(),
        from_currency: from.code.to_string(),
        from_amount,
        to_currency: to.code.to_string(),
        to_amount,
        rate: rate.normalize().to_string(),
        status: QuoteStatus::Pending,
        conversion_id: None,
        executed_epoch: None,
        expires_at: books.now.checked_add(ctx.quote_ttl_ms).ok_or(EngineError::Overflow("quote expiry"))?,
        created_at: books.now,
    };
    books.store.put(keys::quote(&quote.id), &quote);
    Ok(Applied { outcome: Outcome::Quote(Box::new(quote)), replayed: false })
}

fn overflow() -> EngineError {
    EngineError::Money(crate::money::MoneyError::Overflow)
}

fn execute_quote(
    books: &mut Books,
    ctx: &BatchContext,
    organization: &str,
    quote_id: &str,
    external_reference: &Option<String>,
    received_epoch: u64,
) -> Result<Applied, EngineError> {
    let not_found = || EngineError::NotFound { resource: "quote", id: quote_id.to_string() };
    let mut quote: QuoteRecord = books.store.get(&keys::quote(quote_id))?.ok_or_else(not_found)?;
    if quote.organization != organization {
        return Err(not_found());
    }
    if quote.status == QuoteStatus::Executed {
        // An execute received before the executing batch was acknowledged
        // raced with it: it gets the same conversion. Later ones are refused.
        let concurrent = quote.executed_epoch.is_some_and(|epoch| received_epoch < epoch);
        let conversion_id = quote.conversion_id.as_deref().unwrap_or_default();
        if concurrent && let Some(conversion) = books.store.get(&keys::conversion(conversion_id))? {
            return Ok(Applied { outcome: Outcome::Conversion(conversion), replayed: true });
        }
        return Err(EngineError::QuoteExecuted(quote_id.to_string()));
    }
    if quote.is_expired(books.now) {
        return Err(EngineError::QuoteExpired(quote_id.to_string()));
    }
    let id = books.new_id("conv");
    let memo = crate::records::MemoShape::Conversion.memo(&id);
    let organization_ref = AccountRef::Organization(organization.to_string());
    let desk = AccountRef::System(SystemAccount::FxDesk);
    let sell = books.transfer(&TransferSpec::Posted {
        debit: organization_ref.clone(),
        credit: desk.clone(),
        currency: quote.from_currency.clone(),
        amount: quote.from_amount,
        memo: memo.clone(),
    })?;
    let buy = books.transfer(&TransferSpec::Posted {
        debit: desk,
        credit: organization_ref,
        currency: quote.to_currency.clone(),
        amount: quote.to_amount,
        memo,
    })?;
    let conversion = ConversionRecord {
        id: id.clone(),
        organization: organization.to_string(),
        quote_id: quote.id.clone(),
        from_account: sell.debit_account.clone(),
        from_currency: quote.from_currency.clone(),
        from_amount: quote.from_amount,
        to_account: buy.credit_account.clone(),
        to_currency: quote.to_currency.clone(),
        to_amount: quote.to_amount,
        rate: quote.rate.clone(),
        external_reference: external_reference.clone(),
        transfer_ids: vec![sell.id, buy.id],
        created_at: books.now,
        completed_at: books.now,
    };
    quote.status = QuoteStatus::Executed;
    quote.conversion_id = Some(id.clone());
    quote.executed_epoch = Some(ctx.epoch);
    books.store.put(keys::quote(&quote.id), &quote);
    books.store.put(keys::conversion(&id), &conversion);
    books.index(organization, "conversions", &id)?;
    books.emit(organization, EventKind::ConversionCompleted, EventPayload::Conversion(conversion.clone()))?;
    // The bought currency is an inflow to its account, like a deposit.
    let account = books.account(&conversion.to_account)?;
    books.emit(
        organization,
        EventKind::AccountCredited,
        EventPayload::AccountCredited { account, amount: conversion.to_amount, source: id },
    )?;
    Ok(Applied { outcome: Outcome::Conversion(Box::new(conversion)), replayed: false })
}

fn document_outcome(collection: &str, id: &str) -> Applied {
    Applied {
        outcome: Outcome::Document { collection: collection.to_string(), id: id.to_string() },
        replayed: false,
    }
}

/// Runs a due job and removes it, in one transaction. A job that is gone
/// already ran.
fn run_job(
    books: &mut Books,
    ctx: &BatchContext,
    key: &[u8],
    received_epoch: u64,
) -> Result<Applied, EngineError> {
    let Some(job) = books.store.get::<Job>(key)? else {
        return Ok(Applied {
            outcome: Outcome::Document { collection: "jobs".into(), id: String::new() },
            replayed: true,
        });
    };
    books.store.delete(key.to_vec());
    apply(books, ctx, &Command::from(job.kind), received_epoch)
}

impl From<JobKind> for Command {
    /// The command that carries out a job of this kind.
    fn from(kind: JobKind) -> Command {
        match kind {
            JobKind::AdvancePayout { payout_id, step } => Command::AdvancePayout { payout_id, step },
            JobKind::AdvanceCollection { collection_id, step } => {
                Command::AdvanceCollection { collection_id, step }
            }
            JobKind::ExpireOrder { order_id } => Command::ExpireOrder { order_id },
            JobKind::AdvanceRefund { refund_id, step } => Command::AdvanceRefund { refund_id, step },
        }
    }
}

/// Parses a rate string stored on a record.
pub fn parse_rate(rate: &str) -> Decimal {
    rate.parse().unwrap_or_default()
}
