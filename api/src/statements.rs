//! Statements: every change to an organization's balances (balance
//! transactions), the balances at an instant, and a period's statement.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// One change to one of the organization's balances, read from the
/// ledger's own posting. For every account, the newest entry's
/// `availableAfter` and `totalAfter` are the account's balances, and each
/// entry's balances after are the previous entry's plus its changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BalanceTransaction {
    /// `btx_` followed by the ledger's journal entry number.
    #[schema(example = "btx_000000000000042")]
    pub id: String,
    /// The balance account changed (its `id` in `GET /v1/accounts`).
    #[schema(example = "GHS1000000004")]
    pub account_number: String,
    #[schema(example = "GHS")]
    pub currency: String,
    /// `deposit`, `collection`, `payout`, `fee`, `payout_release`,
    /// `conversion`, `refund`, `refund_release`, `dispute_hold`,
    /// `dispute_release`, `dispute_loss`, `reversal` or `adjustment`.
    #[serde(rename = "type")]
    #[schema(example = "payout")]
    pub kind: String,
    /// Signed change of the available balance.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "-25.00")]
    pub available_change: String,
    /// Signed change of the total balance.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "-25.00")]
    pub total_change: String,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "75.00")]
    pub available_after: String,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "75.00")]
    pub total_after: String,
    /// `payout`, `collection`, `order`, `conversion`, `refund`, `dispute`,
    /// `deposit`, or `transfer` for an adjustment made on the ledger.
    #[schema(example = "payout")]
    pub source_type: String,
    #[schema(example = "pay_ghs_01hx")]
    pub source_id: String,
    #[schema(example = "Payout pay_ghs_01hx: amount held")]
    pub description: String,
    pub created_at: String,
}

/// The filters of `GET /v1/balance-transactions` besides paging.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct BalanceTransactionFilter {
    /// Only changes of this currency's balance.
    pub currency: Option<String>,
    /// Only changes of this type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<String>,
    /// Only changes caused by this resource (a payout's, refund's, … id).
    pub source_id: Option<String>,
    /// Only changes made at or after this date-time (RFC 3339).
    pub created_from: Option<String>,
    /// Only changes made before this date-time (RFC 3339).
    pub created_to: Option<String>,
}

/// The query of `GET /v1/accounts`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct AccountsQuery {
    /// The balances as they stood at this date-time (RFC 3339) instead of
    /// now; accounts opened after it are left out.
    pub as_of: Option<String>,
}

/// The query of `GET /v1/statements`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct StatementQuery {
    /// The balance's currency.
    pub currency: Option<String>,
    /// Start of the period, included: a date (`2026-11-01`, meaning 00:00
    /// UTC) or a date-time (RFC 3339).
    pub from: Option<String>,
    /// End of the period, excluded: a date or a date-time.
    pub to: Option<String>,
}

/// Two balances at one instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StatementBalances {
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "100.00")]
    pub available: String,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "100.00")]
    pub total: String,
}

/// What the changes of one type added up to in the period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatementTotal {
    #[serde(rename = "type")]
    #[schema(example = "payout")]
    pub kind: String,
    pub count: u64,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "-50.00")]
    pub available_change: String,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "-50.00")]
    pub total_change: String,
}

/// A balance's statement for a period: `opening` plus every entry of
/// `totals` is `closing`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Statement {
    #[schema(example = "GHS")]
    pub currency: String,
    /// The balance account; null when the organization has none in this
    /// currency yet.
    #[schema(example = "GHS1000000004")]
    pub account_number: Option<String>,
    /// The period's start (included), as a date-time.
    pub from: String,
    /// The period's end (excluded), as a date-time.
    pub to: String,
    pub opening: StatementBalances,
    pub closing: StatementBalances,
    /// One entry per type present in the period, in a fixed order.
    pub totals: Vec<StatementTotal>,
    pub transaction_count: u64,
}

/// `{"statement": …}`
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StatementEnvelope {
    pub statement: Statement,
}
