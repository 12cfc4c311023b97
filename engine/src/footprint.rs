//! What a ledger's records take on disk: per kind of record (storage
//! space), how many there are and their key and value bytes, beside
//! redb's own count of the table's pages. `sika footprint` prints it for a
//! stopped node's data directory; the payout-bytes probe
//! (`benches/load.rs`, scenario `payout_bytes`) divides it by the payouts
//! it made. `sika compact` gives a stopped ledger's free pages back
//! (`compact_path`).

use std::collections::BTreeMap;
use std::path::Path;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use crate::error::EngineError;
use crate::storage::{NameNumber, RECORDS, Space, names_by_number};

/// The records of one space (for documents and list entries, of one
/// collection or list kind).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpaceUse {
    pub records: u64,
    pub key_bytes: u64,
    pub value_bytes: u64,
}

/// A ledger's records by space, and the pages redb holds them in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Footprint {
    /// By space name (`Payout`, `Document/webhook_deliveries`,
    /// `ListIndex/payouts`, …), in name order.
    pub spaces: BTreeMap<String, SpaceUse>,
    /// redb's figures for the records table.
    pub leaf_pages: u64,
    pub branch_pages: u64,
    /// Key and value bytes in the leaves (without redb's per-entry offsets).
    pub stored_leaf_bytes: u64,
    /// redb's bookkeeping inside the pages (offsets, headers).
    pub metadata_bytes: u64,
    /// Bytes of the pages that hold nothing (the pages' free space).
    pub fragmented_bytes: u64,
}

impl Footprint {
    /// All spaces together.
    pub fn total(&self) -> SpaceUse {
        self.spaces.values().fold(SpaceUse::default(), |sum, s| SpaceUse {
            records: sum.records.saturating_add(s.records),
            key_bytes: sum.key_bytes.saturating_add(s.key_bytes),
            value_bytes: sum.value_bytes.saturating_add(s.value_bytes),
        })
    }
}

/// The name a record is counted under: its space, and for documents and
/// list entries the collection or kind too (for lists, the name of the
/// key's second number, `names` giving each number's text).
fn name_of(key: &[u8], names: &BTreeMap<NameNumber, String>) -> String {
    let Some(space) = Space::of_key(key) else {
        return format!("space {}", key.first().copied().unwrap_or_default());
    };
    let part = match space {
        Space::Document => {
            key.get(1..).unwrap_or_default().split(|b| *b == 0).next().map(String::from_utf8_lossy)
        }
        Space::ListIndex => NameNumber::pair_in(key).map(|(_, kind, _)| {
            names.get(&kind).map_or_else(|| format!("#{}", kind.0).into(), |text| text.into())
        }),
        _ => None,
    };
    match part {
        Some(part) => format!("{space:?}/{part}"),
        None => format!("{space:?}"),
    }
}

/// Counts the records of an open database.
pub fn footprint(db: &impl ReadableDatabase) -> Result<Footprint, EngineError> {
    let txn = db.begin_read()?;
    let table = match txn.open_table(RECORDS) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Footprint::default()),
        Err(e) => return Err(e.into()),
    };
    let names = names_by_number(&table)?;
    let mut spaces: BTreeMap<String, SpaceUse> = BTreeMap::new();
    for entry in table.iter()? {
        let (key, value) = entry?;
        let (key, value) = (key.value(), value.value());
        let used = spaces.entry(name_of(key, &names)).or_default();
        used.records = used.records.saturating_add(1);
        used.key_bytes = used.key_bytes.saturating_add(key.len() as u64);
        used.value_bytes = used.value_bytes.saturating_add(value.len() as u64);
    }
    let stats = table.stats()?;
    Ok(Footprint {
        spaces,
        leaf_pages: stats.leaf_pages(),
        branch_pages: stats.branch_pages(),
        stored_leaf_bytes: stats.stored_bytes(),
        metadata_bytes: stats.metadata_bytes(),
        fragmented_bytes: stats.fragmented_bytes(),
    })
}

/// The footprint of the ledger file at `path`, once its log is replayed
/// into it (as `sika verify` does: the node must be stopped).
pub fn footprint_path(path: &Path, steps: &crate::format::Steps) -> Result<Footprint, EngineError> {
    crate::wal::replay_file(path, steps)?;
    let db = redb::Database::builder().open_read_only(path)?;
    footprint(&db)
}

/// A ledger file's bytes before and after `compact_path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compacted {
    pub before: u64,
    pub after: u64,
}

/// Gives a stopped ledger's free pages back to the disk: replays its log
/// into the file (as `sika verify` does), then has redb move the pages in
/// use to the front of the file and cut the rest off. redb keeps the pages
/// a commit frees for later writes and grows the file in steps, so the
/// file of a ledger that took a burst of writes holds pages it no longer
/// uses (a third of it after 100,000 payouts); they would be reused, but
/// the disk does not get them back. Each move is a commit of its own, so a
/// crash midway leaves a whole file. redb refuses a file another process
/// holds open, so a running node's ledger is left alone.
pub fn compact_path(path: &Path, steps: &crate::format::Steps) -> Result<Compacted, EngineError> {
    let size = |path: &Path| {
        std::fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| EngineError::Storage(format!("{}: {e}", path.display())))
    };
    let before = size(path)?;
    crate::wal::replay_file(path, steps)?;
    let mut db = redb::Database::open(path)?;
    db.compact()?;
    drop(db);
    Ok(Compacted { before, after: size(path)? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::keys;

    #[test]
    fn records_are_named_by_space_and_documents_and_lists_by_kind() {
        let names =
            BTreeMap::from([(NameNumber(1), "org_1".to_string()), (NameNumber(2), "payouts".to_string())]);
        let name_of = |key: &[u8]| name_of(key, &names);
        assert_eq!(name_of(&keys::payout("pay_1")), "Payout");
        assert_eq!(name_of(&keys::document("webhook_deliveries", "dlv_1")), "Document/webhook_deliveries");
        assert_eq!(name_of(&keys::list_entry(NameNumber(1), NameNumber(2), 7)), "ListIndex/payouts");
        assert_eq!(
            name_of(&keys::list_entry(NameNumber(2), NameNumber(9), 7)),
            "ListIndex/#9",
            "a number no name has"
        );
        assert_eq!(name_of(&keys::journal(3)), "Journal");
        assert_eq!(name_of(&[200, 1]), "space 200");
    }

    #[test]
    fn every_space_is_counted_under_its_own_name() {
        use strum::VariantArray;
        for space in Space::VARIANTS.iter().copied() {
            assert_eq!(Space::of_key(&[space as u8, 1, 2]), Some(space));
        }
        let mut bytes: Vec<u8> = Space::VARIANTS.iter().map(|s| *s as u8).collect();
        bytes.dedup();
        assert_eq!(bytes.len(), Space::VARIANTS.len(), "in prefix order, none twice");
        assert!(bytes.windows(2).all(|w| w[0] < w[1]));
    }
}
