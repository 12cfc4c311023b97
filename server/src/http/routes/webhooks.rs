//! `/v1/webhooks/…`: endpoints, events and deliveries, served through a
//! utoipa-axum router so their operations are generated from the handlers
//! and the wire types (`sika_api::webhooks`).

use std::sync::Arc;

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;
use sika_api::webhooks::{
    CreateWebhookEndpoint, CreatedWebhookEndpoint, CreatedWebhookEndpointEnvelope, DeletedWebhookEndpoint,
    DeletedWebhookEndpointEnvelope, DeliveryFilter, SigningSecret, UpdateWebhookEndpoint, WebhookDelivery,
    WebhookDeliveryEnvelope, WebhookEndpoint, WebhookEndpointEnvelope, WebhookEndpointRef, WebhookEvent,
    WebhookEventEnvelope, WebhookTestSent,
};
use sika_api::{
    BodyRefusals, ErrorBody, Id, ListPage, ListQuery, NoSuch, PageRefusals, ReadRefusals, Refusals,
};
use sika_engine::{Command, EventKind, EventPayload};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::domain::error::{ApiError, ApiResult};
use crate::domain::pagination::page_of_views;
use crate::domain::stack::Stack;
use crate::domain::webhooks::{
    self, Endpoint, check_events, check_url, load_delivery, load_endpoint, render_endpoint,
};
use crate::http::auth::Call;
use crate::http::extract::{ApiJson, ApiQueries, ApiQuery};
use crate::http::found::Loaded;
use sika_engine::records::EventRecord;

pub(super) fn router() -> OpenApiRouter<Arc<Stack>> {
    OpenApiRouter::new()
        .routes(routes!(create, list_endpoints))
        .routes(routes!(get_endpoint, update, remove))
        .routes(routes!(test))
        .routes(routes!(signing_secret))
        .routes(routes!(list_events))
        .routes(routes!(get_event))
        .routes(routes!(list_deliveries))
        .routes(routes!(get_delivery))
        .routes(routes!(retry))
}

/// Create a webhook endpoint
///
/// The answer carries the endpoint's signing secret, shown this once; read
/// it again with `GET /v1/webhooks/signing-secret/{id}`.
#[utoipa::path(post, path = "/v1/webhooks/endpoints", operation_id = "createWebhookEndpoint",
    request_body = CreateWebhookEndpoint, security(("bearer" = ["webhooks:write"])),
    responses(
        (status = 201, description = "The endpoint with its signing secret", body = CreatedWebhookEndpointEnvelope),
        (status = 400, description = "A bad `url` or an unknown event (`validation_error`, with `details.field`)", body = ErrorBody),
        BodyRefusals),
)]
async fn create(
    Call { stack, principal }: Call,
    ApiJson(body): ApiJson<CreateWebhookEndpoint>,
) -> ApiResult<(StatusCode, Json<CreatedWebhookEndpointEnvelope>)> {
    check_url(&body.url, &webhooks::address::Guard::of(&stack))?;
    check_events(&body.events)?;
    let now = stack.now_ms();
    let endpoint = Endpoint {
        id: sika_engine::ids::new_id("we"),
        organization: principal.organization().to_string(),
        url: body.url,
        events: body.events,
        description: body.description,
        secret: webhooks::signing::new_secret(),
        created_at: now,
        updated_at: now,
    };
    webhooks::save_endpoint(&stack, &endpoint, true).await?;
    let created = CreatedWebhookEndpoint {
        endpoint: render_endpoint(&endpoint, &Default::default()),
        secret: endpoint.secret,
    };
    Ok((StatusCode::CREATED, Json(CreatedWebhookEndpointEnvelope { webhook_endpoint: created })))
}

/// A call on one of the caller's webhook endpoints, loaded with its health.
type OnEndpoint = Loaded<(Endpoint, webhooks::Health)>;

