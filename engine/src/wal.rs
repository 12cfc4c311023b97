//! The write-ahead log that makes each batch durable with one sequential
//! write and one `fdatasync`.
//!
//! A durable redb commit rewrites every B-tree page the batch touched, and
//! those pages lie scattered over the file: on this kind of disk an fsync of
//! 100 scattered 4 KiB pages takes about 6 ms, of 100 contiguous ones about
//! 0.4 ms. So each batch's changes (whole values, in key order) are appended
//! to this log and synced, and the batch is then acknowledged and served
//! from memory (see `view`). The checkpointer writes acknowledged batches
//! into redb with synced commits of its own, in the background.
//!
//! The log is two files, `<name>.wal` and `<name>.1.wal`, used in turn:
//! once the current one holds `SEGMENT_BYTES`, records go to the other from
//! its start, after waiting (rarely: the checkpointer keeps up) until the
//! database file holds every record the other one has.
//!
//! Each file starts with a 16-byte header, `SIKA-WAL | format: u32 | 0u32`,
//! naming the storage format that wrote it (`format`); a file without it
//! was written before format versions (format 0) and its records start at
//! byte 0. A record is `len: u32 | crc32: u32 | epoch: u64 | changes`, little
//! endian; the checksum covers the epoch and the changes, and each change is
//! `key_len: u32 | key | 0` (delete) or `key_len: u32 | key | 1 |
//! value_len: u32 | value`. A file reused from its start may still hold an
//! older generation's records after the newest ones; their epochs are lower,
//! which is where reading it stops. Recovery replays, in epoch order, the
//! records of both files whose epoch is newer than the database's
//! `commit_epoch`: each holds whole values, so replaying is exact however
//! far redb had got.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::ReadableDatabase;

use crate::error::EngineError;
use crate::faults::{Faults, check};
use crate::format::{FORMAT_VERSION, newer_message};
use crate::storage::{Changes, RECORDS, keys, read};

/// Log written to one file before records go to the other.
pub const SEGMENT_BYTES: u64 = 8 << 20;

/// A file grows in steps of this many zero bytes, synced once, so that an
/// append overwrites allocated blocks and its `fdatasync` carries no size
/// change.
const GROW_BYTES: u64 = 4 << 20;

const HEADER_LEN: usize = 16;

/// The file header's first bytes; the format version follows.
const FILE_MAGIC: &[u8; 8] = b"SIKA-WAL";
/// Where a file's first record starts (format 1 and later).
const FILE_HEADER_LEN: u64 = 16;

/// A record larger than this is not a record (the read is misaligned or torn).
const RECORD_BYTES_MAX: u64 = 1 << 32;

/// One batch's changes as read back from the log.
pub type OwnedChanges = Vec<(Vec<u8>, Option<Vec<u8>>)>;

/// The two log files beside a database: `sandbox.redb` → `sandbox.wal`
/// and `sandbox.1.wal`.
pub fn paths_for(database: &Path) -> [PathBuf; 2] {
    [database.with_extension("wal"), database.with_extension("1.wal")]
}

pub struct Wal {
    segments: [Segment; 2],
    /// Fails writes and syncs on a countdown (tests of a full disk).
    faults: Option<Arc<Faults>>,
    /// The epoch of the last record appended (0: none yet).
    last_epoch: u64,
    /// The segment records go to.
    current: usize,
    buffer: Vec<u8>,
}

struct Segment {
    file: File,
    /// Where the next record goes.
    position: u64,
    /// How far the file is allocated.
    allocated: u64,
    /// The epoch of the newest record written since the file was last
    /// started over (0: none).
    newest: u64,
}

