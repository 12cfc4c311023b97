//! Model-based test: random sequences of commands go both to the real engine
//! (in-memory redb, real writer thread) and to a plain reference model of
//! the ledger's documented rules. After every step the outcome (success,
//! replay or the kind of refusal) and every account's totals must agree.
//!
//! Payouts, collections, orders and refunds (their holds, fee legs, spend
//! caps, order legs, refund tallies and scheduled jobs) are modelled in
//! `model/movements.rs`.
//! Disputes hold money: opened with what is available, their shortfall
//! filled by every later inflow to that balance (each its own transfer),
//! taken on acceptance and released on decline (`Model::fill_disputes`).
//! `verify` runs after every step, and with it the check that each
//! account's balance changes chain to its balances; each account's
//! statements are checked too (`check_statements`): opening plus the
//! totals by type is the closing, for the whole history and split in two.
//!
//! `PROPTEST_CASES` sets the number of cases (default 10,000).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{FileFailurePersistence, TestCaseError};
use rust_decimal::Decimal;

use sika_engine::balance_changes::BalanceAfter;
use sika_engine::clock::ManualClock;
use sika_engine::ledger::system_account_id;
use sika_engine::money::AMOUNT_MINOR_MAX;
use sika_engine::rates::RateSource;
#[path = "model/movements.rs"]
mod movements;

use sika_engine::{
    AccountRecord, AccountRef, Applied, Command, Currency, Engine, EngineConfig, EngineError, MoneyError,
    Outcome, PendingState, QuoteAmount, QuoteStatus, Snapshot, SystemAccount, TransferKind, TransferSpec,
};

const ORGS: [&str; 2] = ["org_a", "org_b"];
const CURRENCIES: [&str; 3] = ["USD", "GHS", "XOF"];
/// Minor units per major unit, as powers of ten.
const SCALES: [u32; 3] = [2, 2, 0];
/// Units of each currency per US dollar, as (mantissa, scale): 1, 15.50, 605.
const PER_USD: [(i128, u32); 3] = [(1, 0), (1550, 2), (605, 0)];
const SPREAD_BPS: u32 = 100;
const QUOTE_TTL_MS: i64 = 30_000;
const START_MS: i64 = 1_700_000_000_000;
/// A transfer id the engine never reaches in a test.
const NO_SUCH_TRANSFER: u64 = 1_000_000_000;

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000)
}

fn pow10(n: u32) -> i128 {
    10i128.pow(n)
}

fn org_index(name: &str) -> usize {
    ORGS.iter().position(|o| *o == name).expect("a model organization")
}

fn cur_index(code: &str) -> usize {
    CURRENCIES.iter().position(|c| *c == code).expect("a model currency")
}

/// The mid rates the engine is configured with, so the test does not depend
/// on the sandbox's default table.
struct TestRates;

impl RateSource for TestRates {
    fn mid_rate(&self, from: &str, to: &str) -> Option<Decimal> {
        let per_usd = |code: &str| {
            let (mantissa, scale) = PER_USD[CURRENCIES.iter().position(|c| *c == code)?];
            Some(Decimal::from_i128_with_scale(mantissa, scale))
        };
        per_usd(to)?.checked_div(per_usd(from)?)
    }
}

/// The all-in rate in units of 10^-8, computed exactly:
/// floor(mid * (1 - spread) * 10^8) with mid = to_per_usd / from_per_usd.
fn all_in_rate_e8(from: usize, to: usize) -> i128 {
    let (from_m, from_s) = PER_USD[from];
    let (to_m, to_s) = PER_USD[to];
    let keep = 10_000 - SPREAD_BPS as i128;
    (to_m * pow10(from_s) * keep * pow10(8)) / (pow10(to_s) * from_m * 10_000)
}

/// Parses a rate string such as "15.345" into units of 10^-8.
fn rate_string_e8(rate: &str) -> Option<i128> {
    let (whole, fraction) = rate.split_once('.').unwrap_or((rate, ""));
    if fraction.len() > 8 {
        return None;
    }
    Some(whole.parse::<i128>().ok()? * pow10(8) + format!("{fraction:0<8}").parse::<i128>().ok()?)
}

/// `ceil(a / b)` for a >= 0, b > 0.
fn ceil_div(a: i128, b: i128) -> i128 {
    (a + b - 1) / b
}

// ---------------------------------------------------------------------------
// The reference model.

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Who {
    Org(usize),
    World,
    FxDesk,
    RailClearing,
    FeeRevenue,
}

/// (owner, currency index)
type Key = (Who, usize);

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Totals {
    debits_posted: i128,
    credits_posted: i128,
    debits_pending: i128,
    credits_pending: i128,
}

impl Totals {
    fn available(&self) -> i128 {
        self.credits_posted - self.debits_posted - self.debits_pending
    }
}

#[derive(Clone, Debug)]
struct Hold {
    debit: Key,
    credit: Key,
    amount: i128,
    state: PendingState,
}

#[derive(Clone, Debug)]
struct Quote {
    org: usize,
    from: usize,
    to: usize,
    from_amount: i128,
    to_amount: i128,
    expires_at: i64,
    conversion: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Resource {
    Deposit(String),
    Conversion(String),
    Transfers(Vec<u64>),
    Payout(String),
    Collection(String),
    Order(String),
    Refund(String),
}

/// The refusal a command should meet.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Refusal {
    Invalid,
    Money(MoneyError),
    Insufficient {
        available: String,
        required: String,
        currency: String,
    },
    Duplicate,
    NotFound,
    NotPending(u64),
    QuoteExecuted,
    QuoteExpired,
    SpendCap(String),
    InvalidState,
    /// A refund beyond what its payment has left (`refundable`), or of a
    /// payment that is not completed.
    NotRefundable {
        completed: bool,
        refundable: i128,
    },
    Conflict,
}

fn refusal_of(error: &EngineError) -> Option<Refusal> {
    Some(match error {
        EngineError::Invalid { .. } => Refusal::Invalid,
        EngineError::Money(e) => Refusal::Money(e.clone()),
        EngineError::InsufficientFunds { available, required, currency } => {
            let c = Currency::find(currency).expect("a known currency");
            Refusal::Insufficient {
                available: c.format(*available),
                required: c.format(*required),
                currency: c.code.to_string(),
            }
        }
        EngineError::Duplicate { .. } => Refusal::Duplicate,
        EngineError::NotFound { .. } => Refusal::NotFound,
        EngineError::NotPending(id) => Refusal::NotPending(*id),
        EngineError::QuoteExecuted(_) => Refusal::QuoteExecuted,
        EngineError::QuoteExpired(_) => Refusal::QuoteExpired,
        EngineError::SpendCapExceeded { cap, .. } => Refusal::SpendCap(
            match cap {
                sika_engine::SpendCap::PerTransaction => "perTransactionUsd",
                sika_engine::SpendCap::Daily => "dailyUsd",
                sika_engine::SpendCap::Monthly => "monthlyUsd",
            }
            .into(),
        ),
        EngineError::InvalidState(_) => Refusal::InvalidState,
        EngineError::NotRefundable { payment_completed, refundable, .. } => {
            Refusal::NotRefundable { completed: *payment_completed, refundable: *refundable }
        }
        EngineError::Conflict(_) => Refusal::Conflict,
        _ => return None,
    })
}