/// One webhook endpoint
#[utoipa::path(get, path = "/v1/webhooks/endpoints/{id}", operation_id = "getWebhookEndpoint",
    params(Id<WebhookEndpointEnvelope>), security(("bearer" = ["webhooks:read"])),
    responses(
        (status = 200, description = "The endpoint, without its secret", body = WebhookEndpointEnvelope),
        ReadRefusals<WebhookEndpointEnvelope>),
)]
async fn get_endpoint(
    Loaded { record: (endpoint, health), .. }: OnEndpoint,
) -> ApiResult<Json<WebhookEndpointEnvelope>> {
    Ok(Json(WebhookEndpointEnvelope { webhook_endpoint: render_endpoint(&endpoint, &health) }))
}

/// Webhook endpoints, newest first
#[utoipa::path(get, path = "/v1/webhooks/endpoints", operation_id = "listWebhookEndpoints",
    params(ListQuery), security(("bearer" = ["webhooks:read"])),
    responses(
        (status = 200, description = "One page of endpoints, without their secrets", body = ListPage<WebhookEndpoint>),
        PageRefusals),
)]
async fn list_endpoints(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<WebhookEndpoint>>> {
    // Deleted endpoints stay in the index; loading one finds nothing.
    let page =
        page_of_views(&stack, principal.organization(), webhooks::ENDPOINTS, &query, |snapshot, id| {
            Ok(load_endpoint(snapshot, id)?.map(|(endpoint, health)| render_endpoint(&endpoint, &health)))
        })?;
    Ok(Json(page))
}

/// Change a webhook endpoint
///
/// Only the fields sent change. `status: active` re-enables a disabled
/// endpoint and resets its failure count; `status: disabled` stops
/// deliveries to it.
#[utoipa::path(patch, path = "/v1/webhooks/endpoints/{id}", operation_id = "updateWebhookEndpoint",
    params(Id<WebhookEndpointEnvelope>), request_body = UpdateWebhookEndpoint,
    security(("bearer" = ["webhooks:write"])),
    responses((status = 200, description = "The endpoint as changed", body = WebhookEndpointEnvelope),
        (status = 400, description = "A bad field (`validation_error`, with `details.field`)", body = ErrorBody),
        NoSuch<WebhookEndpointEnvelope>, BodyRefusals),
)]
async fn update(
    Loaded { record: (mut endpoint, mut health), stack, .. }: OnEndpoint,
    ApiJson(body): ApiJson<UpdateWebhookEndpoint>,
) -> ApiResult<Json<WebhookEndpointEnvelope>> {
    let enable = match body.status.as_deref() {
        None => None,
        Some("active") => Some(true),
        Some("disabled") => Some(false),
        Some(_) => return Err(ApiError::validation("status", "must be 'active' or 'disabled'")),
    };
    if let Some(url) = body.url {
        check_url(&url, &webhooks::address::Guard::of(&stack))?;
        endpoint.url = url;
    }
    if let Some(events) = body.events {
        check_events(&events)?;
        endpoint.events = events;
    }
    if let Some(description) = body.description {
        endpoint.description = description;
    }
    endpoint.updated_at = stack.now_ms();
    webhooks::save_endpoint(&stack, &endpoint, false).await?;
    if let Some(enabled) = enable {
        health = stack.webhooks()?.set_enabled(&endpoint.id, enabled).await?;
    }
    Ok(Json(WebhookEndpointEnvelope { webhook_endpoint: render_endpoint(&endpoint, &health) }))
}

/// Delete a webhook endpoint
///
/// Nothing more is sent to it; its pending deliveries fail.
#[utoipa::path(delete, path = "/v1/webhooks/endpoints/{id}", operation_id = "deleteWebhookEndpoint",
    params(Id<WebhookEndpointEnvelope>), security(("bearer" = ["webhooks:write"])),
    responses((status = 200, description = "The endpoint is deleted", body = DeletedWebhookEndpointEnvelope),
        ReadRefusals<WebhookEndpointEnvelope>),
)]
async fn remove(
    Loaded { record: (endpoint, _), stack, .. }: OnEndpoint,
) -> ApiResult<Json<DeletedWebhookEndpointEnvelope>> {
    stack
        .engine
        .execute(Command::PutDocument {
            collection: webhooks::ENDPOINTS.into(),
            id: endpoint.id.clone(),
            body: Vec::new(),
            list: None,
        })
        .await?;
    let deleted = DeletedWebhookEndpoint { id: endpoint.id, deleted: true };
    Ok(Json(DeletedWebhookEndpointEnvelope { webhook_endpoint: deleted }))
}

