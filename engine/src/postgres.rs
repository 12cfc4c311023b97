//! The PostgreSQL backend: the same records the embedded store keeps, made
//! durable in a database the operator already replicates, with one writer
//! per stack fenced by a lease.
//!
//! The writer applies each batch exactly as on the embedded store; where
//! the embedded store appends the batch's changes to its write-ahead log
//! and syncs, this backend writes them in one Postgres transaction (an
//! upsert of every changed key, a tombstone for every deleted one) and the
//! callers are answered only after COMMIT returns. The node keeps a local
//! redb file as a cache of what Postgres holds, which the checkpointer
//! fills as it does on the embedded store; on open the cache is brought up
//! to date by reading the rows newer than its own epoch. The cache only
//! ever holds committed batches, so it is always a prefix of the database.
//!
//! **Fencing.** `sika_leases` holds, per stack, the node that may write
//! (`holder`), a `term` raised on every acquisition, and when the lease
//! expires. Every batch's transaction first updates that row where the
//! holder and term are this node's and the lease has not expired, and
//! commits nothing if no row matched: a node that lost its lease (paused,
//! partitioned) cannot commit again, whatever it believes. The update
//! locks the row, so a takeover and a commit are ordered by the database.
//! Only plain row statements are used (no advisory locks), so a
//! Postgres-compatible distributed database can serve too.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use postgres::{Client, NoTls};
use redb::{ReadableDatabase, TableDefinition};

use crate::error::EngineError;
use crate::format::FORMAT_VERSION;
use crate::storage::{Changes, RECORDS, keys, read};
use crate::view::View;

/// Where a stack's state lives on Postgres, and how this node holds it.
#[derive(Debug, Clone)]
pub struct PostgresConfig {
    /// A `postgres://` connection string.
    pub url: String,
    /// The stack's name (`live`, `sandbox`): its rows' key in every table.
    pub stack: String,
    /// This node's name in the lease (unique per process).
    pub holder: String,
    /// How long a lease lasts unless renewed; a standby takes over at most
    /// this long after the writer stops renewing.
    pub lease_ttl: Duration,
}

/// The schema's migrations, in order: version and SQL. Applied on open,
/// each once, in its own transaction.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("../migrations/0001_ledger.sql")),
    (2, include_str!("../migrations/0002_identity.sql")),
    (3, include_str!("../migrations/0003_requests.sql")),
];

/// The local cache's record of which database and stack filled it.
const CACHE_ORIGIN: TableDefinition<&str, &str> = TableDefinition::new("sika_cache_origin");

fn storage(context: &str) -> impl Fn(postgres::Error) -> EngineError + '_ {
    move |e| EngineError::Storage(format!("postgres: {context}: {e}"))
}

fn to_i64(value: u64, what: &'static str) -> Result<i64, EngineError> {
    i64::try_from(value).map_err(|_| EngineError::Overflow(what))
}

/// A lease's time, as the SQL statements take it (seconds).
fn seconds(duration: Duration) -> f64 {
    duration.as_secs_f64()
}

