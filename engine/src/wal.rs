//! The write-ahead log that makes each batch durable with one sequential
//! write and one `fdatasync`.
//!
//! A durable redb commit rewrites every B-tree page the batch touched, and
//! those pages lie scattered over the file: on this kind of disk an fsync of
//! 100 scattered 4 KiB pages takes about 6 ms, of 100 contiguous ones about
//! 0.4 ms. So each batch's changes (whole values, in key order) are appended
//! to this log and synced (by the writer's applier thread), then the batch is
//! committed to redb without a sync (`Durability::None`), and only then
//! answered. Every
//! `CHECKPOINT_BYTES` of log, the batch that would fill it is committed with
//! `Durability::Immediate` instead of being logged, which makes redb hold
//! everything so far, and the log starts over from its beginning.
//!
//! A record is `len: u32 | crc32: u32 | epoch: u64 | changes`, little
//! endian; the checksum covers the epoch and the changes, and each change is
//! `key_len: u32 | key | 0` (delete) or `key_len: u32 | key | 1 |
//! value_len: u32 | value`. Records are written over the file from its
//! start after each checkpoint, so the file may hold an older generation's
//! records after the newest ones; their epochs are lower, which is where
//! reading stops. Recovery replays, in order, the records whose epoch is
//! newer than the database's `commit_epoch`: each holds whole values, so
//! replaying is exact however far redb had got.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use redb::ReadableDatabase;

use crate::error::EngineError;
use crate::storage::{Changes, Layer, RECORDS, keys, read};

/// Log written since the last checkpoint before the next batch is committed
/// with a sync of the database itself.
pub const CHECKPOINT_BYTES: u64 = 2 << 20;

/// The log grows in steps of this many zero bytes, synced once, so that an
/// append overwrites allocated blocks and its `fdatasync` carries no size
/// change.
const GROW_BYTES: u64 = 4 << 20;

const HEADER_LEN: usize = 16;

/// A record larger than this is not a record (the read is misaligned or torn).
const RECORD_BYTES_MAX: u64 = 1 << 32;

/// One batch's changes as read back from the log.
pub type OwnedChanges = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// The log file beside a database: `sandbox.redb` → `sandbox.wal`.
pub fn path_for(database: &Path) -> PathBuf {
    database.with_extension("wal")
}

pub struct Wal {
    file: File,
    /// Where the next record goes.
    position: u64,
    /// How far the file is allocated.
    allocated: u64,
    buffer: Vec<u8>,
}

impl Wal {
    /// Opens (or creates) the log; the next record is written at its start,
    /// so call this only once its records are replayed.
    pub fn open(path: &Path) -> std::io::Result<Wal> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        let allocated = file.metadata()?.len();
        Ok(Wal { file, position: 0, allocated, buffer: Vec::with_capacity(1 << 16) })
    }

    /// Bytes written since the last checkpoint.
    pub fn logged_bytes(&self) -> u64 {
        self.position
    }

    /// The bytes `append` would write for a batch's changes (in any
    /// order, so a batch need not be sorted to know).
    pub fn record_len(layer: &Layer) -> u64 {
        let body: usize = layer.iter().map(|(key, value)| change_len(key, value.as_deref())).sum();
        (HEADER_LEN + body) as u64
    }

    /// Appends one batch's changes and waits until they are on disk.
    pub fn append(&mut self, epoch: u64, changes: &Changes<'_>) -> std::io::Result<()> {
        self.buffer.clear();
        self.buffer.extend_from_slice(&[0; HEADER_LEN]);
        for (key, value) in changes {
            self.buffer.extend_from_slice(&(key.len() as u32).to_le_bytes());
            self.buffer.extend_from_slice(key);
            match value {
                None => self.buffer.push(0),
                Some(value) => {
                    self.buffer.push(1);
                    self.buffer.extend_from_slice(&(value.len() as u32).to_le_bytes());
                    self.buffer.extend_from_slice(value);
                }
            }
        }
        let body_len = (self.buffer.len() - HEADER_LEN) as u32;
        self.buffer[0..4].copy_from_slice(&body_len.to_le_bytes());
        self.buffer[8..16].copy_from_slice(&epoch.to_le_bytes());
        let crc = crc32fast::hash(&self.buffer[8..]);
        self.buffer[4..8].copy_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(
            self.buffer.len(),
            HEADER_LEN + changes.iter().map(|(key, value)| change_len(key, *value)).sum::<usize>()
        );
        let end = self.position + self.buffer.len() as u64;
        if end > self.allocated {
            self.grow(end)?;
        }
        self.file.write_all_at(&self.buffer, self.position)?;
        self.file.sync_data()?;
        self.position = end;
        Ok(())
    }

    /// Extends the file with zeros to at least `end`, durably.
    fn grow(&mut self, end: u64) -> std::io::Result<()> {
        let target = end.div_ceil(GROW_BYTES) * GROW_BYTES;
        let zeros = vec![0u8; 1 << 20];
        let mut at = self.allocated;
        while at < target {
            let n = (target - at).min(zeros.len() as u64) as usize;
            self.file.write_all_at(&zeros[..n], at)?;
            at += n as u64;
        }
        self.file.sync_all()?;
        self.allocated = target;
        Ok(())
    }

    /// After a checkpoint: the database holds everything logged so far, so
    /// the next record goes at the start again.
    pub fn restart(&mut self) {
        self.position = 0;
    }
}

/// The bytes one change takes in a record.
fn change_len(key: &[u8], value: Option<&[u8]>) -> usize {
    4 + key.len() + 1 + value.map_or(0, |v| 4 + v.len())
}

