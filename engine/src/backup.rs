//! Copying a redb database into a new file: every table, read through one
//! read transaction, so the copy is the consistent snapshot that
//! transaction sees (redb's MVCC) while writers go on. `sika backup` copies
//! each of a data directory's databases this way.
//!
//! redb cannot iterate a table whose key and value types it is not told, so
//! each table is opened with the type pairs Sika's stores use; a table of
//! any other kind fails the copy, naming it, rather than being left out.

use std::path::Path;

use redb::{
    Database, Durability, Key, ReadTransaction, ReadableDatabase, TableDefinition, TableError, TableHandle,
    Value, WriteTransaction,
};

use crate::error::EngineError;

/// What one database's copy holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Copied {
    pub tables: u64,
    pub entries: u64,
}

/// Copies every table of `source` into a new database file at `dest`
/// (which must not exist), synced before this returns.
pub fn copy_database(source: &impl ReadableDatabase, dest: &Path) -> Result<Copied, EngineError> {
    if dest.exists() {
        return Err(EngineError::Storage(format!("{} already exists", dest.display())));
    }
    let copied = copy_into(source, dest);
    if copied.is_err() {
        // A copy cut short is not a backup: leave nothing that looks like one.
        let _ = std::fs::remove_file(dest);
    }
    copied
}

fn copy_into(source: &impl ReadableDatabase, dest: &Path) -> Result<Copied, EngineError> {
    let read = source.begin_read()?;
    if read.list_multimap_tables()?.next().is_some() {
        return Err(EngineError::Storage("a multimap table cannot be copied".into()));
    }
    let target = Database::create(dest)?;
    let mut write = target.begin_write()?;
    write.set_durability(Durability::Immediate)?;
    let mut copied = Copied::default();
    for handle in read.list_tables()? {
        let entries = copy_any(&read, &write, handle.name())?;
        copied.tables = copied.tables.checked_add(1).ok_or(EngineError::Overflow("backup entry count"))?;
        copied.entries =
            copied.entries.checked_add(entries).ok_or(EngineError::Overflow("backup entry count"))?;
    }
    write.commit()?;
    Ok(copied)
}

/// Copies the table `name`, whichever of the stores' type pairs it has.
fn copy_any(from: &ReadTransaction, to: &WriteTransaction, name: &str) -> Result<u64, EngineError> {
    macro_rules! try_types {
        ($(($k:ty, $v:ty)),*) => {
            $(
                match copy_table::<$k, $v>(from, to, TableDefinition::new(name)) {
                    Err(Mismatch::Types) => {}
                    Err(Mismatch::Other(e)) => return Err(e),
                    Ok(n) => return Ok(n),
                }
            )*
        };
    }
    try_types!(
        (&[u8], &[u8]),
        (&str, &[u8]),
        (&str, u32),
        (&str, u64),
        (&str, &str),
        (u64, &str),
        (u64, &[u8])
    );
    Err(EngineError::Storage(format!("table {name} has key and value types no store uses")))
}

enum Mismatch {
    Types,
    Other(EngineError),
}

impl<E: Into<EngineError>> From<E> for Mismatch {
    fn from(e: E) -> Mismatch {
        Mismatch::Other(e.into())
    }
}

fn copy_table<K: Key + 'static, V: Value + 'static>(
    from: &ReadTransaction,
    to: &WriteTransaction,
    table: TableDefinition<'_, K, V>,
) -> Result<u64, Mismatch> {
    let source = match from.open_table(table) {
        Ok(source) => source,
        Err(TableError::TableTypeMismatch { .. }) => return Err(Mismatch::Types),
        Err(e) => return Err(e.into()),
    };
    let mut target = to.open_table(table)?;
    let mut entries = 0u64;
    for entry in redb::ReadableTable::iter(&source)? {
        let (key, value) = entry?;
        target.insert(key.value(), value.value())?;
        entries = entries.checked_add(1).ok_or(EngineError::Overflow("backup entry count"))?;
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: TableDefinition<&[u8], &[u8]> = TableDefinition::new("bytes");
    const ORDER: TableDefinition<u64, &str> = TableDefinition::new("order");

    #[test]
    fn every_table_is_copied_as_the_read_transaction_saw_it() {
        let dir = tempfile::tempdir().unwrap();
        let source = Database::create(dir.path().join("a.redb")).unwrap();
        let write = source.begin_write().unwrap();
        {
            let mut bytes = write.open_table(BYTES).unwrap();
            bytes.insert(b"k1".as_slice(), b"v1".as_slice()).unwrap();
            bytes.insert(b"k2".as_slice(), b"v2".as_slice()).unwrap();
            write.open_table(ORDER).unwrap().insert(7, "seven").unwrap();
        }
        write.commit().unwrap();
        let copied = copy_database(&source, &dir.path().join("b.redb")).unwrap();
        assert_eq!(copied, Copied { tables: 2, entries: 3 });
        drop(source);
        let copy = Database::create(dir.path().join("b.redb")).unwrap();
        let read = copy.begin_read().unwrap();
        let bytes = read.open_table(BYTES).unwrap();
        assert_eq!(redb::ReadableTable::get(&bytes, b"k2".as_slice()).unwrap().unwrap().value(), b"v2");
        let order = read.open_table(ORDER).unwrap();
        assert_eq!(redb::ReadableTable::get(&order, 7).unwrap().unwrap().value(), "seven");
        assert!(
            copy_database(&copy, &dir.path().join("b.redb")).is_err(),
            "an existing file is never overwritten"
        );
    }

    #[test]
    fn a_table_of_unknown_types_fails_the_copy() {
        let dir = tempfile::tempdir().unwrap();
        let source = Database::create(dir.path().join("a.redb")).unwrap();
        let write = source.begin_write().unwrap();
        write.open_table(TableDefinition::<u32, u32>::new("odd")).unwrap().insert(1, 2).unwrap();
        write.commit().unwrap();
        let e = copy_database(&source, &dir.path().join("b.redb")).unwrap_err();
        assert!(e.to_string().contains("odd"), "{e}");
        assert!(!dir.path().join("b.redb").exists(), "no partial copy is left");
    }
}
