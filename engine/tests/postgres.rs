//! The PostgreSQL backend on a real PostgreSQL (a throwaway cluster, see
//! `support/pg_cluster.rs`): the state lives in the database, a node's
//! local cache can be lost, a second node is a standby while the lease is
//! held and takes over when it is let go, and a node whose lease passed to
//! another commits nothing more, even before it notices.

#[path = "support/pg_cluster.rs"]
mod pg_cluster;

use std::path::Path;
use std::time::Duration;

use pg_cluster::Cluster;
use sika_engine::{AccountRef, Command, Engine, EngineConfig, EngineError, PostgresConfig, TransferSpec};

fn config(url: &str, cache: &Path, holder: &str, lease_ttl: Duration) -> EngineConfig {
    let mut config = EngineConfig::new(Some(cache.to_path_buf()));
    config.postgres =
        Some(PostgresConfig { url: url.to_string(), stack: "live".into(), holder: holder.into(), lease_ttl });
    config
}

fn deposit(engine: &Engine, organization: &str, amount: i128) -> Result<(), EngineError> {
    engine
        .execute_blocking(Command::Deposit {
            organization: organization.into(),
            currency: "USD".into(),
            amount,
            external_reference: None,
        })
        .map(|_| ())
}

fn pay(engine: &Engine, from: &str, to: &str, amount: i128) {
    let org = |o: &str| AccountRef::Organization(o.to_string());
    let transfer = TransferSpec::Posted {
        debit: org(from),
        credit: org(to),
        currency: "USD".into(),
        amount,
        memo: "t".into(),
    };
    engine
        .execute_blocking(Command::Transfers { transfers: vec![transfer], external_reference: None })
        .unwrap();
}

fn available(engine: &Engine, organization: &str) -> i128 {
    let account = engine.read().unwrap().organization_account(organization, "USD").unwrap();
    account.map_or(0, |a| a.balances().unwrap().available)
}

/// Runs SQL against the test database, away from any async runtime.
fn sql(url: &str, statement: &str) -> u64 {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
            client.execute(statement, &[]).unwrap()
        })
        .join()
        .unwrap()
    })
}

const TTL: Duration = Duration::from_secs(60);

/// Waits until a standby has taken the lease; how long that took.
fn until_writer(engine: &Engine, within: Duration) -> Duration {
    let started = std::time::Instant::now();
    while engine.is_standby() {
        assert!(
            started.elapsed() < within,
            "still a standby after {within:?}: {:?}",
            engine.unavailable_reason()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    started.elapsed()
}

#[test]
fn the_state_lives_in_postgres_and_a_lost_cache_is_rebuilt_from_it() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database("state");
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("live.redb");
    let engine = Engine::open(config(&url, &cache, "node-a", TTL)).unwrap();
    deposit(&engine, "org_a", 10_000).unwrap();
    for _ in 0..50 {
        pay(&engine, "org_a", "org_b", 100);
    }
    let journal = engine.read().unwrap().journal_length().unwrap();
    engine.shutdown();
    drop(engine);

    // Incremental: the same cache again holds everything already.
    let engine = Engine::open(config(&url, &cache, "node-a", TTL)).unwrap();
    assert_eq!((available(&engine, "org_a"), available(&engine, "org_b")), (5_000, 5_000));
    engine.shutdown();
    drop(engine);

    // The cache is gone (a new machine): everything comes back from Postgres.
    std::fs::remove_file(&cache).unwrap();
    let engine = Engine::open(config(&url, &cache, "node-b", TTL)).unwrap();
    assert_eq!((available(&engine, "org_a"), available(&engine, "org_b")), (5_000, 5_000));
    assert_eq!(engine.read().unwrap().journal_length().unwrap(), journal);
    pay(&engine, "org_b", "org_a", 1_000);
    let report = sika_engine::verify::verify(&*engine.database().unwrap()).unwrap();
    assert!(report.is_consistent(), "{}", report.summary());
    engine.shutdown();
}

#[test]
fn a_second_node_is_a_standby_until_the_writer_lets_the_lease_go() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database("standby");
    let dir = tempfile::tempdir().unwrap();
    let writer = Engine::open(config(&url, &dir.path().join("a.redb"), "node-a", TTL)).unwrap();
    deposit(&writer, "org_a", 700).unwrap();

    let standby = Engine::open(config(&url, &dir.path().join("b.redb"), "node-b", TTL)).unwrap();
    assert!(standby.is_standby());
    let refused = deposit(&standby, "org_a", 5);
    assert!(matches!(&refused, Err(EngineError::Standby(m)) if m.contains("node-a")), "{refused:?}");
    assert!(standby.unavailable_reason().is_some_and(|r| r.contains("node-a")));

    // A clean stop lets the lease go at once: the standby takes over by
    // itself and sees every acknowledged write.
    writer.shutdown();
    let took = until_writer(&standby, Duration::from_secs(5));
    assert!(took < Duration::from_secs(2), "took over {took:?} after the writer let go");
    assert_eq!(available(&standby, "org_a"), 700);
    deposit(&standby, "org_a", 1).unwrap();
    assert_eq!(available(&standby, "org_a"), 701);
    standby.shutdown();
}

