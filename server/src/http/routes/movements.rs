//! The lists of the three money movements (payouts, collections and
//! orders): each a page of the organization's views, newest first, that the
//! `status` and `externalReference` filters narrow alike.

use axum::Json;
use axum::http::StatusCode;
use sika_api::collections::Collection;
use sika_api::orders::Order;
use sika_api::payouts::Payout;
use sika_api::{ListPage, ListQuery, MovementFilter};
use sika_engine::Snapshot;

use crate::domain::error::{ApiError, ApiResult};
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

/// A movement's view as its `find` (the finder its GET uses) shows it.
pub(super) type Finder<V> = fn(&Snapshot, &str, &str) -> ApiResult<Option<V>>;

/// What a create answers: 201 with `created`, the new movement's view; or,
/// when the engine replayed an earlier create of `id`, 200 with the view
/// its GET shows now, since the movement may have moved on since.
pub(super) fn created_or_replayed<V>(
    stack: &Stack,
    principal: &Principal,
    replayed: bool,
    id: &str,
    created: V,
    find: Finder<V>,
) -> ApiResult<(StatusCode, V)> {
    if !replayed {
        return Ok((StatusCode::CREATED, created));
    }
    let now = find(&stack.engine.read()?, principal.organization(), id)?.ok_or_else(ApiError::internal)?;
    Ok((StatusCode::OK, now))
}

/// One page of the caller's `kind` (its stored list's name), each found by
/// `find`; a `status` filter outside `statuses` is refused.
pub(super) fn page<V: Movement>(
    stack: &Stack,
    principal: &Principal,
    kind: &str,
    statuses: &[&str],
    query: ListQuery,
    filter: MovementFilter,
    find: Finder<V>,
) -> ApiResult<Json<ListPage<V>>> {
    let filter = Filter::new(filter, statuses)?;
    let organization = principal.organization();
    let page = page_of_views(stack, organization, kind, &query, |snapshot, id| {
        Ok(find(snapshot, organization, id)?.filter(|view| view.kept_by(&filter)))
    })?;
    Ok(Json(page))
}
