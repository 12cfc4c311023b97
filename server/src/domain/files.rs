//! Files uploaded to attach to dispute messages.
//!
//! A file is two documents: its description (`files`, listed under the
//! organization) and its bytes (`file_contents`), so lists never load
//! contents. Files are immutable once stored.
//!
//! **Quota.** What an organization's files take on a stack is one
//! document (`file_usage`, keyed by organization), changed in the same
//! `Command::Save` as the file it counts and expected unchanged by it, so
//! racing uploads cannot pass `files_bytes_max` together (a stack's
//! uploads and deletes also queue on `Stack::file_writes`, so they do not
//! keep conflicting). An organization with files from before the quota
//! has no such document until its next upload or delete, which counts its
//! files once.
//!
//! **Deleting.** A dispute message that attaches a file writes a marker
//! (`file_attached`, keyed by file) in its own save, which also expects the
//! file unchanged; a delete expects the marker absent. So a delete racing
//! a message either commits first (the message then finds no file) or is
//! refused `409 invalid_state`. Messages from before the markers are found
//! by `disputes::delete_file`, which is where a delete starts.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sika_api::ErrorCode;
use sika_api::ListPage;
use sika_api::files::CreateFile;
use sika_engine::{Command, Document, Engine, EngineError, Expected, Snapshot};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::{Lists, PageQuery};
use crate::domain::render::timestamp;
use crate::store::documents::{decode, encode};

/// Where a stack keeps its files: its ledger, the lock its uploads and
/// deletes queue on, and the quota of each organization's files.
#[derive(Clone, Copy)]
pub(crate) struct Store<'a> {
    pub engine: &'a Engine,
    /// Held by an upload or delete from reading the organization's usage
    /// to storing the new one, so they queue rather than conflict.
    pub writes: &'a tokio::sync::Mutex<()>,
    /// `files_bytes_max`: what one organization's files may take.
    pub bytes_max: u64,
}

pub(crate) const COLLECTION: &str = "files";
pub(crate) const CONTENTS: &str = "file_contents";
/// Organization → the bytes its files take on the stack (a `u64`).
const USAGE: &str = "file_usage";
/// File id → the id of the first dispute message that attached it.
const ATTACHED: &str = "file_attached";
/// Attempts of one upload or delete that keeps meeting concurrent changes.
const SAVE_ATTEMPTS_MAX: usize = 10;
/// The largest file, decoded (the request body limit is 1 MiB, and base64
/// makes 512 KiB into about 683 KiB).
pub(crate) const SIZE_MAX: usize = 512 * 1024;
pub(crate) const NAME_CHARS_MAX: usize = 255;
pub(crate) const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredFile {
    pub id: String,
    pub organization: String,
    pub name: String,
    pub content_type: String,
    pub size: u64,
    /// Lower-case hex of the contents' SHA-256.
    pub sha256: String,
    pub created_at: i64,
}

impl StoredFile {
    /// Where the contents are read (authenticated like every `/v1` path).
    pub(crate) fn url(&self) -> String {
        format!("/v1/files/{}/contents", self.id)
    }

    /// The file as every response shows it.
    pub(crate) fn render(&self) -> sika_api::files::File {
        sika_api::files::File {
            id: self.id.clone(),
            name: self.name.clone(),
            content_type: self.content_type.clone(),
            size: self.size,
            sha256: self.sha256.clone(),
            url: self.url(),
            created_at: timestamp(self.created_at),
        }
    }
}

/// Checks a name: 1 to 255 characters after trimming, no control characters.
pub(crate) fn check_name(field: &str, name: &str) -> ApiResult<String> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > NAME_CHARS_MAX {
        return Err(ApiError::validation(field, format!("must be 1 to {NAME_CHARS_MAX} characters")));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::validation(field, "must not contain control characters"));
    }
    Ok(name.to_string())
}

/// A media type such as `image/png` or `text/plain; charset=utf-8`.
fn check_content_type(content_type: &str) -> ApiResult<String> {
    let text = content_type.trim();
    let (essence, _) = text.split_once(';').unwrap_or((text, ""));
    let token =
        |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    let valid = text.len() <= 255
        && text.bytes().all(|b| (0x20..0x7f).contains(&b))
        && essence.trim().split_once('/').is_some_and(|(t, s)| token(t) && token(s));
    if !valid {
        return Err(ApiError::validation("contentType", "must be a media type such as image/png"));
    }
    Ok(text.to_ascii_lowercase())
}

