//! Refunds: money given back to the payer of a completed collection or a
//! complete checkout session, in full or in part.

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::{AmountInput, Metadata, TimelineEntry};

/// Where a refund stands. `pending` while the rail (or the operator) has
/// not answered, its amount held on the balance; `completed` and `failed`
/// are final (a failed refund's hold is released).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum RefundStatus {
    Pending,
    Completed,
    Failed,
}

/// `POST /v1/refunds`: exactly one of `collectionId` and `sessionId`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"collectionId": "col_0VbowfAbCdEf", "amount": "10.00", "reason": "Item returned", "externalReference": "refund-1001"})))]
pub struct CreateRefund {
    /// A completed collection to refund.
    #[schema(max_length = 64, example = "col_0VbowfAbCdEf")]
    pub collection_id: Option<String>,
    /// A `complete` checkout session to refund (its payment).
    #[schema(max_length = 64, example = "cs_0VbowfAbCdEf")]
    pub session_id: Option<String>,
    /// In the payment's currency; defaults to what is still refundable
    /// (the payment's amount less every refund of it that has not failed).
    pub amount: Option<AmountInput>,
    /// Why the money goes back, as you word it.
    #[schema(max_length = 500)]
    pub reason: Option<String>,
    /// Your own reference, unique per organization: the same reference with
    /// the same body replays the refund (200); with another body,
    /// `409 duplicate`.
    #[schema(max_length = 255)]
    pub external_reference: String,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
}

/// A refund as every response and webhook shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Refund {
    #[schema(example = "rf_0VbowfAbCdEf", pattern = "^rf_")]
    pub id: String,
    pub status: RefundStatus,
    /// The payment refunded.
    pub collection_id: String,
    /// The checkout session the payment came through; null otherwise.
    pub session_id: Option<String>,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "10.00")]
    pub amount: String,
    pub currency: String,
    pub reason: Option<String>,
    pub external_reference: String,
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    /// A sentence on where the refund stands, or why it failed.
    pub status_message: String,
    pub timeline: Vec<TimelineEntry>,
    pub created_at: String,
    pub updated_at: String,
    /// Null until the refund completes.
    pub completed_at: Option<String>,
}

/// `{refund}`: what creating (201), replaying (200) and reading a refund
/// answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RefundEnvelope {
    pub refund: Refund,
}

/// The filters the refunds list takes besides paging.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct RefundFilter {
    /// Only those in this status: `pending`, `completed` or `failed`.
    pub status: Option<String>,
    /// Only the refunds of this collection.
    pub collection_id: Option<String>,
}
