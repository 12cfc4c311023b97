//! One-shot operator commands over the admin API, for scripts: `sika org
//! create`, `sika reconcile`, and `sika backup` while the node runs. They take the operator
//! token the way the console does.

use crate::error::ConsoleError;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use sika_api::backup::{Backup, BackupEnvelope, BackupRequest};
use sika_api::reconciliation::Reconciliation;

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
) -> Result<String, ConsoleError> {
    let owner_name = new
        .owner_name
        .map(str::to_string)
        .unwrap_or_else(|| new.owner_email.split('@').next().unwrap_or(new.owner_email).to_string());
    let body = json!({"name": new.name, "owner": {"email": new.owner_email, "name": owner_name}});
    let answer = post(data_dir, admin_url, token, "organizations", &body, Duration::from_secs(30))?;
    Ok(serde_json::to_string_pretty(&answer)?)
}

/// `GET /admin/v1/live/reconciliation?from=&to=` on the node at
/// `admin_url`: the answer as the API gives it (its fields in the API's
/// order), pretty-printed, or the
/// node's error message with the field it names. The node reads every page
/// the provider lists, which takes a while on a busy account.
pub fn reconcile(
    data_dir: &Path,
    admin_url: &str,
    token: Option<String>,
    from: &str,
    to: &str,
) -> Result<String, ConsoleError> {
    let query = [("from", from), ("to", to)];
    let answer = get(data_dir, admin_url, token, "live/reconciliation", &query, Duration::from_secs(600))?;
    // Through the wire type: its fields in the API's order, pretty-printed.
    let reconciliation: Reconciliation = serde_json::from_value(answer)?;
    Ok(serde_json::to_string_pretty(&reconciliation)?)
}

/// `POST /admin/v1/backup` on the node at `admin_url`: the running node
/// copies its databases into `to` (an absolute path on its machine).
pub fn backup(
    data_dir: &Path,
    admin_url: &str,
    token: Option<String>,
    to: &Path,
) -> Result<Backup, ConsoleError> {
    let body = serde_json::to_value(BackupRequest { to: to.display().to_string() })?;
    // A large ledger takes a while to copy.
    let answer = post(data_dir, admin_url, token, "backup", &body, Duration::from_secs(3600))?;
    Ok(serde_json::from_value::<BackupEnvelope>(answer)?.backup)
}

/// `GET /admin/v1/<path>` with `query`; the answer, or the node's error
/// message with the field it names.
fn get(
    data_dir: &Path,
    admin_url: &str,
    token: Option<String>,
    path: &str,
    query: &[(&str, &str)],
    timeout: Duration,
) -> Result<Value, ConsoleError> {
    let token = crate::operator_token(data_dir, token)?;
    let client =
        reqwest::blocking::Client::builder().timeout(timeout).build().map_err(ConsoleError::Client)?;
    let url = format!("{}/admin/v1/{path}", admin_url.trim_end_matches('/'));
    let request = client.get(&url).bearer_auth(token).query(query);
    answer_of(
        request.send().map_err(|source| ConsoleError::Unreachable { url: admin_url.to_string(), source })?,
    )
}

/// The JSON answer of a successful response, or the node's refusal.
fn answer_of(response: reqwest::blocking::Response) -> Result<Value, ConsoleError> {
    let status = response.status();
    let answer: Value = response.json().map_err(|source| ConsoleError::Unreadable { status, source })?;
    if !status.is_success() {
        let message = answer["message"].as_str().unwrap_or("no message").to_string();
        let field = answer["details"]["field"].as_str().map(str::to_string);
        return Err(ConsoleError::Refused { status, message, field });
    }
    Ok(answer)
}

/// `POST /admin/v1/<path>` with `body`; the answer, or the node's error
/// message with the field it names.
fn post(
    data_dir: &Path,
    admin_url: &str,
    token: Option<String>,
    path: &str,
    body: &Value,
    timeout: Duration,
) -> Result<Value, ConsoleError> {
    let token = crate::operator_token(data_dir, token)?;
    let client =
        reqwest::blocking::Client::builder().timeout(timeout).build().map_err(ConsoleError::Client)?;
    let url = format!("{}/admin/v1/{path}", admin_url.trim_end_matches('/'));
    let response = client
        .post(&url)
        .bearer_auth(token)
        .json(body)
        .send()
        .map_err(|source| ConsoleError::Unreachable { url: admin_url.to_string(), source })?;
    answer_of(response)
}
