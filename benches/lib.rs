//! Shared set-up for Sika's benchmarks: engines on a real disk, pre-funded
//! organization accounts, transfer commands, percentiles, raw fsync timing
//! and peak memory. Every engine commit is fsynced (`Durability::Immediate`).

use std::fs::OpenOptions;
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use sika_engine::{AccountRef, Command, Engine, EngineConfig, Outcome, Pending, PendingAll, TransferSpec};
use tempfile::TempDir;

/// The currency every benchmark account holds.
pub const CURRENCY: &str = "USD";
/// Organization accounts the benchmarks spread transfers over.
pub const ACCOUNTS: usize = 10_000;
/// What each account is funded with: far more than any benchmark moves out.
pub const FUNDING_MINOR: i128 = 1_000_000_000_000;

/// Where benchmark databases live: `SIKA_BENCH_DIR`, or `default` (the
/// benches pass cargo's scratch directory under `target/`, a real disk).
pub fn bench_root(default: &str) -> PathBuf {
    let root =
        std::env::var_os("SIKA_BENCH_DIR").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(default));
    let root = root.join("sika-bench");
    std::fs::create_dir_all(&root).expect("create the benchmark directory");
    root
}

/// A fresh directory for one benchmark's database, removed when dropped.
/// Refuses a tmpfs: fsync there costs nothing and the figures would lie.
pub fn bench_dir(default_root: &str) -> TempDir {
    let dir = tempfile::tempdir_in(bench_root(default_root)).expect("create a temporary directory");
    let fs = filesystem_of(dir.path());
    assert!(!fs.starts_with("tmpfs") && !fs.starts_with("ramfs"), "{} is on {fs}", dir.path().display());
    dir
}

/// The filesystem type and device `path` lives on, from /proc/self/mounts
/// (the mount with the longest matching mount point).
pub fn filesystem_of(path: &Path) -> String {
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 3 {
            continue;
        }
        let (device, mount_point, fs_type) = (fields[0], fields[1], fields[2]);
        if path.starts_with(mount_point) && best.as_ref().is_none_or(|(len, _)| mount_point.len() > *len) {
            best = Some((mount_point.len(), format!("{fs_type} on {device} (mounted at {mount_point})")));
        }
    }
    best.map(|(_, s)| s).unwrap_or_else(|| "unknown filesystem".into())
}

/// Opens an engine whose database file is `dir/ledger.redb`, with the
/// default configuration (64 MiB redb cache).
pub fn open_engine(dir: &Path) -> Engine {
    Engine::open(EngineConfig::new(Some(dir.join("ledger.redb")))).expect("open the engine")
}

/// The organization that owns benchmark account `index`.
pub fn organization(index: usize) -> String {
    format!("org_{index:05}")
}

/// Deposits `FUNDING_MINOR` into each of `accounts` organization accounts,
/// keeping many deposits in flight so the writer commits them in batches.
pub fn fund(engine: &Engine, accounts: usize) {
    let pending: Vec<Pending> = (0..accounts)
        .map(|i| {
            engine
                .enqueue_blocking(Command::Deposit {
                    organization: organization(i),
                    currency: CURRENCY.into(),
                    amount: FUNDING_MINOR,
                    external_reference: None,
                })
                .expect("enqueue a deposit")
        })
        .collect();
    for p in pending {
        let applied = p.wait().expect("deposit applied");
        assert!(matches!(applied.outcome, Outcome::Deposit(_)));
    }
}

/// One posted transfer between two organizations, as its own command.
pub fn transfer(debit: usize, credit: usize, amount: i128) -> Command {
    Command::Transfers {
        transfers: vec![TransferSpec::Posted {
            debit: AccountRef::Organization(organization(debit)),
            credit: AccountRef::Organization(organization(credit)),
            currency: CURRENCY.into(),
            amount,
            memo: String::new(),
        }],
        external_reference: None,
    }
}

/// Two distinct accounts drawn uniformly from `0..accounts`.
pub fn uniform_pair(rng: &mut SmallRng, accounts: usize) -> (usize, usize) {
    let debit = rng.random_range(0..accounts);
    let mut credit = rng.random_range(0..accounts - 1);
    if credit >= debit {
        credit += 1;
    }
    (debit, credit)
}

/// A small amount, 0.01 to 1.00.
pub fn small_amount(rng: &mut SmallRng) -> i128 {
    rng.random_range(1..=100)
}

/// A small transfer between two accounts drawn uniformly.
pub fn uniform_transfer(rng: &mut SmallRng) -> Command {
    let (debit, credit) = uniform_pair(rng, ACCOUNTS);
    transfer(debit, credit, small_amount(rng))
}

/// `count` uniform org→org transfers.
pub fn uniform_transfers(rng: &mut SmallRng, count: usize) -> Vec<Command> {
    (0..count).map(|_| uniform_transfer(rng)).collect()
}

/// `count` transfers from uniform accounts into the hot account `hot`.
pub fn hot_transfers(rng: &mut SmallRng, count: usize, hot: usize) -> Vec<Command> {
    (0..count)
        .map(|_| {
            let mut debit = rng.random_range(0..ACCOUNTS - 1);
            if debit >= hot {
                debit += 1;
            }
            transfer(debit, hot, small_amount(rng))
        })
        .collect()
}

