//! The engine's public face: open a database, submit commands to the
//! writer, and read committed state from snapshots that never wait for it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use redb::{Database, ReadableDatabase};
use rust_decimal::Decimal;
use tokio::sync::{mpsc, oneshot};

use crate::balance_changes::{
    BalanceAfter, ChangeWithTransfer, EntryChange, IndexedChange, Statement, account_number, change_of,
    change_of_number, classify,
};
use crate::clock::{Clock, SystemClock};
use crate::commands::{Applied, Command};
use crate::durable::Durable;
use crate::error::EngineError;
use crate::faults::Faults;
use crate::format::Steps;
use crate::postgres::{LeaseKeeper, PostgresConfig};
use crate::rates::{Pricing, RateSource, RateTable};
use crate::records::*;
pub use crate::storage::MovementKind;
use crate::storage::{Batch, RECORDS, decode, find_in, keys, prefix_end, read};
use crate::view::View;
use crate::wal::Wal;
use crate::writer::{Envelope, Writer, WriterStats};

/// Where the engine keeps its data and how it behaves.
pub struct EngineConfig {
    /// The database file; `None` keeps everything in memory (tests only).
    pub path: Option<PathBuf>,
    /// How long a quote can be executed after it is created.
    pub quote_ttl_ms: i64,
    /// The node's FX margin, in basis points off the mid rate.
    pub spread_bps: u32,
    /// redb's page cache; bounds the node's memory.
    pub cache_size_bytes: usize,
    /// Commands waiting for the writer before submitters are made to wait.
    pub queue_capacity: usize,
    pub clock: Arc<dyn Clock>,
    pub rates: Box<dyn RateSource>,
    /// Makes writes fail on a countdown (tests of a full disk).
    pub faults: Option<Arc<Faults>>,
    /// How an older format of the file is upgraded. A step may need records
    /// the engine does not know (the node's checkout sessions name the
    /// groups of their collections), so whoever owns them gives the steps.
    pub ledger_steps: Steps,
    /// Keep the state in PostgreSQL instead of the write-ahead log; `path`
    /// is then the node's local cache of it.
    pub postgres: Option<PostgresConfig>,
    /// Asked before each command is queued; `Err(why)` refuses the command
    /// with `EngineError::Storage(why)` before it reaches the writer (the
    /// sandbox's disk reserve, so it never takes the live stack's space).
    pub admission: Option<Admission>,
}

/// See `EngineConfig::admission`.
pub type Admission = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

impl EngineConfig {
    pub fn new(path: Option<PathBuf>) -> Self {
        EngineConfig {
            path,
            quote_ttl_ms: 30_000,
            spread_bps: 100,
            cache_size_bytes: 64 * 1024 * 1024,
            queue_capacity: crate::QUEUE_CAPACITY,
            clock: Arc::new(SystemClock),
            rates: Box::new(RateTable::default()),
            faults: None,
            ledger_steps: crate::format::LEDGER_STEPS,
            postgres: None,
            admission: None,
        }
    }
}

/// One opening of the database: its file, what readers see, and the
/// writer's queue and threads. A storage error ends an opening; the
/// healer replaces it with a new one (see `Engine::heal`).
struct Inner {
    db: Arc<Database>,
    view: Arc<View>,
    queue: RwLock<Option<mpsc::Sender<Envelope>>>,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Renews the writer lease (PostgreSQL backend).
    keeper: Mutex<Option<LeaseKeeper>>,
}

impl Inner {
    /// Closes the queue and waits until the writer has answered what was
    /// in it and stopped.
    fn close(&self) {
        if let Ok(mut queue) = self.queue.write() {
            queue.take();
        }
        let handle = self.writer.lock().ok().and_then(|mut h| h.take());
        if let Some(handle) = handle {
            let _ = handle.join();
        }
        // Every batch is answered: let the lease go, so a standby takes
        // over without waiting for it to expire.
        let keeper = self.keeper.lock().ok().and_then(|mut k| k.take());
        if let Some(mut keeper) = keeper {
            keeper.stop(true);
        }
    }
}

/// What outlives every opening: the counters, the published epoch, the
/// rates, and how to open the database again.
struct Shared {
    /// The current opening; `None` while the healer reopens the database.
    current: RwLock<Option<Arc<Inner>>>,
    gate: Arc<crate::writer::Gate>,
    epoch: Arc<AtomicU64>,
    stats: Arc<WriterStats>,
    pricing: Arc<Pricing>,
    clock: Arc<dyn Clock>,
    path: Option<PathBuf>,
    cache_size_bytes: usize,
    queue_capacity: usize,
    quote_ttl_ms: i64,
    faults: Option<Arc<Faults>>,
    ledger_steps: Steps,
    postgres: Option<PostgresConfig>,
    /// Commands refused because the ledger could not write.
    refused: AtomicU64,
    /// Set by `shutdown`: the healer stops and nothing is reopened.
    stopping: AtomicBool,
    /// On Postgres, while another node holds the writer lease: why this
    /// node is a standby. The healer keeps trying to take the lease.
    standby: Mutex<Option<String>>,
    healer: Mutex<Option<JoinHandle<()>>>,
    admission: Option<Admission>,
    /// Each durable batch's effects, to every subscriber (across reopenings).
    notices: tokio::sync::broadcast::Sender<Arc<crate::committed::Committed>>,
}

/// What `Snapshot::jobs_due_by` found: the keys of the jobs due, and when
/// the first job it did not take is due (`None`: no job after them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DueJobs {
    pub keys: Vec<Vec<u8>>,
    pub next_due: Option<TimestampMs>,
}

/// A handle to one ledger; cheap to clone, shared by every request.
#[derive(Clone)]
pub struct Engine {
    shared: Arc<Shared>,
}

/// Counters for the operator console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineStats {
    pub commits: u64,
    pub commands: u64,
    pub commands_failed: u64,
    pub transfers: u64,
    pub queue_depth: usize,
    /// Commands refused because the ledger could not write (a full disk).
    pub storage_refused: u64,
}

impl Shared {
    fn standby_reason(&self) -> Option<String> {
        self.standby.lock().ok().and_then(|s| s.clone())
    }

    fn set_standby(&self, reason: Option<String>) {
        if let Ok(mut standby) = self.standby.lock() {
            *standby = reason;
        }
    }
}

/// How often the healer looks at a failed ledger and, once the disk takes
/// writes again, reopens it; and how often a standby tries the lease.
const HEAL_INTERVAL: Duration = Duration::from_millis(250);

/// What a new opening needs free on the disk before the healer tries it:
/// the write-ahead log's first growth, with room to spare.
const HEAL_PROBE_BYTES: usize = 8 << 20;

