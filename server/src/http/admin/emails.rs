//! `GET /admin/v1/emails`: the node's email outbox with each email's status.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use sika_api::admin::{AdminRefusals, EmailFilter, EmailItem};
use sika_api::{ErrorBody, ListPage, ListQuery};

use super::AdminState;
use crate::domain::emails;
use crate::domain::error::ApiResult;
use crate::http::extract::ApiQueries;

/// The email outbox
///
/// Every email the node queued (invitations, password resets, receipts,
/// notices to owners and admins, operator alerts), newest first, with its
/// status: `queued`, `sent`, `retrying` (the server refused or could not
/// be reached; `nextAttemptAt` says when it is tried again), `failed` or
/// `suppressed` (over the organization's hourly bound, never sent). Bodies
/// are not shown. Paginated like every list.
#[utoipa::path(get, path = "/admin/v1/emails", operation_id = "listEmails",
    security(("operator" = [])), params(ListQuery, EmailFilter),
    responses((status = 200, description = "One page of the outbox", body = ListPage<EmailItem>),
        (status = 400, description = "A bad filter, `limit` or `cursor` (`validation_error`)", body = ErrorBody),
        AdminRefusals),
)]
pub(super) async fn list(
    State(state): State<Arc<AdminState>>,
    ApiQueries(query, filter): ApiQueries<ListQuery, EmailFilter>,
) -> ApiResult<Json<ListPage<EmailItem>>> {
    Ok(Json(emails::page(&state.identity, &query, &filter)?))
}
