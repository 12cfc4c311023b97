//! `/v1/payment-pages`: reusable hosted checkouts, served through a
//! utoipa-axum router (`sika_api::payment_pages`).

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::checkout::CheckoutRequest;
use sika_api::payment_pages::{PaymentPage, PaymentPageEnvelope, PaymentPageFilter, PaymentPageStatus};
use sika_api::{ErrorBody, FieldRefusals, Id, ListPage, ListQuery, ReadRefusals, Refusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::checkout::requests::new_page;
use crate::domain::checkout::{self, PAGES, load_page, page_status, render_page};
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

/// Create a reusable hosted checkout page
///
/// Any payer may pay on the page's `url`; each one who starts paying gets a
/// payment link of their own under the page. Omit `amount` to let each
/// payer choose. `email` and `customerReference` are a payment link's
/// fields: a page refuses them.
#[utoipa::path(post, path = "/v1/payment-pages", operation_id = "createPaymentPage",
    request_body = CheckoutRequest, security(("bearer" = ["payment-pages:write"])),
    responses((status = 201, description = "The page", body = PaymentPageEnvelope), FieldRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CheckoutRequest>,
) -> ApiResult<(StatusCode, Json<PaymentPageEnvelope>)> {
    let page = new_page(body, principal.organization(), stack.now_ms())?;
    checkout::store_new(&stack, PAGES, &page.id, &page.organization, &page).await?;
    let snapshot = stack.engine.read()?;
    let payment_page = render_page(&stack, &snapshot, &page, stack.now_ms())?;
    Ok((StatusCode::CREATED, Json(PaymentPageEnvelope { payment_page })))
}

/// One payment page with its payment count and total collected
#[utoipa::path(get, path = "/v1/payment-pages/{id}", operation_id = "getPaymentPage",
    params(Id<PaymentPageEnvelope>), security(("bearer" = ["payment-pages:read"])),
    responses((status = 200, description = "The page", body = PaymentPageEnvelope),
        ReadRefusals<PaymentPageEnvelope>),
)]
async fn read(
    Loaded { record: page, snapshot, stack, .. }: Loaded<checkout::PaymentPage>,
) -> ApiResult<Json<PaymentPageEnvelope>> {
    let payment_page = render_page(&stack, &snapshot, &page, stack.now_ms())?;
    Ok(Json(PaymentPageEnvelope { payment_page }))
}

/// Close a page: it takes no new payers
///
/// Closing a closed page answers it unchanged. Links its payers already
/// started stay payable.
#[utoipa::path(post, path = "/v1/payment-pages/{id}/close", operation_id = "closePaymentPage",
    params(Id<PaymentPageEnvelope>), security(("bearer" = ["payment-pages:write"])),
    responses((status = 200, description = "The page, closed", body = PaymentPageEnvelope),
        (status = 409, description = "The page kept changing under concurrent requests (`conflict`); retry", body = ErrorBody),
        ReadRefusals<PaymentPageEnvelope>),
)]
async fn close(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
) -> ApiResult<Json<PaymentPageEnvelope>> {
    checkout::close(&stack, PAGES, principal.organization(), &id).await?;
    read(Loaded::load(stack, &principal, &id)?).await
}

/// Payment pages, newest first
#[utoipa::path(get, path = "/v1/payment-pages", operation_id = "listPaymentPages",
    params(ListQuery, PaymentPageFilter), security(("bearer" = ["payment-pages:read"])),
    responses((status = 200, description = "One page of payment pages", body = ListPage<PaymentPage>),
        (status = 400, description = "A bad `limit`, `cursor` or `status`, or a query parameter the operation does not take (`validation_error` naming it)", body = ErrorBody),
        Refusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, PaymentPageFilter>,
) -> ApiResult<Json<ListPage<PaymentPage>>> {
    let status = filter
        .status
        .as_deref()
        .map(|s| {
            wire_enum::<PaymentPageStatus>(s)
                .map_err(|_| ApiError::validation("status", "must be active or closed"))
        })
        .transpose()?;
    let now = stack.now_ms();
    let page = page_of_views(&stack, principal.organization(), PAGES, &query, |snapshot, id| {
        let Some(p) = load_page(snapshot, id)? else { return Ok(None) };
        if status.is_some_and(|s| s != page_status(&p, now)) {
            return Ok(None);
        }
        Ok(Some(render_page(&stack, snapshot, &p, now)?))
    })?;
    Ok(Json(page))
}
