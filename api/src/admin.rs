//! The operator's admin API (`/admin/v1`, on its own listener, behind the
//! operator token): the node's status, organizations, every organization's
//! balances and movements on a stack, the ledger's audit, and webhook health.
//!
//! Resources the public API also serves keep its view and add the
//! organization they belong to ([`Owned`]), so the console reads one shape.

use std::collections::BTreeMap;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use utoipa::openapi::RefOr;
use utoipa::openapi::path::{Parameter, ParameterIn};
use utoipa::openapi::response::Response;
use utoipa::{IntoParams, IntoResponses, ToSchema};

use crate::accounts::Account;
use crate::collections::Collection;
use crate::common::path_parameter;
use crate::disputes::Dispute;
use crate::error::refusal;
use crate::orders::Order;
use crate::payouts::Payout;
use crate::requests::LoggedRequest;
use crate::webhooks::WebhookEndpoint;
use crate::{AmountInput, Resource, With};

/// One of the node's two stacks, each with its own ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum StackName {
    Live,
    Sandbox,
}

impl StackName {
    /// The name as it is written in paths and on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            StackName::Live => "live",
            StackName::Sandbox => "sandbox",
        }
    }
}

/// The stack an admin path names (`/admin/v1/{stack}/…`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct StackPath {
    /// `live` or `sandbox`
    pub stack: StackName,
}

/// The `{stack}` and `{id}` of an operation on one `T` of a stack
/// (`/admin/v1/{stack}/payouts/{id}`): "The payout's id".
pub struct StackId<T>(PhantomData<T>);

impl<T: Resource> IntoParams for StackId<T> {
    fn into_params(parameter_in: impl Fn() -> Option<ParameterIn>) -> Vec<Parameter> {
        let mut params = StackPath::into_params(parameter_in);
        params.push(path_parameter("id", format!("The {}'s id", T::NAME)));
        params
    }
}

/// The organization an admin path names (`/admin/v1/organizations/{id}`).
#[derive(Debug, Clone, Deserialize, Serialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct OrganizationPath {
    /// The organization's id
    pub id: String,
}

/// A public view with the organization it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Owned<T> {
    pub organization_id: String,
    #[serde(flatten)]
    pub item: T,
}

/// `GET /admin/v1/status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// The binary's version.
    pub version: String,
    pub uptime_seconds: u64,
    pub live: StackStatus,
    pub sandbox: StackStatus,
}

impl NodeStatus {
    /// The figures of one stack.
    pub fn stack(&self, stack: StackName) -> &StackStatus {
        match stack {
            StackName::Live => &self.live,
            StackName::Sandbox => &self.sandbox,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NodeStatusEnvelope {
    pub status: NodeStatus,
}

/// A stack's ledger writer since the node started.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StackStatus {
    /// Entries in the ledger's journal.
    pub journal_length: u64,
    /// Group commits (one fsync each).
    pub commits: u64,
    pub commands: u64,
    pub commands_failed: u64,
    pub transfers: u64,
    /// Commands waiting for the writer now.
    pub writer_queue_depth: u64,
    /// The size of the stack's database file.
    pub database_bytes: u64,
    /// What waits for the operator on this stack.
    pub attention: Attention,
}

/// What waits for the operator on one stack, counted at `countedAt` (the
/// node counts at most every 10 seconds).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attention {
    /// Payouts and collections on the manual-settlement rail (live, with
    /// no provider connector) still pending: the operator completes or
    /// fails each.
    pub awaiting_settlement: u64,
    /// When the oldest of them was created; null when none waits.
    pub oldest_awaiting_since: Option<String>,
    /// Its age in seconds now; null when none waits.
    pub oldest_awaiting_age_seconds: Option<u64>,
    /// Disputes still open.
    pub open_disputes: u64,
    /// Webhook endpoints whose latest attempt failed, or that failures
    /// disabled.
    pub failing_endpoints: u64,
    /// Requests answered with an error that the node still remembers
    /// (`GET /admin/v1/{stack}/requests/failed` lists them).
    pub recent_failed_requests: u64,
    pub counted_at: Option<String>,
}

/// A request the stack answered with an error, as the node remembers it
/// (in memory, the newest 200 per stack, since the node started).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedRequest {
    /// The request's id (`requestId` of its answer); its bodies are at
    /// `GET /admin/v1/requests/{id}` when the caller was authenticated.
    pub id: String,
    pub method: String,
    /// The matched route template (`/v1/payouts/{id}`), or `unmatched`.
    pub route: String,
    pub status: u16,
    /// The error object's `error` code, when the answer had one.
    pub error: Option<String>,
    /// The organization, when the caller was authenticated.
    pub organization_id: Option<String>,
    /// The caller's address, when known.
    pub client_address: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrganizationStatus {
    Active,
    /// Its API keys are refused until the operator reinstates it.
    Suspended,
}

/// A merchant organization on this node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Organization {
    pub id: String,
    pub name: String,
    pub status: OrganizationStatus,
    pub created_at: String,
    /// Its balance accounts on each stack (`GET` of one organization only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balances: Option<Balances>,
}

