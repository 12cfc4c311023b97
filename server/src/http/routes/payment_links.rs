//! `/v1/payment-links`: one customer's charge on a hosted checkout, served
//! through a utoipa-axum router (`sika_api::payment_links`).

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::checkout::CheckoutRequest;
use sika_api::payment_links::{PaymentLink, PaymentLinkEnvelope, PaymentLinkFilter};
use sika_api::{ErrorBody, FieldRefusals, Id, ListPage, ListQuery, NoSuch, ReadRefusals, Refusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::checkout::{self, links};
use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries};
use crate::http::found::Loaded;
use crate::http::routes::checkout::deps;

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
    let payment_link = links::create(&deps(&stack), principal.organization(), body).await?;
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
    Ok(Json(PaymentLinkEnvelope { payment_link: links::get(&deps(&stack), &snapshot, &link)? }))
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
    let payment_link = links::close(&deps(&stack), principal.organization(), &id).await?;
    Ok(Json(PaymentLinkEnvelope { payment_link }))
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
    Ok(Json(links::list(&deps(&stack), principal.organization(), &query, &filter)?))
}