/// Checks an upload and decodes its contents.
pub(crate) fn build(request: CreateFile, organization: &str, now: i64) -> ApiResult<(StoredFile, Vec<u8>)> {
    let name = check_name("name", &request.name)?;
    let content_type = match &request.content_type {
        None => DEFAULT_CONTENT_TYPE.to_string(),
        Some(t) => check_content_type(t)?,
    };
    // Reject an oversized upload before decoding it.
    if request.data.len() > SIZE_MAX.div_ceil(3) * 4 {
        return Err(ApiError::validation("data", format!("must decode to at most {SIZE_MAX} bytes")));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(request.data.as_bytes())
        .map_err(|_| ApiError::validation("data", "must be standard base64 (RFC 4648, with padding)"))?;
    if bytes.is_empty() {
        return Err(ApiError::validation("data", "must not be empty"));
    }
    if bytes.len() > SIZE_MAX {
        return Err(ApiError::validation("data", format!("must decode to at most {SIZE_MAX} bytes")));
    }
    let sha256 = Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect();
    let file = StoredFile {
        id: sika_engine::ids::new_id("file"),
        organization: organization.to_string(),
        name,
        content_type,
        size: bytes.len() as u64,
        sha256,
        created_at: now,
    };
    Ok((file, bytes))
}

/// Stores the description and the contents in one transaction, with the
/// organization's usage grown by the file's size: `413 validation_error`
/// (`details.limit`, `details.used`) when that would pass the stack's
/// `files_bytes_max`, and then nothing is stored.
pub(crate) async fn save(store: Store<'_>, file: &StoredFile, contents: Vec<u8>) -> ApiResult<()> {
    let limit = store.bytes_max;
    let description =
        crate::store::documents::document(COLLECTION, &file.id, file, Some((&file.organization, COLLECTION)));
    let contents = Document { collection: CONTENTS.into(), id: file.id.clone(), body: contents, list: None };
    let _queued = store.writes.lock().await;
    for _ in 0..SAVE_ATTEMPTS_MAX {
        let snapshot = store.engine.read()?;
        let usage = Usage::read(&snapshot, &file.organization)?;
        let Some(total) = usage.bytes.checked_add(file.size).filter(|total| *total <= limit) else {
            return Err(ApiError::over_quota(
                "data",
                format!(
                    "this organization's files would take more than {limit} bytes on this stack ({} in use); \
                     delete files it no longer needs with DELETE /v1/files/{{id}}",
                    usage.bytes
                ),
                limit,
                usage.bytes,
            ));
        };
        let documents =
            vec![description.clone(), contents.clone(), Usage::document(&file.organization, total)];
        let command =
            Command::Save { expect: vec![usage.expected(&file.organization)], documents, events: Vec::new() };
        match store.engine.execute(command).await {
            Ok(_) => return Ok(()),
            Err(EngineError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(busy(&file.organization))
}

/// Deletes a file with its contents and gives its bytes back to the
/// organization's quota: `409 invalid_state` when a dispute message
/// attached it since the markers were written (older messages are
/// `disputes::delete_file`'s to find), `404` when it is already gone.
pub(crate) async fn delete(store: Store<'_>, file: &StoredFile) -> ApiResult<()> {
    let _queued = store.writes.lock().await;
    for _ in 0..SAVE_ATTEMPTS_MAX {
        let snapshot = store.engine.read()?;
        let Some(description) = snapshot.document(COLLECTION, &file.id)? else {
            return Err(ApiError::not_found(format!("no file '{}' in this organization", file.id)));
        };
        if let Some(message) = attached_by(&snapshot, &file.id)? {
            return Err(attached(&file.id, &message));
        }
        let usage = Usage::read(&snapshot, &file.organization)?;
        // Every stored file was counted: by its upload, or by the count of
        // an organization's files that first made its usage document.
        let remaining = usage.bytes.checked_sub(file.size).ok_or_else(|| {
            ApiError::internal_from(format!(
                "file '{}' of {} bytes is more than its organization's usage of {} bytes",
                file.id, file.size, usage.bytes
            ))
        })?;
        let expect = vec![
            Expected::unchanged(COLLECTION, &file.id, &description),
            Expected { collection: ATTACHED.into(), id: file.id.clone(), digest: None },
            usage.expected(&file.organization),
        ];
        let deleted = |collection: &str| Document {
            collection: collection.into(),
            id: file.id.clone(),
            body: Vec::new(),
            list: None,
        };
        let documents =
            vec![deleted(COLLECTION), deleted(CONTENTS), Usage::document(&file.organization, remaining)];
        match store.engine.execute(Command::Save { expect, documents, events: Vec::new() }).await {
            Ok(_) => return Ok(()),
            Err(EngineError::Conflict(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Err(busy(&file.organization))
}

/// Uploads a file for `organization`: its description.
pub(crate) async fn upload(
    store: Store<'_>,
    organization: &str,
    request: CreateFile,
) -> ApiResult<sika_api::files::File> {
    let (file, bytes) = build(request, organization, store.engine.now_ms())?;
    save(store, &file, bytes).await?;
    Ok(file.render())
}

/// One page of `organization`'s files, newest first.
pub(crate) fn list(
    lists: Lists<'_>,
    organization: &str,
    query: &PageQuery,
) -> ApiResult<ListPage<sika_api::files::File>> {
    lists.page_of_views(organization, COLLECTION, query, |snapshot, id| {
        Ok(load(snapshot, id)?.map(|f| f.render()))
    })
}

/// A file's bytes: `None` for a description stored without them, which
/// the node never writes.
pub(crate) fn download(snapshot: &Snapshot, file: &StoredFile) -> ApiResult<Vec<u8>> {
    contents(snapshot, &file.id)?
        .ok_or_else(|| ApiError::internal_from(format!("file '{}' has no contents", file.id)))
}

/// `409 invalid_state`: a dispute message attaches the file.
pub(crate) fn attached(file_id: &str, message_id: &str) -> ApiError {
    ApiError::new(
        ErrorCode::InvalidState,
        format!("file '{file_id}' is attached to dispute message '{message_id}' and is kept with it"),
    )
    .with_detail("field", "id")
    .with_detail("messageId", message_id)
}

/// The first dispute message that attached the file, by its marker.
pub(crate) fn attached_by(snapshot: &Snapshot, file_id: &str) -> ApiResult<Option<String>> {
    Ok(snapshot.document(ATTACHED, file_id)?.map(|body| decode(&body)).transpose()?)
}

/// What a dispute message's save carries for each file it attaches: the
/// file expected as it is (a delete committed first makes the save
/// conflict), and the marker that refuses later deletes. `None` when the
/// file is gone.
pub(crate) fn attach(
    snapshot: &Snapshot,
    file_id: &str,
    message_id: &str,
) -> ApiResult<Option<(Expected, Document)>> {
    let Some(description) = snapshot.document(COLLECTION, file_id)? else { return Ok(None) };
    let marker = match attached_by(snapshot, file_id)? {
        // The first message's marker stays; rewriting it would change nothing.
        Some(first) => crate::store::documents::document(ATTACHED, file_id, &first, None),
        None => crate::store::documents::document(ATTACHED, file_id, &message_id.to_string(), None),
    };
    Ok(Some((Expected::unchanged(COLLECTION, file_id, &description), marker)))
}

fn busy(organization: &str) -> ApiError {
    ApiError::from(EngineError::Conflict(format!(
        "organization '{organization}''s files kept changing; retry the request"
    )))
}

/// An organization's usage as read, with the document's body (absent for
/// an organization whose files predate the quota, or that has none).
struct Usage {
    bytes: u64,
    body: Option<Vec<u8>>,
}

impl Usage {
    fn read(snapshot: &Snapshot, organization: &str) -> ApiResult<Usage> {
        match snapshot.document(USAGE, organization)? {
            Some(body) => Ok(Usage { bytes: decode(&body)?, body: Some(body) }),
            None => Ok(Usage { bytes: count(snapshot, organization)?, body: None }),
        }
    }

    /// The usage document expected unchanged (or still absent).
    fn expected(&self, organization: &str) -> Expected {
        let digest = self.body.as_deref().map(sika_engine::commands::digest);
        Expected { collection: USAGE.into(), id: organization.into(), digest }
    }

    fn document(organization: &str, bytes: u64) -> Document {
        Document { collection: USAGE.into(), id: organization.into(), body: encode(&bytes), list: None }
    }
}

/// The bytes an organization's stored files take, counted from its list
/// (once: the usage document holds the total from then on).
fn count(snapshot: &Snapshot, organization: &str) -> ApiResult<u64> {
    const CHUNK: usize = 1_000;
    let (mut total, mut before) = (0u64, None);
    loop {
        let entries = snapshot.list(organization, COLLECTION, before, CHUNK)?;
        for (_, id) in &entries {
            if let Some(file) = load(snapshot, id)? {
                total = total.saturating_add(file.size);
            }
        }
        match entries.last() {
            Some((position, _)) if entries.len() == CHUNK => before = Some(*position),
            _ => return Ok(total),
        }
    }
}

pub(crate) fn load(snapshot: &Snapshot, id: &str) -> ApiResult<Option<StoredFile>> {
    Ok(crate::store::documents::load(snapshot, COLLECTION, id)?)
}

/// The organization's file `id`, or `None` (another organization's file
/// does not exist for it).
pub(crate) fn load_for(snapshot: &Snapshot, organization: &str, id: &str) -> ApiResult<Option<StoredFile>> {
    Ok(load(snapshot, id)?.filter(|f| f.organization == organization))
}

pub(crate) fn contents(snapshot: &Snapshot, id: &str) -> ApiResult<Option<Vec<u8>>> {
    Ok(snapshot.document(CONTENTS, id)?)
}

/// `Content-Disposition` for a download: always an attachment, the name
/// percent-encoded (RFC 6266 / 5987) so no header injection is possible.
pub(crate) fn content_disposition(name: &str) -> String {
    let encoded: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    format!("attachment; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &str, content_type: Option<&str>, data: &str) -> CreateFile {
        CreateFile { name: name.into(), content_type: content_type.map(Into::into), data: data.into() }
    }

    fn field(error: ApiError) -> String {
        error.details.unwrap()["field"].as_str().unwrap().to_string()
    }

    #[test]
    fn uploads_are_checked() {
        let (file, bytes) = build(request(" a.txt ", None, "aGVsbG8="), "org", 0).unwrap();
        assert_eq!(bytes, b"hello");
        assert_eq!(file.name, "a.txt");
        assert_eq!(file.content_type, DEFAULT_CONTENT_TYPE);
        assert_eq!(file.sha256, "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824");
        assert!(file.id.starts_with("file_"));
        assert_eq!(file.url(), format!("/v1/files/{}/contents", file.id));

        assert_eq!(field(build(request("", None, "aGVsbG8="), "org", 0).unwrap_err()), "name");
        assert_eq!(field(build(request(&"n".repeat(256), None, "aGVsbG8="), "org", 0).unwrap_err()), "name");
        assert_eq!(field(build(request("a", None, ""), "org", 0).unwrap_err()), "data");
        assert_eq!(field(build(request("a", None, "not base64!"), "org", 0).unwrap_err()), "data");
        assert_eq!(
            field(build(request("a", Some("nope"), "aGVsbG8="), "org", 0).unwrap_err()),
            "contentType"
        );
        let big = base64::engine::general_purpose::STANDARD.encode(vec![0u8; SIZE_MAX + 1]);
        assert_eq!(field(build(request("a", None, &big), "org", 0).unwrap_err()), "data");
        let max = base64::engine::general_purpose::STANDARD.encode(vec![7u8; SIZE_MAX]);
        assert_eq!(build(request("a", Some("Image/PNG"), &max), "org", 0).unwrap().0.size, SIZE_MAX as u64);
    }

    #[test]
    fn disposition_is_encoded() {
        assert_eq!(content_disposition("a b\r\n.pdf"), "attachment; filename*=UTF-8''a%20b%0D%0A.pdf");
    }
}
