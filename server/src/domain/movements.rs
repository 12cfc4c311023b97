//! What the three money movements (payouts, collections and orders) share:
//! their lists, each a page of the organization's views, newest first,
//! that the `status` and `externalReference` filters narrow alike; the
//! answer to a create the engine replayed; and the operator's view of one
//! movement, whoever owns it.

use sika_api::admin::{ActivityQuery, Owned};
use sika_api::collections::Collection;
use sika_api::orders::Order;
use sika_api::payouts::Payout;
use sika_api::refunds::Refund;
use sika_api::{ListPage, ListQuery, MovementFilter};
use sika_engine::{CollectionId, Engine, OrderId, PayoutId, RefundId, Snapshot};

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::identity::Identity;
use crate::domain::pagination::{Filter, Lists, page_of_views};
use crate::domain::principal::Principal;
use crate::domain::{render, search, views};

/// A movement's view: what its 404 calls it, the list it is indexed
/// under, the statuses its `status` filter takes, and how it is found and
/// filtered.
pub(crate) trait Movement: Sized {
    /// What a 404 calls it.
    const NOUN: &'static str;
    /// The stored list of the organization's movements of this kind.
    const LIST: &'static str;
    /// Every status it has, in the order it moves through them.
    const STATUSES: &'static [&'static str];
    /// Its id's type: an id read from a list or a path names a movement
    /// of this kind only.
    type Id: From<String> + AsRef<str>;

    /// Whether `filter` keeps this view.
    fn kept_by(&self, filter: &Filter) -> bool;

    /// The organization the movement `id` belongs to, whoever asks (the
    /// operator's view across organizations).
    fn owner(snapshot: &Snapshot, id: &Self::Id) -> ApiResult<Option<String>>;

    /// The movement `id` of `organization` as its GET shows it now.
    fn find(snapshot: &Snapshot, organization: &str, id: &Self::Id) -> ApiResult<Option<Self>>;

    /// The movement `id`, whoever owns it, as the operator's activity list
    /// shows it.
    fn listed(snapshot: &Snapshot, id: &Self::Id) -> ApiResult<Option<Self>>;
}

/// Implements [`Movement`] for views with a `status` and an
/// `external_reference`.
macro_rules! movements {
    ($($view:ty => $id:ty, $noun:literal, $list:literal, $record:ident, $find:path, $listed:path,
        [$($status:literal),* $(,)?];)*) => {
        $(impl Movement for $view {
            const NOUN: &'static str = $noun;
            const LIST: &'static str = $list;
            const STATUSES: &'static [&'static str] = &[$($status),*];
            type Id = $id;

            fn kept_by(&self, filter: &Filter) -> bool {
                filter.keeps(&self.status, &self.external_reference)
            }

            fn owner(snapshot: &Snapshot, id: &$id) -> ApiResult<Option<String>> {
                Ok(snapshot.$record(id)?.map(|record| record.organization))
            }

            fn find(snapshot: &Snapshot, organization: &str, id: &$id) -> ApiResult<Option<Self>> {
                $find(snapshot, organization, id)
            }

            fn listed(snapshot: &Snapshot, id: &$id) -> ApiResult<Option<Self>> {
                $listed(snapshot, id)
            }
        })*
    };
}

movements! {
    Collection => CollectionId, "collection", "collections", collection, views::find_collection, listed_collection,
        ["pending", "completed", "failed"];
    Order => OrderId, "order", "orders", order, views::find_order, listed_order, [
        "awaiting_funds",
        "awaiting_confirmations",
        "funds_received",
        "processing_payout",
        "completed",
        "failed",
        "expired",
    ];
    Payout => PayoutId, "payout", "payouts", payout, views::find_payout, listed_payout,
        ["pending", "completed", "failed", "reversed"];
    Refund => RefundId, "refund", "refunds", refund, views::find_refund, listed_refund,
        ["pending", "completed", "failed"];
}

