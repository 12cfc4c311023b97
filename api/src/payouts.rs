//! Payouts: money sent from a balance to a bank account, a mobile-money
//! wallet or a crypto address.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AmountInput, Metadata, Money, TimelineEntry};

/// Where a payout stands. `pending` until the rail answers; `failed` is
/// final (a failed payout's hold and fee are released); `completed` is final
/// unless the rail later takes the payout back: then it is `reversed`, its
/// amount back on the balance and its fee kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum PayoutStatus {
    Pending,
    Completed,
    Failed,
    Reversed,
}

/// `POST /v1/payouts`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"from": {"currency": "GHS", "amount": "25.00"}, "to": {"code": "mtn_gh", "accountNumber": "+233241234567", "accountName": "Ama Mensah"}, "externalReference": "invoice-1001", "narration": "November payout"})))]
pub struct CreatePayout {
    pub from: PayoutAmount,
    pub to: PayoutTarget,
    /// Your own reference, unique per organization: the same reference with
    /// the same body replays the payout (200); with another body, `409 duplicate`.
    #[schema(max_length = 255)]
    pub external_reference: String,
    /// At most 500 characters.
    #[serde(default)]
    #[schema(max_length = 500)]
    pub narration: String,
    /// At most 50 keys of up to 40 characters; values are strings, numbers,
    /// booleans or null of up to 500 characters.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
}

/// The amount to send, in the balance's currency.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PayoutAmount {
    #[schema(max_length = 10, example = "GHS")]
    pub currency: String,
    pub amount: AmountInput,
}

/// Who is paid: a method code with an account number (bank, mobile money)
/// or an address (crypto, with an optional tag), or a saved recipient.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PayoutTarget {
    #[schema(max_length = 64, example = "mtn_gh")]
    pub code: Option<String>,
    #[schema(max_length = 64, example = "+233241234567")]
    pub account_number: Option<String>,
    #[schema(max_length = 128)]
    pub address: Option<String>,
    #[schema(max_length = 64)]
    pub tag: Option<String>,
    /// The currency the recipient receives; defaults to `from.currency`.
    #[schema(max_length = 10)]
    pub currency: Option<String>,
    #[schema(max_length = 64)]
    pub recipient_id: Option<String>,
    /// The destination's bank, for bank methods: one of the `bankCode`
    /// options `GET /v1/capabilities/{country}/{method}` lists. Required on
    /// live when the operator routes the method through a provider that
    /// needs it (Flutterwave); also taken with a `recipientId`.
    #[schema(max_length = 64, example = "044")]
    pub bank_code: Option<String>,
    /// The account holder's name as you know it, the `accountName` field
    /// the method's capabilities list; optional. It is not matched against
    /// the name the rail holds (`POST /v1/validate/bulk` shows that one)
    /// and the payout does not keep it.
    #[schema(max_length = 255, example = "Ama Mensah")]
    pub account_name: Option<String>,
}

/// A payout as every response and webhook shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Payout {
    #[schema(example = "pay_ghs_0VbowfAbCdEf", pattern = "^pay_[a-z]+_")]
    pub id: String,
    pub status: PayoutStatus,
    pub from: PayoutSource,
    pub to: PayoutDestination,
    /// The fee, charged in the source currency on top of `from.amount`.
    pub fee: Money,
    /// The all-in rate from `from.currency` to `to.currency` (`1` when they
    /// are the same).
    pub rate: String,
    pub narration: String,
    pub external_reference: String,
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    /// A sentence on where the payout stands, or why it failed.
    pub status_message: String,
    pub completed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub timeline: Vec<TimelineEntry>,
}

/// The balance a payout is sent from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PayoutSource {
    /// The balance account's id.
    pub account_number: String,
    pub amount: String,
    pub currency: String,
    #[schema(value_type = Object)]
    pub kyc: serde_json::Map<String, serde_json::Value>,
}

/// Where a payout goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PayoutDestination {
    pub code: String,
    pub amount: String,
    pub currency: String,
    pub account_number: Option<String>,
    pub address: Option<String>,
    pub tag: Option<String>,
    pub recipient_id: Option<String>,
    /// The destination bank's code, shown only when the payout names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_code: Option<String>,
    #[schema(value_type = Object)]
    pub kyc: serde_json::Map<String, serde_json::Value>,
}

/// `{payout}`: what creating (201), replaying (200) and reading a payout answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PayoutEnvelope {
    pub payout: Payout,
}
