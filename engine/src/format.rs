//! Format versions: every database file and every log file records the
//! version of Sika's storage format that wrote it.
//!
//! Stored records are postcard, which is not self-describing: a binary that
//! decoded another version's records would read garbage rather than fail.
//! So a file says which format wrote it, a binary refuses a file written by
//! a newer format (naming both versions), and it upgrades an older file on
//! open, one step per version, before anything reads its records.
//!
//! Format 0 is what releases before versions wrote: redb files with no
//! stamp and log files with no header. Format 1 stamps them and changes no
//! record. Every later change to a stored record adds a version here, its
//! step in each `Steps` list that the change touches (a no-op for the
//! others), and a case to the fixture test (`tests/format_upgrade.rs`).

use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, TableDefinition};

use crate::error::EngineError;

/// The format this binary writes.
pub const FORMAT_VERSION: u32 = 1;

/// The table every Sika redb file keeps its stamp in.
const FORMAT: TableDefinition<&str, u32> = TableDefinition::new("sika_format");
const STAMP_KEY: &str = "format_version";

/// One upgrade step, from version `i` to `i + 1` for the step at index `i`,
/// applied inside the write transaction that also moves the stamp.
pub type Step = fn(&redb::WriteTransaction) -> Result<(), EngineError>;

/// The upgrade path of one kind of database: exactly `FORMAT_VERSION`
/// steps, the first taking format 0 to 1.
pub type Steps = [Step; FORMAT_VERSION as usize];

/// Format 0 to 1: the stamp alone; no record changed.
pub fn stamp_only(_: &redb::WriteTransaction) -> Result<(), EngineError> {
    Ok(())
}

/// The upgrade path of a ledger database (`live.redb`, `sandbox.redb`).
pub const LEDGER_STEPS: Steps = [stamp_only];
/// The upgrade path of the node's identity database (`node.redb`).
pub const IDENTITY_STEPS: Steps = [stamp_only];
/// The upgrade path of a request log (`<stack>-requests.redb`).
pub const REQUEST_LOG_STEPS: Steps = [stamp_only];

/// What a file's stamp says before any upgrade.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// A new file, with nothing in it yet.
    New,
    /// A file written by this format version.
    Version(u32),
}

/// The message for a file written by a newer format than this binary's.
pub fn newer_message(path: &Path, stored: u32) -> String {
    format!(
        "{} was written by Sika storage format version {stored}, but this binary reads format versions up to {FORMAT_VERSION}: run a Sika release at least as new as the one that wrote it",
        path.display()
    )
}

/// Reads the stamp of an open redb file and refuses a newer format. A file
/// with no stamp is new if it has no table at all, and format 0 otherwise.
pub fn check(db: &impl ReadableDatabase, path: &Path) -> Result<Found, EngineError> {
    let txn = db.begin_read()?;
    let stamped = match txn.open_table(FORMAT) {
        Ok(table) => table.get(STAMP_KEY)?.map(|v| v.value()),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let found = match stamped {
        Some(version) => Found::Version(version),
        None if txn.list_tables()?.next().is_none() => Found::New,
        None => Found::Version(0),
    };
    if let Found::Version(stored) = found
        && stored > FORMAT_VERSION
    {
        return Err(EngineError::Storage(newer_message(path, stored)));
    }
    Ok(found)
}

/// Brings an open redb file to `FORMAT_VERSION`, given what `check` found
/// when it was opened (before the caller created its tables or replayed its
/// log): stamps a new file, or runs the steps from its version on, each in
/// its own synced commit with the stamp it reaches, so a crash part-way
/// resumes from the last step done.
pub fn upgrade(db: &redb::Database, path: &Path, found: Found, steps: &Steps) -> Result<(), EngineError> {
    let from = match found {
        Found::New => return write_stamp(db, FORMAT_VERSION, stamp_only),
        Found::Version(version) => version,
    };
    assert!(from <= FORMAT_VERSION, "check refuses a newer format");
    for version in from..FORMAT_VERSION {
        let step = steps[version as usize];
        // Below FORMAT_VERSION, so the next version fits.
        let next = version.saturating_add(1);
        write_stamp(db, next, step).map_err(|e| {
            EngineError::Storage(format!(
                "cannot upgrade {} from format version {version} to {next}: {e}",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// `check` then `upgrade`, for a file whose tables the caller creates only
/// after this.
pub fn open(db: &redb::Database, path: &Path, steps: &Steps) -> Result<Found, EngineError> {
    let found = check(db, path)?;
    upgrade(db, path, found, steps)?;
    Ok(found)
}

fn write_stamp(db: &redb::Database, version: u32, step: Step) -> Result<(), EngineError> {
    let txn = db.begin_write()?;
    step(&txn)?;
    {
        let mut table = txn.open_table(FORMAT)?;
        let previous = table.get(STAMP_KEY)?.map(|v| v.value());
        assert!(previous.is_none_or(|p| p < version), "a format stamp only increases");
        table.insert(STAMP_KEY, version)?;
    }
    txn.commit()?;
    Ok(())
}

/// Writes `version` as a file's stamp whatever it held, as a future release
/// would.
#[cfg(test)]
fn force_stamp(db: &redb::Database, version: u32) -> Result<(), EngineError> {
    let txn = db.begin_write()?;
    txn.open_table(FORMAT)?.insert(STAMP_KEY, version)?;
    txn.commit()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> redb::Database {
        redb::Database::builder().create_with_backend(redb::backends::InMemoryBackend::new()).unwrap()
    }

    const DATA: TableDefinition<&str, u32> = TableDefinition::new("data");

    #[test]
    fn a_new_file_is_stamped_with_this_version() {
        let db = memory();
        assert_eq!(open(&db, Path::new("x"), &LEDGER_STEPS).unwrap(), Found::New);
        assert_eq!(check(&db, Path::new("x")).unwrap(), Found::Version(FORMAT_VERSION));
    }

    #[test]
    fn a_file_with_tables_and_no_stamp_is_format_0_and_is_upgraded_step_by_step() {
        let db = memory();
        let txn = db.begin_write().unwrap();
        txn.open_table(DATA).unwrap().insert("a", 1).unwrap();
        txn.commit().unwrap();
        assert_eq!(check(&db, Path::new("x")).unwrap(), Found::Version(0));
        fn mark(txn: &redb::WriteTransaction) -> Result<(), EngineError> {
            txn.open_table(DATA)?.insert("upgraded", 1)?;
            Ok(())
        }
        let steps: Steps = [mark];
        assert_eq!(open(&db, Path::new("x"), &steps).unwrap(), Found::Version(0));
        assert_eq!(check(&db, Path::new("x")).unwrap(), Found::Version(FORMAT_VERSION));
        let txn = db.begin_read().unwrap();
        assert!(txn.open_table(DATA).unwrap().get("upgraded").unwrap().is_some());
        // A second open runs no step again.
        drop(txn);
        fn refuse(_: &redb::WriteTransaction) -> Result<(), EngineError> {
            Err(EngineError::Storage("ran twice".into()))
        }
        open(&db, Path::new("x"), &[refuse]).unwrap();
    }

    #[test]
    fn a_newer_format_is_refused_naming_both_versions() {
        let db = memory();
        force_stamp(&db, FORMAT_VERSION + 7).unwrap();
        let error = open(&db, Path::new("/data/live.redb"), &LEDGER_STEPS).unwrap_err().to_string();
        assert!(error.contains("/data/live.redb"), "{error}");
        assert!(error.contains(&format!("version {}", FORMAT_VERSION + 7)), "{error}");
        assert!(error.contains(&format!("up to {FORMAT_VERSION}")), "{error}");
    }
}
