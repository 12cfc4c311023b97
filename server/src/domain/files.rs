//! Files uploaded to attach to dispute messages.
//!
//! A file is two documents: its description (`files`, listed under the
//! organization) and its bytes (`file_contents`), so lists never load
//! contents. Files are immutable once stored.

use base64::Engine as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sika_api::files::CreateFile;
use sika_engine::{Command, Document, Snapshot};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::timestamp;
use crate::domain::stack::Stack;

pub(crate) const COLLECTION: &str = "files";
pub(crate) const CONTENTS: &str = "file_contents";
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

/// Stores the description and the contents in one transaction.
pub(crate) async fn save(stack: &Stack, file: &StoredFile, contents: Vec<u8>) -> ApiResult<()> {
    let documents = vec![
        crate::store::documents::document(COLLECTION, &file.id, file, Some((&file.organization, COLLECTION))),
        Document { collection: CONTENTS.into(), id: file.id.clone(), body: contents, list: None },
    ];
    stack.engine.execute(Command::PutDocuments { documents }).await?;
    Ok(())
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
