//! The answer to a read by id that finds nothing the caller may see: one
//! 404, worded `<noun> '<id>' not found`, whether the id was never issued or
//! belongs to another organization, so that an id tells a caller nothing
//! about organizations other than its own.
//!
//! An operation on one record takes [`Loaded`]: the record the path's `{id}`
//! names, already checked to be the caller's own, so no handler can forget
//! the check.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use sika_engine::Snapshot;
use sika_engine::records::{ConversionRecord, EventRecord, OrderRecord, QuoteRecord};

use crate::domain::checkout::{PaymentLink, PaymentPage, load_link, load_page};
use crate::domain::disputes::{self, Dispute};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::files::{self, StoredFile};
use crate::domain::principal::Principal;
use crate::domain::recipients::{self, Recipient};
use crate::domain::stack::Stack;
use crate::domain::views;
use crate::domain::virtual_accounts::{self, VirtualAccount};
use crate::domain::webhooks::{Delivery, Endpoint, Health, load_delivery, load_endpoint};
use crate::http::auth::Call;
use crate::store::request_log::RequestLogEntry;

/// `record`, or the 404 for the `noun` named `id`.
pub(crate) fn found<T>(record: Option<T>, noun: &str, id: &str) -> ApiResult<T> {
    record.ok_or_else(|| ApiError::not_found(format!("{noun} '{id}' not found")))
}

/// The record `id` in `snapshot` if it is the caller's, else the 404.
pub(crate) fn owned<R: ById>(
    stack: &Stack,
    snapshot: &Snapshot,
    principal: &Principal,
    id: &str,
) -> ApiResult<R> {
    found(R::find(stack, snapshot, principal.organization(), id)?, R::NOUN, id)
}

/// A kind of record a path's `{id}` names.
pub(crate) trait ById: Sized {
    /// What the 404 calls it.
    const NOUN: &'static str;

    /// The record `id` names, if `organization` owns it.
    fn find(stack: &Stack, snapshot: &Snapshot, organization: &str, id: &str) -> ApiResult<Option<Self>>;
}

/// A call on one record: the record the path's `{id}` names, read from
/// `snapshot` and owned by the caller's organization. Any other id, issued
/// or not, is answered with the same 404 before the handler runs.
pub(crate) struct Loaded<R> {
    pub(crate) record: R,
    pub(crate) snapshot: Snapshot,
    pub(crate) stack: Arc<Stack>,
}

impl<R: ById> FromRequestParts<Arc<Stack>> for Loaded<R> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<Stack>) -> Result<Self, Self::Rejection> {
        let Call { stack, principal } = Call::from_request_parts(parts, state).await?;
        // An id that is not UTF-8 once percent-decoded was never issued.
        let id =
            Path::<String>::from_request_parts(parts, state).await.map(|Path(id)| id).unwrap_or_default();
        Loaded::load(stack, &principal, &id)
    }
}

impl<R: ById> Loaded<R> {
    /// The record `id` as `principal` may see it now, or the 404.
    pub(crate) fn load(stack: Arc<Stack>, principal: &Principal, id: &str) -> ApiResult<Self> {
        let snapshot = stack.engine.read()?;
        let record = owned(&stack, &snapshot, principal, id)?;
        Ok(Loaded { record, snapshot, stack })
    }
}

/// Implements [`ById`] for records that keep their organization's id in an
/// `organization` field, from how each is loaded.
macro_rules! by_id {
    ($($record:ty => $noun:literal, |$stack:ident, $snapshot:ident, $id:ident| $load:expr;)*) => {
        $(impl ById for $record {
            const NOUN: &'static str = $noun;

            #[allow(unused_variables)]
            fn find(
                $stack: &Stack,
                $snapshot: &Snapshot,
                organization: &str,
                $id: &str,
            ) -> ApiResult<Option<Self>> {
                Ok($load?.filter(|record: &Self| record.organization == organization))
            }
        })*
    };
}

by_id! {
    ConversionRecord => "conversion", |stack, snapshot, id| snapshot.conversion(id);
    Delivery => "delivery", |stack, snapshot, id| load_delivery(snapshot, id);
    Dispute => "dispute", |stack, snapshot, id| disputes::load(snapshot, id).map(|d| d.map(|(d, _)| d));
    EventRecord => "event", |stack, snapshot, id| snapshot.event(id);
    OrderRecord => "order", |stack, snapshot, id| snapshot.order(&sika_engine::OrderId::named(id));
    PaymentLink => "payment link", |stack, snapshot, id| load_link(snapshot, id);
    PaymentPage => "payment page", |stack, snapshot, id| load_page(snapshot, id);
    QuoteRecord => "quote", |stack, snapshot, id| snapshot.quote(id);
    Recipient => "recipient", |stack, snapshot, id| recipients::load(snapshot, id);
    RequestLogEntry => "request", |stack, snapshot, id| ApiResult::Ok(stack.request_log.find(id));
    StoredFile => "file", |stack, snapshot, id| files::load(snapshot, id);
    VirtualAccount => "virtual account", |stack, snapshot, id| virtual_accounts::load(snapshot, id);
}

/// A webhook endpoint is loaded with its health; the endpoint says whose it is.
impl ById for (Endpoint, Health) {
    const NOUN: &'static str = "webhook endpoint";

    fn find(_: &Stack, snapshot: &Snapshot, organization: &str, id: &str) -> ApiResult<Option<Self>> {
        Ok(load_endpoint(snapshot, id)?.filter(|(endpoint, _)| endpoint.organization == organization))
    }
}

/// Implements [`ById`] for the views a movement's GET answers, found as
/// their organization sees them now.
macro_rules! view_by_id {
    ($($view:ty => $id:ty, $noun:literal, $find:path;)*) => {
        $(impl ById for $view {
            const NOUN: &'static str = $noun;

            fn find(_: &Stack, snapshot: &Snapshot, organization: &str, id: &str) -> ApiResult<Option<Self>> {
                $find(snapshot, organization, &<$id>::from(id.to_string()))
            }
        })*
    };
}

view_by_id! {
    sika_api::collections::Collection => sika_engine::CollectionId, "collection", views::find_collection;
    sika_api::orders::Order => sika_engine::OrderId, "order", views::find_order;
    sika_api::payouts::Payout => sika_engine::PayoutId, "payout", views::find_payout;
    sika_api::refunds::Refund => sika_engine::RefundId, "refund", views::find_refund;
}
