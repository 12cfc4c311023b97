//! Races: many threads submit the same thing at the same moment, against a
//! real database file. Whatever the interleaving, each effect happens once.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;

use sika_engine::{
    AccountRef, Applied, Command, Engine, EngineConfig, EngineError, Outcome, PendingState, QuoteAmount,
    QuoteRecord, TransferSpec,
};
use tempfile::TempDir;

const THREADS: usize = 64;

fn open() -> (TempDir, Engine) {
    let dir = tempfile::tempdir().expect("tempdir");
    let engine = Engine::open(EngineConfig::new(Some(dir.path().join("ledger.redb")))).expect("open");
    (dir, engine)
}

/// The outcome of the one result that was applied fresh (not replayed),
/// as `fresh` reads it; fails unless exactly one was.
fn the_one_fresh<T: std::fmt::Debug>(
    results: &[Result<Applied, EngineError>],
    fresh: impl Fn(&Outcome) -> Option<T>,
) -> T {
    let mut winners: Vec<T> = results
        .iter()
        .filter_map(|r| match r {
            Ok(Applied { outcome, replayed: false }) => fresh(outcome),
            _ => None,
        })
        .collect();
    assert_eq!(winners.len(), 1, "exactly one fresh outcome: {winners:?}");
    winners.remove(0)
}

