//! The sandbox's deterministic behaviours, as one table. `GET
//! /v1/simulations` renders this table and the simulated rails read their
//! outcomes from it, so the index cannot drift from what the sandbox does.

use serde_json::{Map, Value, json};

pub struct Trigger {
    pub field: &'static str,
    pub rule: &'static str,
}

pub struct Simulation {
    pub operation: &'static str,
    pub method: &'static str,
    pub path: &'static str,
    pub description: &'static str,
    pub outcomes: &'static [&'static str],
    pub trigger: Option<Trigger>,
    /// Trigger value (or `default`) → outcome.
    pub scenarios: &'static [(&'static str, &'static str)],
}

/// The account-validation outcomes by `accountNumber` suffix.
pub const VALIDATION_SCENARIOS: &[(&str, &str)] = &[
    ("000000", "account_not_found"),
    ("000001", "account_closed"),
    ("000002", "timeout"),
    ("default", "valid"),
];

pub const SIMULATIONS: &[Simulation] = &[
    Simulation {
        operation: "simulate_deposit",
        method: "POST",
        path: "/v1/simulations/deposits",
        description: "Credits the given amount to the organization's balance in that currency and fires account.credited.",
        outcomes: &["completed"],
        trigger: None,
        scenarios: &[("default", "completed")],
    },
    Simulation {
        operation: "validate_destinations",
        method: "POST",
        path: "/v1/validate/bulk",
        description: "Destination validation in the sandbox is decided by the last six digits of accountNumber.",
        outcomes: &["valid", "account_not_found", "account_closed", "timeout"],
        trigger: Some(Trigger { field: "accountNumber", rule: "account_number_suffix" }),
        scenarios: VALIDATION_SCENARIOS,
    },
];

/// The sandbox validation outcome for an account number: `None` when valid,
/// otherwise the reason.
pub fn validation_reason(account_number: &str) -> Option<&'static str> {
    VALIDATION_SCENARIOS
        .iter()
        .find(|(suffix, _)| *suffix != "default" && account_number.ends_with(suffix))
        .map(|(_, outcome)| *outcome)
}

pub fn render(simulation: &Simulation) -> Value {
    let scenarios: Map<String, Value> =
        simulation.scenarios.iter().map(|(k, v)| (k.to_string(), Value::String(v.to_string()))).collect();
    json!({
        "operation": simulation.operation,
        "method": simulation.method,
        "path": simulation.path,
        "description": simulation.description,
        "outcomes": simulation.outcomes,
        "trigger": simulation.trigger.as_ref().map(|t| json!({ "field": t.field, "rule": t.rule })),
        "scenarios": scenarios,
    })
}