fn insufficient(currency: usize, available: i128, required: i128) -> Refusal {
    let c = Currency::find(CURRENCIES[currency]).expect("known currency");
    Refusal::Insufficient {
        available: c.format(available),
        required: c.format(required),
        currency: c.code.to_string(),
    }
}

fn idempotency_key(command: &Command) -> Option<(String, &'static str, String)> {
    match command {
        Command::Transfers { external_reference: Some(r), .. } => {
            Some(("_ledger".to_string(), "transfers", r.clone()))
        }
        Command::Deposit { organization, external_reference: Some(r), .. } => {
            Some((organization.clone(), "deposit", r.clone()))
        }
        Command::ExecuteQuote { organization, external_reference: Some(r), .. } => {
            Some((organization.clone(), "conversion", r.clone()))
        }
        Command::CreatePayout(p) => Some((p.organization.clone(), "payout", p.external_reference.clone())),
        Command::CreateCollection(c) => {
            Some((c.organization.clone(), "collection", c.external_reference.clone()))
        }
        Command::CreateOrder(o) => Some((o.organization.clone(), "order", o.external_reference.clone())),
        Command::CreateRefund(r) => Some((r.organization.clone(), "refund", r.external_reference.clone())),
        _ => None,
    }
}

fn resource_of(outcome: &Outcome) -> Option<Resource> {
    match outcome {
        Outcome::Deposit(d) => Some(Resource::Deposit(d.id.clone())),
        Outcome::Conversion(c) => Some(Resource::Conversion(c.id.clone())),
        Outcome::Transfers(t) => Some(Resource::Transfers(t.iter().map(|t| t.id).collect())),
        Outcome::Payout(p) => Some(Resource::Payout(p.id.clone())),
        Outcome::Collection(c) => Some(Resource::Collection(c.id.clone())),
        Outcome::Order(o) => Some(Resource::Order(o.id.clone())),
        Outcome::Refund(r) => Some(Resource::Refund(r.id.clone())),
        _ => None,
    }
}

fn expect_refusal(actual: &Result<Applied, EngineError>, expected: Refusal) -> Result<(), TestCaseError> {
    match actual {
        Err(error) => {
            prop_assert_eq!(refusal_of(error), Some(expected), "engine error: {}", error);
            Ok(())
        }
        Ok(applied) => Err(TestCaseError::fail(format!(
            "the model expects {expected:?} but the engine applied {applied:?}"
        ))),
    }
}

fn expect_fresh(actual: &Result<Applied, EngineError>) -> Result<&Applied, TestCaseError> {
    match actual {
        Ok(applied) if !applied.replayed => Ok(applied),
        Ok(applied) => {
            Err(TestCaseError::fail(format!("expected a fresh result, got a replay: {applied:?}")))
        }
        Err(error) => {
            Err(TestCaseError::fail(format!("the model expects success but the engine refused: {error:?}")))
        }
    }
}

/// What one transfer of a linked group did, to check against the engine's record.
enum Planned {
    Move { pending: bool, debit: Key, credit: Key, amount: i128 },
    Settle { hold: u64, post: bool, amount: i128 },
}

/// A dispute's money, as the model keeps it.
#[derive(Clone, Debug)]
struct Dispute {
    id: String,
    org: usize,
    cur: usize,
    amount: i128,
    /// Its pending holds' amounts, oldest first (each its own transfer).
    holds: Vec<i128>,
    taken: i128,
    state: sika_engine::DisputeState,
}

impl Dispute {
    fn held(&self) -> i128 {
        self.holds.iter().sum()
    }

    fn shortfall(&self) -> i128 {
        if self.state == sika_engine::DisputeState::Won { 0 } else { self.amount - self.held() - self.taken }
    }
}

#[derive(Clone, Default)]
struct Model {
    accounts: BTreeMap<Key, Totals>,
    holds: BTreeMap<u64, Hold>,
    /// Pending transfers in creation order, for picking one by index.
    hold_ids: Vec<u64>,
    /// Every other transfer id (posted, settlements, deposits, conversions).
    other_ids: Vec<u64>,
    quotes: HashMap<String, Quote>,
    quote_ids: Vec<String>,
    idempotency: HashMap<(String, &'static str, String), (Command, Resource)>,
    now: i64,
    journal: u64,
    last_transfer_id: u64,
    deposits: [usize; 2],
    conversions: [usize; 2],
    movements: movements::Movements,
    /// Every dispute opened, oldest first (the order shortfalls are filled in).
    disputes: Vec<Dispute>,
}

impl Model {
    fn available(&self, key: Key) -> i128 {
        self.accounts.get(&key).map_or(0, Totals::available)
    }

    /// One transfer; organization accounts may never go negative on
    /// available = credits_posted - debits_posted - debits_pending.
    fn move_funds(&mut self, debit: Key, credit: Key, amount: i128, pending: bool) -> Result<(), Refusal> {
        if amount <= 0 || amount > AMOUNT_MINOR_MAX || debit == credit {
            return Err(Refusal::Invalid);
        }
        if let Who::Org(_) = debit.0 {
            let available = self.available(debit);
            if available < amount {
                return Err(insufficient(debit.1, available, amount));
            }
        }
        let d = self.accounts.entry(debit).or_default();
        if pending {
            d.debits_pending += amount;
        } else {
            d.debits_posted += amount;
        }
        let c = self.accounts.entry(credit).or_default();
        if pending {
            c.credits_pending += amount;
        } else {
            c.credits_posted += amount;
            self.fill_disputes(credit);
        }
        Ok(())
    }

    /// An inflow to `key`: the disputes its balance still owes, oldest
    /// first, get what is available, each a transfer of its own (a hold
    /// while open, a posted debit once lost).
    fn fill_disputes(&mut self, key: Key) {
        let Who::Org(org) = key.0 else { return };
        for i in 0..self.disputes.len() {
            let available = self.available(key);
            let d = &self.disputes[i];
            if available <= 0 {
                return;
            }
            if d.org != org || d.cur != key.1 || d.shortfall() <= 0 {
                continue;
            }
            let amount = d.shortfall().min(available);
            let lost = d.state == sika_engine::DisputeState::Lost;
            let account = self.accounts.get_mut(&key).expect("the credited account");
            if lost {
                account.debits_posted += amount;
            } else {
                account.debits_pending += amount;
            }
            let world = self.accounts.entry((Who::World, key.1)).or_default();
            if lost {
                world.credits_posted += amount;
                self.disputes[i].taken += amount;
            } else {
                world.credits_pending += amount;
                self.disputes[i].holds.push(amount);
            }
            self.journal += 1;
        }
    }

    /// Opens a dispute: holds what is available, up to its amount.
    fn open_dispute(&mut self, id: &str, org: usize, cur: usize, amount: i128) -> Result<(), Refusal> {
        if amount <= 0 || amount > AMOUNT_MINOR_MAX || self.disputes.iter().any(|d| d.id == id) {
            return Err(Refusal::Invalid);
        }
        let key = (Who::Org(org), cur);
        self.accounts.entry(key).or_default();
        let held = amount.min(self.available(key).max(0));
        let mut dispute = Dispute {
            id: id.to_string(),
            org,
            cur,
            amount,
            holds: Vec::new(),
            taken: 0,
            state: sika_engine::DisputeState::Open,
        };
        if held > 0 {
            self.move_funds(key, (Who::World, cur), held, true)?;
            self.journal += 1;
            dispute.holds.push(held);
        }
        self.disputes.push(dispute);
        Ok(())
    }