impl Segment {
    /// Opens (or creates) one file of the log, emptied but for its header:
    /// call this only once its records are replayed into a synced commit.
    /// The header is synced with the file's first growth, before any record.
    fn open(path: &Path) -> std::io::Result<Segment> {
        let file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)?;
        file.set_len(0)?;
        file.write_all_at(&file_header(), 0)?;
        Ok(Segment { file, position: FILE_HEADER_LEN, allocated: FILE_HEADER_LEN, newest: 0 })
    }

    /// Extends the file with zeros to at least `end`, durably.
    #[allow(
        clippy::arithmetic_side_effects,
        reason = "file offsets: a segment holds SEGMENT_BYTES and one record, each under 4 GiB (`encode`)"
    )]
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
}

impl Wal {
    /// Opens (or creates) the log of the database at `database`, empty:
    /// call this only once its records are replayed (`replay`).
    pub fn open(database: &Path, faults: Option<Arc<Faults>>) -> std::io::Result<Wal> {
        let [first, second] = paths_for(database);
        Ok(Wal {
            segments: [Segment::open(&first)?, Segment::open(&second)?],
            faults,
            current: 0,
            last_epoch: 0,
            buffer: Vec::with_capacity(1 << 16),
        })
    }

    /// Appends one batch's changes and waits until they are on disk. When
    /// the current file is full, records go to the other one from its
    /// start, once `checkpointed(newest)` has returned: the database file
    /// must hold everything the other file logged before it is overwritten.
    #[allow(
        clippy::arithmetic_side_effects,
        reason = "file offsets: a segment holds SEGMENT_BYTES and one record, each under 4 GiB (`encode`)"
    )]
    pub fn append(
        &mut self,
        epoch: u64,
        changes: &Changes<'_>,
        checkpointed: impl FnOnce(u64) -> Result<(), EngineError>,
    ) -> Result<(), EngineError> {
        // Replay orders records by epoch and reading a file stops at the
        // first record not newer than the one before it, so a record out of
        // order would be lost or replayed over a newer one. The logger
        // catches the panic and stops writing.
        assert!(epoch > self.last_epoch, "log record {epoch} appended after record {}", self.last_epoch);
        let storage = |e: std::io::Error| EngineError::Storage(format!("write-ahead log: {e}"));
        self.encode(epoch, changes)?;
        let len = self.buffer.len() as u64;
        if self.segments[self.current].position > FILE_HEADER_LEN
            && self.segments[self.current].position + len > SEGMENT_BYTES
        {
            let other = 1 - self.current;
            checkpointed(self.segments[other].newest)?;
            self.segments[other].position = FILE_HEADER_LEN;
            self.segments[other].newest = 0;
            self.current = other;
        }
        let faults = self.faults.as_deref();
        let segment = &mut self.segments[self.current];
        let end = segment.position + len;
        if end > segment.allocated {
            check(faults).map_err(storage)?;
            segment.grow(end).map_err(storage)?;
        }
        check(faults).map_err(storage)?;
        segment.file.write_all_at(&self.buffer, segment.position).map_err(storage)?;
        check(faults).map_err(storage)?;
        segment.file.sync_data().map_err(storage)?;
        segment.position = end;
        segment.newest = epoch;
        self.last_epoch = epoch;
        Ok(())
    }

    /// Empties both files but for their headers, durably: only once the
    /// database file holds every record they logged (a clean stop), when
    /// they hold nothing a replay would need. A stopped node then keeps no
    /// log on disk (16 MiB otherwise, zeros and replayed records).
    pub fn empty(&mut self) -> std::io::Result<()> {
        for segment in &mut self.segments {
            segment.file.set_len(FILE_HEADER_LEN)?;
            segment.file.sync_all()?;
            segment.position = FILE_HEADER_LEN;
            segment.allocated = FILE_HEADER_LEN;
            segment.newest = 0;
        }
        Ok(())
    }

    /// Encodes one record into `buffer`. Lengths are written as `u32`, so a
    /// key, value or record of 4 GiB or more is refused rather than
    /// written with a truncated length.
    fn encode(&mut self, epoch: u64, changes: &Changes<'_>) -> Result<(), EngineError> {
        let length =
            |len: usize| u32::try_from(len).map_err(|_| EngineError::Overflow("write-ahead log length"));
        self.buffer.clear();
        self.buffer.extend_from_slice(&[0; HEADER_LEN]);
        for (key, value) in changes {
            self.buffer.extend_from_slice(&length(key.len())?.to_le_bytes());
            self.buffer.extend_from_slice(key);
            match value {
                None => self.buffer.push(0),
                Some(value) => {
                    self.buffer.push(1);
                    self.buffer.extend_from_slice(&length(value.len())?.to_le_bytes());
                    self.buffer.extend_from_slice(value);
                }
            }
        }
        let body_len = length(self.buffer.len().saturating_sub(HEADER_LEN))?;
        self.buffer[0..4].copy_from_slice(&body_len.to_le_bytes());
        self.buffer[8..16].copy_from_slice(&epoch.to_le_bytes());
        let crc = crc32fast::hash(&self.buffer[8..]);
        self.buffer[4..8].copy_from_slice(&crc.to_le_bytes());
        Ok(())
    }
}