/// Runs `f` on a thread of its own: the `postgres` client drives its own
/// runtime, which cannot start inside the caller's async runtime.
pub fn off_runtime<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    std::thread::scope(|scope| match scope.spawn(f).join() {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

pub(crate) fn connect(url: &str) -> Result<Client, EngineError> {
    Client::connect(url, NoTls).map_err(storage("cannot connect"))
}

/// A connection with the schema brought up to this binary's version, for
/// the node's other stores on the same database (call it off the async
/// runtime, see `off_runtime`).
pub fn connect_migrated(url: &str) -> Result<Client, EngineError> {
    let mut client = connect(url)?;
    migrate(&mut client)?;
    Ok(client)
}

/// Applies the migrations this binary has and the database lacks. Two
/// nodes starting together are ordered by the version row's key: the
/// second waits for the first's transaction, then finds the row and skips.
fn migrate(client: &mut Client) -> Result<(), EngineError> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS sika_schema (version integer PRIMARY KEY, \
             applied_at timestamptz NOT NULL DEFAULT now())",
        )
        .map_err(storage("cannot create sika_schema"))?;
    for (version, sql) in MIGRATIONS {
        let mut txn = client.transaction().map_err(storage("migrate"))?;
        let claimed = txn
            .execute("INSERT INTO sika_schema (version) VALUES ($1) ON CONFLICT DO NOTHING", &[version])
            .map_err(storage("migrate"))?;
        if claimed == 1 {
            txn.batch_execute(sql).map_err(storage("cannot apply a schema migration"))?;
        }
        txn.commit().map_err(storage("migrate"))?;
    }
    let newest: Option<i32> =
        client.query_one("SELECT max(version) FROM sika_schema", &[]).map_err(storage("migrate"))?.get(0);
    let known = MIGRATIONS.last().map_or(0, |(version, _)| *version);
    if newest.is_some_and(|newest| newest > known) {
        return Err(EngineError::Storage(format!(
            "the database's Sika schema is at version {}, but this binary knows versions up to {known}: run a Sika release at least as new as the one that migrated it",
            newest.unwrap_or_default()
        )));
    }
    Ok(())
}

/// The stack's row, created on first use; refuses a format newer than this
/// binary's. Returns the stack's origin id and the format it was written
/// by (an older one is upgraded by the node that takes the lease,
/// `upgrade_stack`).
fn stack_origin(client: &mut Client, stack: &str) -> Result<(String, u32), EngineError> {
    let origin = format!("{:032x}", rand::random::<u128>());
    let format = i32::try_from(FORMAT_VERSION).map_err(|_| EngineError::Overflow("format version"))?;
    client
        .execute(
            "INSERT INTO sika_stacks (stack, format, epoch, origin) VALUES ($1, $2, 0, $3) ON CONFLICT DO NOTHING",
            &[&stack, &format, &origin],
        )
        .map_err(storage("cannot create the stack's row"))?;
    let row = client
        .query_one("SELECT format, origin FROM sika_stacks WHERE stack = $1", &[&stack])
        .map_err(storage("cannot read the stack's row"))?;
    let stored: i32 = row.get(0);
    match u32::try_from(stored) {
        Ok(stored) if stored <= FORMAT_VERSION => Ok((row.get(1), stored)),
        _ => Err(EngineError::Storage(format!(
            "stack '{stack}' in Postgres was written by Sika storage format version {stored}, but this binary writes version {format}"
        ))),
    }
}