    /// Resolves an open dispute: takes its holds, or releases them (each
    /// release an inflow that serves the balance's other disputes).
    fn resolve_dispute(&mut self, id: &str, accepted: bool) -> Result<(), Refusal> {
        let i = self.disputes.iter().position(|d| d.id == id).ok_or(Refusal::NotFound)?;
        if self.disputes[i].state != sika_engine::DisputeState::Open {
            return Err(Refusal::Conflict);
        }
        let holds = std::mem::take(&mut self.disputes[i].holds);
        let key = (Who::Org(self.disputes[i].org), self.disputes[i].cur);
        let world = (Who::World, key.1);
        if accepted {
            self.disputes[i].state = sika_engine::DisputeState::Lost;
            for amount in holds {
                let account = self.accounts.get_mut(&key).expect("a dispute's account");
                account.debits_pending -= amount;
                account.debits_posted += amount;
                let w = self.accounts.get_mut(&world).expect("the world's account");
                w.credits_pending -= amount;
                w.credits_posted += amount;
                self.disputes[i].taken += amount;
                self.journal += 1;
            }
        } else {
            self.disputes[i].state = sika_engine::DisputeState::Won;
            for amount in holds {
                self.accounts.get_mut(&key).expect("a dispute's account").debits_pending -= amount;
                self.accounts.get_mut(&world).expect("the world's account").credits_pending -= amount;
                self.journal += 1;
                self.fill_disputes(key);
            }
        }
        Ok(())
    }

    fn settle(&mut self, id: u64, post: bool) -> Result<i128, Refusal> {
        let hold = self.holds.get_mut(&id).ok_or(Refusal::NotFound)?;
        if hold.state != PendingState::Pending {
            return Err(Refusal::NotPending(id));
        }
        hold.state = if post { PendingState::Posted } else { PendingState::Voided };
        let (debit, credit, amount) = (hold.debit, hold.credit, hold.amount);
        let d = self.accounts.get_mut(&debit).expect("a hold's debit account exists");
        d.debits_pending -= amount;
        if post {
            d.debits_posted += amount;
        }
        let c = self.accounts.get_mut(&credit).expect("a hold's credit account exists");
        c.credits_pending -= amount;
        if post {
            c.credits_posted += amount;
        }
        // Settling a credit, or releasing a debit, is an inflow.
        self.fill_disputes(if post { credit } else { debit });
        Ok(amount)
    }

    /// A new transfer id from the engine: ids are never reused and grow.
    fn take_transfer_id(&mut self, id: u64) -> Result<(), TestCaseError> {
        prop_assert!(id > self.last_transfer_id, "transfer id {} after {}", id, self.last_transfer_id);
        self.last_transfer_id = id;
        self.journal += 1;
        Ok(())
    }

    /// The quote the rounding rule gives: (from_amount, to_amount, rate in 10^-8).
    fn plan_quote(from: usize, to: usize, amount: QuoteAmount) -> Result<(i128, i128, i128), Refusal> {
        if from == to {
            return Err(Refusal::Invalid);
        }
        let requested = match amount {
            QuoteAmount::From(m) | QuoteAmount::To(m) => m,
        };
        if requested < 0 {
            return Err(Refusal::Money(MoneyError::Negative));
        }
        if requested > AMOUNT_MINOR_MAX {
            return Err(Refusal::Money(MoneyError::Overflow));
        }
        let rate = all_in_rate_e8(from, to);
        let (from_amount, to_amount) = match amount {
            // floor(from * rate), towards zero
            QuoteAmount::From(x) => (x, (x * rate * pow10(SCALES[to])) / (pow10(SCALES[from]) * pow10(8))),
            // ceil(to / rate)
            QuoteAmount::To(y) => (ceil_div(y * pow10(SCALES[from]) * pow10(8), pow10(SCALES[to]) * rate), y),
        };
        let computed = if matches!(amount, QuoteAmount::From(_)) { to_amount } else { from_amount };
        if computed > AMOUNT_MINOR_MAX {
            return Err(Refusal::Money(MoneyError::Overflow));
        }
        if from_amount <= 0 || to_amount <= 0 {
            return Err(Refusal::Invalid);
        }
        Ok((from_amount, to_amount, rate))
    }

