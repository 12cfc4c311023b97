//! Sandbox simulations: the deterministic behaviours of the sandbox stack,
//! and the calls that play a counterparty's part (a deposit lands, a
//! customer pays into a virtual account, funds arrive for an order). The
//! live stack answers `404` to all of them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::AmountInput;

/// What chooses the outcome of a behaviour built into the normal API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SimulationTrigger {
    /// The request field read, such as `amount` or `accountNumber`.
    #[schema(example = "amount")]
    pub field: String,
    /// How its value is read. `last_two_decimal_digits` (the spec's): the
    /// amount's cents, or its last two digits in a currency without
    /// fraction digits, are the scenario's key. Sika's extensions:
    /// `account_number_suffix`, the account number ends in `0000` followed
    /// by the scenario's two digits; `compared_to_order_amount`, the amount
    /// against the order's (see the entry's `description`); `value`, the
    /// field's value is itself the outcome (`scenarios` is empty); `none`,
    /// nothing chooses the outcome (only a `default` scenario).
    #[schema(example = "last_two_decimal_digits")]
    pub rule: String,
}

/// One deterministic sandbox behaviour: a simulation call, or a trigger
/// built into a normal call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Simulation {
    #[schema(example = "create_collection")]
    pub operation: String,
    /// The HTTP method of the call.
    #[schema(example = "POST")]
    pub method: String,
    #[schema(example = "/v1/collections")]
    pub path: String,
    pub description: String,
    /// Every outcome the behaviour can have.
    pub outcomes: Vec<String>,
    /// What chooses the outcome (rule `none` when nothing does).
    pub trigger: SimulationTrigger,
    /// The trigger's two digits, or `default`, to the outcome it gives.
    #[schema(example = json!({ "51": "failed", "default": "completed" }))]
    pub scenarios: BTreeMap<String, String>,
}

/// `POST /v1/simulations/deposits`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"currency": "GHS", "amount": "100.00"})))]
pub struct SimulateDeposit {
    /// The balance credited, case-insensitive.
    #[schema(max_length = 10, example = "GHS")]
    pub currency: String,
    pub amount: AmountInput,
    /// Your own reference, unique per organization: the same reference with
    /// the same body replays the deposit (200); with another body, `409 duplicate`.
    #[schema(max_length = 255)]
    pub external_reference: Option<String>,
}

/// `POST /v1/simulations/virtual-accounts/{id}/deposits`: what the customer
/// paid, in the virtual account's currency.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"amount": "5000.00"})))]
pub struct SimulateVirtualAccountDeposit {
    pub amount: AmountInput,
    /// As for a deposit: the same reference with the same body replays it.
    #[schema(max_length = 255)]
    pub external_reference: Option<String>,
}

/// `POST /v1/simulations/orders/{id}/funds`: money arriving for an order,
/// in its `from.currency`: exactly the amount, more or less.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"amount": "200.00", "confirmations": 12})))]
pub struct SimulateOrderFunds {
    pub amount: AmountInput,
    /// For a crypto order, how many confirmations the funds have; fewer
    /// than the order needs leaves it awaiting confirmations. Defaults to
    /// enough.
    pub confirmations: Option<u32>,
}

/// A simulated deposit's state: it lands at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DepositStatus {
    Completed,
}

/// Money credited to a balance by a simulation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deposit {
    #[schema(example = "dep_0VbowfAbCdEf", pattern = "^dep_")]
    pub id: String,
    pub status: DepositStatus,
    /// The balance account credited.
    pub account_number: String,
    #[schema(example = "GHS")]
    pub currency: String,
    #[schema(pattern = r"^-?[0-9]+(\.[0-9]+)?$", example = "100.00")]
    pub amount: String,
    pub external_reference: Option<String>,
    /// The virtual account paid into; absent for a plain deposit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(example = "va_0VbowfAbCdEf")]
    pub virtual_account_id: Option<String>,
    pub created_at: String,
}

/// `{deposit}`: what a deposit simulation answers (201, or 200 for a replay).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DepositEnvelope {
    pub deposit: Deposit,
}