/// Starts `THREADS` threads that wait on one barrier, then each submits
/// `command(i)`; returns the results in thread order. After the barrier the
/// threads also spin on a start line: waking from `Barrier` is a chain of
/// futex hand-offs that, on two cores, can outlast a whole commit.
fn race(engine: &Engine, command: impl Fn(usize) -> Command) -> Vec<Result<Applied, EngineError>> {
    let barrier = Arc::new(Barrier::new(THREADS));
    let ready = Arc::new(AtomicUsize::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|i| {
            let (engine, barrier, command, ready) =
                (engine.clone(), barrier.clone(), command(i), ready.clone());
            thread::spawn(move || {
                barrier.wait();
                ready.fetch_add(1, Ordering::SeqCst);
                while ready.load(Ordering::SeqCst) < THREADS {
                    thread::yield_now();
                }
                engine.execute_blocking(command)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("thread")).collect()
}

fn deposit(engine: &Engine, organization: &str, currency: &str, amount: i128) {
    engine
        .execute_blocking(Command::Deposit {
            organization: organization.into(),
            currency: currency.into(),
            amount,
            external_reference: None,
        })
        .expect("deposit");
}

fn available(engine: &Engine, organization: &str, currency: &str) -> i128 {
    engine
        .read()
        .expect("snapshot")
        .organization_account(organization, currency)
        .expect("read")
        .map_or(0, |a| a.balances().unwrap().available)
}

fn posted(from: &str, to: &str, amount: i128) -> TransferSpec {
    TransferSpec::Posted {
        debit: AccountRef::Organization(from.into()),
        credit: AccountRef::Organization(to.into()),
        currency: "USD".into(),
        amount,
        memo: "race".into(),
    }
}

/// A quote for org_q from `amount` minor units of USD to `to_currency`.
fn quote(engine: &Engine, to_currency: &str, amount: i128) -> QuoteRecord {
    let quoted = engine
        .execute_blocking(Command::CreateQuote {
            organization: "org_q".into(),
            from_currency: "USD".into(),
            to_currency: to_currency.into(),
            amount: QuoteAmount::From(amount),
        })
        .expect("quote");
    match quoted.outcome {
        Outcome::Quote(q) => *q,
        other => panic!("{other:?}"),
    }
}

fn assert_consistent(engine: &Engine) {
    let report = sika_engine::verify::verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// The ledger checks out after the race; then the engine stops.
fn assert_consistent_and_shut_down(engine: Engine) {
    assert_consistent(&engine);
    engine.shutdown();
}

#[test]
fn concurrent_executes_of_one_quote_convert_once() {
    let (_dir, engine) = open();
    deposit(&engine, "org_q", "USD", 1_000_000);
    let quote = quote(&engine, "GHS", 25_000);

    // The threads race into the queue while the writer is held before its
    // next batch, so every execute provably arrives before the executing
    // commit is acknowledged (on two cores a thread can otherwise be
    // descheduled for longer than a whole commit).
    let hold = engine.hold_writer();
    let racing = {
        let (engine, quote_id) = (engine.clone(), quote.id.clone());
        thread::spawn(move || {
            race(&engine, |_| Command::ExecuteQuote {
                organization: "org_q".into(),
                quote_id: quote_id.clone(),
                external_reference: None,
            })
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while engine.stats().queue_depth < THREADS - 1 && std::time::Instant::now() < deadline {
        thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(hold);
    let results = racing.join().expect("racing threads");

    let mut ids = BTreeSet::new();
    let mut fresh = 0;
    let mut refused = Vec::new();
    for (i, result) in results.iter().enumerate() {
        match result {
            Ok(Applied { outcome: Outcome::Conversion(c), replayed }) => {
                ids.insert(c.id.clone());
                fresh += usize::from(!replayed);
            }
            Err(EngineError::QuoteExecuted(_)) => refused.push(i),
            other => panic!("thread {i}: {other:?}"),
        }
    }
    assert!(
        refused.is_empty(),
        "every concurrent execute gets the conversion, but {} of {THREADS} threads (#{refused:?}) got \
         QuoteExecuted: they reached the engine after the executing batch was acknowledged",
        refused.len()
    );
    assert_eq!(ids.len(), 1, "all threads see the same conversion: {ids:?}");
    assert_eq!(fresh, 1, "exactly one execute did the conversion");
    let conversion_id = ids.into_iter().next().unwrap();

    let snapshot = engine.read().unwrap();
    let listed = snapshot.list("org_q", "conversions", None, 100).unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].1, conversion_id);
    drop(snapshot);
    assert_eq!(available(&engine, "org_q", "USD"), 1_000_000 - quote.from_amount);
    assert_eq!(available(&engine, "org_q", "GHS"), quote.to_amount);

    // A later execute is sequential, not concurrent: refused.
    let again = engine.execute_blocking(Command::ExecuteQuote {
        organization: "org_q".into(),
        quote_id: quote.id.clone(),
        external_reference: None,
    });
    assert!(matches!(again, Err(EngineError::QuoteExecuted(_))), "{again:?}");
    assert_consistent_and_shut_down(engine);
}

#[test]
fn concurrent_identical_deposits_apply_once() {
    let (_dir, engine) = open();
    let results = race(&engine, |_| Command::Deposit {
        organization: "org_d".into(),
        currency: "USD".into(),
        amount: 5_000,
        external_reference: Some("dep-1".into()),
    });

    let mut ids = BTreeSet::new();
    let mut fresh = 0;
    for (i, result) in results.iter().enumerate() {
        match result {
            Ok(Applied { outcome: Outcome::Deposit(d), replayed }) => {
                assert_eq!(d.amount, 5_000);
                ids.insert(d.id.clone());
                fresh += usize::from(!replayed);
            }
            other => panic!("thread {i}: {other:?}"),
        }
    }
    assert_eq!(ids.len(), 1, "one deposit id for everyone: {ids:?}");
    assert_eq!(fresh, 1, "one fresh result, {} replays", THREADS - 1);
    assert_eq!(available(&engine, "org_d", "USD"), 5_000, "credited once");
    let snapshot = engine.read().unwrap();
    assert_eq!(snapshot.list("org_d", "deposits", None, 100).unwrap().len(), 1);
    assert_eq!(snapshot.journal_length().unwrap(), 1);
    drop(snapshot);
    assert_consistent_and_shut_down(engine);
}

#[test]
fn concurrent_deposits_with_one_reference_and_different_bodies_apply_once() {
    let amount = |i: usize| 1_000 + 100 * (i % 4) as i128;
    let (_dir, engine) = open();
    let results = race(&engine, |i| Command::Deposit {
        organization: "org_d".into(),
        currency: "USD".into(),
        amount: amount(i),
        external_reference: Some("dep-2".into()),
    });

    let winner = &the_one_fresh(&results, |outcome| match outcome {
        Outcome::Deposit(d) => Some(d.clone()),
        _ => None,
    });
    for (i, result) in results.iter().enumerate() {
        if amount(i) == winner.amount {
            match result {
                Ok(Applied { outcome: Outcome::Deposit(d), .. }) => assert_eq!(d.id, winner.id, "thread {i}"),
                other => panic!("thread {i} sent the winner's body and must get its deposit: {other:?}"),
            }
        } else {
            match result {
                Err(EngineError::Duplicate { reference }) => assert_eq!(reference, "dep-2"),
                other => panic!("thread {i} sent another body and must be refused: {other:?}"),
            }
        }
    }
    assert_eq!(available(&engine, "org_d", "USD"), winner.amount, "credited once");
    assert_eq!(engine.read().unwrap().list("org_d", "deposits", None, 100).unwrap().len(), 1);
    assert_consistent_and_shut_down(engine);
}

#[test]
fn concurrent_transfers_with_one_reference_apply_once() {
    let amount = |i: usize| 100 * (1 + (i % 3) as i128);
    let (_dir, engine) = open();
    deposit(&engine, "org_a", "USD", 1_000_000);
    let results = race(&engine, |i| Command::Transfers {
        transfers: vec![posted("org_a", "org_b", amount(i))],
        external_reference: Some("tr-1".into()),
    });

    let winner = &the_one_fresh(&results, |outcome| match outcome {
        Outcome::Transfers(t) => Some(t.clone()),
        _ => None,
    });
    assert_eq!(winner.len(), 1);
    let (winner_id, winner_amount) = (winner[0].id, winner[0].amount);
    for (i, result) in results.iter().enumerate() {
        match result {
            Ok(Applied { outcome: Outcome::Transfers(t), .. }) if amount(i) == winner_amount => {
                assert_eq!(t.iter().map(|t| t.id).collect::<Vec<_>>(), vec![winner_id], "thread {i}");
            }
            Err(EngineError::Duplicate { reference }) if amount(i) != winner_amount => {
                assert_eq!(reference, "tr-1");
            }
            other => panic!("thread {i} (amount {}): {other:?}", amount(i)),
        }
    }
    assert_eq!(available(&engine, "org_a", "USD"), 1_000_000 - winner_amount);
    assert_eq!(available(&engine, "org_b", "USD"), winner_amount);
    assert_eq!(engine.read().unwrap().journal_length().unwrap(), 2, "the deposit and one transfer");
    assert_consistent_and_shut_down(engine);
}

#[test]
fn concurrent_transfers_never_overdraw() {
    let (_dir, engine) = open();
    deposit(&engine, "org_a", "USD", 1_000);
    let results = race(&engine, |_| Command::Transfers {
        transfers: vec![posted("org_a", "org_b", 100)],
        external_reference: None,
    });
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let refused = results.iter().filter(|r| matches!(r, Err(EngineError::InsufficientFunds { .. }))).count();
    assert_eq!((ok, refused), (10, THREADS - 10), "{results:?}");
    assert_eq!(available(&engine, "org_a", "USD"), 0);
    assert_eq!(available(&engine, "org_b", "USD"), 1_000);
    assert_consistent_and_shut_down(engine);
}

#[test]
fn concurrent_settlements_of_one_hold_settle_it_once() {
    let (_dir, engine) = open();
    deposit(&engine, "org_a", "USD", 1_000);
    let hold = engine
        .execute_blocking(Command::Transfers {
            transfers: vec![TransferSpec::Pending {
                debit: AccountRef::Organization("org_a".into()),
                credit: AccountRef::Organization("org_b".into()),
                currency: "USD".into(),
                amount: 700,
                memo: "hold".into(),
            }],
            external_reference: None,
        })
        .expect("hold");
    let Outcome::Transfers(hold) = hold.outcome else { panic!() };
    let hold_id = hold[0].id;
    // Even threads post, odd threads void.
    let results = race(&engine, |i| Command::Transfers {
        transfers: vec![if i.is_multiple_of(2) {
            TransferSpec::PostPending { pending_id: hold_id }
        } else {
            TransferSpec::VoidPending { pending_id: hold_id }
        }],
        external_reference: None,
    });
    let winners: Vec<usize> = (0..THREADS).filter(|i| results[*i].is_ok()).collect();
    assert_eq!(winners.len(), 1, "{results:?}");
    for (i, result) in results.iter().enumerate() {
        if i != winners[0] {
            assert_eq!(result, &Err(EngineError::NotPending(hold_id)), "thread {i}");
        }
    }
    let posted = winners[0].is_multiple_of(2);
    let state = engine.read().unwrap().transfer(hold_id).unwrap().unwrap().pending_state;
    let expected = if posted { PendingState::Posted } else { PendingState::Voided };
    assert_eq!(state, Some(expected));
    assert_eq!(available(&engine, "org_a", "USD"), if posted { 300 } else { 1_000 });
    assert_eq!(available(&engine, "org_b", "USD"), if posted { 700 } else { 0 });
    assert_consistent_and_shut_down(engine);
}

/// An execute that raced with the executing one got the conversion back;
/// retrying it with the same externalReference must replay that result.
#[test]
fn a_concurrent_execute_can_be_retried_with_its_reference() {
    let (_dir, engine) = open();
    deposit(&engine, "org_q", "USD", 1_000_000);
    let execute = |quote_id: &str, reference: &str| Command::ExecuteQuote {
        organization: "org_q".into(),
        quote_id: quote_id.into(),
        external_reference: Some(reference.into()),
    };
    // Two executes queued back to back almost always race (the second is
    // received before the first one's commit is acknowledged); try a few
    // quotes until they do.
    for attempt in 0..20 {
        let quote = quote(&engine, "XOF", 1_000);
        let (first, second) =
            (execute(&quote.id, &format!("a-{attempt}")), execute(&quote.id, &format!("b-{attempt}")));
        let pending_first = engine.enqueue_blocking(first).expect("enqueue");
        let pending_second = engine.enqueue_blocking(second.clone()).expect("enqueue");
        let first = pending_first.wait().expect("the first execute");
        let Ok(raced) = pending_second.wait() else { continue };
        let (Outcome::Conversion(c1), Outcome::Conversion(c2)) = (&first.outcome, &raced.outcome) else {
            panic!("{first:?} {raced:?}")
        };
        assert_eq!(c1.id, c2.id);
        assert!(raced.replayed);
        let retry = engine.execute_blocking(second);
        match retry {
            Ok(Applied { outcome: Outcome::Conversion(c), replayed: true }) => assert_eq!(c.id, c1.id),
            other => {
                panic!("retrying a successful execute with its own reference must replay it, got {other:?}")
            }
        }
        assert_eq!(
            engine.read().unwrap().list("org_q", "conversions", None, 100).unwrap().len(),
            attempt + 1
        );
        engine.shutdown();
        return;
    }
    panic!("two queued executes never raced in 20 attempts");
}

#[test]
fn concurrent_reversals_of_one_payout_give_its_amount_back_once() {
    let (_dir, engine) = open();
    deposit(&engine, "org_r", "GHS", 100_000);
    let new = sika_engine::movements::NewPayout {
        organization: "org_r".into(),
        from_currency: "GHS".into(),
        from_amount: 10_005,
        to: sika_engine::Destination { code: "mtn_gh".into(), ..Default::default() },
        to_currency: "GHS".into(),
        to_amount: 10_005,
        fee_amount: 200,
        rate: "1".into(),
        narration: String::new(),
        metadata: "{}".into(),
        external_reference: "race-reversal".into(),
        api_key_id: None,
        cap: None,
        rail: "race".into(),
        rail_note: "sent".into(),
        schedule: Vec::new(),
        request_fingerprint: [7; 32],
        order_id: None,
    };
    let Outcome::Payout(payout) =
        engine.execute_blocking(Command::CreatePayout(Box::new(new))).expect("payout").outcome
    else {
        panic!("a payout")
    };
    let settle = sika_engine::Step::Settle { success: true, message: "delivered".into() };
    engine
        .execute_blocking(Command::AdvancePayout {
            payout_id: sika_engine::PayoutId::from(payout.id.clone()),
            step: settle,
        })
        .expect("settle");
    let delivered = available(&engine, "org_r", "GHS");
    assert_eq!(delivered, 100_000 - 10_005 - 200);

    // Every reversal is queued while the writer is held, so they reach it
    // together, in one batch or a few, none after the first is acknowledged.
    let hold = engine.hold_writer();
    let racing = {
        let (engine, id) = (engine.clone(), payout.id.clone());
        thread::spawn(move || {
            race(&engine, |i| Command::AdvancePayout {
                payout_id: sika_engine::PayoutId::from(id.clone()),
                step: sika_engine::Step::Reverse { message: format!("returned ({i})") },
            })
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while engine.stats().queue_depth < THREADS - 1 && std::time::Instant::now() < deadline {
        thread::sleep(std::time::Duration::from_millis(1));
    }
    drop(hold);
    let results = racing.join().expect("the racing threads");
    let reversed = the_one_fresh(&results, |outcome| match outcome {
        Outcome::Payout(p) => Some(p.status),
        _ => None,
    });
    assert_eq!(reversed, sika_engine::MovementStatus::Reversed);
    assert!(results.iter().all(Result::is_ok), "a repeated reversal is a no-op, never an error");
    assert_eq!(
        available(&engine, "org_r", "GHS"),
        delivered + 10_005,
        "the amount came back once, the fee kept"
    );
    let events = engine.read().expect("snapshot").events_after(0, 1_000).expect("events");
    let reversals = events.iter().filter(|e| e.kind == "payout.reversed").count();
    assert_eq!(reversals, 1, "one payout.reversed");
    assert_consistent_and_shut_down(engine);
}
