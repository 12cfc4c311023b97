//! Collections: money asked of a payer (a mobile-money prompt or a bank
//! debit) and credited to the balance of its currency once they approve.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AmountInput, Metadata, TimelineEntry};

/// Where a collection stands. `pending` until the payer answers; the amount
/// is a pending credit meanwhile. `completed` and `failed` are final (a
/// failed collection's pending credit is released).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum CollectionStatus {
    Pending,
    Completed,
    Failed,
}

/// `POST /v1/collections`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"amount": "50.00", "currency": "GHS", "code": "mtn_gh", "accountNumber": "+233241234567", "externalReference": "order-1001", "metadata": {"orderId": "1001"}})))]
pub struct CreateCollection {
    pub amount: AmountInput,
    #[schema(max_length = 10, example = "GHS")]
    pub currency: String,
    /// The method code: mobile money or bank transfer, in `currency`.
    #[schema(max_length = 64, example = "mtn_gh")]
    pub code: String,
    /// The payer's phone number (mobile money) or account number.
    #[schema(max_length = 64, example = "+233241234567")]
    pub account_number: String,
    /// Your own reference, unique per organization: the same reference with
    /// the same body replays the collection (200); with another body,
    /// `409 duplicate`.
    #[schema(max_length = 255)]
    pub external_reference: String,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
}

/// A collection as every response and webhook shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Collection {
    #[schema(example = "col_0VbowfAbCdEf")]
    pub id: String,
    pub status: CollectionStatus,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "25.00")]
    pub amount: String,
    /// What refunds of this collection give back: those completed or
    /// pending (`0.00` before any).
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "0.00")]
    pub refunded_amount: String,
    pub currency: String,
    /// The payer's phone number or account number.
    pub account_number: String,
    /// The method code.
    pub code: String,
    /// The balance account the amount is credited to.
    pub balance_account: String,
    pub external_reference: String,
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    /// A sentence on where the collection stands, or why it failed.
    pub status_message: String,
    pub completed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub timeline: Vec<TimelineEntry>,
}

/// `{collection}`: what creating (201), replaying (200) and reading a
/// collection answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CollectionEnvelope {
    pub collection: Collection,
}
