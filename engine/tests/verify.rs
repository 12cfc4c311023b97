//! `verify` passes a clean ledger and catches each kind of tampering, each
//! done with plain redb on a copy of the file.

use std::path::{Path, PathBuf};

use redb::{ReadableDatabase, ReadableTable};
use sika_engine::balance_changes::{EntryChange, EntryChanges};
use sika_engine::movements::NewCollection;
use sika_engine::storage::{RECORDS, decode, encode, keys, scan};
use sika_engine::verify::{Report, verify, verify_path};
use sika_engine::{
    AccountEntry, AccountRecord, AccountRef, Applied, CollectionGroup, Command, Engine, EngineConfig,
    JournalEntry, Outcome, QuoteAmount, Step, TallyRecord, TransferRecord, TransferSpec,
};

type Table<'txn> = redb::Table<'txn, &'static [u8], &'static [u8]>;

fn run(engine: &Engine, command: Command) -> Applied {
    engine.execute_blocking(command.clone()).unwrap_or_else(|e| panic!("{command:?}: {e}"))
}

fn deposit(organization: &str, currency: &str, amount: i128, reference: Option<&str>) -> Command {
    Command::Deposit {
        organization: organization.into(),
        currency: currency.into(),
        amount,
        external_reference: reference.map(str::to_string),
    }
}

fn transfers(specs: Vec<TransferSpec>) -> Command {
    Command::Transfers { transfers: specs, external_reference: None }
}

fn between(from: &str, to: &str, currency: &str, amount: i128, pending: bool) -> TransferSpec {
    let (debit, credit) = (AccountRef::Organization(from.into()), AccountRef::Organization(to.into()));
    let (currency, memo) = (currency.to_string(), "verify test".to_string());
    if pending {
        TransferSpec::Pending { debit, credit, currency, amount, memo }
    } else {
        TransferSpec::Posted { debit, credit, currency, amount, memo }
    }
}

fn first_transfer(applied: Applied) -> TransferRecord {
    match applied.outcome {
        Outcome::Transfers(mut t) => t.remove(0),
        other => panic!("{other:?}"),
    }
}

/// What the test needs to know about the ledger it built.
struct Ledger {
    path: PathBuf,
    /// org_a's USD account.
    account_id: String,
    /// A posted transfer with later entries after it.
    transfer: TransferRecord,
    /// A hold, posted since.
    hold: TransferRecord,
    conversion_id: String,
    execute: Command,
    deposit_id: String,
    balances: Vec<AccountRecord>,
    journal_length: u64,
}

fn organization_accounts(engine: &Engine) -> Vec<AccountRecord> {
    let snapshot = engine.read().unwrap();
    let mut all = snapshot.organization_accounts("org_a").unwrap();
    all.extend(snapshot.organization_accounts("org_b").unwrap());
    all
}

fn build(dir: &Path) -> Ledger {
    let path = dir.join("ledger.redb");
    let engine = Engine::open(EngineConfig::new(Some(path.clone()))).expect("open");
    let deposit_id = match run(&engine, deposit("org_a", "USD", 100_000, Some("dep-a"))).outcome {
        Outcome::Deposit(d) => d.id,
        other => panic!("{other:?}"),
    };
    run(&engine, deposit("org_b", "GHS", 50_000, None));
    run(&engine, deposit("org_a", "GHS", 20_000, None));
    let transfer =
        first_transfer(run(&engine, transfers(vec![between("org_a", "org_b", "USD", 10_000, false)])));
    let posted_hold =
        first_transfer(run(&engine, transfers(vec![between("org_a", "org_b", "USD", 5_000, true)])));
    run(&engine, transfers(vec![TransferSpec::PostPending { pending_id: posted_hold.id }]));
    let hold = first_transfer(run(&engine, transfers(vec![between("org_b", "org_a", "GHS", 1_000, true)])));
    run(&engine, transfers(vec![TransferSpec::VoidPending { pending_id: hold.id }]));
    run(
        &engine,
        transfers(vec![
            between("org_b", "org_a", "GHS", 2_000, false),
            between("org_a", "org_b", "USD", 300, false),
        ]),
    );
    let quote = match run(
        &engine,
        Command::CreateQuote {
            organization: "org_a".into(),
            from_currency: "USD".into(),
            to_currency: "GHS".into(),
            amount: QuoteAmount::From(20_000),
        },
    )
    .outcome
    {
        Outcome::Quote(q) => q,
        other => panic!("{other:?}"),
    };
    let execute = Command::ExecuteQuote {
        organization: "org_a".into(),
        quote_id: quote.id,
        external_reference: Some("conv-1".into()),
    };
    let conversion_id = match run(&engine, execute.clone()).outcome {
        Outcome::Conversion(c) => c.id,
        other => panic!("{other:?}"),
    };
    run(&engine, deposit("org_b", "USD", 7_000, None));

    let account_id =
        engine.read().unwrap().organization_account("org_a", "USD").unwrap().expect("account").id;
    let balances = organization_accounts(&engine);
    let journal_length = engine.read().unwrap().journal_length().unwrap();
    assert!(transfer.journal_seq < journal_length);
    let report = verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
    engine.shutdown();
    drop(engine);
    let hold = posted_hold;
    Ledger { path, account_id, transfer, hold, conversion_id, execute, deposit_id, balances, journal_length }
}

/// Copies the ledger, changes the copy with plain redb, and audits it.
fn tamper(path: &Path, name: &str, change: impl FnOnce(&mut Table)) -> Report {
    let copy = path.with_file_name(format!("{name}.redb"));
    std::fs::copy(path, &copy).expect("copy the database");
    let db = redb::Database::create(&copy).expect("open the copy with redb");
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        change(&mut table);
    }
    txn.commit().unwrap();
    let report = verify(&db).expect("verify");
    assert!(!report.is_consistent(), "{name}: tampering went unnoticed");
    report
}

