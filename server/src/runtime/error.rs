//! Why the node could not start, or stopped: what it was doing and the
//! typed cause, written for the operator reading the command line or the
//! journal.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum NodeError {
    /// A file or directory of the data directory could not be made,
    /// read or written.
    #[error("cannot {doing} {}: {source}", path.display())]
    File {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A listener could not be bound or handed to the server.
    #[error("cannot listen{what}: {source}")]
    Listen {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A signal handler could not be installed.
    #[error("cannot handle {signal}: {source}")]
    Signal {
        signal: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A stack's ledger could not be opened or written.
    #[error("cannot open {}: {source}", path.display())]
    Ledger {
        path: PathBuf,
        #[source]
        source: sika_engine::EngineError,
    },
    /// Another node holds a stack's writer lease (PostgreSQL).
    #[error("standby: {0}")]
    Standby(String),
    /// A ledger file is locked by another process.
    #[error("the database {} is locked: another sika process is using this data directory", .0.display())]
    Locked(PathBuf),
    /// A store beside the ledgers (the request log, the identity on
    /// PostgreSQL) failed.
    #[error(transparent)]
    Store(Box<dyn std::error::Error + Send + Sync>),
    /// A part of the node could not start: the identity store, a stack,
    /// its routes.
    #[error(transparent)]
    Part(Box<dyn std::error::Error + Send + Sync>),
    /// A background task stopped before it answered.
    #[error("a background task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
    /// What the node refuses to do, stated for the operator (no cause
    /// below it): a data directory already initialised, a lease lost.
    #[error("{0}")]
    Refused(String),
}

impl From<sika_engine::EngineError> for NodeError {
    fn from(source: sika_engine::EngineError) -> NodeError {
        NodeError::Ledger { path: PathBuf::new(), source }
    }
}

impl From<crate::store::error::StoreError> for NodeError {
    fn from(source: crate::store::error::StoreError) -> NodeError {
        NodeError::Store(Box::new(source))
    }
}

impl NodeError {
    /// A part of the node that could not start, with its own error.
    pub(crate) fn part(error: impl std::error::Error + Send + Sync + 'static) -> NodeError {
        NodeError::Part(Box::new(error))
    }
}
