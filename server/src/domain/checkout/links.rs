//! Payment links: one use case per operation of `/v1/payment-links`.

use sika_api::checkout::CheckoutRequest;
use sika_api::payment_links::{PaymentLink, PaymentLinkFilter, PaymentLinkParentType, PaymentLinkStatus};
use sika_api::{ListPage, ListQuery};
use sika_engine::Snapshot;

use super::requests::new_link;
use super::{Deps, LINKS, PAGE_LINKS, link_sessions, link_state, load_link, load_page, render_link};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::wire_enum;

/// Every status a link can have, as the wire writes them: the status
/// filter's refusal names them and the dashboard's filter shows them.
pub(crate) const STATUSES: &[&str] = &["active", "paid", "expired", "closed"];

/// Creates a link for `organization`; it answers with its (empty) sessions.
pub(crate) async fn create(
    deps: &Deps<'_>,
    organization: &str,
    request: CheckoutRequest,
) -> ApiResult<PaymentLink> {
    let link = new_link(request, organization, deps.now_ms())?;
    super::store_new(deps, LINKS, &link.id, &link.organization, &link).await?;
    let state = link_state(&deps.engine.read()?, &link, deps.now_ms())?;
    render_link(deps, &link, &state, Some(&[]))
}

/// A link the caller owns (read from `snapshot`), with every session.
pub(crate) fn get(deps: &Deps<'_>, snapshot: &Snapshot, link: &super::PaymentLink) -> ApiResult<PaymentLink> {
    // Its totals come from the link's tally; the spec lists every session
    // here (at most `checkout_attempts_per_link` of them).
    let state = link_state(snapshot, link, deps.now_ms())?;
    let sessions = link_sessions(snapshot, &link.id, &state)?;
    render_link(deps, link, &state, Some(&sessions))
}

/// Closes link `id` of `organization` (idempotently; a paid link cannot
/// be closed) and answers it.
pub(crate) async fn close(deps: &Deps<'_>, organization: &str, id: &str) -> ApiResult<PaymentLink> {
    super::close(deps, LINKS, organization, id).await?;
    let snapshot = deps.engine.read()?;
    let link = load_link(&snapshot, id)?
        .filter(|l| l.organization == organization)
        .ok_or_else(|| ApiError::not_found(format!("payment link '{id}' not found")))?;
    get(deps, &snapshot, &link)
}

/// One page of `organization`'s links (or one page's payers' links),
/// newest first, without their sessions; every filter given must match.
pub(crate) fn list(
    deps: &Deps<'_>,
    organization: &str,
    query: &ListQuery,
    filter: &PaymentLinkFilter,
) -> ApiResult<ListPage<PaymentLink>> {
    let status = filter
        .status
        .as_deref()
        .map(|s| {
            wire_enum::<PaymentLinkStatus>(s).map_err(|_| {
                ApiError::validation("status", format!("must be one of {}", STATUSES.join(", ")))
            })
        })
        .transpose()?;
    if let Some(kind) = &filter.parent_type
        && wire_enum::<PaymentLinkParentType>(kind).is_err()
    {
        return Err(ApiError::validation("parentType", "must be payment_page"));
    }
    // One page's payers are listed under the page; everything else under the organization.
    let (owner, kind) = match &filter.parent_id {
        Some(page_id) => {
            let snapshot = deps.engine.read()?;
            if load_page(&snapshot, page_id)?.is_none_or(|p| p.organization != organization) {
                return Ok(ListPage::whole(Vec::new()));
            }
            (page_id.as_str(), PAGE_LINKS)
        }
        None => (organization, LINKS),
    };
    let now = deps.now_ms();
    deps.lists().page_of_views(owner, kind, query, |snapshot, id| {
        let Some(link) = load_link(snapshot, id)?.filter(|l| l.organization == organization) else {
            return Ok(None);
        };
        if !matches(filter, &link) {
            return Ok(None);
        }
        let state = link_state(snapshot, &link, now)?;
        if status.is_some_and(|s| s != state.status) {
            return Ok(None);
        }
        Ok(Some(render_link(deps, &link, &state, None)?))
    })
}

/// Whether `link` passes the filters its stored record answers (the status
/// filter needs the link's state, which costs a read of its tally).
fn matches(filter: &PaymentLinkFilter, link: &super::PaymentLink) -> bool {
    (filter.parent_type.is_none() || link.page.is_some())
        && filter
            .email
            .as_ref()
            .is_none_or(|e| link.email.as_ref().is_some_and(|l| l.eq_ignore_ascii_case(e.trim())))
        && filter.customer_reference.as_ref().is_none_or(|r| link.customer_reference.as_ref() == Some(r))
}
