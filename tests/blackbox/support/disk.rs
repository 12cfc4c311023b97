//! A small real filesystem for the tests of what a node does when its disk
//! runs short.

/// A tmpfs mounted at a new directory, unmounted when dropped.
pub struct SmallFilesystem(tempfile::TempDir);

impl SmallFilesystem {
    /// `mib` MiB, or `None` where this machine does not let the test mount
    /// one (no privilege).
    pub fn mount(mib: u32) -> Option<SmallFilesystem> {
        let dir = tempfile::Builder::new().prefix("sika-small-fs-").tempdir().ok()?;
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m,mode=0700"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(SmallFilesystem(dir))
    }

    pub fn path(&self) -> &std::path::Path {
        self.0.path()
    }
}

impl Drop for SmallFilesystem {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}
