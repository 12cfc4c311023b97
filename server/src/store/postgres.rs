//! The node's own stores on PostgreSQL (`--store`), beside the ledger's:
//! the identity (organizations, members, sessions, invitations, the
//! operator token's hash and the node's secret) in `sika_identity`, the
//! operator's audit log in `sika_audit`, and each stack's request log in
//! `sika_requests`. Every node on the database loads the identity when it
//! opens and reads the request logs there, so a standby that takes over
//! knows the same people and tokens and serves the same log.
//! `domain::identity` keeps its local file as a cache and writes here first.
//!
//! The `postgres` client drives its own runtime, so each call runs on a
//! thread of its own (`off_runtime`), away from the node's.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use postgres::Client;
use sika_engine::postgres::{connect_migrated, off_runtime};

use crate::store::error::{StoreError, postgres as failed};
use crate::store::request_log::{RequestLogEntry, Retention};

/// One key's new value, or `None` to delete it.
pub(crate) type IdentityChange = (String, Option<Vec<u8>>);

/// What `PgIdentity::load` reads: every identity row, and the audit log.
pub(crate) struct Loaded {
    pub identity: Vec<(String, Vec<u8>)>,
    pub audit: Vec<(u64, Vec<u8>)>,
}

/// One connection to the database, made on first use and made again on
/// the call after a failure.
pub(crate) struct PgConnection {
    url: String,
    client: Mutex<Option<Client>>,
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        // The client's own runtime cannot be dropped inside the node's.
        let client = self.client.get_mut().ok().and_then(Option::take);
        off_runtime(move || drop(client));
    }
}

impl PgConnection {
    fn new(url: &str) -> PgConnection {
        PgConnection { url: url.to_string(), client: Mutex::new(None) }
    }

    /// Runs `f` with the connection, off the async runtime; a failed call
    /// drops the connection so the next one reconnects.
    fn with<R: Send>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, StoreError> + Send,
    ) -> Result<R, StoreError> {
        let mut slot = self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let url = &self.url;
        let current = slot.take();
        let (client, result) = off_runtime(move || {
            let mut client = match current {
                Some(client) => client,
                None => match connect_migrated(url) {
                    Ok(client) => client,
                    Err(e) => return (None, Err(StoreError::from(e))),
                },
            };
            let result = f(&mut client);
            (result.is_ok().then_some(client), result)
        });
        *slot = client;
        result
    }
}

pub(crate) struct PgIdentity {
    connection: PgConnection,
}

impl PgIdentity {
    pub(crate) fn open(url: &str) -> Result<PgIdentity, StoreError> {
        let identity = PgIdentity { connection: PgConnection::new(url) };
        identity.with(|_| Ok(()))?;
        Ok(identity)
    }

    fn with<R: Send>(
        &self,
        f: impl FnOnce(&mut Client) -> Result<R, StoreError> + Send,
    ) -> Result<R, StoreError> {
        self.connection.with(f)
    }

    /// Whether a node's identity is there already (a node joining the
    /// database loads it instead of initialising a new one).
    pub(crate) fn exists(&self) -> Result<bool, StoreError> {
        self.with(|client| {
            let row = client
                .query_opt("SELECT 1 FROM sika_identity WHERE key = 'admin_token_hash'", &[])
                .map_err(failed("cannot read the identity"))?;
            Ok(row.is_some())
        })
    }

    pub(crate) fn load(&self) -> Result<Loaded, StoreError> {
        self.with(|client| {
            let mut txn = client.transaction().map_err(failed("cannot read the identity"))?;
            let identity = txn
                .query("SELECT key, value FROM sika_identity", &[])
                .map_err(failed("cannot read the identity"))?
                .iter()
                .map(|row| (row.get::<_, String>(0), row.get::<_, Vec<u8>>(1)))
                .collect();
            let mut audit = Vec::new();
            for row in txn
                .query("SELECT position, record FROM sika_audit ORDER BY position", &[])
                .map_err(failed("cannot read the audit log"))?
            {
                let position = u64::try_from(row.get::<_, i64>(0))
                    .map_err(|_| StoreError::OutOfRange("a negative audit position"))?;
                audit.push((position, row.get::<_, Vec<u8>>(1)));
            }
            txn.commit().map_err(failed("cannot read the identity"))?;
            Ok(Loaded { identity, audit })
        })
    }

