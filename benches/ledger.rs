//! Ledger throughput and latency on a real disk, every batch synced (its
//! write-ahead log record) before it is answered.
//!
//! - `batch_apply/uniform`: 8,190 single-transfer commands over 10,000
//!   pre-funded accounts, queued while the writer is held so they are applied
//!   and committed as one batch, then all waited for (enqueueing included).
//! - `batch_apply/hot_account`: the same, every transfer crediting one account.
//! - `group_commit/256_submitters`: 256 tokio tasks, each sending one transfer
//!   and awaiting it before the next (how the HTTP server drives the engine).
//! - `group_commit/256_threads`: the same with 256 OS threads and
//!   `execute_blocking`, for comparison.
//! - `single_submitter/latency`: one transfer at a time; prints p50/p99 next
//!   to the disk's raw fsync time on the same filesystem.
//!
//! Run with `cargo bench -p sika-benches --bench ledger`; a filter argument
//! (`-- batch_apply`) skips the other benchmarks and their set-up.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, SamplingMode, Throughput};
use rand::SeedableRng;
use rand::rngs::SmallRng;
use sika_benches::*;
use sika_engine::{BATCH_COMMANDS_MAX, Engine};

/// The allocator the node runs with (`src/main.rs`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Concurrent submitters in the group-commit benchmarks.
const SUBMITTERS: usize = 256;
/// Transfers each submitter sends per iteration.
const PER_SUBMITTER: usize = 32;
/// Sequential executes for the latency percentiles.
const LATENCY_ROUNDS: usize = 2_000;
/// Write+sync rounds for each raw fsync probe.
const FSYNC_ROUNDS: usize = 2_000;

static SUMMARIES: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn summary(line: String) {
    println!("{line}");
    SUMMARIES.lock().unwrap().push(line);
}

/// Totals over every timed iteration of one benchmark (warm-up included).
#[derive(Default)]
struct Tally {
    iterations: u64,
    transfers: u64,
    commits: u64,
    elapsed: Duration,
    writer_cpu: Duration,
    per_iteration: Vec<f64>,
}

impl Tally {
    fn add(&mut self, transfers: usize, commits: u64, elapsed: Duration, writer_cpu: Duration) {
        self.iterations += 1;
        self.writer_cpu += writer_cpu;
        self.transfers += transfers as u64;
        self.commits += commits;
        self.elapsed += elapsed;
        self.per_iteration.push(transfers as f64 / elapsed.as_secs_f64());
    }

    /// Runs one iteration on `engine` (it returns how many transfers it
    /// applied), adds its figures and returns its wall time.
    fn time(&mut self, engine: &Engine, iteration: impl FnOnce() -> usize) -> Duration {
        let before = engine.stats().commits;
        let cpu_before = writer_cpu();
        let start = Instant::now();
        let applied = iteration();
        let elapsed = start.elapsed();
        self.add(applied, engine.stats().commits - before, elapsed, writer_cpu() - cpu_before);
        elapsed
    }

    /// The summary line of a group-commit benchmark whose submitters are `how`.
    fn submitters_summary(&self, id: &str, how: &str) {
        summary(format!(
            "SUMMARY {id}: {:.0} transfers/s ({how}; median iteration {:.0}/s; {:.1} commands per commit; {})",
            self.rate(),
            self.median_rate(),
            self.transfers as f64 / self.commits as f64,
            self.writer_cpu(),
        ));
    }

    fn rate(&self) -> f64 {
        self.transfers as f64 / self.elapsed.as_secs_f64()
    }

    /// The writer thread's CPU time per transfer, and the share of the
    /// wall time it was on a CPU.
    fn writer_cpu(&self) -> String {
        format!(
            "writer on-CPU {:.1} µs/transfer, {:.0}% of wall time",
            self.writer_cpu.as_secs_f64() * 1e6 / self.transfers as f64,
            100.0 * self.writer_cpu.as_secs_f64() / self.elapsed.as_secs_f64()
        )
    }

    fn median_rate(&self) -> f64 {
        let mut rates = self.per_iteration.clone();
        rates.sort_by(f64::total_cmp);
        rates[rates.len() / 2]
    }
}

/// A group of ten flat samples taken over `seconds` after a second of
/// warm-up, each iteration `elements` transfers.
fn flat_group<'a>(
    c: &'a mut Criterion,
    name: &str,
    seconds: u64,
    elements: u64,
) -> BenchmarkGroup<'a, WallTime> {
    let mut group = c.benchmark_group(name);
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(seconds))
        .throughput(Throughput::Elements(elements));
    group
}

/// Benchmarks `iteration` (it returns how many transfers it applied) as
/// `name` in `group`, timing each run as [`Tally::time`] does, and returns
/// the figures of every timed run.
fn bench_transfers(
    group: &mut BenchmarkGroup<'_, WallTime>,
    name: String,
    engine: &Engine,
    mut iteration: impl FnMut() -> usize,
) -> Tally {
    let mut tally = Tally::default();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| (0..iters).map(|_| tally.time(engine, &mut iteration)).sum())
    });
    tally
}

