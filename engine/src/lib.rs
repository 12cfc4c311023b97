//! # sika-engine
//!
//! Sika's double-entry ledger on redb. Callers submit [`Command`]s; one
//! writer thread applies whatever is queued as a batch, makes it durable
//! with a single fsync of the write-ahead log, and only then answers; a
//! checkpointer writes acknowledged batches into redb in the background.
//! Reads use [`Snapshot`]s and never wait for the writer.
//!
//! ```
//! use sika_engine::{Command, Engine, EngineConfig, Outcome};
//!
//! let engine = Engine::open(EngineConfig::new(None)).unwrap();
//! let applied = engine
//!     .execute_blocking(Command::Deposit {
//!         organization: "org_1".into(),
//!         currency: "USD".into(),
//!         amount: 2_500,
//!         external_reference: None,
//!     })
//!     .unwrap();
//! assert!(matches!(applied.outcome, Outcome::Deposit(_)));
//! let account = engine.read().unwrap().organization_account("org_1", "USD").unwrap().unwrap();
//! assert_eq!(account.balances().unwrap().available, 2_500);
//! engine.shutdown();
//! ```

// Every amount and counter uses checked arithmetic: an overflow is an
// `EngineError::Overflow`, never a wrap or a panic. The lint keeps it so;
// tests may compute freely.
#![cfg_attr(not(test), warn(clippy::arithmetic_side_effects))]

mod account_cache;
pub mod backup;
pub mod balance_changes;
pub mod bench;
pub mod clock;
pub mod commands;
pub mod committed;
pub mod digest;
pub mod disputes;
mod durable;
mod engine;
pub mod error;
pub mod events;
pub mod faults;
pub mod footprint;
pub mod format;
pub mod id_parts;
mod idempotency;
pub mod ids;
pub mod ledger;
pub mod money;
pub mod movements;
pub mod orders;
pub mod outcome;
pub mod postgres;
pub mod rail;
pub mod rates;
pub mod records;
pub mod refunds;
pub mod resource_id;
pub mod storage;
pub mod stored_payout;
pub mod timeline;
pub mod verify;
mod view;
pub mod wal;
mod writer;

pub use commands::{Applied, Command, Document, Expected, NewEvent, Outcome, QuoteAmount};
pub use committed::{Committed, Effects, MovementTouched};
pub use engine::{
    AccountEntries, Admission, CheckpointHold, DueJobs, Engine, EngineConfig, EngineStats, MovementKind,
    OpenMovement, Pending, PendingAll, Snapshot, WriterHold,
};
pub use error::{EngineError, Field, Problem, SpendCap};
pub use events::EventKind;
pub use ledger::TransferSpec;
pub use money::{Currency, Money, MoneyError};
pub use postgres::PostgresConfig;
pub use rail::Rail;
pub use records::*;
pub use resource_id::{CollectionId, OrderId, PayoutId, RefundId};

/// The most commands the writer applies in one commit.
pub const BATCH_COMMANDS_MAX: usize = 8190;
/// Commands that may wait for the writer before submitters wait too.
pub const QUEUE_CAPACITY: usize = 16_384;
/// The most transfers in one linked group.
pub const TRANSFERS_PER_COMMAND_MAX: usize = 64;

/// Gives the calling thread a lower scheduling weight (nice 10), for
/// background work that nobody waits on (the checkpointer, the request
/// log), so the threads that answer requests preempt it.
pub fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain syscalls on the calling thread's own id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}
