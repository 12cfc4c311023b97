//! Peak memory of the engine while it applies 1,000,000 transfers over
//! 10,000 pre-funded accounts, in batches of 8,190 enqueued at once.
//!
//! Run with `cargo bench -p sika-benches --bench memory`. Peak RSS is the
//! process's VmHWM from /proc/self/status; the engine's redb cache is the
//! default `EngineConfig::cache_size_bytes` (64 MiB).

use std::time::Instant;

use rand::SeedableRng;
use rand::rngs::SmallRng;
use sika_benches::*;
use sika_engine::BATCH_COMMANDS_MAX;

// The node's allocator (`src/main.rs`), so the figures are the node's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Transfers to apply; `SIKA_MEMORY_TRANSFERS` overrides it (e.g. for a
/// shorter run under valgrind).
const TRANSFERS: usize = 1_000_000;

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn main() {
    // `cargo bench` passes `--bench`; a filter that does not name us skips the run.
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    if !filters.is_empty() && !filters.iter().any(|f| "memory".contains(f.as_str())) {
        return;
    }
    let transfers: usize =
        std::env::var("SIKA_MEMORY_TRANSFERS").ok().and_then(|v| v.parse().ok()).unwrap_or(TRANSFERS);
    let dir = bench_dir(env!("CARGO_TARGET_TMPDIR"));
    println!("[memory] database in {} ({})", dir.path().display(), filesystem_of(dir.path()));
    let rss = |field| proc_status_kib(field).map(mib).unwrap_or(f64::NAN);
    println!("[memory] at start: VmRSS {:.1} MiB, VmHWM {:.1} MiB", rss("VmRSS"), rss("VmHWM"));

    let engine = open_engine(dir.path());
    let start = Instant::now();
    fund(&engine, ACCOUNTS);
    println!(
        "[memory] funded {ACCOUNTS} accounts in {:.2?}: VmRSS {:.1} MiB, VmHWM {:.1} MiB",
        start.elapsed(),
        rss("VmRSS"),
        rss("VmHWM")
    );

    let mut rng = SmallRng::seed_from_u64(3);
    let start = Instant::now();
    let commits_before = engine.stats().commits;
    let mut applied = 0;
    let mut next_report = 250_000;
    while applied < transfers {
        let batch = (transfers - applied).min(BATCH_COMMANDS_MAX);
        applied += apply_all(&engine, uniform_transfers(&mut rng, batch));
        if applied >= next_report {
            println!(
                "[memory] {applied} transfers: VmRSS {:.1} MiB, VmHWM {:.1} MiB",
                rss("VmRSS"),
                rss("VmHWM")
            );
            next_report += 250_000;
        }
    }
    let elapsed = start.elapsed();
    let stats = engine.stats();
    println!(
        "[memory] {applied} transfers in {elapsed:.2?} ({:.0}/s, {} commits)",
        applied as f64 / elapsed.as_secs_f64(),
        stats.commits - commits_before
    );
    let db_size = std::fs::metadata(dir.path().join("ledger.redb")).map(|m| m.len()).unwrap_or(0);
    println!("[memory] database file {:.1} MiB", db_size as f64 / (1024.0 * 1024.0));
    let peak = proc_status_kib("VmHWM").expect("VmHWM in /proc/self/status");
    engine.shutdown();
    println!("[memory] after shutdown: VmRSS {:.1} MiB", rss("VmRSS"));
    println!("SUMMARY memory: peak RSS {:.0} MiB for {applied} transfers", mib(peak));
}
