//! `/v1/files`: uploads (JSON with base64 contents) to attach to dispute
//! messages, their descriptions and their bytes, served through a
//! utoipa-axum router (`sika_api::files`).

use std::sync::Arc;

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sika_api::files::{CreateFile, DeletedFile, DeletedFileEnvelope, File, FileContents, FileEnvelope};
use sika_api::{BodyRefusals, ErrorBody, Id, ListPage, ListQuery, PageRefusals, ReadRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::ApiResult;
use crate::domain::files::StoredFile;
use crate::domain::pagination::Lists;
use crate::domain::stack::Stack;
use crate::domain::{disputes, files};
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::found::Loaded;

/// Where `stack` keeps its files.
pub(crate) fn store(stack: &Stack) -> files::Store<'_> {
    files::Store {
        engine: &stack.engine,
        writes: &stack.file_writes,
        bytes_max: stack.config.files_bytes_max,
    }
}

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(upload, list)).routes(routes!(read, remove)).routes(routes!(contents))
}

/// Upload a file to attach to dispute messages
///
/// The contents travel base64-encoded in a JSON body, at most 512 KiB once
/// decoded. A file never changes once stored. An organization's files
/// take at most `files_bytes_max` bytes on each stack (100 MiB unless the
/// operator set another); `DELETE /v1/files/{id}` frees what a file took.
#[utoipa::path(post, path = "/v1/files", operation_id = "createFile",
    request_body = CreateFile, security(("bearer" = ["disputes:write"])),
    responses((status = 201, description = "The file's description", body = FileEnvelope),
        (status = 400, description = "A field is missing or invalid, or the contents are empty, not base64 or larger than 512 KiB (`validation_error`, with `details.field`)", body = ErrorBody),
        (status = 413, description = "The body is larger than 1 MiB (`payload_too_large`), or the file would take the organization's files past their quota on this stack (`validation_error`, with `details.limit` and `details.used` in bytes)", body = ErrorBody),
        BodyRefusals),
)]
async fn upload(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateFile>,
) -> ApiResult<(StatusCode, Json<FileEnvelope>)> {
    let file = files::upload(store(&stack), principal.organization(), body).await?;
    Ok((StatusCode::CREATED, Json(FileEnvelope { file })))
}

/// One file's description
#[utoipa::path(get, path = "/v1/files/{id}", operation_id = "getFile",
    params(Id<FileEnvelope>), security(("bearer" = ["disputes:read"])),
    responses((status = 200, description = "The file's description", body = FileEnvelope),
        ReadRefusals<FileEnvelope>),
)]
async fn read(Loaded { record, .. }: Loaded<StoredFile>) -> ApiResult<Json<FileEnvelope>> {
    Ok(Json(FileEnvelope { file: record.render() }))
}

/// Delete a file no dispute message attaches
///
/// Its description and bytes are removed and what it took is given back to
/// the organization's file quota on this stack. A file a dispute message
/// attaches is kept with the message.
#[utoipa::path(delete, path = "/v1/files/{id}", operation_id = "deleteFile",
    params(Id<FileEnvelope>), security(("bearer" = ["disputes:write"])),
    responses((status = 200, description = "The file is deleted", body = DeletedFileEnvelope),
        (status = 409, description = "A dispute message attaches the file (`invalid_state`, with `details.messageId`)", body = ErrorBody),
        ReadRefusals<FileEnvelope>),
)]
async fn remove(Loaded { record, stack, .. }: Loaded<StoredFile>) -> ApiResult<Json<DeletedFileEnvelope>> {
    disputes::delete_file(&crate::http::routes::disputes::deps(&stack), &record).await?;
    Ok(Json(DeletedFileEnvelope { file: DeletedFile { id: record.id, deleted: true } }))
}

/// A file's bytes, as a download
///
/// Answered with the file's stored content type (shown here as
/// `application/octet-stream`), as an attachment, exactly the bytes
/// uploaded.
#[utoipa::path(get, path = "/v1/files/{id}/contents", operation_id = "getFileContents",
    params(Id<FileEnvelope>), security(("bearer" = ["disputes:read"])),
    responses(
        (status = 200, description = "The file's bytes, with its content type", content_type = "application/octet-stream", body = FileContents),
        ReadRefusals<FileEnvelope>),
)]
async fn contents(Loaded { record: file, snapshot, .. }: Loaded<StoredFile>) -> ApiResult<Response> {
    Ok(download(&file, files::download(&snapshot, &file)?))
}

/// A file's bytes as a download: its stored content type, as an
/// attachment under its name, never sniffed or cached (the merchant's read
/// and the operator's of a dispute's evidence).
pub(crate) fn download(file: &StoredFile, bytes: Vec<u8>) -> Response {
    let content_type = HeaderValue::from_str(&file.content_type)
        .unwrap_or_else(|_| HeaderValue::from_static(files::DEFAULT_CONTENT_TYPE));
    let disposition = HeaderValue::from_str(&files::content_disposition(&file.name))
        .unwrap_or_else(|_| HeaderValue::from_static("attachment"));
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_DISPOSITION, disposition),
        (header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (header::CACHE_CONTROL, HeaderValue::from_static("private, no-store")),
    ];
    (headers, bytes).into_response()
}

/// Uploaded files, newest first
#[utoipa::path(get, path = "/v1/files", operation_id = "listFiles",
    params(ListQuery), security(("bearer" = ["disputes:read"])),
    responses((status = 200, description = "One page of file descriptions", body = ListPage<File>),
        PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<File>>> {
    let lists = Lists::from(&stack);
    Ok(Json(files::list(lists, principal.organization(), &query)?))
}