/// Brings a stack written by an older format (Postgres stacks exist since
/// format 5) up to this binary's, by the node that has just taken its
/// lease: the stack's records are copied into an in-memory store, the
/// ledger's upgrade steps run there exactly as on an embedded ledger, and
/// what they changed is written back in one transaction, which holds the
/// stack's row and lease and moves the stack's format. The upgrade is a
/// batch of its own: it takes the next epoch (the rows it rewrites, the
/// stack's row and the `commit_epoch` record), so a cache catching up reads
/// it like any batch, and the writer's next batch follows it.
fn upgrade_stack(
    client: &mut Client,
    config: &PostgresConfig,
    term: i64,
    steps: &crate::format::Steps,
) -> Result<(), EngineError> {
    let stack = config.stack.as_str();
    let mut txn = client.transaction().map_err(storage("cannot upgrade the stack"))?;
    let row = txn
        .query_one("SELECT format, epoch FROM sika_stacks WHERE stack = $1 FOR UPDATE", &[&stack])
        .map_err(storage("cannot read the stack's row"))?;
    let (stored, epoch): (i32, i64) = (row.get(0), row.get(1));
    let stored = u32::try_from(stored)
        .map_err(|_| EngineError::Corrupt(format!("stack '{stack}' has format {stored}")))?;
    if stored >= FORMAT_VERSION {
        // Another node upgraded it first (`stack_origin` refused a newer one).
        return txn.commit().map_err(storage("cannot upgrade the stack"));
    }
    let held = txn
        .execute(
            "SELECT 1 FROM sika_leases WHERE stack = $1 AND holder = $2 AND term = $3 AND expires_at > now() FOR UPDATE",
            &[&stack, &config.holder, &term],
        )
        .map_err(storage("cannot read the writer lease"))?;
    if held != 1 {
        return Err(lost_lease(stack));
    }
    let rows = txn
        .query("SELECT key, value FROM sika_records WHERE stack = $1 AND value IS NOT NULL", &[&stack])
        .map_err(storage("cannot read the stack's records"))?;
    let before = rows.iter().map(|row| (row.get::<_, Vec<u8>>(0), row.get::<_, Vec<u8>>(1))).collect();
    let epoch = epoch.checked_add(1).ok_or(EngineError::Overflow("commit epoch"))?;
    let label = format!("stack '{stack}' in Postgres");
    let (keys, values) = upgraded(&before, stored, steps, &label, epoch)?;
    txn.execute(
        "INSERT INTO sika_records (stack, key, value, epoch) \
         SELECT $1, k, v, $2 FROM unnest($3::bytea[], $4::bytea[]) AS t(k, v) \
         ON CONFLICT (stack, key) DO UPDATE SET value = EXCLUDED.value, epoch = EXCLUDED.epoch",
        &[&stack, &epoch, &keys, &values],
    )
    .map_err(storage("cannot write the upgraded records"))?;
    let format = i32::try_from(FORMAT_VERSION).map_err(|_| EngineError::Overflow("format version"))?;
    txn.execute(
        "UPDATE sika_stacks SET format = $2, epoch = $3 WHERE stack = $1",
        &[&stack, &format, &epoch],
    )
    .map_err(storage("cannot move the stack's format"))?;
    txn.commit().map_err(storage("cannot upgrade the stack"))
}

/// What upgrading `before` (a stack's records, written by format
/// `stored`) with `steps` changes, as the keys and values (`None`: a
/// tombstone) of one batch at `epoch`, its `commit_epoch` record included.
type Upgraded = (Vec<Vec<u8>>, Vec<Option<Vec<u8>>>);
fn upgraded(
    before: &std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
    stored: u32,
    steps: &crate::format::Steps,
    label: &str,
    epoch: i64,
) -> Result<Upgraded, EngineError> {
    let db = redb::Database::builder().create_with_backend(redb::backends::InMemoryBackend::new())?;
    {
        let write = db.begin_write()?;
        {
            let mut table = write.open_table(RECORDS)?;
            for (key, value) in before {
                table.insert(key.as_slice(), value.as_slice())?;
            }
        }
        write.commit()?;
    }
    crate::format::upgrade(&db, Path::new(label), crate::format::Found::Version(stored), steps)?;
    let commit_epoch = keys::meta("commit_epoch");
    let mut keys: Vec<Vec<u8>> = vec![commit_epoch.clone()];
    let mut values: Vec<Option<Vec<u8>>> = vec![Some(crate::storage::encode(
        &u64::try_from(epoch).map_err(|_| EngineError::Overflow("commit epoch"))?,
    ))];
    let mut after = std::collections::BTreeSet::from([commit_epoch.clone()]);
    {
        use redb::ReadableTable;
        let read = db.begin_read()?;
        let table = read.open_table(RECORDS)?;
        for entry in table.iter()? {
            let (key, value) = entry?;
            let (key, value) = (key.value().to_vec(), value.value().to_vec());
            if key != commit_epoch && before.get(&key) != Some(&value) {
                keys.push(key.clone());
                values.push(Some(value));
            }
            after.insert(key);
        }
    }
    for key in before.keys().filter(|key| !after.contains(*key)) {
        // A tombstone, as a batch leaves for a deleted key.
        keys.push(key.clone());
        values.push(None);
    }
    Ok((keys, values))
}

/// Who holds a stack's lease when this node could not take it.
#[derive(Debug, Clone)]
pub struct LeaseHeld {
    pub holder: String,
    /// How long until it expires unless renewed.
    pub expires_in: Duration,
}

