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
#[schema(examples(json!({"currency": "NGN", "customerReference": "customer-42", "accountName": "Ama Mensah"})))]
pub struct CreateVirtualAccount {
    /// The currency paid in. A GHS account needs the organization
    /// representative on the live stack. `USDC` or `USDT` opens a crypto
    /// deposit address instead of a bank account.
    #[schema(max_length = 10, example = "GHS")]
    pub currency: String,
    /// The network of a `USDC` or `USDT` account (required for them, such
    /// as `base`, `ethereum`, `polygon`, `solana` or `tron`; on the sandbox
    /// the testnet of the same name is accepted too); refused for others.
    #[schema(max_length = 64, example = "base")]
    pub chain: Option<String>,
    /// Your own reference for the customer who pays into it.
    #[schema(max_length = 255)]
    pub customer_reference: Option<String>,
    /// The name payers see; defaults to the organization's name.
    #[schema(max_length = 255)]
    pub account_name: Option<String>,
}

/// What a virtual account is: a bank account (fiat currencies) or a
/// crypto deposit address (`USDC`, `USDT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum VirtualAccountType {
    BankAccount,
    CryptoAddress,
}

/// A virtual account as every response shows it. A `bank_account` has
/// `accountNumber`, `bankName` and `accountName` (and null `address` and
/// `chain`); a `crypto_address` has `address` and `chain` (and null bank
/// fields).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VirtualAccount {
    #[schema(example = "va_0VbowfAbCdEf", pattern = "^va_")]
    pub id: String,
    #[serde(rename = "type")]
    pub kind: VirtualAccountType,
    pub currency: String,
    /// The number payers send money to, at `bankName`; null for a crypto
    /// address.
    #[schema(example = "0123456789")]
    pub account_number: Option<String>,
    pub bank_name: Option<String>,
    pub account_name: Option<String>,
    /// The deposit address payers send the stablecoin to, on `chain`; null
    /// for a bank account.
    pub address: Option<String>,
    /// The network of `address`; null for a bank account.
    #[schema(example = "base")]
    pub chain: Option<String>,
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