/// Brings the database at `database` up to date with its log: the records
/// newer than its `commit_epoch`, in epoch order, in one synced commit.
/// With `until`, records newer than it are left out: reopening after a
/// storage error passes the last acknowledged epoch, so a batch whose
/// callers were refused never takes effect even if its record reached the
/// disk. Returns how many were replayed.
pub fn replay(db: &redb::Database, database: &Path, until: Option<u64>) -> Result<usize, EngineError> {
    let mut records = Vec::new();
    for path in paths_for(database) {
        records.extend(read_records(&path).map_err(|e| {
            EngineError::Storage(format!("cannot read the write-ahead log {}: {e}", path.display()))
        })?);
    }
    let committed = {
        let txn = db.begin_read()?;
        let table = txn.open_table(RECORDS)?;
        read::<u64>(&table, &keys::meta("commit_epoch"))?.unwrap_or(0)
    };
    records.retain(|(epoch, _)| *epoch > committed && until.is_none_or(|until| *epoch <= until));
    if records.is_empty() {
        return Ok(0);
    }
    records.sort_by_key(|(epoch, _)| *epoch);
    let txn = db.begin_write()?;
    {
        let mut table = txn.open_table(RECORDS)?;
        for (_, changes) in &records {
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
    Ok(records.len())
}

/// Brings a database file that is not open to where opening it leaves it:
/// redb's own repair after a crash, a newer format refused, the log
/// replayed, an older format upgraded (`sika verify` runs this first, so it
/// never reports what starting the node would repair). Returns how many log
/// records were replayed. A missing file is left missing.
pub fn replay_file(database: &Path, steps: &crate::format::Steps) -> Result<usize, EngineError> {
    if !database.exists() {
        return Ok(0);
    }
    let db = redb::Database::create(database)?;
    let found = crate::format::check(&db, database)?;
    let replayed = if found == crate::format::Found::New { 0 } else { replay(&db, database, None)? };
    crate::format::upgrade(&db, database, found, steps)?;
    Ok(replayed)
}

/// The log's records in order, up to the first one that is torn, fails its
/// checksum or is not newer than the one before it.
#[allow(
    clippy::arithmetic_side_effects,
    reason = "offsets into the bytes read, each checked against their length before use"
)]
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
    let mut at = records_start(&bytes, path)?;
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

fn file_header() -> [u8; FILE_HEADER_LEN as usize] {
    let mut header = [0u8; FILE_HEADER_LEN as usize];
    header[..8].copy_from_slice(FILE_MAGIC);
    header[8..12].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    header
}

