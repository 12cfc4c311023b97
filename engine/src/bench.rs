//! `sika bench`: measures the ledger on the machine it runs on, in the
//! spirit of `tigerbeetle benchmark`. It funds `accounts` organization
//! accounts on a fresh database, then makes `transfers` posted transfers
//! between accounts drawn at random, submitted `batch` at a time as one
//! batch (`Engine::enqueue_all_blocking`, as a TigerBeetle client's request),
//! and reports the throughput and each batch's latency (from its first
//! submission to its last acknowledgement, so every fsync is included).

use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::{
    AccountRef, Command, Engine, EngineConfig, EngineError, Outcome, Pending, PostgresConfig, TransferSpec,
};

const CURRENCY: &str = "USD";

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct BenchOptions {
    pub transfers: usize,
    pub accounts: usize,
    /// Transfers submitted together as one batch and answered together:
    /// up to 8,190, one commit each.
    pub batch: usize,
    pub seed: u64,
}

/// What it measured.
#[derive(Debug, Clone)]
pub struct BenchReport {
    pub transfers: usize,
    pub elapsed: Duration,
    /// Each batch's latency, sorted.
    pub batch_latencies: Vec<Duration>,
    pub commits: u64,
}

impl BenchReport {
    pub fn transfers_per_second(&self) -> f64 {
        self.transfers as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }

    /// The `p`-th percentile (0.0 to 1.0) of the batch latencies, nearest rank.
    pub fn percentile(&self, p: f64) -> Duration {
        let len = self.batch_latencies.len();
        let rank = ((p * len as f64).ceil() as usize).clamp(1, len.max(1));
        self.batch_latencies.get(rank.saturating_sub(1)).copied().unwrap_or(Duration::ZERO)
    }

    /// The lines `sika bench` prints.
    pub fn summary(&self, options: &BenchOptions) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1_000.0;
        format!(
            "{} transfers over {} accounts, in batches of {}, in {:.2} s: {:.0} transfers/s, {} commits\n\
             batch latency p50 {:.2} ms p90 {:.2} ms p99 {:.2} ms max {:.2} ms",
            self.transfers,
            options.accounts,
            options.batch,
            self.elapsed.as_secs_f64(),
            self.transfers_per_second(),
            self.commits,
            ms(self.percentile(0.5)),
            ms(self.percentile(0.9)),
            ms(self.percentile(0.99)),
            ms(self.percentile(1.0)),
        )
    }
}

fn organization(index: usize) -> String {
    format!("org_bench_{index:06}")
}

fn wait_all(pending: Vec<Pending>) -> Result<(), EngineError> {
    for p in pending {
        p.wait()?;
    }
    Ok(())
}

/// Runs the benchmark on a new database at `path` (which must not exist),
/// or with `postgres` on a stack of its own in that database (`path` is
/// then its local cache), removed afterwards.
pub fn run(
    path: &Path,
    options: BenchOptions,
    postgres: Option<PostgresConfig>,
) -> Result<BenchReport, EngineError> {
    if options.accounts < 2 || options.transfers == 0 || options.batch == 0 {
        return Err(EngineError::invalid(
            crate::error::Field::BenchOptions,
            crate::error::Problem::BenchTooSmall,
        ));
    }
    let mut config = EngineConfig::new(Some(path.to_path_buf()));
    config.postgres = postgres.clone();
    let engine = Engine::open(config)?;
    let report = measure(&engine, options);
    engine.shutdown();
    if let Some(postgres) = &postgres {
        crate::postgres::remove_stack(postgres)?;
    }
    report
}

fn measure(engine: &Engine, options: BenchOptions) -> Result<BenchReport, EngineError> {
    // Funds every account with enough for every transfer to come.
    let funding = i128::try_from(options.transfers).map_err(|_| EngineError::Overflow("bench funding"))?;
    let funding = funding.checked_mul(100).ok_or(EngineError::Overflow("bench funding"))?;
    for chunk in (0..options.accounts).collect::<Vec<_>>().chunks(options.batch) {
        let deposits = chunk.iter().map(|&i| {
            engine.enqueue_blocking(Command::Deposit {
                organization: organization(i),
                currency: CURRENCY.into(),
                amount: funding,
                external_reference: None,
            })
        });
        wait_all(deposits.collect::<Result<_, _>>()?)?;
    }
    let mut rng = SmallRng::seed_from_u64(options.seed);
    let commits_before = engine.stats().commits;
    let mut latencies = Vec::with_capacity(options.transfers.div_ceil(options.batch));
    let started = Instant::now();
    let mut left = options.transfers;
    while left > 0 {
        let n = left.min(options.batch);
        left = left.saturating_sub(n);
        let batch_started = Instant::now();
        let mut commands = Vec::with_capacity(n);
        for _ in 0..n {
            let debit = rng.random_range(0..options.accounts);
            // Any other account: one of the rest, skipping the debit's.
            let mut credit = rng.random_range(0..options.accounts.saturating_sub(1));
            if credit >= debit {
                credit = credit.saturating_add(1);
            }
            commands.push(Command::Transfers {
                transfers: vec![TransferSpec::Posted {
                    debit: AccountRef::Organization(organization(debit)),
                    credit: AccountRef::Organization(organization(credit)),
                    currency: CURRENCY.into(),
                    amount: rng.random_range(1..=100),
                    memo: String::new(),
                }],
                external_reference: None,
            });
        }
        // Submitted as one batch, as a client of `tigerbeetle benchmark` does.
        for result in engine.enqueue_all_blocking(commands)?.wait() {
            if !matches!(result?.outcome, Outcome::Transfers(_)) {
                return Err(EngineError::Corrupt("a transfer answered something else".into()));
            }
        }
        latencies.push(batch_started.elapsed());
    }
    let elapsed = started.elapsed();
    let commits = engine.stats().commits.saturating_sub(commits_before);
    latencies.sort();
    Ok(BenchReport { transfers: options.transfers, elapsed, batch_latencies: latencies, commits })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_run_applies_every_transfer_and_keeps_the_books() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.redb");
        let options = BenchOptions { transfers: 500, accounts: 10, batch: 64, seed: 7 };
        let report = run(&path, options, None).unwrap();
        assert_eq!(report.transfers, 500);
        assert_eq!(report.batch_latencies.len(), 8, "500 in batches of 64");
        assert!(report.commits >= 8 && report.commits <= 500, "{}", report.commits);
        assert!(report.percentile(0.5) <= report.percentile(1.0));
        let summary = report.summary(&options);
        assert!(summary.contains("500 transfers over 10 accounts"), "{summary}");
        let verified = crate::verify::verify_path(&path, &crate::format::LEDGER_STEPS).unwrap();
        assert!(verified.is_consistent(), "{:?}", verified.problems);
    }

    #[test]
    fn too_few_accounts_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let options = BenchOptions { transfers: 1, accounts: 1, batch: 1, seed: 0 };
        assert!(run(&dir.path().join("x.redb"), options, None).is_err());
    }
}
