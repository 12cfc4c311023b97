//! Refunds: money given back to the payer of a completed collection or of
//! a `complete` checkout session. Each operation is one function here;
//! `http::routes::refunds` and the operator's admin API only translate
//! their input and output.
//!
//! Where a refund goes is decided once, by [`refund_rail`]: the sandbox's
//! simulator; on live, the payment's provider connector when it refunds
//! ([`connector_for`]), otherwise the operator, who completes or fails it
//! by hand (`settlements::settle_refund`).

use serde_json::Value;
use sika_api::admin::Owned;
use sika_api::payment_links::CheckoutSessionStatus;
use sika_api::refunds::{CreateRefund, Refund, RefundFilter};
use sika_api::{ListPage, ListQuery};
use sika_engine::movements::{CollectionRecord, MovementStatus};
use sika_engine::refunds::{NewRefund, RefundSchedule};
use sika_engine::{Command, Currency, EngineError, MovementKind, Outcome, Rail, Snapshot};

use crate::domain::checkout;
use crate::domain::error::{ApiError, ApiResult, money_error, unexpected};
use crate::domain::instructions::{Deps, check_metadata, validate_reference};
use crate::domain::movements::{Created, Movement, created_or_replayed};
use crate::domain::pagination::{Lists, page_of_views};
use crate::domain::principal::Principal;
use crate::domain::rails::Rails;
use crate::domain::render::{self, amount};
use crate::domain::simulator;
use crate::domain::stack_kind::StackKind;
use crate::domain::views;

/// Every status a refund has, in the order it moves through them (one
/// list, `Movement::STATUSES`, which the dashboard's filter shows too).
const STATUSES: &[&str] = <Refund as Movement>::STATUSES;

/// The most refunds the operator's list of those awaiting them shows.
const AWAITING_OPERATOR_MAX: usize = 1_000;

/// How a request names its payment: the wire field, for refusals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NamedBy {
    Collection,
    Session,
}

impl NamedBy {
    fn field(self) -> &'static str {
        match self {
            NamedBy::Collection => "collectionId",
            NamedBy::Session => "sessionId",
        }
    }
}

/// The payment a refund request names.
struct Payment {
    collection: CollectionRecord,
    session_id: Option<String>,
    named_by: NamedBy,
}

/// Where a refund goes: its rail, the note its timeline opens with, and
/// the steps a simulated rail will report.
pub(crate) struct RefundRail {
    pub rail: Rail,
    pub note: String,
    pub schedule: RefundSchedule,
}

/// The provider connector that refunds payments taken on `rail`, if the
/// stack has it: Flutterwave refunds the charges it made (its refund
/// endpoint for the charge, `domain::rails::reconcile`); a payment the
/// operator settled, or a connector no longer configured, leaves the
/// refund to the operator.
pub(crate) fn connector_for(rail: Rail, rails: &Rails) -> Option<Rail> {
    match rail {
        Rail::Flutterwave if rails.flutterwave.is_some() => Some(Rail::Flutterwave),
        Rail::Flutterwave | Rail::ManualSettlement | Rail::SandboxSimulator => None,
    }
}

/// The one decision of where a refund of `payment` goes: the sandbox's
/// simulator (its outcome by the amount's last two digits); on live, the
/// payment's connector when it refunds, otherwise the operator.
pub(crate) fn refund_rail(deps: &Deps<'_>, payment: &CollectionRecord, scale: u32) -> RefundRail {
    match deps.stack {
        StackKind::Sandbox => RefundRail {
            rail: simulator::RAIL,
            note: "Sandbox simulator; the outcome follows the amount's last two decimal digits".into(),
            schedule: simulator::refund_schedule(scale, deps.time_scale),
        },
        StackKind::Live => match Rail::from_name(&payment.rail).and_then(|r| connector_for(r, deps.rails)) {
            Some(connector) => RefundRail {
                rail: connector,
                note: format!("Refund to be sent through {connector}"),
                schedule: RefundSchedule::default(),
            },
            None => RefundRail {
                rail: Rail::ManualSettlement,
                note: "Waiting for the operator to return the money to the payer".into(),
                schedule: RefundSchedule::default(),
            },
        },
    }
}

