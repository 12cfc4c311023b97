//! The per-stack request log. Entries go to a background thread that
//! writes them in batches to their own database file (or, on PostgreSQL,
//! the database's `sika_requests` table), so logging never adds an fsync
//! to a request. Until its batch is written an entry is served
//! from memory. Retention is per organization, by count and by age, so
//! one tenant's flood never pushes another's entries out.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::Duration;

use redb::{Database, Durability, ReadableDatabase, ReadableTable, TableDefinition};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use sika_engine::EngineError;
use sika_engine::format::{Steps, stamp_only};

use crate::store::error::StoreError;
use crate::store::postgres::{Counts, PgRequests};

/// The entries by id. Request ids sort in the order they were made
/// (`sika_engine::ids::new_ordered_id`), so this order is the order of age.
const ENTRIES: TableDefinition<&str, &[u8]> = TableDefinition::new("requests");
/// Up to format 11, each entry's place in the order of writing.
const ORDER_BEFORE_12: TableDefinition<u64, &str> = TableDefinition::new("order");
/// Entries waiting for the log writer before new ones are dropped.
const QUEUE_CAPACITY: usize = 65_536;
/// The most entries written in one commit.
const BATCH_ENTRIES_MAX: usize = 8_192;
const FLUSH_INTERVAL: Duration = Duration::from_millis(100);
/// How long the log writer lets entries gather before a commit.
const BATCH_GATHER: Duration = Duration::from_millis(20);
/// One batch commit in this many is durable (an fsync); the rest are not.
const DURABLE_EVERY: u64 = 10;
/// At most one log line per this interval while writes keep failing.
const FAILURE_REPORT_INTERVAL: Duration = Duration::from_secs(10);
static DURABLE_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How much of the log is kept: per organization, the newest `count`
/// entries, and no entry older than `max_age_ms`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Retention {
    pub count: u64,
    pub max_age_ms: i64,
}

/// The upgrade path of a request log (`*-requests.redb`): format 12 keeps
/// the entries in the order of their ids alone; every other format changed
/// only the ledgers or the identity database.
pub(crate) const REQUEST_LOG_STEPS: Steps = [
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    entries_in_order_of_their_ids,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
    stamp_only,
];

/// Format 11 to 12 of a request log: a second table kept each entry's
/// place in the order of writing, one more insert and one more removal per
/// request for the writer. The ids already sort by age, so it goes.
fn entries_in_order_of_their_ids(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
    txn.delete_table(ORDER_BEFORE_12)?;
    Ok(())
}

/// The writer's index of what the file holds: each organization's entry
/// ids, oldest first, so trimming one organization never scans the
/// others'. Built from the file when the writer starts, and again after a
/// failed commit (which leaves the file as it was).
#[derive(Default)]
struct Kept {
    by_organization: HashMap<String, VecDeque<Box<str>>>,
}

impl Kept {
    fn read(db: &Database) -> Result<Kept, redb::Error> {
        let mut kept = Kept::default();
        let txn = db.begin_read()?;
        let Ok(entries) = txn.open_table(ENTRIES) else {
            return Ok(kept);
        };
        for item in entries.iter()? {
            let (id, bytes) = item?;
            // An entry that does not decode is filed under no organization.
            let organization = postcard::from_bytes::<RequestLogEntry>(bytes.value())
                .map(|e| e.organization)
                .unwrap_or_default();
            kept.add(&organization, id.value());
        }
        Ok(kept)
    }

