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

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::page_of_items;
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
    let methods = stack.catalog.methods_for(&country).ok_or_else(|| {
        ApiError::not_found(format!("no payment methods are known for country '{country}'"))
    })?;
    let data = methods.into_iter().map(|m| rendered(&stack, m)).collect();
    let scope = format!("{}/capabilities/{}", stack.kind.name(), country.to_ascii_uppercase());
    Ok(Json(page_of_items(data, &query, &stack.identity.secret(), &scope)?))
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
    let method = stack
        .catalog
        .method(&country, &code)
        .ok_or_else(|| ApiError::not_found(format!("method '{code}' is not available in '{country}'")))?;
    Ok(Json(MethodEnvelope { method: rendered(&stack, method) }))
}

/// A method as shown, with its status now (a provider's breaker included).
fn rendered(stack: &Stack, method: &crate::domain::catalog::Method) -> Method {
    let mut shown = method.render();
    shown.status = stack.method_status(method);
    shown
}
