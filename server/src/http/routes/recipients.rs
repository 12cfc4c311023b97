//! `/v1/recipients`: saved payout destinations, one at a time or in bulk,
//! served through a utoipa-axum router (`sika_api::recipients`).

use std::sync::Arc;

use axum::Json;
use axum::http::StatusCode;
use serde_json::Value;
use sika_api::recipients::{
    CreateRecipient, CreateRecipients, Recipient, RecipientEnvelope, RecipientResult, RecipientResults,
};
use sika_api::{BodyRefusals, ErrorBody, FieldRefusals, Id, ListPage, ListQuery, PageRefusals, ReadRefusals};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::page_of_views;
use crate::domain::recipients::Recipient as Stored;
use crate::domain::recipients::{self, BULK_ITEMS_MAX};
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
    let recipient = recipients::build(body, principal.organization(), stack.now_ms(), "")?;
    recipients::save_all(&stack, std::slice::from_ref(&recipient)).await?;
    Ok((StatusCode::CREATED, Json(RecipientEnvelope { recipient: recipient.render() })))
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
    if body.items.is_empty() || body.items.len() > BULK_ITEMS_MAX {
        return Err(ApiError::validation("items", format!("must hold 1 to {BULK_ITEMS_MAX} items")));
    }
    let now = stack.now_ms();
    let mut created = Vec::new();
    let mut results = Vec::new();
    for (index, item) in body.items.into_iter().enumerate() {
        match build_item(item, index, principal.organization(), now) {
            Ok(recipient) => {
                results.push(RecipientResult::Created { index, recipient: recipient.render() });
                created.push(recipient);
            }
            Err(error) => results.push(RecipientResult::Failed { index, error: error.item_error() }),
        }
    }
    recipients::save_all(&stack, &created).await?;
    Ok(Json(RecipientResults { results }))
}

/// Reads and checks one bulk item; errors name the field with the item's
/// place (`items[3].name`).
fn build_item(item: Value, index: usize, organization: &str, now: i64) -> ApiResult<recipients::Recipient> {
    let prefix = format!("items[{index}].");
    let request = from_value::<CreateRecipient>(item).map_err(|e| {
        let field = e.details.as_ref().and_then(|d| d["field"].as_str()).unwrap_or("item").to_string();
        ApiError::validation(&format!("{prefix}{field}"), e.message.clone())
    })?;
    recipients::build(request, organization, now, &prefix)
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
    let page =
        page_of_views(&stack, principal.organization(), recipients::COLLECTION, &query, |snapshot, id| {
            Ok(recipients::load(snapshot, id)?.map(|r| r.render()))
        })?;
    Ok(Json(page))
}