#[test]
fn a_node_whose_lease_passed_to_another_commits_nothing_more() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database("fencing");
    let dir = tempfile::tempdir().unwrap();
    // A long lease: the old writer's keeper does not notice in time, so the
    // fence in each batch's own transaction is what stops it.
    let old = Engine::open(config(&url, &dir.path().join("a.redb"), "node-a", TTL)).unwrap();
    deposit(&old, "org_a", 500).unwrap();

    // The old writer is paused past its lease (as by SIGSTOP): it expires
    // and another node takes over and writes.
    assert_eq!(sql(&url, "UPDATE sika_leases SET expires_at = now() - interval '1 second'"), 1);
    let new = Engine::open(config(&url, &dir.path().join("b.redb"), "node-b", TTL)).unwrap();
    deposit(&new, "org_a", 20).unwrap();

    // The old writer resumes and tries to commit: refused, and nothing of
    // it reaches the database.
    let refused = deposit(&old, "org_a", 9_999);
    assert!(
        matches!(&refused, Err(EngineError::Storage(m)) if m.contains("no longer holds the writer lease")),
        "{refused:?}"
    );
    assert!(deposit(&old, "org_a", 1).is_err(), "and every later batch is refused too");
    assert_eq!(available(&new, "org_a"), 520);
    new.shutdown();
    drop(new);
    old.shutdown();
    let reopened = Engine::open(config(&url, &dir.path().join("c.redb"), "node-c", TTL)).unwrap();
    assert_eq!(available(&reopened, "org_a"), 520, "the database holds only the lease holder's writes");
    reopened.shutdown();
}

const CHILD_URL: &str = "SIKA_PG_CHILD_URL";
const CHILD_CACHE: &str = "SIKA_PG_CHILD_CACHE";

/// Not a test on its own: the writer process that
/// `a_writer_killed_without_letting_go_is_replaced_within_the_lease` kills.
#[test]
fn lease_child() {
    let (Some(url), Some(cache)) = (std::env::var_os(CHILD_URL), std::env::var_os(CHILD_CACHE)) else {
        return;
    };
    let url = url.to_string_lossy().to_string();
    let engine = Engine::open(config(&url, Path::new(&cache), "node-a", Duration::from_secs(2))).unwrap();
    deposit(&engine, "org_a", 43).unwrap();
    println!("READY");
    std::thread::sleep(Duration::from_secs(60));
}

