//! The sandbox's deterministic behaviours, as one table. `GET
//! /v1/simulations` renders this table and the simulated rails read their
//! outcomes from it, so the index cannot drift from what the sandbox does.

use sika_engine::movements::{ScheduledStep, Step};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::stack_kind::StackKind;

/// Simulations exist only on the sandbox stack: the live stack answers them
/// `404`, as if they were not there.
pub(crate) fn sandbox_only(kind: StackKind) -> ApiResult<()> {
    match kind {
        StackKind::Sandbox => Ok(()),
        StackKind::Live => Err(ApiError::not_found("simulations exist only on the sandbox stack")),
    }
}

/// The rail of the sandbox's movements.
pub(crate) const RAIL: sika_engine::Rail = sika_engine::Rail::SandboxSimulator;

/// A sandbox collection of `amount` (minor units at `scale`): its rail, the
/// note its timeline opens with, and the steps that settle it as the
/// amount's trigger digits say (delays multiplied by `time_scale`).
pub(crate) fn collection_rail(
    amount: i128,
    scale: u32,
    payer: Option<&str>,
    time_scale: f64,
) -> (sika_engine::Rail, String, Vec<ScheduledStep>) {
    let outcome = outcome(COLLECTION_SCENARIOS, &trigger_digits(amount, scale));
    let prompted = payer.map(|payer| format!(" prompted {payer}")).unwrap_or_default();
    (
        RAIL,
        format!("Sandbox simulator{prompted}; expected outcome: {outcome}"),
        collection_steps(outcome, time_scale),
    )
}

/// The note a sandbox payout's timeline opens with, for `outcome`.
pub(crate) fn payout_note(outcome: &str) -> String {
    format!("Sandbox simulator; expected outcome: {outcome}")
}

pub(crate) struct Trigger {
    pub field: &'static str,
    pub rule: &'static str,
}

pub(crate) struct Simulation {
    pub operation: &'static str,
    pub method: &'static str,
    pub path: &'static str,
    pub description: &'static str,
    pub outcomes: &'static [&'static str],
    /// Every entry has one, as the spec's shape says; a call whose outcome
    /// nothing chooses has rule `none` and only a `default` scenario.
    pub trigger: Trigger,
    /// Two digits (or `default`) → outcome, as the spec's shape says.
    pub scenarios: &'static [(&'static str, &'static str)],
}

/// What an account number ends with, before a validation scenario's two
/// digits, for the scenario to apply: `…000000` is not found, `…000001`
/// closed, `…000002` a timeout (the spec's six-digit suffixes).
pub(crate) const VALIDATION_SUFFIX_PREFIX: &str = "0000";

/// The account-validation outcomes by `accountNumber` suffix: the
/// scenario's two digits after [`VALIDATION_SUFFIX_PREFIX`].
pub(crate) const VALIDATION_SCENARIOS: &[(&str, &str)] =
    &[("00", "account_not_found"), ("01", "account_closed"), ("02", "timeout"), ("default", "valid")];

/// A trigger-less call: nothing in the request chooses its outcome.
const NO_TRIGGER: Trigger = Trigger { field: "amount", rule: "none" };

/// Collection outcomes by the first two fraction digits of `amount`.
pub(crate) const COLLECTION_SCENARIOS: &[(&str, &str)] = &[
    ("50", "delayed_completion"),
    ("51", "failed"),
    ("52", "customer_timeout"),
    ("99", "transient_error_then_reconciled"),
    ("default", "completed"),
];

/// Payout outcomes by the first two fraction digits of `amount`.
pub(crate) const PAYOUT_SCENARIOS: &[(&str, &str)] = &[
    ("01", "rejected"),
    ("03", "timeout_then_reconciled"),
    ("05", "completed_then_reversed"),
    ("default", "completed"),
];

/// Refund outcomes by the last two decimal digits of the refund's amount.
pub(crate) const REFUND_SCENARIOS: &[(&str, &str)] =
    &[("61", "failed"), ("63", "delayed_completion"), ("default", "completed")];

