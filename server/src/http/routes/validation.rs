//! `/v1/validate/bulk`: payout destinations checked before paying out,
//! served through a utoipa-axum router (`sika_api::validation`).

use std::sync::Arc;

use axum::Json;
use sika_api::validation::{DestinationResult, DestinationResults, ValidateDestinations, ValidationDepth};
use sika_api::{BodyRefusals, ErrorBody};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::catalog;
use crate::domain::error::{ApiError, ApiResult};
use crate::domain::stack::{Stack, StackKind};
use crate::http::auth::Call;
use crate::http::extract::ApiJson;

/// The most destinations one call validates.
pub(super) const BULK_ITEMS_MAX: usize = 100;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(bulk))
}

/// Validate up to 100 payout destinations
///
/// A result per item, in order. On the sandbox the outcome follows the
/// account number's last six digits: `000000` not found, `000001` closed,
/// `000002` timeout, anything else valid with a deterministic account name
/// (`checked: rail`). The live stack never applies those suffixes: it
/// checks the format only, as a payout would (a mobile number for the
/// method's country, the method's account-number shape, an address of the
/// chain's form), names no account holder and answers `checked: format`.
/// Either `validation:write` or `validation:read` will do.
#[utoipa::path(
    post,
    path = "/v1/validate/bulk",
    operation_id = "validateBulk",
    request_body = ValidateDestinations,
    security(("bearer" = ["validation:write"]), ("bearer" = ["validation:read"])),
    responses(
        (status = 200, description = "A result per item", body = DestinationResults),
        (status = 400, description = "`items` is empty or holds more than 100, or an item's field is missing, empty or of the wrong type (`validation_error`, with `details.field` such as `items[3].code`), or the `sika-version` header is unknown", body = ErrorBody),
        BodyRefusals,
    )
)]
async fn bulk(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<ValidateDestinations>,
) -> ApiResult<Json<DestinationResults>> {
    if principal.require("validation:write").is_err() {
        principal.require("validation:read")?;
    }
    if body.items.is_empty() || body.items.len() > BULK_ITEMS_MAX {
        return Err(ApiError::validation("items", format!("must hold 1 to {BULK_ITEMS_MAX} items")));
    }
    let mut results = Vec::with_capacity(body.items.len());
    for (index, item) in body.items.into_iter().enumerate() {
        if item.code.trim().is_empty() {
            return Err(ApiError::validation(&format!("items[{index}].code"), "must not be empty"));
        }
        let (account_number, address) = (item.account_number.as_deref(), item.address.as_deref());
        let (result, checked) = match stack.kind {
            StackKind::Sandbox => {
                (catalog::sandbox_validate(&item.code, account_number, address), ValidationDepth::Rail)
            }
            // No provider lookup on live: the format only, and the answer says so.
            StackKind::Live => (
                catalog::live_validate(&stack.catalog, &item.code, account_number, address),
                ValidationDepth::Format,
            ),
        };
        results.push(DestinationResult { code: item.code, result: result.render(checked) });
    }
    Ok(Json(DestinationResults { results }))
}