#[test]
fn a_writer_killed_without_letting_go_is_replaced_within_the_lease() {
    use std::io::BufRead;
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database("expiry");
    let dir = tempfile::tempdir().unwrap();
    let ttl = Duration::from_secs(2);
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "lease_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_URL, &url)
        .env(CHILD_CACHE, dir.path().join("a.redb"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|line| line.unwrap().contains("READY")), "the writer child did not start");
    // Renewing keeps the lease past its first term.
    std::thread::sleep(ttl * 2);
    let taken = Engine::open(config(&url, &dir.path().join("b.redb"), "node-b", ttl)).unwrap();
    assert!(taken.is_standby());
    // SIGKILL: the writer's renewals stop without it letting go. The
    // standby takes the lease once it expires, within the lease's time.
    child.kill().unwrap();
    child.wait().unwrap();
    let took = until_writer(&taken, ttl * 3);
    assert!(took <= ttl + Duration::from_secs(1), "took over {took:?} after the kill, lease {ttl:?}");
    assert_eq!(available(&taken, "org_a"), 43, "the killed writer's acknowledged deposit is there");
    taken.shutdown();
}

#[test]
fn the_bench_runs_on_postgres_and_removes_its_stack() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database("bench");
    let dir = tempfile::tempdir().unwrap();
    let options = sika_engine::bench::BenchOptions { transfers: 300, accounts: 10, batch: 50, seed: 3 };
    let postgres =
        PostgresConfig { url: url.clone(), stack: "bench-1".into(), holder: "bench".into(), lease_ttl: TTL };
    let report = sika_engine::bench::run(&dir.path().join("bench.redb"), options, Some(postgres)).unwrap();
    assert_eq!((report.transfers, report.batch_latencies.len()), (300, 6));
    assert_eq!(sql(&url, "SELECT 1 FROM sika_records WHERE stack = 'bench-1'"), 0, "its rows are removed");
}

/// `sika verify --store`: the audit reads the database itself, in one
/// snapshot beside a running writer, so a row lost in the database is
/// found even though the writer's cache still holds it.
#[test]
fn the_audit_reads_the_database_not_the_writers_cache() {
    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database("audit");
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(&url, &dir.path().join("live.redb"), "node-a", TTL)).unwrap();
    deposit(&engine, "org_a", 10_000).unwrap();
    for _ in 0..20 {
        pay(&engine, "org_a", "org_b", 100);
    }
    let journal = engine.read().unwrap().journal_length().unwrap();
    let report = sika_engine::verify::verify_postgres(&url, "live").unwrap().expect("the stack is there");
    assert!(report.is_consistent(), "{}", report.summary());
    assert_eq!(report.journal_entries, journal);
    assert!(sika_engine::verify::verify_postgres(&url, "sandbox").unwrap().is_none(), "no such stack");

    // The newest journal entry (prefix byte 4) is lost from the database.
    let lost = sql(
        &url,
        "DELETE FROM sika_records WHERE stack = 'live' AND key = \
         (SELECT key FROM sika_records WHERE stack = 'live' AND get_byte(key, 0) = 4 ORDER BY key DESC LIMIT 1)",
    );
    assert_eq!(lost, 1);
    let cached = sika_engine::verify::verify(&*engine.database().unwrap()).unwrap();
    assert!(cached.is_consistent(), "the cache still holds it: {}", cached.summary());
    let report = sika_engine::verify::verify_postgres(&url, "live").unwrap().unwrap();
    assert!(!report.is_consistent(), "the lost entry goes unnoticed: {}", report.summary());
    assert_eq!(report.journal_entries, journal - 1);
    engine.shutdown();
}

/// How the test words a fact as format 5 stored it.
fn test_words(fact: &sika_engine::timeline::Fact) -> [String; 3] {
    ["test".into(), format!("{fact:?}"), String::new()]
}

/// A timeline as format 6 keeps the lines format 5 stored (`test_words`).
fn worded(timeline: &mut [sika_engine::movements::TimelineEntry]) {
    for entry in timeline {
        let [kind, title, detail] = test_words(&entry.fact);
        entry.fact = sika_engine::timeline::Fact::Legacy { kind, title, detail };
    }
}

