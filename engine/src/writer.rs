//! The single writer: drains the command queue in batches, applies each
//! command against the batch's state, commits once, then answers every
//! caller. Nothing is acknowledged before its commit is durable.
//!
//! Two threads share the work as a pipeline. The applier (`sika-writer`)
//! applies batch N, hands it to the committer (`sika-commit`), and appends
//! its changes to the write-ahead log and syncs them while the committer
//! writes them into a redb transaction; the committer commits it (without a
//! sync, so readers see it) once the record is synced. Then the applier
//! applies batch N+1 against a read snapshot plus batch N's changes while
//! the committer finishes N. Batch N+1 is committed only after batch N; a
//! storage error stops the committer for good, so a batch applied on one
//! that failed never commits. Nothing is answered before it is durable.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;

use redb::{Database, Durability, ReadableDatabase};
use tokio::sync::{mpsc, oneshot};

use crate::BATCH_COMMANDS_MAX;
use crate::clock::Clock;
use crate::commands::{Applied, BatchContext, Command, apply};
use crate::error::EngineError;
use crate::ledger::Books;
use crate::rates::Pricing;
use crate::storage::{AccountIds, Layer, Overlay, RECORDS, keys, sorted, write_changes};
use crate::wal::{CHECKPOINT_BYTES, Wal};

pub(crate) type Reply = oneshot::Sender<Result<Applied, EngineError>>;

pub(crate) struct Envelope {
    pub command: Command,
    /// `commit_epoch` when the request reached the engine.
    pub received_epoch: u64,
    pub reply: Reply,
}

/// Counters the operator console reads.
#[derive(Debug, Default)]
pub struct WriterStats {
    pub commits: AtomicU64,
    pub commands: AtomicU64,
    pub commands_failed: AtomicU64,
    pub transfers: AtomicU64,
}

/// Lets a caller hold the writer between batches (tests use it to make
/// requests provably concurrent with one commit).
#[derive(Default)]
pub(crate) struct Gate {
    closed: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Gate {
    pub fn set_closed(&self, closed: bool) {
        if let Ok(mut state) = self.closed.lock() {
            *state = closed;
        }
        self.opened.notify_all();
    }

    fn wait_open(&self) {
        let Ok(mut closed) = self.closed.lock() else { return };
        while *closed {
            closed = match self.opened.wait(closed) {
                Ok(guard) => guard,
                Err(_) => return,
            };
        }
    }
}

pub(crate) struct Writer {
    pub gate: Arc<Gate>,
    pub db: Arc<Database>,
    pub clock: Arc<dyn Clock>,
    pub pricing: Arc<Pricing>,
    pub quote_ttl_ms: i64,
    /// The write-ahead log, handed to the committer (`None` in memory).
    pub wal: Option<Wal>,
    /// The last committed and acknowledged batch.
    pub epoch: Arc<AtomicU64>,
    pub stats: Arc<WriterStats>,
    /// Organization accounts' ids, as committed (they never change).
    pub account_ids: AccountIds,
}

/// A batch applied by the applier, on its way to the committer.
struct Staged {
    epoch: u64,
    changes: Arc<Layer>,
    batch: Vec<Envelope>,
    results: Vec<Result<Applied, EngineError>>,
}

/// Batches handed to the committer that it has not finished yet (by epoch),
/// oldest first.
struct InFlight {
    batches: VecDeque<(u64, Arc<Layer>)>,
}

impl InFlight {
    fn settle(&mut self, done: u64) {
        if let Some((epoch, _)) = self.batches.front()
            && *epoch == done
        {
            self.batches.pop_front();
        }
    }

