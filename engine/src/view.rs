//! What readers see: the database file as of its last checkpoint, plus the
//! batches acknowledged since then, which are durable in the write-ahead
//! log and kept in memory until the checkpointer has written them into the
//! file.
//!
//! The logger publishes each batch here once its log record is synced; the
//! checkpointer takes the published batches, commits them to redb with a
//! sync, and only then drops them. A snapshot takes its read transaction
//! and its list of batches under one lock, so it sees either the file
//! before a checkpoint with every batch, or the file after it with the
//! batches it does not hold: never a batch twice or a batch missing.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use redb::{Database, ReadTransaction, ReadableDatabase};

use crate::error::EngineError;
use crate::storage::Batch;

pub(crate) struct View {
    db: Arc<Database>,
    state: Mutex<State>,
    /// Signalled on every change of `state`.
    changed: Condvar,
}

struct State {
    /// Acknowledged batches the file does not hold yet, oldest first.
    pending: VecDeque<Arc<Batch>>,
    /// The newest batch the file holds durably.
    checkpointed: u64,
    /// The logger has stopped: nothing more will be published.
    closed: bool,
    /// After a storage error nothing more is logged or checkpointed.
    failed: Option<EngineError>,
    /// A test holds checkpoints back.
    held: bool,
    /// The checkpointer is writing batches into the file.
    writing: bool,
    /// Someone waits for a checkpoint: the next one starts at once.
    urgent: bool,
}

/// Batches for the checkpointer: `None` once nothing more will come.
pub(crate) type CheckpointWork = Option<Vec<Arc<Batch>>>;

impl View {
    /// `epoch`: the newest batch the file holds (after replaying the log).
    pub fn new(db: Arc<Database>, epoch: u64) -> View {
        let state = State {
            pending: VecDeque::new(),
            checkpointed: epoch,
            closed: false,
            failed: None,
            held: false,
            writing: false,
            urgent: false,
        };
        View { db, state: Mutex::new(state), changed: Condvar::new() }
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves the state consistent (every
        // change is a single assignment or push), so a poisoned lock is used.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The newest batch published (or, with none pending, the newest the
    /// file holds, which is then the same).
    fn published(state: &State) -> u64 {
        state.pending.back().map_or(state.checkpointed, |batch| batch.epoch)
    }

    fn wait<'a>(&self, state: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A read transaction, the acknowledged batches it lacks (oldest
    /// first), and the epoch of the newest batch the two hold together.
    pub fn snapshot(&self) -> Result<(ReadTransaction, Vec<Arc<Batch>>, u64), EngineError> {
        let state = self.state();
        let txn = self.db.begin_read()?;
        Ok((txn, state.pending.iter().cloned().collect(), Self::published(&state)))
    }

    /// A batch whose log record is synced: readers see it from now on.
    /// Epochs strictly increase: snapshots and checkpoints take the newest
    /// batch's value of a key, and the logger catches a panic here and
    /// stops writing.
    pub fn publish(&self, batch: Arc<Batch>) {
        let mut state = self.state();
        let published = Self::published(&state);
        assert!(batch.epoch > published, "batch {} published after batch {published}", batch.epoch);
        state.pending.push_back(batch);
        self.changed.notify_all();
    }

    /// The logger has stopped; the checkpointer writes what is left and ends.
    pub fn close(&self) {
        self.state().closed = true;
        self.changed.notify_all();
    }

    /// The storage error that stopped the writer, if one did.
    pub fn failure(&self) -> Option<EngineError> {
        self.state().failed.clone()
    }

    /// A storage error (a failed append, sync or checkpoint): what the disk
    /// holds past the last synced record is no longer known, so nothing
    /// more is logged or checkpointed through this opening; the healer
    /// opens the database again (which replays the log) once the disk
    /// takes writes. A panic (a broken invariant, `Corrupt`) stops it for
    /// good: that needs the operator. Returns the error every later batch
    /// gets.
    pub fn fail(&self, cause: &EngineError) -> EngineError {
        let mut state = self.state();
        let error = state
            .failed
            .get_or_insert_with(|| match cause {
                EngineError::Storage(_) => EngineError::Storage(format!(
                    "the ledger cannot write ({cause}); it resumes by itself once the disk takes writes again"
                )),
                _ => EngineError::Corrupt(format!("the ledger stopped writing ({cause}); restart the node")),
            })
            .clone();
        state.writing = false;
        self.changed.notify_all();
        error
    }

    /// For the checkpointer: waits until there are published batches the
    /// file lacks and it is `not_before` (or someone waits for a
    /// checkpoint, or the writer has stopped), and returns all of them.
    pub fn next_checkpoint(&self, not_before: Instant) -> CheckpointWork {
        let mut state = self.state();
        loop {
            if state.failed.is_some() {
                return None;
            }
            if state.closed && state.pending.is_empty() {
                return None;
            }
            let now = Instant::now();
            let due = state.urgent || state.closed || now >= not_before;
            // Held checkpoints go on once the writer has stopped.
            let allowed = !state.held || state.closed;
            if !state.pending.is_empty() && allowed && due {
                state.writing = true;
                state.urgent = false;
                return Some(state.pending.iter().cloned().collect());
            }
            state = if !state.pending.is_empty() && allowed {
                self.changed
                    .wait_timeout(state, not_before.saturating_duration_since(now))
                    .map(|(s, _)| s)
                    .unwrap_or_else(|p| p.into_inner().0)
            } else {
                self.wait(state)
            };
        }
    }

    /// The file now holds every batch up to `epoch`: readers stop looking
    /// at them in memory.
    pub fn checkpointed(&self, epoch: u64) {
        let mut state = self.state();
        while state.pending.front().is_some_and(|batch| batch.epoch <= epoch) {
            state.pending.pop_front();
        }
        state.checkpointed = state.checkpointed.max(epoch);
        state.writing = false;
        self.changed.notify_all();
    }

    /// Waits until the file holds every batch up to `epoch`.
    pub fn wait_checkpointed(&self, epoch: u64) -> Result<(), EngineError> {
        let mut state = self.state();
        loop {
            if let Some(error) = &state.failed {
                return Err(error.clone());
            }
            if state.checkpointed >= epoch {
                return Ok(());
            }
            state.urgent = true;
            self.changed.notify_all();
            state = self.wait(state);
        }
    }

    /// Waits until the file holds every batch published so far.
    pub fn wait_all_checkpointed(&self) -> Result<(), EngineError> {
        let published = Self::published(&self.state());
        self.wait_checkpointed(published)
    }

    /// Holds checkpoints back (tests), once the one being written (if
    /// any) is done; or lets them go on.
    pub fn hold(&self, held: bool) {
        let mut state = self.state();
        state.held = held;
        self.changed.notify_all();
        while held && state.writing {
            state = self.wait(state);
        }
    }
}
