//! The ledger's figures for the operator: totals per currency and an online
//! `verify` of the running stack.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::admin::{CurrencyTotal, StackPath, StackRefusals, VerifyEnvelope, VerifyResult};
use sika_engine::EngineError;

use super::AdminState;
use crate::domain::error::ApiResult;
use crate::domain::identity::Identity;
use crate::domain::render::{amount, timestamp};
use crate::domain::stack::Stack;

/// Sums of every organization's balances, per currency.
pub(super) fn totals(stack: &Stack, identity: &Identity) -> ApiResult<Vec<CurrencyTotal>> {
    let snapshot = stack.engine.read()?;
    let mut sums: BTreeMap<String, (i128, i128, i128, usize)> = BTreeMap::new();
    for org in identity.organizations() {
        for account in snapshot.organization_accounts(&org.id)? {
            let b = account.balances()?;
            let entry = sums.entry(account.currency.clone()).or_default();
            let overflow = || EngineError::Overflow("balance totals");
            entry.0 = entry.0.checked_add(b.available).ok_or_else(overflow)?;
            entry.1 = entry.1.checked_add(b.pending).ok_or_else(overflow)?;
            entry.2 = entry.2.checked_add(b.total).ok_or_else(overflow)?;
            entry.3 += 1;
        }
    }
    Ok(sums
        .into_iter()
        .map(|(currency, (available, pending, total, accounts))| CurrencyTotal {
            available_balance: amount(&currency, available),
            pending_balance: amount(&currency, pending),
            total_balance: amount(&currency, total),
            accounts: accounts as u64,
            currency,
        })
        .collect())
}

/// Audit a stack's ledger while it runs
///
/// The audit reads a snapshot (the writer keeps going meanwhile); the
/// result is remembered as the stack's `lastVerify`.
#[utoipa::path(
    post,
    path = "/admin/v1/{stack}/verify",
    operation_id = "verifyStack",
    security(("operator" = [])),
    params(StackPath),
    responses(
        (status = 200, description = "The audit's result", body = VerifyEnvelope),
        StackRefusals,
    )
)]
pub(super) async fn verify(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<VerifyEnvelope>> {
    let stack = state.stack(&stack)?.clone();
    let engine = stack.engine.clone();
    let report = tokio::task::spawn_blocking(move || {
        engine.database().and_then(|db| sika_engine::verify::verify(&*db))
    })
    .await
    .map_err(|_| crate::domain::error::ApiError::internal())??;
    let verify = VerifyResult {
        at: timestamp(stack.now_ms()),
        consistent: report.is_consistent(),
        summary: report.summary(),
        problems: report.problems,
    };
    stack.set_last_verify(verify.clone());
    Ok(Json(VerifyEnvelope { verify }))
}