    /// Waits until at most `keep` batches are in flight (0 once the
    /// committer has stopped).
    fn wait_until(&mut self, keep: usize, done: &std_mpsc::Receiver<u64>) {
        while let Ok(word) = done.try_recv() {
            self.settle(word);
        }
        while self.batches.len() > keep {
            match done.recv() {
                Ok(word) => self.settle(word),
                Err(_) => self.batches.clear(),
            }
        }
    }
}

impl Writer {
    /// Starts the applier (`sika-writer`) and the committer (`sika-commit`)
    /// threads; the returned handle finishes once both have stopped, after
    /// the queue is closed and everything in it is answered.
    pub fn spawn(mut self, queue: mpsc::Receiver<Envelope>) -> std::io::Result<std::thread::JoinHandle<()>> {
        let (stage, staged) = std_mpsc::sync_channel::<Staged>(1);
        let (done_sender, done) = std_mpsc::channel::<u64>();
        let mut logger = None;
        let mut link = None;
        if let Some(wal) = self.wal.take() {
            let (synced_sender, synced) = std_mpsc::channel::<Synced>();
            let (checkpointed_sender, checkpointed) = std_mpsc::channel::<u64>();
            logger =
                Some(Logger { wal, synced: synced_sender, checkpointed, checkpoint: None, failed: false });
            link = Some(LogLink { synced, checkpointed: checkpointed_sender });
        }
        let committer = Committer {
            db: self.db.clone(),
            log: link,
            epoch: self.epoch.clone(),
            stats: self.stats.clone(),
            poisoned: None,
        };
        let committer = std::thread::Builder::new()
            .name("sika-commit".into())
            .spawn(move || committer.run(staged, done_sender))?;
        std::thread::Builder::new().name("sika-writer".into()).spawn(move || {
            self.run(queue, stage, logger, done);
            let _ = committer.join();
        })
    }

    fn run(
        mut self,
        mut queue: mpsc::Receiver<Envelope>,
        stage: std_mpsc::SyncSender<Staged>,
        mut logger: Option<Logger>,
        done: std_mpsc::Receiver<u64>,
    ) {
        let mut in_flight = InFlight { batches: VecDeque::new() };
        let mut next_epoch = self.epoch.load(Ordering::Acquire) + 1;
        while let Some(first) = queue.blocking_recv() {
            self.gate.wait_open();
            let mut batch: Vec<Envelope> = Vec::with_capacity(64);
            batch.push(first);
            while batch.len() < BATCH_COMMANDS_MAX {
                match queue.try_recv() {
                    Ok(envelope) => batch.push(envelope),
                    Err(_) => break,
                }
            }
            // The read snapshot must hold every batch but the newest in
            // flight, whose changes are layered in between.
            in_flight.wait_until(1, &done);
            let below = in_flight.batches.back().map(|(_, layer)| layer.clone());
            let epoch = next_epoch;
            next_epoch += 1;
            match self.apply_batch(&batch, epoch, below.as_deref()) {
                Ok((changes, results)) => {
                    let changes = Arc::new(changes);
                    let staged = Staged { epoch, changes: changes.clone(), batch, results };
                    match stage.send(staged) {
                        Ok(()) => {
                            // The committer builds the batch's transaction
                            // while its record is written and synced.
                            if let Some(logger) = &mut logger {
                                logger.log(epoch, &changes);
                            }
                            in_flight.batches.push_back((epoch, changes))
                        }
                        Err(std_mpsc::SendError(staged)) => {
                            for envelope in staged.batch {
                                let _ = envelope.reply.send(Err(EngineError::Unavailable));
                            }
                        }
                    }
                }
                Err(error) => {
                    for envelope in batch {
                        let _ = envelope.reply.send(Err(error.clone()));
                    }
                }
            }
        }
    }