impl Engine {
    /// Opens (or creates) the database and starts the writer. Fails at once
    /// with `DatabaseAlreadyOpen` in the message if another process holds it.
    pub fn open(config: EngineConfig) -> Result<Engine, EngineError> {
        let shared = Arc::new(Shared {
            current: RwLock::new(None),
            gate: Arc::new(crate::writer::Gate::default()),
            epoch: Arc::new(AtomicU64::new(0)),
            stats: Arc::new(WriterStats::default()),
            pricing: Arc::new(Pricing { source: config.rates, spread_bps: config.spread_bps }),
            clock: config.clock,
            path: config.path,
            cache_size_bytes: config.cache_size_bytes,
            queue_capacity: config.queue_capacity,
            quote_ttl_ms: config.quote_ttl_ms,
            faults: config.faults,
            ledger_steps: config.ledger_steps,
            postgres: config.postgres,
            refused: AtomicU64::new(0),
            stopping: AtomicBool::new(false),
            standby: Mutex::new(None),
            healer: Mutex::new(None),
            admission: config.admission,
            notices: tokio::sync::broadcast::channel(crate::committed::NOTICES_BUFFERED).0,
        });
        // On Postgres a node that cannot take the lease opens as a standby:
        // it refuses commands and reads until the healer takes the lease.
        match open_inner(&shared, false) {
            Ok(inner) => {
                *shared.current.write().map_err(|_| EngineError::Unavailable)? = Some(Arc::new(inner))
            }
            Err(EngineError::Standby(reason)) => shared.set_standby(Some(reason)),
            Err(error) => return Err(error),
        }
        if shared.path.is_some() {
            let weak = Arc::downgrade(&shared);
            let healer = std::thread::Builder::new()
                .name("sika-heal".into())
                .spawn(move || heal(&weak))
                .map_err(|e| EngineError::Storage(format!("cannot start the healer: {e}")))?;
            *shared.healer.lock().map_err(|_| EngineError::Unavailable)? = Some(healer);
        }
        Ok(Engine { shared })
    }

    /// The current opening, or the storage error while there is none.
    fn inner(&self) -> Result<Arc<Inner>, EngineError> {
        let current = self.shared.current.read().map_err(|_| EngineError::Unavailable)?;
        if let Some(inner) = current.clone() {
            return Ok(inner);
        }
        Err(match self.shared.standby_reason() {
            Some(reason) => EngineError::Standby(reason),
            None => {
                EngineError::Storage("the ledger is reopening after a storage error; retry shortly".into())
            }
        })
    }

    /// Whether this node waits for another to let the stack's writer lease
    /// go (PostgreSQL backend) instead of writing.
    pub fn is_standby(&self) -> bool {
        self.shared.standby_reason().is_some()
    }

    fn sender(&self) -> Result<mpsc::Sender<Envelope>, EngineError> {
        if let Some(admit) = &self.shared.admission {
            admit().map_err(EngineError::Storage)?;
        }
        let inner = self.inner()?;
        let guard = inner.queue.read().map_err(|_| EngineError::Unavailable)?;
        guard.clone().ok_or(EngineError::Unavailable)
    }

    fn envelope(&self, command: Command) -> (Envelope, oneshot::Receiver<Result<Applied, EngineError>>) {
        let (reply, receiver) = oneshot::channel();
        let received_epoch = self.commit_epoch();
        (Envelope::One { command, received_epoch, reply }, receiver)
    }

    /// `commands` as groups of at most `BATCH_COMMANDS_MAX`, each one
    /// envelope (`Envelope::Group`), with each group's size and answer.
    fn groups(&self, mut commands: Vec<Command>) -> Vec<(Envelope, GroupAnswer)> {
        let received_epoch = self.commit_epoch();
        let mut groups = Vec::with_capacity(commands.len().div_ceil(crate::BATCH_COMMANDS_MAX));
        while !commands.is_empty() {
            let rest = commands.split_off(commands.len().min(crate::BATCH_COMMANDS_MAX));
            let (reply, receiver) = oneshot::channel();
            let count = commands.len();
            groups
                .push((Envelope::Group { commands, received_epoch, reply }, GroupAnswer { count, receiver }));
            commands = rest;
        }
        groups
    }

