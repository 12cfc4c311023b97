//! Why the console or one of its commands (`sika org create`, `sika
//! backup`) could not do what the operator asked, with the typed cause.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No token was given and the data directory's could not be read.
    #[error("no --token given and cannot read {}: {source}", path.display())]
    TokenUnreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The token given, or the file's, is empty.
    #[error("the operator token is empty (from --token or {})", .0.display())]
    TokenEmpty(PathBuf),
    /// The HTTP client could not be made.
    #[error("cannot build the HTTP client: {0}")]
    Client(#[source] reqwest::Error),
    /// The admin API did not answer.
    #[error("cannot reach the admin API at {url}: {source}; is the node running?")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    /// The admin API answered something that is not its JSON.
    #[error("the admin API answered {status}: {source}")]
    Unreadable {
        status: reqwest::StatusCode,
        #[source]
        source: reqwest::Error,
    },
    /// The admin API refused, with its message and the field it named.
    #[error("the admin API refused: {status}: {message}{}", field.as_ref().map(|f| format!(" ({f})")).unwrap_or_default())]
    Refused { status: reqwest::StatusCode, message: String, field: Option<String> },
    /// An answer or a request body did not have the expected shape.
    #[error("unexpected JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The terminal could not be opened, drawn or read.
    #[error("cannot {doing} the terminal: {source}")]
    Terminal {
        doing: &'static str,
        #[source]
        source: std::io::Error,
    },
}
