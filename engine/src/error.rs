//! The engine's errors. Each is a stable, matchable case; the API layer maps
//! them to HTTP statuses and codes in one place.

use crate::money::MoneyError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error(transparent)]
    Money(#[from] MoneyError),

    /// A field of a command is invalid; `field` names it.
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },

    /// An organization account would go negative.
    #[error("insufficient funds: {available} {currency} available, {required} required")]
    InsufficientFunds { available: String, required: String, currency: String },

    /// The same externalReference was used with a different request.
    #[error("externalReference '{reference}' was already used with a different request")]
    Duplicate { reference: String },

    #[error("{resource} '{id}' not found")]
    NotFound { resource: &'static str, id: String },

    #[error("quote '{0}' has expired; request a new quote")]
    QuoteExpired(String),

    #[error("quote '{0}' was already executed; a quote can be executed only once")]
    QuoteExecuted(String),

    /// A pending transfer was already posted or voided.
    #[error("transfer {0} is not pending")]
    NotPending(u64),

    #[error("no rate available from {from} to {to}")]
    NoRate { from: String, to: String },

    /// A live key's spend cap would be exceeded; `cap` names it.
    #[error("this payout of {attempted_usd} USD would exceed the key's {cap} cap of {limit_usd} USD")]
    SpendCapExceeded { cap: String, limit_usd: String, attempted_usd: String },

    /// The resource is not in a state that allows this.
    #[error("{0}")]
    InvalidState(String),

    /// A conditional save found a document changed since it was read.
    #[error("{0} changed concurrently; read it again")]
    Conflict(String),

    /// A document write named a collection of the engine's own records
    /// (payouts, collections, orders…), which only the engine writes.
    #[error("'{collection}' holds the engine's own records; a document cannot be written there")]
    EngineOwned { collection: String },

    /// The database could not be read or written.
    #[error("storage error: {0}")]
    Storage(String),

    /// A stored record could not be decoded or breaks an invariant.
    #[error("corrupt database: {0}")]
    Corrupt(String),

    /// The writer has stopped (the node is shutting down).
    #[error("the ledger writer is not running")]
    Unavailable,

    /// Another node holds the stack's writer lease (PostgreSQL backend):
    /// this node is a standby; the text names the holder.
    #[error("standby: {0}")]
    Standby(String),

    /// A total or counter the ledger keeps would leave its type's range;
    /// the text names it. A request's own amounts are bounded before they
    /// are summed (an amount too large is `Money(MoneyError::Overflow)`),
    /// so this is the node's failure, never the caller's, and nothing is
    /// written.
    #[error("arithmetic overflow: {0}")]
    Overflow(&'static str),
}

macro_rules! storage_from {
    ($($t:ty),*) => {$(
        impl From<$t> for EngineError {
            fn from(e: $t) -> Self {
                EngineError::Storage(e.to_string())
            }
        }
    )*};
}

storage_from!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);
