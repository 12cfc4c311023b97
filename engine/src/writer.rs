//! The single writer: drains the command queue in batches, applies each
//! command against the batch's state, makes the batch durable with one
//! synced write-ahead log record, then answers every caller. Nothing is
//! acknowledged before its fsync.
//!
//! Three threads share the work as a pipeline:
//!
//! - the applier (`sika-writer`) applies batch N against a read snapshot
//!   plus the batches the snapshot lacks, and hands it to the logger;
//! - the logger (`sika-log`) appends batch N's changes to the log and syncs
//!   them, publishes the batch to the view (readers see it from memory),
//!   publishes its epoch and answers its callers, while the applier applies
//!   batch N+1 on top of it;
//! - the checkpointer (`sika-checkpoint`) writes the published batches
//!   into redb with a synced commit, as many as have piled up at a time,
//!   then drops them from memory. Nobody waits for it, except the logger
//!   when it reuses a log file (`wal`).
//!
//! After a storage error (a failed append, sync or checkpoint) the writer
//! refuses every later batch: what the disk holds is no longer known, and
//! reopening the database (which replays the log) is the way back.

use std::collections::BinaryHeap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc as std_mpsc;

use hashbrown::HashMap;
use redb::Database;
use tokio::sync::{broadcast, mpsc, oneshot};

use crate::BATCH_COMMANDS_MAX;
use crate::clock::Clock;
use crate::commands::{Applied, BatchContext, Command, apply};
use crate::committed::{Committed, Effects};
use crate::durable::Durable;
use crate::error::EngineError;
use crate::ledger::Books;
use crate::rates::Pricing;
use crate::storage::{
    AccountCache, AccountIds, Batch, Change, Changes, Layer, NameNumbers, Overlay, RECORDS, key_order, keys,
    sorted, write_changes,
};
use crate::view::View;

pub(crate) type Reply = oneshot::Sender<Result<Applied, EngineError>>;
pub(crate) type Replies = oneshot::Sender<Vec<Result<Applied, EngineError>>>;

/// Commands as the queue carries them: one with its own answer, or a group
/// submitted together (`Engine::enqueue_all_blocking`, at most
/// `BATCH_COMMANDS_MAX`), applied one after another in one batch, each on
/// its own, and answered together, as a client's batch of transfers is.
pub(crate) enum Envelope {
    One {
        command: Command,
        /// `commit_epoch` when the request reached the engine.
        received_epoch: u64,
        reply: Reply,
    },
    Group {
        commands: Vec<Command>,
        received_epoch: u64,
        reply: Replies,
    },
}

impl Envelope {
    pub fn commands(&self) -> &[Command] {
        match self {
            Envelope::One { command, .. } => std::slice::from_ref(command),
            Envelope::Group { commands, .. } => commands,
        }
    }

    pub fn received_epoch(&self) -> u64 {
        match self {
            Envelope::One { received_epoch, .. } | Envelope::Group { received_epoch, .. } => *received_epoch,
        }
    }

    /// Answers the envelope's commands with the next of `results`, one each.
    fn answer(self, results: &mut impl Iterator<Item = Result<Applied, EngineError>>) {
        let missing = || Err(EngineError::Unavailable);
        match self {
            Envelope::One { reply, .. } => {
                let _ = reply.send(results.next().unwrap_or_else(missing));
            }
            Envelope::Group { commands, reply, .. } => {
                let answers = (0..commands.len()).map(|_| results.next().unwrap_or_else(missing)).collect();
                let _ = reply.send(answers);
            }
        }
    }

    fn refuse(self, error: &EngineError) {
        let count = self.commands().len();
        self.answer(&mut std::iter::repeat_n(Err(error.clone()), count));
    }
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
    pub view: Arc<View>,
    pub clock: Arc<dyn Clock>,
    pub pricing: Arc<Pricing>,
    pub quote_ttl_ms: i64,
    /// Where batches are made durable, handed to the logger (`None` in
    /// memory).
    pub durable: Option<Durable>,
    /// The last acknowledged batch.
    pub epoch: Arc<AtomicU64>,
    pub stats: Arc<WriterStats>,
    /// Organization accounts' ids, as committed (they never change).
    pub account_ids: AccountIds,
    /// The accounts as the batches applied so far left them (`AccountCache`).
    pub accounts: AccountCache,
    /// Names' numbers, as committed (they never change).
    pub names: NameNumbers,
    /// Where each durable batch's effects are told (`crate::committed`).
    pub notices: broadcast::Sender<Arc<Committed>>,
    /// The time of the last batch applied (at opening, of the last journal
    /// entry): a batch's time never goes below it, even when the wall
    /// clock steps back, so the journal's times never decrease and an
    /// account's balance changes are in the same order by time as by
    /// journal number (`balance_changes`).
    pub time_floor_ms: crate::records::TimestampMs,
}