/// An organization's balance accounts, per stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Balances {
    pub live: Vec<Account>,
    pub sandbox: Vec<Account>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrganizationEnvelope {
    pub organization: Organization,
}

/// `GET /admin/v1/{stack}/accounts`: every organization's accounts, the
/// totals per currency and the ledger's own figures. Not paginated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StackAccounts {
    pub data: Vec<Owned<Account>>,
    /// Always false: every account is in `data`.
    pub has_more: bool,
    pub next_cursor: Option<String>,
    pub totals: Vec<CurrencyTotal>,
    pub ledger: LedgerFigures,
}

/// The sum of every organization's balances in one currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrencyTotal {
    pub currency: String,
    /// Decimal strings with the currency's fraction digits.
    pub available_balance: String,
    pub pending_balance: String,
    pub total_balance: String,
    /// How many accounts hold this currency.
    pub accounts: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerFigures {
    pub journal_length: u64,
    /// The last audit run since the node started, if any.
    pub last_verify: Option<VerifyResult>,
}

/// An audit of a stack's ledger (`POST /admin/v1/{stack}/verify`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VerifyResult {
    pub at: String,
    /// Every balance equals its journal and every transfer balances.
    pub consistent: bool,
    pub summary: String,
    /// What is wrong, one line each; empty when consistent.
    pub problems: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VerifyEnvelope {
    pub verify: VerifyResult,
}

/// Query of the admin's searches across organizations.
#[derive(Debug, Clone, Default, Deserialize, Serialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ActivityQuery {
    /// Items per page, 1 to 100 (default 20).
    pub limit: Option<String>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
    /// Any part of any field (an id, a reference, a phone number, an email,
    /// an amount), in any case, as `GET /admin/v1/search` matches.
    pub q: Option<String>,
    /// Only items in this status.
    pub status: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OwnedPayoutEnvelope {
    pub payout: Owned<Payout>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OwnedCollectionEnvelope {
    pub collection: Owned<Collection>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OwnedRefundEnvelope {
    pub refund: Owned<crate::refunds::Refund>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OwnedDisputeEnvelope {
    pub dispute: Owned<Dispute>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OwnedOrderEnvelope {
    pub order: Owned<Order>,
}

/// The operator's settlement of a payout or collection on the manual rail.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"providerReference": "MTN-7781234", "note": "Paid from the merchant wallet"})))]
pub struct Settlement {
    /// Shown as the movement's `statusMessage`; a default names the operator.
    #[schema(max_length = 500)]
    pub message: Option<String>,
    /// The provider's own reference for the money that moved (up to 200
    /// characters); kept in the timeline and the audit log.
    pub provider_reference: Option<String>,
    /// The operator's note (up to 500 characters); kept in the timeline and
    /// the audit log.
    pub note: Option<String>,
}

/// `POST /admin/v1/organizations`: the organization and its first owner.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"name": "Ama's Shop", "owner": {"email": "ama@shop.example", "name": "Ama Mensah"}})))]
pub struct CreateOrganization {
    /// 1 to 100 characters.
    pub name: String,
    pub owner: NewOwner,
}

/// The first owner of a new organization; they set a password with the
/// invitation.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOwner {
    pub email: String,
    /// 1 to 100 characters.
    pub name: String,
}

/// `PATCH /admin/v1/organizations/{id}`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"name": "Ama's Shop Ltd"})))]
pub struct RenameOrganization {
    /// 1 to 100 characters.
    pub name: String,
}

/// A new organization and its owner's invitation (shown once).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CreatedOrganization {
    pub organization: Organization,
    pub invitation: crate::members::Invitation,
}

/// A fresh invitation for a member (account recovery); earlier ones stop
/// working.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ReissuedInvitation {
    pub member: crate::members::Member,
    pub invitation: crate::members::Invitation,
}

/// Whether an operator action did what it was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    Succeeded,
    Failed,
}

