//! The admin API as the console sees it: the wire shapes it reads and the
//! [`Client`] trait that fetches them. [`crate::HttpClient`] speaks HTTP;
//! tests implement the trait with fixed data.
//!
//! Every shape defaults missing fields, so a node that is a version behind or
//! ahead still renders; a missing figure shows as empty, never as a crash.

use std::fmt;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// One of the node's two stacks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StackName {
    #[default]
    Live,
    Sandbox,
}

impl StackName {
    pub fn as_str(self) -> &'static str {
        match self {
            StackName::Live => "live",
            StackName::Sandbox => "sandbox",
        }
    }

    pub fn other(self) -> StackName {
        match self {
            StackName::Live => StackName::Sandbox,
            StackName::Sandbox => StackName::Live,
        }
    }
}

/// Which kind of money movement a row of the Activity tab is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MovementKind {
    Payout,
    Collection,
    Order,
}

impl MovementKind {
    pub const ALL: [MovementKind; 3] = [MovementKind::Payout, MovementKind::Collection, MovementKind::Order];

    /// The path segment of its admin API collection.
    pub fn plural(self) -> &'static str {
        match self {
            MovementKind::Payout => "payouts",
            MovementKind::Collection => "collections",
            MovementKind::Order => "orders",
        }
    }

    pub fn singular(self) -> &'static str {
        match self {
            MovementKind::Payout => "payout",
            MovementKind::Collection => "collection",
            MovementKind::Order => "order",
        }
    }

    /// Only payouts and collections settle by hand.
    pub fn settles_manually(self) -> bool {
        matches!(self, MovementKind::Payout | MovementKind::Collection)
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
    fn status(&self) -> Result<NodeStatus, ClientError>;
    fn accounts(&self, stack: StackName) -> Result<AccountsPage, ClientError>;
    fn verify(&self, stack: StackName) -> Result<VerifyResult, ClientError>;
    /// The first page of payouts, collections or orders; `query` is an id or
    /// an externalReference, `status` a movement status.
    fn movements(&self, stack: StackName, query: &MovementQuery) -> Result<Vec<Movement>, ClientError>;
    fn movement(&self, stack: StackName, kind: MovementKind, id: &str) -> Result<Movement, ClientError>;
    fn settle(
        &self,
        stack: StackName,
        kind: MovementKind,
        id: &str,
        settlement: Settlement,
    ) -> Result<Movement, ClientError>;
    fn disputes(&self, stack: StackName) -> Result<Vec<Dispute>, ClientError>;
    fn dispute(&self, stack: StackName, id: &str) -> Result<Dispute, ClientError>;
    fn webhook_endpoints(&self, stack: StackName) -> Result<Vec<WebhookEndpoint>, ClientError>;
    fn endpoint_attempts(
        &self,
        stack: StackName,
        endpoint_id: &str,
    ) -> Result<Vec<DeliveryAttempt>, ClientError>;
    fn deliveries(&self, stack: StackName, status: &str) -> Result<Vec<Delivery>, ClientError>;
    fn retry_delivery(&self, stack: StackName, delivery_id: &str) -> Result<Delivery, ClientError>;
    fn enable_endpoint(&self, stack: StackName, endpoint_id: &str) -> Result<WebhookEndpoint, ClientError>;
    fn request(&self, request_id: &str) -> Result<RequestLookup, ClientError>;
}

/// What the Activity tab asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MovementQuery {
    pub kind: MovementKind,
    pub q: Option<String>,
    pub status: Option<String>,
    pub limit: usize,
}

/// Text the node may send as a string, a number or null.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Text(pub String);

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Self {
        Text(text.to_string())
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Text(match Value::deserialize(deserializer)? {
            Value::Null => String::new(),
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => other.to_string(),
        }))
    }
}

/// A list answer: `{data, hasMore, nextCursor}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page<T> {
    pub data: Vec<T>,
    #[serde(default)]
    pub has_more: bool,
    #[serde(default)]
    pub next_cursor: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeStatus {
    pub version: Text,
    pub uptime_seconds: u64,
    pub live: StackStatus,
    pub sandbox: StackStatus,
}