/// A refund in the operator's list: its own timeline, without deliveries.
fn listed_refund(snapshot: &Snapshot, id: &RefundId) -> ApiResult<Option<Refund>> {
    Ok(snapshot.refund(id)?.map(|refund| render::refund(&refund, &[])))
}

/// A payout in the operator's list: its own timeline, without deliveries.
fn listed_payout(snapshot: &Snapshot, id: &PayoutId) -> ApiResult<Option<Payout>> {
    Ok(snapshot.payout(id)?.map(|payout| render::payout(&payout, &[])))
}

/// A collection in the operator's list: its own timeline, without deliveries.
fn listed_collection(snapshot: &Snapshot, id: &CollectionId) -> ApiResult<Option<Collection>> {
    let Some(collection) = snapshot.collection(id)? else { return Ok(None) };
    let refunded = views::refunded_minor(snapshot, &collection.id)?;
    Ok(Some(render::collection(&collection, &[], refunded)))
}

/// An order in the operator's list, as its owner's GET shows it.
fn listed_order(snapshot: &Snapshot, id: &OrderId) -> ApiResult<Option<Order>> {
    let Some(order) = snapshot.order(id)? else { return Ok(None) };
    views::find_order(snapshot, &order.organization, id)
}

/// What a create made: the view, and whether the engine replayed an
/// earlier create of the same request instead of making a new one.
#[derive(Debug)]
pub(crate) struct Created<V> {
    pub view: V,
    pub replayed: bool,
}

/// What a create answers with: `created`, the new movement's view; or,
/// when the engine replayed an earlier create, the view its GET shows now,
/// since the movement may have moved on since.
pub(crate) fn created_or_replayed<V: Movement>(
    ledger: &Engine,
    organization: &str,
    replayed: bool,
    id: &V::Id,
    created: V,
) -> ApiResult<Created<V>> {
    if !replayed {
        return Ok(Created { view: created, replayed });
    }
    let now = V::find(&ledger.read()?, organization, id)?.ok_or_else(|| {
        ApiError::internal_from(format!("{} '{}' vanished after it was created", V::NOUN, id.as_ref()))
    })?;
    Ok(Created { view: now, replayed })
}

/// One page of the caller's movements of kind `V`; a `status` filter
/// outside its statuses is refused.
pub(crate) fn page<V: Movement>(
    lists: Lists<'_>,
    principal: &Principal,
    query: ListQuery,
    filter: MovementFilter,
) -> ApiResult<ListPage<V>> {
    let filter = Filter::new(filter, V::STATUSES)?;
    let organization = principal.organization();
    page_of_views(lists, organization, V::LIST, &query, |snapshot, id| {
        let id = V::Id::from(id.to_string());
        Ok(V::find(snapshot, organization, &id)?.filter(|view| view.kept_by(&filter)))
    })
}

/// The payout, collection or order `id`, whoever owns it, as its owner's
/// GET shows it now, with the owner (the operator's view); the 404 names
/// it as the public API does.
pub(crate) fn owned_view<V: Movement>(ledger: &Engine, id: &V::Id) -> ApiResult<Owned<V>> {
    let snapshot = ledger.read()?;
    let id_text = id.as_ref();
    let organization = V::owner(&snapshot, id)?
        .ok_or_else(|| ApiError::not_found(format!("{} '{id_text}' not found", V::NOUN)))?;
    let item = V::find(&snapshot, &organization, id)?.ok_or_else(|| {
        ApiError::internal_from(format!("{} '{id_text}' has an owner but no view", V::NOUN))
    })?;
    Ok(Owned { organization_id: organization, item })
}

/// One page of every organization's movements of kind `V` on a stack,
/// those `query` matches, newest first (the operator's activity list).
pub(crate) fn activity<V: Movement + serde::Serialize>(
    lists: Lists<'_>,
    identity: &Identity,
    query: &ActivityQuery,
) -> ApiResult<ListPage<Owned<V>>> {
    search::activity(lists, identity, V::LIST, query, |snapshot, id| {
        V::listed(snapshot, &V::Id::from(id.to_string()))
    })
}
