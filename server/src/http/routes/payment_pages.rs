//! `/v1/payment-pages`: reusable hosted checkouts, served through a
//! utoipa-axum router (`sika_api::payment_pages`).

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::checkout::CheckoutRequest;
use sika_api::payment_pages::{PaymentPage, PaymentPageEnvelope, PaymentPageFilter};
use sika_api::{ErrorBody, FieldRefusals, Id, ListPage, ListQuery, ReadRefusals, Refusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::checkout::{self, pages};
use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries};
use crate::http::found::Loaded;
use crate::http::routes::checkout::deps;

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
    let payment_page = pages::create(&deps(&stack), principal.organization(), body).await?;
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
    let payment_page = pages::get(&deps(&stack), &snapshot, &page)?;
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
    let payment_page = pages::close(&deps(&stack), principal.organization(), &id).await?;
    Ok(Json(PaymentPageEnvelope { payment_page }))
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
    Ok(Json(pages::list(&deps(&stack), principal.organization(), &query, &filter)?))
}