    /// Counts a command refused for storage, for the operator's log line.
    fn counted(&self, result: Result<Applied, EngineError>) -> Result<Applied, EngineError> {
        if let Err(EngineError::Storage(_)) = &result {
            self.shared.refused.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    /// Submits a command and waits until it is durably committed (or refused).
    pub async fn execute(&self, command: Command) -> Result<Applied, EngineError> {
        let (envelope, receiver) = self.envelope(command);
        let result = match self.sender() {
            Ok(sender) => match sender.send(envelope).await {
                Ok(()) => receiver.await.unwrap_or(Err(EngineError::Unavailable)),
                Err(_) => Err(EngineError::Unavailable),
            },
            Err(error) => Err(error),
        };
        self.counted(result)
    }

    /// Submits several commands in this order, which is the order the writer
    /// applies them in, and waits for every result. Commands submitted from
    /// separate tasks have no order; steps that must follow one another (a
    /// rail's note, then its outcome) are submitted through this.
    pub async fn execute_in_order(&self, commands: Vec<Command>) -> Vec<Result<Applied, EngineError>> {
        let count = commands.len();
        let sender = self.sender();
        let mut answers = Vec::new();
        for (envelope, answer) in self.groups(commands) {
            let sent = match &sender {
                Ok(sender) => sender.send(envelope).await.is_ok(),
                Err(_) => false,
            };
            answers.push((sent, answer));
        }
        let unsent = sender.err().unwrap_or(EngineError::Unavailable);
        let mut results = Vec::with_capacity(count);
        for (sent, answer) in answers {
            let count = answer.count;
            match answer.receiver.await {
                Ok(answered) => results.extend(answered),
                Err(_) => results.extend(GroupAnswer::unanswered(count, (!sent).then_some(&unsent))),
            }
        }
        results.into_iter().map(|result| self.counted(result)).collect()
    }

    /// The blocking form of `execute`, for threads outside an async runtime.
    pub fn execute_blocking(&self, command: Command) -> Result<Applied, EngineError> {
        let result = self.enqueue_blocking(command).and_then(Pending::wait);
        self.counted(result)
    }

    /// Queues a command without waiting for its result, so one thread can
    /// keep many commands in flight (benchmarks, bulk loads).
    pub fn enqueue_blocking(&self, command: Command) -> Result<Pending, EngineError> {
        let (envelope, receiver) = self.envelope(command);
        self.sender()?.blocking_send(envelope).map_err(|_| EngineError::Unavailable)?;
        Ok(Pending(receiver))
    }

    /// Queues `commands` together without waiting for their results: the
    /// writer applies them one after another, each on its own, and answers
    /// them together (one queue entry and one answer per
    /// `BATCH_COMMANDS_MAX`), as a client's batch of transfers.
    pub fn enqueue_all_blocking(&self, commands: Vec<Command>) -> Result<PendingAll, EngineError> {
        let sender = self.sender()?;
        let mut answers = Vec::new();
        for (envelope, answer) in self.groups(commands) {
            sender.blocking_send(envelope).map_err(|_| EngineError::Unavailable)?;
            answers.push(answer);
        }
        Ok(PendingAll(answers))
    }

    /// Holds the writer before its next batch until the guard is dropped.
    /// Commands queue meanwhile and are then applied as one batch. For
    /// tests that must make requests concurrent with one commit.
    pub fn hold_writer(&self) -> WriterHold {
        self.shared.gate.set_closed(true);
        WriterHold(self.shared.gate.clone())
    }

    /// Follows what is committed: one [`Committed`](crate::Committed) per
    /// durable batch whose commands recorded events or touched movements,
    /// sent after the batch is readable. Notices sent before the call are
    /// not seen.
    pub fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Arc<crate::committed::Committed>> {
        self.shared.notices.subscribe()
    }

    /// How many batches have been committed and acknowledged.
    pub fn commit_epoch(&self) -> u64 {
        self.shared.epoch.load(Ordering::Acquire)
    }

    /// A consistent view of everything acknowledged so far.
    pub fn read(&self) -> Result<Snapshot, EngineError> {
        let (txn, pending, _) = self.inner()?.view.snapshot()?;
        let table = txn.open_table(RECORDS)?;
        Ok(Snapshot { table, pending })
    }

    /// The all-in rate a quote would lock now.
    pub fn rate(&self, from: &str, to: &str) -> Result<Decimal, EngineError> {
        self.shared.pricing.all_in_rate(from, to)
    }

    /// The mid rate (no spread) from one currency to another; 1 for the same currency.
    pub fn mid_rate(&self, from: &str, to: &str) -> Option<Decimal> {
        if from == to {
            return Some(Decimal::ONE);
        }
        self.shared.pricing.source.mid_rate(from, to)
    }

    /// The node's FX margin in basis points.
    pub fn spread_bps(&self) -> u32 {
        self.shared.pricing.spread_bps
    }

    pub fn now_ms(&self) -> TimestampMs {
        self.shared.clock.now_ms()
    }

    /// Why the writer cannot take commands now (it stopped, a storage
    /// error made it refuse every batch until the healer reopens the
    /// ledger, or the healer is reopening it), or `None` while it can.
    pub fn unavailable_reason(&self) -> Option<String> {
        let inner = match self.inner() {
            Ok(inner) => inner,
            Err(error) => return Some(error.to_string()),
        };
        if let Some(error) = inner.view.failure() {
            return Some(error.to_string());
        }
        let open = inner.queue.read().map(|queue| queue.is_some()).unwrap_or(false);
        (!open).then(|| "the ledger writer has stopped".to_string())
    }

    pub fn stats(&self) -> EngineStats {
        let s = &self.shared.stats;
        let queue_depth = self
            .inner()
            .ok()
            .and_then(|inner| {
                let queue = inner.queue.read().ok()?;
                queue.as_ref().map(|s| s.max_capacity().saturating_sub(s.capacity()))
            })
            .unwrap_or(0);
        EngineStats {
            commits: s.commits.load(Ordering::Relaxed),
            commands: s.commands.load(Ordering::Relaxed),
            commands_failed: s.commands_failed.load(Ordering::Relaxed),
            transfers: s.transfers.load(Ordering::Relaxed),
            queue_depth,
            storage_refused: self.shared.refused.load(Ordering::Relaxed),
        }
    }

    /// Stops accepting commands, lets the writer finish what is queued, and
    /// waits for it. Later submissions fail with `Unavailable`.
    pub fn shutdown(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        let healer = self.shared.healer.lock().ok().and_then(|mut h| h.take());
        if let Some(healer) = healer {
            let _ = healer.join();
        }
        if let Ok(inner) = self.inner() {
            inner.close();
        }
    }

    /// The underlying database, for `verify` and backups: first waits until
    /// it holds every batch acknowledged so far (which it does not while
    /// checkpoints are held).
    pub fn database(&self) -> Result<Arc<Database>, EngineError> {
        let inner = self.inner()?;
        let _ = inner.view.wait_all_checkpointed();
        Ok(inner.db.clone())
    }

    /// Holds back writing acknowledged batches into the database file
    /// until the guard is dropped; they stay durable in the write-ahead log
    /// and readable from memory. For tests that need the file to lag the
    /// log, as a crash can leave it. The writer stalls if a log file fills
    /// meanwhile.
    pub fn hold_checkpoints(&self) -> Result<CheckpointHold, EngineError> {
        let view = self.inner()?.view.clone();
        view.hold(true);
        Ok(CheckpointHold(view))
    }
}

/// Opens the database (replaying its log, or bringing its cache up to
/// date from Postgres) and starts a writer on it. `healing`: this process
/// answered every batch so far, so the log is replayed only up to the last
/// acknowledged one.
fn open_inner(shared: &Shared, healing: bool) -> Result<Inner, EngineError> {
    let acknowledged = shared.epoch.load(Ordering::Acquire);
    let (db, durable, keeper) = match (&shared.postgres, &shared.path) {
        (Some(config), Some(path)) => {
            let opened = crate::postgres::open(config, path, &shared.ledger_steps, || open_redb(shared))?;
            let (db, opened) =
                opened.map_err(|held| EngineError::Standby(format!("stack '{}': {held}", config.stack)))?;
            (Arc::new(db), Some(Durable::Postgres(Box::new(opened.log))), Some(opened.keeper))
        }
        (Some(_), None) => {
            return Err(EngineError::Storage(
                "the PostgreSQL backend needs a path for its local cache".into(),
            ));
        }
        (None, _) => {
            let db = Arc::new(open_redb(shared)?);
            let wal = open_embedded(shared, &db, healing.then_some(acknowledged))?;
            (db, wal.map(Durable::Wal), None)
        }
    };
    let epoch = {
        let txn = db.begin_read()?;
        let table = txn.open_table(RECORDS)?;
        read::<u64>(&table, &keys::meta("commit_epoch"))?.unwrap_or(0)
    };
    let time_floor_ms = last_journal_time(&db)?;
    // Opening replays every acknowledged batch, so the epoch never goes
    // back; healing replays nothing beyond them either (on Postgres,
    // another node may have written meanwhile, and a batch whose COMMIT
    // went unanswered may have taken effect).
    assert!(epoch >= acknowledged, "opened at epoch {epoch}, behind the acknowledged {acknowledged}");
    assert!(
        !healing || shared.postgres.is_some() || epoch == acknowledged,
        "healed at epoch {epoch}, not the acknowledged {acknowledged}"
    );
    shared.epoch.store(epoch, Ordering::Release);
    let view = Arc::new(View::new(db.clone(), epoch));
    let (sender, receiver) = mpsc::channel(shared.queue_capacity);
    let writer = Writer {
        gate: shared.gate.clone(),
        db: db.clone(),
        view: view.clone(),
        clock: shared.clock.clone(),
        pricing: shared.pricing.clone(),
        quote_ttl_ms: shared.quote_ttl_ms,
        durable,
        epoch: shared.epoch.clone(),
        stats: shared.stats.clone(),
        account_ids: Default::default(),
        accounts: Default::default(),
        names: Default::default(),
        notices: shared.notices.clone(),
        time_floor_ms,
    };
    let mut keeper = keeper;
    if let Some(keeper) = &mut keeper {
        keeper
            .start(view.clone())
            .map_err(|e| EngineError::Storage(format!("cannot start the lease keeper: {e}")))?;
    }
    let handle =
        writer.spawn(receiver).map_err(|e| EngineError::Storage(format!("cannot start the writer: {e}")))?;
    Ok(Inner {
        db,
        view,
        queue: RwLock::new(Some(sender)),
        writer: Mutex::new(Some(handle)),
        keeper: Mutex::new(keeper),
    })
}

/// Opens (or creates) the redb file, or an in-memory database.
fn open_redb(shared: &Shared) -> Result<Database, EngineError> {
    let mut builder = Database::builder();
    builder.set_cache_size(shared.cache_size_bytes);
    Ok(match (&shared.path, &shared.faults) {
        (Some(path), None) => builder.create(path)?,
        (Some(path), Some(faults)) => {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(path)
                .map_err(|e| EngineError::Storage(format!("cannot open {}: {e}", path.display())))?;
            builder.create_with_backend(crate::faults::FaultyBackend::new(file, faults.clone())?)?
        }
        (None, _) => builder.create_with_backend(redb::backends::InMemoryBackend::new())?,
    })
}

/// The embedded store: checks the file's format, replays its write-ahead
/// log (up to `until`), upgrades an older format, and opens the log for
/// the writer (`None` in memory).
fn open_embedded(shared: &Shared, db: &Database, until: Option<u64>) -> Result<Option<Wal>, EngineError> {
    let label = shared.path.clone().unwrap_or_else(|| PathBuf::from("(in memory)"));
    // A newer format is refused before anything is written or replayed;
    // an older one is upgraded once its log is replayed, since the log
    // holds records in the format that wrote them.
    let found = crate::format::check(db, &label)?;
    {
        let txn = db.begin_write()?;
        txn.open_table(RECORDS)?;
        txn.commit()?;
    }
    if let Some(path) = &shared.path {
        crate::wal::replay(db, path, until)?;
    }
    crate::format::upgrade(db, &label, found, &shared.ledger_steps)?;
    let Some(path) = &shared.path else { return Ok(None) };
    Wal::open(path, shared.faults.clone()).map(Some).map_err(|e| {
        EngineError::Storage(format!("cannot open the write-ahead log of {}: {e}", path.display()))
    })
}

/// The healer (`sika-heal`): after a storage error (a full disk, most
/// often) the writer refuses every batch, since what its files hold past
/// the last synced record is unknown and redb latches a failed write. Once
/// the disk takes a probe's worth of writes again, the healer closes that
/// opening and opens the database anew, which replays the write-ahead log,
/// so every acknowledged batch is kept and writing resumes by itself. A
/// broken invariant (`Corrupt`) is not healed: that needs the operator.
fn heal(shared: &std::sync::Weak<Shared>) {
    loop {
        std::thread::sleep(HEAL_INTERVAL);
        let Some(shared) = shared.upgrade() else { return };
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Some(inner) = shared.current.read().ok().and_then(|c| c.clone()) else {
            if shared.standby_reason().is_some() {
                take_over(&shared);
            }
            continue;
        };
        if !inner.view.failure().is_some_and(|e| matches!(e, EngineError::Storage(_))) {
            continue;
        }
        let Some(dir) = shared.path.as_ref().and_then(|p| p.parent()) else { continue };
        if probe_space(dir, shared.faults.as_deref()).is_err() {
            continue;
        }
        if let Ok(mut current) = shared.current.write() {
            current.take();
        }
        inner.close();
        drop(inner);
        // Readers still holding the old opening keep its file open for a
        // moment (`DatabaseAlreadyOpen`); a reopen that fails is retried.
        // On Postgres a node whose lease went to another becomes a standby.
        while !shared.stopping.load(Ordering::SeqCst) {
            match open_inner(&shared, true) {
                Ok(reopened) => {
                    if let Ok(mut current) = shared.current.write() {
                        *current = Some(Arc::new(reopened));
                    }
                    break;
                }
                Err(EngineError::Standby(reason)) => {
                    shared.set_standby(Some(reason));
                    break;
                }
                Err(_) => std::thread::sleep(HEAL_INTERVAL),
            }
        }
    }
}

/// A standby's try at the lease: once the writer lets it go or stops
/// renewing it, this node opens the stack (its cache brought up to date)
/// and writes from then on.
fn take_over(shared: &Shared) {
    match open_inner(shared, false) {
        Ok(opened) => {
            if let Ok(mut current) = shared.current.write() {
                *current = Some(Arc::new(opened));
            }
            shared.set_standby(None);
        }
        Err(EngineError::Standby(reason)) => shared.set_standby(Some(reason)),
        Err(error) => shared.set_standby(Some(format!("cannot take over: {error}"))),
    }
}

/// Writes, syncs and removes a file of `HEAL_PROBE_BYTES` beside the
/// database: whether the disk has room again.
fn probe_space(dir: &std::path::Path, faults: Option<&Faults>) -> std::io::Result<()> {
    use std::io::Write;
    crate::faults::check(faults)?;
    let path = dir.join(".sika-heal-probe");
    let written = std::fs::File::create(&path).and_then(|mut file| {
        file.write_all(&vec![0u8; HEAL_PROBE_BYTES])?;
        file.sync_all()
    });
    let _ = std::fs::remove_file(&path);
    written
}

/// The time of the journal's last entry (0 for an empty journal): where a
/// reopened writer's batch times start from.
fn last_journal_time(db: &Database) -> Result<TimestampMs, EngineError> {
    let txn = db.begin_read()?;
    let table = txn.open_table(RECORDS)?;
    let Some(seq) = read::<u64>(&table, &keys::meta("journal_seq"))? else { return Ok(0) };
    Ok(read::<JournalEntry>(&table, &keys::journal(seq))?.map_or(0, |entry| entry.transfer.created_at))
}

/// Keeps checkpoints held; dropping it lets them go on.
pub struct CheckpointHold(Arc<View>);

impl Drop for CheckpointHold {
    fn drop(&mut self) {
        self.0.hold(false);
    }
}

/// Keeps the writer held; dropping it lets the writer go on.
pub struct WriterHold(Arc<crate::writer::Gate>);

impl Drop for WriterHold {
    fn drop(&mut self) {
        self.0.set_closed(false);
    }
}

/// A command on its way through the writer.
pub struct Pending(oneshot::Receiver<Result<Applied, EngineError>>);

impl Pending {
    pub fn wait(self) -> Result<Applied, EngineError> {
        self.0.blocking_recv().map_err(|_| EngineError::Unavailable)?
    }
}

/// One group's answer (`Envelope::Group`): its size, for the errors of a
/// group never answered.
struct GroupAnswer {
    count: usize,
    receiver: oneshot::Receiver<Vec<Result<Applied, EngineError>>>,
}

impl GroupAnswer {
    /// The results of a group of `count` never answered: `unsent` when it
    /// was never queued, else `Unavailable` (the writer stopped).
    fn unanswered(
        count: usize,
        unsent: Option<&EngineError>,
    ) -> impl Iterator<Item = Result<Applied, EngineError>> {
        std::iter::repeat_n(Err(unsent.cloned().unwrap_or(EngineError::Unavailable)), count)
    }
}

/// The results of commands queued together (`Engine::enqueue_all_blocking`).
pub struct PendingAll(Vec<GroupAnswer>);

impl PendingAll {
    /// Each command's result, in the order they were queued.
    pub fn wait(self) -> Vec<Result<Applied, EngineError>> {
        let mut results = Vec::with_capacity(self.0.iter().map(|answer| answer.count).sum());
        for GroupAnswer { count, receiver } in self.0 {
            match receiver.blocking_recv() {
                Ok(answered) => results.extend(answered),
                Err(_) => results.extend(GroupAnswer::unanswered(count, None)),
            }
        }
        results
    }
}

/// A read-only view of acknowledged state: a read transaction on the
/// database file plus the acknowledged batches it does not hold yet.
pub struct Snapshot {
    table: redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
    /// Oldest first.
    pending: Vec<Arc<Batch>>,
}

impl Snapshot {
    /// Calls `f` with the bytes stored at `key` (the newest pending batch's,
    /// else the file's), without copying them.
    fn with_raw<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> R) -> Result<R, EngineError> {
        if let Some(value) = find_in(&self.pending, key) {
            return Ok(f(value));
        }
        Ok(match self.table.get(key)? {
            Some(guard) => f(Some(guard.value())),
            None => f(None),
        })
    }

    fn get<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, EngineError> {
        self.get_with(key, decode)
    }

    /// The record under `key`, decoded by `decode`.
    fn get_with<T>(
        &self,
        key: &[u8],
        decode: impl FnOnce(&[u8]) -> Result<T, EngineError>,
    ) -> Result<Option<T>, EngineError> {
        self.with_raw(key, |bytes| bytes.map(decode).transpose())?
    }

    /// The records with keys in `start..end`, in key order (or the reverse).
    fn range(&self, start: &[u8], end: &[u8], reverse: bool) -> Result<Range<'_>, EngineError> {
        let entries = self.table.range(start..end)?.map(|entry| {
            entry
                .map(|(key, value)| (key.value().to_vec(), value.value().to_vec()))
                .map_err(EngineError::from)
        });
        let table: Entries<'_> = if reverse { Box::new(entries.rev()) } else { Box::new(entries) };
        // The pending batches' changes in the range, the newest batch's
        // value for each key.
        let mut pending: Vec<Change<'_>> = match self.pending.as_slice() {
            [] => Vec::new(),
            [batch] => batch.range(start, end),
            batches => {
                let mut newest = std::collections::BTreeMap::new();
                for batch in batches {
                    newest.extend(batch.range(start, end));
                }
                newest.into_iter().collect()
            }
        };
        if reverse {
            pending.reverse();
        }
        Ok(Range { table: table.peekable(), pending: pending.into_iter().peekable(), reverse })
    }

    /// Every account of an organization, in currency order.
    pub fn organization_accounts(&self, organization: &str) -> Result<Vec<AccountRecord>, EngineError> {
        let prefix = keys::org_accounts_prefix(organization);
        let end = prefix_end(&prefix);
        let mut accounts = Vec::new();
        for entry in self.range(&prefix, &end, false)? {
            let (_, value) = entry?;
            let id: String = decode(&value)?;
            if let Some(account) = self.account(&id)? {
                accounts.push(account);
            }
        }
        Ok(accounts)
    }

    pub fn organization_account(
        &self,
        organization: &str,
        currency: &str,
    ) -> Result<Option<AccountRecord>, EngineError> {
        match self.get::<String>(&keys::org_account(organization, currency))? {
            Some(id) => self.account(&id),
            None => Ok(None),
        }
    }

    pub fn account(&self, id: &str) -> Result<Option<AccountRecord>, EngineError> {
        Ok(self.account_entry(id)?.map(|entry| entry.account))
    }

    /// Account `id` as the books store it, with its balance-change head.
    pub fn account_entry(&self, id: &str) -> Result<Option<AccountEntry>, EngineError> {
        self.get(&keys::account(id))
    }

    /// The transfer `id` as it stands now: its journal entry's transfer,
    /// with a hold's state now (`TransferRef`).
    pub fn transfer(&self, id: TransferId) -> Result<Option<TransferRecord>, EngineError> {
        let stored = self.get_with(&keys::transfer(id), |bytes| TransferRef::decode(id, bytes))?;
        TransferRef::find(id, stored, |seq| self.journal_entry(seq))
    }

    pub fn quote(&self, id: &str) -> Result<Option<QuoteRecord>, EngineError> {
        self.get(&keys::quote(id))
    }

    pub fn conversion(&self, id: &str) -> Result<Option<ConversionRecord>, EngineError> {
        self.get(&keys::conversion(id))
    }

    pub fn deposit(&self, id: &str) -> Result<Option<DepositRecord>, EngineError> {
        self.get(&keys::deposit(id))
    }

    /// Ids of an organization's `kind` resources, newest first, starting
    /// strictly before the position `before` (a value from a previous page).
    /// Returns (position, id) pairs; positions only ever grow, so a walk
    /// neither skips nor repeats items while the list grows.
    pub fn list(
        &self,
        organization: &str,
        kind: &str,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, String)>, EngineError> {
        let (Some(organization), Some(kind)) = (self.name_number(organization)?, self.name_number(kind)?)
        else {
            // A name no key holds yet: nothing was ever listed under it.
            return Ok(Vec::new());
        };
        let prefix = keys::list_prefix(organization, kind);
        let start = prefix.clone();
        let end = match before {
            Some(position) => keys::list_entry(organization, kind, position),
            None => prefix_end(&prefix),
        };
        let mut out = Vec::with_capacity(limit);
        for entry in self.range(&start, &end, true)?.take(limit) {
            let (key, value) = entry?;
            let position = key
                .last_chunk::<8>()
                .map(|bytes| u64::from_be_bytes(*bytes))
                .ok_or_else(|| EngineError::Corrupt("a list entry's key has no position".into()))?;
            let id = match crate::records::Listed::decode(&value)? {
                crate::records::Listed::Id(id) => id,
                crate::records::Listed::Event(seq) => self
                    .with_raw(&keys::event(seq), |bytes| bytes.map(crate::events::event_id).transpose())??
                    .ok_or_else(|| {
                        EngineError::Corrupt(format!("a list entry names event {seq}, which is not stored"))
                    })?,
            };
            out.push((position, id));
        }
        Ok(out)
    }

    /// Outbox events with a sequence number above `after`, oldest first.
    pub fn events_after(&self, after: u64, limit: usize) -> Result<Vec<EventRecord>, EngineError> {
        let start = keys::event(after.saturating_add(1));
        let end = prefix_end(&keys::space(crate::storage::Space::Event));
        let mut out = Vec::new();
        for entry in self.range(&start, &end, false)?.take(limit) {
            out.push(self.decode_event(&entry?.1)?);
        }
        Ok(out)
    }

    /// The heads (number and organization) of up to `limit` events after
    /// event `after`, in order: without decoding a payload or a payout.
    pub fn event_heads_after(
        &self,
        after: u64,
        limit: usize,
    ) -> Result<Vec<crate::events::EventHead>, EngineError> {
        let start = keys::event(after.saturating_add(1));
        let end = prefix_end(&keys::space(crate::storage::Space::Event));
        let mut out = Vec::new();
        for entry in self.range(&start, &end, false)?.take(limit) {
            out.push(crate::events::decode_event_head(&entry?.1, |id| {
                self.with_raw(&keys::payout(id), |bytes| {
                    bytes.map(crate::stored_payout::organization).transpose()
                })?
            })?);
        }
        Ok(out)
    }

    /// Event number `seq`, whole.
    pub fn event_at(&self, seq: u64) -> Result<Option<EventRecord>, EngineError> {
        self.with_raw(&keys::event(seq), |bytes| bytes.map(|b| self.decode_event(b)).transpose())?
    }

    /// An event as stored, a payout's event with the payout as it stood
    /// (`events::decode_event`).
    fn decode_event(&self, bytes: &[u8]) -> Result<EventRecord, EngineError> {
        crate::events::decode_event(bytes, |id| {
            let key = keys::payout(id);
            self.get_with(&key, |bytes| crate::stored_payout::decode(&key, bytes))
        })
    }

    /// A record the API layer stored with `Command::PutDocument`. The
    /// engine's own records are not documents (`EngineOwned`): read them
    /// with `payout`, `collection`, `order`, ….
    pub fn document(&self, collection: &str, id: &str) -> Result<Option<Vec<u8>>, EngineError> {
        refuse_engine_owned(collection)?;
        self.with_raw(&keys::document(collection, id), |bytes| bytes.map(<[u8]>::to_vec))
    }

    /// Every record of a collection, in id order.
    pub fn documents(&self, collection: &str) -> Result<Vec<(String, Vec<u8>)>, EngineError> {
        refuse_engine_owned(collection)?;
        let prefix = keys::documents_prefix(collection);
        let end = prefix_end(&prefix);
        let mut out = Vec::new();
        for entry in self.range(&prefix, &end, false)? {
            let (key, value) = entry?;
            let id = &key[prefix.len()..];
            let id = String::from_utf8_lossy(id.strip_suffix(&[0]).unwrap_or(id)).into_owned();
            out.push((id, value));
        }
        Ok(out)
    }

    /// One outbox event by its id.
    pub fn event(&self, id: &str) -> Result<Option<EventRecord>, EngineError> {
        // Since format 22 an event's id is keyed by its parts; before, by
        // its text (the same key for an id that has no parts).
        let key = keys::event_id(id);
        let seq = match self.get::<u64>(&key)? {
            None if key != keys::event_id_as_text(id) => self.get::<u64>(&keys::event_id_as_text(id))?,
            found => found,
        };
        match seq {
            Some(seq) => {
                self.with_raw(&keys::event(seq), |bytes| bytes.map(|b| self.decode_event(b)).transpose())?
            }
            None => Ok(None),
        }
    }

    /// Keys of jobs due at or before `now`, oldest first.
    pub fn due_jobs(&self, now: TimestampMs, limit: usize) -> Result<Vec<Vec<u8>>, EngineError> {
        Ok(self.jobs_due_by(now, limit)?.keys)
    }

    /// The jobs due at or before `now`, oldest first (at most `limit`), and
    /// when the next stored job after them is due, from one read.
    pub fn jobs_due_by(&self, now: TimestampMs, limit: usize) -> Result<DueJobs, EngineError> {
        let start = keys::space(crate::storage::Space::Job);
        let end = crate::storage::prefix_end(&start);
        let mut due = DueJobs { keys: Vec::new(), next_due: None };
        for entry in self.range(&start, &end, false)? {
            let (key, _) = entry?;
            // A job's key is its space, then its due time as eight bytes
            // big-endian (`keys::job`).
            let at = keys::number_of(&key[..key.len().min(9)])
                .ok_or_else(|| EngineError::Corrupt(format!("a job's key of {} bytes", key.len())))?;
            let at = TimestampMs::try_from(at).unwrap_or(TimestampMs::MAX);
            if at > now || due.keys.len() == limit {
                due.next_due = Some(at);
                break;
            }
            due.keys.push(key);
        }
        Ok(due)
    }

    /// What an earlier request with this `externalReference` produced, if
    /// any: a create that would only replay it need not be checked again.
    pub fn idempotency(
        &self,
        organization: &str,
        operation: &str,
        reference: &str,
    ) -> Result<Option<crate::records::IdempotencyRecord>, EngineError> {
        let (Some(organization), Some(operation)) =
            (self.name_number(organization)?, self.name_number(operation)?)
        else {
            return Ok(None);
        };
        self.get_with(&keys::idempotency(organization, operation, reference), IdempotencyRecord::decode)
    }

    /// The number keys hold for the name `text`, if it has one
    /// (`storage::NameNumber`).
    fn name_number(&self, text: &str) -> Result<Option<crate::storage::NameNumber>, EngineError> {
        self.get(&keys::name(text))
    }

    pub fn payout(
        &self,
        id: &crate::resource_id::PayoutId,
    ) -> Result<Option<crate::movements::PayoutRecord>, EngineError> {
        let key = keys::payout(id.as_str());
        self.get_with(&key, |bytes| crate::stored_payout::decode(&key, bytes))
    }

    pub fn collection(
        &self,
        id: &crate::resource_id::CollectionId,
    ) -> Result<Option<crate::movements::CollectionRecord>, EngineError> {
        self.get(&keys::collection(id.as_str()))
    }

    /// A dispute's money, if the engine holds any for it (disputes opened
    /// before disputes moved money have none).
    pub fn dispute(&self, id: &str) -> Result<Option<DisputeRecord>, EngineError> {
        self.get(&keys::dispute(id))
    }

    /// The disputes an organization's balance of `currency` still owes,
    /// oldest first.
    pub fn dispute_shortfalls(&self, organization: &str, currency: &str) -> Result<Vec<String>, EngineError> {
        Ok(self.get(&keys::dispute_shortfalls(organization, currency))?.unwrap_or_default())
    }

    /// The group collection `id` counts in, if it was given one.
    pub fn collection_group(&self, id: &str) -> Result<Option<CollectionGroup>, EngineError> {
        self.get(&keys::collection_group(id))
    }

    /// What the completed collections of `group` add up to; `None` until
    /// one of them completes.
    pub fn collection_tally(&self, group: &str) -> Result<Option<TallyRecord>, EngineError> {
        self.get(&keys::collection_tally(group))
    }

    pub fn refund(&self, id: &crate::resource_id::RefundId) -> Result<Option<RefundRecord>, EngineError> {
        self.get(&keys::refund(id.as_str()))
    }

    /// What the refunds of the payment (collection) `collection_id` hold
    /// back; `None` before its first refund.
    pub fn refund_tally(&self, collection_id: &str) -> Result<Option<RefundTally>, EngineError> {
        self.get(&keys::refund_tally(collection_id))
    }

    pub fn order(
        &self,
        id: &crate::resource_id::OrderId,
    ) -> Result<Option<crate::orders::OrderRecord>, EngineError> {
        self.get(&keys::order(id.as_str()))
    }

    /// What a live key spent in one window (`<key id>/<window>`), in US
    /// cents; `None` before its first capped payout there.
    pub fn cap_usage(&self, key_window: &str) -> Result<Option<i128>, EngineError> {
        self.get(&keys::cap_usage(key_window))
    }

    /// The payouts and collections pending on `rail`, read from the index
    /// the engine keeps in the commands that create and settle them (no
    /// movement is decoded): by kind, then id.
    pub fn open_movements(&self, rail: &str) -> Result<Vec<OpenMovement>, EngineError> {
        let prefix = keys::open_movements_prefix(rail);
        let end = prefix_end(&prefix);
        let mut out = Vec::new();
        for entry in self.range(&prefix, &end, false)? {
            let (key, value) = entry?;
            let corrupt = || EngineError::Corrupt("an open-movement entry's key is malformed".into());
            let (&kind, id) = key.get(prefix.len()..).and_then(<[u8]>::split_first).ok_or_else(corrupt)?;
            let kind = match kind {
                k if k == MovementKind::Payout as u8 => MovementKind::Payout,
                k if k == MovementKind::Collection as u8 => MovementKind::Collection,
                k if k == MovementKind::Refund as u8 => MovementKind::Refund,
                _ => return Err(corrupt()),
            };
            let id =
                std::str::from_utf8(id.strip_suffix(&[0]).ok_or_else(corrupt)?).map_err(|_| corrupt())?;
            out.push(OpenMovement { kind, id: id.to_string(), created_at: decode(&value)? });
        }
        Ok(out)
    }

    /// The node's own accounts (the outside world, rail clearing, fee
    /// revenue, the FX desk), each currency's, in id order.
    pub fn system_accounts(&self) -> Result<Vec<AccountRecord>, EngineError> {
        let mut prefix = keys::account(SYSTEM_ACCOUNT_PREFIX);
        // Without the id's terminator: every id that starts with the prefix.
        prefix.pop();
        let end = prefix_end(&prefix);
        let mut accounts = Vec::new();
        for entry in self.range(&prefix, &end, false)? {
            accounts.push(decode::<AccountEntry>(&entry?.1)?.account);
        }
        Ok(accounts)
    }

    /// The journal entries that debit or credit `account`, newest first,
    /// from before the entry `before`. The journal has no index by account,
    /// so this reads it backwards and stops after `limit` matches or
    /// `scanned_max` entries read, whichever comes first, and says which.
    pub fn account_entries(
        &self,
        account: &str,
        before: Option<u64>,
        limit: usize,
        scanned_max: usize,
    ) -> Result<AccountEntries, EngineError> {
        let start = keys::journal(0);
        let end = match before {
            Some(seq) => keys::journal(seq),
            None => prefix_end(&keys::space(crate::storage::Space::Journal)),
        };
        let mut found = AccountEntries::default();
        for entry in self.range(&start, &end, true)? {
            if found.entries.len() == limit || found.scanned == scanned_max {
                found.stopped = true;
                break;
            }
            let entry: JournalEntry = decode(&entry?.1)?;
            found.scanned = found.scanned.saturating_add(1);
            found.last_seq = Some(entry.seq);
            let transfer = entry.transfer;
            if transfer.debit_account == account || transfer.credit_account == account {
                found.entries.push(transfer);
            }
        }
        Ok(found)
    }

    /// One journal entry by its number.
    pub fn journal_entry(&self, seq: u64) -> Result<Option<JournalEntry>, EngineError> {
        self.get(&keys::journal(seq))
    }

    /// The balance changes of organization account `account` (as this
    /// snapshot holds it) made at `from` or later and before `to`, newest
    /// first, each with the transfer that made it: the newest before `to`
    /// is found as `balance_at` finds it, then each step back is one read
    /// of the journal entry of the change before. The iterator reads
    /// lazily.
    pub fn balance_changes(
        &self,
        account: &AccountRecord,
        from: TimestampMs,
        to: TimestampMs,
    ) -> Result<impl Iterator<Item = Result<ChangeWithTransfer, EngineError>> + '_, EngineError> {
        let number = number_of(account)?;
        let mut next = match to.checked_sub(1) {
            Some(last) if last >= from => self.last_change(account, number, last)?,
            _ => None,
        };
        Ok(std::iter::from_fn(move || {
            let found = next.take().filter(|found| found.change.at >= from)?;
            match found.change.previous.map(|seq| self.balance_change(seq, number)).transpose() {
                Ok(previous) => next = previous,
                Err(error) => return Some(Err(error)),
            }
            Some(Ok(found))
        }))
    }

    /// Account `number`'s balance change at journal entry `journal_seq`,
    /// which its chain names, with that entry's transfer: missing, the
    /// index is corrupt. One read and one decode give both.
    fn balance_change(&self, journal_seq: u64, number: u64) -> Result<ChangeWithTransfer, EngineError> {
        let found = self.with_raw(&keys::journal(journal_seq), |bytes| {
            bytes.map(JournalEntry::decode_with_changes).transpose()
        })??;
        let found = found.and_then(|(entry, changes)| {
            let transfer = entry.transfer;
            let change = change_of_number(&changes, &transfer, number)?;
            Some((changes.at(&transfer), change, transfer))
        });
        let Some((at, EntryChange { previous, after }, transfer)) = found else {
            return Err(EngineError::Corrupt(format!(
                "account number {number}'s balance changes name journal entry {journal_seq}, which did not change it"
            )));
        };
        let change = IndexedChange { account_number: number, at, journal_seq, previous, after };
        Ok(ChangeWithTransfer { change, transfer })
    }

    /// The last balance change of organization account `account` (as this
    /// snapshot holds it) at or before `at`: its balances then. `None` when
    /// it had not changed yet. The first mark after `at` (or else the
    /// account's newest change, `AccountEntry::changes`) is one read, and
    /// from it at most `MARK_EVERY` steps back reach the answer, whatever
    /// the account's history.
    pub fn balance_at(
        &self,
        account: &AccountRecord,
        at: TimestampMs,
    ) -> Result<Option<IndexedChange>, EngineError> {
        Ok(self.last_change(account, number_of(account)?, at)?.map(|found| found.change))
    }

    /// `balance_at`, with the transfer of the change found.
    fn last_change(
        &self,
        account: &AccountRecord,
        number: u64,
        at: TimestampMs,
    ) -> Result<Option<ChangeWithTransfer>, EngineError> {
        let Some(after) = at.checked_add(1) else { return Err(EngineError::Overflow("instant")) };
        let start = keys::balance_mark(number, after, 0);
        let end = prefix_end(&keys::balance_marks_prefix(number));
        let newer_mark = match self.range(&start, &end, false)?.next().transpose()? {
            Some((key, _)) => {
                let corrupt = || EngineError::Corrupt("a balance change's mark is malformed".into());
                Some(crate::balance_changes::parse_mark(&key).ok_or_else(corrupt)?.2)
            }
            None => None,
        };
        let mut next = match newer_mark {
            Some(seq) => Some(seq),
            None => match self.account_entry(&account.id)? {
                Some(entry) => entry.changes.newest(),
                None => return Err(EngineError::Corrupt(format!("account {} is missing", account.id))),
            },
        };
        while let Some(seq) = next {
            let found = self.balance_change(seq, number)?;
            if found.change.at <= at {
                return Ok(Some(found));
            }
            next = found.change.previous;
        }
        Ok(None)
    }

    /// The statement of organization account `account` from `from`
    /// (inclusive) to `to` (exclusive): its balances at the end of the
    /// period, then every change in the period, newest first, each read
    /// back from its journal entry, typed, added to its type's total and
    /// checked to leave what the change after it started from; the change
    /// before the period gives the opening, which the walk must reach.
    pub fn statement(
        &self,
        account: &AccountRecord,
        from: TimestampMs,
        to: TimestampMs,
    ) -> Result<Statement, EngineError> {
        let mut statement = Statement::default();
        let mut first = true;
        for found in self.balance_changes(account, 0, to)? {
            let ChangeWithTransfer { change, transfer } = found?;
            if first {
                (statement.opening, statement.closing) = (change.after, change.after);
                first = false;
            }
            if change.at < from {
                // The period's opening: the walk must have come back to it.
                if change.after != statement.opening {
                    return Err(EngineError::Corrupt(format!(
                        "account {}'s balance changes before {from} leave {:?}, but the period starts from {:?}",
                        account.id, change.after, statement.opening
                    )));
                }
                return Ok(statement);
            }
            statement.add_older(
                classify(&transfer).change_type,
                change_of(&transfer, &account.id)?,
                change.after,
            )?;
        }
        if statement.opening != BalanceAfter::default() {
            return Err(EngineError::Corrupt(format!(
                "account {}'s first balance change starts from {:?}, not from nothing",
                account.id, statement.opening
            )));
        }
        Ok(statement)
    }

    /// The number of journal entries.
    pub fn journal_length(&self) -> Result<u64, EngineError> {
        Ok(self.get::<u64>(&keys::meta("journal_seq"))?.unwrap_or(0))
    }
}

