//! The ledger's arithmetic and invariants seen through the engine: sums
//! that would overflow are errors (never wraps or panics), and an invariant
//! broken by corrupt state fails the one command that meets it while the
//! writer goes on with the next.

use std::sync::Arc;

use sika_engine::clock::ManualClock;
use sika_engine::movements::{CapCheck, Destination, NewPayout};
use sika_engine::{Command, Engine, EngineConfig, EngineError, MoneyError, Outcome, QuoteAmount};

fn engine(configure: impl FnOnce(&mut EngineConfig)) -> Engine {
    let mut config = EngineConfig::new(None);
    config.clock = Arc::new(ManualClock::new(1_700_000_000_000));
    configure(&mut config);
    Engine::open(config).unwrap()
}

fn deposit(organization: &str, amount: i128) -> Command {
    Command::Deposit {
        organization: organization.into(),
        currency: "USD".into(),
        amount,
        external_reference: None,
    }
}

fn payout(reference: &str, from_amount: i128, fee_amount: i128, cap: Option<CapCheck>) -> Command {
    Command::CreatePayout(NewPayout {
        organization: "org_1".into(),
        from_currency: "USD".into(),
        from_amount,
        to: Destination { code: "US_BANK".into(), ..Default::default() },
        to_currency: "USD".into(),
        to_amount: from_amount,
        fee_amount,
        rate: "1".into(),
        narration: String::new(),
        metadata: "{}".into(),
        external_reference: reference.into(),
        api_key_id: None,
        cap,
        rail: "test".into(),
        rail_note: String::new(),
        schedule: Vec::new(),
        request_fingerprint: [reference.len() as u8; 32],
        order_id: None,
    })
}

fn cap(amount_usd_cents: i128) -> CapCheck {
    CapCheck {
        key_id: "key_1".into(),
        amount_usd_cents,
        per_transaction_usd_cents: None,
        daily_usd_cents: None,
        monthly_usd_cents: None,
        day: "2026-11-22".into(),
        month: "2026-11".into(),
    }
}

#[test]
fn a_payout_whose_amount_and_fee_overflow_is_the_callers_error() {
    let engine = engine(|_| {});
    engine.execute_blocking(deposit("org_1", 10_000)).unwrap();
    let refused = engine.execute_blocking(payout("p1", i128::MAX, 1, None));
    assert_eq!(refused, Err(EngineError::Money(MoneyError::Overflow)));
    let paid = engine.execute_blocking(payout("p2", 100, 1, None)).unwrap();
    assert!(matches!(paid.outcome, Outcome::Payout(_)), "the writer goes on");
    engine.shutdown();
}

#[test]
fn a_spend_cap_count_that_would_overflow_is_the_callers_error() {
    let engine = engine(|_| {});
    engine.execute_blocking(deposit("org_1", 10_000)).unwrap();
    engine.execute_blocking(payout("p1", 100, 0, Some(cap(5)))).unwrap();
    let refused = engine.execute_blocking(payout("p2", 100, 0, Some(cap(i128::MAX))));
    assert_eq!(refused, Err(EngineError::Money(MoneyError::Overflow)));
    let account = engine.read().unwrap().organization_account("org_1", "USD").unwrap().unwrap();
    assert_eq!(account.balances().unwrap().available, 9_900, "the refused payout held nothing");
    engine.shutdown();
}

#[test]
fn a_quote_expiry_past_the_clock_range_is_an_overflow() {
    let engine = engine(|config| config.quote_ttl_ms = i64::MAX);
    let refused = engine.execute_blocking(Command::CreateQuote {
        organization: "org_1".into(),
        from_currency: "USD".into(),
        to_currency: "GHS".into(),
        amount: QuoteAmount::From(1_000),
    });
    assert_eq!(refused, Err(EngineError::Overflow("quote expiry")));
    engine.shutdown();
}
