//! `/v1/payouts`: the first resource whose operations are generated from
//! the handlers and the wire types (`sika_api::payouts`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use serde_json::Value;
use sika_api::payouts::{CreatePayout, Payout, PayoutEnvelope};
use sika_api::{
    BodyRefusals, ErrorBody, Id, ListPage, ListQuery, MovementFilter, PageRefusals, ReadRefusals, Replays,
};
use sika_engine::{Command, Outcome};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiResult, unexpected};
use crate::domain::instructions::{fingerprint, new_payout};
use crate::domain::rails::lookup::{self, Lookup};
use crate::domain::render;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries, from_value};
use crate::http::found::Loaded;
use crate::http::routes::movements::{self, created_or_replayed};

pub(crate) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(read))
}

/// Send money from a balance
///
/// Holds `from.amount` plus the fee and hands the payout to the rail. The
/// same `externalReference` with the same body answers the original payout
/// (200) instead of paying twice. On live, a bank payout routed through a
/// provider with an account lookup (Flutterwave, Nigerian banks) is looked
/// up first: an account the provider says does not exist is refused before
/// any money is held.
#[utoipa::path(post, path = "/v1/payouts", operation_id = "createPayout",
    request_body = CreatePayout, security(("bearer" = ["payouts:write"])),
    responses((status = 201, description = "The payout, pending on its rail", body = PayoutEnvelope),
        (status = 400, description = "A field is invalid (`validation_error`, with `details.field`: `to.bankCode` missing where the provider needs it or not one of the method's options; `to.accountNumber` for an account the provider says does not exist)", body = ErrorBody),
        (status = 422, description = "`insufficient_funds` or `spend_cap_exceeded`", body = ErrorBody),
        Replays<PayoutEnvelope>, BodyRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(raw): ApiJson<Value>,
) -> ApiResult<(StatusCode, Json<PayoutEnvelope>)> {
    let print = fingerprint(&raw);
    let request: CreatePayout = from_value(raw)?;
    let mut new = new_payout(&stack, &principal, request, print)?;
    let organization = principal.organization();
    match lookup::confirm_destination(&stack, organization, "payout", &new.external_reference, &new.to)
        .await?
    {
        Some(Lookup::Found(Some(name))) => {
            new.rail_note = format!("{}; the account holder is {name}", new.rail_note)
        }
        Some(Lookup::Unavailable) => {
            new.rail_note = format!("{}; the account could not be looked up yet", new.rail_note);
        }
        _ => {}
    }
    let applied = stack.engine.execute(Command::CreatePayout(new)).await?;
    let Outcome::Payout(payout) = applied.outcome else { return Err(unexpected(&applied.outcome)) };
    let created = render::payout(&payout, &[]);
    let (status, payout) = created_or_replayed(&stack, &principal, applied.replayed, &payout.id, created)?;
    Ok((status, Json(PayoutEnvelope { payout })))
}

/// One payout with its full timeline
#[utoipa::path(get, path = "/v1/payouts/{id}", operation_id = "getPayout",
    params(Id<PayoutEnvelope>), security(("bearer" = ["payouts:read"])),
    responses((status = 200, description = "The payout", body = PayoutEnvelope),
        ReadRefusals<PayoutEnvelope>),
)]
async fn read(Loaded { record: payout, .. }: Loaded<Payout>) -> ApiResult<Json<PayoutEnvelope>> {
    Ok(Json(PayoutEnvelope { payout }))
}

/// Payouts, newest first
#[utoipa::path(get, path = "/v1/payouts", operation_id = "listPayouts",
    params(ListQuery, MovementFilter), security(("bearer" = ["payouts:read"])),
    responses((status = 200, description = "One page of payouts", body = ListPage<Payout>), PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, MovementFilter>,
) -> ApiResult<Json<ListPage<Payout>>> {
    movements::page(&stack, &principal, query, filter)
}
