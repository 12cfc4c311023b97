//! Stored documents and the request log, under the domain: typed handles
//! over the engine's document store and the request log's own database.

pub(crate) mod disk_reserve;
pub(crate) mod documents;
pub(crate) mod error;
pub(crate) mod postgres;
pub(crate) mod request_log;

use std::path::Path;

/// A readable reason a database could not be opened.
pub(crate) fn describe_open_error(path: &Path, error: redb::DatabaseError) -> String {
    error::StoreError::Open { path: path.to_path_buf(), source: error }.to_string()
}