/// Whether the command line's filters (if any) select `name`.
fn selected(name: &str) -> bool {
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
}

fn writer_cpu() -> Duration {
    WRITER_THREADS.iter().filter_map(|name| thread_cpu_time(name)).sum()
}

fn funded_engine(label: &str) -> (tempfile::TempDir, Engine) {
    let dir = bench_dir(env!("CARGO_TARGET_TMPDIR"));
    println!("[{label}] database in {} ({})", dir.path().display(), filesystem_of(dir.path()));
    let engine = open_engine(dir.path());
    let start = Instant::now();
    let commits = engine.stats().commits;
    fund(&engine, ACCOUNTS);
    println!(
        "[{label}] funded {ACCOUNTS} accounts in {:.2?} ({} commits)",
        start.elapsed(),
        engine.stats().commits - commits
    );
    (dir, engine)
}

fn batch_apply(c: &mut Criterion) {
    let mut uniform_rate = None;
    for (name, hot) in [("uniform", None), ("hot_account", Some(0usize))] {
        let id = format!("batch_apply/{name}");
        if !selected(&id) {
            continue;
        }
        let (_dir, engine) = funded_engine(&id);
        let mut rng = SmallRng::seed_from_u64(7);
        let commands = |rng: &mut SmallRng| match hot {
            None => uniform_transfers(rng, BATCH_COMMANDS_MAX),
            Some(hot) => hot_transfers(rng, BATCH_COMMANDS_MAX, hot),
        };
        // How many commits one iteration takes, shown once before measuring.
        for round in 1..=3 {
            let batch = commands(&mut rng);
            let before = engine.stats().commits;
            let start = Instant::now();
            let applied = apply_as_one_batch(&engine, batch);
            println!(
                "[{id}] probe {round}: {applied} transfers in {} commit(s), {:.1?}",
                engine.stats().commits - before,
                start.elapsed()
            );
        }
        let mut tally = Tally::default();
        let mut group = flat_group(c, "batch_apply", 8, BATCH_COMMANDS_MAX as u64);
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let batch = commands(&mut rng);
                    total += tally.time(&engine, || apply_as_one_batch(&engine, batch));
                }
                total
            })
        });
        group.finish();
        let rate = tally.rate();
        let versus = match (hot, uniform_rate) {
            (Some(_), Some(uniform)) => format!(", {:.0}% of uniform", 100.0 * rate / uniform),
            _ => String::new(),
        };
        summary(format!(
            "SUMMARY {id}: {rate:.0} transfers/s (median iteration {:.0}/s; {} iterations, {:.2} commits per \
             {BATCH_COMMANDS_MAX}-command iteration{versus}; {})",
            tally.median_rate(),
            tally.iterations,
            tally.commits as f64 / tally.iterations as f64,
            tally.writer_cpu(),
        ));
        if hot.is_none() {
            uniform_rate = Some(rate);
        }
        engine.shutdown();
    }
}

fn group_commit(c: &mut Criterion) {
    let per_iteration = SUBMITTERS * PER_SUBMITTER;
    let tasks_id = format!("group_commit/{SUBMITTERS}_submitters");
    let threads_id = format!("group_commit/{SUBMITTERS}_threads");
    if !selected(&tasks_id) && !selected(&threads_id) {
        return;
    }
    let (_dir, engine) = funded_engine("group_commit");
    let mut group = flat_group(c, "group_commit", 8, per_iteration as u64);

    if selected(&tasks_id) {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
        println!(
            "[{tasks_id}] {SUBMITTERS} tokio tasks on a multi-thread runtime, {PER_SUBMITTER} transfers each"
        );
        let mut seed = 0u64;
        let tally = bench_transfers(&mut group, format!("{SUBMITTERS}_submitters"), &engine, || {
            runtime.block_on(async {
                let handles: Vec<_> = (0..SUBMITTERS)
                    .map(|_| {
                        seed += 1;
                        let engine = engine.clone();
                        let mut rng = SmallRng::seed_from_u64(seed);
                        tokio::spawn(async move {
                            for _ in 0..PER_SUBMITTER {
                                engine.execute(uniform_transfer(&mut rng)).await.expect("transfer applied");
                            }
                        })
                    })
                    .collect();
                for handle in handles {
                    handle.await.expect("submitter finished");
                }
            });
            per_iteration
        });
        tally.submitters_summary(&tasks_id, "tokio tasks");
    }

    if selected(&threads_id) {
        println!(
            "[{threads_id}] {SUBMITTERS} OS threads with execute_blocking, {PER_SUBMITTER} transfers each"
        );
        let mut seed = 1_000_000u64;
        let tally = bench_transfers(&mut group, format!("{SUBMITTERS}_threads"), &engine, || {
            std::thread::scope(|scope| {
                for _ in 0..SUBMITTERS {
                    seed += 1;
                    let engine = &engine;
                    let mut rng = SmallRng::seed_from_u64(seed);
                    scope.spawn(move || {
                        for _ in 0..PER_SUBMITTER {
                            engine.execute_blocking(uniform_transfer(&mut rng)).expect("transfer applied");
                        }
                    });
                }
            });
            per_iteration
        });
        tally.submitters_summary(&threads_id, "OS threads");
    }
    group.finish();
    engine.shutdown();
}

