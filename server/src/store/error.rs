//! Why a store could not be read or written: what it was doing, and the
//! typed cause (a PostgreSQL, redb or system error), so a log line or a
//! refusal can say both and nothing is flattened into a string on the way.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub(crate) enum StoreError {
    /// A statement or transaction on PostgreSQL failed.
    #[error("postgres: {doing}: {source}")]
    Postgres {
        doing: &'static str,
        #[source]
        source: postgres::Error,
    },
    /// The ledger's connection to PostgreSQL (connect and migrate) failed.
    #[error(transparent)]
    Engine(#[from] sika_engine::EngineError),
    /// A redb file could not be opened.
    #[error("{}", open_message(path, source))]
    Open {
        path: PathBuf,
        #[source]
        source: redb::DatabaseError,
    },
    /// A redb transaction failed.
    #[error("{doing}: {source}")]
    Redb {
        doing: &'static str,
        #[source]
        source: redb::Error,
    },
    /// A system call failed (a thread could not start, a file not written).
    #[error("{doing}: {source}")]
    Io {
        doing: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A stored value is outside what the node writes.
    #[error("a stored value is out of range: {0}")]
    OutOfRange(&'static str),
    /// The store refuses writes for now (the disk reserve, a reopening).
    #[error("{0}")]
    Refused(String),
}

fn open_message(path: &std::path::Path, error: &redb::DatabaseError) -> String {
    match error {
        redb::DatabaseError::DatabaseAlreadyOpen => format!(
            "the database {} is locked: another sika process is using this data directory",
            path.display()
        ),
        other => format!("cannot open {}: {other}", path.display()),
    }
}

/// The error of a failed PostgreSQL call made while `doing`.
pub(crate) fn postgres(doing: &'static str) -> impl Fn(postgres::Error) -> StoreError {
    move |source| StoreError::Postgres { doing, source }
}