/// Where a log file's records start, from its header: after it for format 1
/// and later, at 0 for a file with no header (format 0). A file written by a
/// newer format is refused rather than misread.
fn records_start(bytes: &[u8], path: &Path) -> std::io::Result<usize> {
    if bytes.len() < FILE_HEADER_LEN as usize || &bytes[..8] != FILE_MAGIC {
        return Ok(0);
    }
    let version = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version > FORMAT_VERSION {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, newer_message(path, version)));
    }
    Ok(FILE_HEADER_LEN as usize)
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

    fn changes(n: u8, value_len: usize) -> OwnedChanges {
        vec![(vec![1, n], Some(vec![n; value_len])), (vec![2, n], None)]
    }

    fn borrowed(changes: &OwnedChanges) -> Changes<'_> {
        changes.iter().map(|(k, v)| (k.as_slice(), v.as_deref())).collect()
    }

    /// A log for a database in a new directory, and its two files.
    fn opened() -> (tempfile::TempDir, PathBuf, [PathBuf; 2], Wal) {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("x.redb");
        let wal = Wal::open(&database, None).unwrap();
        (dir, database.clone(), paths_for(&database), wal)
    }

    fn epochs(path: &Path) -> Vec<u64> {
        read_records(path).unwrap().iter().map(|(epoch, _)| *epoch).collect()
    }

    #[test]
    fn each_file_names_its_format_and_a_headerless_file_is_format_0() {
        let (_dir, _, [first, second], mut wal) = opened();
        wal.append(1, &borrowed(&changes(1, 10)), |_| unreachable!()).unwrap();
        for path in [&first, &second] {
            let bytes = std::fs::read(path).unwrap();
            assert_eq!(&bytes[..8], FILE_MAGIC);
            assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), FORMAT_VERSION);
        }
        // Format 0 wrote records from the file's first byte.
        let bytes = std::fs::read(&first).unwrap();
        std::fs::write(&second, &bytes[FILE_HEADER_LEN as usize..]).unwrap();
        assert_eq!(read_records(&second).unwrap(), vec![(1, changes(1, 10))]);
    }

    #[test]
    fn a_file_from_a_newer_format_is_refused_not_misread() {
        let (_dir, _, [first, _], mut wal) = opened();
        wal.append(1, &borrowed(&changes(1, 10)), |_| unreachable!()).unwrap();
        drop(wal);
        let mut bytes = std::fs::read(&first).unwrap();
        bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        std::fs::write(&first, &bytes).unwrap();
        let error = read_records(&first).unwrap_err().to_string();
        assert!(error.contains(&format!("format version {}", FORMAT_VERSION + 1)), "{error}");
        assert!(error.contains(&format!("up to {FORMAT_VERSION}")), "{error}");
    }

    #[test]
    fn records_read_back_in_order() {
        let (_dir, _, [first, second], mut wal) = opened();
        for epoch in 1..=5u8 {
            wal.append(epoch as u64, &borrowed(&changes(epoch, 10 * epoch as usize)), |_| unreachable!())
                .unwrap();
        }
        let read = read_records(&first).unwrap();
        assert_eq!(read.len(), 5);
        assert_eq!(read[4], (5, changes(5, 50)));
        assert!(read_records(&second).unwrap().is_empty());
    }

    #[test]
    fn a_full_file_is_left_for_the_other_which_is_reused_only_once_checkpointed() {
        let (_dir, _, [first, second], mut wal) = opened();
        let megabyte = 1 << 20;
        let mut waited_for = Vec::new();
        // Seven records of 1 MiB and a bit fill the first file.
        for epoch in 1..=7u64 {
            wal.append(epoch, &borrowed(&changes(epoch as u8, megabyte)), |_| unreachable!()).unwrap();
        }
        for epoch in 8..=24u64 {
            wal.append(epoch, &borrowed(&changes(epoch as u8, megabyte)), |newest| {
                waited_for.push(newest);
                Ok(())
            })
            .unwrap();
        }
        // Switching to the (empty) second file waits for nothing; back to
        // the first, for its newest record; to the second again, for its.
        assert_eq!(waited_for, vec![0, 7, 14]);
        assert_eq!(
            epochs(&first),
            (15..=21).collect::<Vec<_>>(),
            "an older generation follows and is not read"
        );
        assert_eq!(epochs(&second), (22..=24).collect::<Vec<_>>());

        // Until the database holds the other file's records, the log waits.
        let refused = wal.append(25, &borrowed(&changes(1, megabyte * 4)), |_| {
            Err(EngineError::Storage("not checkpointed".into()))
        });
        assert!(refused.is_ok(), "the second file still had room");
        let refused = wal.append(26, &borrowed(&changes(1, megabyte)), |newest| {
            assert_eq!(newest, 21);
            Err(EngineError::Storage("not checkpointed".into()))
        });
        assert!(refused.is_err());
        assert_eq!(epochs(&first), (15..=21).collect::<Vec<_>>(), "nothing overwritten");
    }

    #[test]
    fn replay_applies_both_files_records_newer_than_the_database_in_order() {
        let (_dir, database, _, mut wal) = opened();
        let megabyte = 1 << 20;
        for epoch in 1..=12u64 {
            let mut batch = changes(epoch as u8, megabyte);
            // Every batch rewrites one shared key: the newest must win.
            batch.push((b"shared".to_vec(), Some(epoch.to_le_bytes().to_vec())));
            wal.append(epoch, &borrowed(&batch), |_| Ok(())).unwrap();
        }
        drop(wal);
        let db = redb::Database::create(&database).unwrap();
        {
            let txn = db.begin_write().unwrap();
            {
                let mut table = txn.open_table(RECORDS).unwrap();
                table
                    .insert(keys::meta("commit_epoch").as_slice(), crate::storage::encode(&3u64).as_slice())
                    .unwrap();
            }
            txn.commit().unwrap();
        }
        assert_eq!(replay(&db, &database, None).unwrap(), 9, "epochs 4 to 12, from both files");
        let txn = db.begin_read().unwrap();
        let table = txn.open_table(RECORDS).unwrap();
        assert_eq!(table.get(b"shared".as_slice()).unwrap().unwrap().value(), 12u64.to_le_bytes().as_slice());
        assert!(table.get([1u8, 4].as_slice()).unwrap().is_some());
        assert!(table.get([1u8, 3].as_slice()).unwrap().is_none(), "epoch 3 is the database's already");
    }

    #[test]
    #[should_panic(expected = "log record 2 appended after record 2")]
    fn a_record_not_newer_than_the_last_is_refused_before_it_is_written() {
        let (_dir, _, [first, _], mut wal) = opened();
        wal.append(1, &borrowed(&changes(1, 3)), |_| unreachable!()).unwrap();
        wal.append(2, &borrowed(&changes(2, 3)), |_| unreachable!()).unwrap();
        let repeated = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            wal.append(2, &borrowed(&changes(3, 3)), |_| unreachable!())
        }));
        assert_eq!(epochs(&first), vec![1, 2], "nothing was written");
        std::panic::resume_unwind(repeated.expect_err("the assertion fires"));
    }

    #[test]
    fn a_torn_or_corrupt_record_ends_the_log() {
        let (dir, _, [first, _], mut wal) = opened();
        wal.append(1, &borrowed(&changes(3, 3)), |_| unreachable!()).unwrap();
        let first_end = wal.segments[0].position;
        wal.append(2, &borrowed(&changes(4, 4)), |_| unreachable!()).unwrap();
        // Flip one byte of the second record's body.
        let file = OpenOptions::new().write(true).open(&first).unwrap();
        file.write_all_at(&[0xFF], first_end + HEADER_LEN as u64 + 5).unwrap();
        let read = read_records(&first).unwrap();
        assert_eq!(read, vec![(1, changes(3, 3))]);
        assert!(read_records(&dir.path().join("missing.wal")).unwrap().is_empty());
    }
}