/// Creates the refund `request` asks for (its body's `fingerprint` tells a
/// retry from a different request under the same reference). The amount
/// is held on the balance of the payment's currency at once; the engine
/// checks it against what the payment has left to refund in the same
/// command, so refunds racing for one payment never exceed it. A retry of
/// a created refund answers it as it is now, `replayed`.
pub(crate) async fn create(
    deps: &Deps<'_>,
    principal: &Principal,
    request: CreateRefund,
    fingerprint: [u8; 32],
) -> ApiResult<Created<Refund>> {
    validate_reference(&request.external_reference)?;
    check_metadata(request.metadata.as_ref())?;
    check_reason(request.reason.as_deref())?;
    let organization = principal.organization();
    let payment = payment(&deps.ledger.read()?, organization, &request, deps.ledger.now_ms())?;
    let currency = Currency::find(&payment.collection.currency).map_err(ApiError::internal_from)?;
    let amount = request
        .amount
        .as_ref()
        .map(|a| currency.parse(a.as_str(), false).map_err(|e| money_error("amount", e)))
        .transpose()?;
    let route = refund_rail(deps, &payment.collection, currency.scale);
    let new = NewRefund {
        organization: organization.to_string(),
        collection_id: payment.collection.id.clone(),
        session_id: payment.session_id.clone(),
        amount,
        reason: request.reason,
        metadata: Value::Object(request.metadata.unwrap_or_default()).to_string(),
        external_reference: request.external_reference,
        rail: route.rail.name().to_string(),
        rail_note: route.note,
        schedule: route.schedule,
        request_fingerprint: fingerprint,
    };
    let given = if amount.is_some() { "amount" } else { payment.named_by.field() };
    let applied =
        deps.ledger.execute(Command::CreateRefund(Box::new(new))).await.map_err(|e| refused(e, given))?;
    let Outcome::Refund(refund) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let created = render::refund(&refund, &[]);
    created_or_replayed(
        deps.ledger,
        organization,
        applied.replayed,
        &sika_engine::RefundId::named(&refund.id),
        created,
    )
}

/// The engine's refusal as the caller reads it: what is refundable names
/// `field` (the amount, or the payment when the amount was left to the
/// node) with `details.refundable`; a payment not completed names how the
/// request named it, with `"0.00"`.
fn refused(error: EngineError, field: &str) -> ApiError {
    let EngineError::NotRefundable { payment_completed, refundable, currency } = error else {
        return error.into();
    };
    let left = amount(&currency, refundable);
    let message = if payment_completed {
        format!("at most {left} {currency} of this payment can still be refunded")
    } else {
        "the payment is not completed; nothing can be refunded".to_string()
    };
    ApiError::validation(field, message).with_detail("refundable", left)
}

fn check_reason(reason: Option<&str>) -> ApiResult<()> {
    match reason {
        Some(text) if text.trim().is_empty() || text.chars().count() > 500 => {
            Err(ApiError::validation("reason", "must be 1 to 500 characters"))
        }
        _ => Ok(()),
    }
}

/// The payment `request` names, the caller's own: exactly one of
/// `collectionId` (a completed collection) and `sessionId` (a `complete`
/// checkout session). A refund by collection of a checkout payment carries
/// its session, so both ids share one refundable amount (the engine keeps
/// it by collection).
fn payment(snapshot: &Snapshot, organization: &str, request: &CreateRefund, now: i64) -> ApiResult<Payment> {
    let not_completed = |named_by: NamedBy| {
        ApiError::validation(named_by.field(), "the payment is not completed; nothing can be refunded")
            .with_detail("refundable", "0.00")
    };
    match (&request.collection_id, &request.session_id) {
        (Some(_), Some(_)) => {
            Err(ApiError::validation("sessionId", "give collectionId or sessionId, not both"))
        }
        (None, None) => Err(ApiError::validation("collectionId", "collectionId or sessionId is required")),
        (Some(id), None) => {
            let collection = snapshot
                .collection(&sika_engine::CollectionId::named(id))?
                .filter(|c| c.organization == organization)
                .ok_or_else(|| ApiError::not_found(format!("collection '{id}' not found")))?;
            if collection.status != MovementStatus::Completed {
                return Err(not_completed(NamedBy::Collection));
            }
            let session_id = checkout::session_of_payment(snapshot, &collection)?;
            Ok(Payment { collection, session_id, named_by: NamedBy::Collection })
        }
        (None, Some(id)) => {
            let (session, status) = checkout::owned_session(snapshot, organization, id, now)?
                .ok_or_else(|| ApiError::not_found(format!("checkout session '{id}' not found")))?;
            if status != CheckoutSessionStatus::Complete {
                return Err(not_completed(NamedBy::Session));
            }
            let collection = snapshot
                .collection(&sika_engine::CollectionId::named(&session.collection))?
                .ok_or_else(|| ApiError::internal_from(format!("session {id} names a missing collection")))?;
            Ok(Payment { collection, session_id: Some(session.id), named_by: NamedBy::Session })
        }
    }
}

