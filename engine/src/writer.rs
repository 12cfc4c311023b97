//! The single writer: drains the command queue in batches, applies each
//! command against the batch's state, commits once, then answers every
//! caller. Nothing is acknowledged before its commit is durable.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use redb::{Database, Durability};
use tokio::sync::{mpsc, oneshot};

use crate::BATCH_COMMANDS_MAX;
use crate::clock::Clock;
use crate::commands::{Applied, BatchContext, Command, apply};
use crate::error::EngineError;
use crate::ledger::Books;
use crate::rates::Pricing;
use crate::storage::{AccountIds, Overlay, RECORDS, keys, write_changes};

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
    pub durability: Durability,
    pub epoch: Arc<AtomicU64>,
    pub stats: Arc<WriterStats>,
    /// Organization accounts' ids, as committed (they never change).
    pub account_ids: AccountIds,
}

impl Writer {
    pub fn run(mut self, mut queue: mpsc::Receiver<Envelope>) {
        let mut batch: Vec<Envelope> = Vec::with_capacity(BATCH_COMMANDS_MAX);
        while let Some(first) = queue.blocking_recv() {
            self.gate.wait_open();
            batch.push(first);
            while batch.len() < BATCH_COMMANDS_MAX {
                match queue.try_recv() {
                    Ok(envelope) => batch.push(envelope),
                    Err(_) => break,
                }
            }
            self.commit_batch(&mut batch);
        }
    }

    fn commit_batch(&mut self, batch: &mut Vec<Envelope>) {
        let epoch = self.epoch.load(Ordering::Acquire) + 1;
        match self.apply_batch(batch, epoch) {
            Ok(results) => {
                // Publish the epoch before answering, so a caller that hears
                // back and sends again is seen as sequential.
                self.epoch.store(epoch, Ordering::Release);
                self.stats.commits.fetch_add(1, Ordering::Relaxed);
                for (envelope, result) in batch.drain(..).zip(results) {
                    if let Ok(applied) = &result
                        && let crate::commands::Outcome::Transfers(t) = &applied.outcome
                    {
                        self.stats.transfers.fetch_add(t.len() as u64, Ordering::Relaxed);
                    }
                    let _ = envelope.reply.send(result);
                }
            }
            Err(error) => {
                for envelope in batch.drain(..) {
                    let _ = envelope.reply.send(Err(error.clone()));
                }
            }
        }
    }

    fn apply_batch(
        &mut self,
        batch: &[Envelope],
        epoch: u64,
    ) -> Result<Vec<Result<Applied, EngineError>>, EngineError> {
        let mut txn = self.db.begin_write()?;
        txn.set_durability(self.durability)?;
        let now = self.clock.now_ms();
        let context = BatchContext { epoch, pricing: &self.pricing, quote_ttl_ms: self.quote_ttl_ms };
        let mut results = Vec::with_capacity(batch.len());
        let account_ids = {
            let mut table = txn.open_table(RECORDS)?;
            let changes = {
                let mut overlay = Overlay::with_account_ids(&table, &mut self.account_ids);
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
                overlay.into_changes()
            };
            let account_ids = AccountIds::updates(&changes);
            write_changes(&mut table, changes)?;
            account_ids
        };
        txn.commit()?;
        self.account_ids.committed(account_ids);
        self.stats.commands.fetch_add(batch.len() as u64, Ordering::Relaxed);
        Ok(results)
    }
}
