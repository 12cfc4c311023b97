//! What both stacks share: organizations, team members, their invitations
//! and sessions, the operator token, the operator's audit log and the
//! node's own secret. Kept in `node.redb` in the data directory; everything
//! but the audit log is cached in memory for authentication.
//!
//! The rules about who may do what to whom live in `domain::members`; this
//! module stores and finds.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, RwLock};

use base64::Engine as _;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{Deserialize, Serialize};
use sika_engine::format::{Steps, stamp_only};
use subtle::ConstantTimeEq;

use crate::store::postgres::{IdentityChange, Loaded, PgIdentity};

pub(crate) const IDENTITY: TableDefinition<&str, &[u8]> = TableDefinition::new("identity");
/// The email outbox (`domain::emails`): every key starting `mail`. Kept
/// out of `IDENTITY`, which is read whole into the cache after each write;
/// with `--store` its rows live in PostgreSQL's identity table like the rest.
pub(crate) const EMAILS: TableDefinition<&str, &[u8]> = TableDefinition::new("emails");
/// The operator's audit log, keyed by a sequence number (newest last).
const AUDIT: TableDefinition<u64, &[u8]> = TableDefinition::new("audit");

/// How long an invitation can be accepted.
pub(crate) const INVITATION_TTL_MS: i64 = 7 * 24 * 3600 * 1000;