    /// Checks the engine's answer to `command` against the model, then
    /// applies the command to the model.
    #[expect(clippy::too_many_lines)]
    fn step(
        &mut self,
        command: &Command,
        actual: &Result<Applied, EngineError>,
        engine: &Engine,
    ) -> Result<(), TestCaseError> {
        let key = idempotency_key(command);
        if let Some(key) = &key
            && let Some((first, resource)) = self.idempotency.get(key)
        {
            // The engine compares fingerprints: the whole command, or for
            // payouts, collections and orders the client's request.
            if first.fingerprint() != command.fingerprint() {
                return expect_refusal(actual, Refusal::Duplicate);
            }
            let applied = actual
                .as_ref()
                .map_err(|e| TestCaseError::fail(format!("expected a replay of {resource:?}, got {e:?}")))?;
            prop_assert!(applied.replayed, "a retry with the same externalReference must be a replay");
            prop_assert_eq!(resource_of(&applied.outcome), Some(resource.clone()));
            return Ok(());
        }
        let resource = match command {
            Command::Deposit { organization, currency, amount, external_reference } => {
                let (org, cur) = (org_index(organization), cur_index(currency));
                let mut next = self.clone();
                if let Err(refusal) = next.move_funds((Who::World, cur), (Who::Org(org), cur), *amount, false)
                {
                    return expect_refusal(actual, refusal);
                }
                let applied = expect_fresh(actual)?;
                let Outcome::Deposit(d) = &applied.outcome else {
                    return Err(TestCaseError::fail(format!("a deposit returned {applied:?}")));
                };
                prop_assert_eq!(d.amount, *amount);
                prop_assert_eq!(&d.organization, organization);
                prop_assert_eq!(&d.currency, currency);
                prop_assert_eq!(&d.external_reference, external_reference);
                *self = next;
                self.take_transfer_id(d.transfer_id)?;
                self.other_ids.push(d.transfer_id);
                self.deposits[org] += 1;
                Resource::Deposit(d.id.clone())
            }
            Command::Transfers { transfers, .. } => {
                if transfers.is_empty() {
                    return expect_refusal(actual, Refusal::Invalid);
                }
                let mut next = self.clone();
                let mut planned = Vec::with_capacity(transfers.len());
                for spec in transfers {
                    let result = match spec {
                        TransferSpec::Posted { debit, credit, currency, amount, .. }
                        | TransferSpec::Pending { debit, credit, currency, amount, .. } => {
                            let pending = matches!(spec, TransferSpec::Pending { .. });
                            let cur = cur_index(currency);
                            let (debit, credit) = ((model_who(debit), cur), (model_who(credit), cur));
                            next.move_funds(debit, credit, *amount, pending).map(|()| Planned::Move {
                                pending,
                                debit,
                                credit,
                                amount: *amount,
                            })
                        }
                        TransferSpec::PostPending { pending_id }
                        | TransferSpec::VoidPending { pending_id } => {
                            let post = matches!(spec, TransferSpec::PostPending { .. });
                            next.settle(*pending_id, post).map(|amount| Planned::Settle {
                                hold: *pending_id,
                                post,
                                amount,
                            })
                        }
                    };
                    match result {
                        Ok(plan) => planned.push(plan),
                        // All or nothing: the first refusal refuses the group.
                        Err(refusal) => return expect_refusal(actual, refusal),
                    }
                }
                let applied = expect_fresh(actual)?;
                let Outcome::Transfers(records) = &applied.outcome else {
                    return Err(TestCaseError::fail(format!("transfers returned {applied:?}")));
                };
                prop_assert_eq!(records.len(), planned.len());
                *self = next;
                for (plan, record) in planned.iter().zip(records) {
                    self.take_transfer_id(record.id)?;
                    match *plan {
                        Planned::Move { pending, debit, credit, amount } => {
                            prop_assert_eq!(record.amount, amount);
                            prop_assert_eq!(&record.currency, CURRENCIES[debit.1]);
                            if pending {
                                prop_assert_eq!(&record.kind, &TransferKind::Pending);
                                prop_assert_eq!(record.pending_state, Some(PendingState::Pending));
                                let hold = Hold { debit, credit, amount, state: PendingState::Pending };
                                self.holds.insert(record.id, hold);
                                self.hold_ids.push(record.id);
                            } else {
                                prop_assert_eq!(&record.kind, &TransferKind::Posted);
                                self.other_ids.push(record.id);
                            }
                        }
                        Planned::Settle { hold, post, amount } => {
                            let kind = if post {
                                TransferKind::PostPending(hold)
                            } else {
                                TransferKind::VoidPending(hold)
                            };
                            prop_assert_eq!(&record.kind, &kind);
                            prop_assert_eq!(record.amount, amount);
                            self.other_ids.push(record.id);
                        }
                    }
                }
                Resource::Transfers(records.iter().map(|r| r.id).collect())
            }
            Command::CreateQuote { organization, from_currency, to_currency, amount } => {
                let (org, from, to) =
                    (org_index(organization), cur_index(from_currency), cur_index(to_currency));
                let (from_amount, to_amount, rate) = match Self::plan_quote(from, to, *amount) {
                    Ok(planned) => planned,
                    Err(refusal) => return expect_refusal(actual, refusal),
                };
                let applied = expect_fresh(actual)?;
                let Outcome::Quote(q) = &applied.outcome else {
                    return Err(TestCaseError::fail(format!("a quote returned {applied:?}")));
                };
                prop_assert_eq!(q.from_amount, from_amount, "from amount of {:?}", q);
                prop_assert_eq!(q.to_amount, to_amount, "to amount of {:?}", q);
                prop_assert_eq!(rate_string_e8(&q.rate), Some(rate), "rate of {:?}", q);
                prop_assert_eq!(&q.organization, organization);
                prop_assert_eq!(&q.from_currency, from_currency);
                prop_assert_eq!(&q.to_currency, to_currency);
                prop_assert_eq!(q.status, QuoteStatus::Pending);
                prop_assert_eq!(q.expires_at, self.now + QUOTE_TTL_MS);
                let quote = Quote {
                    org,
                    from,
                    to,
                    from_amount,
                    to_amount,
                    expires_at: q.expires_at,
                    conversion: None,
                };
                self.quotes.insert(q.id.clone(), quote);
                self.quote_ids.push(q.id.clone());
                return Ok(());
            }
            Command::ExecuteQuote { organization, quote_id, external_reference } => {
                let org = org_index(organization);
                let Some(quote) = self.quotes.get(quote_id).cloned() else {
                    return expect_refusal(actual, Refusal::NotFound);
                };
                if quote.org != org {
                    return expect_refusal(actual, Refusal::NotFound);
                }
                if quote.conversion.is_some() {
                    // Sequential submissions are never concurrent with the
                    // execution: a second execute is refused.
                    return expect_refusal(actual, Refusal::QuoteExecuted);
                }
                if self.now >= quote.expires_at {
                    return expect_refusal(actual, Refusal::QuoteExpired);
                }
                let mut next = self.clone();
                let sell = next.move_funds(
                    (Who::Org(org), quote.from),
                    (Who::FxDesk, quote.from),
                    quote.from_amount,
                    false,
                );
                let buy = sell.and_then(|()| {
                    next.move_funds(
                        (Who::FxDesk, quote.to),
                        (Who::Org(org), quote.to),
                        quote.to_amount,
                        false,
                    )
                });
                if let Err(refusal) = buy {
                    return expect_refusal(actual, refusal);
                }
                let applied = expect_fresh(actual)?;
                let Outcome::Conversion(c) = &applied.outcome else {
                    return Err(TestCaseError::fail(format!("an execute returned {applied:?}")));
                };
                prop_assert_eq!(&c.quote_id, quote_id);
                prop_assert_eq!(&c.organization, organization);
                prop_assert_eq!(c.from_amount, quote.from_amount);
                prop_assert_eq!(c.to_amount, quote.to_amount);
                prop_assert_eq!(&c.from_currency, CURRENCIES[quote.from]);
                prop_assert_eq!(&c.to_currency, CURRENCIES[quote.to]);
                prop_assert_eq!(&c.external_reference, external_reference);
                prop_assert_eq!(c.transfer_ids.len(), 2);
                *self = next;
                for id in &c.transfer_ids {
                    self.take_transfer_id(*id)?;
                    self.other_ids.push(*id);
                }
                self.quotes.get_mut(quote_id).expect("quote").conversion = Some(c.id.clone());
                self.conversions[org] += 1;
                Resource::Conversion(c.id.clone())
            }
            Command::OpenDispute { dispute, .. } => {
                let (org, cur) = (org_index(&dispute.organization), cur_index(&dispute.currency));
                let mut next = self.clone();
                if let Err(refusal) = next.open_dispute(&dispute.id, org, cur, dispute.amount) {
                    return expect_refusal(actual, refusal);
                }
                let applied = expect_fresh(actual)?;
                let Outcome::Dispute(record) = &applied.outcome else {
                    return Err(TestCaseError::fail(format!("a dispute's opening returned {applied:?}")));
                };
                let model = next.disputes.last().expect("the new dispute");
                prop_assert_eq!(record.held, model.held(), "held at opening");
                prop_assert_eq!(record.taken, 0);
                *self = next;
                return Ok(());
            }
            Command::ResolveDispute { dispute_id, accepted, .. } => {
                let mut next = self.clone();
                if let Err(refusal) = next.resolve_dispute(dispute_id, *accepted) {
                    return expect_refusal(actual, refusal);
                }
                expect_fresh(actual)?;
                *self = next;
                return Ok(());
            }
            other => match self.movement_step(other, actual, engine)? {
                Some(resource) => resource,
                None => return Ok(()),
            },
        };
        if let Some(key) = key {
            self.idempotency.insert(key, (command.clone(), resource));
        }
        Ok(())
    }
}

fn model_who(reference: &AccountRef) -> Who {
    match reference {
        AccountRef::Organization(name) => Who::Org(org_index(name)),
        AccountRef::System(SystemAccount::World) => Who::World,
        AccountRef::System(SystemAccount::FxDesk) => Who::FxDesk,
        other => panic!("the model does not use {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Operations and their strategies.

#[derive(Debug, Clone)]
enum Spec {
    /// `cur` picks mostly among the currencies `from` has money in.
    Move { from: usize, same_org: bool, cur: usize, amount: i128, pending: bool },
    /// Settles a hold (`hold`) or, to be refused, another kind of transfer,
    /// picked by index among those created so far.
    Settle { hold: bool, index: usize, post: bool },
}

#[derive(Debug, Clone)]
enum Op {
    Deposit {
        org: usize,
        cur: usize,
        amount: i128,
        reference: Option<u8>,
    },
    Transfer {
        spec: Spec,
        reference: Option<u8>,
    },
    Linked {
        first: Spec,
        second: Spec,
        reference: Option<u8>,
    },
    /// `from` picks mostly among the currencies `org` has money in; `to` is `offset` after it.
    CreateQuote {
        org: usize,
        from: usize,
        offset: usize,
        fixed_to: bool,
        amount: i128,
    },
    ExecuteQuote {
        index: usize,
        other_org: bool,
        reference: Option<u8>,
    },
    /// Sends an earlier command again, verbatim.
    Resubmit {
        index: usize,
    },
    Advance {
        ms: i64,
    },
    Movement(movements::MoveOp),
    /// A dispute of `amount` on `org`'s balance of `cur` (mostly one it
    /// has money in).
    OpenDispute {
        org: usize,
        cur: usize,
        amount: i128,
    },
    /// Resolves the dispute `index` picks among those opened.
    ResolveDispute {
        index: usize,
        accepted: bool,
    },
}

fn reference() -> impl Strategy<Value = Option<u8>> {
    prop_oneof![3 => Just(None), 1 => (0u8..2).prop_map(Some)]
}

fn transfer_amount() -> impl Strategy<Value = i128> {
    prop_oneof![
        8 => 1i128..=5_000,
        2 => 5_000i128..=2_000_000,
        1 => -1i128..=0,
        1 => Just(AMOUNT_MINOR_MAX + 1),
    ]
}

fn spec(amount: impl Strategy<Value = i128>) -> impl Strategy<Value = Spec> {
    let moves = (0..2usize, prop::bool::weighted(0.1), any::<usize>(), amount, any::<bool>()).prop_map(
        |(from, same_org, cur, amount, pending)| Spec::Move { from, same_org, cur, amount, pending },
    );
    let settles = (prop::bool::weighted(0.9), any::<usize>(), any::<bool>())
        .prop_map(|(hold, index, post)| Spec::Settle { hold, index, post });
    prop_oneof![2 => moves, 1 => settles]
}

fn op() -> impl Strategy<Value = Op> {
    let deposit_amount = prop_oneof![
        12 => 1i128..=1_000_000,
        1 => -1i128..=0,
        1 => Just(AMOUNT_MINOR_MAX + 1),
    ];
    let quote_amount = prop_oneof![
        10 => 1i128..=200_000,
        2 => -3i128..=3,
        1 => prop::sample::select(vec![
            AMOUNT_MINOR_MAX,
            AMOUNT_MINOR_MAX + 1,
            -AMOUNT_MINOR_MAX - 1,
            i128::MAX,
            i128::MIN,
        ]),
    ];
    let overdraw = prop_oneof![1 => 1i128..=5_000, 1 => 5_000i128..=5_000_000];
    prop_oneof![
        6 => (0..2usize, 0..3usize, deposit_amount, reference())
            .prop_map(|(org, cur, amount, reference)| Op::Deposit { org, cur, amount, reference }),
        5 => (spec(transfer_amount()), reference()).prop_map(|(spec, reference)| Op::Transfer { spec, reference }),
        2 => (spec(transfer_amount()), spec(overdraw), reference())
            .prop_map(|(first, second, reference)| Op::Linked { first, second, reference }),
        3 => (0..2usize, any::<usize>(), prop_oneof![9 => 1..3usize, 1 => Just(0usize)], any::<bool>(), quote_amount)
            .prop_map(|(org, from, offset, fixed_to, amount)| Op::CreateQuote { org, from, offset, fixed_to, amount }),
        3 => (any::<usize>(), prop::bool::weighted(0.1), reference())
            .prop_map(|(index, other_org, reference)| Op::ExecuteQuote { index, other_org, reference }),
        2 => any::<usize>().prop_map(|index| Op::Resubmit { index }),
        2 => prop_oneof![0i64..=20_000, Just(QUOTE_TTL_MS - 1), Just(QUOTE_TTL_MS), Just(86_400_000)]
            .prop_map(|ms| Op::Advance { ms }),
        12 => movements::movement_op().prop_map(Op::Movement),
        3 => (0..2usize, any::<usize>(), prop_oneof![8 => 1i128..=2_000_000, 1 => -1i128..=0])
            .prop_map(|(org, cur, amount)| Op::OpenDispute { org, cur, amount }),
        2 => (any::<usize>(), any::<bool>()).prop_map(|(index, accepted)| Op::ResolveDispute { index, accepted }),
    ]
}

fn reference_string(reference: Option<u8>) -> Option<String> {
    reference.map(|r| format!("ref-{r}"))
}

fn org_ref(org: usize) -> AccountRef {
    AccountRef::Organization(ORGS[org].to_string())
}

/// A currency index from a random `choice`: mostly one `org` has money in.
fn pick_currency(model: &Model, org: usize, choice: usize) -> usize {
    let funded: Vec<usize> = (0..3).filter(|c| model.available((Who::Org(org), *c)) > 0).collect();
    if funded.is_empty() || choice.is_multiple_of(4) { choice % 3 } else { funded[choice / 4 % funded.len()] }
}

fn resolve_spec(spec: &Spec, model: &Model) -> TransferSpec {
    match *spec {
        Spec::Move { from, same_org, cur, amount, pending } => {
            let to = if same_org { from } else { 1 - from };
            let cur = pick_currency(model, from, cur);
            let (debit, credit, currency) = (org_ref(from), org_ref(to), CURRENCIES[cur].to_string());
            let memo = "model".to_string();
            if pending {
                TransferSpec::Pending { debit, credit, currency, amount, memo }
            } else {
                TransferSpec::Posted { debit, credit, currency, amount, memo }
            }
        }
        Spec::Settle { hold, index, post } => {
            let ids = if hold { &model.hold_ids } else { &model.other_ids };
            let pending_id = if ids.is_empty() { NO_SUCH_TRANSFER } else { ids[index % ids.len()] };
            if post {
                TransferSpec::PostPending { pending_id }
            } else {
                TransferSpec::VoidPending { pending_id }
            }
        }
    }
}

/// The engine command an operation stands for in the current state, or
/// `None` when it is not a command.
fn resolve(op: &Op, model: &Model, history: &[Command]) -> Option<Command> {
    Some(match op {
        Op::Deposit { org, cur, amount, reference } => Command::Deposit {
            organization: ORGS[*org].to_string(),
            currency: CURRENCIES[*cur].to_string(),
            amount: *amount,
            external_reference: reference_string(*reference),
        },
        Op::Transfer { spec, reference } => Command::Transfers {
            transfers: vec![resolve_spec(spec, model)],
            external_reference: reference_string(*reference),
        },
        Op::Linked { first, second, reference } => Command::Transfers {
            transfers: vec![resolve_spec(first, model), resolve_spec(second, model)],
            external_reference: reference_string(*reference),
        },
        Op::CreateQuote { org, from, offset, fixed_to, amount } => {
            let from = pick_currency(model, *org, *from);
            Command::CreateQuote {
                organization: ORGS[*org].to_string(),
                from_currency: CURRENCIES[from].to_string(),
                to_currency: CURRENCIES[(from + offset) % 3].to_string(),
                amount: if *fixed_to { QuoteAmount::To(*amount) } else { QuoteAmount::From(*amount) },
            }
        }
        Op::ExecuteQuote { index, other_org, reference } => {
            let (quote_id, org) = match index.checked_rem(model.quote_ids.len()) {
                Some(i) => (model.quote_ids[i].clone(), model.quotes[&model.quote_ids[i]].org),
                // Without quotes, mostly skip; sometimes ask for one that does not exist.
                None if *other_org => ("qte_missing".to_string(), 1),
                None => return None,
            };
            let org = if *other_org { 1 - org } else { org };
            Command::ExecuteQuote {
                organization: ORGS[org].to_string(),
                quote_id,
                external_reference: reference_string(*reference),
            }
        }
        Op::Resubmit { index } => {
            let command = history.get(index.checked_rem(history.len())?)?;
            if movements::unsafe_to_resubmit(command, model) {
                return None;
            }
            command.clone()
        }
        Op::Advance { .. } => return None,
        Op::Movement(op) => return movements::resolve_movement(op, model),
        Op::OpenDispute { org, cur, amount } => Command::OpenDispute {
            dispute: Box::new(sika_engine::disputes::NewDispute {
                id: format!("dsp_model{}", model.disputes.len()),
                organization: ORGS[*org].to_string(),
                currency: CURRENCIES[pick_currency(model, *org, *cur)].to_string(),
                amount: *amount,
            }),
            expect: Vec::new(),
            documents: Vec::new(),
        },
        Op::ResolveDispute { index, accepted } => Command::ResolveDispute {
            dispute_id: match index.checked_rem(model.disputes.len()) {
                Some(i) => model.disputes[i].id.clone(),
                None => "dsp_missing".to_string(),
            },
            accepted: *accepted,
            expect: Vec::new(),
            documents: Vec::new(),
        },
    })
}

// ---------------------------------------------------------------------------
// Comparing the engine's state with the model's.

fn check_account(
    actual: Option<AccountRecord>,
    expected: Option<&Totals>,
    what: &str,
) -> Result<(), TestCaseError> {
    match (actual, expected) {
        (None, None) => Ok(()),
        (Some(a), Some(t)) => {
            let stored = Totals {
                debits_posted: a.debits_posted,
                credits_posted: a.credits_posted,
                debits_pending: a.debits_pending,
                credits_pending: a.credits_pending,
            };
            prop_assert_eq!(&stored, t, "totals of {} ({})", what, a.id);
            let balances = a.balances().unwrap();
            prop_assert_eq!(balances.available, t.available(), "available of {}", what);
            prop_assert_eq!(balances.pending, t.credits_pending, "pending of {}", what);
            prop_assert_eq!(balances.total, t.available() + t.credits_pending, "total of {}", what);
            Ok(())
        }
        (actual, expected) => {
            Err(TestCaseError::fail(format!("{what}: the engine has {actual:?}, the model has {expected:?}")))
        }
    }
}

fn compare(engine: &Engine, model: &Model) -> Result<(), TestCaseError> {
    let snapshot = engine.read().expect("snapshot");
    for (o, org) in ORGS.iter().enumerate() {
        let listed: BTreeSet<String> =
            snapshot.organization_accounts(org).expect("accounts").into_iter().map(|a| a.currency).collect();
        let expected: BTreeSet<String> = model
            .accounts
            .keys()
            .filter(|k| k.0 == Who::Org(o))
            .map(|k| CURRENCIES[k.1].to_string())
            .collect();
        prop_assert_eq!(listed, expected, "accounts of {}", org);
        for (c, currency) in CURRENCIES.iter().enumerate() {
            let totals = model.accounts.get(&(Who::Org(o), c));
            if let Some(t) = totals {
                prop_assert!(t.available() >= 0, "the model let {} {} go negative", org, currency);
            }
            let actual = snapshot.organization_account(org, currency).expect("account");
            check_account(actual, totals, &format!("{org} {currency}"))?;
        }
    }
    let systems = [
        (Who::World, SystemAccount::World),
        (Who::FxDesk, SystemAccount::FxDesk),
        (Who::RailClearing, SystemAccount::RailClearing),
        (Who::FeeRevenue, SystemAccount::FeeRevenue),
    ];
    for (who, kind) in systems {
        for (c, currency) in CURRENCIES.iter().enumerate() {
            let actual = snapshot.account(&system_account_id(kind, currency)).expect("account");
            check_account(actual, model.accounts.get(&(who, c)), &format!("{kind:?} {currency}"))?;
        }
    }
    for (id, hold) in &model.holds {
        let transfer = snapshot.transfer(*id).expect("transfer");
        prop_assert_eq!(transfer.as_ref().map(|t| t.amount), Some(hold.amount), "amount of hold {}", id);
        prop_assert_eq!(transfer.and_then(|t| t.pending_state), Some(hold.state), "state of hold {}", id);
    }
    for (id, quote) in &model.quotes {
        let stored = snapshot.quote(id).expect("quote").expect("the quote exists");
        let status = if quote.conversion.is_some() { QuoteStatus::Executed } else { QuoteStatus::Pending };
        prop_assert_eq!(stored.status, status, "status of quote {}", id);
        prop_assert_eq!(&stored.conversion_id, &quote.conversion);
    }
    prop_assert_eq!(snapshot.journal_length().expect("journal"), model.journal);
    for d in &model.disputes {
        let stored = snapshot.dispute(&d.id).expect("dispute").expect("the dispute exists");
        prop_assert_eq!(stored.state, d.state, "state of {}", d.id);
        prop_assert_eq!((stored.held, stored.taken), (d.held(), d.taken), "money of {}", d.id);
        prop_assert!(stored.held + stored.taken <= stored.amount, "{} holds more than its amount", d.id);
    }
    for (o, org) in ORGS.iter().enumerate() {
        for (c, currency) in CURRENCIES.iter().enumerate() {
            let short: Vec<String> = model
                .disputes
                .iter()
                .filter(|d| d.org == o && d.cur == c && d.shortfall() > 0)
                .map(|d| d.id.clone())
                .collect();
            let owed = snapshot.dispute_shortfalls(org, currency).expect("shortfalls");
            prop_assert_eq!(owed, short, "disputes owed by {} {}", org, currency);
        }
    }
    movements::compare_movements(&snapshot, model)?;
    check_every_statement(&snapshot, model.now)?;
    drop(snapshot);
    let report = sika_engine::verify::verify(&*engine.database().expect("the database")).expect("verify");
    prop_assert!(report.is_consistent(), "verify: {:?}", report.problems);
    Ok(())
}

fn check_every_statement(snapshot: &Snapshot, now: i64) -> Result<(), TestCaseError> {
    for org in ORGS {
        for account in snapshot.organization_accounts(org).expect("accounts") {
            check_statements(snapshot, &account, now)?;
        }
    }
    Ok(())
}

/// An account's statements agree with its balances and with each other:
/// over all time it opens at zero and closes at the balances; split at any
/// instant, the first half closes where the second opens, the halves count
/// the whole's changes, and in each, opening plus the totals by type is
/// the closing. Its balances at `now` are its balances.
fn check_statements(snapshot: &Snapshot, account: &AccountRecord, now: i64) -> Result<(), TestCaseError> {
    let balances = account.balances().expect("balances");
    let held = BalanceAfter { available: balances.available, total: balances.total };
    let at_now = snapshot.balance_at(account, now).expect("balance at");
    prop_assert_eq!(at_now.map(|c| c.after).unwrap_or_default(), held, "{} at now", account.id);
    let whole = snapshot.statement(account, 0, now + 1).expect("statement");
    prop_assert_eq!(whole.opening, BalanceAfter::default(), "{} opens at zero", account.id);
    prop_assert_eq!(whole.closing, held, "{} closes at its balances", account.id);
    for split in [START_MS, START_MS + (now - START_MS) / 2, now] {
        let first = snapshot.statement(account, 0, split).expect("statement");
        let second = snapshot.statement(account, split, now + 1).expect("statement");
        prop_assert_eq!(first.closing, second.opening, "{} split at {}", account.id, split);
        prop_assert_eq!(first.count + second.count, whole.count, "{} split at {}", account.id, split);
        for statement in [&first, &second, &whole] {
            let (mut available, mut total) = (statement.opening.available, statement.opening.total);
            for sum in statement.totals.values() {
                available += sum.available;
                total += sum.total;
            }
            prop_assert_eq!(
                BalanceAfter { available, total },
                statement.closing,
                "{} opening + totals",
                account.id
            );
            prop_assert_eq!(statement.totals.values().map(|t| t.count).sum::<u64>(), statement.count);
        }
    }
    Ok(())
}

fn run_case(ops: &[Op]) -> Result<(), TestCaseError> {
    let clock = ManualClock::new(START_MS);
    let mut config = EngineConfig::new(None);
    config.clock = Arc::new(clock.clone());
    config.quote_ttl_ms = QUOTE_TTL_MS;
    config.spread_bps = SPREAD_BPS;
    config.rates = Box::new(TestRates);
    config.cache_size_bytes = 4 * 1024 * 1024;
    let engine = Engine::open(config).expect("open the in-memory engine");
    let mut model = Model { now: START_MS, ..Model::default() };
    let mut history: Vec<Command> = Vec::new();
    for (step, op) in ops.iter().enumerate() {
        if let Op::Advance { ms } = op {
            clock.advance_ms(*ms);
            model.now += ms;
        }
        if let Op::Movement(movements::MoveOp::RunJobs) = op {
            let sent = movements::run_jobs(&engine, &mut model)
                .map_err(|e| TestCaseError::fail(format!("step {step}: running jobs: {e}")))?;
            history.extend(sent);
        } else if let Some(command) = resolve(op, &model, &history) {
            let actual = engine.execute_blocking(command.clone());
            model.step(&command, &actual, &engine).map_err(|e| {
                TestCaseError::fail(format!("step {step}: {command:?}\n  engine: {actual:?}\n  {e}"))
            })?;
            history.push(command);
        }
        compare(&engine, &model)
            .map_err(|e| TestCaseError::fail(format!("after step {step} ({op:?}): {e}")))?;
    }
    let snapshot = engine.read().expect("snapshot");
    for (o, org) in ORGS.iter().enumerate() {
        let deposits = snapshot.list(org, "deposits", None, 1000).expect("list");
        prop_assert_eq!(deposits.len(), model.deposits[o], "deposits listed for {}", org);
        let conversions = snapshot.list(org, "conversions", None, 1000).expect("list");
        prop_assert_eq!(conversions.len(), model.conversions[o], "conversions listed for {}", org);
    }
    movements::check_lists(&snapshot, &model)?;
    drop(snapshot);
    let report = sika_engine::verify::verify(&*engine.database().expect("the database")).expect("verify");
    prop_assert!(report.is_consistent(), "verify: {:?}", report.problems);
    prop_assert_eq!(report.journal_entries, model.journal);
    engine.shutdown();
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct("tests/model.proptest-regressions"))),
        ..ProptestConfig::with_cases(cases())
    })]

    #[test]
    fn engine_matches_the_model(ops in prop::collection::vec(op(), 1..40)) {
        run_case(&ops)?;
    }
}

