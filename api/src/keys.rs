//! API keys: what a key may do (scopes, caller addresses, spend caps,
//! expiry). Managing keys needs an owner's or admin's session; the full key
//! is shown once, when it is created.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AmountInput;

/// `POST /v1/keys`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateApiKey {
    /// 1 to 100 characters.
    #[schema(max_length = 255, example = "checkout server")]
    pub name: String,
    /// `<resource>:read` or `<resource>:write`, `rates:read`,
    /// `capabilities:read`, `requests:read`, or `*` for every scope.
    #[schema(example = json!(["payouts:write", "payouts:read"]))]
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