/// Rewrites the stack's records (their keys already as format 5 built
/// them) with their timelines as format 5 stored them.
fn timelines_as_format_5(url: &str) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let rows = client
                .query("SELECT key, value FROM sika_records WHERE stack = 'live' AND value IS NOT NULL", &[])
                .unwrap();
            let mut rewritten = 0;
            for row in rows {
                let (key, value): (Vec<u8>, Vec<u8>) = (row.get(0), row.get(1));
                let old =
                    sika_engine::format::format5::timeline_as_format_5(&key, &value, &test_words).unwrap();
                if let Some(old) = old {
                    let statement = "UPDATE sika_records SET value = $1 WHERE stack = 'live' AND key = $2";
                    rewritten += client.execute(statement, &[&old, &key]).unwrap();
                }
            }
            assert!(rewritten >= 2, "two payouts and their events: {rewritten}");
            journal_as_format_12(&mut client);
            heads_apart_as_format_15(&mut client);
            names_as_text_as_format_19(&mut client);
        })
        .join()
        .unwrap();
    });
}

/// The live stack's records in `space` (keys and values, in key order).
fn live_records(
    client: &mut postgres::Client,
    space: sika_engine::storage::Space,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let rows = client
        .query(
            "SELECT key, value FROM sika_records WHERE stack = 'live' AND value IS NOT NULL \
             AND get_byte(key, 0) = $1 ORDER BY key",
            &[&i32::from(space as u8)],
        )
        .unwrap();
    rows.iter().map(|row| (row.get(0), row.get(1))).collect()
}

/// Stores the live stack's accounts as formats 15 and earlier did: each
/// account without its balance-change head, and the head of each account
/// that has had a change as a record of its own.
fn heads_apart_as_format_15(client: &mut postgres::Client) {
    use sika_engine::storage::Space;
    let current = live_records(client, Space::Account);
    let epoch: i64 =
        client.query_one("SELECT epoch FROM sika_stacks WHERE stack = 'live'", &[]).unwrap().get(0);
    let mut heads = 0;
    for (key, old) in sika_engine::format::format15::heads_apart(current).unwrap() {
        if key.first() == Some(&(Space::Account as u8)) {
            let statement = "UPDATE sika_records SET value = $1 WHERE stack = 'live' AND key = $2";
            assert_eq!(client.execute(statement, &[&old, &key]).unwrap(), 1);
        } else {
            let statement = "INSERT INTO sika_records (stack, key, value, epoch) VALUES ('live', $1, $2, $3)";
            assert_eq!(client.execute(statement, &[&key, &old, &epoch]).unwrap(), 1);
            heads += 1;
        }
    }
    assert!(heads >= 1, "org_a's USD account has had changes");
}

