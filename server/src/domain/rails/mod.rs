//! The rail boundary for asynchronous providers. A payout or collection on
//! a method the operator routes through a provider is stored first (rail
//! `flutterwave`, pending: the intent, durable before any request leaves
//! the node), then handed to the provider under Sika's own id as its
//! reference. What the provider says is re-read from it, never taken from a
//! notification, and applied with the same engine commands an operator's
//! settlement uses (`AdvancePayout` / `AdvanceCollection` with a note or a
//! settlement), so the writer never waits for the network.
//!
//! [`reconcile`] is the one step for a movement: find it at the provider by
//! reference; hand it over if the provider has never seen it; record "Sent
//! to <provider>"; settle once the provider's state is final. The
//! reconciler (`runtime::rails`) runs it for every open movement with
//! backoff, and a notification only makes a movement due at once. A
//! notification about a payout already completed is how a reversal
//! arrives (a mobile-money reversal, a bank return): the payout is re-read
//! and reversed only when the provider shows it reversed; a completed
//! payout is otherwise never looked at again, and a reversed one never.
//!
//! [`lookup`] asks the provider whether a bank account exists before any
//! money moves (destination validation, payout and order creation).

pub(crate) mod flutterwave;
pub(crate) mod lookup;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rust_decimal::Decimal;
use sika_api::capabilities::MethodStatus;
use sika_engine::movements::{CollectionRecord, MovementStatus, PayoutRecord, Step, TimelineEntry};
use sika_engine::{Command, Currency, Engine, Rail};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::timeline;

/// Consecutive failed exchanges after which routed methods show `degraded`,
/// and then `down` (new payouts and collections refused) until one succeeds.
const DEGRADED_AFTER: u32 = 3;
const DOWN_AFTER: u32 = 6;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    Payout,
    Collection,
    /// A refund of a collection the provider charged.
    Refund,
}

/// A refund Sika asks a provider to make of a charge it made for a
/// collection, read from the stored refund.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RefundOrder {
    /// Sika's refund id. A provider whose refund takes no reference of
    /// its own carries it in the refund's note, where Sika finds it again.
    pub id: String,
    /// Sika's id of the collection: the charge's reference.
    pub collection_id: String,
    pub currency: String,
    /// In major units of `currency`.
    pub amount: Decimal,
    /// The provider's id of the refund, once Sika recorded the hand-over.
    pub provider_id: Option<String>,
}

/// What Sika asks a provider to move, read from the stored movement.
#[derive(Debug, Clone)]
pub(crate) struct Movement {
    pub kind: Kind,
    /// Sika's id: the provider's reference.
    pub id: String,
    pub code: String,
    pub currency: String,
    /// In major units of `currency`.
    pub amount: Decimal,
    /// The wallet's phone number (mobile money) or account number.
    pub account_number: String,
    /// The bank's code, for a bank account.
    pub bank_code: Option<String>,
    pub name: String,
    pub narration: String,
    pub email: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Pending,
    Succeeded,
    Failed,
    /// A transfer that succeeded, then came back (payouts only).
    Reversed,
}

/// A movement as the provider shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub provider_id: String,
    pub status: Status,
    pub message: String,
}

/// A transfer or charge as the provider lists it, for a reconciliation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Listed {
    /// `Kind::Payout` for a transfer, `Kind::Collection` for a charge.
    pub kind: Kind,
    /// The reference it carries (Sika's id for the ones Sika made); empty
    /// when it shows none.
    pub reference: String,
    pub provider_id: String,
    pub currency: String,
    /// In major units; `None` when the provider's amount cannot be read.
    pub amount: Option<Decimal>,
    pub status: Status,
    /// When the provider created it (ms); `None` when it gives no readable
    /// time.
    pub created_at: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RailError {
    /// A timeout, a broken connection, a 5xx: try again, same reference.
    Transient(String),
    /// The provider refused the request; the movement fails with this.
    Refused(String),
    /// The provider already holds this reference.
    Duplicate,
}

