//! The storage boundary: where the writer makes a batch durable before any
//! of its callers hears back. The embedded store appends it to the
//! write-ahead log and syncs (`wal`); the PostgreSQL backend commits it in
//! one fenced transaction (`postgres`). Everything else (applying
//! commands, the ledger's rules, the view, the redb file readers use) is
//! the same code on both: a backend only stores and reads.

use crate::error::EngineError;
use crate::postgres::PgLog;
use crate::storage::Changes;
use crate::wal::Wal;

pub(crate) enum Durable {
    /// The embedded store's write-ahead log beside the redb file.
    Wal(Wal),
    /// A PostgreSQL database; the redb file is its local cache.
    Postgres(Box<PgLog>),
}

impl Durable {
    /// Makes one batch's changes (in key order) durable. `checkpointed`
    /// waits until the redb file holds a given epoch (the log needs it to
    /// reuse a file).
    pub fn append(
        &mut self,
        epoch: u64,
        changes: &Changes<'_>,
        checkpointed: impl FnOnce(u64) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        match self {
            Durable::Wal(wal) => wal.append(epoch, changes, checkpointed),
            Durable::Postgres(log) => log.append(epoch, changes),
        }
    }
}
