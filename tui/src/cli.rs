//! One-shot operator commands over the admin API, for scripts: `sika org
//! create`. They take the operator token the way the console does.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

/// What `sika org create` asks for.
pub struct NewOrganization<'a> {
    pub name: &'a str,
    pub owner_email: &'a str,
    /// Defaults to the part of the email before `@`.
    pub owner_name: Option<&'a str>,
}

/// `POST /admin/v1/organizations` on the node at `admin_url`; returns the
/// answer (the organization and the owner's invitation) as pretty JSON, or
/// the node's error message.
pub fn create_organization(
    data_dir: &Path,
    admin_url: &str,
    token: Option<String>,
    new: &NewOrganization<'_>,
) -> Result<String, String> {
    let token = crate::operator_token(data_dir, token)?;
    let owner_name = new
        .owner_name
        .map(str::to_string)
        .unwrap_or_else(|| new.owner_email.split('@').next().unwrap_or(new.owner_email).to_string());
    let body = json!({"name": new.name, "owner": {"email": new.owner_email, "name": owner_name}});
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let url = format!("{}/admin/v1/organizations", admin_url.trim_end_matches('/'));
    let response = client
        .post(&url)
        .bearer_auth(token)
        .json(&body)
        .send()
        .map_err(|e| format!("cannot reach the admin API at {admin_url}: {e}; is the node running?"))?;
    let status = response.status();
    let answer: Value = response.json().map_err(|e| format!("the admin API answered {status}: {e}"))?;
    if !status.is_success() {
        let message = answer["message"].as_str().unwrap_or("no message");
        let field = answer["details"]["field"].as_str().map(|f| format!(" ({f})")).unwrap_or_default();
        return Err(format!("the admin API refused: {status}: {message}{field}"));
    }
    serde_json::to_string_pretty(&answer).map_err(|e| e.to_string())
}