/// Stores the ledger's references whole, as formats 11 to 23 did.
fn whole_references(db: &redb::Database) {
    let txn = db.begin_write().unwrap();
    sika_engine::format::format23::store_transfer_refs_whole(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
}

fn get<T: serde::de::DeserializeOwned>(table: &Table, key: &[u8]) -> T {
    decode(table.get(key).unwrap().expect("the record exists").value()).unwrap()
}

fn put<T: serde::Serialize>(table: &mut Table, key: &[u8], value: &T) {
    table.insert(key, encode(value).as_slice()).unwrap();
}

/// Every record of `space` in a closed ledger, in key order.
fn stored(db: &redb::Database, space: sika_engine::storage::Space) -> Vec<(Vec<u8>, Vec<u8>)> {
    let txn = db.begin_read().unwrap();
    scan(&txn.open_table(RECORDS).unwrap(), space).unwrap()
}

fn assert_reports(report: &Report, needle: &str) {
    assert!(
        report.problems.iter().any(|p| p.contains(needle)),
        "expected a problem mentioning {needle:?}, got {:?}",
        report.problems
    );
}

#[test]
fn verify_passes_a_clean_ledger_and_catches_tampering() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());

    let report =
        verify_path(&ledger.path, &sika_engine::format::LEDGER_STEPS).expect("verify the closed file");
    assert!(report.is_consistent(), "{:?}", report.problems);
    assert_eq!(report.journal_entries, ledger.journal_length);
    assert_eq!(report.idempotency_entries, 2);
    assert!(report.summary().starts_with("consistent"), "{}", report.summary());

    // (a) An account's stored total no longer matches the journal.
    let report = tamper(&ledger.path, "account", |table| {
        let key = keys::account(&ledger.account_id);
        let mut stored: AccountEntry = get(table, &key);
        stored.account.credits_posted += 1;
        put(table, &key, &stored);
    });
    assert_reports(&report, &format!("account {} stores totals", ledger.account_id));
    assert!(report.summary().starts_with("INCONSISTENT"), "{}", report.summary());

    let seq = ledger.transfer.journal_seq;
    // (c) The conversion an idempotency entry points at is gone.
    let report = tamper(&ledger.path, "conversion", |table| {
        assert!(table.remove(keys::conversion(&ledger.conversion_id).as_slice()).unwrap().is_some());
    });
    assert_reports(&report, "points at a missing Conversion");
    assert_reports(&report, &ledger.conversion_id);

    // (c') The record numbering a name is gone: the conversion's reference
    // could not be found, and a retry would make a second conversion.
    let report = tamper(&ledger.path, "name", |table| {
        assert!(table.remove(keys::name("conversion").as_slice()).unwrap().is_some());
    });
    assert_reports(&report, "is not keyed by org_a/conversion/conv-1: a retry would not find it");
    assert!(report.summary().starts_with("INCONSISTENT"), "{}", report.summary());

    // (c'') The name a list's key holds is gone.
    let report = tamper(&ledger.path, "list-name", |table| {
        assert!(table.remove(keys::name("deposits").as_slice()).unwrap().is_some());
    });
    assert_reports(&report, "ListIndex keys hold number");
    assert_reports(&report, "which no name has");
    assert!(report.summary().starts_with("INCONSISTENT"), "{}", report.summary());

    // (d) A journal entry is deleted: the sequence has a gap and the chain breaks.
    let report = tamper(&ledger.path, "journal-gap", |table| {
        assert!(table.remove(keys::journal(seq).as_slice()).unwrap().is_some());
    });
    assert_reports(&report, &format!("journal entry {} found where {seq} was expected", seq + 1));
    assert_reports(
        &report,
        &format!(
            "journal entry {} has a hash that does not match its content and the entries before it",
            seq + 1
        ),
    );

    // (d') The last entry is deleted: the head and the counter disagree.
    let last = ledger.journal_length;
    let report = tamper(&ledger.path, "journal-tail", |table| {
        assert!(table.remove(keys::journal(last).as_slice()).unwrap().is_some());
    });
    assert_reports(&report, "the journal head hash does not match the last entry");
    assert_reports(&report, &format!("the journal counter says {last} entries but {} were found", last - 1));

    // The untouched original reopens with the engine, intact.
    let engine = Engine::open(EngineConfig::new(Some(ledger.path.clone()))).expect("reopen");
    assert_eq!(organization_accounts(&engine), ledger.balances, "balances survive a restart");
    let report = verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
    // Idempotency survives too: retries replay the original results.
    let replay = run(&engine, ledger.execute.clone());
    assert!(replay.replayed);
    assert!(matches!(&replay.outcome, Outcome::Conversion(c) if c.id == ledger.conversion_id), "{replay:?}");
    let replay = run(&engine, deposit("org_a", "USD", 100_000, Some("dep-a")));
    assert!(replay.replayed);
    assert!(matches!(&replay.outcome, Outcome::Deposit(d) if d.id == ledger.deposit_id), "{replay:?}");
    // And the journal continues where it stopped.
    let next = first_transfer(run(&engine, transfers(vec![between("org_a", "org_b", "USD", 1, false)])));
    assert_eq!(next.journal_seq, ledger.journal_length + 1);
    assert!(next.id > ledger.transfer.id);
    let report = verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
    engine.shutdown();
}

/// The journal's entries in order, as stored.
fn journal(table: &impl ReadableTable<&'static [u8], &'static [u8]>) -> Vec<JournalEntry> {
    let start = keys::space(sika_engine::storage::Space::Journal);
    let end = sika_engine::storage::prefix_end(&start);
    table
        .range(start.as_slice()..end.as_slice())
        .unwrap()
        .map(|entry| decode(entry.unwrap().1.value()).unwrap())
        .collect()
}

/// The journal is a hash chain walked from its first entry. An entry
/// stores its own hash only at the marks and as the last of a batch, so a
/// changed transfer breaks the chain at the next entry that stores one,
/// and a stored hash rewritten to match breaks the next stored one after
/// it (or the head).
#[test]
fn verify_walks_the_journals_hash_chain_from_its_first_entry() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let seq = ledger.transfer.journal_seq;
    let db = redb::Database::open(&ledger.path).unwrap();
    let entries = journal(&db.begin_read().unwrap().open_table(RECORDS).unwrap());
    drop(db);
    let stores_hash: Vec<u64> = entries.iter().filter(|e| e.hash.is_some()).map(|e| e.seq).collect();
    // The books stored each batch's last entry's hash, and no other (the
    // ledger is shorter than a mark's distance).
    assert!(ledger.journal_length < sika_engine::HASH_EVERY);
    assert!(stores_hash.len() >= 2 && stores_hash.len() < entries.len(), "{stores_hash:?}");
    assert_eq!(stores_hash.last(), Some(&ledger.journal_length), "the last entry stores its hash");
    let next_stored = *stores_hash.iter().find(|&&stored| stored >= seq).unwrap();
    let after_next = stores_hash.iter().find(|&&stored| stored > next_stored).copied();
    let broken = |at: u64| {
        format!("journal entry {at} has a hash that does not match its content and the entries before it")
    };

    // (b) A journal entry's amount is changed: the chain breaks at the
    // next entry that stores its hash.
    let report = tamper(&ledger.path, "journal-amount", |table| {
        let mut entry: JournalEntry = get(table, &keys::journal(seq));
        entry.transfer.amount += 1;
        put_entry(table, &entry);
    });
    assert_reports(&report, &broken(next_stored));

    // (b') The entry that stores that hash is changed too, its hash
    // rewritten to match the chain: the next stored hash breaks instead.
    let report = tamper(&ledger.path, "journal-rehashed", |table| {
        let mut prev = [0; 32];
        for entry in journal(table) {
            let mut entry = entry;
            if entry.seq == next_stored {
                entry.transfer.amount += 1;
                entry.hash = Some(JournalEntry::chain_hash(&prev, entry.seq, &entry.transfer));
                put_entry(table, &entry);
                break;
            }
            prev = JournalEntry::chain_hash(&prev, entry.seq, &entry.transfer);
        }
    });
    match after_next {
        Some(after) => assert_reports(&report, &broken(after)),
        None => assert_reports(&report, "the journal head hash does not match the last entry"),
    }
    assert!(
        !report.problems.iter().any(|p| p.starts_with(&format!("journal entry {next_stored} "))),
        "the rehashed entry itself chains: {:?}",
        report.problems
    );

    // (b'') The last entry's hash is dropped: the next batch could not be
    // checked against it.
    let report = tamper(&ledger.path, "journal-last-unhashed", |table| {
        let mut entry: JournalEntry = get(table, &keys::journal(ledger.journal_length));
        entry.hash = None;
        put_entry(table, &entry);
    });
    assert_eq!(report.problems, vec!["the journal's last entry does not store its hash".to_string()]);
}

/// A collection of `org_a` in `group` (toward `target`), made and, when
/// `success` is given, settled that way; returns its id.
fn grouped_collection(
    engine: &Engine,
    n: u32,
    amount: i128,
    group: &CollectionGroup,
    success: Option<bool>,
) -> String {
    let new = NewCollection {
        organization: "org_a".into(),
        currency: "GHS".into(),
        amount,
        code: "mtn_gh".into(),
        account_number: "+233241234567".into(),
        metadata: "{}".into(),
        external_reference: format!("grouped-{n}"),
        rail: "test".into(),
        rail_note: String::new(),
        payer: None,
        schedule: Vec::new(),
        request_fingerprint: [n as u8; 32],
        id: None,
        attach: Vec::new(),
        group: Some(group.clone()),
    };
    let id = match run(engine, Command::CreateCollection(Box::new(new))).outcome {
        Outcome::Collection(c) => c.id,
        other => panic!("{other:?}"),
    };
    if let Some(success) = success {
        let step = Step::Settle { success, message: "settled".into() };
        run(
            engine,
            Command::AdvanceCollection { collection_id: sika_engine::CollectionId::from(id.clone()), step },
        );
    }
    id
}