/// The keys a typical command changes (a transfer: its two accounts, the
/// transfer, its journal entry and two balance changes), to size a batch's
/// change map up front.
const KEYS_PER_COMMAND: usize = 6;

/// A batch applied by the applier, on its way to the logger.
struct Staged {
    batch: Arc<Batch>,
    envelopes: Vec<Envelope>,
    results: Vec<Result<Applied, EngineError>>,
    /// What its commands that succeeded did, told once it is durable.
    effects: Effects,
}

impl Writer {
    /// Starts the applier (`sika-writer`), the logger (`sika-log`) and the
    /// checkpointer (`sika-checkpoint`); the returned handle finishes once
    /// all three have stopped, after the queue is closed, everything in it
    /// answered, and every acknowledged batch written into redb.
    pub fn spawn(mut self, queue: mpsc::Receiver<Envelope>) -> std::io::Result<std::thread::JoinHandle<()>> {
        let (stage, staged) = std_mpsc::sync_channel::<Staged>(1);
        let logger = Logger {
            durable: self.durable.take(),
            view: self.view.clone(),
            epoch: self.epoch.clone(),
            stats: self.stats.clone(),
            notices: self.notices.clone(),
        };
        let checkpointer = Checkpointer { db: self.db.clone(), view: self.view.clone() };
        let checkpointer =
            std::thread::Builder::new().name("sika-checkpoint".into()).spawn(move || checkpointer.run())?;
        let logger = std::thread::Builder::new().name("sika-log".into()).spawn(move || logger.run(staged))?;
        std::thread::Builder::new().name("sika-writer".into()).spawn(move || {
            self.run(queue, stage);
            let _ = logger.join();
            let _ = checkpointer.join();
        })
    }

    fn run(mut self, mut queue: mpsc::Receiver<Envelope>, stage: std_mpsc::SyncSender<Staged>) {
        // Batches handed to the logger that the last snapshot did not
        // include, oldest first.
        let mut in_flight: Vec<Arc<Batch>> = Vec::new();
        // `None` once the epochs are used up: every later batch is refused.
        let mut next_epoch = self.epoch.load(Ordering::Acquire).checked_add(1);
        // A group that did not fit in the last batch: it starts the next.
        let mut carried: Option<Envelope> = None;
        while let Some(first) = carried.take().or_else(|| queue.blocking_recv()) {
            self.gate.wait_open();
            // What is queued now, so a large batch is not grown step by step.
            let queued = queue.len().saturating_add(1).min(BATCH_COMMANDS_MAX);
            let mut envelopes: Vec<Envelope> = Vec::with_capacity(queued);
            let mut commands = first.commands().len();
            envelopes.push(first);
            while commands < BATCH_COMMANDS_MAX {
                match queue.try_recv() {
                    Ok(envelope)
                        if commands.saturating_add(envelope.commands().len()) > BATCH_COMMANDS_MAX =>
                    {
                        carried = Some(envelope);
                        break;
                    }
                    Ok(envelope) => {
                        commands = commands.saturating_add(envelope.commands().len());
                        envelopes.push(envelope);
                    }
                    Err(_) => break,
                }
            }
            if let Some(error) = self.view.failure() {
                refuse(envelopes, error);
                in_flight.clear();
                continue;
            }
            let Some(epoch) = next_epoch else {
                refuse(envelopes, EngineError::Overflow("commit epoch"));
                continue;
            };
            next_epoch = epoch.checked_add(1);
            match self.apply_batch(&envelopes, epoch, &mut in_flight) {
                Ok((changes, results, effects)) => {
                    let batch = Arc::new(Batch::new(epoch, changes));
                    in_flight.push(batch.clone());
                    let staged = Staged { batch, envelopes, results, effects };
                    if let Err(std_mpsc::SendError(staged)) = stage.send(staged) {
                        refuse(staged.envelopes, EngineError::Unavailable);
                    }
                }
                Err(error) => refuse(envelopes, error),
            }
        }
    }