/// Every system account's id starts with this (`ledger::system_account_id`).
const SYSTEM_ACCOUNT_PREFIX: &str = "sys_";

/// A payout or collection still pending on a rail (`Snapshot::open_movements`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OpenMovement {
    pub kind: MovementKind,
    pub id: String,
    pub created_at: TimestampMs,
}

/// An organization account's number (`balance_changes::account_number`),
/// which keys its balance changes.
fn number_of(account: &AccountRecord) -> Result<u64, EngineError> {
    account_number(&account.id)
        .ok_or_else(|| EngineError::Corrupt(format!("account {} has no number", account.id)))
}

/// A document read naming a collection of the engine's own records.
fn refuse_engine_owned(collection: &str) -> Result<(), EngineError> {
    match crate::storage::is_engine_owned(collection) {
        true => Err(EngineError::EngineOwned { collection: collection.to_string() }),
        false => Ok(()),
    }
}

/// What [`Snapshot::account_entries`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccountEntries {
    /// The account's transfers, newest first.
    pub entries: Vec<TransferRecord>,
    /// Journal entries read.
    pub scanned: usize,
    /// The oldest entry read: where the next page starts (before it).
    pub last_seq: Option<u64>,
    /// Whether it stopped at a bound with journal entries left unread.
    pub stopped: bool,
}

