//! `POST /admin/v1/backup`: the running node copies its databases (what
//! `sika backup` asks for when the node is up).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use sika_api::ErrorBody;
use sika_api::admin::AdminRefusals;
use sika_api::backup::{BackupEnvelope, BackupRequest};

use super::AdminState;
use crate::domain::backup;
use crate::domain::error::{ApiError, ApiResult};
use crate::http::extract::ApiJson;

/// Back up the node's databases while it serves
///
/// Copies both ledgers, `node.redb` and the request logs, each through one
/// read transaction, into `to` on the node's machine, after every write
/// acknowledged so far is in the ledgers' files: the copy holds every
/// acknowledged write from before the call. `sika verify --data-dir <to>`
/// passes on it and `sika serve --data-dir <to>` serves from it.
#[utoipa::path(post, path = "/admin/v1/backup", operation_id = "backUp",
    security(("operator" = [])), request_body = BackupRequest,
    responses((status = 201, description = "The backup, written and synced", body = BackupEnvelope),
        (status = 400, description = "`to` is not absolute, or not a new or empty directory (`validation_error`, `details.field` = `to`)", body = ErrorBody),
        (status = 409, description = "The node keeps its state in PostgreSQL: back up the database with its own tools (`invalid_state`)", body = ErrorBody),
        (status = 500, description = "Writing the copy failed (the node's log says why)", body = ErrorBody),
        AdminRefusals),
)]
pub(super) async fn back_up(
    State(state): State<Arc<AdminState>>,
    ApiJson(request): ApiJson<BackupRequest>,
) -> ApiResult<(StatusCode, Json<BackupEnvelope>)> {
    let dest = std::path::PathBuf::from(&request.to);
    let backup = tokio::task::spawn_blocking(move || {
        let node = backup::Node {
            stacks: [state.live.backup_source(), state.sandbox.backup_source()],
            identity: &state.identity,
            data_dir: &state.data_dir,
            on_postgres: state.live.config.store.is_some(),
        };
        backup::online(&node, &dest)
    })
    .await
    .map_err(|e| ApiError::internal_from(e))??;
    tracing::info!(to = %backup.to, durationMs = backup.duration_ms, "backup written");
    Ok((StatusCode::CREATED, Json(BackupEnvelope { backup })))
}
