//! `/v1/balance-transactions` and `/v1/statements`: every change to the
//! organization's balances, and a period's statement of one currency
//! (`domain::balance_transactions`).

use axum::Json;
use sika_api::statements::{BalanceTransaction, BalanceTransactionFilter, StatementEnvelope, StatementQuery};
use sika_api::{BadField, ListPage, ListQuery, PageRefusals, Refusals, With};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::balance_transactions;
use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiQueries, ApiQuery};

pub(crate) fn router() -> OpenApiRouter<std::sync::Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(list)).routes(routes!(statement))
}

/// Balance transactions, newest first
///
/// One entry per change to any balance of the organization (a deposit, a
/// payout's hold and its fee, a failed payout's release, a collection, a
/// conversion's two legs, a refund, a dispute's hold, release or loss, a
/// reversal), each with its signed changes and the balances after it,
/// read from the ledger's own postings. For every account, the newest
/// entry's balances after are the account's balances. `createdFrom` is
/// included, `createdTo` excluded.
#[utoipa::path(get, path = "/v1/balance-transactions", operation_id = "listBalanceTransactions",
    params(ListQuery, BalanceTransactionFilter), security(("bearer" = ["accounts:read"])),
    responses(
        (status = 200, description = "One page of balance transactions", body = ListPage<BalanceTransaction>),
        PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, BalanceTransactionFilter>,
) -> ApiResult<Json<ListPage<BalanceTransaction>>> {
    Ok(Json(balance_transactions::list((&stack).into(), &principal, query, filter)?))
}

/// A balance's statement for a period
///
/// The opening and closing balances of one currency's balance, and what
/// each type of change added up to between them: opening plus the totals
/// is the closing. `from` is included and `to` excluded; a date means
/// 00:00 UTC.
#[utoipa::path(get, path = "/v1/statements", operation_id = "getStatement",
    params(StatementQuery), security(("bearer" = ["accounts:read"])),
    responses((status = 200, description = "The statement", body = StatementEnvelope),
        With<BadField, Refusals>),
)]
async fn statement(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<StatementQuery>,
) -> ApiResult<Json<StatementEnvelope>> {
    let statement = balance_transactions::statement(&stack.engine, &principal, query)?;
    Ok(Json(StatementEnvelope { statement }))
}
