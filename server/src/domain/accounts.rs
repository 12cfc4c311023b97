//! Balance accounts: one per currency an organization's money has touched.

use sika_api::accounts::Account;
use sika_engine::Engine;

use crate::domain::error::ApiResult;
use crate::domain::render;

/// Every balance account of `organization`, each with its value in US
/// dollars at the mid rate where there is one.
pub(crate) fn list(ledger: &Engine, organization: &str) -> ApiResult<Vec<Account>> {
    let accounts = ledger.read()?.organization_accounts(organization)?;
    accounts.iter().map(|a| render::account(a, ledger.mid_rate(&a.currency, "USD"))).collect()
}