/// Each group's tally follows its collections as they settle (a failed or
/// pending one counts nothing), `verify` recomputes it from them, and a
/// tally that no longer agrees is reported by its group's name.
#[test]
fn verify_recomputes_each_groups_tally_and_names_one_that_was_tampered_with() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.redb");
    let engine = Engine::open(EngineConfig::new(Some(path.clone()))).expect("open");
    let link = CollectionGroup { id: "pl_partial".into(), target_minor: Some(10_000) };
    let first = grouped_collection(&engine, 1, 4_000, &link, Some(true));
    grouped_collection(&engine, 2, 9_000, &link, Some(false));
    grouped_collection(&engine, 3, 1_000, &link, None);
    let tally = engine.read().unwrap().collection_tally("pl_partial").unwrap().expect("a tally");
    assert_eq!((tally.received_minor, tally.completed_count, tally.covering.is_none()), (4_000, 1, true));
    let second = grouped_collection(&engine, 4, 6_000, &link, Some(true));
    let open = CollectionGroup { id: "pl_open".into(), target_minor: None };
    let chosen = grouped_collection(&engine, 5, 2_500, &open, Some(true));
    let snapshot = engine.read().unwrap();
    let tally = snapshot.collection_tally("pl_partial").unwrap().expect("a tally");
    assert_eq!((tally.received_minor, tally.completed_count), (10_000, 2));
    assert_eq!(tally.covering.as_ref().map(|a| a.collection_id.as_str()), Some(second.as_str()));
    assert_eq!(tally.latest.as_ref().map(|a| a.collection_id.as_str()), Some(second.as_str()));
    let tally = snapshot.collection_tally("pl_open").unwrap().expect("a tally");
    assert_eq!(
        tally.covering.as_ref().map(|a| (a.collection_id.as_str(), a.amount_minor)),
        Some((chosen.as_str(), 2_500))
    );
    drop(snapshot);
    let report = verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
    assert_eq!(report.collection_tallies, 2);
    engine.shutdown();
    drop(engine);

    // (a) The tally counts money its collections did not bring.
    let report = tamper(&path, "tally-received", |table| {
        let mut tally: TallyRecord = get(table, &keys::collection_tally("pl_partial"));
        tally.received_minor += 100;
        put(table, &keys::collection_tally("pl_partial"), &tally);
    });
    assert_reports(
        &report,
        "collection tally pl_partial counts 10100 received in 2 completed collection(s), but its completed collections give 10000 in 2",
    );
    // (b) The tally is gone while its group has completed collections.
    let report = tamper(&path, "tally-missing", |table| {
        assert!(table.remove(keys::collection_tally("pl_open").as_slice()).unwrap().is_some());
    });
    assert_reports(&report, "group pl_open has 1 completed collection(s) but no collection tally");
    // (c) The tally names a completion that did not bring it to its target.
    let report = tamper(&path, "tally-covering", |table| {
        let mut tally: TallyRecord = get(table, &keys::collection_tally("pl_partial"));
        tally.covering.as_mut().expect("covered").collection_id = first.clone();
        put(table, &keys::collection_tally("pl_partial"), &tally);
    });
    assert_reports(&report, &format!("collection tally pl_partial names {first} as its covering completion"));
}

fn new_refund(collection_id: &str, amount: Option<i128>, reference: &str) -> Command {
    Command::CreateRefund(Box::new(sika_engine::refunds::NewRefund {
        organization: "org_a".into(),
        collection_id: collection_id.into(),
        session_id: None,
        amount,
        reason: None,
        metadata: "{}".into(),
        external_reference: reference.into(),
        rail: "test".into(),
        rail_note: String::new(),
        schedule: Default::default(),
        request_fingerprint: [reference.len() as u8; 32],
    }))
}

fn refund_id(applied: Applied) -> String {
    match applied.outcome {
        Outcome::Refund(r) => r.id,
        other => panic!("{other:?}"),
    }
}

/// Each payment's refund tally follows its refunds (a failed one stops
/// counting), the engine refuses a refund beyond it, `verify` recounts it
/// from the refunds, and a tally or refund that no longer agrees is
/// reported naming the payment.
#[test]
fn verify_recounts_each_payments_refunds_and_names_one_that_disagrees() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.redb");
    let engine = Engine::open(EngineConfig::new(Some(path.clone()))).expect("open");
    let link = CollectionGroup { id: "pl_refunded".into(), target_minor: None };
    let paid = grouped_collection(&engine, 1, 10_000, &link, Some(true));
    let kept = refund_id(run(&engine, new_refund(&paid, Some(3_000), "rf-1")));
    let failing = refund_id(run(&engine, new_refund(&paid, Some(2_000), "rf-2")));
    let step = Step::Settle { success: false, message: "failed".into() };
    run(&engine, Command::AdvanceRefund { refund_id: sika_engine::RefundId::from(failing.clone()), step });
    let step = Step::Settle { success: true, message: "done".into() };
    run(&engine, Command::AdvanceRefund { refund_id: sika_engine::RefundId::from(kept.clone()), step });
    let over = engine.execute_blocking(new_refund(&paid, Some(7_001), "rf-3"));
    assert!(
        matches!(over, Err(sika_engine::EngineError::NotRefundable { refundable: 7_000, .. })),
        "{over:?}"
    );
    let rest = engine.execute_blocking(new_refund(&paid, None, "rf-4")).unwrap();
    let Outcome::Refund(rest) = rest.outcome else { panic!() };
    assert_eq!(rest.amount, 7_000, "the default is what is left");
    let tally = engine.read().unwrap().refund_tally(&paid).unwrap().expect("a tally");
    assert_eq!((tally.refunded_minor, tally.refund_count, tally.collected_minor), (10_000, 3, 10_000));
    let pending = grouped_collection(&engine, 2, 5_000, &link, None);
    let refused = engine.execute_blocking(new_refund(&pending, None, "rf-5"));
    assert!(
        matches!(refused, Err(sika_engine::EngineError::NotRefundable { payment_completed: false, .. })),
        "{refused:?}"
    );
    let report = verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
    assert_eq!(report.refund_tallies, 1);
    engine.shutdown();
    drop(engine);

    // (a) The tally holds back less than the refunds not failed.
    let report = tamper(&path, "refund-tally", |table| {
        let mut tally: sika_engine::RefundTally = get(table, &keys::refund_tally(&paid));
        tally.refunded_minor -= 500;
        put(table, &keys::refund_tally(&paid), &tally);
    });
    assert_reports(
        &report,
        &format!(
            "payment {paid}'s refund tally holds back 9500 in 3 refund(s), but its refunds not failed come to 10000 in 3 refund(s)"
        ),
    );
    // (b) A refund grew after it was counted.
    let report = tamper(&path, "refund-grown", |table| {
        let mut refund: sika_engine::RefundRecord = get(table, &keys::refund(&kept));
        refund.amount += 1;
        put(table, &keys::refund(&kept), &refund);
    });
    assert_reports(&report, &format!("payment {paid} has 10001 refunded of 10000 collected"));
    // (c) The tally is gone.
    let report = tamper(&path, "refund-tally-missing", |table| {
        assert!(table.remove(keys::refund_tally(&paid).as_slice()).unwrap().is_some());
    });
    assert_reports(&report, &format!("payment {paid} has 3 refund(s) but no refund tally"));
}

/// A ledger with a payout completed then reversed, and one completed only.
fn build_reversal(dir: &Path) -> (PathBuf, String, String) {
    let path = dir.join("reversal.redb");
    let engine = Engine::open(EngineConfig::new(Some(path.clone()))).expect("open");
    run(&engine, deposit("org_a", "GHS", 100_000, None));
    let payout = |reference: &str| {
        Command::CreatePayout(Box::new(sika_engine::movements::NewPayout {
            organization: "org_a".into(),
            from_currency: "GHS".into(),
            from_amount: 10_005,
            to: sika_engine::Destination { code: "mtn_gh".into(), ..Default::default() },
            to_currency: "GHS".into(),
            to_amount: 10_005,
            fee_amount: 200,
            rate: "1".into(),
            narration: String::new(),
            metadata: "{}".into(),
            external_reference: reference.into(),
            api_key_id: None,
            cap: None,
            rail: "test".into(),
            rail_note: "sent".into(),
            schedule: Vec::new(),
            request_fingerprint: [reference.len() as u8; 32],
            order_id: None,
        }))
    };
    let mut ids = Vec::new();
    for reference in ["reversed", "kept"] {
        let Outcome::Payout(p) = run(&engine, payout(reference)).outcome else { panic!("a payout") };
        let settle = Step::Settle { success: true, message: "delivered".into() };
        run(
            &engine,
            Command::AdvancePayout { payout_id: sika_engine::PayoutId::from(p.id.clone()), step: settle },
        );
        ids.push(p.id);
    }
    let reverse = || Step::Reverse { message: "returned".into() };
    run(
        &engine,
        Command::AdvancePayout { payout_id: sika_engine::PayoutId::from(ids[0].clone()), step: reverse() },
    );
    let again = run(
        &engine,
        Command::AdvancePayout { payout_id: sika_engine::PayoutId::from(ids[0].clone()), step: reverse() },
    );
    assert!(again.replayed, "a second reversal changes nothing");
    let report = verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
    engine.shutdown();
    drop(engine);
    let kept = ids.pop().unwrap();
    (path, ids.pop().unwrap(), kept)
}