fn single_submitter(c: &mut Criterion) {
    let id = "single_submitter/latency";
    if !selected(id) {
        return;
    }
    let (dir, engine) = funded_engine(id);
    let mut rng = SmallRng::seed_from_u64(11);
    let one = |rng: &mut SmallRng| {
        let command = uniform_transfer(rng);
        let start = Instant::now();
        engine.execute_blocking(command).expect("transfer applied");
        start.elapsed()
    };

    let mut group = flat_group(c, "single_submitter", 5, 1);
    group.bench_function("latency", |b| b.iter_custom(|iters| (0..iters).map(|_| one(&mut rng)).sum()));
    group.finish();

    // Percentiles of the engine's commit latency, then the disk's raw fsync
    // on the same filesystem, measured back to back.
    let (writer_before, submitter_before) = (writer_cpu(), current_thread_cpu_time().unwrap_or_default());
    let commits_before = engine.stats().commits;
    let start = Instant::now();
    let mut engine_samples: Vec<Duration> = (0..LATENCY_ROUNDS).map(|_| one(&mut rng)).collect();
    let wall = start.elapsed();
    let commits = (engine.stats().commits - commits_before) as f64;
    let per_commit = |d: Duration| d.as_secs_f64() * 1e6 / commits;
    let writer_on_cpu = per_commit(writer_cpu() - writer_before);
    let submitter_on_cpu = per_commit(current_thread_cpu_time().unwrap_or_default() - submitter_before);
    println!(
        "[{id}] {commits} commits; per commit: wall {:.1} µs mean, writer on-CPU {writer_on_cpu:.1} µs (user + \
         kernel, pwrite and fdatasync submission included), submitter on-CPU {submitter_on_cpu:.1} µs, writer \
         off-CPU {:.1} µs (waiting for the disk and wake-ups)",
        per_commit(wall),
        per_commit(wall) - writer_on_cpu,
    );
    engine_samples.sort();
    let probes = [
        SyncKind::OverwriteSyncData,
        SyncKind::OverwriteSyncAll,
        SyncKind::AppendSyncAll,
        SyncKind::ScatteredPagesSyncData,
    ]
    .map(|kind| (kind, fsync_latencies(dir.path(), FSYNC_ROUNDS, kind)));
    for (kind, samples) in &probes {
        println!(
            "[{id}] raw 4 KiB write + {kind:?}: p50 {}, p99 {}, max {}",
            micros(percentile(samples, 0.5)),
            micros(percentile(samples, 0.99)),
            micros(samples[samples.len() - 1])
        );
    }
    let (p50, p99) = (percentile(&engine_samples, 0.5), percentile(&engine_samples, 0.99));
    let fsync_p50 = percentile(&probes[0].1, 0.5);
    let scattered_p50 = percentile(&probes[3].1, 0.5);
    let db_size = std::fs::metadata(dir.path().join("ledger.redb")).map(|m| m.len()).unwrap_or(0);
    println!("[{id}] database file {:.1} MiB", db_size as f64 / (1024.0 * 1024.0));
    println!(
        "[{id}] engine p50 minus the p50 of a redb-sized write ({SCATTERED_PAGES} scattered pages + \
         sync_data, {}) = {:+.1} µs",
        micros(scattered_p50),
        (p50.as_secs_f64() - scattered_p50.as_secs_f64()) * 1e6
    );
    summary(format!(
        "SUMMARY {id}: p50 {}, p99 {} over {LATENCY_ROUNDS} sequential transfers; raw fsync (4 KiB + \
         sync_data) p50 {}; p50 minus fsync p50 = {:+.1} µs",
        micros(p50),
        micros(p99),
        micros(fsync_p50),
        (p50.as_secs_f64() - fsync_p50.as_secs_f64()) * 1e6,
    ));
    engine.shutdown();
}

fn main() {
    println!(
        "cores: {}; every batch durable before it is answered (its write-ahead log record synced with fdatasync; redb synced at checkpoints)",
        std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0)
    );
    let mut criterion = Criterion::default().configure_from_args();
    batch_apply(&mut criterion);
    group_commit(&mut criterion);
    single_submitter(&mut criterion);
    criterion.final_summary();
    println!();
    for line in SUMMARIES.lock().unwrap().iter() {
        println!("{line}");
    }
}