/// One operator action, as the audit log keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    #[schema(pattern = "^aud_")]
    pub id: String,
    /// What was done, such as `payout.complete`, `organization.suspend`,
    /// `key.revoke`, `rates.replace`.
    pub action: String,
    /// The id of what it was done to.
    pub target: String,
    /// The stack it touched; null for node-wide actions.
    pub stack: Option<StackName>,
    pub outcome: AuditOutcome,
    /// Why it failed, or what the operator added (a provider reference, a note).
    pub detail: Option<String>,
    pub created_at: String,
}

/// The operator records the funds that arrived for an order (the manual rail).
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"amount": "200.00", "confirmations": 12})))]
pub struct OrderFunds {
    pub amount: AmountInput,
    /// Confirmations seen; defaults to the order's `requiredConfirmations`.
    pub confirmations: Option<u32>,
}

/// A webhook endpoint with its recent delivery health.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointHealth {
    pub organization_id: String,
    #[serde(flatten)]
    pub endpoint: WebhookEndpoint,
    /// Share of recent attempts that succeeded, 0 to 1; null before any.
    pub success_rate: Option<f64>,
    pub average_latency_ms: Option<f64>,
    pub pending_deliveries: u64,
    pub failed_deliveries: u64,
    pub last_attempt_at: Option<String>,
    /// What went wrong on the newest failed attempt among the recent
    /// deliveries (`the receiver answered 500`, a connection error); null
    /// when none failed.
    pub last_error: Option<String>,
    pub last_error_at: Option<String>,
}

/// One delivery attempt to an endpoint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointAttempt {
    pub delivery_id: String,
    pub event: String,
    pub at: String,
    pub status_code: Option<u16>,
    pub duration_ms: u64,
    pub error: Option<String>,
    pub succeeded: bool,
}

/// Query of `GET /admin/v1/{stack}/webhooks/deliveries`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryStatusQuery {
    /// `pending`, `succeeded` or `failed`.
    pub status: Option<String>,
}

/// A logged request found on either stack.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestLookup {
    pub request: LoggedRequest,
    pub stack: StackName,
    pub organization_id: String,
}

/// The refusal every admin operation can answer, documented once.
#[derive(utoipa::IntoResponses)]
pub enum AdminRefusals {
    /// No operator token, or not this node's (`unauthorized`)
    #[response(status = 401)]
    Unauthorized(crate::ErrorBody),
}

/// Where a rate in effect comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RateSourceName {
    /// `[rates.usd]` in the configuration file.
    Config,
    /// `PUT /admin/v1/{stack}/rates`, kept durably.
    Admin,
    /// The polled `[rates.feed]`.
    Feed,
    /// The sandbox's reference table (only when no rate is configured).
    Builtin,
}

/// One currency's rate on a stack: units per one US dollar.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StackRate {
    /// The mid rate in effect; `null` when the currency has none now (the
    /// feed that had it is older than its `maxAge`).
    pub rate: Option<String>,
    pub source: Option<RateSourceName>,
    /// When the rate was set or published.
    pub as_of: Option<String>,
    /// Seconds since `asOf`.
    pub age_seconds: Option<i64>,
}

/// The rate feed and how polling it goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RateFeedStatus {
    pub url: String,
    pub interval_seconds: u64,
    pub max_age_seconds: u64,
    /// The last good document's `asOf`.
    pub as_of: Option<String>,
    pub age_seconds: Option<i64>,
    /// Whether its rates are older than `maxAge` (and so refused).
    pub stale: bool,
    pub last_attempt_at: Option<String>,
    pub last_success_at: Option<String>,
    pub last_error: Option<String>,
}

