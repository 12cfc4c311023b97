//! The admin API as the console sees it: the [`Client`] trait that fetches
//! it, and the console's own view of what comes back. [`crate::HttpClient`]
//! speaks HTTP; tests implement the trait with fixed data.
//!
//! The wire shapes are sika-api's, the types the server serializes and
//! `GET /admin/v1/openapi.json` is generated from, so a field the server
//! renames or drops fails to compile here instead of showing blank; those
//! the trait answers with are re-exported for its users. What remains
//! hand-written is the console's own: which movement a row is
//! ([`Movement`], [`Settled`]), what the operator decides ([`Settlement`])
//! and what the Activity tab asks for ([`MovementQuery`]).

pub use sika_api::admin::{SearchHit, SearchKind, SearchResults};
use std::fmt;

use serde::Serialize;
use serde_json::Value;

pub use sika_api::ListPage;
pub use sika_api::TimelineEntry;
pub use sika_api::accounts::Account;
pub use sika_api::admin::{
    Attention, AuditEntry, AuditOutcome, CreatedOrganization, CurrencyTotal, EmailItem, EmailStatus,
    EndpointAttempt, EndpointHealth, EntrySide, FailedRequest, LedgerAccount, LedgerEntries, LedgerEntry,
    LedgerEntryKind, NodeStatus, Organization, OrganizationStatus, Owned, RateFeedStatus, RateSourceName,
    ReissuedInvitation, RequestLookup, StackAccounts, StackName, StackRate, StackRates, StackStatus,
    SystemAccount, SystemAccountKind, VerifyResult,
};
pub use sika_api::collections::Collection;
use sika_api::collections::CollectionStatus;
pub use sika_api::disputes::{Dispute, DisputeAttachment, DisputeMessage, DisputeOutcome, DisputeStatus};
pub use sika_api::keys::ApiKey;
pub use sika_api::members::{Invitation, Member, MemberStatus, Role};
pub use sika_api::orders::Order;
pub use sika_api::payouts::Payout;
use sika_api::payouts::PayoutStatus;
pub use sika_api::reconciliation::{
    Mismatch, ReconciledField, ReconciledKind, Reconciliation, ReconciliationItem,
};
pub use sika_api::refunds::Refund;
use sika_api::refunds::RefundStatus;
pub use sika_api::webhooks::{WebhookDelivery, WebhookEndpoint};

/// The stack that is not `stack`: what `s` switches to.
pub fn other_stack(stack: StackName) -> StackName {
    match stack {
        StackName::Live => StackName::Sandbox,
        StackName::Sandbox => StackName::Live,
    }
}

/// A dispute's messages, oldest first; none when the answer left the
/// thread out.
pub fn thread(dispute: &Dispute) -> &[DisputeMessage] {
    dispute.messages.as_deref().unwrap_or_default()
}

/// A status, reason or other enum as the wire writes it (`pending`,
/// `awaiting_funds`, `consecutive_failures`), which is also what the console
/// shows: taken from its serde name, so it cannot drift from the API's.
pub fn wire_name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => name,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// Which kind of money movement a row of the Activity tab is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MovementKind {
    Payout,
    Collection,
    Order,
    /// Money given back to the payer of a collection.
    Refund,
}

impl MovementKind {
    pub const ALL: [MovementKind; 4] =
        [MovementKind::Payout, MovementKind::Collection, MovementKind::Order, MovementKind::Refund];

    /// The path segment of its admin API collection.
    pub fn plural(self) -> &'static str {
        match self {
            MovementKind::Payout => "payouts",
            MovementKind::Collection => "collections",
            MovementKind::Order => "orders",
            MovementKind::Refund => "refunds",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            MovementKind::Payout => "payout",
            MovementKind::Collection => "collection",
            MovementKind::Order => "order",
            MovementKind::Refund => "refund",
        }
    }

    /// Payouts, collections and refunds settle by hand; orders do not.
    pub fn settles_manually(self) -> bool {
        matches!(self, MovementKind::Payout | MovementKind::Collection | MovementKind::Refund)
    }
}