/// A provider's answer to one exchange. Boxed, so the connector sits behind
/// `dyn AsyncRail`: the domain decides, and never names the HTTP client
/// (`crate::adapters`) that speaks to the provider.
pub(crate) type RailFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, RailError>> + Send + 'a>>;

/// An asynchronous provider, as the reconciler drives it.
pub(crate) trait AsyncRail: Send + Sync {
    fn name(&self) -> &'static str;
    /// Whether the operator routes `code` through it.
    fn carries(&self, code: &str) -> bool;
    /// Hands a movement over (a transfer or a charge) under its id.
    fn start<'a>(&'a self, movement: &'a Movement) -> RailFuture<'a, Seen>;
    /// Re-reads a movement by Sika's id; `None` if the provider never saw it.
    fn find<'a>(&'a self, kind: Kind, reference: &'a str) -> RailFuture<'a, Option<Seen>>;
    /// Refunds a charge it made (the charge Sika's collection names), for
    /// the order's amount, carrying Sika's refund id.
    fn refund<'a>(&'a self, order: &'a RefundOrder) -> RailFuture<'a, Seen>;
    /// Re-reads a refund: by the provider's id once known, else among the
    /// charge's refunds by Sika's id; `None` if the provider has none.
    fn find_refund<'a>(&'a self, order: &'a RefundOrder) -> RailFuture<'a, Option<Seen>>;
    /// An authenticated notification's movement, or `None` (a wrong hash,
    /// an event Sika does not act on). A refund's notification that names
    /// no Sika id comes back with an empty id.
    fn notification(&self, hash: Option<&str>, body: &[u8]) -> Option<(Kind, String)>;
    /// A cheap authenticated request, to see a provider recover.
    fn probe(&self) -> RailFuture<'_, ()>;
    /// Whether the provider looks up the accounts of `code`, a method it
    /// carries.
    fn resolves(&self, code: &str) -> bool;
    /// The holder's name of a bank account (empty if the provider gives
    /// none), or `None` when the provider says there is no such account.
    fn resolve<'a>(&'a self, bank_code: &'a str, account_number: &'a str) -> RailFuture<'a, Option<String>>;
    /// Every transfer (`Kind::Payout`) or charge (`Kind::Collection`) the
    /// provider lists over a window that covers `from_ms`..`to_ms` (it may
    /// list more: the caller keeps the period), page after page: an error
    /// if any page cannot be read, never a part of the list.
    fn list(&self, kind: Kind, from_ms: i64, to_ms: i64) -> RailFuture<'_, Vec<Listed>>;
}

/// The connector as the stack holds it, behind the trait.
impl<R: AsyncRail + ?Sized> AsyncRail for Box<R> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn carries(&self, code: &str) -> bool {
        (**self).carries(code)
    }

    fn start<'a>(&'a self, movement: &'a Movement) -> RailFuture<'a, Seen> {
        (**self).start(movement)
    }

    fn find<'a>(&'a self, kind: Kind, reference: &'a str) -> RailFuture<'a, Option<Seen>> {
        (**self).find(kind, reference)
    }

    fn refund<'a>(&'a self, order: &'a RefundOrder) -> RailFuture<'a, Seen> {
        (**self).refund(order)
    }

    fn find_refund<'a>(&'a self, order: &'a RefundOrder) -> RailFuture<'a, Option<Seen>> {
        (**self).find_refund(order)
    }

    fn notification(&self, hash: Option<&str>, body: &[u8]) -> Option<(Kind, String)> {
        (**self).notification(hash, body)
    }

    fn probe(&self) -> RailFuture<'_, ()> {
        (**self).probe()
    }

    fn resolves(&self, code: &str) -> bool {
        (**self).resolves(code)
    }

    fn resolve<'a>(&'a self, bank_code: &'a str, account_number: &'a str) -> RailFuture<'a, Option<String>> {
        (**self).resolve(bank_code, account_number)
    }

    fn list(&self, kind: Kind, from_ms: i64, to_ms: i64) -> RailFuture<'_, Vec<Listed>> {
        (**self).list(kind, from_ms, to_ms)
    }
}

/// The breaker: consecutive failed exchanges with the provider.
#[derive(Debug, Default)]
pub(crate) struct Health {
    failures: AtomicU32,
}