impl std::fmt::Display for LeaseHeld {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "node '{}' holds the writer lease (it expires in {:.1} s unless renewed)",
            self.holder,
            self.expires_in.as_secs_f64()
        )
    }
}

/// Takes the stack's lease if nobody holds it, it has expired, or this
/// node held it: the term goes up either way, so whatever this node did
/// under an earlier term is fenced off. Returns the new term, or who
/// holds it.
fn acquire(client: &mut Client, config: &PostgresConfig) -> Result<Result<i64, LeaseHeld>, EngineError> {
    let ttl = seconds(config.lease_ttl);
    let taken = client
        .query_opt(
            "INSERT INTO sika_leases AS l (stack, holder, term, expires_at) \
             VALUES ($1, $2, 1, now() + $3::float8 * interval '1 second') \
             ON CONFLICT (stack) DO UPDATE SET holder = EXCLUDED.holder, term = l.term + 1, \
             expires_at = EXCLUDED.expires_at \
             WHERE l.expires_at < now() OR l.holder = EXCLUDED.holder \
             RETURNING term",
            &[&config.stack, &config.holder, &ttl],
        )
        .map_err(storage("cannot take the writer lease"))?;
    if let Some(row) = taken {
        return Ok(Ok(row.get(0)));
    }
    let row = client
        .query_one(
            "SELECT holder, greatest(extract(epoch FROM expires_at - now()), 0)::float8 \
             FROM sika_leases WHERE stack = $1",
            &[&config.stack],
        )
        .map_err(storage("cannot read the writer lease"))?;
    let seconds: f64 = row.get(1);
    Ok(Err(LeaseHeld { holder: row.get(0), expires_in: Duration::from_secs_f64(seconds.max(0.0)) }))
}

/// A stack opened on Postgres by the node that holds its lease: the
/// batches' log, the lease keeper, and the cache's origin.
pub(crate) struct Opened {
    pub log: PgLog,
    pub keeper: LeaseKeeper,
}

/// Connects, migrates, checks the stack and takes its lease, upgrades a
/// stack an older format wrote (with `steps`, the ledger's upgrade path),
/// then brings the local cache at `cache` up to date. `Ok(Err(held))` when another
/// node holds the lease: this node is a standby.
pub(crate) fn open(
    config: &PostgresConfig,
    cache: &Path,
    steps: &crate::format::Steps,
    open_cache: impl Fn() -> Result<redb::Database, EngineError> + Send + Sync,
) -> Result<Result<(redb::Database, Opened), LeaseHeld>, EngineError> {
    off_runtime(|| {
        let mut client = connect(&config.url)?;
        migrate(&mut client)?;
        let (origin, stored) = stack_origin(&mut client, &config.stack)?;
        let term = match acquire(&mut client, config)? {
            Ok(term) => term,
            Err(held) => return Ok(Err(held)),
        };
        if stored < FORMAT_VERSION {
            upgrade_stack(&mut client, config, term, steps)?;
        }
        let db = fresh_cache(cache, &origin, &open_cache)?;
        restore(&db, &mut client, &config.stack)?;
        let keeper_client = connect(&config.url)?;
        let log = PgLog::new(client, config.clone(), term)?;
        let keeper = LeaseKeeper::idle(keeper_client, config.clone(), term);
        Ok(Ok((db, Opened { log, keeper })))
    })
}