/// The operator's manual-settlement decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Settlement {
    Complete,
    Fail,
}

impl Settlement {
    pub fn as_str(self) -> &'static str {
        match self {
            Settlement::Complete => "complete",
            Settlement::Fail => "fail",
        }
    }
}

/// What the operator records with a settlement: the provider's reference
/// for the money that moved and a note, each kept on the timeline and in
/// the audit log. Empty means not given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SettlementRecord {
    pub provider_reference: Option<String>,
    pub note: Option<String>,
}

/// What a call to the admin API returns: its data, or why there is none.
pub type ClientResult<T> = Result<T, ClientError>;

/// Why a call to the admin API did not return data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientError {
    /// No HTTP answer at all: refused, timed out, DNS, TLS.
    Unreachable(String),
    /// 401: the operator token is missing or wrong.
    Unauthorized(String),
    /// Any other error answer, with the API's error object.
    Api { status: u16, code: String, message: String },
    /// An answer that is not the JSON the console expects.
    Decode(String),
}

impl ClientError {
    /// Errors that say the node as a whole cannot be used right now.
    pub fn is_connection(&self) -> bool {
        matches!(self, ClientError::Unreachable(_) | ClientError::Unauthorized(_))
    }
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Unreachable(cause) => write!(f, "cannot reach the admin API: {cause}"),
            ClientError::Unauthorized(message) => write!(f, "401 unauthorized: {message}"),
            ClientError::Api { status, code, message } => write!(f, "{status} {code}: {message}"),
            ClientError::Decode(cause) => write!(f, "unexpected answer: {cause}"),
        }
    }
}

impl std::error::Error for ClientError {}