/// One page of the caller's refunds, newest first, narrowed by `status`
/// and `collectionId`.
pub(crate) fn list(
    lists: Lists<'_>,
    principal: &Principal,
    query: ListQuery,
    filter: RefundFilter,
) -> ApiResult<ListPage<Refund>> {
    let filter = checked_filter(filter)?;
    let organization = principal.organization();
    page_of_views(lists, organization, "refunds", &query, |snapshot, id| {
        listed(snapshot, organization, &filter, id)
    })
}

/// The refunds list's filter, a `status` the refunds never have refused.
pub(crate) fn checked_filter(filter: RefundFilter) -> ApiResult<RefundFilter> {
    if let Some(status) = filter.status.as_deref()
        && !STATUSES.contains(&status)
    {
        return Err(ApiError::validation("status", format!("must be one of {}", STATUSES.join(", "))));
    }
    Ok(filter)
}

/// Whether the refunds list's `filter` keeps `refund` (the export checks
/// a refund [`listed`] found without a filter, and its period first).
pub(crate) fn keeps(filter: &RefundFilter, refund: &Refund) -> bool {
    let status = serde_json::to_value(refund.status).ok();
    filter.status.as_deref().is_none_or(|s| status.as_ref().and_then(|v| v.as_str()) == Some(s))
        && filter.collection_id.as_deref().is_none_or(|c| c == refund.collection_id)
}

/// The refund `id` of `organization` as its list shows it, when `filter`
/// keeps it (the list's and the export's rows).
pub(crate) fn listed(
    snapshot: &sika_engine::Snapshot,
    organization: &str,
    filter: &RefundFilter,
    id: &str,
) -> ApiResult<Option<Refund>> {
    let Some(record) =
        snapshot.refund(&sika_engine::RefundId::named(id))?.filter(|r| r.organization == organization)
    else {
        return Ok(None);
    };
    let kept = filter.status.as_deref().is_none_or(|s| s == record.status.name())
        && filter.collection_id.as_deref().is_none_or(|c| c == record.collection_id);
    if !kept {
        return Ok(None);
    }
    views::refund(snapshot, &record, views::AsOf::Now).map(Some)
}

/// The refunds on a stack that wait for the operator (pending on the
/// manual rail: their payment's rail has no connector that refunds), oldest
/// first, each with its organization; read from the ledger's index of open
/// movements, so no other refund is decoded.
pub(crate) fn awaiting_operator(ledger: &sika_engine::Engine) -> ApiResult<ListPage<Owned<Refund>>> {
    let snapshot = ledger.read()?;
    let mut open: Vec<_> = snapshot
        .open_movements(Rail::ManualSettlement.name())?
        .into_iter()
        .filter(|m| m.kind == MovementKind::Refund)
        .collect();
    open.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
    let mut data = Vec::with_capacity(open.len().min(AWAITING_OPERATOR_MAX));
    for movement in open.iter().take(AWAITING_OPERATOR_MAX) {
        let Some(record) = snapshot.refund(&sika_engine::RefundId::named(&movement.id))? else {
            return Err(ApiError::internal_from(format!("open refund {} is missing", movement.id)));
        };
        let item = views::refund(&snapshot, &record, views::AsOf::Now)?;
        data.push(Owned { organization_id: record.organization.clone(), item });
    }
    let mut page = ListPage::whole(data);
    page.has_more = open.len() > AWAITING_OPERATOR_MAX;
    Ok(page)
}