    /// Files `id` under `organization`, in the order of ids: an entry
    /// written late (a slow request) can be older than the last one.
    fn add(&mut self, organization: &str, id: &str) {
        let ids = match self.by_organization.get_mut(organization) {
            Some(ids) => ids,
            None => self.by_organization.entry(organization.to_string()).or_default(),
        };
        if ids.back().is_none_or(|last| **last < *id) {
            ids.push_back(id.into());
        } else {
            let at = ids.partition_point(|kept| **kept < *id);
            ids.insert(at, id.into());
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RequestLogEntry {
    pub id: String,
    pub organization: String,
    pub api_key_id: Option<String>,
    pub method: String,
    pub path: String,
    pub status: u16,
    pub duration_us: u64,
    pub request_body: Option<String>,
    pub response_body: Option<String>,
    pub created_at: i64,
}

type Pending = Arc<Mutex<HashMap<String, Arc<RequestLogEntry>>>>;

pub(crate) struct RequestLog {
    store: Store,
    sender: Mutex<Option<SyncSender<Arc<RequestLogEntry>>>>,
    pending: Pending,
    writer: Mutex<Option<JoinHandle<()>>>,
}

/// Where the entries are kept: the stack's own file in the data directory,
/// or the `sika_requests` table of the node's PostgreSQL database.
enum Store {
    File(Slot),
    Postgres(Box<PgRequests>),
}

/// The open database; `None` while the writer reopens it after a failed
/// write (redb refuses every later one on that opening).
type Slot = Arc<RwLock<Option<Arc<Database>>>>;

fn open_database(path: &Path) -> Result<Database, StoreError> {
    let db = Database::builder()
        .set_cache_size(16 * 1024 * 1024)
        .create(path)
        .map_err(|source| StoreError::Open { path: path.to_path_buf(), source })?;
    sika_engine::format::open(&db, path, &REQUEST_LOG_STEPS)?;
    Ok(db)
}

impl RequestLog {
    /// The database, for a backup's read transaction; `None` while it is
    /// being reopened, and on PostgreSQL (whose backups are its own tools').
    pub(crate) fn database(&self) -> Option<Arc<Database>> {
        match &self.store {
            Store::File(slot) => slot.read().ok()?.clone(),
            Store::Postgres(_) => None,
        }
    }

    /// The log in its own file at `path`. `admission` (the sandbox's disk
    /// reserve) is asked before each batch: a refused batch is dropped, as
    /// one a full disk refuses is.
    pub(crate) fn open(
        path: &Path,
        retention: Retention,
        admission: Option<sika_engine::Admission>,
    ) -> Result<RequestLog, StoreError> {
        let slot: Slot = Arc::new(RwLock::new(Some(Arc::new(open_database(path)?))));
        let mut sink = FileSink::new(slot.clone(), path);
        sink.admission = admission;
        RequestLog::start(Store::File(slot), Box::new(sink), retention)
    }

    /// The log of stack `stack` in the PostgreSQL database at `url`.
    pub(crate) fn open_postgres(
        url: &str,
        stack: &str,
        retention: Retention,
    ) -> Result<RequestLog, StoreError> {
        let sink = PgSink { requests: PgRequests::open(url, stack)?, counts: None };
        RequestLog::start(Store::Postgres(Box::new(PgRequests::open(url, stack)?)), Box::new(sink), retention)
    }

    fn start(store: Store, sink: Box<dyn Sink>, retention: Retention) -> Result<RequestLog, StoreError> {
        let (sender, receiver) = sync_channel(QUEUE_CAPACITY);
        let pending: Pending = Arc::default();
        let writer = {
            let pending = pending.clone();
            std::thread::Builder::new()
                .name("sika-request-log".into())
                .spawn(move || write_loop(sink, &receiver, &pending, retention))
                .map_err(|source| StoreError::Io { doing: "cannot start the request log's writer", source })?
        };
        Ok(RequestLog { store, sender: Mutex::new(Some(sender)), pending, writer: Mutex::new(Some(writer)) })
    }

    /// Queues an entry; never blocks. A full queue drops the entry.
    pub(crate) fn record(&self, entry: RequestLogEntry) {
        let Ok(sender) = self.sender.lock() else { return };
        let Some(sender) = sender.as_ref() else { return };
        // One entry, shared by the queue and the entries served from memory.
        let entry = Arc::new(entry);
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(entry.id.clone(), entry.clone());
        }
        if let Err(TrySendError::Full(entry)) = sender.try_send(entry) {
            tracing::warn!(request = %entry.id, "request log queue full; entry dropped");
            if let Ok(mut pending) = self.pending.lock() {
                pending.remove(&entry.id);
            }
        }
    }

    pub(crate) fn find(&self, id: &str) -> Option<RequestLogEntry> {
        if let Some(entry) = self.pending.lock().ok()?.get(id) {
            return Some(RequestLogEntry::clone(entry));
        }
        match &self.store {
            Store::File(_) => {
                let txn = self.database()?.begin_read().ok()?;
                let table = txn.open_table(ENTRIES).ok()?;
                let bytes = table.get(id).ok()??;
                postcard::from_bytes(bytes.value()).ok()
            }
            Store::Postgres(requests) => requests.find(id).unwrap_or_else(|e| {
                tracing::warn!(error = %e, request = %id, "cannot read the request log");
                None
            }),
        }
    }

    /// Writes what is queued and stops the writer.
    pub(crate) fn close(&self) {
        if let Ok(mut sender) = self.sender.lock() {
            sender.take();
        }
        if let Some(handle) = self.writer.lock().ok().and_then(|mut w| w.take()) {
            let _ = handle.join();
        }
    }
}

/// Where the log writer puts its batches.
trait Sink: Send {
    /// Writes one batch with the retention applied. A failed write leaves
    /// the store as it was; the next one may reconnect or reopen.
    fn write(&mut self, batch: &[Arc<RequestLogEntry>], retention: Retention) -> Result<(), StoreError>;
    /// Makes every batch written so far durable, before the writer stops.
    fn finish(&mut self) {}
}

/// The stack's rows in PostgreSQL, on the writer's own connection: each
/// batch is one transaction, durable when it commits.
struct PgSink {
    requests: PgRequests,
    counts: Counts,
}

impl Sink for PgSink {
    fn write(&mut self, batch: &[Arc<RequestLogEntry>], retention: Retention) -> Result<(), StoreError> {
        self.requests.write(batch, retention, &mut self.counts)
    }
}

/// The stack's own redb file, with the writer's index of what it holds.
struct FileSink {
    slot: Slot,
    path: std::path::PathBuf,
    db: Option<Arc<Database>>,
    kept: Kept,
    admission: Option<sika_engine::Admission>,
}

impl FileSink {
    fn new(slot: Slot, path: &Path) -> FileSink {
        let db = slot.read().ok().and_then(|db| db.clone());
        if let Some(db) = &db
            && let Ok(txn) = db.begin_write()
        {
            let _ = txn.open_table(ENTRIES).map(drop);
            let _ = txn.commit();
        }
        let kept = db.as_deref().and_then(|db| Kept::read(db).ok()).unwrap_or_default();
        FileSink { slot, path: path.to_path_buf(), db, kept, admission: None }
    }
}

impl Sink for FileSink {
    fn write(&mut self, batch: &[Arc<RequestLogEntry>], retention: Retention) -> Result<(), StoreError> {
        if let Some(admit) = &self.admission {
            admit().map_err(StoreError::Refused)?;
        }
        if self.db.is_none() {
            // Reopening replays nothing (the log is best effort); it works
            // once the disk takes writes and no reader holds the old file.
            if let Ok(reopened) = open_database(&self.path).map(Arc::new) {
                self.kept = Kept::read(&reopened).unwrap_or_default();
                if let Ok(mut current) = self.slot.write() {
                    *current = Some(reopened.clone());
                }
                self.db = Some(reopened);
            }
        }
        let written = match &self.db {
            Some(db) => write_batch(db, batch, retention, &mut self.kept)
                .map_err(|source| StoreError::Redb { doing: "cannot write the request log", source }),
            None => {
                Err(StoreError::Refused("the request log is being reopened after a failed write".to_string()))
            }
        };
        // redb refuses every write after a failed one on this opening: let
        // it go, so the next batch opens the file again.
        if written.is_err()
            && self.db.take().is_some()
            && let Ok(mut current) = self.slot.write()
        {
            current.take();
        }
        written
    }

    fn finish(&mut self) {
        // Make every earlier non-durable batch durable before stopping.
        if let Some(db) = &self.db
            && let Ok(mut txn) = db.begin_write()
        {
            let _ = txn.set_durability(Durability::Immediate);
            let _ = txn.commit();
        }
    }
}

fn write_loop(
    mut sink: Box<dyn Sink>,
    receiver: &Receiver<Arc<RequestLogEntry>>,
    pending: &Pending,
    retention: Retention,
) {
    // The log is background work: let the request threads preempt it.
    sika_engine::lower_thread_priority();
    // Failed batches since the last report: one line per interval, not one
    // per batch, however long the disk stays full.
    let (mut failed, mut reported) = (0u64, None::<std::time::Instant>);
    loop {
        let first = match receiver.recv_timeout(FLUSH_INTERVAL) {
            Ok(entry) => entry,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => {
                sink.finish();
                return;
            }
        };
        // Let a batch gather: one commit per interval under load, not per entry.
        std::thread::sleep(BATCH_GATHER);
        let mut batch = vec![first];
        while batch.len() < BATCH_ENTRIES_MAX {
            match receiver.try_recv() {
                Ok(entry) => batch.push(entry),
                Err(_) => break,
            }
        }
        if let Err(e) = sink.write(&batch, retention) {
            failed += 1;
            if reported.is_none_or(|at| at.elapsed() >= FAILURE_REPORT_INTERVAL) {
                tracing::error!(error = %e, failed_batches = failed, "request log writes failed");
                (failed, reported) = (0, Some(std::time::Instant::now()));
            }
        }
        if let Ok(mut pending) = pending.lock() {
            for entry in &batch {
                pending.remove(&entry.id);
            }
        }
    }
}

fn write_batch(
    db: &Database,
    batch: &[Arc<RequestLogEntry>],
    retention: Retention,
    kept: &mut Kept,
) -> Result<(), redb::Error> {
    let mut txn = db.begin_write()?;
    // The log is best effort: most batches skip the fsync, and one in
    // `DURABLE_EVERY` (or the last before shutdown) makes all of them durable.
    let durable =
        DURABLE_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed).is_multiple_of(DURABLE_EVERY);
    txn.set_durability(if durable { Durability::Immediate } else { Durability::None })?;
    {
        let mut entries = txn.open_table(ENTRIES)?;
        let mut touched = Vec::new();
        let mut bytes = Vec::new();
        for entry in batch {
            bytes.clear();
            // An entry that cannot be encoded is not logged.
            let Ok(encoded) = postcard::to_extend(&**entry, std::mem::take(&mut bytes)) else { continue };
            bytes = encoded;
            if entries.insert(entry.id.as_str(), bytes.as_slice())?.is_none() {
                kept.add(&entry.organization, &entry.id);
                touched.push(entry.organization.as_str());
            }
        }
        // By count: each organization that grew keeps its newest entries.
        touched.sort_unstable();
        touched.dedup();
        for organization in touched {
            let Some(ids) = kept.by_organization.get_mut(organization) else { continue };
            while ids.len() as u64 > retention.count {
                let Some(id) = ids.pop_front() else { break };
                entries.remove(&*id)?;
            }
        }
        // By age: the oldest entries of all, while they are too old.
        let now = chrono::Utc::now().timestamp_millis();
        loop {
            let Some((id, entry)) = entries.first()?.map(|(id, bytes)| {
                (id.value().to_string(), postcard::from_bytes::<RequestLogEntry>(bytes.value()).ok())
            }) else {
                break;
            };
            // An entry that does not decode is filed under no organization.
            let organization = match &entry {
                Some(e) if now.saturating_sub(e.created_at) <= retention.max_age_ms => break,
                Some(e) => e.organization.clone(),
                None => String::new(),
            };
            entries.remove(id.as_str())?;
            if let Some(ids) = kept.by_organization.get_mut(&organization) {
                debug_assert_eq!(
                    ids.front().map(|k| &**k),
                    Some(id.as_str()),
                    "the oldest entry is its organization's oldest"
                );
                ids.pop_front();
            }
        }
    }
    txn.commit()?;
    Ok(())
}

/// Field names whose values never reach the log, in lower case: a name
/// matches whatever its case (`Authorization`, `IdNumber`).
const SECRET_FIELDS: &[&str] =
    &["secret", "idnumber", "token", "password", "authorization", "ownersessiontoken", "admintoken"];
/// Prefixes of secrets, found anywhere in a string (`"Bearer sk_live_…"`).
const SECRET_PREFIXES: &[&str] = &["sk_live_", "sk_test_", "sess_", "adm_", "whsec_", "inv_"];
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Bit n is set when some secret field's name is n bytes long.
const SECRET_FIELD_LENGTHS: u64 = {
    let mut lengths = 0u64;
    let mut i = 0;
    while i < SECRET_FIELDS.len() {
        assert!(SECRET_FIELDS[i].len() < 64, "a secret field's name fits the mask");
        lengths |= 1 << SECRET_FIELDS[i].len();
        i += 1;
    }
    lengths
};

/// Whether `name` is one of `SECRET_FIELDS`, whatever its case: most
/// names are ruled out by their length alone.
fn is_secret_field(name: &[u8]) -> bool {
    let possible_length = u32::try_from(name.len())
        .ok()
        .and_then(|n| SECRET_FIELD_LENGTHS.checked_shr(n))
        .is_some_and(|bits| bits & 1 == 1);
    possible_length && SECRET_FIELDS.iter().any(|field| name.eq_ignore_ascii_case(field.as_bytes()))
}

/// A searcher per secret prefix, built once: building one per search (as
/// `memmem::find_iter` does) cost ~4,000 instructions per logged body,
/// more than the searches themselves.
static SECRET_FINDERS: std::sync::LazyLock<Vec<memchr::memmem::Finder<'static>>> =
    std::sync::LazyLock::new(|| {
        SECRET_PREFIXES.iter().map(|p| memchr::memmem::Finder::new(p.as_bytes())).collect()
    });

/// Where the next secret starts in `text` at or after `from`: a prefix not
/// glued to a letter or digit before it.
fn next_secret(text: &[u8], from: usize) -> Option<(usize, usize)> {
    SECRET_FINDERS
        .iter()
        .filter_map(|finder| {
            finder
                .find_iter(&text[from..])
                .map(|at| at + from)
                .find(|at| *at == 0 || !text[at - 1].is_ascii_alphanumeric())
                .map(|at| (at, finder.needle().len()))
        })
        .min()
}

/// `text` with each secret in it (its prefix and the token characters
/// after it) replaced, or `None` when it holds none.
fn redact_text(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let (mut at, mut prefix) = next_secret(bytes, 0)?;
    let mut out = String::with_capacity(text.len());
    let mut kept = 0;
    loop {
        let end = bytes[at + prefix..]
            .iter()
            .position(|b| {
                !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'+' | b'/' | b'='))
            })
            .map_or(bytes.len(), |n| at + prefix + n);
        out.push_str(&text[kept..at]);
        out.push_str(REDACTED);
        kept = end;
        match next_secret(bytes, end) {
            Some(next) => (at, prefix) = next,
            None => break,
        }
    }
    out.push_str(&text[kept..]);
    Some(out)
}

