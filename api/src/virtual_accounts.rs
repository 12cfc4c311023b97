//! Virtual accounts: account details a customer pays into, one per
//! customer; what is paid in lands on the organization's balance.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Whether a virtual account takes payments. Every account is `active`
/// today; the enum leaves room for closing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VirtualAccountStatus {
    Active,
}

/// `POST /v1/virtual-accounts`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateVirtualAccount {
    /// The currency paid in. A GHS account needs the organization
    /// representative on the live stack.
    #[schema(example = "GHS")]
    pub currency: String,
    /// Your own reference for the customer who pays into it.
    pub customer_reference: Option<String>,
    /// The name payers see; defaults to the organization's name.
    pub account_name: Option<String>,
}

/// A virtual account as every response shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualAccount {
    #[schema(example = "va_0VbowfAbCdEf", pattern = "^va_")]
    pub id: String,
    pub currency: String,
    /// The number payers send money to, at `bankName`.
    #[schema(example = "0123456789")]
    pub account_number: String,
    pub bank_name: String,
    pub account_name: String,
    pub customer_reference: Option<String>,
    pub status: VirtualAccountStatus,
    pub created_at: String,
}

/// `{virtualAccount}`: what creating (201) and reading a virtual account
/// answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualAccountEnvelope {
    pub virtual_account: VirtualAccount,
}
