//! Destination validation: check payout destinations before paying out to
//! them. The sandbox decides by the account number's last six digits (see
//! `GET /v1/simulations`). The live stack never applies the sandbox's
//! suffixes: it looks a bank account up at the provider the operator
//! routes its method through, where that provider offers a lookup
//! (Flutterwave's account resolve), and otherwise checks the shape only;
//! each result's `checked` says which.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/validate/bulk`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(examples(json!({"items": [{"code": "mtn_gh", "accountNumber": "+233241234567"}, {"code": "bank_ng", "accountNumber": "0123456789", "routingNumber": "058"}]})))]
pub struct ValidateDestinations {
    /// 1 to 100 destinations, answered in the same order.
    #[schema(min_items = 1, max_items = 100)]
    pub items: Vec<DestinationItem>,
}

/// One destination to check.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DestinationItem {
    /// The payment method, such as `mtn_gh`; must not be empty.
    #[schema(max_length = 64, min_length = 1, example = "mtn_gh")]
    pub code: String,
    /// Required for bank and mobile-money methods.
    #[schema(max_length = 64, example = "+233241234567")]
    pub account_number: Option<String>,
    /// Required for crypto methods (an `accountNumber` is read as the
    /// address when this is absent).
    #[schema(max_length = 128)]
    pub address: Option<String>,
    /// The bank's code, for bank methods: one of the method's `bankCode`
    /// options. On live, a bank method routed through a provider with an
    /// account lookup needs it.
    #[schema(max_length = 64, example = "044")]
    pub routing_number: Option<String>,
}

/// Why a destination is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValidationReason {
    /// No payment method has this code.
    UnknownMethod,
    /// Neither `accountNumber` nor `address` was given (blank counts as missing).
    MissingAccount,
    /// A crypto address of the wrong shape for its chain.
    InvalidAddress,
    /// An account number of the wrong shape for its method (on live, where
    /// only the format is checked).
    InvalidAccountNumber,
    AccountNotFound,
    AccountClosed,
    /// The provider did not answer in time; try again.
    Timeout,
    /// A bank method whose lookup needs the bank's code, and the item has
    /// no `routingNumber`.
    MissingBankCode,
    /// A `routingNumber` that is not one of the method's `bankCode` options.
    InvalidBankCode,
    /// The provider that looks the account up failed or is down; try again.
    ProviderUnavailable,
}

/// What checking one destination found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DestinationCheck {
    pub valid: bool,
    /// The account holder's name, when a rail tells it: null for an
    /// invalid destination, a crypto address, and on live where only the
    /// format was checked.
    pub account_name: Option<String>,
    /// Why the destination is not valid; null when it is.
    // Text, as the sandbox's scenario table writes it.
    #[schema(value_type = Option<ValidationReason>)]
    pub reason: Option<String>,
    /// How far the check went: `rail` when a rail answered for the account
    /// (on the sandbox, its simulated rail by the suffix rules; on live, the
    /// provider's account lookup), `format` when only its shape was checked
    /// (live methods with no lookup): a `valid` destination there may still
    /// not exist.
    pub checked: ValidationDepth,
}

/// How far a destination check went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ValidationDepth {
    /// A rail looked the account up.
    Rail,
    /// Only the format was checked: method, presence, shape.
    Format,
}

/// One item's answer: the item's code and what checking it found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DestinationResult {
    /// The item's `code`, echoed.
    pub code: String,
    pub result: DestinationCheck,
}

/// What `POST /v1/validate/bulk` answers: a result per item, in the items'
/// order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DestinationResults {
    pub results: Vec<DestinationResult>,
}