/// Opens the cache, or starts it over when it was filled from another
/// database or stack, or by another format (it holds nothing Postgres
/// lacks, so starting over loses nothing).
fn fresh_cache(
    cache: &Path,
    origin: &str,
    open_cache: &impl Fn() -> Result<redb::Database, EngineError>,
) -> Result<redb::Database, EngineError> {
    let db = open_cache()?;
    let found = crate::format::check(&db, cache);
    let stored_origin = {
        let txn = db.begin_read()?;
        match txn.open_table(CACHE_ORIGIN) {
            Ok(table) => table.get("origin")?.map(|v| v.value().to_string()),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(e.into()),
        }
    };
    let reusable = matches!(found, Ok(crate::format::Found::Version(v)) if v == FORMAT_VERSION)
        && stored_origin.as_deref() == Some(origin);
    let db = if reusable {
        db
    } else {
        drop(db);
        std::fs::remove_file(cache).map_err(|e| {
            EngineError::Storage(format!("cannot start over the cache {}: {e}", cache.display()))
        })?;
        let db = open_cache()?;
        // A new file: stamped with the format it will hold.
        crate::format::upgrade(&db, cache, crate::format::Found::New, &crate::format::LEDGER_STEPS)?;
        db
    };
    let txn = db.begin_write()?;
    txn.open_table(CACHE_ORIGIN)?.insert("origin", origin)?;
    txn.open_table(RECORDS)?;
    txn.commit()?;
    Ok(db)
}

/// Brings the cache up to date: every row written after the cache's own
/// `commit_epoch`, in one synced commit. Returns how many rows it read.
fn restore(db: &redb::Database, client: &mut Client, stack: &str) -> Result<usize, EngineError> {
    let committed = {
        let txn = db.begin_read()?;
        let table = txn.open_table(RECORDS)?;
        read::<u64>(&table, &keys::meta("commit_epoch"))?.unwrap_or(0)
    };
    let rows = client
        .query(
            "SELECT key, value FROM sika_records WHERE stack = $1 AND epoch > $2",
            &[&stack, &to_i64(committed, "commit epoch")?],
        )
        .map_err(storage("cannot read the stack's records"))?;
    let txn = db.begin_write()?;
    {
        let mut table = txn.open_table(RECORDS)?;
        for row in &rows {
            let key: &[u8] = row.get(0);
            match row.get::<_, Option<&[u8]>>(1) {
                Some(value) => {
                    table.insert(key, value)?;
                }
                None => {
                    table.remove(key)?;
                }
            }
        }
    }
    txn.commit()?;
    Ok(rows.len())
}

/// A batch's whole transaction as one statement (one round trip, prepared
/// once): renew the lease where this node's term still holds it, raise the
/// stack's epoch where the batch is newer, and only if both matched write
/// every changed key (a tombstone for a deleted one). The lease row's
/// update locks it, so a takeover committed first leaves this statement
/// nothing to match, and one that comes after waits for this commit and
/// finds the lease renewed.
const BATCH: &str = "\
WITH lease AS (\
    UPDATE sika_leases SET expires_at = greatest(expires_at, now() + $4::float8 * interval '1 second') \
    WHERE stack = $1 AND holder = $2 AND term = $3 AND expires_at > now() RETURNING 1), \
raised AS (\
    UPDATE sika_stacks SET epoch = $5 WHERE stack = $1 AND epoch < $5 AND EXISTS (SELECT 1 FROM lease) \
    RETURNING 1), \
written AS (\
    INSERT INTO sika_records (stack, key, value, epoch) \
    SELECT $1, k, v, $5 FROM unnest($6::bytea[], $7::bytea[]) AS t(k, v) WHERE EXISTS (SELECT 1 FROM raised) \
    ON CONFLICT (stack, key) DO UPDATE SET value = EXCLUDED.value, epoch = EXCLUDED.epoch RETURNING 1) \
SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM raised), (SELECT count(*) FROM written)";

/// Makes batches durable in Postgres: one fenced transaction each (a
/// single statement, `BATCH`), answered after it commits.
pub(crate) struct PgLog {
    client: Client,
    batch: postgres::Statement,
    config: PostgresConfig,
    term: i64,
    /// The epoch of the last batch committed (0: none yet).
    last_epoch: u64,
}

impl PgLog {
    fn new(mut client: Client, config: PostgresConfig, term: i64) -> Result<PgLog, EngineError> {
        let batch = client.prepare(BATCH).map_err(storage("cannot prepare the batch statement"))?;
        Ok(PgLog { client, batch, config, term, last_epoch: 0 })
    }

