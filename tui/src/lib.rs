//! # sika-tui
//!
//! The operator console. It speaks HTTP to the admin API like any remote
//! operator would, and links neither the server nor the engine.

use std::path::Path;

/// Runs the console against the admin API at `admin_url`.
pub fn run(data_dir: &Path, admin_url: &str, token: Option<String>) -> Result<(), String> {
    let token_path = data_dir.join("admin-token");
    let _token = match token {
        Some(t) => t,
        None => std::fs::read_to_string(&token_path)
            .map(|t| t.trim().to_string())
            .map_err(|e| format!("no --token given and cannot read {}: {e}", token_path.display()))?,
    };
    Err(format!(
        "the operator console is not available in this build yet; use the admin API at {admin_url}/admin/v1"
    ))
}
