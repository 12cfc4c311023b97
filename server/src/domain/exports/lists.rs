//! The exports of the balance transactions, payouts, collections and
//! refunds lists: the list's
//! own filters and rows, over a period, as CSV. Each is one use case that
//! `http::routes::exports` calls.

use serde::Serialize;
use sika_api::MovementFilter;
use sika_api::collections::Collection;
use sika_api::exports::ExportRange;
use sika_api::payouts::Payout;
use sika_api::refunds::{Refund, RefundFilter};
use sika_api::statements::{BalanceTransaction, BalanceTransactionFilter};
use sika_engine::Snapshot;
use utoipa::ToSchema;

use crate::domain::balance_transactions::{BalanceFilter, newest_first};
use crate::domain::error::ApiResult;
use crate::domain::exports::csv_export::{CsvExport, Dated, ExportPage, csv, stored_pages};
use crate::domain::exports::range::CreatedRange;
use crate::domain::movements::Movement;
use crate::domain::pagination::{Filter, Lists};
use crate::domain::principal::Principal;
use crate::domain::refunds as refund_list;

macro_rules! dated {
    ($($view:ty),*) => {
        $(impl Dated for $view {
            fn created_at(&self) -> &str {
                &self.created_at
            }
        })*
    };
}

dated!(Payout, Collection, Refund);

/// Balance transactions read for one page of the export.
const BALANCE_PAGE_ITEMS: usize = 500;

/// The caller's balance transactions made within the period that
/// `filter`'s `createdFrom` and `createdTo` give (the export's 366 days by
/// default) and that its other filters keep, as their list shows them,
/// newest first.
pub(crate) fn balance_transactions(
    lists: Lists<'_>,
    principal: &Principal,
    filter: BalanceTransactionFilter,
) -> ApiResult<CsvExport> {
    let period =
        ExportRange { created_from: filter.created_from.clone(), created_to: filter.created_to.clone() };
    let range = CreatedRange::new(&period, lists.ledger.now_ms())?;
    let filter =
        BalanceFilter { from_ms: range.from_ms, to_ms: range.to_ms, ..BalanceFilter::parse(filter)? };
    let (ledger, organization) = (lists.ledger.clone(), principal.organization().to_string());
    let pages = move |before: Option<u64>| {
        let chunk = newest_first(&ledger, &organization, &filter, before, BALANCE_PAGE_ITEMS)?;
        Ok(ExportPage::<BalanceTransaction, u64> { rows: chunk.items, next: chunk.next })
    };
    Ok(csv("balance-transactions", &range, pages))
}

/// The caller's payouts created within `range` that `filter` keeps, as
/// their list shows them, newest first.
pub(crate) fn payouts(
    lists: Lists<'_>,
    principal: &Principal,
    range: &ExportRange,
    filter: MovementFilter,
) -> ApiResult<CsvExport> {
    movements::<Payout>(lists, principal, range, filter)
}

/// The caller's collections created within `range` that `filter` keeps,
/// as their list shows them, newest first.
pub(crate) fn collections(
    lists: Lists<'_>,
    principal: &Principal,
    range: &ExportRange,
    filter: MovementFilter,
) -> ApiResult<CsvExport> {
    movements::<Collection>(lists, principal, range, filter)
}

/// The caller's refunds created within `range` that `filter` keeps, as
/// their list shows them, newest first.
pub(crate) fn refunds(
    lists: Lists<'_>,
    principal: &Principal,
    range: &ExportRange,
    filter: RefundFilter,
) -> ApiResult<CsvExport> {
    let filter = refund_list::checked_filter(filter)?;
    let range = CreatedRange::new(range, lists.ledger.now_ms())?;
    let organization = principal.organization().to_string();
    let find = |snapshot: &Snapshot, owner: &str, id: &str| {
        refund_list::listed(snapshot, owner, &RefundFilter::default(), id)
    };
    let keep = move |refund: &Refund| refund_list::keeps(&filter, refund);
    let pages = stored_pages(lists.ledger.clone(), organization, "refunds", range, find, keep);
    Ok(csv("refunds", &range, pages))
}

fn movements<V>(
    lists: Lists<'_>,
    principal: &Principal,
    range: &ExportRange,
    filter: MovementFilter,
) -> ApiResult<CsvExport>
where
    V: Movement + Dated + Serialize + ToSchema + 'static,
{
    let filter = Filter::new(filter, V::STATUSES)?;
    let range = CreatedRange::new(range, lists.ledger.now_ms())?;
    let organization = principal.organization().to_string();
    let find =
        |snapshot: &Snapshot, owner: &str, id: &str| V::find(snapshot, owner, &V::Id::from(id.to_string()));
    let keep = move |view: &V| view.kept_by(&filter);
    let pages = stored_pages(lists.ledger.clone(), organization, V::LIST, range, find, keep);
    Ok(csv(V::LIST, &range, pages))
}