    /// Applies a batch against a read snapshot plus the batches it lacks
    /// (published ones from the view, then those still with the logger),
    /// and returns its changes and each command's result.
    #[allow(clippy::type_complexity)]
    fn apply_batch(
        &mut self,
        batch: &[Envelope],
        epoch: u64,
        in_flight: &mut Vec<Arc<Batch>>,
    ) -> Result<(Layer, Vec<Result<Applied, EngineError>>, Effects), EngineError> {
        let (txn, mut below, published) = self.view.snapshot()?;
        in_flight.retain(|batch| batch.epoch > published);
        below.extend(in_flight.iter().cloned());
        let table = txn.open_table(RECORDS)?;
        let now = self.clock.now_ms().max(self.time_floor_ms);
        self.time_floor_ms = now;
        let context = BatchContext { epoch, pricing: &self.pricing, quote_ttl_ms: self.quote_ttl_ms };
        let count: usize = batch.iter().map(|envelope| envelope.commands().len()).sum();
        let mut results = Vec::with_capacity(count);
        let mut batch_effects = Effects::default();
        let mut overlay = Overlay::new(&table, &below)
            .with_account_ids(&mut self.account_ids)
            .with_accounts(&mut self.accounts)
            .with_names(&mut self.names)
            .with_room_for(count.saturating_mul(KEYS_PER_COMMAND));
        let commands = batch.iter().flat_map(|envelope| {
            envelope.commands().iter().map(|command| (command, envelope.received_epoch()))
        });
        for (command, received_epoch) in commands {
            let (result, effects) = {
                let mut books = Books { store: &mut overlay, now, effects: Effects::default(), listed: None };
                let result =
                    catch_unwind(AssertUnwindSafe(|| apply(&mut books, &context, command, received_epoch)))
                        .unwrap_or_else(|panic| Err(panicked("a command", panic.as_ref())));
                (result, books.effects)
            };
            match &result {
                Ok(_) => {
                    overlay.keep_command();
                    batch_effects.extend(effects);
                }
                Err(_) => {
                    overlay.drop_command();
                    self.stats.commands_failed.fetch_add(1, Ordering::Relaxed);
                }
            }
            results.push(result);
        }
        overlay.put(keys::meta("commit_epoch"), &epoch);
        overlay.keep_command();
        Ok((overlay.into_layer(), results, batch_effects))
    }
}

/// The error for a panic caught in `what`: a broken invariant (an
/// assertion) or a bug, with the panic's message for the operator.
fn panicked(what: &str, panic: &(dyn std::any::Any + Send)) -> EngineError {
    let message = panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("no message");
    EngineError::Corrupt(format!("{what} panicked: {message}"))
}

fn refuse(envelopes: Vec<Envelope>, error: EngineError) {
    for envelope in envelopes {
        envelope.refuse(&error);
    }
}

/// Makes each applied batch durable in the write-ahead log, publishes it
/// and answers its callers.
struct Logger {
    /// `None` for an in-memory database.
    durable: Option<Durable>,
    view: Arc<View>,
    epoch: Arc<AtomicU64>,
    stats: Arc<WriterStats>,
    notices: broadcast::Sender<Arc<Committed>>,
}

