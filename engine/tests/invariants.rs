//! The ledger's arithmetic and invariants seen through the engine: sums
//! that would overflow are errors (never wraps or panics), and an invariant
//! broken by corrupt state fails the one command that meets it while the
//! writer goes on with the next.

use std::sync::Arc;

use sika_engine::clock::ManualClock;
use sika_engine::movements::{CapCheck, Destination, NewPayout};
use sika_engine::storage::{RECORDS, decode, encode, keys};
use sika_engine::{
    AccountEntry, Command, Engine, EngineConfig, EngineError, MoneyError, Outcome, QuoteAmount,
};

use redb::ReadableTable;

type Table<'txn> = redb::Table<'txn, &'static [u8], &'static [u8]>;

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
    Command::CreatePayout(Box::new(NewPayout {
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
    }))
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

/// Issue 29.2: a stack opened with an admission check (the sandbox's disk
/// reserve) refuses every command while it says no, before the command is
/// queued, as a storage error; nothing is applied, and commands go through
/// again once it says yes.
#[test]
fn a_refusing_admission_check_stops_every_command_until_it_admits_again() {
    let full = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let engine = engine(|config| {
        let full = full.clone();
        config.admission = Some(Arc::new(move || {
            if full.load(std::sync::atomic::Ordering::SeqCst) {
                Err("below the reserve".into())
            } else {
                Ok(())
            }
        }));
    });
    engine.execute_blocking(deposit("org_1", 100)).unwrap();
    full.store(true, std::sync::atomic::Ordering::SeqCst);
    let refused = engine.execute_blocking(deposit("org_1", 100));
    assert_eq!(refused, Err(EngineError::Storage("below the reserve".into())));
    assert_eq!(engine.stats().storage_refused, 1);
    let balance = || engine.read().unwrap().organization_account("org_1", "USD").unwrap().unwrap();
    assert_eq!(balance().balances().unwrap().available, 100, "the refused deposit was not applied");
    full.store(false, std::sync::atomic::Ordering::SeqCst);
    engine.execute_blocking(deposit("org_1", 100)).unwrap();
    assert_eq!(balance().balances().unwrap().available, 200);
    engine.shutdown();
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

/// A ledger file with one deposit to org_1, changed by `tamper` with plain
/// redb while the node is down (as a bug or a bad disk might), and opened.
fn tampered(dir: &tempfile::TempDir, tamper: impl FnOnce(&mut Table)) -> Engine {
    let path = dir.path().join("ledger.redb");
    let engine = Engine::open(EngineConfig::new(Some(path.clone()))).unwrap();
    engine.execute_blocking(deposit("org_1", 1_000)).unwrap();
    engine.shutdown();
    drop(engine);
    let db = redb::Database::create(&path).unwrap();
    let txn = db.begin_write().unwrap();
    tamper(&mut txn.open_table(RECORDS).unwrap());
    txn.commit().unwrap();
    drop(db);
    Engine::open(EngineConfig::new(Some(path))).unwrap()
}

/// The writer fails exactly the command that met a broken invariant, with
/// the assertion's message, and goes on with the next one.
fn assert_fails_alone(engine: &Engine, command: Command, assertion: &str) {
    match engine.execute_blocking(command) {
        Err(EngineError::Corrupt(message)) => {
            assert!(message.contains("a command panicked") && message.contains(assertion), "{message}")
        }
        other => panic!("expected the assertion '{assertion}' to fail the command, got {other:?}"),
    }
    let document = Command::PutDocument {
        collection: "notes".into(),
        id: "n1".into(),
        body: b"still writing".to_vec(),
        list: None,
    };
    assert!(engine.execute_blocking(document).is_ok(), "the writer goes on");
}

#[test]
fn a_journal_head_out_of_step_fails_the_command_not_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let engine = tampered(&dir, |table| {
        table.insert(keys::meta("journal_head").as_slice(), encode(&[7u8; 32]).as_slice()).unwrap();
    });
    assert_fails_alone(&engine, deposit("org_2", 10), "journal entry 2 does not chain to entry 1");
    assert_eq!(engine.read().unwrap().journal_length().unwrap(), 1, "no entry was forked off the chain");
    engine.shutdown();
}