/// Lays the live stack out as format 25 did: its balance changes are
/// stored apart from their journal entries
/// (`format29::store_balance_changes_apart`, as formats 10 to 29), its
/// idempotency entries name
/// their resources by id (`format28::store_idempotency_resources_by_id`,
/// as formats 1 to 28), its events lists store the events' ids
/// (`format26::store_event_lists_as_ids`, as formats 1 to 26)
/// and its idempotency entries are keyed by their references
/// (`format25::store_idempotency_by_reference`, as formats 20 to 25), both
/// run on a copy of the stack's records in memory and written back.
fn lists_and_references_as_format_25(url: &str) {
    use sika_engine::storage::{RECORDS, Space, scan};
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let rows = client
                .query("SELECT key, value FROM sika_records WHERE stack = 'live' AND value IS NOT NULL", &[])
                .unwrap();
            let db = redb::Database::builder()
                .create_with_backend(redb::backends::InMemoryBackend::new())
                .unwrap();
            let txn = db.begin_write().unwrap();
            let mut table = txn.open_table(RECORDS).unwrap();
            for row in rows {
                let (key, value): (Vec<u8>, Vec<u8>) = (row.get(0), row.get(1));
                table.insert(key.as_slice(), value.as_slice()).unwrap();
            }
            let apart = sika_engine::format::format29::store_balance_changes_apart(&mut table).unwrap();
            assert!(apart >= 2, "the deposit's and the payouts' balance changes: {apart}");
            let named = sika_engine::format::format28::store_idempotency_resources_by_id(&mut table).unwrap();
            assert!(named >= 2, "the two payouts' entries name them by id: {named}");
            let listed = sika_engine::format::format26::store_event_lists_as_ids(&mut table).unwrap();
            assert!(listed >= 2, "the two payouts' events: {listed}");
            let moved = sika_engine::format::format25::store_idempotency_by_reference(&mut table).unwrap();
            assert!(moved >= 2, "the two payouts' entries: {moved}");
            let epoch: i64 =
                client.query_one("SELECT epoch FROM sika_stacks WHERE stack = 'live'", &[]).unwrap().get(0);
            let digests = i32::from(Space::IdempotencyDigest as u8);
            let statement = "DELETE FROM sika_records WHERE stack = 'live' AND get_byte(key, 0) = $1";
            assert_eq!(client.execute(statement, &[&digests]).unwrap(), moved as u64);
            for (key, value) in scan(&table, Space::Idempotency).unwrap() {
                let statement =
                    "INSERT INTO sika_records (stack, key, value, epoch) VALUES ('live', $1, $2, $3)";
                assert_eq!(client.execute(statement, &[&key, &value, &epoch]).unwrap(), 1);
            }
            for space in [Space::ListIndex, Space::Journal] {
                for (key, value) in scan(&table, space).unwrap() {
                    let statement = "UPDATE sika_records SET value = $1 WHERE stack = 'live' AND key = $2";
                    assert_eq!(client.execute(statement, &[&value, &key]).unwrap(), 1);
                }
            }
            for (key, value) in scan(&table, Space::BalanceChange).unwrap() {
                let statement =
                    "INSERT INTO sika_records (stack, key, value, epoch) VALUES ('live', $1, $2, $3)";
                assert_eq!(client.execute(statement, &[&key, &value, &epoch]).unwrap(), 1);
            }
        })
        .join()
        .unwrap();
    });
}

/// Stores the live stack's ids as text and keys its events' ids by their
/// text, as formats 21 and earlier did (and idempotency entries' whole
/// fingerprints and holds' whole references, as formats 22 and 23 did).
fn ids_as_text_as_format_21(url: &str) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let rows = client
                .query(
                    "SELECT key, value, epoch FROM sika_records WHERE stack = 'live' AND value IS NOT NULL",
                    &[],
                )
                .unwrap();
            let mut respelled = 0;
            for row in rows {
                let (key, value, epoch): (Vec<u8>, Vec<u8>, i64) = (row.get(0), row.get(1), row.get(2));
                // Formats 23 and 22 first: a hold's reference was stored
                // whole, an idempotency entry kept the whole fingerprint.
                let as_22 = match sika_engine::storage::Space::of_key(&key) {
                    Some(sika_engine::storage::Space::Transfer) => {
                        let id = sika_engine::storage::keys::number_of(&key).unwrap();
                        let found = sika_engine::records::TransferRef::decode(id, &value).unwrap();
                        sika_engine::storage::encode(&found)
                    }
                    Some(sika_engine::storage::Space::Idempotency) => {
                        sika_engine::format::format22::idempotency_as_format_22(&value).unwrap()
                    }
                    _ => value.clone(),
                };
                let (old_key, old_value) =
                    match sika_engine::format::format21::record_as_format_21(&key, &as_22).unwrap() {
                        Some(old) => old,
                        None if as_22 != value => (key.clone(), as_22),
                        None => continue,
                    };
                let statement = "DELETE FROM sika_records WHERE stack = 'live' AND key = $1";
                assert_eq!(client.execute(statement, &[&key]).unwrap(), 1);
                let statement =
                    "INSERT INTO sika_records (stack, key, value, epoch) VALUES ('live', $1, $2, $3)";
                assert_eq!(client.execute(statement, &[&old_key, &old_value, &epoch]).unwrap(), 1);
                respelled += 1;
            }
            assert!(respelled >= 2, "two payouts' events and list entries: {respelled}");
        })
        .join()
        .unwrap();
    });
}