/// Fixed scenarios the random walk might take long to reach.
#[test]
fn model_scenarios() {
    // USD to XOF
    let q = |fixed_to, amount| Op::CreateQuote { org: 0, from: 0, offset: 2, fixed_to, amount };
    let scenarios: Vec<Vec<Op>> = vec![
        // A hold, posted once, then posted and voided again.
        vec![
            Op::Deposit { org: 0, cur: 0, amount: 1_000, reference: None },
            Op::Transfer {
                spec: Spec::Move { from: 0, same_org: false, cur: 0, amount: 600, pending: true },
                reference: None,
            },
            Op::Transfer { spec: Spec::Settle { hold: true, index: 0, post: true }, reference: None },
            Op::Transfer { spec: Spec::Settle { hold: true, index: 0, post: true }, reference: None },
            Op::Transfer { spec: Spec::Settle { hold: true, index: 0, post: false }, reference: None },
        ],
        // A linked group whose second transfer overdraws applies nothing.
        vec![
            Op::Deposit { org: 0, cur: 1, amount: 1_000, reference: None },
            Op::Linked {
                first: Spec::Move { from: 0, same_org: false, cur: 1, amount: 400, pending: false },
                second: Spec::Move { from: 0, same_org: false, cur: 1, amount: 601, pending: true },
                reference: Some(0),
            },
            Op::Linked {
                first: Spec::Move { from: 0, same_org: false, cur: 1, amount: 400, pending: false },
                second: Spec::Move { from: 0, same_org: false, cur: 1, amount: 600, pending: true },
                reference: Some(0),
            },
            Op::Resubmit { index: 2 },
        ],
        // Quotes both ways, executed, executed again, and one that expires.
        vec![
            Op::ExecuteQuote { index: 0, other_org: true, reference: None },
            Op::Deposit { org: 0, cur: 0, amount: 1_000_000, reference: None },
            q(false, 10_000),
            Op::ExecuteQuote { index: 0, other_org: false, reference: Some(1) },
            Op::ExecuteQuote { index: 0, other_org: false, reference: Some(1) },
            Op::ExecuteQuote { index: 0, other_org: false, reference: None },
            q(true, 5_000),
            Op::ExecuteQuote { index: 1, other_org: true, reference: None },
            Op::Advance { ms: QUOTE_TTL_MS },
            Op::ExecuteQuote { index: 1, other_org: false, reference: None },
            q(true, AMOUNT_MINOR_MAX + 1),
            q(false, i128::MIN),
            q(false, 1),
        ],
        movement_scenario(),
        refund_scenario(),
        dispute_scenario(),
    ];
    for ops in scenarios {
        if let Err(e) = run_case(&ops) {
            panic!("{e}");
        }
    }
}

