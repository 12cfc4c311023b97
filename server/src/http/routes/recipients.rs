//! `/v1/recipients`: saved payout destinations, one at a time or in bulk,
//! served through a utoipa-axum router (`sika_api::recipients`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use serde_json::Value;
use sika_api::recipients::{
    CreateRecipient, CreateRecipients, Recipient, RecipientEnvelope, RecipientResults,
};
use sika_api::{BodyRefusals, ErrorBody, FieldRefusals, Id, ListPage, ListQuery, PageRefusals, ReadRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::recipients;
use crate::domain::recipients::Recipient as Stored;
use crate::domain::stack::Stack;
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQuery, from_value};
use crate::http::found::Loaded;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new().routes(routes!(create, list)).routes(routes!(bulk)).routes(routes!(read))
}

/// Save a payout destination
#[utoipa::path(post, path = "/v1/recipients", operation_id = "createRecipient",
    request_body = CreateRecipient, security(("bearer" = ["recipients:write"])),
    responses((status = 201, description = "The recipient", body = RecipientEnvelope), FieldRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateRecipient>,
) -> ApiResult<(StatusCode, Json<RecipientEnvelope>)> {
    let recipient = recipients::create(&stack.engine, principal.organization(), body).await?;
    Ok((StatusCode::CREATED, Json(RecipientEnvelope { recipient })))
}

/// Save up to 100 payout destinations
///
/// Each item gets its own result, in order: valid items are saved even when
/// others fail. Only an empty or oversized `items` refuses the whole request.
#[utoipa::path(post, path = "/v1/recipients/bulk", operation_id = "createRecipients",
    request_body = CreateRecipients, security(("bearer" = ["recipients:write"])),
    responses((status = 200, description = "A result per item", body = RecipientResults),
        (status = 400, description = "`items` is empty or holds more than 100 (`validation_error`)", body = ErrorBody),
        BodyRefusals),
)]
async fn bulk(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateRecipients>,
) -> ApiResult<Json<RecipientResults>> {
    let items = body.items.into_iter().enumerate().map(|(index, item)| parse_item(item, index)).collect();
    Ok(Json(recipients::create_many(&stack.engine, principal.organization(), items).await?))
}

/// Reads and checks one bulk item; errors name the field with the item's
/// place (`items[3].name`).
/// One bulk item as a request, or its refusal naming the item's field.
fn parse_item(item: Value, index: usize) -> ApiResult<CreateRecipient> {
    from_value::<CreateRecipient>(item).map_err(|e| {
        let field = e.details.as_ref().and_then(|d| d["field"].as_str()).unwrap_or("item").to_string();
        ApiError::validation(&format!("items[{index}].{field}"), e.message.clone())
    })
}

/// One recipient
#[utoipa::path(get, path = "/v1/recipients/{id}", operation_id = "getRecipient",
    params(Id<RecipientEnvelope>), security(("bearer" = ["recipients:read"])),
    responses((status = 200, description = "The recipient", body = RecipientEnvelope),
        ReadRefusals<RecipientEnvelope>),
)]
async fn read(Loaded { record, .. }: Loaded<Stored>) -> ApiResult<Json<RecipientEnvelope>> {
    Ok(Json(RecipientEnvelope { recipient: record.render() }))
}

/// Recipients, newest first
#[utoipa::path(get, path = "/v1/recipients", operation_id = "listRecipients",
    params(ListQuery), security(("bearer" = ["recipients:read"])),
    responses((status = 200, description = "One page of recipients", body = ListPage<Recipient>),
        PageRefusals),
)]
async fn list(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<Recipient>>> {
    Ok(Json(recipients::list(&stack.lists(), principal.organization(), &query)?))
}
