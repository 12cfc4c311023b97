//! Hosted checkout, the parts payment pages and payment links share: the
//! request that creates either, and how the checkout looks and what it
//! takes.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::{AmountInput, Metadata};

/// How a payer pays on a hosted checkout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PaymentMethodKind {
    MobileMoney,
    BankTransfer,
    Crypto,
}

/// A stablecoin a hosted checkout accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum CryptoAsset {
    #[serde(rename = "USDC")]
    Usdc,
    #[serde(rename = "USDT")]
    Usdt,
}

/// What a custom field takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CustomFieldType {
    Text,
    Number,
    Email,
    Phone,
    Date,
}

/// `POST /v1/payment-pages` and `POST /v1/payment-links`: one body, the
/// last two fields a payment link's only.
///
/// Every field is read as sent and checked by the node, so that a missing
/// or bad one gets its own message naming the field.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"currency": "GHS", "title": "Kente scarves", "amount": "150.00", "allowedMethods": ["mobile_money", "bank_transfer"], "description": "Hand woven in Bonwire", "redirectUrl": "https://shop.example/thanks", "branding": {"businessName": "Ama's Shop", "accentColor": "#0a7d4f"}, "metadata": {"campaign": "harmattan"}})))]
pub struct CheckoutRequest {
    /// 1 to 10 characters: a currency the node knows.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 10, example = "GHS")]
    pub currency: Option<String>,
    /// 1 to 255 characters, not blank.
    #[schema(value_type = String, required = true, min_length = 1, max_length = 255, example = "Kente scarves")]
    pub title: Option<String>,
    /// At least one method; repeats are dropped.
    #[schema(value_type = Vec<PaymentMethodKind>, required = true, min_items = 1)]
    pub allowed_methods: Option<Vec<String>>,
    /// The amount each payer pays, in `currency`; omit it to let each payer
    /// choose.
    pub amount: Option<AmountInput>,
    /// At most 2,000 characters.
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// The stablecoins a crypto payer may send (in any case); all of them
    /// when omitted.
    #[schema(value_type = Option<Vec<CryptoAsset>>)]
    pub allowed_crypto_assets: Option<Vec<String>>,
    /// At most 20 fields the payer fills in, with distinct names.
    #[schema(max_items = 20)]
    pub custom_fields: Option<Vec<CustomFieldInput>>,
    /// An http or https URL the payer is sent to once paid.
    #[schema(max_length = 2048)]
    pub redirect_url: Option<String>,
    pub branding: Option<BrandingInput>,
    /// At most 8 KiB of JSON.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Metadata>,
    /// A future date-time (RFC 3339) after which the checkout takes no payer.
    #[schema(max_length = 64)]
    pub expires_at: Option<String>,
    /// Payment links only (a page takes any payer): the customer's email.
    #[schema(max_length = 254)]
    pub email: Option<String>,
    /// Payment links only: your own reference for the customer, 1 to 255
    /// characters.
    #[schema(max_length = 255)]
    pub customer_reference: Option<String>,
}

/// A field the payer fills in, as a request sends it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CustomFieldInput {
    /// 1 to 64 letters, digits, `_` and `-`.
    #[schema(max_length = 255, value_type = String, required = true, example = "size")]
    pub name: Option<String>,
    /// `text` when omitted.
    #[serde(rename = "type")]
    #[schema(value_type = Option<CustomFieldType>)]
    pub kind: Option<String>,
    /// `false` when omitted.
    pub required: Option<bool>,
    /// 1 to 120 characters; the name with spaces for `_` and `-` when
    /// omitted.
    #[schema(max_length = 255)]
    pub label: Option<String>,
}

/// How the hosted checkout looks, as a request sends it.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BrandingInput {
    /// An http or https URL.
    #[schema(max_length = 2048)]
    pub logo_url: Option<String>,
    /// A hex colour such as `#1a7f5a` (the default).
    #[schema(max_length = 7)]
    pub accent_color: Option<String>,
    /// At most 120 characters.
    #[schema(max_length = 255)]
    pub business_name: Option<String>,
}

/// A field the payer fills in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CustomField {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: CustomFieldType,
    pub required: bool,
    pub label: String,
}

/// How the hosted checkout looks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Branding {
    /// Empty when unset.
    pub logo_url: String,
    pub accent_color: String,
    /// Empty when unset.
    pub business_name: String,
}