/// The admin API's operations the console uses. Implementations block; the
/// console calls them only from its fetch thread.
pub trait Client: Send + Sync {
    fn status(&self) -> ClientResult<NodeStatus>;
    fn accounts(&self, stack: StackName) -> ClientResult<StackAccounts>;
    /// The stack's rates per USD, each with its source and age, and how
    /// polling the feed goes.
    fn rates(&self, stack: StackName) -> ClientResult<StackRates>;
    fn verify(&self, stack: StackName) -> ClientResult<VerifyResult>;
    /// The first page of payouts, collections or orders; `query` is any
    /// part of any field (as the node-wide search matches), `status` a
    /// movement status.
    fn movements(&self, stack: StackName, query: &MovementQuery) -> ClientResult<Vec<Movement>>;
    fn movement(&self, stack: StackName, kind: MovementKind, id: &str) -> ClientResult<Movement>;
    /// Completes or fails a pending payout, collection or refund (orders
    /// do not settle by hand), with what the operator records about it.
    fn settle(
        &self,
        stack: StackName,
        kind: MovementKind,
        id: &str,
        settlement: Settlement,
        record: &SettlementRecord,
    ) -> ClientResult<Settled>;
    /// The stack's disputes, each with its thread.
    fn disputes(&self, stack: StackName) -> ClientResult<Vec<Owned<Dispute>>>;
    fn dispute(&self, stack: StackName, id: &str) -> ClientResult<Owned<Dispute>>;
    fn webhook_endpoints(&self, stack: StackName) -> ClientResult<Vec<EndpointHealth>>;
    fn endpoint_attempts(&self, stack: StackName, endpoint_id: &str) -> ClientResult<Vec<EndpointAttempt>>;
    /// The stack's recent deliveries in `status` (`pending`, `succeeded` or
    /// `failed`).
    fn deliveries(&self, stack: StackName, status: &str) -> ClientResult<Vec<Owned<WebhookDelivery>>>;
    fn retry_delivery(&self, stack: StackName, delivery_id: &str) -> ClientResult<WebhookDelivery>;
    fn enable_endpoint(&self, stack: StackName, endpoint_id: &str) -> ClientResult<WebhookEndpoint>;
    fn request(&self, request_id: &str) -> ClientResult<RequestLookup>;
    /// Every organization on the node.
    fn organizations(&self) -> ClientResult<Vec<Organization>>;
    /// Creates an organization and invites its first owner.
    fn create_organization(&self, new: &NewOrganization) -> ClientResult<CreatedOrganization>;
    fn rename_organization(&self, id: &str, name: &str) -> ClientResult<Organization>;
    /// Suspends (`true`) or reinstates (`false`) an organization.
    fn set_suspended(&self, id: &str, suspended: bool) -> ClientResult<Organization>;
    fn members(&self, organization_id: &str) -> ClientResult<Vec<Member>>;
    /// A fresh invitation for a member; earlier ones stop working.
    fn reissue_invitation(&self, organization_id: &str, member_id: &str) -> ClientResult<ReissuedInvitation>;
    /// One page of the operator's audit log, newest first.
    fn audit(&self, cursor: Option<&str>, limit: usize) -> ClientResult<ListPage<AuditEntry>>;
    /// The newest emails of the node's outbox, with their status.
    fn emails(&self, limit: usize) -> ClientResult<ListPage<EmailItem>>;
    /// Payouts, collections, orders, payment pages and links on both
    /// stacks holding `query` anywhere in an id, reference, phone number,
    /// email or amount.
    fn search(&self, query: &str) -> ClientResult<SearchResults>;
    /// The live stack's movements on the provider's rail against what the
    /// provider reports, `from` to `to` (RFC 3339 date-times).
    fn reconciliation(&self, from: &str, to: &str) -> ClientResult<Reconciliation>;
    /// Accepts or declines an open dispute.
    fn resolve_dispute(
        &self,
        stack: StackName,
        id: &str,
        outcome: DisputeOutcome,
    ) -> ClientResult<Owned<Dispute>>;
    /// The node's own accounts on a stack.
    fn system_accounts(&self, stack: StackName) -> ClientResult<Vec<SystemAccount>>;
    /// The requests a stack recently answered with an error, newest first.
    fn failed_requests(&self, stack: StackName) -> ClientResult<Vec<FailedRequest>>;
    /// An organization's API keys on a stack, revoked ones included.
    fn keys(&self, stack: StackName, organization_id: &str) -> ClientResult<Vec<ApiKey>>;
    /// Revokes an organization's API key: it stops working at once.
    fn revoke_key(&self, stack: StackName, organization_id: &str, key_id: &str) -> ClientResult<ApiKey>;
    /// A page of an account's journal entries, newest first.
    fn ledger_entries(
        &self,
        stack: StackName,
        id: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> ClientResult<LedgerEntries>;
}

/// What the operator typed to create an organization.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NewOrganization {
    pub name: String,
    pub owner_email: String,
    pub owner_name: String,
}

/// What the Activity tab asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MovementQuery {
    pub kind: MovementKind,
    pub q: Option<String>,
    pub status: Option<String>,
    pub limit: usize,
}

/// A row of the Activity tab: one of the four kinds of money movement,
/// each as the admin API shows it (the public view and its organization).
#[derive(Debug, Clone, PartialEq)]
pub enum Movement {
    Payout(Owned<Payout>),
    Collection(Owned<Collection>),
    Order(Owned<Order>),
    Refund(Owned<Refund>),
}

impl Movement {
    pub fn kind(&self) -> MovementKind {
        match self {
            Movement::Payout(_) => MovementKind::Payout,
            Movement::Collection(_) => MovementKind::Collection,
            Movement::Order(_) => MovementKind::Order,
            Movement::Refund(_) => MovementKind::Refund,
        }
    }

    pub fn id(&self) -> &str {
        match self {
            Movement::Payout(p) => &p.item.id,
            Movement::Collection(c) => &c.item.id,
            Movement::Order(o) => &o.item.id,
            Movement::Refund(r) => &r.item.id,
        }
    }

