//! A throwaway PostgreSQL cluster for tests: `initdb` in a temporary
//! directory, the server on a free loopback port, run as an unprivileged
//! user (PostgreSQL refuses root), stopped and removed on drop. The
//! engine's and the node's tests include this file by path.
//!
//! Without PostgreSQL's binaries the tests that need it skip, except under
//! CI (`CI` set), where `.ci/run` installs Debian's `postgresql` and a
//! missing server is a failure.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

/// PostgreSQL's server binaries: Debian's versioned folder, newest first,
/// then `PATH`.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path().join("bin"))
        .filter(|bin| bin.join("initdb").exists() && bin.join("pg_ctl").exists())
        .collect();
    found.sort();
    if let Some(bin) = found.pop() {
        return Some(bin);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|dir| dir.join("initdb").exists() && dir.join("pg_ctl").exists())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Whether this process runs as root (then the server runs as `postgres`).
fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The user the server runs as, when this process is root.
fn server_user() -> &'static str {
    let has_postgres =
        Command::new("id").arg("postgres").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if has_postgres.is_ok_and(|s| s.success()) { "postgres" } else { "nobody" }
}

impl Cluster {
    /// Starts a cluster, or `None` (the test skips) where PostgreSQL is not
    /// installed and this is not CI.
    pub fn start() -> Option<Cluster> {
        let Some(bin) = bin_dir() else {
            assert!(std::env::var_os("CI").is_none(), "PostgreSQL is not installed (.ci/run installs it)");
            eprintln!("skipped: PostgreSQL is not installed");
            return None;
        };
        static STARTED: AtomicUsize = AtomicUsize::new(0);
        let n = STARTED.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("sika-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let cluster = Cluster { dir, bin, port: free_port() };
        if is_root() {
            let user = server_user();
            let status = Command::new("chown").args(["-R", user]).arg(&cluster.dir).status().unwrap();
            assert!(status.success(), "chown of the cluster's directory");
        }
        let data = cluster.data();
        cluster.run("initdb", &["-D", &data, "-U", "sika", "--auth=trust", "--no-sync", "-E", "UTF8"]);
        cluster.run("pg_ctl", &["-D", &data, "-l", &cluster.log(), "-w", "-o", &cluster.options(), "start"]);
        cluster.wait_ready();
        Some(cluster)
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn log(&self) -> String {
        self.dir.join("server.log").display().to_string()
    }

    fn options(&self) -> String {
        format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_buffers=32MB",
            self.port,
            self.dir.display()
        )
    }

    /// One of the server's binaries, run as the server's user when root.
    fn command(&self, binary: &str) -> Command {
        let program = self.bin.join(binary);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", server_user(), "--"]).arg(&program);
            c
        } else {
            Command::new(&program)
        }
    }

    /// Runs one of the server's binaries, which must succeed.
    fn run(&self, binary: &str, args: &[&str]) {
        let output = self.command(binary).args(args).stdin(Stdio::null()).output().unwrap();
        assert!(
            output.status.success(),
            "{binary} failed: {}{}\nserver log: {}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr),
            std::fs::read_to_string(self.log()).unwrap_or_default()
        );
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "PostgreSQL did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A connection string for a new, empty database named `name`.
    pub fn database(&self, name: &str) -> String {
        let admin = format!("postgres://sika@127.0.0.1:{}/postgres", self.port);
        let sql = format!("CREATE DATABASE \"{name}\"");
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut client = postgres::Client::connect(&admin, postgres::NoTls).unwrap();
                client.batch_execute(&sql).unwrap();
            })
            .join()
            .unwrap()
        });
        format!("postgres://sika@127.0.0.1:{}/{name}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Cluster {
    /// Stops the server at once and removes its files.
    pub fn stop(&self) {
        let data = self.data();
        let _ = self.command("pg_ctl").args(["-D", &data, "-m", "immediate", "-w", "stop"]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