/// Stores the live stack's payouts as formats 17 and earlier did, whole.
fn payouts_whole_as_format_17(url: &str) {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
            let current = live_records(&mut client, sika_engine::storage::Space::Payout);
            assert_eq!(current.len(), 2, "two payouts");
            for (key, old) in sika_engine::format::format17::payouts_whole(current).unwrap() {
                let statement = "UPDATE sika_records SET value = $1 WHERE stack = 'live' AND key = $2";
                assert_eq!(client.execute(statement, &[&old, &key]).unwrap(), 1);
            }
        })
        .join()
        .unwrap();
    });
}

/// Keys the live stack's list and idempotency entries as formats 19 and
/// earlier did, by their names' text, with no names numbered.
fn names_as_text_as_format_19(client: &mut postgres::Client) {
    use sika_engine::storage::Space;
    let mut entries = live_records(client, Space::ListIndex);
    entries.extend(live_records(client, Space::Idempotency));
    assert!(!entries.is_empty(), "the stack lists its payouts");
    let names = live_records(client, Space::Name);
    let spelled = sika_engine::format::format19::names_as_text(entries, names).unwrap();
    let epoch: i64 =
        client.query_one("SELECT epoch FROM sika_stacks WHERE stack = 'live'", &[]).unwrap().get(0);
    let numbered = [Space::ListIndex, Space::Idempotency, Space::Name].map(|space| i32::from(space as u8));
    for space in numbered {
        let statement = "DELETE FROM sika_records WHERE stack = 'live' AND get_byte(key, 0) = $1";
        client.execute(statement, &[&space]).unwrap();
    }
    let counter = sika_engine::storage::keys::meta("name_number");
    let statement = "DELETE FROM sika_records WHERE stack = 'live' AND key = $1";
    assert_eq!(client.execute(statement, &[&counter]).unwrap(), 1);
    for (key, value) in spelled {
        let statement = "INSERT INTO sika_records (stack, key, value, epoch) VALUES ('live', $1, $2, $3)";
        assert_eq!(client.execute(statement, &[&key, &value, &epoch]).unwrap(), 1);
    }
}

/// Stores the live stack's journal entries as formats 12 and earlier did,
/// each with the hash of the entry before it.
fn journal_as_format_12(client: &mut postgres::Client) {
    use sika_engine::storage::Space;
    let current = live_records(client, Space::Journal);
    assert!(!current.is_empty(), "the stack has journal entries");
    for (key, old) in sika_engine::format::format12::with_previous_hashes(current).unwrap() {
        let statement = "UPDATE sika_records SET value = $1 WHERE stack = 'live' AND key = $2";
        assert_eq!(client.execute(statement, &[&old, &key]).unwrap(), 1);
    }
}