/// A stack's rates: every currency with its source and age.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StackRates {
    pub stack: StackName,
    /// Always `USD`.
    pub base: String,
    pub spread_bps: u32,
    pub rates: std::collections::BTreeMap<String, StackRate>,
    pub feed: Option<RateFeedStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StackRatesEnvelope {
    pub rates: StackRates,
}

/// A new manual table, replacing the current one durably.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(examples(json!({"base": "USD", "rates": {"GHS": "15.60", "NGN": "1550"}})))]
pub struct ReplaceRates {
    /// Must be `USD`.
    #[schema(max_length = 10)]
    pub base: String,
    /// Units of each currency per one US dollar, as decimal strings or numbers.
    pub rates: std::collections::BTreeMap<String, AmountInput>,
}

/// The 404 of an operation on one stack that names nothing else.
#[derive(utoipa::IntoResponses)]
pub enum UnknownStack {
    /// Unknown stack (`not_found`)
    #[response(status = 404)]
    NotFound(crate::ErrorBody),
}

/// The refusals of an operation on one stack whose only 404 is an unknown
/// `{stack}`.
pub type StackRefusals = With<UnknownStack, AdminRefusals>;

/// The 404 of an operation on one `T` of a stack: "Unknown stack or payout".
pub struct UnknownStackOr<T>(PhantomData<T>);

impl<T: Resource> IntoResponses for UnknownStackOr<T> {
    fn responses() -> BTreeMap<String, RefOr<Response>> {
        refusal("404", format!("Unknown stack or {}", T::NAME))
    }
}

/// The refusals of an operation on one `T` of a stack whose only 404 is
/// an unknown `{stack}` or `{id}`.
pub type StackItemRefusals<T> = With<UnknownStackOr<T>, AdminRefusals>;

/// The 404 of an operation on one organization.
#[derive(utoipa::IntoResponses)]
pub enum NoSuchOrganization {
    /// No such organization
    #[response(status = 404)]
    NotFound(crate::ErrorBody),
}

/// The refusals of an operation on one organization whose only 404 is an
/// unknown `{id}`.
pub type OrganizationRefusals = With<NoSuchOrganization, AdminRefusals>;

/// The 400 of a search across a stack's organizations.
#[derive(utoipa::IntoResponses)]
pub enum BadSearch {
    /// A bad `limit` or `cursor`, or a query parameter the operation does
    /// not take (`validation_error` naming it)
    #[response(status = 400)]
    BadRequest(crate::ErrorBody),
}

/// The refusals of a search across a stack's organizations.
pub type SearchRefusals = With<BadSearch, StackRefusals>;

/// Which of the node's own books a system account is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SystemAccountKind {
    /// Fees the node earned.
    FeeRevenue,
    /// The other side of every conversion: the spread the node keeps.
    FxDesk,
    /// Money sent to a rail and not yet confirmed as moved.
    RailClearing,
    /// The outside world: deposits come from it, completed payouts go to it.
    World,
}

/// One of the node's own accounts on a stack, in one currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemAccount {
    /// `sys_{kind}_{currency}`.
    pub id: String,
    pub kind: SystemAccountKind,
    pub currency: String,
    /// Credits less debits, settled only; decimal with the currency's
    /// fraction digits (the world's is negative: what came in from it).
    pub balance: String,
    pub debits_posted: String,
    pub credits_posted: String,
    /// Holds not yet settled or released.
    pub debits_pending: String,
    pub credits_pending: String,
    pub created_at: String,
}

/// How a ledger entry moved money.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LedgerEntryKind {
    /// Settled at once.
    Posted,
    /// A hold, settled or released later.
    Pending,
    /// Settles an earlier hold.
    PostPending,
    /// Releases an earlier hold.
    VoidPending,
}

/// Which side of the entry the account is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EntrySide {
    Debit,
    Credit,
}

