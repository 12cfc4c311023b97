//! A timeline resource (payout, collection, order) as its GET shows it.
//!
//! The GET, the list item, the idempotent replay and the webhook `data`
//! all come from here, so they cannot drift. A timeline is the full audit
//! trail (the spec): the record's own entries plus the resource's webhook
//! deliveries. A read now shows every delivery entry; an event's `data`
//! shows the state the event carries with the delivery entries recorded
//! before the event's `createdAt` (to the millisecond), which is what a GET
//! at the moment the event was committed returned; a delivery recorded in
//! the same millisecond counts as after it, as the event's own always is.

use sika_api::{collections::Collection, orders::Order, payouts::Payout, refunds::Refund};
use sika_engine::movements::{CollectionRecord, PayoutRecord};
use sika_engine::orders::OrderRecord;
use sika_engine::{CollectionId, OrderId, PayoutId, RefundId, RefundRecord, Snapshot};

use crate::domain::error::ApiResult;
use crate::domain::render;
use crate::domain::webhooks::timeline_entries;

pub(crate) use crate::domain::webhooks::AsOf;

pub(crate) fn payout(snapshot: &Snapshot, record: &PayoutRecord, as_of: AsOf) -> ApiResult<Payout> {
    let deliveries = timeline_entries(snapshot, &record.organization, &record.id, as_of)?;
    Ok(render::payout(record, &deliveries))
}

pub(crate) fn collection(
    snapshot: &Snapshot,
    record: &CollectionRecord,
    as_of: AsOf,
) -> ApiResult<Collection> {
    let deliveries = timeline_entries(snapshot, &record.organization, &record.id, as_of)?;
    // A collection's events are all of its own changes, each before any
    // refund of it (only a completed collection is refunded, and
    // completing is its last change): as of an event nothing was refunded.
    let refunded = match as_of {
        AsOf::Now => refunded_minor(snapshot, &record.id)?,
        AsOf::At(_) => 0,
    };
    Ok(render::collection(record, &deliveries, refunded))
}

/// What the refunds of the payment `collection_id` give back now: those
/// completed or pending (its refund tally, one read).
pub(crate) fn refunded_minor(snapshot: &Snapshot, collection_id: &str) -> ApiResult<i128> {
    Ok(snapshot.refund_tally(collection_id)?.map_or(0, |tally| tally.refunded_minor))
}

/// A refund with its webhook deliveries on its timeline.
pub(crate) fn refund(snapshot: &Snapshot, record: &RefundRecord, as_of: AsOf) -> ApiResult<Refund> {
    let deliveries = timeline_entries(snapshot, &record.organization, &record.id, as_of)?;
    Ok(render::refund(record, &deliveries))
}

/// The refund `id` of `organization` as its GET shows it now.
pub(crate) fn find_refund(
    snapshot: &Snapshot,
    organization: &str,
    id: &RefundId,
) -> ApiResult<Option<Refund>> {
    match snapshot.refund(id)?.filter(|r| r.organization == organization) {
        Some(record) => refund(snapshot, &record, AsOf::Now).map(Some),
        None => Ok(None),
    }
}

/// An order with both legs' timelines and webhook deliveries merged.
pub(crate) fn order(
    snapshot: &Snapshot,
    record: &OrderRecord,
    payout: Option<&PayoutRecord>,
    as_of: AsOf,
) -> ApiResult<Order> {
    let mut deliveries = timeline_entries(snapshot, &record.organization, &record.id, as_of)?;
    if let Some(p) = payout {
        deliveries.extend(timeline_entries(snapshot, &record.organization, &p.id, as_of)?);
    }
    Ok(render::order(record, payout, &deliveries))
}

/// The payout `id` of `organization` as its GET shows it now.
pub(crate) fn find_payout(
    snapshot: &Snapshot,
    organization: &str,
    id: &PayoutId,
) -> ApiResult<Option<Payout>> {
    match snapshot.payout(id)?.filter(|p| p.organization == organization) {
        Some(record) => payout(snapshot, &record, AsOf::Now).map(Some),
        None => Ok(None),
    }
}

/// The collection `id` of `organization` as its GET shows it now.
pub(crate) fn find_collection(
    snapshot: &Snapshot,
    organization: &str,
    id: &CollectionId,
) -> ApiResult<Option<Collection>> {
    match snapshot.collection(id)?.filter(|c| c.organization == organization) {
        Some(record) => collection(snapshot, &record, AsOf::Now).map(Some),
        None => Ok(None),
    }
}

/// The order `id` of `organization` as its GET shows it now.
pub(crate) fn find_order(snapshot: &Snapshot, organization: &str, id: &OrderId) -> ApiResult<Option<Order>> {
    let Some(record) = snapshot.order(id)?.filter(|o| o.organization == organization) else {
        return Ok(None);
    };
    let payout = match &record.payout_id {
        Some(payout_id) => snapshot.payout(&sika_engine::PayoutId::named(payout_id))?,
        None => None,
    };
    order(snapshot, &record, payout.as_ref(), AsOf::Now).map(Some)
}