#[test]
fn verify_recounts_each_reversal_and_names_a_payout_whose_status_disagrees() {
    let dir = tempfile::tempdir().unwrap();
    let (path, reversed, kept) = build_reversal(dir.path());
    let report = verify_path(&path, &sika_engine::format::LEDGER_STEPS).expect("verify the closed file");
    assert!(report.is_consistent(), "{:?}", report.problems);

    // A reversed payout rewritten as completed: its amount came back anyway.
    let report = tamper(&path, "unreversed", |table| {
        let key = keys::payout(&reversed);
        let bytes = table.get(key.as_slice()).unwrap().unwrap().value().to_vec();
        let mut payout = sika_engine::stored_payout::decode(&key, &bytes).unwrap();
        payout.status = sika_engine::MovementStatus::Completed;
        table.insert(key.as_slice(), sika_engine::stored_payout::encode(&payout).as_slice()).unwrap();
    });
    assert_reports(
        &report,
        &format!("payout {reversed} is completed but 1 transfer(s) gave its amount back"),
    );

    // A completed payout rewritten as reversed: nothing gave its amount back.
    let report = tamper(&path, "unpaid-reversal", |table| {
        let key = keys::payout(&kept);
        let bytes = table.get(key.as_slice()).unwrap().unwrap().value().to_vec();
        let mut payout = sika_engine::stored_payout::decode(&key, &bytes).unwrap();
        payout.status = sika_engine::MovementStatus::Reversed;
        table.insert(key.as_slice(), sika_engine::stored_payout::encode(&payout).as_slice()).unwrap();
    });
    assert_reports(&report, &format!("payout {kept} is reversed but 0 transfer(s) gave its amount back"));
}

fn open_dispute(engine: &Engine, id: &str, amount: i128) -> sika_engine::DisputeRecord {
    let command = Command::OpenDispute {
        dispute: Box::new(sika_engine::disputes::NewDispute {
            id: id.into(),
            organization: "org_d".into(),
            currency: "GHS".into(),
            amount,
        }),
        expect: Vec::new(),
        documents: Vec::new(),
    };
    match run(engine, command).outcome {
        Outcome::Dispute(d) => *d,
        other => panic!("{other:?}"),
    }
}

/// A dispute short of its amount is filled by later inflows, each its own
/// transfer; `verify` recounts every dispute's money from those transfers
/// and the lists of disputes each balance owes, and names a dispute whose
/// record or list was tampered with.
#[test]
fn verify_recounts_dispute_holds_and_names_one_that_disagrees() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.redb");
    let engine = Engine::open(EngineConfig::new(Some(path.clone()))).expect("open");
    run(&engine, deposit("org_d", "GHS", 3_000, None));
    let held = open_dispute(&engine, "dsp_full", 1_000);
    assert_eq!((held.held, held.transfer_ids.len()), (1_000, 1));
    let short = open_dispute(&engine, "dsp_short", 5_000);
    assert_eq!(short.held, 2_000, "what was available");
    let journal = engine.read().unwrap().journal_length().unwrap();
    run(&engine, deposit("org_d", "GHS", 1_000, None));
    let snapshot = engine.read().unwrap();
    let filled = snapshot.dispute("dsp_short").unwrap().expect("the dispute");
    assert_eq!((filled.held, filled.transfer_ids.len()), (3_000, 2), "the deposit's hold is its own entry");
    assert_eq!(snapshot.journal_length().unwrap(), journal + 2, "the deposit and its hold");
    assert_eq!(snapshot.dispute_shortfalls("org_d", "GHS").unwrap(), ["dsp_short"]);
    let account = snapshot.organization_account("org_d", "GHS").unwrap().unwrap();
    assert_eq!(account.balances().unwrap().available, 0);
    drop(snapshot);
    // Accepted while short: what is held is taken, the rest from the next inflow.
    let resolve = |id: &str, accepted| Command::ResolveDispute {
        dispute_id: id.into(),
        accepted,
        expect: Vec::new(),
        documents: Vec::new(),
    };
    run(&engine, resolve("dsp_short", true));
    let again = engine.execute_blocking(resolve("dsp_short", false));
    assert!(matches!(again, Err(sika_engine::EngineError::Conflict(_))), "{again:?}");
    run(&engine, deposit("org_d", "GHS", 2_500, None));
    let snapshot = engine.read().unwrap();
    let lost = snapshot.dispute("dsp_short").unwrap().expect("the dispute");
    assert_eq!((lost.held, lost.taken), (0, 5_000));
    assert!(snapshot.dispute_shortfalls("org_d", "GHS").unwrap().is_empty());
    let account = snapshot.organization_account("org_d", "GHS").unwrap().unwrap();
    assert_eq!(account.balances().unwrap().available, 500);
    drop(snapshot);
    // Declined: released, and the balance has it back.
    run(&engine, resolve("dsp_full", false));
    let account = engine.read().unwrap().organization_account("org_d", "GHS").unwrap().unwrap();
    assert_eq!(account.balances().unwrap().available, 1_500);
    open_dispute(&engine, "dsp_open", 9_000);
    let report = verify(&*engine.database().expect("the database")).expect("verify");
    assert!(report.is_consistent(), "{:?}", report.problems);
    engine.shutdown();
    drop(engine);

    // (a) A dispute says it took more than its ledger entries took.
    let report = tamper(&path, "dispute-taken", |table| {
        let mut d: sika_engine::DisputeRecord = get(table, &keys::dispute("dsp_short"));
        d.taken -= 100;
        put(table, &keys::dispute("dsp_short"), &d);
    });
    assert_reports(&report, "dispute dsp_short says it holds 0 and took 4900");
    // (b) A short dispute missing from its balance's list.
    let report = tamper(&path, "dispute-list", |table| {
        table.remove(keys::dispute_shortfalls("org_d", "GHS").as_slice()).unwrap();
    });
    assert_reports(&report, "dispute dsp_open is short but not owed");
    // (c) A won dispute that still keeps money.
    let report = tamper(&path, "dispute-won", |table| {
        let mut d: sika_engine::DisputeRecord = get(table, &keys::dispute("dsp_full"));
        d.held = 1_000;
        put(table, &keys::dispute("dsp_full"), &d);
    });
    assert_reports(&report, "dispute dsp_full holds or took money its state does not allow");
}

/// The journal numbers of an account's balance changes, oldest first.
fn balance_changes(table: &Table, account_id: &str) -> Vec<u64> {
    let entries = scan(table, sika_engine::storage::Space::Journal).unwrap();
    entries
        .into_iter()
        .filter_map(|(_, value)| {
            let (entry, changes) = JournalEntry::decode_with_changes(&value).unwrap();
            changes.sides(&entry.transfer).any(|(id, _)| id == account_id).then_some(entry.seq)
        })
        .collect()
}

/// Rewrites the balance changes journal entry `seq` stores with `change`.
fn change_entry(table: &mut Table, seq: u64, change: impl FnOnce(&JournalEntry, &mut EntryChanges)) {
    let key = keys::journal(seq);
    let bytes = table.get(key.as_slice()).unwrap().expect("the entry").value().to_vec();
    let (entry, mut changes) = JournalEntry::decode_with_changes(&bytes).unwrap();
    change(&entry, &mut changes);
    let mut bytes = JournalEntry::without_changes(&bytes).unwrap().to_vec();
    changes.append_to(&mut bytes);
    table.insert(key.as_slice(), bytes.as_slice()).unwrap();
}

/// Account `account_id`'s side of `changes` (`entry` being theirs).
fn side_of<'c>(
    entry: &JournalEntry,
    changes: &'c mut EntryChanges,
    account_id: &str,
) -> &'c mut Option<EntryChange> {
    if entry.transfer.debit_account == account_id { &mut changes.debit } else { &mut changes.credit }
}

