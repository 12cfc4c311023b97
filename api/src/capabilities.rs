//! Capabilities: the payment methods each country offers, with their live
//! status, limits and the input fields they need. Look a method up before
//! creating a recipient or payout to catch a limit or an outage first.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// The rail a payment method moves money on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MethodKind {
    MobileMoney,
    BankTransfer,
    /// A stablecoin network; every country offers them.
    Crypto,
}

impl MethodKind {
    /// The kind as it is written on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            MethodKind::MobileMoney => "mobile_money",
            MethodKind::BankTransfer => "bank_transfer",
            MethodKind::Crypto => "crypto",
        }
    }
}

/// Whether a payment method is working now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum MethodStatus {
    Operational,
    /// Working, but slower or less reliable than usual.
    Degraded,
    /// Not working: new payouts and collections on it answer `503 method_unavailable`.
    Down,
}

/// A payment method, as the capabilities lookup shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Method {
    /// The method's code, as payouts, collections and recipients name it.
    #[schema(example = "mtn_gh")]
    pub code: String,
    #[schema(example = "MTN Mobile Money")]
    pub name: String,
    #[serde(rename = "type")]
    pub kind: MethodKind,
    pub status: MethodStatus,
    pub limits: MethodLimits,
    /// How long settlement usually takes, as free text.
    #[schema(example = "instant to 5 minutes")]
    pub estimated_settlement: String,
    /// The input fields a destination on this method needs. Each `key` is
    /// taken under the same name in a payout's `to` (`to.accountName`).
    pub fields: Vec<MethodField>,
    /// The fee a payout by this method pays, so the cost can be shown
    /// before paying. Collections are free.
    pub fees: MethodFees,
    /// The network of a crypto method (`ethereum`, `solana`, …); absent for
    /// other methods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "base")]
    pub chain: Option<String>,
}

/// The smallest and largest amount one payment on the method may move.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MethodLimits {
    /// In `currency`, as a JSON number.
    #[schema(value_type = f64, example = 1)]
    pub min: serde_json::Number,
    /// In `currency`, as a JSON number.
    #[schema(value_type = f64, example = 10000)]
    pub max: serde_json::Number,
    #[schema(example = "GHS")]
    pub currency: String,
}

/// A method's payout fee: `fixed` plus `percent` of the amount the
/// recipient gets, in `currency`, the sum rounded half up to the currency's
/// digits (1.00 + 1.00 % of 3.33 GHS is 1.03 GHS). A payout from another
/// currency pays the same fee converted into its own at the payout's rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MethodFees {
    /// In `currency`, with its digits.
    #[schema(example = "1.00")]
    pub fixed: String,
    /// A percentage of the amount, with two decimals (`"1.50"` is 1.5 %).
    #[schema(example = "1.00")]
    pub percent: String,
    #[schema(example = "GHS")]
    pub currency: String,
}

/// One input field a method needs, for a form to ask for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MethodField {
    /// The request field it fills, such as `accountNumber`.
    #[schema(example = "accountNumber")]
    pub key: String,
    pub label: String,
    /// The input's kind: `text`, `tel` or `select` (with `options`).
    #[serde(rename = "type")]
    #[schema(example = "tel")]
    pub kind: String,
    pub placeholder: String,
    pub description: String,
    /// Which part of a form it belongs to: `recipient`, `destination`, `bank`, …
    pub group: String,
    /// The choices of a `select` field; empty for other fields.
    pub options: Vec<FieldOption>,
}

/// One choice of a `select` field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldOption {
    pub label: String,
    pub value: String,
}

/// `{method}`: what looking one method up answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MethodEnvelope {
    pub method: Method,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_written_as_their_text() {
        for kind in [MethodKind::MobileMoney, MethodKind::BankTransfer, MethodKind::Crypto] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