impl Health {
    pub(crate) fn failed(&self) {
        let _ = self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_add(1));
    }

    pub(crate) fn answered(&self) {
        self.failures.store(0, Ordering::SeqCst);
    }

    /// What the routed methods show while the provider keeps failing.
    pub(crate) fn status(&self) -> MethodStatus {
        match self.failures.load(Ordering::SeqCst) {
            n if n >= DOWN_AFTER => MethodStatus::Down,
            n if n >= DEGRADED_AFTER => MethodStatus::Degraded,
            _ => MethodStatus::Operational,
        }
    }
}

/// The live stack's connector, its breaker and the movements it owes
/// an answer for (with when each is next due).
#[derive(Default)]
pub(crate) struct Rails {
    /// The Flutterwave connector (`crate::adapters::flutterwave`), when
    /// the operator configured one on the live stack.
    pub flutterwave: Option<Box<dyn AsyncRail>>,
    pub health: Health,
    due: Mutex<HashMap<(Kind, String), (Instant, u32)>>,
    pub wake: tokio::sync::Notify,
}

impl Rails {
    pub(crate) fn new(flutterwave: Option<Box<dyn AsyncRail>>) -> Rails {
        Rails { flutterwave, ..Rails::default() }
    }

    /// Whether new movements on `code` go to a provider.
    pub(crate) fn routes(&self, code: &str) -> bool {
        self.flutterwave.as_ref().is_some_and(|f| f.carries(code))
    }

    /// Whether the provider `code` is routed through looks its accounts up.
    pub(crate) fn resolves(&self, code: &str) -> bool {
        self.flutterwave.as_ref().is_some_and(|f| f.resolves(code))
    }

    /// Whether new collections on `code` go to a provider (as charges).
    pub(crate) fn collects(&self, code: &str) -> bool {
        self.routes(code) && flutterwave::route(code).is_some_and(|r| r.charge.is_some())
    }

    /// Whether a payout on `code` must name its bank (`to.bankCode`): the
    /// provider that pays it out needs the code.
    pub(crate) fn needs_bank_code(&self, code: &str) -> bool {
        self.routes(code) && flutterwave::route(code).is_some_and(|r| r.payee == flutterwave::Payee::Bank)
    }

    /// `code`'s status with the breaker's laid over the configured one.
    pub(crate) fn status(&self, code: &str, configured: MethodStatus) -> MethodStatus {
        if !self.routes(code) {
            return configured;
        }
        let rank = |s: MethodStatus| match s {
            MethodStatus::Operational => 0,
            MethodStatus::Degraded => 1,
            MethodStatus::Down => 2,
        };
        let breaker = self.health.status();
        if rank(breaker) > rank(configured) { breaker } else { configured }
    }

    /// Makes a movement due now and wakes the reconciler.
    pub(crate) fn due_now(&self, kind: Kind, id: &str) {
        if let Ok(mut due) = self.due.lock() {
            let attempts = due.get(&(kind, id.to_string())).map_or(0, |d| d.1);
            due.insert((kind, id.to_string()), (Instant::now(), attempts));
        }
        self.wake.notify_one();
    }

    /// Tracks a movement found in the ledger, due now unless already tracked.
    pub(crate) fn track(&self, kind: Kind, id: String) {
        if let Ok(mut due) = self.due.lock() {
            due.entry((kind, id)).or_insert((Instant::now(), 0));
        }
    }

    /// A movement the ledger just committed open on the provider's rail:
    /// due now unless already tracked (a step of the reconciler's own keeps
    /// its backoff), and the reconciler woken.
    pub(crate) fn committed_open(&self, kind: Kind, id: &str) {
        let new = self.due.lock().is_ok_and(|mut due| {
            let key = (kind, id.to_string());
            let new = !due.contains_key(&key);
            due.entry(key).or_insert((Instant::now(), 0));
            new
        });
        if new {
            self.wake.notify_one();
        }
    }