/// Records read from the file, owned.
type Entries<'s> = Box<dyn Iterator<Item = Result<(Vec<u8>, Vec<u8>), EngineError>> + 's>;
/// A pending batch's change: a value, or `None` for a deletion.
type Change<'s> = (&'s [u8], Option<&'s [u8]>);

/// A `Snapshot::range`: the file's records merged with the pending
/// batches' changes (which win, and whose deletions hide the file's).
struct Range<'s> {
    table: std::iter::Peekable<Entries<'s>>,
    pending: std::iter::Peekable<std::vec::IntoIter<Change<'s>>>,
    reverse: bool,
}

impl Iterator for Range<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>), EngineError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let order = match (self.table.peek(), self.pending.peek()) {
                (None, None) => return None,
                (Some(Err(_)), _) | (Some(_), None) => return self.table.next(),
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(Ok((table_key, _))), Some((pending_key, _))) => {
                    let order = table_key.as_slice().cmp(pending_key);
                    if self.reverse { order.reverse() } else { order }
                }
            };
            match order {
                std::cmp::Ordering::Less => return self.table.next(),
                std::cmp::Ordering::Equal => {
                    self.table.next();
                }
                std::cmp::Ordering::Greater => {}
            }
            if let Some((key, Some(value))) = self.pending.next() {
                return Some(Ok((key.to_vec(), value.to_vec())));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::storage::Layer;

    type Entries = BTreeMap<Vec<u8>, Vec<u8>>;
    type Changes = Vec<(Vec<u8>, Option<Vec<u8>>)>;

    fn key() -> impl Strategy<Value = Vec<u8>> {
        prop::collection::vec(0u8..4, 1..4)
    }

    fn batch() -> impl Strategy<Value = Changes> {
        prop::collection::vec(
            (key(), prop::option::weighted(0.7, prop::collection::vec(any::<u8>(), 0..3))),
            0..12,
        )
    }

    /// A snapshot of a file holding `file` with `batches` (oldest first)
    /// pending over it, and what it should read as (and the database,
    /// which must outlive the snapshot).
    fn snapshot(file: &Entries, batches: &[Changes]) -> (Snapshot, Entries, Database) {
        let db = Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(RECORDS).unwrap();
            for (key, value) in file {
                table.insert(key.as_slice(), value.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
        let mut expected = file.clone();
        let mut pending = Vec::new();
        for (epoch, changes) in batches.iter().enumerate() {
            let mut layer = Layer::default();
            for (key, value) in changes {
                layer.insert(key.clone(), value.clone());
            }
            for (key, value) in &layer {
                match value {
                    Some(value) => expected.insert(key.clone(), value.clone()),
                    None => expected.remove(key),
                };
            }
            let batch = Batch::new(epoch as u64 + 1, layer);
            if epoch % 2 == 0 {
                // Half the batches sorted by the logger, half not yet.
                batch.set_order(crate::storage::key_order(batch.changes()));
            }
            pending.push(Arc::new(batch));
        }
        let table = db.begin_read().unwrap().open_table(RECORDS).unwrap();
        (Snapshot { table, pending }, expected, db)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Point reads and ranges both ways see the newest pending batch's
        /// value for each key, its deletions, and the file beneath.
        #[test]
        fn a_snapshot_reads_pending_batches_over_the_file(
            file in prop::collection::btree_map(key(), prop::collection::vec(any::<u8>(), 0..3), 0..20),
            batches in prop::collection::vec(batch(), 0..4),
            start in key(),
            end in key(),
            reverse in any::<bool>(),
        ) {
            let (snapshot, expected, _db) = snapshot(&file, &batches);
            let (start, end) = if start <= end { (start, end) } else { (end, start) };
            let mut want: Vec<(Vec<u8>, Vec<u8>)> =
                expected.range(start.clone()..end.clone()).map(|(k, v)| (k.clone(), v.clone())).collect();
            if reverse {
                want.reverse();
            }
            let found: Vec<(Vec<u8>, Vec<u8>)> =
                snapshot.range(&start, &end, reverse).unwrap().map(Result::unwrap).collect();
            prop_assert_eq!(found, want);
            for key in file.keys().chain(batches.iter().flatten().map(|(k, _)| k)) {
                let found = match find_in(&snapshot.pending, key) {
                    Some(value) => value.map(<[u8]>::to_vec),
                    None => snapshot.table.get(key.as_slice()).unwrap().map(|v| v.value().to_vec()),
                };
                prop_assert_eq!(found.as_ref(), expected.get(key));
            }
        }
    }
}
