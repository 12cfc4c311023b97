//! `/v1/payment-links`: one customer's charge on a hosted checkout, served
//! through a utoipa-axum router (`sika_api::payment_links`).

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::checkout::CheckoutRequest;
use sika_api::payment_links::{
    PaymentLink, PaymentLinkEnvelope, PaymentLinkFilter, PaymentLinkParentType, PaymentLinkStatus,
};
use sika_api::{ErrorBody, FieldRefusals, Id, ListPage, ListQuery, NoSuch, ReadRefusals, Refusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::checkout::requests::new_link;
use crate::domain::checkout::{
    self, LINKS, PAGE_LINKS, link_sessions, link_state, load_link, load_page, render_link,
};
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::page_of_views;
use crate::domain::render::wire_enum;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries};
use crate::http::found::Loaded;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(read)).routes(routes!(close))
}

/// Create a payment link for one customer
///
/// Omit `amount` to let the payer choose; a link takes partial payments
/// until what it received covers the amount.
#[utoipa::path(post, path = "/v1/payment-links", operation_id = "createPaymentLink",
    request_body = CheckoutRequest, security(("bearer" = ["payment-pages:write"])),
    responses((status = 201, description = "The link, with its (empty) sessions", body = PaymentLinkEnvelope),
        FieldRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CheckoutRequest>,
) -> ApiResult<(StatusCode, Json<PaymentLinkEnvelope>)> {
    let link = new_link(body, principal.organization(), stack.now_ms())?;
    checkout::store_new(&stack, LINKS, &link.id, &link.organization, &link).await?;
    let snapshot = stack.engine.read()?;
    let state = link_state(&snapshot, &link, stack.now_ms())?;
    let payment_link = render_link(&stack, &link, &state, Some(&[]))?;
    Ok((StatusCode::CREATED, Json(PaymentLinkEnvelope { payment_link })))
}

/// One payment link with its checkout sessions, newest first
#[utoipa::path(get, path = "/v1/payment-links/{id}", operation_id = "getPaymentLink",
    params(Id<PaymentLinkEnvelope>), security(("bearer" = ["payment-pages:read"])),
    responses((status = 200, description = "The link", body = PaymentLinkEnvelope),
        ReadRefusals<PaymentLinkEnvelope>),
)]
async fn read(
    Loaded { record: link, snapshot, stack, .. }: Loaded<checkout::PaymentLink>,
) -> ApiResult<Json<PaymentLinkEnvelope>> {
    // Its totals come from the link's tally; the spec lists every session
    // here (at most `checkout_attempts_per_link` of them).
    let state = link_state(&snapshot, &link, stack.now_ms())?;
    let sessions = link_sessions(&snapshot, &link.id, &state)?;
    Ok(Json(PaymentLinkEnvelope { payment_link: render_link(&stack, &link, &state, Some(&sessions))? }))
}

/// Close a link: it takes no more payments
///
/// Closing a closed link answers it unchanged; a paid link cannot be closed.
#[utoipa::path(post, path = "/v1/payment-links/{id}/close", operation_id = "closePaymentLink",
    params(Id<PaymentLinkEnvelope>), security(("bearer" = ["payment-pages:write"])),
    responses((status = 200, description = "The link, closed", body = PaymentLinkEnvelope),
        (status = 400, description = "The link is paid (`bad_request`), or the `sika-version` header is unknown", body = ErrorBody),
        (status = 409, description = "The link kept changing under concurrent requests (`conflict`); retry", body = ErrorBody),
        NoSuch<PaymentLinkEnvelope>, Refusals),
)]
async fn close(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
) -> ApiResult<Json<PaymentLinkEnvelope>> {
    checkout::close(&stack, LINKS, principal.organization(), &id).await?;
    read(Loaded::load(stack, &principal, &id)?).await
}

/// Payment links, newest first, including those spawned by pages
///
/// Every filter given must match. `parentId` lists one page's payers'
/// links (none when the organization has no such page).
#[utoipa::path(get, path = "/v1/payment-links", operation_id = "listPaymentLinks",
    params(ListQuery, PaymentLinkFilter), security(("bearer" = ["payment-pages:read"])),
    responses(
        (status = 200, description = "One page of payment links, without their sessions", body = ListPage<PaymentLink>),
        (status = 400, description = "A bad `limit`, `cursor`, `status` or `parentType`, or a query parameter the operation does not take (`validation_error` naming it)", body = ErrorBody),
        Refusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, PaymentLinkFilter>,
) -> ApiResult<Json<ListPage<PaymentLink>>> {
    let status = filter
        .status
        .as_deref()
        .map(|s| {
            wire_enum::<PaymentLinkStatus>(s)
                .map_err(|_| ApiError::validation("status", "must be one of active, paid, expired, closed"))
        })
        .transpose()?;
    if let Some(kind) = &filter.parent_type
        && wire_enum::<PaymentLinkParentType>(kind).is_err()
    {
        return Err(ApiError::validation("parentType", "must be payment_page"));
    }
    let organization = principal.organization();
    // One page's payers are listed under the page; everything else under the organization.
    let (owner, kind) = match &filter.parent_id {
        Some(page_id) => {
            let snapshot = stack.engine.read()?;
            if load_page(&snapshot, page_id)?.is_none_or(|p| p.organization != organization) {
                return Ok(Json(ListPage::whole(Vec::new())));
            }
            (page_id.as_str(), PAGE_LINKS)
        }
        None => (organization, LINKS),
    };
    let now = stack.now_ms();
    let page = page_of_views(&stack, owner, kind, &query, |snapshot, id| {
        let Some(link) = load_link(snapshot, id)?.filter(|l| l.organization == organization) else {
            return Ok(None);
        };
        if !matches(&filter, &link) {
            return Ok(None);
        }
        let state = link_state(snapshot, &link, now)?;
        if status.is_some_and(|s| s != state.status) {
            return Ok(None);
        }
        Ok(Some(render_link(&stack, &link, &state, None)?))
    })?;
    Ok(Json(page))
}

/// Whether `link` passes the filters its stored record answers (the status
/// filter needs the link's state, which costs a read of its tally).
fn matches(filter: &PaymentLinkFilter, link: &checkout::PaymentLink) -> bool {
    (filter.parent_type.is_none() || link.page.is_some())
        && filter
            .email
            .as_ref()
            .is_none_or(|e| link.email.as_ref().is_some_and(|l| l.eq_ignore_ascii_case(e.trim())))
        && filter.customer_reference.as_ref().is_none_or(|r| link.customer_reference.as_ref() == Some(r))
}