    /// Writes the changes in one transaction.
    pub(crate) fn write(&self, changes: &[IdentityChange]) -> Result<(), StoreError> {
        self.with(|client| {
            let mut txn = client.transaction().map_err(failed("cannot write the identity"))?;
            for (key, value) in changes {
                match value {
                    Some(value) => txn.execute(
                        "INSERT INTO sika_identity (key, value) VALUES ($1, $2) \
                         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                        &[key, value],
                    ),
                    None => txn.execute("DELETE FROM sika_identity WHERE key = $1", &[key]),
                }
                .map_err(failed("cannot write the identity"))?;
            }
            txn.commit().map_err(failed("cannot write the identity"))
        })
    }

    /// Appends an audit record after the newest; returns its position.
    pub(crate) fn append_audit(&self, record: &[u8]) -> Result<u64, StoreError> {
        self.with(|client| {
            let row = client
                .query_one(
                    "INSERT INTO sika_audit (position, record) \
                     SELECT coalesce(max(position), 0) + 1, $1 FROM sika_audit RETURNING position",
                    &[&record],
                )
                .map_err(failed("cannot append to the audit log"))?;
            u64::try_from(row.get::<_, i64>(0))
                .map_err(|_| StoreError::OutOfRange("a negative audit position"))
        })
    }
}

/// Appends a batch of entries, in its order. An entry written already (a
/// batch retried) is kept as it was.
fn insert_entries(
    txn: &mut postgres::Transaction<'_>,
    stack: &str,
    batch: &[Arc<RequestLogEntry>],
) -> Result<(), StoreError> {
    let column = |f: fn(&RequestLogEntry) -> Option<&str>| batch.iter().map(|e| f(e)).collect::<Vec<_>>();
    let ids = column(|e| Some(&e.id));
    let organizations = column(|e| Some(&e.organization));
    let keys = column(|e| e.api_key_id.as_deref());
    let methods = column(|e| Some(&e.method));
    let paths = column(|e| Some(&e.path));
    let requests = column(|e| e.request_body.as_deref());
    let responses = column(|e| e.response_body.as_deref());
    let statuses: Vec<i32> = batch.iter().map(|e| i32::from(e.status)).collect();
    let durations: Vec<i64> =
        batch.iter().map(|e| i64::try_from(e.duration_us).unwrap_or(i64::MAX)).collect();
    let created: Vec<i64> = batch.iter().map(|e| e.created_at).collect();
    txn.execute(
        &format!(
            "INSERT INTO sika_requests (stack, {REQUEST_COLUMNS}) \
             SELECT $1, {REQUEST_COLUMNS} FROM unnest($2::text[], $3::text[], $4::text[], \
             $5::text[], $6::text[], $7::int4[], $8::int8[], $9::text[], $10::text[], $11::int8[]) \
             WITH ORDINALITY AS t({REQUEST_COLUMNS}, n) ORDER BY n \
             ON CONFLICT (stack, id) DO NOTHING"
        ),
        &[
            &stack,
            &ids,
            &organizations,
            &keys,
            &methods,
            &paths,
            &statuses,
            &durations,
            &requests,
            &responses,
            &created,
        ],
    )
    .map_err(failed("cannot write the request log"))?;
    Ok(())
}

/// Keeps each organization over its retention to its newest
/// `retention.count` entries (by `seq`), and the stack to entries younger
/// than `retention.max_age_ms`, keeping `counts` up to date.
fn trim(
    txn: &mut postgres::Transaction<'_>,
    stack: &str,
    counts: &mut HashMap<String, u64>,
    retention: Retention,
) -> Result<(), StoreError> {
    let keep = i64::try_from(retention.count).unwrap_or(i64::MAX);
    for (organization, count) in counts.iter_mut().filter(|(_, count)| **count > retention.count) {
        txn.execute(
            "DELETE FROM sika_requests WHERE stack = $1 AND organization = $2 \
             AND seq <= (SELECT seq FROM sika_requests WHERE stack = $1 AND organization = $2 \
             ORDER BY seq DESC OFFSET $3 LIMIT 1)",
            &[&stack, organization, &keep],
        )
        .map_err(failed("cannot trim the request log"))?;
        *count = retention.count;
    }
    let oldest = chrono::Utc::now().timestamp_millis().saturating_sub(retention.max_age_ms);
    let aged = txn
        .query(
            "DELETE FROM sika_requests WHERE stack = $1 AND created_at < $2 RETURNING organization",
            &[&stack, &oldest],
        )
        .map_err(failed("cannot trim the request log"))?;
    for row in &aged {
        if let Some(count) = counts.get_mut(row.get::<_, &str>(0)) {
            *count = count.saturating_sub(1);
        }
    }
    Ok(())
}