    /// The movements due by `now`.
    pub(crate) fn take_due(&self, now: Instant) -> Vec<(Kind, String, u32)> {
        let Ok(due) = self.due.lock() else { return Vec::new() };
        due.iter().filter(|(_, (at, _))| *at <= now).map(|((k, id), (_, n))| (*k, id.clone(), *n)).collect()
    }

    /// Reschedules a movement after `attempts` unanswered looks.
    pub(crate) fn later(&self, kind: Kind, id: &str, attempts: u32, backoff: Duration) {
        if let Ok(mut due) = self.due.lock() {
            due.insert((kind, id.to_string()), (Instant::now() + backoff, attempts));
        }
    }

    /// Makes every tracked movement of `kind` due now (a notification
    /// that names none of Sika's ids, such as a refund's without Sika's
    /// note) and wakes the reconciler: only movements open at the provider
    /// are tracked, so this reads no other.
    pub(crate) fn all_due_now(&self, kind: Kind) {
        if let Ok(mut due) = self.due.lock() {
            let now = Instant::now();
            due.iter_mut().filter(|((k, _), _)| *k == kind).for_each(|(_, (at, _))| *at = now);
        }
        self.wake.notify_one();
    }

    pub(crate) fn done(&self, kind: Kind, id: &str) {
        if let Ok(mut due) = self.due.lock() {
            due.remove(&(kind, id.to_string()));
        }
    }
}

/// What to do with a movement after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// Final (or not the provider's): forget it.
    Done,
    /// Look again after the backoff.
    Later,
}

/// What a step at the provider changes: the ledger, the connector's breaker,
/// and the webhook dispatcher woken when a movement settles.
#[derive(Clone, Copy)]
pub(crate) struct Deps<'a> {
    pub engine: &'a Engine,
    pub rails: &'a Rails,
}

/// One look at a movement: see the module's documentation.
pub(crate) async fn reconcile<R: AsyncRail + ?Sized>(
    deps: Deps<'_>,
    rail: &R,
    kind: Kind,
    id: &str,
) -> ApiResult<Next> {
    if kind == Kind::Refund {
        return reconcile_refund(deps, rail, id).await;
    }
    let Some((movement, sent)) = open_movement(deps.engine, kind, id, rail.name())? else {
        return reversal(deps, rail, kind, id).await;
    };
    let seen = match rail.find(kind, id).await {
        Ok(Some(seen)) => seen,
        Ok(None) if sent => {
            // Sent, but not shown yet: the provider's read lags its write.
            deps.rails.health.answered();
            return Ok(Next::Later);
        }
        Ok(None) => match rail.start(&movement).await {
            Ok(seen) => seen,
            // The provider holds the reference but its look-up did not show
            // it (its read lags its write): read it again after the backoff,
            // never send again at once.
            Err(error) => return not_taken(deps, rail.name(), kind, id, error).await,
        },
        Err(RailError::Transient(error) | RailError::Refused(error)) => {
            deps.rails.health.failed();
            tracing::warn!(movement = id, error, "cannot read the movement at the provider; retrying");
            return Ok(Next::Later);
        }
        Err(RailError::Duplicate) => return Ok(Next::Later),
    };
    deps.rails.health.answered();
    if !sent {
        let detail = if seen.provider_id.is_empty() {
            format!("reference {id}")
        } else {
            format!("{} id {}; reference {id}", rail.name(), seen.provider_id)
        };
        let step = Step::Sent { provider: rail.name().to_string(), detail };
        advance(deps, kind, id, step).await?;
    }
    settle(deps, rail, kind, id, &seen).await
}

/// A provider did not take a payout, collection or refund it was asked
/// for: a refusal fails it (which releases its hold); a duplicate or a
/// transient error waits for the next look, which reads it again first.
async fn not_taken(deps: Deps<'_>, rail: &str, kind: Kind, id: &str, error: RailError) -> ApiResult<Next> {
    match error {
        RailError::Duplicate => {
            deps.rails.health.answered();
            Ok(Next::Later)
        }
        RailError::Refused(message) => {
            deps.rails.health.answered();
            let message = format!("{rail} refused it: {message}");
            advance(deps, kind, id, Step::Settle { success: false, message }).await?;
            Ok(Next::Done)
        }
        RailError::Transient(error) => {
            deps.rails.health.failed();
            tracing::warn!(movement = id, error, "the provider did not take the movement; reading it again");
            Ok(Next::Later)
        }
    }
}

