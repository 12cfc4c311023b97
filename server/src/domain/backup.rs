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

use std::path::{Path, PathBuf};
use std::time::Instant;

use redb::ReadableDatabase;
use sika_api::backup::{Backup, BackupFile};
use sika_engine::{Engine, EngineError};

use crate::domain::error::ApiError;
use crate::domain::identity::Identity;
use crate::domain::stack_kind::StackKind;
use crate::store::request_log::RequestLog;

/// Why a backup was not made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BackupError {
    #[error("the backup's destination must be an absolute path, not {}", .0.display())]
    Relative(PathBuf),
    #[error("{} is not empty; back up into a new directory", .0.display())]
    NotEmpty(PathBuf),
    #[error("{} is not an initialised data directory", .0.display())]
    NotInitialised(PathBuf),
    #[error("{ON_POSTGRES}")]
    OnPostgres,
    #[error("the request log is being reopened; try again")]
    RequestLogReopening,
    #[error("cannot {action} {}: {source}", .path.display())]
    Io { action: &'static str, path: PathBuf, source: std::io::Error },
    #[error("cannot open {}: {source}", .path.display())]
    Open { path: PathBuf, source: redb::DatabaseError },
    #[error("{name}: {source}")]
    Copy { name: String, source: EngineError },
    #[error("cannot replay {}: {source}", .path.display())]
    Replay { path: PathBuf, source: EngineError },
    #[error("cannot read the {stack} ledger: {source}")]
    Ledger { stack: &'static str, source: EngineError },
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> BackupError {
    let path = path.to_path_buf();
    move |source| BackupError::Io { action, path, source }
}

/// One stack's databases as a running node holds them.
pub(crate) struct Source<'a> {
    pub stack: StackKind,
    pub engine: &'a Engine,
    pub requests: &'a RequestLog,
}

/// What an online backup copies: both stacks, the identity and the
/// operator token beside them.
pub(crate) struct Node<'a> {
    pub stacks: [Source<'a>; 2],
    pub identity: &'a Identity,
    pub data_dir: &'a Path,
    /// With `--store` the state is PostgreSQL's, not these files'.
    pub on_postgres: bool,
}

const LEDGERS: [&str; 2] = ["live", "sandbox"];
/// The operator token's file, copied so the restored node's console needs
/// no flags either.
const TOKEN_FILE: &str = "admin-token";

/// Makes `dest` a new, private, empty directory (or accepts an empty one).
fn prepare(dest: &Path) -> Result<(), BackupError> {
    if !dest.is_absolute() {
        return Err(BackupError::Relative(dest.to_path_buf()));
    }
    match std::fs::read_dir(dest) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(BackupError::NotEmpty(dest.to_path_buf()));
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dest).map_err(io("create", dest))?;
        }
        Err(e) => return Err(io("use", dest)(e)),
    }
    private(dest, 0o700)
}

fn private(path: &Path, mode: u32) -> Result<(), BackupError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io("restrict", path))
}

fn copy(database: &impl ReadableDatabase, dest: &Path, name: &str) -> Result<BackupFile, BackupError> {
    let path = dest.join(name);
    let copied = sika_engine::backup::copy_database(database, &path)
        .map_err(|source| BackupError::Copy { name: name.to_string(), source })?;
    private(&path, 0o600)?;
    Ok(BackupFile { name: name.to_string(), tables: copied.tables, entries: copied.entries })
}

fn copy_token(data_dir: &Path, dest: &Path) -> Result<(), BackupError> {
    let from = data_dir.join(TOKEN_FILE);
    if from.exists() {
        let to = dest.join(TOKEN_FILE);
        std::fs::copy(&from, &to).map_err(io("copy", &from))?;
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
pub(crate) fn online(node: &Node, dest: &Path) -> Result<Backup, ApiError> {
    if node.on_postgres {
        return Err(ApiError::new(sika_api::ErrorCode::InvalidState, ON_POSTGRES));
    }
    prepare(dest).map_err(|error| ApiError::validation("to", error.to_string()))?;
    copy_online(node, dest).map_err(|error| {
        tracing::error!(%error, to = %dest.display(), "the backup failed");
        ApiError::internal_from(error)
    })
}

fn copy_online(node: &Node, dest: &Path) -> Result<Backup, BackupError> {
    let started = Instant::now();
    let mut files = Vec::new();
    for source in &node.stacks {
        let stack = source.stack.name();
        // Waits until the file holds every batch acknowledged so far.
        let database = source.engine.database().map_err(|source| BackupError::Ledger { stack, source })?;
        files.push(copy(&*database, dest, &format!("{stack}.redb"))?);
    }
    files.push(copy(node.identity.database(), dest, "node.redb")?);
    for source in &node.stacks {
        let requests = source.requests.database().ok_or(BackupError::RequestLogReopening)?;
        files.push(copy(&*requests, dest, &format!("{}-requests.redb", source.stack.name()))?);
    }
    copy_token(node.data_dir, dest)?;
    Ok(finish(dest, true, files, started))
}

/// Whether a node holds the data directory's databases open.
pub fn in_use(data_dir: &Path) -> Result<bool, BackupError> {
    let path = Identity::path(data_dir);
    if !path.exists() {
        return Err(BackupError::NotInitialised(data_dir.to_path_buf()));
    }
    match redb::Database::create(&path) {
        Ok(_) => Ok(false),
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => Ok(true),
        Err(source) => Err(BackupError::Open { path, source }),
    }
}

/// Backs up a stopped node's data directory (see [`in_use`]): each
/// ledger's log is replayed into its file first (as opening it does), then
/// every database copied. A running node's lock fails it.
pub fn offline(data_dir: &Path, dest: &Path) -> Result<Backup, BackupError> {
    // Only a node on PostgreSQL keeps a lease name in its data directory.
    if data_dir.join("node-id").exists() {
        return Err(BackupError::OnPostgres);
    }
    let started = Instant::now();
    prepare(dest)?;
    let mut names: Vec<String> = Vec::new();
    for ledger in LEDGERS {
        let path = data_dir.join(format!("{ledger}.redb"));
        sika_engine::wal::replay_file(&path, &crate::domain::checkout_format::LEDGER_STEPS)
            .map_err(|source| BackupError::Replay { path: path.clone(), source })?;
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
        let db = redb::Database::create(&path)
            .map_err(|source| BackupError::Open { path: path.clone(), source })?;
        files.push(copy(&db, dest, &name)?);
    }
    copy_token(data_dir, dest)?;
    Ok(finish(dest, false, files, started))
}
