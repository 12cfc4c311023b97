//! Payment links: one customer's charge on a hosted checkout, created
//! directly or for each payer of a payment page. Every attempt to pay one
//! is a checkout session, and every session is a collection.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Metadata;
use crate::checkout::{Branding, CryptoAsset, CustomField, PaymentMethodKind};

/// Where a link stands, derived from its sessions' collections when read:
/// `paid` once the money received covers the amount; otherwise `closed`
/// once the merchant closed it, `expired` once its `expiresAt` passed, and
/// `active` while it takes payments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema, strum::VariantArray)]
#[serde(rename_all = "snake_case")]
pub enum PaymentLinkStatus {
    Active,
    Paid,
    Expired,
    Closed,
}

/// What a link was spawned from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PaymentLinkParentType {
    PaymentPage,
}

/// Where one attempt to pay stands. Exactly one session of a paid link is
/// `complete`: the one whose money brought `remaining` to zero; the other
/// payments that arrived are `partial`. Abandoned attempts expire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckoutSessionStatus {
    Pending,
    Partial,
    Complete,
    Failed,
    Expired,
}

/// What the payer of a session pays into. Sandbox mobile-money sessions
/// prompt the payer's phone (simulated) and carry none; on live, a
/// mobile-money session names the operator's merchant number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PaymentInstructions {
    /// A transfer to the node's receiving account, quoting `reference`.
    #[serde(rename_all = "camelCase")]
    BankTransfer {
        bank_name: String,
        account_number: String,
        account_name: String,
        /// The session's id: what the transfer must quote.
        reference: String,
        amount: String,
        currency: String,
    },
    /// A mobile-money payment to the operator's merchant number
    /// (`[[live.receiving.mobile_money]]`), quoting `reference`.
    #[serde(rename_all = "camelCase")]
    MobileMoney {
        /// The network's name, for people (`MTN Mobile Money`).
        network: String,
        merchant_number: String,
        merchant_name: String,
        /// The session's id: what the payment must quote.
        reference: String,
        amount: String,
        currency: String,
    },
    /// A stablecoin transfer to an address of this session's own.
    Crypto {
        /// `USDC` or `USDT`.
        asset: String,
        chain: String,
        /// The network's name, for people.
        network: String,
        address: String,
        amount: String,
    },
}

/// One attempt to pay a link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutSession {
    #[schema(example = "cs_0VbowfAbCdEf", pattern = "^cs_")]
    pub id: String,
    pub payment_link_id: String,
    pub status: CheckoutSessionStatus,
    pub status_message: String,
    pub method: PaymentMethodKind,
    /// The method code the payer pays with (`mtn_gh`, `bank_ng`, `usdc_base`).
    pub code: String,
    /// The network of a crypto session.
    pub chain: Option<String>,
    /// What the payer sends, in `originCurrency`.
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$")]
    pub origin_amount: String,
    pub origin_currency: String,
    /// What the link receives, in its currency.
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$")]
    pub destination_amount: String,
    pub destination_currency: String,
    /// What refunds of the session's payment give back, in its
    /// `destinationCurrency`: those completed or pending (`0.00` before any).
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$")]
    pub refunded_amount: String,
    pub rate: String,
    /// The collection the attempt is on the ledger as.
    pub collection_id: String,
    pub instructions: Option<PaymentInstructions>,
    pub expires_at: String,
    pub created_at: String,
}

/// A payment link as every response shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentLink {
    #[schema(example = "pl_0VbowfAbCdEf", pattern = "^pl_")]
    pub id: String,
    /// The hosted checkout's address.
    pub url: String,
    /// Null for a link created directly.
    pub parent_type: Option<PaymentLinkParentType>,
    /// The page's id, for a link spawned by a page.
    pub parent_id: Option<String>,
    /// The customer's email.
    pub email: Option<String>,
    /// What is due; for an open amount, the payer's first payment (or
    /// else their latest attempt), and null before any attempt.
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$", example = "100.00")]
    pub amount: Option<String>,
    #[schema(example = "GHS")]
    pub currency: String,
    pub title: String,
    pub description: String,
    pub status: PaymentLinkStatus,
    /// A sentence on where the link stands.
    pub status_message: String,
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$", example = "40.00")]
    pub total_received: String,
    /// What is still due; null while the amount is open.
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$", example = "60.00")]
    pub remaining: Option<String>,
    /// What was received beyond the amount; null when nothing was.
    #[schema(pattern = r"^[0-9]+(\.[0-9]+)?$")]
    pub overpayment_amount: Option<String>,
    pub allowed_methods: Vec<PaymentMethodKind>,
    /// Null when unset: every stablecoin is accepted.
    pub allowed_crypto_assets: Option<Vec<CryptoAsset>>,
    pub custom_fields: Vec<CustomField>,
    pub branding: Branding,
    /// Empty when unset.
    pub redirect_url: String,
    #[schema(value_type = Object)]
    pub metadata: Metadata,
    pub expires_at: Option<String>,
    /// Your own reference for the customer.
    pub customer_reference: Option<String>,
    /// What the payer entered in the custom fields, by field name.
    pub custom_field_values: BTreeMap<String, String>,
    pub closed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// Every attempt to pay, newest first. Only a single link's answer
    /// (creating, reading or closing it) holds them; list items do not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Vec<CheckoutSession>, required = false)]
    pub sessions: Option<Vec<CheckoutSession>>,
}

/// `{paymentLink}`: what creating (201), reading and closing a link answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentLinkEnvelope {
    pub payment_link: PaymentLink,
}

/// The filters `GET /v1/payment-links` takes besides paging; each one given
/// must match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct PaymentLinkFilter {
    /// Only links in this state.
    // Text, so that a bad value gets the node's own message naming the field.
    #[param(value_type = Option<PaymentLinkStatus>)]
    pub status: Option<String>,
    /// Only the links of this customer email (the whole address, compared
    /// without regard to letter case).
    pub email: Option<String>,
    /// Only the links with this `customerReference`.
    pub customer_reference: Option<String>,
    /// Only links spawned by a page.
    #[param(value_type = Option<PaymentLinkParentType>)]
    pub parent_type: Option<String>,
    /// Only the links of this page's payers.
    pub parent_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Instructions carry their kind as `type` beside camelCase fields.
    #[test]
    fn instructions_are_tagged_by_type() {
        let bank = PaymentInstructions::BankTransfer {
            bank_name: "Sika Sandbox Bank".into(),
            account_number: "1234567890".into(),
            account_name: "Ama's Shop".into(),
            reference: "cs_1".into(),
            amount: "60.00".into(),
            currency: "NGN".into(),
        };
        let written = serde_json::to_value(&bank).unwrap();
        assert_eq!(
            written,
            json!({ "type": "bank_transfer", "bankName": "Sika Sandbox Bank", "accountNumber": "1234567890", "accountName": "Ama's Shop", "reference": "cs_1", "amount": "60.00", "currency": "NGN" })
        );
        assert_eq!(serde_json::from_value::<PaymentInstructions>(written).unwrap(), bank);
        let crypto = json!({ "type": "crypto", "asset": "USDC", "chain": "base", "network": "Base", "address": "0xabc", "amount": "10.000000" });
        let read: PaymentInstructions = serde_json::from_value(crypto.clone()).unwrap();
        assert_eq!(serde_json::to_value(read).unwrap(), crypto);
    }
}