/// Disputes: one held in full, one short (filled by a deposit, a
/// released hold and a settled transfer), one accepted while short (the
/// rest taken from the next deposit), one declined (its release serving
/// the others), and resolutions refused once resolved.
fn dispute_scenario() -> Vec<Op> {
    let open = |amount| Op::OpenDispute { org: 0, cur: 0, amount };
    let resolve = |index, accepted| Op::ResolveDispute { index, accepted };
    let deposit = |amount| Op::Deposit { org: 0, cur: 0, amount, reference: None };
    vec![
        resolve(0, true),
        deposit(1_000),
        open(400),
        // A hold of 300 from org 0 to org 1, released later: an inflow.
        Op::Transfer {
            spec: Spec::Move { from: 0, same_org: false, cur: 0, amount: 300, pending: true },
            reference: None,
        },
        open(500),
        open(0),
        deposit(100),
        Op::Transfer { spec: Spec::Settle { hold: true, index: 0, post: false }, reference: None },
        open(2_000),
        resolve(2, true),
        deposit(700),
        deposit(5_000),
        resolve(1, false),
        resolve(1, false),
        resolve(2, true),
        resolve(0, true),
        open(10_000),
        resolve(0, false),
        deposit(20_000),
        Op::Resubmit { index: 2 },
    ]
}

