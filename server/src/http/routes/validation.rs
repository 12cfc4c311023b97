//! `/v1/validate/bulk`: payout destinations checked before paying out,
//! served through a utoipa-axum router (`sika_api::validation`).

use std::sync::Arc;

use axum::Json;
use sika_api::validation::{DestinationResults, ValidateDestinations};
use sika_api::{BodyRefusals, ErrorBody};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::destinations;
use crate::domain::error::ApiResult;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::ApiJson;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(bulk))
}

/// Validate up to 100 payout destinations
///
/// A result per item, in order. On the sandbox the outcome follows the
/// account number's last six digits: `000000` not found, `000001` closed,
/// `000002` timeout, anything else valid with a deterministic account name
/// (`checked: rail`). The live stack never applies those suffixes: it
/// checks the format as a payout would (a mobile number for the method's
/// country, the method's account-number shape, an address of the chain's
/// form) and answers `checked: format`, except for a bank method the
/// operator routes through a provider with an account lookup (Flutterwave,
/// for Nigerian banks): there the account is looked up with the bank's
/// code in `routingNumber` (`missing_bank_code` without one) and the answer
/// is `checked: rail` with the holder's name, or `account_not_found`; a
/// provider that fails or is down answers `provider_unavailable`. A
/// `routingNumber` on a bank method must be one of its `bankCode` options
/// (`invalid_bank_code`). Either `validation:write` or `validation:read`
/// will do.
#[utoipa::path(post, path = "/v1/validate/bulk", operation_id = "validateBulk",
    request_body = ValidateDestinations,
    security(("bearer" = ["validation:write"]), ("bearer" = ["validation:read"])),
    responses((status = 200, description = "A result per item", body = DestinationResults),
        (status = 400, description = "`items` is empty or holds more than 100, or an item's field is missing, empty or of the wrong type (`validation_error`, with `details.field` such as `items[3].code`), or the `sika-version` header is unknown", body = ErrorBody),
        BodyRefusals),
)]
async fn bulk(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<ValidateDestinations>,
) -> ApiResult<Json<DestinationResults>> {
    if principal.require("validation:write").is_err() {
        principal.require("validation:read")?;
    }
    let results = destinations::validate(stack.kind, &stack.catalog, &stack.rails, body.items).await?;
    Ok(Json(DestinationResults { results }))
}
