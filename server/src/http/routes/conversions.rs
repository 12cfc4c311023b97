//! `/v1/conversions` and its quotes: operations generated from the handlers
//! and the wire types (`sika_api::conversions`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use sika_api::conversions::{Conversion, ConversionEnvelope, CreateConversion, CreateQuote, QuoteEnvelope};
use sika_api::{BodyRefusals, ErrorBody, Id, ListPage, ListQuery, NoSuch, PageRefusals, ReadRefusals};
use sika_engine::records::{ConversionRecord, QuoteRecord};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::conversions;
use crate::domain::error::ApiResult;
use crate::domain::render;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::found::Loaded;
use crate::http::routes::movements::status;

pub(crate) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new()
        .routes(routes!(create_quote))
        .routes(routes!(get_quote))
        .routes(routes!(execute, list))
        .routes(routes!(get_conversion))
}

/// Lock a rate for a conversion
///
/// Give exactly one of `from.amount` and `to.amount`; the quote computes
/// the other at the all-in rate and holds it until `expiresAt`.
#[utoipa::path(post, path = "/v1/conversions/quotes", operation_id = "createQuote",
    request_body = CreateQuote, security(("bearer" = ["conversions:write"])),
    responses(
        (status = 201, description = "The quote, pending until it is executed or expires", body = QuoteEnvelope),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`), no rate between the currencies, or an unknown `sika-version` header", body = ErrorBody),
        BodyRefusals),
)]
async fn create_quote(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateQuote>,
) -> ApiResult<(StatusCode, Json<QuoteEnvelope>)> {
    let quote = conversions::create_quote(&stack.engine, &principal, body).await?;
    Ok((StatusCode::CREATED, Json(QuoteEnvelope { quote })))
}

/// One quote
#[utoipa::path(get, path = "/v1/conversions/quotes/{id}", operation_id = "getQuote",
    params(Id<QuoteEnvelope>), security(("bearer" = ["conversions:read"])),
    responses(
        (status = 200, description = "The quote; `status` is `expired` once `expiresAt` has passed unexecuted", body = QuoteEnvelope),
        ReadRefusals<QuoteEnvelope>),
)]
async fn get_quote(Loaded { record, stack, .. }: Loaded<QuoteRecord>) -> ApiResult<Json<QuoteEnvelope>> {
    Ok(Json(QuoteEnvelope { quote: render::quote(&record, stack.now_ms()) }))
}

/// Execute a pending quote
///
/// Debits `from.amount` and credits `to.amount` at the quoted rate, at
/// once. A concurrent execute of the same quote answers 200 with the same
/// conversion; so does a retry with the same `externalReference`.
#[utoipa::path(post, path = "/v1/conversions", operation_id = "executeQuote",
    request_body = CreateConversion, security(("bearer" = ["conversions:write"])),
    responses((status = 201, description = "The conversion, completed", body = ConversionEnvelope),
        (status = 200, description = "The same conversion, for a concurrent execute or a retry with the same externalReference", body = ConversionEnvelope),
        (status = 400, description = "The quote expired or was already executed (`bad_request`), a field is invalid (`validation_error`), or the `sika-version` header is unknown", body = ErrorBody),
        (status = 409, description = "The externalReference was used with another quote (`duplicate`)", body = ErrorBody),
        (status = 422, description = "The `from.currency` balance cannot cover `from.amount` (`insufficient_funds`)", body = ErrorBody),
        NoSuch<QuoteEnvelope>, BodyRefusals),
)]
async fn execute(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateConversion>,
) -> ApiResult<(StatusCode, Json<ConversionEnvelope>)> {
    let created = conversions::execute(&stack.engine, &principal, body).await?;
    Ok((status(&created), Json(ConversionEnvelope { conversion: created.view })))
}

/// One conversion
#[utoipa::path(get, path = "/v1/conversions/{id}", operation_id = "getConversion",
    params(Id<ConversionEnvelope>), security(("bearer" = ["conversions:read"])),
    responses((status = 200, description = "The conversion", body = ConversionEnvelope),
        ReadRefusals<ConversionEnvelope>),
)]
async fn get_conversion(
    Loaded { record, .. }: Loaded<ConversionRecord>,
) -> ApiResult<Json<ConversionEnvelope>> {
    Ok(Json(ConversionEnvelope { conversion: render::conversion(&record) }))
}

/// Conversions, newest first
#[utoipa::path(get, path = "/v1/conversions", operation_id = "listConversions",
    params(ListQuery), security(("bearer" = ["conversions:read"])),
    responses((status = 200, description = "One page of conversions", body = ListPage<Conversion>),
        PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<Conversion>>> {
    Ok(Json(conversions::list((&stack).into(), &principal, &query)?))
}