pub(crate) const SIMULATIONS: &[Simulation] = &[
    Simulation {
        operation: "create_collection",
        method: "POST",
        path: "/v1/collections",
        description: "Sandbox collections settle by the last two decimal digits of amount (the cents; for currencies without decimals, the last two digits).",
        outcomes: &[
            "completed",
            "delayed_completion",
            "failed",
            "customer_timeout",
            "transient_error_then_reconciled",
        ],
        trigger: Trigger { field: "amount", rule: "last_two_decimal_digits" },
        scenarios: COLLECTION_SCENARIOS,
    },
    Simulation {
        operation: "create_payout",
        method: "POST",
        path: "/v1/payouts",
        description: "Sandbox payouts settle by the last two decimal digits of from.amount. 05 completes, then the rail reverses it a minute later: the payout ends reversed, its amount back on the balance (the fee kept), and payout.reversed fires.",
        outcomes: &["completed", "rejected", "timeout_then_reconciled", "completed_then_reversed"],
        trigger: Trigger { field: "from.amount", rule: "last_two_decimal_digits" },
        scenarios: PAYOUT_SCENARIOS,
    },
    Simulation {
        operation: "create_refund",
        method: "POST",
        path: "/v1/refunds",
        description: "Sandbox refunds settle by the last two decimal digits of the refund's amount (given, or what is left to refund): 61 fails (the hold is released), 63 stays pending for one minute of the node's clock and then completes, any other completes.",
        outcomes: &["completed", "failed", "delayed_completion"],
        trigger: Trigger { field: "amount", rule: "last_two_decimal_digits" },
        scenarios: REFUND_SCENARIOS,
    },
    Simulation {
        operation: "simulate_virtual_account_deposit",
        method: "POST",
        path: "/v1/simulations/virtual-accounts/{id}/deposits",
        description: "Credits a deposit made to a virtual account to the organization's balance and fires account.credited.",
        outcomes: &["completed"],
        trigger: NO_TRIGGER,
        scenarios: &[("default", "completed")],
    },
    Simulation {
        operation: "simulate_deposit",
        method: "POST",
        path: "/v1/simulations/deposits",
        description: "Credits the given amount to the organization's balance in that currency and fires account.credited.",
        outcomes: &["completed"],
        trigger: NO_TRIGGER,
        scenarios: &[("default", "completed")],
    },
    Simulation {
        operation: "simulate_dispute",
        method: "POST",
        path: "/v1/simulations/disputes",
        description: "The payer disputes a completed collection (collectionId) or the newest completed payment of a payment link (paymentLinkId); the dispute opens and dispute.created fires. amount defaults to the paid amount. Its amount is held on the balance of its currency (what is available when that is less; the next inflows hold the rest, each firing dispute.updated).",
        outcomes: &["open"],
        trigger: NO_TRIGGER,
        scenarios: &[("default", "open")],
    },
    Simulation {
        operation: "simulate_dispute_resolution",
        method: "POST",
        path: "/v1/simulations/disputes/{id}/resolve",
        description: "Resolves an open dispute with the given outcome: accepted takes the hold (outcome lost, the rest of the amount from the next inflows), declined releases it (outcome won); dispute.updated and dispute.closed fire, and its thread takes no more messages.",
        outcomes: &["accepted", "declined"],
        // The outcome is the request's own `outcome`: no scenario chooses it.
        trigger: Trigger { field: "outcome", rule: "value" },
        scenarios: &[],
    },
    Simulation {
        operation: "validate_destinations",
        method: "POST",
        path: "/v1/validate/bulk",
        description: "Destination validation in the sandbox is decided by the last six digits of accountNumber: 0000 followed by a scenario's two digits (000000 not found, 000001 closed, 000002 timeout); any other number is valid. Payouts to such a number are refused the same way.",
        outcomes: &["valid", "account_not_found", "account_closed", "timeout"],
        trigger: Trigger { field: "accountNumber", rule: "account_number_suffix" },
        scenarios: VALIDATION_SCENARIOS,
    },
    Simulation {
        operation: "simulate_order_funds",
        method: "POST",
        path: "/v1/simulations/orders/{id}/funds",
        description: "Funds arrive for an order in its from.currency. The amount compared with the order's chooses the outcome: equal, funds_received; more, overpaid; less, underpaid (the order proceeds on what arrived). For a crypto order, fewer confirmations than it needs leave it awaiting_confirmations. The payout leg then follows the payout triggers.",
        outcomes: &["funds_received", "overpaid", "underpaid", "awaiting_confirmations"],
        trigger: Trigger { field: "amount", rule: "compared_to_order_amount" },
        scenarios: &[("default", "funds_received")],
    },
];

