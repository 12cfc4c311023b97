//! The write-ahead log: a batch is acknowledged once its log record is
//! synced, before the checkpointer writes it into redb. A crash leaves the
//! database file at its last checkpoint and the log holding the rest;
//! opening the database (or `sika verify`) replays the log, so nothing
//! acknowledged is missing.

use std::path::Path;

use sika_engine::{Command, Engine, EngineConfig};

const DEPOSITS: i128 = 25;

fn deposit_command(amount: i128, reference: String) -> Command {
    Command::Deposit {
        organization: "org_wal".into(),
        currency: "USD".into(),
        amount,
        external_reference: Some(reference),
    }
}

fn deposit(engine: &Engine, n: i128) {
    engine.execute_blocking(deposit_command(n, format!("wal-{n}"))).expect("deposit");
}

/// An engine on `<dir>/live/ledger.redb`, and that directory.
fn open_live(dir: &Path) -> (std::path::PathBuf, Engine) {
    let live = dir.join("live");
    std::fs::create_dir_all(&live).unwrap();
    let engine = Engine::open(EngineConfig::new(Some(live.join("ledger.redb")))).unwrap();
    (live, engine)
}

const FILES: [&str; 3] = ["ledger.redb", "ledger.wal", "ledger.1.wal"];

/// Copies the database and its log as a crash would leave them: the file
/// holds redb's last synced commit, the log every acknowledged batch since.
/// Checkpoints are held meanwhile, so the copy is not torn.
fn crash_copy(engine: &Engine, from: &Path, to: &Path) {
    let _hold = engine.hold_checkpoints().unwrap();
    std::fs::create_dir_all(to).unwrap();
    for name in FILES {
        std::fs::copy(from.join(name), to.join(name)).unwrap();
    }
}

/// Empties both log files.
fn drop_log(dir: &Path) {
    for name in &FILES[1..] {
        std::fs::write(dir.join(name), b"").unwrap();
    }
}

fn balance(path: &Path) -> i128 {
    let engine = Engine::open(EngineConfig::new(Some(path.to_path_buf()))).expect("reopen");
    let account = engine.read().unwrap().organization_account("org_wal", "USD").unwrap();
    let report = sika_engine::verify::verify(&*engine.database().expect("the database")).unwrap();
    assert!(report.is_consistent(), "{:?}", report.problems);
    account.map(|a| a.balances().unwrap().available).unwrap_or(0)
}

#[test]
fn acknowledged_batches_in_the_log_are_replayed_on_open_and_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (live, engine) = open_live(dir.path());
    deposit(&engine, 1_000);
    engine.database().unwrap(); // waits until the file holds it
    // The file lags: these stay in the log (and in memory) only.
    let hold = engine.hold_checkpoints().unwrap();
    for n in 1..=DEPOSITS {
        deposit(&engine, n);
    }
    assert_eq!(
        engine
            .read()
            .unwrap()
            .organization_account("org_wal", "USD")
            .unwrap()
            .unwrap()
            .balances()
            .unwrap()
            .available,
        1_000 + DEPOSITS * (DEPOSITS + 1) / 2,
        "readers see acknowledged batches the file does not hold yet"
    );
    let expected = 1_000 + DEPOSITS * (DEPOSITS + 1) / 2;

    // The database file alone (its log emptied) lacks what was acknowledged
    // since the last checkpoint, which is what the log is for.
    let without_log = dir.path().join("without_log");
    crash_copy(&engine, &live, &without_log);
    drop_log(&without_log);
    assert!(balance(&without_log.join("ledger.redb")) < expected, "the file alone should lag the log");

    // With its log, opening the copy replays every acknowledged deposit.
    let crashed = dir.path().join("crashed");
    crash_copy(&engine, &live, &crashed);
    assert_eq!(balance(&crashed.join("ledger.redb")), expected);

    // `sika verify` on a closed file replays the log first, too.
    let verified = dir.path().join("verified");
    crash_copy(&engine, &live, &verified);
    let report =
        sika_engine::verify::verify_path(&verified.join("ledger.redb"), &sika_engine::format::LEDGER_STEPS)
            .unwrap();
    assert!(report.is_consistent(), "{:?}", report.problems);
    assert_eq!(report.journal_entries as i128, 1 + DEPOSITS, "one journal entry per deposit");

    // A clean shutdown checkpoints: the file alone then holds everything.
    drop(hold);
    engine.shutdown();
    drop(engine);
    drop_log(&live);
    assert_eq!(balance(&live.join("ledger.redb")), expected);
}

#[test]
fn the_log_files_are_reused_in_turn_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let (live, engine) = open_live(dir.path());
    // Far more log than both files' worth, in batches of many deposits.
    const COUNT: i128 = 80_000;
    let pending: Vec<_> = (1..=COUNT)
        .map(|n| engine.enqueue_blocking(deposit_command(1, format!("bulk-{n}"))).unwrap())
        .collect();
    for p in pending {
        p.wait().expect("deposit");
    }
    let logged_in_all = COUNT as u64 * 300;
    assert!(logged_in_all > 2 * sika_engine::wal::SEGMENT_BYTES, "the test must reuse a log file");
    for name in &FILES[1..] {
        let size = std::fs::metadata(live.join(name)).unwrap().len();
        assert!(
            size <= sika_engine::wal::SEGMENT_BYTES + (4 << 20),
            "{name} is reused from its start instead of growing: {size} bytes"
        );
    }
    let crashed = dir.path().join("crashed");
    crash_copy(&engine, &live, &crashed);
    assert_eq!(balance(&crashed.join("ledger.redb")), COUNT);
}
