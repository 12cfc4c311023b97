//! A fault-injecting layer under the ledger's files, in the spirit of
//! redb's own fuzzing backend: a countdown of writes and syncs after which
//! every one fails as on a full disk, until the test clears it. The
//! write-ahead log checks it before each write and sync, and the database
//! file goes through `FaultyBackend`, so a test can make either fail at any
//! point and watch the engine refuse, recover and keep every acknowledged
//! batch. Production engines have none.

use std::fmt;
use std::fs::File;
use std::io;
use std::ops::Bound;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// The countdown. `-1`: no fault planned.
pub struct Faults {
    remaining: AtomicI64,
    injected: AtomicU64,
}

impl fmt::Debug for Faults {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Faults({})", self.remaining.load(Ordering::Relaxed))
    }
}

impl Faults {
    pub fn new() -> Arc<Faults> {
        Arc::new(Faults { remaining: AtomicI64::new(-1), injected: AtomicU64::new(0) })
    }

    /// After `operations` more writes or syncs succeed, every later one
    /// fails until `clear`.
    pub fn fail_after(&self, operations: u32) {
        self.remaining.store(i64::from(operations), Ordering::SeqCst);
    }

    /// The disk has room again: nothing fails from now on.
    pub fn clear(&self) {
        self.remaining.store(-1, Ordering::SeqCst);
    }

    /// How many operations were made to fail so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// Called before each write or sync: counts it down, or fails it.
    pub(crate) fn check(&self) -> io::Result<()> {
        let counted = self.remaining.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| match left {
            -1 => Some(-1),
            0 => None,
            n => Some(n.saturating_sub(1)),
        });
        match counted {
            Ok(_) => Ok(()),
            Err(_) => {
                self.injected.fetch_add(1, Ordering::SeqCst);
                Err(io::Error::new(io::ErrorKind::StorageFull, "no space left on device (injected)"))
            }
        }
    }
}

/// `check`, when there is a countdown.
pub(crate) fn check(faults: Option<&Faults>) -> io::Result<()> {
    faults.map_or(Ok(()), Faults::check)
}

/// redb's file backend with the countdown in front of its writes, length
/// changes and syncs.
#[derive(Debug)]
pub(crate) struct FaultyBackend {
    file: FileBackend,
    faults: Arc<Faults>,
}

impl FaultyBackend {
    pub(crate) fn new(file: File, faults: Arc<Faults>) -> Result<FaultyBackend, redb::DatabaseError> {
        Ok(FaultyBackend { file: FileBackend::new(file)?, faults })
    }
}

impl StorageBackend for FaultyBackend {
    fn len(&self) -> io::Result<u64> {
        self.file.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.file.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.faults.check()?;
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.faults.check()?;
        self.file.sync_data()
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        self.faults.check()?;
        self.file.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.file.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_range(start, end)
    }

    fn try_lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.file.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.file.query_lock_range(start, end)
    }
}
