//! `GET /admin/v1/search`: the operator's search across every
//! organization's money movements and checkout pages (`domain::search`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use sika_api::ErrorBody;
use sika_api::admin::{AdminRefusals, SearchQuery, SearchResults};

use super::AdminState;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::search;
use crate::domain::stack::StackKind;
use crate::http::extract::ApiQuery;

/// Search payouts, collections, orders, payment pages and payment links
///
/// By any part of an id, reference, phone number, email or amount, across
/// every organization, on one stack or both. Each kind is read newest
/// first; the search stops after 20,000 records read
/// (`scanLimitReached`) or 100 hits (`hitsLimitReached`).
#[utoipa::path(get, path = "/admin/v1/search", operation_id = "search",
    security(("operator" = [])), params(SearchQuery),
    responses(
        (status = 200, description = "The matches, with the field each matched in", body = SearchResults),
        (status = 400, description = "A missing or bad `q` or `stack`, or a query parameter it does not take (`validation_error` naming it)", body = ErrorBody),
        AdminRefusals),
)]
pub(super) async fn search(
    State(state): State<Arc<AdminState>>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> ApiResult<Json<SearchResults>> {
    let needle = search::needle(query.q.as_deref())?;
    let kinds = match query.stack.as_deref().map(StackKind::parse) {
        None => vec![StackKind::Live, StackKind::Sandbox],
        Some(Some(kind)) => vec![kind],
        Some(None) => return Err(ApiError::validation("stack", "must be live or sandbox")),
    };
    let organizations: Vec<String> = state.identity.organizations().iter().map(|o| o.id.clone()).collect();
    // Reading up to the bound is CPU and disk work: off the async workers.
    tokio::task::spawn_blocking(move || {
        let stacks: Vec<(StackKind, &sika_engine::Engine)> = kinds
            .iter()
            .map(|kind| match kind {
                StackKind::Live => (*kind, &state.live.engine),
                StackKind::Sandbox => (*kind, &state.sandbox.engine),
            })
            .collect();
        search::search(&stacks, &organizations, &needle)
    })
    .await
    .map_err(|e| ApiError::internal_from(e))?
    .map(Json)
}