    /// The status as the wire writes it, e.g. `pending` or `awaiting_funds`.
    pub fn status(&self) -> String {
        match self {
            Movement::Payout(p) => wire_name(&p.item.status),
            Movement::Collection(c) => wire_name(&c.item.status),
            Movement::Order(o) => wire_name(&o.item.status),
            Movement::Refund(r) => wire_name(&r.item.status),
        }
    }

    pub fn created_at(&self) -> &str {
        match self {
            Movement::Payout(p) => &p.item.created_at,
            Movement::Collection(c) => &c.item.created_at,
            Movement::Order(o) => &o.item.created_at,
            Movement::Refund(r) => &r.item.created_at,
        }
    }

    pub fn organization_id(&self) -> &str {
        match self {
            Movement::Payout(p) => &p.organization_id,
            Movement::Collection(c) => &c.organization_id,
            Movement::Order(o) => &o.organization_id,
            Movement::Refund(r) => &r.organization_id,
        }
    }

    pub fn external_reference(&self) -> &str {
        match self {
            Movement::Payout(p) => &p.item.external_reference,
            Movement::Collection(c) => &c.item.external_reference,
            Movement::Order(o) => &o.item.external_reference,
            Movement::Refund(r) => &r.item.external_reference,
        }
    }

    pub fn status_message(&self) -> &str {
        match self {
            Movement::Payout(p) => &p.item.status_message,
            Movement::Collection(c) => &c.item.status_message,
            Movement::Order(o) => &o.item.status_message,
            Movement::Refund(r) => &r.item.status_message,
        }
    }

    /// The amount and currency that best describe it in one column.
    pub fn amount(&self) -> (&str, &str) {
        match self {
            Movement::Payout(p) => (&p.item.from.amount, &p.item.from.currency),
            Movement::Collection(c) => (&c.item.amount, &c.item.currency),
            Movement::Order(o) => (&o.item.from.amount, &o.item.from.currency),
            Movement::Refund(r) => (&r.item.amount, &r.item.currency),
        }
    }

    pub fn timeline(&self) -> &[TimelineEntry] {
        match self {
            Movement::Payout(p) => &p.item.timeline,
            Movement::Collection(c) => &c.item.timeline,
            Movement::Order(o) => &o.item.timeline,
            Movement::Refund(r) => &r.item.timeline,
        }
    }

    /// Whether the operator may still complete or fail it by hand.
    pub fn awaits_settlement(&self) -> bool {
        match self {
            Movement::Payout(p) => p.item.status == PayoutStatus::Pending,
            Movement::Collection(c) => c.item.status == CollectionStatus::Pending,
            Movement::Refund(r) => r.item.status == RefundStatus::Pending,
            Movement::Order(_) => false,
        }
    }

    /// Takes in a settlement's answer for this movement. The answer is the
    /// public view, without the organization, so this one's is kept. False
    /// when `settled` is another movement.
    pub fn apply(&mut self, settled: Settled) -> bool {
        match (self, settled) {
            (Movement::Payout(p), Settled::Payout(new)) if p.item.id == new.id => p.item = new,
            (Movement::Collection(c), Settled::Collection(new)) if c.item.id == new.id => c.item = new,
            (Movement::Refund(r), Settled::Refund(new)) if r.item.id == new.id => r.item = new,
            _ => return false,
        }
        true
    }
}

/// What settling a payout, collection or refund answers: its public view,
/// as the public API shows it (no `organizationId`).
// One answer at a time, taken in at once: its size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    Payout(Payout),
    Collection(Collection),
    Refund(Refund),
}

impl Settled {
    pub fn id(&self) -> &str {
        match self {
            Settled::Payout(p) => &p.id,
            Settled::Collection(c) => &c.id,
            Settled::Refund(r) => &r.id,
        }
    }

    /// The status as the wire writes it.
    pub fn status(&self) -> String {
        match self {
            Settled::Payout(p) => wire_name(&p.status),
            Settled::Collection(c) => wire_name(&c.status),
            Settled::Refund(r) => wire_name(&r.status),
        }
    }
}