/// The sandbox validation outcome for an account number: `None` when valid,
/// otherwise the reason.
pub(crate) fn validation_reason(account_number: &str) -> Option<&'static str> {
    let (rest, digits) = account_number.split_at_checked(account_number.len().checked_sub(2)?)?;
    if !rest.ends_with(VALIDATION_SUFFIX_PREFIX) {
        return None;
    }
    VALIDATION_SCENARIOS
        .iter()
        .find(|(key, _)| *key != "default" && *key == digits)
        .map(|(_, outcome)| *outcome)
}

/// One behaviour as `GET /v1/simulations` lists it.
pub(crate) fn render(simulation: &Simulation) -> sika_api::simulations::Simulation {
    use sika_api::simulations::{Simulation as View, SimulationTrigger};
    View {
        operation: simulation.operation.to_string(),
        method: simulation.method.to_string(),
        path: simulation.path.to_string(),
        description: simulation.description.to_string(),
        outcomes: simulation.outcomes.iter().map(|o| o.to_string()).collect(),
        trigger: SimulationTrigger {
            field: simulation.trigger.field.to_string(),
            rule: simulation.trigger.rule.to_string(),
        },
        scenarios: simulation.scenarios.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
    }
}

/// The two digits that choose a sandbox outcome: the first two fraction
/// digits (the cents), or the last two digits for currencies without
/// fraction digits.
pub(crate) fn trigger_digits(amount_minor: i128, scale: u32) -> String {
    let cents = if scale >= 2 { amount_minor / 10i128.pow(scale - 2) } else { amount_minor };
    format!("{:02}", cents.rem_euclid(100))
}

