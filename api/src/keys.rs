//! API keys: what a key may do (scopes, caller addresses, spend caps,
//! expiry). Managing keys needs an owner's or admin's session; the full key
//! is shown once, when it is created.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AmountInput;

/// `POST /v1/keys`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"name": "checkout server", "scopes": ["payouts:write", "payouts:read", "accounts:read"], "allowedIps": ["203.0.113.7"], "caps": {"dailyUsd": "500.00"}})))]
pub struct CreateApiKey {
    /// 1 to 100 characters.
    #[schema(max_length = 255, example = "checkout server")]
    pub name: String,
    /// At least one of the scopes the document lists ([`scope_names`]).
    #[schema(schema_with = scope_list)]
    pub scopes: Vec<String>,
    /// Addresses or CIDR blocks the key may be used from; empty means any.
    #[serde(default)]
    #[schema(example = json!(["203.0.113.7", "10.0.0.0/8"]))]
    pub allowed_ips: Vec<String>,
    #[serde(default)]
    pub caps: Option<SpendCapsInput>,
    /// When the key stops working (RFC 3339, in the future).
    #[serde(default)]
    #[schema(max_length = 64)]
    pub expires_at: Option<String>,
}

/// Resources with a `:read` and a `:write` scope (`payment-pages` covers
/// pages and links).
pub const SCOPED_RESOURCES: &[&str] = &[
    "payouts",
    "collections",
    "orders",
    "conversions",
    "accounts",
    "recipients",
    "virtual-accounts",
    "payment-pages",
    "disputes",
    "webhooks",
    "validation",
    "refunds",
];

/// Scopes that exist only as `:read`.
pub const READ_ONLY_SCOPES: &[&str] = &["rates:read", "capabilities:read", "requests:read"];

/// Every scope a key can hold: `*` (every scope), then each resource's
/// `:read` and `:write`, then the read-only ones. The document lists them
/// as the `scopes` items' `enum`, and an unknown one is refused naming them.
pub fn scope_names() -> Vec<String> {
    let pairs = SCOPED_RESOURCES.iter().flat_map(|r| [format!("{r}:read"), format!("{r}:write")]);
    std::iter::once("*".to_string())
        .chain(pairs)
        .chain(READ_ONLY_SCOPES.iter().map(|s| s.to_string()))
        .collect()
}

/// The `scopes` field's schema: an array of the known scope names.
fn scope_list() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(ObjectBuilder::new().schema_type(Type::String).enum_values(Some(scope_names())))
        .min_items(Some(1))
        .description(Some(
            "What the key may do: `<resource>:read` and `<resource>:write` for each resource, \
             `rates:read`, `capabilities:read`, `requests:read`, or `*` for every scope. Each \
             operation names the scope it needs as its `bearer` security requirement.",
        ))
        .examples([serde_json::json!(["payouts:write", "payouts:read"])])
        .build()
}

/// Spend caps in US dollars on the key's payouts, across currencies at
/// current rates, enforced on the live stack; each one left out is no cap.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SpendCapsInput {
    pub daily_usd: Option<AmountInput>,
    pub per_transaction_usd: Option<AmountInput>,
    pub monthly_usd: Option<AmountInput>,
}

/// A key's spend caps in US dollars (two decimals); null is no cap.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpendCaps {
    #[schema(example = "500.00")]
    pub daily_usd: Option<String>,
    pub per_transaction_usd: Option<String>,
    pub monthly_usd: Option<String>,
}

/// An API key as every response shows it: never the key itself, which only
/// its creation answers (`CreatedApiKey`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    #[schema(example = "key_0VbowfAbCdEf", pattern = "^key_")]
    pub id: String,
    pub name: String,
    /// The key's first characters, to recognise it.
    #[schema(example = "sk_test_AbCd")]
    pub hint: String,
    pub scopes: Vec<String>,
    pub allowed_ips: Vec<String>,
    pub caps: SpendCaps,
    pub expires_at: Option<String>,
    /// When the key was revoked; null while it works.
    pub revoked_at: Option<String>,
    pub created_at: String,
}

/// A new key with the key itself, shown this once: only a hash is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CreatedApiKey {
    #[serde(flatten)]
    pub key: ApiKey,
    /// The full key (`sk_test_…` or `sk_live_…`), for `Authorization: Bearer`.
    #[schema(pattern = "^sk_(test|live)_")]
    pub secret: String,
}

/// `{apiKey}`: what revoking a key answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyEnvelope {
    pub api_key: ApiKey,
}

/// `{apiKey}`: what creating a key answers (201).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedApiKeyEnvelope {
    pub api_key: CreatedApiKey,
}
