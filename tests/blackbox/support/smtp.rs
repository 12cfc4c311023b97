//! A real SMTP server on loopback (`smtp_server.py`, Python's aiosmtpd,
//! installed by `.ci/run`) that keeps every message it accepts, decoded,
//! for the email tests to read; files in its directory make it refuse or
//! stall.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

pub struct SmtpServer {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
}

impl Drop for SmtpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl SmtpServer {
    /// Starts the server, or says why it cannot (`cannot_run` fails the
    /// test under CI).
    pub fn start(test: &str) -> Option<SmtpServer> {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/blackbox/support/smtp_server.py");
        let dir = tempfile::Builder::new().prefix("sika-smtp-").tempdir().unwrap();
        let child = Command::new("python3")
            .arg(script)
            .arg(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                super::cannot_run(test, &format!("python3 cannot start: {e}"));
                return None;
            }
        };
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let Some(port) = line.trim().strip_prefix("PORT ").and_then(|p| p.parse().ok()) else {
            let mut why = String::new();
            let _ = std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut why);
            let _ = child.kill();
            super::cannot_run(
                test,
                &format!("the SMTP server did not start (is aiosmtpd installed?): {why}"),
            );
            return None;
        };
        Some(SmtpServer { child, port, dir })
    }

    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// The `[email]` section for a node sending here.
    pub fn config(&self, extra: &str) -> String {
        format!("[email]\nsmtp_url = \"{}\"\nfrom = \"Sika <noreply@sika.example>\"\n{extra}\n", self.url())
    }

    fn steer(&self, name: &str, value: Option<&str>) {
        let path = self.dir.path().join(name);
        match value {
            Some(value) => std::fs::write(path, value).unwrap(),
            None => {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// Refuses every message with `code` (`Some("451")`) until `None`.
    pub fn refuse(&self, code: Option<&str>) {
        self.steer("refuse", code);
    }

    /// Waits `seconds` before answering each message's DATA.
    pub fn delay(&self, seconds: Option<f64>) {
        self.steer("delay", seconds.map(|s| s.to_string()).as_deref());
    }

    /// Every message accepted so far, in order of arrival.
    pub fn messages(&self) -> Vec<Value> {
        let mut names: Vec<_> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        names.sort();
        names.iter().map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()).collect()
    }

    /// The messages to `to`.
    pub fn to(&self, to: &str) -> Vec<Value> {
        self.messages().into_iter().filter(|m| m["to"].as_str().is_some_and(|t| t.contains(to))).collect()
    }

    /// Waits until `count` messages to `to` arrived, and returns them.
    pub async fn wait_for(&self, to: &str, count: usize) -> Vec<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            let found = self.to(to);
            if found.len() >= count {
                return found;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{count} email(s) to {to} did not arrive; received: {:?}",
                self.messages()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The link in an email's text that starts with `prefix`.
pub fn link(message: &Value, prefix: &str) -> String {
    let text = message["text"].as_str().unwrap();
    let start = text.find(prefix).unwrap_or_else(|| panic!("no link {prefix} in {text}"));
    text[start..].split_whitespace().next().unwrap().to_string()
}
