//! `POST /admin/v1/backup`: a consistent copy of every database of the
//! node's data directory, made while it serves (what `sika backup` asks a
//! running node for).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Where to write the copy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schema(examples(json!({"to": "/var/backups/sika/2026-11-24"})))]
pub struct BackupRequest {
    /// An absolute path on the node's machine: a directory that does not
    /// exist yet (it is created, mode 0700) or is empty.
    #[schema(example = "/var/backups/sika/2026-11-24")]
    pub to: String,
}

/// One file of a backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BackupFile {
    /// The file's name in the data directory (`live.redb`, `node.redb`, …).
    pub name: String,
    pub tables: u64,
    pub entries: u64,
}

/// A finished backup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Backup {
    pub to: String,
    /// Whether the node was running (the copy was made by it).
    pub online: bool,
    pub files: Vec<BackupFile>,
    pub duration_ms: u64,
}

impl Backup {
    /// The one line `sika backup` prints.
    pub fn summary(&self, from: &str) -> String {
        let files: Vec<String> =
            self.files.iter().map(|f| format!("{} ({} entries)", f.name, f.entries)).collect();
        format!(
            "backed up {from} to {} ({}, {} ms): {}",
            self.to,
            if self.online { "online" } else { "offline" },
            self.duration_ms,
            files.join(", ")
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BackupEnvelope {
    pub backup: Backup,
}