/// The upgrade path of the node's identity database (`node.redb`): format 3
/// gave members a password and sessions an expiry
/// (`domain::identity_format::members_and_sessions`); formats 4 to 30
/// changed only the ledgers and the request logs.
pub(crate) const IDENTITY_STEPS: Steps = [
    stamp_only,
    stamp_only,
    crate::domain::identity_format::members_and_sessions,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum Role {
    Owner,
    Admin,
    Developer,
    Viewer,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Organization {
    pub id: String,
    pub name: String,
    pub owner_member_id: String,
    pub suspended: bool,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Member {
    pub id: String,
    pub organization: String,
    pub name: String,
    /// Trimmed and in lower case.
    pub email: String,
    pub role: Role,
    pub created_at: i64,
    /// The argon2id hash (PHC string); `None` until an invitation is accepted.
    pub password_hash: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Session {
    pub token_hash: [u8; 32],
    pub member_id: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// An invitation to set a password; only its hash is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Invitation {
    pub token_hash: [u8; 32],
    pub member_id: String,
    pub created_at: i64,
    pub expires_at: i64,
}

impl Session {
    /// A new session for `member_id`, good for `ttl_ms`, and its token
    /// (shown once; only its hash is kept).
    pub(crate) fn issue(member_id: &str, now: i64, ttl_ms: i64) -> (String, Session) {
        let token = secret_token("sess_");
        let session = Session {
            token_hash: hash_secret(&token),
            member_id: member_id.to_string(),
            created_at: now,
            expires_at: now.saturating_add(ttl_ms),
        };
        (token, session)
    }
}

impl Invitation {
    /// A new invitation for `member_id`, good for `ttl_ms`, and its token
    /// (shown once; only its hash is kept).
    pub(crate) fn issue(member_id: &str, now: i64, ttl_ms: i64) -> (String, Invitation) {
        let token = secret_token("inv_");
        let invitation = Invitation {
            token_hash: hash_secret(&token),
            member_id: member_id.to_string(),
            created_at: now,
            expires_at: now.saturating_add(ttl_ms),
        };
        (token, invitation)
    }
}

/// One operator action in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct AuditRecord {
    pub id: String,
    pub action: String,
    pub target: String,
    /// `live` or `sandbox`; `None` for node-wide actions.
    pub stack: Option<String>,
    pub succeeded: bool,
    pub detail: Option<String>,
    pub created_at: i64,
}

/// A password reset (`rst_…`): only its hash is stored; used once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct PasswordReset {
    pub token_hash: [u8; 32],
    pub member_id: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// A member's two-factor sign-in (TOTP, RFC 6238), under `totp/{member}`:
/// a record of its own, so no stored member changes shape. Pending until
/// its first code is confirmed (`enabled_at`); only the recovery codes'
/// hashes are kept, and `last_step` refuses a code seen before.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Totp {
    pub member_id: String,
    /// The shared secret (20 bytes, RFC 4226's recommended 160 bits).
    pub secret: Vec<u8>,
    pub created_at: i64,
    pub enabled_at: Option<i64>,
    /// SHA-256 of each recovery code not yet used.
    pub recovery_hashes: Vec<[u8; 32]>,
    /// The 30-second step of the last code accepted; a code of that step
    /// or an earlier one is refused (a code works once).
    pub last_step: u64,
}

#[derive(Default)]
struct Cache {
    organizations: HashMap<String, Organization>,
    members: HashMap<String, Member>,
    sessions: HashMap<[u8; 32], Session>,
    invitations: HashMap<[u8; 32], Invitation>,
    resets: HashMap<[u8; 32], PasswordReset>,
    totps: HashMap<String, Totp>,
    admin_token_hash: [u8; 32],
    secret: Vec<u8>,
}

/// A change to the identity records, applied in one transaction.
pub(crate) enum Change {
    PutOrganization(Organization),
    PutMember(Member),
    DeleteMember(String),
    PutSession(Session),
    DeleteSession([u8; 32]),
    PutInvitation(Invitation),
    DeleteInvitation([u8; 32]),
    PutReset(PasswordReset),
    DeleteReset([u8; 32]),
    PutTotp(Totp),
    /// A member's two-factor sign-in goes (by member id).
    DeleteTotp(String),
    /// A key of the email outbox (`mail…`) and its new value (`None`
    /// deletes it), written by `domain::emails`.
    Mail(String, Option<Vec<u8>>),
}

/// The node-wide records, loaded once and kept in step with the file.
pub(crate) struct Identity {
    db: Database,
    /// With `--store`: the identity lives in PostgreSQL, written there
    /// first; `db` is this node's cache of it.
    postgres: Option<PgIdentity>,
    cache: RwLock<Cache>,
    /// Held over a check of the cache and the write that depends on it (the
    /// last owner, a unique email), so two such changes never interleave.
    changing: Mutex<()>,
    /// Failed log-ins, shared by both stacks' listeners.
    pub logins: crate::domain::ratelimit::FailureThrottle,
    /// The node's password checks (argon2id), bounded in number and memory.
    pub passwords: Arc<crate::domain::passwords::Passwords>,
}

/// Why the identity store could not be opened, read or written. redb's
/// errors stay typed sources; PostgreSQL's arrive as text from
/// `store::postgres`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum IdentityError {
    /// The file cannot be opened (the sentence says why and what to do).
    #[error("{0}")]
    Open(String),
    #[error(transparent)]
    Format(#[from] sika_engine::EngineError),
    #[error("{} holds an identity but the database given by --store has none: moving a data directory's node into PostgreSQL is not supported; start from an empty data directory", .0.display())]
    NotInPostgres(std::path::PathBuf),
    #[error("cannot {action} {}: {source}", .path.display())]
    File { action: &'static str, path: std::path::PathBuf, source: Box<redb::Error> },
    #[error(transparent)]
    Store(Box<redb::Error>),
    #[error("{0}")]
    Postgres(#[source] crate::store::error::StoreError),
    #[error("the audit log is full")]
    AuditFull,
}

/// A failed identity write inside a request is the node's fault: a 500
/// that keeps the cause for the request's log line.
impl From<IdentityError> for crate::domain::error::ApiError {
    fn from(error: IdentityError) -> Self {
        crate::domain::error::ApiError::internal_from(error)
    }
}

/// redb's many error types, as the one `redb::Error`.
fn store<E: Into<redb::Error>>(error: E) -> IdentityError {
    IdentityError::Store(Box::new(error.into()))
}

impl From<redb::Error> for IdentityError {
    fn from(error: redb::Error) -> Self {
        store(error)
    }
}

/// The secrets `sika init` prints once.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BootstrapCredentials {
    pub organization_id: String,
    pub sandbox_key: String,
    pub live_key: String,
    pub owner_session_token: String,
    pub admin_token: String,
}

/// `prefix` followed by 32 random bytes, base64url without padding.
pub(crate) fn secret_token(prefix: &str) -> String {
    let bytes: [u8; 32] = rand::random();
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

pub(crate) fn hash_secret(secret: &str) -> [u8; 32] {
    sika_engine::digest::sha256(&[secret.as_bytes()])
}

impl Identity {
    pub(crate) fn path(data_dir: &Path) -> std::path::PathBuf {
        data_dir.join("node.redb")
    }

    /// The database, for a backup's read transaction.
    pub(crate) fn database(&self) -> &Database {
        &self.db
    }

    /// Opens the identity store of an initialised data directory; with
    /// `store` (a `postgres://` URL) the identity is the database's, loaded
    /// into the local file.
    pub(crate) fn open(data_dir: &Path, store: Option<&str>) -> Result<Identity, IdentityError> {
        let path = Identity::path(data_dir);
        let db = Database::builder()
            .set_cache_size(8 * 1024 * 1024)
            .create(&path)
            .map_err(|e| IdentityError::Open(crate::store::describe_open_error(&path, e)))?;
        sika_engine::format::open(&db, &path, &IDENTITY_STEPS)?;
        let postgres = store.map(PgIdentity::open).transpose().map_err(IdentityError::Postgres)?;
        if let Some(postgres) = &postgres {
            let loaded = postgres.load().map_err(IdentityError::Postgres)?;
            if loaded.identity.is_empty() && !is_empty(&db)? {
                return Err(IdentityError::NotInPostgres(path));
            }
            refill(&db, loaded).map_err(|source| IdentityError::File {
                action: "fill",
                path: path.clone(),
                source: Box::new(source),
            })?;
        }
        let identity = Identity {
            db,
            postgres,
            cache: RwLock::new(Cache::default()),
            changing: Mutex::new(()),
            logins: crate::domain::ratelimit::FailureThrottle::log_ins(),
            passwords: Arc::default(),
        };
        identity.reload().map_err(|source| IdentityError::File {
            action: "read",
            path,
            source: Box::new(source),
        })?;
        Ok(identity)
    }

    /// Creates the first organization, its owner (with a session, and no
    /// password until an invitation is accepted) and the operator token.
    /// Returns the owner's session token and the operator token.
    pub(crate) fn bootstrap(
        &self,
        now: i64,
        session_ttl_ms: i64,
    ) -> Result<(Organization, String, String), IdentityError> {
        let (organization, member) = new_organization("My organization", "Owner", "owner@localhost", now);
        let (session_token, session) = Session::issue(&member.id, now, session_ttl_ms);
        let admin_token = secret_token("adm_");
        let secret: [u8; 32] = rand::random();
        let mut changes: Vec<IdentityChange> = [
            Change::PutOrganization(organization.clone()),
            Change::PutMember(member),
            Change::PutSession(session),
        ]
        .into_iter()
        .map(Change::entry)
        .collect();
        changes.push(("admin_token_hash".into(), Some(hash_secret(&admin_token).to_vec())));
        changes.push(("secret".into(), Some(secret.to_vec())));
        self.write(changes)?;
        Ok((organization, session_token, admin_token))
    }

    /// Runs `f` with the change lock held: `f` reads the cache, decides and
    /// returns the changes to write (or an error), which are written before
    /// the lock is let go.
    pub(crate) fn change<T, E: From<IdentityError>>(
        &self,
        f: impl FnOnce(&Identity) -> Result<(Vec<Change>, T), E>,
    ) -> Result<T, E> {
        let _held = self.changing.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (changes, value) = f(self)?;
        self.apply(changes)?;
        Ok(value)
    }

    fn apply(&self, changes: Vec<Change>) -> Result<(), IdentityError> {
        if changes.is_empty() {
            return Ok(());
        }
        self.write(changes.into_iter().map(Change::entry).collect())
    }

    /// Writes the changes to PostgreSQL (with `--store`), then to the
    /// local file, then reloads the cache.
    fn write(&self, changes: Vec<IdentityChange>) -> Result<(), IdentityError> {
        if let Some(postgres) = &self.postgres {
            postgres.write(&changes).map_err(IdentityError::Postgres)?;
        }
        let txn = self.db.begin_write().map_err(store)?;
        let mut identity_changed = false;
        {
            let mut table = txn.open_table(IDENTITY).map_err(store)?;
            let mut mail = txn.open_table(EMAILS).map_err(store)?;
            for (key, value) in changes {
                let table = if is_mail(&key) {
                    &mut mail
                } else {
                    identity_changed = true;
                    &mut table
                };
                match value {
                    Some(value) => table.insert(key.as_str(), value.as_slice()).map(|_| ()),
                    None => table.remove(key.as_str()).map(|_| ()),
                }
                .map_err(store)?;
            }
        }
        txn.commit().map_err(store)?;
        if identity_changed { Ok(self.reload()?) } else { Ok(()) }
    }

    fn reload(&self) -> Result<(), redb::Error> {
        {
            let txn = self.db.begin_write()?;
            txn.open_table(IDENTITY)?;
            txn.open_table(EMAILS)?;
            txn.open_table(AUDIT)?;
            txn.commit()?;
        }
        let txn = self.db.begin_read()?;
        let table = txn.open_table(IDENTITY)?;
        let mut cache = Cache::default();
        for entry in table.iter()? {
            let (key, value) = entry?;
            cache.load(key.value(), value.value());
        }
        if let Ok(mut current) = self.cache.write() {
            *current = cache;
        }
        Ok(())
    }

    pub(crate) fn organization(&self, id: &str) -> Option<Organization> {
        self.cache.read().ok()?.organizations.get(id).cloned()
    }

    pub(crate) fn organizations(&self) -> Vec<Organization> {
        let mut all: Vec<_> =
            self.cache.read().map(|c| c.organizations.values().cloned().collect()).unwrap_or_default();
        all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
        all
    }

    pub(crate) fn member(&self, id: &str) -> Option<Member> {
        self.cache.read().ok()?.members.get(id).cloned()
    }

    /// An organization's members, oldest first.
    pub(crate) fn members_of(&self, organization: &str) -> Vec<Member> {
        let mut found: Vec<Member> = self
            .cache
            .read()
            .map(|c| c.members.values().filter(|m| m.organization == organization).cloned().collect())
            .unwrap_or_default();
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        found
    }

    /// Every member with this (normalised) email, in any organization.
    pub(crate) fn members_by_email(&self, email: &str) -> Vec<Member> {
        let mut found: Vec<Member> = self
            .cache
            .read()
            .map(|c| c.members.values().filter(|m| m.email == email).cloned().collect())
            .unwrap_or_default();
        found.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        found
    }

    /// The member a session token acts for, while the session lasts.
    pub(crate) fn session(&self, token: &str, now: i64) -> Option<(Member, Session)> {
        let hash = hash_secret(token);
        let cache = self.cache.read().ok()?;
        let session = cache.sessions.get(&hash)?;
        if !bool::from(session.token_hash.ct_eq(&hash)) || session.expires_at <= now {
            return None;
        }
        Some((cache.members.get(&session.member_id).cloned()?, session.clone()))
    }

    /// The sessions of a member (to end them when the member goes).
    pub(crate) fn sessions_of(&self, member_id: &str) -> Vec<[u8; 32]> {
        self.cache
            .read()
            .map(|c| c.sessions.values().filter(|s| s.member_id == member_id).map(|s| s.token_hash).collect())
            .unwrap_or_default()
    }

    /// Sessions that ended before `now`, to delete as others are written.
    pub(crate) fn expired_sessions(&self, now: i64) -> Vec<[u8; 32]> {
        self.cache
            .read()
            .map(|c| c.sessions.values().filter(|s| s.expires_at <= now).map(|s| s.token_hash).collect())
            .unwrap_or_default()
    }

    /// The invitation a token names, if it has not expired.
    pub(crate) fn invitation(&self, token: &str, now: i64) -> Option<Invitation> {
        let hash = hash_secret(token);
        let cache = self.cache.read().ok()?;
        let invitation = cache.invitations.get(&hash)?;
        (bool::from(invitation.token_hash.ct_eq(&hash)) && invitation.expires_at > now)
            .then(|| invitation.clone())
    }

    /// The invitations of a member (a new one replaces them).
    pub(crate) fn invitations_of(&self, member_id: &str) -> Vec<[u8; 32]> {
        self.cache
            .read()
            .map(|c| {
                c.invitations.values().filter(|i| i.member_id == member_id).map(|i| i.token_hash).collect()
            })
            .unwrap_or_default()
    }

    /// The password reset a token names, if it has not expired.
    pub(crate) fn reset(&self, token: &str, now: i64) -> Option<PasswordReset> {
        let hash = hash_secret(token);
        let cache = self.cache.read().ok()?;
        let reset = cache.resets.get(&hash)?;
        (bool::from(reset.token_hash.ct_eq(&hash)) && reset.expires_at > now).then(|| reset.clone())
    }

    /// The password resets of a member, and those expired before `now`
    /// (a new one or a new password replaces them).
    pub(crate) fn resets_of(&self, member_id: &str, now: i64) -> Vec<[u8; 32]> {
        self.cache
            .read()
            .map(|c| {
                c.resets
                    .values()
                    .filter(|r| r.member_id == member_id || r.expires_at <= now)
                    .map(|r| r.token_hash)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A member's two-factor sign-in, pending or enabled.
    pub(crate) fn totp(&self, member_id: &str) -> Option<Totp> {
        self.cache.read().ok()?.totps.get(member_id).cloned()
    }

    /// One key of the email outbox.
    pub(crate) fn mail(&self, key: &str) -> Result<Option<Vec<u8>>, IdentityError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = txn.open_table(EMAILS).map_err(store)?;
        Ok(table.get(key).map_err(store)?.map(|v| v.value().to_vec()))
    }

    /// Up to `limit` outbox entries whose keys start with `prefix`, in key
    /// order (`newest_first`: backwards), strictly past `from` when given.
    pub(crate) fn mail_range(
        &self,
        prefix: &str,
        from: Option<&str>,
        newest_first: bool,
        limit: usize,
    ) -> Result<Vec<(String, Vec<u8>)>, IdentityError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = txn.open_table(EMAILS).map_err(store)?;
        let end = format!("{prefix}\u{10ffff}");
        let range = match (from, newest_first) {
            (Some(from), true) => table.range(prefix..from),
            (Some(from), false) => table.range(from..end.as_str()),
            (None, _) => table.range(prefix..end.as_str()),
        }
        .map_err(store)?;
        let mut out = Vec::new();
        let mut push = |entry: Result<
            (redb::AccessGuard<'_, &str>, redb::AccessGuard<'_, &[u8]>),
            redb::StorageError,
        >| {
            let (key, value) = entry.map_err(store)?;
            if Some(key.value()) != from {
                out.push((key.value().to_string(), value.value().to_vec()));
            }
            Ok::<bool, IdentityError>(out.len() >= limit)
        };
        if newest_first {
            for entry in range.rev() {
                if push(entry)? {
                    break;
                }
            }
        } else {
            for entry in range {
                if push(entry)? {
                    break;
                }
            }
        }
        Ok(out)
    }

    pub(crate) fn is_admin_token(&self, token: &str) -> bool {
        let hash = hash_secret(token);
        self.cache.read().map(|c| c.admin_token_hash.ct_eq(&hash).into()).unwrap_or(false)
    }

    /// The node's secret, used to sign pagination cursors.
    pub(crate) fn secret(&self) -> Vec<u8> {
        self.cache.read().map(|c| c.secret.clone()).unwrap_or_default()
    }

    pub(crate) fn set_suspended(
        &self,
        organization_id: &str,
        suspended: bool,
    ) -> Result<Option<Organization>, IdentityError> {
        self.change(|identity| {
            let Some(mut org) = identity.organization(organization_id) else { return Ok((vec![], None)) };
            org.suspended = suspended;
            Ok((vec![Change::PutOrganization(org.clone())], Some(org)))
        })
    }

    /// Appends an operator action to the audit log and returns its position.
    pub(crate) fn append_audit(&self, record: &AuditRecord) -> Result<u64, IdentityError> {
        let shared = match &self.postgres {
            Some(postgres) => Some(postgres.append_audit(&encode(record)).map_err(IdentityError::Postgres)?),
            None => None,
        };
        let txn = self.db.begin_write().map_err(store)?;
        let position = {
            let mut table = txn.open_table(AUDIT).map_err(store)?;
            let last = table.last().map_err(store)?.map(|(k, _)| k.value());
            let next = last.map_or(Some(1), |p| p.checked_add(1)).ok_or(IdentityError::AuditFull)?;
            let position = shared.unwrap_or(next);
            table.insert(position, encode(record).as_slice()).map_err(store)?;
            position
        };
        txn.commit().map_err(store)?;
        Ok(position)
    }

    /// Up to `limit` audit entries before `before` (all when `None`), newest first.
    pub(crate) fn audit_page(
        &self,
        before: Option<u64>,
        limit: usize,
    ) -> Result<Vec<(u64, AuditRecord)>, IdentityError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = match txn.open_table(AUDIT) {
            Ok(table) => table,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(store(e)),
        };
        let range = table.range(..before.unwrap_or(u64::MAX)).map_err(store)?;
        let mut found = Vec::with_capacity(limit);
        for entry in range.rev().take(limit) {
            let (key, value) = entry.map_err(store)?;
            if let Some(record) = decode::<AuditRecord>(value.value()) {
                found.push((key.value(), record));
            }
        }
        Ok(found)
    }
}

impl Change {
    /// The identity table's key and value this change writes (`None`
    /// deletes the key).
    fn entry(self) -> IdentityChange {
        match self {
            Change::PutOrganization(o) => (format!("org/{}", o.id), Some(encode(&o))),
            Change::PutMember(m) => (format!("member/{}", m.id), Some(encode(&m))),
            Change::DeleteMember(id) => (format!("member/{id}"), None),
            Change::PutSession(s) => (session_key(&s.token_hash), Some(encode(&s))),
            Change::DeleteSession(hash) => (session_key(&hash), None),
            Change::PutInvitation(i) => (invitation_key(&i.token_hash), Some(encode(&i))),
            Change::DeleteInvitation(hash) => (invitation_key(&hash), None),
            Change::PutReset(r) => (reset_key(&r.token_hash), Some(encode(&r))),
            Change::DeleteReset(hash) => (reset_key(&hash), None),
            Change::PutTotp(t) => (format!("totp/{}", t.member_id), Some(encode(&t))),
            Change::DeleteTotp(member_id) => (format!("totp/{member_id}"), None),
            Change::Mail(key, value) => {
                debug_assert!(is_mail(&key));
                (key, value)
            }
        }
    }
}

/// Whether the local file holds no identity yet.
fn is_empty(db: &Database) -> Result<bool, redb::Error> {
    let txn = db.begin_read()?;
    match txn.open_table(IDENTITY) {
        Ok(table) => Ok(table.len()? == 0),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Replaces the local file's identity and audit log with the database's.
fn refill(db: &Database, loaded: Loaded) -> Result<(), redb::Error> {
    let txn = db.begin_write()?;
    txn.delete_table(IDENTITY)?;
    txn.delete_table(EMAILS)?;
    txn.delete_table(AUDIT)?;
    {
        let mut identity = txn.open_table(IDENTITY)?;
        let mut mail = txn.open_table(EMAILS)?;
        for (key, value) in &loaded.identity {
            let table = if is_mail(key) { &mut mail } else { &mut identity };
            table.insert(key.as_str(), value.as_slice())?;
        }
        let mut audit = txn.open_table(AUDIT)?;
        for (position, record) in &loaded.audit {
            audit.insert(*position, record.as_slice())?;
        }
    }
    txn.commit()?;
    Ok(())
}

impl Cache {
    fn load(&mut self, key: &str, value: &[u8]) {
        if let Some(id) = key.strip_prefix("org/") {
            if let Some(org) = decode::<Organization>(value) {
                self.organizations.insert(id.to_string(), org);
            }
        } else if let Some(id) = key.strip_prefix("member/") {
            if let Some(member) = decode::<Member>(value) {
                self.members.insert(id.to_string(), member);
            }
        } else if key.starts_with("session/") {
            if let Some(session) = decode::<Session>(value) {
                self.sessions.insert(session.token_hash, session);
            }
        } else if key.starts_with("invitation/") {
            if let Some(invitation) = decode::<Invitation>(value) {
                self.invitations.insert(invitation.token_hash, invitation);
            }
        } else if key.starts_with("reset/") {
            if let Some(reset) = decode::<PasswordReset>(value) {
                self.resets.insert(reset.token_hash, reset);
            }
        } else if let Some(member_id) = key.strip_prefix("totp/") {
            if let Some(totp) = decode::<Totp>(value) {
                self.totps.insert(member_id.to_string(), totp);
            }
        } else if key == "admin_token_hash" {
            self.admin_token_hash.copy_from_slice(&value[..32.min(value.len())]);
        } else if key == "secret" {
            self.secret = value.to_vec();
        }
    }
}

/// A new organization and its first owner (no password yet).
pub(crate) fn new_organization(
    name: &str,
    owner_name: &str,
    owner_email: &str,
    now: i64,
) -> (Organization, Member) {
    let organization_id = sika_engine::ids::new_id("org");
    let member = Member {
        id: sika_engine::ids::new_id("mem"),
        organization: organization_id.clone(),
        name: owner_name.into(),
        email: owner_email.into(),
        role: Role::Owner,
        created_at: now,
        password_hash: None,
    };
    let organization = Organization {
        id: organization_id,
        name: name.into(),
        owner_member_id: member.id.clone(),
        suspended: false,
        created_at: now,
    };
    (organization, member)
}

pub(crate) fn session_key(hash: &[u8; 32]) -> String {
    format!("session/{}", hex(hash))
}

fn reset_key(hash: &[u8; 32]) -> String {
    format!("reset/{}", hex(hash))
}

/// Whether a key belongs to the email outbox (the `EMAILS` table).
fn is_mail(key: &str) -> bool {
    key.starts_with("mail")
}

fn invitation_key(hash: &[u8; 32]) -> String {
    format!("invitation/{}", hex(hash))
}

pub(crate) fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("identity records encode")
}

pub(crate) fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<T> {
    postcard::from_bytes(bytes).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