/// One look at a refund the provider makes of a charge it made: re-read it
/// (by the provider's id once recorded, else among the charge's refunds by
/// Sika's id, which the refund carries in its note); ask for it only if the
/// provider shows none, so a retry after a timeout or a crash finds the
/// first request instead of refunding twice; record the hand-over with the
/// provider's id; settle once the provider's state is final. A refusal
/// fails the refund, which releases its hold.
async fn reconcile_refund<R: AsyncRail + ?Sized>(deps: Deps<'_>, rail: &R, id: &str) -> ApiResult<Next> {
    let Some((order, sent)) = open_refund(deps.engine, id, rail.name())? else { return Ok(Next::Done) };
    let seen = match rail.find_refund(&order).await {
        Ok(Some(seen)) => seen,
        Ok(None) if sent => {
            deps.rails.health.answered();
            return Ok(Next::Later);
        }
        Ok(None) => match rail.refund(&order).await {
            Ok(seen) => seen,
            Err(error) => return not_taken(deps, rail.name(), Kind::Refund, id, error).await,
        },
        Err(RailError::Transient(error) | RailError::Refused(error)) => {
            deps.rails.health.failed();
            tracing::warn!(refund = id, error, "cannot read the refund at the provider; retrying");
            return Ok(Next::Later);
        }
        Err(RailError::Duplicate) => return Ok(Next::Later),
    };
    deps.rails.health.answered();
    if !sent {
        let detail = format!("{} id {}; reference {id}", rail.name(), seen.provider_id);
        advance(deps, Kind::Refund, id, Step::Sent { provider: rail.name().to_string(), detail }).await?;
    }
    settle(deps, rail, Kind::Refund, id, &seen).await
}

/// The refund if it is pending on a provider's rail, and the provider's id
/// of it when the hand-over was recorded.
fn open_refund(engine: &Engine, id: &str, provider: &str) -> ApiResult<Option<(RefundOrder, bool)>> {
    let Some(refund) = engine.read()?.refund(&sika_engine::RefundId::named(id))? else { return Ok(None) };
    if refund.status != MovementStatus::Pending || Rail::from_name(&refund.rail) != Some(Rail::Flutterwave) {
        return Ok(None);
    }
    let sent = refund.timeline.iter().find(|t| timeline::sent_to(&t.fact, provider));
    let provider_id = sent.and_then(|t| match &t.fact {
        sika_engine::timeline::Fact::Sent { detail, .. } => provider_id_in(detail, provider),
        _ => None,
    });
    let order = RefundOrder {
        id: refund.id.clone(),
        collection_id: refund.collection_id.clone(),
        currency: refund.currency.clone(),
        amount: major(&refund.currency, refund.amount)?,
        provider_id,
    };
    Ok(Some((order, sent.is_some())))
}

/// The provider's id in a hand-over's detail (`"<provider> id <id>;
/// reference <Sika's id>"`, as [`reconcile`] writes it).
fn provider_id_in(detail: &str, provider: &str) -> Option<String> {
    let rest = detail.strip_prefix(provider)?.strip_prefix(" id ")?;
    let id = rest.split(';').next()?.trim();
    (!id.is_empty()).then(|| id.to_string())
}

