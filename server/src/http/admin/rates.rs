//! A stack's rates for the operator: the table in effect with each rate's
//! source and age, and replacing the manual table at runtime.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::admin::{ReplaceRates, StackPath, StackRatesEnvelope, StackRefusals};
use sika_api::{BodyRefusals, ErrorBody};

use super::AdminState;
use crate::domain::error::ApiResult;
use crate::domain::rates;
use crate::http::extract::ApiJson;

/// A stack's rates, each with its source and age
///
/// Units of each currency per one US dollar, with where each comes from
/// (`config`, `admin`, `feed`, or on an unconfigured sandbox `builtin`)
/// and, when a feed is configured, how polling it goes. A currency whose
/// only source is a stale feed shows `rate: null`: it is refused with
/// `503 rates_unavailable` until the feed recovers.
#[utoipa::path(get, path = "/admin/v1/{stack}/rates", operation_id = "getStackRates",
    security(("operator" = [])), params(StackPath),
    responses((status = 200, description = "The stack's rates", body = StackRatesEnvelope), StackRefusals),
)]
pub(super) async fn read(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<StackRatesEnvelope>> {
    let stack = state.stack(&stack)?;
    Ok(Json(StackRatesEnvelope { rates: rates::view(&stack.engine, &stack.rates, stack.kind) }))
}

/// Replace a stack's manual rate table
///
/// The new table is stored durably and replaces the configuration file's
/// `[rates.usd]` (also after a restart). Its rates win over the feed's for
/// the currencies it lists; the others keep coming from the feed.
#[utoipa::path(put, path = "/admin/v1/{stack}/rates", operation_id = "replaceStackRates",
    security(("operator" = [])), params(StackPath), request_body = ReplaceRates,
    responses((status = 200, description = "The stack's rates after the change", body = StackRatesEnvelope),
        (status = 400, description = "`base` is not USD, or a currency or rate is invalid (`validation_error`, `details.field`)", body = ErrorBody),
        BodyRefusals<StackRefusals>),
)]
pub(super) async fn replace(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiJson(request): ApiJson<ReplaceRates>,
) -> ApiResult<Json<StackRatesEnvelope>> {
    let stack = state.stack(&stack)?;
    let rates = rates::replace(&stack.engine, &stack.rates, stack.kind, request).await?;
    Ok(Json(StackRatesEnvelope { rates }))
}