    /// Commits one batch's changes, or nothing if this node's lease is
    /// gone. The stack's epoch only goes up: a batch not newer than the
    /// database's newest is refused by the database too.
    pub fn append(&mut self, epoch: u64, changes: &Changes<'_>) -> Result<(), EngineError> {
        assert!(epoch > self.last_epoch, "batch {epoch} committed after batch {}", self.last_epoch);
        let stack = self.config.stack.as_str();
        let at = to_i64(epoch, "commit epoch")?;
        let ttl = seconds(self.config.lease_ttl);
        let keys: Vec<&[u8]> = changes.iter().map(|(key, _)| *key).collect();
        let values: Vec<Option<&[u8]>> = changes.iter().map(|(_, value)| *value).collect();
        let row = self
            .client
            .query_one(&self.batch, &[&stack, &self.config.holder, &self.term, &ttl, &at, &keys, &values])
            .map_err(storage("cannot commit a batch"))?;
        let (held, raised, written): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
        if held != 1 {
            return Err(lost_lease(stack));
        }
        if raised != 1 {
            return Err(EngineError::Corrupt(format!(
                "batch {epoch} of stack '{stack}' is not newer than the database's newest"
            )));
        }
        assert_eq!(
            usize::try_from(written).ok(),
            Some(changes.len()),
            "batch {epoch} wrote {written} of its {} keys",
            changes.len()
        );
        self.last_epoch = epoch;
        Ok(())
    }
}

fn lost_lease(stack: &str) -> EngineError {
    EngineError::Storage(format!(
        "this node no longer holds the writer lease of stack '{stack}': another node took over, so nothing more is written here"
    ))
}

/// Renews the lease while the stack is open (`sika-lease`), fails the view
/// the moment it is lost, and lets it go on a clean close so a standby
/// takes over at once.
pub(crate) struct LeaseKeeper {
    client: Option<Client>,
    config: PostgresConfig,
    term: i64,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<Option<Client>>>,
}

impl LeaseKeeper {
    fn idle(client: Client, config: PostgresConfig, term: i64) -> LeaseKeeper {
        LeaseKeeper { client: Some(client), config, term, stop: None, thread: None }
    }

    /// Starts renewing every third of the lease's time.
    pub fn start(&mut self, view: Arc<View>) -> std::io::Result<()> {
        let Some(mut client) = self.client.take() else { return Ok(()) };
        let (stop, stopped) = mpsc::channel::<()>();
        let config = self.config.clone();
        let term = self.term;
        let thread = std::thread::Builder::new().name("sika-lease".into()).spawn(move || {
            let every = config.lease_ttl.checked_div(3).unwrap_or(config.lease_ttl);
            let later = |from: Instant| from.checked_add(config.lease_ttl).unwrap_or(from);
            let mut valid_until = later(Instant::now());
            loop {
                match stopped.recv_timeout(every) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return Some(client),
                }
                match renew(&mut client, &config, term) {
                    Ok(true) => valid_until = later(Instant::now()),
                    Ok(false) => {
                        view.fail(&lost_lease(&config.stack));
                        return None;
                    }
                    // The database is out of reach: batches fail on their
                    // own; past the lease's end another node may write.
                    Err(_) if Instant::now() > valid_until => {
                        view.fail(&lost_lease(&config.stack));
                        return None;
                    }
                    Err(_) => {
                        if let Ok(fresh) = connect(&config.url) {
                            client = fresh;
                        }
                    }
                }
            }
        })?;
        self.stop = Some(stop);
        self.thread = Some(thread);
        Ok(())
    }

    /// Stops renewing and, if `release`, ends the lease now so a standby
    /// need not wait for it to expire.
    pub fn stop(&mut self, release: bool) {
        self.stop.take();
        let client = self.thread.take().and_then(|thread| thread.join().ok().flatten());
        let client = client.or_else(|| self.client.take());
        let (config, term) = (&self.config, self.term);
        // The client is used and dropped away from any async runtime.
        off_runtime(move || {
            if let (true, Some(mut client)) = (release, client) {
                let _ = client.execute(
                    "UPDATE sika_leases SET expires_at = now() WHERE stack = $1 AND holder = $2 AND term = $3",
                    &[&config.stack, &config.holder, &term],
                );
            }
        });
    }
}