/// A body for the log with secrets replaced.
pub(crate) fn redact_body(bytes: &[u8]) -> Option<String> {
    if bytes.is_empty() {
        return None;
    }
    // Most bodies hold nothing to redact or cut: keep them as they are
    // rather than parsing and re-serializing every response.
    if !needs_redaction(bytes)
        && let Ok(text) = std::str::from_utf8(bytes)
    {
        return Some(text.to_string());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(mut value) => {
            redact(&mut value);
            Some(value.to_string())
        }
        Err(_) => {
            let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]).into_owned();
            Some(redact_text(&text).unwrap_or(text))
        }
    }
}

/// Whether `bytes` may hold a secret field or value, or a string longer
/// than `LOGGED_STRING_MAX`. Every secret prefix ends in `_`, so only the
/// underscores are looked at for them; every JSON string, key or value,
/// lies between two quotes, so one pass over the quotes finds the long
/// strings and the secret names. Anything that is not a JSON object or
/// array takes the careful path.
fn needs_redaction(bytes: &[u8]) -> bool {
    if !matches!(bytes.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'[')) {
        return true;
    }
    // A prefix not glued to a letter or digit before it, as `next_secret`
    // finds them.
    let prefixed = memchr::memchr_iter(b'_', bytes).any(|underscore| {
        let upto = &bytes[..=underscore];
        SECRET_PREFIXES.iter().any(|prefix| {
            upto.ends_with(prefix.as_bytes()) && {
                let at = upto.len() - prefix.len();
                at == 0 || !bytes[at - 1].is_ascii_alphanumeric()
            }
        })
    });
    if prefixed {
        return true;
    }
    let mut last = 0;
    for at in memchr::memchr_iter(b'"', bytes) {
        if at - last > LOGGED_STRING_MAX {
            return true;
        }
        // What lies between this quote and the one before (a name holds
        // no quote, so a quoted name is always such a span).
        let between = &bytes[(last + 1).min(at)..at];
        if bytes[last] == b'"' && is_secret_field(between) {
            return true;
        }
        last = at;
    }
    bytes.len() - last > LOGGED_STRING_MAX
}

