//! `/v1/conversions` and its quotes: operations generated from the handlers
//! and the wire types (`sika_api::conversions`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use sika_api::conversions::{Conversion, ConversionEnvelope, CreateConversion, CreateQuote, QuoteEnvelope};
use sika_api::{BodyRefusals, ErrorBody, Id, ListPage, ListQuery, NoSuch, PageRefusals, ReadRefusals};
use sika_engine::{Command, Outcome, QuoteAmount};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult, money_error, unexpected};
use crate::domain::instructions::validate_reference;
use crate::domain::pagination::page_of_views;
use crate::domain::render;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::found::Loaded;
use crate::http::routes::rates::currency_param;
use sika_engine::records::{ConversionRecord, QuoteRecord};

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
    let from = currency_param("from.currency", &body.from.currency)?;
    let to = currency_param("to.currency", &body.to.currency)?;
    if from == to {
        return Err(ApiError::validation("to.currency", "must differ from from.currency"));
    }
    let amount = match (&body.from.amount, &body.to.amount) {
        (Some(a), None) => {
            QuoteAmount::From(from.parse(a.as_str(), false).map_err(|e| money_error("from.amount", e))?)
        }
        (None, Some(a)) => {
            QuoteAmount::To(to.parse(a.as_str(), false).map_err(|e| money_error("to.amount", e))?)
        }
        _ => {
            return Err(ApiError::validation("from.amount", "give exactly one of from.amount and to.amount"));
        }
    };
    let applied = stack
        .engine
        .execute(Command::CreateQuote {
            organization: principal.organization().to_string(),
            from_currency: from.code.to_string(),
            to_currency: to.code.to_string(),
            amount,
        })
        .await?;
    let Outcome::Quote(quote) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    Ok((StatusCode::CREATED, Json(QuoteEnvelope { quote: render::quote(&quote, stack.now_ms()) })))
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
    if body.quote_id.is_empty() {
        return Err(ApiError::validation("quoteId", "must not be empty"));
    }
    if let Some(reference) = &body.external_reference {
        validate_reference(reference)?;
    }
    let applied = stack
        .engine
        .execute(Command::ExecuteQuote {
            organization: principal.organization().to_string(),
            quote_id: body.quote_id,
            external_reference: body.external_reference,
        })
        .await?;
    let Outcome::Conversion(conversion) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let status = if applied.replayed { StatusCode::OK } else { StatusCode::CREATED };
    Ok((status, Json(ConversionEnvelope { conversion: render::conversion(&conversion) })))
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
    let page = page_of_views(&stack, principal.organization(), "conversions", &query, |snapshot, id| {
        Ok(snapshot.conversion(id)?.map(|c| render::conversion(&c)))
    })?;
    Ok(Json(page))
}