/// Brings the database up to date with the log: the records newer than its
/// `commit_epoch`, in order, in one synced commit. Returns how many.
pub fn replay(db: &redb::Database, path: &Path) -> Result<usize, EngineError> {
    let records = read_records(path).map_err(|e| {
        EngineError::Storage(format!("cannot read the write-ahead log {}: {e}", path.display()))
    })?;
    let committed = {
        let txn = db.begin_read()?;
        let table = txn.open_table(RECORDS)?;
        read::<u64>(&table, &keys::meta("commit_epoch"))?.unwrap_or(0)
    };
    let newer: Vec<&(u64, OwnedChanges)> = records.iter().filter(|(epoch, _)| *epoch > committed).collect();
    if newer.is_empty() {
        return Ok(0);
    }
    let txn = db.begin_write()?;
    {
        let mut table = txn.open_table(RECORDS)?;
        for (_, changes) in &newer {
            for (key, value) in changes {
                match value {
                    Some(value) => {
                        table.insert(key.as_slice(), value.as_slice())?;
                    }
                    None => {
                        table.remove(key.as_slice())?;
                    }
                }
            }
        }
    }
    txn.commit()?;
    Ok(newer.len())
}

/// `replay` for a database file that is not open: opens it only if its log
/// holds records (`sika verify` runs this first).
pub fn replay_file(database: &Path) -> Result<usize, EngineError> {
    let path = path_for(database);
    if read_records(&path).map(|records| records.is_empty()).unwrap_or(false) {
        return Ok(0);
    }
    let db = redb::Database::create(database)?;
    replay(&db, &path)
}

/// The log's records in order, up to the first one that is torn, fails its
/// checksum or is not newer than the one before it.
pub fn read_records(path: &Path) -> std::io::Result<Vec<(u64, OwnedChanges)>> {
    let mut file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let len = file.seek(SeekFrom::End(0))?;
    file.seek(SeekFrom::Start(0))?;
    let mut bytes = Vec::with_capacity(len.min(1 << 30) as usize);
    file.read_to_end(&mut bytes)?;
    let mut records = Vec::new();
    let mut at = 0usize;
    let mut last_epoch = 0u64;
    while at + HEADER_LEN <= bytes.len() {
        let body_len = u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")) as u64;
        let crc = u32::from_le_bytes(bytes[at + 4..at + 8].try_into().expect("4 bytes"));
        let epoch = u64::from_le_bytes(bytes[at + 8..at + 16].try_into().expect("8 bytes"));
        let end = at as u64 + HEADER_LEN as u64 + body_len;
        if body_len >= RECORD_BYTES_MAX || end > bytes.len() as u64 || epoch <= last_epoch {
            break;
        }
        let end = end as usize;
        if crc32fast::hash(&bytes[at + 8..end]) != crc {
            break;
        }
        let Some(changes) = decode_changes(&bytes[at + HEADER_LEN..end]) else { break };
        records.push((epoch, changes));
        last_epoch = epoch;
        at = end;
    }
    Ok(records)
}

fn decode_changes(mut body: &[u8]) -> Option<OwnedChanges> {
    fn take<'a>(body: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        if body.len() < n {
            return None;
        }
        let (head, rest) = body.split_at(n);
        *body = rest;
        Some(head)
    }
    fn take_len(body: &mut &[u8]) -> Option<usize> {
        Some(u32::from_le_bytes(take(body, 4)?.try_into().ok()?) as usize)
    }
    let mut changes = Vec::new();
    while !body.is_empty() {
        let key_len = take_len(&mut body)?;
        let key = take(&mut body, key_len)?.to_vec();
        let value = match take(&mut body, 1)?[0] {
            0 => None,
            1 => {
                let value_len = take_len(&mut body)?;
                Some(take(&mut body, value_len)?.to_vec())
            }
            _ => return None,
        };
        changes.push((key, value));
    }
    Some(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn changes(n: u8) -> OwnedChanges {
        vec![(vec![1, n], Some(vec![n; n as usize])), (vec![2, n], None)]
    }

    fn borrowed(changes: &OwnedChanges) -> Changes<'_> {
        changes.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect()
    }

    #[test]
    fn records_read_back_in_order_and_reading_stops_at_the_older_generation() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.wal");
        let mut wal = Wal::open(&path).unwrap();
        for epoch in 1..=5u8 {
            wal.append(epoch as u64, &borrowed(&changes(epoch * 10))).unwrap();
        }
        let read = read_records(&path).unwrap();
        assert_eq!(read.len(), 5);
        assert_eq!(read[4], (5, changes(50)));
        // A checkpoint: the next generation overwrites from the start.
        wal.restart();
        wal.append(6, &borrowed(&changes(1))).unwrap();
        let read = read_records(&path).unwrap();
        assert_eq!(read.iter().map(|(e, _)| *e).collect::<Vec<_>>(), vec![6]);
    }

    #[test]
    fn a_torn_or_corrupt_record_ends_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.wal");
        let mut wal = Wal::open(&path).unwrap();
        wal.append(1, &borrowed(&changes(3))).unwrap();
        let first_end = wal.logged_bytes();
        wal.append(2, &borrowed(&changes(4))).unwrap();
        // Flip one byte of the second record's body.
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&[0xFF], first_end + HEADER_LEN as u64 + 5).unwrap();
        let read = read_records(&path).unwrap();
        assert_eq!(read, vec![(1, changes(3))]);
        assert!(read_records(&dir.path().join("missing.wal")).unwrap().is_empty());
    }
}
