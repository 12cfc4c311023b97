//! `/v1/rates`: the operation is generated from the handler and the wire
//! types (`sika_api::rates`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::rates::RateEnvelope;
use sika_api::{ErrorBody, Refusals};
use sika_engine::Currency;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::rates;
use crate::domain::stack::Stack;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(rate))
}

pub(super) fn currency_param(field: &str, code: &str) -> ApiResult<Currency> {
    Currency::find(&code.to_ascii_uppercase()).map_err(|e| ApiError::validation(field, e.to_string()))
}

/// The all-in rate a quote would lock now
///
/// Units of `destination` per unit of `origin`, the spread included: what a
/// quote created now locks, and what a cross-currency payout is converted at.
#[utoipa::path(get, path = "/v1/rates/{origin}/{destination}", operation_id = "getRate",
    params(("origin" = String, Path, description = "The currency converted from, case-insensitive", example = "USD"), ("destination" = String, Path, description = "The currency converted to, case-insensitive", example = "GHS")),
    security(("bearer" = ["rates:read"])),
    responses((status = 200, description = "The rate", body = RateEnvelope),
        (status = 400, description = "An unknown currency or the same currency twice (`validation_error`), or an unknown `sika-version` header", body = ErrorBody),
        Refusals),
)]
async fn rate(
    State(stack): State<Arc<Stack>>,
    Path((origin, destination)): Path<(String, String)>,
) -> ApiResult<Json<RateEnvelope>> {
    let from = currency_param("origin", &origin)?;
    let to = currency_param("destination", &destination)?;
    let rate = rates::rate(&stack.engine, from, to, stack.config.quote_ttl.as_secs())?;
    Ok(Json(RateEnvelope { rate }))
}