/// A webhook endpoint's signing secret
#[utoipa::path(get, path = "/v1/webhooks/signing-secret/{id}", operation_id = "getSigningSecret",
    params(Id<WebhookEndpointEnvelope>), security(("bearer" = ["webhooks:read"])),
    responses(
        (status = 200, description = "The secret deliveries to this endpoint are signed with", body = SigningSecret),
        ReadRefusals<WebhookEndpointEnvelope>),
)]
async fn signing_secret(Loaded { record: (endpoint, _), .. }: OnEndpoint) -> ApiResult<Json<SigningSecret>> {
    Ok(Json(SigningSecret { secret: endpoint.secret }))
}

/// Send a test event to a webhook endpoint
///
/// Records a `webhook.test` event delivered to this endpoint only; follow
/// it in the deliveries list. A disabled endpoint is refused (400): nothing
/// is sent to it until it is re-enabled.
#[utoipa::path(post, path = "/v1/webhooks/endpoints/{id}/test", operation_id = "testWebhookEndpoint",
    params(Id<WebhookEndpointEnvelope>), security(("bearer" = ["webhooks:write"])),
    responses((status = 202, description = "The test event is on its way", body = WebhookTestSent),
        (status = 400, description = "The endpoint is disabled (`bad_request`, `details.status` `disabled`): re-enable it first with `status: active`, or an unknown `sika-version`", body = ErrorBody),
        NoSuch<WebhookEndpointEnvelope>, Refusals),
)]
async fn test(
    Loaded { record: (endpoint, health), stack, .. }: OnEndpoint,
) -> ApiResult<(StatusCode, Json<WebhookTestSent>)> {
    if health.disabled {
        let id = &endpoint.id;
        // A test that could never be delivered would only look like a failure.
        return Err(ApiError::bad_request(format!(
            "webhook endpoint '{id}' is disabled; re-enable it with PATCH /v1/webhooks/endpoints/{id} \
             {{\"status\": \"active\"}} before testing it"
        ))
        .with_detail("status", "disabled"));
    }
    stack
        .engine
        .execute(Command::RecordEvent {
            organization: endpoint.organization.clone(),
            kind: EventKind::WebhookTest,
            payload: EventPayload::WebhookTest { endpoint_id: endpoint.id.clone() },
        })
        .await?;
    let sent = WebhookTestSent {
        webhook_endpoint: WebhookEndpointRef { id: endpoint.id },
        event: EventKind::WebhookTest.name().into(),
    };
    Ok((StatusCode::ACCEPTED, Json(sent)))
}

/// One event
#[utoipa::path(get, path = "/v1/webhooks/events/{id}", operation_id = "getEvent",
    params(Id<WebhookEventEnvelope>), security(("bearer" = ["webhooks:read"])),
    responses(
        (status = 200, description = "The event, as its deliveries send it", body = WebhookEventEnvelope),
        ReadRefusals<WebhookEventEnvelope>),
)]
async fn get_event(
    Loaded { record, stack, .. }: Loaded<EventRecord>,
) -> ApiResult<Json<WebhookEventEnvelope>> {
    Ok(Json(WebhookEventEnvelope { event: webhooks::event_body(&stack, &record)? }))
}

