//! `sika backup --data-dir DIR --to DEST`: asks the running node for the
//! copy over its admin API (the operator token is read from the data
//! directory) when a node holds the directory, and otherwise makes it here.

use std::path::Path;

use sika_api::backup::{BackupEnvelope, BackupRequest};

use crate::domain::backup;

/// Backs up `data_dir` into `dest` and returns the line to print.
pub fn run(data_dir: &Path, dest: &Path, admin_url: &str) -> Result<String, String> {
    let dest = std::path::absolute(dest).map_err(|e| format!("cannot resolve {}: {e}", dest.display()))?;
    let from = data_dir.display().to_string();
    let backup = if backup::in_use(data_dir)? {
        online(data_dir, &dest, admin_url)?
    } else {
        backup::offline(data_dir, &dest)?
    };
    Ok(backup.summary(&from))
}

fn online(data_dir: &Path, dest: &Path, admin_url: &str) -> Result<sika_api::backup::Backup, String> {
    let token_path = data_dir.join("admin-token");
    let token = std::fs::read_to_string(&token_path).map_err(|e| {
        format!("a node is running on {}; cannot read {}: {e}", data_dir.display(), token_path.display())
    })?;
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let url = format!("{}/admin/v1/backup", admin_url.trim_end_matches('/'));
    let request = BackupRequest { to: dest.display().to_string() };
    runtime.block_on(async {
        let response =
            reqwest::Client::new().post(&url).bearer_auth(token.trim()).json(&request).send().await.map_err(
                |e| {
                    format!(
                        "a node is running on {}, but its admin API at {url} did not answer: {e}",
                        data_dir.display()
                    )
                },
            )?;
        let status = response.status();
        let text = response.text().await.map_err(|e| e.to_string())?;
        if status.as_u16() != 201 {
            let message = serde_json::from_str::<serde_json::Value>(&text)
                .ok()
                .and_then(|v| v["error"]["message"].as_str().map(str::to_string))
                .unwrap_or(text);
            return Err(format!("the node refused the backup ({status}): {message}"));
        }
        serde_json::from_str::<BackupEnvelope>(&text).map(|e| e.backup).map_err(|e| e.to_string())
    })
}
