//! The ledger's figures for the operator: totals per currency, an online
//! `verify` of the running stack, the node's own (system) accounts and any
//! account's journal entries.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::admin::{
    AdminRefusals, LedgerEntries, StackPath, StackRefusals, SystemAccount, VerifyEnvelope,
};
use sika_api::{ErrorBody, ListPage, ListQuery};

use super::AdminState;
use crate::domain::error::ApiResult;
use crate::domain::system_ledger;
use crate::http::extract::ApiQuery;

/// Audit a stack's ledger while it runs
///
/// The audit reads a snapshot (the writer keeps going meanwhile); the
/// result is remembered as the stack's `lastVerify`.
#[utoipa::path(post, path = "/admin/v1/{stack}/verify", operation_id = "verifyStack",
    security(("operator" = [])), params(StackPath),
    responses((status = 200, description = "The audit's result", body = VerifyEnvelope), StackRefusals),
)]
pub(super) async fn verify(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<VerifyEnvelope>> {
    let stack = state.stack(&stack)?;
    let verify = system_ledger::verify(&stack.engine).await?;
    stack.set_last_verify(verify.clone());
    Ok(Json(VerifyEnvelope { verify }))
}

/// The node's own accounts on a stack
///
/// Fee revenue, the FX desk, rail clearing and the outside world, in each
/// currency they were touched in. Not paginated (four kinds per currency).
#[utoipa::path(get, path = "/admin/v1/{stack}/ledger/system-accounts", operation_id = "listSystemAccounts",
    security(("operator" = [])), params(StackPath),
    responses(
        (status = 200, description = "Every system account of the stack", body = ListPage<SystemAccount>),
        StackRefusals),
)]
pub(super) async fn system_accounts(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<ListPage<SystemAccount>>> {
    let data = system_ledger::system_accounts(&state.stack(&stack)?.engine)?;
    Ok(Json(ListPage::whole(data)))
}

/// One ledger account's journal entries, newest first
///
/// Any account of the stack (a system account or an organization's). The
/// journal is read backwards and a page stops after a bounded number of
/// entries read (`scanLimitReached`), so `data` can hold fewer than
/// `limit` while `hasMore` is true: follow `nextCursor`.
#[utoipa::path(
    get, path = "/admin/v1/{stack}/ledger/accounts/{id}/entries", operation_id = "listLedgerEntries",
    security(("operator" = [])),
    params(StackPath, ("id" = String, Path, description = "The account's id (`sys_fee_revenue_USD`, `GHS1000000001`)"), ListQuery),
    responses((status = 200, description = "A page of the account's entries", body = LedgerEntries),
        (status = 400, description = "A bad `limit` or `cursor` (`validation_error`)", body = ErrorBody),
        (status = 404, description = "Unknown stack or account", body = ErrorBody),
        AdminRefusals),
)]
pub(super) async fn entries(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<LedgerEntries>> {
    let stack = state.stack(&stack)?;
    Ok(Json(system_ledger::entries(&stack.engine, stack.kind, &state.identity.secret(), &id, &query)?))
}