#[test]
fn verify_checks_that_each_accounts_balance_changes_chain_to_its_balances() {
    use sika_engine::balance_changes::{StoredChange, account_number};
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let account = ledger.account_id.clone();
    let number = account_number(&account).unwrap();

    // An entry's balances after no longer follow the one before.
    let report = tamper(&ledger.path, "changes-after", |table| {
        let seq = balance_changes(table, &account).remove(0);
        change_entry(table, seq, |entry, changes| {
            side_of(entry, changes, &account).as_mut().expect("a change").after.available += 1;
        });
    });
    assert_reports(&report, &format!("account {account}'s balance change at journal entry"));
    assert_reports(&report, "the one before plus its change gives");

    // The newest entry no longer leaves the account's balances.
    let report = tamper(&ledger.path, "changes-newest", |table| {
        let seq = balance_changes(table, &account).pop().expect("entries");
        change_entry(table, seq, |entry, changes| {
            side_of(entry, changes, &account).as_mut().expect("a change").after.total -= 1;
        });
    });
    assert_reports(&report, &format!("account {account} holds"));
    assert_reports(&report, "but its newest balance change leaves");

    // An entry is missing: the journal entry that changed the balance is
    // named, and the entry after it no longer names the one before.
    let report = tamper(&ledger.path, "changes-missing", |table| {
        let seq = balance_changes(table, &account).remove(0);
        change_entry(table, seq, |entry, changes| *side_of(entry, changes, &account) = None);
    });
    assert_reports(&report, "but is not among its balance changes");
    assert_reports(&report, "as the one before, not");

    // An entry's changes claim a time the entry did not change it at.
    let report = tamper(&ledger.path, "changes-at", |table| {
        let seq = balance_changes(table, &account).remove(0);
        change_entry(table, seq, |_, changes| changes.at = Some(1));
    });
    assert_reports(&report, "at 1, which did not change it then");

    // A change stored apart, as formats 10 to 29 did, is one the upgrade
    // left behind.
    let report = tamper(&ledger.path, "changes-apart", |table| {
        let held: AccountEntry = get(table, &keys::account(&account));
        let stored = StoredChange { at: 1, previous: Some(held.changes.newest), after: Default::default() };
        put(table, &keys::balance_change(ledger.journal_length + 1, number), &stored);
    });
    assert_reports(&report, &format!("a balance change of account number {number} at journal entry"));
    assert_reports(&report, "is stored apart from its entry, as formats 10 to 29 stored it");

    // The head no longer names the newest change.
    let report = tamper(&ledger.path, "changes-head", |table| {
        let mut held: AccountEntry = get(table, &keys::account(&account));
        held.changes.count += 1;
        put(table, &keys::account(&account), &held);
    });
    assert_reports(&report, &format!("account {account}'s balance head says"));

    // A head stored apart, as formats 10 to 15 did, is one the upgrade
    // left behind.
    let report = tamper(&ledger.path, "head-apart", |table| {
        let held: AccountEntry = get(table, &keys::account(&account));
        put(table, &keys::balance_head(number), &held.changes);
    });
    assert_reports(&report, &format!("a balance head for account number {number} is stored apart"));

    // A system account has no balance changes.
    let report = tamper(&ledger.path, "system-head", |table| {
        let accounts = scan(&*table, sika_engine::storage::Space::Account).unwrap();
        let (key, mut held) = accounts
            .into_iter()
            .map(|(key, value)| (key, decode::<AccountEntry>(&value).unwrap()))
            .find(|(_, entry)| !entry.account.is_organization())
            .expect("a system account");
        held.changes.count = 1;
        put(table, &key, &held);
    });
    assert_reports(&report, "which only organization accounts have");
}

/// Every `MARK_EVERY`-th change of an account is marked, no other is, and
/// the balances at an instant read from the marks are the balances then.
#[test]
fn verify_checks_the_marks_that_balances_at_an_instant_start_from() {
    use sika_engine::balance_changes::{MARK_EVERY, account_number, parse_mark};
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.redb");
    let engine = Engine::open(EngineConfig::new(Some(path.clone()))).expect("open");
    let deposits = MARK_EVERY * 2 + 5;
    let mut times = Vec::new();
    for n in 1..=deposits {
        run(&engine, deposit("org_a", "GHS", 100, None));
        let snapshot = engine.read().unwrap();
        let account = snapshot.organization_account("org_a", "GHS").unwrap().expect("account");
        let newest = snapshot.balance_at(&account, i64::MAX - 1).unwrap().expect("a change");
        assert_eq!(newest.after.available, i128::from(n) * 100);
        times.push((newest.at, newest.after));
    }
    let snapshot = engine.read().unwrap();
    let account = snapshot.organization_account("org_a", "GHS").unwrap().expect("account");
    let number = account_number(&account.id).unwrap();
    for (at, after) in &times {
        // The last change at that millisecond is the one whose balances hold then.
        let last = times.iter().rev().find(|(t, _)| t == at).unwrap();
        let found = snapshot.balance_at(&account, *at).unwrap().expect("a change then");
        assert_eq!(found.after, last.1, "the balances at {at} ({after:?} was one of them)");
    }
    let first = times[0].0;
    assert_eq!(snapshot.balance_at(&account, first - 1).unwrap(), None, "nothing before the first deposit");
    drop(snapshot);
    engine.shutdown();
    drop(engine);

    let db = redb::Database::create(&path).unwrap();
    let marks = {
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        let marks: Vec<Vec<u8>> =
            scan(&table, Space::BalanceMark).unwrap().into_iter().map(|(k, _)| k).collect();
        marks
    };
    assert_eq!(marks.len() as u64, deposits / MARK_EVERY, "one mark every {MARK_EVERY} changes");
    assert!(marks.iter().all(|key| parse_mark(key).is_some_and(|(n, _, _)| n == number)));
    drop(db);
    let report = tamper(&path, "unmarked", |table| {
        table.remove(marks[0].as_slice()).unwrap();
    });
    assert_reports(&report, "is not marked");
    let report = tamper(&path, "marked", |table| {
        let seq = balance_changes(table, &format!("GHS{number}")).remove(0);
        put(table, &keys::balance_mark(number, times[0].0, seq), &());
    });
    assert_reports(&report, "which is not one of its changes to mark");
}