impl Drop for LeaseKeeper {
    fn drop(&mut self) {
        self.stop(false);
    }
}

/// Who holds a stack's writer lease now; `None` when nobody does (no
/// lease yet, or it expired). A node waiting as a standby asks this.
pub fn lease_holder(url: &str, stack: &str) -> Result<Option<LeaseHeld>, EngineError> {
    off_runtime(|| {
        let mut client = connect(url)?;
        migrate(&mut client)?;
        let row = client
            .query_opt(
                "SELECT holder, extract(epoch FROM expires_at - now())::float8 FROM sika_leases \
                 WHERE stack = $1 AND expires_at > now()",
                &[&stack],
            )
            .map_err(storage("cannot read the writer lease"))?;
        Ok(row.map(|row| {
            let seconds: f64 = row.get(1);
            LeaseHeld { holder: row.get(0), expires_in: Duration::from_secs_f64(seconds.max(0.0)) }
        }))
    })
}

/// A stack's records as the database holds them now, copied into an
/// in-memory store for `sika verify` by `restore` (one statement, so one
/// consistent read), reading only, so it runs beside a live writer. `None`
/// when the database holds no such stack. Refuses a stack another format
/// wrote.
pub fn stack_snapshot(url: &str, stack: &str) -> Result<Option<redb::Database>, EngineError> {
    off_runtime(|| {
        let mut client = connect(url)?;
        let tables = client
            .query_one("SELECT to_regclass('sika_stacks') IS NOT NULL", &[])
            .map_err(storage("cannot read the schema"))?;
        if !tables.get::<_, bool>(0) {
            return Ok(None);
        }
        let Some(row) = client
            .query_opt("SELECT format FROM sika_stacks WHERE stack = $1", &[&stack])
            .map_err(storage("cannot read the stack's row"))?
        else {
            return Ok(None);
        };
        let stored: i32 = row.get(0);
        if u32::try_from(stored).ok() != Some(FORMAT_VERSION) {
            return Err(EngineError::Storage(format!(
                "stack '{stack}' in Postgres was written by Sika storage format version {stored}, but this binary reads version {FORMAT_VERSION}"
            )));
        }
        let db = redb::Database::builder().create_with_backend(redb::backends::InMemoryBackend::new())?;
        let txn = db.begin_write()?;
        txn.open_table(RECORDS)?;
        txn.commit()?;
        restore(&db, &mut client, stack)?;
        Ok(Some(db))
    })
}

/// Deletes every row of a stack (`sika bench`'s own stack, once measured).
pub fn remove_stack(config: &PostgresConfig) -> Result<(), EngineError> {
    off_runtime(|| {
        let mut client = connect(&config.url)?;
        let mut txn = client.transaction().map_err(storage("cannot remove a stack"))?;
        for table in ["sika_records", "sika_leases", "sika_stacks"] {
            txn.execute(&format!("DELETE FROM {table} WHERE stack = $1"), &[&config.stack])
                .map_err(storage("cannot remove a stack"))?;
        }
        txn.commit().map_err(storage("cannot remove a stack"))
    })
}

fn renew(client: &mut Client, config: &PostgresConfig, term: i64) -> Result<bool, postgres::Error> {
    let renewed = client.execute(
        "UPDATE sika_leases SET expires_at = greatest(expires_at, now() + $4::float8 * interval '1 second') \
         WHERE stack = $1 AND holder = $2 AND term = $3 AND expires_at > now()",
        &[&config.stack, &config.holder, &term, &seconds(config.lease_ttl)],
    )?;
    Ok(renewed == 1)
}
