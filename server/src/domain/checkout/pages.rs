//! Payment pages: one use case per operation of `/v1/payment-pages`.

use sika_api::checkout::CheckoutRequest;
use sika_api::payment_pages::{PaymentPage, PaymentPageFilter, PaymentPageStatus};
use sika_api::{ListPage, ListQuery};
use sika_engine::Snapshot;

use super::requests::new_page;
use super::{Deps, PAGES, load_page, page_status, render_page};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::render::wire_enum;

/// Every status a page can have, as the wire writes them: the status
/// filter's refusal names them and the dashboard's filter shows them.
pub(crate) const STATUSES: &[&str] = &["active", "closed"];

/// Creates a page for `organization`.
pub(crate) async fn create(
    deps: &Deps<'_>,
    organization: &str,
    request: CheckoutRequest,
) -> ApiResult<PaymentPage> {
    let page = new_page(request, organization, deps.now_ms())?;
    super::store_new(deps, PAGES, &page.id, &page.organization, &page).await?;
    render_page(deps, &deps.engine.read()?, &page, deps.now_ms())
}

/// A page the caller owns (read from `snapshot`), with its payments so far.
pub(crate) fn get(deps: &Deps<'_>, snapshot: &Snapshot, page: &super::PaymentPage) -> ApiResult<PaymentPage> {
    render_page(deps, snapshot, page, deps.now_ms())
}

/// Closes page `id` of `organization` (idempotently) and answers it.
pub(crate) async fn close(deps: &Deps<'_>, organization: &str, id: &str) -> ApiResult<PaymentPage> {
    super::close(deps, PAGES, organization, id).await?;
    let snapshot = deps.engine.read()?;
    let page = load_page(&snapshot, id)?
        .filter(|p| p.organization == organization)
        .ok_or_else(|| ApiError::not_found(format!("payment page '{id}' not found")))?;
    get(deps, &snapshot, &page)
}

/// One page of `organization`'s pages, newest first, filtered by status.
pub(crate) fn list(
    deps: &Deps<'_>,
    organization: &str,
    query: &ListQuery,
    filter: &PaymentPageFilter,
) -> ApiResult<ListPage<PaymentPage>> {
    let status = filter
        .status
        .as_deref()
        .map(|s| {
            wire_enum::<PaymentPageStatus>(s)
                .map_err(|_| ApiError::validation("status", "must be active or closed"))
        })
        .transpose()?;
    let now = deps.now_ms();
    deps.lists().page_of_views(organization, PAGES, query, |snapshot, id| {
        let Some(p) = load_page(snapshot, id)? else { return Ok(None) };
        if status.is_some_and(|s| s != page_status(&p, now)) {
            return Ok(None);
        }
        Ok(Some(render_page(deps, snapshot, &p, now)?))
    })
}