    /// Applies a batch against the committed state plus `below`, and returns
    /// its changes and each command's result.
    #[allow(clippy::type_complexity)]
    fn apply_batch(
        &mut self,
        batch: &[Envelope],
        epoch: u64,
        below: Option<&Layer>,
    ) -> Result<(Layer, Vec<Result<Applied, EngineError>>), EngineError> {
        let txn = self.db.begin_read()?;
        let table = txn.open_table(RECORDS)?;
        let now = self.clock.now_ms();
        let context = BatchContext { epoch, pricing: &self.pricing, quote_ttl_ms: self.quote_ttl_ms };
        let mut results = Vec::with_capacity(batch.len());
        let mut overlay = Overlay::new(&table, below).with_account_ids(&mut self.account_ids);
        for envelope in batch {
            let result = {
                let mut books = Books { store: &mut overlay, now };
                catch_unwind(AssertUnwindSafe(|| {
                    apply(&mut books, &context, &envelope.command, envelope.received_epoch)
                }))
                .unwrap_or_else(|_| Err(EngineError::Corrupt("command panicked".into())))
            };
            match &result {
                Ok(_) => overlay.keep_command(),
                Err(_) => {
                    overlay.drop_command();
                    self.stats.commands_failed.fetch_add(1, Ordering::Relaxed);
                }
            }
            results.push(result);
        }
        overlay.put(keys::meta("commit_epoch"), &epoch);
        overlay.keep_command();
        Ok((overlay.into_layer(), results))
    }
}

/// The logger's word on one batch's log record.
struct Synced {
    epoch: u64,
    /// The record is on disk (or, for a checkpoint, needs not be).
    synced: bool,
    /// The log is full: commit this batch with a sync, then confirm it on
    /// `LogLink::checkpointed` before the log starts over.
    checkpoint: bool,
}

/// The committer's side of the logger.
struct LogLink {
    synced: std_mpsc::Receiver<Synced>,
    /// The epoch of a checkpoint now durable in redb, or 0 if it failed.
    checkpointed: std_mpsc::Sender<u64>,
}

/// The applier's side of the write-ahead log: after handing a batch to the
/// committer, the applier appends the batch's changes to the log and syncs
/// them while the committer builds the batch's redb transaction. A batch
/// whose record would fill the log past `CHECKPOINT_BYTES` is not logged but
/// flagged as a checkpoint: before the next record the logger waits until
/// the committer has committed it with a sync, and only then writes over
/// the log from its start. After an error every later record is refused.
struct Logger {
    wal: Wal,
    synced: std_mpsc::Sender<Synced>,
    checkpointed: std_mpsc::Receiver<u64>,
    /// A checkpoint the committer has not confirmed yet: the log starts
    /// over once it has (waited for before the next record, so the applier
    /// applies the next batch meanwhile).
    checkpoint: Option<u64>,
    failed: bool,
}

impl Logger {
    fn log(&mut self, epoch: u64, layer: &Layer) {
        if let Some(checkpoint) = self.checkpoint.take() {
            match self.checkpointed.recv() {
                Ok(done) if done == checkpoint => self.wal.restart(),
                _ => self.failed = true,
            }
        }
        // A batch that would fill the log is the checkpoint: its synced
        // redb commit makes it durable, so its record is not written.
        let checkpoint = !self.failed && self.wal.logged_bytes() + Wal::record_len(layer) >= CHECKPOINT_BYTES;
        let synced = !self.failed && (checkpoint || self.wal.append(epoch, &sorted(layer)).is_ok());
        self.failed = !synced;
        if self.synced.send(Synced { epoch, synced, checkpoint }).is_err() {
            self.failed = true;
            return;
        }
        if checkpoint {
            self.checkpoint = Some(epoch);
        }
    }
}

/// Writes applied batches in order, each made durable by its record in the
/// write-ahead log (or, at a checkpoint, by a synced redb commit), and
/// answers their callers. After a storage error nothing more is committed:
/// what the disk holds is no longer known, and reopening the database
/// (which replays the log) is the way back.
struct Committer {
    db: Arc<Database>,
    /// `None` for an in-memory database: every commit is a checkpoint.
    log: Option<LogLink>,
    epoch: Arc<AtomicU64>,
    stats: Arc<WriterStats>,
    poisoned: Option<EngineError>,
}

impl Committer {
    fn run(mut self, staged: std_mpsc::Receiver<Staged>, done: std_mpsc::Sender<u64>) {
        for Staged { epoch, changes, batch, results } in staged {
            let outcome = self.commit(epoch, &changes);
            drop(changes);
            match outcome {
                Ok(()) => {
                    // Publish the epoch before answering, so a caller that
                    // hears back and sends again is seen as sequential.
                    self.epoch.store(epoch, Ordering::Release);
                    self.stats.commits.fetch_add(1, Ordering::Relaxed);
                    self.stats.commands.fetch_add(batch.len() as u64, Ordering::Relaxed);
                    let _ = done.send(epoch);
                    for (envelope, result) in batch.into_iter().zip(results) {
                        if let Ok(applied) = &result
                            && let crate::commands::Outcome::Transfers(t) = &applied.outcome
                        {
                            self.stats.transfers.fetch_add(t.len() as u64, Ordering::Relaxed);
                        }
                        let _ = envelope.reply.send(result);
                    }
                }
                Err(error) => {
                    let _ = done.send(epoch);
                    for envelope in batch {
                        let _ = envelope.reply.send(Err(error.clone()));
                    }
                }
            }
        }
        // Closing: leave everything in the database itself.
        if self.poisoned.is_none() && self.log.is_some() {
            let _ = self.checkpoint_now();
        }
    }