/// Enqueues every command together (one queue entry per
/// `BATCH_COMMANDS_MAX`, as a client's batch), then waits for all of them;
/// panics if any fails. Returns how many transfers were applied.
pub fn apply_all(engine: &Engine, commands: Vec<Command>) -> usize {
    wait_transfers(engine.enqueue_all_blocking(commands).expect("enqueue the commands"))
}

/// Like `apply_all`, but the writer is held while the commands are queued,
/// so up to `BATCH_COMMANDS_MAX` of them go into one commit (the batch
/// apply benchmark's definition: 8,190 transfers per commit).
pub fn apply_as_one_batch(engine: &Engine, commands: Vec<Command>) -> usize {
    let hold = engine.hold_writer();
    let pending = engine.enqueue_all_blocking(commands).expect("enqueue the commands");
    drop(hold);
    wait_transfers(pending)
}

fn wait_transfers(pending: PendingAll) -> usize {
    let mut transfers = 0;
    for result in pending.wait() {
        match result.expect("command applied").outcome {
            Outcome::Transfers(t) => transfers += t.len(),
            other => panic!("unexpected outcome {other:?}"),
        }
    }
    transfers
}

/// The `p`-th percentile (0.0..=1.0) of sorted samples, nearest rank.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    assert!(!sorted.is_empty());
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// How a raw-fsync probe writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// Overwrite the same 4 KiB, then `sync_data` (fdatasync).
    OverwriteSyncData,
    /// Overwrite the same 4 KiB, then `sync_all` (fsync).
    OverwriteSyncAll,
    /// Append 4 KiB (the file grows, as redb's does), then `sync_all`.
    AppendSyncAll,
    /// What one small redb commit writes: a 320-byte header at offset 0 and
    /// `SCATTERED_PAGES` 4 KiB pages at random offsets of a 64 MiB file,
    /// then `sync_data` (strace of the engine shows 14-17 pages per
    /// single-transfer commit, one fdatasync).
    ScatteredPagesSyncData,
}

/// Pages per round of `SyncKind::ScatteredPagesSyncData`.
pub const SCATTERED_PAGES: usize = 15;

/// Times `rounds` of (write 4 KiB, sync) on a file in `dir`; sorted.
pub fn fsync_latencies(dir: &Path, rounds: usize, kind: SyncKind) -> Vec<Duration> {
    let path = dir.join(format!("fsync-probe-{kind:?}"));
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(&path)
        .expect("probe file");
    let block = [0xA5u8; 4096];
    // Lay the blocks down once so overwrites do not allocate.
    let file_pages: u64 = if kind == SyncKind::ScatteredPagesSyncData { 16 * 1024 } else { 1 };
    for _ in 0..file_pages {
        file.write_all(&block).expect("write");
    }
    file.sync_all().expect("sync");
    let mut rng = SmallRng::seed_from_u64(5);
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let start = Instant::now();
        if kind == SyncKind::ScatteredPagesSyncData {
            file.write_all_at(&block[..320], 0).expect("write header");
            for _ in 0..SCATTERED_PAGES {
                file.write_all_at(&block, rng.random_range(1..file_pages) * 4096).expect("write page");
            }
            file.sync_data().expect("sync_data");
            samples.push(start.elapsed());
            continue;
        }
        if kind != SyncKind::AppendSyncAll {
            file.seek(SeekFrom::Start(0)).expect("seek");
        }
        file.write_all(&block).expect("write");
        match kind {
            SyncKind::OverwriteSyncData | SyncKind::ScatteredPagesSyncData => {
                file.sync_data().expect("sync_data")
            }
            SyncKind::OverwriteSyncAll | SyncKind::AppendSyncAll => file.sync_all().expect("sync_all"),
        }
        samples.push(start.elapsed());
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    samples.sort();
    samples
}

/// A field of /proc/self/status in KiB (e.g. "VmHWM", "VmRSS").
pub fn proc_status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Microseconds with two decimals, for printing.
pub fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}

/// Time a thread of this process has spent on a CPU (user + kernel), from
/// /proc/self/task/TID/schedstat; the thread is found by its name (`comm`),
/// e.g. the engine's "sika-writer".
pub fn thread_cpu_time(name: &str) -> Option<Duration> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            return schedstat_cpu(&task.path().join("schedstat"));
        }
    }
    None
}

/// CPU time of the calling thread, from /proc/thread-self/schedstat.
pub fn current_thread_cpu_time() -> Option<Duration> {
    schedstat_cpu(Path::new("/proc/thread-self/schedstat"))
}

fn schedstat_cpu(path: &Path) -> Option<Duration> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(Duration::from_nanos(text.split_whitespace().next()?.parse().ok()?))
}

/// The engine's writer threads: the applier, the logger (which writes and
/// syncs the log and answers) and the checkpointer (which writes into redb).
pub const WRITER_THREADS: [&str; 3] = ["sika-writer", "sika-log", "sika-checkpoint"];