impl Logger {
    fn run(mut self, staged: std_mpsc::Receiver<Staged>) {
        for Staged { batch, envelopes, results, effects } in staged {
            if let Some(error) = self.view.failure() {
                refuse(envelopes, error);
                continue;
            }
            let epoch = batch.epoch;
            // A panic here is a broken invariant (an epoch out of order):
            // like a storage error, it stops all writing, since what the
            // log holds is no longer known, and nothing is acknowledged.
            let logged = catch_unwind(AssertUnwindSafe(|| {
                self.log(&batch)?;
                self.view.publish(batch);
                Ok(())
            }))
            .unwrap_or_else(|panic| Err(panicked("the logger", panic.as_ref())));
            if let Err(error) = logged {
                refuse(envelopes, self.view.fail(&error));
                continue;
            }
            // Publish the epoch before answering, so a caller that hears
            // back and sends again is seen as sequential.
            self.epoch.store(epoch, Ordering::Release);
            self.stats.commits.fetch_add(1, Ordering::Relaxed);
            self.stats.commands.fetch_add(results.len() as u64, Ordering::Relaxed);
            let transfers: usize = results
                .iter()
                .map(|result| match result {
                    Ok(Applied { outcome: crate::commands::Outcome::Transfers(t), .. }) => t.len(),
                    _ => 0,
                })
                .sum();
            self.stats.transfers.fetch_add(transfers as u64, Ordering::Relaxed);
            let mut results = results.into_iter();
            for envelope in envelopes {
                envelope.answer(&mut results);
            }
            // Durable and published: a follower that reads the ledger on
            // this notice finds the batch. No follower is no error.
            if !effects.is_empty() {
                let _ = self.notices.send(Arc::new(Committed { epoch, effects }));
            }
        }
        self.view.close();
        // A clean stop: once the database file holds every batch (the
        // checkpointer goes on after the close), the log holds nothing it
        // lacks. After a failure the log is left for the replay; a log that
        // could not be emptied is only replayed again at the next open.
        if let Some(Durable::Wal(wal)) = &mut self.durable
            && self.view.wait_all_checkpointed().is_ok()
        {
            let _ = wal.empty();
        }
    }

    /// Appends the batch to the log (if there is one) and records its keys'
    /// order for readers.
    fn log(&mut self, batch: &Batch) -> Result<(), EngineError> {
        let order = key_order(batch.changes());
        let changes: Changes = order.iter().map(|&place| batch.entry(place)).collect();
        batch.set_order(order);
        let Some(durable) = &mut self.durable else { return Ok(()) };
        let view = &self.view;
        durable.append(batch.epoch, &changes, |epoch| view.wait_checkpointed(epoch))
    }
}

/// The least time from one checkpoint's start to the next. Each
/// checkpoint is a synced redb commit with a fixed cost, and the more
/// batches one holds, the more of their writes land on the same pages
/// (a payout is written twice, an account many times): in the payouts load
/// checkpointing took 45–50 µs of CPU per command back to back, 28–37 µs
/// with 20–50 ms between starts. Batches wait in memory meanwhile. At
/// 100 ms instead of 25 the memory bench's 1,000,000 transfers (10,000
/// accounts, each written ~200 times) took 18 % less CPU and ran 7–10 %
/// faster, peak RSS 188–199 MiB against 158–163; payouts 14.3k/s against
/// 13.9k/s (12 against 14 µs of checkpointing per command).
const CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_millis(100);

/// Writes acknowledged batches into redb, each time all that have piled
/// up, in one synced commit; then the view drops them from memory.
struct Checkpointer {
    db: Arc<Database>,
    view: Arc<View>,
}

impl Checkpointer {
    fn run(self) {
        // Background work: the threads that answer requests preempt it.
        crate::lower_thread_priority();
        let mut not_before = std::time::Instant::now();
        while let Some(batches) = self.view.next_checkpoint(not_before) {
            let now = std::time::Instant::now();
            not_before = now.checked_add(CHECKPOINT_INTERVAL).unwrap_or(now);
            if !self.checkpoint(&batches) {
                return;
            }
        }
    }

    /// Writes `batches` into the file and tells the view. After a storage
    /// error or a panic (a broken invariant) it fails the view instead, so
    /// nothing more is logged, acknowledged or checkpointed, and returns
    /// false.
    fn checkpoint(&self, batches: &[Arc<Batch>]) -> bool {
        let Some(newest) = batches.last().map(|batch| batch.epoch) else { return true };
        let written = catch_unwind(AssertUnwindSafe(|| self.write(batches)))
            .unwrap_or_else(|panic| Err(panicked("the checkpointer", panic.as_ref())));
        match written {
            Ok(()) => {
                self.view.checkpointed(newest);
                true
            }
            Err(error) => {
                let _ = self.view.fail(&error);
                false
            }
        }
    }