/// The outcome `scenarios` gives for `digits`.
pub(crate) fn outcome(scenarios: &[(&str, &'static str)], digits: &str) -> &'static str {
    scenarios
        .iter()
        .find(|(d, _)| *d == digits)
        .or_else(|| scenarios.iter().find(|(d, _)| *d == "default"))
        .map(|(_, o)| *o)
        .unwrap_or("completed")
}

fn after(ms: i64, time_scale: f64, step: Step) -> ScheduledStep {
    ScheduledStep { after_ms: ((ms as f64) * time_scale).round() as i64, step }
}

fn note(title: &str, detail: &str) -> Step {
    Step::Note { kind: "provider".into(), title: title.into(), detail: detail.into() }
}

fn settle(success: bool, message: &str) -> Step {
    Step::Settle { success, message: message.into() }
}

/// How long after completing a sandbox `05` payout is reversed (unscaled),
/// as long as the other triggers' delayed outcomes take.
pub(crate) const PAYOUT_REVERSAL_AFTER_MS: i64 = 60_000;

/// What the simulated rail will report for a payout (unscaled delays: 2 s
/// to settle; a timeout is noticed at 30 s and reconciled at 60 s; a
/// reversal comes [`PAYOUT_REVERSAL_AFTER_MS`] after the completion). Every
/// step is a job stored with the payout, so a restart loses none.
pub(crate) fn payout_steps(outcome: &str, time_scale: f64) -> Vec<ScheduledStep> {
    match outcome {
        "completed_then_reversed" => vec![
            after(2_000, time_scale, settle(true, "Delivered to the recipient")),
            after(
                2_000 + PAYOUT_REVERSAL_AFTER_MS,
                time_scale,
                Step::Reverse {
                    message: "The recipient's provider returned the funds (sandbox trigger 05)".into(),
                },
            ),
        ],
        "rejected" => vec![after(
            2_000,
            time_scale,
            settle(false, "The provider rejected the payout (sandbox trigger 01)"),
        )],
        "timeout_then_reconciled" => vec![
            after(
                30_000,
                time_scale,
                note("Provider timed out", "No answer from the provider; reconciling (sandbox trigger 03)"),
            ),
            after(60_000, time_scale, settle(true, "Delivered; confirmed by reconciliation")),
        ],
        _ => vec![after(2_000, time_scale, settle(true, "Delivered to the recipient"))],
    }
}

/// What the simulated rail will report for a refund with `outcome`
/// (unscaled delays: 2 s to settle, one minute for a delayed completion).
pub(crate) fn refund_steps(outcome: &str, time_scale: f64) -> Vec<ScheduledStep> {
    match outcome {
        "failed" => vec![after(
            2_000,
            time_scale,
            settle(false, "The provider could not return the money to the payer (sandbox trigger 61)"),
        )],
        "delayed_completion" => {
            vec![after(60_000, time_scale, settle(true, "Refunded to the payer after a delay"))]
        }
        _ => vec![after(2_000, time_scale, settle(true, "Refunded to the payer"))],
    }
}

/// The simulated rail's steps for a refund in a currency of `scale`
/// digits, by the amount the engine settles on (a refund of what is left
/// learns its amount in the writer).
pub(crate) fn refund_schedule(scale: u32, time_scale: f64) -> sika_engine::refunds::RefundSchedule {
    let by_digits = REFUND_SCENARIOS
        .iter()
        .filter_map(|(digits, outcome)| Some((digits.parse::<u8>().ok()?, refund_steps(outcome, time_scale))))
        .collect();
    sika_engine::refunds::RefundSchedule {
        minor_per_cent: if scale >= 2 { 10i128.pow(scale - 2) } else { 1 },
        by_digits,
        otherwise: refund_steps("completed", time_scale),
    }
}

/// Why a simulated collection failed, as the merchant reads it; the
/// payer's page words each for the payer (`SessionView::payer_message`).
pub(crate) const COLLECTION_DECLINED: &str = "The payer declined the charge";
pub(crate) const COLLECTION_NOT_APPROVED: &str = "The payer did not approve in time";

/// What the simulated rail will report for a collection.
pub(crate) fn collection_steps(outcome: &str, time_scale: f64) -> Vec<ScheduledStep> {
    match outcome {
        "delayed_completion" => {
            vec![after(60_000, time_scale, settle(true, "The payer approved after a delay"))]
        }
        "failed" => vec![after(2_000, time_scale, settle(false, COLLECTION_DECLINED))],
        "customer_timeout" => {
            vec![after(60_000, time_scale, settle(false, COLLECTION_NOT_APPROVED))]
        }
        "transient_error_then_reconciled" => vec![
            after(
                2_000,
                time_scale,
                note("Transient provider error", "The provider returned an error; reconciling"),
            ),
            after(10_000, time_scale, settle(true, "Approved; confirmed by reconciliation")),
        ],
        _ => vec![after(2_000, time_scale, settle(true, "The payer approved the charge"))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's shape: scenarios keyed by two digits or `default`, each
    /// naming one of the entry's outcomes.
    #[test]
    fn every_entry_has_the_specs_shape() {
        for simulation in SIMULATIONS {
            for (key, outcome) in simulation.scenarios {
                let two_digits = key.len() == 2 && key.bytes().all(|b| b.is_ascii_digit());
                assert!(two_digits || *key == "default", "{}: {key}", simulation.path);
                assert!(simulation.outcomes.contains(outcome), "{}: {outcome}", simulation.path);
            }
        }
        assert_eq!(validation_reason("0241000000"), Some("account_not_found"));
        assert_eq!(validation_reason("0241000001"), Some("account_closed"));
        assert_eq!(validation_reason("0241000002"), Some("timeout"));
        assert_eq!(validation_reason("0241200001"), None);
        assert_eq!(validation_reason("1"), None);
        assert_eq!(validation_reason("000001"), Some("account_closed"));
    }

    #[test]
    fn digits_and_outcomes() {
        assert_eq!(trigger_digits(1051, 2), "51");
        assert_eq!(trigger_digits(1000, 2), "00");
        assert_eq!(trigger_digits(10_510_000, 6), "51");
        assert_eq!(trigger_digits(1503, 0), "03");
        assert_eq!(outcome(COLLECTION_SCENARIOS, "99"), "transient_error_then_reconciled");
        assert_eq!(outcome(COLLECTION_SCENARIOS, "42"), "completed");
        assert_eq!(outcome(PAYOUT_SCENARIOS, "01"), "rejected");
        assert!(matches!(payout_steps("rejected", 1.0)[0].step, Step::Settle { success: false, .. }));
        assert_eq!(payout_steps("completed", 0.001)[0].after_ms, 2);
        let refunds = refund_schedule(2, 1.0);
        assert!(matches!(refunds.steps(1_061)[0].step, Step::Settle { success: false, .. }));
        assert_eq!(refunds.steps(1_063)[0].after_ms, 60_000);
        assert!(matches!(refunds.steps(1_000)[0].step, Step::Settle { success: true, .. }));
        assert_eq!(refund_schedule(6, 1.0).steps(10_610_000)[0].after_ms, 2_000);
        assert!(matches!(refund_schedule(0, 1.0).steps(1_561)[0].step, Step::Settle { success: false, .. }));
        assert_eq!(outcome(PAYOUT_SCENARIOS, "05"), "completed_then_reversed");
        let reversed = payout_steps("completed_then_reversed", 1.0);
        assert!(matches!(reversed[0].step, Step::Settle { success: true, .. }));
        assert!(matches!(reversed[1].step, Step::Reverse { .. }));
        assert_eq!(reversed[1].after_ms - reversed[0].after_ms, PAYOUT_REVERSAL_AFTER_MS);
    }

    /// The rail's name, every note the simulator opens a payout or an
    /// unprompted collection with, and every message it settles or
    /// reverses one with are the engine's phrases, which records store in
    /// two bytes (format 21): a text added here and not there would be
    /// spelled out in every payout again.
    #[test]
    fn the_simulators_texts_are_stored_as_phrases() {
        use sika_engine::records::is_phrase;
        let messages = |steps: Vec<ScheduledStep>| {
            steps.into_iter().filter_map(|s| match s.step {
                Step::Settle { message, .. } | Step::Reverse { message } => Some(message),
                _ => None,
            })
        };
        let mut texts = vec![RAIL.name().to_string()];
        for (_, outcome) in PAYOUT_SCENARIOS {
            texts.push(payout_note(outcome));
            texts.extend(messages(payout_steps(outcome, 1.0)));
        }
        for (digits, outcome) in COLLECTION_SCENARIOS {
            let cents = digits.parse::<i128>().unwrap_or(0);
            let (rail, note, steps) = collection_rail(1_000 + cents, 2, None, 1.0);
            assert_eq!(rail, RAIL);
            texts.push(note);
            texts.extend(messages(steps));
            texts.extend(messages(collection_steps(outcome, 1.0)));
        }
        for (_, outcome) in REFUND_SCENARIOS {
            texts.extend(messages(refund_steps(outcome, 1.0)));
        }
        for text in texts {
            assert!(is_phrase(&text), "{text:?} is not one of sika_engine::records::PHRASES");
        }
    }
}