/// Applies a final state the provider showed.
async fn settle<R: AsyncRail + ?Sized>(
    deps: Deps<'_>,
    rail: &R,
    kind: Kind,
    id: &str,
    seen: &Seen,
) -> ApiResult<Next> {
    let with_message = |text: String| {
        if seen.message.is_empty() { text } else { format!("{text}: {}", seen.message) }
    };
    match seen.status {
        Status::Pending => Ok(Next::Later),
        Status::Succeeded => {
            let title = match kind {
                Kind::Payout => format!("{} confirmed delivery", rail.name()),
                Kind::Collection => format!("{} confirmed the payment", rail.name()),
                Kind::Refund => format!("{} confirmed the refund", rail.name()),
            };
            let detail = format!("{} id {}", rail.name(), seen.provider_id);
            advance(deps, kind, id, Step::Note { kind: "provider".into(), title, detail }).await?;
            let message = with_message(format!("{} id {}", rail.name(), seen.provider_id));
            advance(deps, kind, id, Step::Settle { success: true, message }).await?;
            Ok(Next::Done)
        }
        Status::Failed => {
            let message = with_message(format!("{} id {} failed", rail.name(), seen.provider_id));
            advance(deps, kind, id, Step::Settle { success: false, message }).await?;
            Ok(Next::Done)
        }
        // Delivered, then taken back before Sika heard of either: it
        // completes (the transfer did succeed, and its fee is earned) and
        // is reversed at once.
        Status::Reversed => {
            let message = with_message(format!("{} id {}", rail.name(), seen.provider_id));
            advance(deps, kind, id, Step::Settle { success: true, message }).await?;
            advance(deps, kind, id, Step::Reverse { message: reversal_message(rail, seen) }).await?;
            Ok(Next::Done)
        }
    }
}

/// Why the provider took a payout back, as its timeline says.
fn reversal_message<R: AsyncRail + ?Sized>(rail: &R, seen: &Seen) -> String {
    let text = format!("{} reversed transfer {}", rail.name(), seen.provider_id);
    if seen.message.is_empty() { text } else { format!("{text}: {}", seen.message) }
}

/// A notification about a movement that is no longer open: for a payout
/// that completed on this provider, the provider is asked again, and the
/// payout is reversed only when its answer shows the transfer reversed
/// (what the notification claimed is never applied). Anything else is
/// left alone; the engine ignores a second reversal, so two notifications
/// about one reversal take the amount back once.
async fn reversal<R: AsyncRail + ?Sized>(deps: Deps<'_>, rail: &R, kind: Kind, id: &str) -> ApiResult<Next> {
    if kind != Kind::Payout || !delivered_payout(deps.engine, id)? {
        return Ok(Next::Done);
    }
    match rail.find(kind, id).await {
        Ok(Some(seen)) => {
            deps.rails.health.answered();
            if seen.status == Status::Reversed {
                advance(deps, kind, id, Step::Reverse { message: reversal_message(rail, &seen) }).await?;
            }
            Ok(Next::Done)
        }
        Ok(None) => {
            deps.rails.health.answered();
            Ok(Next::Done)
        }
        Err(RailError::Transient(error) | RailError::Refused(error)) => {
            deps.rails.health.failed();
            tracing::warn!(
                movement = id,
                error,
                "cannot re-read a completed payout at the provider; retrying"
            );
            Ok(Next::Later)
        }
        Err(RailError::Duplicate) => Ok(Next::Done),
    }
}

/// Whether `id` is a payout completed on the provider's rail.
fn delivered_payout(engine: &Engine, id: &str) -> ApiResult<bool> {
    let Some(payout) = engine.read()?.payout(&sika_engine::PayoutId::named(id))? else { return Ok(false) };
    Ok(payout.status == MovementStatus::Completed && Rail::from_name(&payout.rail) == Some(Rail::Flutterwave))
}

async fn advance(deps: Deps<'_>, kind: Kind, id: &str, step: Step) -> ApiResult<()> {
    let command = match kind {
        Kind::Payout => {
            Command::AdvancePayout { payout_id: sika_engine::PayoutId::from(id.to_string()), step }
        }
        Kind::Collection => Command::AdvanceCollection {
            collection_id: sika_engine::CollectionId::from(id.to_string()),
            step,
        },
        Kind::Refund => {
            Command::AdvanceRefund { refund_id: sika_engine::RefundId::from(id.to_string()), step }
        }
    };
    deps.engine.execute(command).await?;
    Ok(())
}

