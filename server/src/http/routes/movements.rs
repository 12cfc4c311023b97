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
use crate::http::found::ById;

/// A movement's view: the list it is indexed under, the statuses its
/// `status` filter takes, and how the filters keep it. Its GET finds it
/// through [`ById`].
pub(crate) trait Movement: ById {
    /// The stored list of the organization's movements of this kind.
    const LIST: &'static str;
    /// Every status it has, in the order it moves through them.
    const STATUSES: &'static [&'static str];

    /// Whether `filter` keeps this view.
    fn kept_by(&self, filter: &Filter) -> bool;

    /// The organization the movement `id` belongs to, whoever asks (the
    /// operator's view across organizations).
    fn owner(snapshot: &Snapshot, id: &str) -> ApiResult<Option<String>>;
}

/// Implements [`Movement`] for views with a `status` and an
/// `external_reference`.
macro_rules! movements {
    ($($view:ty => $list:literal, $record:ident, [$($status:literal),* $(,)?];)*) => {
        $(impl Movement for $view {
            const LIST: &'static str = $list;
            const STATUSES: &'static [&'static str] = &[$($status),*];

            fn kept_by(&self, filter: &Filter) -> bool {
                filter.keeps(&self.status, &self.external_reference)
            }

            fn owner(snapshot: &Snapshot, id: &str) -> ApiResult<Option<String>> {
                Ok(snapshot.$record(id)?.map(|record| record.organization))
            }
        })*
    };
}

movements! {
    Collection => "collections", collection, ["pending", "completed", "failed"];
    Order => "orders", order, [
        "awaiting_funds",
        "awaiting_confirmations",
        "funds_received",
        "processing_payout",
        "completed",
        "failed",
        "expired",
    ];
    Payout => "payouts", payout, ["pending", "completed", "failed"];
}

/// What a create answers: 201 with `created`, the new movement's view; or,
/// when the engine replayed an earlier create, 200 with the view its GET
/// shows now, since the movement may have moved on since.
pub(super) fn created_or_replayed<V: Movement>(
    stack: &Stack,
    principal: &Principal,
    replayed: bool,
    id: &str,
    created: V,
) -> ApiResult<(StatusCode, V)> {
    if !replayed {
        return Ok((StatusCode::CREATED, created));
    }
    let now = V::find(stack, &stack.engine.read()?, principal.organization(), id)?.ok_or_else(|| {
        ApiError::internal_from(format!("{} '{id}' vanished after it was created", V::NOUN))
    })?;
    Ok((StatusCode::OK, now))
}

/// One page of the caller's movements of kind `V`; a `status` filter
/// outside its statuses is refused.
pub(super) fn page<V: Movement>(
    stack: &Stack,
    principal: &Principal,
    query: ListQuery,
    filter: MovementFilter,
) -> ApiResult<Json<ListPage<V>>> {
    let filter = Filter::new(filter, V::STATUSES)?;
    let organization = principal.organization();
    let page = page_of_views(stack, organization, V::LIST, &query, |snapshot, id| {
        Ok(V::find(stack, snapshot, organization, id)?.filter(|view| view.kept_by(&filter)))
    })?;
    Ok(Json(page))
}