    fn write(&self, batches: &[Arc<Batch>]) -> Result<(), EngineError> {
        // `merged` keeps the newest batch's value of each key, which is the
        // last one only if epochs strictly increase.
        assert!(
            batches.windows(2).all(|pair| pair[0].epoch < pair[1].epoch),
            "checkpoint of batches out of order: {:?}",
            batches.iter().map(|batch| batch.epoch).collect::<Vec<_>>()
        );
        let txn = self.db.begin_write()?;
        {
            let mut table = txn.open_table(RECORDS)?;
            write_changes(&mut table, &merged(batches))?;
        }
        txn.commit()?;
        Ok(())
    }
}

/// The changes of several batches (oldest first) as one, in key order:
/// each key once, as the newest batch that touched it left it. The logger
/// has recorded each batch's key order already (`Batch::set_order`), so
/// the batches are merged rather than sorted again.
fn merged(batches: &[Arc<Batch>]) -> Changes<'_> {
    let orders: Option<Vec<_>> = batches.iter().map(|batch| batch.in_order()).collect();
    match orders {
        Some(orders) => merge_ordered(orders),
        None => merge_unordered(batches),
    }
}

/// `merged` of batches whose changes are in key order (`orders[i]` is
/// batch i's, oldest first): a merge of the sorted lists through a heap of
/// their next keys, each key valued as the newest batch holding it left it.
fn merge_ordered<'b, I>(mut orders: Vec<I>) -> Changes<'b>
where
    I: Iterator<Item = Change<'b>>,
{
    // A heap of each batch's first key not yet taken: the least key on top
    // and, among equal keys, the newest batch's (the higher index).
    let mut heads: BinaryHeap<Head<'b>> = BinaryHeap::with_capacity(orders.len());
    for (i, order) in orders.iter_mut().enumerate() {
        if let Some((key, value)) = order.next() {
            heads.push(Head { key, batch: i, value });
        }
    }
    let mut changes: Changes = Vec::with_capacity(orders.iter().map(|order| order.size_hint().0).sum());
    while let Some(newest) = heads.pop() {
        // A batch's keys are distinct, so the next one pushed is past `key`.
        if let Some((key, value)) = orders[newest.batch].next() {
            heads.push(Head { key, batch: newest.batch, value });
        }
        while let Some(older) = heads.peek()
            && older.key == newest.key
        {
            let batch = older.batch;
            heads.pop();
            if let Some((key, value)) = orders[batch].next() {
                heads.push(Head { key, batch, value });
            }
        }
        changes.push((newest.key, newest.value));
    }
    changes
}

/// A batch's next change in `merge_ordered`'s heap: ordered so that the
/// heap's top is the least key and, among equal keys, the newest batch's.
struct Head<'b> {
    key: &'b [u8],
    batch: usize,
    value: Option<&'b [u8]>,
}

impl Ord for Head<'_> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        other.key.cmp(self.key).then(self.batch.cmp(&other.batch))
    }
}

impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl Eq for Head<'_> {}

/// `merged` of batches whose keys are not in order yet.
fn merge_unordered(batches: &[Arc<Batch>]) -> Changes<'_> {
    if let [batch] = batches {
        return sorted(batch.changes());
    }
    let mut newest: HashMap<&[u8], Option<&[u8]>> = HashMap::default();
    for batch in batches {
        for (key, value) in batch.changes() {
            newest.insert(key.as_slice(), value.as_deref());
        }
    }
    let mut changes: Changes = newest.into_iter().collect();
    changes.sort_unstable_by(|a, b| a.0.cmp(b.0));
    changes
}

#[cfg(test)]
mod tests {
    use redb::ReadableDatabase;

    use super::*;
    use crate::commands::Outcome;

    fn database() -> Arc<Database> {
        Arc::new(Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap())
    }