/// Payouts against the spend cap's per-transaction, daily and monthly
/// limits, settled by their jobs; collections that fail and succeed; orders
/// that wait for confirmations, pay out, fail for lack of funds and expire.
fn movement_scenario() -> Vec<Op> {
    use movements::MoveOp as M;
    let mv = Op::Movement;
    let payout = |amount, fee, reference, steps| {
        mv(M::Payout { org: 0, cur: 0, amount, fee, reference, capped: true, steps })
    };
    vec![
        Op::Deposit { org: 0, cur: 0, amount: 1_000_000, reference: None },
        // Within the per-transaction cap, with a fee; then one cent over it.
        payout(300_000, 50, 0, vec![(1_000, 0), (2_000, 1)]),
        payout(300_001, 0, 1, vec![]),
        // The day's 600,000 used up; one more cent is refused until tomorrow.
        payout(300_000, 0, 1, vec![(500, 2)]),
        payout(1, 0, 2, vec![]),
        Op::Advance { ms: 2_000 },
        mv(M::RunJobs),
        mv(M::SettlePayout { index: 0, step: 2 }),
        Op::Advance { ms: 86_400_000 },
        payout(1, 0, 2, vec![]),
        // Collections: one fails by its job, one succeeds when reported.
        mv(M::Collection { org: 1, cur: 1, amount: 5_000, reference: 0, steps: vec![(100, 2)] }),
        mv(M::Collection { org: 1, cur: 1, amount: 7_000, reference: 1, steps: vec![] }),
        mv(M::SettleCollection { index: 1, step: 1 }),
        mv(M::SettleCollection { index: 1, step: 2 }),
        Op::Advance { ms: 100 },
        mv(M::RunJobs),
        // An order waits for two confirmations, then pays out less its fee.
        mv(M::Order {
            org: 1,
            cur: 1,
            amount: 10_000,
            reference: 0,
            confirmations: 2,
            expires_in_ms: 60_000,
        }),
        mv(M::Funds { index: 0, amount: 10_000, confirmations: 1, payout: Some(100), steps: vec![] }),
        mv(M::Funds { index: 0, amount: 10_000, confirmations: 2, payout: Some(100), steps: vec![(10, 1)] }),
        mv(M::Funds { index: 0, amount: 10_000, confirmations: 2, payout: None, steps: vec![] }),
        // One whose payout the balance cannot cover, and one that expires.
        mv(M::Order {
            org: 1,
            cur: 1,
            amount: 20_000,
            reference: 1,
            confirmations: 0,
            expires_in_ms: 60_000,
        }),
        mv(M::Funds { index: 1, amount: 20_000, confirmations: 0, payout: Some(-1), steps: vec![] }),
        mv(M::Order { org: 1, cur: 2, amount: 300, reference: 2, confirmations: 0, expires_in_ms: 1_000 }),
        Op::Advance { ms: 60_000 },
        mv(M::RunJobs),
        mv(M::Expire { index: 2 }),
        mv(M::Funds { index: 2, amount: 300, confirmations: 0, payout: None, steps: vec![] }),
        Op::Resubmit { index: 1 },
        Op::Resubmit { index: 7 },
        // Reversals: a completed payout's amount comes back once (the
        // second report changes nothing), a failed payout takes none, an
        // order's completed leg is reversed and the order stays completed,
        // and a scheduled reversal runs as a job after the completion.
        mv(M::SettlePayout { index: 0, step: 3 }),
        mv(M::SettlePayout { index: 0, step: 3 }),
        mv(M::SettlePayout { index: 1, step: 3 }),
        mv(M::SettlePayout { index: 3, step: 3 }),
        mv(M::Payout {
            org: 1,
            cur: 1,
            amount: 1_000,
            fee: 10,
            reference: 5,
            capped: false,
            steps: vec![(3, 3), (100, 1), (60_000, 3)],
        }),
        Op::Advance { ms: 100 },
        mv(M::RunJobs),
        Op::Advance { ms: 60_000 },
        mv(M::RunJobs),
    ]
}

