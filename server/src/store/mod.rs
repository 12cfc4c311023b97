//! Stored documents and the request log, under the domain: typed handles
//! over the engine's document store and the request log's own database.

pub(crate) mod disk_reserve;
pub(crate) mod documents;
pub(crate) mod postgres;
pub(crate) mod request_log;

use std::path::Path;

/// A readable reason a database could not be opened.
pub(crate) fn describe_open_error(path: &Path, error: redb::DatabaseError) -> String {
    match error {
        redb::DatabaseError::DatabaseAlreadyOpen => format!(
            "the database {} is locked: another sika process is using this data directory",
            path.display()
        ),
        other => format!("cannot open {}: {other}", path.display()),
    }
}
