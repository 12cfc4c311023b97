//! A full disk (issue 16.11), through the fault-injecting layer under the
//! write-ahead log and the database file: from some write or sync on, each
//! one fails as on a full disk. Writes are refused with a storage error,
//! nothing acknowledged is lost, nothing refused takes effect, and once the
//! disk has room again the ledger writes by itself, without a restart.

use std::thread;
use std::time::{Duration, Instant};

use sika_engine::faults::Faults;
use sika_engine::{Command, Engine, EngineConfig, EngineError};

const THREADS: usize = 4;
const DEPOSITS_PER_THREAD: usize = 60;

fn deposit(n: usize) -> Command {
    Command::Deposit {
        organization: "org_a".into(),
        currency: "USD".into(),
        amount: 100,
        external_reference: Some(format!("dep-{n}")),
    }
}

fn available(engine: &Engine) -> i128 {
    engine
        .read()
        .expect("snapshot")
        .organization_account("org_a", "USD")
        .expect("read")
        .map_or(0, |a| a.balances().unwrap().available)
}

/// Deposits from several threads at once; returns how many were
/// acknowledged and how many refused for storage (any other answer fails
/// the test).
fn deposits_racing(engine: &Engine, first: usize) -> (usize, usize) {
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let engine = engine.clone();
            thread::spawn(move || {
                let (mut acknowledged, mut refused) = (0, 0);
                for i in 0..DEPOSITS_PER_THREAD {
                    match engine.execute_blocking(deposit(first + t * DEPOSITS_PER_THREAD + i)) {
                        Ok(_) => acknowledged += 1,
                        Err(EngineError::Storage(_)) => refused += 1,
                        Err(other) => panic!("a deposit got {other:?}"),
                    }
                }
                (acknowledged, refused)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("thread")).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
}

fn wait_until_writing(engine: &Engine) {
    let started = Instant::now();
    while let Some(reason) = engine.unavailable_reason() {
        assert!(started.elapsed() < Duration::from_secs(20), "still not writing: {reason}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// The countdowns put the first failure on the log's growth, its write,
/// its sync, and on the checkpointer's redb writes and syncs at several
/// points; each run fills the disk under racing deposits, frees it, and
/// checks the books.
#[test]
fn a_full_disk_refuses_writes_and_the_ledger_heals_keeping_every_acknowledged_one() {
    for countdown in [0, 1, 2, 3, 5, 8, 13, 21, 60] {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("ledger.redb");
        let faults = Faults::new();
        let mut config = EngineConfig::new(Some(path.clone()));
        config.faults = Some(faults.clone());
        let engine = Engine::open(config).expect("open");
        engine.execute_blocking(deposit(0)).expect("a first deposit");

        faults.fail_after(countdown);
        let (acknowledged, refused) = deposits_racing(&engine, 1);
        assert!(refused > 0, "countdown {countdown}: the full disk refused nothing");
        assert!(faults.injected() > 0);
        // Refused, and staying refused while the disk is full.
        thread::sleep(Duration::from_millis(600));
        let reason = engine.unavailable_reason().expect("the ledger says it cannot write");
        assert!(reason.contains("storage") || reason.contains("reopening"), "{reason}");
        assert!(matches!(engine.execute_blocking(deposit(10_000)), Err(EngineError::Storage(_))));
        assert_eq!(engine.stats().storage_refused as usize, refused + 1);

        faults.clear();
        wait_until_writing(&engine);
        let (after, refused_after) = deposits_racing(&engine, 20_000);
        assert_eq!((after, refused_after), (THREADS * DEPOSITS_PER_THREAD, 0), "countdown {countdown}");

        // Every acknowledged deposit once; no refused one.
        let expected = (1 + acknowledged + after) as i128 * 100;
        assert_eq!(available(&engine), expected, "countdown {countdown}");
        let report = sika_engine::verify::verify(&*engine.database().expect("the database")).expect("verify");
        assert!(report.is_consistent(), "countdown {countdown}: {:?}", report.problems);

        // And the same after a restart from the files.
        engine.shutdown();
        drop(engine);
        let engine = Engine::open(EngineConfig::new(Some(path))).expect("reopen");
        assert_eq!(available(&engine), expected, "countdown {countdown}, reopened");
        let report = sika_engine::verify::verify(&*engine.database().expect("the database")).expect("verify");
        assert!(report.is_consistent(), "countdown {countdown}, reopened: {:?}", report.problems);
    }
}