    fn commit(&mut self, epoch: u64, changes: &Layer) -> Result<(), EngineError> {
        if let Some(error) = &self.poisoned {
            let error = error.clone();
            self.skip_log_record(epoch);
            return Err(error);
        }
        let result = self.write(epoch, changes);
        if let Err(error) = &result {
            self.poisoned = Some(EngineError::Storage(format!(
                "the ledger stopped writing after a storage error ({error}); restart the node"
            )));
        }
        result
    }

    /// Builds the batch's redb transaction while the logger syncs its
    /// record, then commits it: without a sync when the record is on disk,
    /// with one when the log is due a checkpoint.
    fn write(&mut self, epoch: u64, changes: &Layer) -> Result<(), EngineError> {
        let built = self.build(changes);
        let checkpoint = match &self.log {
            None => true,
            Some(log) => {
                let word =
                    log.synced.recv().map_err(|_| EngineError::Storage("the log writer stopped".into()))?;
                if word.epoch != epoch || !word.synced {
                    if word.checkpoint {
                        let _ = log.checkpointed.send(0);
                    }
                    return Err(EngineError::Storage(
                        "write-ahead log: the batch's record was not synced".into(),
                    ));
                }
                word.checkpoint
            }
        };
        let committed = built.and_then(|mut txn| {
            txn.set_durability(if checkpoint { Durability::Immediate } else { Durability::None })?;
            txn.commit()?;
            Ok(())
        });
        if checkpoint && let Some(log) = &self.log {
            let _ = log.checkpointed.send(if committed.is_ok() { epoch } else { 0 });
        }
        committed
    }

    fn build(&self, changes: &Layer) -> Result<redb::WriteTransaction, EngineError> {
        let txn = self.db.begin_write()?;
        {
            let mut table = txn.open_table(RECORDS)?;
            write_changes(&mut table, &sorted(changes))?;
        }
        Ok(txn)
    }

    /// Takes the logger's word on a batch that will not be committed, so
    /// the two stay in step (a checkpoint it asked for is refused).
    fn skip_log_record(&self, epoch: u64) {
        let Some(log) = &self.log else { return };
        if let Ok(word) = log.synced.recv()
            && word.epoch == epoch
            && word.checkpoint
        {
            let _ = log.checkpointed.send(0);
        }
    }

    /// A synced commit of nothing: redb then holds every earlier batch.
    fn checkpoint_now(&mut self) -> Result<(), EngineError> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        txn.commit()?;
        Ok(())
    }
}
