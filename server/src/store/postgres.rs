//! The node's identity on PostgreSQL (`--store`): organizations, members,
//! sessions, invitations, the operator token's hash and the node's secret
//! in `sika_identity`, the operator's audit log in `sika_audit`. Every node
//! on the database loads them when it opens, so a standby that takes over
//! knows the same people and tokens. `domain::identity` keeps its local
//! file as a cache and writes here first.
//!
//! The `postgres` client drives its own runtime, so each call runs on a
//! thread of its own (`off_runtime`), away from the node's.

use std::sync::Mutex;

use postgres::Client;
use sika_engine::postgres::{connect_migrated, off_runtime};

/// One key's new value, or `None` to delete it.
pub(crate) type IdentityChange = (String, Option<Vec<u8>>);

/// What `PgIdentity::load` reads: every identity row, and the audit log.
pub(crate) struct Loaded {
    pub identity: Vec<(String, Vec<u8>)>,
    pub audit: Vec<(u64, Vec<u8>)>,
}

pub(crate) struct PgIdentity {
    url: String,
    /// Reconnected on the next call after a failure.
    client: Mutex<Option<Client>>,
}

fn failed(context: &str) -> impl Fn(postgres::Error) -> String + '_ {
    move |e| format!("postgres: {context}: {e}")
}

impl Drop for PgIdentity {
    fn drop(&mut self) {
        // The client's own runtime cannot be dropped inside the node's.
        let client = self.client.get_mut().ok().and_then(Option::take);
        off_runtime(move || drop(client));
    }
}

impl PgIdentity {
    pub(crate) fn open(url: &str) -> Result<PgIdentity, String> {
        let identity = PgIdentity { url: url.to_string(), client: Mutex::new(None) };
        identity.with(|_| Ok(()))?;
        Ok(identity)
    }

    /// Runs `f` with a connection, off the async runtime; a failed call
    /// drops the connection so the next one reconnects.
    fn with<R: Send>(&self, f: impl FnOnce(&mut Client) -> Result<R, String> + Send) -> Result<R, String> {
        let mut slot = self.client.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let url = &self.url;
        let current = slot.take();
        let (client, result) = off_runtime(move || {
            let mut client = match current {
                Some(client) => client,
                None => match connect_migrated(url) {
                    Ok(client) => client,
                    Err(e) => return (None, Err(e.to_string())),
                },
            };
            let result = f(&mut client);
            (result.is_ok().then_some(client), result)
        });
        *slot = client;
        result
    }

    /// Whether a node's identity is there already (a node joining the
    /// database loads it instead of initialising a new one).
    pub(crate) fn exists(&self) -> Result<bool, String> {
        self.with(|client| {
            let row = client
                .query_opt("SELECT 1 FROM sika_identity WHERE key = 'admin_token_hash'", &[])
                .map_err(failed("cannot read the identity"))?;
            Ok(row.is_some())
        })
    }

    pub(crate) fn load(&self) -> Result<Loaded, String> {
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
                let position =
                    u64::try_from(row.get::<_, i64>(0)).map_err(|_| "a negative audit position")?;
                audit.push((position, row.get::<_, Vec<u8>>(1)));
            }
            txn.commit().map_err(failed("cannot read the identity"))?;
            Ok(Loaded { identity, audit })
        })
    }

    /// Writes the changes in one transaction.
    pub(crate) fn write(&self, changes: &[IdentityChange]) -> Result<(), String> {
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
    pub(crate) fn append_audit(&self, record: &[u8]) -> Result<u64, String> {
        self.with(|client| {
            let row = client
                .query_one(
                    "INSERT INTO sika_audit (position, record) \
                     SELECT coalesce(max(position), 0) + 1, $1 FROM sika_audit RETURNING position",
                    &[&record],
                )
                .map_err(failed("cannot append to the audit log"))?;
            u64::try_from(row.get::<_, i64>(0)).map_err(|_| "a negative audit position".to_string())
        })
    }
}
