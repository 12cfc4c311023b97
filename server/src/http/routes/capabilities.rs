//! `/v1/capabilities`: the payment methods of each country, from the
//! catalog shipped with the node with the operator's per-stack overrides
//! (status, limits) applied.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::capabilities::{Method, MethodEnvelope};
use sika_api::{ErrorBody, ListPage, ListQuery, Refusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::capabilities;
use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::http::extract::ApiQuery;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(country)).routes(routes!(method))
}

/// A country's payment methods
///
/// Its local methods, then the stablecoin networks every country offers,
/// paged by `limit` and `cursor`.
#[utoipa::path(get, path = "/v1/capabilities/{country}", operation_id = "listCountryMethods",
    params(("country" = String, Path, description = "ISO 3166-1 alpha-2, case-insensitive", example = "GH"), ListQuery),
    security(("bearer" = ["capabilities:read"])),
    responses((status = 200, description = "One page of the country's methods", body = ListPage<Method>),
        (status = 400, description = "A bad `limit` or `cursor`, a query parameter the operation does not take (`validation_error` naming it), or an unknown `sika-version`", body = ErrorBody),
        (status = 404, description = "No payment methods are known for the country", body = ErrorBody),
        Refusals),
)]
async fn country(
    State(stack): State<Arc<Stack>>,
    Path(country): Path<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<Method>>> {
    Ok(Json(capabilities::country(&stack.capability_deps(), &country, &query)?))
}

/// One payment method of a country
///
/// Its live status, limits, settlement estimate and the input fields it
/// needs: look it up before creating a recipient or payout to catch a limit
/// or an outage first.
#[utoipa::path(get, path = "/v1/capabilities/{country}/{method}", operation_id = "getMethod",
    params(("country" = String, Path, description = "ISO 3166-1 alpha-2, case-insensitive", example = "GH"), ("method" = String, Path, description = "The method's code", example = "mtn_gh")),
    security(("bearer" = ["capabilities:read"])),
    responses((status = 200, description = "The method", body = MethodEnvelope),
        (status = 400, description = "An unknown `sika-version`", body = ErrorBody),
        (status = 404, description = "The method is not available in the country, or the country is unknown", body = ErrorBody),
        Refusals),
)]
async fn method(
    State(stack): State<Arc<Stack>>,
    Path((country, code)): Path<(String, String)>,
) -> ApiResult<Json<MethodEnvelope>> {
    Ok(Json(MethodEnvelope { method: capabilities::method(&stack.capability_deps(), &country, &code)? }))
}