/// The movement if it is pending on a provider's rail, and whether it was
/// recorded as sent to `provider`.
fn open_movement(
    engine: &Engine,
    kind: Kind,
    id: &str,
    provider: &str,
) -> ApiResult<Option<(Movement, bool)>> {
    let sent = |timeline: &[TimelineEntry]| timeline.iter().any(|t| timeline::sent_to(&t.fact, provider));
    let snapshot = engine.read()?;
    match kind {
        Kind::Payout => {
            let Some(payout) = snapshot.payout(&sika_engine::PayoutId::named(id))? else { return Ok(None) };
            Ok(payout_movement(&payout)?.map(|m| (m, sent(&payout.timeline))))
        }
        Kind::Collection => {
            let Some(collection) = snapshot.collection(&sika_engine::CollectionId::named(id))? else {
                return Ok(None);
            };
            Ok(collection_movement(&collection)?.map(|m| (m, sent(&collection.timeline))))
        }
        // A refund is read by `open_refund`, with the charge it returns.
        Kind::Refund => Ok(None),
    }
}

/// A wallet number as providers write it: digits only, the country code
/// first with no `+`.
pub(crate) fn wallet_number(number: &str) -> String {
    number.chars().filter(char::is_ascii_digit).collect()
}

fn major(currency: &str, minor: i128) -> ApiResult<Decimal> {
    Currency::find(currency).and_then(|c| c.to_decimal(minor)).map_err(|e| ApiError::internal_from(e))
}

/// A string from the movement's metadata (the caller's JSON object).
fn metadata(text: &str, key: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text).ok()?;
    value[key].as_str().map(str::to_string).filter(|s| !s.trim().is_empty())
}

pub(crate) fn payout_movement(payout: &PayoutRecord) -> ApiResult<Option<Movement>> {
    if payout.status != MovementStatus::Pending || Rail::from_name(&payout.rail) != Some(Rail::Flutterwave) {
        return Ok(None);
    }
    let account_number = wallet_number(payout.to.account_number.as_deref().unwrap_or_default());
    Ok(Some(Movement {
        kind: Kind::Payout,
        id: payout.id.clone(),
        code: payout.to.code.clone(),
        currency: payout.to_currency.clone(),
        amount: major(&payout.to_currency, payout.to_amount)?,
        bank_code: payout.to.bank_code.clone(),
        name: metadata(&payout.metadata, "beneficiaryName").unwrap_or_else(|| account_number.clone()),
        account_number,
        narration: if payout.narration.is_empty() {
            format!("Payout {}", payout.id)
        } else {
            payout.narration.clone()
        },
        email: String::new(),
    }))
}

pub(crate) fn collection_movement(collection: &CollectionRecord) -> ApiResult<Option<Movement>> {
    if collection.status != MovementStatus::Pending
        || Rail::from_name(&collection.rail) != Some(Rail::Flutterwave)
    {
        return Ok(None);
    }
    Ok(Some(Movement {
        kind: Kind::Collection,
        id: collection.id.clone(),
        code: collection.code.clone(),
        currency: collection.currency.clone(),
        amount: major(&collection.currency, collection.amount)?,
        account_number: wallet_number(&collection.account_number),
        bank_code: None,
        name: metadata(&collection.metadata, "payerName")
            .unwrap_or_else(|| collection.account_number.clone()),
        narration: format!("Collection {}", collection.id),
        email: metadata(&collection.metadata, "email")
            .unwrap_or_else(|| format!("{}@payers.invalid", collection.id)),
    }))
}

/// Every movement waiting on a provider, from the ledger's index of open
/// movements (at start, and now and then for those created where no
/// handler woke the reconciler, such as an order's payout): the engine
/// keeps it in the commands that create and settle each movement (refunds
/// included), so no payout, collection or refund is decoded here.
pub(crate) fn open_movements(ledger: &sika_engine::Engine) -> ApiResult<Vec<(Kind, String)>> {
    let open = ledger.read()?.open_movements(Rail::Flutterwave.name())?;
    Ok(open.into_iter().map(|movement| (kind_of(movement.kind), movement.id)).collect())
}

/// The reconciler's kind of a movement the ledger indexes.
pub(crate) fn kind_of(kind: sika_engine::MovementKind) -> Kind {
    match kind {
        sika_engine::MovementKind::Payout => Kind::Payout,
        sika_engine::MovementKind::Collection => Kind::Collection,
        sika_engine::MovementKind::Refund => Kind::Refund,
    }
}
