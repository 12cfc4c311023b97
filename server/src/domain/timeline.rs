//! A timeline's English. The engine stores what happened as typed facts
//! (`sika_engine::timeline::Fact`); this module words each one, so a line
//! can be reworded here without touching a stored record. Lines stored
//! before format 6 (`Fact::Legacy`) and notes a rail or the operator wrote
//! keep their own words.

use sika_engine::money::Money;
use sika_engine::timeline::{Actor, Fact, Handover, Movement, OrderFailure, TimelineEntry};

/// One worded line of a timeline, before its time is rendered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub at: i64,
    pub kind: String,
    pub title: String,
    pub detail: String,
}

impl Line {
    pub(crate) fn new(at: i64, kind: &str, title: impl Into<String>, detail: impl Into<String>) -> Line {
        Line { at, kind: kind.to_string(), title: title.into(), detail: detail.into() }
    }
}

/// A stored timeline entry, worded.
pub(crate) fn line(entry: &TimelineEntry) -> Line {
    let [kind, title, detail] = words(&entry.fact);
    Line { at: entry.at, kind, title, detail }
}

/// Whether the line records the movement's hand-over to `provider`, as a
/// fact or in the words format 5 stored.
pub(crate) fn sent_to(fact: &Fact, provider: &str) -> bool {
    match fact {
        Fact::Sent { provider: sent, .. } => sent == provider,
        Fact::Legacy { title, .. } => *title == sent_title(provider),
        _ => false,
    }
}

/// The title of a hand-over to `provider`.
fn sent_title(provider: &str) -> String {
    format!("Sent to {provider}")
}

/// Minor units as text at their currency's digits (the units themselves
/// for a currency the node does not know).
fn amount(minor: i128, currency: &str) -> String {
    Money::of(currency, minor).map_or_else(|_| minor.to_string(), |money| money.amount())
}