/// Each organization's number of entries in a stack's request log.
fn count_by_organization(
    txn: &mut postgres::Transaction<'_>,
    stack: &str,
) -> Result<HashMap<String, u64>, StoreError> {
    let rows = txn
        .query(
            "SELECT organization, count(*) FROM sika_requests WHERE stack = $1 GROUP BY organization",
            &[&stack],
        )
        .map_err(failed("cannot count the request log"))?;
    Ok(rows
        .iter()
        .map(|row| (row.get::<_, String>(0), u64::try_from(row.get::<_, i64>(1)).unwrap_or(0)))
        .collect())
}

/// One stack's request log in `sika_requests`, on a connection of its own:
/// the node's log writer appends batches through one, and readers find
/// entries through another, so a lookup never waits behind a batch.
pub(crate) struct PgRequests {
    connection: PgConnection,
    stack: String,
}

/// How many entries each organization has in a stack's request log, as
/// the log writer last counted them (`None`: count again), so trimming by
/// count runs only for an organization over its retention, not on every
/// batch (finding the newest N is a scan of N index entries).
pub(crate) type Counts = Option<HashMap<String, u64>>;

const REQUEST_COLUMNS: &str = "id, organization, api_key_id, method, path, status, duration_us, request_body, response_body, created_at";

impl PgRequests {
    pub(crate) fn open(url: &str, stack: &str) -> Result<PgRequests, StoreError> {
        let requests = PgRequests { connection: PgConnection::new(url), stack: stack.to_string() };
        requests.connection.with(|_| Ok(()))?;
        Ok(requests)
    }

    /// Writes a batch in one transaction and trims the log to its
    /// retention (`trim`), keeping `counts` up to date; a failed write
    /// leaves them unknown until the next one.
    pub(crate) fn write(
        &self,
        batch: &[Arc<RequestLogEntry>],
        retention: Retention,
        counts: &mut Counts,
    ) -> Result<(), StoreError> {
        let stack = self.stack.as_str();
        let known = counts.take();
        let written = self.connection.with(move |client| {
            let mut txn = client.transaction().map_err(failed("cannot write the request log"))?;
            insert_entries(&mut txn, stack, batch)?;
            // Counted once (this batch included), then kept up to date.
            let mut counts = match known {
                Some(mut counts) => {
                    for entry in batch {
                        let count = counts.entry(entry.organization.clone()).or_default();
                        *count = count.saturating_add(1);
                    }
                    counts
                }
                None => count_by_organization(&mut txn, stack)?,
            };
            trim(&mut txn, stack, &mut counts, retention)?;
            txn.commit().map_err(failed("cannot write the request log"))?;
            Ok(counts)
        })?;
        *counts = Some(written);
        Ok(())
    }

    /// The entry with this request id, if the log keeps it.
    pub(crate) fn find(&self, id: &str) -> Result<Option<RequestLogEntry>, StoreError> {
        let stack = self.stack.as_str();
        self.connection.with(|client| {
            let row = client
                .query_opt(
                    &format!("SELECT {REQUEST_COLUMNS} FROM sika_requests WHERE stack = $1 AND id = $2"),
                    &[&stack, &id],
                )
                .map_err(failed("cannot read the request log"))?;
            let Some(row) = row else { return Ok(None) };
            Ok(Some(RequestLogEntry {
                id: row.get(0),
                organization: row.get(1),
                api_key_id: row.get(2),
                method: row.get(3),
                path: row.get(4),
                status: u16::try_from(row.get::<_, i32>(5))
                    .map_err(|_| StoreError::OutOfRange("a logged status"))?,
                duration_us: u64::try_from(row.get::<_, i64>(6))
                    .map_err(|_| StoreError::OutOfRange("a negative logged duration"))?,
                request_body: row.get(7),
                response_body: row.get(8),
                created_at: row.get(9),
            }))
        })
    }
}
