//! Files: uploads to attach to dispute messages. A file never changes once
//! stored; one no dispute message attaches can be deleted.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// `POST /v1/files`: the contents travel base64-encoded in JSON.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(examples(json!({"name": "receipt.pdf", "contentType": "application/pdf", "data": "JVBERi0xLjQK"})))]
pub struct CreateFile {
    /// 1 to 255 characters once trimmed, no control characters.
    #[schema(min_length = 1, max_length = 255, example = "receipt.pdf")]
    pub name: String,
    /// A media type such as `image/png`; `application/octet-stream` when
    /// omitted.
    #[schema(max_length = 255, example = "application/pdf")]
    pub content_type: Option<String>,
    /// The contents in standard base64 (RFC 4648, with padding): 1 byte to
    /// 512 KiB once decoded, within the organization's file quota on the
    /// stack (`files_bytes_max`, 100 MiB unless the operator set another).
    #[schema(content_encoding = "base64")]
    pub data: String,
}

/// A file's description as every response shows it (never its contents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct File {
    #[schema(example = "file_0VbowfAbCdEf", pattern = "^file_")]
    pub id: String,
    pub name: String,
    pub content_type: String,
    /// The decoded size in bytes.
    pub size: u64,
    /// Lower-case hex of the contents' SHA-256.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub sha256: String,
    /// Where the contents are read, with the same key:
    /// `/v1/files/{id}/contents`.
    pub url: String,
    pub created_at: String,
}

/// `{file}`: what uploading (201) and reading a file answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FileEnvelope {
    pub file: File,
}

/// A file that was deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeletedFile {
    #[schema(example = "file_0VbowfAbCdEf", pattern = "^file_")]
    pub id: String,
    /// Always `true`.
    pub deleted: bool,
}

/// `{file}`: what deleting a file answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct DeletedFileEnvelope {
    pub file: DeletedFile,
}

/// A file's bytes as `GET /v1/files/{id}/contents` answers them: not JSON,
/// but exactly the bytes uploaded, with the file's content type.
pub struct FileContents;

impl utoipa::PartialSchema for FileContents {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)))
            .description(Some("The file's bytes, exactly as uploaded."))
            .into()
    }
}

impl ToSchema for FileContents {}
