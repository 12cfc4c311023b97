//! The operator's reconciliation with the provider connector
//! (`GET /admin/v1/live/reconciliation`): what the provider reports for a
//! period (its transfers and its charges) against Sika's live movements on
//! its rail, paired by Sika's id, which each transfer and charge carries as
//! its reference.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, IntoResponses, ToSchema};

/// The period of a reconciliation.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, Serialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ReconciliationQuery {
    /// The period's start (an RFC 3339 date-time), inclusive.
    pub from: Option<String>,
    /// The period's end (an RFC 3339 date-time), exclusive: after `from`,
    /// and at most 31 days after it.
    pub to: Option<String>,
}

/// What a movement is on Sika's side: a payout is a provider transfer, a
/// collection a provider charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReconciledKind {
    Payout,
    Collection,
}

/// A movement one side shows and the other does not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationItem {
    /// Sika's id when Sika has the movement, otherwise the provider's
    /// reference (its own id when it shows no reference).
    pub id: String,
    pub kind: ReconciledKind,
    /// A decimal string with the currency's digits (as the provider wrote
    /// it when the currency is not one Sika knows).
    pub amount: String,
    pub currency: String,
    /// In Sika's words (`pending`, `completed`, `failed`, `reversed`); the
    /// provider's status is mapped to them.
    pub status: String,
    /// The provider's id of the transfer or charge; null for a movement the
    /// provider does not show.
    pub provider_id: Option<String>,
    /// When the side that shows it created it; null when the provider gives
    /// no readable time.
    pub created_at: Option<String>,
}

/// A field of a movement both sides show, compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReconciledField {
    Amount,
    Currency,
    /// The provider's status mapped to Sika's words.
    Status,
    /// A payout the provider shows as a charge, or a collection as a
    /// transfer.
    Kind,
}

/// One field on which the two sides of a pair differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Mismatch {
    /// Sika's id of the movement.
    pub id: String,
    pub field: ReconciledField,
    /// What Sika records.
    pub sika: String,
    /// What the provider reports.
    pub provider: String,
}

/// `GET /admin/v1/live/reconciliation`: every live movement on the
/// provider's rail that Sika created in the period, and every transfer and
/// charge the provider created in it, paired by reference. A pair whose
/// amount, currency, status and kind agree is counted in `matched`; one
/// that differs is listed once per differing field in `mismatched` and is
/// not counted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(examples(json!({
    "from": "2026-11-27T00:00:00.000Z", "to": "2026-11-28T00:00:00.000Z", "matched": 41,
    "missingAtProvider": [{"id": "pay_0VbowfAbCdEf", "kind": "payout", "amount": "25.00",
        "currency": "GHS", "status": "completed", "providerId": null,
        "createdAt": "2026-11-27T09:12:03.000Z"}],
    "missingInSika": [],
    "mismatched": [{"id": "col_0VbowfGhIjKl", "field": "amount", "sika": "10.00", "provider": "12.00"}]
})))]
pub struct Reconciliation {
    pub from: String,
    pub to: String,
    /// Pairs that agree on every compared field.
    pub matched: u64,
    /// Sika's movements the provider does not show.
    pub missing_at_provider: Vec<ReconciliationItem>,
    /// The provider's transfers and charges Sika has no movement for.
    pub missing_in_sika: Vec<ReconciliationItem>,
    pub mismatched: Vec<Mismatch>,
}

/// The refusals of a reconciliation besides the operator token's.
#[derive(IntoResponses)]
pub enum ReconciliationRefusals {
    /// A missing or bad `from` or `to`, `to` not after `from`, a period over
    /// 31 days, or a query parameter it does not take (`validation_error`
    /// naming the field)
    #[response(status = 400)]
    BadRequest(crate::ErrorBody),
    /// No provider connector is configured on the live stack
    /// (`invalid_state`)
    #[response(status = 409)]
    NoConnector(crate::ErrorBody),
    /// The provider could not be read in full (`unavailable`): nothing is
    /// answered rather than a part; retry later
    #[response(status = 503)]
    ProviderUnavailable(crate::ErrorBody),
}
