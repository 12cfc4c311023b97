//! The sandbox's disk reserve: when free space under the data directory
//! falls below `disk_reserve`, the sandbox refuses writes (`503
//! storage_unavailable`) and readiness names it, while the live stack goes
//! on. Both stacks' files share one filesystem, and a sandbox tenant
//! uploading files filled an 80 MiB disk in half a second; the reserve
//! keeps the live stack's last bytes for the live stack.
//!
//! The check is an `fstatvfs` of the directory, held open (under a
//! microsecond), before each sandbox command, not a poll: a poll's interval
//! would let a burst of uploads run past the reserve before the next look.
//! (A `statvfs` of its path walked the path on every command: 2.4 % of the
//! HTTP workers' CPU in the payouts load.)

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

pub(crate) struct DiskReserve {
    dir: PathBuf,
    /// The directory, opened once (`None` if it could not be: then it is
    /// opened for each look).
    opened: Option<std::fs::File>,
    reserve_bytes: u64,
    /// Whether the last look found free space below the reserve, so the
    /// node logs when it crosses the line, not at every refused command.
    below: AtomicBool,
}

impl DiskReserve {
    pub(crate) fn new(dir: PathBuf, reserve_bytes: u64) -> DiskReserve {
        let opened = std::fs::File::open(&dir).ok();
        DiskReserve { dir, opened, reserve_bytes, below: AtomicBool::new(false) }
    }

    /// Why the sandbox may not write now, or `None` while free space is at
    /// least the reserve (or cannot be read: a failing `statvfs` is not a
    /// full disk, and the ledger's own storage errors still stop writes).
    pub(crate) fn shortfall(&self) -> Option<String> {
        if self.reserve_bytes == 0 {
            return None;
        }
        let free = match &self.opened {
            Some(dir) => free_bytes_of(dir),
            None => free_bytes(&self.dir),
        }
        .ok()?;
        let below = free < self.reserve_bytes;
        if self.below.swap(below, Ordering::Relaxed) != below {
            if below {
                tracing::warn!(
                    free_bytes = free,
                    reserve_bytes = self.reserve_bytes,
                    "free space under the data directory is below the disk reserve; the sandbox refuses writes"
                );
            } else {
                tracing::warn!(
                    free_bytes = free,
                    "free space is above the disk reserve again; the sandbox writes"
                );
            }
        }
        below.then(|| {
            format!(
                "free space under the data directory ({}) is below the disk reserve ({}); \
                 the sandbox refuses writes until space is freed, and the live stack goes on",
                mib(free),
                mib(self.reserve_bytes)
            )
        })
    }

    /// The engine's admission check for the sandbox: `Err` below the reserve.
    pub(crate) fn admission(self: &std::sync::Arc<Self>) -> sika_engine::Admission {
        let reserve = self.clone();
        std::sync::Arc::new(move || reserve.shortfall().map_or(Ok(()), Err))
    }
}

/// A size for a message: `12.5 MiB`.
fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// The bytes an unprivileged process may still write on the filesystem
/// holding `dir` (`free_bytes_of` the directory, opened for the look).
pub(crate) fn free_bytes(dir: &std::path::Path) -> std::io::Result<u64> {
    free_bytes_of(&std::fs::File::open(dir)?)
}

/// The bytes an unprivileged process may still write on the filesystem
/// holding the open file `dir` (`f_bavail`, not `f_bfree`: the
/// root-reserved blocks are not the node's to count on).
fn free_bytes_of(dir: &std::fs::File) -> std::io::Result<u64> {
    use std::os::fd::AsRawFd;
    // SAFETY: fstatvfs writes into the zeroed struct on this stack and
    // reads the descriptor, which `dir` keeps open for the call.
    let stats = unsafe {
        let mut stats: libc::statvfs = std::mem::zeroed();
        if libc::fstatvfs(dir.as_raw_fd(), &mut stats) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        stats
    };
    #[allow(clippy::useless_conversion)] // the fields' widths differ between platforms
    Ok(u64::from(stats.f_bavail).saturating_mul(u64::from(stats.f_frsize)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_compares_free_space() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(dir.path()).unwrap();
        assert!(free > 0);
        assert!(DiskReserve::new(dir.path().into(), 0).shortfall().is_none(), "no reserve");
        assert!(DiskReserve::new(dir.path().into(), 1).shortfall().is_none());
        let reserve = std::sync::Arc::new(DiskReserve::new(dir.path().into(), free.saturating_mul(2)));
        let why = reserve.shortfall().expect("below a reserve twice the free space");
        assert!(why.contains("disk reserve"), "{why}");
        assert!((reserve.admission())().is_err_and(|e| e.contains("disk reserve")));
    }

    #[test]
    fn the_open_directory_reads_the_free_space_of_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let opened = std::fs::File::open(dir.path()).unwrap();
        let (by_path, by_handle) = (free_bytes(dir.path()).unwrap(), free_bytes_of(&opened).unwrap());
        assert!(by_handle > 0);
        // The same filesystem; other processes may write between the looks.
        assert!(by_path.abs_diff(by_handle) < 1 << 30, "{by_path} against {by_handle}");
        assert!(DiskReserve::new(dir.path().into(), 0).opened.is_some());
    }
}
