//! Webhook health for the operator: per endpoint success rate, latency,
//! consecutive failures, pending and failed deliveries; retry and re-enable.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use sika_api::admin::{
    DeliveryStatusQuery, EndpointAttempt, EndpointHealth, Owned, StackPath, StackRefusals,
};
use sika_api::admin::{StackId, StackItemRefusals};
use sika_api::webhooks::{WebhookDelivery, WebhookDeliveryEnvelope, WebhookEndpointEnvelope};
use sika_api::{ErrorBody, ListPage};

use super::AdminState;
use crate::domain::error::ApiResult;
use crate::domain::webhooks::endpoints;
use crate::http::extract::ApiQuery;

/// Every webhook endpoint on a stack, with its recent delivery health
#[utoipa::path(get, path = "/admin/v1/{stack}/webhooks/endpoints", operation_id = "listEndpointHealth",
    security(("operator" = [])), params(StackPath),
    responses((status = 200, description = "Every endpoint, in one page", body = ListPage<EndpointHealth>),
        StackRefusals),
)]
pub(super) async fn endpoints(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
) -> ApiResult<Json<ListPage<EndpointHealth>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(ListPage::whole(endpoints::health_of_all(&stack.engine, &state.identity)?)))
}

/// The last 100 delivery attempts to one endpoint, newest first
#[utoipa::path(
    get, path = "/admin/v1/{stack}/webhooks/endpoints/{id}/attempts", operation_id = "listEndpointAttempts",
    security(("operator" = [])), params(StackId<WebhookEndpointEnvelope>),
    responses((status = 200, description = "The attempts, in one page", body = ListPage<EndpointAttempt>),
        StackRefusals),
)]
pub(super) async fn attempts(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<ListPage<EndpointAttempt>>> {
    let stack = state.stack(&stack)?;
    Ok(Json(ListPage::whole(endpoints::attempts_of(&stack.engine, &state.identity, &id)?)))
}

/// The last 100 deliveries on a stack, newest first
#[utoipa::path(get, path = "/admin/v1/{stack}/webhooks/deliveries", operation_id = "listStackDeliveries",
    security(("operator" = [])), params(StackPath, DeliveryStatusQuery),
    responses(
        (status = 200, description = "The deliveries, in one page", body = ListPage<Owned<WebhookDelivery>>),
        (status = 400, description = "An unknown query parameter (`validation_error`)", body = ErrorBody),
        StackRefusals),
)]
pub(super) async fn deliveries(
    State(state): State<Arc<AdminState>>,
    Path(stack): Path<String>,
    ApiQuery(query): ApiQuery<DeliveryStatusQuery>,
) -> ApiResult<Json<ListPage<Owned<WebhookDelivery>>>> {
    let stack = state.stack(&stack)?;
    let data = endpoints::recent_of_all(&stack.engine, &state.identity, query.status.as_deref())?;
    Ok(Json(ListPage::whole(data)))
}

/// Retry a delivery now, outside its schedule
#[utoipa::path(
    post, path = "/admin/v1/{stack}/webhooks/deliveries/{id}/retry", operation_id = "retryStackDelivery",
    security(("operator" = [])), params(StackId<WebhookDeliveryEnvelope>),
    responses(
        (status = 200, description = "The delivery with the new attempt", body = WebhookDeliveryEnvelope),
        StackItemRefusals<WebhookDeliveryEnvelope>),
)]
pub(super) async fn retry(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<WebhookDeliveryEnvelope>> {
    let stack = state.stack(&stack)?;
    Ok(Json(WebhookDeliveryEnvelope { delivery: endpoints::retry_any(&stack.webhook_deps(), &id).await? }))
}

/// Enable an endpoint that failures disabled
#[utoipa::path(
    post, path = "/admin/v1/{stack}/webhooks/endpoints/{id}/enable", operation_id = "enableStackEndpoint",
    security(("operator" = [])), params(StackId<WebhookEndpointEnvelope>),
    responses((status = 200, description = "The endpoint, enabled", body = WebhookEndpointEnvelope),
        StackItemRefusals<WebhookEndpointEnvelope>),
)]
pub(super) async fn enable(
    State(state): State<Arc<AdminState>>,
    Path((stack, id)): Path<(String, String)>,
) -> ApiResult<Json<WebhookEndpointEnvelope>> {
    let stack = state.stack(&stack)?;
    let webhook_endpoint = endpoints::enable_any(&stack.webhook_deps(), &id).await?;
    Ok(Json(WebhookEndpointEnvelope { webhook_endpoint }))
}