#[test]
fn an_organization_account_driven_negative_fails_the_command_not_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let engine = tampered(&dir, |table| {
        let id: String =
            decode(table.get(keys::org_account("org_1", "USD").as_slice()).unwrap().unwrap().value())
                .unwrap();
        let key = keys::account(&id);
        let mut stored: AccountEntry = decode(table.get(key.as_slice()).unwrap().unwrap().value()).unwrap();
        stored.account.debits_posted = 5_000;
        table.insert(key.as_slice(), encode(&stored).as_slice()).unwrap();
    });
    assert_fails_alone(&engine, deposit("org_1", 10), "would go negative");
    assert!(engine.execute_blocking(deposit("org_2", 10)).is_ok(), "other accounts are written");
    engine.shutdown();
}

#[test]
fn ids_and_times_come_from_the_engines_clock() {
    const START: i64 = 1_700_000_000_000;
    let clock = ManualClock::new(START);
    let engine = {
        let clock = clock.clone();
        engine(move |config| config.clock = Arc::new(clock))
    };
    let deposit_at = |engine: &Engine| match engine.execute_blocking(deposit("org_1", 10)).unwrap().outcome {
        Outcome::Deposit(record) => record,
        other => panic!("{other:?}"),
    };
    let first = deposit_at(&engine);
    assert_eq!(first.created_at, START);
    let time_part = |id: &str| id[4..12].to_string();
    assert_eq!(time_part(&first.id), time_part(&sika_engine::ids::new_id_at("dep", START)));
    let event = engine.read().unwrap().events_after(0, 10).unwrap().remove(0);
    assert_eq!(
        (event.created_at, time_part(&event.id)),
        (START, time_part(&sika_engine::ids::new_id_at("evt", START)))
    );

    clock.advance_ms(86_400_000);
    let later = deposit_at(&engine);
    assert_eq!(later.created_at, START + 86_400_000);
    assert_eq!(time_part(&later.id), time_part(&sika_engine::ids::new_id_at("dep", START + 86_400_000)));
    engine.shutdown();
}

/// The engine's own records are not documents: a document write naming
/// their collection (alone, in a batch, in a conditional save, attached to
/// a collection) is refused and changes nothing, so the API layer can
/// never overwrite a payout past the ledger's checks; a document read
/// naming it is refused too.
#[test]
fn a_document_write_into_the_engines_records_is_refused() {
    use sika_engine::{Document, Expected};
    let engine = engine(|_| {});
    engine.execute_blocking(deposit("org_1", 10_000)).unwrap();
    let Outcome::Payout(stored) = engine.execute_blocking(payout("p1", 1_000, 0, None)).unwrap().outcome
    else {
        panic!("a payout");
    };
    let forged = b"a forged payout".to_vec();
    let document = |collection: &str| Document {
        collection: collection.into(),
        id: stored.id.clone(),
        body: forged.clone(),
        list: None,
    };
    let owned = [
        "payouts",
        "collections",
        "orders",
        "collection_groups",
        "collection_tallies",
        "cap_usage",
        "event_seq",
    ];
    for collection in owned {
        let refused = EngineError::EngineOwned { collection: collection.into() };
        let commands = [
            Command::PutDocument {
                collection: collection.into(),
                id: stored.id.clone(),
                body: forged.clone(),
                list: None,
            },
            Command::PutDocuments { documents: vec![document("recipients"), document(collection)] },
            Command::Save { expect: Vec::new(), documents: vec![document(collection)], events: Vec::new() },
            Command::Save {
                expect: vec![Expected { collection: collection.into(), id: stored.id.clone(), digest: None }],
                documents: vec![document("recipients")],
                events: Vec::new(),
            },
        ];
        for command in commands {
            assert_eq!(engine.execute_blocking(command.clone()).unwrap_err(), refused, "{command:?}");
        }
        let snapshot = engine.read().unwrap();
        assert_eq!(snapshot.document(collection, &stored.id).unwrap_err(), refused);
        assert_eq!(snapshot.documents(collection).unwrap_err(), refused);
    }
    let snapshot = engine.read().unwrap();
    assert_eq!(
        snapshot.payout(&sika_engine::PayoutId::named(&stored.id)).unwrap().as_ref(),
        Some(&*stored),
        "the payout is as the engine wrote it"
    );
    assert_eq!(snapshot.document("recipients", &stored.id).unwrap(), None, "a refused batch writes nothing");
}