/// The longest string value a logged body keeps whole.
const LOGGED_STRING_MAX: usize = 1_024;

fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if is_secret_field(key.as_bytes()) && !v.is_null() {
                    *v = Value::String(REDACTED.into());
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        Value::String(s) if redact_text(s).is_some() => *s = redact_text(s).unwrap_or_default(),
        // A file upload's base64 would fill the log; keep its start.
        Value::String(s) if s.len() > LOGGED_STRING_MAX => {
            let mut end = LOGGED_STRING_MAX;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            *s = format!("{}… ({} bytes, truncated in the log)", &s[..end], s.len());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::Kept;

    #[test]
    fn an_organizations_entries_are_kept_in_the_order_of_their_ids() {
        let mut kept = Kept::default();
        for id in ["req_02", "req_04", "req_01", "req_05", "req_03"] {
            kept.add("org_a", id);
        }
        kept.add("org_b", "req_00");
        let ids: Vec<&str> = kept.by_organization["org_a"].iter().map(|id| &**id).collect();
        assert_eq!(ids, ["req_01", "req_02", "req_03", "req_04", "req_05"]);
        assert_eq!(kept.by_organization["org_b"].len(), 1);
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn secrets_are_redacted() {
        let body = br#"{"apiKey":{"secret":"sk_test_abc","name":"n"},"idNumber":"GHA-123456789-0","note":"sess_xyz","fullName":"Ama"}"#;
        let out: Value = serde_json::from_str(&redact_body(body).unwrap()).unwrap();
        assert_eq!(out["apiKey"]["secret"], REDACTED);
        assert_eq!(out["apiKey"]["name"], "n");
        assert_eq!(out["idNumber"], REDACTED);
        assert_eq!(out["note"], REDACTED);
        assert_eq!(out["fullName"], "Ama");
    }

    #[test]
    fn secrets_inside_strings_and_names_in_any_case_are_redacted() {
        let body = br#"{"Authorization":"x","IdNumber":"GHA-1","note":"Bearer sk_live_AbC-1.2 and whsec_zz/+= end","ok":"process_x"}"#;
        let out: Value = serde_json::from_str(&redact_body(body).unwrap()).unwrap();
        assert_eq!(out["Authorization"], REDACTED);
        assert_eq!(out["IdNumber"], REDACTED);
        assert_eq!(out["note"], "Bearer [REDACTED] and [REDACTED] end");
        assert_eq!(out["ok"], "process_x", "a prefix glued to a word is no secret");
        let text = redact_body(b"token: Bearer sess_abc; more").unwrap();
        assert_eq!(text, "token: Bearer [REDACTED]; more");
    }

    #[test]
    fn clean_bodies_are_kept_byte_for_byte() {
        let body = br#"{"data":[{"id":"GHS0001","availableBalance":"10.00"}],"hasMore":false}"#;
        assert_eq!(redact_body(body).unwrap().as_bytes(), body);
        let with_secret = br#"{"webhookEndpoint":{"secret":"whsec_abc"}}"#;
        assert!(redact_body(with_secret).unwrap().contains(REDACTED));
        let prefixed = br#"{"note":"sess_abc"}"#;
        assert!(redact_body(prefixed).unwrap().contains(REDACTED));
        assert!(!redact_body(b"not json sk_test_x").unwrap().contains("sk_test_"));
    }

    /// `needs_redaction` as it was written before: a search per secret
    /// prefix, then every quote compared with every name.
    fn needs_redaction_by_quotes(bytes: &[u8]) -> bool {
        if !matches!(bytes.iter().find(|b| !b.is_ascii_whitespace()), Some(b'{' | b'[')) {
            return true;
        }
        if next_secret(bytes, 0).is_some() {
            return true;
        }
        let mut last = 0;
        for at in memchr::memchr_iter(b'"', bytes) {
            if at - last > LOGGED_STRING_MAX {
                return true;
            }
            last = at;
            let rest = &bytes[at + 1..];
            if SECRET_FIELDS.iter().any(|f| {
                rest.get(..f.len()).is_some_and(|name| name.eq_ignore_ascii_case(f.as_bytes()))
                    && rest.get(f.len()) == Some(&b'"')
            }) {
                return true;
            }
        }
        bytes.len() - last > LOGGED_STRING_MAX
    }

    /// Bodies made of the pieces that decide: quotes, secret names and
    /// prefixes in any case, letters and digits before them, long runs.
    fn body() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"\"".to_vec()),
            Just(b"{".to_vec()),
            Just(b" ".to_vec()),
            Just(b"a".to_vec()),
            Just(b"7".to_vec()),
            Just(b"-".to_vec()),
            prop::sample::select(SECRET_FIELDS.iter().chain(SECRET_PREFIXES).collect::<Vec<_>>())
                .prop_flat_map(|word| {
                    prop::collection::vec(any::<bool>(), word.len()).prop_map(move |upper| {
                        word.bytes()
                            .zip(upper)
                            .map(|(b, up)| if up { b.to_ascii_uppercase() } else { b })
                            .collect()
                    })
                }),
            (1usize..1_400).prop_map(|n| vec![b'x'; n]),
        ];
        // Most start as an object, so the searches decide, not the first byte.
        let start = prop_oneof![4 => Just(b"{".to_vec()), 1 => Just(Vec::new())];
        (start, prop::collection::vec(piece, 0..12))
            .prop_map(|(start, pieces)| [start, pieces.concat()].concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]
        #[test]
        fn the_quote_and_underscore_passes_decide_as_the_search_per_prefix_did(body in body()) {
            prop_assert_eq!(needs_redaction(&body), needs_redaction_by_quotes(&body));
        }
    }

    #[test]
    fn long_strings_are_cut() {
        let body = serde_json::json!({ "data": "é".repeat(5_000), "name": "f.pdf" }).to_string();
        let out: Value = serde_json::from_str(&redact_body(body.as_bytes()).unwrap()).unwrap();
        let data = out["data"].as_str().unwrap();
        assert!(data.len() < 1_200 && data.ends_with("(10000 bytes, truncated in the log)"), "{data}");
        assert_eq!(out["name"], "f.pdf");
    }
}