impl NodeStatus {
    pub fn stack(&self, stack: StackName) -> &StackStatus {
        match stack {
            StackName::Live => &self.live,
            StackName::Sandbox => &self.sandbox,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StackStatus {
    pub journal_length: u64,
    pub commits: u64,
    pub commands: u64,
    pub commands_failed: u64,
    pub transfers: u64,
    pub writer_queue_depth: u64,
    pub database_bytes: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Account {
    pub id: Text,
    pub organization_id: Text,
    pub currency: Text,
    pub available_balance: Text,
    pub pending_balance: Text,
    pub total_balance: Text,
    pub estimated_usd: Text,
    pub created_at: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CurrencyTotal {
    pub currency: Text,
    pub available_balance: Text,
    pub pending_balance: Text,
    pub total_balance: Text,
    pub accounts: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VerifyResult {
    pub at: Text,
    pub consistent: bool,
    pub summary: Text,
    pub problems: Vec<Text>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LedgerFigures {
    pub journal_length: u64,
    pub last_verify: Option<VerifyResult>,
}

/// `GET /admin/v1/{stack}/accounts`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AccountsPage {
    pub data: Vec<Account>,
    pub has_more: bool,
    pub totals: Vec<CurrencyTotal>,
    pub ledger: LedgerFigures,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TimelineEntry {
    pub at: Text,
    pub kind: Text,
    pub title: Text,
    pub detail: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Funds {
    pub amount: Text,
    pub currency: Text,
    pub account_number: Text,
    pub method: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Destination {
    pub code: Text,
    pub amount: Text,
    pub currency: Text,
    pub account_number: Text,
    pub address: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Fee {
    pub amount: Text,
    pub currency: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Payout {
    pub id: Text,
    pub organization_id: Text,
    pub status: Text,
    pub from: Funds,
    pub to: Destination,
    pub fee: Fee,
    pub external_reference: Text,
    pub status_message: Text,
    pub created_at: Text,
    pub timeline: Vec<TimelineEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Collection {
    pub id: Text,
    pub organization_id: Text,
    pub status: Text,
    pub amount: Text,
    pub currency: Text,
    pub code: Text,
    pub account_number: Text,
    pub external_reference: Text,
    pub status_message: Text,
    pub created_at: Text,
    pub timeline: Vec<TimelineEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Order {
    pub id: Text,
    pub organization_id: Text,
    pub status: Text,
    pub from: Funds,
    pub to: Destination,
    pub external_reference: Text,
    pub status_message: Text,
    pub created_at: Text,
    pub timeline: Vec<TimelineEntry>,
}

/// A row of the Activity tab: one of the three kinds of money movement.
#[derive(Debug, Clone, PartialEq)]
pub enum Movement {
    Payout(Payout),
    Collection(Collection),
    Order(Order),
}

impl Movement {
    pub fn kind(&self) -> MovementKind {
        match self {
            Movement::Payout(_) => MovementKind::Payout,
            Movement::Collection(_) => MovementKind::Collection,
            Movement::Order(_) => MovementKind::Order,
        }
    }

    pub fn id(&self) -> &str {
        match self {
            Movement::Payout(p) => p.id.as_str(),
            Movement::Collection(c) => c.id.as_str(),
            Movement::Order(o) => o.id.as_str(),
        }
    }

    pub fn status(&self) -> &str {
        match self {
            Movement::Payout(p) => p.status.as_str(),
            Movement::Collection(c) => c.status.as_str(),
            Movement::Order(o) => o.status.as_str(),
        }
    }

    pub fn created_at(&self) -> &str {
        match self {
            Movement::Payout(p) => p.created_at.as_str(),
            Movement::Collection(c) => c.created_at.as_str(),
            Movement::Order(o) => o.created_at.as_str(),
        }
    }

    pub fn organization_id(&self) -> &str {
        match self {
            Movement::Payout(p) => p.organization_id.as_str(),
            Movement::Collection(c) => c.organization_id.as_str(),
            Movement::Order(o) => o.organization_id.as_str(),
        }
    }

    pub fn external_reference(&self) -> &str {
        match self {
            Movement::Payout(p) => p.external_reference.as_str(),
            Movement::Collection(c) => c.external_reference.as_str(),
            Movement::Order(o) => o.external_reference.as_str(),
        }
    }

    pub fn status_message(&self) -> &str {
        match self {
            Movement::Payout(p) => p.status_message.as_str(),
            Movement::Collection(c) => c.status_message.as_str(),
            Movement::Order(o) => o.status_message.as_str(),
        }
    }

    /// The amount and currency that best describe it in one column.
    pub fn amount(&self) -> (&str, &str) {
        match self {
            Movement::Payout(p) => (p.from.amount.as_str(), p.from.currency.as_str()),
            Movement::Collection(c) => (c.amount.as_str(), c.currency.as_str()),
            Movement::Order(o) => (o.from.amount.as_str(), o.from.currency.as_str()),
        }
    }

    pub fn timeline(&self) -> &[TimelineEntry] {
        match self {
            Movement::Payout(p) => &p.timeline,
            Movement::Collection(c) => &c.timeline,
            Movement::Order(o) => &o.timeline,
        }
    }

    /// Whether the operator may still complete or fail it by hand.
    pub fn awaits_settlement(&self) -> bool {
        self.kind().settles_manually() && self.status() == "pending"
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DisputeMessage {
    pub id: Text,
    pub author_type: Text,
    pub body: Text,
    pub created_at: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Dispute {
    pub id: Text,
    pub organization_id: Text,
    pub status: Text,
    pub amount: Text,
    pub currency: Text,
    pub reason: Text,
    pub created_at: Text,
    pub messages: Vec<DisputeMessage>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebhookEndpoint {
    pub id: Text,
    pub organization_id: Text,
    pub url: Text,
    pub status: Text,
    pub disabled_reason: Text,
    pub consecutive_failures: u64,
    pub success_rate: Option<f64>,
    pub average_latency_ms: Option<f64>,
    pub pending_deliveries: u64,
    pub failed_deliveries: u64,
    pub last_attempt_at: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeliveryAttempt {
    pub delivery_id: Text,
    pub event: Text,
    pub at: Text,
    pub status_code: Option<u16>,
    pub duration_ms: Option<f64>,
    pub error: Text,
    pub succeeded: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Delivery {
    pub id: Text,
    pub endpoint_id: Text,
    pub event: Text,
    pub status: Text,
    pub attempt_count: u64,
    pub next_attempt_at: Text,
    pub created_at: Text,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestRecord {
    pub id: Text,
    pub method: Text,
    pub path: Text,
    pub status: u16,
    pub duration_ms: Option<f64>,
    pub api_key_id: Text,
    pub request_body: Value,
    pub response_body: Value,
    pub created_at: Text,
}

/// `GET /admin/v1/requests/{id}`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RequestLookup {
    pub request: RequestRecord,
    pub stack: Text,
    pub organization_id: Text,
}
