//! A backup: a consistent copy of every database of a data directory (both
//! ledgers, `node.redb`, the request logs) plus the operator token file,
//! into a new directory that `sika verify` passes on and `sika serve`
//! serves from.
//!
//! Online (the node running), each database is copied through one redb
//! read transaction, after the ledger's checkpointer has written every
//! batch acknowledged so far into its file: so the copy holds every write
//! acknowledged before the backup began. Offline, each ledger's log is
//! replayed first, as opening it would.

use std::path::Path;
use std::time::Instant;

use redb::ReadableDatabase;
use sika_api::backup::{Backup, BackupFile};

use crate::domain::error::ApiError;
use crate::domain::identity::Identity;
use crate::domain::stack::Stack;

const LEDGERS: [&str; 2] = ["live", "sandbox"];
/// The operator token's file, copied so the restored node's console needs
/// no flags either.
const TOKEN_FILE: &str = "admin-token";

/// Makes `dest` a new, private, empty directory (or accepts an empty one).
fn prepare(dest: &Path) -> Result<(), String> {
    if !dest.is_absolute() {
        return Err(format!("the backup's destination must be an absolute path, not {}", dest.display()));
    }
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(format!("{} is not empty; back up into a new directory", dest.display()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest).map_err(|e| format!("cannot create {}: {e}", dest.display()))?;
        }
        Err(e) => return Err(format!("cannot use {}: {e}", dest.display())),
    }
    private(dest, 0o700)
}

fn private(path: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot restrict {}: {e}", path.display()))
}

fn copy(database: &impl ReadableDatabase, dest: &Path, name: &str) -> Result<BackupFile, String> {
    let path = dest.join(name);
    let copied = sika_engine::backup::copy_database(database, &path).map_err(|e| format!("{name}: {e}"))?;
    private(&path, 0o600)?;
    Ok(BackupFile { name: name.to_string(), tables: copied.tables, entries: copied.entries })
}

fn copy_token(data_dir: &Path, dest: &Path) -> Result<(), String> {
    let from = data_dir.join(TOKEN_FILE);
    if from.exists() {
        let to = dest.join(TOKEN_FILE);
        std::fs::copy(&from, &to).map_err(|e| format!("cannot copy {}: {e}", from.display()))?;
        private(&to, 0o600)?;
    }
    Ok(())
}

fn finish(dest: &Path, online: bool, files: Vec<BackupFile>, started: Instant) -> Backup {
    Backup {
        to: dest.display().to_string(),
        online,
        files,
        duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    }
}

/// Why a node on PostgreSQL is not backed up here: its data directory
/// holds only caches of the database.
const ON_POSTGRES: &str = "this node keeps its state in PostgreSQL (--store): back up the database with its own tools (pg_dump, or the provider's snapshots and point-in-time recovery); the data directory holds only caches";

/// Backs up a running node's databases (blocking: call it off the async
/// threads). Writers go on meanwhile.
pub(crate) fn online(
    stacks: [&Stack; 2],
    identity: &Identity,
    data_dir: &Path,
    dest: &Path,
) -> Result<Backup, ApiError> {
    if stacks[0].config.store.is_some() {
        return Err(ApiError::new(sika_api::ErrorCode::InvalidState, ON_POSTGRES));
    }
    prepare(dest).map_err(|message| ApiError::validation("to", message))?;
    copy_online(stacks, identity, data_dir, dest).map_err(|message| {
        tracing::error!(%message, to = %dest.display(), "the backup failed");
        ApiError::internal_from(message)
    })
}

fn copy_online(
    stacks: [&Stack; 2],
    identity: &Identity,
    data_dir: &Path,
    dest: &Path,
) -> Result<Backup, String> {
    let started = Instant::now();
    let mut files = Vec::new();
    for stack in stacks {
        // Waits until the file holds every batch acknowledged so far.
        let database = stack.engine.database().map_err(|e| e.to_string())?;
        files.push(copy(&*database, dest, &format!("{}.redb", stack.kind.name()))?);
    }
    files.push(copy(identity.database(), dest, "node.redb")?);
    for stack in stacks {
        let requests = stack.request_log.database().ok_or("the request log is being reopened; try again")?;
        files.push(copy(&*requests, dest, &format!("{}-requests.redb", stack.kind.name()))?);
    }
    copy_token(data_dir, dest)?;
    Ok(finish(dest, true, files, started))
}

/// Whether a node holds the data directory's databases open.
pub fn in_use(data_dir: &Path) -> Result<bool, String> {
    let path = Identity::path(data_dir);
    if !path.exists() {
        return Err(format!("{} is not an initialised data directory", data_dir.display()));
    }
    match redb::Database::create(&path) {
        Ok(_) => Ok(false),
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => Ok(true),
        Err(e) => Err(format!("cannot open {}: {e}", path.display())),
    }
}

/// Backs up a stopped node's data directory (see [`in_use`]): each
/// ledger's log is replayed into its file first (as opening it does), then
/// every database copied. A running node's lock fails it.
pub fn offline(data_dir: &Path, dest: &Path) -> Result<Backup, String> {
    // Only a node on PostgreSQL keeps a lease name in its data directory.
    if data_dir.join("node-id").exists() {
        return Err(ON_POSTGRES.to_string());
    }
    let started = Instant::now();
    prepare(dest)?;
    let mut names: Vec<String> = Vec::new();
    for ledger in LEDGERS {
        let path = data_dir.join(format!("{ledger}.redb"));
        sika_engine::wal::replay_file(&path, &crate::domain::checkout_format::LEDGER_STEPS)
            .map_err(|e| format!("cannot replay {}: {e}", path.display()))?;
        names.push(format!("{ledger}.redb"));
    }
    names.push("node.redb".into());
    names.extend(LEDGERS.iter().map(|l| format!("{l}-requests.redb")));
    let mut files = Vec::new();
    for name in names {
        let path = data_dir.join(&name);
        if !path.exists() {
            continue;
        }
        let db = redb::Database::create(&path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
        files.push(copy(&db, dest, &name)?);
    }
    copy_token(data_dir, dest)?;
    Ok(finish(dest, false, files, started))
}