/// Events, newest first
#[utoipa::path(get, path = "/v1/webhooks/events", operation_id = "listEvents",
    params(ListQuery), security(("bearer" = ["webhooks:read"])),
    responses((status = 200, description = "One page of events", body = ListPage<WebhookEvent>),
        PageRefusals),
)]
async fn list_events(
    Call { stack, principal }: Call,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<ListPage<WebhookEvent>>> {
    let page = page_of_views(&stack, principal.organization(), "events", &query, |snapshot, id| {
        snapshot.event(id)?.map(|event| webhooks::event_body(&stack, &event)).transpose()
    })?;
    Ok(Json(page))
}

/// Webhook deliveries, newest first
///
/// Every filter given must match.
#[utoipa::path(get, path = "/v1/webhooks/deliveries", operation_id = "listDeliveries",
    params(ListQuery, DeliveryFilter), security(("bearer" = ["webhooks:read"])),
    responses((status = 200, description = "One page of deliveries", body = ListPage<WebhookDelivery>),
        (status = 400, description = "A bad `limit`, `cursor`, `status` or `lastAttemptFailed`, or a query parameter the operation does not take (`validation_error` naming it)", body = ErrorBody),
        Refusals),
)]
async fn list_deliveries(
    Call { stack, principal }: Call,
    ApiQueries(query, filter): ApiQueries<ListQuery, DeliveryFilter>,
) -> ApiResult<Json<ListPage<WebhookDelivery>>> {
    if let Some(status) = &filter.status
        && !["pending", "succeeded", "failed"].contains(&status.as_str())
    {
        return Err(ApiError::validation("status", "must be pending, succeeded or failed"));
    }
    let page =
        page_of_views(&stack, principal.organization(), webhooks::DELIVERIES, &query, |snapshot, id| {
            Ok(load_delivery(snapshot, id)?.filter(|d| matches(&filter, d)).map(|d| d.render()))
        })?;
    Ok(Json(page))
}

/// Whether `delivery` passes every filter given. `status` is the
/// delivery's own (CONTRACT.md: a filter matches the field it names);
/// what needs attention, a latest attempt that failed while retries
/// remain too, is `lastAttemptFailed`.
fn matches(filter: &DeliveryFilter, delivery: &webhooks::Delivery) -> bool {
    let last_failed = delivery.attempts.last().is_some_and(|a| !a.succeeded);
    filter.status.as_deref().is_none_or(|s| s == delivery.status.name())
        && filter.last_attempt_failed.is_none_or(|wanted| wanted == last_failed)
        && filter.endpoint_id.as_deref().is_none_or(|e| e == delivery.endpoint_id)
        && filter.event_id.as_deref().is_none_or(|e| e == delivery.event_id)
        && filter.event.as_deref().is_none_or(|e| e == delivery.event_kind)
        && filter.resource_id.as_deref().is_none_or(|r| Some(r) == delivery.resource_id.as_deref())
}

/// One webhook delivery with its attempts
#[utoipa::path(get, path = "/v1/webhooks/deliveries/{id}", operation_id = "getDelivery",
    params(Id<WebhookDeliveryEnvelope>), security(("bearer" = ["webhooks:read"])),
    responses((status = 200, description = "The delivery", body = WebhookDeliveryEnvelope),
        ReadRefusals<WebhookDeliveryEnvelope>),
)]
async fn get_delivery(
    Loaded { record, .. }: Loaded<webhooks::Delivery>,
) -> ApiResult<Json<WebhookDeliveryEnvelope>> {
    Ok(Json(WebhookDeliveryEnvelope { delivery: record.render() }))
}

/// Re-send a webhook delivery now
///
/// Answers after the attempt, which the delivery's `attempts` show with
/// `manual: true`. A delivery whose endpoint was deleted cannot be retried.
/// One delivery may be retried three times a second (`429 rate_limited`
/// otherwise), and keeps its latest 20 manual attempts.
#[utoipa::path(post, path = "/v1/webhooks/deliveries/{id}/retry", operation_id = "retryDelivery",
    params(Id<WebhookDeliveryEnvelope>), security(("bearer" = ["webhooks:write"])),
    responses((status = 200, description = "The delivery after the attempt", body = WebhookDeliveryEnvelope),
        (status = 400, description = "The delivery's endpoint was deleted (`bad_request`)", body = ErrorBody),
        NoSuch<WebhookDeliveryEnvelope>, Refusals),
)]
async fn retry(
    Call { stack, principal }: Call,
    Path(id): Path<String>,
) -> ApiResult<Json<WebhookDeliveryEnvelope>> {
    if let Err(retry_after) = stack.retry_limiter.check(&id, std::time::Instant::now()) {
        return Err(ApiError::new(
            sika_api::ErrorCode::RateLimited,
            "this delivery was retried three times in the last second; wait a moment",
        )
        .with_detail("retryAfter", retry_after));
    }
    let delivery = stack.webhooks()?.retry_now(principal.organization(), &id).await?;
    Ok(Json(WebhookDeliveryEnvelope { delivery: delivery.render() }))
}