/// A stack format 5 wrote (the engine's records among the documents, no
/// index of open movements) is upgraded by the node that takes its lease,
/// with the same step as an embedded ledger: its payouts read as before,
/// the index names the pending one, the next batch follows the upgrade,
/// and the audit of the database itself is consistent.
#[test]
#[expect(clippy::too_many_lines)]
fn a_format_5_stack_is_upgraded_by_the_node_that_takes_its_lease() {
    use sika_engine::movements::NewPayout;
    use sika_engine::storage::ENGINE_OWNED;
    use sika_engine::{MovementKind, Outcome, Step};

    let Some(cluster) = Cluster::start() else { return };
    let url = cluster.database("format5");
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(&url, &dir.path().join("live.redb"), "node-a", TTL)).unwrap();
    deposit(&engine, "org_a", 10_000).unwrap();
    let ids: Vec<String> = (0..2u8)
        .map(|n| {
            let new = NewPayout {
                organization: "org_a".into(),
                from_currency: "USD".into(),
                from_amount: 1_000,
                to: Default::default(),
                to_currency: "USD".into(),
                to_amount: 1_000,
                fee_amount: 10,
                rate: "1".into(),
                narration: String::new(),
                metadata: "{}".into(),
                external_reference: format!("p{n}"),
                api_key_id: None,
                cap: None,
                rail: "test".into(),
                rail_note: String::new(),
                schedule: Vec::new(),
                request_fingerprint: [n; 32],
                order_id: None,
            };
            match engine.execute_blocking(Command::CreatePayout(Box::new(new))).unwrap().outcome {
                Outcome::Payout(p) => p.id,
                other => panic!("{other:?}"),
            }
        })
        .collect();
    let settle = Step::Settle { success: true, message: "delivered".into() };
    engine
        .execute_blocking(Command::AdvancePayout {
            payout_id: sika_engine::PayoutId::from(ids[0].clone()),
            step: settle,
        })
        .unwrap();
    let read = |engine: &Engine| {
        let snapshot = engine.read().unwrap();
        (
            snapshot.payout(&sika_engine::PayoutId::named(&ids[0])).unwrap(),
            snapshot.payout(&sika_engine::PayoutId::named(&ids[1])).unwrap(),
            snapshot.open_movements("test").unwrap(),
        )
    };
    let before = read(&engine);
    let open: Vec<_> = before.2.iter().map(|o| (o.kind, o.id.clone())).collect();
    assert_eq!(open, vec![(MovementKind::Payout, ids[1].clone())]);
    engine.shutdown();
    drop(engine);

    // As format 5 laid the stack out: events lists by the events' ids (up
    // to format 26), idempotency entries keyed by their references (up to
    // format 25), ids as text (up to format 21), payouts stored whole (up
    // to format 17), among the documents.
    lists_and_references_as_format_25(&url);
    ids_as_text_as_format_21(&url);
    payouts_whole_as_format_17(&url);
    for (collection, space) in ENGINE_OWNED {
        let moved = format!(
            "UPDATE sika_records SET key = decode('0b', 'hex') || convert_to('{collection}', 'UTF8') || \
             decode('00', 'hex') || substring(key from 2) WHERE stack = 'live' AND get_byte(key, 0) = {}",
            space as u8
        );
        sql(&url, &moved);
    }
    timelines_as_format_5(&url);
    let index = sql(&url, "DELETE FROM sika_records WHERE stack = 'live' AND get_byte(key, 0) = 20");
    assert_eq!(index, 2, "the open payout's entry and the settled one's tombstone");
    sql(&url, "UPDATE sika_stacks SET format = 5 WHERE stack = 'live'");
    let refused = sika_engine::verify::verify_postgres(&url, "live").unwrap_err().to_string();
    assert!(refused.contains("format version 5"), "{refused}");

    // Another node, with a cache of its own, takes the lease and upgrades.
    let other = tempfile::tempdir().unwrap();
    let engine = Engine::open(config(&url, &other.path().join("live.redb"), "node-b", TTL)).unwrap();
    let mut before = before;
    for payout in [&mut before.0, &mut before.1] {
        worded(&mut payout.as_mut().unwrap().timeline);
    }
    assert_eq!(
        read(&engine),
        before,
        "the payouts (their timelines as format 5 worded them) and the index read as before"
    );
    pay(&engine, "org_a", "org_b", 100);
    engine.shutdown();
    drop(engine);
    let report = sika_engine::verify::verify_postgres(&url, "live").unwrap().expect("the stack is there");
    assert!(report.is_consistent(), "{:?}", report.problems);

    // The first node's cache (filled before the upgrade) catches up too.
    let engine = Engine::open(config(&url, &dir.path().join("live.redb"), "node-a", TTL)).unwrap();
    assert_eq!(read(&engine), before);
    assert_eq!(available(&engine, "org_a"), 10_000 - 1_010 - 1_010 - 100);
    engine.shutdown();
}