/// A fact's kind, title and detail, as the API shows them.
#[expect(clippy::too_many_lines)]
pub fn words(fact: &Fact) -> [String; 3] {
    let of = |kind: &str, title: &str, detail: String| [kind.to_string(), title.to_string(), detail];
    match fact {
        Fact::Legacy { kind, title, detail } | Fact::Note { kind, title, detail } => {
            [kind.clone(), title.clone(), detail.clone()]
        }
        Fact::Sent { provider, detail } => of("provider", &sent_title(provider), detail.clone()),
        Fact::PayoutCreated { amount: minor, currency, destination } => of(
            "state",
            "Payout created",
            format!("Status pending; {} {currency} to {destination}", amount(*minor, currency)),
        ),
        Fact::FundsHeld { amount: minor, currency, account } => {
            of("ledger", "Funds held", format!("{} {currency} held on {account}", amount(*minor, currency)))
        }
        Fact::FeeHeld { amount: minor, currency } => {
            of("fee", "Fee held", format!("{} {currency} fee", amount(*minor, currency)))
        }
        Fact::HandedOver { handover, note } => match handover {
            Handover::Operator => of("operator", "Waiting for the operator", note.clone()),
            Handover::Rail => of("provider", "Sent to rail", note.clone()),
            Handover::Prompt => of("provider", "Prompt sent", note.clone()),
            Handover::Payment => of("provider", "Waiting for the payment", note.clone()),
        },
        Fact::Settled { movement, actor, success, message } => {
            let title = match (movement, success, actor) {
                (Movement::Payout, true, Actor::Rail) => "Provider confirmed delivery",
                (Movement::Payout, false, Actor::Rail) => "Provider reported a failure",
                (Movement::Payout, true, Actor::Operator) => "Settled by the operator",
                (Movement::Collection, true, Actor::Rail) => "Payer approved",
                (Movement::Collection, true, Actor::Operator) => "Payment confirmed by the operator",
                (Movement::Collection, false, Actor::Rail) => "Collection failed",
                (Movement::Refund, true, Actor::Rail) => "Provider confirmed the refund",
                (Movement::Refund, false, Actor::Rail) => "Provider reported a failure",
                (Movement::Refund, true, Actor::Operator) => "Refunded by the operator",
                (_, false, Actor::Operator) => "Failed by the operator",
            };
            let kind = match actor {
                Actor::Rail => "provider",
                Actor::Operator => "operator",
            };
            of(kind, title, message.clone())
        }
        Fact::FundsDebited { amount: minor, currency } => of(
            "ledger",
            "Funds debited",
            format!("{} {currency} debited and fee collected", amount(*minor, currency)),
        ),
        Fact::BalanceRefunded { amount: minor, currency } => of(
            "ledger",
            "Balance refunded",
            format!("{} {currency} released to the balance", amount(*minor, currency)),
        ),
        Fact::CollectionCreated { amount: minor, currency, payer } => {
            let payer = payer.as_ref().map(|payer| format!(" from {payer}")).unwrap_or_default();
            of(
                "state",
                "Collection created",
                format!("Status pending; {} {currency}{payer}", amount(*minor, currency)),
            )
        }
        Fact::PendingCredit { amount: minor, currency, account } => of(
            "ledger",
            "Pending credit",
            format!("{} {currency} pending on {account}", amount(*minor, currency)),
        ),
        Fact::BalanceCredited { amount: minor, currency, account } => of(
            "ledger",
            "Balance credited",
            format!("{} {currency} available on {account}", amount(*minor, currency)),
        ),
        Fact::PendingCreditReleased { amount: minor, currency } => of(
            "ledger",
            "Pending credit released",
            format!("{} {currency} will not arrive", amount(*minor, currency)),
        ),
        Fact::StatusChanged { movement, completed } => {
            let subject = match movement {
                Movement::Payout => "Payout",
                Movement::Collection => "Collection",
                Movement::Refund => "Refund",
            };
            let status = if *completed { "completed" } else { "failed" };
            of("state", &format!("{subject} {status}"), format!("Status {status}"))
        }
        Fact::RefundCreated { amount: minor, currency, collection_id } => of(
            "state",
            "Refund created",
            format!(
                "Status pending; {} {currency} back to the payer of {collection_id}",
                amount(*minor, currency)
            ),
        ),
        Fact::RefundDebited { amount: minor, currency } => of(
            "ledger",
            "Funds debited",
            format!("{} {currency} debited and returned to the payer", amount(*minor, currency)),
        ),
        Fact::OrderCreated { amount: minor, currency, method } => of(
            "state",
            "Order created",
            format!("Awaiting {} {currency} by {method}", amount(*minor, currency)),
        ),
        Fact::DepositInstructionsIssued => {
            of("collection", "Deposit instructions issued", "The payer can now send the funds".into())
        }
        Fact::FundsSeen { amount: minor, currency, confirmations, required } => of(
            "collection",
            "Funds seen on-chain",
            format!(
                "{} {currency} with {confirmations} of {required} confirmations",
                amount(*minor, currency)
            ),
        ),
        Fact::FundsReceived { amount: minor, currency, account } => of(
            "collection",
            "Funds received",
            format!("{} {currency} credited to {account}", amount(*minor, currency)),
        ),
        Fact::AmountMismatch { over, expected, currency } => of(
            "collection",
            if *over { "Overpaid" } else { "Underpaid" },
            format!("Expected {}; proceeding on actuals", amount(*expected, currency)),
        ),
        Fact::FundsConverted { from_amount, from_currency, to_amount, to_currency, rate } => of(
            "conversion",
            "Funds converted",
            format!(
                "{} {from_currency} to {} {to_currency} at {rate}",
                amount(*from_amount, from_currency),
                amount(*to_amount, to_currency)
            ),
        ),
        Fact::PayoutStarted { payout_id, amount: minor, currency } => of(
            "payout",
            "Payout started",
            format!("Payout {payout_id} of {} {currency}", amount(*minor, currency)),
        ),
        Fact::PayoutNotPossible { reason } => of("payout", "Payout not possible", reason.clone()),
        Fact::OrderFailed { cause } => of(
            "state",
            "Order failed",
            match cause {
                OrderFailure::NoPayout => "The funds remain on the balance",
                OrderFailure::PayoutFailed => "The payout failed; the funds remain on the balance",
            }
            .into(),
        ),
        Fact::OrderCompleted => of("state", "Order completed", "The payout was delivered".into()),
        Fact::OrderExpired => of("state", "Order expired", "No funds arrived before the deadline".into()),
        Fact::Reversed { message } => of("provider", "Provider reversed the payout", message.clone()),
        Fact::ReversalCredited { amount: minor, fee, currency, account } => of(
            "ledger",
            "Amount returned",
            format!(
                "{} {currency} back on {account}; the {} {currency} fee is kept",
                amount(*minor, currency),
                amount(*fee, currency)
            ),
        ),
        Fact::PayoutReversed => of("state", "Payout reversed", "Status reversed".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sika_engine::storage::{decode, encode};

    #[test]
    fn a_reworded_title_needs_no_migration_of_what_is_stored() {
        let fact = Fact::StatusChanged { movement: Movement::Payout, completed: true };
        let stored = encode(&TimelineEntry::new(1_700_000_000_000, fact));
        assert!(
            !stored.windows(b"completed".len()).any(|w| w.eq_ignore_ascii_case(b"completed")),
            "the record holds the fact, not its English"
        );
        let read: TimelineEntry = decode(&stored).unwrap();
        assert_eq!(
            line(&read),
            Line::new(1_700_000_000_000, "state", "Payout completed", "Status completed")
        );
        // Another wording of the same stored bytes: only the renderer changes.
        let reworded = |fact: &Fact| match fact {
            Fact::StatusChanged { movement: Movement::Payout, completed: true } => {
                "Payout delivered".to_string()
            }
            other => words(other)[1].clone(),
        };
        assert_eq!(reworded(&read.fact), "Payout delivered");
    }

    #[test]
    fn facts_read_as_the_api_worded_them_and_legacy_lines_keep_their_words() {
        let cases = [
            (
                Fact::PayoutCreated { amount: 1050, currency: "USD".into(), destination: "bank_ng".into() },
                ["state", "Payout created", "Status pending; 10.50 USD to bank_ng"],
            ),
            (
                Fact::Settled {
                    movement: Movement::Collection,
                    actor: Actor::Operator,
                    success: false,
                    message: "no".into(),
                },
                ["operator", "Failed by the operator", "no"],
            ),
            (
                Fact::AmountMismatch { over: false, expected: 2500, currency: "XOF".into() },
                ["collection", "Underpaid", "Expected 2500; proceeding on actuals"],
            ),
            (Fact::FeeHeld { amount: 7, currency: "ZZZ".into() }, ["fee", "Fee held", "7 ZZZ fee"]),
            (
                Fact::ReversalCredited {
                    amount: 2505,
                    fee: 50,
                    currency: "USD".into(),
                    account: "acct_1".into(),
                },
                ["ledger", "Amount returned", "25.05 USD back on acct_1; the 0.50 USD fee is kept"],
            ),
            (Fact::PayoutReversed, ["state", "Payout reversed", "Status reversed"]),
            (
                Fact::Legacy { kind: "state".into(), title: "Old words".into(), detail: "kept".into() },
                ["state", "Old words", "kept"],
            ),
        ];
        for (fact, expected) in cases {
            assert_eq!(words(&fact), expected.map(str::to_string), "{fact:?}");
        }
    }

    #[test]
    fn a_hand_over_is_found_as_a_fact_or_in_format_5_words() {
        let sent = Fact::Sent { provider: "Flutterwave".into(), detail: "reference pay_1".into() };
        assert!(sent_to(&sent, "Flutterwave"));
        assert!(!sent_to(&sent, "Paystack"));
        let legacy = Fact::Legacy {
            kind: "provider".into(),
            title: "Sent to Flutterwave".into(),
            detail: String::new(),
        };
        assert!(sent_to(&legacy, "Flutterwave"));
        assert_eq!(words(&sent)[1], "Sent to Flutterwave");
    }
}
