//! The ledger's figures for the operator: totals per currency and an online
//! `verify` of the running stack.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use serde_json::{Value, json};
use sika_engine::EngineError;

use super::AdminState;
use crate::error::ApiResult;
use crate::identity::Identity;
use crate::render::{amount, timestamp};
use crate::stack::Stack;

/// Sums of every organization's balances, per currency.
pub fn totals(stack: &Stack, identity: &Identity) -> ApiResult<Vec<Value>> {
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
        .map(|(currency, (available, pending, total, accounts))| {
            json!({
                "currency": currency,
                "availableBalance": amount(&currency, available),
                "pendingBalance": amount(&currency, pending),
                "totalBalance": amount(&currency, total),
                "accounts": accounts,
            })
        })
        .collect())
}

/// Audits the running stack's ledger from a read snapshot (the writer keeps
/// going meanwhile) and remembers the result.
pub async fn verify(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<Value>> {
    let stack = state.stack(&stack)?.clone();
    let engine = stack.engine.clone();
    let report = tokio::task::spawn_blocking(move || sika_engine::verify::verify(engine.database()))
        .await
        .map_err(|_| crate::error::ApiError::internal())??;
    let result = json!({
        "at": timestamp(stack.now_ms()),
        "consistent": report.is_consistent(),
        "summary": report.summary(),
        "problems": report.problems,
    });
    stack.set_last_verify(result.clone());
    Ok(Json(json!({ "verify": result })))
}
