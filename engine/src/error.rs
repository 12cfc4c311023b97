//! The engine's errors. Each is a stable, matchable case; the API layer maps
//! them to HTTP statuses and codes in one place, and words them: a refusal
//! here names the command's field as a [`Field`], what is wrong with it as
//! a [`Problem`], and amounts as integers in their currency's minor units,
//! never as a wire path or formatted money.

use crate::money::MoneyError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    #[error(transparent)]
    Money(#[from] MoneyError),

    /// A field of a command is invalid.
    #[error("invalid {field:?}: {problem:?}")]
    Invalid { field: Field, problem: Problem },

    /// An organization account would go negative: amounts in minor units
    /// of `currency`.
    #[error("insufficient funds: {available} {currency} available, {required} required (minor units)")]
    InsufficientFunds { available: i128, required: i128, currency: String },

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

    /// A live key's spend cap would be exceeded: amounts in US cents.
    #[error(
        "a payout of {attempted_usd_cents} US cents would exceed the key's {cap:?} cap of {limit_usd_cents}"
    )]
    SpendCapExceeded { cap: SpendCap, limit_usd_cents: i128, attempted_usd_cents: i128 },

    /// A refund asks for more than its payment has left to give back
    /// (`refundable`, minor units of `currency`), or (`payment_completed`
    /// false, `refundable` 0) its payment is not completed.
    #[error(
        "not refundable: {refundable} {currency} refundable (minor units); payment completed: {payment_completed}"
    )]
    NotRefundable { payment_completed: bool, refundable: i128, currency: String },

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

/// The field of a command a refusal is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// A transfer's amount.
    Amount,
    /// A transfer's accounts.
    Account,
    /// The transfers of a linked group.
    Transfers,
    /// The documents of a `PutDocuments`.
    Documents,
    /// A quote's currency to sell.
    FromCurrency,
    /// A quote's currency to buy.
    ToCurrency,
    /// A quote's fixed amount to sell.
    FromAmount,
    /// A quote's fixed amount to buy.
    ToAmount,
    /// A collection's group.
    Group,
    /// A collection's chosen id.
    Id,
    /// A benchmark's options.
    BenchOptions,
}

/// What is wrong with a [`Field`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Zero, negative, or beyond the largest amount.
    NotPositive,
    /// A transfer's debit and credit accounts are the same.
    SameAccount,
    /// A linked group holds 1 to `max` transfers.
    GroupSize { max: usize },
    /// At least one is required.
    Empty,
    /// Not a currency the node knows.
    Money(MoneyError),
    /// A quote's two currencies are the same.
    SameCurrency,
    /// The amount converts to nothing at the current rate.
    TooSmallToConvert,
    /// The group (its id) has a target that is not positive.
    GroupTarget { group: String },
    /// A chosen collection id that is not new.
    NotNew { id: String },
    /// A benchmark needs at least 2 accounts, 1 transfer and a batch of 1.
    BenchTooSmall,
}

/// A live key's spend-cap window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SpendCap {
    PerTransaction,
    Daily,
    Monthly,
}

impl EngineError {
    /// `Invalid` on `field` because of `problem`.
    pub fn invalid(field: Field, problem: Problem) -> EngineError {
        EngineError::Invalid { field, problem }
    }
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
    redb::SetDurabilityError,
    redb::CompactionError
);
