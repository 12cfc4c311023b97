//! The lists of the three money movements (payouts, collections and
//! orders): each a page of the organization's views, newest first, that the
//! `status` and `externalReference` filters narrow alike.

use axum::Json;
use sika_api::collections::Collection;
use sika_api::orders::Order;
use sika_api::payouts::Payout;
use sika_api::{ListPage, ListQuery, MovementFilter};
use sika_engine::Snapshot;

use crate::domain::error::ApiResult;
use crate::domain::pagination::{Filter, page_of_views};
use crate::domain::principal::Principal;
use crate::domain::stack::Stack;

/// A movement's view, as its list filters it.
pub(super) trait Movement {
    /// Whether `filter` keeps this view.
    fn kept_by(&self, filter: &Filter) -> bool;
}

/// Implements [`Movement`] for views with a `status` and an
/// `external_reference`.
macro_rules! movements {
    ($($view:ty),* $(,)?) => {
        $(impl Movement for $view {
            fn kept_by(&self, filter: &Filter) -> bool {
                filter.keeps(&self.status, &self.external_reference)
            }
        })*
    };
}

movements!(Collection, Order, Payout);

/// One page of the caller's `kind` (its stored list's name), each found by
/// `find`; a `status` filter outside `statuses` is refused.
pub(super) fn page<V: Movement>(
    stack: &Stack,
    principal: &Principal,
    kind: &str,
    statuses: &[&str],
    query: ListQuery,
    filter: MovementFilter,
    find: fn(&Snapshot, &str, &str) -> ApiResult<Option<V>>,
) -> ApiResult<Json<ListPage<V>>> {
    let filter = Filter::new(filter, statuses)?;
    let organization = principal.organization();
    let page = page_of_views(stack, organization, kind, &query, |snapshot, id| {
        Ok(find(snapshot, organization, id)?.filter(|view| view.kept_by(&filter)))
    })?;
    Ok(Json(page))
}