    /// A batch of one command that writes key `[1, epoch]`, with the
    /// receiver of that command's answer.
    fn staged(epoch: u64) -> (Staged, oneshot::Receiver<Result<Applied, EngineError>>) {
        let (reply, answer) = oneshot::channel();
        let envelope =
            Envelope::One { command: Command::RunJob { key: Vec::new() }, received_epoch: 0, reply };
        let mut changes = Layer::default();
        changes.insert(vec![1, epoch as u8], Some(vec![epoch as u8]));
        let applied = Applied {
            outcome: Outcome::Document { collection: "test".into(), id: String::new() },
            replayed: false,
        };
        let staged = Staged {
            batch: Arc::new(Batch::new(epoch, changes)),
            envelopes: vec![envelope],
            results: vec![Ok(applied)],
            effects: Effects::default(),
        };
        (staged, answer)
    }

    #[test]
    fn a_batch_out_of_order_stops_the_logger_instead_of_being_acknowledged() {
        // With a log (its append asserts) and in memory (publishing does).
        for with_log in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.redb");
            let view = Arc::new(View::new(database(), 0));
            let logger = Logger {
                durable: with_log.then(|| Durable::Wal(crate::wal::Wal::open(&path, None).unwrap())),
                view: view.clone(),
                epoch: Arc::new(AtomicU64::new(0)),
                stats: Default::default(),
                notices: broadcast::channel(1).0,
            };
            let (stage, batches) = std_mpsc::sync_channel(3);
            let mut answers = Vec::new();
            for epoch in [1, 1, 2] {
                let (staged, answer) = staged(epoch);
                stage.send(staged).unwrap();
                answers.push(answer);
            }
            drop(stage);
            logger.run(batches);
            let answers: Vec<_> = answers.into_iter().map(|answer| answer.blocking_recv().unwrap()).collect();
            assert!(answers[0].is_ok(), "{answers:?}");
            assert!(
                matches!(&answers[1], Err(EngineError::Corrupt(m)) if m.contains("the logger panicked")),
                "{answers:?}"
            );
            assert_eq!(answers[2], answers[1], "every later batch is refused too");
            assert!(view.failure().is_some());
            if with_log {
                let logged: Vec<u64> = crate::wal::read_records(&crate::wal::paths_for(&path)[0])
                    .unwrap()
                    .iter()
                    .map(|(epoch, _)| *epoch)
                    .collect();
                assert_eq!(logged, vec![1], "nothing after the broken invariant reached the log");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Merging the logger's key orders gives what sorting the batches'
        /// changes afresh gives: each key once, as the newest batch left it.
        #[test]
        fn merging_ordered_batches_equals_sorting_them(
            batches in proptest::collection::vec(
                proptest::collection::vec(
                    (proptest::collection::vec(0u8..4, 0..4), proptest::option::of(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3))),
                    0..40,
                ),
                1..6,
            )
        ) {
            let batches: Vec<Arc<Batch>> = batches
                .into_iter()
                .enumerate()
                .map(|(epoch, changes)| Arc::new(Batch::new(epoch as u64 + 1, changes.into_iter().collect())))
                .collect();
            let expected: Vec<(Vec<u8>, Option<Vec<u8>>)> = merge_unordered(&batches)
                .into_iter()
                .map(|(key, value)| (key.to_vec(), value.map(<[u8]>::to_vec)))
                .collect();
            for batch in &batches {
                batch.set_order(key_order(batch.changes()));
            }
            let found: Vec<(Vec<u8>, Option<Vec<u8>>)> = merged(&batches)
                .into_iter()
                .map(|(key, value)| (key.to_vec(), value.map(<[u8]>::to_vec)))
                .collect();
            proptest::prop_assert_eq!(found, expected);
        }
    }

    #[test]
    fn batches_out_of_order_stop_the_checkpointer_before_it_writes() {
        let db = database();
        let view = Arc::new(View::new(db.clone(), 0));
        let checkpointer = Checkpointer { db: db.clone(), view: view.clone() };
        let batch = |epoch| staged(epoch).0.batch;
        assert!(checkpointer.checkpoint(&[batch(1), batch(2)]));
        assert!(!checkpointer.checkpoint(&[batch(4), batch(3)]));
        assert!(view.failure().is_some_and(|e| e.to_string().contains("the checkpointer panicked")));
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        assert!(table.get([1u8, 2].as_slice()).unwrap().is_some());
        assert!(table.get([1u8, 3].as_slice()).unwrap().is_none(), "nothing of the refused checkpoint");
        assert!(view.wait_checkpointed(2).is_err(), "and the view is failed for everyone waiting");
    }
}
