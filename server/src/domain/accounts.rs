//! Balance accounts: one per currency an organization's money has touched.

use sika_api::accounts::Account;
use sika_engine::{Balances, Engine};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render;

/// Every balance account of `organization`, each with its value in US
/// dollars at the mid rate where there is one.
pub(crate) fn list(ledger: &Engine, organization: &str) -> ApiResult<Vec<Account>> {
    let accounts = ledger.read()?.organization_accounts(organization)?;
    accounts.iter().map(|a| render::account(a, ledger.mid_rate(&a.currency, "USD"))).collect()
}

/// The accounts as their balances stood at `as_of_ms` (an account opened
/// later is left out): each account's last balance change at or before
/// that instant, found with one range read of the ledger's index by time,
/// whatever the account's history. The dollar value is at today's mid rate.
pub(crate) fn list_as_of(ledger: &Engine, organization: &str, as_of_ms: i64) -> ApiResult<Vec<Account>> {
    let snapshot = ledger.read()?;
    let mut out = Vec::new();
    for account in snapshot.organization_accounts(organization)? {
        if account.created_at > as_of_ms {
            continue;
        }
        let after = snapshot.balance_at(&account, as_of_ms)?.map(|change| change.after).unwrap_or_default();
        let pending = after
            .total
            .checked_sub(after.available)
            .ok_or_else(|| ApiError::internal_from("pending balance"))?;
        let balances = Balances { available: after.available, pending, total: after.total };
        out.push(render::account_at(&account, balances, ledger.mid_rate(&account.currency, "USD"))?);
    }
    Ok(out)
}

/// `GET /v1/accounts`, now or, with `asOf`, at an instant.
pub(crate) fn read(ledger: &Engine, organization: &str, as_of: Option<&str>) -> ApiResult<Vec<Account>> {
    match as_of {
        None => list(ledger, organization),
        Some(text) => {
            let ms = render::parse_timestamp(text).filter(|ms| *ms >= 0).ok_or_else(|| {
                ApiError::validation("asOf", "must be an RFC 3339 date-time (2026-11-01T09:30:00Z)")
            })?;
            list_as_of(ledger, organization, ms)
        }
    }
}