/// Refunds of one payment: a partial one that fails by its job and gives its
/// amount back, one beyond what is left, one of all that is left, a replay
/// and a duplicate of a reference, one of a payment still pending, and one
/// the balance cannot hold once a payout spent it.
fn refund_scenario() -> Vec<Op> {
    use movements::MoveOp as M;
    let mv = Op::Movement;
    let refund = |index, amount, reference, steps| mv(M::Refund { index, amount, reference, steps });
    vec![
        mv(M::Collection { org: 0, cur: 1, amount: 9_000, reference: 2, steps: vec![] }),
        mv(M::Collection { org: 0, cur: 1, amount: 4_000, reference: 2, steps: vec![] }),
        mv(M::SettleCollection { index: 0, step: 1 }),
        refund(1, None, 0, vec![]),
        refund(0, Some(3_000), 0, vec![(500, 0), (1_000, 2)]),
        refund(0, Some(3_000), 0, vec![(500, 0), (1_000, 2)]),
        refund(0, Some(3_001), 0, vec![]),
        refund(0, Some(6_001), 1, vec![]),
        Op::Advance { ms: 1_000 },
        mv(M::RunJobs),
        refund(0, Some(9_001), 1, vec![]),
        refund(0, Some(0), 1, vec![]),
        refund(0, None, 1, vec![(10, 1)]),
        refund(0, Some(1), 2, vec![]),
        mv(M::SettleRefund { index: 1, step: 1 }),
        mv(M::SettleRefund { index: 1, step: 2 }),
        Op::Advance { ms: 10 },
        mv(M::RunJobs),
        // The second payment, completed, then its balance spent on a payout.
        mv(M::SettleCollection { index: 1, step: 1 }),
        mv(M::Payout { org: 0, cur: 1, amount: 3_500, fee: 0, reference: 2, capped: false, steps: vec![] }),
        refund(1, None, 2, vec![]),
        refund(1, Some(500), 2, vec![]),
    ]
}