#[test]
fn formats_7_and_10_build_the_balance_changes_the_books_would_have_written() {
    use sika_engine::format::{
        accounts_hold_their_balance_heads, balance_changes_link_back, balances_index_their_changes, format9,
        format12, format15, journal_entries_leave_the_previous_hash,
    };
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let db = redb::Database::create(&ledger.path).unwrap();
    let journal = stored(&db, Space::Journal);
    // Formats 10 to 29 stored each change apart from its journal entry.
    assert!(changes_apart(&db) >= 6, "the deposits and the conversion changed balances");
    assert_ne!(stored(&db, Space::Journal), journal, "the entries no longer hold their changes");
    let spaces = [Space::BalanceChange, Space::BalanceMark, Space::BalanceHead];
    let read_all =
        |db: &redb::Database| spaces.iter().flat_map(|space| stored(db, *space)).collect::<Vec<_>>();
    let written = read_all(&db);
    let accounts = stored(&db, Space::Account);
    assert!(written.len() >= 8, "the books indexed the deposits and the conversion: {written:?}");
    assert!(stored(&db, Space::BalanceHead).is_empty(), "the books keep each head in its account");
    // Formats 10 to 15 kept each head apart.
    let txn = db.begin_write().unwrap();
    let heads = format15::store_heads_apart(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    assert_eq!(heads, ledger.balances.len(), "a head for each organization account");
    let written_by_15 = read_all(&db);
    assert_eq!(written_by_15.len(), written.len() + heads);
    // A format 9 ledger: the same changes keyed by account first.
    let txn = db.begin_write().unwrap();
    let rekeyed = format9::store_balance_changes_as_format_9(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    assert!(rekeyed >= 4, "{rekeyed}");
    assert!(read_all(&db).is_empty(), "format 9 has none of format 10's entries");
    let txn = db.begin_write().unwrap();
    balance_changes_link_back(&txn).unwrap();
    txn.commit().unwrap();
    assert_eq!(read_all(&db), written_by_15, "format 10's step writes what format 15 held");
    let txn = db.begin_write().unwrap();
    accounts_hold_their_balance_heads(&txn).unwrap();
    txn.commit().unwrap();
    assert_eq!(read_all(&db), written, "format 16's step leaves what the books wrote");
    assert_eq!(stored(&db, Space::Account), accounts, "each account holds its head as the books wrote it");
    changes_move_into_entries(&db, &journal);
    changes_apart(&db);

    // A format 6 ledger: the same records without the index at all.
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        for (key, _) in &written {
            table.remove(key.as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
    let report = verify(&db).unwrap();
    assert_reports(&report, "but is not among its balance changes");
    use sika_engine::format::{journal_entries_hash_at_marks, journal_entries_name_accounts_by_number};
    let txn = db.begin_write().unwrap();
    {
        // Format 6's accounts have no head, and its journal entries hold
        // the hash of the entry before them.
        let mut table = txn.open_table(RECORDS).unwrap();
        format15::store_heads_apart(&mut table).unwrap();
        let heads = sika_engine::storage::keys::space(Space::BalanceHead);
        let end = sika_engine::storage::prefix_end(&heads);
        table.retain_in(heads.as_slice()..end.as_slice(), |_, _| false).unwrap();
        format12::store_journal_with_previous_hashes(&mut table).unwrap();
    }
    balances_index_their_changes(&txn).unwrap();
    balance_changes_link_back(&txn).unwrap();
    journal_entries_leave_the_previous_hash(&txn).unwrap();
    journal_entries_name_accounts_by_number(&txn).unwrap();
    accounts_hold_their_balance_heads(&txn).unwrap();
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    assert_eq!(read_all(&db), written, "formats 7, 10 and 16 write what the books wrote");
    assert_eq!(stored(&db, Space::Account), accounts);
    changes_move_into_entries(&db, &journal);
}

/// Lays `db`'s balance changes out apart from their journal entries, as
/// formats 10 to 29 did; returns how many moved.
fn changes_apart(db: &redb::Database) -> usize {
    let txn = db.begin_write().unwrap();
    let mut table = txn.open_table(RECORDS).unwrap();
    let apart = sika_engine::format::format29::store_balance_changes_apart(&mut table).unwrap();
    drop(table);
    txn.commit().unwrap();
    apart
}

/// Runs format 30's step on `db` (whose changes `changes_apart` laid out
/// as formats 10 to 29 stored them), then verifies it.
fn verify_at_30(db: &redb::Database) -> Report {
    run_step(db, sika_engine::format::balance_changes_move_into_their_entries);
    verify(db).unwrap()
}

/// Stores `entry` where it is, keeping the balance changes stored there.
fn put_entry(table: &mut Table, entry: &JournalEntry) {
    let key = keys::journal(entry.seq);
    let (_, changes) = {
        let stored = table.get(key.as_slice()).unwrap().expect("the entry").value().to_vec();
        JournalEntry::decode_with_changes(&stored).unwrap()
    };
    let mut bytes = encode(entry);
    changes.append_to(&mut bytes);
    table.insert(key.as_slice(), bytes.as_slice()).unwrap();
}

/// Runs format 30's step on `db`, which must leave each journal entry with
/// the balance changes the books stored in it (`journal`), no change
/// apart, and a ledger that verifies.
fn changes_move_into_entries(db: &redb::Database, journal: &[(Vec<u8>, Vec<u8>)]) {
    use sika_engine::storage::Space;
    let txn = db.begin_write().unwrap();
    sika_engine::format::balance_changes_move_into_their_entries(&txn).unwrap();
    txn.commit().unwrap();
    let changes = |journal: &[(Vec<u8>, Vec<u8>)]| -> Vec<(u64, EntryChanges)> {
        let decoded = journal.iter().map(|(_, value)| JournalEntry::decode_with_changes(value).unwrap());
        decoded.map(|(entry, changes)| (entry.seq, changes)).collect()
    };
    let moved = changes(&stored(db, Space::Journal));
    assert_eq!(moved, changes(journal), "format 30's step stores the changes the books stored");
    assert!(stored(db, Space::BalanceChange).is_empty(), "every change moved into its entry");
    let report = verify(db).unwrap();
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Format 16 keeps each account's balance-change head in its record: the
/// step moves every head format 15 stored apart into its account, exactly
/// as the books write it, so no head record is left and the books verify.
/// An account in any shape but format 15's stops the upgrade, and a head
/// whose account does not exist stays for verify to report.
#[test]
fn format_16_keeps_each_head_in_its_account_as_the_books_do() {
    use sika_engine::format::{accounts_hold_their_balance_heads, format15};
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let db = redb::Database::create(&ledger.path).unwrap();
    let accounts = stored(&db, Space::Account);
    let txn = db.begin_write().unwrap();
    format15::store_heads_apart(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    let apart = stored(&db, Space::BalanceHead);
    assert_eq!(apart.len(), ledger.balances.len(), "a head for each organization account: {apart:?}");

    // An account already in this format's shape is not format 15's.
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        table.insert(accounts[0].0.as_slice(), accounts[0].1.as_slice()).unwrap();
    }
    let error = accounts_hold_their_balance_heads(&txn).unwrap_err();
    assert!(error.to_string().contains("is not stored as format 15 stored accounts"), "{error}");
    drop(txn);

    // A head of no account stays.
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        table.insert(keys::balance_head(999_999).as_slice(), apart[0].1.as_slice()).unwrap();
    }
    accounts_hold_their_balance_heads(&txn).unwrap();
    txn.commit().unwrap();
    assert_eq!(stored(&db, Space::Account), accounts, "each account holds its head as the books wrote it");
    assert_eq!(stored(&db, Space::BalanceHead).len(), 1, "only the head of no account is left");
    let report = verify(&db).unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert_reports(&report, "a balance head for account number 999999 is stored apart");
}

/// A closed ledger whose journal runs past two marks (the `build` ledger
/// and three batches of 50 transfers): its path, its entries as the books
/// stored them, and each entry's hash in the chain.
fn journal_past_two_marks(dir: &Path) -> (PathBuf, Vec<JournalEntry>, Vec<[u8; 32]>) {
    let ledger = build(dir);
    let engine = Engine::open(EngineConfig::new(Some(ledger.path.clone()))).unwrap();
    for _ in 0..3 {
        run(&engine, transfers((0..50).map(|_| between("org_a", "org_b", "USD", 1, false)).collect()));
    }
    engine.shutdown();
    drop(engine);
    let db = redb::Database::open(&ledger.path).unwrap();
    let written = journal(&db.begin_read().unwrap().open_table(RECORDS).unwrap());
    assert!(written.len() as u64 > 2 * sika_engine::HASH_EVERY, "{} entries", written.len());
    let mut prev = [0; 32];
    let chain = written
        .iter()
        .map(|entry| {
            prev = JournalEntry::chain_hash(&prev, entry.seq, &entry.transfer);
            prev
        })
        .collect();
    (ledger.path, written, chain)
}

/// Format 17 stores a journal entry's hash only at every `HASH_EVERY`th
/// entry and the last. The step turns a format 16 journal (every entry
/// with its hash) into exactly that: the same transfers, each stored hash
/// the chain's, and verify passes. An entry in any shape but format 16's
/// stops the upgrade.
#[test]
fn format_17_keeps_a_journal_entrys_hash_only_at_the_marks_and_the_last() {
    use sika_engine::format::{format16, journal_entries_hash_at_marks};
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let (path, written, chain) = journal_past_two_marks(dir.path());
    let db = redb::Database::create(&path).unwrap();
    changes_apart(&db);
    let books_bytes = stored(&db, Space::Journal);
    let txn = db.begin_write().unwrap();
    let rewritten = format16::store_hashes_in_every_entry(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    assert_eq!(rewritten, written.len());
    let size = |all: &[(Vec<u8>, Vec<u8>)]| all.iter().map(|(_, v)| v.len()).sum::<usize>();
    let unhashed = written.iter().filter(|entry| entry.hash.is_none()).count();
    let hashed = written.len() - unhashed;
    // Format 17 stores a hash's tag (one byte), and the hash where it is
    // (with every memo as text, as formats 14 to 18 stored them).
    let format_16 = size(&stored(&db, Space::Journal));
    let books_as_text = sika_engine::format::format18::memos_as_text(books_bytes.clone()).unwrap();
    assert_eq!(format_16 + hashed, size(&books_as_text) + 31 * unhashed, "31 bytes more for each hash");

    // An entry already in this format's shape, without its hash, is not
    // format 16's. (One with its hash can read as a format 16 entry of
    // another transfer id; its hash then does not hold, and it is kept for
    // verify to report: see the next test.)
    let unhashed_at = written.iter().position(|entry| entry.hash.is_none()).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let (key, value) = &books_bytes[unhashed_at];
        txn.open_table(RECORDS).unwrap().insert(key.as_slice(), value.as_slice()).unwrap();
    }
    let error = journal_entries_hash_at_marks(&txn).unwrap_err();
    assert!(error.to_string().contains("not stored as format 16 stored them"), "{error}");
    drop(txn);

    let txn = db.begin_write().unwrap();
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    let upgraded = journal(&db.begin_read().unwrap().open_table(RECORDS).unwrap());
    assert_eq!(upgraded.len(), written.len());
    let last = written.last().unwrap().seq;
    for ((entry, before), hash) in upgraded.iter().zip(&written).zip(&chain) {
        assert_eq!((entry.seq, &entry.transfer), (before.seq, &before.transfer));
        let kept = entry.seq % sika_engine::HASH_EVERY == 0 || entry.seq == last;
        assert_eq!(entry.hash, kept.then_some(*hash), "entry {}", entry.seq);
    }
    let report = verify_at_30(&db);
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Format 17's step does not launder a broken chain: a format 16 hash that
/// did not hold is kept where it is, and so is the next entry's, which
/// does not chain to it, so verify reports both, as it did before.
#[test]
fn format_17_keeps_a_format_16_hash_that_did_not_hold() {
    use sika_engine::format::{format16, journal_entries_hash_at_marks};
    let dir = tempfile::tempdir().unwrap();
    let (path, _, chain) = journal_past_two_marks(dir.path());
    let db = redb::Database::create(&path).unwrap();
    changes_apart(&db);
    let broken = 70;
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        format16::store_hashes_in_every_entry(&mut table).unwrap();
        let mut entry: format16::JournalEntry = get(&table, &keys::journal(broken));
        entry.hash = [7; 32];
        put(&mut table, &keys::journal(broken), &entry);
    }
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    let kept = journal(&db.begin_read().unwrap().open_table(RECORDS).unwrap());
    assert_eq!(kept[69].hash, Some([7; 32]), "the broken hash is kept");
    assert_eq!(kept[70].hash, Some(chain[70]), "the next, which does not chain to it, too");
    assert_eq!((kept[68].hash, kept[71].hash), (None, None));
    let report = verify_at_30(&db);
    let mismatch = |at: u64| {
        format!("journal entry {at} has a hash that does not match its content and the entries before it")
    };
    assert_eq!(
        report.problems,
        vec![mismatch(broken), mismatch(broken + 1)],
        "as format 16's verify reported"
    );
}

/// Format 11 stores a transfer once, in its journal entry: the step turns
/// each transfer stored whole (formats 10 and earlier, holds settled and
/// voided among them) into exactly the reference the books write, and
/// refuses a stored transfer its journal entry does not hold.
#[test]
fn format_11_stores_each_transfer_once_as_the_books_do() {
    use sika_engine::format::{
        format10, format12, journal_entries_hash_at_marks, journal_entries_leave_the_previous_hash,
        journal_entries_name_accounts_by_number, transfers_are_found_by_their_numbers,
        transfers_name_their_entries,
    };
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let db = redb::Database::create(&ledger.path).unwrap();
    changes_apart(&db);
    let read_all = |db: &redb::Database| stored(db, Space::Transfer);
    // What the books wrote up to format 23, each reference whole, which no
    // later step rewrites (format 24 reads both).
    whole_references(&db);
    let written = read_all(&db);
    assert_eq!(written.len(), 2, "a reference for each of the two holds");
    let txn = db.begin_write().unwrap();
    let whole = format10::store_transfers_whole(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    // Format 10's journal entries hold the hash of the entry before them.
    format12::store_journal_with_previous_hashes(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    assert_eq!(whole as u64, ledger.journal_length, "one whole transfer per journal entry");
    let stored_whole = read_all(&db);
    let bytes = |all: &[(Vec<u8>, Vec<u8>)]| all.iter().map(|(_, v)| v.len()).sum::<usize>();
    assert!(bytes(&stored_whole) > 10 * bytes(&written), "a reference is a fraction of a transfer");
    let posted: Vec<sika_engine::TransferRecord> =
        stored_whole.iter().map(|(_, v)| decode(v).unwrap()).collect();
    assert!(posted.iter().any(|t| t.pending_state == Some(sika_engine::PendingState::Posted)));
    assert!(posted.iter().any(|t| t.pending_state == Some(sika_engine::PendingState::Voided)));

    // A whole transfer its journal entry does not hold stops the upgrade.
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        let mut changed = posted[0].clone();
        changed.amount += 1;
        table.insert(stored_whole[0].0.as_slice(), encode(&changed).as_slice()).unwrap();
    }
    let error = transfers_name_their_entries(&txn).unwrap_err();
    assert!(error.to_string().contains("is not the one journal entry"), "{error}");
    drop(txn);

    let txn = db.begin_write().unwrap();
    transfers_name_their_entries(&txn).unwrap();
    journal_entries_leave_the_previous_hash(&txn).unwrap();
    journal_entries_name_accounts_by_number(&txn).unwrap();
    transfers_are_found_by_their_numbers(&txn).unwrap();
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    assert_eq!(read_all(&db), written, "the steps write what the books wrote");
    let report = verify_at_30(&db);
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Format 15 keeps a reference under a transfer's id only for a hold (or
/// a transfer numbered apart from its entry): the step removes every other
/// reference format 14 stored, leaving exactly what the books write, and
/// the books verify. A reference naming an entry that does not hold its
/// transfer is kept, and verify reports it.
#[test]
fn format_15_keeps_references_only_for_holds_as_the_books_do() {
    use sika_engine::format::{
        format14, format16, journal_entries_hash_at_marks, transfers_are_found_by_their_numbers,
    };
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let db = redb::Database::create(&ledger.path).unwrap();
    changes_apart(&db);
    let read_all = |db: &redb::Database| stored(db, Space::Transfer);
    // What the books wrote up to format 23, each reference whole, which no
    // later step rewrites (format 24 reads both).
    whole_references(&db);
    let written = read_all(&db);
    let txn = db.begin_write().unwrap();
    let added = format14::store_every_transfer_ref(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    // Format 14's journal entries each held their hash.
    format16::store_hashes_in_every_entry(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    assert_eq!(added + written.len(), ledger.journal_length as usize, "format 14 had one per transfer");

    let txn = db.begin_write().unwrap();
    transfers_are_found_by_their_numbers(&txn).unwrap();
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    assert_eq!(read_all(&db), written, "the step leaves what the books write");
    let report = verify_at_30(&db);
    assert!(report.is_consistent(), "{:?}", report.problems);

    // A format 14 reference that names the next entry is not the books':
    // the step keeps it, and verify reports both entries it confuses.
    let seq = ledger.transfer.journal_seq;
    let copy = ledger.path.with_file_name("f14-wrong-ref.redb");
    std::fs::copy(&ledger.path, &copy).unwrap();
    let db = redb::Database::create(&copy).unwrap();
    changes_apart(&db);
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(RECORDS).unwrap();
        format14::store_every_transfer_ref(&mut table).unwrap();
        format16::store_hashes_in_every_entry(&mut table).unwrap();
        let mut found: sika_engine::TransferRef = get(&table, &keys::transfer(ledger.transfer.id));
        found.journal_seq += 1;
        put(&mut table, &keys::transfer(ledger.transfer.id), &found);
    }
    transfers_are_found_by_their_numbers(&txn).unwrap();
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    assert!(stored(&db, Space::Transfer).len() > written.len(), "the wrong reference stays");
    let report = verify_at_30(&db);
    assert_reports(
        &report,
        &format!("transfer {} of journal entry {seq} is missing or differs", ledger.transfer.id),
    );
}

/// A transfer is stored once, in its journal entry. A hold's id names its
/// entry (and holds its state); any other transfer's id is its entry's
/// number and has no reference. A hold's reference that names another
/// entry, a hold without one, and a reference stored for a posted
/// transfer are each reported.
#[test]
fn verify_requires_each_transfers_id_to_name_its_journal_entry() {
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let hold = &ledger.hold;
    let problem = |t: &TransferRecord| {
        format!("transfer {} of journal entry {} is missing or differs", t.id, t.journal_seq)
    };
    let report = tamper(&ledger.path, "hold-ref", |table| {
        let stored = table.get(keys::transfer(hold.id).as_slice()).unwrap().unwrap().value().to_vec();
        let mut found = sika_engine::TransferRef::decode(hold.id, &stored).unwrap();
        found.journal_seq += 1;
        put(table, &keys::transfer(hold.id), &found);
    });
    assert_reports(&report, &problem(hold));
    let report = tamper(&ledger.path, "hold-ref-missing", |table| {
        table.remove(keys::transfer(hold.id).as_slice()).unwrap();
    });
    assert_reports(&report, &problem(hold));
    let report = tamper(&ledger.path, "posted-ref", |table| {
        put(table, &keys::transfer(ledger.transfer.id), &sika_engine::TransferRef::of(&ledger.transfer));
    });
    assert_reports(&report, &problem(&ledger.transfer));
}

/// Format 13 stores a journal entry without the hash of the entry before
/// it: the step turns each entry that held it into exactly the entry
/// format 13 wrote, which format 14's step turns into the entry the books
/// write now, and the books verify.
#[test]
fn format_13_stores_each_journal_entry_as_the_books_do() {
    use sika_engine::format::{
        format12, format13, format16, journal_entries_hash_at_marks, journal_entries_leave_the_previous_hash,
        journal_entries_name_accounts_by_number,
    };
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let db = redb::Database::create(&ledger.path).unwrap();
    changes_apart(&db);
    let read_all = |db: &redb::Database| stored(db, Space::Journal);
    let written = read_all(&db);
    assert_eq!(written.len() as u64, ledger.journal_length);
    let mut as_format_13 = format13::journal_as_format_13(written.clone()).unwrap();
    as_format_13.pop(); // the journal head
    let txn = db.begin_write().unwrap();
    let stored = format12::store_journal_with_previous_hashes(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    assert_eq!(stored, written.len());
    let old = read_all(&db);
    for ((_, before), (_, now)) in old.iter().zip(&as_format_13) {
        assert_eq!(before.len(), now.len() + 32, "format 12 held 32 bytes more per entry");
    }
    let chained: Vec<format12::JournalEntry> = old.iter().map(|(_, v)| decode(v).unwrap()).collect();
    assert_eq!(chained[0].prev_hash, [0; 32]);
    assert!(chained.windows(2).all(|pair| pair[1].prev_hash == pair[0].hash), "each held the hash before it");

    let txn = db.begin_write().unwrap();
    journal_entries_leave_the_previous_hash(&txn).unwrap();
    txn.commit().unwrap();
    assert_eq!(read_all(&db), as_format_13, "the step writes what format 13 wrote");
    let txn = db.begin_write().unwrap();
    journal_entries_name_accounts_by_number(&txn).unwrap();
    txn.commit().unwrap();
    let as_format_16 = format16::hashes_in_every_entry(written.clone()).unwrap();
    assert_eq!(read_all(&db), as_format_16, "format 14's step writes what the books wrote, each hash stored");
    let txn = db.begin_write().unwrap();
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    let report = verify_at_30(&db);
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Runs upgrade `step` on `db` in a transaction of its own.
fn run_step(db: &redb::Database, step: sika_engine::format::Step) {
    let txn = db.begin_write().unwrap();
    step(&txn).unwrap();
    txn.commit().unwrap();
}

/// Lays the closed ledger at `path` out as format 13 (its journal entries
/// and head), lets `change` tamper with the format 13 entries, upgrades it
/// with format 14's step, and returns what verify then reports.
fn upgraded_from_format_13(path: &Path, change: impl FnOnce(&mut Table)) -> Report {
    use sika_engine::format::{
        format13, journal_entries_hash_at_marks, journal_entries_name_accounts_by_number,
    };
    let db = redb::Database::create(path).unwrap();
    changes_apart(&db);
    let txn = db.begin_write().unwrap();
    format13::store_journal_as_format_13(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    change(&mut txn.open_table(RECORDS).unwrap());
    journal_entries_name_accounts_by_number(&txn).unwrap();
    journal_entries_hash_at_marks(&txn).unwrap();
    txn.commit().unwrap();
    verify_at_30(&db)
}

/// Format 14 stores a journal entry's accounts by number or system kind
/// and its number once, and hashes what it stores: the step turns each
/// format 13 entry into exactly the entry the books write now, a smaller
/// one holding the same transfer, and the books verify. A chain that was
/// broken stays broken where it was: rehashing does not launder a changed
/// entry. An entry that does not decode as format 13 stops the upgrade.
#[test]
fn format_14_stores_each_journal_entry_compactly_as_the_books_do() {
    use sika_engine::format::{
        format13, format16, journal_entries_hash_at_marks, journal_entries_name_accounts_by_number,
    };
    use sika_engine::storage::Space;
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let db = redb::Database::create(&ledger.path).unwrap();
    changes_apart(&db);
    let read_all = |db: &redb::Database| stored(db, Space::Journal);
    let written = read_all(&db);
    let txn = db.begin_write().unwrap();
    let stored = format13::store_journal_as_format_13(&mut txn.open_table(RECORDS).unwrap()).unwrap();
    txn.commit().unwrap();
    assert_eq!(stored, written.len());
    let old = read_all(&db);
    for ((_, before), (_, now)) in old.iter().zip(&written) {
        let (before, now): (format13::JournalEntry, JournalEntry) =
            (decode(before).unwrap(), decode(now).unwrap());
        assert_eq!((before.seq, &before.transfer), (now.seq, &now.transfer), "the same entry");
        // Each side's id is text in format 13 (an organization's currency
        // and ten digits, or "sys_world_USD" or longer): 14 bytes or more
        // with its length. Now it is a number (six with its tag) or a kind.
        let t = &before.transfer;
        assert!(encode(&before).len() >= encode(&now).len() + 15, "{t:?} is stored smaller");
    }
    let total = |all: &[(Vec<u8>, Vec<u8>)]| all.iter().map(|(_, v)| v.len()).sum::<usize>();
    assert!(total(&written) * 100 < total(&old) * 85, "{} against {}", total(&written), total(&old));

    // An entry that is not format 13's stops the upgrade.
    let txn = db.begin_write().unwrap();
    txn.open_table(RECORDS).unwrap().insert(old[0].0.as_slice(), [1u8, 2, 3].as_slice()).unwrap();
    let error = journal_entries_name_accounts_by_number(&txn).unwrap_err();
    assert!(error.to_string().contains("undecodable record"), "{error}");
    drop(txn);

    run_step(&db, journal_entries_name_accounts_by_number);
    let as_format_16 = format16::hashes_in_every_entry(written).unwrap();
    assert_eq!(read_all(&db), as_format_16, "the step writes what the books wrote, each hash stored");
    run_step(&db, journal_entries_hash_at_marks);
    let report = verify_at_30(&db);
    assert!(report.is_consistent(), "{:?}", report.problems);
}

/// Format 14's step rehashes the journal without laundering a broken
/// chain: a format 13 entry changed (its hash no longer holds) is reported
/// after the upgrade, and only it; one rehashed to match breaks the next,
/// as before; a rewritten head still does not match.
#[test]
fn format_14_reports_a_broken_format_13_chain_where_it_was() {
    use sika_engine::format::format13;
    let dir = tempfile::tempdir().unwrap();
    let ledger = build(dir.path());
    let seq = ledger.transfer.journal_seq;
    let copy = |name: &str| {
        let copy = ledger.path.with_file_name(format!("{name}.redb"));
        std::fs::copy(&ledger.path, &copy).unwrap();
        copy
    };
    let changed = |table: &mut Table, rehash: bool| {
        let mut entry: format13::JournalEntry = get(table, &keys::journal(seq));
        entry.transfer.amount += 1;
        if rehash {
            let previous = get::<format13::JournalEntry>(table, &keys::journal(seq - 1)).hash;
            entry.hash = format13::chain_hash(&previous, &entry.transfer);
        }
        put(table, &keys::journal(seq), &entry);
    };
    assert!(seq > 1, "the tampered entry has one before it");
    let report = upgraded_from_format_13(&copy("f13-changed"), |table| changed(table, false));
    let broken = |report: &Report| -> Vec<String> {
        report.problems.iter().filter(|p| p.contains("has a hash that does not match")).cloned().collect()
    };
    assert_eq!(
        broken(&report),
        [format!("journal entry {seq} has a hash that does not match its content and the entries before it")]
    );
    // Its hash rewritten to match in format 13: the next entry breaks, as
    // it did before the upgrade.
    let report = upgraded_from_format_13(&copy("f13-rehashed"), |table| changed(table, true));
    assert_eq!(
        broken(&report),
        [format!(
            "journal entry {} has a hash that does not match its content and the entries before it",
            seq + 1
        )]
    );
    // The head rewritten: it still does not match the last entry.
    let report = upgraded_from_format_13(&copy("f13-head"), |table| {
        put(table, &keys::meta("journal_head"), &[3u8; 32])
    });
    assert_reports(&report, "the journal head hash does not match the last entry");
}
