//! Storage on redb: one table of byte keys to postcard-encoded records, a
//! key layout with one prefix byte per kind of record, and the layered
//! overlay the writer applies commands through.
//!
//! Keys sort the way they are scanned: numbers big-endian, strings followed
//! by a zero byte, so a prefix scan lists one organization's records in
//! creation order.

use std::collections::BTreeMap;

use redb::{ReadableTable, TableDefinition};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::EngineError;

/// The single table every record lives in.
pub const RECORDS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("records");

/// The prefix byte of each kind of record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Space {
    Meta = 0,
    Account = 1,
    OrgAccount = 2,
    Transfer = 3,
    Journal = 4,
    Idempotency = 5,
    Quote = 6,
    Conversion = 7,
    Event = 8,
    ListIndex = 9,
    Deposit = 10,
    Document = 11,
    Job = 12,
}

/// Builds keys: a prefix byte then parts.
pub struct Key(Vec<u8>);

impl Key {
    pub fn new(space: Space) -> Key {
        let mut bytes = Vec::with_capacity(32);
        bytes.push(space as u8);
        Key(bytes)
    }
    pub fn str(mut self, part: &str) -> Key {
        self.0.extend_from_slice(part.as_bytes());
        self.0.push(0);
        self
    }
    pub fn u64(mut self, part: u64) -> Key {
        self.0.extend_from_slice(&part.to_be_bytes());
        self
    }
    pub fn bytes(self) -> Vec<u8> {
        self.0
    }
}

pub mod keys {
    use super::{Key, Space};

    pub fn meta(name: &str) -> Vec<u8> {
        Key::new(Space::Meta).str(name).bytes()
    }
    pub fn account(id: &str) -> Vec<u8> {
        Key::new(Space::Account).str(id).bytes()
    }
    pub fn org_account(organization: &str, currency: &str) -> Vec<u8> {
        Key::new(Space::OrgAccount).str(organization).str(currency).bytes()
    }
    pub fn org_accounts_prefix(organization: &str) -> Vec<u8> {
        Key::new(Space::OrgAccount).str(organization).bytes()
    }
    pub fn transfer(id: u64) -> Vec<u8> {
        Key::new(Space::Transfer).u64(id).bytes()
    }
    pub fn journal(seq: u64) -> Vec<u8> {
        Key::new(Space::Journal).u64(seq).bytes()
    }
    pub fn idempotency(organization: &str, operation: &str, reference: &str) -> Vec<u8> {
        Key::new(Space::Idempotency).str(organization).str(operation).str(reference).bytes()
    }
    pub fn quote(id: &str) -> Vec<u8> {
        Key::new(Space::Quote).str(id).bytes()
    }
    pub fn conversion(id: &str) -> Vec<u8> {
        Key::new(Space::Conversion).str(id).bytes()
    }
    pub fn deposit(id: &str) -> Vec<u8> {
        Key::new(Space::Deposit).str(id).bytes()
    }
    pub fn event(seq: u64) -> Vec<u8> {
        Key::new(Space::Event).u64(seq).bytes()
    }
    /// Per organization and kind of resource, in creation order.
    pub fn list_entry(organization: &str, kind: &str, seq: u64) -> Vec<u8> {
        Key::new(Space::ListIndex).str(organization).str(kind).u64(seq).bytes()
    }
    pub fn list_prefix(organization: &str, kind: &str) -> Vec<u8> {
        Key::new(Space::ListIndex).str(organization).str(kind).bytes()
    }
    /// A record the API layer owns (keys, representatives…), by collection and id.
    pub fn document(collection: &str, id: &str) -> Vec<u8> {
        Key::new(Space::Document).str(collection).str(id).bytes()
    }
    pub fn documents_prefix(collection: &str) -> Vec<u8> {
        Key::new(Space::Document).str(collection).bytes()
    }
    /// A scheduled job, ordered by when it is due.
    pub fn job(due_at: i64, id: &str) -> Vec<u8> {
        Key::new(Space::Job).u64(due_at.max(0) as u64).str(id).bytes()
    }
    pub fn space(space: Space) -> Vec<u8> {
        vec![space as u8]
    }
}

pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    postcard::to_stdvec(value).expect("postcard encodes every engine record")
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, EngineError> {
    postcard::from_bytes(bytes).map_err(|e| EngineError::Corrupt(format!("undecodable record: {e}")))
}

/// The smallest key greater than every key starting with `prefix`.
pub fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return end;
        }
    }
    vec![u8::MAX; prefix.len() + 1]
}

type Changes = BTreeMap<Vec<u8>, Option<Vec<u8>>>;

/// Three layers over the write transaction's table: the current command's
/// changes, then the batch's committed-so-far changes, then the table.
/// A command that fails drops its layer and leaves no trace; one that
/// succeeds folds its layer into the batch. At the end of a batch the
/// batch layer is written to the table in key order.
pub struct Overlay<'t, 'txn> {
    table: &'t redb::Table<'txn, &'static [u8], &'static [u8]>,
    batch: Changes,
    command: Changes,
}

impl<'t, 'txn> Overlay<'t, 'txn> {
    pub fn new(table: &'t redb::Table<'txn, &'static [u8], &'static [u8]>) -> Self {
        Overlay { table, batch: Changes::new(), command: Changes::new() }
    }

    pub fn get_raw(&self, key: &[u8]) -> Result<Option<Vec<u8>>, EngineError> {
        if let Some(value) = self.command.get(key) {
            return Ok(value.clone());
        }
        if let Some(value) = self.batch.get(key) {
            return Ok(value.clone());
        }
        Ok(self.table.get(key)?.map(|guard| guard.value().to_vec()))
    }

    pub fn get<T: DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, EngineError> {
        match self.get_raw(key)? {
            Some(bytes) => Ok(Some(decode(&bytes)?)),
            None => Ok(None),
        }
    }

    pub fn put<T: Serialize>(&mut self, key: Vec<u8>, value: &T) {
        self.command.insert(key, Some(encode(value)));
    }

    pub fn put_raw(&mut self, key: Vec<u8>, value: Vec<u8>) {
        self.command.insert(key, Some(value));
    }

    pub fn delete(&mut self, key: Vec<u8>) {
        self.command.insert(key, None);
    }

    /// Keeps the current command's changes as part of the batch.
    pub fn keep_command(&mut self) {
        let command = std::mem::take(&mut self.command);
        self.batch.extend(command);
    }

    /// Forgets the current command's changes.
    pub fn drop_command(&mut self) {
        self.command.clear();
    }

    /// The batch's changes, for writing once the last command is applied.
    pub fn into_changes(mut self) -> Changes {
        self.command.clear();
        self.batch
    }
}

/// Writes a batch's changes into the table.
pub fn write_changes(
    table: &mut redb::Table<'_, &'static [u8], &'static [u8]>,
    changes: Changes,
) -> Result<(), EngineError> {
    for (key, value) in changes {
        match value {
            Some(bytes) => {
                table.insert(key.as_slice(), bytes.as_slice())?;
            }
            None => {
                table.remove(key.as_slice())?;
            }
        }
    }
    Ok(())
}

/// Reads a typed record from any readable table.
pub fn read<T: DeserializeOwned>(
    table: &impl ReadableTable<&'static [u8], &'static [u8]>,
    key: &[u8],
) -> Result<Option<T>, EngineError> {
    match table.get(key)? {
        Some(guard) => Ok(Some(decode(guard.value())?)),
        None => Ok(None),
    }
}