/// One journal entry that debits or credits an account.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntry {
    /// The entry's number in the stack's journal.
    pub seq: u64,
    pub transfer_id: u64,
    pub kind: LedgerEntryKind,
    /// The account's side.
    pub side: EntrySide,
    /// The account on the other side.
    pub counterparty: String,
    pub amount: String,
    pub currency: String,
    /// What it was for, e.g. `payout pay_…`.
    pub memo: String,
    pub created_at: String,
}

/// `GET /admin/v1/{stack}/ledger/accounts/{id}/entries`: a page of an
/// account's entries, newest first. The journal has no index by account,
/// so a page stops after a bounded number of journal entries read even if
/// it found fewer than `limit`; `hasMore` and `nextCursor` continue it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEntries {
    pub account: LedgerAccount,
    pub data: Vec<LedgerEntry>,
    pub has_more: bool,
    pub next_cursor: Option<String>,
    /// Journal entries read for this page.
    pub scanned: u64,
    /// The page stopped at the bound on entries read, not at `limit`.
    pub scan_limit_reached: bool,
}

/// The account whose entries a page lists: its id and currency, and its
/// kind when it is one of the node's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerAccount {
    pub id: String,
    pub currency: String,
    pub kind: Option<SystemAccountKind>,
}

/// Query of `GET /admin/v1/search`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Any part of an id, reference, phone number, email or amount: 2 to
    /// 128 characters, matched without regard to case.
    #[param(min_length = 2, max_length = 128)]
    pub q: Option<String>,
    /// `live` or `sandbox`; both when left out.
    pub stack: Option<String>,
}

/// What kind of record a search hit is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SearchKind {
    Payout,
    Collection,
    Order,
    PaymentPage,
    PaymentLink,
}

/// One record that matched, and where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchHit {
    pub kind: SearchKind,
    pub id: String,
    pub stack: StackName,
    pub organization_id: String,
    /// The first field that holds the text, as a path (`to.accountNumber`,
    /// `externalReference`, `email`).
    pub field: String,
    /// That field's value.
    pub value: String,
    pub created_at: String,
}

/// `GET /admin/v1/search`: matches in payouts, collections, orders, payment
/// pages and payment links, each kind newest first. The search reads a
/// bounded number of records and stops there, saying so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchResults {
    pub q: String,
    pub data: Vec<SearchHit>,
    /// Records read.
    pub scanned: u64,
    /// It stopped at the bound on records read: older records were not
    /// searched.
    pub scan_limit_reached: bool,
    /// It stopped at the bound on hits: `data` is not every match.
    pub hits_limit_reached: bool,
}

/// Where an email of the outbox stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmailStatus {
    /// Waiting for its first attempt.
    Queued,
    /// The SMTP server accepted it.
    Sent,
    /// The server refused it or could not be reached; it is tried again
    /// at `nextAttemptAt`.
    Retrying,
    /// Refused on every attempt; not tried again.
    Failed,
    /// Over its organization's hourly bound (`[email] max_per_org_per_hour`):
    /// recorded, never sent.
    Suppressed,
}

/// One email of the node's outbox. Its body is not shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailItem {
    #[schema(pattern = "^eml_")]
    pub id: String,
    /// The `Message-ID` header, the same on every attempt.
    pub message_id: String,
    /// `invitation`, `password_reset`, `receipt`, `payout_failed`,
    /// `payout_reversed`, `dispute_opened`, `webhook_endpoint_disabled` or
    /// `operator_alert`.
    pub kind: String,
    /// The organization it was sent for; null for the operator's alerts.
    pub organization_id: Option<String>,
    pub to: String,
    pub subject: String,
    pub status: EmailStatus,
    /// Attempts made so far.
    pub attempts: u32,
    /// The server's answer to the last refused attempt.
    pub last_error: Option<String>,
    pub next_attempt_at: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
}

/// The filters of `GET /admin/v1/emails` besides paging.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct EmailFilter {
    /// `queued`, `sent`, `retrying`, `failed` or `suppressed`.
    pub status: Option<String>,
    /// The email's kind, such as `invitation` or `receipt`.
    pub kind: Option<String>,
    pub organization_id: Option<String>,
}
