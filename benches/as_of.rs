//! The latency of a balance at an instant (`GET /v1/accounts?asOf=`) as an
//! organization's history grows: one organization with three balances
//! (GHS, USD, KES) and 10,000, then 1,000,000 balance changes spread over
//! them, one millisecond of the engine's clock per batch; then 10,000
//! lookups at random instants, each what the handler does: a snapshot,
//! the organization's accounts, and per account a range read of the marks
//! on its balance changes and at most `MARK_EVERY` steps back along them
//! (`Snapshot::balance_at`). The figure must not grow with the history:
//! the lookup never replays. Then a statement of each account over the
//! whole history (`Snapshot::statement`, what `GET
//! /v1/balance_transactions` and the dashboard's statement walk): every
//! change read back from its journal entry, in changes per second.
//!
//! Run with `cargo bench -p sika-benches --bench as_of`;
//! `SIKA_AS_OF_SIZES=10000,1000000` sets the history sizes.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sika_benches::*;
use sika_engine::clock::Clock;
use sika_engine::{BATCH_COMMANDS_MAX, Command, Engine, EngineConfig, Pending};

const ORGANIZATION: &str = "org_as_of";
const CURRENCIES: [&str; 3] = ["GHS", "USD", "KES"];
const START_MS: i64 = 1_700_000_000_000;
const LOOKUPS: usize = 10_000;

/// A clock one millisecond later at every reading (the writer reads it
/// once per batch), so the history spans many instants.
struct Ticking(AtomicI64);

impl Clock for Ticking {
    fn now_ms(&self) -> i64 {
        self.0.fetch_add(1, Ordering::SeqCst)
    }
}

fn main() {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "as_of".contains(f.as_str())) {
        return;
    }
    let sizes: Vec<usize> = std::env::var("SIKA_AS_OF_SIZES")
        .ok()
        .map(|v| v.split(',').filter_map(|n| n.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10_000, 1_000_000]);
    println!("[as_of] cores: {}", std::thread::available_parallelism().map_or(0, |n| n.get()));
    for changes in sizes {
        measure(changes);
    }
}

fn measure(changes: usize) {
    let dir = bench_dir(env!("CARGO_TARGET_TMPDIR"));
    let mut config = EngineConfig::new(Some(dir.path().join("ledger.redb")));
    config.clock = Arc::new(Ticking(AtomicI64::new(START_MS)));
    let engine = Engine::open(config).expect("open the engine");
    let start = Instant::now();
    let mut made = 0;
    while made < changes {
        let batch = (changes - made).min(BATCH_COMMANDS_MAX);
        let pending: Vec<Pending> = (made..made + batch)
            .map(|i| {
                let deposit = Command::Deposit {
                    organization: ORGANIZATION.into(),
                    currency: CURRENCIES[i % CURRENCIES.len()].into(),
                    amount: 100 + (i % 1_000) as i128,
                    external_reference: None,
                };
                engine.enqueue_blocking(deposit).expect("enqueue a deposit")
            })
            .collect();
        for deposit in pending {
            deposit.wait().expect("a deposit applied");
        }
        made += batch;
    }
    let end_ms = engine.now_ms();
    println!(
        "[as_of] {changes} balance changes made in {:.1?} ({} ms of clock)",
        start.elapsed(),
        end_ms - START_MS
    );
    // Reopened, as a node restarted: the whole history is in the file and
    // the lookups read redb, not batches the checkpointer has not written.
    engine.shutdown();
    drop(engine);
    let engine = Engine::open(EngineConfig::new(Some(dir.path().join("ledger.redb")))).expect("reopen");
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_millis(200) {
        let _ = engine.read().expect("snapshot").organization_accounts(ORGANIZATION);
    }
    let mut rng = SmallRng::seed_from_u64(33);
    let mut latencies = Vec::with_capacity(LOOKUPS);
    let mut found = 0usize;
    for _ in 0..LOOKUPS {
        let at = rng.random_range(START_MS..end_ms);
        let begun = Instant::now();
        let snapshot = engine.read().expect("snapshot");
        for account in snapshot.organization_accounts(ORGANIZATION).expect("accounts") {
            if snapshot.balance_at(&account, at).expect("balance at").is_some() {
                found += 1;
            }
        }
        latencies.push(begun.elapsed());
    }
    latencies.sort();
    println!(
        "[as_of] {changes} changes: asOf over 3 accounts p50 {} p99 {} max {} ({found} balances found in {LOOKUPS} lookups)",
        micros(percentile(&latencies, 0.50)),
        micros(percentile(&latencies, 0.99)),
        micros(*latencies.last().unwrap()),
    );
    statements(&engine, end_ms, changes);
    engine.shutdown();
}

/// Statements of each account over the whole history, every change read
/// back from its journal entry.
fn statements(engine: &Engine, end_ms: i64, changes: usize) {
    let begun = Instant::now();
    let snapshot = engine.read().expect("snapshot");
    let mut walked = 0u64;
    for account in snapshot.organization_accounts(ORGANIZATION).expect("accounts") {
        walked += snapshot.statement(&account, START_MS, end_ms + 1).expect("a statement").count;
    }
    let took = begun.elapsed();
    assert_eq!(walked, changes as u64, "the statements hold every change");
    println!(
        "[as_of] {changes} changes: statements of 3 accounts over the whole history in {took:.1?}, {:.0} changes/s",
        walked as f64 / took.as_secs_f64()
    );
}
