//! Orders: money collected on one rail (mobile money, a bank transfer or
//! crypto) and paid out on another, with one timeline across both legs.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::payouts::{PayoutStatus, PayoutTarget};
use crate::{AmountInput, Metadata, TimelineEntry};

/// Where an order stands. It waits for funds (and, for crypto, their
/// confirmations) until `expiresAt`, then pays out what arrived less the
/// fee. `completed`, `failed` and `expired` are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    AwaitingFunds,
    AwaitingConfirmations,
    FundsReceived,
    ProcessingPayout,
    Completed,
    Failed,
    Expired,
}

/// How the payer pays an order in. Orders carry it as text, so that the
/// node, not the JSON parser, refuses a bad value with its own message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderMethod {
    MobileMoney,
    BankTransfer,
    Crypto,
}

/// `POST /v1/orders`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"from": {"method": "mobile_money", "currency": "GHS", "amount": "200.00"}, "to": {"code": "bank_ng", "accountNumber": "0123456789", "bankCode": "058", "currency": "NGN"}, "externalReference": "order-2001"})))]
pub struct CreateOrder {
    pub from: OrderFunding,
    /// The payout leg. `to.currency` defaults to the method's currency.
    pub to: PayoutTarget,
    /// Your own reference, unique per organization: the same reference with
    /// the same body replays the order (200); with another body, `409 duplicate`.
    #[schema(max_length = 255)]
    pub external_reference: String,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
}

/// The collection leg of a new order: what the payer is expected to send.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderFunding {
    #[schema(value_type = OrderMethod)]
    pub method: String,
    /// `USDC` or `USDT` for crypto.
    #[schema(max_length = 10, example = "GHS")]
    pub currency: String,
    pub amount: AmountInput,
    /// The network of a crypto order, such as `base` or `tron`.
    #[schema(max_length = 64)]
    pub chain: Option<String>,
}

/// An order as every response and webhook shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Order {
    #[schema(example = "ord_0VbowfAbCdEf", pattern = "^ord_")]
    pub id: String,
    pub status: OrderStatus,
    pub from: OrderSource,
    pub to: OrderDestination,
    /// How to pay in: a `type` (`mobile_money`, `bank_transfer` or
    /// `crypto`) and that method's account, address and reference.
    #[schema(value_type = Object)]
    pub deposit_instructions: Metadata,
    /// Confirmations a crypto deposit needs (0 for other methods).
    pub required_confirmations: u32,
    /// The payout leg, once it is made.
    pub payout_id: Option<String>,
    pub payout: Option<OrderPayout>,
    pub external_reference: String,
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    /// A sentence on where the order stands, or why it failed.
    pub status_message: String,
    /// Until when the order waits for funds.
    pub expires_at: String,
    pub created_at: String,
    pub updated_at: String,
    /// Both legs' steps and webhook deliveries in time order; the payout
    /// leg's titles start with `Payout: `.
    pub timeline: Vec<TimelineEntry>,
}

/// What the payer sends, and what has arrived so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderSource {
    #[schema(value_type = OrderMethod)]
    pub method: String,
    pub currency: String,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "20.00")]
    pub amount: String,
    pub chain: Option<String>,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "0.00")]
    pub received_amount: String,
}

/// Where the payout leg goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderDestination {
    pub code: String,
    pub currency: String,
    pub account_number: Option<String>,
    pub address: Option<String>,
    pub tag: Option<String>,
    /// The destination bank's code, shown only when the order names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bank_code: Option<String>,
}

/// The payout leg in brief; `GET /v1/payouts/{id}` shows all of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderPayout {
    pub id: String,
    pub status: PayoutStatus,
    /// What the recipient receives, in `currency`.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$")]
    pub amount: String,
    pub currency: String,
    /// The fee, in `feeCurrency`, taken from the funds.
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$")]
    pub fee: String,
    /// The fee's currency: the currency the payout is paid from.
    #[serde(rename = "feeCurrency")]
    pub fee_currency: String,
}

/// `{order}`: what creating (201), replaying (200), reading an order and
/// the sandbox's funds simulation answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderEnvelope {
    pub order: Order,
}
